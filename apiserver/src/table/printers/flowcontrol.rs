//! API Priority and Fairness kinds: FlowSchema and PriorityLevelConfiguration, with kube-apiserver's columns.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{int, text, Printer, Row};
use crate::table::age::creation_age;
use crate::table::columns::{col, ColumnSpec, AGE, NAME};
use crate::table::read::{array_at, at, name, opt_int, str_at};

static FLOW_SCHEMA_COLUMNS: [ColumnSpec; 6] = [
    NAME,
    col("PriorityLevel", "string", "`name` is the name of the priority level configuration being referenced Required."),
    col("MatchingPrecedence", "string", "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request."),
    col("DistinguisherMethod", "string", "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema."),
    AGE,
    col("MissingPL", "string", "indicates if the referenced priority level exists"),
];
pub(crate) static FLOW_SCHEMA: Printer = Printer { columns: &FLOW_SCHEMA_COLUMNS, print: print_flow_schema };

/// kube's `printFlowSchema`: `<none>` without a distinguisher, and the `Dangling` condition's status (`?` when
/// there is none).
fn print_flow_schema(schema: &Value, now: DateTime<Utc>) -> Row {
    let distinguisher = at(schema, &["spec", "distinguisherMethod", "type"]).and_then(Value::as_str).unwrap_or("<none>");
    let dangling = array_at(schema, &["status", "conditions"])
        .iter()
        .find(|condition| str_at(condition, &["type"]) == "Dangling")
        .map_or("?", |condition| str_at(condition, &["status"]));
    vec![
        text(name(schema)),
        text(str_at(schema, &["spec", "priorityLevelConfiguration", "name"])),
        int(opt_int(schema, &["spec", "matchingPrecedence"]).unwrap_or(0)),
        text(distinguisher),
        text(creation_age(schema, now)),
        text(dangling),
    ]
    .into()
}

static PRIORITY_LEVEL_COLUMNS: [ColumnSpec; 7] = [
    NAME,
    col("Type", "string", "`type` indicates whether this priority level is subject to limitation on request execution."),
    col("NominalConcurrencyShares", "string", "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level."),
    col("Queues", "string", "`queues` is the number of queues for this priority level."),
    col("HandSize", "string", "`handSize` is a small positive number that configures the shuffle sharding of requests into queues."),
    col("QueueLengthLimit", "string", "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time."),
    AGE,
];
pub(crate) static PRIORITY_LEVEL: Printer = Printer { columns: &PRIORITY_LEVEL_COLUMNS, print: print_priority_level };

/// kube's `printPriorityLevelConfiguration`: a Limited level's shares and queuing, `<none>` for what it lacks.
fn print_priority_level(level: &Value, now: DateTime<Utc>) -> Row {
    let none = || text("<none>");
    let limited = at(level, &["spec", "limited"]).filter(|v| v.is_object());
    let shares = limited.map_or_else(none, |limited| int(opt_int(limited, &["nominalConcurrencyShares"]).unwrap_or(0)));
    let queuing = limited.and_then(|limited| at(limited, &["limitResponse", "queuing"])).filter(|v| v.is_object());
    let field = |key: &str| queuing.map_or_else(none, |queuing| int(opt_int(queuing, &[key]).unwrap_or(0)));
    vec![
        text(name(level)),
        text(str_at(level, &["spec", "type"])),
        shares,
        field("queues"),
        field("handSize"),
        field("queueLengthLimit"),
        text(creation_age(level, now)),
    ]
    .into()
}
