//! Resource request handlers, one file per verb, and what they share: the request context, body reading and
//! response encoding.

pub mod apply;
pub mod component_status;
pub mod create;
pub mod delete;
pub mod field_manager;
pub mod get;
pub mod home;
pub mod list;
pub mod options;
pub mod partial;
pub mod patch;
pub mod review;
pub mod pod;
pub mod scale;
pub mod token;
pub mod update;
pub mod watch;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use kspaces_authz::Caller;
use serde_json::Value;

use crate::apis::request_info::RequestInfo;
use crate::authorization;
use crate::decode::{self, Decoded, FieldValidation, Purpose, Schema};
use crate::negotiate::{self, Endpoint, Format, Output, Target};
use crate::registry::selector::LabelSelector;
use crate::registry::{ObjectFilter, ResourceInfo, Scope, Subresource};
use crate::api_server::ApiServer;
use crate::negotiate::respond::warning_header;
use crate::status::{ApiError, ApiResult};
use crate::table::{self, IncludeObject};

/// The largest request body accepted, like kube-apiserver.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Everything a verb handler needs about its request.
pub struct Ctx {
    pub server: Arc<ApiServer>,
    pub info: RequestInfo,
    pub resource: Arc<ResourceInfo>,
    pub scope: Scope,
    pub caller: Arc<Caller>,
    pub query: HashMap<String, String>,
    pub accept: Option<String>,
    pub content_type: Option<String>,
    /// The `Warning`s the response carries (deprecated versions, fields `fieldValidation=Warn` reports).
    pub warnings: Warnings,
    /// Writes without a `fieldManager` are recorded under the User-Agent's product name.
    pub user_agent: Option<String>,
    /// What a list or watch is narrowed to whatever it asks (a virtual workspace's selection).
    pub narrowed: Option<LabelSelector>,
    /// A virtual workspace's filter of what a list or watch sees, beyond labels.
    pub only: Option<ObjectFilter>,
    /// The audit log records the answer's body, so it must be whole (a list is not streamed).
    pub audit_body: bool,
}

/// Warnings a request collects for its response, each once, in the order given (the registry's writes add theirs).
pub use crate::registry::write::Warnings;

impl Ctx {
    /// Asks the authorizer whether the caller may also `verb` the request's resource (kube's extra checks: an
    /// apply that creates, a delete that ignores store read errors); 403 when not.
    pub async fn authorize_also(&self, verb: &str) -> ApiResult<()> {
        let mut info = self.info.clone();
        info.verb = verb.into();
        let attributes = authorization::attributes(&info);
        let decision = self.server.authorizer.authorize(&self.caller, self.scope.space()?, &attributes).await?;
        match decision.allowed {
            true => Ok(()),
            false => Err(authorization::forbidden(&self.caller.user, &attributes, &decision.reason)),
        }
    }

    pub fn new(server: Arc<ApiServer>, req: &HttpRequest, info: RequestInfo, resource: Arc<ResourceInfo>, scope: Scope, caller: Caller) -> Ctx {
        let query = web::Query::<HashMap<String, String>>::from_query(req.query_string())
            .map(web::Query::into_inner)
            .unwrap_or_default();
        let header = |name| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        Ctx {
            server, info, resource, scope, caller: Arc::new(caller), query,
            accept: header(header::ACCEPT),
            content_type: header(header::CONTENT_TYPE),
            warnings: Warnings::default(),
            user_agent: header(header::USER_AGENT),
            narrowed: None,
            only: None,
            audit_body: false,
        }
    }

    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    pub fn flag(&self, name: &str) -> bool {
        matches!(self.param(name), Some("true" | "1"))
    }

    /// `dryRun=All` (the only value kube accepts; others are kube's 422).
    pub fn dry_run(&self) -> ApiResult<bool> {
        self.write_options().map(|options| options.dry_run)
    }

    /// `dryRun` and `fieldValidation` of this write, validated as kube validates its options.
    pub fn write_options(&self) -> ApiResult<options::WriteOptions> {
        options::parse(&self.info.verb, self.param("dryRun"), self.param("fieldValidation"))
    }

    /// Adds a `Warning` to the response.
    pub fn warn(&self, text: String) {
        self.warnings.add(text);
    }

    /// Decodes the request's body for `purpose` with the one decoder ([`decode::decode`]), its warnings added to
    /// the response.
    pub fn decode(&self, body: &[u8], validation: FieldValidation, purpose: Purpose<'_>) -> ApiResult<Decoded> {
        decode::decode(body, self.content_type.as_deref(), validation, purpose, &mut |text| self.warn(text))
    }

    /// Decodes the body of a create or update of this request's resource, acting on its problems as `validation`
    /// says and dropping what the kind does not declare.
    pub fn decode_object(&self, body: &[u8], validation: FieldValidation) -> ApiResult<Value> {
        let purpose = Purpose::Object { schema: self.schema(), kind: &self.resource.kind, version: &self.resource.version };
        self.decode(body, validation, purpose).map(|decoded| decoded.value)
    }

    /// Decodes a body nothing is checked in (DeleteOptions, a review, an Eviction, a Binding, a TokenRequest).
    pub fn decode_untyped(&self, body: &[u8]) -> ApiResult<Value> {
        self.decode(body, FieldValidation::Ignore, Purpose::Untyped).map(|decoded| decoded.value)
    }

    /// What this request's resource's bodies are checked against.
    pub fn schema(&self) -> Schema<'_> {
        Schema::of(self.server.openapi(), &self.resource)
    }

    /// What this request's resource can be answered as: protobuf for built-in kinds, Tables where `tables`.
    pub fn endpoint(&self, tables: bool) -> Endpoint {
        Endpoint { protobuf: has_protobuf_form(&self.resource), tables }
    }

    /// The representation the client's `Accept` header asks for here (406 when none fits).
    pub fn output(&self, tables: bool) -> ApiResult<Output> {
        negotiate::choose(self.accept.as_deref(), self.endpoint(tables))
    }

    /// Renders one object, or the Table or `PartialObjectMetadata` of it the client asked for. A `Status` (some
    /// deletes answer one) is never converted, as in kube.
    pub fn respond_object(&self, code: u16, object: &Value) -> ApiResult<HttpResponse> {
        let output = self.output(true)?;
        if object.get("kind").and_then(Value::as_str) == Some("Status") {
            return respond(code, Output { format: output.format, target: Target::Object }, object);
        }
        match output.target {
            Target::Table => {
                let include = self.include_object()?;
                let table = table::build_table(&self.resource, std::slice::from_ref(object), table::object_table_metadata(object), include, chrono::Utc::now());
                respond(code, output, &table)
            }
            Target::Metadata(version) => respond(code, output, &partial::object(object, version)),
            Target::MetadataList(_) => Err(partial::not_a_list(&self.resource)),
            Target::Object => respond(code, output, object),
        }
    }

    pub fn include_object(&self) -> ApiResult<IncludeObject> {
        IncludeObject::from_query(self.param("includeObject").unwrap_or_default()).map_err(|err| ApiError::bad_request(err.to_string()))
    }
}

/// True when objects of `resource` have a protobuf form (built-in kinds; not custom resources nor kspaces' own).
pub fn has_protobuf_form(resource: &ResourceInfo) -> bool {
    resource.custom.is_none() && crate::protobuf::has_protobuf_form(&resource.api_version(), &resource.kind)
}

/// `body` as JSON, in a buffer sized up front for a list (its first item's size times the number of items, and a
/// margin), so that a large list is not copied over and over as its buffer grows.
fn json_bytes(body: &Value) -> Vec<u8> {
    let items = body.get("items").or_else(|| body.get("rows")).and_then(Value::as_array);
    let estimate = items.and_then(|items| Some((items.len(), items.first()?))).map_or(0, |(count, first)| {
        let mut sized = SizeCounter(0);
        let _ = serde_json::to_writer(&mut sized, first);
        count.saturating_mul(sized.0 + 1).saturating_add(count / 8 * sized.0).saturating_add(1024)
    });
    let mut buffer = Vec::with_capacity(estimate.min(MAX_LIST_RESERVE));
    // Writing a `Value` into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut buffer, body);
    buffer
}

/// The most a list's buffer reserves up front (past it, the buffer grows as it must).
const MAX_LIST_RESERVE: usize = 256 * 1024 * 1024;

/// Counts the bytes written to it.
struct SizeCounter(usize);

impl std::io::Write for SizeCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Serializes `body` as JSON (Table too), YAML or protobuf.
pub fn respond(code: u16, output: Output, body: &Value) -> ApiResult<HttpResponse> {
    let status = actix_web::http::StatusCode::from_u16(code).unwrap_or(actix_web::http::StatusCode::OK);
    match output.format {
        Format::Yaml => {
            let text = serde_saphyr::to_string(body).map_err(|err| ApiError::internal(err.to_string()))?;
            Ok(HttpResponse::build(status).content_type("application/yaml").body(text))
        }
        Format::Json if output.target == Target::Table => Ok(HttpResponse::build(status)
            .content_type("application/json;as=Table;v=v1;g=meta.k8s.io")
            .body(json_bytes(body))),
        Format::Json => Ok(HttpResponse::build(status).content_type("application/json").body(json_bytes(body))),
        Format::Protobuf => {
            let encoded = crate::protobuf::encode_object(body).map_err(protobuf_error)?;
            Ok(HttpResponse::build(status).content_type(crate::protobuf::PROTOBUF_MEDIA_TYPE).body(encoded))
        }
    }
}

/// A response that cannot be written as protobuf: 406 for a kind without a message, 500 for an ill-typed field.
pub fn protobuf_error(err: crate::protobuf::EncodeError) -> ApiError {
    match err {
        crate::protobuf::EncodeError::NoProtobufForm { .. } => ApiError::not_acceptable(),
        other => ApiError::internal(other.to_string()),
    }
}

/// A request body: still streaming, already read (before the request took a seat, or for the audit log), or
/// refused while it was read early (past [`MAX_BODY_BYTES`]; answered where the handler would read it, so that
/// authorization still comes first).
pub enum Body {
    Stream(Unread),
    Read(Bytes),
    Refused(ApiError),
}

/// The request's payload until someone reads it. The chain keeps a handle and, over HTTP/2, drains what nobody read
/// before it answers (`drain`): a stream whose body is dropped unread is reset with `CANCEL` before the answer goes
/// out, and clients (curl, Go's) then report a framing error instead of the answer.
#[derive(Clone)]
pub struct Unread(Rc<RefCell<Option<web::Payload>>>);

/// How long the chain waits for the rest of a body nobody read.
const DRAIN_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

impl Unread {
    pub fn new(payload: web::Payload) -> Unread {
        Unread(Rc::new(RefCell::new(Some(payload))))
    }

    fn take(&self) -> Option<web::Payload> {
        self.0.borrow_mut().take()
    }

    /// Puts back what a reader stopped reading (a body too large), for `drain`.
    fn put_back(&self, payload: web::Payload) {
        *self.0.borrow_mut() = Some(payload);
    }

    /// Reads and drops what is left of an unread body, for up to [`DRAIN_WITHIN`] (past that the answer goes out
    /// anyway).
    pub async fn drain(&self) {
        let Some(mut payload) = self.take() else { return };
        let _ = tokio::time::timeout(DRAIN_WITHIN, async { while let Some(Ok(_)) = payload.next().await {} }).await;
    }
}

/// Reads the request body, refusing more than [`MAX_BODY_BYTES`] with 413.
pub async fn read_body(body: Body) -> ApiResult<Bytes> {
    let (unread, mut payload) = match body {
        Body::Read(bytes) => return Ok(bytes),
        Body::Refused(err) => return Err(err),
        Body::Stream(unread) => match unread.take() {
            Some(payload) => (unread, payload),
            None => return Ok(Bytes::new()),
        },
    };
    let mut body = BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|err| ApiError::bad_request(format!("error reading the request body: {err}")))?;
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            unread.put_back(payload);
            return Err(ApiError::too_large(MAX_BODY_BYTES));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// Writes a body of any size to `out` as it arrives (a tenant's snapshot on its way to a restore); the bytes
/// written.
pub async fn body_to_file(body: Body, out: &mut impl std::io::Write) -> ApiResult<u64> {
    let failed = |err: std::io::Error| ApiError::internal(format!("storing the request body: {err}"));
    let mut payload = match body {
        Body::Read(bytes) => {
            out.write_all(&bytes).map_err(failed)?;
            return Ok(bytes.len() as u64);
        }
        Body::Refused(err) => return Err(err),
        Body::Stream(unread) => match unread.take() {
            Some(payload) => payload,
            None => return Ok(0),
        },
    };
    let mut written = 0;
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|err| ApiError::bad_request(format!("error reading the request body: {err}")))?;
        out.write_all(&chunk).map_err(failed)?;
        written += chunk.len() as u64;
    }
    Ok(written)
}

/// Reads the body of a request that has one (`POST`, `PUT`, `PATCH`, `DELETE`) before the request waits for a
/// seat of its priority level: a client sending its body slowly then holds its connection, never a seat other
/// requests of its level wait for. The read ends at `deadline` (the request's `--request-timeout`) with 504.
/// Long-running requests' bodies (exec, attach) stay streams.
pub async fn read_before_admission(method: &actix_web::http::Method, info: &RequestInfo, payload: Unread, deadline: Option<tokio::time::Instant>) -> ApiResult<Body> {
    use actix_web::http::Method;
    let Some(deadline) = deadline else { return Ok(Body::Stream(payload)) };
    if ![Method::POST, Method::PUT, Method::PATCH, Method::DELETE].contains(method) || info.is_long_running() {
        return Ok(Body::Stream(payload));
    }
    match tokio::time::timeout_at(deadline, read_body(Body::Stream(payload))).await {
        Ok(Ok(bytes)) => Ok(Body::Read(bytes)),
        Ok(Err(err)) => Ok(Body::Refused(err)),
        Err(_) => Err(ApiError::request_timeout()),
    }
}

/// Dispatches a resource request to its verb; the response, an error too, carries the request's warnings (a
/// deprecated CRD version's first).
pub async fn dispatch(ctx: Ctx, payload: Body) -> ApiResult<HttpResponse> {
    if let Some(version) = ctx.resource.custom.as_ref().and_then(|c| c.version()).filter(|v| v.deprecated) {
        let message = version.deprecation_warning.clone().unwrap_or_else(|| format!("{} {} is deprecated", ctx.resource.api_version(), ctx.resource.kind));
        ctx.warn(message);
    }
    let warnings = ctx.warnings.clone();
    let mut response = dispatch_verb(ctx, payload).await.map_err(|err| err.with_warnings(warnings.take()))?;
    for value in warnings.take().iter().filter_map(|text| warning_header(text)) {
        response.headers_mut().append(header::WARNING, value);
    }
    Ok(response)
}

async fn dispatch_verb(ctx: Ctx, payload: Body) -> ApiResult<HttpResponse> {
    let subresource = ctx.info.subresource.clone();
    if ctx.resource.is("", "ComponentStatus") && subresource.is_empty() && ctx.info.verb != "watch" {
        return component_status::handle(ctx).await;
    }
    if ctx.resource.is("", "Pod") && pod::serves(&subresource) {
        return pod::handle(ctx, payload).await;
    }
    if !subresource.is_empty() && !matches!(subresource.as_str(), "status" | "scale" | "finalize" | "approval" | "token") {
        return Err(ApiError::no_route());
    }
    if subresource == "token" {
        return match (ctx.resource.is("", "ServiceAccount"), ctx.info.verb.as_str()) {
            (true, "create") => token::create(ctx, read_body(payload).await?).await,
            (true, verb) => Err(ApiError::method_not_supported(verb, "serviceaccounts/token")),
            (false, _) => Err(ApiError::no_route()),
        };
    }
    let served = match subresource.as_str() {
        "scale" => ctx.resource.has_subresource(Subresource::Scale),
        "status" => ctx.resource.has_subresource(Subresource::Status),
        "finalize" => ctx.resource.has_subresource(Subresource::Finalize),
        "approval" => ctx.resource.has_subresource(Subresource::Approval),
        _ => true,
    };
    if !served {
        return Err(ApiError::no_route());
    }
    let verb = ctx.info.verb.clone();
    let allowed = match verb.as_str() {
        "get" | "list" | "watch" | "create" | "update" | "patch" | "delete" | "deletecollection" => {
            ctx.resource.verbs.is_empty() || ctx.resource.verbs.contains(&verb)
                || (!subresource.is_empty() && matches!(verb.as_str(), "get" | "update" | "patch"))
        }
        _ => false,
    };
    if !allowed {
        return Err(ApiError::method_not_supported(&verb, &ctx.resource.plural));
    }
    match (verb.as_str(), subresource.as_str()) {
        ("get", "scale") => scale::get(ctx).await,
        ("update" | "patch", "scale") => scale::write(ctx, read_body(payload).await?).await,
        ("get", _) => get::handle(ctx).await,
        ("list", _) => list::handle(ctx).await,
        ("watch", _) => watch::handle(ctx).await,
        ("create", "") if ctx.resource.is("", "Binding") => pod::create_binding(ctx, read_body(payload).await?).await,
        ("create", "") if ctx.resource.group == "authentication.k8s.io" || ctx.resource.group == "authorization.k8s.io" => {
            let body = read_body(payload).await?;
            match ctx.resource.kind.as_str() {
                "SelfSubjectReview" => review::self_subject(ctx, body),
                "TokenReview" => review::token(ctx, body).await,
                "SelfSubjectRulesReview" => review::rules(ctx, body).await,
                _ => review::access(ctx, body).await,
            }
        }
        ("create", "") => create::handle(ctx, read_body(payload).await?).await,
        ("update", _) => update::handle(ctx, read_body(payload).await?).await,
        ("patch", _) => patch::handle(ctx, read_body(payload).await?).await,
        ("delete", "") => delete::handle(ctx, read_body(payload).await?).await,
        ("deletecollection", "") => delete::collection(ctx, read_body(payload).await?).await,
        _ => Err(ApiError::method_not_supported(&verb, &ctx.resource.plural)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_bodies_are_the_values_text_whatever_their_buffer() {
        let items: Vec<Value> = (0..50).map(|i| json!({"metadata": {"name": format!("cm-{i}")}, "data": {"k": "v".repeat(i)}})).collect();
        for body in [json!({"kind": "ConfigMapList", "items": items}), json!({"kind": "ConfigMapList", "items": []}),
            json!({"kind": "Table", "rows": [{"cells": ["a", 1]}]}), json!({"kind": "ConfigMap"}), json!("text"), json!({"items": "no list"})] {
            assert_eq!(String::from_utf8_lossy(&json_bytes(&body)), body.to_string());
        }
        let list = json!({"items": (0..100).map(|_| json!({"a": "0123456789"})).collect::<Vec<_>>()});
        assert!(json_bytes(&list).capacity() >= list.to_string().len(), "a list's buffer is sized up front");
    }
}
