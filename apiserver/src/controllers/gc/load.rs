//! The startup scan: one paged read of the whole store, at one snapshot, that fills the collector's graph with
//! the objects that have ownerReferences or wait on a GC finalizer. It runs in the background: the server
//! serves meanwhile, and live writes seen during the scan win over the scan's older copies (`Graph::load`).
//! Only objects whose bytes mention `ownerReferences` or `deletionTimestamp` are parsed, and only their metadata.

use kspaces_storage::{ApiIdentity, KeyParts, Record, SpaceName};
use serde::Deserialize;
use serde_json::{json, Value};

use super::graph::{Observed, ResourceKey};
use super::GarbageCollector;
use crate::registry::GenericStore;
use crate::status::ApiResult;

/// Objects read per page. etcd (3.4) counts every key left in the range with each page it answers, so a scan of
/// n objects in pages of p costs it about n²/2p key visits: on a store other replicas share (etcd), pages are
/// larger.
const PAGE: usize = 1000;
const SHARED_PAGE: usize = 10_000;

/// What the scan read.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scanned {
    pub objects: usize,
}

/// Scans the store into the collector's graph.
pub async fn scan(registry: &GenericStore, collector: &GarbageCollector) -> ApiResult<Scanned> {
    let mut found = Vec::new();
    let page = if registry.reader().shared() { SHARED_PAGE } else { PAGE };
    let (objects, _) = registry.reader().scan(page, |parts, record| {
        if let Some(observed) = read(parts, record) {
            found.push(observed);
        }
        if found.len() >= PAGE {
            collector.load(std::mem::take(&mut found));
        }
    }).await?;
    collector.load(found);
    Ok(Scanned { objects })
}

/// Only the metadata of an object is decoded; the rest is skipped by the parser.
#[derive(Deserialize)]
struct MetadataOnly {
    #[serde(default)]
    metadata: Value,
}

/// What one stored object tells the graph, if anything.
fn read(parts: KeyParts<'_>, record: &Record) -> Option<(SpaceName, ResourceKey, Observed)> {
    let bytes = &record.value[..];
    if !mentions(bytes, b"\"ownerReferences\"") && !mentions(bytes, b"\"deletionTimestamp\"") {
        return None;
    }
    let metadata: MetadataOnly = serde_json::from_slice(bytes).ok()?;
    let observed = Observed::of(&json!({"metadata": metadata.metadata}), parts.namespace.is_some())?;
    if !observed.matters() {
        return None;
    }
    let identity = match parts.identity {
        "builtin" => ApiIdentity::BuiltIn,
        "local" => ApiIdentity::Local,
        hash => ApiIdentity::shared(hash).ok()?,
    };
    let resource = ResourceKey { group: parts.group.to_owned(), plural: parts.resource.to_owned(), identity };
    Some((SpaceName::new(parts.space).ok()?, resource, observed))
}

/// True if `needle` occurs in `haystack`: a scan for its rarest-looking byte (its second), then a comparison.
fn mentions(haystack: &[u8], needle: &[u8]) -> bool {
    let Some(&anchor) = needle.get(1) else { return needle.is_empty() || haystack.contains(&needle[0]) };
    let mut from = 1;
    while let Some(offset) = haystack.get(from..).and_then(|rest| rest.iter().position(|&b| b == anchor)) {
        let at = from + offset;
        if haystack.get(at - 1..).is_some_and(|rest| rest.starts_with(needle)) {
            return true;
        }
        from = at + 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use kspaces_storage::{GroupResource, KeyLayout, Revision};

    fn check(identity: ApiIdentity, space: &str, namespace: Option<&str>, object: Value, expected: Option<(usize, bool)>) {
        let layout = KeyLayout::default();
        let keys = layout.resource(&GroupResource::new("example.com", "widgets"), &identity).unwrap_or_else(|e| panic!("{e}"));
        let space_name = SpaceName::new(space).unwrap_or_else(|e| panic!("{e}"));
        let key = keys.object(&space_name, namespace, "w").unwrap_or_else(|e| panic!("{e}"));
        let record = Record { key, value: Bytes::from(object.to_string()), revision: Revision(5), create_revision: Revision(5) };
        let parts = record.key.parts(&layout).unwrap_or_else(|e| panic!("{e}"));
        let got = read(parts, &record).map(|(s, resource, observed)| {
            assert_eq!((s, resource.identity), (space_name.clone(), identity.clone()));
            assert_eq!(observed.namespace.as_deref(), namespace);
            (observed.owners.len(), observed.waiting.is_some())
        });
        assert_eq!(got, expected, "{object}");
    }

    #[test]
    fn mentions_finds_whole_needles_only() {
        let rows: [(&str, &str, bool); 7] = [
            (r#"{"metadata":{"ownerReferences":[]}}"#, r#""ownerReferences""#, true),
            (r#"{"ownerReferences":1}"#, r#""ownerReferences""#, true),
            (r#"{"ownerReferences"#, r#""ownerReferences""#, false),
            (r#"{"data":{"k":"ownerReferences here"}}"#, r#""ownerReferences""#, false),
            (r#"o""#, r#""o""#, false),
            ("", "ab", false),
            ("abc", "", true),
        ];
        for (haystack, needle, expected) in rows {
            assert_eq!(mentions(haystack.as_bytes(), needle.as_bytes()), expected, "{needle} in {haystack}");
        }
    }

    #[test]
    fn only_dependents_and_waiting_owners_are_kept() {
        let owned = json!({"metadata": {"name": "w", "namespace": "ns", "uid": "u", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "o1"}]}, "spec": {"big": [1, 2, 3]}});
        check(ApiIdentity::Local, "t1", Some("ns"), owned, Some((1, false)));
        let orphaning = json!({"metadata": {"name": "w", "uid": "u", "deletionTimestamp": "2025-01-01T00:00:00Z", "finalizers": ["orphan"]}});
        check(ApiIdentity::BuiltIn, "system", None, orphaning, Some((0, true)));
        let plain = json!({"metadata": {"name": "w", "namespace": "ns", "uid": "u"}, "data": {"note": "no ownerReferences here"}});
        check(ApiIdentity::BuiltIn, "t1", Some("ns"), plain, None);
        let deleting = json!({"metadata": {"name": "w", "uid": "u", "deletionTimestamp": "2025-01-01T00:00:00Z", "finalizers": ["x.io/f"]}});
        check(ApiIdentity::BuiltIn, "t1", None, deleting, None);
        let shared = json!({"metadata": {"name": "w", "uid": "u", "ownerReferences": [{"uid": "a"}, {"uid": "b"}]}});
        check(ApiIdentity::Shared("s0123".into()), "t2", None, shared, Some((2, false)));
    }
}
