//! WATCH: a chunked stream of events, one per storage event: JSON lines `{"type": ..., "object": ...}`, or
//! length-prefixed protobuf `WatchEvent`s for client-go (`render.rs`); where it starts is `start.rs`.
//!
//! Initial events (a watch-list, or the legacy unset/`0` resourceVersion) are the current objects as ADDED events,
//! then, with `allowWatchBookmarks`, a BOOKMARK annotated `k8s.io/initial-events-end`; a resourceVersion resumes
//! after it; bookmarks and `timeoutSeconds` are honoured; a resourceVersion that is too old ends the stream with
//! an ERROR event carrying a 410 `Expired` Status, as kube-apiserver does.

mod render;
mod start;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header;
use actix_web::HttpResponse;
use bytes::Bytes;
use kspaces_storage::{Position, WatchItem, Watcher};

use super::{list, Ctx};
use crate::negotiate::{Format, Target};
use crate::registry::selector::FieldSelector;
use crate::api_server::ApiServer;
use crate::status::{ApiError, ApiResult};
use render::Render;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// Keeps `apiserver_longrunning_requests` right however the stream ends.
struct LongRunning(Arc<ApiServer>);

impl Drop for LongRunning {
    fn drop(&mut self) {
        self.0.metrics.longrunning_ended();
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
                Ok(WatchItem::Event(event)) if self.render.converts() => {
                    // A conversion webhook's objects: converted one event at a time; a failed conversion ends the
                    // watch with its Status.
                    let Some((kind, mut object)) = self.render.event_object(&event, watcher.position()) else { continue };
                    let (registry, resource) = (&self.render.registry, &self.render.resource);
                    registry.to_request(resource, &mut object);
                    let spaces = self.render.scope.spaces.clone();
                    match registry.convert_shown(resource, &spaces, std::slice::from_mut(&mut object)).await {
                        Ok(()) => return Some(self.render.frame(kind, &object)),
                        Err(err) => {
                            self.watcher = None;
                            return Some(self.render.error(err));
                        }
                    }
                }
                Ok(WatchItem::Event(event)) => {
                    if let Some(frame) = self.render.event(&event, watcher.position()) {
                        return Some(frame);
                    }
                }
                Ok(WatchItem::Bookmark(revision)) if self.render.bookmarks => {
                    let position = watcher.position().cloned().unwrap_or(Position::One(revision));
                    return Some(self.render.bookmark(&position, false));
                }
                Ok(WatchItem::Bookmark(_)) => {}
                Err(err) => {
                    self.watcher = None;
                    return Some(self.render.error(ApiError::from(err)));
                }
            }
        }
    }
}

/// The watch's start parameters, from the query (the bools as sent, an empty value included, as kube reads them).
fn start_params(ctx: &Ctx) -> start::Params<'_> {
    start::Params {
        resource_version: ctx.param("resourceVersion"),
        resource_version_match: ctx.param("resourceVersionMatch"),
        send_initial_events: ctx.query.get("sendInitialEvents").map(String::as_str),
        allow_watch_bookmarks: ctx.query.get("allowWatchBookmarks").map(String::as_str),
        continue_token: ctx.param("continue"),
    }
}

/// A watch's selectors. A name in the path (the legacy `/watch/.../<name>`) is a `metadata.name` field selector,
/// and a field selector sent with it must pin the same name (kube's 400 otherwise); a name taken from the field
/// selector is already in it.
fn watch_selectors(ctx: &Ctx, decoded: &list::Decoded) -> ApiResult<crate::registry::ListOptions> {
    let mut options = decoded.selectors(ctx)?;
    if !ctx.info.name.is_empty() && !ctx.info.name_from_field_selector {
        if decoded.fields.is_empty() {
            options.fields = FieldSelector::name_equals(&ctx.info.name);
        } else if decoded.fields.name() != Some(ctx.info.name.as_str()) {
            return Err(ApiError::bad_request("fieldSelector metadata.name doesn't match requested name"));
        }
    }
    Ok(options)
}

/// The longest a watch runs: kube's longest default (twice its 30-minute `minRequestTimeout`). A larger
/// `timeoutSeconds` is clamped to it, so no deadline computed from a client's number overflows.
const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// `timeoutSeconds` (0 or unset: the default; kube picks 30-60 minutes, this server 30; negative: none left;
/// past `MAX_TIMEOUT`: `MAX_TIMEOUT`).
fn timeout(decoded: &list::Decoded) -> Duration {
    match decoded.timeout_seconds {
        None | Some(0) => DEFAULT_TIMEOUT,
        Some(seconds) => Duration::from_secs(seconds.max(0).unsigned_abs()).min(MAX_TIMEOUT),
    }
}

pub async fn handle(ctx: Ctx) -> ApiResult<HttpResponse> {
    let decoded = list::decode(&ctx)?;
    let checked = start::check(start_params(&ctx))?;
    let options = watch_selectors(&ctx, &decoded)?;
    let start = checked.start()?;
    let output = ctx.output(!start.watch_list())?;
    if output.format == Format::Yaml {
        return Err(ApiError::not_acceptable_stream());
    }
    let timeout = timeout(&decoded);
    let render = Render {
        registry: ctx.server.registry.clone(),
        resource: ctx.resource.clone(),
        scope: ctx.scope.clone(),
        options,
        output,
        // kube reads includeObject only when it converts to a Table.
        include: if output.target == Target::Table { ctx.include_object()? } else { crate::table::IncludeObject::Metadata },
        bookmarks: start.bookmarks,
        watch_list: start.watch_list(),
        view: ctx.server.registry.is_view(&ctx.resource, &ctx.scope.spaces),
    };
    let mut pending = VecDeque::new();
    let from = match start.from {
        start::From::Initial { at_least } => {
            let (items, meta) = ctx.server.registry.list(&ctx.resource, &ctx.scope, &render.options).await?;
            // A position of another shape than the list's (a number for a list across storage clusters) asks for
            // nothing the list can be compared with; the list is the newest anyway.
            let comparable = std::mem::discriminant(&at_least) == std::mem::discriminant(&meta.resource_version);
            if comparable && !meta.resource_version.covers(&at_least) {
                pending.push_back(render.error(ApiError::too_large_resource_version(&at_least, &meta.resource_version)));
                return Ok(stream_response(&ctx, output, pending, None, render, timeout));
            }
            pending.extend(items.iter().map(|item| render.frame("ADDED", item)));
            if start.bookmarks {
                pending.push_back(render.bookmark(&meta.resource_version, true));
            }
            meta.resource_version
        }
        start::From::After(position) => position,
        start::From::Now => ctx.server.registry.reader().current(&ctx.resource, &ctx.scope).await?,
    };
    let watcher = match ctx.server.registry.watch(&ctx.resource, &ctx.scope, &from).await? {
        Ok(watcher) => Some(watcher),
        Err(err) => {
            pending.push_back(render.error(err));
            None
        }
    };
    Ok(stream_response(&ctx, output, pending, watcher, render, timeout))
}

/// The streaming response: the pending frames, then the watcher's, until the timeout.
fn stream_response(ctx: &Ctx, output: crate::negotiate::Output, pending: VecDeque<Bytes>, watcher: Option<Watcher>, render: Render, timeout: Duration) -> HttpResponse {
    ctx.server.metrics.longrunning_started();
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
    let content_type = match (output.format, output.target) {
        (Format::Protobuf, _) => crate::protobuf::PROTOBUF_WATCH_MEDIA_TYPE,
        (_, Target::Table) => "application/json;as=Table;v=v1;g=meta.k8s.io",
        _ => "application/json",
    };
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((header::CONTENT_ENCODING, "identity"))
        .insert_header((header::CACHE_CONTROL, "no-cache, private"))
        .streaming(body)
}
