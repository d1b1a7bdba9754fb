//! What a custom resource holds that its structural schema does not declare: the paths pruning removes, and
//! the `metadata` of embedded resources (which pruning keeps and kube checks against `ObjectMeta`).
//!
//! `fieldValidation=Strict|Warn` reports these as `unknown field "<path>"`, so the paths are written as
//! apiextensions-apiserver writes them: object keys joined with `.`, list items as `[i]`, map keys like object
//! keys (`spec.labels.a`), and the pruned paths sorted as strings.

use serde_json::Value;

use super::{Node, Structural, MAX_DEPTH};

/// The undeclared parts of one object.
#[derive(Debug, Default, PartialEq)]
pub struct Undeclared<'v> {
    /// Every path [`Structural::prune`] would remove, sorted.
    pub pruned: Vec<String>,
    /// Each embedded resource's `metadata` object with its path (`spec.template.metadata`), in object order.
    pub embedded_metadata: Vec<(String, &'v Value)>,
}

impl Structural {
    /// Lists what pruning would remove from `object` and where embedded resources keep a `metadata` of their
    /// own; `object` is not changed. At the root `apiVersion`, `kind` and `metadata` are declared.
    pub fn undeclared<'v>(&self, object: &'v Value) -> Undeclared<'v> {
        let mut found = Undeclared::default();
        let Some(map) = object.as_object() else { return found };
        let mut path = String::new();
        for (key, value) in map {
            match self.root.properties.get(key) {
                Some(child) => at_key(&mut path, key, |path| walk(child, value, path, 1, &mut found)),
                None if self.root.preserve_unknown || matches!(key.as_str(), "apiVersion" | "kind" | "metadata") => {}
                None => found.pruned.push(key.clone()),
            }
        }
        found.pruned.sort();
        found
    }
}

impl Structural {
    /// Calls `visit` with each embedded resource's `metadata` object (a map), so that the caller can drop what
    /// `ObjectMeta` does not declare, as kube does.
    pub fn embedded_metadata_mut(&self, object: &mut Value, visit: &mut dyn FnMut(&mut Value)) {
        let Some(map) = object.as_object_mut() else { return };
        for (key, value) in map.iter_mut() {
            if let Some(child) = self.root.properties.get(key) {
                walk_mut(child, value, 1, visit);
            }
        }
    }
}

/// Visits the same children as [`walk`], mutably, calling `visit` on embedded resources' metadata.
fn walk_mut(node: &Node, value: &mut Value, depth: usize, visit: &mut dyn FnMut(&mut Value)) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            if node.embedded {
                if let Some(metadata) = map.get_mut("metadata").filter(|m| m.is_object()) {
                    visit(metadata);
                }
            }
            for (key, child) in map.iter_mut() {
                match (&node.additional, node.properties.get(key)) {
                    (Some(additional), _) => walk_mut(additional, child, depth + 1, visit),
                    (None, Some(schema)) => walk_mut(schema, child, depth + 1, visit),
                    (None, None) => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(schema) = &node.items {
                items.iter_mut().for_each(|item| walk_mut(schema, item, depth + 1, visit));
            }
        }
        _ => {}
    }
}

/// Runs `visit` with `key` appended to `path`, then restores `path`.
fn at_key(path: &mut String, key: &str, visit: impl FnOnce(&mut String)) {
    let length = path.len();
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
    visit(path);
    path.truncate(length);
}

/// Runs `visit` with `[index]` appended to `path`, then restores `path`.
fn at_index(path: &mut String, index: usize, visit: impl FnOnce(&mut String)) {
    let length = path.len();
    path.push('[');
    path.push_str(&index.to_string());
    path.push(']');
    visit(path);
    path.truncate(length);
}

/// Mirrors `prune` (the parent module's): the same children are visited and the same keys dropped.
fn walk<'v>(node: &Node, value: &'v Value, path: &mut String, depth: usize, found: &mut Undeclared<'v>) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            if node.embedded {
                if let Some(metadata) = map.get("metadata").filter(|m| m.is_object()) {
                    at_key(path, "metadata", |path| found.embedded_metadata.push((path.clone(), metadata)));
                }
            }
            if let Some(additional) = &node.additional {
                for (key, child) in map {
                    at_key(path, key, |path| walk(additional, child, path, depth + 1, found));
                }
                return;
            }
            let keeps_all = node.preserve_unknown || node.additional_any;
            for (key, child) in map {
                match node.properties.get(key) {
                    Some(schema) => at_key(path, key, |path| walk(schema, child, path, depth + 1, found)),
                    None if keeps_all || (node.embedded && matches!(key.as_str(), "apiVersion" | "kind" | "metadata")) => {}
                    None => at_key(path, key, |path| found.pruned.push(path.clone())),
                }
            }
        }
        Value::Array(items) => {
            if let Some(schema) = &node.items {
                for (i, item) in items.iter().enumerate() {
                    at_index(path, i, |path| walk(schema, item, path, depth + 1, found));
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::super::Structural;

    fn schema() -> Structural {
        let schema = json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "cronSpec": {"type": "string"},
                        "ports": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                        "labels": {"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}}},
                        "free": {"type": "object", "additionalProperties": true},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                            "properties": {"typed": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                            "properties": {"spec": {"type": "object", "properties": {"image": {"type": "string"}}}}},
                        "a": {"type": "object", "properties": {"b": {"type": "string"}}},
                    },
                },
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
            },
        });
        Structural::compile(&schema, "s").unwrap_or_else(|errors| panic!("{errors:?}"))
    }

    /// One row: an object, the pruned paths expected, the embedded metadata paths expected.
    fn check(object: Value, pruned: &[&str], embedded: &[&str]) {
        let schema = schema();
        let found = schema.undeclared(&object);
        assert_eq!(found.pruned, pruned, "pruned paths of {object}");
        let paths: Vec<&str> = found.embedded_metadata.iter().map(|(path, _)| path.as_str()).collect();
        assert_eq!(paths, embedded, "embedded metadata of {object}");
        let mut pruned_object = object.clone();
        schema.prune(&mut pruned_object);
        assert_eq!(schema.undeclared(&pruned_object).pruned, Vec::<String>::new(), "pruning removes every listed path: {object}");
    }

    #[test]
    fn lists_what_pruning_removes_with_kube_paths() {
        check(json!({"apiVersion": "v", "kind": "K", "metadata": {"x": 1}, "spec": {"cronSpec": "*"}}), &[], &[]);
        check(json!({"top": 1, "spec": {"foo": 1, "cronSpec": "*"}}), &["spec.foo", "top"], &[]);
        check(json!({"spec": {"ports": [{"name": "a"}, {"name": "b", "junk": 1}]}}), &["spec.ports[1].junk"], &[]);
        check(json!({"spec": {"labels": {"k": {"v": "x", "w": 1}}}}), &["spec.labels.k.w"], &[]);
        check(json!({"spec": {"free": {"anything": {"goes": 1}}}}), &[], &[]);
        check(json!({"spec": {"extra": {"kept": 1, "typed": {"a": "x", "b": 2}}}}), &["spec.extra.typed.b"], &[]);
        check(json!({"status": {"ready": true, "why": "x"}}), &["status.why"], &[]);
        check(json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1},
            "spec": {"image": "i", "junk": 1}, "other": 1}}}), &["spec.template.other", "spec.template.spec.junk"], &["spec.template.metadata"]);
    }

    #[test]
    fn embedded_metadata_is_visited_mutably() {
        let mut object = json!({"spec": {"template": {"metadata": {"name": "p", "bogus": 1}}, "ports": [{"name": "a"}]},
            "metadata": {"not": "embedded"}});
        let mut seen = Vec::new();
        schema().embedded_metadata_mut(&mut object, &mut |metadata| {
            seen.push(metadata.clone());
            metadata.as_object_mut().map(|m| m.remove("bogus"));
        });
        assert_eq!(seen, [json!({"name": "p", "bogus": 1})]);
        assert_eq!(object["spec"]["template"]["metadata"], json!({"name": "p"}));
    }

    #[test]
    fn pruned_paths_are_sorted_as_strings() {
        // Depth-first key order would give "spec.a.c" first; kube sorts the whole paths ('-' < '.').
        check(json!({"spec": {"a": {"c": 1}, "a-b": 1}}), &["spec.a-b", "spec.a.c"], &[]);
    }

    #[test]
    fn non_objects_have_nothing_undeclared() {
        for object in [json!(null), json!([1, 2]), json!("x"), json!({"spec": "x"}), json!({"spec": {"ports": [1, "x"]}})] {
            check(object, &[], &[]);
        }
        // An object where the schema has a list: pruning empties it, as kube's does.
        check(json!({"spec": {"ports": {"a": 1}}}), &["spec.ports.a"], &[]);
    }
}
