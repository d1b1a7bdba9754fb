//! The HTTPS servers the tests start as webhooks (admission, conversion, token and authorization reviews): a CA
//! and a server certificate of their own (rcgen), one thread per connection, HTTP/1.1 requests answered one after
//! the other on a connection until the client closes it (keep-alive), with JSON or not at all; the connections
//! accepted are counted, and the certificate can change for new connections.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A test CA and a server certificate for `127.0.0.1`, `localhost` and `names`, signed by it; or, with
/// `self_signed_ca`, one self-signed CA certificate for `127.0.0.1` that is both (as kopf serves).
pub struct Certificates {
    /// The CA certificate (a `caBundle`'s content).
    pub ca_pem: String,
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
    /// The CA itself, to sign more (a client certificate).
    pub ca: Option<(rcgen::Certificate, Issuer<'static, KeyPair>)>,
}

impl Certificates {
    pub fn new(self_signed_ca: bool, names: &[&str]) -> Certificates {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        if self_signed_ca {
            ca_params.subject_alt_names.push(SanType::IpAddress("127.0.0.1".parse().expect("ip")));
        }
        let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
        let ca_pem = ca.pem();
        if self_signed_ca {
            let key = PrivateKeyDer::Pkcs8(ca_key.serialize_der().into());
            return Certificates { ca_pem, chain: vec![ca.der().clone()], key, ca: None };
        }
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().expect("server key");
        let names: Vec<String> = std::iter::once("localhost").chain(names.iter().copied()).map(str::to_owned).collect();
        let mut params = CertificateParams::new(names).expect("server params");
        params.subject_alt_names.push(SanType::IpAddress("127.0.0.1".parse().expect("ip")));
        let cert = params.signed_by(&key, &issuer).expect("server certificate");
        let key = PrivateKeyDer::Pkcs8(key.serialize_der().into());
        Certificates { ca_pem, chain: vec![cert.der().clone()], key, ca: Some((ca, issuer)) }
    }

    /// A server TLS configuration with this certificate and no client certificates.
    pub fn server_config(self) -> rustls::ServerConfig {
        rustls::ServerConfig::builder().with_no_client_auth().with_single_cert(self.chain, self.key).expect("server TLS config")
    }
}

/// One request as the server read it.
pub struct Request {
    /// The request line and headers, as sent.
    pub head: String,
    pub body: Vec<u8>,
    /// Whether the client presented a certificate.
    pub client_certificate: bool,
}

impl Request {
    /// The value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
        })
    }
}

/// A running test server: its port, how many connections it accepted, and its certificate, which may change.
#[derive(Clone)]
pub struct Served {
    pub port: u16,
    state: Arc<State>,
}

struct State {
    config: RwLock<Arc<rustls::ServerConfig>>,
    connections: AtomicUsize,
    /// How long a connection may stay idle between requests before the server closes it (none: until the client
    /// closes it).
    idle_close: Mutex<Option<Duration>>,
}

impl Served {
    /// The TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// Serves new connections with `config` (connections already open keep theirs).
    pub fn set_config(&self, config: rustls::ServerConfig) {
        *self.state.config.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(config);
    }

    /// Closes connections idle for `idle` between requests (from the next request on).
    pub fn close_idle_after(&self, idle: Duration) {
        *self.state.idle_close.lock().unwrap_or_else(|e| e.into_inner()) = Some(idle);
    }
}

/// Serves `config` on a free port of 127.0.0.1 until the process ends; `answer` gives each request's JSON
/// answer (200), or `None` to close the connection unanswered. Returns the port.
pub fn serve(config: rustls::ServerConfig, answer: impl Fn(Request) -> Option<String> + Send + Sync + 'static) -> u16 {
    start(config, answer).port
}

/// `serve`, keeping the server's handle.
pub fn start(config: rustls::ServerConfig, answer: impl Fn(Request) -> Option<String> + Send + Sync + 'static) -> Served {
    let state = Arc::new(State { config: RwLock::new(Arc::new(config)), connections: AtomicUsize::new(0), idle_close: Mutex::new(None) });
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the test server");
    let port = listener.local_addr().expect("address").port();
    let answer = Arc::new(answer);
    let shared = state.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            shared.connections.fetch_add(1, Ordering::SeqCst);
            let (state, answer) = (shared.clone(), answer.clone());
            std::thread::spawn(move || one_connection(stream, &state, &*answer));
        }
    });
    Served { port, state }
}

/// Answers the requests of one connection, one after the other (HTTP/1.1 keep-alive), until the client closes
/// it, a request goes unanswered, or it stays idle longer than the server allows.
fn one_connection(stream: TcpStream, state: &State, answer: &dyn Fn(Request) -> Option<String>) {
    let config = state.config.read().unwrap_or_else(|e| e.into_inner()).clone();
    let Ok(connection) = rustls::ServerConnection::new(config) else { return };
    let _ = stream.set_nodelay(true);
    let mut tls = rustls::StreamOwned::new(connection, stream);
    let mut buffer = Vec::new();
    let mut answered = false;
    loop {
        if answered {
            let idle = *state.idle_close.lock().unwrap_or_else(|e| e.into_inner());
            let _ = tls.sock.set_read_timeout(idle);
        }
        let Some((head, body)) = read_request(&mut tls, &mut buffer) else { break };
        let client_certificate = tls.conn.peer_certificates().is_some_and(|c| !c.is_empty());
        let close = head.to_ascii_lowercase().contains("\r\nconnection: close");
        let Some(text) = answer(Request { head, body, client_certificate }) else { return };
        let connection = if close { "close" } else { "keep-alive" };
        let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {connection}\r\n\r\n", text.len());
        let mut answer_bytes = head.into_bytes();
        answer_bytes.extend_from_slice(text.as_bytes());
        if tls.write_all(&answer_bytes).and_then(|()| tls.flush()).is_err() || close {
            break;
        }
        answered = true;
    }
    tls.conn.send_close_notify();
    let _ = tls.flush();
}

/// The head (as sent) and body of the next HTTP/1.1 request (`Content-Length` framed); `buffer` holds what was
/// read past it.
fn read_request(tls: &mut impl Read, buffer: &mut Vec<u8>) -> Option<(String, Vec<u8>)> {
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
    let body = buffer[end..end + length].to_vec();
    buffer.drain(..end + length);
    Some((head, body))
}
