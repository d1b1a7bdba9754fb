//! The upgrade from client-side apply, as kube's last-applied manager and updater do it for the `kubectl`
//! field manager (the one `kubectl apply --server-side` uses): a conflict on a field that the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation still describes (same value in the live
//! object) is not a conflict, since client-side apply owned it; and after such an apply the annotation is
//! rewritten to the applied configuration, so a later client-side apply sees what was applied.

use serde_json::{json, Value};

use super::schema::SchemaView;
use super::set::FieldSet;
use super::typed;

pub(crate) const ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The only field manager the upgrade serves; another manager opts out.
pub(crate) const KUBECTL: &str = "kubectl";

/// kube's limit on the total size of an object's annotations.
const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

fn annotation(object: &Value) -> Option<&str> {
    object.pointer("/metadata/annotations")?.get(ANNOTATION)?.as_str().filter(|a| !a.is_empty())
}

/// The fields of the live object's last-applied configuration that still have the configured value: `None`
/// when there is no usable annotation (absent, not JSON, or of another apiVersion).
pub(crate) fn allowed_conflicts<S: SchemaView>(schema: S, live: &Value, api_version: &str) -> Option<FieldSet> {
    let last_applied: Value = serde_json::from_str(annotation(live)?).ok()?;
    if last_applied.get("apiVersion").and_then(Value::as_str) != Some(api_version) {
        return None;
    }
    let fields = typed::field_set(&last_applied, schema);
    let changed = typed::compare(&last_applied, live, schema);
    Some(fields.difference(&changed.modified).difference(&changed.added).difference(&changed.removed))
}

/// Keeps the annotation current after a successful apply: when `object` has one, it becomes `config` without
/// the annotation (dropped instead when it would make the annotations too large, as kube does).
pub(crate) fn update_annotation(object: &mut Value, config: &Value) {
    if annotation(object).is_none() {
        return;
    }
    let mut applied = config.clone();
    if let Some(annotations) = applied.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
        annotations.remove(ANNOTATION);
    }
    let text = applied.to_string();
    let Some(annotations) = object.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) else { return };
    annotations.insert(ANNOTATION.to_owned(), json!(text));
    let size: usize = annotations.iter().map(|(k, v)| k.len() + v.as_str().map_or(0, str::len)).sum();
    if size > MAX_ANNOTATIONS_BYTES {
        annotations.remove(ANNOTATION);
    }
}
