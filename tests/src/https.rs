//! The HTTPS servers the tests start as webhooks (admission, conversion, token and authorization reviews): a CA
//! and a server certificate of their own (rcgen), one thread per connection, and one HTTP/1.1 request per
//! connection, answered with JSON or not at all.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

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

/// Serves `config` on a free port of 127.0.0.1 until the process ends; `answer` gives each request's JSON
/// answer (200), or `None` to close the connection unanswered. Returns the port.
pub fn serve(config: rustls::ServerConfig, answer: impl Fn(Request) -> Option<String> + Send + Sync + 'static) -> u16 {
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the test server");
    let port = listener.local_addr().expect("address").port();
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (config, answer) = (config.clone(), answer.clone());
            std::thread::spawn(move || one_connection(stream, config, &*answer));
        }
    });
    port
}

fn one_connection(stream: TcpStream, config: Arc<rustls::ServerConfig>, answer: &dyn Fn(Request) -> Option<String>) {
    let Ok(connection) = rustls::ServerConnection::new(config) else { return };
    let mut tls = rustls::StreamOwned::new(connection, stream);
    let Some((head, body)) = read_request(&mut tls) else { return };
    let client_certificate = tls.conn.peer_certificates().is_some_and(|c| !c.is_empty());
    let Some(text) = answer(Request { head, body, client_certificate }) else { return };
    let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", text.len());
    let _ = tls.write_all(head.as_bytes());
    let _ = tls.write_all(text.as_bytes());
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
