//! A CRD version's `additionalPrinterColumns`, parsed once when the CRD is compiled: each column's name, type,
//! format, description, priority and JSONPath (`jsonpath.rs`). Tables are built from them above, by the server.

use serde_json::{json, Value};

use crate::jsonpath::JsonPath;

/// The description of `metadata.creationTimestamp`, kube's, which the default `Age` column carries.
pub const CREATION_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// Why printer columns cannot be served.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ColumnError {
    /// A printer column's `jsonPath` is outside the supported subset or malformed.
    #[error("unrecognized column definition {path:?}: {reason}")]
    InvalidJsonPath { path: String, reason: String },
    /// A printer column is not an object or lacks its `jsonPath`.
    #[error("additionalPrinterColumns[{index}] is invalid: {reason}")]
    InvalidColumn { index: usize, reason: String },
}

/// A CRD version's printer columns, parsed once and reused for every request.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomColumns {
    pub columns: Vec<CustomColumn>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CustomColumn {
    pub name: String,
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub path: JsonPath,
}

/// Parses `additionalPrinterColumns` entries (`name`, `type`, `format`, `description`,
/// `priority`, `jsonPath`). With no entries kube serves a single `Age` column; NAME always comes
/// first. Kube adds no AGE column when the CRD lists columns of its own.
///
/// An error means the CRD's columns cannot be served; callers fall back to [`super::build_table`],
/// whose default NAME / CREATED AT table is what kube falls back to as well.
pub fn custom_columns(columns: &[Value]) -> Result<CustomColumns, ColumnError> {
    if columns.is_empty() {
        let age = json!({
            "name": "Age",
            "type": "date",
            "description": CREATION_DESCRIPTION,
            "jsonPath": ".metadata.creationTimestamp",
        });
        return custom_columns(&[age]);
    }
    let parsed: Result<Vec<CustomColumn>, ColumnError> =
        columns.iter().enumerate().map(|(index, column)| parse_column(index, column)).collect();
    Ok(CustomColumns { columns: parsed? })
}

fn parse_column(index: usize, column: &Value) -> Result<CustomColumn, ColumnError> {
    let invalid = |reason: &str| ColumnError::InvalidColumn { index, reason: reason.to_string() };
    if !column.is_object() {
        return Err(invalid("a printer column must be an object"));
    }
    let json_path = text(column, "jsonPath").ok_or_else(|| invalid("jsonPath is required"))?;
    let description = match text(column, "description").filter(|d| !d.is_empty()) {
        Some(description) => description.to_string(),
        None => format!("Custom resource definition column (in JSONPath format): {json_path}"),
    };
    Ok(CustomColumn {
        name: text(column, "name").unwrap_or("").to_string(),
        type_: text(column, "type").unwrap_or("").to_string(),
        format: text(column, "format").unwrap_or("").to_string(),
        description,
        priority: column.get("priority").and_then(integer).unwrap_or(0),
        path: JsonPath::parse(json_path)?,
    })
}


fn text<'a>(column: &'a Value, field: &str) -> Option<&'a str> {
    column.get(field).and_then(Value::as_str)
}

/// An integer, or a float with no fraction (as JSON numbers may carry one).
fn integer(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| value.as_f64().filter(|float| float.fract() == 0.0 && float.abs() < 9.0e18).map(|float| float as i64))
}
