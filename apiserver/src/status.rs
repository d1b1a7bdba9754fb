//! Errors as plain data: `ApiError` is a `metav1.Status` with kube-apiserver's codes, reasons and messages, and its
//! bytes in Go's field order. How a Status goes out over HTTP (headers, the format the client accepts) is
//! content negotiation's (`negotiate/respond.rs`), as kube's `apierrors` are apart from its `responsewriters`.

use kspaces_storage::StorageError;
use serde_json::{json, Value};

/// One field-level problem (`details.causes[]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`, ...
    pub reason: &'static str,
    pub message: String,
    /// The field path, e.g. `metadata.name`.
    pub field: String,
}

/// `<field>: <message>`, as kube's `field.Error` prints.
impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl Cause {
    pub fn invalid(field: impl Into<String>, value: &str, why: &str) -> Cause {
        Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {value:?}: {why}"), field: field.into() }
    }

    pub fn required(field: impl Into<String>) -> Cause {
        Cause { reason: "FieldValueRequired", message: "Required value".to_owned(), field: field.into() }
    }

    /// kube's `field.NotSupported`: the value is not one of `supported`.
    /// kube's `field.Forbidden`: the field may not be set (here, or with this combination of fields).
    pub fn forbidden(field: impl Into<String>, why: &str) -> Cause {
        Cause { reason: "FieldValueForbidden", message: format!("Forbidden: {why}"), field: field.into() }
    }

    pub fn not_supported(field: impl Into<String>, value: &str, supported: &[&str]) -> Cause {
        let supported: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        Cause {
            reason: "FieldValueNotSupported",
            message: format!("Unsupported value: {value:?}: supported values: {}", supported.join(", ")),
            field: field.into(),
        }
    }
}

/// An API error, rendered as a `Status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    /// `details` of the Status, boxed so the error stays small on every `Result` path.
    pub details: Option<Box<Details>>,
}

/// `details` of a Status: name, group, kind, causes; and the `Warning`s the response carries (headers, not
/// part of the Status body).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Details {
    pub name: Option<String>,
    pub group: Option<String>,
    pub kind: Option<String>,
    pub causes: Vec<Cause>,
    pub warnings: Vec<String>,
    /// `retryAfterSeconds`: when the client may try again.
    pub retry_after_seconds: Option<u32>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { code, reason, message: message.into(), details: None }
    }

    fn with_details(mut self, group: &str, kind: &str, name: &str) -> ApiError {
        let details = self.details.get_or_insert_with(Box::default);
        details.group = Some(group.to_owned());
        details.kind = Some(kind.to_owned());
        details.name = (!name.is_empty()).then(|| name.to_owned());
        self
    }

    /// The error with the `Warning`s the request collected (kube sends them with errors too).
    pub fn with_warnings(mut self, warnings: Vec<String>) -> ApiError {
        if !warnings.is_empty() {
            self.details.get_or_insert_with(Box::default).warnings = warnings;
        }
        self
    }

    /// The field causes of a 422 (empty for other errors).
    pub fn causes(&self) -> &[Cause] {
        self.details.as_ref().map_or(&[], |d| &d.causes)
    }

    /// `configmaps "x" not found`
    pub fn not_found(group: &str, resource: &str, name: &str) -> ApiError {
        let qualified = qualified(group, resource);
        ApiError::new(404, "NotFound", format!("{qualified} \"{name}\" not found")).with_details(group, resource, name)
    }

    /// A path the server does not serve.
    pub fn no_route() -> ApiError {
        ApiError::new(404, "NotFound", "the server could not find the requested resource")
    }

    pub fn already_exists(group: &str, resource: &str, name: &str) -> ApiError {
        let qualified = qualified(group, resource);
        ApiError::new(409, "AlreadyExists", format!("{qualified} \"{name}\" already exists"))
            .with_details(group, resource, name)
    }

    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
        let qualified = qualified(group, resource);
        ApiError::new(409, "Conflict", format!("Operation cannot be fulfilled on {qualified} \"{name}\": {why}"))
            .with_details(group, resource, name)
    }

    pub fn stale(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::conflict(group, resource, name,
            "the object has been modified; please apply your changes to the latest version and try again")
    }

    /// 422 with every cause: `ConfigMap "x" is invalid: [a: ..., b: ...]`.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> ApiError {
        // kube names the kind with its group (`GroupKind.String()`): `Deployment.apps "web" is invalid`.
        let shown = if group.is_empty() { kind.to_owned() } else { format!("{kind}.{group}") };
        ApiError::invalid_as(&shown, group, kind, name, causes)
    }

    /// 422 for request options (`ListOptions.meta.k8s.io "" is invalid: ...`): kube names the kind with its group.
    pub fn invalid_options(kind: &str, causes: Vec<Cause>) -> ApiError {
        ApiError::invalid_as(&format!("{kind}.meta.k8s.io"), "meta.k8s.io", kind, "", causes)
    }

    /// A 422 whose message calls the kind `shown`.
    fn invalid_as(shown: &str, group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> ApiError {
        let rendered: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        let list = if rendered.len() == 1 { rendered[0].clone() } else { format!("[{}]", rendered.join(", ")) };
        let mut err = ApiError::new(422, "Invalid", format!("{shown} \"{name}\" is invalid: {list}")).with_details(group, kind, name);
        if let Some(details) = err.details.as_mut() {
            details.causes = causes;
        }
        err
    }

    /// 429 `TooManyRequests` with `Retry-After: <seconds>` (and `retryAfterSeconds`), as kube answers a request
    /// that is early rather than wrong.
    pub fn too_many_requests(message: impl Into<String>, seconds: u32) -> ApiError {
        let mut err = ApiError::new(429, "TooManyRequests", message);
        err.details = Some(Box::new(Details { retry_after_seconds: Some(seconds), ..Details::default() }));
        err
    }

    /// A watch from a resourceVersion the store has not reached (kube's `NewTooLargeResourceVersionError`).
    pub fn too_large_resource_version(requested: impl std::fmt::Display, current: impl std::fmt::Display) -> ApiError {
        let mut err = ApiError::new(504, "Timeout", format!("Timeout: Too large resource version: {requested}, current: {current}"));
        err.details = Some(Box::new(Details {
            causes: vec![Cause { reason: "ResourceVersionTooLarge", message: "Too large resource version".to_owned(), field: String::new() }],
            retry_after_seconds: Some(1),
            ..Details::default()
        }));
        err
    }

    /// kube's server-side apply conflict: 409 `Conflict` whose causes (`FieldManagerConflict`) name each field
    /// and its manager; no name or kind in the details.
    pub fn apply_conflict(message: String, causes: Vec<Cause>) -> ApiError {
        let mut err = ApiError::new(409, "Conflict", message);
        err.details = Some(Box::new(Details { causes, ..Details::default() }));
        err
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }

    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(403, "Forbidden", message)
    }

    /// `pods "p" is forbidden: <why>`, with details naming the object (kube's `NewForbidden`).
    pub fn forbidden_object(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
        let qualified = qualified(group, resource);
        let subject = if name.is_empty() { qualified } else { format!("{qualified} \"{name}\"") };
        ApiError::forbidden(format!("{subject} is forbidden: {why}")).with_details(group, resource, name)
    }

    pub fn unauthorized() -> ApiError {
        ApiError::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn method_not_supported(verb: &str, resource: &str) -> ApiError {
        ApiError::new(405, "MethodNotAllowed", format!("the server does not allow this method on the requested resource ({verb} {resource})"))
    }

    pub fn unsupported_media_type(content_type: &str) -> ApiError {
        ApiError::new(415, "UnsupportedMediaType", format!(
            "the body of the request was in an unknown format ({content_type}) - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"))
    }

    /// No `Accept` clause names a representation this endpoint writes (kube lists its serializers' media types).
    pub fn not_acceptable() -> ApiError {
        ApiError::new(406, "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf")
    }

    /// No `Accept` clause names a representation a watch can stream.
    pub fn not_acceptable_stream() -> ApiError {
        ApiError::new(406, "NotAcceptable",
            "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch")
    }

    pub fn too_large(limit: usize) -> ApiError {
        ApiError::new(413, "RequestEntityTooLarge", format!("Request entity too large: limit is {limit}"))
    }

    /// A request past `--request-timeout` (kube's timeout filter's answer); the work it started may still finish.
    pub fn request_timeout() -> ApiError {
        ApiError::new(504, "Timeout", "Timeout: request did not complete within the allotted timeout")
    }

    /// 503: a server this one depends on (an aggregated API's) cannot answer now.
    pub fn service_unavailable(message: impl Into<String>) -> ApiError {
        ApiError::new(503, "ServiceUnavailable", message)
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(500, "InternalError", format!("Internal error occurred: {}", message.into()))
    }

    /// The `Status` object (the same fields as `status_json` writes).
    pub fn to_status(&self) -> Value {
        serde_json::to_value(self.status_body()).unwrap_or_else(|_| json!({"kind": "Status", "apiVersion": "v1"}))
    }
}

fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() { resource.to_owned() } else { format!("{resource}.{group}") }
}

impl From<StorageError> for ApiError {
    fn from(err: StorageError) -> ApiError {
        match err {
            StorageError::InvalidKey { what, value, reason } => {
                ApiError::bad_request(format!("invalid {what} {value:?}: {reason}"))
            }
            StorageError::ValueTooLarge { limit, .. } => ApiError::too_large(limit),
            StorageError::Compacted { requested, compacted } => ApiError::new(410, "Expired",
                format!("too old resource version: {requested} ({compacted})")),
            StorageError::Expired { .. } => ApiError::new(410, "Expired",
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."),
            StorageError::InvalidContinue(why) => ApiError::bad_request(format!("continue key is not valid: {why}")),
            StorageError::FutureRevision { requested, current } => ApiError::new(504, "Timeout",
                format!("Too large resource version: {requested}, current: {current}")),
            StorageError::WatchOverflow { .. } => ApiError::new(410, "Expired", err.to_string()),
            // kube's answer to a resourceVersion it cannot serve from: the client lists again.
            StorageError::PositionMismatch(why) => ApiError::new(410, "Expired", format!("too old resource version: {why}")),
            StorageError::Unavailable(why) => ApiError::new(503, "ServiceUnavailable", format!("storage is unavailable: {why}")),
            StorageError::Backend(why) => ApiError::internal(why),
        }
    }
}

/// A `Status` as kube-apiserver's JSON encoder writes it: Go's field order (`kind, apiVersion, metadata, status,
/// message, reason, details{name, group, kind, causes, retryAfterSeconds}, code`), empty fields left out as Go's
/// `omitempty` leaves them. Clients compare error bodies as text (the Python client's own tests do).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusBody<'a> {
    kind: &'static str,
    api_version: &'static str,
    metadata: EmptyMeta,
    status: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    message: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<DetailsBody<'a>>,
    #[serde(skip_serializing_if = "is_zero")]
    code: u16,
}

#[derive(serde::Serialize)]
struct EmptyMeta {}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct DetailsBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    causes: Vec<CauseBody<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_after_seconds: Option<u32>,
}

#[derive(serde::Serialize)]
struct CauseBody<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    reason: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    message: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    field: &'a str,
}

fn is_zero(code: &u16) -> bool {
    *code == 0
}

impl ApiError {
    /// The `Status` as kube's JSON encoder writes it, with its trailing newline (see `StatusBody`).
    pub fn status_json(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(&self.status_body()).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// The `Status` fields in Go's order, empty ones left out.
    fn status_body(&self) -> StatusBody<'_> {
        let given = self.details.as_deref();
        let details = given.map(|d| DetailsBody {
            name: d.name.as_deref().filter(|s| !s.is_empty()),
            group: d.group.as_deref().filter(|s| !s.is_empty()),
            kind: d.kind.as_deref().filter(|s| !s.is_empty()),
            causes: d.causes.iter().map(|c| CauseBody { reason: c.reason, message: &c.message, field: &c.field }).collect(),
            retry_after_seconds: d.retry_after_seconds,
        }).filter(|d| d.name.is_some() || d.group.is_some() || d.kind.is_some() || !d.causes.is_empty() || d.retry_after_seconds.is_some());
        StatusBody { kind: "Status", api_version: "v1", metadata: EmptyMeta {}, status: "Failure", message: &self.message,
            reason: self.reason, details, code: self.code }
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
