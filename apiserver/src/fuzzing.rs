//! The fuzz targets' entry points (`tests/fuzz`, docs/limits.md "Fuzzing"): each takes arbitrary bytes to one of
//! the parsers a request reaches before any state is read, calls it as the server does, and checks what the
//! server relies on. A panic here is a bug in the code it calls. Not an API: nothing in the server uses it.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::apis::{query, request_info};
use crate::handlers::patch::Patch;
use crate::decode::schema::{Node, MAX_PROBLEMS};
use crate::decode::{self, Strictness};
use crate::negotiate::{self, BodyFormat, Endpoint, PatchKind};
use crate::registry::depth::{self, MAX_DEPTH};
use crate::registry::selector::{FieldSelector, LabelSelector};

/// The server's OpenAPI definitions, built once per fuzzing process.
fn definitions() -> &'static Map<String, Value> {
    static DEFINITIONS: OnceLock<Map<String, Value>> = OnceLock::new();
    DEFINITIONS.get_or_init(|| crate::openapi::fresh_definitions(&crate::kinds::resources(), &crate::kinds::definitions()))
}

/// The definitions a strategic merge patch or a strict decoding is checked against, picked by a byte.
const DEFINITIONS: [Option<&str>; 5] = [
    None,
    Some("io.k8s.api.core.v1.Pod"),
    Some("io.k8s.api.apps.v1.Deployment"),
    Some("io.k8s.api.core.v1.Service"),
    Some("io.k8s.api.core.v1.ConfigMap"),
];

fn definition(selector: u8) -> Option<&'static str> {
    DEFINITIONS[usize::from(selector) % DEFINITIONS.len()]
}

/// A create's or update's body: the first byte picks JSON, YAML or protobuf and how strictly it is read (as
/// `decode::decode` would); the rest is the body.
pub fn request_body(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else { return };
    let format = [BodyFormat::Json, BodyFormat::Yaml, BodyFormat::Protobuf][usize::from(selector % 3)];
    let schema = definition(selector / 3).and_then(|name| Node::definition(definitions(), name));
    let strictness = match (selector / 3) % 3 {
        0 => Strictness::None,
        1 => Strictness::Duplicates,
        _ => schema.map_or(Strictness::Duplicates, Strictness::Schema),
    };
    if let Ok(decoded) = decode::read(format, body, strictness) {
        assert!(decoded.problems.len() <= MAX_PROBLEMS, "{} problems noted", decoded.problems.len());
        stored_reads_back(&decoded.value);
    }
}

/// A patch applied to an object: the first byte picks the patch type and, for a strategic merge patch, the kind's
/// definition; the rest is the current object as JSON, a NUL byte, and the patch body. Objects the store could
/// not hold (not an object, nested past the limit) are skipped: no stored object is like them.
pub fn patch(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else { return };
    let Some(split) = rest.iter().position(|&b| b == 0) else { return };
    let (current, body) = (&rest[..split], &rest[split + 1..]);
    let Ok(current) = serde_json::from_slice::<Value>(current) else { return };
    if !current.is_object() || depth::depth_within(&current, MAX_DEPTH).is_none() {
        return;
    }
    let kind = [PatchKind::Json, PatchKind::Merge, PatchKind::Strategic][usize::from(selector % 3)];
    let Ok(patch) = Patch::parse(kind, body) else { return };
    let Ok(patched) = patch.apply(definitions, definition(selector / 3), &current) else { return };
    if kind == PatchKind::Json {
        // A JSON patch checks the depth as it goes: it never builds what the store would refuse.
        assert!(depth::depth_within(&patched, MAX_DEPTH).is_some(), "a JSON patch built an object nested past {MAX_DEPTH}");
    }
    let _ = patch.shown(&patched);
    stored_reads_back(&patched);
}

/// A request line: method, path, query, `Accept` and `Content-Type`, one a line, parsed as the chain parses them.
pub fn request_line(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let mut next = || lines.next().unwrap_or_default();
    let (method, path, query_text, accept, content_type) = (next(), next(), next(), next(), next());
    let info = request_info::parse(method, path, query_text);
    if info.invalid_path.is_none() && info.is_resource {
        for segment in [&info.resource, &info.name, &info.subresource] {
            assert!(!segment.contains('/'), "a path segment {segment:?} holds a '/'");
        }
    }
    for name in ["watch", "timeoutSeconds", "limit", "labelSelector", "fieldSelector", "resourceVersion"] {
        let _ = query::first(query_text, name);
        let _ = query::all(query_text, name);
    }
    let _ = negotiate::choose(Some(accept), Endpoint { protobuf: true, tables: true });
    let _ = negotiate::choose(Some(accept), Endpoint { protobuf: false, tables: false });
    let _ = negotiate::status_format(Some(accept));
    let _ = negotiate::body_format(Some(content_type));
    let _ = negotiate::patch_kind(Some(content_type));
}

/// A label or field selector, then matched against a small object: the first byte picks which parser.
pub fn selector(data: &[u8]) {
    let Some((&selector, text)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(text);
    let object = serde_json::json!({
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web", "tier": "front", "x.io/y": ""}},
        "spec": {"nodeName": "node-1", "restartPolicy": "Always"}, "status": {"phase": "Running"},
    });
    match selector % 3 {
        0 => {
            if let Ok(labels) = LabelSelector::parse(&text) {
                let _ = labels.matches(&object);
                let _ = labels.and(&labels).matches(&object);
            }
        }
        1 => {
            if let Ok(fields) = FieldSelector::parse_generic(&text) {
                let _ = (fields.matches(&object), fields.name(), fields.reads_metadata_only());
            }
        }
        _ => {
            let (group, kind) = [("", "Pod"), ("", "Secret"), ("", "Event"), ("apps", "ReplicaSet")][usize::from(selector / 3) % 4];
            if let Ok(fields) = FieldSelector::parse(&text, group, kind) {
                let _ = (fields.matches(&object), fields.name(), fields.reads_metadata_only());
            }
        }
    }
}

/// What the store promises of an object it keeps: one that passes the depth check reads back, even inside the
/// envelopes clients read it in (a list's items, a watch event).
fn stored_reads_back(object: &Value) {
    if depth::check_stored("", "ConfigMap", "fuzz", object).is_err() {
        return;
    }
    let event = serde_json::json!({"type": "ADDED", "object": {"kind": "List", "items": [object]}});
    let text = serde_json::to_vec(&event).expect("a JSON value serializes");
    if let Err(err) = serde_json::from_slice::<Value>(&text) {
        panic!("a storable object does not read back: {err}");
    }
}
