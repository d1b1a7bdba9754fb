//! `$ref` plumbing: finding referenced definitions, their closure, and moving refs between document forms.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// Calls `visit` with every `$ref` string inside `value`.
pub(crate) fn for_each_ref(value: &Value, visit: &mut impl FnMut(&str)) {
    match value {
        Value::Object(object) => {
            for (key, child) in object {
                match (key.as_str(), child) {
                    ("$ref", Value::String(reference)) => visit(reference),
                    _ => for_each_ref(child, visit),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| for_each_ref(item, visit)),
        _ => {}
    }
}

/// Names of every definition reachable from the values of `roots` (refs starting with `prefix`),
/// following definitions.
pub(crate) fn reachable_from_map(
    roots: &Map<String, Value>,
    definitions: &Map<String, Value>,
    prefix: &str,
) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut pending = Vec::new();
    let push_refs = |value: &Value, pending: &mut Vec<String>| {
        for_each_ref(value, &mut |reference| {
            if let Some(name) = reference.strip_prefix(prefix) {
                pending.push(name.to_string());
            }
        });
    };
    roots
        .values()
        .for_each(|root| push_refs(root, &mut pending));
    while let Some(name) = pending.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(schema) = definitions.get(&name) {
            push_refs(schema, &mut pending);
        }
    }
    seen
}

/// Rewrites every `$ref` that starts with `from` to start with `to` instead.
pub(crate) fn rewrite_prefix(value: &mut Value, from: &str, to: &str) {
    match value {
        Value::Object(object) => {
            for (key, child) in object.iter_mut() {
                match child {
                    Value::String(reference) if key == "$ref" => {
                        if let Some(rest) = reference.strip_prefix(from) {
                            *reference = format!("{to}{rest}");
                        }
                    }
                    _ => rewrite_prefix(child, from, to),
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| rewrite_prefix(item, from, to)),
        _ => {}
    }
}

/// Follows a `#/...` JSON pointer reference inside `document`.
#[cfg(test)]
pub(crate) fn resolve<'a>(document: &'a Value, reference: &str) -> Option<&'a Value> {
    document.pointer(reference.strip_prefix('#')?)
}
