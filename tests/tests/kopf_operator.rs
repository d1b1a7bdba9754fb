//! A real operator framework's admission webhooks: an operator written with the Python `kopf` framework (pinned
//! and installed into the test venv by scripts/test-all.sh), run as its authors run it (`kopf run`) with a tenant
//! admin's kubeconfig. kopf registers its own Validating and Mutating WebhookConfigurations in the tenant's space
//! and serves them from its own HTTPS server with a self-signed CA certificate (as kopf makes), and judges only that
//! tenant's writes.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kspaces_tests::{certificate_kubeconfig, create_tenant, eventually, Kubectl, Server};

fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("KSPACES_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(python);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    assert!(venv.exists(), "no Python venv: run scripts/test-all.sh (it installs kubernetes and kopf into .venv), or set KSPACES_PYTHON");
    venv
}

/// A certificate as kopf makes for itself (`WebhookServer.build_certificate`): self-signed, a CA certificate,
/// for 127.0.0.1, usable for server and client authentication. Written as (certificate, key) files in `dir`.
/// kopf's own generator needs `certbuilder`, whose `oscrypto` 1.3.0 cannot read OpenSSL 3.0.10+'s version string,
/// so the operator is given this one (`certfile`/`pkeyfile`, a path kopf documents).
fn kopf_certificate(dir: &Path) -> (PathBuf, PathBuf) {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("params");
    params.distinguished_name.push(rcgen::DnType::CommonName, "127.0.0.1");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature, rcgen::KeyUsagePurpose::KeyEncipherment,
        rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth, rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let certificate = params.self_signed(&key).expect("self-signed certificate");
    let (cert_file, key_file) = (dir.join("kopf.pem"), dir.join("kopf-key.pem"));
    std::fs::write(&cert_file, certificate.pem()).expect("write certificate");
    std::fs::write(&key_file, key.serialize_pem()).expect("write key");
    (cert_file, key_file)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port()
}

/// `kopf run` of tests/python/kopf_operator.py, killed on drop.
struct Operator {
    child: Child,
    log: PathBuf,
    output: PathBuf,
}

impl Operator {
    fn start(kubeconfig: &Path, dir: &Path) -> Operator {
        let (cert, key) = kopf_certificate(dir);
        let (log, output) = (dir.join("reviews.jsonl"), dir.join("kopf.out"));
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/kopf_operator.py");
        let child = Command::new(python())
            .args(["-m", "kopf", "run", "--standalone", "--all-namespaces"])
            .arg(script)
            .env("KUBECONFIG", kubeconfig)
            .env("KOPF_PORT", free_port().to_string())
            .env("KOPF_CERT", cert)
            .env("KOPF_KEY", key)
            .env("KOPF_LOG", &log)
            .stdout(Stdio::from(std::fs::File::create(&output).expect("output file")))
            .stderr(Stdio::from(std::fs::File::create(dir.join("kopf.err")).expect("error file")))
            .spawn()
            .expect("start kopf");
        Operator { child, log, output }
    }

    /// Every review kopf received, one JSON line each.
    fn reviews(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn transcript(&self) -> String {
        let err = self.output.with_file_name("kopf.err");
        format!("{}\n{}", std::fs::read_to_string(&self.output).unwrap_or_default(), std::fs::read_to_string(err).unwrap_or_default())
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        self.stop();
    }
}

#[test]
fn a_kopf_operator_registers_its_webhooks_and_judges_only_its_tenants_writes() {
    let server = Server::start();
    let system = server.kubectl();
    for tenant in ["acme", "beta"] {
        create_tenant(&system, tenant);
    }
    let acme_config = certificate_kubeconfig(&server, "acme", "admin", &[]);
    let acme = Kubectl::new(&acme_config);
    let beta = Kubectl::new(&certificate_kubeconfig(&server, "beta", "admin", &[]));
    let dir = tempfile::tempdir().expect("temp dir");
    let mut operator = Operator::start(&acme_config, dir.path());

    // kopf registers its configurations itself, in acme's space.
    let registered = eventually(Duration::from_secs(60), || {
        acme.run(&["get", "validatingwebhookconfiguration", "kopf.kspaces.example"]).status.success()
            && acme.run(&["get", "mutatingwebhookconfiguration", "kopf.kspaces.example"]).status.success()
    });
    assert!(registered, "kopf did not register its webhooks:\n{}", operator.transcript());
    assert!(!beta.run(&["get", "validatingwebhookconfiguration", "kopf.kspaces.example"]).status.success(), "not in beta's space");

    // A write kopf allows: mutated (its JSONPatch) and warned.
    let mut created = acme.run(&["create", "configmap", "plain", "-n", "default", "--from-literal", "a=b"]);
    assert!(eventually(Duration::from_secs(30), || {
        if !created.status.success() {
            created = acme.run(&["create", "configmap", "plain", "-n", "default", "--from-literal", "a=b"]);
        }
        created.status.success()
    }), "{}\n{}", String::from_utf8_lossy(&created.stderr), operator.transcript());
    let label = acme.ok(&["get", "configmap", "plain", "-n", "default", "-o", "jsonpath={.metadata.labels.kopf-mutated}"]);
    assert_eq!(label, "yes", "kopf's mutating webhook labels it");
    assert!(String::from_utf8_lossy(&created.stderr).contains("Warning: checked by kopf"), "{}", String::from_utf8_lossy(&created.stderr));

    // A write kopf refuses.
    let refused = acme.fails(&["create", "configmap", "bad", "-n", "default", "--from-literal", "forbidden=1"]);
    assert!(refused.contains("kopf refuses a ConfigMap with forbidden data"), "{refused}");
    assert!(!acme.run(&["get", "configmap", "bad", "-n", "default"]).status.success(), "nothing stored");

    // A dry run reaches kopf marked as one, and stores nothing.
    acme.ok(&["create", "configmap", "dry", "-n", "default", "--dry-run=server"]);
    assert!(operator.reviews().lines().any(|l| l.contains("\"name\": \"dry\"") && l.contains("\"dryRun\": true")), "{}", operator.reviews());
    assert!(!acme.run(&["get", "configmap", "dry", "-n", "default"]).status.success());

    // beta's writes never reach acme's operator.
    beta.ok(&["create", "configmap", "theirs", "-n", "default", "--from-literal", "forbidden=1"]);
    let theirs = beta.ok(&["get", "configmap", "theirs", "-n", "default", "-o", "jsonpath={.metadata.labels}"]);
    assert!(!theirs.contains("kopf-mutated"), "{theirs}");
    assert!(!operator.reviews().contains("theirs"), "kopf saw beta's write:\n{}", operator.reviews());

    // kopf's webhooks fail closed (its default failurePolicy): with the operator gone, acme's writes are refused
    // with the webhook named, promptly; beta's go on.
    operator.stop();
    let refused = acme.fails(&["create", "configmap", "while-down", "-n", "default"]);
    assert!(refused.contains("failed calling webhook"), "{refused}");
    beta.ok(&["create", "configmap", "still-fine", "-n", "default"]);
}
