//! Tenancy: which space a request reaches, who may reach it, and what a tenant space holds.
//!
//! Every object lives in one space. The system space is tenant `system`, also workspace `root`; tenant `t`'s
//! space is also workspace `root:t`. A request names its space by path (`/api/v1/tenants/<t>/...`,
//! `/clusters/root:<t>/...`) or, on a short path, by the caller's credentials. `resolve` turns that into the
//! space(s) the request covers, refusing with 403 anything outside the caller's own tenant unless the caller is
//! a system user. The rules are in `docs/tenancy.md`.

pub mod cache;
pub mod home;
pub mod placement;
pub mod space;
pub mod tree;
pub mod types;

use kspaces_authz::{Caller, UserInfo, MASTERS};
use kspaces_storage::SpaceName;

use crate::apis::request_info::SpacePath;
use crate::registry::{ResourceInfo, SpaceTenants, Spaces};
use crate::status::{ApiError, ApiResult};
pub use cache::{Phase, TenantCache};
pub use tree::Tree;

/// The system tenant (workspace `root`).
pub const SYSTEM: &str = "system";
/// `/api/v1/tenants/all/...`: every space, for system users' lists and watches.
pub const ALL: &str = "all";
/// The workspace path of the system space.
pub const ROOT: &str = "root";
/// Root's workspace of the system users' homes (`root:users`, type `homeroot`): no tenant, and no credential
/// may name it as one.
pub const HOME_ROOT: &str = "users";
/// The system workspace of the server's own objects (leases), for system users only.
pub const SYSTEM_ADMIN: &str = "system:admin";

/// The tenant a caller belongs to: the one their credentials name; else, for `system:masters`, the system
/// tenant; else the `--default-tenant`; else none.
pub fn home_tenant<'a>(user: &'a UserInfo, default_tenant: Option<&'a str>) -> Option<&'a str> {
    match user.tenant.as_deref() {
        Some(tenant) => Some(tenant),
        None if user.in_group(MASTERS) => Some(SYSTEM),
        None => default_tenant,
    }
}

/// Tenant names no credential may carry: `all` names every tenant, `users` is root's home root (no tenant).
pub const RESERVED_IN_CREDENTIALS: [&str; 2] = [ALL, HOME_ROOT];

/// Why `user`'s credentials are refused, if they name a reserved tenant or a home root of root (made under
/// another name by `--home-workspaces-root-prefix`).
pub fn reserved_tenant(user: &UserInfo, tree: &Tree) -> Option<String> {
    let tenant = user.tenant.as_deref()?;
    let home_root = || tree.resolve(&format!("{ROOT}:{tenant}")).is_some_and(|node| node.kind == tree::HOME_ROOT_TYPE);
    (RESERVED_IN_CREDENTIALS.contains(&tenant) || home_root()).then(|| format!("tenant {tenant:?} is reserved: no credential may name it"))
}

/// The caller a request's (authenticated, possibly impersonated) user is: its tenant, and whether it is a
/// system user (who may reach every space and the system-only resources).
pub fn caller(user: UserInfo, default_tenant: Option<&str>) -> Caller {
    let tenant = home_tenant(&user, default_tenant).map(str::to_owned);
    let system = tenant.as_deref() == Some(SYSTEM);
    Caller { user, tenant, system }
}

/// A space's tenant is the workspace directly under root at the top of its path.
impl SpaceTenants for Tree {
    fn tenant_of(&self, space: &SpaceName) -> String {
        Tree::tenant_of(self, space)
    }
}

/// What a path names, before access and existence are checked.
#[derive(Debug, PartialEq, Eq)]
enum Target<'a> {
    Tenant(&'a str),
    All,
    /// A nested workspace's path, `root:<tenant>:...`.
    Workspace { path: &'a str, tenant: &'a str },
    /// A logical cluster by name (`/clusters/<name>`).
    Cluster(&'a str),
    /// A system workspace, `system:<name>`.
    System(&'a str),
    /// Not a path.
    Invalid(&'a str),
}

/// `home`: the caller's tenant; `own_cluster`: a service account's logical cluster when it is not its tenant's
/// space (its short paths reach its workspace, as kcp's in-cluster rewrite does).
fn target<'a>(path: &'a SpacePath, home: Option<&'a str>, own_cluster: Option<&'a str>) -> Option<Target<'a>> {
    Some(match path {
        SpacePath::Short => match own_cluster {
            Some(cluster) => Target::Cluster(cluster),
            None => Target::Tenant(home?),
        },
        SpacePath::Tenant(t) if t == ALL => Target::All,
        SpacePath::Tenant(t) => Target::Tenant(t),
        SpacePath::Workspace(w) if w == ROOT => Target::Tenant(SYSTEM),
        SpacePath::Workspace(w) if w == "*" => Target::All,
        SpacePath::Workspace(w) if w.starts_with("system:") && w.len() > "system:".len() => Target::System(w),
        SpacePath::Workspace(w) => match w.strip_prefix("root:") {
            Some(t) if !t.contains(':') && t != SYSTEM && t != ALL => Target::Tenant(t),
            Some(rest) if !rest.is_empty() && rest.split(':').all(|s| !s.is_empty()) => {
                Target::Workspace { path: w, tenant: rest.split(':').next().unwrap_or_default() }
            }
            None if !w.is_empty() && !w.contains(':') => Target::Cluster(w),
            _ => Target::Invalid(w),
        },
    })
}

/// A request's view of a caller and the request, enough to decide where it goes.
pub struct Request<'a> {
    pub caller: &'a Caller,
    pub verb: &'a str,
    pub resource: &'a str,
    pub path: &'a SpacePath,
}

/// The space(s) a request reaches, or why it may not: 403 for anything outside a non-system caller's own
/// tenant (whether it exists or not, so nothing leaks), 404 for a space that does not exist. A nested
/// workspace belongs to the tenant at the top of its path.
pub fn resolve(request: &Request<'_>, tenants: &TenantCache, tree: &Tree) -> ApiResult<Spaces> {
    let home = request.caller.tenant.as_deref();
    let system_user = request.caller.system;
    let own_cluster = request.caller.user.cluster.as_deref()
        .filter(|cluster| home.and_then(|t| space_of(t).ok()).is_none_or(|space| space.as_str() != *cluster));
    let Some(target) = target(request.path, home, own_cluster) else {
        return Err(no_tenant(request));
    };
    let mine = |tenant: &str| system_user || Some(tenant) == home;
    match target {
        Target::All if system_user => Ok(Spaces::All),
        Target::Tenant(t) if mine(t) => match tenants.phase(t) {
            Some(_) => Ok(Spaces::One(space_of(t)?)),
            None => Err(ApiError::not_found("", "tenants", t)),
        },
        Target::Workspace { path, tenant } if mine(tenant) => match tree.resolve(path) {
            Some(node) if node.tenant == tenant => Ok(Spaces::One(node.cluster)),
            _ => Err(ApiError::not_found("tenancy.kcp.io", "workspaces", path)),
        },
        Target::Cluster(name) => match SpaceName::new(name).ok().and_then(|c| tree.cluster(&c)) {
            Some(node) if mine(&node.tenant) => Ok(Spaces::One(node.cluster)),
            None if system_user => Err(ApiError::not_found("core.kcp.io", "logicalclusters", name)),
            _ => Err(forbidden(request, &format!("workspace \"{name}\""))),
        },
        Target::System(name) if system_user => Ok(Spaces::One(SpaceName::new(name).map_err(|e| ApiError::bad_request(e.to_string()))?)),
        Target::Invalid(path) if system_user => Err(ApiError::not_found("tenancy.kcp.io", "workspaces", path)),
        Target::All => Err(forbidden(request, "all tenants")),
        Target::Tenant(t) => Err(forbidden(request, &format!("tenant \"{t}\""))),
        Target::Workspace { path, .. } | Target::System(path) | Target::Invalid(path) => {
            Err(forbidden(request, &format!("workspace \"{path}\"")))
        }
    }
}

/// The storage space of tenant `t`.
pub fn space_of(tenant: &str) -> ApiResult<SpaceName> {
    if tenant == SYSTEM {
        return Ok(SpaceName::system());
    }
    SpaceName::new(tenant).map_err(|_| ApiError::not_found("", "tenants", tenant))
}

/// The tenant of a space (one and the same name while spaces are tenants).
pub fn tenant_of(space: &SpaceName) -> &str {
    space.as_str()
}

/// The spaces a request for `resource` covers: system-only resources are for system users and live only in the
/// system space, whichever path form (`all` included) a system user reached them by.
pub fn check_resource(request: &Request<'_>, resource: &ResourceInfo, spaces: Spaces) -> ApiResult<Spaces> {
    if !resource.system_only {
        return Ok(spaces);
    }
    if !request.caller.system {
        return Err(ApiError::forbidden(format!(
            "{} is forbidden: User \"{}\" cannot {} resource \"{}\": it is reserved for the system tenant",
            qualified(resource), request.caller.user.name, request.verb, request.resource)));
    }
    match spaces {
        Spaces::One(space) if !space.is_system() => Err(ApiError::no_route()),
        _ => Ok(Spaces::One(SpaceName::system())),
    }
}

fn qualified(resource: &ResourceInfo) -> String {
    if resource.group.is_empty() { resource.plural.clone() } else { format!("{}.{}", resource.plural, resource.group) }
}

fn forbidden(request: &Request<'_>, what: &str) -> ApiError {
    ApiError::forbidden(format!(
        "{} is forbidden: User \"{}\" cannot {} resource \"{}\" in {what}: a user may only reach their own tenant",
        request.resource, request.caller.user.name, request.verb, request.resource))
}

fn no_tenant(request: &Request<'_>) -> ApiError {
    ApiError::forbidden(format!(
        "{} is forbidden: User \"{}\" cannot {} resource \"{}\": the user's credentials name no tenant \
         (a token file tenant column or a certificate O=tenant:<name>) and the server has no --default-tenant",
        request.resource, request.caller.user.name, request.verb, request.resource))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(tenant: Option<&str>, groups: &[&str]) -> UserInfo {
        UserInfo::authenticated("u".into(), String::new(), groups.iter().map(|g| g.to_string()).collect(), tenant.map(str::to_owned))
    }

    fn cache(tenants: &[&str]) -> TenantCache {
        let cache = TenantCache::default();
        for (i, t) in tenants.iter().enumerate() {
            cache.apply(t, Some(&serde_json::json!({"metadata": {"name": t}})), kspaces_storage::Revision(i as u64 + 1));
        }
        cache
    }

    fn outcome(result: ApiResult<Spaces>) -> String {
        match result {
            Ok(Spaces::One(space)) => space.to_string(),
            Ok(Spaces::All) => "*".into(),
            Err(err) => err.code.to_string(),
        }
    }

    /// t1 and t2 with nested workspaces: root:t1:team (c-team), root:t1:team:dev (c-dev), root:t2:ops (c-ops).
    fn tree() -> Tree {
        let tree = Tree::default();
        let edge = |cluster: &str| Some(tree::Edge {
            cluster: SpaceName::new(cluster).unwrap_or_else(|e| panic!("{e}")), kind: "root:universal".into(), phase: "Ready".into(), deleting: false,
        });
        let space = |name: &str| SpaceName::new(name).unwrap_or_else(|e| panic!("{e}"));
        for (i, (parent, name, cluster)) in [(SpaceName::system(), "t1", "t1"), (SpaceName::system(), "t2", "t2"),
            (space("t1"), "team", "c-team"), (space("c-team"), "dev", "c-dev"), (space("t2"), "ops", "c-ops")].into_iter().enumerate() {
            tree.apply(&parent, name, edge(cluster), kspaces_storage::Revision(i as u64 + 1));
        }
        tree
    }

    /// One row per (caller, path): where it lands, or the status code.
    #[test]
    fn resolution_table() {
        let tenants = cache(&["system", "t1", "t2", "dflt"]);
        let tree = tree();
        let admin_t1 = user(Some("t1"), &[]);
        let masters = user(None, &[MASTERS]);
        let system_admin = user(Some("system"), &[]);
        let nobody = user(None, &[]);
        let masters_of_t1 = user(Some("t1"), &[MASTERS]);
        let account = |cluster: &str| UserInfo { cluster: Some(cluster.into()), ..user(Some("t1"), &[]) };
        let (bot_of_t1, bot_of_team, bot_of_other) = (account("t1"), account("c-team"), account("c-ops"));
        let short = SpacePath::Short;
        let tenant = |t: &str| SpacePath::Tenant(t.into());
        let ws = |w: &str| SpacePath::Workspace(w.into());
        let rows: Vec<(&UserInfo, SpacePath, Option<&str>, &str)> = vec![
            (&admin_t1, short.clone(), None, "t1"),
            (&admin_t1, tenant("t1"), None, "t1"),
            (&admin_t1, ws("root:t1"), None, "t1"),
            (&admin_t1, tenant("t2"), None, "403"),
            (&admin_t1, tenant("missing"), None, "403"),
            (&admin_t1, tenant("system"), None, "403"),
            (&admin_t1, tenant("all"), None, "403"),
            (&admin_t1, ws("root"), None, "403"),
            (&admin_t1, ws("root:t2"), None, "403"),
            (&admin_t1, ws("*"), None, "403"),
            (&admin_t1, ws("root:t1:child"), None, "404"),
            (&admin_t1, ws("root:t2:child"), None, "403"),
            (&admin_t1, ws("root:t1:team"), None, "c-team"),
            (&admin_t1, ws("root:t1:team:dev"), None, "c-dev"),
            (&admin_t1, ws("root:t2:ops"), None, "403"),
            (&admin_t1, ws("c-team"), None, "c-team"),
            (&admin_t1, ws("t1"), None, "t1"),
            (&admin_t1, ws("c-ops"), None, "403"),
            (&admin_t1, ws("no-such-cluster"), None, "403"),
            (&admin_t1, ws("system:admin"), None, "403"),
            (&admin_t1, ws("root::x"), None, "403"),
            (&masters, ws("no-such-cluster"), None, "404"),
            (&masters, ws("root:t2:ops"), None, "c-ops"),
            (&masters, ws("system:admin"), None, "system:admin"),
            (&masters_of_t1, tenant("t2"), None, "403"),
            (&masters, short.clone(), None, "system"),
            (&masters, short.clone(), Some("dflt"), "system"),
            (&masters, tenant("t2"), None, "t2"),
            (&masters, tenant("missing"), None, "404"),
            (&masters, tenant("all"), None, "*"),
            (&masters, ws("root"), None, "system"),
            (&masters, ws("root:t1"), None, "t1"),
            (&masters, ws("root:system"), None, "404"),
            (&system_admin, short.clone(), None, "system"),
            (&nobody, short.clone(), None, "403"),
            (&nobody, short.clone(), Some("dflt"), "dflt"),
            (&nobody, tenant("t1"), Some("dflt"), "403"),
            (&bot_of_t1, short.clone(), None, "t1"),
            (&bot_of_team, short.clone(), None, "c-team"),
            (&bot_of_team, ws("root:t1"), None, "t1"),
            (&bot_of_team, ws("root:t1:team:dev"), None, "c-dev"),
            (&bot_of_other, short.clone(), None, "403"),
        ];
        for (who, path, default, expected) in rows {
            let caller = caller(who.clone(), default);
            let request = Request { caller: &caller, verb: "list", resource: "configmaps", path: &path };
            let got = outcome(resolve(&request, &tenants, &tree));
            assert_eq!(got, expected, "{who:?} {path:?} default {default:?}");
        }
    }

    #[test]
    fn denials_do_not_say_whether_a_tenant_exists() {
        let tenants = cache(&["system", "t1", "t2"]);
        let admin = caller(user(Some("t1"), &[]), None);
        let message = |t: &str| {
            let path = SpacePath::Tenant(t.into());
            let err = resolve(&Request { caller: &admin, verb: "get", resource: "pods", path: &path }, &tenants, &Tree::default()).err();
            err.map(|e| e.message.replace(t, "T")).unwrap_or_default()
        };
        assert_eq!(message("t2"), message("nonexistent"));
    }

    #[test]
    fn no_tenant_message_names_the_fix() {
        let nobody = caller(user(None, &[]), None);
        let path = SpacePath::Short;
        let err = resolve(&Request { caller: &nobody, verb: "list", resource: "pods", path: &path }, &cache(&["system"]), &Tree::default()).err();
        let message = err.map(|e| e.message).unwrap_or_default();
        assert!(message.contains("credentials name no tenant"), "{message}");
    }
}
