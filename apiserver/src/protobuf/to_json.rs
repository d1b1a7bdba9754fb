//! The [`ToJson`] trait: scalars, lists, maps and the apimachinery special types, written by hand.
//!
//! Zero values follow Go's encoding/json: a Go value field tagged `omitempty` holding its zero value is absent
//! from kube's JSON, but Go protobuf always writes it, so it arrives as `Some("")`/`Some(0)`/`Some(false)`. The
//! generated code passes `keep_zero = true` only for fields kube shows even when zero (Go pointers such as
//! `replicas`, and fields without `omitempty` such as `Container.name`).

use base64::Engine as _;
use chrono::DateTime;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1::{Duration, FieldsV1, MicroTime, Time};
use k8s_pb::apimachinery::pkg::runtime::RawExtension;
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Map, Number, Value};
use std::collections::BTreeMap;

/// Why a decoded message could not become JSON.
#[derive(Debug)]
pub(crate) enum DecodeFailure {
    /// The bytes are not a valid encoding of the message.
    Prost(prost::DecodeError),
    /// An embedded JSON document (RawExtension, FieldsV1) does not parse.
    EmbeddedJson(String),
    /// A value decodes but has no JSON form (e.g. a timestamp out of range).
    OutOfRange(String),
}

/// A field's JSON value, or `None` when kube's JSON omits it.
pub(crate) type Converted = Result<Option<Value>, DecodeFailure>;

/// Converts a k8s-pb value into the JSON kube would produce for it.
pub(crate) trait ToJson {
    /// `keep_zero`: the field is shown by kube even when it holds its zero value.
    fn to_json(&self, keep_zero: bool) -> Converted;
}

/// Adds `name` to `object` unless the value is omitted.
pub(crate) fn put(
    object: &mut Map<String, Value>,
    name: &str,
    value: &impl ToJson,
    keep_zero: bool,
) -> Result<(), DecodeFailure> {
    if let Some(json) = value.to_json(keep_zero)? {
        object.insert(name.to_owned(), json);
    }
    Ok(())
}

/// Merges the object of a Go struct embedded with `json:",inline"` into `object`.
pub(crate) fn merge(
    object: &mut Map<String, Value>,
    value: &impl ToJson,
) -> Result<(), DecodeFailure> {
    if let Some(Value::Object(fields)) = value.to_json(true)? {
        object.extend(fields);
    }
    Ok(())
}

/// Decodes `raw` as message `M` and converts it; a message always becomes an object.
pub(crate) fn decode<M: prost::Message + Default + ToJson>(
    raw: &[u8],
) -> Result<Value, DecodeFailure> {
    let message = M::decode(raw).map_err(DecodeFailure::Prost)?;
    Ok(message
        .to_json(true)?
        .unwrap_or_else(|| Value::Object(Map::new())))
}

/// Keeps `value` unless it is the zero value and zeros are omitted.
fn unless_zero(is_zero: bool, keep_zero: bool, value: Value) -> Converted {
    Ok((keep_zero || !is_zero).then_some(value))
}

impl<T: ToJson> ToJson for Option<T> {
    fn to_json(&self, keep_zero: bool) -> Converted {
        match self {
            Some(value) => value.to_json(keep_zero),
            None => Ok(None),
        }
    }
}

/// Recursive messages (CRD schemas) are boxed in k8s-pb.
impl<T: ToJson> ToJson for Box<T> {
    fn to_json(&self, keep_zero: bool) -> Converted {
        self.as_ref().to_json(keep_zero)
    }
}

impl ToJson for String {
    fn to_json(&self, keep_zero: bool) -> Converted {
        unless_zero(self.is_empty(), keep_zero, Value::String(self.clone()))
    }
}

impl ToJson for bool {
    fn to_json(&self, keep_zero: bool) -> Converted {
        unless_zero(!*self, keep_zero, Value::Bool(*self))
    }
}

impl ToJson for i32 {
    fn to_json(&self, keep_zero: bool) -> Converted {
        unless_zero(*self == 0, keep_zero, Value::from(*self))
    }
}

impl ToJson for i64 {
    fn to_json(&self, keep_zero: bool) -> Converted {
        unless_zero(*self == 0, keep_zero, Value::from(*self))
    }
}

impl ToJson for f64 {
    fn to_json(&self, keep_zero: bool) -> Converted {
        Ok(float_json(*self).and_then(|json| (keep_zero || *self != 0.0).then_some(json)))
    }
}

/// Go prints integral floats without a fraction (`1`, not `1.0`); NaN and infinities have no JSON form.
fn float_json(value: f64) -> Option<Value> {
    let integral = value.fract() == 0.0 && value.abs() < 9.0e15;
    if integral {
        // The range check above makes the cast exact.
        #[allow(clippy::cast_possible_truncation)]
        return Some(Value::from(value as i64));
    }
    Number::from_f64(value).map(Value::Number)
}

/// Protobuf `bytes` (Secret data, ConfigMap binaryData, CSR requests) are base64 strings in JSON.
impl ToJson for Vec<u8> {
    fn to_json(&self, keep_zero: bool) -> Converted {
        let encoded = base64::engine::general_purpose::STANDARD.encode(self);
        unless_zero(self.is_empty(), keep_zero, Value::String(encoded))
    }
}

/// Lists are omitted when empty; their elements are always kept, zero or not.
impl<T: ToJson> ToJson for Vec<T> {
    fn to_json(&self, _keep_zero: bool) -> Converted {
        if self.is_empty() {
            return Ok(None);
        }
        let items = self
            .iter()
            .map(|item| Ok(item.to_json(true)?.unwrap_or(Value::Null)));
        Ok(Some(Value::Array(
            items.collect::<Result<_, DecodeFailure>>()?,
        )))
    }
}

/// Maps are omitted when empty; their values are always kept, zero or not.
impl<T: ToJson> ToJson for BTreeMap<String, T> {
    fn to_json(&self, _keep_zero: bool) -> Converted {
        if self.is_empty() {
            return Ok(None);
        }
        let mut object = Map::new();
        for (key, value) in self {
            object.insert(key.clone(), value.to_json(true)?.unwrap_or(Value::Null));
        }
        Ok(Some(Value::Object(object)))
    }
}

/// `metav1.Time`: RFC 3339 in UTC with whole seconds; the zero time (an empty message) is `null`, so omitted.
impl ToJson for Time {
    fn to_json(&self, _keep_zero: bool) -> Converted {
        timestamp(self.seconds, self.nanos, "%Y-%m-%dT%H:%M:%SZ")
    }
}

/// `metav1.MicroTime`: RFC 3339 in UTC with exactly six fractional digits.
impl ToJson for MicroTime {
    fn to_json(&self, _keep_zero: bool) -> Converted {
        timestamp(self.seconds, self.nanos, "%Y-%m-%dT%H:%M:%S%.6fZ")
    }
}

/// Formats seconds and nanoseconds since the epoch; out-of-range values (hostile input) are an error.
fn timestamp(seconds: Option<i64>, nanos: Option<i32>, format: &str) -> Converted {
    let (seconds, nanos) = (seconds.unwrap_or(0), nanos.unwrap_or(0));
    if seconds == 0 && nanos == 0 {
        return Ok(None);
    }
    let time = u32::try_from(nanos)
        .ok()
        .and_then(|nanos| DateTime::from_timestamp(seconds, nanos));
    let time = time.ok_or_else(|| {
        DecodeFailure::OutOfRange(format!("timestamp {seconds}s {nanos}ns is out of range"))
    })?;
    Ok(Some(Value::String(time.format(format).to_string())))
}

/// `resource.Quantity` is its canonical string; Go's zero Quantity prints as "0".
impl ToJson for Quantity {
    fn to_json(&self, _keep_zero: bool) -> Converted {
        let text = self.string.clone().unwrap_or_default();
        Ok(Some(Value::String(if text.is_empty() {
            "0".to_owned()
        } else {
            text
        })))
    }
}

/// `intstr.IntOrString`: type 1 is a string, anything else an integer; a present value is always shown.
impl ToJson for IntOrString {
    fn to_json(&self, _keep_zero: bool) -> Converted {
        if self.r#type == Some(1) {
            return Ok(Some(Value::String(
                self.str_val.clone().unwrap_or_default(),
            )));
        }
        Ok(Some(Value::from(self.int_val.unwrap_or(0))))
    }
}

/// `metav1.Duration`: Go's `time.Duration` string, e.g. `1h0m0s`.
impl ToJson for Duration {
    fn to_json(&self, _keep_zero: bool) -> Converted {
        Ok(Some(Value::String(go_duration(self.duration.unwrap_or(0)))))
    }
}

/// `runtime.RawExtension`: the embedded JSON document itself.
impl ToJson for RawExtension {
    fn to_json(&self, _keep_zero: bool) -> Converted {
        embedded_json(self.raw.as_deref())
    }
}

/// `metav1.FieldsV1` (managedFields): the embedded JSON document itself.
impl ToJson for FieldsV1 {
    fn to_json(&self, _keep_zero: bool) -> Converted {
        embedded_json(self.raw.as_deref())
    }
}

/// Parses embedded JSON bytes; absent or empty bytes are omitted.
fn embedded_json(raw: Option<&[u8]>) -> Converted {
    match raw {
        None | Some([]) => Ok(None),
        Some(bytes) => serde_json::from_slice(bytes)
            .map(Some)
            .map_err(|error| DecodeFailure::EmbeddedJson(error.to_string())),
    }
}

/// `ExtraValue` (user extra info) is a Go `[]string`: a JSON array, kept even when empty.
macro_rules! extra_value_to_json {
    ($($path:path),*) => {$(
        impl ToJson for $path {
            fn to_json(&self, _keep_zero: bool) -> Converted {
                Ok(Some(Value::Array(self.items.iter().cloned().map(Value::String).collect())))
            }
        }
    )*};
}

extra_value_to_json!(
    k8s_pb::api::authentication::v1::ExtraValue,
    k8s_pb::api::authorization::v1::ExtraValue,
    k8s_pb::api::certificates::v1::ExtraValue
);

/// Renders nanoseconds the way Go's `time.Duration.String` does (`1h0m0s`, `1.5s`, `300ms`, `0s`).
pub(crate) fn go_duration(nanoseconds: i64) -> String {
    let sign = if nanoseconds < 0 { "-" } else { "" };
    let total = u128::from(nanoseconds.unsigned_abs());
    let body = match total {
        0 => "0s".to_owned(),
        1..=999 => format!("{total}ns"),
        1_000..=999_999 => format!("{}µs", decimal(total, 3)),
        1_000_000..=999_999_999 => format!("{}ms", decimal(total, 6)),
        _ => {
            let whole_seconds = total / 1_000_000_000;
            let seconds = decimal(total % 60_000_000_000, 9);
            let (minutes, hours) = ((whole_seconds / 60) % 60, whole_seconds / 3600);
            match (hours, minutes) {
                (0, 0) => format!("{seconds}s"),
                (0, _) => format!("{minutes}m{seconds}s"),
                _ => format!("{hours}h{minutes}m{seconds}s"),
            }
        }
    };
    format!("{sign}{body}")
}

/// `value / 10^digits` with the remainder as a fraction, trailing zeros trimmed.
fn decimal(value: u128, digits: u32) -> String {
    let scale = 10u128.pow(digits);
    let fraction = format!("{:0width$}", value % scale, width = digits as usize);
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() {
        format!("{}", value / scale)
    } else {
        format!("{}.{fraction}", value / scale)
    }
}
