//! A small HTTPS server answering TokenReviews or SubjectAccessReviews for the tests: its own CA, a client
//! certificate it accepts (signed by that CA), a handler deciding each answer, a mode (answer, refuse connections,
//! answer garbage), and a log of every review with how the caller authenticated.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine;
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

type Handler = dyn Fn(&Value) -> Value + Send + Sync;

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
        let client_key = KeyPair::generate().expect("client key");
        let client_cert = CertificateParams::new(Vec::<String>::new()).expect("client params").signed_by(&client_key, &issuer).expect("client cert");
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.der().clone()).expect("CA root");
        let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots)).allow_unauthenticated().build().expect("client verifier");
        let private = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
        let config = rustls::ServerConfig::builder().with_client_cert_verifier(verifier).with_single_cert(vec![cert.der().clone()], private)
            .expect("server TLS config");
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the hook");
        let port = listener.local_addr().expect("address").port();
        let (log, mode) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicU8::new(Mode::Answer as u8)));
        let handler: Arc<Handler> = Arc::new(handler);
        let (kept, current) = (log.clone(), mode.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (config, handler, log, mode) = (config.clone(), handler.clone(), kept.clone(), current.load(Ordering::SeqCst));
                std::thread::spawn(move || serve(stream, config, &*handler, &log, mode));
            }
        });
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

fn serve(stream: TcpStream, config: Arc<rustls::ServerConfig>, handler: &Handler, log: &Mutex<Vec<Value>>, mode: u8) {
    if mode == Mode::Down as u8 {
        return;
    }
    let Ok(connection) = rustls::ServerConnection::new(config) else { return };
    let mut tls = rustls::StreamOwned::new(connection, stream);
    let Some((head, body)) = read_request(&mut tls) else { return };
    let review: Value = serde_json::from_slice(&body).unwrap_or_default();
    let authorization = head.lines().find_map(|l| l.strip_prefix("authorization:").or_else(|| l.strip_prefix("Authorization:")))
        .map(|v| v.trim().to_owned());
    let client_certificate = tls.conn.peer_certificates().is_some_and(|c| !c.is_empty());
    log.lock().unwrap_or_else(|e| e.into_inner())
        .push(json!({"spec": review["spec"], "authorization": authorization, "clientCertificate": client_certificate}));
    let answer = match mode == Mode::Garbage as u8 {
        true => "<html>not a review</html>".to_owned(),
        false => {
            let mut reply = review.clone();
            reply["status"] = handler(&review["spec"]);
            reply.to_string()
        }
    };
    let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", answer.len());
    let _ = tls.write_all(head.as_bytes());
    let _ = tls.write_all(answer.as_bytes());
    let _ = tls.flush();
    tls.conn.send_close_notify();
    let _ = tls.flush();
}

/// The head (as sent) and body of one HTTP/1.1 request (`Content-Length` framed).
fn read_request(tls: &mut impl Read) -> Option<(String, Vec<u8>)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 16384];
    let end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let n = tls.read(&mut chunk).ok().filter(|n| *n > 0)?;
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
    let length: usize = head.to_ascii_lowercase().lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    while buffer.len() < end + length {
        let n = tls.read(&mut chunk).ok().filter(|n| *n > 0)?;
        buffer.extend_from_slice(&chunk[..n]);
    }
    Some((head, buffer[end..end + length].to_vec()))
}
