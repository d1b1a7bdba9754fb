//! Tables for custom resources from a CRD version's `additionalPrinterColumns`, as
//! apiextensions-apiserver's `tableconvertor` builds them.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::age::{parse_time, since};
use super::columns::{CREATION_DESCRIPTION, NAME};
use super::read::{as_int, name, opt_int, opt_str};
use super::jsonpath::JsonPath;
use super::printers::Row;
use super::{assemble, row_json, IncludeObject, TableError};

/// A CRD version's printer columns, parsed once and reused for every request.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomColumns {
    columns: Vec<CustomColumn>,
}

#[derive(Clone, Debug, PartialEq)]
struct CustomColumn {
    name: String,
    type_: String,
    format: String,
    description: String,
    priority: i64,
    path: JsonPath,
}

/// Parses `additionalPrinterColumns` entries (`name`, `type`, `format`, `description`,
/// `priority`, `jsonPath`). With no entries kube serves a single `Age` column; NAME always comes
/// first. Kube adds no AGE column when the CRD lists columns of its own.
///
/// An error means the CRD's columns cannot be served; callers fall back to [`super::build_table`],
/// whose default NAME / CREATED AT table is what kube falls back to as well.
pub fn custom_columns(columns: &[Value]) -> Result<CustomColumns, TableError> {
    if columns.is_empty() {
        let age = json!({
            "name": "Age",
            "type": "date",
            "description": CREATION_DESCRIPTION,
            "jsonPath": ".metadata.creationTimestamp",
        });
        return custom_columns(&[age]);
    }
    let parsed: Result<Vec<CustomColumn>, TableError> =
        columns.iter().enumerate().map(|(index, column)| parse_column(index, column)).collect();
    Ok(CustomColumns { columns: parsed? })
}

fn parse_column(index: usize, column: &Value) -> Result<CustomColumn, TableError> {
    let invalid = |reason: &str| TableError::InvalidColumn { index, reason: reason.to_string() };
    if !column.is_object() {
        return Err(invalid("a printer column must be an object"));
    }
    let json_path = opt_str(column, &["jsonPath"]).ok_or_else(|| invalid("jsonPath is required"))?;
    let description = match opt_str(column, &["description"]).filter(|d| !d.is_empty()) {
        Some(description) => description.to_string(),
        None => format!("Custom resource definition column (in JSONPath format): {json_path}"),
    };
    Ok(CustomColumn {
        name: opt_str(column, &["name"]).unwrap_or("").to_string(),
        type_: opt_str(column, &["type"]).unwrap_or("").to_string(),
        format: opt_str(column, &["format"]).unwrap_or("").to_string(),
        description,
        priority: opt_int(column, &["priority"]).unwrap_or(0),
        path: JsonPath::parse(json_path)?,
    })
}

impl CustomColumns {
    /// The `columnDefinitions` array: NAME, then the CRD's columns in order.
    pub fn column_definitions(&self) -> Value {
        let custom = self.columns.iter().map(|column| {
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

    /// A `meta.k8s.io/v1` Table of `objects` (one object for a GET); see [`super::build_table`].
    pub fn build_table(
        &self,
        objects: &[Value],
        list_metadata: Value,
        include: IncludeObject,
        now: DateTime<Utc>,
    ) -> Value {
        let rows = objects.iter().map(|object| row_json(self.row(object, now), object, include, None)).collect();
        assemble(self.column_definitions(), rows, list_metadata)
    }

    fn row(&self, object: &Value, now: DateTime<Utc>) -> Row {
        let mut cells = vec![Value::String(name(object).to_string())];
        for column in &self.columns {
            // Like kube, only the first match is printed.
            let first = column.path.find(object).into_iter().next();
            cells.push(first.map_or(Value::Null, |value| cell(&column.type_, value, now)));
        }
        cells.into()
    }
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
