//! kspaces authorization vocabulary: who is asking, and Kubernetes RBAC rule semantics (`rbac`). Pure: fed
//! identities and policy objects, does no IO.
//!
//! The server does not enforce RBAC yet (the authorization issue wires `rbac` in behind a per-space, cached
//! evaluator); until then it allows every authenticated request that tenancy lets through.

pub mod rbac;

/// Every authenticated identity is in this group.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The all-powerful group of the system space.
pub const MASTERS: &str = "system:masters";

/// An authenticated identity. Users are identified by (tenant, name): `admin` of t1 and of t2 differ.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    /// The tenant the credentials name, if any.
    pub tenant: Option<String>,
}

impl UserInfo {
    /// Adds `system:authenticated` (as kube-apiserver does for every authenticated user).
    pub fn authenticated(name: String, uid: String, mut groups: Vec<String>, tenant: Option<String>) -> UserInfo {
        if !groups.iter().any(|g| g == AUTHENTICATED) {
            groups.push(AUTHENTICATED.to_owned());
        }
        UserInfo { name, uid, groups, tenant }
    }

    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authenticated_users_get_the_group_once() {
        let user = UserInfo::authenticated("a".into(), String::new(), vec![AUTHENTICATED.into(), MASTERS.into()], None);
        assert_eq!(user.groups.iter().filter(|g| *g == AUTHENTICATED).count(), 1);
        assert!(user.in_group(MASTERS));
    }
}
