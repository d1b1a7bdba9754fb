//! ServiceAccount tokens: issues and verifies ES256 JWTs shaped like Kubernetes bound service-account tokens,
//! plus the tenant that owns the account, and publishes the keys for OIDC discovery.
//!
//! The module does no storage lookups: it only knows what the token says. Checking that a bound Pod or Secret
//! (or the account itself) still exists with the same uid is the caller's job.
//!
//! Keys: the signing key comes from `--service-account-signing-key-file` or, when that is not given, from
//! `<data_dir>/sa.key`, generated on first start so that issued tokens survive restarts. Tokens verify against
//! the signing key and against every key in `--service-account-key-file`.

use std::collections::HashSet;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Utc};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::pkcs8::der::{Decode, Encode};
use p256::pkcs8::{
    AssociatedOid, DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey, LineEnding, ObjectIdentifier,
    PrivateKeyInfo, SubjectPublicKeyInfoRef,
};
use p256::{NistP256, PublicKey, SecretKey};
use rustls::pki_types::pem::{self, SectionKind};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

/// The private claim that carries the tenant owning the service account (the name Arktos uses).
pub const TENANT_CLAIM: &str = "kubernetes.io/serviceaccount/tenant";
/// `sub` is `system:serviceaccount:<namespace>:<name>`, as in Kubernetes.
const SUBJECT_PREFIX: &str = "system:serviceaccount:";
/// TokenRequest defaults, as in Kubernetes.
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
const MIN_EXPIRATION_SECONDS: i64 = 600;
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;
/// Tolerated clock skew between API servers for `nbf` and `iat`; `exp` gets none.
const CLOCK_SKEW_SECONDS: i64 = 60;
const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");

/// The `--service-account-*` flags that shape tokens.
#[derive(Debug, Clone, Default)]
pub struct TokenOptions {
    /// `--service-account-issuer`: the `iss` of issued tokens, and the only one accepted.
    pub issuer: String,
    /// `--api-audiences`: the default audiences of issued tokens and of verification; empty means `[issuer]`.
    pub api_audiences: Vec<String>,
    /// `--service-account-signing-key-file`: a PEM EC P-256 private key (PKCS#8 or SEC1).
    pub signing_key_file: Option<PathBuf>,
    /// `--service-account-key-file`: extra PEM keys (public, private or certificates) accepted for verification.
    pub key_files: Vec<PathBuf>,
    /// `--service-account-max-token-expiration`: longer requests are capped to this.
    pub max_expiration: Option<Duration>,
}

/// What went wrong; the variant says who is to blame.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// A key file could not be read, written or parsed (startup).
    #[error("service account key {path}: {reason}")]
    Key { path: PathBuf, reason: String },
    /// The options themselves are unusable (startup).
    #[error("service account token options: {0}")]
    Config(String),
    /// A TokenRequest asked for something not allowed (a 400/422 for the client).
    #[error("{0}")]
    InvalidRequest(String),
    /// The presented token is not acceptable (a 401, or `TokenReview.status.error`).
    #[error("{0}")]
    InvalidToken(String),
    /// Signing failed; a server-side problem (a 500).
    #[error("signing the service account token failed: {0}")]
    Signing(String),
}

type Result<T> = std::result::Result<T, TokenError>;

/// The service account a token speaks for, including the tenant that owns it.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundServiceAccount {
    pub tenant: String,
    /// The logical cluster of an account of a nested workspace (kcp's `kubernetes.io.clusterName` claim); `None`
    /// for an account of a tenant's own space.
    pub cluster: Option<String>,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// The object a token is bound to; the token is meant to die with it.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundObject {
    /// `Pod`, `Secret` or `Node`.
    pub kind: String,
    pub name: String,
    pub uid: String,
}

/// A freshly signed token and when it expires (`TokenRequest.status`).
#[derive(Debug, Clone)]
pub struct IssuedToken {
    pub token: String,
    pub expiration: DateTime<Utc>,
}

/// What a valid token proves.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedToken {
    pub account: BoundServiceAccount,
    /// The token's audiences that the verifier asked for (the intersection), as `TokenReview.status.audiences`.
    pub audiences: Vec<String>,
    pub expiration: DateTime<Utc>,
    pub bound: Option<BoundObject>,
}

/// Signs and verifies service-account tokens; cheap to share behind an `Arc`.
pub struct TokenIssuer {
    issuer: String,
    api_audiences: Vec<String>,
    max_expiration_seconds: Option<i64>,
    signing_kid: String,
    signing_key: EncodingKey,
    /// The signing key's public half first, then the `key_files` keys; no two share a kid.
    verification_keys: Vec<VerificationKey>,
}

struct VerificationKey {
    kid: String,
    public_key: PublicKey,
    decoding_key: DecodingKey,
}

impl fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kids: Vec<&str> = self.verification_keys.iter().map(|key| key.kid.as_str()).collect();
        f.debug_struct("TokenIssuer")
            .field("issuer", &self.issuer)
            .field("api_audiences", &self.api_audiences)
            .field("signing_kid", &self.signing_kid)
            .field("verification_kids", &kids)
            .finish_non_exhaustive()
    }
}

/// The JWT payload: the Kubernetes bound-token claims plus the tenant.
#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    aud: Audiences,
    exp: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    iat: Option<i64>,
    iss: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jti: Option<String>,
    #[serde(rename = "kubernetes.io", default)]
    kubernetes: Option<KubernetesClaims>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nbf: Option<i64>,
    sub: String,
    #[serde(rename = "kubernetes.io/serviceaccount/tenant", default)]
    tenant: Option<String>,
}

/// RFC 7519 allows `aud` to be one string or an array; we always write an array.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum Audiences {
    Many(Vec<String>),
    One(String),
}

impl Audiences {
    fn into_vec(self) -> Vec<String> {
        match self {
            Audiences::Many(audiences) => audiences,
            Audiences::One(audience) => vec![audience],
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct KubernetesClaims {
    #[serde(rename = "clusterName", default, skip_serializing_if = "Option::is_none")]
    cluster_name: Option<String>,
    namespace: String,
    serviceaccount: ObjectReference,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pod: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    secret: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    node: Option<ObjectReference>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ObjectReference {
    name: String,
    uid: String,
}

impl TokenIssuer {
    /// Loads `signing_key_file`, or else loads (or generates, once) `<data_dir>/sa.key` and keeps
    /// `<data_dir>/sa.pub` in step with it, so tokens keep verifying across restarts.
    pub fn load_or_create(data_dir: &Path, options: TokenOptions) -> Result<TokenIssuer> {
        if options.issuer.is_empty() {
            return Err(TokenError::Config("the service account issuer may not be empty".into()));
        }
        let max_expiration_seconds = max_expiration_seconds(options.max_expiration)?;
        let signing_secret = match &options.signing_key_file {
            Some(path) => load_signing_key(path)?,
            None => load_or_generate_key(data_dir)?,
        };
        let signing_path = options.signing_key_file.clone().unwrap_or_else(|| data_dir.join("sa.key"));
        let signing_public = signing_secret.public_key();
        let signing_kid = key_id(&signing_public).map_err(|reason| key_error(&signing_path, reason))?;
        let pkcs8 = signing_secret.to_pkcs8_der().map_err(|e| key_error(&signing_path, e.to_string()))?;
        let mut verification_keys = vec![VerificationKey::new(signing_kid.clone(), signing_public)];
        for path in &options.key_files {
            for public_key in load_verification_keys(path)? {
                let kid = key_id(&public_key).map_err(|reason| key_error(path, reason))?;
                if verification_keys.iter().all(|known| known.kid != kid) {
                    verification_keys.push(VerificationKey::new(kid, public_key));
                }
            }
        }
        let api_audiences =
            if options.api_audiences.is_empty() { vec![options.issuer.clone()] } else { options.api_audiences };
        Ok(TokenIssuer {
            issuer: options.issuer,
            api_audiences,
            max_expiration_seconds,
            signing_kid,
            signing_key: EncodingKey::from_ec_der(pkcs8.as_bytes()),
            verification_keys,
        })
    }

    /// The `iss` of every token this server issues or accepts.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The audiences a token gets, and is checked against, when nobody names any.
    pub fn api_audiences(&self) -> &[String] {
        &self.api_audiences
    }

    /// Signs a token the way TokenRequest does: empty `audiences` means the API audiences, no
    /// `expiration_seconds` means one hour, under ten minutes is refused and over the maximum is capped.
    pub fn issue(
        &self,
        account: &BoundServiceAccount,
        audiences: &[String],
        expiration_seconds: Option<i64>,
        bound: Option<&BoundObject>,
    ) -> Result<IssuedToken> {
        self.issue_at(account, audiences, expiration_seconds, bound, Utc::now())
    }

    /// Checks the signature, issuer, validity window, audiences (`None` or empty means the API audiences) and
    /// the Kubernetes claims, and says which tenant's service account the token speaks for.
    pub fn verify(&self, token: &str, audiences: Option<&[String]>) -> Result<VerifiedToken> {
        self.verify_at(token, audiences, Utc::now())
    }

    /// True if `token` has the shape of a JWT (three base64url segments, a header that decodes), so the
    /// authenticator can send it here rather than to the static token file.
    pub fn looks_like_jwt(token: &str) -> bool {
        let segments: Vec<&str> = token.split('.').collect();
        let base64url =
            |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        segments.len() == 3 && segments.iter().all(|s| base64url(s)) && jsonwebtoken::decode_header(token).is_ok()
    }

    /// The body of `/.well-known/openid-configuration`.
    pub fn openid_configuration(&self) -> serde_json::Value {
        json!({
            "issuer": self.issuer,
            "jwks_uri": format!("{}/openid/v1/jwks", self.issuer.trim_end_matches('/')),
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
        })
    }

    /// The body of `/openid/v1/jwks`: every key a token may be verified with.
    pub fn jwks(&self) -> serde_json::Value {
        let keys: Vec<serde_json::Value> = self.verification_keys.iter().map(VerificationKey::jwk).collect();
        json!({ "keys": keys })
    }

    fn issue_at(
        &self,
        account: &BoundServiceAccount,
        audiences: &[String],
        expiration_seconds: Option<i64>,
        bound: Option<&BoundObject>,
        now: DateTime<Utc>,
    ) -> Result<IssuedToken> {
        validate_account(account)?;
        let lifetime = self.lifetime_seconds(expiration_seconds)?;
        let audiences = if audiences.is_empty() { self.api_audiences.clone() } else { audiences.to_vec() };
        if audiences.iter().any(String::is_empty) {
            return Err(TokenError::InvalidRequest("audiences may not contain an empty string".into()));
        }
        let issued_at = now.timestamp();
        let expires_at = issued_at + lifetime;
        let claims = Claims {
            aud: Audiences::Many(audiences),
            exp: expires_at,
            iat: Some(issued_at),
            iss: self.issuer.clone(),
            jti: Some(uuid::Uuid::new_v4().to_string()),
            kubernetes: Some(kubernetes_claims(account, bound)?),
            nbf: Some(issued_at),
            sub: format!("{SUBJECT_PREFIX}{}:{}", account.namespace, account.name),
            tenant: Some(account.tenant.clone()),
        };
        let mut header = Header::new(Algorithm::ES256);
        header.typ = None;
        header.kid = Some(self.signing_kid.clone());
        let token = jsonwebtoken::encode(&header, &claims, &self.signing_key)
            .map_err(|e| TokenError::Signing(e.to_string()))?;
        let expiration = DateTime::from_timestamp(expires_at, 0)
            .ok_or_else(|| TokenError::InvalidRequest("expiration is out of range".into()))?;
        Ok(IssuedToken { token, expiration })
    }

    fn lifetime_seconds(&self, requested: Option<i64>) -> Result<i64> {
        let seconds = requested.unwrap_or(DEFAULT_EXPIRATION_SECONDS);
        if seconds < MIN_EXPIRATION_SECONDS {
            return Err(TokenError::InvalidRequest("may not specify a duration less than 10 minutes".into()));
        }
        if seconds > MAX_EXPIRATION_SECONDS {
            return Err(TokenError::InvalidRequest("may not specify a duration larger than 2^32 seconds".into()));
        }
        Ok(self.max_expiration_seconds.map_or(seconds, |max| seconds.min(max)))
    }

    fn verify_at(&self, token: &str, audiences: Option<&[String]>, now: DateTime<Utc>) -> Result<VerifiedToken> {
        let claims = self.verified_claims(token)?;
        if claims.iss != self.issuer {
            return Err(invalid(format!("token issuer {:?} is not the expected issuer {:?}", claims.iss, self.issuer)));
        }
        check_validity_window(&claims, now.timestamp())?;
        let targets = match audiences {
            Some(targets) if !targets.is_empty() => targets,
            _ => &self.api_audiences,
        };
        let token_audiences = claims.aud.into_vec();
        let audiences: Vec<String> = token_audiences.iter().filter(|a| targets.contains(a)).cloned().collect();
        if audiences.is_empty() {
            return Err(invalid(format!(
                "token audiences {} is invalid for the target audiences {}",
                go_quoted(&token_audiences),
                go_quoted(targets)
            )));
        }
        let expiration =
            DateTime::from_timestamp(claims.exp, 0).ok_or_else(|| invalid("token expiry is out of range"))?;
        let (namespace, name) = subject_parts(&claims.sub)?;
        let kubernetes = claims.kubernetes.ok_or_else(|| invalid("kubernetes.io claim is missing"))?;
        if kubernetes.namespace != namespace || kubernetes.serviceaccount.name != name {
            return Err(invalid("token subject does not match its kubernetes.io claims"));
        }
        let tenant = claims.tenant.filter(|t| !t.is_empty()).ok_or_else(|| invalid("tenant claim is missing"))?;
        let bound = bound_object(&kubernetes);
        let account = BoundServiceAccount {
            tenant,
            cluster: kubernetes.cluster_name.filter(|c| !c.is_empty()),
            namespace: kubernetes.namespace,
            name: kubernetes.serviceaccount.name,
            uid: kubernetes.serviceaccount.uid,
        };
        Ok(VerifiedToken { account, audiences, expiration, bound })
    }

    /// The claims of `token` once some key's signature checks out; the key named by `kid` is tried first.
    fn verified_claims(&self, token: &str) -> Result<Claims> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| invalid(format!("token is malformed: {e}")))?;
        if header.alg != Algorithm::ES256 {
            return Err(invalid(format!("unexpected token signing algorithm {:?}", header.alg)));
        }
        let mut validation = Validation::new(Algorithm::ES256);
        validation.required_spec_claims = HashSet::new();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        let named = header.kid.as_deref();
        let keys = self.verification_keys.iter().filter(|k| Some(k.kid.as_str()) == named);
        let others = self.verification_keys.iter().filter(|k| Some(k.kid.as_str()) != named);
        for key in keys.chain(others) {
            match jsonwebtoken::decode::<serde_json::Value>(token, &key.decoding_key, &validation) {
                Ok(data) => {
                    return serde_json::from_value(data.claims)
                        .map_err(|e| invalid(format!("token claims are malformed: {e}")));
                }
                Err(e) if matches!(e.kind(), ErrorKind::InvalidSignature) => continue,
                Err(e) => return Err(invalid(format!("token is malformed: {e}"))),
            }
        }
        Err(invalid("invalid signature"))
    }
}

impl VerificationKey {
    fn new(kid: String, public_key: PublicKey) -> VerificationKey {
        let decoding_key = DecodingKey::from_ec_der(public_key.to_encoded_point(false).as_bytes());
        VerificationKey { kid, public_key, decoding_key }
    }

    fn jwk(&self) -> serde_json::Value {
        let point = self.public_key.to_encoded_point(false);
        let coordinate =
            |bytes: Option<&p256::FieldBytes>| bytes.map(|b| URL_SAFE_NO_PAD.encode(b)).unwrap_or_default();
        json!({
            "use": "sig",
            "kty": "EC",
            "kid": self.kid,
            "crv": "P-256",
            "alg": "ES256",
            "x": coordinate(point.x()),
            "y": coordinate(point.y()),
        })
    }
}

fn invalid(message: impl Into<String>) -> TokenError {
    TokenError::InvalidToken(message.into())
}

fn key_error(path: &Path, reason: impl Into<String>) -> TokenError {
    TokenError::Key { path: path.to_owned(), reason: reason.into() }
}

fn max_expiration_seconds(max: Option<Duration>) -> Result<Option<i64>> {
    let Some(max) = max else { return Ok(None) };
    let seconds = i64::try_from(max.as_secs()).unwrap_or(i64::MAX);
    if seconds < MIN_EXPIRATION_SECONDS {
        return Err(TokenError::Config("the maximum token expiration may not be less than 10 minutes".into()));
    }
    Ok(Some(seconds))
}

fn validate_account(account: &BoundServiceAccount) -> Result<()> {
    let missing = [("tenant", &account.tenant), ("namespace", &account.namespace), ("name", &account.name)]
        .into_iter()
        .find(|(_, value)| value.is_empty());
    match missing {
        Some((field, _)) => Err(TokenError::InvalidRequest(format!("service account {field} may not be empty"))),
        None => Ok(()),
    }
}

fn kubernetes_claims(account: &BoundServiceAccount, bound: Option<&BoundObject>) -> Result<KubernetesClaims> {
    let mut claims = KubernetesClaims {
        cluster_name: account.cluster.clone(),
        namespace: account.namespace.clone(),
        serviceaccount: ObjectReference { name: account.name.clone(), uid: account.uid.clone() },
        pod: None,
        secret: None,
        node: None,
    };
    if let Some(object) = bound {
        let reference = Some(ObjectReference { name: object.name.clone(), uid: object.uid.clone() });
        match object.kind.as_str() {
            "Pod" => claims.pod = reference,
            "Secret" => claims.secret = reference,
            "Node" => claims.node = reference,
            other => {
                return Err(TokenError::InvalidRequest(format!(
                    "cannot bind a token to a {other}; only Pod, Secret and Node are supported"
                )));
            }
        }
    }
    Ok(claims)
}

/// A Pod-bound token may also name the Pod's Node; the Pod is what it is bound to.
fn bound_object(claims: &KubernetesClaims) -> Option<BoundObject> {
    let (kind, reference) = match (&claims.pod, &claims.secret, &claims.node) {
        (Some(pod), _, _) => ("Pod", pod),
        (None, Some(secret), _) => ("Secret", secret),
        (None, None, Some(node)) => ("Node", node),
        (None, None, None) => return None,
    };
    Some(BoundObject { kind: kind.into(), name: reference.name.clone(), uid: reference.uid.clone() })
}

fn check_validity_window(claims: &Claims, now: i64) -> Result<()> {
    if claims.exp <= now {
        return Err(invalid("token has expired"));
    }
    if claims.nbf.is_some_and(|nbf| nbf > now + CLOCK_SKEW_SECONDS) {
        return Err(invalid("token is not valid yet"));
    }
    if claims.iat.is_some_and(|iat| iat > now + CLOCK_SKEW_SECONDS) {
        return Err(invalid("token was issued in the future"));
    }
    Ok(())
}

fn subject_parts(subject: &str) -> Result<(&str, &str)> {
    subject
        .strip_prefix(SUBJECT_PREFIX)
        .and_then(|rest| rest.split_once(':'))
        .filter(|(namespace, name)| !namespace.is_empty() && !name.is_empty() && !name.contains(':'))
        .ok_or_else(|| invalid(format!("token subject {subject:?} is not a service account")))
}

/// Formats a list the way Go's `%q` prints a `[]string`, so messages read as the Kubernetes ones.
fn go_quoted(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

/// Kubernetes' key id: unpadded base64url of the SHA-256 of the DER SubjectPublicKeyInfo.
fn key_id(public_key: &PublicKey) -> std::result::Result<String, String> {
    let spki = public_key.to_public_key_der().map_err(|e| e.to_string())?;
    Ok(URL_SAFE_NO_PAD.encode(Sha256::digest(spki.as_bytes())))
}

fn load_signing_key(path: &Path) -> Result<SecretKey> {
    let text = std::fs::read_to_string(path).map_err(|e| key_error(path, e.to_string()))?;
    first_private_key(path, &text)
}

fn first_private_key(path: &Path, text: &str) -> Result<SecretKey> {
    for (kind, der) in pem_sections(text).map_err(|reason| key_error(path, reason))? {
        if let PemKey::Private(secret) = parse_section(kind, &der).map_err(|reason| key_error(path, reason))? {
            return Ok(secret);
        }
    }
    Err(key_error(path, "no EC P-256 private key found"))
}

fn load_verification_keys(path: &Path) -> Result<Vec<PublicKey>> {
    let text = std::fs::read_to_string(path).map_err(|e| key_error(path, e.to_string()))?;
    let mut keys = Vec::new();
    for (kind, der) in pem_sections(&text).map_err(|reason| key_error(path, reason))? {
        match parse_section(kind, &der).map_err(|reason| key_error(path, reason))? {
            PemKey::Private(secret) => keys.push(secret.public_key()),
            PemKey::Public(public_key) => keys.push(public_key),
        }
    }
    if keys.is_empty() {
        return Err(key_error(path, "no EC P-256 key found"));
    }
    Ok(keys)
}

/// Reads `<data_dir>/sa.key`, generating it on first start, and rewrites `sa.pub` if it is missing or stale.
fn load_or_generate_key(data_dir: &Path) -> Result<SecretKey> {
    let key_path = data_dir.join("sa.key");
    let secret = match std::fs::read_to_string(&key_path) {
        Ok(text) => first_private_key(&key_path, &text)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => generate_key_file(data_dir, &key_path)?,
        Err(e) => return Err(key_error(&key_path, e.to_string())),
    };
    let pub_path = data_dir.join("sa.pub");
    let public_pem =
        secret.public_key().to_public_key_pem(LineEnding::LF).map_err(|e| key_error(&pub_path, e.to_string()))?;
    if std::fs::read_to_string(&pub_path).ok().as_deref() != Some(public_pem.as_str()) {
        std::fs::write(&pub_path, public_pem).map_err(|e| key_error(&pub_path, e.to_string()))?;
    }
    Ok(secret)
}

/// Writes a new key through a temporary file created with mode 0600, so the key is never readable by others
/// and a crash never leaves half a key behind.
fn generate_key_file(data_dir: &Path, key_path: &Path) -> Result<SecretKey> {
    use std::os::unix::fs::OpenOptionsExt;
    let secret = generate_secret_key();
    let pem = secret.to_pkcs8_pem(LineEnding::LF).map_err(|e| key_error(key_path, e.to_string()))?;
    std::fs::create_dir_all(data_dir).map_err(|e| key_error(data_dir, e.to_string()))?;
    let temporary = data_dir.join("sa.key.tmp");
    let _ = std::fs::remove_file(&temporary);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(|e| key_error(&temporary, e.to_string()))?;
    file.write_all(pem.as_bytes()).and_then(|()| file.sync_all()).map_err(|e| key_error(&temporary, e.to_string()))?;
    std::fs::rename(&temporary, key_path).map_err(|e| key_error(key_path, e.to_string()))?;
    Ok(secret)
}

/// A fresh P-256 key from the thread's CSPRNG (rand 0.9's, since p256 speaks an older `rand_core`).
fn generate_secret_key() -> SecretKey {
    loop {
        // A random 32-byte string is a valid scalar unless it is zero or at least the group order: odds of 2^-32.
        if let Ok(secret) = SecretKey::from_slice(&rand::random::<[u8; 32]>()) {
            return secret;
        }
    }
}

enum PemKey {
    Private(SecretKey),
    Public(PublicKey),
}

/// Every PEM section of `text` that may hold a key, decoded (rustls' reader; sections of labels it does not know,
/// such as `EC PARAMETERS`, are skipped).
fn pem_sections(text: &str) -> std::result::Result<Vec<(SectionKind, Vec<u8>)>, String> {
    let mut reader = text.as_bytes();
    let mut sections = Vec::new();
    while let Some(section) = pem::from_buf(&mut reader).map_err(|e| format!("malformed PEM: {e}"))? {
        sections.push(section);
    }
    Ok(sections)
}

/// One PEM section as a P-256 key.
fn parse_section(kind: SectionKind, der: &[u8]) -> std::result::Result<PemKey, String> {
    Ok(match kind {
        SectionKind::PrivateKey => {
            let info = PrivateKeyInfo::from_der(der).map_err(|e| format!("PRIVATE KEY: {e}"))?;
            check_algorithm(info.algorithm)?;
            PemKey::Private(SecretKey::from_pkcs8_der(der).map_err(|e| format!("PRIVATE KEY: {e}"))?)
        }
        SectionKind::EcPrivateKey => {
            PemKey::Private(SecretKey::from_sec1_der(der).map_err(|_| "EC PRIVATE KEY is not a P-256 key".to_owned())?)
        }
        SectionKind::PublicKey => PemKey::Public(public_key_from_spki(der)?),
        SectionKind::Certificate => PemKey::Public(public_key_from_certificate(der)?),
        SectionKind::RsaPrivateKey => return Err(unsupported("RSA keys are")),
        other => return Err(format!("unsupported PEM block {other:?}; expected an EC P-256 key")),
    })
}

fn public_key_from_spki(spki_der: &[u8]) -> std::result::Result<PublicKey, String> {
    let info = SubjectPublicKeyInfoRef::from_der(spki_der).map_err(|e| format!("PUBLIC KEY: {e}"))?;
    check_algorithm(info.algorithm)?;
    PublicKey::from_public_key_der(spki_der).map_err(|e| format!("PUBLIC KEY: {e}"))
}

fn public_key_from_certificate(certificate_der: &[u8]) -> std::result::Result<PublicKey, String> {
    let certificate = x509_cert::Certificate::from_der(certificate_der).map_err(|e| format!("CERTIFICATE: {e}"))?;
    let spki = certificate.tbs_certificate.subject_public_key_info.to_der().map_err(|e| format!("CERTIFICATE: {e}"))?;
    public_key_from_spki(&spki)
}

/// Only ES256 is spoken, so only EC keys on P-256 are accepted; the error names what was found instead.
fn check_algorithm(algorithm: p256::pkcs8::AlgorithmIdentifierRef<'_>) -> std::result::Result<(), String> {
    match algorithm.oids() {
        Ok((oid, Some(curve))) if oid == p256::elliptic_curve::ALGORITHM_OID && curve == NistP256::OID => Ok(()),
        Ok((oid, curve)) if oid == p256::elliptic_curve::ALGORITHM_OID => {
            Err(unsupported(&format!("EC keys on curve {} are", curve.map_or("(unnamed)".into(), |c| c.to_string()))))
        }
        Ok((oid, _)) if oid == RSA_ENCRYPTION => Err(unsupported("RSA keys are")),
        Ok((oid, _)) => Err(unsupported(&format!("keys with algorithm {oid} are"))),
        Err(e) => Err(format!("malformed key algorithm: {e}")),
    }
}

fn unsupported(what: &str) -> String {
    format!("{what} not supported; service account keys must be EC P-256 (ES256)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::pkcs8::der;
    use serde_json::Value;

    const ISSUER: &str = "https://kspaces.example";
    const T0: i64 = 1_700_000_000;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(seconds, 0).expect("timestamp in range")
    }

    fn options() -> TokenOptions {
        TokenOptions { issuer: ISSUER.into(), ..TokenOptions::default() }
    }

    fn load(dir: &Path, options: TokenOptions) -> TokenIssuer {
        TokenIssuer::load_or_create(dir, options).expect("issuer loads")
    }

    fn account() -> BoundServiceAccount {
        BoundServiceAccount {
            tenant: "acme".into(),
            cluster: None,
            namespace: "default".into(),
            name: "builder".into(),
            uid: "sa-uid".into(),
        }
    }

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    fn issue_at(issuer: &TokenIssuer, now: i64) -> String {
        issuer.issue_at(&account(), &[], None, None, at(now)).expect("token issues").token
    }

    fn segment(token: &str, index: usize) -> Value {
        let part = token.split('.').nth(index).expect("segment exists");
        let bytes = URL_SAFE_NO_PAD.decode(part).expect("segment is base64url");
        serde_json::from_slice(&bytes).expect("segment is JSON")
    }

    /// Signs arbitrary claims with the issuer's own key, to reach the checks that run after the signature.
    fn sign(issuer: &TokenIssuer, claims: &Value) -> String {
        sign_with_kid(issuer, claims, Some(&issuer.signing_kid))
    }

    fn sign_with_kid(issuer: &TokenIssuer, claims: &Value, kid: Option<&str>) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, &issuer.signing_key).expect("test token signs")
    }

    fn invalid_token(result: Result<VerifiedToken>) -> String {
        match result {
            Err(TokenError::InvalidToken(message)) => message,
            other => panic!("expected an invalid token, got {other:?}"),
        }
    }

    fn key_problem(result: Result<TokenIssuer>) -> String {
        match result {
            Err(TokenError::Key { reason, .. }) => reason,
            other => panic!("expected a key error, got {other:?}"),
        }
    }

    fn write(dir: &Path, name: &str, contents: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, contents).expect("test file writes");
        path
    }

    fn public_key_of(dir: &Path) -> PublicKey {
        let text = std::fs::read_to_string(dir.join("sa.pub")).expect("sa.pub exists");
        PublicKey::from_public_key_pem(&text).expect("sa.pub is an SPKI PEM")
    }

    #[test]
    fn round_trip_carries_claims_kid_and_tenant() {
        let dir = tempfile::tempdir().expect("tempdir");
        let issuer = load(dir.path(), options());
        let pod = BoundObject { kind: "Pod".into(), name: "web-0".into(), uid: "pod-uid".into() };
        let audiences = strings(&["vault"]);
        let issued = issuer.issue_at(&account(), &audiences, Some(7200), Some(&pod), at(T0)).expect("issues");

        let kid = key_id(&public_key_of(dir.path())).expect("kid");
        assert_eq!(segment(&issued.token, 0), json!({"alg": "ES256", "kid": kid}));
        let mut claims = segment(&issued.token, 1);
        let jti = claims["jti"].take();
        let jti = uuid::Uuid::parse_str(jti.as_str().expect("jti is a string")).expect("jti is a uuid");
        assert_eq!(jti.get_version_num(), 4);
        assert_eq!(
            claims,
            json!({
                "aud": ["vault"],
                "exp": T0 + 7200,
                "iat": T0,
                "iss": ISSUER,
                "jti": null,
                "kubernetes.io": {
                    "namespace": "default",
                    "serviceaccount": {"name": "builder", "uid": "sa-uid"},
                    "pod": {"name": "web-0", "uid": "pod-uid"},
                },
                "nbf": T0,
                "sub": "system:serviceaccount:default:builder",
                "kubernetes.io/serviceaccount/tenant": "acme",
            })
        );
        assert_eq!(issued.expiration, at(T0 + 7200));

        let verified = issuer.verify_at(&issued.token, Some(&audiences), at(T0 + 10)).expect("verifies");
        let expected = VerifiedToken { account: account(), audiences, expiration: at(T0 + 7200), bound: Some(pod) };
        assert_eq!(verified, expected);
    }

    #[test]
    fn an_account_of_a_nested_workspace_carries_its_logical_cluster() {
        let dir = tempfile::tempdir().expect("tempdir");
        let issuer = load(dir.path(), options());
        let nested = BoundServiceAccount { cluster: Some("k3x9lq2w8m1p0z7a".into()), ..account() };
        let issued = issuer.issue_at(&nested, &[], None, None, at(T0)).expect("issues");
        assert_eq!(segment(&issued.token, 1)["kubernetes.io"]["clusterName"], "k3x9lq2w8m1p0z7a", "kcp's claim");
        let verified = issuer.verify_at(&issued.token, None, at(T0 + 10)).expect("verifies");
        assert_eq!(verified.account, nested);
    }

    #[test]
    fn every_bound_kind_round_trips_and_others_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let issuer = load(dir.path(), options());
        for kind in ["Pod", "Secret", "Node"] {
            let object = BoundObject { kind: kind.into(), name: "thing".into(), uid: "thing-uid".into() };
            let token = issuer.issue_at(&account(), &[], None, Some(&object), at(T0)).expect("issues").token;
            let claims = segment(&token, 1);
            assert_eq!(claims["kubernetes.io"][kind.to_lowercase()], json!({"name": "thing", "uid": "thing-uid"}));
            let verified = issuer.verify_at(&token, None, at(T0)).expect("verifies");
            assert_eq!(verified.bound, Some(object));
        }
        let deployment = BoundObject { kind: "Deployment".into(), name: "d".into(), uid: "u".into() };
        let refused = issuer.issue_at(&account(), &[], None, Some(&deployment), at(T0));
        assert!(
            matches!(refused, Err(TokenError::InvalidRequest(m)) if m.contains("cannot bind a token to a Deployment"))
        );
    }

    #[test]
    fn a_pod_bound_token_that_also_names_its_node_is_bound_to_the_pod() {
        let dir = tempfile::tempdir().expect("tempdir");
        let issuer = load(dir.path(), options());
        let pod = BoundObject { kind: "Pod".into(), name: "web-0".into(), uid: "pod-uid".into() };
        let mut claims = segment(&issuer.issue_at(&account(), &[], None, Some(&pod), at(T0)).expect("issues").token, 1);
        claims["kubernetes.io"]["node"] = json!({"name": "node-1", "uid": "node-uid"});
        let verified = issuer.verify_at(&sign(&issuer, &claims), None, at(T0)).expect("verifies");
        assert_eq!(verified.bound, Some(pod));
    }

    #[test]
    fn expiration_defaults_has_a_minimum_and_is_capped() {
        let dir = tempfile::tempdir().expect("tempdir");
        type Granted = std::result::Result<i64, &'static str>;
        // (max expiration, requested seconds, granted lifetime or the refusal)
        let cases: [(Option<u64>, Option<i64>, Granted); 8] = [
            (None, None, Ok(3600)),
            (None, Some(600), Ok(600)),
            (None, Some(599), Err("may not specify a duration less than 10 minutes")),
            (None, Some(-1), Err("may not specify a duration less than 10 minutes")),
            (None, Some(1 << 32), Ok(1 << 32)),
            (None, Some((1 << 32) + 1), Err("may not specify a duration larger than 2^32 seconds")),
            (Some(1800), None, Ok(1800)),
            (Some(86_400), Some(172_800), Ok(86_400)),
        ];
        for (max, requested, expected) in cases {
            let options = TokenOptions { max_expiration: max.map(Duration::from_secs), ..options() };
            let issuer = load(dir.path(), options);
            let granted = issuer.issue_at(&account(), &[], requested, None, at(T0)).map(|issued| {
                let claims = segment(&issued.token, 1);
                assert_eq!(issued.expiration, at(claims["exp"].as_i64().expect("exp")));
                issued.expiration.timestamp() - T0
            });
            match (granted, expected) {
                (Ok(granted), Ok(expected)) => assert_eq!(granted, expected, "{max:?} {requested:?}"),
                (Err(TokenError::InvalidRequest(message)), Err(expected)) => assert_eq!(message, expected),
                (granted, expected) => panic!("{max:?} {requested:?}: got {granted:?}, expected {expected:?}"),
            }
        }
    }

    #[test]
    fn audiences_default_to_the_api_audiences_or_the_issuer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plain = load(dir.path(), options());
        assert_eq!(plain.api_audiences(), [ISSUER.to_string()]);
        assert_eq!(segment(&issue_at(&plain, T0), 1)["aud"], json!([ISSUER]));

        let options = TokenOptions { api_audiences: strings(&["api", "kspaces"]), ..options() };
        let issuer = load(dir.path(), options);
        assert_eq!(issuer.issuer(), ISSUER);
        let token = issue_at(&issuer, T0);
        assert_eq!(segment(&token, 1)["aud"], json!(["api", "kspaces"]));
        let verified = issuer.verify_at(&token, None, at(T0)).expect("verifies against the api audiences");
        assert_eq!(verified.audiences, strings(&["api", "kspaces"]));
        let empty: &[String] = &[];
        assert!(issuer.verify_at(&token, Some(empty), at(T0)).is_ok());
    }

    #[test]
    fn audiences_must_intersect_and_only_the_intersection_is_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let issuer = load(dir.path(), options());
        let token = issuer.issue_at(&account(), &strings(&["a", "b"]), None, None, at(T0)).expect("issues").token;

        let verified = issuer.verify_at(&token, Some(&strings(&["b", "c"])), at(T0)).expect("b is shared");
        assert_eq!(verified.audiences, strings(&["b"]));
        assert_eq!(
            invalid_token(issuer.verify_at(&token, None, at(T0))),
            format!(r#"token audiences ["a" "b"] is invalid for the target audiences ["{ISSUER}"]"#)
        );
        assert_eq!(
            invalid_token(issuer.verify_at(&token, Some(&strings(&["c"])), at(T0))),
            r#"token audiences ["a" "b"] is invalid for the target audiences ["c"]"#
        );
        let refused = issuer.issue_at(&account(), &strings(&["a", ""]), None, None, at(T0));
        assert!(matches!(refused, Err(TokenError::InvalidRequest(_))));
    }

    #[test]
    fn tokens_expire_exactly_at_exp_and_are_not_valid_before_nbf() {
        let dir = tempfile::tempdir().expect("tempdir");
        let issuer = load(dir.path(), options());
        let token = issuer.issue_at(&account(), &[], Some(600), None, at(T0)).expect("issues").token;
        assert!(issuer.verify_at(&token, None, at(T0 + 599)).is_ok());
        assert_eq!(invalid_token(issuer.verify_at(&token, None, at(T0 + 600))), "token has expired");
        assert!(issuer.verify_at(&token, None, at(T0 - CLOCK_SKEW_SECONDS)).is_ok());
        assert_eq!(invalid_token(issuer.verify_at(&token, None, at(T0 - 61))), "token is not valid yet");
        // A token issued long ago is expired by the real clock.
        assert_eq!(invalid_token(issuer.verify(&token, None)), "token has expired");
        assert!(issuer.verify(&issuer.issue(&account(), &[], None, None).expect("issues").token, None).is_ok());
    }

    #[test]
    fn tampered_tokens_are_rejected() {
        let dir = tempfile::tempdir().expect("tempdir");
        let issuer = load(dir.path(), options());
        let token = issue_at(&issuer, T0);
        let parts: Vec<&str> = token.split('.').collect();

        let mut claims = segment(&token, 1);
        claims[TENANT_CLAIM] = json!("evil");
        let forged_payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).expect("claims serialize"));
        let forged = format!("{}.{}.{}", parts[0], forged_payload, parts[2]);
        assert_eq!(invalid_token(issuer.verify_at(&forged, None, at(T0))), "invalid signature");

        let mut signature = URL_SAFE_NO_PAD.decode(parts[2]).expect("signature is base64url");
        signature[10] ^= 0x01;
        let forged = format!("{}.{}.{}", parts[0], parts[1], URL_SAFE_NO_PAD.encode(&signature));
        assert_eq!(invalid_token(issuer.verify_at(&forged, None, at(T0))), "invalid signature");

        let unsigned = format!("{}.{}.", parts[0], parts[1]);
        assert!(matches!(issuer.verify_at(&unsigned, None, at(T0)), Err(TokenError::InvalidToken(_))));
        assert!(matches!(issuer.verify_at("not-a-token", None, at(T0)), Err(TokenError::InvalidToken(_))));

        let none_header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
        let alg_none = format!("{none_header}.{}.", parts[1]);
        assert!(matches!(issuer.verify_at(&alg_none, None, at(T0)), Err(TokenError::InvalidToken(_))));
    }

    #[test]
    fn a_foreign_key_or_issuer_is_rejected() {
        let ours = tempfile::tempdir().expect("tempdir");
        let theirs = tempfile::tempdir().expect("tempdir");
        let issuer = load(ours.path(), options());
        let foreign = load(theirs.path(), options());
        let token = issue_at(&foreign, T0);
        assert_eq!(invalid_token(issuer.verify_at(&token, None, at(T0))), "invalid signature");

        let other_issuer = TokenOptions { issuer: "https://elsewhere".into(), ..options() };
        let same_key_other_issuer = load(ours.path(), other_issuer);
        let token =
            same_key_other_issuer.issue_at(&account(), &strings(&[ISSUER]), None, None, at(T0)).expect("issues");
        assert_eq!(
            invalid_token(issuer.verify_at(&token.token, None, at(T0))),
            format!(r#"token issuer "https://elsewhere" is not the expected issuer "{ISSUER}""#)
        );
    }

    #[test]
    fn malformed_or_inconsistent_claims_are_rejected() {
        let dir = tempfile::tempdir().expect("tempdir");
        let issuer = load(dir.path(), options());
        let valid = segment(&issue_at(&issuer, T0), 1);
        type Mutation = fn(&mut Value);
        let cases: [(Mutation, &str); 9] = [
            (|c| c[TENANT_CLAIM] = Value::Null, "tenant claim is missing"),
            (|c| c[TENANT_CLAIM] = json!(""), "tenant claim is missing"),
            (
                |c| c["sub"] = json!("system:serviceaccount:default:other"),
                "token subject does not match its kubernetes.io claims",
            ),
            (
                |c| c["kubernetes.io"]["namespace"] = json!("kube-system"),
                "token subject does not match its kubernetes.io claims",
            ),
            (|c| c["sub"] = json!("alice"), r#"token subject "alice" is not a service account"#),
            (
                |c| c["sub"] = json!("system:serviceaccount:default"),
                r#"token subject "system:serviceaccount:default" is not a service account"#,
            ),
            (|c| c["kubernetes.io"] = Value::Null, "kubernetes.io claim is missing"),
            (
                |c| c["kubernetes.io"]["serviceaccount"] = json!({"name": "builder"}),
                "token claims are malformed: missing field `uid`",
            ),
            (|c| c["exp"] = json!("tomorrow"), "token claims are malformed"),
        ];
        for (mutate, expected) in cases {
            let mut claims = valid.clone();
            mutate(&mut claims);
            let message = invalid_token(issuer.verify_at(&sign(&issuer, &claims), None, at(T0)));
            assert!(message.starts_with(expected), "{message:?} should start with {expected:?}");
        }
        assert!(issuer.verify_at(&sign(&issuer, &valid), None, at(T0)).is_ok());
    }

    #[test]
    fn issuing_requires_a_complete_account() {
        let dir = tempfile::tempdir().expect("tempdir");
        let issuer = load(dir.path(), options());
        let without_tenant = BoundServiceAccount { tenant: String::new(), ..account() };
        let refused = issuer.issue_at(&without_tenant, &[], None, None, at(T0));
        assert!(
            matches!(refused, Err(TokenError::InvalidRequest(m)) if m == "service account tenant may not be empty")
        );
    }

    #[test]
    fn the_generated_key_survives_a_restart() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let data_dir = dir.path().join("data");
        let token = issue_at(&load(&data_dir, options()), T0);
        let key_file = std::fs::read_to_string(data_dir.join("sa.key")).expect("sa.key written");
        assert!(key_file.starts_with("-----BEGIN PRIVATE KEY-----"));
        let mode = std::fs::metadata(data_dir.join("sa.key")).expect("sa.key metadata").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::remove_file(data_dir.join("sa.pub")).expect("sa.pub removed");

        let restarted = load(&data_dir, options());
        assert_eq!(restarted.verify_at(&token, None, at(T0)).expect("verifies after restart").account, account());
        assert_eq!(std::fs::read_to_string(data_dir.join("sa.key")).expect("sa.key kept"), key_file);
        assert_eq!(key_id(&public_key_of(&data_dir)).expect("kid"), restarted.signing_kid);
    }

    #[test]
    fn the_signing_key_file_is_honoured_in_pkcs8_and_sec1_form() {
        let dir = tempfile::tempdir().expect("tempdir");
        let secret = generate_secret_key();
        let pkcs8 = secret.to_pkcs8_pem(LineEnding::LF).expect("pkcs8 pem");
        let sec1 = secret.to_sec1_pem(LineEnding::LF).expect("sec1 pem");
        // `openssl ecparam -genkey` writes the curve parameters before the key.
        let with_parameters =
            format!("-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n{}", *sec1);
        let kid = key_id(&secret.public_key()).expect("kid");
        for (name, pem) in
            [("pkcs8.pem", pkcs8.as_str()), ("sec1.pem", sec1.as_str()), ("openssl.pem", &with_parameters)]
        {
            let path = write(dir.path(), name, pem);
            let issuer = load(&dir.path().join("unused"), TokenOptions { signing_key_file: Some(path), ..options() });
            let token = issue_at(&issuer, T0);
            assert_eq!(segment(&token, 0)["kid"], json!(kid), "{name}");
            assert!(issuer.verify_at(&token, None, at(T0)).is_ok(), "{name}");
        }
        assert!(!dir.path().join("unused").exists(), "no key is generated when a signing key file is given");
    }

    #[test]
    fn keys_that_are_not_p256_are_refused_with_a_reason() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p384 = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).expect("p384 key").serialize_pem();
        let ed25519 = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).expect("ed25519 key").serialize_pem();
        let rsa_algorithm =
            p256::pkcs8::AlgorithmIdentifierRef { oid: RSA_ENCRYPTION, parameters: Some(der::asn1::AnyRef::NULL) };
        let rsa_pkcs8 = der::EncodePem::to_pem(&PrivateKeyInfo::new(rsa_algorithm, &[0x30, 0x00]), LineEnding::LF)
            .expect("rsa pkcs8 pem");
        let cases = [
            (
                p384.as_str(),
                "EC keys on curve 1.3.132.0.34 are not supported; service account keys must be EC P-256 (ES256)",
            ),
            (ed25519.as_str(), "keys with algorithm 1.3.101.112 are not supported"),
            (rsa_pkcs8.as_str(), "RSA keys are not supported"),
            ("-----BEGIN RSA PRIVATE KEY-----\nMAA=\n-----END RSA PRIVATE KEY-----\n", "RSA keys are not supported"),
            ("-----BEGIN CERTIFICATE REQUEST-----\nMAA=\n-----END CERTIFICATE REQUEST-----\n", "unsupported PEM block"),
            ("just some text\n", "no EC P-256 private key found"),
        ];
        for (pem, expected) in cases {
            let path = write(dir.path(), "key.pem", pem);
            let reason = key_problem(TokenIssuer::load_or_create(
                dir.path(),
                TokenOptions { signing_key_file: Some(path), ..options() },
            ));
            assert!(reason.starts_with(expected), "{reason:?} should start with {expected:?}");
        }
        let missing = TokenOptions { signing_key_file: Some(dir.path().join("absent.pem")), ..options() };
        assert!(matches!(TokenIssuer::load_or_create(dir.path(), missing), Err(TokenError::Key { .. })));
        let unreadable_key_file = TokenOptions { key_files: vec![write(dir.path(), "empty.pem", "")], ..options() };
        assert_eq!(key_problem(TokenIssuer::load_or_create(dir.path(), unreadable_key_file)), "no EC P-256 key found");
    }

    #[test]
    fn options_are_checked_at_startup() {
        let dir = tempfile::tempdir().expect("tempdir");
        let no_issuer = TokenOptions { issuer: String::new(), ..options() };
        assert!(matches!(TokenIssuer::load_or_create(dir.path(), no_issuer), Err(TokenError::Config(_))));
        let too_short = TokenOptions { max_expiration: Some(Duration::from_secs(599)), ..options() };
        assert!(matches!(TokenIssuer::load_or_create(dir.path(), too_short), Err(TokenError::Config(_))));
    }

    #[test]
    fn key_files_accept_public_keys_private_keys_and_certificates() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load(&dir.path().join("first"), options());
        let second_key = rcgen::KeyPair::generate().expect("p256 key");
        let second_key_file = write(dir.path(), "second.key", &second_key.serialize_pem());
        let second = load(dir.path(), TokenOptions { signing_key_file: Some(second_key_file.clone()), ..options() });
        let certificate = rcgen::CertificateParams::new(vec!["sa".to_string()])
            .expect("certificate params")
            .self_signed(&second_key)
            .expect("self-signed certificate");
        let third = load(&dir.path().join("third"), options());

        for second_form in [second_key_file, write(dir.path(), "second.crt", &certificate.pem())] {
            let key_files = vec![dir.path().join("first").join("sa.pub"), second_form];
            let verifier = load(&dir.path().join("verifier"), TokenOptions { key_files, ..options() });
            assert!(verifier.verify_at(&issue_at(&first, T0), None, at(T0)).is_ok());
            assert!(verifier.verify_at(&issue_at(&second, T0), None, at(T0)).is_ok());
            // The kid only says which key to try first: a missing or unknown kid still verifies.
            let claims = segment(&issue_at(&second, T0), 1);
            for kid in [None, Some("unknown")] {
                assert!(verifier.verify_at(&sign_with_kid(&second, &claims, kid), None, at(T0)).is_ok(), "{kid:?}");
            }
            assert!(verifier.verify_at(&issue_at(&verifier, T0), None, at(T0)).is_ok());
            assert_eq!(invalid_token(verifier.verify_at(&issue_at(&third, T0), None, at(T0))), "invalid signature");
            assert_eq!(verifier.jwks()["keys"].as_array().map(Vec::len), Some(3));
        }
    }

    #[test]
    fn jwks_describe_exactly_the_verification_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        let other = load(&dir.path().join("other"), options());
        let own_pub = dir.path().join("own").join("sa.pub");
        let key_files = vec![dir.path().join("other").join("sa.pub")];
        let issuer = load(&dir.path().join("own"), TokenOptions { key_files: key_files.clone(), ..options() });
        // Listing the signing key again does not list it twice.
        let issuer_again =
            load(&dir.path().join("own"), TokenOptions { key_files: vec![own_pub, key_files[0].clone()], ..options() });
        assert_eq!(issuer_again.jwks(), issuer.jwks());

        let jwks = issuer.jwks();
        let keys = jwks["keys"].as_array().expect("keys array");
        let expected_public = [public_key_of(&dir.path().join("own")), public_key_of(&dir.path().join("other"))];
        let tokens = [issue_at(&issuer, T0), issue_at(&other, T0)];
        assert_eq!(keys.len(), 2);
        for ((jwk, expected_public), token) in keys.iter().zip(expected_public).zip(tokens) {
            let (x, y) = (jwk["x"].as_str().expect("x"), jwk["y"].as_str().expect("y"));
            let x_bytes = URL_SAFE_NO_PAD.decode(x).expect("x is base64url");
            let y_bytes = URL_SAFE_NO_PAD.decode(y).expect("y is base64url");
            let coordinate = |bytes: Vec<u8>| p256::FieldBytes::from(<[u8; 32]>::try_from(bytes).expect("32 bytes"));
            let point = p256::EncodedPoint::from_affine_coordinates(&coordinate(x_bytes), &coordinate(y_bytes), false);
            let public_key = PublicKey::from_sec1_bytes(point.as_bytes()).expect("jwk is a P-256 point");
            assert_eq!(public_key, expected_public);
            let kid = key_id(&public_key).expect("kid");
            assert_eq!(
                jwk,
                &json!({"use": "sig", "kty": "EC", "kid": kid, "crv": "P-256", "alg": "ES256", "x": x, "y": y})
            );
            assert_eq!(segment(&token, 0)["kid"], json!(kid));
            let decoding_key = DecodingKey::from_ec_components(x, y).expect("jwk components");
            let mut validation = Validation::new(Algorithm::ES256);
            validation.validate_exp = false;
            validation.set_audience(&[ISSUER]);
            assert!(jsonwebtoken::decode::<Value>(&token, &decoding_key, &validation).is_ok());
        }
    }

    #[test]
    fn openid_configuration_points_at_the_jwks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = TokenOptions { issuer: format!("{ISSUER}/"), ..options() };
        assert_eq!(
            load(dir.path(), options).openid_configuration(),
            json!({
                "issuer": format!("{ISSUER}/"),
                "jwks_uri": format!("{ISSUER}/openid/v1/jwks"),
                "response_types_supported": ["id_token"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["ES256"],
            })
        );
    }

    #[test]
    fn looks_like_jwt_tells_tokens_from_static_tokens() {
        let dir = tempfile::tempdir().expect("tempdir");
        let token = issue_at(&load(dir.path(), options()), T0);
        let header = token.split('.').next().expect("header");
        let cases = [
            (token.as_str(), true),
            (&format!("{header}.e30.c2ln"), true),
            ("31ada4fd-adec-460c-809a-9e56ceb75269", false),
            ("abc.def.ghi", false),
            (&format!("{header}.e30"), false),
            (&format!("{header}.e30.c2ln.extra"), false),
            (&format!("{header}..c2ln"), false),
            (&format!("{header}.e30.c2ln="), false),
            ("", false),
        ];
        for (candidate, expected) in cases {
            assert_eq!(TokenIssuer::looks_like_jwt(candidate), expected, "{candidate:?}");
        }
    }
}
