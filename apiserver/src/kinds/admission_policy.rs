//! ValidatingAdmissionPolicies, enforced per space as kube-apiserver's `ValidatingAdmissionPolicy` admission
//! enforces them: a binding in a space applies its policy (of the same space) to that space's writes; the system
//! space's bindings apply to every space their `admission.kspaces.io/applicable-tenants` selector matches, as its
//! webhook configurations do. For each binding whose policy's `matchConstraints` (rules, excluded rules, namespace
//! and object selectors) and the binding's `matchResources` match the write, and whose `matchConditions` all hold,
//! every validation is evaluated in CEL with `object`, `oldObject`, `request`, `namespaceObject` and `variables`;
//! a false one is a violation: `Deny` refuses the write with kube's message and the validation's reason (422 for
//! `Invalid`), `Warn` adds a `Warning`. An expression that fails to compile or evaluate follows the policy's
//! `failurePolicy`. A policy with `paramKind` is evaluated with `params` set to each object its binding's `paramRef`
//! names or selects, read in the binding's own space (`parameterNotFoundAction` decides when there is none). Its
//! `auditAnnotations`, and the violations of bindings with the `Audit` action, go to the request's audit event. Not
//! yet: `status.typeChecking`, the `authorizer` variable.
//! `docs/admission-webhooks.md`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use kube_core::cel::cel::objects::{Key as CelKey, Map as CelMap};
use kube_core::cel::cel::{Context as Cel, Program, Value as CelValue};
use kspaces_storage::{Revision, SpaceName};
use serde_json::Value;

use super::admission_webhook::config::{self, text, Selector};
use super::admission_webhook::hooks::Rule;
use super::admission_webhook::review;
use super::defaults::{groups, Write};
use super::{Context, Kind, Rules};
use crate::registry::admission::{Admission, AdmissionPhase, Attributes, Operation};
use crate::registry::observe::{RevisionMap, WriteObserver};
use crate::registry::strategy::{Part, Strategy};
use crate::registry::read::ListOptions;
use crate::registry::{GenericStore, ResourceInfo, Scope};
use crate::resolver::Resolver;
use crate::status::{ApiError, ApiResult, Cause};
use crate::tenancy::{TenantCache, Tree};

const GROUP: &str = "admissionregistration.k8s.io";
const POLICY: &str = "ValidatingAdmissionPolicy";
const BINDING: &str = "ValidatingAdmissionPolicyBinding";
/// kube's audit annotation of the violations of bindings with the `Audit` action.
const VALIDATION_FAILURE: &str = "validation.policy.admission.k8s.io/validation_failure";

pub const KIND: Kind = Kind::rules(|context: &Context, rules: &mut Rules| {
    rules.strategy(GROUP, POLICY, Arc::new(PolicyStrategy));
    rules.strategy(GROUP, BINDING, Arc::new(BindingStrategy));
    let policies = Arc::new(Policies { held: AtomicUsize::new(0), spaces: RwLock::default(), tree: context.tree.clone(), tenants: context.tenants.clone() });
    rules.observe(policies.clone());
    let namespaces = context.resources.by_kind("", "Namespace").cloned();
    // A delete has no validating phase in the registry: policies judge it where its admission runs.
    let resolver = context.resolver.clone();
    rules.admit(Arc::new(PolicyAdmission { policies: policies.clone(), namespaces: namespaces.clone(), resolver: resolver.clone(), deletes: true }));
    rules.admit(Arc::new(PolicyAdmission { policies, namespaces, resolver, deletes: false }));
});

/// ValidatingAdmissionPolicy: kube's defaults, and every CEL expression must compile (kube's 422 at write).
struct PolicyStrategy;

#[async_trait]
impl Strategy for PolicyStrategy {
    fn prepare_create(&self, _: &ResourceInfo, _: &SpaceName, _: Option<&kspaces_authz::Caller>, object: &mut Value) {
        groups::admission_policy(object, Write::Create);
    }

    fn prepare_update(&self, _: &ResourceInfo, _: &SpaceName, _: &Value, new: &mut Value, _: Part) {
        groups::admission_policy(new, Write::Update);
    }

    fn validate(&self, _: &ResourceInfo, object: &Value, _: Option<&Value>, causes: &mut Vec<Cause>) {
        let spec = object.get("spec").unwrap_or(&Value::Null);
        // kube's required fields: what the policy matches, and something to check.
        match spec.get("matchConstraints").filter(|m| m.is_object()) {
            None => causes.push(Cause::required("spec.matchConstraints")),
            Some(matches) if matches.get("resourceRules").and_then(Value::as_array).is_none_or(Vec::is_empty) => {
                causes.push(Cause::required("spec.matchConstraints.resourceRules"));
            }
            Some(_) => {}
        }
        let empty = |key: &str| spec.get(key).and_then(Value::as_array).is_none_or(Vec::is_empty);
        if empty("validations") && empty("auditAnnotations") {
            causes.push(Cause { reason: "FieldValueRequired", field: "spec.validations".into(),
                message: "Required value: validations or auditAnnotations must contain at least one item".into() });
        }
        if let Some(kind) = spec.get("paramKind").filter(|p| !p.is_null()) {
            for field in ["apiVersion", "kind"] {
                if text(kind, field).is_empty() {
                    causes.push(Cause::required(format!("spec.paramKind.{field}")));
                }
            }
        }
        for (list, field) in [("validations", "expression"), ("validations", "messageExpression"), ("matchConditions", "expression"),
            ("variables", "expression"), ("auditAnnotations", "valueExpression")] {
            check_expressions(spec.get(list), &format!("spec.{list}"), field, causes);
        }
    }
}

/// ValidatingAdmissionPolicyBinding: kube's defaults, and what kube requires of one.
struct BindingStrategy;

#[async_trait]
impl Strategy for BindingStrategy {
    fn prepare_create(&self, _: &ResourceInfo, _: &SpaceName, _: Option<&kspaces_authz::Caller>, object: &mut Value) {
        groups::admission_policy_binding(object, Write::Create);
    }

    fn prepare_update(&self, _: &ResourceInfo, _: &SpaceName, _: &Value, new: &mut Value, _: Part) {
        groups::admission_policy_binding(new, Write::Update);
    }

    fn validate(&self, _: &ResourceInfo, object: &Value, _: Option<&Value>, causes: &mut Vec<Cause>) {
        let spec = object.get("spec").unwrap_or(&Value::Null);
        if text(spec, "policyName").is_empty() {
            causes.push(Cause::required("spec.policyName"));
        }
        let actions: Vec<&Value> = spec.get("validationActions").and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default();
        if actions.is_empty() {
            causes.push(Cause::required("spec.validationActions"));
        }
        let mut seen = Vec::new();
        for (index, action) in actions.iter().enumerate() {
            let field = format!("spec.validationActions[{index}]");
            match action.as_str() {
                Some(name @ ("Deny" | "Warn" | "Audit")) if seen.contains(&name) => {
                    causes.push(Cause { reason: "FieldValueDuplicate", message: format!("Duplicate value: {name:?}"), field });
                }
                Some(name @ ("Deny" | "Warn" | "Audit")) => seen.push(name),
                other => causes.push(Cause::not_supported(field, other.unwrap_or_default(), &["Audit", "Deny", "Warn"])),
            }
        }
        if seen.contains(&"Deny") && seen.contains(&"Warn") {
            causes.push(Cause::invalid("spec.validationActions", "[Deny Warn]", "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"));
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
}

/// A CEL expression, compiled once per write of its policy (or webhook configuration).
pub struct Expression {
    text: String,
    program: Result<Program, String>,
}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Expression {
    pub fn new(text: &str) -> Expression {
        Expression { text: text.to_owned(), program: Program::compile(text).map_err(|e| e.to_string()) }
    }

    pub fn eval(&self, context: &Cel) -> Result<CelValue, String> {
        let program = self.program.as_ref().map_err(|e| format!("compilation failed: {e}"))?;
        program.execute(context).map_err(|e| e.to_string())
    }
}

/// What a policy or a binding matches (`matchConstraints`, `matchResources`).
#[derive(Default)]
struct Matches {
    rules: Vec<Rule>,
    excluded: Vec<Rule>,
    namespace_selector: Selector,
    object_selector: Selector,
    /// A binding's: no rules match every resource its policy matches.
    narrows_only: bool,
}

impl Matches {
    fn parse(value: &Value) -> Matches {
        let rules = |key: &str| value.get(key).and_then(Value::as_array).map(|r| r.iter().map(Rule::parse).collect()).unwrap_or_default();
        let selector = |key: &str| value.get(key).map(|s| Selector::parse(s).unwrap_or_default()).unwrap_or_default();
        Matches { rules: rules("resourceRules"), excluded: rules("excludeResourceRules"), namespace_selector: selector("namespaceSelector"),
            object_selector: selector("objectSelector"), narrows_only: false }
    }
}

struct Validation {
    expression: Expression,
    message: Option<String>,
    message_expression: Option<Expression>,
    reason: String,
}

struct Policy {
    ignore_failures: bool,
    matches: Matches,
    conditions: Vec<(String, Expression)>,
    variables: Vec<(String, Expression)>,
    validations: Vec<Validation>,
    /// `paramKind`: (group, version, kind).
    param_kind: Option<(String, String, String)>,
    /// `auditAnnotations`: each key with its `valueExpression`.
    audit_annotations: Vec<(String, Expression)>,
    /// Which variables its expressions read (by their text), so that a write builds only those.
    uses: Uses,
}

/// The costly CEL variables a policy's expressions name: `namespaceObject` (a store read), `request` (kube's
/// AdmissionRequest, a copy of the object) and `oldObject`.
#[derive(Clone, Copy, Default)]
struct Uses {
    namespace: bool,
    request: bool,
    old: bool,
    /// `managedFields`: without it, the objects' `metadata.managedFields` are left out of their CEL values.
    managed_fields: bool,
}

impl Uses {
    fn of<'a>(texts: impl Iterator<Item = &'a str>) -> Uses {
        texts.fold(Uses::default(), |uses, text| Uses {
            namespace: uses.namespace || text.contains("namespaceObject"),
            request: uses.request || text.contains("request"),
            old: uses.old || text.contains("oldObject"),
            managed_fields: uses.managed_fields || text.contains("managedFields"),
        })
    }
}

impl Policy {
    fn parse(policy: &Value) -> Policy {
        let spec = policy.get("spec").unwrap_or(&Value::Null);
        let named = |key: &str| -> Vec<(String, Expression)> {
            spec.get(key).and_then(Value::as_array).into_iter().flatten()
                .map(|c| (text(c, "name").to_owned(), Expression::new(text(c, "expression")))).collect()
        };
        let validations = spec.get("validations").and_then(Value::as_array).into_iter().flatten().map(|v| Validation {
            expression: Expression::new(text(v, "expression")),
            message: v.get("message").and_then(Value::as_str).filter(|m| !m.is_empty()).map(str::to_owned),
            message_expression: v.get("messageExpression").and_then(Value::as_str).filter(|m| !m.is_empty()).map(Expression::new),
            reason: v.get("reason").and_then(Value::as_str).unwrap_or("Invalid").to_owned(),
        }).collect();
        let expressions = ["validations", "matchConditions", "variables", "auditAnnotations"].into_iter()
            .flat_map(|list| spec.get(list).and_then(Value::as_array).into_iter().flatten())
            .flat_map(|item| ["expression", "messageExpression", "valueExpression"].into_iter().filter_map(|key| item.get(key)?.as_str()));
        Policy {
            uses: Uses::of(expressions),
            ignore_failures: text(spec, "failurePolicy") == "Ignore",
            matches: spec.get("matchConstraints").map(Matches::parse).unwrap_or_default(),
            conditions: named("matchConditions"),
            variables: named("variables"),
            validations,
            audit_annotations: spec.get("auditAnnotations").and_then(Value::as_array).into_iter().flatten()
                .map(|a| (text(a, "key").to_owned(), Expression::new(text(a, "valueExpression")))).collect(),
            param_kind: spec.get("paramKind").filter(|p| p.is_object()).map(|p| {
                let (group, version) = text(p, "apiVersion").rsplit_once('/').unwrap_or(("", text(p, "apiVersion")));
                (group.to_owned(), version.to_owned(), text(p, "kind").to_owned())
            }),
        }
    }
}

/// A binding's `paramRef`: one object by name, or every object a selector matches, in the binding's space.
struct ParamRef {
    name: Option<String>,
    namespace: Option<String>,
    selector: Option<Selector>,
    /// `parameterNotFoundAction: Deny` (else Allow).
    deny_when_missing: bool,
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

struct Binding {
    /// The space holding the binding (and its params).
    space: SpaceName,
    name: String,
    policy: String,
    deny: bool,
    warn: bool,
    /// `Audit`: a violation is recorded in the request's audit event.
    audit: bool,
    matches: Option<Matches>,
    param_ref: Option<ParamRef>,
    /// Where a system-space binding applies.
    applicable: config::Applicable,
}

enum Held {
    Policy(Arc<Policy>),
    Binding(Arc<Binding>),
}

/// Every space's policies and bindings, parsed once per write of one.
struct Policies {
    held: AtomicUsize,
    spaces: RwLock<HashMap<SpaceName, RevisionMap<(bool, String), Arc<Held>>>>,
    tree: Arc<Tree>,
    tenants: Arc<TenantCache>,
}

impl Policies {
    /// The bindings that apply to a write in `space`, each with its policy: the system space's that apply to it,
    /// then the space's own, by name; a binding whose policy does not exist does nothing (as kube).
    fn of(&self, space: &SpaceName) -> Vec<(String, Arc<Binding>, Arc<Policy>)> {
        if self.held.load(Ordering::Acquire) == 0 {
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
            }).filter(|b| !system || self.applies(b, space)).collect();
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

    fn applies(&self, binding: &Binding, space: &SpaceName) -> bool {
        config::applies(&binding.applicable, &self.tenants, &self.tree, space)
    }
}

impl WriteObserver for Policies {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[(GROUP, POLICY), (GROUP, BINDING)]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        let is_binding = resource.kind == BINDING;
        if resource.group != GROUP || !(is_binding || resource.kind == POLICY) {
            return;
        }
        let held = object.map(|object| Arc::new(match is_binding {
            false => Held::Policy(Arc::new(Policy::parse(object))),
            true => {
                let spec = object.get("spec").unwrap_or(&Value::Null);
                let actions: Vec<&str> = spec.get("validationActions").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
                Held::Binding(Arc::new(Binding {
                    space: space.clone(),
                    param_ref: spec.get("paramRef").filter(|p| p.is_object()).map(ParamRef::parse),
                    name: name.to_owned(),
                    policy: text(spec, "policyName").to_owned(),
                    deny: actions.contains(&"Deny"),
                    warn: actions.contains(&"Warn"),
                    audit: actions.contains(&"Audit"),
                    matches: spec.get("matchResources").filter(|m| !m.is_null()).map(|m| Matches { narrows_only: true, ..Matches::parse(m) }),
                    applicable: config::applicable(object, space),
                }))
            }
        }));
        let mut spaces = self.spaces.write().unwrap_or_else(|e| e.into_inner());
        spaces.entry(space.clone()).or_default().apply((is_binding, name.to_owned()), held, revision);
        let count = spaces.values().map(|held| held.iter().count()).sum();
        self.held.store(count, Ordering::Release);
    }

    fn holds(&self, resource: &ResourceInfo) -> Vec<(SpaceName, String)> {
        let is_binding = resource.kind == BINDING;
        let spaces = self.spaces.read().unwrap_or_else(|e| e.into_inner());
        spaces.iter().flat_map(|(space, held)| held.iter().filter(|((b, _), _)| *b == is_binding).map(|((_, n), _)| (space.clone(), n.clone())).collect::<Vec<_>>()).collect()
    }
}

/// The admission plugin: after the built-in validating admission, before the validating webhooks (kube's order).
struct PolicyAdmission {
    policies: Arc<Policies>,
    namespaces: Option<Arc<ResourceInfo>>,
    /// Where a policy's `paramKind` is served (a built-in kind or a space's custom resource).
    resolver: Arc<Resolver>,
    /// The plugin for deletes (mutating phase, the only one a delete has), else for creates and updates.
    deletes: bool,
}

#[async_trait]
impl Admission for PolicyAdmission {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        self.policies.held.load(Ordering::Acquire) > 0
            && (operation == Operation::Delete) == self.deletes
            && !(resource.group == GROUP && (resource.kind == POLICY || resource.kind == BINDING))
    }

    fn phase(&self) -> AdmissionPhase {
        match self.deletes {
            true => AdmissionPhase::Mutating,
            false => AdmissionPhase::Validating,
        }
    }

    async fn admit(&self, registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        if attributes.caller.is_none() {
            return Ok(());
        }
        let applying = self.policies.of(attributes.space);
        if applying.is_empty() {
            return Ok(());
        }
        // Made when a policy first needs them: the namespace (a store read) and the AdmissionRequest.
        let (mut namespace, mut request): (Option<Option<Value>>, Option<Value>) = (None, None);
        // The violations of bindings with the `Audit` action, one annotation for them all (kube's).
        let mut audited = Vec::new();
        for (policy_name, binding, policy) in applying {
            let selects_namespace = |m: &Matches| !m.namespace_selector.is_empty();
            if namespace.is_none() && (policy.uses.namespace || selects_namespace(&policy.matches) || binding.matches.as_ref().is_some_and(selects_namespace)) {
                namespace = Some(self.namespace_object(registry, attributes).await?);
            }
            let namespace = namespace.as_ref().and_then(Option::as_ref);
            if !self.meets(&policy.matches, attributes, namespace) || !binding.matches.as_ref().is_none_or(|m| self.meets(m, attributes, namespace)) {
                continue;
            }
            if policy.uses.request && request.is_none() {
                request = Some(request_of(attributes));
            }
            let request = request.as_ref().unwrap_or(&Value::Null);
            let seen = Attributes { old: attributes.old.filter(|_| policy.uses.old), ..*attributes };
            let objects = Objects { managed_fields: policy.uses.managed_fields };
            let refuse = |message: String, reason: &str| -> ApiError {
                let (code, reason) = code_of(reason);
                ApiError::new(code, reason, format!("ValidatingAdmissionPolicy '{policy_name}' with binding '{}' denied request: {message}", binding.name))
            };
            let failed = |why: String| -> ApiResult<()> {
                match policy.ignore_failures {
                    true => Ok(()),
                    false => Err(refuse(why, "Invalid")),
                }
            };
            let params = match &policy.param_kind {
                None => vec![Value::Null],
                Some(kind) => match self.params(registry, kind, &binding, attributes).await {
                    Ok(found) if !found.is_empty() => found,
                    Ok(_) if binding.param_ref.as_ref().is_some_and(|r| r.deny_when_missing) => {
                        failed("failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction".into())?;
                        continue;
                    }
                    Ok(_) => continue,
                    Err(why) => {
                        failed(why)?;
                        continue;
                    }
                },
            };
            // With a selector, the policy is evaluated once per param object; any violation counts.
            for param in &params {
                let context = match objects.context(&seen, request, namespace, param, &policy.variables) {
                    Ok(context) => context,
                    Err(why) => {
                        failed(why)?;
                        continue;
                    }
                };
                match conditions_hold(&policy.conditions, &context) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(why) => {
                        failed(why)?;
                        continue;
                    }
                }
                for (key, expression) in &policy.audit_annotations {
                    match expression.eval(&context) {
                        Ok(CelValue::String(value)) => {
                            if let Some(sink) = attributes.warnings {
                                sink.annotate(format!("{policy_name}/{key}"), value.to_string());
                            }
                        }
                        Ok(CelValue::Null) => {}
                        Ok(_) => failed(format!("valueExpression '{}' resulted in error: the expression did not evaluate to a string or null", expression.text))?,
                        Err(why) => failed(format!("valueExpression '{}' resulted in error: {why}", expression.text))?,
                    }
                }
                for (index, validation) in policy.validations.iter().enumerate() {
                    let violated = match validation.expression.eval(&context) {
                        Ok(CelValue::Bool(holds)) => !holds,
                        Ok(_) => {
                            failed(format!("expression '{}' resulted in error: the expression did not evaluate to a bool", validation.expression.text))?;
                            continue;
                        }
                        Err(why) => {
                            failed(format!("expression '{}' resulted in error: {why}", validation.expression.text))?;
                            continue;
                        }
                    };
                    if !violated {
                        continue;
                    }
                    let message = message_of(validation, &context);
                    if binding.audit {
                        let actions: Vec<&str> = [(binding.deny, "Deny"), (binding.warn, "Warn"), (binding.audit, "Audit")]
                            .into_iter().filter_map(|(on, action)| on.then_some(action)).collect();
                        audited.push(serde_json::json!({"message": message, "policy": policy_name, "binding": binding.name,
                            "expressionIndex": index, "validationActions": actions}));
                        if let Some(sink) = attributes.warnings {
                            sink.annotate(VALIDATION_FAILURE.to_owned(), Value::Array(audited.clone()).to_string());
                        }
                    }
                    if binding.warn {
                        if let Some(sink) = attributes.warnings {
                            sink.add(format!("Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding '{}': {message}", binding.name));
                        }
                    }
                    if binding.deny {
                        return Err(refuse(message, &validation.reason));
                    }
                }
            }
        }
        Ok(())
    }
}

impl PolicyAdmission {
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
        if !matches.object_selector.is_empty()
            && !matches.object_selector.matches(labels(attributes.object).as_ref())
            && !(attributes.old.is_some() && matches.object_selector.matches(labels(attributes.old).as_ref()))
        {
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

/// The `request` variable of a write: kube's AdmissionRequest (made once per write, whatever the policies).
pub fn request_of(attributes: &Attributes<'_>) -> Value {
    review::request("", attributes, attributes.object).get_mut("request").map(Value::take).unwrap_or(Value::Null)
}

/// The CEL variables of a write: `object`, `oldObject`, `request`, `namespaceObject`, `params` (null without) and
/// `variables`, each of which may read the ones before it (one that fails is left out: an expression reading it
/// then fails).
pub fn context(attributes: &Attributes<'_>, request: &Value, namespace: Option<&Value>, params: &Value, variables: &[(String, Expression)])
    -> Result<Cel<'static>, String> {
    Objects { managed_fields: true }.context(attributes, request, namespace, params, variables)
}

/// CEL's standard functions and macros, registered once: each evaluation's variables go in a scope of their own
/// above them (registering them is most of what making a context costs).
static FUNCTIONS: std::sync::LazyLock<Cel<'static>> = std::sync::LazyLock::new(Cel::default);

/// How a write's objects become CEL values.
struct Objects {
    /// Whether `metadata.managedFields` is kept (only an expression that names it reads it).
    managed_fields: bool,
}

impl Objects {
    fn context(&self, attributes: &Attributes<'_>, request: &Value, namespace: Option<&Value>, params: &Value, variables: &[(String, Expression)])
        -> Result<Cel<'static>, String> {
        let mut context = FUNCTIONS.new_inner_scope();
        let null = Value::Null;
        for (name, value) in [("object", attributes.object.unwrap_or(&null)), ("oldObject", attributes.old.unwrap_or(&null)), ("request", request),
            ("namespaceObject", namespace.unwrap_or(&null)), ("params", params)] {
            context.add_variable_from_value(name, self.object(value));
        }
        let mut values: HashMap<String, CelValue> = HashMap::new();
        context.add_variable_from_value("variables", values.clone());
        for (name, expression) in variables {
            if let Ok(value) = expression.eval(&context) {
                values.insert(name.clone(), value);
                context.add_variable_from_value("variables", values.clone());
            }
        }
        Ok(context)
    }

    /// An object as CEL's value, its `metadata.managedFields` left out unless kept.
    fn object(&self, object: &Value) -> CelValue {
        match object {
            Value::Object(fields) if !self.managed_fields => map(fields, |key, value| match (key, value) {
                ("metadata", Value::Object(metadata)) => Some(map(metadata, |key, value| (key != "managedFields").then(|| cel(value)))),
                _ => Some(cel(value)),
            }),
            other => cel(other),
        }
    }
}

/// A JSON value as CEL's, built directly (numbers as the serde conversion makes them: Int, else UInt, else Float).
fn cel(value: &Value) -> CelValue {
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => CelValue::Int(i),
            (None, Some(u)) => CelValue::UInt(u),
            _ => CelValue::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(items) => CelValue::List(Arc::new(items.iter().map(cel).collect())),
        Value::Object(fields) => map(fields, |_, value| Some(cel(value))),
    }
}

/// A JSON object as a CEL map of the entries `convert` keeps.
fn map(fields: &serde_json::Map<String, Value>, convert: impl Fn(&str, &Value) -> Option<CelValue>) -> CelValue {
    let entries: HashMap<CelKey, CelValue> = fields.iter()
        .filter_map(|(key, value)| Some((CelKey::String(Arc::new(key.clone())), convert(key, value)?))).collect();
    CelValue::Map(CelMap { map: Arc::new(entries) })
}

/// A violation's message: its `messageExpression`'s string, else its `message`, else kube's default.
fn message_of(validation: &Validation, context: &Cel) -> String {
    if let Some(Ok(CelValue::String(text))) = validation.message_expression.as_ref().map(|e| e.eval(context)) {
        if !text.trim().is_empty() && !text.contains('\n') {
            return text.to_string();
        }
    }
    validation.message.clone().unwrap_or_else(|| format!("failed expression: {}", validation.expression.text))
}

/// Whether every `matchConditions` entry holds for the write: `Ok(false)` as soon as one is false, `Err` naming
/// the first that cannot be evaluated to a bool.
pub fn conditions_hold(conditions: &[(String, Expression)], context: &Cel) -> Result<bool, String> {
    for (name, condition) in conditions {
        match condition.eval(context) {
            Ok(CelValue::Bool(true)) => {}
            Ok(CelValue::Bool(false)) => return Ok(false),
            Ok(_) => return Err(format!("matchCondition '{name}' did not evaluate to a bool")),
            Err(why) => return Err(format!("matchCondition '{name}' resulted in error: {why}")),
        }
    }
    Ok(true)
}

/// A cause for each expression of `items[].field` that does not compile (kube refuses them at write).
pub fn check_expressions(items: Option<&Value>, path: &str, field: &str, causes: &mut Vec<Cause>) {
    for (index, item) in items.and_then(Value::as_array).into_iter().flatten().enumerate() {
        let Some(expression) = item.get(field).and_then(Value::as_str) else { continue };
        let path = format!("{path}[{index}].{field}");
        if expression.trim().is_empty() {
            causes.push(Cause::required(&path));
        } else if let Err(error) = Program::compile(expression) {
            causes.push(Cause::invalid(&path, expression, &format!("compilation failed: {error}")));
        }
    }
}

/// kube's code for a validation's `reason`.
fn code_of(reason: &str) -> (u16, &'static str) {
    match reason {
        "Forbidden" => (403, "Forbidden"),
        "Unauthorized" => (401, "Unauthorized"),
        "RequestEntityTooLarge" => (413, "RequestEntityTooLarge"),
        _ => (422, "Invalid"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_become_the_cel_values_the_serde_conversion_makes_without_managed_fields_unless_kept() {
        let object = serde_json::json!({"apiVersion": "v1", "metadata": {"name": "n", "labels": {"a": "b"}, "managedFields": [{"manager": "m"}]},
            "data": {"k": "v"}, "spec": {"replicas": 3, "big": u64::MAX, "ratio": 0.5, "on": true, "none": null, "list": [1, "x"]}});
        let serde = kube_core::cel::cel::to_value(&object).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Objects { managed_fields: true }.object(&object), serde);
        let mut without = object.clone();
        without["metadata"].as_object_mut().map(|m| m.remove("managedFields"));
        let serde = kube_core::cel::cel::to_value(&without).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Objects { managed_fields: false }.object(&object), serde);
    }

    #[test]
    fn a_policy_knows_which_costly_variables_its_expressions_name() {
        let policy = Policy::parse(&serde_json::json!({"spec": {
            "validations": [{"expression": "object.metadata.name != ''", "messageExpression": "'x' + request.name"}],
            "matchConditions": [{"name": "c", "expression": "oldObject == null"}]}}));
        assert!(policy.uses.request && policy.uses.old && !policy.uses.namespace && !policy.uses.managed_fields);
    }
}
