//! Authorization: `--authorization-mode` (RBAC, Webhook, AlwaysAllow) over one RBAC policy per space; the webhook
//! is `webhook`.
//!
//! Each space's Roles, ClusterRoles and bindings are read into a `kspaces_authz::policy::SpacePolicy` the first
//! time a request needs them and kept until one of them is written: the registry tells this module of every
//! committed RBAC write (`WriteObserver`) before the write is acknowledged, and the space's policy (decision cache
//! included) is dropped and read again on next use. A load that overlaps a write is used once but not kept.
//!
//! Whose rules decide (docs/authorization.md):
//! - a tenant user: their own space's bindings (tenancy already refused every other space);
//! - a system user: `system:masters` may do anything anywhere; otherwise the system space's ClusterRoleBindings,
//!   which reach into tenant spaces (the platform's own administrators), but never the system space's
//!   RoleBindings (a RoleBinding in the system space's `default` says nothing about a tenant's `default`); in a
//!   nested or system workspace, that workspace's own bindings may allow too (a system user's home names its
//!   owner there).
//!
//! Maximal permission policy (kcp's, `docs/api-exports.md`): a request for a resource bound from an APIExport with
//! `spec.maximalPermissionPolicy.local` must also be allowed by the RBAC of the export's workspace, to the caller
//! with its name and groups prefixed `apis.kcp.io:binding:`. The authorizer follows exports for it.
//!
//! A service account is itself only in its own space; in another workspace of its tenant it is judged as an
//! ordinary authenticated user (`UserInfo::in_space`), so a binding for a same-named account there is not its.

pub mod webhook;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use kspaces_authz::policy::{Decision, SpacePolicy};
use kspaces_authz::rbac::{Attributes, PolicyRule};
use kspaces_authz::{Caller, UserInfo, MASTERS};
use kspaces_storage::{Revision, SpaceName};
use serde_json::Value;

use crate::config::AuthorizationMode;
use crate::apis::request_info::RequestInfo;
use crate::registry::observe::{RevisionMap, WriteObserver};
use crate::registry::{Reader, ResourceInfo, ResourceTable, Scope};
use crate::status::{ApiError, ApiResult};
use crate::tenancy;

/// Who `caller` is to the bindings that judge it in `space`: a service account outside its own space is not
/// itself (`UserInfo::in_space`). The system's users are judged by the system space's bindings wherever they go.
fn subject<'a>(caller: &'a Caller, space: &SpaceName) -> std::borrow::Cow<'a, UserInfo> {
    let judged_in = if caller.system { SpaceName::system() } else { space.clone() };
    caller.user.in_space(judged_in.as_str())
}

/// The RBAC API group.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The kinds a space's policy is built from.
pub const RBAC_KINDS: [&str; 4] = ["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"];

/// True for Roles, ClusterRoles and their bindings.
pub fn is_rbac(resource: &ResourceInfo) -> bool {
    resource.group == RBAC_GROUP && RBAC_KINDS.contains(&resource.kind.as_str())
}

#[derive(Default)]
struct Slot {
    /// Bumped by every RBAC write to the space.
    generation: u64,
    policy: Option<Arc<SpacePolicy>>,
}

/// Where a space's policy is read from: the store, the RBAC resources' rows, and the workspace tree (which spaces
/// are nested workspaces).
pub struct PolicySource {
    pub reader: Reader,
    pub rbac: Vec<Arc<ResourceInfo>>,
    pub tree: Arc<tenancy::Tree>,
}

impl PolicySource {
    /// The RBAC rows of `resources`.
    pub fn new(reader: Reader, resources: &ResourceTable, tree: Arc<tenancy::Tree>) -> PolicySource {
        let rbac = RBAC_KINDS.iter().filter_map(|kind| resources.by_kind(RBAC_GROUP, kind).cloned()).collect();
        PolicySource { reader, rbac, tree }
    }

    /// Whether `space` holds Kubernetes' bootstrap roles itself (root and the tenants) or reads them from the
    /// bootstrap set (nested and system workspaces, which start lean).
    fn lean(&self, space: &SpaceName) -> bool {
        space.as_str().starts_with("system:") || self.tree.cluster(space).is_some_and(|node| node.path.matches(':').count() > 1)
    }

    /// Reads every Role, ClusterRole, RoleBinding and ClusterRoleBinding of `space` (in a lean space, after the
    /// bootstrap set: a stored object of the same kind and name replaces its bootstrap one).
    async fn load(&self, space: &SpaceName) -> ApiResult<SpacePolicy> {
        let mut objects = Vec::new();
        let scope = Scope::one(space.clone(), None);
        for resource in &self.rbac {
            self.reader.visit(resource, &scope, 1000, |_, object| objects.push(object)).await?;
        }
        if self.lean(space) {
            let key = |o: &Value| (o.get("kind").cloned(), o.pointer("/metadata/name").cloned());
            let stored: std::collections::HashSet<_> = objects.iter().map(key).collect();
            let bootstrap = kspaces_authz::bootstrap::bootstrap_objects(false).into_iter().filter(|o| !stored.contains(&key(o)));
            objects.extend(bootstrap);
        }
        let policy = SpacePolicy::new(&objects);
        if policy.skipped() > 0 {
            tracing::warn!(space = %space, skipped = policy.skipped(), "RBAC objects that could not be read were ignored");
        }
        Ok(policy)
    }
}

/// The authorizer chain and the per-space policies.
pub struct Authorizer {
    modes: Vec<AuthorizationMode>,
    source: PolicySource,
    spaces: RwLock<HashMap<SpaceName, Slot>>,
    /// The identity hash of every APIExport with a local maximal permission policy, by (space, export).
    bounded: RwLock<RevisionMap<(SpaceName, String), String>>,
    /// `--authorization-webhook-config-file`, asked by the `Webhook` mode.
    webhook: OnceLock<Arc<webhook::AuthorizationWebhook>>,
}

/// The prefix of the user and groups a maximal permission policy judges (kcp's
/// `MaximalPermissionPolicyRBACUserGroupPrefix`).
pub const BINDING_PREFIX: &str = "apis.kcp.io:binding:";

impl Authorizer {
    pub fn new(modes: Vec<AuthorizationMode>, source: PolicySource) -> Authorizer {
        Authorizer { modes, source, spaces: RwLock::new(HashMap::new()), bounded: RwLock::default(), webhook: OnceLock::new() }
    }

    /// The webhook the `Webhook` mode asks (set once, at startup).
    pub fn set_webhook(&self, webhook: Arc<webhook::AuthorizationWebhook>) {
        let _ = self.webhook.set(webhook);
    }

    /// The maximal permission policy's verdict on a request for a resource bound under `identity` (`None`: no
    /// export with that identity bounds it): RBAC of the export's workspace, asked for the caller prefixed with
    /// `apis.kcp.io:binding:`.
    pub async fn maximal_permission(&self, caller: &Caller, identity: &str, attributes: &Attributes) -> ApiResult<Option<Decision>> {
        let space = {
            let bounded = self.bounded.read().unwrap_or_else(|e| e.into_inner());
            let found = bounded.iter().find(|(_, hash)| hash.as_str() == identity).map(|((space, _), _)| space.clone());
            found
        };
        let Some(space) = space else { return Ok(None) };
        let mut user = caller.user.clone();
        user.name = format!("{BINDING_PREFIX}{}", user.name);
        user.groups = user.groups.iter().map(|g| format!("{BINDING_PREFIX}{g}")).collect();
        user.cluster = None;
        let prefixed = Caller { user, tenant: None, system: false };
        // kcp's policy is the export workspace's RBAC: the webhook is not asked about the prefixed caller.
        self.decide(&prefixed, &space, attributes, "", false).await.map(Some)
    }

    /// True if some mode evaluates RBAC (reviews and escalation checks then mean something).
    pub fn rbac(&self) -> bool {
        self.modes.contains(&AuthorizationMode::Rbac)
    }

    /// Decides whether `caller` may do `attributes` in `space`, asking each mode in order.
    pub async fn authorize(&self, caller: &Caller, space: &SpaceName, attributes: &Attributes) -> ApiResult<Decision> {
        self.authorize_version(caller, space, attributes, "").await
    }

    /// `authorize`, for a request that names the API version (which a webhook is told).
    pub async fn authorize_version(&self, caller: &Caller, space: &SpaceName, attributes: &Attributes, version: &str) -> ApiResult<Decision> {
        self.decide(caller, space, attributes, version, true).await
    }

    /// Each mode in order (the `Webhook` mode only when `ask_webhook`).
    async fn decide(&self, caller: &Caller, space: &SpaceName, attributes: &Attributes, version: &str, ask_webhook: bool) -> ApiResult<Decision> {
        let mut refusal = String::new();
        for mode in &self.modes {
            let decision = match mode {
                AuthorizationMode::AlwaysAllow => Decision { allowed: true, reason: String::new() },
                AuthorizationMode::Rbac => self.judge(caller, space).await?.decide(&subject(caller, space), attributes),
                AuthorizationMode::Webhook => {
                    let Some(webhook) = self.webhook.get().filter(|_| ask_webhook) else { continue };
                    let path = self.source.tree.cluster(space).map(|node| node.path);
                    let question = webhook::Question { user: &caller.user, tenant: caller.tenant.as_deref(),
                        space: path.as_deref().unwrap_or(space.as_str()), attributes, version };
                    let verdict = webhook.authorize(&question).await;
                    if verdict.denied {
                        return Ok(Decision { allowed: false, reason: verdict.reason });
                    }
                    if !verdict.allowed && !verdict.reason.is_empty() {
                        refusal = verdict.reason.clone();
                    }
                    Decision { allowed: verdict.allowed, reason: verdict.reason }
                }
            };
            if decision.allowed {
                return Ok(decision);
            }
        }
        Ok(Decision { allowed: false, reason: refusal })
    }

    /// The rules `caller` holds for `namespace` of `space`, as SelfSubjectRulesReview sees them. `None` means
    /// everything (`system:masters`, or no RBAC mode).
    pub async fn rules_for(&self, caller: &Caller, space: &SpaceName, namespace: Option<&str>) -> ApiResult<Option<Vec<PolicyRule>>> {
        if !self.rbac() {
            return Ok(None);
        }
        Ok(self.judge(caller, space).await?.rules_for(&subject(caller, space), namespace))
    }

    /// Whose bindings judge `caller` in `space` (the table in the module doc).
    pub async fn judge(&self, caller: &Caller, space: &SpaceName) -> ApiResult<Judge> {
        if !caller.system {
            return Ok(Judge { policy: Some(self.policy(space).await?), tenant: None, own: None });
        }
        if caller.user.in_group(MASTERS) {
            return Ok(Judge { policy: None, tenant: None, own: None });
        }
        let tenant = (!space.is_system()).then(|| self.source.tree.tenant_of(space));
        // A nested or system workspace's own bindings name system users too (a system user's home names its
        // owner); a tenant's space keeps them for its own users.
        let own = match self.source.lean(space) {
            true => Some((self.policy(space).await?, space.clone())),
            false => None,
        };
        Ok(Judge { policy: Some(self.policy(&SpaceName::system()).await?), tenant, own })
    }

    /// The policy of `space`, read from storage if it is not held.
    pub async fn policy(&self, space: &SpaceName) -> ApiResult<Arc<SpacePolicy>> {
        if let Some(Slot { policy: Some(policy), .. }) = self.spaces.read().unwrap_or_else(|e| e.into_inner()).get(space) {
            return Ok(policy.clone());
        }
        // The slot exists before the read starts, so a write during the read bumps its generation.
        let generation = self.spaces.write().unwrap_or_else(|e| e.into_inner()).entry(space.clone()).or_default().generation;
        let policy = Arc::new(self.source.load(space).await?);
        let mut spaces = self.spaces.write().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = spaces.get_mut(space).filter(|slot| slot.generation == generation) {
            slot.policy = Some(policy.clone());
        }
        Ok(policy)
    }

    /// Forgets `space`'s policy (its RBAC objects changed, or the space is gone). Spaces never read cost nothing.
    pub fn invalidate(&self, space: &SpaceName) {
        let mut spaces = self.spaces.write().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = spaces.get_mut(space) {
            slot.generation += 1;
            slot.policy = None;
        }
    }

    /// How many spaces' policies are held (for tests and metrics).
    pub fn loaded(&self) -> usize {
        self.spaces.read().unwrap_or_else(|e| e.into_inner()).values().filter(|s| s.policy.is_some()).count()
    }
}

impl WriteObserver for Authorizer {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[("apis.kcp.io", "APIExport")]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        if resource.is("apis.kcp.io", "APIExport") {
            let bounded = object.filter(|export| export.pointer("/spec/maximalPermissionPolicy/local").is_some_and(|l| !l.is_null()))
                .and_then(|export| export.pointer("/status/identityHash").and_then(Value::as_str))
                .filter(|hash| !hash.is_empty())
                .map(str::to_owned);
            let mut map = self.bounded.write().unwrap_or_else(|e| e.into_inner());
            map.apply((space.clone(), name.to_owned()), bounded, revision);
        } else if is_rbac(resource) {
            self.invalidate(space);
        } else if resource.is("", "Tenant") {
            // A tenant deleted and made again must not see the old space's policy.
            if let Ok(space) = tenancy::space_of(name) {
                self.invalidate(&space);
            }
        }
    }

    fn holds(&self, resource: &ResourceInfo) -> Vec<(SpaceName, String)> {
        match resource.is("apis.kcp.io", "APIExport") {
            true => self.bounded.read().unwrap_or_else(|e| e.into_inner()).keys().cloned().collect(),
            false => Vec::new(),
        }
    }

    /// RBAC objects written while this process could not hear of them may have changed any space's policy.
    fn resync(&self) {
        let mut spaces = self.spaces.write().unwrap_or_else(|e| e.into_inner());
        for slot in spaces.values_mut() {
            slot.generation += 1;
            slot.policy = None;
        }
    }
}

/// The attributes of a parsed request. A namespace's own requests (`GET /api/v1/namespaces/dev`) are in that
/// namespace, as kube's RequestInfo has it, so a RoleBinding in `dev` may grant reading `dev` itself; a list of
/// namespaces whose field selector names `dev` is not (kube's has no namespace then either).
pub fn attributes(info: &RequestInfo) -> Attributes {
    if !info.is_resource {
        return Attributes::NonResource { verb: info.verb.clone(), path: info.path.clone() };
    }
    let namespace = match &info.namespace {
        None if info.resource == "namespaces" && !info.name.is_empty() && !info.name_from_field_selector => Some(info.name.clone()),
        other => other.clone(),
    };
    Attributes::Resource {
        verb: info.verb.clone(),
        group: info.group.clone(),
        resource: info.resource.clone(),
        subresource: info.subresource.clone(),
        name: info.name.clone(),
        namespace,
    }
}

/// kube-apiserver's 403: `pods "p" is forbidden: User "u" cannot get resource "pods" in API group "" in the
/// namespace "ns"`, `... at the cluster scope`, or `forbidden: User "u" cannot get path "/metrics"`.
pub fn forbidden(user: &UserInfo, attributes: &Attributes, reason: &str) -> ApiError {
    let suffix = if reason.is_empty() { String::new() } else { format!(": {reason}") };
    match attributes {
        Attributes::NonResource { verb, path } => {
            ApiError::forbidden(format!("forbidden: User \"{}\" cannot {verb} path \"{path}\"{suffix}", user.name))
        }
        Attributes::Resource { verb, group, resource, subresource, name, namespace } => {
            let what = if subresource.is_empty() { resource.clone() } else { format!("{resource}/{subresource}") };
            let place = match namespace {
                Some(namespace) => format!("in the namespace \"{namespace}\""),
                None => "at the cluster scope".to_owned(),
            };
            let why = format!("User \"{}\" cannot {verb} resource \"{what}\" in API group \"{group}\" {place}{suffix}", user.name);
            ApiError::forbidden_object(group, resource, name, &why)
        }
    }
}

/// The RBAC policy that judges one user in one space, loaded, so decisions and rules are synchronous (an escalation
/// check runs on every attempt of a patch's read-modify-write loop).
pub struct Judge {
    /// `None`: unrestricted (`system:masters` of the system tenant).
    policy: Option<Arc<SpacePolicy>>,
    /// Set when a system user is judged in tenant space `tenant`: namespaced requests get a namespace no
    /// RoleBinding can have (`<tenant>/<ns>`), so only the system space's ClusterRoleBindings apply.
    tenant: Option<String>,
    /// For a system user in a nested or system workspace: that workspace's own policy, which may also allow.
    own: Option<(Arc<SpacePolicy>, SpaceName)>,
}

impl Judge {
    /// True if nothing is refused.
    pub fn unrestricted(&self) -> bool {
        self.policy.is_none()
    }

    fn namespace(&self, namespace: Option<&str>) -> Option<String> {
        namespace.map(|ns| match &self.tenant {
            Some(tenant) => format!("{tenant}/{ns}"),
            None => ns.to_owned(),
        })
    }

    pub fn decide(&self, user: &UserInfo, attributes: &Attributes) -> Decision {
        let Some(policy) = &self.policy else { return Decision { allowed: true, reason: String::new() } };
        if let Some((own, space)) = &self.own {
            let decision = own.decide(&user.in_space(space.as_str()), attributes);
            if decision.allowed {
                return decision;
            }
        }
        match attributes {
            Attributes::Resource { verb, group, resource, subresource, name, namespace } if self.tenant.is_some() => {
                policy.decide(user, &Attributes::Resource {
                    verb: verb.clone(),
                    group: group.clone(),
                    resource: resource.clone(),
                    subresource: subresource.clone(),
                    name: name.clone(),
                    namespace: self.namespace(namespace.as_deref()),
                })
            }
            _ => policy.decide(user, attributes),
        }
    }

    /// The rules `user` holds for `namespace`; `None` means everything.
    pub fn rules_for(&self, user: &UserInfo, namespace: Option<&str>) -> Option<Vec<PolicyRule>> {
        let mut rules = self.policy.as_ref().map(|policy| policy.rules_for(user, self.namespace(namespace).as_deref()))?;
        if let Some((own, space)) = &self.own {
            rules.extend(own.rules_for(&user.in_space(space.as_str()), namespace));
        }
        Some(rules)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_users_in_tenant_spaces_are_judged_by_cluster_bindings_only() {
        let binding = |kind: &str, namespace: Option<&str>| serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
            "metadata": {"name": "ops-view", "namespace": namespace},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "reader"},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "User", "name": "ops"}],
        });
        let reader = serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        });
        let ops = UserInfo::authenticated("ops".into(), String::new(), vec![], Some("system".into()));
        let get = Attributes::Resource {
            verb: "get".into(), group: String::new(), resource: "pods".into(), subresource: String::new(),
            name: "p".into(), namespace: Some("default".into()),
        };
        let judge = |objects: &[serde_json::Value], tenant: Option<&str>| {
            Judge { policy: Some(Arc::new(SpacePolicy::new(objects))), tenant: tenant.map(str::to_owned), own: None }
        };
        let role_binding = [reader.clone(), binding("RoleBinding", Some("default"))];
        assert!(judge(&role_binding, None).decide(&ops, &get).allowed, "in the system space itself");
        assert!(!judge(&role_binding, Some("t1")).decide(&ops, &get).allowed, "the system space's RoleBinding in default is not t1's default");
        assert_eq!(judge(&role_binding, Some("t1")).rules_for(&ops, Some("default")), Some(vec![]));
        let cluster_binding = [reader, binding("ClusterRoleBinding", None)];
        assert!(judge(&cluster_binding, Some("t1")).decide(&ops, &get).allowed, "a ClusterRoleBinding reaches every space");
        assert!(Judge { policy: None, tenant: None, own: None }.decide(&ops, &get).allowed);
    }

    fn info(method: &str, path: &str) -> RequestInfo {
        crate::apis::request_info::parse(method, path, "")
    }

    #[test]
    fn forbidden_messages_have_kube_apiserver_shape() {
        let alice = UserInfo::authenticated("alice".into(), String::new(), vec![], Some("t1".into()));
        let message = |method: &str, path: &str| forbidden(&alice, &attributes(&info(method, path)), "").message;
        assert_eq!(message("GET", "/api/v1/namespaces/dev/pods"),
            r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "dev""#);
        assert_eq!(message("GET", "/apis/apps/v1/namespaces/dev/deployments/web/scale"),
            r#"deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments/scale" in API group "apps" in the namespace "dev""#);
        assert_eq!(message("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterroles/x"),
            r#"clusterroles.rbac.authorization.k8s.io "x" is forbidden: User "alice" cannot delete resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope"#);
        assert_eq!(message("GET", "/api/v1/namespaces/dev"),
            r#"namespaces "dev" is forbidden: User "alice" cannot get resource "namespaces" in API group "" in the namespace "dev""#);
        assert_eq!(message("GET", "/metrics"), r#"forbidden: User "alice" cannot get path "/metrics""#);
        let err = forbidden(&alice, &attributes(&info("GET", "/api/v1/namespaces/dev/pods/p")), "");
        let details = err.details.expect("details");
        assert_eq!((details.kind.as_deref(), details.name.as_deref(), err.code, err.reason), (Some("pods"), Some("p"), 403, "Forbidden"));
    }
}
