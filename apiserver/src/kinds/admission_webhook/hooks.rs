//! `Hooks`: every space's webhook configurations, parsed once per write of one (a `WriteObserver`), and which of
//! them a request in a space meets: the space's own, and the system space's whose
//! `admission.kspaces.io/applicable-tenants` selector matches the space's tenant. A server without any
//! configuration answers from one atomic load.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use kspaces_storage::{Revision, SpaceName};
use serde_json::Value;

use super::config::{self, strings, text, Selector};
use super::endpoint::Endpoint;
use crate::kinds::admission_policy::Expression;
use crate::registry::observe::{RevisionMap, WriteObserver};
use crate::registry::ResourceInfo;
use crate::tenancy::{TenantCache, Tree};

pub const GROUP: &str = "admissionregistration.k8s.io";
pub const MUTATING: &str = "MutatingWebhookConfiguration";
pub const VALIDATING: &str = "ValidatingWebhookConfiguration";

/// One rule of a webhook (`rules[]`).
#[derive(Debug)]
pub struct Rule {
    operations: Vec<String>,
    groups: Vec<String>,
    versions: Vec<String>,
    resources: Vec<String>,
    scope: String,
}

impl Rule {
    pub fn parse(rule: &Value) -> Rule {
        let list = |key: &str| strings(rule.get(key)).into_iter().map(str::to_owned).collect();
        let scope = rule.get("scope").and_then(Value::as_str).unwrap_or("*").to_owned();
        Rule { operations: list("operations"), groups: list("apiGroups"), versions: list("apiVersions"), resources: list("resources"), scope }
    }

    /// kube's `rules.Matcher`: operation, group, version, resource/subresource (`*`, `*/*`, `x/*`, `*/x`), scope.
    pub fn matches(&self, operation: &str, resource: &ResourceInfo, subresource: &str) -> bool {
        let any = |items: &[String], value: &str| items.iter().any(|i| i == "*" || i == value);
        let resource_matches = self.resources.iter().any(|item| {
            let (plural, sub) = item.split_once('/').unwrap_or((item.as_str(), ""));
            (plural == "*" || plural == resource.plural) && (sub == "*" || sub == subresource)
        });
        let scope = match self.scope.as_str() {
            "Cluster" => !resource.namespaced,
            "Namespaced" => resource.namespaced,
            _ => true,
        };
        any(&self.operations, operation) && any(&self.groups, &resource.group) && any(&self.versions, &resource.version) && resource_matches && scope
    }
}

/// One webhook of a configuration, parsed.
#[derive(Debug)]
pub struct Hook {
    pub name: String,
    /// Where it is called, from the space holding the configuration.
    pub endpoint: Endpoint,
    pub rules: Vec<Rule>,
    pub ignore_failures: bool,
    pub namespace_selector: Selector,
    pub object_selector: Selector,
    /// `sideEffects` is `None` or `NoneOnDryRun`: the webhook may be called on a dry run.
    pub dry_run_safe: bool,
    pub timeout: Duration,
    /// A mutating configuration's webhook (only those may answer with a patch).
    pub mutating: bool,
    /// `reinvocationPolicy: IfNeeded`: called once more when a later webhook or mutating policy changed the object.
    pub reinvoke: bool,
    /// `matchConditions`: CEL that must all hold for the webhook to be called.
    pub conditions: Vec<(String, Expression)>,
}

impl Hook {
    fn parse(webhook: &Value, space: &SpaceName, mutating: bool) -> Hook {
        let selector = |key: &str| webhook.get(key).map(|s| Selector::parse(s).unwrap_or_default()).unwrap_or_default();
        Hook {
            endpoint: Endpoint::parse(webhook.get("clientConfig").unwrap_or(&Value::Null), space),
            mutating,
            reinvoke: mutating && text(webhook, "reinvocationPolicy") == "IfNeeded",
            name: text(webhook, "name").to_owned(),
            rules: webhook.get("rules").and_then(Value::as_array).map(|r| r.iter().map(Rule::parse).collect()).unwrap_or_default(),
            ignore_failures: text(webhook, "failurePolicy") == "Ignore",
            namespace_selector: selector("namespaceSelector"),
            object_selector: selector("objectSelector"),
            dry_run_safe: matches!(text(webhook, "sideEffects"), "None" | "NoneOnDryRun"),
            timeout: Duration::from_secs(webhook.get("timeoutSeconds").and_then(Value::as_u64).unwrap_or(10).clamp(1, 30)),
            conditions: webhook.get("matchConditions").and_then(Value::as_array).into_iter().flatten()
                .map(|c| (text(c, "name").to_owned(), Expression::new(text(c, "expression")))).collect(),
        }
    }
}

/// One configuration, parsed.
#[derive(Debug)]
struct Configuration {
    name: String,
    hooks: Vec<Arc<Hook>>,
    /// Where a system-space configuration applies.
    applicable: config::Applicable,
}

type Key = (bool, String);

/// Every space's configurations.
pub struct Hooks {
    held: AtomicUsize,
    spaces: RwLock<HashMap<SpaceName, RevisionMap<Key, Arc<Configuration>>>>,
    tree: Arc<Tree>,
    tenants: Arc<TenantCache>,
}

impl Hooks {
    pub fn new(tree: Arc<Tree>, tenants: Arc<TenantCache>) -> Hooks {
        Hooks { held: AtomicUsize::new(0), spaces: RwLock::default(), tree, tenants }
    }

    /// Whether any space holds a configuration (one atomic load: the whole cost of webhooks to a server without).
    pub fn any(&self) -> bool {
        self.held.load(Ordering::Acquire) > 0
    }

    /// The webhooks a request in `space` meets (`mutating`: the mutating ones): the system space's that apply to
    /// it, then those of `provider` (the workspace of the APIExport a bound resource comes from, as kcp calls an
    /// API provider's webhooks for its resources in consumers), then the space's own, each by configuration name
    /// (kube's order); nothing, cheaply, when no space has any.
    pub fn of(&self, space: &SpaceName, provider: Option<&SpaceName>, mutating: bool) -> Vec<Arc<Hook>> {
        if self.held.load(Ordering::Acquire) == 0 {
            return Vec::new();
        }
        let spaces = self.spaces.read().unwrap_or_else(|e| e.into_inner());
        let held = |of: &SpaceName, keep: &dyn Fn(&Configuration) -> bool| {
            let mut found: Vec<&Arc<Configuration>> = spaces.get(of).map(|c| c.iter().filter(|((m, _), c)| *m == mutating && keep(c)).map(|(_, c)| c).collect()).unwrap_or_default();
            found.sort_by(|a, b| a.name.cmp(&b.name));
            found
        };
        let mut found = Vec::new();
        if !space.is_system() {
            found = held(&SpaceName::system(), &|c| self.applies(c, space));
        }
        if let Some(provider) = provider.filter(|p| *p != space && !p.is_system()) {
            found.extend(held(provider, &|_| true));
        }
        found.extend(held(space, &|_| true));
        found.iter().flat_map(|c| c.hooks.iter().cloned()).collect()
    }

    /// Whether a system-space configuration applies to requests in `space` (its tenant's labels).
    fn applies(&self, configuration: &Configuration, space: &SpaceName) -> bool {
        config::applies(&configuration.applicable, &self.tenants, &self.tree, space)
    }
}

impl WriteObserver for Hooks {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[(GROUP, MUTATING), (GROUP, VALIDATING)]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        if resource.group != GROUP || (resource.kind != MUTATING && resource.kind != VALIDATING) {
            return;
        }
        let configuration = object.map(|object| {
            Arc::new(Configuration {
                name: name.to_owned(),
                hooks: object.get("webhooks").and_then(Value::as_array).map(|w| w.iter().map(|w| Arc::new(Hook::parse(w, space, resource.kind == MUTATING))).collect()).unwrap_or_default(),
                applicable: config::applicable(object, space),
            })
        });
        let mut spaces = self.spaces.write().unwrap_or_else(|e| e.into_inner());
        let configurations = spaces.entry(space.clone()).or_default();
        configurations.apply((resource.kind == MUTATING, name.to_owned()), configuration, revision);
        let held = spaces.values().map(|c| c.iter().count()).sum();
        self.held.store(held, Ordering::Release);
    }

    fn holds(&self, resource: &ResourceInfo) -> Vec<(SpaceName, String)> {
        let mutating = resource.kind == MUTATING;
        let spaces = self.spaces.read().unwrap_or_else(|e| e.into_inner());
        spaces.iter().flat_map(|(space, c)| c.iter().filter(|((m, _), _)| *m == mutating).map(|((_, n), _)| (space.clone(), n.clone())).collect::<Vec<_>>()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::builtin::builtin_resources;
    use serde_json::json;

    #[test]
    fn rules_match_resources_subresources_and_scope_as_kube_does() {
        let resources = builtin_resources();
        let find = |plural: &str| resources.iter().find(|r| r.plural == plural).unwrap_or_else(|| panic!("{plural}"));
        let (pods, namespaces) = (find("pods"), find("namespaces"));
        let rule = |resources: Value, scope: &str| Rule::parse(&json!({"operations": ["CREATE"], "apiGroups": ["*"], "apiVersions": ["v1"], "resources": resources, "scope": scope}));
        let cases = [
            (json!(["pods"]), "*", pods, "", true),
            (json!(["pods"]), "*", pods, "status", false),
            (json!(["pods/status"]), "*", pods, "status", true),
            (json!(["pods/*"]), "*", pods, "", true),
            (json!(["pods/*"]), "*", pods, "status", true),
            (json!(["*"]), "*", pods, "status", false),
            (json!(["*/*"]), "*", pods, "status", true),
            (json!(["*/status"]), "*", pods, "status", true),
            (json!(["*"]), "Cluster", pods, "", false),
            (json!(["*"]), "Cluster", namespaces, "", true),
            (json!(["*"]), "Namespaced", pods, "", true),
        ];
        for (resources, scope, resource, sub, expected) in cases {
            assert_eq!(rule(resources.clone(), scope).matches("CREATE", resource, sub), expected, "{resources} {scope} {} {sub}", resource.plural);
        }
        assert!(!rule(json!(["pods"]), "*").matches("DELETE", pods, ""));
    }
}
