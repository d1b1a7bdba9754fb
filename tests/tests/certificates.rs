//! `certificates.k8s.io/v1` CertificateSigningRequests from the outside (issue 46): a tenant admin mints a user
//! certificate through the API with kubectl 1.32 (`kubectl certificate approve`), and the certificate only ever acts
//! inside that tenant, whatever organizations the request asked for; approving needs `approve` on `signers`, and
//! only the server writes a `kubernetes.io/*` signer's certificate. Keys and requests are made with openssl.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use base64::Engine;
use kspaces_tests::{create_tenant, curl, eventually, start_shared_with_tokens, token_kubeconfig_for_url, Http, Kubectl, Server};
use serde_json::{json, Value};

const TOKENS: [&str; 3] = [
    "root-token,root,u-root,\"system:masters\"",
    "a-token,admin,u-a,\"tenant-admins\",,t-a",
    "carol-token,carol,u-carol,\"\",,t-a",
];
const CSRS: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";

fn call(server: &Server, http: Http, token: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let text = body.map(Value::to_string);
    let (code, answer) = curl(server, http, Some(token), method, path, text.as_deref());
    (code, serde_json::from_str(&answer).unwrap_or(Value::String(answer)))
}

fn openssl(args: &[&str]) -> Vec<u8> {
    let output = Command::new("openssl").args(args).output().expect("run openssl");
    assert!(output.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    output.stdout
}

/// An EC key and a certificate request for `subject`, in `dir`: (key file, request PEM).
fn request(dir: &Path, name: &str, subject: &str) -> (PathBuf, String) {
    let key = dir.join(format!("{name}.key"));
    openssl(&["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key.to_str().expect("utf-8")]);
    let pem = openssl(&["req", "-new", "-key", key.to_str().expect("utf-8"), "-subj", subject]);
    (key, String::from_utf8(pem).expect("PEM"))
}

fn csr(name: &str, pem: &str, signer: &str, usages: &[&str]) -> Value {
    json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
        "spec": {"request": base64::engine::general_purpose::STANDARD.encode(pem), "signerName": signer, "usages": usages}})
}

/// The subject of a PEM certificate, as openssl prints it (`CN = dora, O = dev, ...`).
fn subject(pem: &str, dir: &Path) -> String {
    let file = dir.join("issued.pem");
    std::fs::write(&file, pem).expect("write");
    String::from_utf8(openssl(&["x509", "-in", file.to_str().expect("utf-8"), "-noout", "-subject", "-nameopt", "sep_comma_plus_space"]))
        .expect("text")
}

#[test]
fn a_tenant_admin_mints_a_certificate_that_acts_only_in_its_tenant() {
    let server = start_shared_with_tokens(&TOKENS);
    create_tenant(&server.kubectl(), "t-a");
    create_tenant(&server.kubectl(), "t-b");
    let dir = tempfile::tempdir().expect("temp dir");
    let admin = Kubectl::new(&token_kubeconfig_for_url(&server, "a-token", &server.url));

    // The request asks for another tenant and system:masters; it is recorded as the admin's.
    let (key, pem) = request(dir.path(), "dora", "/CN=dora/O=dev/O=tenant:t-b/O=system:masters");
    let body = csr("dora", &pem, "kubernetes.io/kube-apiserver-client", &["client auth"]);
    let created = admin.ok_with_stdin(&["create", "-f", "-", "-o", "json"], &body.to_string());
    let created: Value = serde_json::from_str(&created).expect("json");
    assert_eq!((&created["spec"]["username"], &created["spec"]["groups"]), (&json!("admin"), &json!(["tenant-admins", "system:authenticated"])),
        "the requester is recorded: {created}");

    // carol may update approvals but not `approve` for this signer; nobody writes a kubernetes.io signer's
    // certificate by hand.
    admin.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: csr-updater}\n\
        rules: [{apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests, certificatesigningrequests/approval], verbs: [get, update]}]\n\
        ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: csr-updater-carol}\n\
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: csr-updater}\n\
        subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}]\n");
    let approval = format!("{CSRS}/dora/approval");
    let mut approved = created.clone();
    approved["status"] = json!({"conditions": [{"type": "Approved", "status": "True", "reason": "ByHand", "message": "ok"}]});
    for http in [Http::One, Http::Two] {
        let (code, refused) = call(&server, http, "carol-token", "PUT", &approval, Some(&approved));
        assert_eq!(code, 403, "{http:?}: {refused}");
        assert!(refused["message"].as_str().unwrap_or_default().contains("user not permitted to approve requests with signerName"), "{refused}");
    }
    let mut forged = created.clone();
    forged["status"] = json!({"certificate": base64::engine::general_purpose::STANDARD.encode("forged")});
    let (code, refused) = call(&server, Http::One, "a-token", "PUT", &format!("{CSRS}/dora/status"), Some(&forged));
    assert_eq!(code, 403, "{refused}");

    // The admin approves with kubectl; the certificate is there at once, naming t-a and nothing else's tenant.
    admin.ok(&["certificate", "approve", "dora"]);
    let mut issued = String::new();
    assert!(eventually(Duration::from_secs(10), || {
        let got: Value = serde_json::from_str(&admin.ok(&["get", "csr", "dora", "-o", "json"])).expect("json");
        issued = got["status"]["certificate"].as_str().unwrap_or_default().to_owned();
        !issued.is_empty()
    }), "no certificate was issued");
    let certificate = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(&issued).expect("base64")).expect("PEM");
    let names = subject(&certificate, dir.path());
    assert!(names.contains("CN=dora") && names.contains("O=dev") && names.contains("O=tenant:t-a"), "{names}");
    assert!(!names.contains("tenant:t-b"), "another tenant is never named: {names}");

    // The certificate signs in as dora of t-a: system:masters is powerless there, and t-b is out of reach.
    let kubeconfig = dir.path().join("dora.kubeconfig");
    let cert_file = dir.path().join("dora.crt");
    std::fs::write(&cert_file, &certificate).expect("write");
    std::fs::copy(token_kubeconfig_for_url(&server, "unused", &server.url), &kubeconfig).expect("copy");
    let dora = Kubectl::new(&kubeconfig);
    dora.ok(&["config", "set-credentials", "token-user", "--token=", "--client-certificate", cert_file.to_str().expect("utf-8"),
        "--client-key", key.to_str().expect("utf-8"), "--embed-certs=true"]);
    dora.ok(&["config", "unset", "users.token-user.token"]);
    let whoami: Value = serde_json::from_str(&dora.ok(&["auth", "whoami", "-o", "json"])).expect("json");
    assert_eq!(whoami["status"]["userInfo"]["username"], "dora", "{whoami}");
    assert!(dora.fails(&["get", "secrets", "-n", "default"]).contains("Forbidden"), "system:masters grants nothing in a tenant");
    let elsewhere = Kubectl::new(&kubeconfig);
    elsewhere.ok(&["config", "set-cluster", "kspaces", &format!("--server={}/clusters/root:t-b", server.url)]);
    assert!(elsewhere.fails(&["get", "configmaps"]).contains("Forbidden"), "t-b is out of reach");
    elsewhere.ok(&["config", "set-cluster", "kspaces", &format!("--server={}/clusters/root", server.url)]);
    assert!(elsewhere.fails(&["get", "configmaps"]).contains("Forbidden"), "root is out of reach");

    // Denied: no certificate. A request that is no request, or a client certificate without `client auth`: 422.
    let (_, other) = request(dir.path(), "erin", "/CN=erin");
    admin.ok_with_stdin(&["create", "-f", "-"], &csr("erin", &other, "kubernetes.io/kube-apiserver-client", &["client auth"]).to_string());
    admin.ok(&["certificate", "deny", "erin"]);
    let erin: Value = serde_json::from_str(&admin.ok(&["get", "csr", "erin", "-o", "json"])).expect("json");
    assert!(erin["status"].get("certificate").is_none(), "{erin}");
    let (code, refused) = call(&server, Http::Two, "a-token", "POST", CSRS, Some(&csr("junk", "not a request", "kubernetes.io/kube-apiserver-client", &["client auth"])));
    assert_eq!(code, 422, "{refused}");
    let (code, refused) = call(&server, Http::One, "a-token", "POST", CSRS, Some(&csr("server", &other, "kubernetes.io/kube-apiserver-client", &["server auth"])));
    assert_eq!(code, 422, "{refused}");
    // Another tenant does not see t-a's requests.
    let (code, listed) = call(&server, Http::One, "root-token", "GET", &format!("/clusters/root:t-b{CSRS}"), None);
    assert_eq!((code, listed["items"].as_array().map(Vec::len)), (200, Some(0)), "{listed}");
}
