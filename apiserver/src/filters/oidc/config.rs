//! Where the trusted issuers come from: kube-apiserver's `--oidc-*` flags (one issuer), or the `jwt` list of an
//! `apiserver.config.k8s.io/v1 AuthenticationConfiguration` file (`--authentication-config`), checked as kube
//! checks it (every error, with its field path) and re-read when it changes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::Algorithm;
use serde::Deserialize;

use super::rules::Expression;
use super::{Issuer, Mapping, OidcAuthenticator};
use crate::status::Cause;

/// How often the configuration file is read again to see whether it changed.
pub const RELOAD_INTERVAL: Duration = Duration::from_secs(3);

/// kube's error when both are given.
pub const MUTUALLY_EXCLUSIVE: &str = "authentication-config file and oidc-* flags are mutually exclusive";

/// kube-apiserver's `--oidc-*` flags, as given.
#[derive(Clone, Debug, Default)]
pub struct OidcFlags {
    pub issuer_url: Option<String>,
    pub client_id: Option<String>,
    pub username_claim: String,
    pub username_prefix: Option<String>,
    pub groups_claim: Option<String>,
    pub groups_prefix: Option<String>,
    pub ca_file: Option<PathBuf>,
    pub required_claims: Vec<(String, String)>,
    pub signing_algs: Vec<String>,
}

impl OidcFlags {
    /// The issuer the flags describe, or none without `--oidc-issuer-url`. kube's defaults: a username from a
    /// claim other than `email` is prefixed with the issuer URL and `#` unless `--oidc-username-prefix` says
    /// otherwise (`-`: no prefix).
    pub fn issuer(&self) -> Result<Option<Issuer>, String> {
        let Some(url) = &self.issuer_url else {
            return Ok(None);
        };
        let client_id = self.client_id.clone().filter(|id| !id.is_empty())
            .ok_or("--oidc-client-id must be given with --oidc-issuer-url")?;
        let ca = match &self.ca_file {
            Some(path) => Some(std::fs::read_to_string(path).map_err(|err| format!("--oidc-ca-file {}: {err}", path.display()))?),
            None => None,
        };
        let algorithms = algorithms(&self.signing_algs)?;
        let prefix = match self.username_prefix.as_deref() {
            Some("-") => String::new(),
            Some(prefix) => prefix.to_owned(),
            None if self.username_claim == "email" => String::new(),
            None => format!("{url}#"),
        };
        let username = Mapping::Claim { claim: self.username_claim.clone(), prefix };
        let mut issuer = Issuer::new(url.clone(), None, ca.as_deref(), vec![client_id], algorithms, username)
            .map_err(|err| format!("--oidc-issuer-url: {err}"))?;
        issuer.groups = self.groups_claim.as_ref().map(|claim| Mapping::Claim {
            claim: claim.clone(),
            prefix: self.groups_prefix.clone().unwrap_or_default(),
        });
        issuer.required_claims = self.required_claims.clone();
        Ok(Some(issuer))
    }

    pub fn any_given(&self) -> bool {
        self.issuer_url.is_some() || self.client_id.is_some() || self.username_prefix.is_some() || self.groups_claim.is_some()
            || self.groups_prefix.is_some() || self.ca_file.is_some() || !self.required_claims.is_empty()
    }
}

const ACCEPTED_ALGORITHMS: [&str; 9] = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256", "PS384", "PS512", "EdDSA"];

/// `--oidc-signing-algs`: kube's asymmetric algorithms only (never `none`, never an HMAC a client could forge with
/// a public value).
pub fn algorithms(names: &[String]) -> Result<Vec<Algorithm>, String> {
    names.iter().map(|name| match ACCEPTED_ALGORITHMS.contains(&name.as_str()) {
        true => name.parse::<Algorithm>().map_err(|err| format!("--oidc-signing-algs: {name}: {err}")),
        false => Err(format!("--oidc-signing-algs: {name} is not supported (supported: {})", ACCEPTED_ALGORITHMS.join(", "))),
    }).collect()
}

// ---- `--authentication-config`: the file's shape (the `jwt` list; kube's field names). ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthenticationConfiguration {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    #[serde(default)]
    jwt: Vec<JwtAuthenticator>,
    /// Anonymous authentication (kube 1.32): not supported here, refused rather than ignored.
    anonymous: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JwtAuthenticator {
    issuer: IssuerSpec,
    #[serde(default, rename = "claimValidationRules")]
    claim_validation_rules: Vec<ClaimValidationRule>,
    #[serde(rename = "claimMappings")]
    claim_mappings: Option<ClaimMappings>,
    #[serde(default, rename = "userValidationRules")]
    user_validation_rules: Vec<UserValidationRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IssuerSpec {
    #[serde(default)]
    url: String,
    #[serde(rename = "discoveryURL")]
    discovery_url: Option<String>,
    #[serde(rename = "certificateAuthority")]
    certificate_authority: Option<String>,
    #[serde(default)]
    audiences: Vec<String>,
    #[serde(rename = "audienceMatchPolicy")]
    audience_match_policy: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimValidationRule {
    claim: Option<String>,
    #[serde(rename = "requiredValue")]
    required_value: Option<String>,
    expression: Option<String>,
    message: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ClaimMappings {
    username: Option<PrefixedClaimOrExpression>,
    groups: Option<PrefixedClaimOrExpression>,
    uid: Option<ClaimOrExpression>,
    #[serde(default)]
    extra: Vec<ExtraMapping>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct PrefixedClaimOrExpression {
    claim: Option<String>,
    prefix: Option<String>,
    expression: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimOrExpression {
    claim: Option<String>,
    expression: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExtraMapping {
    key: String,
    #[serde(rename = "valueExpression")]
    value_expression: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserValidationRule {
    expression: String,
    message: Option<String>,
}

/// One problem of a configuration, as kube's `field.Error`: its field, reason and message.
fn issue(field: impl Into<String>, reason: &'static str, message: String) -> Cause {
    Cause { reason, message, field: field.into() }
}

/// The issuers of an `AuthenticationConfiguration`, or every error found (one per line, each with its field path).
pub fn parse_authentication_config(text: &str) -> Result<Vec<Issuer>, String> {
    let config: AuthenticationConfiguration = serde_saphyr::from_str(text).map_err(|err| format!("not a valid AuthenticationConfiguration: {err}"))?;
    let mut errors = Vec::new();
    if !matches!(config.api_version.as_str(), "apiserver.config.k8s.io/v1" | "apiserver.config.k8s.io/v1beta1" | "apiserver.config.k8s.io/v1alpha1")
        || config.kind != "AuthenticationConfiguration" {
        errors.push(issue("apiVersion/kind", "FieldValueInvalid",
            format!("expected apiserver.config.k8s.io/v1 AuthenticationConfiguration, got {} {}", config.api_version, config.kind)));
    }
    if config.anonymous.is_some() {
        errors.push(issue("anonymous", "FieldValueNotSupported", "Unsupported value: not supported by kspaces".to_owned()));
    }
    let issuers = issuers_of(config.jwt, "jwt", &mut errors);
    match errors.is_empty() {
        true => Ok(issuers),
        false => Err(errors.iter().map(Cause::to_string).collect::<Vec<_>>().join("\n")),
    }
}

/// The issuers of a `jwt` list given as JSON (a `WorkspaceAuthenticationConfiguration`'s `spec.jwt`), or every
/// error found, each a field cause below `path`.
pub fn parse_jwt_list(list: &serde_json::Value, path: &str) -> Result<Vec<Issuer>, Vec<Cause>> {
    let jwt: Vec<JwtAuthenticator> = serde_json::from_value(list.clone())
        .map_err(|err| vec![issue(path, "FieldValueInvalid", format!("Invalid value: not a list of JWT authenticators: {err}"))])?;
    let mut errors = Vec::new();
    let issuers = issuers_of(jwt, path, &mut errors);
    match errors.is_empty() {
        true => Ok(issuers),
        false => Err(errors),
    }
}

/// Each authenticator of a `jwt` list as an issuer; the errors of those that are not, and of issuer URLs given twice.
fn issuers_of(jwt: Vec<JwtAuthenticator>, path: &str, errors: &mut Vec<Cause>) -> Vec<Issuer> {
    let mut issuers = Vec::new();
    let mut urls = Vec::new();
    for (index, jwt) in jwt.into_iter().enumerate() {
        let path = format!("{path}[{index}]");
        if urls.contains(&jwt.issuer.url) {
            errors.push(issue(format!("{path}.issuer.url"), "FieldValueDuplicate", format!("Duplicate value: {:?}", jwt.issuer.url)));
        }
        urls.push(jwt.issuer.url.clone());
        match issuer_of(jwt, &path) {
            Ok(issuer) => issuers.push(issuer),
            Err(mut found) => errors.append(&mut found),
        }
    }
    issuers
}

/// One `jwt` entry as an issuer, or its errors.
fn issuer_of(jwt: JwtAuthenticator, path: &str) -> Result<Issuer, Vec<Cause>> {
    let mut errors = Vec::new();
    let spec = &jwt.issuer;
    if spec.url.is_empty() {
        errors.push(issue(format!("{path}.issuer.url"), "FieldValueRequired", "Required value".to_owned()));
    } else if !spec.url.starts_with("https://") {
        errors.push(issue(format!("{path}.issuer.url"), "FieldValueInvalid", format!("Invalid value: {:?}: URL scheme must be https", spec.url)));
    }
    if spec.audiences.is_empty() {
        errors.push(issue(format!("{path}.issuer.audiences"), "FieldValueRequired", "Required value: at least one issuer.audiences is required".to_owned()));
    }
    match (spec.audiences.len(), spec.audience_match_policy.as_deref()) {
        (0 | 1, None | Some("MatchAny")) | (_, Some("MatchAny")) => {}
        (_, None) => errors.push(issue(format!("{path}.issuer.audienceMatchPolicy"), "FieldValueInvalid", "Invalid value: \"\": audienceMatchPolicy must be MatchAny for multiple audiences".to_owned())),
        (_, Some(other)) => errors.push(issue(format!("{path}.issuer.audienceMatchPolicy"), "FieldValueNotSupported", format!("Unsupported value: {other:?}: supported values: \"MatchAny\""))),
    }
    if spec.discovery_url.as_ref().is_some_and(|d| d.trim_end_matches('/') == spec.url.trim_end_matches('/')) {
        errors.push(issue(format!("{path}.issuer.discoveryURL"), "FieldValueInvalid", "Invalid value: discoveryURL must be different from URL".to_owned()));
    }
    let mappings = jwt.claim_mappings.unwrap_or_default();
    let username = mappings.username.unwrap_or_default();
    let username = prefixed(&username, &format!("{path}.claimMappings.username"), true, &mut errors);
    let groups = mappings.groups.as_ref().and_then(|g| prefixed(g, &format!("{path}.claimMappings.groups"), false, &mut errors));
    let uid = mappings.uid.as_ref().and_then(|u| plain(u, &format!("{path}.claimMappings.uid"), &mut errors));
    let mut extra = Vec::new();
    for (index, mapping) in mappings.extra.iter().enumerate() {
        let at = format!("{path}.claimMappings.extra[{index}]");
        if !mapping.key.contains('/') || mapping.key != mapping.key.to_lowercase() {
            errors.push(issue(format!("{at}.key"), "FieldValueInvalid", format!("Invalid value: {:?}: must be a domain-prefix path (such as \"acme.io/foo\") in lower case", mapping.key)));
        }
        if let Some(expression) = compile(&mapping.value_expression, "claims", &format!("{at}.valueExpression"), &mut errors) {
            extra.push((mapping.key.clone(), expression));
        }
    }
    let mut required = Vec::new();
    let mut claim_rules = Vec::new();
    for (index, rule) in jwt.claim_validation_rules.iter().enumerate() {
        let at = format!("{path}.claimValidationRules[{index}]");
        match (&rule.claim, &rule.expression) {
            (Some(claim), None) => required.push((claim.clone(), rule.required_value.clone().unwrap_or_default())),
            (None, Some(text)) => {
                if let Some(expression) = compile(text, "claims", &format!("{at}.expression"), &mut errors) {
                    claim_rules.push((expression, rule.message.clone().unwrap_or_else(|| text.clone())));
                }
            }
            _ => errors.push(issue(at.as_str(), "FieldValueInvalid", "Invalid value: claim or expression is required, not both".to_owned())),
        }
    }
    let mut user_rules = Vec::new();
    for (index, rule) in jwt.user_validation_rules.iter().enumerate() {
        if let Some(expression) = compile(&rule.expression, "user", &format!("{path}.userValidationRules[{index}].expression"), &mut errors) {
            user_rules.push((expression, rule.message.clone().unwrap_or_else(|| rule.expression.clone())));
        }
    }
    // kube's JWT authenticators accept every asymmetric algorithm its library supports.
    let every: Vec<String> = ACCEPTED_ALGORITHMS.map(str::to_owned).to_vec();
    let built = username.filter(|_| errors.is_empty()).ok_or(()).and_then(|username| {
        Issuer::new(spec.url.clone(), spec.discovery_url.clone(), spec.certificate_authority.as_deref(), spec.audiences.clone(),
            algorithms(&every).unwrap_or_default(), username)
            .map_err(|err| errors.push(issue(format!("{path}.issuer"), "FieldValueInvalid", format!("Invalid value: {err}"))))
    });
    match built {
        Ok(mut issuer) if errors.is_empty() => {
            issuer.groups = groups;
            issuer.uid = uid;
            issuer.extra = extra;
            issuer.required_claims = required;
            issuer.claim_rules = claim_rules;
            issuer.user_rules = user_rules;
            Ok(issuer)
        }
        _ => Err(errors),
    }
}

/// A username or groups mapping: a claim (with a prefix, which kube requires for the username, empty to have
/// none) or an expression.
fn prefixed(spec: &PrefixedClaimOrExpression, path: &str, required: bool, errors: &mut Vec<Cause>) -> Option<Mapping> {
    match (&spec.claim, &spec.expression) {
        (Some(_), Some(_)) => errors.push(issue(path, "FieldValueInvalid", "Invalid value: claim and expression can't both be set".to_owned())),
        (Some(claim), None) => {
            if required && spec.prefix.is_none() {
                errors.push(issue(format!("{path}.prefix"), "FieldValueRequired", "Required value: prefix is required when claim is set. It can be set to an empty string to disable prefixing".to_owned()));
                return None;
            }
            return Some(Mapping::Claim { claim: claim.clone(), prefix: spec.prefix.clone().unwrap_or_default() });
        }
        (None, Some(text)) => {
            if spec.prefix.is_some() {
                errors.push(issue(format!("{path}.prefix"), "FieldValueInvalid", "Invalid value: may not be specified when expression is set".to_owned()));
            }
            return compile(text, "claims", &format!("{path}.expression"), errors).map(Mapping::Expression);
        }
        (None, None) if required => errors.push(issue(path, "FieldValueRequired", "Required value: claim or expression is required".to_owned())),
        (None, None) => {}
    }
    None
}

fn plain(spec: &ClaimOrExpression, path: &str, errors: &mut Vec<Cause>) -> Option<Mapping> {
    match (&spec.claim, &spec.expression) {
        (Some(claim), None) => Some(Mapping::Claim { claim: claim.clone(), prefix: String::new() }),
        (None, Some(text)) => compile(text, "claims", &format!("{path}.expression"), errors).map(Mapping::Expression),
        _ => {
            errors.push(issue(path, "FieldValueInvalid", "Invalid value: exactly one of claim or expression is required".to_owned()));
            None
        }
    }
}

fn compile(text: &str, variable: &str, path: &str, errors: &mut Vec<Cause>) -> Option<Arc<Expression>> {
    Expression::compile(text, variable).map(Arc::new).map_err(|err| errors.push(issue(path, "FieldValueInvalid", format!("Invalid value: {text:?}: {err}")))).ok()
}

/// Reads and checks `path`.
pub fn load_authentication_config(path: &Path) -> Result<(String, Vec<Issuer>), String> {
    let text = std::fs::read_to_string(path).map_err(|err| format!("--authentication-config {}: {err}", path.display()))?;
    let issuers = parse_authentication_config(&text).map_err(|err| format!("--authentication-config {}: {err}", path.display()))?;
    Ok((text, issuers))
}

/// Reads `path` every `RELOAD_INTERVAL`: a changed file that is valid replaces the issuers; an invalid one is
/// logged and ignored (the issuers in force stay), as kube does.
pub async fn reload_forever(path: PathBuf, mut current: String, authenticator: Arc<OidcAuthenticator>) {
    loop {
        tokio::time::sleep(RELOAD_INTERVAL).await;
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        if text == current {
            continue;
        }
        match parse_authentication_config(&text) {
            Ok(issuers) => {
                tracing::info!(path = %path.display(), issuers = issuers.len(), "the authentication configuration changed: applied");
                authenticator.replace(issuers);
            }
            Err(err) => tracing::error!(path = %path.display(), %err, "the authentication configuration changed but is invalid: ignored"),
        }
        current = text;
    }
}
