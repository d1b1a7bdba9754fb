//! kube's request-header authentication (`--requestheader-*`): a front proxy in front of the server (an
//! authenticating proxy, or another server's aggregation layer) shows a client certificate signed by
//! `--requestheader-client-ca-file` whose common name `--requestheader-allowed-names` lists (any, when empty), and
//! says who the user is in headers: the first `--requestheader-username-headers` present, every value of the
//! `--requestheader-group-headers`, and `--requestheader-extra-headers-prefix<key>` headers as extra (the key
//! lowercased and percent-decoded). The user's tenant is its `kspaces.io/tenant` extra.
//!
//! A certificate that CA signed is a front proxy's only: it never authenticates as a user itself, and a request on
//! its connection without a username header goes on to the bearer token, else is anonymous. Stricter than kube:
//! the CA may not be the client CA (whose certificates tenants obtain through CertificateSigningRequests), so no
//! credential a tenant holds can speak for another user.

use actix_web::http::header::HeaderMap;
use kspaces_authz::{UserInfo, TENANT_EXTRA};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::ClientCertVerifier;
use std::sync::Arc;

/// The connection's client certificate is an allowed front proxy's (a connection extension).
#[derive(Clone, Debug)]
pub struct FrontProxy;

/// The `--requestheader-*` settings.
pub struct RequestHeader {
    verifier: Arc<dyn ClientCertVerifier>,
    /// The CA's certificates, PEM (what the TLS handshake also accepts, and what is published).
    pub ca_pem: String,
    pub allowed_names: Vec<String>,
    pub username_headers: Vec<String>,
    pub group_headers: Vec<String>,
    pub extra_prefixes: Vec<String>,
}

impl std::fmt::Debug for RequestHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestHeader").field("allowed_names", &self.allowed_names).finish_non_exhaustive()
    }
}

impl RequestHeader {
    /// The settings of CA `ca_pem`, refused when it shares a certificate with the client CA `client_ca_pem`.
    pub fn new(ca_pem: String, client_ca_pem: &str, allowed_names: Vec<String>, username_headers: Vec<String>, group_headers: Vec<String>,
        extra_prefixes: Vec<String>) -> Result<RequestHeader, String> {
        let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(ca_pem.as_bytes()).filter_map(Result::ok).collect();
        let client: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(client_ca_pem.as_bytes()).filter_map(Result::ok).collect();
        if certificates.iter().any(|c| client.contains(c)) {
            return Err("--requestheader-client-ca-file must not hold a certificate of the client CA: every certificate the client CA signs \
                (kubeconfigs, approved CertificateSigningRequests) could then speak for any user".into());
        }
        let mut roots = rustls::RootCertStore::empty();
        let (added, _) = roots.add_parsable_certificates(certificates);
        if added == 0 {
            return Err("--requestheader-client-ca-file holds no PEM certificate".into());
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots)).build().map_err(|e| e.to_string())?;
        Ok(RequestHeader { verifier, ca_pem, allowed_names, username_headers, group_headers, extra_prefixes })
    }

    /// Whether `chain` (verified by the TLS handshake against every client CA) is an allowed front proxy's:
    /// `Some(true)`; signed by the request-header CA but not allowed: `Some(false)` (it authenticates nobody);
    /// not signed by it: `None`.
    pub fn front_proxy(&self, chain: &[CertificateDer<'_>]) -> Option<bool> {
        let (end_entity, intermediates) = chain.split_first()?;
        self.verifier.verify_client_cert(end_entity, intermediates, UnixTime::now()).ok()?;
        if self.allowed_names.is_empty() {
            return Some(true);
        }
        let (_, parsed) = x509_parser::parse_x509_certificate(end_entity.as_ref()).ok()?;
        let name = parsed.subject().iter_common_name().next().and_then(|n| n.as_str().ok()).unwrap_or_default().to_owned();
        Some(self.allowed_names.contains(&name))
    }

    /// The user the headers name, if a username header is there.
    pub fn user(&self, headers: &HeaderMap) -> Option<UserInfo> {
        let name = self.username_headers.iter().find_map(|h| headers.get(h.as_str()).and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty()))?;
        let groups: Vec<String> = self.group_headers.iter()
            .flat_map(|h| headers.get_all(h.as_str()).filter_map(|v| v.to_str().ok()).map(str::to_owned)).collect();
        let mut extra: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
        for (header, value) in headers.iter() {
            let lower = header.as_str().to_ascii_lowercase();
            let Some(key) = self.extra_prefixes.iter().find_map(|p| lower.strip_prefix(&p.to_ascii_lowercase())) else { continue };
            if let (Some(key), Ok(value)) = (unescape(key), value.to_str()) {
                extra.entry(key).or_default().push(value.to_owned());
            }
        }
        let tenant = extra.get(TENANT_EXTRA).and_then(|values| values.first()).filter(|t| !t.is_empty()).cloned();
        let mut user = UserInfo::authenticated(name.to_owned(), String::new(), groups, tenant);
        user.extra = extra;
        Some(user)
    }
}

/// A percent-encoded extra key, decoded (`None` if it is not valid UTF-8 once decoded).
fn unescape(key: &str) -> Option<String> {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Reads `--requestheader-client-ca-file` (none: request-header authentication is off).
pub fn pem_of(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--requestheader-client-ca-file {}: {e}", path.display()))?;
    if CertificateDer::pem_slice_iter(text.as_bytes()).filter_map(Result::ok).next().is_none() {
        return Err(format!("--requestheader-client-ca-file {}: no PEM certificate", path.display()));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::{HeaderName, HeaderValue};

    #[test]
    fn headers_name_the_user_its_groups_and_extra() {
        let ca = rcgen::generate_simple_self_signed(vec!["front-proxy-ca".to_owned()]).expect("certificate");
        let settings = RequestHeader::new(ca.cert.pem(), "", vec![], vec!["X-Remote-User".into()], vec!["X-Remote-Group".into()],
            vec!["X-Remote-Extra-".into()]).expect("settings");
        let mut headers = HeaderMap::new();
        for (name, value) in [("x-remote-user", "alice"), ("x-remote-group", "devs"), ("x-remote-group", "ops"),
            ("x-remote-extra-kspaces.io%2ftenant", "t-a"), ("x-remote-extra-scopes", "read")] {
            headers.append(HeaderName::from_static(name), HeaderValue::from_static(value));
        }
        let user = settings.user(&headers).expect("a user");
        assert_eq!((user.name.as_str(), user.tenant.as_deref()), ("alice", Some("t-a")));
        assert_eq!(user.groups, ["devs", "ops", "system:authenticated"]);
        assert_eq!(user.extra["scopes"], ["read"]);
        assert!(settings.user(&HeaderMap::new()).is_none(), "no username header: no user");
        let same = RequestHeader::new(ca.cert.pem(), &ca.cert.pem(), vec![], vec![], vec![], vec![]);
        assert!(same.is_err_and(|why| why.contains("must not hold a certificate of the client CA")));
    }
}
