//! kspaces authorization: who is asking (`UserInfo`) and what Kubernetes RBAC lets them do in a space. Pure: fed
//! identities and a space's RBAC objects as JSON, does no IO and no async.
//!
//! - `rbac`: rule semantics (`PolicyRule`, `Attributes`, `rule_allows`, `Subject`), exactly as kube-apiserver's.
//! - `policy`: `SpacePolicy`, one space's Roles and bindings indexed for fast decisions, with a decision cache.
//! - `escalation`: kube's `Covers` check, so nobody grants rules they do not hold.
//! - `aggregate`: `aggregationRule` label selectors, as the clusterrole-aggregation controller applies them.
//! - `bootstrap`: the ClusterRoles and ClusterRoleBindings every space starts with.
//!
//! `system:masters` is the server's shortcut, not this crate's: a policy only answers from its space's objects.

use std::collections::BTreeMap;

pub mod aggregate;
pub mod bootstrap;
pub mod escalation;
pub mod policy;
pub mod rbac;

/// Every authenticated identity is in this group.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The all-powerful group of the system space.
pub const MASTERS: &str = "system:masters";
/// The `extra` key that carries a user's tenant: read from the credentials that name one (OIDC claim mappings, a
/// token webhook's answer), and set to the caller's tenant wherever kspaces shows or sends a user.
pub const TENANT_EXTRA: &str = "kspaces.io/tenant";
/// kcp's synthetic groups: the initializing and terminating virtual workspaces add
/// `system:kcp:initializer:<initializer>` (or `terminator`) to a caller they have authorized. No credential may
/// claim them: `UserInfo::authenticated` drops them, as kcp's front proxy does.
pub const INITIALIZER_GROUP_PREFIX: &str = "system:kcp:initializer:";
pub const TERMINATOR_GROUP_PREFIX: &str = "system:kcp:terminator:";

/// True for a group only the server may give (`INITIALIZER_GROUP_PREFIX`, `TERMINATOR_GROUP_PREFIX`).
pub fn is_synthetic_group(group: &str) -> bool {
    group.starts_with(INITIALIZER_GROUP_PREFIX) || group.starts_with(TERMINATOR_GROUP_PREFIX)
}

/// An authenticated identity. Users are identified by (tenant, name): `admin` of t1 and of t2 differ.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    /// The tenant the credentials name, if any.
    pub tenant: Option<String>,
    /// A service account's space (logical cluster): it is that service account there only; in any other space
    /// it is judged as `foreign` says.
    pub cluster: Option<String>,
    /// What the authenticator adds (kube's `user.extra`): a token webhook's `status.user.extra`.
    pub extra: BTreeMap<String, Vec<String>>,
}

/// Who makes a request, as every stage after authentication sees it: the identity (impersonated, when
/// impersonating), the tenant it belongs to (the one its credentials name, else the server's rule), and whether
/// it is a user of the system tenant. Computed once per request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub user: UserInfo,
    /// The tenant short paths reach; `None` when the credentials name none and the server has no default.
    pub tenant: Option<String>,
    /// A user of the system tenant: may reach every space and the system-only resources.
    pub system: bool,
}

impl UserInfo {
    /// Adds `system:authenticated` (as kube-apiserver does for every authenticated user) and drops the synthetic
    /// groups (`is_synthetic_group`) whatever the credentials claim.
    pub fn authenticated(name: String, uid: String, mut groups: Vec<String>, tenant: Option<String>) -> UserInfo {
        groups.retain(|g| !is_synthetic_group(g));
        if !groups.iter().any(|g| g == AUTHENTICATED) {
            groups.push(AUTHENTICATED.to_owned());
        }
        UserInfo { name, uid, groups, tenant, cluster: None, extra: BTreeMap::new() }
    }

    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// Who this identity is when judged in `space`. A service account is itself only in its own space; in another
    /// (another workspace of its tenant) it is an authenticated user named after its home,
    /// `system:kspaces:foreign-serviceaccount:<cluster>:<namespace>:<name>`, with no service-account groups, so
    /// bindings of a same-named service account there do not apply to it.
    pub fn in_space(&self, space: &str) -> std::borrow::Cow<'_, UserInfo> {
        match self.cluster.as_deref() {
            Some(home) if home != space => {
                let account = self.name.strip_prefix("system:serviceaccount:").unwrap_or(&self.name);
                std::borrow::Cow::Owned(UserInfo {
                    name: format!("{FOREIGN_SERVICE_ACCOUNT}{home}:{account}"),
                    uid: self.uid.clone(),
                    groups: vec![AUTHENTICATED.to_owned()],
                    tenant: self.tenant.clone(),
                    cluster: None,
                    extra: BTreeMap::new(),
                })
            }
            _ => std::borrow::Cow::Borrowed(self),
        }
    }
}

/// The name prefix of a service account judged outside its own space (`UserInfo::in_space`).
pub const FOREIGN_SERVICE_ACCOUNT: &str = "system:kspaces:foreign-serviceaccount:";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_accounts_are_themselves_in_their_own_space_only() {
        let mut bot = UserInfo::authenticated("system:serviceaccount:ci:bot".into(), "u".into(),
            vec!["system:serviceaccounts".into(), "system:serviceaccounts:ci".into()], Some("t".into()));
        bot.cluster = Some("abc".into());
        assert_eq!(*bot.in_space("abc"), bot);
        let foreign = bot.in_space("xyz");
        assert_eq!(foreign.name, "system:kspaces:foreign-serviceaccount:abc:ci:bot");
        assert_eq!(foreign.groups, [AUTHENTICATED]);
        assert_eq!(foreign.tenant.as_deref(), Some("t"));
        let alice = UserInfo::authenticated("alice".into(), String::new(), vec![], Some("t".into()));
        assert_eq!(*alice.in_space("xyz"), alice, "users are the same everywhere");
    }

    #[test]
    fn authenticated_users_get_the_group_once() {
        let user = UserInfo::authenticated("a".into(), String::new(), vec![AUTHENTICATED.into(), MASTERS.into()], None);
        assert_eq!(user.groups.iter().filter(|g| *g == AUTHENTICATED).count(), 1);
        assert!(user.in_group(MASTERS));
    }

    #[test]
    fn no_credential_claims_a_synthetic_group() {
        let groups = vec!["system:kcp:initializer:root:org".into(), "dev".into(), "system:kcp:terminator:t:x".into(), "system:kcp:other".into()];
        let user = UserInfo::authenticated("a".into(), String::new(), groups, None);
        assert_eq!(user.groups, ["dev", "system:kcp:other", AUTHENTICATED]);
    }
}
