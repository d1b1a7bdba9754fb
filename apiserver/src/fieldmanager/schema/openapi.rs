//! The built-in types for server-side apply: the served OpenAPI v3 definitions (with the extension table of
//! `openapi/extensions.rs`) compiled once into a compact table, and the `SchemaView` over it.
//!
//! Compiling keeps only what merging needs (fields, map and list kinds, list keys, key defaults), so the table
//! is small; the definitions it came from can be dropped. The table of the built-in types is also kept as a
//! snapshot (`builtin_types.json`, one node per line) that the server reads at its first write instead of
//! generating the definitions (tens of milliseconds and megabytes it would not give back); a test keeps the
//! snapshot equal to what the served definitions compile to.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{deduced, SchemaView, Shape};

/// `Quantity` is a scalar and `RawExtension` one opaque value, as kube-openapi's conversion makes them.
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";
const REF_PREFIX: &str = "#/components/schemas/";

/// The index of the node every unknown reference resolves to.
const UNTYPED: u32 = 0;

/// A reference to a compiled node, with the `x-kubernetes-map-type` written beside the reference (it overrides
/// the referenced struct's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Ref {
    id: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    atomic: Option<bool>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Field {
    ty: Ref,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    default: Option<Value>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum ListKind {
    Atomic,
    Set,
    Keyed(Vec<String>),
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum Node {
    Scalar,
    /// One opaque value whatever it holds.
    Atomic,
    /// Unknown: objects merge by key (with untyped entries), everything else is a leaf.
    Untyped,
    Object {
        /// Sorted by name (a sorted list is a fraction of a map's memory for a handful of fields).
        fields: Vec<(String, Field)>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        values: Option<Ref>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        atomic: bool,
    },
    List { items: Ref, kind: ListKind },
}

/// Compiled definitions, by definition name.
#[derive(Debug, PartialEq)]
pub(crate) struct Types {
    names: BTreeMap<String, u32>,
    nodes: Vec<Node>,
}

impl Types {
    /// Compiles OpenAPI v3 `components.schemas` (references `#/components/schemas/<name>`).
    pub(crate) fn compile(definitions: &Map<String, Value>) -> Types {
        let mut types = Types { names: BTreeMap::new(), nodes: vec![Node::Untyped] };
        for name in definitions.keys() {
            let id = types.push(Node::Untyped);
            types.names.insert(name.clone(), id);
        }
        for (name, schema) in definitions {
            let node = match name.as_str() {
                QUANTITY => Node::Scalar,
                RAW_EXTENSION => Node::Atomic,
                _ => types.node(schema),
            };
            if let Some(&id) = types.names.get(name) {
                types.nodes[id as usize] = node;
            }
        }
        types
    }

    #[cfg(test)]
    /// The snapshot form: the names on the first line, then one node per line (JSON), so a change diffs well.
    pub(crate) fn snapshot(&self) -> String {
        let mut text = serde_json::to_string(&self.names).unwrap_or_default();
        for node in &self.nodes {
            text.push('\n');
            text.push_str(&serde_json::to_string(node).unwrap_or_default());
        }
        text.push('\n');
        text
    }

    /// Reads a snapshot back.
    pub(crate) fn from_snapshot(text: &str) -> Result<Types, serde_json::Error> {
        let mut lines = text.lines();
        let names = serde_json::from_str(lines.next().unwrap_or_default())?;
        let nodes = lines.map(serde_json::from_str).collect::<Result<Vec<Node>, _>>()?;
        Ok(Types { names, nodes })
    }

    /// The view of definition `name` (untyped when there is no such definition).
    pub(crate) fn view(&self, name: &str) -> OpenApiView<'_> {
        let id = self.names.get(name).copied().unwrap_or(UNTYPED);
        OpenApiView { types: self, at: Ref { id, atomic: None } }
    }

    fn push(&mut self, node: Node) -> u32 {
        self.nodes.push(node);
        u32::try_from(self.nodes.len() - 1).unwrap_or(UNTYPED)
    }

    /// A property, items or additionalProperties schema: a reference (bare or wrapped in `allOf`), or inline.
    fn reference(&mut self, schema: &Value) -> Ref {
        let target = schema.get("$ref").or_else(|| schema.get("allOf").and_then(|all| all.get(0)).and_then(|first| first.get("$ref")));
        let atomic = schema.get("x-kubernetes-map-type").and_then(Value::as_str).map(|t| t == "atomic");
        match target.and_then(Value::as_str) {
            Some(target) => {
                let name = target.strip_prefix(REF_PREFIX).unwrap_or(target);
                Ref { id: self.names.get(name).copied().unwrap_or(UNTYPED), atomic }
            }
            None => {
                let node = self.node(schema);
                Ref { id: self.push(node), atomic: None }
            }
        }
    }

    fn node(&mut self, schema: &Value) -> Node {
        let has = |key: &str| schema.get(key).is_some();
        match schema.get("type").and_then(Value::as_str) {
            Some("object") => self.object(schema),
            None if has("properties") || has("additionalProperties") => self.object(schema),
            Some("array") => {
                let items = match schema.get("items") {
                    Some(items) => self.reference(items),
                    None => Ref { id: UNTYPED, atomic: None },
                };
                Node::List { items, kind: list_kind(schema) }
            }
            Some(_) => Node::Scalar,
            None => Node::Untyped,
        }
    }

    fn object(&mut self, schema: &Value) -> Node {
        let mut fields = Vec::new();
        for (name, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
            let ty = self.reference(property);
            fields.push((name.clone(), Field { ty, default: property.get("default").cloned() }));
        }
        let values = match schema.get("additionalProperties") {
            Some(Value::Bool(true)) => Some(Ref { id: UNTYPED, atomic: None }),
            Some(values @ Value::Object(_)) => Some(self.reference(values)),
            _ => None,
        };
        let atomic = schema.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        Node::Object { fields, values, atomic }
    }
}

/// kube-openapi's rule: `x-kubernetes-list-type` first, else a `merge` patch strategy (keyed by the merge key
/// when there is one), else atomic.
fn list_kind(schema: &Value) -> ListKind {
    let text = |key: &str| schema.get(key).and_then(Value::as_str);
    match text("x-kubernetes-list-type") {
        Some("set") => return ListKind::Set,
        Some("map") => {
            let keys = schema.get("x-kubernetes-list-map-keys").and_then(Value::as_array).into_iter().flatten();
            return ListKind::Keyed(keys.filter_map(Value::as_str).map(str::to_owned).collect());
        }
        Some(_) => return ListKind::Atomic,
        None => {}
    }
    match (text("x-kubernetes-patch-strategy"), text("x-kubernetes-patch-merge-key")) {
        (Some("merge" | "merge,retainKeys"), Some(key)) => ListKind::Keyed(vec![key.to_owned()]),
        (Some("merge" | "merge,retainKeys"), None) => ListKind::Set,
        _ => ListKind::Atomic,
    }
}

fn find<'f>(fields: &'f [(String, Field)], name: &str) -> Option<&'f Field> {
    fields.binary_search_by(|(field, _)| field.as_str().cmp(name)).ok().map(|i| &fields[i].1)
}

/// A node of the compiled built-in types.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OpenApiView<'a> {
    types: &'a Types,
    at: Ref,
}

impl<'a> OpenApiView<'a> {
    fn node(self) -> &'a Node {
        self.types.nodes.get(self.at.id as usize).unwrap_or(&Node::Untyped)
    }

    fn at(self, at: Ref) -> OpenApiView<'a> {
        OpenApiView { types: self.types, at }
    }

    /// The same table's untyped node.
    fn untyped_here(self) -> OpenApiView<'a> {
        self.at(Ref { id: UNTYPED, atomic: None })
    }
}

/// A view with no table behind it, for `SchemaView::untyped`.
static NO_TYPES: std::sync::LazyLock<Types> = std::sync::LazyLock::new(|| Types { names: BTreeMap::new(), nodes: vec![Node::Untyped] });

impl SchemaView for OpenApiView<'_> {
    fn shape(self, value: &Value) -> Shape {
        match self.node() {
            Node::Scalar | Node::Atomic => Shape::Leaf,
            Node::Untyped => deduced(value),
            Node::Object { atomic, .. } => {
                let atomic = self.at.atomic.unwrap_or(*atomic);
                if value.is_object() && !atomic { Shape::Fields } else { Shape::Leaf }
            }
            Node::List { kind, .. } => match (value.is_array(), kind) {
                (true, ListKind::Set) => Shape::Set,
                (true, ListKind::Keyed(keys)) => Shape::Keyed(keys.clone()),
                _ => Shape::Leaf,
            },
        }
    }

    fn field(self, name: &str) -> (Self, bool) {
        match self.node() {
            Node::Object { fields, values, .. } => match (find(fields, name), values) {
                (Some(field), _) => (self.at(field.ty), true),
                (None, Some(values)) => (self.at(*values), false),
                (None, None) => (self.untyped_here(), false),
            },
            _ => (self.untyped_here(), false),
        }
    }

    fn items(self) -> Self {
        match self.node() {
            Node::List { items, .. } => self.at(*items),
            _ => self.untyped_here(),
        }
    }

    fn key_default(self, key: &str) -> Option<Value> {
        match self.node() {
            Node::Object { fields, .. } => find(fields, key).and_then(|f| f.default.clone()),
            _ => None,
        }
    }

    fn untyped() -> Self {
        OpenApiView { types: &NO_TYPES, at: Ref { id: UNTYPED, atomic: None } }
    }
}
