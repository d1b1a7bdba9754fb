//! The [`FromJson`] trait, the inverse of `to_json.rs`: scalars, lists, maps and the apimachinery special types,
//! written by hand; one impl per message is generated in `generated.rs`.
//!
//! A JSON property that is absent stays `None` (Go leaves the field at its zero value, which decodes the same);
//! a present one becomes `Some`, zero or not, so a Go pointer field keeps the difference between unset and zero.
//! JSON `null` is Go's "leave it alone": `None` for optional fields, the zero value inside lists and maps.

use base64::Engine as _;
use chrono::{DateTime, Timelike};
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1::{Duration, FieldsV1, MicroTime, Time};
use k8s_pb::apimachinery::pkg::runtime::RawExtension;
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// Why a JSON object could not become a protobuf message: where, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EncodeFailure {
    /// JSON field names from the outside in, e.g. `spec`, `replicas`.
    pub(crate) path: Vec<String>,
    pub(crate) reason: String,
}

impl EncodeFailure {
    fn new(reason: impl Into<String>) -> EncodeFailure {
        EncodeFailure { path: Vec::new(), reason: reason.into() }
    }

    /// Prefixes the path with the field the failure happened in.
    fn within(mut self, field: &str) -> EncodeFailure {
        self.path.insert(0, field.to_owned());
        self
    }
}

impl std::fmt::Display for EncodeFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            return f.write_str(&self.reason);
        }
        write!(f, "{}: {}", self.path.join("."), self.reason)
    }
}

/// A converted value, or where and why it could not be converted.
pub(crate) type Encoded<T> = Result<T, EncodeFailure>;

/// Converts the JSON kube would produce into the k8s-pb value Go's protobuf encoder would write.
pub(crate) trait FromJson: Sized {
    fn from_json(value: &Value) -> Encoded<Self>;
}

/// An empty object: what a `null` message reads as.
static EMPTY: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);

/// The properties of a message's JSON object (`null` reads as an object without properties).
pub(crate) fn fields(value: &Value) -> Encoded<&Map<String, Value>> {
    match value {
        Value::Object(object) => Ok(object),
        Value::Null => Ok(&EMPTY),
        other => Err(mismatch("an object", other)),
    }
}

/// Sets `slot` from the value of property `name`; a failure names the property.
pub(crate) fn set<T: FromJson>(slot: &mut T, name: &str, value: &Value) -> Encoded<()> {
    *slot = T::from_json(value).map_err(|failure| failure.within(name))?;
    Ok(())
}

/// Converts `value` as message `M` and appends it to `buffer`, preceded by its length (a `bytes` field's value).
pub(crate) fn encode<M: prost::Message + FromJson>(value: &Value, buffer: &mut Vec<u8>) -> Encoded<()> {
    // A Vec grows as needed, so encoding into it cannot fail.
    let _ = M::from_json(value)?.encode_length_delimited(buffer);
    Ok(())
}

fn mismatch(expected: &str, found: &Value) -> EncodeFailure {
    let found = match found {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    EncodeFailure::new(format!("expected {expected}, found {found}"))
}

impl<T: FromJson> FromJson for Option<T> {
    fn from_json(value: &Value) -> Encoded<Self> {
        match value {
            Value::Null => Ok(None),
            value => T::from_json(value).map(Some),
        }
    }
}

/// Recursive messages (CRD schemas) are boxed in k8s-pb.
impl<T: FromJson> FromJson for Box<T> {
    fn from_json(value: &Value) -> Encoded<Self> {
        T::from_json(value).map(Box::new)
    }
}

impl FromJson for String {
    fn from_json(value: &Value) -> Encoded<Self> {
        match value {
            Value::String(text) => Ok(text.clone()),
            Value::Null => Ok(String::new()),
            other => Err(mismatch("a string", other)),
        }
    }
}

impl FromJson for bool {
    fn from_json(value: &Value) -> Encoded<Self> {
        match value {
            Value::Bool(flag) => Ok(*flag),
            Value::Null => Ok(false),
            other => Err(mismatch("a boolean", other)),
        }
    }
}

/// An integer, also written as an integral float (`3.0`), as Go's decoder into int fields allows.
fn integer(value: &Value) -> Encoded<i64> {
    if value.is_null() {
        return Ok(0);
    }
    if let Some(integer) = value.as_i64() {
        return Ok(integer);
    }
    match value.as_f64() {
        // The range check makes the cast exact.
        #[allow(clippy::cast_possible_truncation)]
        Some(float) if float.fract() == 0.0 && float.abs() < 9.0e18 => Ok(float as i64),
        _ => Err(mismatch("an integer", value)),
    }
}

impl FromJson for i64 {
    fn from_json(value: &Value) -> Encoded<Self> {
        integer(value)
    }
}

impl FromJson for i32 {
    fn from_json(value: &Value) -> Encoded<Self> {
        let wide = integer(value)?;
        i32::try_from(wide).map_err(|_| EncodeFailure::new(format!("{wide} does not fit in a 32-bit integer")))
    }
}

impl FromJson for f64 {
    fn from_json(value: &Value) -> Encoded<Self> {
        match value {
            Value::Null => Ok(0.0),
            Value::Number(number) => number.as_f64().ok_or_else(|| mismatch("a number", value)),
            other => Err(mismatch("a number", other)),
        }
    }
}

/// Protobuf `bytes` are standard base64 strings in JSON.
impl FromJson for Vec<u8> {
    fn from_json(value: &Value) -> Encoded<Self> {
        let text = String::from_json(value)?;
        base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map_err(|error| EncodeFailure::new(format!("invalid base64: {error}")))
    }
}

/// A list's elements; a failure names the element's index.
impl<T: FromJson> FromJson for Vec<T> {
    fn from_json(value: &Value) -> Encoded<Self> {
        match value {
            Value::Null => Ok(Vec::new()),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(index, item)| T::from_json(item).map_err(|failure| failure.within(&format!("[{index}]"))))
                .collect(),
            other => Err(mismatch("an array", other)),
        }
    }
}

/// A map's values; a failure names the key.
impl<T: FromJson> FromJson for BTreeMap<String, T> {
    fn from_json(value: &Value) -> Encoded<Self> {
        let object = fields(value)?;
        object
            .iter()
            .map(|(key, item)| Ok((key.clone(), T::from_json(item).map_err(|failure| failure.within(key))?)))
            .collect()
    }
}

/// `metav1.Time`: an RFC 3339 timestamp (kube writes whole seconds, in UTC).
impl FromJson for Time {
    fn from_json(value: &Value) -> Encoded<Self> {
        let (seconds, nanos) = timestamp(value)?;
        Ok(Time { seconds: Some(seconds), nanos: Some(nanos) })
    }
}

/// `metav1.MicroTime`: an RFC 3339 timestamp with a fraction of a second.
impl FromJson for MicroTime {
    fn from_json(value: &Value) -> Encoded<Self> {
        let (seconds, nanos) = timestamp(value)?;
        Ok(MicroTime { seconds: Some(seconds), nanos: Some(nanos) })
    }
}

/// Seconds and nanoseconds since the epoch of an RFC 3339 string; `null` (Go's zero time) is (0, 0).
fn timestamp(value: &Value) -> Encoded<(i64, i32)> {
    let text = String::from_json(value)?;
    if text.is_empty() {
        return Ok((0, 0));
    }
    let time = DateTime::parse_from_rfc3339(&text)
        .map_err(|error| EncodeFailure::new(format!("invalid RFC 3339 time {text:?}: {error}")))?;
    let nanos = i32::try_from(time.nanosecond()).unwrap_or(999_999_999);
    Ok((time.timestamp(), nanos))
}

/// `resource.Quantity` is its string; a bare number (accepted on input by kube) is written as its text.
impl FromJson for Quantity {
    fn from_json(value: &Value) -> Encoded<Self> {
        let text = match value {
            Value::Number(number) => number.to_string(),
            other => String::from_json(other)?,
        };
        Ok(Quantity { string: Some(text) })
    }
}

/// `intstr.IntOrString`: a number is type 0 with `intVal`, a string type 1 with `strVal`; Go writes all three.
impl FromJson for IntOrString {
    fn from_json(value: &Value) -> Encoded<Self> {
        if let Value::String(text) = value {
            return Ok(IntOrString { r#type: Some(1), int_val: Some(0), str_val: Some(text.clone()) });
        }
        let number = i32::from_json(value)?;
        Ok(IntOrString { r#type: Some(0), int_val: Some(number), str_val: Some(String::new()) })
    }
}

/// `metav1.Duration`: Go's `time.Duration` string (`1h0m0s`, `1.5s`, `300ms`) as nanoseconds.
impl FromJson for Duration {
    fn from_json(value: &Value) -> Encoded<Self> {
        let text = String::from_json(value)?;
        let nanoseconds = parse_go_duration(&text)
            .ok_or_else(|| EncodeFailure::new(format!("invalid duration {text:?}")))?;
        Ok(Duration { duration: Some(nanoseconds) })
    }
}

/// `runtime.RawExtension`: the embedded JSON document's bytes.
impl FromJson for RawExtension {
    fn from_json(value: &Value) -> Encoded<Self> {
        Ok(RawExtension { raw: embedded_json(value) })
    }
}

/// `metav1.FieldsV1` (managedFields): the embedded JSON document's bytes.
impl FromJson for FieldsV1 {
    fn from_json(value: &Value) -> Encoded<Self> {
        Ok(FieldsV1 { raw: embedded_json(value) })
    }
}

/// The bytes of an embedded JSON document; `null` embeds nothing.
fn embedded_json(value: &Value) -> Option<Vec<u8>> {
    (!value.is_null()).then(|| value.to_string().into_bytes())
}

/// `ExtraValue` (user extra info) is a Go `[]string`, a JSON array.
macro_rules! extra_value_from_json {
    ($($path:path),*) => {$(
        impl FromJson for $path {
            fn from_json(value: &Value) -> Encoded<Self> {
                Ok(Self { items: Vec::from_json(value)? })
            }
        }
    )*};
}

extra_value_from_json!(
    k8s_pb::api::authentication::v1::ExtraValue,
    k8s_pb::api::authorization::v1::ExtraValue,
    k8s_pb::api::certificates::v1::ExtraValue
);

/// Parses Go's `time.ParseDuration` syntax: an optional sign, then numbers with units (`ns`, `us`/`µs`, `ms`,
/// `s`, `m`, `h`), e.g. `1h2m3.5s`; `0` alone is zero. `None` when malformed or out of range.
pub(crate) fn parse_go_duration(text: &str) -> Option<i64> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        if number.is_empty() || number == "." {
            return None;
        }
        let unit_end = after.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_end);
        let scale = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        total += number.parse::<f64>().ok()? * scale;
        rest = after;
    }
    if total > 9.2e18 {
        return None;
    }
    // The range check above keeps the cast in range; Go also truncates fractions of a nanosecond.
    #[allow(clippy::cast_possible_truncation)]
    let nanoseconds = total.round() as i64;
    Some(if negative { -nanoseconds } else { nanoseconds })
}
