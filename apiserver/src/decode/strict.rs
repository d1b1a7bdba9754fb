//! Decoding a JSON or YAML body into a `serde_json::Value` in one pass while noting what strict field
//! validation reports: keys given twice (serde_json and a YAML mapping keep the last silently) and, for a JSON
//! body of a kind with a schema, fields the kind does not declare, in document order as kube's strict JSON
//! decoder finds them.
//!
//! Like kube's decoder: a duplicate is noted before its value is read, an undeclared key is noted once and its
//! value is not looked into, opaque parts (`RawExtension`, `JSON`) are not looked into at all, the same
//! problem is noted once, and at most [`MAX_PROBLEMS`] are. The last of duplicate keys wins.

use std::collections::HashSet;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Number, Value};

use super::schema::{Node, Problem, Shape, MAX_PROBLEMS};

/// What a decoding checks.
#[derive(Clone, Copy, Debug)]
pub enum Strictness<'d> {
    /// Nothing (`fieldValidation=Ignore`).
    None,
    /// Duplicate keys anywhere (untyped bodies: custom resources, patches, YAML).
    Duplicates,
    /// Duplicate keys and undeclared fields against a kind's schema.
    Schema(Node<'d>),
}

/// The problems noted so far and where the decoding is.
#[derive(Default)]
pub struct Notes {
    path: String,
    pub problems: Vec<Problem>,
    seen: HashSet<Problem>,
}

impl Notes {
    /// Appends `.key` (`key` at the root) to the path; returns the length to go back to.
    fn enter_key(&mut self, key: &str) -> usize {
        let length = self.path.len();
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(key);
        length
    }

    /// Appends `[index]` to the path; returns the length to go back to.
    fn enter_index(&mut self, index: usize) -> usize {
        let length = self.path.len();
        self.path.push('[');
        self.path.push_str(&index.to_string());
        self.path.push(']');
        length
    }

    fn leave(&mut self, length: usize) {
        self.path.truncate(length);
    }

    fn note(&mut self, problem: Problem) {
        if self.problems.len() < MAX_PROBLEMS && self.seen.insert(problem.clone()) {
            self.problems.push(problem);
        }
    }
}

/// How a format's mapping keys are read: YAML keys carry their line, for `line N: key "k" already set in map`.
pub trait Keys<'de> {
    type Key: Deserialize<'de>;
    fn split(key: Self::Key) -> (String, Option<u64>);
}

pub struct JsonKeys;

impl<'de> Keys<'de> for JsonKeys {
    type Key = String;
    fn split(key: String) -> (String, Option<u64>) {
        (key, None)
    }
}

pub struct YamlKeys;

impl<'de> Keys<'de> for YamlKeys {
    type Key = serde_saphyr::Spanned<String>;
    fn split(key: serde_saphyr::Spanned<String>) -> (String, Option<u64>) {
        let line = key.referenced.line();
        (key.value, Some(line))
    }
}

/// Decodes one value, noting problems into `notes`.
pub struct Seed<'n, 'd, K> {
    notes: &'n mut Notes,
    strictness: Strictness<'d>,
    keys: PhantomData<K>,
}

impl<'n, 'd, K> Seed<'n, 'd, K> {
    pub fn new(notes: &'n mut Notes, strictness: Strictness<'d>) -> Seed<'n, 'd, K> {
        Seed { notes, strictness, keys: PhantomData }
    }

    fn child<'m>(notes: &'m mut Notes, strictness: Strictness<'d>) -> Seed<'m, 'd, K> {
        Seed { notes, strictness, keys: PhantomData }
    }

    /// What the items of a list at this point are checked for.
    fn element(&self) -> Strictness<'d> {
        match self.strictness {
            Strictness::Schema(node) if node.untyped() => Strictness::Duplicates,
            Strictness::Schema(node) => node.items().map_or(Strictness::None, Strictness::Schema),
            other => other,
        }
    }
}

impl<'de, K: Keys<'de>> DeserializeSeed<'de> for Seed<'_, '_, K> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// Notes a key of a mapping decoded with `shape` (the path ends with the key) and says what its value is
/// checked for.
fn key_strictness<'d>(notes: &mut Notes, shape: Shape<'d>, key: &str, line: Option<u64>, repeated: bool) -> Strictness<'d> {
    let duplicate = |notes: &mut Notes| {
        if repeated {
            let problem = match line {
                Some(line) => Problem::YamlDuplicate { line, key: key.to_owned() },
                None => Problem::Duplicate(notes.path.clone()),
            };
            notes.note(problem);
        }
    };
    match shape {
        Shape::Opaque => Strictness::None,
        Shape::Untyped => {
            duplicate(notes);
            Strictness::Duplicates
        }
        Shape::Map(values) => {
            duplicate(notes);
            Strictness::Schema(values)
        }
        Shape::Struct(node) => match node.property(key) {
            Some(child) => {
                duplicate(notes);
                Strictness::Schema(child)
            }
            None => {
                notes.note(Problem::Unknown(notes.path.clone()));
                Strictness::None
            }
        },
    }
}

impl<'de, K: Keys<'de>> Visitor<'de> for Seed<'_, '_, K> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_i128<E>(self, value: i128) -> Result<Value, E> {
        Ok(i64::try_from(value).map_or_else(|_| float(value as f64), |v| Value::Number(v.into())))
    }

    fn visit_u128<E>(self, value: u128) -> Result<Value, E> {
        Ok(u64::try_from(value).map_or_else(|_| float(value as f64), |v| Value::Number(v.into())))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(float(value))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let element = self.element();
        let mut items = Vec::new();
        loop {
            let item = match element {
                Strictness::None => seq.next_element_seed(Seed::<K>::child(self.notes, element))?,
                _ => {
                    let length = self.notes.enter_index(items.len());
                    let item = seq.next_element_seed(Seed::<K>::child(self.notes, element));
                    self.notes.leave(length);
                    item?
                }
            };
            match item {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let shape = match self.strictness {
            Strictness::None => None,
            Strictness::Duplicates => Some(Shape::Untyped),
            Strictness::Schema(node) => Some(node.object()),
        };
        let mut map = Map::new();
        while let Some(key) = access.next_key::<K::Key>()? {
            let (key, line) = K::split(key);
            let value = match shape {
                None => access.next_value_seed(Seed::<K>::child(self.notes, Strictness::None))?,
                Some(shape) => {
                    let length = self.notes.enter_key(&key);
                    let strictness = key_strictness(self.notes, shape, &key, line, map.contains_key(&key));
                    let value = access.next_value_seed(Seed::<K>::child(self.notes, strictness));
                    self.notes.leave(length);
                    value?
                }
            };
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

/// A JSON number for `value`; `null` for NaN and infinities, as serde_json's own `Value` does.
fn float(value: f64) -> Value {
    Number::from_f64(value).map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use serde_json::{json, Map, Value};

    use super::Strictness;
    use crate::decode::read as decode_strict;
    use crate::decode::schema::{Node, Problem, MAX_PROBLEMS};
    use crate::negotiate::BodyFormat;
    use crate::openapi::OpenApi;
    use crate::registry::builtin::builtin_resources;

    fn served() -> &'static Map<String, Value> {
        static OPENAPI: OnceLock<OpenApi> = OnceLock::new();
        OPENAPI.get_or_init(|| OpenApi::build(&builtin_resources())).definitions()
    }

    fn schema(kind: &str) -> Strictness<'static> {
        Strictness::Schema(Node::definition(served(), kind).unwrap_or_else(|| panic!("no definition {kind}")))
    }

    /// One row: a body, how it is decoded, the value expected and the problems' texts expected.
    fn check(format: BodyFormat, body: &str, strictness: Strictness<'_>, value: Value, problems: &[&str]) {
        let decoded = decode_strict(format, body.as_bytes(), strictness).unwrap_or_else(|err| panic!("{body}: {err}"));
        assert_eq!(decoded.value, value, "{body}");
        let found: Vec<String> = decoded.problems.iter().map(Problem::to_string).collect();
        assert_eq!(found, problems, "{body}");
    }

    #[test]
    fn json_duplicates_are_found_at_every_depth_and_the_last_wins() {
        let body = r#"{"a": 1, "b": {"c": 1, "c": {"d": 2}}, "a": 3, "l": [{"x": 1, "x": 2}, [{"y": 1, "y": 1}]], "a": 4}"#;
        let value = json!({"a": 4, "b": {"c": {"d": 2}}, "l": [{"x": 2}, [{"y": 1}]]});
        check(BodyFormat::Json, body, Strictness::Duplicates,
            value.clone(), &[r#"duplicate field "b.c""#, r#"duplicate field "a""#, r#"duplicate field "l[0].x""#, r#"duplicate field "l[1][0].y""#]);
        check(BodyFormat::Json, body, Strictness::None, value, &[]);
    }

    #[test]
    fn yaml_duplicates_are_found_with_their_lines() {
        let body = "a: 1\nb:\n  c: 1\n  c:\n    d: 2\na: 3\nl:\n- x: 1\n  x: 2\n- - y: 1\n    y: 1\n";
        let value = json!({"a": 3, "b": {"c": {"d": 2}}, "l": [{"x": 2}, [{"y": 1}]]});
        let lines = [r#"line 4: key "c" already set in map"#, r#"line 6: key "a" already set in map"#,
            r#"line 9: key "x" already set in map"#, r#"line 11: key "y" already set in map"#];
        check(BodyFormat::Yaml, body, Strictness::Duplicates, value.clone(), &lines);
        check(BodyFormat::Yaml, body, schema("io.k8s.api.core.v1.ConfigMap"), value.clone(), &lines);
        check(BodyFormat::Yaml, body, Strictness::None, value, &[]);
        // Keys that are not strings in YAML become strings, as kube's YAML-to-JSON conversion makes them.
        check(BodyFormat::Yaml, "1: a\ntrue: b\n1: c\n", Strictness::Duplicates, json!({"1": "c", "true": "b"}), &[r#"line 3: key "1" already set in map"#]);
    }

    #[test]
    fn json_against_a_schema_reports_in_document_order() {
        let body = r#"{"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "a", "name": "b", "oddMeta": 1, "tenant": "t"},
            "spec": {"extra1": "x", "twice": 1, "twice": 2, "paused": true, "paused": false,
                "selector": {"matchLabels": {"app": "a", "app": "b"}},
                "template": {"spec": {"containers": [{"name": "c", "image": "i", "nested": 1, "image": "j"}]}}}}"#;
        let value = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "b", "oddMeta": 1, "tenant": "t"},
            "spec": {"extra1": "x", "twice": 2, "paused": false, "selector": {"matchLabels": {"app": "b"}},
                "template": {"spec": {"containers": [{"name": "c", "image": "j", "nested": 1}]}}}});
        check(BodyFormat::Json, body, schema("io.k8s.api.apps.v1.Deployment"), value, &[
            r#"duplicate field "metadata.name""#,
            r#"unknown field "metadata.oddMeta""#,
            r#"unknown field "spec.extra1""#,
            // An undeclared key given twice is reported once, as undeclared.
            r#"unknown field "spec.twice""#,
            r#"duplicate field "spec.paused""#,
            r#"duplicate field "spec.selector.matchLabels.app""#,
            r#"unknown field "spec.template.spec.containers[0].nested""#,
            r#"duplicate field "spec.template.spec.containers[0].image""#,
        ]);
    }

    #[test]
    fn opaque_and_undeclared_values_are_not_looked_into() {
        let body = r#"{"data": {"a": 1, "a": 2}, "revision": 1, "junk": {"b": 1, "b": 2, "c": {"d": 1}}}"#;
        check(BodyFormat::Json, body, schema("io.k8s.api.apps.v1.ControllerRevision"),
            json!({"data": {"a": 2}, "revision": 1, "junk": {"b": 2, "c": {"d": 1}}}), &[r#"unknown field "junk""#]);
    }

    #[test]
    fn at_most_a_hundred_problems_are_noted() {
        let fields: Vec<String> = (0..150).map(|i| format!("\"f{i}\": {i}")).collect();
        let body = format!("{{\"data\": {{}}, {}}}", fields.join(", "));
        let decoded = decode_strict(BodyFormat::Json, body.as_bytes(), schema("io.k8s.api.core.v1.ConfigMap")).expect("decodes");
        assert_eq!(decoded.problems.len(), MAX_PROBLEMS);
        assert_eq!(decoded.value.as_object().map(serde_json::Map::len), Some(151), "every field is kept");
    }

    #[test]
    fn malformed_bodies_are_bad_requests() {
        for (format, body) in [(BodyFormat::Json, "{\"a\": 1,"), (BodyFormat::Json, "{} {}"), (BodyFormat::Yaml, "a: [1\n"), (BodyFormat::Yaml, "a: 1\n---\nb: 2\n")] {
            let err = decode_strict(format, body.as_bytes(), Strictness::Duplicates).err().map(|e| e.code);
            assert_eq!(err, Some(400), "{body}");
        }
    }
}
