//! `application/vnd.kubernetes.protobuf` at the edge: request bodies of built-in kinds decoded into the JSON kube
//! would send, and responses (objects, lists, `Status`, watch frames) encoded from JSON (`encode.rs`).
//!
//! client-go typed clients (kubectl ≥ 1.32 `create`, `create token`, `auth can-i`, …) send protobuf and ask for it
//! in `Accept`; the rest of the server speaks JSON only, so a body becomes a `serde_json::Value` here, once, and a
//! response becomes protobuf here, once.
//!
//! The envelope is the 4-byte magic `k8s\0` followed by a `runtime.Unknown` whose `typeMeta` names the kind and
//! whose `raw` holds the k8s-pb message. The message becomes JSON through [`to_json::ToJson`]: hand-written for
//! the apimachinery special types (`Time`, `Quantity`, `IntOrString`, …) and generated per message in
//! [`generated`] (see `codegen.rs` for how to regenerate it); responses go the other way through
//! [`from_json::FromJson`], generated alongside.

mod encode;
mod from_json;
#[rustfmt::skip]
mod generated;
mod json_schema;
pub mod openapi_v2;
mod to_json;

#[cfg(test)]
mod codegen;
#[cfg(test)]
mod keep_zero;
#[cfg(test)]
mod round_trip;
#[cfg(test)]
mod tests;

pub use encode::{encode_object, has_protobuf_form, watch_frame, EncodeError, Finished, ItemEncoder, ListEncoder, ENVELOPE_TAIL};
#[cfg(test)]
pub use encode::read_watch_frames;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use serde_json::Value;

/// The four bytes every Kubernetes protobuf body starts with.
const MAGIC: &[u8; 4] = b"k8s\0";

/// The media type client-go uses for protobuf bodies.
pub const PROTOBUF_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a protobuf watch stream.
pub const PROTOBUF_WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// Why a protobuf request body could not be turned into JSON; each becomes a 400 Bad Request.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ProtobufError {
    /// The body does not start with `k8s\0`.
    #[error("protobuf body does not start with the Kubernetes magic prefix \"k8s\\x00\"")]
    MissingMagic,
    /// The `runtime.Unknown` envelope is not valid protobuf.
    #[error("protobuf envelope (runtime.Unknown) is malformed: {0}")]
    Envelope(String),
    /// The envelope has no `typeMeta.apiVersion` or `typeMeta.kind`.
    #[error("protobuf envelope does not name the object's apiVersion and kind")]
    MissingTypeMeta,
    /// The envelope uses a content encoding (e.g. gzip) this server does not implement.
    #[error("protobuf envelope content encoding {0:?} is not supported")]
    UnsupportedContentEncoding(String),
    /// The envelope names a kind that has no protobuf decoder here.
    #[error(
        "protobuf bodies of apiVersion {api_version:?} kind {kind:?} are not supported; send JSON instead"
    )]
    UnsupportedKind {
        /// The `typeMeta.apiVersion` of the envelope.
        api_version: String,
        /// The `typeMeta.kind` of the envelope.
        kind: String,
    },
    /// The embedded message is not a valid encoding of the named kind.
    #[error("protobuf body is not a valid {kind}: {reason}")]
    Message {
        /// The kind the message claimed to be.
        kind: String,
        /// What prost reported.
        reason: String,
    },
    /// An embedded JSON document (RawExtension, FieldsV1) is not valid JSON.
    #[error("protobuf body embeds invalid JSON: {0}")]
    EmbeddedJson(String),
}

/// True when a request's `Content-Type` is Kubernetes protobuf, with or without parameters.
pub fn is_protobuf(content_type: &str) -> bool {
    let media_type = content_type.split(';').next().unwrap_or_default().trim();
    media_type.eq_ignore_ascii_case(PROTOBUF_MEDIA_TYPE)
}

/// True when `body` starts with the Kubernetes protobuf magic.
pub fn is_protobuf_body(body: &[u8]) -> bool {
    body.starts_with(MAGIC)
}

/// Decodes a protobuf request body into the JSON object kube would have sent, `apiVersion` and `kind` included.
pub fn decode_request(body: &[u8]) -> Result<Value, ProtobufError> {
    let unknown = decode_envelope(body)?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    let api_version = type_meta.api_version.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    if api_version.is_empty() || kind.is_empty() {
        return Err(ProtobufError::MissingTypeMeta);
    }
    let encoding = unknown.content_encoding.unwrap_or_default();
    if !encoding.is_empty() {
        return Err(ProtobufError::UnsupportedContentEncoding(encoding));
    }
    let raw = unknown.raw.unwrap_or_default();
    let mut object = decode_kind(&api_version, &kind, &raw)?;
    if let Value::Object(map) = &mut object {
        map.insert("apiVersion".to_owned(), Value::String(api_version));
        map.insert("kind".to_owned(), Value::String(kind));
    }
    Ok(object)
}

/// Strips the magic and decodes the `runtime.Unknown` envelope.
fn decode_envelope(body: &[u8]) -> Result<Unknown, ProtobufError> {
    let message = body
        .strip_prefix(MAGIC.as_slice())
        .ok_or(ProtobufError::MissingMagic)?;
    Unknown::decode(message).map_err(|error| ProtobufError::Envelope(error.to_string()))
}

/// Finds the k8s-pb type for (apiVersion, kind) and converts `raw` to JSON.
fn decode_kind(api_version: &str, kind: &str, raw: &[u8]) -> Result<Value, ProtobufError> {
    // DeleteOptions is registered in every group version, so clients may name any of them.
    let lookup_version = if kind == "DeleteOptions" {
        "meta.k8s.io/v1"
    } else {
        api_version
    };
    let decoder = generated::decoder_for(lookup_version, kind).ok_or_else(|| {
        ProtobufError::UnsupportedKind {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
        }
    })?;
    let object = decoder(raw).map_err(|error| match error {
        to_json::DecodeFailure::Prost(error) => ProtobufError::Message {
            kind: kind.to_owned(),
            reason: error.to_string(),
        },
        to_json::DecodeFailure::OutOfRange(reason) => ProtobufError::Message {
            kind: kind.to_owned(),
            reason,
        },
        to_json::DecodeFailure::EmbeddedJson(reason) => ProtobufError::EmbeddedJson(reason),
    })?;
    Ok(object)
}
