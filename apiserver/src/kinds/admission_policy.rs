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
//! `auditAnnotations`, and the violations of bindings with the `Audit` action, go to the request's audit event.
//! `status.typeChecking` is `type_check.rs`, written by `controllers::type_checking`. Not yet: the `authorizer`
//! variable. What MutatingAdmissionPolicies share with them (scope, matching, params, CEL) is in `matching.rs` and
//! `cel.rs` below. `docs/admission-webhooks.md`.

pub mod cel;
pub mod matching;
pub mod type_check;

use std::sync::Arc;

use async_trait::async_trait;
use kube_core::cel::cel::{Context as Cel, Value as CelValue};
use kspaces_storage::SpaceName;
use serde_json::Value;

use super::admission_webhook::config::text;
use super::defaults::{groups, Write};
use super::{Context, Kind, Rules};
use crate::registry::admission::{Admission, AdmissionPhase, Attributes, Operation};
use crate::registry::strategy::{Part, Strategy};
use crate::registry::{GenericStore, ResourceInfo};
use crate::status::{ApiError, ApiResult, Cause};
pub use cel::{check_expressions, conditions_hold, context, request_of, Expression};
use cel::{Objects, Uses};
use matching::{Common, Lazy, Matcher, Policies, PolicyKind, GROUP};

const POLICY: &str = "ValidatingAdmissionPolicy";
const BINDING: &str = "ValidatingAdmissionPolicyBinding";
/// kube's audit annotation of the violations of bindings with the `Audit` action.
const VALIDATION_FAILURE: &str = "validation.policy.admission.k8s.io/validation_failure";

pub const KIND: Kind = Kind::rules(|context: &Context, rules: &mut Rules| {
    rules.strategy(GROUP, POLICY, Arc::new(PolicyStrategy));
    rules.strategy(GROUP, BINDING, Arc::new(BindingStrategy));
    let policies = Arc::new(Policies::<Policy>::new(context.tree.clone(), context.tenants.clone()));
    rules.observe(policies.clone());
    let matcher = Arc::new(Matcher { namespaces: context.resources.by_kind("", "Namespace").cloned(), resolver: context.resolver.clone() });
    // A delete has no validating phase in the registry: policies judge it where its admission runs.
    rules.admit(Arc::new(PolicyAdmission { policies: policies.clone(), matcher: matcher.clone(), deletes: true }));
    rules.admit(Arc::new(PolicyAdmission { policies, matcher, deletes: false }));
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
        matching::validate_common(spec, causes);
        let empty = |key: &str| spec.get(key).and_then(Value::as_array).is_none_or(Vec::is_empty);
        if empty("validations") && empty("auditAnnotations") {
            causes.push(Cause { reason: "FieldValueRequired", field: "spec.validations".into(),
                message: "Required value: validations or auditAnnotations must contain at least one item".into() });
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
        matching::validate_binding(spec, causes);
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
    }
}

struct Validation {
    expression: Expression,
    message: Option<String>,
    message_expression: Option<Expression>,
    reason: String,
}

struct Policy {
    common: Common,
    validations: Vec<Validation>,
    /// `auditAnnotations`: each key with its `valueExpression`.
    audit_annotations: Vec<(String, Expression)>,
    /// Which variables its expressions read (by their text), so that a write builds only those.
    uses: Uses,
}

impl PolicyKind for Policy {
    const POLICY: &'static str = POLICY;
    const BINDING: &'static str = BINDING;
    const FOLLOWS: &'static [(&'static str, &'static str)] = &[(GROUP, POLICY), (GROUP, BINDING)];

    fn parse(policy: &Value) -> Policy {
        let spec = policy.get("spec").unwrap_or(&Value::Null);
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
            common: Common::parse(spec),
            validations,
            audit_annotations: spec.get("auditAnnotations").and_then(Value::as_array).into_iter().flatten()
                .map(|a| (text(a, "key").to_owned(), Expression::new(text(a, "valueExpression")))).collect(),
        }
    }
}

/// The admission plugin: after the built-in validating admission, before the validating webhooks (kube's order).
struct PolicyAdmission {
    policies: Arc<Policies<Policy>>,
    matcher: Arc<Matcher>,
    /// The plugin for deletes (mutating phase, the only one a delete has), else for creates and updates.
    deletes: bool,
}

#[async_trait]
impl Admission for PolicyAdmission {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        self.policies.any() && (operation == Operation::Delete) == self.deletes && !Policies::<Policy>::owns(resource)
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
        let (mut lazy, mut request) = (Lazy::default(), None);
        // The violations of bindings with the `Audit` action, one annotation for them all (kube's).
        let mut audited = Vec::new();
        for (policy_name, binding, policy) in applying {
            if !self.matcher.meets_both(registry, attributes, &policy.common.matches, &binding, policy.uses.namespace, &mut lazy).await? {
                continue;
            }
            let namespace = lazy.namespace();
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
                match policy.common.ignore_failures {
                    true => Ok(()),
                    false => Err(refuse(why, "Invalid")),
                }
            };
            let params = match self.matcher.params_for(registry, policy.common.param_kind.as_ref(), &binding, attributes).await {
                Ok(Some(found)) => found,
                Ok(None) => continue,
                Err(why) => {
                    failed(why)?;
                    continue;
                }
            };
            // With a selector, the policy is evaluated once per param object; any violation counts.
            for param in &params {
                let context = match objects.context(&seen, request, namespace, param, &policy.common.variables) {
                    Ok(context) => context,
                    Err(why) => {
                        failed(why)?;
                        continue;
                    }
                };
                match conditions_hold(&policy.common.conditions, &context) {
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

/// A violation's message: its `messageExpression`'s string, else its `message`, else kube's default.
fn message_of(validation: &Validation, context: &Cel) -> String {
    if let Some(Ok(CelValue::String(text))) = validation.message_expression.as_ref().map(|e| e.eval(context)) {
        if !text.trim().is_empty() && !text.contains('\n') {
            return text.to_string();
        }
    }
    validation.message.clone().unwrap_or_else(|| format!("failed expression: {}", validation.expression.text))
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
    fn a_policy_knows_which_costly_variables_its_expressions_name() {
        let policy = Policy::parse(&serde_json::json!({"spec": {
            "validations": [{"expression": "object.metadata.name != ''", "messageExpression": "'x' + request.name"}],
            "matchConditions": [{"name": "c", "expression": "oldObject == null"}]}}));
        assert!(policy.uses.request && policy.uses.old && !policy.uses.namespace && !policy.uses.managed_fields);
    }
}
