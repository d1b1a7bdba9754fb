//! An order-preserving YAML value, so the plugins rewrite a user's kubeconfig with every entry, key and value they
//! did not touch where it was (serde_json's `Value` sorts keys; the workspace does not enable `preserve_order`,
//! which would change every JSON map the server writes).
//!
//! Map keys are read as written (`n:` stays the key `"n"`, not YAML 1.1's `false`): kubeconfig keys are strings.
//! Comments and anchors do not survive a rewrite, as with kubectl's own `config` commands.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// A YAML node. `Map` keeps its entries in document order.
#[derive(Clone, Debug, PartialEq)]
pub enum Yaml {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Seq(Vec<Yaml>),
    Map(Vec<(String, Yaml)>),
}

impl Yaml {
    /// An empty mapping.
    pub fn map() -> Yaml {
        Yaml::Map(Vec::new())
    }

    /// A string scalar.
    pub fn str(value: &str) -> Yaml {
        Yaml::Str(value.to_owned())
    }

    /// The value of `key` in a mapping.
    pub fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string value of `key` in a mapping.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Yaml::as_str)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Yaml::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Sets `key` in a mapping: in place if present (its position kept), else appended. A null node becomes a
    /// mapping first (an empty kubeconfig file reads as null). Returns false if this is neither.
    pub fn set(&mut self, key: &str, value: Yaml) -> bool {
        if *self == Yaml::Null {
            *self = Yaml::map();
        }
        let Yaml::Map(entries) = self else { return false };
        match entries.iter_mut().find(|(k, _)| k == key) {
            Some((_, slot)) => *slot = value,
            None => entries.push((key.to_owned(), value)),
        }
        true
    }

    /// The sequence under `key`, created (or replacing a null) if absent; `None` if `key` holds something else.
    pub fn seq_mut(&mut self, key: &str) -> Option<&mut Vec<Yaml>> {
        let present = matches!(self.get(key), Some(Yaml::Seq(_)));
        if !present && !matches!(self.get(key), None | Some(Yaml::Null)) {
            return None;
        }
        if !present && !self.set(key, Yaml::Seq(Vec::new())) {
            return None;
        }
        match self {
            Yaml::Map(entries) => entries.iter_mut().find(|(k, _)| k == key).and_then(|(_, v)| match v {
                Yaml::Seq(items) => Some(items),
                _ => None,
            }),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Yaml {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Yaml, D::Error> {
        deserializer.deserialize_any(YamlVisitor)
    }
}

struct YamlVisitor;

impl<'de> Visitor<'de> for YamlVisitor {
    type Value = Yaml;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML node")
    }
    fn visit_unit<E>(self) -> Result<Yaml, E> {
        Ok(Yaml::Null)
    }
    fn visit_none<E>(self) -> Result<Yaml, E> {
        Ok(Yaml::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Yaml, D::Error> {
        Yaml::deserialize(deserializer)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Yaml, E> {
        Ok(Yaml::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Yaml, E> {
        Ok(Yaml::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Yaml, E> {
        Ok(Yaml::UInt(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Yaml, E> {
        Ok(Yaml::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Yaml, E> {
        Ok(Yaml::str(v))
    }
    fn visit_string<E>(self, v: String) -> Result<Yaml, E> {
        Ok(Yaml::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<Yaml, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = access.next_element()? {
            items.push(item);
        }
        Ok(Yaml::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Yaml, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = access.next_entry::<String, Yaml>()? {
            entries.push(entry);
        }
        Ok(Yaml::Map(entries))
    }
}

impl Serialize for Yaml {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Yaml::Null => serializer.serialize_unit(),
            Yaml::Bool(b) => serializer.serialize_bool(*b),
            Yaml::Int(i) => serializer.serialize_i64(*i),
            Yaml::UInt(u) => serializer.serialize_u64(*u),
            Yaml::Float(f) => serializer.serialize_f64(*f),
            Yaml::Str(s) => serializer.serialize_str(s),
            Yaml::Seq(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Yaml::Map(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

/// Parses one YAML document (an empty text is `Null`) with the scalar rules kubectl's reader (go-yaml v2, YAML
/// 1.1) applies, so that what is written back means to kubectl what the user wrote: `0600` is octal (384), `yes`
/// is true.
pub fn parse(text: &str) -> Result<Yaml, String> {
    let mut options = serde_saphyr::Options::default();
    options.legacy_octal_numbers = true;
    serde_saphyr::from_str_with_options(text, options).map_err(|e| e.to_string())
}

/// Writes a document in block style with plain one-line scalars where YAML allows them (no folded `>` blocks for
/// long base64 certificates), quoting strings that would otherwise read as another type.
pub fn write(doc: &Yaml) -> Result<String, String> {
    let mut options = serde_saphyr::SerializerOptions::default();
    options.prefer_block_scalars = false;
    serde_saphyr::to_string_with_options(doc, options).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings that read as other types are quoted on the way out, keys stay as written, order is kept.
    #[test]
    fn round_trips_keep_order_types_and_keys() {
        let text = "b: 1\na: \"1\"\nn: x\ny: \"true\"\nz: true\nyes11: yes\nlong: ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZ==\nlist: [\"x y\", 0600, \"0600\", ~, 1.5]\n";
        let doc = parse(text).expect("parse");
        let written = write(&doc).expect("write");
        expect_test::expect![[r#"
            b: 1
            a: "1"
            "n": x
            "y": "true"
            z: true
            yes11: true
            long: ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZ==
            list:
            - x y
            - 384
            - "0600"
            - null
            - 1.5
        "#]]
        .assert_eq(&written);
        assert_eq!(parse(&written).expect("reparse"), doc);
    }

    #[test]
    fn set_replaces_in_place_or_appends() {
        let mut doc = parse("a: 1\nb: 2\n").expect("parse");
        assert!(doc.set("a", Yaml::str("x")));
        assert!(doc.set("c", Yaml::str("z")));
        assert_eq!(write(&doc).expect("write"), "a: x\nb: 2\nc: z\n");
        let mut empty = parse("").expect("parse");
        assert!(empty.seq_mut("clusters").is_some());
        assert_eq!(write(&empty).expect("write"), "clusters: []\n");
        assert!(Yaml::str("scalar").seq_mut("x").is_none());
    }
}
