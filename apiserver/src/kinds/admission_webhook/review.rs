//! `admission.k8s.io/v1` AdmissionReview: the request kube-apiserver sends a webhook, and the checks and
//! reading of its answer (uid, allowed, status, JSONPatch, warnings), with kube's messages.

use base64::Engine;
use serde_json::{json, Value};

use crate::registry::admission::{Attributes, Operation};
use crate::registry::strategy::Part;
use crate::status::ApiError;

/// The AdmissionReview sent for one write: kube's whole `AdmissionRequest`, `object` the object as it stands.
pub fn request(uid: &str, attributes: &Attributes<'_>, object: Option<&Value>) -> Value {
    let resource = attributes.resource;
    let kind = json!({"group": resource.group, "version": resource.version, "kind": resource.kind});
    let gvr = json!({"group": resource.group, "version": resource.version, "resource": resource.plural});
    let operation = operation(attributes.operation);
    let options_kind = match attributes.operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
    };
    let mut options = json!({"apiVersion": "meta.k8s.io/v1", "kind": options_kind});
    if attributes.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    let mut request = json!({
        "uid": uid,
        "kind": kind,
        "resource": gvr,
        "requestKind": kind,
        "requestResource": gvr,
        "name": attributes.name,
        "operation": operation,
        "userInfo": user_info(attributes),
        "object": object.cloned().unwrap_or(Value::Null),
        "oldObject": attributes.old.cloned().unwrap_or(Value::Null),
        "dryRun": attributes.dry_run,
        "options": options,
    });
    if let Some(sub) = subresource(attributes.part) {
        request["subResource"] = json!(sub);
    }
    if let Some(namespace) = attributes.namespace {
        request["namespace"] = json!(namespace);
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}

fn user_info(attributes: &Attributes<'_>) -> Value {
    match attributes.caller {
        Some(caller) => {
            let mut info = json!({"username": caller.user.name, "groups": caller.user.groups});
            if !caller.user.uid.is_empty() {
                info["uid"] = json!(caller.user.uid);
            }
            info
        }
        None => json!({"username": "system:apiserver", "groups": ["system:masters"]}),
    }
}

pub fn operation(operation: Operation) -> &'static str {
    match operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
    }
}

/// The subresource a write reaches (empty for the main resource).
pub fn subresource(part: Part) -> Option<&'static str> {
    match part {
        Part::Main => None,
        Part::Status => Some("status"),
        Part::Finalize => Some("finalize"),
        Part::Approval => Some("approval"),
    }
}

/// A webhook's answer, checked.
pub struct Answer {
    pub allowed: bool,
    pub status: Value,
    /// The decoded JSONPatch of a mutating webhook's answer.
    pub patch: Option<json_patch::Patch>,
    pub warnings: Vec<String>,
    /// `auditAnnotations`: (key, value), recorded as `<webhook name>/<key>`.
    pub audit_annotations: Vec<(String, String)>,
}

/// Reads `body` as the answer to the review `uid`; why it is not a valid one, in kube's words.
pub fn answer(body: &[u8], uid: &str, mutating: bool) -> Result<Answer, String> {
    let review: Value = serde_json::from_slice(body).map_err(|e| format!("received invalid webhook response: the answer is not JSON: {e}"))?;
    if review.get("apiVersion").and_then(Value::as_str) != Some("admission.k8s.io/v1") || review.get("kind").and_then(Value::as_str) != Some("AdmissionReview") {
        return Err(format!(
            "received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {}, Kind={}",
            review.get("apiVersion").and_then(Value::as_str).unwrap_or_default(), review.get("kind").and_then(Value::as_str).unwrap_or_default()));
    }
    let Some(response) = review.get("response").filter(|r| r.is_object()) else {
        return Err("received invalid webhook response: webhook response was absent".into());
    };
    let got = response.get("uid").and_then(Value::as_str).unwrap_or_default();
    if got != uid {
        return Err(format!("received invalid webhook response: expected response.uid={uid:?}, got {got:?}"));
    }
    let allowed = response.get("allowed").and_then(Value::as_bool).unwrap_or(false);
    let patch = match (response.get("patch").and_then(Value::as_str), response.get("patchType").and_then(Value::as_str)) {
        (None, None) => None,
        (Some(_), _) if !mutating => return Err("received invalid webhook response: validating webhook may not return a patch".into()),
        (Some(patch), Some("JSONPatch")) => {
            let bytes = base64::engine::general_purpose::STANDARD.decode(patch).map_err(|e| format!("received invalid webhook response: the patch is not base64: {e}"))?;
            Some(serde_json::from_slice(&bytes).map_err(|e| format!("received invalid webhook response: the patch is not a JSONPatch: {e}"))?)
        }
        (Some(_), other) => return Err(format!("received invalid webhook response: unsupported patch type {:?}", other.unwrap_or_default())),
        (None, Some(_)) => None,
    };
    let warnings = response.get("warnings").and_then(Value::as_array).map(|w| w.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default();
    let audit_annotations = response.get("auditAnnotations").and_then(Value::as_object).into_iter().flatten()
        .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_owned()))).collect();
    Ok(Answer { allowed, status: response.get("status").cloned().unwrap_or(Value::Null), patch, warnings, audit_annotations })
}

/// kube's `ToStatusErr`: the refusal a client gets when webhook `name` does not allow the request.
pub fn denied(name: &str, status: &Value) -> ApiError {
    let code = status.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok()).filter(|c| (400..600).contains(c)).unwrap_or(400);
    let message = status.get("message").and_then(Value::as_str).filter(|m| !m.is_empty());
    let reason = status.get("reason").and_then(Value::as_str).unwrap_or_default();
    let denied_by = format!("admission webhook {name:?} denied the request");
    let message = match (message, reason) {
        (Some(message), _) => format!("{denied_by}: {message}"),
        (None, reason) if !reason.is_empty() => format!("{denied_by}: {reason}"),
        _ => format!("{denied_by} without explanation"),
    };
    ApiError::new(code, known_reason(reason), message)
}

/// The reasons a Status may carry, as the static names `ApiError` holds; another is dropped (kube would pass it on).
fn known_reason(reason: &str) -> &'static str {
    const REASONS: &[&str] = &[
        "BadRequest", "Unauthorized", "Forbidden", "NotFound", "AlreadyExists", "Conflict", "Gone", "Invalid",
        "ServerTimeout", "Timeout", "TooManyRequests", "MethodNotAllowed", "NotAcceptable", "RequestEntityTooLarge",
        "UnsupportedMediaType", "InternalError", "Expired", "ServiceUnavailable",
    ];
    REASONS.iter().find(|r| **r == reason).copied().unwrap_or("")
}
