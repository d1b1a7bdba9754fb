//! Content negotiation: which representation a client accepts and which body formats it sent.

pub mod respond;

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

/// Parses an Accept header into media types in preference order: by q-value, then specific before wildcard types
/// (as goautoneg sorts), then as written; q=0 entries are dropped.
pub fn parse_accept(header: &str) -> Vec<MediaType> {
    let mut types: Vec<(f32, bool, bool, usize, MediaType)> = header
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
            let (kind, subtype) = essence.split_once('/').unwrap_or((essence.as_str(), ""));
            let (any_kind, any_subtype) = (kind == "*", subtype == "*");
            (q > 0.0).then_some((q, any_kind, any_subtype, index, MediaType { essence, params }))
        })
        .collect();
    types.sort_by(|a, b| {
        b.0.partial_cmp(&a.0).unwrap_or(std::cmp::Ordering::Equal).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)).then(a.3.cmp(&b.3))
    });
    types.into_iter().map(|(_, _, _, _, t)| t).collect()
}

/// The serialization of a response body.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
    /// `application/vnd.kubernetes.protobuf`: built-in kinds only (and the `meta.k8s.io` metadata kinds).
    Protobuf,
}

impl Format {
    /// Every format, in kube's order of preference for a wildcard (`*/*` is JSON).
    const ALL: [Format; 3] = [Format::Json, Format::Yaml, Format::Protobuf];

    fn media_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Yaml => "application/yaml",
            Format::Protobuf => crate::protobuf::PROTOBUF_MEDIA_TYPE,
        }
    }

    /// True when `clause` (`type/subtype`, either may be `*`) covers this format.
    fn matches(self, clause: &str) -> bool {
        let (kind, subtype) = clause.split_once('/').unwrap_or((clause, ""));
        let (own_kind, own_subtype) = self.media_type().split_once('/').unwrap_or_default();
        (kind == "*" && subtype == "*") || (kind == own_kind && (subtype == "*" || subtype == own_subtype))
    }
}

/// The `meta.k8s.io` version a conversion (`as=Table`, `as=PartialObjectMetadata`) was asked in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MetaVersion {
    V1,
    V1beta1,
}

impl MetaVersion {
    /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`.
    pub fn api_version(self) -> &'static str {
        match self {
            MetaVersion::V1 => "meta.k8s.io/v1",
            MetaVersion::V1beta1 => "meta.k8s.io/v1beta1",
        }
    }

    /// `object` as a `PartialObjectMetadata` of this version: kind, apiVersion and its `metadata` (`{}` when it
    /// has none). Built by moving the parts in: `json!` would serialize the metadata's clone into one more copy.
    pub fn partial_object(self, object: &serde_json::Value) -> serde_json::Value {
        let metadata = object.get("metadata").filter(|m| m.is_object()).cloned();
        self.envelope("PartialObjectMetadata", "metadata", metadata.unwrap_or_else(|| serde_json::json!({})))
    }

    /// A `meta.k8s.io` object of this version: `kind`, `apiVersion` and one `field` holding `value`.
    pub fn envelope(self, kind: &str, field: &str, value: serde_json::Value) -> serde_json::Value {
        use serde_json::{Map, Value};
        let mut envelope = Map::new();
        envelope.insert("kind".to_owned(), Value::from(kind));
        envelope.insert("apiVersion".to_owned(), Value::from(self.api_version()));
        envelope.insert(field.to_owned(), value);
        Value::Object(envelope)
    }
}

/// What a response carries: the object(s) as stored, or the conversion asked for with `as=`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Object,
    /// `as=Table` (JSON or YAML only).
    Table,
    /// `as=PartialObjectMetadata`: one object's metadata (each event's, in a watch).
    Metadata(MetaVersion),
    /// `as=PartialObjectMetadataList`: a list's metadata and each item's.
    MetadataList(MetaVersion),
}

/// How a response is rendered: its serialization and what it carries.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Output {
    pub format: Format,
    pub target: Target,
}

impl Output {
    pub const JSON: Output = Output { format: Format::Json, target: Target::Object };
}

/// What an endpoint can answer, which decides which `Accept` clauses it may skip.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The resource's kind has a protobuf form (built-in kinds, not custom resources).
    pub protobuf: bool,
    /// The endpoint converts to Tables (not deletecollection, nor a watch-list).
    pub tables: bool,
}

impl Endpoint {
    /// An error `Status`: any format, no conversion.
    pub const STATUS: Endpoint = Endpoint { protobuf: true, tables: false };
}

/// Picks the representation of a response the way kube-apiserver does: the first `Accept` clause (in preference
/// order) that names a format this server writes, with parameters the endpoint allows, wins; a clause asking for
/// protobuf of a kind without one, or a conversion the endpoint cannot make, is skipped. 406 if none is left.
pub fn choose(accept: Option<&str>, endpoint: Endpoint) -> ApiResult<Output> {
    let Some(header) = accept.filter(|h| !h.trim().is_empty()) else { return Ok(Output::JSON) };
    for media in parse_accept(header) {
        for format in Format::ALL.into_iter().filter(|format| format.matches(&media.essence)) {
            if let Some(output) = accept_clause(&media, format, endpoint) {
                return Ok(output);
            }
        }
    }
    Err(ApiError::not_acceptable())
}

/// The output `media` asks for in `format`, or `None` when its parameters rule the format out here.
fn accept_clause(media: &MediaType, format: Format, endpoint: Endpoint) -> Option<Output> {
    if let Some(stream) = media.param("stream").filter(|s| !s.is_empty()) {
        if stream != "watch" || format == Format::Yaml {
            return None;
        }
    }
    if media.param("sv").is_some_and(|version| !version.is_empty() && version != "v1") {
        return None;
    }
    let converted = media.param("as").is_some() || media.param("g").is_some() || media.param("v").is_some();
    if !converted {
        return (format != Format::Protobuf || endpoint.protobuf).then_some(Output { format, target: Target::Object });
    }
    let version = match (media.param("g"), media.param("v")) {
        (Some("meta.k8s.io"), Some("v1")) => MetaVersion::V1,
        (Some("meta.k8s.io"), Some("v1beta1")) => MetaVersion::V1beta1,
        _ => return None,
    };
    let target = match media.param("as") {
        Some("Table") if endpoint.tables && format != Format::Protobuf => Target::Table,
        Some("PartialObjectMetadata") => Target::Metadata(version),
        Some("PartialObjectMetadataList") => Target::MetadataList(version),
        _ => return None,
    };
    Some(Output { format, target })
}

/// The format of an error `Status`: as negotiated without conversions, JSON when nothing fits.
pub fn status_format(accept: Option<&str>) -> Format {
    choose(accept, Endpoint::STATUS).map_or(Format::Json, |output| output.format)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What `accept` negotiates to at `endpoint`: `Ok((format, target))` or the error code.
    type Expected = Result<(Format, Target), u16>;

    fn check(accept: Option<&str>, endpoint: Endpoint, expected: Expected) {
        let got = choose(accept, endpoint).map(|o| (o.format, o.target)).map_err(|e| e.code);
        assert_eq!(got, expected, "{accept:?} at {endpoint:?}");
    }

    #[test]
    fn negotiation_rows() {
        use Format::{Json, Protobuf, Yaml};
        use MetaVersion::{V1, V1beta1};
        use Target::{Metadata, MetadataList, Object, Table};
        let built_in = Endpoint { protobuf: true, tables: true };
        let custom = Endpoint { protobuf: false, tables: true };
        let no_tables = Endpoint { protobuf: true, tables: false };
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        let client_go = "application/vnd.kubernetes.protobuf, application/json";
        let metadata_list = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        let rows: &[(Option<&str>, Endpoint, Expected)] = &[
            (None, built_in, Ok((Json, Object))),
            (Some(""), built_in, Ok((Json, Object))),
            (Some(kubectl), built_in, Ok((Json, Table))),
            (Some(kubectl), no_tables, Ok((Json, Object))),
            (Some("application/json;as=Table;v=v1beta1;g=meta.k8s.io"), built_in, Ok((Json, Table))),
            (Some("application/yaml;as=Table;v=v1;g=meta.k8s.io"), built_in, Ok((Yaml, Table))),
            (Some("application/json;as=Table;v=v2;g=meta.k8s.io"), built_in, Err(406)),
            (Some("application/json;as=Table;v=v1;g=example.com"), built_in, Err(406)),
            (Some("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json"), built_in, Ok((Json, Object))),
            // Protobuf first: built-in kinds answer in it, custom resources fall back, and 406 when nothing is left.
            (Some(client_go), built_in, Ok((Protobuf, Object))),
            (Some(client_go), custom, Ok((Json, Object))),
            (Some("application/vnd.kubernetes.protobuf"), custom, Err(406)),
            (Some("application/vnd.kubernetes.protobuf;stream=watch"), built_in, Ok((Protobuf, Object))),
            // Metadata-only clients, in both versions, JSON and protobuf, for built-in and custom resources.
            (Some(metadata_list), built_in, Ok((Protobuf, MetadataList(V1)))),
            (Some(metadata_list), custom, Ok((Protobuf, MetadataList(V1)))),
            (Some("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"), custom, Ok((Json, Metadata(V1)))),
            (Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1"), built_in, Ok((Json, MetadataList(V1beta1)))),
            (Some("application/json;as=PartialObjectMetadata;v=v1"), built_in, Err(406)),
            (Some("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1;q=0.5,application/yaml"), built_in, Ok((Yaml, Object))),
            // q-values, wildcards and parameters.
            (Some("application/json;q=0.1,application/yaml"), built_in, Ok((Yaml, Object))),
            (Some("application/json;q=0,application/vnd.kubernetes.protobuf;q=0.2"), built_in, Ok((Protobuf, Object))),
            (Some("*/*"), built_in, Ok((Json, Object))),
            (Some("*/*, application/vnd.kubernetes.protobuf"), built_in, Ok((Protobuf, Object))),
            (Some("application/*"), custom, Ok((Json, Object))),
            (Some("application/yaml;stream=watch, application/json"), built_in, Ok((Json, Object))),
            (Some("application/json;stream=other"), built_in, Err(406)),
            (Some("application/json;pretty=1;charset=utf-8"), built_in, Ok((Json, Object))),
            (Some("text/html"), built_in, Err(406)),
        ];
        for (accept, endpoint, expected) in rows {
            check(*accept, *endpoint, *expected);
        }
    }

    #[test]
    fn errors_use_the_first_plain_format_and_fall_back_to_json() {
        assert_eq!(status_format(Some("application/vnd.kubernetes.protobuf, application/json")), Format::Protobuf);
        assert_eq!(status_format(Some("application/json;as=Table;v=v1;g=meta.k8s.io,application/yaml")), Format::Yaml);
        assert_eq!(status_format(Some("text/html")), Format::Json);
        assert_eq!(status_format(None), Format::Json);
    }

    #[test]
    fn body_types() {
        assert_eq!(body_format(Some("application/json; charset=utf-8")), Ok(BodyFormat::Json));
        assert_eq!(body_format(Some("application/yaml")), Ok(BodyFormat::Yaml));
        assert_eq!(body_format(Some("text/plain")).map_err(|e| e.code), Err(415));
        assert_eq!(patch_kind(Some("application/strategic-merge-patch+json")), Ok(PatchKind::Strategic));
    }
}
