//! Content negotiation: which representation a client accepts and which body formats it sent.

mod strict;

use serde::de::DeserializeSeed;

use crate::registry::fields::Problem;
use crate::status::{ApiError, ApiResult};
pub use strict::Strictness;

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
    decode_strict(format, body, Strictness::None).map(|decoded| decoded.value)
}

/// A body decoded strictly: its value (the last of duplicate keys wins) and the problems found, in the
/// order kube reports them.
#[derive(Debug)]
pub struct Decoded {
    pub value: serde_json::Value,
    pub problems: Vec<Problem>,
}

/// Decodes a JSON document strictly (see [`decode_strict`]); the caller words the error.
pub fn decode_json(body: &[u8], strictness: Strictness<'_>) -> Result<Decoded, serde_json::Error> {
    let mut notes = strict::Notes::default();
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = strict::Seed::<strict::JsonKeys>::new(&mut notes, strictness).deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(Decoded { value, problems: notes.problems })
}

/// Decodes a JSON or YAML body in one pass, noting duplicate keys (and, for JSON with a schema, undeclared
/// fields) as `strictness` asks. YAML duplicates are noted with their lines whatever the schema; protobuf
/// bodies have neither duplicates nor undeclared fields.
pub fn decode_strict(format: BodyFormat, body: &[u8], strictness: Strictness<'_>) -> ApiResult<Decoded> {
    match format {
        BodyFormat::Json => decode_json(body, strictness).map_err(|err| ApiError::bad_request(format!("the request body is not valid JSON: {err}"))),
        BodyFormat::Yaml => decode_yaml(body, strictness),
        BodyFormat::Protobuf => crate::protobuf::decode_request(body)
            .map(|value| Decoded { value, problems: Vec::new() })
            .map_err(|err| ApiError::bad_request(format!("the request body is not a valid protobuf object: {err}"))),
    }
}

/// YAML keys set twice are reported with their lines, whatever the schema: kube finds them while converting
/// YAML to JSON, before the kind's decoder sees the document.
fn decode_yaml(body: &[u8], strictness: Strictness<'_>) -> ApiResult<Decoded> {
    let text = std::str::from_utf8(body).map_err(|_| ApiError::bad_request("the request body is not UTF-8"))?;
    let strictness = match strictness {
        Strictness::None => Strictness::None,
        _ => Strictness::Duplicates,
    };
    let mut options = serde_saphyr::Options::default();
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::PassThrough;
    let mut notes = strict::Notes::default();
    let value = serde_saphyr::with_deserializer_from_str_with_options(text, options, |deserializer| {
        strict::Seed::<strict::YamlKeys>::new(&mut notes, strictness).deserialize(deserializer)
    })
    .map_err(|err| ApiError::bad_request(format!("the request body is not valid YAML: {err}")))?;
    Ok(Decoded { value, problems: notes.problems })
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
