//! How one watch turns storage events into frames: which events it sees (selectors, a cross-space namespace),
//! what each carries (the object, its Table row, its `PartialObjectMetadata`) and how it is written: a JSON line,
//! or a length-prefixed protobuf `WatchEvent` (`application/vnd.kubernetes.protobuf;stream=watch`).

use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use kspaces_storage::{EventKind, Position};
use serde_json::{json, Value};

use super::super::partial;
use crate::negotiate::{Format, MetaVersion, Output, Target};
use crate::registry::{GenericStore, ListOptions, ResourceInfo, Scope};
use crate::status::ApiError;
use crate::table::{self, IncludeObject};

/// The annotation of the bookmark that ends a watch-list's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// kube 1.33's annotation on that bookmark: an empty list of the kind, encoded as the stream is, base64.
const INITIAL_EVENTS_LIST_BLUEPRINT: &str = "kubernetes.io/initial-events-list-blueprint";

/// How one watch renders and filters events.
pub struct Render {
    /// Shows stored objects in the request's version.
    pub registry: GenericStore,
    pub resource: Arc<ResourceInfo>,
    /// A cross-space watch of one namespace filters on it.
    pub scope: Scope,
    pub options: ListOptions,
    pub output: Output,
    pub include: IncludeObject,
    pub bookmarks: bool,
    /// A watch-list: its initial-events-end bookmark carries the list blueprint.
    pub watch_list: bool,
    /// The resource is a view of another's stored objects (root's Workspaces): events are its own, never shared.
    pub view: bool,
}

impl Render {
    /// True when events are not sent as stored: filtered, or a custom resource stored in another version.
    fn filtered(&self) -> bool {
        !(self.options.unfiltered() && self.scope.namespace_filter().is_none())
            || self.view
            || self.resource.custom.as_ref().is_some_and(|c| c.storage_api_version() != self.resource.api_version())
    }

    fn matches(&self, object: &Value) -> bool {
        self.scope.holds(object) && self.registry.visible(&self.resource, object)
            && self.options.matches(object)
    }

    /// The slot of `Event::encoded` this watch's frames may share with other watchers' (see the storage crate):
    /// only renderings that depend on nothing but the event.
    fn shared_slot(&self) -> Option<usize> {
        match (self.output.format, self.output.target) {
            (Format::Json, Target::Object) => Some(0),
            (Format::Protobuf, Target::Object) => Some(1),
            (Format::Json, Target::Metadata(MetaVersion::V1)) => Some(2),
            (Format::Protobuf, Target::Metadata(MetaVersion::V1)) => Some(3),
            _ => None,
        }
    }

    /// What an event carries for this watch: the object (in the requested version), its Table, or its metadata.
    /// `as=PartialObjectMetadataList` cannot apply to one object, so it carries the object, as in kube.
    fn transform(&self, object: &Value) -> Value {
        match self.output.target {
            Target::Table => {
                let metadata = table::object_table_metadata(object);
                table::build_table(&self.resource, std::slice::from_ref(object), metadata, self.include, chrono::Utc::now())
            }
            Target::Metadata(version) => partial::object(object, version),
            Target::Object | Target::MetadataList(_) => {
                let mut object = object.clone();
                self.registry.to_request(&self.resource, &mut object);
                object
            }
        }
    }

    /// One event's frame in the stream's format.
    pub fn frame(&self, kind: &str, object: &Value) -> Bytes {
        self.encode(kind, &self.transform(object))
    }

    /// Whether events are converted by a call outside (CRD conversion webhooks): `event_object`, the conversion,
    /// then `frame` instead of `event`.
    pub fn converts(&self) -> bool {
        self.registry.converts(&self.resource)
    }

    /// The kind and object of the frame `event` would make (`None`: filtered out), not yet converted.
    pub fn event_object(&self, event: &kspaces_storage::Event, position: Option<&Position>) -> Option<(&'static str, Value)> {
        let decode_value = |value: &Bytes| self.decode_event(value, event.revision, position);
        let object = decode_value(&event.value)?;
        let kind = self.kind_of(event, &object, |prev| decode_value(prev))?;
        Some((kind, object))
    }

    fn encode(&self, kind: &str, body: &Value) -> Bytes {
        if self.output.format == Format::Protobuf {
            return match crate::protobuf::encode_object(body) {
                Ok(encoded) => crate::protobuf::watch_frame(kind, encoded),
                Err(err) => self.error(ApiError::internal(format!("unable to encode watch object: {err}"))),
            };
        }
        json_line(kind, body)
    }

    /// A BOOKMARK at `revision`: an object of the kind with only its resourceVersion (and, ending a watch-list's
    /// initial events, the `k8s.io/initial-events-end` annotation and the list blueprint).
    pub fn bookmark(&self, position: &Position, initial_events_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": position.to_string()});
        if initial_events_end {
            let mut annotations = json!({INITIAL_EVENTS_END: "true"});
            if self.watch_list {
                annotations[INITIAL_EVENTS_LIST_BLUEPRINT] = json!(self.list_blueprint());
            }
            metadata["annotations"] = annotations;
        }
        let object = json!({"kind": self.resource.kind, "apiVersion": self.resource.api_version(), "metadata": metadata});
        let body = match self.output.target {
            Target::Metadata(version) => partial::object(&object, version),
            _ => object,
        };
        self.encode("BOOKMARK", &body)
    }

    /// The empty list a watch-list stands for, encoded as a LIST answer would be, base64.
    fn list_blueprint(&self) -> String {
        let list = match self.output.target {
            Target::Metadata(version) | Target::MetadataList(version) => partial::list(&[], json!({}), version),
            _ => json!({"kind": self.resource.list_kind(), "apiVersion": self.resource.api_version(), "metadata": {}, "items": []}),
        };
        let encoded = match self.output.format {
            Format::Protobuf => crate::protobuf::encode_object(&list).unwrap_or_default(),
            _ => list.to_string().into_bytes(),
        };
        base64::engine::general_purpose::STANDARD.encode(encoded)
    }

    /// An ERROR event carrying `err`'s Status.
    pub fn error(&self, err: ApiError) -> Bytes {
        let status = err.to_status();
        if self.output.format == Format::Protobuf {
            if let Ok(encoded) = crate::protobuf::encode_object(&status) {
                return crate::protobuf::watch_frame("ERROR", encoded);
            }
        }
        json_line("ERROR", &status)
    }

    /// The frame for one storage event, or `None` when this watcher's selectors filter it out. In a watch across
    /// storage clusters the object's `resourceVersion` is the watch's `position` after the event (what a client
    /// resumes from; its entry for the object's cluster is the object's revision), so that frame is this
    /// watcher's own, not shared.
    pub fn event(&self, event: &kspaces_storage::Event, position: Option<&Position>) -> Option<Bytes> {
        let decode_value = |value: &Bytes| self.decode_event(value, event.revision, position);
        if let Some(slot) = self.shared_slot().filter(|_| !self.filtered() && position.is_none()) {
            let natural = natural_kind(event);
            let frame = event.encoded(slot, |e| decode_value(&e.value).map(|o| self.frame(natural, &o)).unwrap_or_default());
            return (!frame.is_empty()).then_some(frame);
        }
        let object = decode_value(&event.value)?;
        let kind = self.kind_of(event, &object, |prev| decode_value(prev))?;
        Some(self.frame(kind, &object))
    }

    /// An event's stored object, with its `resourceVersion` (in a watch across storage clusters, `position`).
    fn decode_event(&self, value: &Bytes, revision: kspaces_storage::Revision, position: Option<&Position>) -> Option<Value> {
        let mut object: Value = serde_json::from_slice(value).ok()?;
        crate::registry::read::set_resource_version(&mut object, revision);
        if let (Some(position), Some(metadata)) = (position, object.get_mut("metadata").and_then(Value::as_object_mut)) {
            metadata.insert("resourceVersion".into(), Value::String(position.to_string()));
        }
        Some(object)
    }

    /// The event type this watcher sees for `event` (an object moving in or out of its selectors is ADDED or
    /// DELETED), or `None` when it sees nothing.
    fn kind_of(&self, event: &kspaces_storage::Event, object: &Value, decode_prev: impl Fn(&Bytes) -> Option<Value>) -> Option<&'static str> {
        let natural = natural_kind(event);
        let now_matches = self.matches(object);
        match event.kind {
            EventKind::Added | EventKind::Deleted if now_matches => Some(natural),
            EventKind::Modified => {
                let before = event.prev.as_ref().and_then(decode_prev).is_some_and(|o| self.matches(&o));
                match (before, now_matches) {
                    (true, true) => Some("MODIFIED"),
                    (false, true) => Some("ADDED"),
                    (true, false) => Some("DELETED"),
                    (false, false) => None,
                }
            }
            _ => None,
        }
    }
}

fn natural_kind(event: &kspaces_storage::Event) -> &'static str {
    match event.kind {
        EventKind::Added => "ADDED",
        EventKind::Modified => "MODIFIED",
        EventKind::Deleted => "DELETED",
    }
}

/// A JSON watch event's line, `{"type":...,"object":...}` and a newline, in the order kube writes them. Written
/// straight from the object: `json!` would copy it first.
fn json_line(kind: &str, object: &Value) -> Bytes {
    let mut line = Vec::with_capacity(256);
    line.extend_from_slice(b"{\"type\":");
    // Serializing a string or a `Value` into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut line, kind);
    line.extend_from_slice(b",\"object\":");
    let _ = serde_json::to_writer(&mut line, object);
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_json_event_line_has_the_type_then_the_object_as_kube_writes_it() {
        let line = super::json_line("ADDED", &serde_json::json!({"kind": "ConfigMap", "data": {"a": "\"b\"\n"}}));
        assert_eq!(&line[..], &b"{\"type\":\"ADDED\",\"object\":{\"data\":{\"a\":\"\\\"b\\\"\\n\"},\"kind\":\"ConfigMap\"}}\n"[..]);
        let parsed: serde_json::Value = serde_json::from_slice(&line).unwrap_or_default();
        assert_eq!(parsed["object"]["data"]["a"], "\"b\"\n");
    }
}
