//! A small HTTPS server answering TokenReviews or SubjectAccessReviews for the tests: its own CA, a client
//! certificate it accepts (signed by that CA), a handler deciding each answer, a mode (answer, refuse connections,
//! answer garbage), and a log of every review with how the caller authenticated.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine;
use kspaces_tests::https::{self, Certificates, Request};
use serde_json::{json, Value};

/// What the hook does with the next requests.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    Answer = 0,
    /// Closes every connection without a word.
    Down = 1,
    /// Answers 200 with a body that is not JSON.
    Garbage = 2,
}

pub struct Hook {
    pub port: u16,
    ca_pem: String,
    client: (String, String),
    mode: Arc<AtomicU8>,
    log: Arc<Mutex<Vec<Value>>>,
}

impl Hook {
    /// Starts the hook; `handler` maps a review's `spec` to its `status`.
    pub fn start(handler: impl Fn(&Value) -> Value + Send + Sync + 'static) -> Hook {
        let mut certificates = Certificates::new(false, &[]);
        let (ca, issuer) = certificates.ca.take().expect("a CA");
        let client_key = rcgen::KeyPair::generate().expect("client key");
        let client_cert = rcgen::CertificateParams::new(Vec::<String>::new()).expect("client params").signed_by(&client_key, &issuer)
            .expect("client cert");
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.der().clone()).expect("CA root");
        let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots)).allow_unauthenticated().build().expect("client verifier");
        let ca_pem = certificates.ca_pem.clone();
        let config = rustls::ServerConfig::builder().with_client_cert_verifier(verifier).with_single_cert(certificates.chain, certificates.key)
            .expect("server TLS config");
        let (log, mode) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicU8::new(Mode::Answer as u8)));
        let (kept, current) = (log.clone(), mode.clone());
        let port = https::serve(config, move |request| answer(&request, &handler, &kept, current.load(Ordering::SeqCst)));
        Hook { port, ca_pem, client: (client_cert.pem(), client_key.serialize_pem()), mode, log }
    }

    pub fn set_mode(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::SeqCst);
    }

    /// A kubeconfig-format file in `dir` naming this hook: the CA as data, and the caller's credentials, a bearer
    /// token (`Some`) or the client certificate as files beside it.
    pub fn kubeconfig(&self, dir: &Path, name: &str, token: Option<&str>) -> PathBuf {
        let data = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
        let user = match token {
            Some(token) => format!("    token: {token}\n"),
            None => {
                std::fs::write(dir.join(format!("{name}-client.pem")), &self.client.0).expect("write client cert");
                std::fs::write(dir.join(format!("{name}-client.key")), &self.client.1).expect("write client key");
                format!("    client-certificate: {name}-client.pem\n    client-key: {name}-client.key\n")
            }
        };
        let text = format!("apiVersion: v1\nkind: Config\nclusters:\n- name: hook\n  cluster:\n    server: https://127.0.0.1:{}/{name}\n\
            \x20   certificate-authority-data: {}\nusers:\n- name: apiserver\n  user:\n{user}current-context: hook\ncontexts:\n- name: hook\n  context:\n\
            \x20   cluster: hook\n    user: apiserver\n", self.port, data(&self.ca_pem));
        let path = dir.join(format!("{name}.kubeconfig"));
        std::fs::write(&path, text).expect("write the hook's kubeconfig");
        path
    }

    /// Every review received: `{"spec": ..., "authorization": <header>, "clientCertificate": bool}`.
    pub fn log(&self) -> Vec<Value> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The review answering `request` as `handler` and the mode decide (`None`: no answer).
fn answer(request: &Request, handler: &impl Fn(&Value) -> Value, log: &Mutex<Vec<Value>>, mode: u8) -> Option<String> {
    if mode == Mode::Down as u8 {
        return None;
    }
    let review: Value = serde_json::from_slice(&request.body).unwrap_or_default();
    log.lock().unwrap_or_else(|e| e.into_inner())
        .push(json!({"spec": review["spec"], "authorization": request.header("authorization"), "clientCertificate": request.client_certificate}));
    Some(match mode == Mode::Garbage as u8 {
        true => "<html>not a review</html>".to_owned(),
        false => {
            let mut reply = review.clone();
            reply["status"] = handler(&review["spec"]);
            reply.to_string()
        }
    })
}
