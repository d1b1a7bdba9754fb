//! Impersonation (`kubectl --as`, `--as-group`, `--as-uid`): the `Impersonate-User`, `Impersonate-Group`,
//! `Impersonate-Uid` and `Impersonate-Extra-<key>` headers, each allowed by the `impersonate` verb on `users`,
//! `groups`, `serviceaccounts`, `uids` or `userextras/<key>`, as in kube-apiserver.
//!
//! Tenancy: the impersonated identity belongs to the impersonator's tenant, and the permission is checked in
//! the impersonator's own space, so a tenant admin can only become users of their own tenant. Only a system user
//! may name another tenant, with the group `tenant:<t>` (the same spelling as a certificate's `O=tenant:<t>`).

use actix_web::http::header::HeaderMap;
use kspaces_authz::rbac::Attributes;
use kspaces_authz::{Caller, UserInfo};

use crate::authorization::{self, Authorizer};
use crate::status::{ApiError, ApiResult};
use crate::tenancy::{self, TenantCache};

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
/// Groups of every service account, and of the ones in one namespace (`system:serviceaccounts:<ns>`).
pub const SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// Who a request asks to act as.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Requested {
    pub user: String,
    pub groups: Vec<String>,
    pub uid: Option<String>,
    pub extra: Vec<(String, String)>,
}

/// The impersonation a request asks for, if any. Groups, a uid or extras without a user are 400, and so is
/// any `Impersonate-*` header (or extra key) that is not UTF-8: ignoring it would run the request as the
/// impersonator, with rights the client did not ask to use.
pub fn requested(headers: &HeaderMap) -> ApiResult<Option<Requested>> {
    let values = |name: &str| -> ApiResult<Vec<String>> {
        headers.get_all(name).map(|value| utf8(name, value.as_bytes())).collect()
    };
    let user = values(USER)?.into_iter().next();
    let groups = values(GROUP)?;
    let uid = values(UID)?.into_iter().next();
    let mut extra = Vec::new();
    for (name, value) in headers.iter() {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            let key = percent_decode(key).ok_or_else(|| not_utf8(name.as_str()))?;
            extra.push((key, utf8(name.as_str(), value.as_bytes())?));
        }
    }
    match user {
        Some(user) if !user.is_empty() => Ok(Some(Requested { user, groups, uid, extra })),
        _ if groups.is_empty() && uid.is_none() && extra.is_empty() => Ok(None),
        _ => Err(ApiError::bad_request("impersonating groups, a uid or extra fields requires impersonating a user (Impersonate-User)")),
    }
}

/// An `Impersonate-*` header's value as text.
fn utf8(name: &str, value: &[u8]) -> ApiResult<String> {
    std::str::from_utf8(value).map(str::to_owned).map_err(|_| not_utf8(name))
}

fn not_utf8(name: &str) -> ApiError {
    ApiError::bad_request(format!("the {name} header is not valid UTF-8"))
}

/// Header keys of extras are percent-encoded (kube-apiserver's `Impersonate-Extra-` convention); `None` if the
/// decoded key is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Some(byte) = text.get(i + 1..i + 3).and_then(|hex| u8::from_str_radix(hex, 16).ok()) {
                out.push(byte);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Checks every part of `requested` against `impersonator`'s permissions (judged by `authorizer`) and returns
/// the identity to act as; a tenant it names must exist in `tenants`.
pub async fn impersonate(authorizer: &Authorizer, tenants: &TenantCache, impersonator: &Caller, requested: Requested) -> ApiResult<UserInfo> {
    let home = impersonator.tenant.clone()
        .ok_or_else(|| ApiError::forbidden(format!(
            "User \"{}\" cannot impersonate: the user's credentials name no tenant", impersonator.user.name)))?;
    let space = tenancy::space_of(&home)?;
    let system = impersonator.system;
    let mut tenant = home.clone();
    let mut checks = Vec::new();
    match requested.user.strip_prefix(SERVICE_ACCOUNT_PREFIX).and_then(|rest| rest.split_once(':')) {
        Some((namespace, name)) => checks.push(impersonation("", "serviceaccounts", name, Some(namespace))),
        None => checks.push(impersonation("", "users", &requested.user, None)),
    }
    for group in &requested.groups {
        if let Some(named) = group.strip_prefix("tenant:") {
            if named != home && !system {
                return Err(ApiError::forbidden(format!(
                    "User \"{}\" cannot impersonate group \"{group}\": a tenant's users may only impersonate users of their own tenant",
                    impersonator.user.name)));
            }
            tenant = named.to_owned();
        }
        checks.push(impersonation("", "groups", group, None));
    }
    if let Some(uid) = &requested.uid {
        checks.push(impersonation("authentication.k8s.io", "uids", uid, None));
    }
    for (key, value) in &requested.extra {
        checks.push(Attributes::Resource {
            verb: "impersonate".into(),
            group: "authentication.k8s.io".into(),
            resource: "userextras".into(),
            subresource: key.clone(),
            name: value.clone(),
            namespace: None,
        });
    }
    for attributes in &checks {
        let decision = authorizer.authorize(impersonator, &space, attributes).await?;
        if !decision.allowed {
            return Err(authorization::forbidden(&impersonator.user, attributes, &decision.reason));
        }
    }
    if tenant != home && tenancy::space_of(&tenant).is_ok_and(|_| tenants.phase(&tenant).is_none()) {
        return Err(ApiError::not_found("", "tenants", &tenant));
    }
    let mut groups: Vec<String> = requested.groups.iter().filter(|g| !g.starts_with("tenant:")).cloned().collect();
    if let Some(namespace) = requested.user.strip_prefix(SERVICE_ACCOUNT_PREFIX).and_then(|rest| rest.split_once(':')).map(|(ns, _)| ns) {
        for group in [SERVICE_ACCOUNTS.to_owned(), format!("{SERVICE_ACCOUNTS}:{namespace}")] {
            if !groups.contains(&group) {
                groups.push(group);
            }
        }
    }
    Ok(UserInfo::authenticated(requested.user, requested.uid.unwrap_or_default(), groups, Some(tenant)))
}

fn impersonation(group: &str, resource: &str, name: &str, namespace: Option<&str>) -> Attributes {
    Attributes::Resource {
        verb: "impersonate".into(),
        group: group.into(),
        resource: resource.into(),
        subresource: String::new(),
        name: name.into(),
        namespace: namespace.map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::{HeaderName, HeaderValue};

    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(HeaderName::from_bytes(name.as_bytes()).expect("name"), HeaderValue::from_str(value).expect("value"));
        }
        map
    }

    #[test]
    fn reads_every_impersonation_header() {
        let got = requested(&headers(&[
            ("Impersonate-User", "alice"), ("Impersonate-Group", "dev"), ("Impersonate-Group", "ops"),
            ("Impersonate-Uid", "42"), ("Impersonate-Extra-scopes", "view"), ("Impersonate-Extra-example.com%2fteam", "a"),
        ])).expect("valid");
        let mut got = got.expect("impersonating");
        got.extra.sort();
        assert_eq!(got, Requested {
            user: "alice".into(),
            groups: vec!["dev".into(), "ops".into()],
            uid: Some("42".into()),
            extra: vec![("example.com/team".into(), "a".into()), ("scopes".into(), "view".into())],
        });
        assert_eq!(requested(&headers(&[])).expect("valid"), None);
        assert_eq!(requested(&headers(&[("Impersonate-Group", "dev")])).map_err(|e| e.code), Err(400));
    }
}
