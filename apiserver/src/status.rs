//! The one place errors become `metav1.Status` responses, with kube-apiserver's codes, reasons and messages.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
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

impl Cause {
    pub fn invalid(field: impl Into<String>, value: &str, why: &str) -> Cause {
        Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {value:?}: {why}"), field: field.into() }
    }

    pub fn required(field: impl Into<String>) -> Cause {
        Cause { reason: "FieldValueRequired", message: "Required value".to_owned(), field: field.into() }
    }

    /// kube's `field.NotSupported`: the value is not one of `supported`.
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

/// `details` of a Status: name, group, kind, causes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Details {
    pub name: Option<String>,
    pub group: Option<String>,
    pub kind: Option<String>,
    pub causes: Vec<Cause>,
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
        let rendered: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        let list = if rendered.len() == 1 { rendered[0].clone() } else { format!("[{}]", rendered.join(", ")) };
        let mut err = ApiError::new(422, "Invalid", format!("{kind} \"{name}\" is invalid: {list}")).with_details(group, kind, name);
        if let Some(details) = err.details.as_mut() {
            details.causes = causes;
        }
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

    pub fn not_acceptable() -> ApiError {
        ApiError::new(406, "NotAcceptable", "only the following media types are accepted: application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io")
    }

    pub fn too_large(limit: usize) -> ApiError {
        ApiError::new(413, "RequestEntityTooLarge", format!("Request entity too large: limit is {limit}"))
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(500, "InternalError", format!("Internal error occurred: {}", message.into()))
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        let mut details = serde_json::Map::new();
        let given = self.details.as_deref().cloned().unwrap_or_default();
        if let Some(name) = &given.name {
            details.insert("name".into(), json!(name));
        }
        if let Some(group) = &given.group {
            details.insert("group".into(), json!(group));
        }
        if let Some(kind) = &given.kind {
            details.insert("kind".into(), json!(kind));
        }
        if !given.causes.is_empty() {
            let causes: Vec<Value> = given.causes.iter()
                .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        status
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
            StorageError::Unavailable(why) => ApiError::new(503, "ServiceUnavailable", format!("storage is unavailable: {why}")),
            StorageError::Backend(why) => ApiError::internal(why),
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status_code())
            .content_type("application/json")
            .body(self.to_status().to_string())
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
