//! WATCH: a chunked stream of `{"type": ..., "object": ...}` lines, one per event, from a storage watcher.
//!
//! `resourceVersion` unset or `0` (and `sendInitialEvents=true`) first sends the current objects as ADDED
//! events; a resourceVersion resumes after it; bookmarks and `timeoutSeconds` are honoured; a resourceVersion
//! that is too old ends the stream with an ERROR event carrying a 410 `Expired` Status, as kube-apiserver does.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header;
use actix_web::HttpResponse;
use bytes::Bytes;
use kspaces_storage::{EventKind, Revision, StorageError, WatchFrom, WatchItem, WatchOptions, Watcher};
use serde_json::{json, Value};

use super::{list, Ctx};
use crate::negotiate::{self, Output};
use crate::registry::selector::FieldSelector;
use crate::registry::store::ListOptions;
use crate::registry::{ResourceInfo, Scope};
use crate::state::ApiServer;
use crate::status::{ApiError, ApiResult};
use crate::table::{self, IncludeObject};

/// Encoding slot for plain JSON frames (see `kspaces_storage::Event::encoded`).
const JSON_FRAME_SLOT: usize = 0;
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// How one watch renders and filters events.
struct Render {
    resource: Arc<ResourceInfo>,
    /// A cross-space watch of one namespace filters on it.
    scope: Scope,
    options: ListOptions,
    output: Output,
    include: IncludeObject,
    bookmarks: bool,
}

impl Render {
    /// True when events are not sent as stored: filtered, or a custom resource stored in another version.
    fn filtered(&self) -> bool {
        !(self.options.labels.is_empty() && self.options.fields.is_empty() && self.scope.namespace_filter().is_none())
            || self.resource.custom.as_ref().is_some_and(|c| c.storage_api_version() != self.resource.api_version())
    }

    fn matches(&self, object: &Value) -> bool {
        self.scope.holds(object) && self.options.labels.matches(object) && self.options.fields.matches(object)
    }

    fn frame(&self, kind: &str, object: &Value) -> Bytes {
        let object = match self.output {
            Output::Table => {
                let metadata = table::object_table_metadata(object);
                table::build_table(&self.resource, std::slice::from_ref(object), metadata, self.include, chrono::Utc::now())
            }
            _ => {
                let mut object = object.clone();
                crate::crds::strategy::convert(&self.resource, &mut object);
                object
            }
        };
        let mut line = json!({"type": kind, "object": object}).to_string();
        line.push('\n');
        Bytes::from(line)
    }

    fn bookmark(&self, revision: Revision, initial_events_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": revision.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object = json!({"kind": self.resource.kind, "apiVersion": self.resource.api_version(), "metadata": metadata});
        let mut line = json!({"type": "BOOKMARK", "object": object}).to_string();
        line.push('\n');
        Bytes::from(line)
    }

    fn error(&self, err: ApiError) -> Bytes {
        let mut line = json!({"type": "ERROR", "object": err.to_status()}).to_string();
        line.push('\n');
        Bytes::from(line)
    }

    /// The frame for one storage event, or `None` when this watcher's selectors filter it out.
    fn event(&self, event: &kspaces_storage::Event) -> Option<Bytes> {
        let decode_value = |value: &Bytes| -> Option<Value> {
            let mut object: Value = serde_json::from_slice(value).ok()?;
            crate::registry::store::set_resource_version(&mut object, event.revision);
            Some(object)
        };
        let natural = match event.kind {
            EventKind::Added => "ADDED",
            EventKind::Modified => "MODIFIED",
            EventKind::Deleted => "DELETED",
        };
        if !self.filtered() && self.output == Output::Json {
            let frame = event.encoded(JSON_FRAME_SLOT, |e| decode_value(&e.value).map(|o| self.frame(natural, &o)).unwrap_or_default());
            return (!frame.is_empty()).then_some(frame);
        }
        let object = decode_value(&event.value)?;
        let now_matches = self.matches(&object);
        let kind = match event.kind {
            EventKind::Added | EventKind::Deleted if now_matches => natural,
            EventKind::Modified => {
                let before = event.prev.as_ref().and_then(decode_value).is_some_and(|o| self.matches(&o));
                match (before, now_matches) {
                    (true, true) => "MODIFIED",
                    (false, true) => "ADDED",
                    (true, false) => "DELETED",
                    (false, false) => return None,
                }
            }
            _ => return None,
        };
        Some(self.frame(kind, &object))
    }
}

/// Keeps `apiserver_longrunning_requests` right however the stream ends.
struct LongRunning(Arc<ApiServer>);

impl Drop for LongRunning {
    fn drop(&mut self) {
        self.0.metrics.longrunning.fetch_sub(1, Ordering::Relaxed);
    }
}

struct Stream {
    pending: VecDeque<Bytes>,
    watcher: Option<Watcher>,
    render: Render,
    deadline: tokio::time::Instant,
    _guard: LongRunning,
}

impl Stream {
    async fn next_frame(&mut self) -> Option<Bytes> {
        loop {
            if let Some(frame) = self.pending.pop_front() {
                return Some(frame);
            }
            let watcher = self.watcher.as_mut()?;
            let item = match tokio::time::timeout_at(self.deadline, watcher.next()).await {
                Err(_) | Ok(None) => return None,
                Ok(Some(item)) => item,
            };
            match item {
                Ok(WatchItem::Event(event)) => {
                    if let Some(frame) = self.render.event(&event) {
                        return Some(frame);
                    }
                }
                Ok(WatchItem::Bookmark(revision)) if self.render.bookmarks => return Some(self.render.bookmark(revision, false)),
                Ok(WatchItem::Bookmark(_)) => {}
                Err(err) => {
                    self.watcher = None;
                    return Some(self.render.error(storage_error(err)));
                }
            }
        }
    }
}

fn storage_error(err: StorageError) -> ApiError {
    match err {
        StorageError::Compacted { requested, compacted } => {
            ApiError::new(410, "Expired", format!("too old resource version: {requested} ({compacted})"))
        }
        other => ApiError::from(other),
    }
}

pub async fn handle(ctx: Ctx) -> ApiResult<HttpResponse> {
    let output = match negotiate::choose(ctx.accept.as_deref(), true)? {
        Output::Yaml => Output::Json,
        other => other,
    };
    let mut options = list::options(&ctx)?;
    if !ctx.info.name.is_empty() {
        options.fields = FieldSelector::parse(&format!("metadata.name={}", ctx.info.name), &ctx.resource.kind)?;
    }
    let send_initial = ctx.param("sendInitialEvents") == Some("true");
    if send_initial && ctx.param("resourceVersionMatch") != Some("NotOlderThan") {
        return Err(ApiError::invalid("meta.k8s.io", "ListOptions", "", vec![crate::status::Cause::invalid(
            "sendInitialEvents", "true", "sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to NotOlderThan")]));
    }
    let timeout = ctx.param("timeoutSeconds").and_then(|t| t.parse::<u64>().ok()).map(Duration::from_secs).unwrap_or(DEFAULT_TIMEOUT);
    let render = Render {
        resource: ctx.resource.clone(),
        scope: ctx.scope.clone(),
        options: ListOptions { limit: None, continue_token: None, exact_revision: None, ..options },
        output,
        include: ctx.include_object()?,
        bookmarks: ctx.flag("allowWatchBookmarks"),
    };
    let rv = ctx.param("resourceVersion");
    let mut pending = VecDeque::new();
    let from = if send_initial || matches!(rv, None | Some("0")) {
        let (items, meta) = ctx.server.registry.list(&ctx.resource, &ctx.scope, &render.options).await?;
        pending.extend(items.iter().map(|item| render.frame("ADDED", item)));
        if send_initial {
            pending.push_back(render.bookmark(meta.resource_version, true));
        }
        meta.resource_version
    } else {
        list::parse_revision(rv.unwrap_or_default())?
    };
    let range = ctx.server.registry.range(&ctx.resource, &ctx.scope)?;
    let watcher = match ctx.server.registry.storage().watch(&range, WatchFrom::After(from), WatchOptions { bookmarks: true }).await {
        Ok(watcher) => Some(watcher),
        Err(err) => {
            pending.push_back(render.error(storage_error(err)));
            None
        }
    };
    ctx.server.metrics.longrunning.fetch_add(1, Ordering::Relaxed);
    let stream = Stream {
        pending,
        watcher,
        render,
        deadline: tokio::time::Instant::now() + timeout,
        _guard: LongRunning(ctx.server.clone()),
    };
    let body = futures::stream::unfold(stream, |mut stream| async move {
        let frame = stream.next_frame().await?;
        Some((Ok::<Bytes, actix_web::Error>(frame), stream))
    });
    let content_type = match output {
        Output::Table => "application/json;as=Table;v=v1;g=meta.k8s.io",
        _ => "application/json",
    };
    Ok(HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((header::CONTENT_ENCODING, "identity"))
        .insert_header((header::CACHE_CONTROL, "no-cache, private"))
        .streaming(body))
}
