//! How deep a document nests, and the bound every stored object keeps so that what is stored can be read back.

use serde_json::Value;

use crate::status::{ApiError, ApiResult, Cause};

/// The deepest a stored object may nest, the object itself being level 1. Every read of a stored object parses it
/// with `serde_json`, whose reader refuses documents nested past 127 levels (its recursion limit of 128); the
/// margin leaves room for the envelopes clients read objects in (a list's `items`, a watch event, a Table row).
/// kube-apiserver's own bound is Go's decoder's, 10,000 levels.
pub const MAX_DEPTH: usize = 100;

/// The nesting depth of `value` (a scalar 0, `{}` or `[]` 1), or `None` once it passes `limit`. It never recurses
/// more than `limit` levels, so it is safe on any document, however deep.
pub fn depth_within(value: &Value, limit: usize) -> Option<usize> {
    match value {
        Value::Array(items) => deepest_child(items.iter(), limit),
        Value::Object(fields) => deepest_child(fields.values(), limit),
        _ => Some(0),
    }
}

fn deepest_child<'a>(children: impl Iterator<Item = &'a Value>, limit: usize) -> Option<usize> {
    let below = limit.checked_sub(1)?;
    let mut deepest = 0;
    for child in children {
        deepest = deepest.max(depth_within(child, below)?);
    }
    Some(deepest + 1)
}

/// The refusal of an object nested deeper than `MAX_DEPTH`: 422, naming the top-level field that nests too deep
/// (`metadata` last: its managedFields mirror the other fields, a few levels deeper).
pub fn check_stored(group: &str, kind: &str, name: &str, object: &Value) -> ApiResult<()> {
    if depth_within(object, MAX_DEPTH).is_some() {
        return Ok(());
    }
    let too_deep_field = |metadata: bool| object.as_object()
        .and_then(|fields| fields.iter().find(|(field, child)| (*field == "metadata") == metadata && depth_within(child, MAX_DEPTH - 1).is_none()))
        .map(|(field, _)| field.clone());
    let field = too_deep_field(false).or_else(|| too_deep_field(true)).unwrap_or_else(|| "<root>".to_owned());
    Err(ApiError::invalid(group, kind, name, vec![too_deep(field)]))
}

fn too_deep(field: String) -> Cause {
    Cause { reason: "FieldValueInvalid", message: format!("Invalid value: the object nests deeper than the limit of {MAX_DEPTH} levels"), field }
}

/// kube's message for a document past the nesting limit, for refusals that are not about one object.
pub fn too_deep_message() -> String {
    format!("the object would nest deeper than the limit of {MAX_DEPTH} levels")
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::{check_stored, depth_within, MAX_DEPTH};

    fn nested(levels: usize) -> Value {
        (0..levels).fold(json!(1), |inner, _| json!({ "a": inner }))
    }

    #[test]
    fn depth_counts_containers_and_stops_at_its_limit() {
        assert_eq!(depth_within(&json!(1), 0), Some(0));
        assert_eq!(depth_within(&json!({}), 1), Some(1));
        assert_eq!(depth_within(&json!([[], {"a": [1]}]), 3), Some(3));
        assert_eq!(depth_within(&json!([[], {"a": [1]}]), 2), None);
        assert_eq!(depth_within(&nested(MAX_DEPTH), MAX_DEPTH), Some(MAX_DEPTH));
    }

    #[test]
    fn what_is_stored_can_be_read_back() {
        let deepest = nested(MAX_DEPTH);
        assert!(check_stored("", "ConfigMap", "x", &deepest).is_ok());
        let text = serde_json::to_string(&json!({"items": [deepest]})).unwrap_or_default();
        assert!(serde_json::from_str::<Value>(&text).is_ok());
        let err = check_stored("", "ConfigMap", "x", &json!({"metadata": {}, "data": nested(MAX_DEPTH)})).err();
        assert_eq!(err.map(|e| (e.code, e.message)), Some((422,
            "ConfigMap \"x\" is invalid: data: Invalid value: the object nests deeper than the limit of 100 levels".to_owned())));
    }
}
