//! MutatingAdmissionPolicies (`admissionregistration.k8s.io/v1beta1`, kube 1.34's shape), per space and scoped as
//! validating policies are (`admission_policy::matching`): a binding applies its policy (of the same space) to
//! that space's creates and updates; the system space's bindings apply to every space their
//! `admission.kspaces.io/applicable-tenants` selector matches. They run in the mutating phase after the built-in
//! admission and before the mutating webhooks (kube's order), on the object as the request sent it: for each
//! binding whose policy and binding match the write and whose `matchConditions` hold, the policy's `mutations` run
//! in order, each on the object as the one before left it. `ApplyConfiguration` merges what its expression builds
//! (`Object{spec: Object.spec{...}}`) into the object as server-side apply merges (by the kind's schema: maps by
//! key, `map` lists by key, atomic lists replaced); `JSONPatch` applies the list of `JSONPatch{op, path, value}`
//! its expression returns. A mutation that fails follows `failurePolicy`: `Fail` refuses the write with kube's
//! message, `Ignore` leaves the object as the policy found it. A policy with `reinvocationPolicy: IfNeeded` runs
//! once more when a later policy or mutating webhook changed the object (`registry::admission::Reinvocation`). Validation (the kind's, then validating policies and
//! webhooks) judges the mutated object. `docs/admission-webhooks.md`.

use std::sync::Arc;

use async_trait::async_trait;
use kspaces_storage::SpaceName;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use super::admission_policy::cel::{self, check_expression, check_expressions, conditions_hold, request_of, Expression, Objects, Uses};
use super::admission_policy::matching::{self, Binding, Common, Lazy, Matcher, Policies, PolicyKind, GROUP};
use super::admission_webhook::config::text;
use super::defaults::{groups, Write};
use super::{verbs, Context, Kind, Rules};
use crate::registry::admission::{Admission, Attributes, Operation, Reinvocation};
use crate::registry::strategy::{Part, Strategy};
use crate::registry::{managed_fields, GenericStore, ResourceInfo};
use crate::status::{ApiError, ApiResult, Cause};

const VERSION: &str = "v1beta1";
const POLICY: &str = "MutatingAdmissionPolicy";
const BINDING: &str = "MutatingAdmissionPolicyBinding";
const DEFINITIONS: &str = "io.k8s.api.admissionregistration.v1beta1.";

pub const KIND: Kind = Kind { rows, definitions, rules };

fn row(kind: &str, plural: &str) -> ResourceInfo {
    ResourceInfo {
        group: GROUP.into(),
        version: VERSION.into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_ascii_lowercase(),
        short_names: vec![],
        categories: vec![],
        namespaced: false,
        subresources: vec![],
        verbs: verbs(crate::builtin::ALL_VERBS),
        definition: Some(format!("{DEFINITIONS}{kind}")),
        system_only: false,
        custom: None,
    }
}

fn rows() -> Vec<ResourceInfo> {
    vec![row(POLICY, "mutatingadmissionpolicies"), row(BINDING, "mutatingadmissionpolicybindings")]
}

/// The two kinds' definitions: k8s-openapi (for kube 1.33) has them as `v1alpha1` only, in the same shape as
/// kube 1.34's `v1beta1`; their schemas are generated from those types and renamed.
fn definitions() -> Map<String, Value> {
    use k8s_openapi::api::admissionregistration::v1alpha1 as alpha;
    const ALPHA: &str = "io.k8s.api.admissionregistration.v1alpha1.";
    let mut generator = SchemaSettings::openapi3().with(|s| s.meta_schema = None).into_generator();
    let _ = generator.subschema_for::<alpha::MutatingAdmissionPolicy>();
    let _ = generator.subschema_for::<alpha::MutatingAdmissionPolicyBinding>();
    generator.take_definitions(true).into_iter().filter(|(name, _)| name.starts_with(ALPHA)).filter_map(|(name, schema)| {
        let mut schema: Value = serde_json::from_str(&schema.to_string().replace(ALPHA, DEFINITIONS)).ok()?;
        if let Some(Value::Array(required)) = schema.get_mut("required") {
            required.retain(|field| field != "metadata");
        }
        if schema.get("required").and_then(Value::as_array).is_some_and(Vec::is_empty) {
            schema.as_object_mut().map(|s| s.remove("required"));
        }
        Some((name.replace(ALPHA, DEFINITIONS), schema))
    }).collect()
}

fn rules(context: &Context, rules: &mut Rules) {
    rules.strategy(GROUP, POLICY, Arc::new(PolicyStrategy));
    rules.strategy(GROUP, BINDING, Arc::new(BindingStrategy));
    let policies = Arc::new(Policies::<Policy>::new(context.tree.clone(), context.tenants.clone()));
    rules.observe(policies.clone());
    let matcher = Matcher { namespaces: context.resources.by_kind("", "Namespace").cloned(), resolver: context.resolver.clone() };
    rules.admit(Arc::new(PolicyMutation { policies, matcher }));
}

/// MutatingAdmissionPolicy: kube's defaults, and what kube requires of one (422 at write): what it matches,
/// at least one mutation of a known patch type whose expression compiles.
struct PolicyStrategy;

#[async_trait]
impl Strategy for PolicyStrategy {
    fn prepare_create(&self, _: &ResourceInfo, _: &SpaceName, _: Option<&kspaces_authz::Caller>, object: &mut Value) {
        groups::mutating_admission_policy(object, Write::Create);
    }

    fn prepare_update(&self, _: &ResourceInfo, _: &SpaceName, _: &Value, new: &mut Value, _: Part) {
        groups::mutating_admission_policy(new, Write::Update);
    }

    fn validate(&self, _: &ResourceInfo, object: &Value, _: Option<&Value>, causes: &mut Vec<Cause>) {
        let spec = object.get("spec").unwrap_or(&Value::Null);
        matching::validate_common(spec, causes);
        let mutations = spec.get("mutations").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        if mutations.is_empty() {
            causes.push(Cause::required("spec.mutations"));
        }
        for (index, mutation) in mutations.iter().enumerate() {
            validate_mutation(mutation, &format!("spec.mutations[{index}]"), causes);
        }
        for (field, allowed) in [("failurePolicy", &["Fail", "Ignore"]), ("reinvocationPolicy", &["IfNeeded", "Never"])] {
            match spec.get(field).and_then(Value::as_str) {
                Some(value) if !allowed.contains(&value) => causes.push(Cause::not_supported(format!("spec.{field}"), value, allowed)),
                _ => {}
            }
        }
        for list in ["matchConditions", "variables"] {
            check_expressions(spec.get(list), &format!("spec.{list}"), "expression", causes);
        }
    }
}

/// One mutation: a known `patchType`, its own expression set (and the other not), compiling; an apply
/// configuration must construct an `Object`.
fn validate_mutation(mutation: &Value, path: &str, causes: &mut Vec<Cause>) {
    let (field, other) = match text(mutation, "patchType") {
        "ApplyConfiguration" => ("applyConfiguration", "jsonPatch"),
        "JSONPatch" => ("jsonPatch", "applyConfiguration"),
        "" => return causes.push(Cause::required(format!("{path}.patchType"))),
        unknown => return causes.push(Cause::not_supported(format!("{path}.patchType"), unknown, &["ApplyConfiguration", "JSONPatch"])),
    };
    if mutation.get(other).is_some_and(|o| !o.is_null()) {
        causes.push(Cause::forbidden(format!("{path}.{other}"), &format!("must not be set when patchType is {}", text(mutation, "patchType"))));
    }
    let expression = mutation.get(field).map(|f| text(f, "expression")).unwrap_or_default();
    let expression_path = format!("{path}.{field}.expression");
    let before = causes.len();
    check_expression(expression, &expression_path, causes);
    if causes.len() == before && field == "applyConfiguration" && !Expression::new(expression).constructs("Object") {
        causes.push(Cause::invalid(&expression_path, expression, "must be an Object construction, such as Object{spec: Object.spec{...}}"));
    }
}

/// MutatingAdmissionPolicyBinding: kube's defaults, and what kube requires of one.
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
        matching::validate_binding(object.get("spec").unwrap_or(&Value::Null), causes);
    }
}

struct Mutation {
    /// `JSONPatch`, else `ApplyConfiguration`.
    json_patch: bool,
    expression: Expression,
}

struct Policy {
    common: Common,
    mutations: Vec<Mutation>,
    /// `reinvocationPolicy: IfNeeded`.
    reinvoke: bool,
    uses: Uses,
}

impl PolicyKind for Policy {
    const POLICY: &'static str = POLICY;
    const BINDING: &'static str = BINDING;
    const FOLLOWS: &'static [(&'static str, &'static str)] = &[(GROUP, POLICY), (GROUP, BINDING)];

    fn parse(policy: &Value) -> Policy {
        let spec = policy.get("spec").unwrap_or(&Value::Null);
        let mutations: Vec<Mutation> = spec.get("mutations").and_then(Value::as_array).into_iter().flatten().map(|m| {
            let json_patch = text(m, "patchType") == "JSONPatch";
            let field = if json_patch { "jsonPatch" } else { "applyConfiguration" };
            Mutation { json_patch, expression: Expression::new(m.get(field).map(|f| text(f, "expression")).unwrap_or_default()) }
        }).collect();
        let named = ["matchConditions", "variables"].into_iter()
            .flat_map(|list| spec.get(list).and_then(Value::as_array).into_iter().flatten())
            .filter_map(|item| item.get("expression")?.as_str());
        let uses = Uses::of(named.chain(mutations.iter().map(|m| m.expression.text.as_str())));
        Policy { common: Common::parse(spec), mutations, reinvoke: text(spec, "reinvocationPolicy") == "IfNeeded", uses }
    }
}

/// The admission plugin: mutating phase, before the mutating webhooks.
struct PolicyMutation {
    policies: Arc<Policies<Policy>>,
    matcher: Matcher,
}

#[async_trait]
impl Admission for PolicyMutation {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        self.policies.any() && operation != Operation::Delete && !Policies::<Policy>::owns(resource)
    }

    async fn admit(&self, _: &GenericStore, _: &Attributes<'_>) -> ApiResult<()> {
        Ok(())
    }

    /// kube's reinvocation (`Reinvocation`): a policy with `IfNeeded` that ran before a later policy or mutating
    /// webhook changed the object runs once more, in order, in the second round.
    async fn default_round(&self, registry: &GenericStore, attributes: &Attributes<'_>, object: &mut Value, round: &Reinvocation) -> ApiResult<()> {
        if attributes.caller.is_none() {
            return Ok(());
        }
        let mut lazy = Lazy::default();
        round.start(REINVOCATION, object);
        for (name, binding, policy) in &self.policies.of(attributes.space) {
            let id = Arc::as_ptr(binding) as usize;
            if !round.runs(REINVOCATION, id) {
                continue;
            }
            if let Some(changed) = self.mutate_once(registry, attributes, &mut lazy, name, binding, policy, object).await? {
                round.ran(REINVOCATION, id, changed, policy.reinvoke);
            }
        }
        round.finish(REINVOCATION, object);
        Ok(())
    }
}

/// The policies' name in a write's `Reinvocation`.
const REINVOCATION: &str = "MutatingAdmissionPolicy";

impl PolicyMutation {
    /// Runs `policy`'s mutations on `object` if the write meets it and its binding: `None` when it does not,
    /// else whether the object changed.
    #[allow(clippy::too_many_arguments)]
    async fn mutate_once(&self, registry: &GenericStore, attributes: &Attributes<'_>, lazy: &mut Lazy, name: &str, binding: &Binding,
        policy: &Policy, object: &mut Value) -> ApiResult<Option<bool>> {
        let current = object.clone();
        let seen = Attributes { object: Some(&current), old: attributes.old.filter(|_| policy.uses.old), ..*attributes };
        if !self.matcher.meets_both(registry, &seen, &policy.common.matches, binding, policy.uses.namespace, lazy).await? {
            return Ok(None);
        }
        let failed = |why: String| -> ApiResult<Option<bool>> {
            match policy.common.ignore_failures {
                true => Ok(Some(false)),
                false => Err(ApiError::new(403, "Invalid", format!("policy '{name}' with binding '{}' denied request: {why}", binding.name))),
            }
        };
        let params = match self.matcher.params_for(registry, policy.common.param_kind.as_ref(), binding, &seen).await {
            Ok(Some(params)) => params,
            Ok(None) => return Ok(None),
            Err(why) => return failed(why),
        };
        let request = if policy.uses.request { request_of(&seen) } else { Value::Null };
        let objects = Objects { managed_fields: policy.uses.managed_fields };
        let (mut working, mut matched) = (current.clone(), false);
        // With a selector, the policy runs once per param object, each on what the one before left.
        for param in &params {
            let on = |working: &Value| objects.context(&Attributes { object: Some(working), ..seen }, &request, lazy.namespace(), param, &policy.common.variables);
            let context = match on(&working) {
                Ok(context) => context,
                Err(why) => return failed(why),
            };
            match conditions_hold(&policy.common.conditions, &context) {
                Ok(true) => matched = true,
                Ok(false) => continue,
                Err(why) => return failed(why),
            }
            for mutation in &policy.mutations {
                let next = on(&working).and_then(|context| mutate(mutation, &context, &working, attributes.resource));
                match next {
                    Ok(next) => working = next,
                    Err(why) => return failed(why),
                }
            }
        }
        if !matched {
            return Ok(None);
        }
        let changed = working != *object;
        *object = working;
        Ok(Some(changed))
    }
}

/// `object` as `mutation` changes it.
fn mutate(mutation: &Mutation, context: &kube_core::cel::cel::Context, object: &Value, resource: &ResourceInfo) -> Result<Value, String> {
    let expression = &mutation.expression.text;
    let built = mutation.expression.eval(context).and_then(|value| cel::json(&value))
        .map_err(|why| format!("expression '{expression}' resulted in error: {why}"))?;
    if mutation.json_patch {
        if !built.is_array() {
            return Err(format!("expression '{expression}' must evaluate to a list of JSONPatch"));
        }
        let patch: json_patch::Patch = serde_json::from_value(built).map_err(|e| format!("expression '{expression}' did not build a JSON patch: {e}"))?;
        let mut patched = object.clone();
        // Within a request's JSON patch bounds (operations, copied bytes, depth).
        crate::patch::json::apply(&mut patched, &patch).map_err(|e| e.message)?;
        return Ok(patched);
    }
    if !built.is_object() {
        return Err(format!("expression '{expression}' must evaluate to an Object"));
    }
    Ok(crate::fieldmanager::merge_applied(object, &built, managed_fields::view(resource)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_definitions_are_kube_1_34s_v1beta1_names() {
        let definitions = definitions();
        let policy = definitions.get("io.k8s.api.admissionregistration.v1beta1.MutatingAdmissionPolicy").unwrap_or_else(|| panic!("{:?}", definitions.keys()));
        assert!(!policy.to_string().contains("v1alpha1"), "{policy}");
        assert!(definitions.contains_key("io.k8s.api.admissionregistration.v1beta1.JSONPatch"));
        assert!(policy.pointer("/properties/spec").is_some(), "{policy}");
    }
}
