//! How an error goes out over HTTP: its `Status` in the format the client accepts (protobuf for client-go, YAML,
//! else JSON), with the `Warning` and `Retry-After` headers its details carry.

use actix_web::http::header::{HeaderValue, RETRY_AFTER, WARNING};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

use super::{status_format, Format};
use crate::status::ApiError;

/// A `Warning` header value as kube writes it: code 299, no agent, the text quoted with `"` and `\` escaped and
/// control characters (a multi-line YAML error's newlines) turned into spaces, as kube's warning recorder does.
pub fn warning_header(text: &str) -> Option<HeaderValue> {
    let text: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    HeaderValue::from_str(&format!("299 - \"{escaped}\"")).ok()
}

/// The `Status` response of `err` in the format `accept` asks for, JSON when none fits.
pub fn error_response(err: &ApiError, accept: Option<&str>) -> HttpResponse {
    let mut response = HttpResponse::build(status_code(err));
    for value in err.details.iter().flat_map(|d| &d.warnings).filter_map(|text| warning_header(text)) {
        response.append_header((WARNING, value));
    }
    if let Some(seconds) = err.details.as_ref().and_then(|d| d.retry_after_seconds) {
        response.insert_header((RETRY_AFTER, seconds.to_string()));
    }
    match status_format(accept) {
        Format::Protobuf => match crate::protobuf::encode_object(&err.to_status()) {
            Ok(body) => return response.content_type(crate::protobuf::PROTOBUF_MEDIA_TYPE).body(body),
            Err(problem) => tracing::warn!(%problem, "a Status has no protobuf form; answering JSON"),
        },
        Format::Yaml => {
            if let Ok(text) = serde_saphyr::to_string(&err.to_status()) {
                return response.content_type("application/yaml").body(text);
            }
        }
        Format::Json => {}
    }
    response.content_type("application/json").body(err.status_json())
}

fn status_code(err: &ApiError) -> StatusCode {
    StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// An `ApiError` returned from any actix handler is its `Status` in JSON.
impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        status_code(self)
    }

    fn error_response(&self) -> HttpResponse {
        error_response(self, None)
    }
}

#[cfg(test)]
mod tests {
    use super::error_response;
    use crate::status::ApiError;

    #[test]
    fn an_early_request_is_told_when_to_come_back() {
        let response = error_response(&ApiError::too_many_requests("Creating the home workspace", 1), None);
        assert_eq!(response.status().as_u16(), 429);
        assert_eq!(response.headers().get("retry-after").and_then(|v| v.to_str().ok()), Some("1"));
        let status = ApiError::too_many_requests("Creating the home workspace", 1).to_status();
        assert_eq!(status["details"]["retryAfterSeconds"], 1);
    }
}
