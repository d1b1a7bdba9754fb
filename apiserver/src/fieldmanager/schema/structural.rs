//! Custom resources for server-side apply: the `SchemaView` over a CRD version's structural schema (the
//! `openAPIV3Schema` as `kspaces_crd::structural::Structural` keeps it), with `metadata` typed as the built-in
//! `ObjectMeta`, as apiextensions-apiserver merges it into every custom resource's schema.
//!
//! CRD rules differ from the built-ins' in one place: a list without `x-kubernetes-list-type` is atomic
//! (there is no patch strategy to derive a list type from).

use serde_json::Value;

use super::{deduced, OpenApiView, SchemaView, Shape, Types};

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// A node of a custom resource's schema.
#[derive(Clone, Copy, Debug)]
pub(crate) enum StructuralView<'a> {
    /// A schema node; `root` is the resource itself (where `metadata` is `ObjectMeta`).
    Node { node: &'a Value, root: bool, types: &'a Types },
    /// `metadata` (of the resource, or of an embedded resource): the built-in `ObjectMeta`.
    Meta(OpenApiView<'a>),
    Untyped,
}

impl<'a> StructuralView<'a> {
    /// The view of a version's `openAPIV3Schema`; `types` supplies `ObjectMeta`.
    pub(crate) fn root(schema: &'a Value, types: &'a Types) -> StructuralView<'a> {
        StructuralView::Node { node: schema, root: true, types }
    }

    fn child(node: &'a Value, types: &'a Types) -> StructuralView<'a> {
        StructuralView::Node { node, root: false, types }
    }
}

fn flag(node: &Value, key: &str) -> bool {
    node.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn node_shape(node: &Value, value: &Value) -> Shape {
    if flag(node, "x-kubernetes-int-or-string") {
        return Shape::Leaf;
    }
    let has = |key: &str| node.get(key).is_some();
    match node.get("type").and_then(Value::as_str) {
        Some("array") if value.is_array() => match node.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => Shape::Set,
            Some("map") => {
                let keys = node.get("x-kubernetes-list-map-keys").and_then(Value::as_array).into_iter().flatten();
                Shape::Keyed(keys.filter_map(Value::as_str).map(str::to_owned).collect())
            }
            _ => Shape::Leaf,
        },
        Some("object") => object_shape(node, value),
        None if has("properties") || has("additionalProperties") => object_shape(node, value),
        None => deduced(value),
        Some(_) => Shape::Leaf,
    }
}

fn object_shape(node: &Value, value: &Value) -> Shape {
    let atomic = node.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
    if value.is_object() && !atomic {
        Shape::Fields
    } else {
        Shape::Leaf
    }
}

impl SchemaView for StructuralView<'_> {
    fn shape(self, value: &Value) -> Shape {
        match self {
            StructuralView::Node { node, .. } => node_shape(node, value),
            StructuralView::Meta(meta) => meta.shape(value),
            StructuralView::Untyped => deduced(value),
        }
    }

    fn field(self, name: &str) -> (Self, bool) {
        match self {
            StructuralView::Node { node, root, types } => {
                let embedded = flag(node, "x-kubernetes-embedded-resource");
                if (root || embedded) && name == "metadata" {
                    return (StructuralView::Meta(types.view(OBJECT_META)), true);
                }
                if let Some(property) = node.get("properties").and_then(|p| p.get(name)) {
                    return (StructuralView::child(property, types), true);
                }
                if (root || embedded) && matches!(name, "apiVersion" | "kind") {
                    return (StructuralView::Untyped, true);
                }
                match node.get("additionalProperties") {
                    Some(values @ Value::Object(_)) => (StructuralView::child(values, types), false),
                    _ => (StructuralView::Untyped, false),
                }
            }
            StructuralView::Meta(meta) => {
                let (field, declared) = meta.field(name);
                (StructuralView::Meta(field), declared)
            }
            StructuralView::Untyped => (StructuralView::Untyped, false),
        }
    }

    fn items(self) -> Self {
        match self {
            StructuralView::Node { node, types, .. } => match node.get("items") {
                Some(items) => StructuralView::child(items, types),
                None => StructuralView::Untyped,
            },
            StructuralView::Meta(meta) => StructuralView::Meta(meta.items()),
            StructuralView::Untyped => StructuralView::Untyped,
        }
    }

    fn key_default(self, key: &str) -> Option<Value> {
        match self {
            StructuralView::Node { node, .. } => node.get("properties").and_then(|p| p.get(key)).and_then(|p| p.get("default")).cloned(),
            StructuralView::Meta(meta) => meta.key_default(key),
            StructuralView::Untyped => None,
        }
    }

    fn untyped() -> Self {
        StructuralView::Untyped
    }
}
