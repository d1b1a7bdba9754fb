//! Events: core/v1 and events.k8s.io/v1 share one printer, as they share one storage in kube.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::{int, text, Printer, Row};
use crate::table::age::{parse_time, since};
use crate::table::columns::{col, wide, ColumnSpec, NAME_DESCRIPTION};
use crate::table::read::{as_int, at, name, str_at};

static EVENT_COLUMNS: [ColumnSpec; 10] = [
    col("Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."),
    col("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
    col("Reason", "string", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
    col("Object", "string", "The object that this event is about."),
    wide("Subobject", "string", "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]."),
    wide("Source", "string", "The component reporting this event. Should be a short machine understandable string."),
    col("Message", "string", "A human-readable description of the status of this operation."),
    wide("First Seen", "string", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"),
    wide("Count", "string", "The number of times this event has occurred."),
    ColumnSpec { name: "Name", type_: "string", format: "name", description: NAME_DESCRIPTION, priority: 1 },
];

pub(crate) static CORE_EVENT: Printer = Printer { columns: &EVENT_COLUMNS, print: print_core_event };
pub(crate) static EVENTS_EVENT: Printer = Printer { columns: &EVENT_COLUMNS, print: print_events_event };

/// events.k8s.io/v1 → core/v1 field names, the conversion kube runs before printing.
const RENAMES: [(&str, &str); 6] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn print_events_event(event: &Value, now: DateTime<Utc>) -> Row {
    let Some(fields) = event.as_object() else {
        return print_core_event(event, now);
    };
    let mut core = Map::new();
    for (key, value) in fields {
        let renamed = RENAMES.iter().find(|(from, _)| from == key).map_or(key.as_str(), |(_, to)| to);
        core.insert(renamed.to_string(), value.clone());
    }
    print_core_event(&Value::Object(core), now)
}

fn print_core_event(event: &Value, now: DateTime<Utc>) -> Row {
    let first_seen = parse_time(at(event, &["firstTimestamp"])).or_else(|| parse_time(at(event, &["eventTime"])));
    let first_timestamp = since(first_seen, now);
    let mut last_timestamp = match parse_time(at(event, &["lastTimestamp"])) {
        Some(last) => since(Some(last), now),
        None => first_timestamp.clone(),
    };
    let mut occurrences = at(event, &["count"]).and_then(as_int).unwrap_or(0);
    match at(event, &["series"]).filter(|series| series.is_object()) {
        Some(series) => {
            last_timestamp = since(parse_time(at(series, &["lastObservedTime"])), now);
            occurrences = at(series, &["count"]).and_then(as_int).unwrap_or(0);
        }
        // Singleton events don't have a count set in the new API.
        None if occurrences == 0 => occurrences = 1,
        None => {}
    }
    let kind = str_at(event, &["involvedObject", "kind"]).to_lowercase();
    let object_name = str_at(event, &["involvedObject", "name"]);
    let target = if object_name.is_empty() { kind } else { format!("{kind}/{object_name}") };
    let cells = vec![
        text(last_timestamp),
        text(str_at(event, &["type"])),
        text(str_at(event, &["reason"])),
        text(target),
        text(str_at(event, &["involvedObject", "fieldPath"])),
        text(event_source(event)),
        text(str_at(event, &["message"]).trim()),
        text(first_timestamp),
        int(occurrences),
        text(name(event)),
    ];
    cells.into()
}

/// `formatEventSource`: component (or reporting controller), then `, host` (or instance).
fn event_source(event: &Value) -> String {
    let first_non_empty = |a: &'static [&'static str], b: &'static [&'static str]| {
        let primary = str_at(event, a);
        if primary.is_empty() { str_at(event, b) } else { primary }
    };
    let component = first_non_empty(&["source", "component"], &["reportingController"]);
    let instance = first_non_empty(&["source", "host"], &["reportingInstance"]);
    if instance.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {instance}")
    }
}
