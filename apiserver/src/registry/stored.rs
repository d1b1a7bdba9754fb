//! The stored form of an object: JSON with `metadata` as its first field and no `resourceVersion` (the record's
//! revision is the object's version). With `metadata` first, a reader parses only it (selectors, scope checks),
//! and an object nothing transforms is sent as its stored bytes with the version written in, never parsed and
//! serialized again. Objects stored in another field order (written before this form) are read as well, through
//! a full parse.

use bytes::Bytes;
use kspaces_storage::{Record, Revision};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{json, Map, Value};

use crate::status::{ApiError, ApiResult};

/// `value.pointer(pointer)` (RFC 6901), without `serde_json`'s two `String`s per token: the write path reads a
/// dozen metadata fields of every object it handles. A pointer with an escape (`~0`, `~1`) is left to `serde_json`.
pub fn at<'a>(value: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.contains('~') {
        return value.pointer(pointer);
    }
    if pointer.is_empty() {
        return Some(value);
    }
    let tokens = pointer.strip_prefix('/')?;
    tokens.split('/').try_fold(value, |target, token| match target {
        Value::Object(map) => map.get(token),
        Value::Array(list) => array_index(token).and_then(|i| list.get(i)),
        _ => None,
    })
}

/// An array index as RFC 6901 (and `serde_json`) reads one: digits, no sign, no leading zero.
fn array_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

/// How every object this module writes begins.
const HEAD: &[u8] = b"{\"metadata\":{";

/// Fields of `metadata` that are never stored: the version is the record's, `selfLink` is gone from Kubernetes.
fn stored_field(name: &str) -> bool {
    !matches!(name, "resourceVersion" | "selfLink")
}

struct Metadata<'a>(&'a Map<String, Value>);

impl Serialize for Metadata<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (name, value) in self.0.iter().filter(|(name, _)| stored_field(name)) {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

struct MetadataFirst<'a>(&'a Map<String, Value>);

impl Serialize for MetadataFirst<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        if let Some(metadata) = self.0.get("metadata").and_then(Value::as_object) {
            map.serialize_entry("metadata", &Metadata(metadata))?;
        }
        for (name, value) in self.0.iter().filter(|(name, value)| *name != "metadata" || !value.is_object()) {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// The bytes `object` is stored as (no copy of the object is made).
pub fn encode(object: &Value) -> Bytes {
    // Serializing a `Value` into a Vec cannot fail.
    let bytes = match object.as_object() {
        Some(fields) => serde_json::to_vec(&MetadataFirst(fields)),
        None => serde_json::to_vec(object),
    };
    Bytes::from(bytes.unwrap_or_default())
}

/// Parses stored bytes and sets `metadata.resourceVersion` from the record.
pub fn decode(record: &Record) -> ApiResult<Value> {
    let mut object: Value = serde_json::from_slice(&record.value).map_err(|err| not_json(record, err))?;
    set_resource_version(&mut object, record.revision);
    Ok(object)
}

pub fn set_resource_version(object: &mut Value, revision: Revision) {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.insert("resourceVersion".into(), json!(revision.to_string()));
    }
}

fn not_json(record: &Record, err: serde_json::Error) -> ApiError {
    ApiError::internal(format!("stored object {} is not JSON: {err}", record.key))
}

/// The object with only its `metadata` parsed (`{"metadata": {...}}`, without `resourceVersion`): what label and
/// `metadata.*` field selectors read. An object in another field order is parsed whole.
pub fn head(record: &Record) -> ApiResult<Value> {
    if !record.value.starts_with(HEAD) {
        return serde_json::from_slice(&record.value).map_err(|err| not_json(record, err));
    }
    // One value from where `metadata`'s object begins: the parse stops at its closing brace.
    let mut parser = serde_json::Deserializer::from_slice(&record.value[HEAD.len() - 1..]);
    let metadata = serde::Deserialize::deserialize(&mut parser).map_err(|err| not_json(record, err))?;
    Ok(json!({ "metadata": Value::Object(metadata) }))
}

/// Appends the object as a request sees it untransformed: its stored bytes with `metadata.resourceVersion`
/// written in first. An object in another field order is parsed, given its version and serialized.
pub fn write_as_read(record: &Record, out: &mut Vec<u8>) -> ApiResult<()> {
    let Some(rest) = record.value.strip_prefix(HEAD) else {
        // Writing a `Value` into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, &decode(record)?);
        return Ok(());
    };
    write_head(record.revision, rest, out);
    out.extend_from_slice(rest);
    Ok(())
}

/// The stored head with `metadata.resourceVersion` written in, before the stored bytes `rest` that follow it.
fn write_head(revision: Revision, rest: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(HEAD);
    out.extend_from_slice(b"\"resourceVersion\":\"");
    out.extend_from_slice(revision.0.to_string().as_bytes());
    out.push(b'"');
    if !rest.starts_with(b"}") {
        out.push(b',');
    }
}

/// The object as [`write_as_read`] writes it, in pieces that share the record's bytes: its head with the version
/// written in, then the rest of the stored bytes as they are (no copy). Every GET of a large object then holds
/// one buffer, the store's, however many answers wait to be sent.
pub fn as_read(record: &Record) -> ApiResult<[Bytes; 2]> {
    if !record.value.starts_with(HEAD) {
        let mut whole = Vec::new();
        write_as_read(record, &mut whole)?;
        return Ok([Bytes::from(whole), Bytes::new()]);
    }
    let rest = record.value.slice(HEAD.len()..);
    let mut head = Vec::with_capacity(HEAD.len() + 40);
    write_head(record.revision, &rest, &mut head);
    Ok([Bytes::from(head), rest])
}

#[cfg(test)]
mod tests {
    use kspaces_storage::{ApiIdentity, GroupResource, KeyLayout, Record, Revision, SpaceName};
    use serde_json::{json, Value};

    use super::{as_read, decode, encode, head, write_as_read};

    fn record(value: &[u8], revision: u64) -> Record {
        let keys = KeyLayout::default().resource(&GroupResource::new("", "configmaps"), &ApiIdentity::BuiltIn).unwrap_or_else(|e| panic!("{e}"));
        let key = keys.object(&SpaceName::new("t").unwrap_or_else(|e| panic!("{e}")), Some("ns"), "a").unwrap_or_else(|e| panic!("{e}"));
        Record { key, value: value.to_vec().into(), revision: Revision(revision), create_revision: Revision(1) }
    }

    fn read(record: &Record) -> Value {
        let mut out = Vec::new();
        write_as_read(record, &mut out).unwrap_or_else(|e| panic!("{e}"));
        let pieces = as_read(record).unwrap_or_else(|e| panic!("{e}")).concat();
        assert_eq!(String::from_utf8_lossy(&pieces), String::from_utf8_lossy(&out), "as_read's pieces are write_as_read's bytes");
        serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn metadata_comes_first_and_the_version_is_never_stored() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"metadata": "{\"metadata\":{"},
            "metadata": {"name": "a", "resourceVersion": "7", "selfLink": "/x", "labels": {"k": "v"}}});
        let stored = encode(&object);
        assert_eq!(&stored[..], br#"{"metadata":{"labels":{"k":"v"},"name":"a"},"apiVersion":"v1","data":{"metadata":"{\"metadata\":{"},"kind":"ConfigMap"}"#);
        let record = record(&stored, 42);
        let mut expected = object.clone();
        expected["metadata"] = json!({"name": "a", "resourceVersion": "42", "labels": {"k": "v"}});
        assert_eq!(read(&record), expected);
        assert_eq!(decode(&record).unwrap_or_else(|e| panic!("{e}")), expected);
        assert_eq!(head(&record).unwrap_or_else(|e| panic!("{e}")), json!({"metadata": {"name": "a", "labels": {"k": "v"}}}));
    }

    #[test]
    fn empty_metadata_and_objects_without_it() {
        assert_eq!(read(&record(&encode(&json!({"metadata": {}, "kind": "X"})), 3)), json!({"metadata": {"resourceVersion": "3"}, "kind": "X"}));
        let bare = record(&encode(&json!({"kind": "X", "metadata": "not an object"})), 3);
        assert_eq!(read(&bare), json!({"kind": "X", "metadata": "not an object"}));
    }

    #[test]
    fn objects_in_the_older_field_order_are_read_through_a_full_parse() {
        let older = record(br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"k":"v"}}}"#, 9);
        let expected = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"k": "v"}, "resourceVersion": "9"}});
        assert_eq!(read(&older), expected);
        assert_eq!(decode(&older).unwrap_or_else(|e| panic!("{e}")), expected);
        assert_eq!(head(&older).unwrap_or_else(|e| panic!("{e}"))["metadata"]["labels"], json!({"k": "v"}));
        assert!(head(&record(b"{\"metadata\":{nope", 1)).is_err());
    }

    #[test]
    fn at_reads_a_pointer_as_serde_json_does() {
        let object = json!({"metadata": {"name": "a", "labels": {"k/x": "1", "": "empty"}, "finalizers": ["f0", "f1"]},
            "list": [[1, 2], {"0": "zero"}], "": {"": "nested empty"}, "a~b": 1, "c/d": 2});
        let pointers = ["", "/", "//", "/metadata", "/metadata/name", "/metadata/name/x", "/metadata/labels/k~1x", "/metadata/labels/",
            "/metadata/finalizers/0", "/metadata/finalizers/1", "/metadata/finalizers/2", "/metadata/finalizers/01",
            "/metadata/finalizers/+1", "/metadata/finalizers/-", "/list/0/1", "/list/1/0", "/a~0b", "/c~1d", "/c/d", "metadata",
            "/missing", "/metadata/labels/k/x", "/list/00", "/list/18446744073709551616"];
        for pointer in pointers {
            assert_eq!(super::at(&object, pointer), object.pointer(pointer), "{pointer:?}");
        }
    }
}
