//! Calls the server makes to others' HTTPS endpoints (admission webhooks, the token and authorization webhooks of
//! a kubeconfig-format file, `kubeconfig`, and OIDC issuers' keys): one JSON POST (or GET) over HTTP/1.1, TLS
//! verified against the endpoint's `caBundle`, bounded in time and in the answer's size, to an address the caller
//! allows. Connections are kept open between calls (`pool`: per endpoint's TLS settings, host, port and
//! certificate name; idle 90 s at most, 64 per endpoint and 512 in all): a new one only after the address check on
//! the address connected to and a full TLS verification, a kept one only to an address the caller still allows. A
//! call whose kept connection turns out closed before any byte of the request was written goes on a new one (as
//! Go's client retries); one that fails after is a failed call. Go's client (and so kube-apiserver) accepts a self-signed certificate that is itself a CA as the
//! server's certificate when it is in the bundle (kopf serves one); rustls refuses it, so `BundleVerifier` accepts
//! exactly that certificate when the bundle holds it and it names the host.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

pub mod kubeconfig;
pub mod pool;

use pool::{Key, POOL};

/// The largest answer read (kube reads a webhook's whole answer; this bounds what one can make the server hold).
const MAX_ANSWER_BYTES: usize = 8 << 20;

/// Why a call failed, in the words kube's messages use after `failed calling webhook "<name>": `.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("failed to call webhook: {method} {url:?}: {why}")]
    Transport { method: &'static str, url: String, why: String },
    #[error("failed to call webhook: {method} {url:?}: context deadline exceeded")]
    Timeout { method: &'static str, url: String },
    #[error("failed to call webhook: the server responded with the status code {code} but did not return a valid answer")]
    Status { code: u16 },
}

/// The TLS settings of one endpoint, built once from its `caBundle` (none: the system's roots), and their
/// identity: kept connections serve only calls with the same one (clones share it; no two `Tls` built have the
/// same).
#[derive(Clone, Debug)]
pub struct Tls {
    config: Arc<rustls::ClientConfig>,
    id: u64,
}

impl Tls {
    /// The settings trusting the PEM certificates of `bundle`, or the system's roots when it is empty.
    pub fn new(bundle: &[u8]) -> Result<Tls, String> {
        Tls::with_client_certificate(bundle, None)
    }

    /// The settings trusting `bundle`, presenting `identity` (PEM certificate chain, PEM private key) when asked
    /// for a client certificate.
    pub fn with_client_certificate(bundle: &[u8], identity: Option<(&[u8], &[u8])>) -> Result<Tls, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let pinned: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(bundle).filter_map(Result::ok).collect();
        let mut roots = RootCertStore::empty();
        if bundle.is_empty() {
            for certificate in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(certificate);
            }
        } else {
            let (added, _) = roots.add_parsable_certificates(pinned.iter().cloned());
            if added == 0 {
                return Err("the caBundle holds no usable certificate".into());
            }
        }
        let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build().map_err(|e| e.to_string())?;
        Tls::verified_by(Arc::new(BundleVerifier { inner, pinned, provider: provider.clone() }), provider, identity)
    }

    /// The settings trusting whatever certificate the server shows (an APIService's `insecureSkipTLSVerify`; its
    /// signatures are still checked), presenting `identity` when asked.
    pub fn insecure(identity: Option<(&[u8], &[u8])>) -> Result<Tls, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        Tls::verified_by(Arc::new(AnyCertificate { provider: provider.clone() }), provider, identity)
    }

    /// What kept connections verified under these settings are kept by (`pool::Key::tls`).
    pub fn id(&self) -> u64 {
        self.id
    }

    fn verified_by(verifier: Arc<dyn ServerCertVerifier>, provider: Arc<CryptoProvider>, identity: Option<(&[u8], &[u8])>) -> Result<Tls, String> {
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match identity {
            None => builder.with_no_client_auth(),
            Some((chain, key)) => {
                let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain).filter_map(Result::ok).collect();
                if chain.is_empty() {
                    return Err("the client certificate holds no PEM certificate".into());
                }
                let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key).map_err(|e| format!("the client key: {e}"))?;
                builder.with_client_auth_cert(chain, key).map_err(|e| format!("the client certificate and key: {e}"))?
            }
        };
        static BUILT: AtomicU64 = AtomicU64::new(0);
        Ok(Tls { config: Arc::new(config), id: BUILT.fetch_add(1, Ordering::Relaxed) })
    }
}

/// One POST: where, what, how long.
pub struct Call<'a> {
    pub url: &'a url::Url,
    pub tls: &'a Tls,
    pub body: Vec<u8>,
    pub timeout: Duration,
    /// Whether the call may go to this address (the allowed ranges; never the server itself).
    pub allowed: &'a (dyn Fn(SocketAddr) -> bool + Sync),
    /// The name the certificate must hold, when not the URL's host.
    pub server_name: Option<&'a str>,
    /// Sent as `Authorization: Bearer <token>`.
    pub bearer: Option<&'a str>,
}

/// Posts `call.body` as JSON and returns the answer's body (a 2xx answer only), within `call.timeout`.
pub async fn post_json(call: Call<'_>) -> Result<Vec<u8>, CallError> {
    send(call, http::Method::POST).await
}

/// GETs `call.url` (its body is not sent) and returns the answer's body (a 2xx answer only), within `call.timeout`.
pub async fn get_json(call: Call<'_>) -> Result<Vec<u8>, CallError> {
    send(call, http::Method::GET).await
}

async fn send(call: Call<'_>, method: http::Method) -> Result<Vec<u8>, CallError> {
    let url = call.url.as_str().to_owned();
    let named = if method == http::Method::GET { "Get" } else { "Post" };
    match tokio::time::timeout(call.timeout, exchange(&call, method, named)).await {
        Ok(answer) => answer,
        Err(_) => Err(CallError::Timeout { method: named, url }),
    }
}

async fn exchange(call: &Call<'_>, method: http::Method, named: &'static str) -> Result<Vec<u8>, CallError> {
    let transport = |why: String| CallError::Transport { method: named, url: call.url.as_str().to_owned(), why };
    let host = call.url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = call.url.port_or_known_default().unwrap_or(443);
    let expected = call.server_name.unwrap_or(&host).to_owned();
    let key = Key { tls: call.tls.id, host, port, server_name: expected };
    let request = request(call, &method).map_err(|e| transport(e.to_string()))?;
    // The call's own timeout (`send`) bounds connecting too.
    let (answer, kept) = send_kept(key, call.tls, call.allowed, request, call.timeout).await.map_err(transport)?;
    read(answer, kept).await.map_err(transport)?
}

/// A connection an answer came on, to be kept for the next request to its endpoint once that answer was read
/// whole (`keep`); dropped, it is closed.
pub struct Kept {
    sender: pool::Sender,
    address: SocketAddr,
    key: Key,
}

impl Kept {
    /// Keeps the connection (its last answer was read to the end).
    pub fn keep(self) {
        POOL.put(self.key, self.sender, self.address);
    }
}

/// Sends `request` to `key`'s endpoint: over a kept connection to an address `allowed` still allows when one is
/// open (one that turns out closed before any byte of the request was written to it is dropped and the request
/// goes on the next, or a new one, as Go does), else over a new connection, made within `connect_within`.
pub async fn send_kept(key: Key, tls: &Tls, allowed: &(dyn Fn(SocketAddr) -> bool + Sync), request: http::Request<Full<bytes::Bytes>>,
    connect_within: Duration) -> Result<(http::Response<hyper::body::Incoming>, Kept), String> {
    let mut request = Some(request);
    while let Some((mut sender, address)) = POOL.take(&key, allowed) {
        if sender.ready().await.is_err() {
            continue;
        }
        let Some(sent) = request.take() else { break };
        match sender.try_send_request(sent).await {
            Ok(answer) => return Ok((answer, Kept { sender, address, key })),
            Err(mut failed) => match failed.take_message() {
                Some(unsent) => request = Some(unsent),
                None => return Err(failed.into_error().to_string()),
            },
        }
    }
    let request = request.ok_or_else(|| "the request was lost".to_owned())?;
    let opened = tokio::time::timeout(connect_within, connect(&key, tls, allowed)).await;
    let (mut sender, address) = opened.map_err(|_| format!("dial tcp {}:{}: i/o timeout", key.host, key.port))??;
    let answer = sender.send_request(request).await.map_err(|e| e.to_string())?;
    Ok((answer, Kept { sender, address, key }))
}

/// A new connection for `key`: the first address of its host `allowed` allows, TLS verified against `tls`.
async fn connect(key: &Key, tls: &Tls, allowed: &(dyn Fn(SocketAddr) -> bool + Sync)) -> Result<(pool::Sender, SocketAddr), String> {
    let (host, port) = (key.host.as_str(), key.port);
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host((host, port)).await.map_err(|e| format!("dial tcp: lookup {host}: {e}"))?.collect();
    let Some(address) = addresses.iter().copied().find(|a| allowed(*a)) else {
        return Err(format!("dial tcp {host}:{port}: the address is not one webhooks of this space may call"));
    };
    let tcp = tokio::net::TcpStream::connect(address).await.map_err(|e| format!("dial tcp {address}: connect: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let name = match key.server_name.parse::<IpAddr>() {
        Ok(ip) => ServerName::IpAddress(ip.into()),
        Err(_) => ServerName::try_from(key.server_name.clone()).map_err(|e| e.to_string())?,
    };
    let tls = tokio_rustls::TlsConnector::from(tls.config.clone()).connect(name, tcp).await.map_err(|e| format!("tls: {e}"))?;
    let (sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls)).await.map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    Ok((sender, address))
}

/// The request `call` makes.
fn request(call: &Call<'_>, method: &http::Method) -> Result<http::Request<Full<bytes::Bytes>>, http::Error> {
    let path = match call.url.query() {
        Some(query) => format!("{}?{query}", call.url.path()),
        None => call.url.path().to_owned(),
    };
    let authority = match call.url.port() {
        Some(port) => format!("{}:{port}", call.url.host_str().unwrap_or_default()),
        None => call.url.host_str().unwrap_or_default().to_owned(),
    };
    let mut request = http::Request::builder().method(method.clone()).uri(path)
        .header(http::header::HOST, authority)
        .header(http::header::ACCEPT, "application/json");
    if method == http::Method::POST {
        request = request.header(http::header::CONTENT_TYPE, "application/json");
    }
    if let Some(token) = call.bearer {
        request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    request.body(Full::new(bytes::Bytes::from(if method == http::Method::POST { call.body.clone() } else { Vec::new() })))
}

/// The body of `answer` (a 2xx answer only; bounded by `MAX_ANSWER_BYTES`); its connection is kept for the next
/// call once the whole answer is read. The outer error is the transport's, the inner the answer's status.
async fn read(answer: http::Response<hyper::body::Incoming>, kept: Kept) -> Result<Result<Vec<u8>, CallError>, String> {
    let code = answer.status().as_u16();
    let body = Limited::new(answer.into_body(), MAX_ANSWER_BYTES).collect().await.map_err(|e| e.to_string())?.to_bytes();
    kept.keep();
    if !(200..300).contains(&code) {
        return Ok(Err(CallError::Status { code }));
    }
    Ok(Ok(body.to_vec()))
}

/// webpki's verification, and besides it the certificates of the bundle themselves as server certificates.
#[derive(Debug)]
struct BundleVerifier {
    inner: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for BundleVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Ok(verified) => Ok(verified),
            Err(error) => {
                let pinned = self.pinned.iter().any(|c| c.as_ref() == end_entity.as_ref());
                if pinned && names(end_entity, server_name) {
                    Ok(ServerCertVerified::assertion())
                } else {
                    Err(error)
                }
            }
        }
    }

    fn verify_tls12_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// Any server certificate, its handshake signatures checked (`insecureSkipTLSVerify`).
#[derive(Debug)]
struct AnyCertificate {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(&self, _: &CertificateDer<'_>, _: &[CertificateDer<'_>], _: &ServerName<'_>, _: &[u8], _: UnixTime)
        -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// Whether `certificate`'s subject alternative names include `server_name` (a DNS name, `*.` wildcards of one
/// label, or an IP address), and it is within its validity period.
fn names(certificate: &CertificateDer<'_>, server_name: &ServerName<'_>) -> bool {
    use x509_parser::extensions::GeneralName;
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(certificate.as_ref()) else { return false };
    if !parsed.validity().is_valid() {
        return false;
    }
    let Ok(Some(alternative)) = parsed.subject_alternative_name() else { return false };
    alternative.value.general_names.iter().any(|general| match (general, server_name) {
        (GeneralName::DNSName(dns), ServerName::DnsName(wanted)) => dns_matches(dns, wanted.as_ref()),
        (GeneralName::IPAddress(bytes), ServerName::IpAddress(ip)) => match IpAddr::from(*ip) {
            IpAddr::V4(v4) => *bytes == v4.octets().as_slice(),
            IpAddr::V6(v6) => *bytes == v6.octets().as_slice(),
        },
        _ => false,
    })
}

fn dns_matches(pattern: &str, host: &str) -> bool {
    let (pattern, host) = (pattern.to_ascii_lowercase(), host.to_ascii_lowercase());
    match pattern.strip_prefix("*.") {
        Some(suffix) => host.split_once('.').is_some_and(|(label, rest)| !label.is_empty() && rest == suffix),
        None => pattern == host,
    }
}
