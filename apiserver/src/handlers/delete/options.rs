//! DeleteOptions of a request, read as kube-apiserver reads them: from the body (JSON, YAML or protobuf, already
//! decoded to JSON) when there is one, else from the query; then validated (422 `DeleteOptions.meta.k8s.io`).

use std::collections::HashMap;

use serde_json::Value;

use crate::apis::query::go_query_bool;
use crate::registry::deletion::{DeleteOptions, Propagation};
use crate::status::{ApiError, ApiResult, Cause};

/// Parsed delete options, plus what only the response depends on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requested {
    pub options: DeleteOptions,
    /// The legacy `orphanDependents`, as sent: `false` makes a delete that leaves the object pending answer 202.
    pub orphan_dependents: Option<bool>,
}

/// The fields as sent, before validation.
#[derive(Debug, Default)]
struct Raw {
    grace_period_seconds: Option<i64>,
    uid: Option<String>,
    resource_version: Option<String>,
    orphan_dependents: Option<bool>,
    propagation_policy: Option<String>,
    dry_run: Vec<String>,
    ignore_store_read_error: Option<bool>,
}

/// Options from a DeleteOptions body.
pub fn from_body(body: &Value) -> ApiResult<Requested> {
    let Some(map) = body.as_object() else {
        return Err(ApiError::bad_request(format!("json: cannot unmarshal {} into Go value of type v1.DeleteOptions", json_type(body))));
    };
    if let Some(kind) = map.get("kind").and_then(Value::as_str).filter(|k| !k.is_empty() && *k != "DeleteOptions") {
        return Err(ApiError::bad_request(format!("decoded object of kind {kind} cannot be converted to DeleteOptions")));
    }
    let preconditions = map.get("preconditions").filter(|p| !p.is_null());
    if let Some(p) = preconditions.filter(|p| !p.is_object()) {
        return Err(mistyped(p, "preconditions", "v1.Preconditions"));
    }
    let raw = Raw {
        grace_period_seconds: body_field(map.get("gracePeriodSeconds"), "gracePeriodSeconds", "int64", Value::as_i64)?,
        uid: body_field(preconditions.and_then(|p| p.get("uid")), "preconditions.uid", "types.UID", as_string)?,
        resource_version: body_field(preconditions.and_then(|p| p.get("resourceVersion")), "preconditions.resourceVersion", "string", as_string)?,
        orphan_dependents: body_field(map.get("orphanDependents"), "orphanDependents", "bool", Value::as_bool)?,
        propagation_policy: body_field(map.get("propagationPolicy"), "propagationPolicy", "v1.DeletionPropagation", as_string)?,
        dry_run: body_field(map.get("dryRun"), "dryRun", "[]string", string_list)?.unwrap_or_default(),
        ignore_store_read_error: body_field(map.get(IGNORE_READ_ERROR), IGNORE_READ_ERROR, "bool", Value::as_bool)?,
    };
    validate(raw)
}

/// Options from the query of a request without a body, as kube's parameter codec decodes them: values as sent
/// (an empty one included), `gracePeriodSeconds` an integer (400), `orphanDependents` apimachinery's query bool
/// (anything but `0` and `false` is true), and `uid` and `resourceVersion` as preconditions.
pub fn from_query(query: &HashMap<String, String>) -> ApiResult<Requested> {
    let raw = |name: &str| query.get(name).map(String::as_str);
    let grace_period_seconds = raw("gracePeriodSeconds").map(crate::handlers::list::go_int).transpose()?;
    let raw = Raw {
        grace_period_seconds,
        uid: raw("uid").filter(|v| !v.is_empty()).map(str::to_owned),
        resource_version: raw("resourceVersion").filter(|v| !v.is_empty()).map(str::to_owned),
        orphan_dependents: raw("orphanDependents").map(go_query_bool),
        propagation_policy: raw("propagationPolicy").map(str::to_owned),
        dry_run: raw("dryRun").map(|v| vec![v.to_owned()]).unwrap_or_default(),
        ignore_store_read_error: raw(IGNORE_READ_ERROR).map(go_query_bool),
    };
    validate(raw)
}

/// kube's `ValidateDeleteOptions`; the legacy `orphanDependents` is folded into the propagation policy.
fn validate(raw: Raw) -> ApiResult<Requested> {
    let mut causes = Vec::new();
    if let (Some(_), Some(policy)) = (raw.orphan_dependents, &raw.propagation_policy) {
        causes.push(Cause::invalid("propagationPolicy", policy, "orphanDependents and deletionPropagation cannot be both set"));
    }
    let propagation = raw.propagation_policy.as_deref().map(|p| (p, Propagation::parse(p)));
    if let Some((policy, None)) = propagation {
        causes.push(Cause::not_supported("propagationPolicy", policy, &["Foreground", "Background", "Orphan", "nil"]));
    }
    if raw.dry_run.iter().any(|d| d != "All") {
        // kube renders a list value as JSON (apimachinery's field.Error).
        let listed = serde_json::to_string(&raw.dry_run).unwrap_or_default();
        causes.push(Cause {
            reason: "FieldValueNotSupported",
            message: format!("Unsupported value: {listed}: supported values: \"All\""),
            field: "dryRun".to_owned(),
        });
    }
    if raw.ignore_store_read_error == Some(true) {
        causes.extend(unsafe_delete_conflicts(&raw));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid_options("DeleteOptions", causes));
    }
    let folded = raw.orphan_dependents.map(|orphan| if orphan { Propagation::Orphan } else { Propagation::Background });
    let options = DeleteOptions {
        precondition_uid: raw.uid,
        precondition_resource_version: raw.resource_version,
        propagation: propagation.and_then(|(_, p)| p).or(folded),
        grace_period_seconds: raw.grace_period_seconds,
        dry_run: !raw.dry_run.is_empty(),
        ignore_store_read_error: raw.ignore_store_read_error == Some(true),
    };
    Ok(Requested { options, orphan_dependents: raw.orphan_dependents })
}

/// kube's DeleteOptions field (and query parameter) that removes an object whose stored bytes cannot be read.
pub const IGNORE_READ_ERROR: &str = "ignoreStoreReadErrorWithClusterBreakingPotential";

/// kube's `ValidateDeleteOptions` for an unsafe delete: it is the object's removal outright, so no dry run, no
/// propagation, no grace period and no preconditions go with it.
fn unsafe_delete_conflicts(raw: &Raw) -> Vec<Cause> {
    let why = format!("cannot be set together with {IGNORE_READ_ERROR}");
    let mut causes = Vec::new();
    let mut conflict = |set: bool, field: &str| {
        if set {
            causes.push(Cause::forbidden(field, &why));
        }
    };
    conflict(!raw.dry_run.is_empty(), "dryRun");
    conflict(raw.propagation_policy.is_some() || raw.orphan_dependents.is_some(), "propagationPolicy");
    conflict(raw.grace_period_seconds.is_some_and(|seconds| seconds != 0), "gracePeriodSeconds");
    conflict(raw.uid.is_some() || raw.resource_version.is_some(), "preconditions");
    causes
}

/// One optional body field: absent and null are `None`; a value of the wrong JSON type is kube's 400.
fn body_field<T>(value: Option<&Value>, field: &str, go_type: &str, read: impl Fn(&Value) -> Option<T>) -> ApiResult<Option<T>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => read(value).map(Some).ok_or_else(|| mistyped(value, field, go_type)),
    }
}

fn mistyped(value: &Value, field: &str, go_type: &str) -> ApiError {
    let what = match value {
        Value::Number(n) if !n.is_i64() => format!("number {n}"),
        other => json_type(other).to_owned(),
    };
    ApiError::bad_request(format!("json: cannot unmarshal {what} into Go struct field DeleteOptions.{field} of type {go_type}"))
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn as_string(value: &Value) -> Option<String> {
    value.as_str().map(str::to_owned)
}

fn string_list(value: &Value) -> Option<Vec<String>> {
    value.as_array()?.iter().map(as_string).collect()
}

#[cfg(test)]
mod tests;
