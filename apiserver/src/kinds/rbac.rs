//! The RBAC kinds (Role, ClusterRole, RoleBinding, ClusterRoleBinding).
//!
//! Admission: escalation prevention, as kube-apiserver's RBAC storage does it: a user may create or change a Role
//! or ClusterRole only with rules they already hold (or the `escalate` verb on it), and bind a role only if they
//! hold all its rules (or the `bind` verb on it). An `aggregationRule` needs `escalate` (it can pull in any rule).
//! `roleRef` never changes. The server's own writes (bootstrap roles, aggregation) are not checked.

use std::sync::Arc;

use async_trait::async_trait;
use kspaces_authz::escalation::{escalation_message, uncovered};
use kspaces_authz::policy::{RoleRef, SpacePolicy};
use kspaces_authz::rbac::{Attributes, PolicyRule};
use kspaces_authz::{Caller, UserInfo};
use kspaces_storage::SpaceName;
use serde_json::Value;

use crate::authorization::{is_rbac, Authorizer, Judge, RBAC_GROUP};
use super::{Context, Kind, Rules};
use crate::registry::admission::{self, Admission, Operation};
use crate::registry::strategy::Strategy;
use crate::registry::{GenericStore, ResourceInfo};
use crate::status::{ApiError, ApiResult, Cause};

/// The RBAC kinds: escalation prevention on their writes.
pub const KIND: Kind = Kind::rules(|context: &Context, rules: &mut Rules| {
    rules.strategy(RBAC_GROUP, "Role", Arc::new(RoleStrategy { namespaced: true }));
    rules.strategy(RBAC_GROUP, "ClusterRole", Arc::new(RoleStrategy { namespaced: false }));
    rules.admit(Arc::new(RbacEscalation { authorizer: context.authorizer.clone() }));
});

/// Roles and ClusterRoles: kube's `ValidatePolicyRule` (`roles.rs`).
pub struct RoleStrategy {
    namespaced: bool,
}

impl Strategy for RoleStrategy {
    fn validate(&self, _resource: &ResourceInfo, object: &Value, _old: Option<&Value>, causes: &mut Vec<Cause>) {
        super::roles::check(object, self.namespaced, causes);
    }
}

/// What one user may grant in one space, loaded once per request so the check itself is synchronous (a patch
/// runs it on every attempt of its read-modify-write loop).
pub struct Escalation {
    user: UserInfo,
    /// Whose bindings give the user their rights; `None` without RBAC (anything may be granted).
    judge: Option<Judge>,
    /// The policy of the space written to (where a binding's role is looked up).
    target: Option<Arc<SpacePolicy>>,
}

impl Escalation {
    pub async fn load(authorizer: &Authorizer, caller: &Caller, space: &SpaceName) -> ApiResult<Escalation> {
        let judge = match authorizer.rbac() {
            true => Some(authorizer.judge(caller, space).await?),
            false => None,
        };
        let unrestricted = judge.as_ref().is_none_or(Judge::unrestricted);
        let target = if unrestricted { None } else { Some(authorizer.policy(space).await?) };
        Ok(Escalation { user: caller.user.clone(), judge, target })
    }

    fn unrestricted(&self) -> bool {
        self.judge.as_ref().is_none_or(Judge::unrestricted)
    }

    fn may(&self, verb: &str, resource: &str, name: &str, namespace: Option<&str>) -> bool {
        let Some(judge) = &self.judge else { return true };
        let attributes = Attributes::Resource {
            verb: verb.into(),
            group: RBAC_GROUP.into(),
            resource: resource.into(),
            subresource: String::new(),
            name: name.into(),
            namespace: namespace.map(str::to_owned),
        };
        judge.decide(&self.user, &attributes).allowed
    }

    fn held(&self, namespace: Option<&str>) -> Vec<PolicyRule> {
        self.judge.as_ref().and_then(|judge| judge.rules_for(&self.user, namespace)).unwrap_or_default()
    }

    /// Checks a create (`old` None) or update of a Role, ClusterRole, RoleBinding or ClusterRoleBinding.
    pub fn check(&self, resource: &ResourceInfo, namespace: Option<&str>, new: &Value, old: Option<&Value>) -> ApiResult<()> {
        let name = new.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        match resource.kind.as_str() {
            "Role" | "ClusterRole" => self.check_role(resource, namespace, name, new, old),
            "RoleBinding" | "ClusterRoleBinding" => self.check_binding(resource, namespace, name, new, old),
            _ => Ok(()),
        }
    }

    fn check_role(&self, resource: &ResourceInfo, namespace: Option<&str>, name: &str, new: &Value, old: Option<&Value>) -> ApiResult<()> {
        if self.unrestricted() || self.may("escalate", &resource.plural, name, namespace) {
            return Ok(());
        }
        let aggregates = |role: Option<&Value>| role.is_some_and(|r| r.get("aggregationRule").is_some_and(|a| !a.is_null()));
        if aggregates(Some(new)) || aggregates(old) {
            return Err(ApiError::forbidden_object(RBAC_GROUP, &resource.plural, name,
                "must have cluster-admin privileges to use an aggregationRule (the escalate verb on this role)"));
        }
        let rules = rules_of(new);
        let missing = uncovered(&self.held(namespace), &rules);
        if missing.is_empty() {
            return Ok(());
        }
        Err(ApiError::forbidden_object(RBAC_GROUP, &resource.plural, name, &escalation_message(&self.user, namespace, &missing)))
    }

    fn check_binding(&self, resource: &ResourceInfo, namespace: Option<&str>, name: &str, new: &Value, old: Option<&Value>) -> ApiResult<()> {
        if let Some(old) = old {
            if old.get("roleRef") != new.get("roleRef") {
                return Err(ApiError::invalid(RBAC_GROUP, &resource.kind, name, vec![Cause::invalid("roleRef", "", "cannot change roleRef")]));
            }
        }
        let kind = new.pointer("/roleRef/kind").and_then(Value::as_str).unwrap_or_default();
        let role_name = new.pointer("/roleRef/name").and_then(Value::as_str).unwrap_or_default();
        let (role, role_plural, role_namespace) = match (kind, namespace) {
            ("ClusterRole", _) => (RoleRef::ClusterRole(role_name.to_owned()), "clusterroles", namespace),
            ("Role", Some(ns)) => (RoleRef::Role { namespace: ns.to_owned(), name: role_name.to_owned() }, "roles", Some(ns)),
            _ => {
                let supported: &[&str] = if namespace.is_some() { &["Role", "ClusterRole"] } else { &["ClusterRole"] };
                return Err(ApiError::invalid(RBAC_GROUP, &resource.kind, name, vec![Cause::not_supported("roleRef.kind", kind, supported)]));
            }
        };
        // An empty group is RBAC's: the binding's defaults (`defaults::groups::role_binding`) write it after admission.
        let group = new.pointer("/roleRef/apiGroup").and_then(Value::as_str).filter(|group| !group.is_empty()).unwrap_or(RBAC_GROUP);
        if group != RBAC_GROUP {
            return Err(ApiError::invalid(RBAC_GROUP, &resource.kind, name, vec![Cause::not_supported("roleRef.apiGroup", group, &[RBAC_GROUP])]));
        }
        if self.unrestricted() || self.may("bind", role_plural, role_name, role_namespace) {
            return Ok(());
        }
        let Some(rules) = self.target.as_ref().and_then(|target| target.role_rules(&role)) else {
            return Err(ApiError::forbidden_object(RBAC_GROUP, &resource.plural, name, &format!(
                "user \"{}\" cannot bind {kind} \"{role_name}\": it does not exist, and binding it needs the bind verb on it",
                self.user.name)));
        };
        let missing = uncovered(&self.held(namespace), &rules);
        if missing.is_empty() {
            return Ok(());
        }
        Err(ApiError::forbidden_object(RBAC_GROUP, &resource.plural, name, &escalation_message(&self.user, namespace, &missing)))
    }
}

fn rules_of(role: &Value) -> Vec<PolicyRule> {
    role.get("rules").and_then(Value::as_array).map(|rules| rules.iter().filter_map(PolicyRule::from_json).collect()).unwrap_or_default()
}

/// Escalation prevention on every RBAC write a request makes.
pub struct RbacEscalation {
    pub authorizer: Arc<Authorizer>,
}

#[async_trait]
impl Admission for RbacEscalation {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        operation != Operation::Delete && is_rbac(resource)
    }

    async fn admit(&self, _registry: &GenericStore, attributes: &admission::Attributes<'_>) -> ApiResult<()> {
        let (Some(caller), Some(object)) = (attributes.caller, attributes.object) else { return Ok(()) };
        let escalation = Escalation::load(&self.authorizer, caller, attributes.space).await?;
        escalation.check(attributes.resource, attributes.namespace, object, attributes.old)
    }
}
