//! Aggregated APIs (`apiregistration.k8s.io/v1` APIService): a real HTTPS backend behind a Service and its
//! EndpointSlice in the system space, reached through kubectl 1.32 and curl over HTTP/1.1 and HTTP/2 by users of
//! two tenants. What the backend learns of the caller (kube's front-proxy headers, never the caller's credentials
//! or headers the caller made up), the proxy's client certificate, discovery, RBAC before the proxy, the
//! `Available` condition as the backend comes and goes, and 422s for invalid APIServices.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use kspaces_tests::https::{self, Certificates, Request};
use kspaces_tests::{create_tenant, curl, eventually, grant, token_file, token_kubeconfig, Http, Kubectl, Server, WatchOutput};
use rcgen::{CertificateParams, KeyPair};
use serde_json::{json, Value};

const GROUP: &str = "widgets.example.com";

/// The backend: an aggregated API server for `widgets.example.com/v1alpha1` that lists one widget naming who
/// asked, and logs every request.
struct Backend {
    port: u16,
    served: https::Served,
    ca_pem: String,
    log: Arc<Mutex<Vec<Request>>>,
    /// The proxy's client certificate and key (PEM), signed by the CA the backend trusts for clients.
    proxy_certificate: (String, String),
}

impl Backend {
    fn start() -> Backend {
        let certificates = Certificates::new(false, &["widgets.aggregated.svc"]);
        let (_, issuer) = certificates.ca.as_ref().expect("a CA");
        let key = KeyPair::generate().expect("proxy key");
        let params = CertificateParams::new(vec!["front-proxy-client".to_owned()]).expect("params");
        let proxy = params.signed_by(&key, issuer).expect("proxy certificate");
        let proxy_certificate = (proxy.pem(), key.serialize_pem());
        let ca_pem = certificates.ca_pem.clone();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(certificates.ca.as_ref().expect("a CA").0.der().clone()).expect("trust the CA");
        let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots)).allow_unauthenticated().build().expect("client verifier");
        let config = rustls::ServerConfig::builder().with_client_cert_verifier(verifier)
            .with_single_cert(certificates.chain, certificates.key).expect("server TLS config");
        let log = Arc::new(Mutex::new(Vec::new()));
        let seen = log.clone();
        let served = https::start(config, move |request: Request| {
            let line = request.head.lines().next().unwrap_or_default().to_owned();
            let path = line.split(' ').nth(1).unwrap_or_default().to_owned();
            let user = request.header("X-Remote-User").unwrap_or_default();
            seen.lock().expect("log").push(request);
            let answer = match path.split('?').next().unwrap_or_default() {
                "/apis/widgets.example.com/v1alpha1" => json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "widgets.example.com/v1alpha1",
                    "resources": [{"name": "widgets", "singularName": "widget", "namespaced": true, "kind": "Widget", "verbs": ["get", "list"], "shortNames": ["wd"]}]}),
                "/apis/widgets.example.com/v1alpha1/namespaces/default/widgets" => json!({"kind": "WidgetList", "apiVersion": "widgets.example.com/v1alpha1",
                    "metadata": {"resourceVersion": "1"}, "items": [{"apiVersion": "widgets.example.com/v1alpha1", "kind": "Widget",
                    "metadata": {"name": "made-for", "namespace": "default"}, "spec": {"user": user}}]}),
                "/openapi/v3/apis/widgets.example.com/v1alpha1" => json!({"openapi": "3.0.0", "info": {"title": "widgets", "version": "v1alpha1"},
                    "paths": {"/apis/widgets.example.com/v1alpha1/namespaces/{namespace}/widgets/{name}": {"get": {"x-kubernetes-action": "get",
                        "x-kubernetes-group-version-kind": {"group": "widgets.example.com", "version": "v1alpha1", "kind": "Widget"},
                        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/com.example.widgets.v1alpha1.Widget"}}}}}}}},
                    "components": {"schemas": {"com.example.widgets.v1alpha1.Widget": {"type": "object",
                    "description": "A widget made for whoever asks.", "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                    "metadata": {"type": "object"}, "spec": {"type": "object", "properties": {"user": {"type": "string", "description": "Who asked."}}}},
                    "x-kubernetes-group-version-kind": [{"group": "widgets.example.com", "version": "v1alpha1", "kind": "Widget"}]}}}}),
                _ => json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404, "reason": "NotFound", "message": format!("no {path}")}),
            };
            Some(answer.to_string())
        });
        Backend { port: served.port, served, ca_pem, log, proxy_certificate }
    }

    /// The requests the backend got whose path starts with `prefix`.
    fn requests(&self, prefix: &str) -> Vec<Request> {
        self.log.lock().expect("log").iter().filter(|r| r.head.split(' ').nth(1).is_some_and(|p| p.starts_with(prefix)))
            .map(|r| Request { head: r.head.clone(), body: r.body.clone(), client_certificate: r.client_certificate }).collect()
    }
}

/// The Service, EndpointSlice (to `port` on 127.0.0.1) and APIService that put the backend at `GROUP/v1alpha1`.
fn register(system: &Kubectl, port: u16, ca_pem: &str) {
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    system.ok_with_stdin(&["apply", "-f", "-"], &format!("
apiVersion: v1
kind: Namespace
metadata: {{name: aggregated}}
---
apiVersion: v1
kind: Service
metadata: {{name: widgets, namespace: aggregated}}
spec:
  ports: [{{name: https, port: 443, targetPort: {port}}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {{name: widgets-1, namespace: aggregated, labels: {{kubernetes.io/service-name: widgets}}}}
addressType: IPv4
ports: [{{name: https, port: {port}, protocol: TCP}}]
endpoints: [{{addresses: [127.0.0.1], conditions: {{ready: true}}}}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {{name: v1alpha1.{GROUP}}}
spec:
  group: {GROUP}
  version: v1alpha1
  groupPriorityMinimum: 1000
  versionPriority: 15
  service: {{namespace: aggregated, name: widgets}}
  caBundle: {bundle}
"));
}

/// The APIService's `Available` condition: (status, reason, message).
fn available(system: &Kubectl) -> (String, String, String) {
    let object: Value = serde_json::from_str(&system.ok(&["get", "apiservice", &format!("v1alpha1.{GROUP}"), "-o", "json"])).expect("JSON");
    let conditions = object["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let condition = conditions.iter().find(|c| c["type"] == "Available").cloned().unwrap_or(Value::Null);
    let text = |key: &str| condition[key].as_str().unwrap_or_default().to_owned();
    (text("status"), text("reason"), text("message"))
}

fn wait_available(system: &Kubectl, status: &str, reason: &str) {
    assert!(eventually(Duration::from_secs(30), || { let (s, r, _) = available(system); s == status && r == reason }),
        "the APIService never became {status}/{reason}: {:?}", available(system));
}

fn write_file(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.to_str().expect("utf-8").to_owned()
}

#[test]
fn an_apiservice_serves_its_group_version_to_every_tenant_as_the_caller() {
    let backend = Backend::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let certificate = write_file(dir.path(), "proxy.crt", &backend.proxy_certificate.0);
    let key = write_file(dir.path(), "proxy.key", &backend.proxy_certificate.1);
    let tokens = token_file(&["alice-token,alice,10,\"\",,t-a", "bob-token,bob,11,\"\",,t-a", "carol-token,carol,12,\"\",,t-b"]);
    let server = Server::start_with(&["--token-auth-file", tokens.path().to_str().expect("utf-8"),
        "--proxy-client-cert-file", &certificate, "--proxy-client-key-file", &key]);
    let system = server.kubectl();
    for tenant in ["t-a", "t-b"] {
        create_tenant(&system, tenant);
    }
    grant(&system, "t-a", "default", "cluster-admin", "alice");
    grant(&system, "t-b", "default", "cluster-admin", "carol");
    register(&system, backend.port, &backend.ca_pem);
    wait_available(&system, "True", "Passed");

    // Discovery: kubectl (aggregated discovery) finds the backend's resource, its short name too.
    let alice = Kubectl::new(&token_kubeconfig(&server, "alice-token"));
    let resources = alice.ok(&["api-resources", "--api-group", GROUP]);
    assert!(resources.contains("widgets") && resources.contains("wd") && resources.contains("Widget"), "{resources}");
    let groups: Value = serde_json::from_str(&alice.ok(&["get", "--raw", "/apis"])).expect("JSON");
    assert!(groups["groups"].as_array().expect("groups").iter().any(|g| g["name"] == GROUP), "{groups}");
    let group: Value = serde_json::from_str(&alice.ok(&["get", "--raw", &format!("/apis/{GROUP}")])).expect("JSON");
    assert_eq!(group["preferredVersion"]["version"], "v1alpha1", "{group}");
    // Its OpenAPI is the backend's: kubectl explain knows the kind.
    let explained = alice.ok(&["explain", "widgets.spec"]);
    assert!(explained.contains("Who asked."), "{explained}");

    // A tenant's user reaches the backend as herself: kube's front-proxy headers, her tenant and space in extra.
    let listed: Value = serde_json::from_str(&alice.ok(&["get", "widgets", "-n", "default", "-o", "json"])).expect("JSON");
    assert_eq!(listed["items"][0]["spec"]["user"], "alice", "{listed}");
    let printed = alice.ok(&["get", "wd", "-n", "default"]);
    assert!(printed.contains("made-for"), "{printed}");
    let seen = backend.requests(&format!("/apis/{GROUP}/v1alpha1/namespaces/default/widgets"));
    let request = seen.last().expect("the backend was asked");
    assert_eq!(request.header("X-Remote-User").as_deref(), Some("alice"), "{}", request.head);
    assert!(request.head.contains("X-Remote-Group: system:authenticated") || request.head.to_ascii_lowercase().contains("x-remote-group: system:authenticated"), "{}", request.head);
    assert_eq!(request.header("X-Remote-Extra-kspaces.io%2ftenant").as_deref(), Some("t-a"), "{}", request.head);
    assert_eq!(request.header("X-Remote-Extra-kspaces.io%2fspace").as_deref(), Some("root:t-a"), "{}", request.head);
    assert_eq!(request.header("Authorization"), None, "the caller's credentials stay here: {}", request.head);
    assert!(request.client_certificate, "the proxy presents --proxy-client-cert-file");

    // Headers a caller makes up do not reach the backend; over HTTP/1.1 and HTTP/2 alike.
    for http in [Http::One, Http::Two] {
        let output = std::process::Command::new("curl")
            .args(["-sk", if http == Http::One { "--http1.1" } else { "--http2" }, "-w", "\n%{http_code}",
                "-H", "Authorization: Bearer alice-token", "-H", "X-Remote-User: admin", "-H", "X-Remote-Group: system:masters",
                "-H", "X-Remote-Extra-kspaces.io%2ftenant: t-b"])
            .arg(format!("{}/apis/{GROUP}/v1alpha1/namespaces/default/widgets", server.url)).output().expect("curl");
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(text.ends_with("\n200"), "{http:?}: {text}");
        assert!(text.contains("\"user\":\"alice\""), "{http:?}: {text}");
        let request = backend.requests(&format!("/apis/{GROUP}/v1alpha1/namespaces/default/widgets")).pop().expect("asked");
        let head = request.head.to_ascii_lowercase();
        assert!(!head.contains("system:masters") && !head.contains("admin") && !head.contains(": t-b"), "{http:?}: {}", request.head);
    }

    // Connections to the backend are kept between requests.
    let before = backend.served.connections();
    for _ in 0..10 {
        alice.ok(&["get", "--raw", &format!("/apis/{GROUP}/v1alpha1/namespaces/default/widgets")]);
    }
    let opened = backend.served.connections() - before;
    assert!(opened <= 2, "10 requests opened {opened} connections to the backend");

    // The other tenant's user is t-b's there, at its full path as at its short one.
    let carol = Kubectl::new(&token_kubeconfig(&server, "carol-token"));
    carol.ok(&["get", "--raw", &format!("/clusters/root:t-b/apis/{GROUP}/v1alpha1/namespaces/default/widgets")]);
    let request = backend.requests(&format!("/apis/{GROUP}/v1alpha1/namespaces/default/widgets")).pop().expect("asked");
    assert_eq!(request.header("X-Remote-User").as_deref(), Some("carol"));
    assert_eq!(request.header("X-Remote-Extra-kspaces.io%2ftenant").as_deref(), Some("t-b"), "{}", request.head);
    assert_eq!(request.header("X-Remote-Extra-kspaces.io%2fspace").as_deref(), Some("root:t-b"), "{}", request.head);
    // ... and cannot reach t-a's space through it.
    let refused = carol.fails(&["get", "--raw", &format!("/clusters/root:t-a/apis/{GROUP}/v1alpha1/namespaces/default/widgets")]);
    assert!(refused.contains("Forbidden") || refused.contains("forbidden"), "{refused}");

    // RBAC is asked here first: a user without rights gets kube's 403 and the backend never hears of him.
    let before = backend.requests("/").len();
    let bob = Kubectl::new(&token_kubeconfig(&server, "bob-token"));
    let refused = bob.fails(&["get", "widgets", "-n", "default"]);
    assert!(refused.contains("User \"bob\" cannot list resource \"widgets\" in API group \"widgets.example.com\""), "{refused}");
    assert!(backend.requests("/").iter().skip(before).all(|r| r.header("X-Remote-User").as_deref() != Some("bob")), "bob reached the backend");
    let anonymous = curl(&server, Http::Two, None, "GET", &format!("/apis/{GROUP}/v1alpha1/namespaces/default/widgets"), None);
    assert_eq!(anonymous.0, 401, "{anonymous:?}");

    // Tenants cannot register APIServices; invalid ones are 422 with kube's causes.
    let refused = alice.fails_with_stdin(&["apply", "-f", "-"],
        "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.evil.example.com}\nspec: {group: evil.example.com, version: v1, groupPriorityMinimum: 1, versionPriority: 1, service: {namespace: ns1, name: svc1}}\n");
    assert!(refused.contains("no matches for kind \"APIService\""), "tenants do not even discover APIServices: {refused}");
    let invalid = system.fails_with_stdin(&["apply", "-f", "-"],
        "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v2.wrong.example.com}\nspec: {group: other.example.com, version: v1, groupPriorityMinimum: 0, versionPriority: 1, insecureSkipTLSVerify: true, caBundle: Zm9v, service: {namespace: ns1, name: svc1}}\n");
    for needle in ["metadata.name", "spec.groupPriorityMinimum", "spec.insecureSkipTLSVerify"] {
        assert!(invalid.contains(needle), "{needle} missing: {invalid}");
    }
}

#[test]
fn the_available_condition_follows_the_backend_and_an_unavailable_one_is_a_503() {
    let backend = Backend::start();
    let server = Server::start();
    let system = server.kubectl();
    register(&system, backend.port, &backend.ca_pem);
    wait_available(&system, "True", "Passed");
    let path = format!("/apis/{GROUP}/v1alpha1/namespaces/default/widgets");
    system.ok(&["get", "--raw", &path]);

    // The endpoint moves to a port nobody listens on: the discovery check fails, requests are 503 Statuses.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port();
    system.ok(&["patch", "endpointslice", "widgets-1", "-n", "aggregated", "--type", "json", "-p",
        &format!("[{{\"op\": \"replace\", \"path\": \"/ports/0/port\", \"value\": {closed}}}]")]);
    wait_available(&system, "False", "FailedDiscoveryCheck");
    let (_, _, message) = available(&system);
    assert!(message.contains(&format!("127.0.0.1:{closed}")), "{message}");
    let (code, body) = curl(&server, Http::One, None, "GET", "/version", None);
    assert_eq!(code, 200, "{body}");
    let refused = system.fails(&["get", "--raw", &path]);
    assert!(refused.contains("ServiceUnavailable") || refused.contains("service unavailable"), "{refused}");
    // Discovery still names the group, its version stale and without resources (kubectl does not fail on it).
    let resources = system.ok(&["api-resources", "--api-group", "apps"]);
    assert!(resources.contains("deployments"), "{resources}");

    // No endpoints at all: MissingEndpoints; the Service gone: ServiceNotFound.
    system.ok(&["delete", "endpointslice", "widgets-1", "-n", "aggregated"]);
    wait_available(&system, "False", "MissingEndpoints");
    system.ok(&["delete", "service", "widgets", "-n", "aggregated"]);
    wait_available(&system, "False", "ServiceNotFound");

    // Back again: Available, and served.
    register(&system, backend.port, &backend.ca_pem);
    wait_available(&system, "True", "Passed");
    system.ok(&["get", "--raw", &path]);
    // A Local APIService (no service) is always available.
    system.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.apps}\nspec: {group: apps, version: v1, groupPriorityMinimum: 17800, versionPriority: 15}\n");
    assert!(eventually(Duration::from_secs(30), || system.ok(&["get", "apiservice", "v1.apps", "-o", "jsonpath={.status.conditions[0].reason}"]) == "Local"));
    let deployments = system.ok(&["get", "deployments", "-A"]);
    assert!(!deployments.contains("Error"), "{deployments}");
}

/// A CA and two client certificates it signs, `front-proxy` and `stranger`, as PEM files in `dir`: (ca, (cert,
/// key) of each).
fn front_proxy_pki(dir: &std::path::Path) -> (String, [(String, String); 2]) {
    let ca_key = KeyPair::generate().expect("CA key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.distinguished_name.push(rcgen::DnType::CommonName, "front-proxy-ca");
    let ca = params.self_signed(&ca_key).expect("CA");
    let issuer = rcgen::Issuer::new(params, ca_key);
    let ca_file = write_file(dir, "front-proxy-ca.crt", &ca.pem());
    let client = |name: &str| {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        let certificate = params.signed_by(&key, &issuer).expect("certificate");
        (write_file(dir, &format!("{name}.crt"), &certificate.pem()), write_file(dir, &format!("{name}.key"), &key.serialize_pem()))
    };
    (ca_file, [client("front-proxy"), client("stranger")])
}

/// A SelfSubjectReview over `http` with client certificate `identity` and `headers`: (status, body).
fn who_am_i(server: &Server, http: Http, identity: &(String, String), headers: &[&str]) -> (u16, Value) {
    let mut command = std::process::Command::new("curl");
    command.args(["-sk", if http == Http::One { "--http1.1" } else { "--http2" }, "-w", "\n%{http_code}", "--cert", &identity.0, "--key", &identity.1,
        "-X", "POST", "-H", "Content-Type: application/json", "--data-binary", r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#]);
    for header in headers {
        command.args(["-H", header]);
    }
    let output = command.arg(format!("{}/apis/authentication.k8s.io/v1/selfsubjectreviews", server.url)).output().expect("curl");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), serde_json::from_str(body).unwrap_or(Value::Null))
}

#[test]
fn a_front_proxy_speaks_for_the_user_its_headers_name_and_only_an_allowed_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (ca, [proxy, stranger]) = front_proxy_pki(dir.path());
    let server = Server::start_with(&["--requestheader-client-ca-file", &ca, "--requestheader-allowed-names", "front-proxy"]);
    let system = server.kubectl();
    create_tenant(&system, "t-a");

    let headers = ["X-Remote-User: alice", "X-Remote-Group: devs", "X-Remote-Extra-kspaces.io%2ftenant: t-a", "X-Remote-Extra-Scopes: read"];
    for http in [Http::One, Http::Two] {
        let (code, review) = who_am_i(&server, http, &proxy, &headers);
        assert_eq!(code, 201, "{http:?}: {review}");
        let user = &review["status"]["userInfo"];
        assert_eq!(user["username"], "alice", "{review}");
        assert_eq!(user["groups"], json!(["devs", "system:authenticated"]), "{review}");
        assert_eq!(user["extra"]["kspaces.io/tenant"], json!(["t-a"]), "{review}");
        assert_eq!(user["extra"]["scopes"], json!(["read"]), "{review}");
    }
    // Without a username header the proxy's certificate is nobody (never a user named front-proxy).
    let (code, review) = who_am_i(&server, Http::One, &proxy, &[]);
    assert!(code == 401 || code == 403, "{code} {review}");
    assert!(!review.to_string().contains("\"username\":\"front-proxy\""), "{review}");
    // A certificate of that CA whose name is not allowed speaks for nobody, and is nobody itself.
    let (code, review) = who_am_i(&server, Http::Two, &stranger, &["X-Remote-User: admin", "X-Remote-Group: system:masters"]);
    assert!(code == 401 || code == 403, "{code} {review}");
    assert!(!review.to_string().contains("system:masters"), "{review}");

    // Aggregated servers learn the settings from kube's ConfigMap.
    let published: Value = serde_json::from_str(&system.ok(&["get", "configmap", "extension-apiserver-authentication", "-n", "kube-system", "-o", "json"]))
        .expect("JSON");
    assert_eq!(published["data"]["requestheader-allowed-names"], "[\"front-proxy\"]", "{published}");
    assert_eq!(published["data"]["requestheader-username-headers"], "[\"X-Remote-User\"]", "{published}");
    assert!(published["data"]["requestheader-client-ca-file"].as_str().is_some_and(|pem| pem.contains("BEGIN CERTIFICATE")), "{published}");
    assert!(published["data"]["client-ca-file"].as_str().is_some_and(|pem| pem.contains("BEGIN CERTIFICATE")), "{published}");

    // The client CA (whose certificates tenants get through CSRs) may not be the front proxies' CA.
    let other = tempfile::tempdir().expect("temp dir");
    let refused = kspaces_tests::refused_start(other.path(), &["--client-ca-file", &ca, "--requestheader-client-ca-file", &ca]);
    assert!(refused.contains("must not hold a certificate of the client CA"), "{refused}");
}


/// A backend whose watch writes one event, then waits for `release` before the second: (port, CA).
fn streaming_backend(release: Arc<(Mutex<bool>, std::sync::Condvar)>) -> (u16, String) {
    use std::io::{Read, Write};
    let certificates = Certificates::new(false, &["widgets.aggregated.svc"]);
    let ca_pem = certificates.ca_pem.clone();
    let config = Arc::new(certificates.server_config());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (config, release) = (config.clone(), release.clone());
            std::thread::spawn(move || {
                let Ok(connection) = rustls::ServerConnection::new(config) else { return };
                let mut tls = rustls::StreamOwned::new(connection, stream);
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if tls.read(&mut byte).ok().filter(|n| *n == 1).is_none() {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                if !head.contains("watch=") {
                    let list = json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{GROUP}/v1alpha1"),
                        "resources": [{"name": "widgets", "singularName": "widget", "namespaced": true, "kind": "Widget", "verbs": ["get", "list", "watch"]}]}).to_string();
                    let _ = write!(tls, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{list}", list.len());
                    let _ = tls.flush();
                    return;
                }
                let event = |name: &str| format!("{}\n", json!({"type": "ADDED", "object": {"apiVersion": format!("{GROUP}/v1alpha1"), "kind": "Widget",
                    "metadata": {"name": name, "namespace": "default"}}}));
                let chunk = |text: &str| format!("{:x}\r\n{text}\r\n", text.len());
                let _ = write!(tls, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{}", chunk(&event("first")));
                let _ = tls.flush();
                let (released, wake) = &*release;
                let mut released = released.lock().expect("lock");
                while !*released {
                    released = wake.wait(released).expect("wait");
                }
                let _ = write!(tls, "{}0\r\n\r\n", chunk(&event("second")));
                let _ = tls.flush();
            });
        }
    });
    (port, ca_pem)
}

#[test]
fn a_watch_through_an_aggregated_api_flows_as_the_backend_writes_it() {
    let release = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let (port, ca_pem) = streaming_backend(release.clone());
    let server = Server::start();
    let system = server.kubectl();
    register(&system, port, &ca_pem);
    wait_available(&system, "True", "Passed");

    let mut watch = WatchOutput::start(&system, &["get", "--raw", &format!("/apis/{GROUP}/v1alpha1/namespaces/default/widgets?watch=1")]);
    // The first event arrives while the backend still holds the second: nothing buffers the stream.
    let first = watch.wait_for(Duration::from_secs(20), |line| line.contains("\"first\""));
    let (released, wake) = &*release;
    *released.lock().expect("lock") = true;
    wake.notify_all();
    assert!(first, "the first event did not arrive before the backend went on: {}", watch.transcript());
    assert!(watch.wait_for(Duration::from_secs(20), |line| line.contains("\"second\"")), "{}", watch.transcript());
}
