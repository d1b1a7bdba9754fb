//! Where the trusted issuers come from: kube-apiserver's `--oidc-*` flags (one issuer).

use std::path::PathBuf;

use jsonwebtoken::Algorithm;

use super::{Issuer, Mapping};

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

/// `--oidc-signing-algs`: kube's asymmetric algorithms only (never `none`, never an HMAC a client could forge with
/// a public value).
pub fn algorithms(names: &[String]) -> Result<Vec<Algorithm>, String> {
    const ACCEPTED: [&str; 9] = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256", "PS384", "PS512", "EdDSA"];
    names.iter().map(|name| match ACCEPTED.contains(&name.as_str()) {
        true => name.parse::<Algorithm>().map_err(|err| format!("--oidc-signing-algs: {name}: {err}")),
        false => Err(format!("--oidc-signing-algs: {name} is not supported (supported: {})", ACCEPTED.join(", "))),
    }).collect()
}
