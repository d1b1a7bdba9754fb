//! LIST: selectors, `limit`/`continue`, `resourceVersion`/`resourceVersionMatch`, and the forms a client may ask
//! for: Tables, `PartialObjectMetadataList`, protobuf. A JSON list of objects nothing transforms is written from
//! the stored bytes, and without a `limit` it is streamed a page at a time: the whole list is never in memory.
//! Other forms are built a page at a time, keeping only what they answer; a long protobuf list is read twice, once
//! to learn its length and once to send it.

use actix_web::HttpResponse;
use bytes::Bytes;
use kspaces_storage::{Position, Record, Revision};
use serde_json::{json, Value};

use super::{partial, protobuf_error, respond, Ctx};
use crate::negotiate::{Format, Target};
use crate::protobuf::{Finished, ItemEncoder, ListEncoder, ENVELOPE_TAIL, PROTOBUF_MEDIA_TYPE};
use crate::registry::selector::{FieldSelector, LabelSelector};
use crate::registry::stored::write_as_read;
use crate::registry::read::PARSED_AT_ONCE;
use crate::registry::{ListMeta, ListOptions, Pages};
use crate::status::{ApiError, ApiResult, Cause};
use crate::table;

/// A list's or watch's query as kube's parameter codec decodes `ListOptions`: `timeoutSeconds` and `limit` must
/// be integers and both selectors must parse (400, Go's and apimachinery's messages, in kube's order). The field
/// selector's fields are not yet checked against the kind (`Decoded::selectors`).
pub struct Decoded {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub limit: Option<i64>,
    pub timeout_seconds: Option<i64>,
}

/// Go's `strconv.ParseInt(value, 10, 64)`, with its error text.
pub fn go_int(value: &str) -> ApiResult<i64> {
    value.parse::<i64>().map_err(|err| {
        let why = match err.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => "value out of range",
            _ => "invalid syntax",
        };
        ApiError::bad_request(format!("strconv.ParseInt: parsing {value:?}: {why}"))
    })
}

/// Decodes the list options of a list, watch or deletecollection (see `Decoded`).
pub fn decode(ctx: &Ctx) -> ApiResult<Decoded> {
    let raw = |name: &str| ctx.query.get(name).map(String::as_str);
    let timeout_seconds = raw("timeoutSeconds").map(go_int).transpose()?;
    let limit = raw("limit").map(go_int).transpose()?;
    let labels = LabelSelector::parse(raw("labelSelector").unwrap_or_default())?;
    let fields = FieldSelector::parse_generic(raw("fieldSelector").unwrap_or_default())?;
    Ok(Decoded { labels, fields, limit, timeout_seconds })
}

impl Decoded {
    /// The selectors, once every field of the field selector is one the kind supports (kube's field label
    /// conversion, a 400).
    pub fn selectors(&self, ctx: &Ctx) -> ApiResult<ListOptions> {
        let fields = if self.fields.is_empty() { FieldSelector::default() } else {
            FieldSelector::parse(ctx.query.get("fieldSelector").map(String::as_str).unwrap_or_default(), &ctx.resource.group, &ctx.resource.kind)?
        };
        let labels = match &ctx.narrowed {
            Some(narrowed) => self.labels.and(narrowed),
            None => self.labels.clone(),
        };
        Ok(ListOptions { labels, fields, only: ctx.only.clone(), ..ListOptions::default() })
    }
}

/// Parses a list's parameters, in kube's order: decoding (400), `ListOptions` validation (422), the field
/// selector's fields (400), then what storage checks: `resourceVersion` (400), `continue` with a version (400).
pub fn options(ctx: &Ctx) -> ApiResult<ListOptions> {
    let decoded = decode(ctx)?;
    validate(ctx.param("resourceVersion"), ctx.param("resourceVersionMatch"), ctx.param("continue").is_some(),
        ctx.query.contains_key("sendInitialEvents"))?;
    let selectors = decoded.selectors(ctx)?;
    let limit = decoded.limit.filter(|l| *l > 0).map(|l| l as usize);
    let continue_token = ctx.param("continue").map(str::to_owned);
    let resource_version = ctx.param("resourceVersion");
    if continue_token.is_some() && resource_version.is_some_and(|rv| rv != "0") {
        return Err(ApiError::bad_request("specifying resource version is not allowed when using continue"));
    }
    let revision = resource_version.map(parse_position).transpose()?;
    let exact_revision = match ctx.param("resourceVersionMatch") {
        Some("Exact") => revision,
        _ => None,
    };
    Ok(ListOptions { limit, continue_token, exact_revision, ..selectors })
}

/// kube's `ValidateListOptions` for a list (not a watch): 422 `ListOptions` with every cause.
fn validate(resource_version: Option<&str>, matching: Option<&str>, has_continue: bool, send_initial_events: bool) -> ApiResult<()> {
    let mut causes = Vec::new();
    if let Some(matching) = matching {
        if resource_version.is_none() {
            causes.push(Cause::forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"));
        }
        if has_continue {
            causes.push(Cause::forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"));
        }
        if !matches!(matching, "Exact" | "NotOlderThan") {
            causes.push(Cause::not_supported("resourceVersionMatch", matching, &["Exact", "NotOlderThan", ""]));
        }
        if matching == "Exact" && resource_version == Some("0") {
            causes.push(Cause::forbidden("resourceVersionMatch", "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
        }
    }
    if send_initial_events {
        causes.push(Cause::forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
    }
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid_options("ListOptions", causes))
}

/// A `resourceVersion`: a number as kube's storage parses one (`""` and `"0"` are 0, otherwise its 400 word for
/// word), or the position of a list across storage clusters (`0:120,3:45`, `kspaces_storage::Position`).
pub fn parse_position(rv: &str) -> ApiResult<Position> {
    if rv.contains(':') {
        return rv.parse().map_err(|_| ApiError::bad_request(format!(
            "invalid resource version: resourceVersion: Invalid value: {rv:?}: not a revision, nor storage-cluster:revision pairs joined by ','")));
    }
    parse_resource_version(rv).map(|revision| Position::One(Revision(revision)))
}

/// Go's `strconv.ParseUint(rv, 10, 64)` inside kube's `APIObjectVersioner.ParseResourceVersion`, with the message
/// kube-apiserver's storage answers (`invalid resource version: resourceVersion: Invalid value: ...`).
pub fn parse_resource_version(rv: &str) -> ApiResult<u64> {
    if rv.is_empty() || rv == "0" {
        return Ok(0);
    }
    let parsed = if rv.bytes().all(|b| b.is_ascii_digit()) { rv.parse::<u64>().map_err(|_| "value out of range") } else { Err("invalid syntax") };
    parsed.map_err(|why| ApiError::bad_request(format!(
        "invalid resource version: resourceVersion: Invalid value: {rv:?}: strconv.ParseUint: parsing {rv:?}: {why}")))
}

pub fn list_metadata(meta: &ListMeta) -> Value {
    let mut metadata = json!({"resourceVersion": meta.resource_version.to_string()});
    if let Some(token) = &meta.continue_token {
        metadata["continue"] = json!(token);
    }
    if let Some(remaining) = meta.remaining.filter(|_| meta.continue_token.is_some()) {
        metadata["remainingItemCount"] = json!(remaining);
    }
    metadata
}

pub async fn handle(ctx: Ctx) -> ApiResult<HttpResponse> {
    let output = ctx.output(true)?;
    let options = options(&ctx)?;
    if output.format == Format::Json && output.target == Target::Object {
        if let Some(pages) = ctx.server.registry.pages_as_stored(&ctx.resource, &ctx.scope, &options)? {
            return as_stored(&ctx, pages).await;
        }
    }
    // Tables, metadata lists and protobuf lists are built a page at a time: only one page's objects are parsed at
    // once.
    match output.target {
        Target::Table | Target::MetadataList(_)
            if output.format == Format::Json && options.limit.is_none() && !ctx.audit_body && !ctx.server.registry.converts(&ctx.resource) => {
            let shape = match output.target {
                Target::MetadataList(version) => Shape::Metadata(version),
                _ => Shape::Table { include: ctx.include_object()?, now: chrono::Utc::now() },
            };
            return rows_streamed(&ctx, Rows { registry: ctx.server.registry.clone(), resource: ctx.resource.clone(), shape }, &options).await;
        }
        Target::Table => {
            let (include, now) = (ctx.include_object()?, chrono::Utc::now());
            let mut table: Option<Value> = None;
            let meta = ctx.server.registry.list_pages(&ctx.resource, &ctx.scope, &options, |items| {
                let part = table::build_table(&ctx.resource, &items, Value::Null, include, now);
                match (&mut table, part) {
                    (Some(Value::Object(whole)), Value::Object(mut part)) => {
                        if let (Some(Value::Array(rows)), Some(Value::Array(more))) = (whole.get_mut("rows"), part.remove("rows")) {
                            rows.extend(more);
                        }
                    }
                    (_, part) => table = Some(part),
                }
            }).await?;
            let mut table = table.unwrap_or_else(|| table::build_table(&ctx.resource, &[], Value::Null, include, now));
            table["metadata"] = list_metadata(&meta);
            return respond(200, output, &table);
        }
        Target::MetadataList(version) => {
            let mut items = Vec::new();
            let meta = ctx.server.registry.list_pages(&ctx.resource, &ctx.scope, &options, |page| {
                items.extend(page.iter().map(|item| partial::object(item, version)));
            }).await?;
            return respond(200, output, &partial::list_of(items, list_metadata(&meta), version));
        }
        Target::Metadata(_) => return Err(partial::a_list(&ctx.resource)),
        Target::Object if output.format == Format::Protobuf => return protobuf_list(&ctx, &options).await,
        Target::Object => {}
    }
    let (items, meta) = ctx.server.registry.list(&ctx.resource, &ctx.scope, &options).await?;
    let body = json!({
        "kind": ctx.resource.list_kind(),
        "apiVersion": ctx.resource.api_version(),
        "metadata": list_metadata(&meta),
        "items": items,
    });
    respond(200, output, &body)
}

/// A JSON list whose items are the stored bytes (see `stored::write_as_read`). A list without a `limit` goes out a
/// page at a time once its first page is read (a read failing later cuts the answer short, as a failing
/// kube-apiserver stream does; a client sees a truncated body, never a partial list that parses); one with a
/// `limit` is answered whole, since its `continue` is known only at the end. An audit log recording answers
/// gets the whole list too.
async fn as_stored(ctx: &Ctx, mut pages: Pages) -> ApiResult<HttpResponse> {
    let first = pages.next().await?.unwrap_or_default();
    let head = |meta: &ListMeta| {
        let (kind, version) = (json!(ctx.resource.list_kind()), json!(ctx.resource.api_version()));
        format!(r#"{{"kind":{kind},"apiVersion":{version},"metadata":{},"items":["#, list_metadata(meta)).into_bytes()
    };
    if pages.meta().is_none() && !pages.limited() && !ctx.audit_body {
        let meta = ListMeta { resource_version: pages.revision().cloned().unwrap_or_default(), continue_token: None, remaining: None };
        return Ok(Streamed::new(head(&meta), first, pages, None, b"]}").respond("application/json", None));
    }
    let (mut items, mut count) = (Vec::with_capacity(first.iter().map(|record| record.value.len() + 32).sum()), 0);
    write_items(&first, &mut count, &mut items)?;
    while let Some(page) = pages.next().await? {
        write_items(&page, &mut count, &mut items)?;
    }
    let mut body = head(&pages.into_meta()?);
    body.reserve(items.len() + 2);
    body.extend_from_slice(&items);
    body.extend_from_slice(b"]}");
    Ok(HttpResponse::Ok().content_type("application/json").body(body))
}

/// About how many bytes of items a streamed list hands to the HTTP layer at a time: what the answer holds in memory
/// beyond the page being read, whatever the page's size (64 KiB chunks cost a fifth more CPU per list; 256 KiB
/// cost the same as whole 700 KB pages).
const CHUNK: usize = 256 * 1024;

/// The read of a list's next page, with the list handed back.
type NextPage = tokio::task::JoinHandle<(Pages, ApiResult<Option<Vec<Record>>>)>;

/// What a streamed list shows of each stored object: a Table row, or its `PartialObjectMetadata`.
enum Shape {
    Table { include: table::IncludeObject, now: chrono::DateTime<chrono::Utc> },
    Metadata(crate::negotiate::MetaVersion),
    /// The objects themselves, as protobuf list items (`protobuf_list` makes the head, which holds their length).
    Protobuf(ItemEncoder),
}

/// Makes a streamed list's items from a page of stored records.
struct Rows {
    registry: crate::registry::GenericStore,
    resource: std::sync::Arc<crate::registry::ResourceInfo>,
    shape: Shape,
}

impl Rows {
    fn rows(&self, page: &[Record]) -> ApiResult<Vec<Value>> {
        let shown = self.registry.shown(&self.resource, page)?;
        Ok(match &self.shape {
            Shape::Table { include, now } => table::rows(&self.resource, &shown, *include, *now),
            Shape::Metadata(version) => shown.iter().map(|object| partial::object(object, *version)).collect(),
            Shape::Protobuf(_) => shown,
        })
    }

    /// Writes rows made by `rows` after the `count` written before (JSON ones comma separated), until `out` holds
    /// `up_to` bytes.
    fn write(&self, rows: &mut std::vec::IntoIter<Value>, count: &mut usize, out: &mut Vec<u8>, up_to: usize) -> ApiResult<()> {
        for row in rows.by_ref() {
            if let Shape::Protobuf(items) = &self.shape {
                items.write(&row, out).map_err(protobuf_error)?;
            } else {
                if *count > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, &row).map_err(|err| ApiError::internal(format!("writing a list item: {err}")))?;
            }
            *count += 1;
            if out.len() >= up_to {
                break;
            }
        }
        Ok(())
    }

    /// The JSON answer up to its array's `[`: everything but the rows, with the list's metadata.
    fn head(&self, meta: &ListMeta) -> ApiResult<Vec<u8>> {
        let (whole, field) = match &self.shape {
            Shape::Table { include, now } => (Value::Object(table::head(&self.resource, list_metadata(meta), *include, *now)), "rows"),
            Shape::Metadata(version) => (partial::list_of(Vec::new(), list_metadata(meta), *version), "items"),
            Shape::Protobuf(_) => return Err(ApiError::internal("a protobuf list's head is made once its items are measured")),
        };
        let mut whole = whole;
        if let Some(map) = whole.as_object_mut() {
            map.remove(field);
        }
        let mut head = serde_json::to_vec(&whole).unwrap_or_default();
        head.pop(); // the closing `}`: the array follows
        head.extend_from_slice(format!(r#","{field}":["#).as_bytes());
        Ok(head)
    }

    /// As `respond` answers the same list whole.
    fn content_type(&self) -> &'static str {
        match self.shape {
            Shape::Table { .. } => "application/json;as=Table;v=v1;g=meta.k8s.io",
            Shape::Metadata(_) => "application/json",
            Shape::Protobuf(_) => PROTOBUF_MEDIA_TYPE,
        }
    }
}

/// A Table or metadata list (JSON) without a `limit`: sent a page at a time once its first page is read, as
/// `as_stored` sends items, so only one page's objects and rows are in memory at once; a list of one page is
/// answered whole.
async fn rows_streamed(ctx: &Ctx, rows: Rows, options: &ListOptions) -> ApiResult<HttpResponse> {
    let mut pages = ctx.server.registry.pages(&ctx.resource, &ctx.scope, options)?;
    let first = pages.next().await?.unwrap_or_default();
    let content_type = rows.content_type();
    if pages.meta().is_none() {
        let meta = ListMeta { resource_version: pages.revision().cloned().unwrap_or_default(), continue_token: None, remaining: None };
        let head = rows.head(&meta)?;
        return Ok(Streamed::new(head, first, pages, Some(rows), b"]}").respond(content_type, None));
    }
    let first = rows.rows(&first)?;
    let mut body = rows.head(&pages.into_meta()?)?;
    let mut count = 0;
    rows.write(&mut first.into_iter(), &mut count, &mut body, usize::MAX)?;
    body.extend_from_slice(b"]}");
    Ok(HttpResponse::Ok().content_type(content_type).body(body))
}

/// How many bytes of a protobuf list's items are kept from the read that measures them: a list up to about this
/// long is answered from that read; a longer one is read and encoded again as it is sent. What is kept stays with
/// the HTTP worker's allocator after the answer: with 4 MiB, ten lists of 10,000 1-KiB ConfigMaps left the RSS
/// 15–20 MiB higher (docs/benchmarks.md). Pages of 500 such objects, as client-go's informers list, fit in 1 MiB.
const PROTOBUF_KEPT: usize = 1 << 20;

/// A protobuf list. Its body starts with the length of the rest, so every item is encoded before the first byte
/// goes out. A list whose items fit in `PROTOBUF_KEPT` bytes is answered from that encoding. A longer one is read
/// again at the same snapshot and encoded again a page at a time as it is sent, as `rows_streamed` sends Tables:
/// twice the work, and no answer ever holds the whole list. Should the second read differ from the first (it
/// reads the same records; only a change of what a request may see between the reads could), the answer is cut
/// short rather than sent with a wrong length.
async fn protobuf_list(ctx: &Ctx, options: &ListOptions) -> ApiResult<HttpResponse> {
    let (registry, resource) = (&ctx.server.registry, &ctx.resource);
    let encoder = ListEncoder::new(&resource.api_version(), &resource.kind, &resource.list_kind()).map_err(protobuf_error)?;
    let mut encoder = encoder.keeping(PROTOBUF_KEPT);
    let mut failed = None;
    let meta = registry.list_pages(resource, &ctx.scope, options, |items| {
        for item in &items {
            if failed.is_none() {
                failed = encoder.push(item).err();
            }
        }
    }).await?;
    if let Some(err) = failed {
        return Err(protobuf_error(err));
    }
    let items = encoder.items();
    let (head, len) = match encoder.finish(list_metadata(&meta)).map_err(protobuf_error)? {
        Finished::Whole(body) => {
            let parts = futures::stream::iter(body.parts.into_iter().map(Ok::<Bytes, actix_web::Error>));
            let sized = actix_web::body::SizedStream::new(body.len as u64, parts);
            return Ok(HttpResponse::Ok().content_type(PROTOBUF_MEDIA_TYPE).body(sized));
        }
        Finished::Measured { head, len } => (head, len),
    };
    // The first read's snapshot (a client's continue token names its own, which both reads use).
    let again = ListOptions { exact_revision: Some(meta.resource_version), ..options.clone() };
    let mut pages = registry.pages(resource, &ctx.scope, &again)?;
    let first = pages.next().await?.unwrap_or_default();
    let rows = Rows { registry: registry.clone(), resource: resource.clone(), shape: Shape::Protobuf(items) };
    Ok(Streamed::new(head, first, pages, Some(rows), ENVELOPE_TAIL).respond(PROTOBUF_MEDIA_TYPE, Some(len)))
}

/// The items of a streamed list still to be written: stored records, or a page's records made into rows
/// `PARSED_AT_ONCE` at a time as they are written (only those are parsed at once, not the page).
enum Pending {
    Records(std::vec::IntoIter<Record>),
    Rows { records: std::vec::IntoIter<Record>, rows: std::vec::IntoIter<Value> },
}

/// A streamed list's state: its head, until sent; the page being written out; the read of the next page; how
/// a page becomes items (`None`: its stored records as they are); what closes the answer; and, when its length
/// was announced, that length and the bytes sent so far.
struct Streamed {
    head: Option<Vec<u8>>,
    pending: Pending,
    next: Option<NextPage>,
    count: usize,
    closed: bool,
    shape: Option<Rows>,
    tail: &'static [u8],
    length: Option<usize>,
    sent: usize,
}

impl Streamed {
    /// A list whose `first` page is read, written after `head` and closed by `tail`.
    fn new(head: Vec<u8>, first: Vec<Record>, pages: Pages, shape: Option<Rows>, tail: &'static [u8]) -> Streamed {
        let pending = match &shape {
            Some(_) => Pending::Rows { records: first.into_iter(), rows: Vec::new().into_iter() },
            None => Pending::Records(first.into_iter()),
        };
        let next = pages.meta().is_none().then(|| fetch(pages));
        Streamed { head: Some(head), pending, next, count: 0, closed: false, shape, tail, length: None, sent: 0 }
    }

    /// The answer, a chunk at a time (a failure after the first page cuts it short), of `length` bytes if known.
    fn respond(mut self, content_type: &'static str, length: Option<usize>) -> HttpResponse {
        self.length = length;
        let stream = futures::stream::try_unfold(self, Streamed::chunk);
        let stream = futures::StreamExt::map(stream, |chunk: ApiResult<Bytes>| chunk.map_err(|err| {
            tracing::warn!(error = %err.message, "a streamed list failed after its first page; the answer is cut short");
            actix_web::error::ErrorInternalServerError(err.message)
        }));
        let mut response = HttpResponse::Ok();
        response.content_type(content_type);
        match length {
            Some(length) => response.body(actix_web::body::SizedStream::new(length as u64, stream)),
            None => response.streaming(stream),
        }
    }

    /// The next chunk of the answer: the head and items up to `CHUNK` bytes, then, once every page is read and
    /// written, the closing `]}`. The next page is read (on the store's threads) while this one is written out.
    async fn chunk(mut self) -> ApiResult<Option<(Bytes, Streamed)>> {
        let mut chunk = self.head.take().unwrap_or_default();
        chunk.reserve(CHUNK + 4096);
        loop {
            match &mut self.pending {
                Pending::Records(records) => {
                    for record in records.by_ref() {
                        write_items(std::slice::from_ref(&record), &mut self.count, &mut chunk)?;
                        if chunk.len() >= CHUNK {
                            break;
                        }
                    }
                }
                Pending::Rows { records, rows } => loop {
                    let Some(shape) = self.shape.as_ref() else { break };
                    // Rows made but not written (the chunk is full) wait for the next chunk.
                    shape.write(rows, &mut self.count, &mut chunk, CHUNK)?;
                    if chunk.len() >= CHUNK {
                        break;
                    }
                    let batch: Vec<Record> = records.by_ref().take(PARSED_AT_ONCE).collect();
                    if batch.is_empty() {
                        break;
                    }
                    *rows = shape.rows(&batch)?.into_iter();
                },
            }
            if chunk.len() >= CHUNK || self.closed {
                break;
            }
            let Some(next) = self.next.take() else {
                chunk.extend_from_slice(self.tail);
                self.closed = true;
                break;
            };
            let (pages, page) = next.await.map_err(|err| ApiError::internal(format!("reading a list's page stopped: {err}")))?;
            // A page may hold no match (selectors); the list is complete once its metadata is known.
            let page = page?.unwrap_or_default();
            self.pending = match &self.shape {
                Some(_) => Pending::Rows { records: page.into_iter(), rows: Vec::new().into_iter() },
                None => Pending::Records(page.into_iter()),
            };
            if pages.meta().is_none() {
                self.next = Some(fetch(pages));
            }
        }
        self.sent += chunk.len();
        if let Some(length) = self.length.filter(|length| self.sent > *length || (self.closed && self.sent != *length)) {
            return Err(ApiError::internal(format!("a list read twice at one snapshot changed between the reads: {} bytes, not the {length} announced", self.sent)));
        }
        Ok((!chunk.is_empty()).then(|| (Bytes::from(chunk), self)))
    }
}

/// Reads `pages`' next page on a task of its own, handing the list back with it.
fn fetch(mut pages: Pages) -> NextPage {
    actix_web::rt::spawn(async move {
        let page = pages.next().await;
        (pages, page)
    })
}

/// Appends `records` as list items, each after a comma but the list's first.
fn write_items(records: &[Record], count: &mut usize, out: &mut Vec<u8>) -> ApiResult<()> {
    for record in records {
        if *count > 0 {
            out.push(b',');
        }
        write_as_read(record, out)?;
        *count += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{go_int, parse_resource_version, validate};

    #[test]
    fn integers_and_resource_versions_fail_with_go_messages() {
        assert_eq!(go_int("-5"), Ok(-5));
        assert_eq!(go_int("abc").map_err(|e| e.message), Err("strconv.ParseInt: parsing \"abc\": invalid syntax".to_owned()));
        assert_eq!(go_int("").map_err(|e| e.message), Err("strconv.ParseInt: parsing \"\": invalid syntax".to_owned()));
        assert_eq!(go_int("99999999999999999999").map_err(|e| e.message),
            Err("strconv.ParseInt: parsing \"99999999999999999999\": value out of range".to_owned()));
        assert_eq!(parse_resource_version(""), Ok(0));
        assert_eq!(parse_resource_version("17"), Ok(17));
        let invalid = |rv: &str, why: &str| Err((400, format!(
            "invalid resource version: resourceVersion: Invalid value: \"{rv}\": strconv.ParseUint: parsing \"{rv}\": {why}")));
        let got = |rv: &str| parse_resource_version(rv).map_err(|e| (e.code, e.message));
        assert_eq!(got("abc"), invalid("abc", "invalid syntax"));
        assert_eq!(got("-1"), invalid("-1", "invalid syntax"));
        assert_eq!(got("+1"), invalid("+1", "invalid syntax"));
        assert_eq!(got("99999999999999999999"), invalid("99999999999999999999", "value out of range"));
    }

    #[test]
    fn list_options_are_validated_as_kube_does() {
        let message = |rv, matching, has_continue, initial| validate(rv, matching, has_continue, initial).map_err(|e| (e.code, e.message));
        assert_eq!(message(Some("5"), Some("Exact"), false, false), Ok(()));
        assert_eq!(message(Some("0"), Some("NotOlderThan"), false, false), Ok(()));
        assert_eq!(message(None, None, true, false), Ok(()));
        let invalid = |detail: &str| Err((422, format!("ListOptions.meta.k8s.io \"\" is invalid: {detail}")));
        assert_eq!(message(None, Some("Exact"), false, false),
            invalid("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"));
        assert_eq!(message(Some("0"), Some("Exact"), false, false),
            invalid("resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
        assert_eq!(message(Some("1"), Some("Newest"), true, false), invalid(
            "[resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided, resourceVersionMatch: Unsupported value: \"Newest\": supported values: \"Exact\", \"NotOlderThan\", \"\"]"));
        assert_eq!(message(None, None, false, true), invalid("sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"));
    }
}
