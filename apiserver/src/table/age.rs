//! Timestamps and ages as kubectl shows them: apimachinery's `duration.HumanDuration`.

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::Value;

const NANOS_PER_SECOND: i128 = 1_000_000_000;
const NANOS_PER_MINUTE: i128 = 60 * NANOS_PER_SECOND;
const NANOS_PER_HOUR: i128 = 60 * NANOS_PER_MINUTE;

/// Go's zero `time.Time` (0001-01-01T00:00:00Z) as Unix seconds; `metav1.Time.IsZero` is true
/// for it, so it prints as `<unknown>` just like a missing timestamp.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// `duration.HumanDuration`: about two significant figures (`5s`, `3m20s`, `3h4m`, `2d3h`, `45d`,
/// `3y2d`); `<invalid>` for anything more than a second in the future.
pub fn human_duration(delta: TimeDelta) -> String {
    let nanos = i128::from(delta.num_seconds()) * NANOS_PER_SECOND + i128::from(delta.subsec_nanos());
    let seconds = nanos / NANOS_PER_SECOND;
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = nanos / NANOS_PER_MINUTE;
    if minutes < 10 {
        return with_remainder(minutes, "m", seconds % 60, "s");
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = nanos / NANOS_PER_HOUR;
    if hours < 8 {
        return with_remainder(hours, "h", minutes % 60, "m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return with_remainder(hours / 24, "d", hours % 24, "h");
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return with_remainder(hours / 24 / 365, "y", (hours / 24) % 365, "d");
    }
    format!("{}y", hours / 24 / 365)
}

/// `"{major}{unit}"`, followed by `"{minor}{minor_unit}"` unless the remainder is zero.
fn with_remainder(major: i128, unit: &str, minor: i128, minor_unit: &str) -> String {
    if minor == 0 {
        format!("{major}{unit}")
    } else {
        format!("{major}{unit}{minor}{minor_unit}")
    }
}

/// Parses an RFC 3339 `metav1.Time`/`MicroTime`; `None` when missing, null, not a string,
/// unparseable, or Go's zero time.
pub(crate) fn parse_time(value: Option<&Value>) -> Option<DateTime<Utc>> {
    let text = value?.as_str()?;
    let parsed = DateTime::parse_from_rfc3339(text).ok()?.with_timezone(&Utc);
    (parsed.timestamp() != GO_ZERO_TIME_SECONDS || parsed.timestamp_subsec_nanos() != 0).then_some(parsed)
}

/// `translateTimestampSince`: the age of `timestamp` at `now`, `<unknown>` without one.
pub(crate) fn since(timestamp: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    match timestamp {
        Some(timestamp) => human_duration(now.signed_duration_since(timestamp)),
        None => "<unknown>".to_string(),
    }
}

/// The age of the JSON timestamp at `value` (see [`since`]).
pub(crate) fn age_of(value: Option<&Value>, now: DateTime<Utc>) -> String {
    since(parse_time(value), now)
}

/// The AGE cell every printer ends with: the age of `metadata.creationTimestamp`.
pub(crate) fn creation_age(object: &Value, now: DateTime<Utc>) -> String {
    age_of(super::read::at(object, &["metadata", "creationTimestamp"]), now)
}

/// `creationTimestamp.UTC().Format(time.RFC3339)` for the default convertor's `Created At`
/// column; Go prints its zero time when the timestamp is missing.
pub(crate) fn created_at(object: &Value) -> String {
    match parse_time(super::read::at(object, &["metadata", "creationTimestamp"])) {
        Some(timestamp) => timestamp.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        None => "0001-01-01T00:00:00Z".to_string(),
    }
}
