//! Strict field validation's vocabulary and its schema walk: which fields of a body a kind does not declare
//! (`unknown field "spec.foo"`), and the problems `fieldValidation=Strict|Warn` reports (unknown fields,
//! duplicate fields, YAML keys set twice), written as kube-apiserver writes them.
//!
//! Built-in kinds are checked against the served OpenAPI definitions: a struct knows its `properties`, a map
//! (`additionalProperties`) takes any key, `x-kubernetes-preserve-unknown-fields` takes anything, and an
//! object schema without properties (`RawExtension`, `JSON`, `FieldsV1`) is opaque, as the Go types that
//! decode themselves are. Paths join keys with `.` and list items as `[i]` (`spec.containers[0].foo`).

use serde_json::{Map, Value};

/// The definition of `metadata`.
pub const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// `metadata` fields kspaces adds to `ObjectMeta` (Arktos' `metadata.tenant`), known like its own.
const OBJECT_META_EXTENSIONS: &[&str] = &["tenant"];

/// kube's strict JSON decoder stops recording problems after this many.
pub const MAX_PROBLEMS: usize = 100;

/// How deep schemas and values are followed (`$ref` chains, and nesting, like serde_json's recursion limit).
const MAX_DEPTH: usize = 128;

/// The schema of an unknown or opaque part.
static OPAQUE: Value = Value::Null;

/// One thing strict field validation reports.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Problem {
    /// A field the kind does not declare.
    Unknown(String),
    /// A key given twice in one JSON object.
    Duplicate(String),
    /// A key given twice in one YAML mapping, at `line` (1-based).
    YamlDuplicate { line: u64, key: String },
    /// A problem in a JSON patch's own operations (`json patch unknown field "[0].foo"`).
    InJsonPatch(Box<Problem>),
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Unknown(path) => write!(f, "unknown field {}", go_quote(path)),
            Problem::Duplicate(path) => write!(f, "duplicate field {}", go_quote(path)),
            Problem::YamlDuplicate { line, key } => write!(f, "line {line}: key {} already set in map", go_quote(key)),
            Problem::InJsonPatch(problem) => write!(f, "json patch {problem}"),
        }
    }
}

/// kube's strict decoding error text: `strict decoding error: <problem>, <problem>`, where every YAML
/// duplicate key is one `yaml: unmarshal errors:` block of indented lines (as the YAML decoder reports them).
pub fn strict_decoding_error(problems: &[Problem]) -> String {
    let yaml: Vec<String> = problems.iter().filter(|p| matches!(p, Problem::YamlDuplicate { .. })).map(|p| format!("\n  {p}")).collect();
    let mut parts = Vec::new();
    if !yaml.is_empty() {
        parts.push(format!("yaml: unmarshal errors:{}", yaml.concat()));
    }
    parts.extend(problems.iter().filter(|p| !matches!(p, Problem::YamlDuplicate { .. })).map(Problem::to_string));
    format!("strict decoding error: {}", parts.join(", "))
}

/// Go's `strconv.Quote`: `"` and `\` escaped, control characters escaped, printable text as is.
pub fn go_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\u{7}' => quoted.push_str("\\a"),
            '\u{8}' => quoted.push_str("\\b"),
            '\u{c}' => quoted.push_str("\\f"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            '\u{b}' => quoted.push_str("\\v"),
            c if c.is_control() && (c as u32) < 0x80 => quoted.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04x}", c as u32)),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// A schema node of an OpenAPI v3 definitions map, resolved through `$ref` and `allOf`.
#[derive(Clone, Copy, Debug)]
pub struct Node<'d> {
    definitions: &'d Map<String, Value>,
    schema: &'d Value,
    /// The node is `ObjectMeta`, which knows [`OBJECT_META_EXTENSIONS`] too.
    object_meta: bool,
}

/// What an object value is checked against.
#[derive(Clone, Copy, Debug)]
pub enum Shape<'d> {
    /// A struct: only its properties (see [`Node::property`]) are known.
    Struct(Node<'d>),
    /// A map: any key, each value against the node.
    Map(Node<'d>),
    /// Any key (`x-kubernetes-preserve-unknown-fields`, `additionalProperties: true`); duplicates still count.
    Untyped,
    /// Decoded by its own rules: nothing inside is checked.
    Opaque,
}

impl<'d> Node<'d> {
    /// The definition `name` (`io.k8s.api.apps.v1.Deployment`), if the map has it.
    pub fn definition(definitions: &'d Map<String, Value>, name: &str) -> Option<Node<'d>> {
        let schema = definitions.get(name)?;
        Some(Node { definitions, schema, object_meta: name == OBJECT_META }.resolved())
    }

    /// A schema that is not in the map (its `$ref`s point into it).
    pub fn schema(definitions: &'d Map<String, Value>, schema: &'d Value) -> Node<'d> {
        Node { definitions, schema, object_meta: false }.resolved()
    }

    /// A node under which nothing is checked.
    fn opaque(definitions: &'d Map<String, Value>) -> Node<'d> {
        Node { definitions, schema: &OPAQUE, object_meta: false }
    }

    /// Follows `allOf[0]` (OpenAPI v3 wraps a `$ref` with siblings in it) and `$ref` to a concrete node; a
    /// dangling or cyclic reference is opaque.
    fn resolved(mut self) -> Node<'d> {
        for _ in 0..MAX_DEPTH {
            if let Some(first) = self.schema.get("allOf").and_then(Value::as_array).and_then(|all| all.first()) {
                self.schema = first;
                continue;
            }
            let Some(reference) = self.schema.get("$ref").and_then(Value::as_str) else { return self };
            let name = reference.strip_prefix("#/components/schemas/").or_else(|| reference.strip_prefix("#/definitions/")).unwrap_or(reference);
            match self.definitions.get(name) {
                Some(schema) => {
                    self.schema = schema;
                    self.object_meta = name == OBJECT_META;
                }
                None => return Node::opaque(self.definitions),
            }
        }
        Node::opaque(self.definitions)
    }

    fn flag(self, key: &str) -> bool {
        self.schema.get(key).and_then(Value::as_bool).unwrap_or(false)
    }

    /// The `oneOf`/`anyOf` alternatives (`IntOrString`, `JSONSchemaPropsOrBool`, ...).
    fn branches(self) -> impl Iterator<Item = Node<'d>> {
        let definitions = self.definitions;
        ["oneOf", "anyOf"].into_iter()
            .filter_map(|key| self.schema.get(key).and_then(Value::as_array))
            .flatten()
            .map(move |branch| Node::schema(definitions, branch))
    }

    /// True when anything goes below this node.
    pub fn untyped(self) -> bool {
        self.flag("x-kubernetes-preserve-unknown-fields")
    }

    /// How an object value at this node is checked.
    pub fn object(self) -> Shape<'d> {
        if self.untyped() {
            return Shape::Untyped;
        }
        if self.schema.get("properties").is_some_and(Value::is_object) {
            return Shape::Struct(self);
        }
        match self.schema.get("additionalProperties") {
            Some(Value::Bool(true)) => return Shape::Untyped,
            Some(values @ Value::Object(_)) => return Shape::Map(Node::schema(self.definitions, values)),
            _ => {}
        }
        self.branches().map(Node::object).find(|shape| !matches!(shape, Shape::Opaque)).unwrap_or(Shape::Opaque)
    }

    /// The node of a struct's field `key`; `None` when the struct does not declare it.
    pub fn property(self, key: &str) -> Option<Node<'d>> {
        match self.schema.get("properties").and_then(|properties| properties.get(key)) {
            Some(schema) => Some(Node::schema(self.definitions, schema)),
            None if self.object_meta && OBJECT_META_EXTENSIONS.contains(&key) => Some(Node::opaque(self.definitions)),
            None => None,
        }
    }

    /// The node of a list's items; `None` when the schema has no list here.
    pub fn items(self) -> Option<Node<'d>> {
        match self.schema.get("items") {
            Some(items @ Value::Object(_)) => Some(Node::schema(self.definitions, items)),
            _ => self.branches().find_map(Node::items),
        }
    }
}

/// Every field of `value` that `node` does not declare, depth first in key order (the order kube reports
/// them in for bodies it re-encodes: YAML bodies and patched objects), each path starting with `prefix`.
/// At most [`MAX_PROBLEMS`].
pub fn unknown_fields(node: Node<'_>, value: &Value, prefix: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut path = prefix.to_owned();
    walk(node, value, &mut path, 0, &mut found);
    found
}

fn walk(node: Node<'_>, value: &Value, path: &mut String, depth: usize, found: &mut Vec<String>) {
    if depth > MAX_DEPTH || found.len() >= MAX_PROBLEMS {
        return;
    }
    match value {
        Value::Object(map) => match node.object() {
            Shape::Struct(node) => {
                for (key, child) in map {
                    at_key(path, key, |path| match node.property(key) {
                        Some(schema) => walk(schema, child, path, depth + 1, found),
                        None if found.len() < MAX_PROBLEMS => found.push(path.clone()),
                        None => {}
                    });
                }
            }
            Shape::Map(values) => {
                for (key, child) in map {
                    at_key(path, key, |path| walk(values, child, path, depth + 1, found));
                }
            }
            Shape::Untyped | Shape::Opaque => {}
        },
        Value::Array(items) if !node.untyped() => {
            if let Some(schema) = node.items() {
                for (i, item) in items.iter().enumerate() {
                    at_index(path, i, |path| walk(schema, item, path, depth + 1, found));
                }
            }
        }
        _ => {}
    }
}

/// Removes every field [`unknown_fields`] lists (without its limit), as kube's typed decoding drops the
/// fields a built-in kind does not declare, whatever `fieldValidation` says.
pub fn prune(node: Node<'_>, value: &mut Value) {
    prune_at(node, value, 0);
}

fn prune_at(node: Node<'_>, value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => match node.object() {
            Shape::Struct(node) => map.retain(|key, child| match node.property(key) {
                Some(schema) => {
                    prune_at(schema, child, depth + 1);
                    true
                }
                None => false,
            }),
            Shape::Map(values) => map.values_mut().for_each(|child| prune_at(values, child, depth + 1)),
            Shape::Untyped | Shape::Opaque => {}
        },
        Value::Array(items) if !node.untyped() => {
            if let Some(schema) = node.items() {
                items.iter_mut().for_each(|item| prune_at(schema, item, depth + 1));
            }
        }
        _ => {}
    }
}

/// Runs `visit` with `.key` (or `key` at the root) appended to `path`, then restores `path`.
fn at_key<T>(path: &mut String, key: &str, visit: impl FnOnce(&mut String) -> T) -> T {
    let length = path.len();
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
    let result = visit(path);
    path.truncate(length);
    result
}

/// Runs `visit` with `[index]` appended to `path`, then restores `path`.
fn at_index<T>(path: &mut String, index: usize, visit: impl FnOnce(&mut String) -> T) -> T {
    let length = path.len();
    path.push('[');
    path.push_str(&index.to_string());
    path.push(']');
    let result = visit(path);
    path.truncate(length);
    result
}

#[cfg(test)]
mod tests;
