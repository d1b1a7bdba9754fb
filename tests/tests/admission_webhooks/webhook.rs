//! A small HTTPS AdmissionReview server for the tests: its own CA (or a self-signed CA certificate served as its
//! own, as kopf serves), a handler deciding each answer, a log of every review it received, and the connections it
//! accepted.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use kspaces_tests::https::{self, Certificates};
use serde_json::{json, Value};

/// What the webhook answers to one review.
pub enum Reply {
    Allow,
    /// Allowed, with a warning for the client.
    Warn(&'static str),
    Deny(&'static str),
    /// JSONPatch operations, sent base64-encoded as kube expects.
    Patch(Value),
    /// A body that is not what it must be.
    Raw(&'static str),
    /// An answer for another request.
    WrongUid,
    /// No answer for 30 s.
    Hang,
    /// Allowed, with an audit annotation (key, value).
    Annotate(&'static str, &'static str),
}

/// How the webhook's certificate is made.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Certificate {
    /// A server certificate signed by the webhook's CA (the bundle).
    SignedByCa,
    /// One self-signed certificate with `CA:TRUE`, both the bundle and the server's certificate (kopf's).
    SelfSignedCa,
}

pub struct Webhook {
    pub port: u16,
    ca_pem: String,
    log: Arc<Mutex<Vec<Value>>>,
    served: https::Served,
}

impl Webhook {
    pub fn start(certificate: Certificate, handler: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Webhook {
        let certificates = Certificates::new(certificate == Certificate::SelfSignedCa, &["hook.default.svc"]);
        let ca_pem = certificates.ca_pem.clone();
        let log = Arc::new(Mutex::new(Vec::new()));
        let kept = log.clone();
        let served = https::start(certificates.server_config(), move |request| answer(&request.body, &handler, &kept));
        Webhook { port: served.port, ca_pem, log, served }
    }

    /// The TCP connections the webhook accepted so far.
    pub fn connections(&self) -> usize {
        self.served.connections()
    }

    /// Serves new connections with a certificate of a new CA (the old bundle does not trust it); returns the
    /// `caBundle` trusting it.
    pub fn new_certificate(&self) -> String {
        let certificates = Certificates::new(false, &["hook.default.svc"]);
        let bundle = base64::engine::general_purpose::STANDARD.encode(&certificates.ca_pem);
        self.served.set_config(certificates.server_config());
        bundle
    }

    /// Closes connections idle longer than `idle` (as servers with a short keep-alive timeout do).
    pub fn close_idle_after(&self, idle: Duration) {
        self.served.close_idle_after(idle);
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// The `caBundle` trusting this webhook.
    pub fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    /// The `request`s of every review received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The AdmissionReview answering `body` as `handler` decides (`None`: no answer).
fn answer(body: &[u8], handler: &impl Fn(&Value) -> Reply, log: &Mutex<Vec<Value>>) -> Option<String> {
    let review: Value = serde_json::from_slice(body).unwrap_or_default();
    let request = review["request"].clone();
    log.lock().unwrap_or_else(|e| e.into_inner()).push(request.clone());
    let uid = request["uid"].as_str().unwrap_or_default().to_owned();
    let response = |response: Value| json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}).to_string();
    Some(match handler(&request) {
        Reply::Allow => response(json!({"uid": uid, "allowed": true})),
        Reply::Warn(warning) => response(json!({"uid": uid, "allowed": true, "warnings": [warning]})),
        Reply::Deny(message) => response(json!({"uid": uid, "allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": message}})),
        Reply::Patch(operations) => {
            let patch = base64::engine::general_purpose::STANDARD.encode(operations.to_string());
            response(json!({"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch}))
        }
        Reply::Raw(text) => text.to_owned(),
        Reply::WrongUid => response(json!({"uid": "not-the-request", "allowed": true})),
        Reply::Annotate(key, value) => response(json!({"uid": uid, "allowed": true, "auditAnnotations": {key: value}})),
        Reply::Hang => {
            std::thread::sleep(Duration::from_secs(30));
            return None;
        }
    })
}
