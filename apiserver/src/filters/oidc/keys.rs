//! An issuer's signing keys: its discovery document's `jwks_uri`, fetched over TLS verified against the issuer's CA
//! (or the system's roots), and fetched again when a token names a key not yet known (the issuer rotated its keys),
//! at most once per `REFETCH_INTERVAL`, one fetch at a time.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::DecodingKey;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::Value;

/// How long after one fetch of the keys another may be made: a token naming an unknown key costs a fetch at most
/// this often.
const REFETCH_INTERVAL: Duration = Duration::from_secs(5);
/// How long one request to the issuer may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest discovery document or key set read.
const MAX_DOCUMENT_BYTES: usize = 1 << 20;

type HttpsClient = Client<HttpsConnector<HttpConnector>, Empty<Bytes>>;
/// The issuer's keys, each with its `kid`.
type KeySet = Vec<(Option<String>, DecodingKey)>;

pub(super) struct KeySource {
    issuer: String,
    discovery: String,
    client: HttpsClient,
    keys: RwLock<Arc<KeySet>>,
    /// When keys were last asked for: held while fetching, so only one fetch runs.
    last_fetch: tokio::sync::Mutex<Option<Instant>>,
}

impl KeySource {
    pub(super) fn new(issuer: &str, discovery_url: Option<String>, ca_pem: Option<&str>) -> Result<KeySource, String> {
        if !issuer.starts_with("https://") {
            return Err(format!("issuer URL {issuer:?} must use https"));
        }
        let discovery = discovery_url.unwrap_or_else(|| format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/')));
        Ok(KeySource {
            issuer: issuer.to_owned(),
            discovery,
            client: https_client(ca_pem)?,
            keys: RwLock::default(),
            last_fetch: tokio::sync::Mutex::new(None),
        })
    }

    /// The keys that may have signed a token naming `kid` (every key when it names none), refetched first when
    /// none is known.
    pub(super) async fn keys_for(&self, kid: Option<&str>) -> Result<Vec<DecodingKey>, String> {
        let found = self.matching(kid);
        if !found.is_empty() {
            return Ok(found);
        }
        let mut last_fetch = self.last_fetch.lock().await;
        let found = self.matching(kid);
        if !found.is_empty() || last_fetch.is_some_and(|at| at.elapsed() < REFETCH_INTERVAL) {
            return Ok(found);
        }
        *last_fetch = Some(Instant::now());
        let keys = self.fetch().await.map_err(|err| {
            tracing::warn!(issuer = %self.issuer, %err, "could not fetch the OIDC issuer's keys");
            format!("oidc: fetching the issuer's keys: {err}")
        })?;
        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keys);
        Ok(self.matching(kid))
    }

    fn matching(&self, kid: Option<&str>) -> Vec<DecodingKey> {
        let keys = self.keys.read().unwrap_or_else(|e| e.into_inner()).clone();
        keys.iter().filter(|(id, _)| kid.is_none() || id.as_deref() == kid).map(|(_, key)| key.clone()).collect()
    }

    /// The discovery document (whose `issuer` must be ours), then its `jwks_uri`; keys this server cannot use
    /// (another `kty`, `use: enc`) are skipped.
    async fn fetch(&self) -> Result<KeySet, String> {
        let document = self.get_json(&self.discovery).await?;
        if document.get("issuer").and_then(Value::as_str) != Some(self.issuer.as_str()) {
            return Err(format!("oidc: issuer did not match the issuer returned by provider, expected {:?} got {}", self.issuer,
                document.get("issuer").unwrap_or(&Value::Null)));
        }
        let jwks_uri = document.get("jwks_uri").and_then(Value::as_str).ok_or("the discovery document has no jwks_uri")?;
        let set = self.get_json(jwks_uri).await?;
        let keys = set.get("keys").and_then(Value::as_array).ok_or("the key set has no keys")?;
        Ok(keys.iter()
            .filter(|key| key.get("use").and_then(Value::as_str) != Some("enc"))
            .filter_map(|key| serde_json::from_value::<Jwk>(key.clone()).ok())
            .filter_map(|jwk| DecodingKey::from_jwk(&jwk).ok().map(|key| (jwk.common.key_id.clone(), key)))
            .collect())
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let uri: http::Uri = url.parse().map_err(|err| format!("{url}: {err}"))?;
        let request = async {
            let response = self.client.get(uri).await.map_err(|err| format!("GET {url}: {}", error_chain(&err)))?;
            if !response.status().is_success() {
                return Err(format!("GET {url}: {}", response.status()));
            }
            let body = Limited::new(response.into_body(), MAX_DOCUMENT_BYTES).collect().await
                .map_err(|err| format!("GET {url}: {err}"))?.to_bytes();
            serde_json::from_slice(&body).map_err(|err| format!("GET {url}: {err}"))
        };
        tokio::time::timeout(FETCH_TIMEOUT, request).await.map_err(|_| format!("GET {url}: timed out"))?
    }
}

/// An HTTPS-only client trusting `ca_pem`, or the system's roots. Connections are not kept: keys are fetched
/// rarely, and from whichever worker's runtime asks.
fn https_client(ca_pem: Option<&str>) -> Result<HttpsClient, String> {
    let mut roots = rustls::RootCertStore::empty();
    match ca_pem {
        Some(pem) => {
            for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                let cert = cert.map_err(|err| format!("certificate authority: {err}"))?;
                roots.add(cert).map_err(|err| format!("certificate authority: {err}"))?;
            }
            if roots.is_empty() {
                return Err("certificate authority: no PEM certificate found".to_owned());
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|err| err.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls).https_only().enable_http1().build();
    Ok(Client::builder(TokioExecutor::new()).pool_max_idle_per_host(0).build(connector))
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
