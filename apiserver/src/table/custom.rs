//! Tables for custom resources from a CRD version's `additionalPrinterColumns`, as
//! apiextensions-apiserver's `tableconvertor` builds them.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::age::{parse_time, since};
use super::columns::NAME;
use super::read::{as_int, name};
use kspaces_crd::columns::CustomColumns;
use super::printers::Row;
use super::{assemble, row_json, IncludeObject};

/// The `columnDefinitions` array: NAME, then the CRD's columns in order.
pub fn column_definitions(columns: &CustomColumns) -> Value {
    let custom = columns.columns.iter().map(|column| {
        json!({
            "name": column.name,
            "type": column.type_,
            "format": column.format,
            "description": column.description,
            "priority": column.priority,
        })
    });
    Value::Array(std::iter::once(NAME.to_json()).chain(custom).collect())
}

/// A `meta.k8s.io/v1` Table of `objects` (one object for a GET) with a CRD version's columns; see
/// [`super::build_table`].
pub fn build_table(columns: &CustomColumns, objects: &[Value], list_metadata: Value, include: IncludeObject, now: DateTime<Utc>) -> Value {
    let rows = objects.iter().map(|object| row_json(row(columns, object, now), object, include, None)).collect();
    assemble(column_definitions(columns), rows, list_metadata)
}

fn row(columns: &CustomColumns, object: &Value, now: DateTime<Utc>) -> Row {
    let mut cells = vec![Value::String(name(object).to_string())];
    for column in &columns.columns {
        // Like kube, only the first match is printed.
        let first = column.path.find(object).into_iter().next();
        cells.push(first.map_or(Value::Null, |value| cell(&column.type_, value, now)));
    }
    cells.into()
}

/// `cellForJSONValue`, with `string` columns printed the way client-go's jsonpath prints.
fn cell(type_: &str, value: &Value, now: DateTime<Utc>) -> Value {
    match (type_, value) {
        (_, Value::Null) => Value::Null,
        ("string", value) => Value::String(print_text(value)),
        ("integer", value) => match as_int(value) {
            Some(int) => Value::from(int),
            None => value.as_f64().map_or(Value::Null, |float| Value::from(float.trunc() as i64)),
        },
        ("number", value) => value.as_f64().map_or(Value::Null, Value::from),
        ("boolean", Value::Bool(flag)) => Value::Bool(*flag),
        ("date", Value::String(text)) => Value::String(date_cell(text, now)),
        _ => Value::Null,
    }
}

/// A date column's cell: the age, `<unknown>` for an empty or zero time, `<invalid>` otherwise.
fn date_cell(text: &str, now: DateTime<Utc>) -> String {
    if text.is_empty() || text == "null" {
        return "<unknown>".to_string();
    }
    let value = Value::String(text.to_string());
    match parse_time(Some(&value)) {
        Some(timestamp) => since(Some(timestamp), now),
        None if chrono::DateTime::parse_from_rfc3339(text).is_ok() => "<unknown>".to_string(),
        None => "<invalid>".to_string(),
    }
}

/// Scalars as text (integral numbers without a fraction), objects and arrays as compact JSON.
fn print_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Number(number) => match as_int(value) {
            Some(int) => int.to_string(),
            None => number.to_string(),
        },
        Value::Bool(flag) => flag.to_string(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
