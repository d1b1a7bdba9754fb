//! Field paths: the elements that name one field, list item or map entry, their order, their FieldsV1 keys
//! (`f:name`, `k:{"name":"x"}`, `v:"a"`, `i:0`) and the way kube prints them in conflicts (`.spec.replicas`,
//! `.spec.containers[name="nginx"]`).

use std::cmp::Ordering;
use std::fmt::{self, Write as _};

use serde_json::{Map, Value};

/// One step of a path. The variant order is the order of the elements in a set (fields, then keys, then
/// values, then indices), as structured-merge-diff sorts them.
#[derive(Clone, Debug)]
pub(crate) enum PathElement {
    /// A field of a struct or an entry of a map.
    Field(String),
    /// The item of a `map` list whose key fields have these values (sorted by field name).
    Key(Vec<(String, Value)>),
    /// The item of a `set` list with this value.
    Value(Value),
    /// An item of a list by position (only read from FieldsV1 written by others; apply never makes one).
    Index(usize),
}

/// A path from the object's root.
pub(crate) type Path = Vec<PathElement>;

impl PathElement {
    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The FieldsV1 key of the element.
    pub(crate) fn encode(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let mut out = String::from("k:{");
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_json_string(&mut out, name);
                    out.push(':');
                    write_json(&mut out, value);
                }
                out.push('}');
                out
            }
            PathElement::Value(value) => {
                let mut out = String::from("v:");
                write_json(&mut out, value);
                out
            }
            PathElement::Index(index) => format!("i:{index}"),
        }
    }

    /// Parses a FieldsV1 key; `Ok(None)` for an element type this server does not know (kube drops those too).
    pub(crate) fn decode(key: &str) -> Result<Option<PathElement>, String> {
        let Some((kind, rest)) = key.split_once(':') else {
            return Err(format!("missing colon: {key}"));
        };
        match kind {
            "f" => Ok(Some(PathElement::Field(rest.to_owned()))),
            "v" => serde_json::from_str(rest).map(|v| Some(PathElement::Value(v))).map_err(|err| format!("{key}: {err}")),
            "k" => {
                let fields: Map<String, Value> = serde_json::from_str(rest).map_err(|err| format!("{key}: {err}"))?;
                Ok(Some(PathElement::Key(fields.into_iter().collect())))
            }
            "i" => rest.parse().map(|i| Some(PathElement::Index(i))).map_err(|err| format!("{key}: {err}")),
            _ => Ok(None),
        }
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => compare_keys(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// kube's form: `.name`, `[name="x",port=80]`, `[="v"]`, `[0]`.
impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let shown: Vec<String> = fields.iter().map(|(name, value)| format!("{name}={}", shown(value))).collect();
                write!(f, "[{}]", shown.join(","))
            }
            PathElement::Value(value) => write!(f, "[={}]", shown(value)),
            PathElement::Index(index) => write!(f, "[{index}]"),
        }
    }
}

/// A path as kube prints it: its elements one after the other (`.spec.template.spec.containers[name="a"].image`).
pub(crate) fn display(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

fn compare_keys(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for ((name_a, value_a), (name_b, value_b)) in a.iter().zip(b) {
        let order = name_a.cmp(name_b).then_with(|| compare_values(value_a, value_b));
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

/// The total order structured-merge-diff gives values: numbers (ints and floats compared as numbers), then
/// strings, booleans, lists, maps, and null last.
pub(crate) fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(value: &Value) -> u8 {
        match value {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            x.iter().zip(y).map(|(x, y)| compare_values(x, y)).find(|o| o.is_ne()).unwrap_or_else(|| x.len().cmp(&y.len()))
        }
        (Value::Object(x), Value::Object(y)) => compare_maps(x, y),
        _ => rank(a).cmp(&rank(b)),
    }
}

fn compare_numbers(x: &serde_json::Number, y: &serde_json::Number) -> Ordering {
    match (x.as_i64(), y.as_i64()) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => x.as_f64().unwrap_or_default().partial_cmp(&y.as_f64().unwrap_or_default()).unwrap_or(Ordering::Equal),
    }
}

/// The fields of two objects in key order (serde_json's maps keep their keys sorted), each with its value on
/// either side.
pub(crate) fn join_fields<'v>(left: Option<&'v Map<String, Value>>, right: Option<&'v Map<String, Value>>)
    -> impl Iterator<Item = (&'v String, Option<&'v Value>, Option<&'v Value>)> {
    let (mut left, mut right) = (left.into_iter().flatten().peekable(), right.into_iter().flatten().peekable());
    std::iter::from_fn(move || {
        let order = match (left.peek(), right.peek()) {
            (Some((l, _)), Some((r, _))) => l.cmp(r),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => return None,
        };
        let l = if order.is_le() { left.next() } else { None };
        let r = if order.is_ge() { right.next() } else { None };
        let key = l.or(r)?.0;
        Some((key, l.map(|(_, v)| v), r.map(|(_, v)| v)))
    })
}

/// Maps compare key by key in lexical key order; a missing key sorts after a present one.
fn compare_maps(x: &Map<String, Value>, y: &Map<String, Value>) -> Ordering {
    for (_, x_value, y_value) in join_fields(Some(x), Some(y)) {
        let order = match (x_value, y_value) {
            (Some(a), Some(b)) => compare_values(a, b),
            (None, _) => Ordering::Greater,
            (_, None) => Ordering::Less,
        };
        if order.is_ne() {
            return order;
        }
    }
    x.len().cmp(&y.len())
}

/// Value equality as structured-merge-diff sees it: `1` and `1.0` are the same number.
pub(crate) fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Ordering::Equal,
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| values_equal(x, y)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w))),
        _ => a == b,
    }
}

/// A value as kube prints it inside a path: strings quoted, the rest as written.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".to_owned(),
        Value::Array(items) => format!("[{}]", items.iter().map(shown).collect::<Vec<_>>().join(",")),
        Value::Object(map) => map.iter().map(|(k, v)| format!("{k}={}", shown(v))).collect(),
        other => other.to_string(),
    }
}

/// JSON as Go's encoder writes it inside FieldsV1 keys (HTML characters escaped, map keys sorted).
fn write_json(out: &mut String, value: &Value) {
    match value {
        Value::String(s) => write_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, key);
                out.push(':');
                write_json(out, item);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
