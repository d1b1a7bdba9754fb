//! Tenants' own issuers: kcp's `tenancy.kcp.io/v1alpha1 WorkspaceAuthenticationConfiguration`, a `jwt` list as in
//! kube's `AuthenticationConfiguration`, held in a workspace and named by a WorkspaceType of that workspace in
//! `spec.authenticationConfigurations`. A bearer JWT that none of the platform's authenticators accepts is tried
//! against the issuers of the workspace the request's path names, when its type (or a type it extends) names
//! configurations; short paths name no workspace, so such tokens need `/clusters/<path>` (as in kcp).
//!
//! kcp lets such a token be anyone. Here it is always a plain user of one tenant: the tenant of the workspace it
//! is used in, which must be the tenant holding the configuration (root's configurations may serve any tenant's
//! workspace, never root's own or a system workspace). A username starting with `system:` is refused, `system:`
//! groups are dropped, and the tenant its claims name, if any, is replaced.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use kspaces_authz::{UserInfo, TENANT_EXTRA};
use kspaces_storage::{Revision, SpaceName};
use serde_json::Value;

use super::config::parse_jwt_list;
use super::OidcAuthenticator;
use crate::registry::observe::{RevisionMap, WriteObserver};
use crate::registry::ResourceInfo;
use crate::tenancy::tree::Node;
use crate::tenancy::types::WorkspaceTypes;
use crate::tenancy::{Tree, SYSTEM};

pub const GROUP: &str = "tenancy.kcp.io";
pub const KIND: &str = "WorkspaceAuthenticationConfiguration";

/// Every space's WorkspaceAuthenticationConfigurations, each as an authenticator of its issuers (with its own
/// cache of verified tokens), built once per write of the configuration.
pub struct WorkspaceIssuers {
    configurations: RwLock<RevisionMap<(SpaceName, String), Arc<OidcAuthenticator>>>,
    /// How many configurations are held: none, and a failed token costs nothing more.
    held: AtomicUsize,
    /// Which addresses a space's issuers' documents may be fetched from (`--tenant-webhook-allowed-cidrs`, never
    /// the server itself): checked at each fetch, on the address connected to.
    reach: Reach,
}

/// Whether a space's issuer may be fetched from an address.
pub type Reach = Arc<dyn Fn(&SpaceName, SocketAddr) -> bool + Send + Sync>;

impl WorkspaceIssuers {
    pub fn new(reach: Reach) -> WorkspaceIssuers {
        WorkspaceIssuers { configurations: RwLock::default(), held: AtomicUsize::new(0), reach }
    }

    fn get(&self, space: &SpaceName, name: &str) -> Option<Arc<OidcAuthenticator>> {
        self.configurations.read().unwrap_or_else(|e| e.into_inner()).get(&(space.clone(), name.to_owned())).cloned()
    }

    /// The user `token` is in `workspace`, if an issuer of a configuration its type names accepts it: `None` when
    /// no such issuer is the token's, else the verdict of the one that is.
    pub async fn authenticate(&self, token: &str, workspace: &Node, tree: &Tree, types: &WorkspaceTypes) -> Option<Result<UserInfo, String>> {
        if self.held.load(Ordering::Acquire) == 0 || workspace.tenant == SYSTEM {
            return None;
        }
        let resolved = types.of_workspace(tree, workspace).ok()?;
        for (type_name, spec) in resolved.aliases.iter().filter(|(_, spec)| !spec.authentication.is_empty()) {
            let Some(holder) = tree.resolve(&type_name.path) else { continue };
            // Another tenant's configuration never admits anyone here.
            if holder.tenant != workspace.tenant && holder.tenant != SYSTEM {
                continue;
            }
            for name in &spec.authentication {
                let Some(configuration) = self.get(&holder.cluster, name) else { continue };
                let Some(issuer) = configuration.issuer_of(token) else { continue };
                let verdict = configuration.authenticate(&issuer, token).await;
                return Some(verdict.and_then(|user| confine(user, &workspace.tenant)));
            }
        }
        None
    }
}

/// A tenant issuer's user as kspaces admits it: of `tenant`, never a system user, in no `system:` group.
fn confine(user: UserInfo, tenant: &str) -> Result<UserInfo, String> {
    if user.name.starts_with("system:") {
        return Err(format!("a tenant's issuer may not name the user {:?}: system: users are the platform's", user.name));
    }
    let groups = user.groups.into_iter().filter(|group| !group.starts_with("system:")).collect();
    let mut confined = UserInfo::authenticated(user.name, user.uid, groups, Some(tenant.to_owned()));
    confined.extra = user.extra;
    confined.extra.remove(TENANT_EXTRA);
    Ok(confined)
}

impl WriteObserver for WorkspaceIssuers {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[(GROUP, KIND)]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        if !resource.is(GROUP, KIND) {
            return;
        }
        // A configuration stored before a rule it breaks existed keeps its valid issuers only.
        let authenticator = object.map(|object| {
            let list = object.pointer("/spec/jwt").cloned().unwrap_or(Value::Array(Vec::new()));
            let issuers = match parse_jwt_list(&list, "spec.jwt") {
                Ok(issuers) => issuers,
                Err(errors) => {
                    tracing::warn!(%space, name, errors = errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "), "a WorkspaceAuthenticationConfiguration is invalid: its issuers are not trusted");
                    Vec::new()
                }
            };
            let reaching = |issuer: super::Issuer| {
                let (reach, space) = (self.reach.clone(), space.clone());
                issuer.reaching(Arc::new(move |address| reach(&space, address)))
            };
            Arc::new(OidcAuthenticator::new(issuers.into_iter().map(reaching).collect()))
        });
        let mut configurations = self.configurations.write().unwrap_or_else(|e| e.into_inner());
        configurations.apply((space.clone(), name.to_owned()), authenticator, revision);
        self.held.store(configurations.iter().count(), Ordering::Release);
    }

    fn holds(&self, resource: &ResourceInfo) -> Vec<(SpaceName, String)> {
        if !resource.is(GROUP, KIND) {
            return Vec::new();
        }
        self.configurations.read().unwrap_or_else(|e| e.into_inner()).iter().map(|(key, _)| key.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_issuers_user_is_a_plain_user_of_the_tenant() {
        let mut user = UserInfo::authenticated("alice".into(), "1".into(), vec!["system:masters".into(), "dev".into(), "system:nodes".into()], Some("other".into()));
        user.extra.insert(TENANT_EXTRA.into(), vec!["other".into()]);
        user.extra.insert("corp.example/team".into(), vec!["blue".into()]);
        let confined = confine(user, "acme").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(confined.tenant.as_deref(), Some("acme"));
        assert_eq!(confined.extra.keys().collect::<Vec<_>>(), ["corp.example/team"], "the claims' tenant is not kept");
        assert_eq!(confined.groups, vec!["dev".to_owned(), "system:authenticated".to_owned()]);
        let admin = UserInfo::authenticated("system:admin".into(), String::new(), vec![], None);
        assert!(confine(admin, "acme").is_err());
        let account = UserInfo::authenticated("system:serviceaccount:default:x".into(), String::new(), vec![], None);
        assert!(confine(account, "acme").is_err());
    }
}
