//! An issuer's signing keys: its discovery document's `jwks_uri`, fetched through `outbound` (from an address
//! `allowed` lets through) over TLS verified against the issuer's CA (or the system's roots), and fetched again when
//! a token names a key not yet known (the issuer rotated its keys), at most once per `REFETCH_INTERVAL`, one fetch
//! at a time.

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::DecodingKey;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::Value;

use crate::outbound::{self, Call, Tls};

/// How long after one fetch of the keys another may be made: a token naming an unknown key costs a fetch at most
/// this often.
const REFETCH_INTERVAL: Duration = Duration::from_secs(5);
/// How long one request to the issuer may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest discovery document or key set read.
const MAX_DOCUMENT_BYTES: usize = 1 << 20;

/// The issuer's keys, each with its `kid`.
type KeySet = Vec<(Option<String>, DecodingKey)>;

/// Which addresses the issuer's documents may be fetched from (a tenant's issuer: the ranges its webhooks may call,
/// never the server itself; the platform's: any).
pub type Allowed = Arc<dyn Fn(SocketAddr) -> bool + Send + Sync>;

pub(super) struct KeySource {
    issuer: String,
    discovery: String,
    tls: Tls,
    pub(super) allowed: Allowed,
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
            tls: tls(ca_pem)?,
            allowed: Arc::new(|_| true),
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
        let parsed = url::Url::parse(url).map_err(|err| format!("{url}: {err}"))?;
        if parsed.scheme() != "https" {
            return Err(format!("GET {url}: only https URLs are fetched"));
        }
        let call = Call { url: &parsed, tls: &self.tls, body: Vec::new(), timeout: FETCH_TIMEOUT, allowed: &*self.allowed, server_name: None, bearer: None };
        let body = outbound::get_json(call).await.map_err(|err| match err {
            outbound::CallError::Transport { why, .. } => format!("GET {url}: {why}"),
            outbound::CallError::Timeout { .. } => format!("GET {url}: timed out"),
            outbound::CallError::Status { code } => format!("GET {url}: {code}"),
        })?;
        if body.len() > MAX_DOCUMENT_BYTES {
            return Err(format!("GET {url}: the document is larger than {MAX_DOCUMENT_BYTES} bytes"));
        }
        serde_json::from_slice(&body).map_err(|err| format!("GET {url}: {err}"))
    }
}

/// TLS trusting `ca_pem`, or the system's roots.
fn tls(ca_pem: Option<&str>) -> Result<Tls, String> {
    if let Some(pem) = ca_pem {
        for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            cert.map_err(|err| format!("certificate authority: {err}"))?;
        }
    }
    Tls::new(ca_pem.unwrap_or_default().as_bytes()).map_err(|err| match ca_pem {
        Some(_) => "certificate authority: no PEM certificate found".to_owned(),
        None => err,
    })
}
