//! A small HTTPS AdmissionReview server for the tests: its own CA (or a self-signed CA certificate served as its
//! own, as kopf serves), a handler deciding each answer, and a log of every review it received.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
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
}

/// How the webhook's certificate is made.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Certificate {
    /// A server certificate signed by the webhook's CA (the bundle).
    SignedByCa,
    /// One self-signed certificate with `CA:TRUE`, both the bundle and the server's certificate (kopf's).
    SelfSignedCa,
}

type Handler = dyn Fn(&Value) -> Reply + Send + Sync;

pub struct Webhook {
    pub port: u16,
    ca_pem: String,
    log: Arc<Mutex<Vec<Value>>>,
}

impl Webhook {
    pub fn start(certificate: Certificate, handler: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Webhook {
        let (ca_pem, chain, key) = certificates(certificate);
        let config = rustls::ServerConfig::builder().with_no_client_auth().with_single_cert(chain, key).expect("server TLS config");
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the webhook");
        let port = listener.local_addr().expect("address").port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let kept = log.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (config, handler, log) = (config.clone(), handler.clone(), kept.clone());
                std::thread::spawn(move || serve(stream, config, &*handler, &log));
            }
        });
        Webhook { port, ca_pem, log }
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

fn certificates(kind: Certificate) -> (String, Vec<rustls::pki_types::CertificateDer<'static>>, rustls::pki_types::PrivateKeyDer<'static>) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    if kind == Certificate::SelfSignedCa {
        ca_params.subject_alt_names.push(SanType::IpAddress("127.0.0.1".parse().expect("ip")));
    }
    let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
    let ca_pem = ca.pem();
    if kind == Certificate::SelfSignedCa {
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(ca_key.serialize_der().into());
        return (ca_pem, vec![ca.der().clone()], key);
    }
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().expect("server key");
    let mut params = CertificateParams::new(vec!["localhost".to_owned(), "hook.default.svc".to_owned()]).expect("server params");
    params.subject_alt_names.push(SanType::IpAddress("127.0.0.1".parse().expect("ip")));
    let cert = params.signed_by(&key, &issuer).expect("server certificate");
    let private = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    (ca_pem, vec![cert.der().clone()], private)
}

fn serve(stream: TcpStream, config: Arc<rustls::ServerConfig>, handler: &Handler, log: &Mutex<Vec<Value>>) {
    let Ok(connection) = rustls::ServerConnection::new(config) else { return };
    let mut tls = rustls::StreamOwned::new(connection, stream);
    let Some(body) = read_request(&mut tls) else { return };
    let review: Value = serde_json::from_slice(&body).unwrap_or_default();
    let request = review["request"].clone();
    log.lock().unwrap_or_else(|e| e.into_inner()).push(request.clone());
    let uid = request["uid"].as_str().unwrap_or_default().to_owned();
    let response = |response: Value| json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}).to_string();
    let answer = match handler(&request) {
        Reply::Allow => response(json!({"uid": uid, "allowed": true})),
        Reply::Warn(warning) => response(json!({"uid": uid, "allowed": true, "warnings": [warning]})),
        Reply::Deny(message) => response(json!({"uid": uid, "allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": message}})),
        Reply::Patch(operations) => {
            let patch = base64::engine::general_purpose::STANDARD.encode(operations.to_string());
            response(json!({"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch}))
        }
        Reply::Raw(text) => text.to_owned(),
        Reply::WrongUid => response(json!({"uid": "not-the-request", "allowed": true})),
        Reply::Hang => {
            std::thread::sleep(Duration::from_secs(30));
            return;
        }
    };
    let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", answer.len());
    let _ = tls.write_all(head.as_bytes());
    let _ = tls.write_all(answer.as_bytes());
    let _ = tls.flush();
    tls.conn.send_close_notify();
    let _ = tls.flush();
}

/// The body of one HTTP/1.1 request (`Content-Length` framed).
fn read_request(tls: &mut impl Read) -> Option<Vec<u8>> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 16384];
    let end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let n = tls.read(&mut chunk).ok().filter(|n| *n > 0)?;
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
    let length: usize = head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    while buffer.len() < end + length {
        let n = tls.read(&mut chunk).ok().filter(|n| *n > 0)?;
        buffer.extend_from_slice(&chunk[..n]);
    }
    Some(buffer[end..end + length].to_vec())
}
