//! How a schema tells server-side apply to combine values: the `SchemaView` trait the algorithms walk, with an
//! implementation over the built-in types' OpenAPI definitions (`openapi.rs`) and one over a CRD version's
//! structural schema (`structural.rs`).
//!
//! The rules are kube-openapi's conversion of a schema into structured-merge-diff types: structs merge field
//! by field and maps key by key unless `x-kubernetes-map-type: atomic`; lists are atomic unless
//! `x-kubernetes-list-type` says `set` or `map` (for built-in lists that only have a patch strategy, `merge`
//! with a merge key makes a `map` list keyed by it, `merge` alone a `set`); fields a schema does not know are
//! untyped: objects merge by key, everything else is one value.

mod openapi;
mod structural;

pub(crate) use openapi::{OpenApiView, Types};
pub(crate) use structural::StructuralView;

use serde_json::Value;

/// How a value at a schema node combines with another value there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// One value: a scalar, an atomic list, map or struct, or a value that does not match its schema.
    Leaf,
    /// A struct or a map: field by field.
    Fields,
    /// A `set` list: item by value.
    Set,
    /// A `map` list: item by the values of these key fields.
    Keyed(Vec<String>),
}

/// What the merge, diff and field-set algorithms need to know about a schema node.
pub(crate) trait SchemaView: Copy {
    /// How `value`, found at this node, combines (the value decides where the schema allows several kinds).
    fn shape(self, value: &Value) -> Shape;

    /// The schema of field or map entry `name`, and whether `name` is a declared field of a struct (map
    /// entries and unknown fields are not).
    fn field(self, name: &str) -> (Self, bool);

    /// The schema of a list's items.
    fn items(self) -> Self;

    /// The default value of field `key` of the items of a `map` list (`self` is the items' schema): an item
    /// that omits a key field is identified by its default.
    fn key_default(self, key: &str) -> Option<Value>;

    /// A node that knows nothing: objects merge by key, every other value is one leaf.
    fn untyped() -> Self;
}

/// The shape of an untyped node.
pub(crate) fn deduced(value: &Value) -> Shape {
    if value.is_object() {
        Shape::Fields
    } else {
        Shape::Leaf
    }
}

/// Either view, so the registry can pick one per resource at run time: built-in kinds walk the OpenAPI types,
/// custom resources their CRD version's structural schema.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ResourceView<'a> {
    BuiltIn(OpenApiView<'a>),
    Custom(StructuralView<'a>),
}

impl SchemaView for ResourceView<'_> {
    fn shape(self, value: &Value) -> Shape {
        match self {
            ResourceView::BuiltIn(view) => view.shape(value),
            ResourceView::Custom(view) => view.shape(value),
        }
    }

    fn field(self, name: &str) -> (Self, bool) {
        match self {
            ResourceView::BuiltIn(view) => {
                let (field, declared) = view.field(name);
                (ResourceView::BuiltIn(field), declared)
            }
            ResourceView::Custom(view) => {
                let (field, declared) = view.field(name);
                (ResourceView::Custom(field), declared)
            }
        }
    }

    fn items(self) -> Self {
        match self {
            ResourceView::BuiltIn(view) => ResourceView::BuiltIn(view.items()),
            ResourceView::Custom(view) => ResourceView::Custom(view.items()),
        }
    }

    fn key_default(self, key: &str) -> Option<Value> {
        match self {
            ResourceView::BuiltIn(view) => view.key_default(key),
            ResourceView::Custom(view) => view.key_default(key),
        }
    }

    fn untyped() -> Self {
        ResourceView::Custom(StructuralView::Untyped)
    }
}
