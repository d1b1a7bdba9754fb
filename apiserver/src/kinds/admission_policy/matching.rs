//! What validating and mutating admission policies share: which writes a policy and its binding match
//! (`matchConstraints`, `matchResources`), the params a binding names, and the cache of every space's policies
//! and bindings with the scoping rule (a space's own, then the system space's where its
//! `admission.kspaces.io/applicable-tenants` selector applies).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use kspaces_storage::{Revision, SpaceName};
use serde_json::Value;

use super::super::admission_webhook::config::{self, text, Selector};
use super::super::admission_webhook::hooks::Rule;
use super::super::admission_webhook::review;
use super::cel::Expression;
use crate::registry::admission::Attributes;
use crate::registry::observe::{RevisionMap, WriteObserver};
use crate::registry::read::ListOptions;
use crate::registry::{GenericStore, ResourceInfo, Scope};
use crate::resolver::Resolver;
use crate::status::{ApiResult, Cause};
use crate::tenancy::{TenantCache, Tree};

pub const GROUP: &str = "admissionregistration.k8s.io";

/// What a policy or a binding matches (`matchConstraints`, `matchResources`).
#[derive(Default)]
pub struct Matches {
    rules: Vec<Rule>,
    excluded: Vec<Rule>,
    namespace_selector: Selector,
    object_selector: Selector,
    /// A binding's: no rules match every resource its policy matches.
    narrows_only: bool,
}

impl Matches {
    pub fn parse(value: &Value) -> Matches {
        let rules = |key: &str| value.get(key).and_then(Value::as_array).map(|r| r.iter().map(Rule::parse).collect()).unwrap_or_default();
        let selector = |key: &str| value.get(key).map(|s| Selector::parse(s).unwrap_or_default()).unwrap_or_default();
        Matches { rules: rules("resourceRules"), excluded: rules("excludeResourceRules"), namespace_selector: selector("namespaceSelector"),
            object_selector: selector("objectSelector"), narrows_only: false }
    }

    fn selects_namespace(&self) -> bool {
        !self.namespace_selector.is_empty()
    }
}

/// What every policy kind has: its failure policy, what it matches, its conditions and variables, its param kind.
#[derive(Default)]
pub struct Common {
    pub ignore_failures: bool,
    pub matches: Matches,
    pub conditions: Vec<(String, Expression)>,
    pub variables: Vec<(String, Expression)>,
    /// `paramKind`: (group, version, kind).
    pub param_kind: Option<(String, String, String)>,
}

impl Common {
    pub fn parse(spec: &Value) -> Common {
        Common {
            ignore_failures: text(spec, "failurePolicy") == "Ignore",
            matches: spec.get("matchConstraints").map(Matches::parse).unwrap_or_default(),
            conditions: named(spec, "matchConditions"),
            variables: named(spec, "variables"),
            param_kind: spec.get("paramKind").filter(|p| p.is_object()).map(|p| {
                let (group, version) = text(p, "apiVersion").rsplit_once('/').unwrap_or(("", text(p, "apiVersion")));
                (group.to_owned(), version.to_owned(), text(p, "kind").to_owned())
            }),
        }
    }
}

/// `spec.<key>`'s `{name, expression}` entries, compiled.
fn named(spec: &Value, key: &str) -> Vec<(String, Expression)> {
    spec.get(key).and_then(Value::as_array).into_iter().flatten()
        .map(|c| (text(c, "name").to_owned(), Expression::new(text(c, "expression")))).collect()
}

/// What kube requires of every policy's spec: what it matches, and a param kind that names one.
pub fn validate_common(spec: &Value, causes: &mut Vec<Cause>) {
    match spec.get("matchConstraints").filter(|m| m.is_object()) {
        None => causes.push(Cause::required("spec.matchConstraints")),
        Some(matches) if matches.get("resourceRules").and_then(Value::as_array).is_none_or(Vec::is_empty) => {
            causes.push(Cause::required("spec.matchConstraints.resourceRules"));
        }
        Some(_) => {}
    }
    if let Some(kind) = spec.get("paramKind").filter(|p| !p.is_null()) {
        for field in ["apiVersion", "kind"] {
            if text(kind, field).is_empty() {
                causes.push(Cause::required(format!("spec.paramKind.{field}")));
            }
        }
    }
}

/// What kube requires of every binding: a policy, and a `paramRef` with one of name or selector and its action.
pub fn validate_binding(spec: &Value, causes: &mut Vec<Cause>) {
    if text(spec, "policyName").is_empty() {
        causes.push(Cause::required("spec.policyName"));
    }
    if let Some(reference) = spec.get("paramRef").filter(|p| !p.is_null()) {
        let (named, selected) = (!text(reference, "name").is_empty(), reference.get("selector").is_some_and(Value::is_object));
        if named == selected {
            causes.push(Cause { reason: "FieldValueRequired", field: "spec.paramRef".into(),
                message: "Required value: one of name or selector must be set".into() });
        }
        match text(reference, "parameterNotFoundAction") {
            "Allow" | "Deny" => {}
            "" => causes.push(Cause::required("spec.paramRef.parameterNotFoundAction")),
            other => causes.push(Cause::not_supported("spec.paramRef.parameterNotFoundAction", other, &["Allow", "Deny"])),
        }
    }
}

/// A binding's `paramRef`: one object by name, or every object a selector matches, in the binding's space.
pub struct ParamRef {
    name: Option<String>,
    namespace: Option<String>,
    selector: Option<Selector>,
    /// `parameterNotFoundAction: Deny` (else Allow).
    pub deny_when_missing: bool,
}

impl ParamRef {
    fn parse(value: &Value) -> ParamRef {
        ParamRef {
            name: value.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()).map(str::to_owned),
            namespace: value.get("namespace").and_then(Value::as_str).filter(|n| !n.is_empty()).map(str::to_owned),
            selector: value.get("selector").filter(|s| s.is_object()).map(|s| Selector::parse(s).unwrap_or_default()),
            deny_when_missing: text(value, "parameterNotFoundAction") == "Deny",
        }
    }
}

pub struct Binding {
    /// The space holding the binding (and its params).
    pub space: SpaceName,
    pub name: String,
    pub policy: String,
    /// `validationActions` (validating bindings only).
    pub deny: bool,
    pub warn: bool,
    /// `Audit`: a violation is recorded in the request's audit event.
    pub audit: bool,
    pub matches: Option<Matches>,
    pub param_ref: Option<ParamRef>,
    /// Where a system-space binding applies.
    applicable: config::Applicable,
}

impl Binding {
    fn parse(object: &Value, space: &SpaceName, name: &str) -> Binding {
        let spec = object.get("spec").unwrap_or(&Value::Null);
        let actions: Vec<&str> = spec.get("validationActions").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        Binding {
            space: space.clone(),
            param_ref: spec.get("paramRef").filter(|p| p.is_object()).map(ParamRef::parse),
            name: name.to_owned(),
            policy: text(spec, "policyName").to_owned(),
            deny: actions.contains(&"Deny"),
            warn: actions.contains(&"Warn"),
            audit: actions.contains(&"Audit"),
            matches: spec.get("matchResources").filter(|m| !m.is_null()).map(|m| Matches { narrows_only: true, ..Matches::parse(m) }),
            applicable: config::applicable(object, space),
        }
    }
}

/// A policy kind: its two kinds' names, and how its policies are parsed.
pub trait PolicyKind: Send + Sync + 'static {
    const POLICY: &'static str;
    const BINDING: &'static str;
    /// `[(GROUP, POLICY), (GROUP, BINDING)]`.
    const FOLLOWS: &'static [(&'static str, &'static str)];
    fn parse(policy: &Value) -> Self;
}

enum Held<P> {
    Policy(Arc<P>),
    Binding(Arc<Binding>),
}

/// One space's policies and bindings, by (is a binding, name).
type SpaceHeld<P> = RevisionMap<(bool, String), Arc<Held<P>>>;

/// Every space's policies and bindings of one policy kind, parsed once per write of one.
pub struct Policies<P> {
    held: AtomicUsize,
    spaces: RwLock<HashMap<SpaceName, SpaceHeld<P>>>,
    tree: Arc<Tree>,
    tenants: Arc<TenantCache>,
}

impl<P: PolicyKind> Policies<P> {
    pub fn new(tree: Arc<Tree>, tenants: Arc<TenantCache>) -> Policies<P> {
        Policies { held: AtomicUsize::new(0), spaces: RwLock::default(), tree, tenants }
    }

    /// Whether any space holds a policy or binding (cheap: most servers have none).
    pub fn any(&self) -> bool {
        self.held.load(Ordering::Acquire) > 0
    }

    /// Whether `resource` is one of this kind's own (policies never judge writes of their own kinds).
    pub fn owns(resource: &ResourceInfo) -> bool {
        resource.group == GROUP && (resource.kind == P::POLICY || resource.kind == P::BINDING)
    }

    /// The bindings that apply to a write in `space`, each with its policy: the system space's that apply to it,
    /// then the space's own, by name; a binding whose policy does not exist does nothing (as kube).
    pub fn of(&self, space: &SpaceName) -> Vec<(String, Arc<Binding>, Arc<P>)> {
        if !self.any() {
            return Vec::new();
        }
        let spaces = self.spaces.read().unwrap_or_else(|e| e.into_inner());
        let mut found = Vec::new();
        let mut from = |of: &SpaceName, system: bool| {
            let Some(held) = spaces.get(of) else { return };
            let policy = |name: &str| held.iter().find_map(|((is_binding, n), h)| match (&**h, is_binding, n == name) {
                (Held::Policy(p), false, true) => Some(p.clone()),
                _ => None,
            });
            let mut bindings: Vec<Arc<Binding>> = held.iter().filter_map(|(_, h)| match &**h {
                Held::Binding(b) => Some(b.clone()),
                Held::Policy(_) => None,
            }).filter(|b| !system || config::applies(&b.applicable, &self.tenants, &self.tree, space)).collect();
            bindings.sort_by(|a, b| a.name.cmp(&b.name));
            for binding in bindings {
                if let Some(policy) = policy(&binding.policy) {
                    found.push((binding.policy.clone(), binding, policy));
                }
            }
        };
        if !space.is_system() {
            from(&SpaceName::system(), true);
        }
        from(space, false);
        found
    }
}

impl<P: PolicyKind> WriteObserver for Policies<P> {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        P::FOLLOWS
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        let is_binding = resource.kind == P::BINDING;
        if !Self::owns(resource) {
            return;
        }
        let held = object.map(|object| Arc::new(match is_binding {
            false => Held::Policy(Arc::new(P::parse(object))),
            true => Held::Binding(Arc::new(Binding::parse(object, space, name))),
        }));
        let mut spaces = self.spaces.write().unwrap_or_else(|e| e.into_inner());
        spaces.entry(space.clone()).or_default().apply((is_binding, name.to_owned()), held, revision);
        let count = spaces.values().map(|held| held.iter().count()).sum();
        self.held.store(count, Ordering::Release);
    }

    fn holds(&self, resource: &ResourceInfo) -> Vec<(SpaceName, String)> {
        let is_binding = resource.kind == P::BINDING;
        let spaces = self.spaces.read().unwrap_or_else(|e| e.into_inner());
        spaces.iter().flat_map(|(space, held)| held.iter().filter(|((b, _), _)| *b == is_binding).map(|((_, n), _)| (space.clone(), n.clone())).collect::<Vec<_>>()).collect()
    }
}

/// What the admission plugins of both policy kinds read: the namespaces' row and where param kinds are served.
pub struct Matcher {
    pub namespaces: Option<Arc<ResourceInfo>>,
    /// Where a policy's `paramKind` is served (a built-in kind or a space's custom resource).
    pub resolver: Arc<Resolver>,
}

/// The namespace object of a write, read when a policy first needs it.
#[derive(Default)]
pub struct Lazy {
    namespace: Option<Option<Value>>,
}

impl Lazy {
    pub fn namespace(&self) -> Option<&Value> {
        self.namespace.as_ref().and_then(Option::as_ref)
    }
}

impl Matcher {
    /// Whether the write meets the policy's `matchConstraints` and the binding's `matchResources`, reading the
    /// namespace (once per write) when a selector or an expression needs it.
    pub async fn meets_both(&self, registry: &GenericStore, attributes: &Attributes<'_>, policy: &Matches, binding: &Binding,
        reads_namespace: bool, lazy: &mut Lazy) -> ApiResult<bool> {
        if lazy.namespace.is_none() && (reads_namespace || policy.selects_namespace() || binding.matches.as_ref().is_some_and(Matches::selects_namespace)) {
            lazy.namespace = Some(self.namespace_object(registry, attributes).await?);
        }
        let namespace = lazy.namespace();
        Ok(self.meets(policy, attributes, namespace) && binding.matches.as_ref().is_none_or(|m| self.meets(m, attributes, namespace)))
    }

    /// The param objects to evaluate the policy with: `[null]` without a param kind; `Ok(None)` when there are
    /// none and the binding allows that (the policy is then skipped); `Err` for a failure under the failure policy.
    pub async fn params_for(&self, registry: &GenericStore, kind: Option<&(String, String, String)>, binding: &Binding, attributes: &Attributes<'_>)
        -> Result<Option<Vec<Value>>, String> {
        let Some(kind) = kind else { return Ok(Some(vec![Value::Null])) };
        match self.params(registry, kind, binding, attributes).await? {
            found if !found.is_empty() => Ok(Some(found)),
            _ if binding.param_ref.as_ref().is_some_and(|r| r.deny_when_missing) => {
                Err("failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction".into())
            }
            _ => Ok(None),
        }
    }

    /// The param objects of `binding` for a policy of param kind `kind`, read in the binding's own space (a
    /// tenant's params are never another's): its `paramRef` object by name, or every object its selector matches.
    /// A namespaced kind's objects are in `paramRef.namespace`, else in the request's namespace (kube's rules).
    async fn params(&self, registry: &GenericStore, kind: &(String, String, String), binding: &Binding, attributes: &Attributes<'_>)
        -> Result<Vec<Value>, String> {
        let (group, version, kind_name) = kind;
        let Some(reference) = &binding.param_ref else {
            return Err(format!("failed to configure binding: paramRef is required when the policy has paramKind {kind_name}"));
        };
        let view = self.resolver.view(&binding.space);
        let table = if binding.space.is_system() { &view.system } else { &view.tenant };
        let row = table.all().iter().find(|r| r.group == *group && r.version == *version && r.kind == *kind_name).cloned();
        let Some(row) = row else {
            return Err(format!("failed to configure policy: failed to find resource referenced by paramKind: '{}, Kind={kind_name}'",
                if group.is_empty() { version.clone() } else { format!("{group}/{version}") }));
        };
        let namespace = match (row.namespaced, &reference.namespace) {
            (false, Some(_)) => return Err("failed to configure binding: paramRef.namespace must not be set for a cluster-scoped paramKind".into()),
            (false, None) => None,
            (true, Some(namespace)) => Some(namespace.clone()),
            (true, None) => match attributes.namespace {
                Some(namespace) => Some(namespace.to_owned()),
                None => return Err("failed to configure binding: paramRef.namespace is required for a namespaced paramKind and a cluster-scoped request".into()),
            },
        };
        let scope = Scope::one(binding.space.clone(), namespace);
        if let Some(name) = &reference.name {
            return match registry.reader().get(&row, &scope, name).await {
                Ok(object) => Ok(vec![object]),
                Err(error) if error.code == 404 => Ok(Vec::new()),
                Err(error) => Err(format!("failed to read params: {}", error.message)),
            };
        }
        let selector = reference.selector.clone().unwrap_or_default();
        let (objects, _) = registry.reader().list(&row, &scope, &ListOptions::default()).await.map_err(|e| format!("failed to list params: {}", e.message))?;
        Ok(objects.into_iter().filter(|o| selector.matches(o.pointer("/metadata/labels"))).collect())
    }

    /// Whether the write meets `matches`: a rule and no excluded rule, the object selector (new or old object's
    /// labels) and the namespace selector.
    fn meets(&self, matches: &Matches, attributes: &Attributes<'_>, namespace: Option<&Value>) -> bool {
        let operation = review::operation(attributes.operation);
        let subresource = review::subresource(attributes.part).unwrap_or_default();
        let hit = |rules: &[Rule]| rules.iter().any(|rule| rule.matches(operation, attributes.resource, subresource));
        // A binding's `matchResources` without rules narrows nothing by resource (kube).
        let by_rules = hit(&matches.rules) || (matches.narrows_only && matches.rules.is_empty());
        if !by_rules || hit(&matches.excluded) {
            return false;
        }
        let labels = |o: Option<&Value>| o.and_then(|o| o.pointer("/metadata/labels")).cloned();
        let selected = |o: Option<&Value>| matches.object_selector.matches(labels(o).as_ref());
        if !(matches.object_selector.is_empty() || selected(attributes.object) || (attributes.old.is_some() && selected(attributes.old))) {
            return false;
        }
        if matches.namespace_selector.is_empty() || !attributes.resource.namespaced {
            return true;
        }
        matches.namespace_selector.matches(labels(namespace).as_ref())
    }

    /// The namespace of a namespaced write, as stored (`namespaceObject`).
    async fn namespace_object(&self, registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<Option<Value>> {
        let (Some(namespace), Some(namespaces)) = (attributes.namespace, &self.namespaces) else { return Ok(None) };
        match registry.reader().record(namespaces, &Scope::one(attributes.space.clone(), None), namespace).await {
            Ok(record) => Ok(serde_json::from_slice(&record.value).ok()),
            Err(error) if error.code == 404 => Ok(None),
            Err(error) => Err(error),
        }
    }
}
