//! OpenID Connect: bearer JWTs of the issuers the platform trusts (kube-apiserver's `--oidc-*` flags, or the `jwt`
//! list of an `apiserver.config.k8s.io/v1 AuthenticationConfiguration`), verified against each issuer's JWKS
//! (discovered over verified TLS, refetched when a token names an unknown key) and mapped to a user as kube maps
//! them. Verified tokens are cached until they expire, so a request with one costs what a static token costs.

pub mod config;
mod keys;
pub use keys::Allowed;
pub mod rules;
pub mod workspace;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use base64::Engine;
use jsonwebtoken::{Algorithm, Validation};
use kspaces_authz::{UserInfo, TENANT_EXTRA};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use self::keys::KeySource;
use self::rules::{Claims, Expression};


/// How many verified tokens are remembered; past this the cache starts over (a bound, not an LRU: a token costs one
/// signature check more after a reset).
const CACHE_ENTRIES: usize = 4096;

/// kube's (go-oidc's) allowance for clocks that differ, applied to `nbf` only: `exp` has none.
const NBF_SKEW_SECONDS: i64 = 300;

/// Where a username, the groups, the uid or an extra value come from.
#[derive(Clone)]
pub enum Mapping {
    /// A claim, with a prefix put before each value.
    Claim { claim: String, prefix: String },
    /// A CEL expression over `claims`.
    Expression(Arc<Expression>),
}

/// One issuer whose tokens authenticate users.
pub struct Issuer {
    pub url: String,
    pub audiences: Vec<String>,
    pub algorithms: Vec<Algorithm>,
    pub username: Mapping,
    pub groups: Option<Mapping>,
    pub uid: Option<Mapping>,
    pub extra: Vec<(String, Arc<Expression>)>,
    /// Claims that must be present with this string value (`--oidc-required-claim`, `claim`+`requiredValue`).
    pub required_claims: Vec<(String, String)>,
    /// CEL `claimValidationRules` (expression, message).
    pub claim_rules: Vec<(Arc<Expression>, String)>,
    /// CEL `userValidationRules` (expression, message).
    pub user_rules: Vec<(Arc<Expression>, String)>,
    keys: KeySource,
}

impl Issuer {
    /// The same issuer, its documents fetched only from addresses `allowed` lets through.
    pub fn reaching(mut self, allowed: Allowed) -> Issuer {
        self.keys.allowed = allowed;
        self
    }

    /// An issuer whose keys are found through `discovery_url` (the issuer's own discovery document when `None`),
    /// fetched over TLS verified against `ca_pem` (the system's roots when `None`).
    pub fn new(url: String, discovery_url: Option<String>, ca_pem: Option<&str>, audiences: Vec<String>, algorithms: Vec<Algorithm>,
        username: Mapping) -> Result<Issuer, String> {
        let keys = KeySource::new(&url, discovery_url, ca_pem)?;
        Ok(Issuer { url, audiences, algorithms, username, groups: None, uid: None, extra: Vec::new(), required_claims: Vec::new(),
            claim_rules: Vec::new(), user_rules: Vec::new(), keys })
    }
}

/// A user an OIDC token authenticated, and until when.
#[derive(Clone)]
struct Cached {
    user: UserInfo,
    expires: i64,
}

/// Every trusted issuer, and the tokens already verified. The issuers are swapped whole when the configuration
/// file changes.
#[derive(Default)]
pub struct OidcAuthenticator {
    issuers: RwLock<Arc<Vec<Arc<Issuer>>>>,
    cache: Mutex<HashMap<[u8; 32], Cached>>,
}


impl OidcAuthenticator {
    pub fn new(issuers: Vec<Issuer>) -> OidcAuthenticator {
        let authenticator = OidcAuthenticator::default();
        authenticator.replace(issuers);
        authenticator
    }

    /// Trusts these issuers from now on (and forgets every token verified under the old ones).
    pub fn replace(&self, issuers: Vec<Issuer>) {
        let issuers = Arc::new(issuers.into_iter().map(Arc::new).collect());
        *self.issuers.write().unwrap_or_else(|e| e.into_inner()) = issuers;
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// The issuer a JWT names in its (not yet verified) `iss`, if it is one of ours.
    pub fn issuer_of(&self, token: &str) -> Option<Arc<Issuer>> {
        let issuers = self.issuers.read().unwrap_or_else(|e| e.into_inner()).clone();
        if issuers.is_empty() {
            return None;
        }
        let iss = unverified_claims(token)?.get("iss")?.as_str()?.to_owned();
        issuers.iter().find(|issuer| issuer.url == iss).cloned()
    }

    /// The user of a token verified before and not expired since: a hash and a lookup, checked before anything
    /// else is decoded.
    pub fn cached(&self, token: &str) -> Option<UserInfo> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.is_empty() {
            return None;
        }
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        cache.get(&digest).filter(|hit| hit.expires > now()).map(|hit| hit.user.clone())
    }

    /// Verifies a token of `issuer` and maps it to a user. The error is the reason, for logs and TokenReviews.
    pub async fn authenticate(&self, issuer: &Issuer, token: &str) -> Result<UserInfo, String> {
        if let Some(hit) = self.cached(token) {
            return Ok(hit);
        }
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = now();
        let claims = verify(issuer, token).await?;
        let user = map_user(issuer, &claims)?;
        let expires = claims.get("exp").and_then(Value::as_i64).unwrap_or(now);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= CACHE_ENTRIES {
            cache.retain(|_, entry| entry.expires > now);
            if cache.len() >= CACHE_ENTRIES {
                cache.clear();
            }
        }
        cache.insert(digest, Cached { user: user.clone(), expires });
        Ok(user)
    }
}

/// Checks the signature (with a key of the issuer's JWKS, refetched once if the token names an unknown `kid`),
/// `iss`, `aud`, `exp` (no leeway), `nbf` (kube's five minutes of skew) and `iat`, as kube does.
async fn verify(issuer: &Issuer, token: &str) -> Result<Map<String, Value>, String> {
    let header = jsonwebtoken::decode_header(token).map_err(|err| format!("oidc: malformed jwt: {err}"))?;
    if !issuer.algorithms.contains(&header.alg) {
        return Err(format!("oidc: token signed with algorithm {:?}, not one of the accepted {:?}", header.alg, issuer.algorithms));
    }
    let candidates = issuer.keys.keys_for(header.kid.as_deref()).await?;
    let mut validation = Validation::new(header.alg);
    validation.leeway = 0;
    validation.validate_nbf = false;
    validation.set_issuer(&[&issuer.url]);
    validation.set_audience(&issuer.audiences);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    let mut last = String::from("oidc: no key of the issuer verifies the token");
    for key in candidates.iter() {
        match jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation) {
            Ok(data) => return check_times(data.claims),
            Err(err) => {
                use jsonwebtoken::errors::ErrorKind;
                last = match err.kind() {
                    ErrorKind::InvalidSignature | ErrorKind::InvalidAlgorithm | ErrorKind::InvalidKeyFormat => continue,
                    ErrorKind::ExpiredSignature => "oidc: token is expired".to_owned(),
                    ErrorKind::InvalidAudience => format!("oidc: expected audience in {:?}", issuer.audiences),
                    ErrorKind::InvalidIssuer => format!("oidc: issuer is not {}", issuer.url),
                    _ => format!("oidc: {err}"),
                };
                return Err(last);
            }
        }
    }
    if candidates.is_empty() {
        last = "oidc: the issuer has no key the token names".to_owned();
    }
    Err(last)
}

/// `nbf` with kube's skew, and an `iat` that, when present, is a number.
fn check_times(claims: Map<String, Value>) -> Result<Map<String, Value>, String> {
    let now = now();
    if let Some(nbf) = claims.get("nbf") {
        let nbf = nbf.as_f64().ok_or("oidc: malformed claim nbf")? as i64;
        if now + NBF_SKEW_SECONDS < nbf {
            return Err("oidc: current time is before the nbf (not before) time".to_owned());
        }
    }
    if claims.get("iat").is_some_and(|iat| !iat.is_number()) {
        return Err("oidc: malformed claim iat".to_owned());
    }
    Ok(claims)
}

/// The user a verified token names: username, groups, uid and extra by the issuer's mappings, then the required
/// claims and the validation rules.
fn map_user(issuer: &Issuer, claims: &Map<String, Value>) -> Result<UserInfo, String> {
    for (claim, value) in &issuer.required_claims {
        match claims.get(claim) {
            None => return Err(format!("oidc: required claim {claim} not present in ID token")),
            Some(Value::String(found)) if found == value => {}
            Some(_) => return Err(format!("oidc: required claim {claim} value does not match. Got = {}, want = {value}", claims[claim])),
        }
    }
    let context = Claims(Value::Object(claims.clone()));
    for (rule, message) in &issuer.claim_rules {
        if !rule.evaluate_bool(&context, None)? {
            return Err(format!("oidc: error evaluating claim validation expression: {message}"));
        }
    }
    let name = username(issuer, claims, &context)?;
    let groups = match &issuer.groups {
        Some(mapping) => strings(mapping, claims, &context, "groups")?,
        None => Vec::new(),
    };
    let uid = match &issuer.uid {
        Some(mapping) => strings(mapping, claims, &context, "uid")?.into_iter().next().unwrap_or_default(),
        None => String::new(),
    };
    let mut extra = HashMap::new();
    for (key, expression) in &issuer.extra {
        let values = expression.evaluate_strings(&context)?;
        if !values.is_empty() {
            extra.insert(key.clone(), values);
        }
    }
    let tenant = extra.get(TENANT_EXTRA).and_then(|values| values.first()).filter(|t| !t.is_empty()).cloned();
    let mut user = UserInfo::authenticated(name, uid, groups, tenant);
    user.extra = extra.clone().into_iter().collect();
    for (rule, message) in &issuer.user_rules {
        if !rule.evaluate_bool(&context, Some((&user, &extra)))? {
            return Err(format!("oidc: error evaluating user info validation rule: {message}"));
        }
    }
    Ok(user)
}

/// The username: kube's rule that an `email` claim counts only when `email_verified`, if present, is true.
fn username(issuer: &Issuer, claims: &Map<String, Value>, context: &Claims) -> Result<String, String> {
    match &issuer.username {
        Mapping::Claim { claim, prefix } => {
            let value = claims.get(claim).ok_or_else(|| format!("oidc: parse username claims \"{claim}\": claim not present"))?;
            let value = value.as_str().ok_or_else(|| format!("oidc: parse username claims \"{claim}\": not a string"))?;
            if claim == "email" {
                match claims.get("email_verified") {
                    None | Some(Value::Bool(true)) => {}
                    Some(Value::Bool(false)) => return Err("oidc: email not verified".to_owned()),
                    Some(_) => return Err("oidc: parse 'email_verified' claim: not a boolean".to_owned()),
                }
            }
            if value.is_empty() {
                return Err(format!("oidc: claim {claim} is empty"));
            }
            Ok(format!("{prefix}{value}"))
        }
        Mapping::Expression(expression) => {
            let name = expression.evaluate_string(context)?;
            if name.is_empty() {
                return Err("oidc: username expression gave an empty username".to_owned());
            }
            Ok(name)
        }
    }
}

/// A claim that is a string or a list of strings (groups), or an expression's value, each with the prefix.
fn strings(mapping: &Mapping, claims: &Map<String, Value>, context: &Claims, what: &str) -> Result<Vec<String>, String> {
    match mapping {
        Mapping::Claim { claim, prefix } => match claims.get(claim) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::String(one)) => Ok(vec![format!("{prefix}{one}")]),
            Some(Value::Array(many)) => many.iter()
                .map(|v| v.as_str().map(|s| format!("{prefix}{s}")).ok_or_else(|| format!("oidc: parse {what} claim \"{claim}\": not a string")))
                .collect(),
            Some(_) => Err(format!("oidc: parse {what} claim \"{claim}\": not a string or a list of strings")),
        },
        Mapping::Expression(expression) => expression.evaluate_strings(context),
    }
}

/// The token's claims, before any check: only to pick the issuer.
fn unverified_claims(token: &str) -> Option<Map<String, Value>> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}
