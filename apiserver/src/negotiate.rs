//! Content negotiation: which representation a client accepts and which body formats it sent.

use crate::status::{ApiError, ApiResult};

/// A parsed media type with its parameters (`application/json;as=Table;v=v1;g=meta.k8s.io`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MediaType {
    pub essence: String,
    pub params: Vec<(String, String)>,
}

impl MediaType {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Parses an Accept header into media types in preference order (q=0 entries dropped; stable on ties).
pub fn parse_accept(header: &str) -> Vec<MediaType> {
    let mut types: Vec<(f32, usize, MediaType)> = header
        .split(',')
        .enumerate()
        .filter_map(|(index, item)| {
            let mut parts = item.split(';').map(str::trim);
            let essence = parts.next()?.to_ascii_lowercase();
            if essence.is_empty() {
                return None;
            }
            let mut q = 1.0;
            let mut params = Vec::new();
            for part in parts {
                let Some((k, v)) = part.split_once('=') else { continue };
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().trim_matches('"').to_owned());
                if k == "q" {
                    q = v.parse().unwrap_or(1.0);
                } else {
                    params.push((k, v));
                }
            }
            (q > 0.0).then_some((q, index, MediaType { essence, params }))
        })
        .collect();
    types.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap_or(std::cmp::Ordering::Equal).then(a.1.cmp(&b.1)));
    types.into_iter().map(|(_, _, t)| t).collect()
}

/// How a response object is rendered.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Output {
    Json,
    Yaml,
    /// `meta.k8s.io/v1 Table`.
    Table,
}

/// Picks the representation for an object response. `as=Table` is honoured where tables make sense; other
/// `as=` forms and protobuf are skipped so a JSON fallback later in the header is chosen; 406 if nothing fits.
pub fn choose(accept: Option<&str>, tables: bool) -> ApiResult<Output> {
    let Some(header) = accept.filter(|h| !h.trim().is_empty()) else { return Ok(Output::Json) };
    for media in parse_accept(header) {
        let json_like = matches!(media.essence.as_str(), "application/json" | "*/*" | "application/*");
        match (media.param("as"), media.essence.as_str()) {
            (Some("Table"), "application/json") if tables && media.param("g") == Some("meta.k8s.io")
                && matches!(media.param("v"), Some("v1" | "v1beta1")) => return Ok(Output::Table),
            (Some(_), _) => continue,
            (None, _) if json_like => return Ok(Output::Json),
            (None, "application/yaml") => return Ok(Output::Yaml),
            _ => continue,
        }
    }
    Err(ApiError::not_acceptable())
}

/// The body format of a create or update.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BodyFormat {
    Json,
    Yaml,
    /// `application/vnd.kubernetes.protobuf` (client-go typed clients send built-in types this way).
    Protobuf,
}

/// The patch kinds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PatchKind {
    Json,
    Merge,
    Strategic,
    Apply,
}

fn essence(content_type: Option<&str>) -> String {
    content_type.unwrap_or("application/json").split(';').next().unwrap_or_default().trim().to_ascii_lowercase()
}

pub fn body_format(content_type: Option<&str>) -> ApiResult<BodyFormat> {
    match essence(content_type).as_str() {
        "application/json" | "" => Ok(BodyFormat::Json),
        "application/yaml" | "application/x-yaml" | "text/yaml" => Ok(BodyFormat::Yaml),
        "application/vnd.kubernetes.protobuf" => Ok(BodyFormat::Protobuf),
        other => Err(ApiError::unsupported_media_type(other)),
    }
}

pub fn patch_kind(content_type: Option<&str>) -> ApiResult<PatchKind> {
    match essence(content_type).as_str() {
        "application/json-patch+json" => Ok(PatchKind::Json),
        "application/merge-patch+json" => Ok(PatchKind::Merge),
        "application/strategic-merge-patch+json" => Ok(PatchKind::Strategic),
        "application/apply-patch+yaml" => Ok(PatchKind::Apply),
        other => Err(ApiError::unsupported_media_type(other)),
    }
}

/// Decodes a JSON or YAML body into a JSON value (400 when malformed).
pub fn decode_body(format: BodyFormat, body: &[u8]) -> ApiResult<serde_json::Value> {
    let value = match format {
        BodyFormat::Json => serde_json::from_slice(body)
            .map_err(|err| ApiError::bad_request(format!("the request body is not valid JSON: {err}")))?,
        BodyFormat::Yaml => {
            let text = std::str::from_utf8(body).map_err(|_| ApiError::bad_request("the request body is not UTF-8"))?;
            serde_saphyr::from_str(text)
                .map_err(|err| ApiError::bad_request(format!("the request body is not valid YAML: {err}")))?
        }
        BodyFormat::Protobuf => crate::protobuf::decode_request(body)
            .map_err(|err| ApiError::bad_request(format!("the request body is not a valid protobuf object: {err}")))?,
    };
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_get_prefers_tables_and_falls_back_to_json() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(choose(Some(kubectl), true), Ok(Output::Table));
        assert_eq!(choose(Some(kubectl), false), Ok(Output::Json));
        assert_eq!(choose(Some("application/vnd.kubernetes.protobuf, application/json"), true), Ok(Output::Json));
        assert_eq!(choose(Some("application/yaml"), true), Ok(Output::Yaml));
        assert_eq!(choose(None, true), Ok(Output::Json));
        assert_eq!(choose(Some("application/json;q=0.1,application/yaml"), true), Ok(Output::Yaml));
        assert_eq!(choose(Some("text/html"), true).map_err(|e| e.code), Err(406));
    }

    #[test]
    fn body_types() {
        assert_eq!(body_format(Some("application/json; charset=utf-8")), Ok(BodyFormat::Json));
        assert_eq!(body_format(Some("application/yaml")), Ok(BodyFormat::Yaml));
        assert_eq!(body_format(Some("text/plain")).map_err(|e| e.code), Err(415));
        assert_eq!(patch_kind(Some("application/strategic-merge-patch+json")), Ok(PatchKind::Strategic));
        assert!(decode_body(BodyFormat::Json, b"{bad").is_err());
        assert_eq!(decode_body(BodyFormat::Yaml, b"a: 1\n").ok(), Some(serde_json::json!({"a": 1})));
    }
}
