//! Encodes response objects as `application/vnd.kubernetes.protobuf`, and watch events as its `;stream=watch`
//! frames, the way apimachinery's protobuf serializer does.
//!
//! An object is the magic `k8s\0` followed by a `runtime.Unknown` whose `typeMeta` names the kind and whose `raw`
//! holds the k8s-pb message built from the object's JSON by [`super::from_json::FromJson`]. A watch stream is a
//! sequence of frames, each a 4-byte big-endian length and a `metav1.WatchEvent` written *without* magic or
//! envelope (apimachinery's raw serializer), whose `object.raw` is the enveloped object.

use bytes::{BufMut, Bytes, BytesMut};
use k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent;
use k8s_pb::apimachinery::pkg::runtime::{RawExtension, TypeMeta};
use prost::Message;
use serde_json::Value;

use super::from_json::EncodeFailure;
use super::generated::Encoder;
use super::{generated, MAGIC};

/// Why an object could not be encoded as protobuf.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The object's kind has no protobuf message (custom resources, Tables, kspaces' own kinds).
    #[error("objects of apiVersion {api_version:?} kind {kind:?} have no protobuf encoding")]
    NoProtobufForm {
        /// The object's `apiVersion`.
        api_version: String,
        /// The object's `kind`.
        kind: String,
    },
    /// A field does not have the type the kind's message requires.
    #[error("unable to encode {kind} as protobuf: {failure}")]
    Field {
        /// The object's `kind`.
        kind: String,
        /// Where and why.
        failure: String,
    },
}

/// True when objects of (apiVersion, kind) can be answered in protobuf.
pub fn has_protobuf_form(api_version: &str, kind: &str) -> bool {
    generated::encoder_for(api_version, kind).is_some()
}

/// The keys of `runtime.Unknown`'s fields, all length-delimited (field number << 3 | wire type 2).
const TYPE_META_KEY: u8 = 0x0a;
const RAW_KEY: u8 = 0x12;
const CONTENT_ENCODING_KEY: u8 = 0x1a;
const CONTENT_TYPE_KEY: u8 = 0x22;

/// Encodes `object` (which names its `apiVersion` and `kind`) as a protobuf body: the magic, then the
/// `runtime.Unknown` envelope written field by field, so the message is encoded once, straight into the body.
pub fn encode_object(object: &Value) -> Result<Vec<u8>, EncodeError> {
    let text = |name: &str| object.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let encoder = generated::encoder_for(&api_version, &kind)
        .ok_or_else(|| EncodeError::NoProtobufForm { api_version: api_version.clone(), kind: kind.clone() })?;
    let mut body = Vec::with_capacity(1024);
    body.extend_from_slice(MAGIC);
    body.push(TYPE_META_KEY);
    let type_meta = TypeMeta { api_version: Some(api_version), kind: Some(kind) };
    // A Vec grows as needed, so encoding into it cannot fail.
    let _ = type_meta.encode_length_delimited(&mut body);
    body.push(RAW_KEY);
    encoder(object, &mut body).map_err(|failure: EncodeFailure| EncodeError::Field {
        kind: type_meta.kind.clone().unwrap_or_default(),
        failure: failure.to_string(),
    })?;
    body.extend_from_slice(ENVELOPE_TAIL);
    Ok(body)
}

/// A list's protobuf body built an item at a time, so that a list need not hold every object parsed at once: the
/// bytes are those `encode_object` writes for the whole list (its message has the metadata in field 1 and the
/// items in field 2, as every Kubernetes list's does).
///
/// The body starts with the length of everything after it, so a list's items must all be encoded before its
/// first byte is sent. Past `keeping`'s bytes the encoder keeps only their length ([`Finished::Measured`]): the
/// caller then encodes the same items again as it sends them.
pub struct ListEncoder {
    list_api_version: String,
    list_kind: String,
    list: Encoder,
    item: ItemEncoder,
    /// The items encoded so far, each as field 2: full chunks, and the one being filled. Chunks, not one buffer,
    /// so a list of 12 MB is never copied whole to grow, nor held twice for its envelope.
    chunks: Vec<Bytes>,
    items: Vec<u8>,
    /// The bytes in `chunks`, or once `measuring`, of every item encoded.
    chunked: usize,
    /// How many bytes of items are kept before the encoder only measures.
    keep: usize,
    /// Whether the items are only counted (`chunks` and `items` are then empty).
    measuring: bool,
}

/// The key of a list message's `items` (field 2, length-delimited).
const ITEMS_KEY: u8 = 0x12;

/// What follows an envelope's `raw` (an object's, or a list's items): Go writes its empty content encoding and
/// content type.
pub const ENVELOPE_TAIL: &[u8] = &[CONTENT_ENCODING_KEY, 0, CONTENT_TYPE_KEY, 0];

/// The size of an encoded list's chunks.
const LIST_CHUNK: usize = 256 * 1024;

/// An encoded list: its parts in order, and their total length (the answer's `Content-Length`).
pub struct EncodedList {
    pub parts: Vec<Bytes>,
    pub len: usize,
}

impl EncodedList {
    /// The parts as one buffer (tests compare it with a whole list's encoding).
    pub fn concat(&self) -> Vec<u8> {
        self.parts.concat()
    }
}

/// A list's body as far as [`ListEncoder::finish`] has it.
pub enum Finished {
    /// Every byte.
    Whole(EncodedList),
    /// The items were more than the encoder keeps: the body up to its items (magic, envelope, the list's
    /// metadata), and the whole body's length. The whole body is `head`, the items each written by
    /// [`ItemEncoder::write`] in the same order, then [`ENVELOPE_TAIL`]; `len` bytes in all.
    Measured { head: Vec<u8>, len: usize },
}

/// Writes a list's items, each as the list message's field 2.
#[derive(Clone)]
pub struct ItemEncoder {
    item: Encoder,
    list_kind: String,
}

impl ItemEncoder {
    /// Appends `item` (in the request's form) to `out`.
    pub fn write(&self, item: &Value, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        out.push(ITEMS_KEY);
        (self.item)(item, out).map_err(|failure| EncodeError::Field { kind: self.list_kind.clone(), failure: failure.to_string() })
    }
}

impl ListEncoder {
    /// An encoder for a list of `kind` objects in `api_version` (whose list kind is `list_kind`), which keeps
    /// every item.
    pub fn new(api_version: &str, kind: &str, list_kind: &str) -> Result<ListEncoder, EncodeError> {
        let missing = |kind: &str| EncodeError::NoProtobufForm { api_version: api_version.to_owned(), kind: kind.to_owned() };
        let list = generated::encoder_for(api_version, list_kind).ok_or_else(|| missing(list_kind))?;
        let item = ItemEncoder { item: generated::encoder_for(api_version, kind).ok_or_else(|| missing(kind))?, list_kind: list_kind.to_owned() };
        Ok(ListEncoder {
            list_api_version: api_version.to_owned(), list_kind: list_kind.to_owned(), list, item,
            chunks: Vec::new(), items: Vec::new(), chunked: 0, keep: usize::MAX, measuring: false,
        })
    }

    /// The encoder, keeping about `bytes` of items at most (a chunk more): past them, it only measures.
    pub fn keeping(self, bytes: usize) -> ListEncoder {
        ListEncoder { keep: bytes, ..self }
    }

    /// What writes this list's items one by one.
    pub fn items(&self) -> ItemEncoder {
        self.item.clone()
    }

    /// Adds one item (in the request's form).
    pub fn push(&mut self, item: &Value) -> Result<(), EncodeError> {
        self.item.write(item, &mut self.items)?;
        if self.measuring {
            self.chunked += self.items.len();
            self.items.clear();
        } else if self.items.len() >= LIST_CHUNK {
            let full = std::mem::replace(&mut self.items, Vec::with_capacity(LIST_CHUNK + LIST_CHUNK / 4));
            self.chunked += full.len();
            self.chunks.push(Bytes::from(full));
            if self.chunked > self.keep {
                self.measuring = true;
                self.chunks = Vec::new();
                self.items = Vec::new();
            }
        }
        Ok(())
    }

    /// The body: the list's `metadata` (a `ListMeta` as JSON) and the items pushed (or their length).
    pub fn finish(mut self, metadata: Value) -> Result<Finished, EncodeError> {
        let head = serde_json::json!({"apiVersion": self.list_api_version, "kind": self.list_kind, "metadata": metadata});
        let mut delimited = Vec::with_capacity(64);
        (self.list)(&head, &mut delimited).map_err(|failure| EncodeError::Field { kind: self.list_kind.clone(), failure: failure.to_string() })?;
        // The list without items, length-delimited: its own bytes follow the length.
        let content_len = prost::decode_length_delimiter(delimited.as_slice()).unwrap_or(0);
        let own = &delimited[prost::length_delimiter_len(content_len)..];
        let items_len = self.chunked + self.items.len();
        let mut envelope = Vec::with_capacity(own.len() + 64);
        envelope.extend_from_slice(MAGIC);
        envelope.push(TYPE_META_KEY);
        let type_meta = TypeMeta { api_version: Some(self.list_api_version), kind: Some(self.list_kind) };
        let _ = type_meta.encode_length_delimited(&mut envelope);
        envelope.push(RAW_KEY);
        let _ = prost::encode_length_delimiter(own.len() + items_len, &mut envelope);
        envelope.extend_from_slice(own);
        let len = envelope.len() + items_len + ENVELOPE_TAIL.len();
        if self.measuring {
            return Ok(Finished::Measured { head: envelope, len });
        }
        self.items.extend_from_slice(ENVELOPE_TAIL);
        let mut parts = Vec::with_capacity(self.chunks.len() + 2);
        parts.push(Bytes::from(envelope));
        parts.append(&mut self.chunks);
        parts.push(Bytes::from(self.items));
        Ok(Finished::Whole(EncodedList { parts, len }))
    }
}

/// One frame of a protobuf watch stream: the length, then `WatchEvent{type, object: {raw: embedded}}`.
pub fn watch_frame(event_type: &str, embedded: Vec<u8>) -> Bytes {
    let event = WatchEvent { r#type: Some(event_type.to_owned()), object: Some(RawExtension { raw: Some(embedded) }) };
    let length = event.encoded_len();
    let mut frame = BytesMut::with_capacity(4 + length);
    // A frame is at most a few MiB (the object size limit), far below u32::MAX.
    frame.put_u32(u32::try_from(length).unwrap_or(u32::MAX));
    // BytesMut grows as needed, so encoding into it cannot fail.
    let _ = event.encode(&mut frame);
    frame.freeze()
}

/// Splits a protobuf watch stream into its events' (type, embedded object bytes); `None` when a frame is cut
/// short or is not a `WatchEvent`. Used by tests and benchmarks to read what [`watch_frame`] wrote.
#[cfg(test)]
pub fn read_watch_frames(mut stream: &[u8]) -> Option<Vec<(String, Vec<u8>)>> {
    let mut events = Vec::new();
    while !stream.is_empty() {
        let (header, rest) = stream.split_first_chunk::<4>()?;
        let length = usize::try_from(u32::from_be_bytes(*header)).ok()?;
        let frame = rest.get(..length)?;
        let event = WatchEvent::decode(frame).ok()?;
        events.push((event.r#type.unwrap_or_default(), event.object.and_then(|o| o.raw).unwrap_or_default()));
        stream = &rest[length..];
    }
    Some(events)
}
