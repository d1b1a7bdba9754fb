//! A webhook configuration's webhooks: kube's validation of a `ValidatingWebhookConfiguration` or
//! `MutatingWebhookConfiguration` (`ValidateValidatingWebhookConfiguration`, in kube's words and field paths),
//! and the parsed form the admission plugins match requests against.

use serde_json::Value;

use kspaces_storage::SpaceName;

use crate::registry::selector::LabelSelector;
use crate::status::Cause;
use crate::tenancy::{TenantCache, Tree};

/// The annotation that narrows a system-space configuration to the tenants whose labels its selector matches.
pub const APPLICABLE_TENANTS: &str = "admission.kspaces.io/applicable-tenants";

/// Where a configuration or policy binding of the system space applies, by its `APPLICABLE_TENANTS` annotation:
/// `None` everywhere, `Some(Err)` (a selector that does not parse) nowhere. Another space's applies in it alone.
pub type Applicable = Option<Result<LabelSelector, ()>>;

/// `object`'s `Applicable`, for an object of `space`.
pub fn applicable(object: &Value, space: &SpaceName) -> Applicable {
    let selector = object.pointer("/metadata/annotations").and_then(|a| a.get(APPLICABLE_TENANTS)).and_then(Value::as_str);
    selector.filter(|_| space.is_system()).map(|s| LabelSelector::parse(s).map_err(drop))
}

/// Whether a system-space object with `applicable` applies to requests in `space` (its tenant's labels).
pub fn applies(applicable: &Applicable, tenants: &TenantCache, tree: &Tree, space: &SpaceName) -> bool {
    match applicable {
        None => true,
        Some(Err(())) => false,
        Some(Ok(selector)) => tenants.with_labels(&tree.tenant_of(space), |labels| selector.matches(labels.unwrap_or(&Value::Null))),
    }
}

const OPERATIONS: &[&str] = &["*", "CREATE", "UPDATE", "DELETE", "CONNECT"];

/// Every reason `object`, a webhook configuration, is invalid. `mutating` adds `reinvocationPolicy`.
pub fn validate(object: &Value, mutating: bool, causes: &mut Vec<Cause>) {
    if let Some(selector) = object.pointer("/metadata/annotations").and_then(|a| a.get(APPLICABLE_TENANTS)).and_then(Value::as_str) {
        if let Err(error) = LabelSelector::parse(selector) {
            let field = format!("metadata.annotations[{APPLICABLE_TENANTS}]");
            causes.push(Cause::invalid(field, selector, &error.message));
        }
    }
    let webhooks = object.get("webhooks").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let mut names = std::collections::HashSet::new();
    for (i, webhook) in webhooks.iter().enumerate() {
        let field = format!("webhooks[{i}]");
        crate::kinds::admission_policy::check_expressions(webhook.get("matchConditions"), &format!("{field}.matchConditions"), "expression", causes);
        let name = text(webhook, "name");
        if name.is_empty() {
            causes.push(Cause::required(format!("{field}.name")));
        } else if !names.insert(name) {
            causes.push(Cause { reason: "FieldValueDuplicate", message: format!("Duplicate value: {name:?}"), field: format!("{field}.name") });
        } else if !is_fully_qualified(name) {
            causes.push(Cause::invalid(format!("{field}.name"), name, "should be a domain with at least three segments separated by dots"));
        }
        validate_webhook(webhook, &field, mutating, causes);
    }
}

/// A lowercase DNS subdomain of at least three labels (kube's `IsFullyQualifiedName`).
fn is_fully_qualified(name: &str) -> bool {
    crate::registry::validate::is_dns_subdomain(name) && name.split('.').count() >= 3
}

fn validate_webhook(webhook: &Value, field: &str, mutating: bool, causes: &mut Vec<Cause>) {
    for (j, rule) in webhook.get("rules").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default().iter().enumerate() {
        validate_rule(rule, &format!("{field}.rules[{j}]"), causes);
    }
    one_of(webhook, "failurePolicy", &["Fail", "Ignore"], field, causes);
    one_of(webhook, "matchPolicy", &["Exact", "Equivalent"], field, causes);
    match webhook.get("sideEffects").and_then(Value::as_str) {
        None | Some("") => causes.push(Cause::not_supported(format!("{field}.sideEffects"), "", &["None", "NoneOnDryRun"])),
        Some(_) => one_of(webhook, "sideEffects", &["None", "NoneOnDryRun"], field, causes),
    }
    if mutating {
        one_of(webhook, "reinvocationPolicy", &["Never", "IfNeeded"], field, causes);
    }
    if let Some(timeout) = webhook.get("timeoutSeconds").and_then(Value::as_i64) {
        if !(1..=30).contains(&timeout) {
            causes.push(Cause::invalid(format!("{field}.timeoutSeconds"), &timeout.to_string(), "the timeout value must be between 1 and 30 seconds"));
        }
    }
    let versions = strings(webhook.get("admissionReviewVersions"));
    if versions.is_empty() {
        causes.push(Cause { reason: "FieldValueRequired", message: "Required value: must specify one of v1, v1beta1".into(), field: format!("{field}.admissionReviewVersions") });
    } else if !versions.contains(&"v1") {
        causes.push(Cause::invalid(format!("{field}.admissionReviewVersions"), &format!("{versions:?}"), "must include v1: kspaces sends AdmissionReview v1 only"));
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        if let Some(value) = webhook.get(selector).filter(|v| !v.is_null()) {
            if let Err(why) = Selector::parse(value) {
                causes.push(Cause::invalid(format!("{field}.{selector}"), "", &why));
            }
        }
    }
    validate_client_config(webhook.get("clientConfig").unwrap_or(&Value::Null), &format!("{field}.clientConfig"), causes);
}

fn validate_rule(rule: &Value, field: &str, causes: &mut Vec<Cause>) {
    let operations = strings(rule.get("operations"));
    if operations.is_empty() {
        causes.push(Cause::required(format!("{field}.operations")));
    } else if operations.len() > 1 && operations.contains(&"*") {
        causes.push(Cause::invalid(format!("{field}.operations"), &format!("{operations:?}"), "if '*' is present, must not specify other operations"));
    }
    for (k, operation) in operations.iter().enumerate() {
        if !OPERATIONS.contains(operation) {
            causes.push(Cause::not_supported(format!("{field}.operations[{k}]"), operation, OPERATIONS));
        }
    }
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let items = strings(rule.get(key));
        if items.is_empty() {
            causes.push(Cause::required(format!("{field}.{key}")));
        } else if items.len() > 1 && items.contains(&"*") {
            causes.push(Cause::invalid(format!("{field}.{key}"), &format!("{items:?}"), &format!("if '*' is present, must not specify other {what}")));
        }
        if key == "apiVersions" {
            for (k, _) in items.iter().enumerate().filter(|(_, v)| v.is_empty()) {
                causes.push(Cause { reason: "FieldValueRequired", message: "Required value: version must not be empty".into(), field: format!("{field}.{key}[{k}]") });
            }
        }
    }
    validate_resources(&strings(rule.get("resources")), &format!("{field}.resources"), causes);
    if let Some(scope) = rule.get("scope").and_then(Value::as_str) {
        if !["Cluster", "Namespaced", "*"].contains(&scope) {
            causes.push(Cause::not_supported(format!("{field}.scope"), scope, &["Cluster", "Namespaced", "*"]));
        }
    }
}

/// kube's `validateResources`: `*` and `*/*` alone, `x/*` and `*/x` not beside what they already cover.
fn validate_resources(resources: &[&str], field: &str, causes: &mut Vec<Cause>) {
    if resources.is_empty() {
        causes.push(Cause::required(field));
    }
    let (mut wildcard_sub, mut wildcard_res) = (Vec::new(), Vec::new());
    let (mut double, mut single, mut plain) = (false, false, false);
    for (i, item) in resources.iter().enumerate() {
        if item.is_empty() {
            causes.push(Cause::required(format!("{field}[{i}]")));
            continue;
        }
        double |= *item == "*/*";
        single |= *item == "*";
        let Some((resource, sub)) = item.split_once('/') else {
            plain |= *item != "*";
            continue;
        };
        if wildcard_sub.contains(&resource) {
            causes.push(Cause::invalid(format!("{field}[{i}]"), item, &format!("if '{resource}/*' is present, must not specify {item}")));
        }
        if wildcard_res.contains(&sub) {
            causes.push(Cause::invalid(format!("{field}[{i}]"), item, &format!("if '*/{sub}' is present, must not specify {item}")));
        }
        if sub == "*" {
            wildcard_sub.push(resource);
        }
        if resource == "*" {
            wildcard_res.push(sub);
        }
    }
    if resources.len() > 1 && double {
        causes.push(Cause::invalid(field, &format!("{resources:?}"), "if '*/*' is present, must not specify other resources"));
    }
    if single && plain {
        causes.push(Cause::invalid(field, &format!("{resources:?}"), "if '*' is present, must not specify other resources without subresources"));
    }
}

/// kube's checks of a webhook's `clientConfig` (`field`): `url` xor `service`, and a base64 `caBundle`.
pub fn validate_client_config(config: &Value, field: &str, causes: &mut Vec<Cause>) {
    match (config.get("url").and_then(Value::as_str), config.get("service").filter(|s| !s.is_null())) {
        (Some(_), Some(_)) | (None, None) => causes.push(Cause { reason: "FieldValueRequired", message: "Required value: exactly one of url or service is required".into(), field: field.into() }),
        (Some(url), None) => {
            if let Err(why) = check_url(url) {
                causes.push(Cause::invalid(format!("{field}.url"), url, why));
            }
        }
        (None, Some(service)) => validate_service(service, &format!("{field}.service"), causes),
    }
    if let Some(bundle) = config.get("caBundle").and_then(Value::as_str) {
        use base64::Engine;
        if base64::engine::general_purpose::STANDARD.decode(bundle).is_err() {
            causes.push(Cause::invalid(format!("{field}.caBundle"), "", "must be base64-encoded PEM certificates"));
        }
    }
}

/// kube's `ValidateWebhookURL` for a webhook that must be `https`: a host, no user, query or fragment.
pub fn check_url(text: &str) -> Result<url::Url, &'static str> {
    let url = url::Url::parse(text).map_err(|_| "host must be specified")?;
    if url.scheme() != "https" {
        return Err("'https' is the only allowed URL scheme");
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("host must be specified");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("user information is not permitted in the URL");
    }
    if url.fragment().is_some() {
        return Err("fragments are not permitted in the URL");
    }
    if url.query().is_some() {
        return Err("query parameters are not permitted in the URL");
    }
    Ok(url)
}

fn validate_service(service: &Value, field: &str, causes: &mut Vec<Cause>) {
    for key in ["name", "namespace"] {
        if text(service, key).is_empty() {
            causes.push(Cause { reason: "FieldValueRequired", message: format!("Required value: service {key} is required"), field: format!("{field}.{key}") });
        }
    }
    if let Some(path) = service.get("path").and_then(Value::as_str) {
        if !path.starts_with('/') {
            causes.push(Cause::invalid(format!("{field}.path"), path, "must start with a '/'"));
        }
    }
    if let Some(port) = service.get("port").and_then(Value::as_i64) {
        if !(1..=65535).contains(&port) {
            causes.push(Cause::invalid(format!("{field}.port"), &port.to_string(), "port is not valid: must be between 1 and 65535, inclusive"));
        }
    }
}

fn one_of(webhook: &Value, key: &str, supported: &[&str], field: &str, causes: &mut Vec<Cause>) {
    if let Some(value) = webhook.get(key).and_then(Value::as_str) {
        if !supported.contains(&value) {
            causes.push(Cause::not_supported(format!("{field}.{key}"), value, supported));
        }
    }
}

pub(crate) fn strings(value: Option<&Value>) -> Vec<&str> {
    value.and_then(Value::as_array).map(|items| items.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

pub(crate) fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A `metav1.LabelSelector` (`matchLabels`, `matchExpressions`), matched against a set of labels.
#[derive(Clone, Debug, Default)]
pub struct Selector {
    labels: Vec<(String, String)>,
    expressions: Vec<(String, String, Vec<String>)>,
}

impl Selector {
    /// Parses a selector; why it is invalid, in kube's words, when it is.
    pub fn parse(value: &Value) -> Result<Selector, String> {
        let mut selector = Selector::default();
        if let Some(labels) = value.get("matchLabels").and_then(Value::as_object) {
            for (key, wanted) in labels {
                selector.labels.push((key.clone(), wanted.as_str().unwrap_or_default().to_owned()));
            }
        }
        for expression in value.get("matchExpressions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
            let (key, operator) = (text(expression, "key"), text(expression, "operator"));
            let values: Vec<String> = strings(expression.get("values")).into_iter().map(str::to_owned).collect();
            match operator {
                "In" | "NotIn" if values.is_empty() => return Err("values: Required value: must be specified when `operator` is 'In' or 'NotIn'".into()),
                "Exists" | "DoesNotExist" if !values.is_empty() => return Err("values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'".into()),
                "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
                other => return Err(format!("operator: Unsupported value: {other:?}: supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"")),
            }
            if key.is_empty() {
                return Err("key: Required value".into());
            }
            selector.expressions.push((key.to_owned(), operator.to_owned(), values));
        }
        Ok(selector)
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.expressions.is_empty()
    }

    /// Whether `labels` (an object's `metadata.labels`, or `None`) satisfies every requirement.
    pub fn matches(&self, labels: Option<&Value>) -> bool {
        let get = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        self.labels.iter().all(|(key, wanted)| get(key) == Some(wanted.as_str()))
            && self.expressions.iter().all(|(key, operator, values)| match operator.as_str() {
                "In" => get(key).is_some_and(|v| values.iter().any(|x| x == v)),
                "NotIn" => !get(key).is_some_and(|v| values.iter().any(|x| x == v)),
                "Exists" => get(key).is_some(),
                _ => get(key).is_none(),
            })
    }
}
