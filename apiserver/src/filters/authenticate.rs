//! Authentication: x509 client certificates (CN user, O groups, `O=tenant:<t>` a tenant), static tokens
//! (`--token-auth-file`, kube-apiserver's CSV with Arktos' tenant column) and service-account tokens (JWTs this
//! server signed; see `token_issuer`), which name their tenant and are valid only while their ServiceAccount
//! (and the object they are bound to, if any) still exists with the same uid; then the ID tokens of the OIDC
//! issuers the platform trusts (see `oidc`), the platform's token webhook (see `token_webhook`); last, for a
//! request naming a workspace, the tenants' own issuers its type names (`oidc::workspace`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use kspaces_authz::UserInfo;
use kspaces_storage::SpaceName;
use serde_json::Value;

use super::impersonate::SERVICE_ACCOUNTS;
use super::oidc::workspace::WorkspaceIssuers;
use super::oidc::OidcAuthenticator;
use super::token_issuer::{TokenIssuer, VerifiedToken};
use super::token_webhook::TokenWebhook;
use crate::apis::request_info::SpacePath;
use crate::registry::{Reader, ResourceTable, Scope};
use crate::tenancy::types::WorkspaceTypes;
use crate::tenancy::{self, TenantCache, Tree, ROOT};

/// The identity of a connection's verified client certificate, stored in the connection's extensions.
#[derive(Clone, Debug)]
pub struct PeerIdentity(pub UserInfo);

/// Identity from a verified client certificate. A certificate naming two different tenants names none that
/// can be trusted: it authenticates nobody.
pub fn from_certificate(der: &[u8]) -> Option<UserInfo> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject.iter_common_name().next()?.as_str().ok()?.to_owned();
    let mut groups = Vec::new();
    let mut tenant = None;
    for org in subject.iter_organization().filter_map(|o| o.as_str().ok()) {
        match org.strip_prefix("tenant:") {
            Some(t) if tenant.as_deref().is_some_and(|known| known != t) => return None,
            Some(t) if !t.is_empty() => tenant = Some(t.to_owned()),
            _ => groups.push(org.to_owned()),
        }
    }
    Some(UserInfo::authenticated(name, String::new(), groups, tenant))
}

/// Static bearer tokens.
#[derive(Clone, Debug, Default)]
pub struct TokenFile {
    tokens: HashMap<String, UserInfo>,
}

#[derive(Debug, thiserror::Error)]
#[error("{path}: line {line}: {message}")]
pub struct TokenFileError {
    pub path: String,
    pub line: usize,
    pub message: String,
}

impl TokenFile {
    pub fn load(path: &Path) -> Result<TokenFile, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|err| TokenFileError {
            path: path.display().to_string(),
            line: 0,
            message: err.to_string(),
        })?;
        TokenFile::parse(&text).map_err(|(line, message)| TokenFileError { path: path.display().to_string(), line, message })
    }

    /// Parses the CSV: `token,user,uid[,"g1,g2"[,...,,tenant]]`; the tenant is the column after an empty one.
    pub fn parse(text: &str) -> Result<TokenFile, (usize, String)> {
        let mut tokens = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields = split_csv(line);
            if fields.len() < 3 || fields[0].is_empty() || fields[1].is_empty() {
                return Err((index + 1, "expected at least token,user,uid".to_owned()));
            }
            let groups = fields.get(3).map(|g| {
                g.split(',').map(str::trim).filter(|g| !g.is_empty()).map(str::to_owned).collect()
            }).unwrap_or_default();
            let tenant = fields
                .iter()
                .enumerate()
                .skip(4)
                .find(|(i, f)| !f.is_empty() && fields.get(i - 1).is_some_and(|prev| prev.is_empty()))
                .map(|(_, f)| f.clone());
            let user = UserInfo::authenticated(fields[1].clone(), fields[2].clone(), groups, tenant);
            tokens.insert(fields[0].clone(), user);
        }
        Ok(TokenFile { tokens })
    }

    pub fn authenticate(&self, token: &str) -> Option<&UserInfo> {
        self.tokens.get(token)
    }
}

/// Who a bearer token authenticates, and for which audiences.
#[derive(Clone, Debug)]
pub struct Authenticated {
    pub user: UserInfo,
    pub audiences: Vec<String>,
}

/// Authenticates bearer tokens: static tokens, and service-account tokens, whose ServiceAccount (and bound
/// object) are looked up in the store.
pub struct Authenticator {
    pub tokens: TokenFile,
    /// Signs and verifies service-account tokens.
    pub issuer: TokenIssuer,
    /// Verifies the ID tokens of the OIDC issuers the platform trusts.
    pub oidc: Arc<OidcAuthenticator>,
    /// `--authentication-token-webhook-config-file`: asked about a token none of the others accepts.
    pub webhook: Option<Arc<TokenWebhook>>,
    pub tenants: Arc<TenantCache>,
    /// Which tenant a nested workspace's logical cluster belongs to.
    pub tree: Arc<Tree>,
    pub reader: Reader,
    /// Where the accounts and bound objects are found (`serviceaccounts`, `pods`, `secrets`).
    pub resources: ResourceTable,
    /// The workspace types, and the tenants' own issuers they name (`oidc::workspace`).
    pub types: Arc<WorkspaceTypes>,
    pub workspace_issuers: Arc<WorkspaceIssuers>,
    /// `--requestheader-*`: who a front proxy's requests are for.
    pub request_header: Option<Arc<crate::filters::request_header::RequestHeader>>,
}

impl Authenticator {
    /// Authenticates a bearer token: the token file first, then service-account tokens, OIDC ID tokens, and last
    /// the token webhook (kube's union order). `audiences` defaults to the server's `--api-audiences`. The error is
    /// the reason, for a TokenReview's `status.error`.
    pub async fn bearer(&self, token: &str, audiences: Option<&[String]>) -> Result<Authenticated, String> {
        let refused = match self.local(token, audiences).await {
            Ok(authenticated) => return Ok(authenticated),
            Err(why) => why,
        };
        let Some(webhook) = self.webhook.as_ref().filter(|_| !token.is_empty()) else { return Err(refused) };
        let asked = audiences.map_or_else(|| self.issuer.api_audiences().to_vec(), <[String]>::to_vec);
        match webhook.authenticate(token, &asked).await {
            Ok((user, audiences)) => Ok(Authenticated { user, audiences }),
            Err(why) => Err(format!("{refused}; {why}")),
        }
    }

    /// The authenticators of this server's own: the token file, service-account tokens and OIDC.
    async fn local(&self, token: &str, audiences: Option<&[String]>) -> Result<Authenticated, String> {
        if let Some(user) = self.tokens.authenticate(token) {
            let audiences = audiences.map_or_else(|| self.issuer.api_audiences().to_vec(), <[String]>::to_vec);
            return Ok(Authenticated { user: user.clone(), audiences });
        }
        if let Some(user) = self.oidc.cached(token) {
            return Ok(Authenticated { user, audiences: self.audience_agnostic(audiences)? });
        }
        if !TokenIssuer::looks_like_jwt(token) {
            return Err("invalid bearer token".to_owned());
        }
        // A JWT naming one of the OIDC issuers is theirs to judge (as kube's JWT authenticators each judge only
        // their own issuer's tokens), unless that issuer is also the service accounts'.
        if let Some(oidc) = self.oidc.issuer_of(token).filter(|oidc| oidc.url != self.issuer.issuer()) {
            let audiences = self.audience_agnostic(audiences)?;
            let user = self.oidc.authenticate(&oidc, token).await?;
            return Ok(Authenticated { user, audiences });
        }
        let verified = self.issuer.verify(token, audiences).map_err(|err| err.to_string())?;
        let user = service_account_user(self, &verified).await?;
        Ok(Authenticated { user, audiences: verified.audiences })
    }

    /// A token no authenticator above accepted, tried against the tenants' own issuers of the workspace `path`
    /// names (`oidc::workspace`): `None` when none of them is the token's.
    pub async fn in_workspace(&self, token: &str, path: &SpacePath) -> Option<Result<UserInfo, String>> {
        let workspace = match path {
            SpacePath::Short => return None,
            SpacePath::Tenant(tenant) => self.tree.resolve(&format!("{ROOT}:{tenant}"))?,
            SpacePath::Workspace(path) if path.contains(':') => self.tree.resolve(path)?,
            SpacePath::Workspace(cluster) => self.tree.cluster(&SpaceName::new(cluster).ok()?)?,
        };
        self.workspace_issuers.authenticate(token, &workspace, &self.tree, &self.types).await
    }

    /// The audiences an OIDC token (whose `aud` is its issuer's client id, not the server's) is good for, as kube's
    /// audience-agnostic wrapper decides: the server's `--api-audiences`, or those of them a TokenReview asks for;
    /// none of them asked for is a refusal.
    fn audience_agnostic(&self, asked: Option<&[String]>) -> Result<Vec<String>, String> {
        let served = self.issuer.api_audiences();
        let Some(asked) = asked else { return Ok(served.to_vec()) };
        let both: Vec<String> = asked.iter().filter(|a| served.contains(a)).cloned().collect();
        match both.is_empty() {
            true => Err(format!("token audiences {served:?} is invalid for the target audiences {asked:?}")),
            false => Ok(both),
        }
    }

    /// The uid of a core/v1 object, if it exists.
    async fn uid_of(&self, scope: &Scope, plural: &str, name: &str) -> Option<String> {
        let resource = self.resources.lookup("", "v1", plural)?;
        let object = self.reader.get(resource, scope, name).await.ok()?;
        object.pointer("/metadata/uid").and_then(Value::as_str).map(str::to_owned)
    }
}

/// The identity of a verified service-account token, if its ServiceAccount (and bound object) still exist.
async fn service_account_user(auth: &Authenticator, token: &VerifiedToken) -> Result<UserInfo, String> {
    let account = &token.account;
    let invalid = |why: &str| format!("service account token is invalid: {why}");
    if auth.tenants.phase(&account.tenant).is_none() {
        return Err(invalid("unknown tenant"));
    }
    let space = match &account.cluster {
        // An account of a nested workspace: its logical cluster must still be one of its tenant's (a system
        // workspace, which the tree does not hold, is the system tenant's).
        Some(cluster) => SpaceName::new(cluster).ok()
            .filter(|space| auth.tree.cluster(space).is_some() || space.as_str().starts_with("system:"))
            .filter(|space| auth.tree.tenant_of(space) == account.tenant)
            .ok_or_else(|| invalid("unknown logical cluster"))?,
        None => tenancy::space_of(&account.tenant).map_err(|_| invalid("unknown tenant"))?,
    };
    let scope = Scope::one(space.clone(), Some(account.namespace.clone()));
    if auth.uid_of(&scope, "serviceaccounts", &account.name).await.as_deref() != Some(account.uid.as_str()) {
        return Err(invalid(&format!("the ServiceAccount {} no longer exists", account.name)));
    }
    if let Some(bound) = &token.bound {
        let plural = match bound.kind.as_str() {
            "Pod" => "pods",
            "Secret" => "secrets",
            _ => return Err(invalid(&format!("bound to an unsupported kind {}", bound.kind))),
        };
        if auth.uid_of(&scope, plural, &bound.name).await.as_deref() != Some(bound.uid.as_str()) {
            return Err(invalid(&format!("the {} {} it is bound to no longer exists", bound.kind, bound.name)));
        }
    }
    let groups = vec![SERVICE_ACCOUNTS.to_owned(), format!("{SERVICE_ACCOUNTS}:{}", account.namespace)];
    let name = format!("system:serviceaccount:{}:{}", account.namespace, account.name);
    let mut user = UserInfo::authenticated(name, account.uid.clone(), groups, Some(account.tenant.clone()));
    user.cluster = Some(space.as_str().to_owned());
    Ok(user)
}

/// Splits one CSV line, honouring double quotes.
fn split_csv(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(String::new()),
            c => fields.last_mut().map(|f| f.push(c)).unwrap_or_default(),
        }
    }
    fields.into_iter().map(|f| f.trim().to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_file_with_groups_and_tenant_column() {
        let file = TokenFile::parse(
            "# comment\nt0,root,0,\"system:masters\"\nt1,admin,1,\"g1,g2\",,tenant-a\nt2,bob,2\n",
        )
        .expect("parses");
        let admin = file.authenticate("t1").expect("known token");
        assert_eq!(admin.name, "admin");
        assert_eq!(admin.tenant.as_deref(), Some("tenant-a"));
        assert!(admin.in_group("g1") && admin.in_group("g2") && admin.in_group("system:authenticated"));
        assert_eq!(file.authenticate("t0").and_then(|u| u.tenant.clone()), None);
        assert_eq!(file.authenticate("t2").map(|u| u.name.as_str()), Some("bob"));
        assert!(file.authenticate("nope").is_none());
        assert!(TokenFile::parse("onlytoken\n").is_err());
    }
}
