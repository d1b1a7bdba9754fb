//! A small HTTPS ConversionReview server for the tests, with its own CA: it converts `spec.host` (v1) and
//! `spec.hostname` (v2) into each other, or answers as its `Mode` says, and logs every review's request.
//! (Mirrors `admission_webhooks/webhook.rs`, whose answers are AdmissionReviews.)

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use base64::Engine;
use serde_json::{json, Value};

/// How the webhook answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Convert,
    /// A body that is not JSON.
    Garbage,
    /// The answer of another review.
    WrongUid,
    /// One object too few.
    WrongCount,
    /// Converted objects renamed.
    Renamed,
    /// `result.status: Failed` with a message.
    Refuse,
    /// No answer for 40 s (past kube's 30 s bound).
    Hang,
}

pub struct Webhook {
    pub port: u16,
    ca_pem: String,
    log: Arc<Mutex<Vec<Value>>>,
    mode: Arc<Mutex<Mode>>,
}

impl Webhook {
    pub fn start() -> Webhook {
        let (ca_pem, chain, key) = certificates();
        let config = rustls::ServerConfig::builder().with_no_client_auth().with_single_cert(chain, key).expect("server TLS config");
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the webhook");
        let port = listener.local_addr().expect("address").port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let mode = Arc::new(Mutex::new(Mode::Convert));
        let (kept, mode_kept) = (log.clone(), mode.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (config, log, mode) = (config.clone(), kept.clone(), mode_kept.clone());
                std::thread::spawn(move || serve(stream, config, &log, &mode));
            }
        });
        Webhook { port, ca_pem, log, mode }
    }

    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}/convert", self.port)
    }

    pub fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    pub fn set_mode(&self, mode: Mode) {
        *self.mode.lock().unwrap_or_else(|e| e.into_inner()) = mode;
    }

    /// The `request` of every review received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// v1's `spec.host` is v2's `spec.hostname`.
pub fn convert(object: &Value, desired: &str) -> Value {
    let mut object = object.clone();
    let (from, to) = if desired.ends_with("/v2") { ("host", "hostname") } else { ("hostname", "host") };
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(value) = spec.remove(from) {
            spec.insert(to.into(), value);
        }
    }
    object["apiVersion"] = json!(desired);
    object
}

fn certificates() -> (String, Vec<rustls::pki_types::CertificateDer<'static>>, rustls::pki_types::PrivateKeyDer<'static>) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
    let ca_pem = ca.pem();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().expect("server key");
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).expect("server params");
    params.subject_alt_names.push(SanType::IpAddress("127.0.0.1".parse().expect("ip")));
    let cert = params.signed_by(&key, &issuer).expect("server certificate");
    let private = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    (ca_pem, vec![cert.der().clone()], private)
}

fn serve(stream: TcpStream, config: Arc<rustls::ServerConfig>, log: &Mutex<Vec<Value>>, mode: &Mutex<Mode>) {
    let Ok(connection) = rustls::ServerConnection::new(config) else { return };
    let mut tls = rustls::StreamOwned::new(connection, stream);
    let Some(body) = read_request(&mut tls) else { return };
    let review: Value = serde_json::from_slice(&body).unwrap_or_default();
    let request = review["request"].clone();
    log.lock().unwrap_or_else(|e| e.into_inner()).push(request.clone());
    let uid = request["uid"].as_str().unwrap_or_default().to_owned();
    let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    let mut converted: Vec<Value> = objects.iter().map(|o| convert(o, desired)).collect();
    let mode = *mode.lock().unwrap_or_else(|e| e.into_inner());
    let response = |uid: &str, converted: Vec<Value>, result: Value| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": {"uid": uid, "result": result, "convertedObjects": converted}}).to_string()
    };
    let success = json!({"status": "Success"});
    let answer = match mode {
        Mode::Convert => response(&uid, converted, success),
        Mode::Garbage => "this is not a review".to_owned(),
        Mode::WrongUid => response("not-the-request", converted, success),
        Mode::WrongCount => {
            converted.pop();
            response(&uid, converted, success)
        }
        Mode::Renamed => {
            for object in &mut converted {
                object["metadata"]["name"] = json!("renamed");
            }
            response(&uid, converted, success)
        }
        Mode::Refuse => response(&uid, Vec::new(), json!({"status": "Failure", "message": "cannot convert today"})),
        Mode::Hang => {
            std::thread::sleep(std::time::Duration::from_secs(40));
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
