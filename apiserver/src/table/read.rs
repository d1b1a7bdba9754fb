//! Forgiving readers over arbitrary JSON objects, and the label/selector formats kubectl prints.
//!
//! Stored objects are `serde_json::Value`s that may be missing fields or carry the wrong types.
//! Every reader here answers with Go's zero value (`""`, `0`, `false`, empty list) where the
//! typed decoder in kube-apiserver would have had one, so printers never branch on bad input.

use serde_json::Value;

/// Walks `path` through nested objects; `None` as soon as a step is missing or not an object.
pub(crate) fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |current, key| current.as_object()?.get(*key))
}

/// The string at `path`, if it is one.
pub(crate) fn opt_str<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(value, path)?.as_str()
}

/// The string at `path`, or `""` (Go's zero value) when missing or not a string.
pub(crate) fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    opt_str(value, path).unwrap_or("")
}

/// Reads a JSON number as an integer; integral floats count, fractions and other types do not.
pub(crate) fn as_int(value: &Value) -> Option<i64> {
    if let Some(int) = value.as_i64() {
        return Some(int);
    }
    let float = value.as_f64()?;
    (float.fract() == 0.0 && float.abs() < 9.0e18).then_some(float as i64)
}

/// The integer at `path`, if it is one.
pub(crate) fn opt_int(value: &Value, path: &[&str]) -> Option<i64> {
    at(value, path).and_then(as_int)
}

/// The integer at `path`, or `0`.
pub(crate) fn int_at(value: &Value, path: &[&str]) -> i64 {
    opt_int(value, path).unwrap_or(0)
}

/// The boolean at `path`, if it is one.
pub(crate) fn opt_bool(value: &Value, path: &[&str]) -> Option<bool> {
    at(value, path)?.as_bool()
}

/// The boolean at `path`, or `false`.
pub(crate) fn bool_at(value: &Value, path: &[&str]) -> bool {
    opt_bool(value, path).unwrap_or(false)
}

/// The array at `path`, or an empty slice.
pub(crate) fn array_at<'a>(value: &'a Value, path: &[&str]) -> &'a [Value] {
    at(value, path)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The number of entries in the object (map) at `path`, or `0`.
pub(crate) fn map_len(value: &Value, path: &[&str]) -> usize {
    at(value, path).and_then(Value::as_object).map_or(0, |map| map.len())
}

/// `metadata.name`, or `""`.
pub(crate) fn name(object: &Value) -> &str {
    str_at(object, &["metadata", "name"])
}

/// `metadata.annotations[key]`, if it is a string.
pub(crate) fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    opt_str(object, &["metadata", "annotations", key])
}

/// An `IntOrString` printed as Go's `intstr.String()` does; `None` when absent or neither.
pub(crate) fn int_or_string(value: Option<&Value>) -> Option<String> {
    let value = value?;
    match value {
        Value::String(text) => Some(text.clone()),
        other => as_int(other).map(|int| int.to_string()),
    }
}

/// `labels.FormatLabels`: `k=v` pairs sorted by key and joined by `,`; `<none>` when empty.
pub(crate) fn format_labels(labels: Option<&Value>) -> String {
    let Some(map) = labels.and_then(Value::as_object) else {
        return "<none>".to_string();
    };
    let mut pairs: Vec<String> = map
        .iter()
        .map(|(key, value)| format!("{key}={}", value.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    if pairs.is_empty() {
        return "<none>".to_string();
    }
    pairs.join(",")
}

/// `metav1.FormatLabelSelector`: the selector string, `<none>` when it selects everything or
/// nothing, `<error>` when it does not parse.
pub(crate) fn format_label_selector(selector: Option<&Value>) -> String {
    match label_selector_string(selector) {
        Ok(text) if text.is_empty() => "<none>".to_string(),
        Ok(text) => text,
        Err(()) => "<error>".to_string(),
    }
}

/// `LabelSelectorAsSelector(..).String()`: requirements sorted by key, joined by `,`.
/// A missing selector and an empty selector both print as `""`.
pub(crate) fn label_selector_string(selector: Option<&Value>) -> Result<String, ()> {
    let Some(selector) = selector.filter(|value| !value.is_null()) else {
        return Ok(String::new());
    };
    let selector = selector.as_object().ok_or(())?;
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").filter(|v| !v.is_null()) {
        for (key, value) in labels.as_object().ok_or(())? {
            let value = value.as_str().ok_or(())?;
            requirements.push((key.clone(), format!("{key}={value}")));
        }
    }
    if let Some(expressions) = selector.get("matchExpressions").filter(|v| !v.is_null()) {
        for expression in expressions.as_array().ok_or(())? {
            let key = opt_str(expression, &["key"]).ok_or(())?;
            requirements.push((key.to_string(), expression_string(key, expression)?));
        }
    }
    requirements.sort_by(|left, right| left.0.cmp(&right.0));
    let parts: Vec<String> = requirements.into_iter().map(|(_, text)| text).collect();
    Ok(parts.join(","))
}

/// One `matchExpressions` entry in selector syntax (`k in (a,b)`, `!k`, ...).
fn expression_string(key: &str, expression: &Value) -> Result<String, ()> {
    let mut values: Vec<&str> = Vec::new();
    if let Some(raw) = at(expression, &["values"]).filter(|v| !v.is_null()) {
        for value in raw.as_array().ok_or(())? {
            values.push(value.as_str().ok_or(())?);
        }
    }
    values.sort_unstable();
    values.dedup();
    match str_at(expression, &["operator"]) {
        "In" if !values.is_empty() => Ok(format!("{key} in ({})", values.join(","))),
        "NotIn" if !values.is_empty() => Ok(format!("{key} notin ({})", values.join(","))),
        "Exists" if values.is_empty() => Ok(key.to_string()),
        "DoesNotExist" if values.is_empty() => Ok(format!("!{key}")),
        _ => Err(()),
    }
}

/// `layoutContainerCells`: container names and images, each joined by `,`.
pub(crate) fn container_cells(containers: &[Value]) -> (String, String) {
    let names: Vec<&str> = containers.iter().map(|c| str_at(c, &["name"])).collect();
    let images: Vec<&str> = containers.iter().map(|c| str_at(c, &["image"])).collect();
    (names.join(","), images.join(","))
}

/// The containers of a pod template found at `template_path` (…`.template`).
pub(crate) fn template_containers<'a>(object: &'a Value, template_path: &[&str]) -> &'a [Value] {
    at(object, template_path).map_or(&[], |template| array_at(template, &["spec", "containers"]))
}

/// `"<none>"` in place of an empty string, as many printers do.
pub(crate) fn or_none(text: &str) -> String {
    if text.is_empty() {
        "<none>".to_string()
    } else {
        text.to_string()
    }
}
