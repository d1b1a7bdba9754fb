//! Server-side tables for `kubectl get` (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`).
//!
//! kubectl asks for a `meta.k8s.io/v1 Table` and prints its cells verbatim; without one it
//! falls back to NAME + AGE and looks broken. The column sets and cell formats reproduce
//! kube-apiserver v1.33 (`pkg/printers/internalversion`, the default convertor for kinds
//! without a printer, and apiextensions' CRD convertor), so output matches a real cluster.
//!
//! Invariant: nothing here panics or fails on object content. Objects are arbitrary JSON;
//! missing or wrongly typed fields print as Go's zero value, `<none>` or `<unknown>`, as kubectl
//! would show for the same stored object.

mod age;
mod columns;
mod custom;
mod read;
mod printers;
#[cfg(test)]
mod tests;

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use crate::negotiate::MetaVersion;
use crate::registry::resource::ResourceInfo;

pub use age::human_duration;
pub use kspaces_crd::columns::{custom_columns, CustomColumns};
pub use kspaces_crd::jsonpath::JsonPath;

/// What each row's `object` carries (the `includeObject` query parameter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// `object: null`.
    None,
    /// A `PartialObjectMetadata` with the object's metadata: what kubectl needs for
    /// `--show-labels`, `-L`, namespaces and `-o wide`. The default, as in kube.
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query parameter; an empty value means the default.
    pub fn from_query(value: &str) -> Result<IncludeObject, TableError> {
        match value {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "None" => Ok(IncludeObject::None),
            "Object" => Ok(IncludeObject::Object),
            other => Err(TableError::InvalidIncludeObject(other.to_string())),
        }
    }
}

/// Why a table could not be set up. Object content never causes one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// The `includeObject` query parameter is not `None`, `Metadata` or `Object` (a 400, in kube's words).
    #[error("Unable to convert to Table as requested: includeObject: Invalid value: {0:?}: must be 'Metadata', 'Object', 'None', or empty")]
    InvalidIncludeObject(String),
}

/// Builds the `Table` for a built-in resource: kube's printer for `(group, kind)`, or kube's
/// default convertor (NAME, CREATED AT) for kinds it has none for (roles, cluster roles,
/// limit ranges, unknown kinds). For a single-object GET pass a one-element slice and
/// [`object_table_metadata`]; for a list pass the list's `metadata` (resourceVersion,
/// continue, remainingItemCount). Every column is filled, including the `-o wide` ones.
pub fn build_table(
    resource: &ResourceInfo,
    objects: &[Value],
    list_metadata: Value,
    include: IncludeObject,
    now: DateTime<Utc>,
) -> Value {
    if let Some(columns) = resource.custom.as_ref().and_then(|c| c.columns.as_ref()) {
        return custom::build_table(columns, objects, list_metadata, include, now);
    }
    let api_version = resource.api_version();
    let type_meta = Some((resource.kind.as_str(), api_version.as_str()));
    let (specs, print): (&[columns::ColumnSpec], PrintFn) =
        match printers::printer_for(&resource.group, &resource.kind) {
            Some(printer) => (printer.columns, printer.print),
            None => (&columns::DEFAULT_COLUMNS, default_row),
        };
    let rows = objects.iter().map(|object| row_json(print(object, now), object, include, type_meta)).collect();
    assemble(columns::definitions_json(specs), rows, list_metadata)
}

/// The parts of a Table answer that do not depend on its rows: everything but `rows`, with `list_metadata`.
pub fn head(resource: &ResourceInfo, list_metadata: Value, include: IncludeObject, now: DateTime<Utc>) -> Map<String, Value> {
    let mut table = match build_table(resource, &[], list_metadata, include, now) {
        Value::Object(table) => table,
        _ => Map::new(),
    };
    table.remove("rows");
    table
}

/// The rows of `objects`, as `build_table` makes them.
pub fn rows(resource: &ResourceInfo, objects: &[Value], include: IncludeObject, now: DateTime<Utc>) -> Vec<Value> {
    match build_table(resource, objects, Value::Null, include, now) {
        Value::Object(mut table) => match table.remove("rows") {
            Some(Value::Array(rows)) => rows,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// The Table `metadata` for a single-object GET: the object's `resourceVersion`, as kube sets it.
pub fn object_table_metadata(object: &Value) -> Value {
    match read::opt_str(object, &["metadata", "resourceVersion"]) {
        Some(version) => json!({ "resourceVersion": version }),
        None => json!({}),
    }
}

/// The default convertor's row: the name and the creation time in RFC 3339.
/// A printer's row function.
type PrintFn = fn(&Value, DateTime<Utc>) -> printers::Row;

fn default_row(object: &Value, _now: DateTime<Utc>) -> printers::Row {
    vec![Value::String(read::name(object).to_string()), Value::String(age::created_at(object))].into()
}

/// The Table envelope around column definitions and rows.
/// Built by moving its parts in: `json!` would serialize each interpolated value into a copy (every row, again).
fn assemble(column_definitions: Value, rows: Vec<Value>, list_metadata: Value) -> Value {
    let metadata = if list_metadata.is_object() { list_metadata } else { json!({}) };
    let mut table = Map::new();
    table.insert("kind".to_owned(), Value::from("Table"));
    table.insert("apiVersion".to_owned(), Value::from("meta.k8s.io/v1"));
    table.insert("metadata".to_owned(), metadata);
    table.insert("columnDefinitions".to_owned(), column_definitions);
    table.insert("rows".to_owned(), Value::Array(rows));
    Value::Object(table)
}

/// One `TableRow`: the cells, kube's row conditions when present, and the object as requested.
/// `type_meta` (kind, apiVersion) fills in an `Object` that lacks its own.
fn row_json(row: printers::Row, object: &Value, include: IncludeObject, type_meta: Option<(&str, &str)>) -> Value {
    let mut entry = Map::new();
    entry.insert("cells".to_string(), Value::Array(row.cells));
    if let Some(conditions) = row.conditions {
        entry.insert("conditions".to_string(), conditions);
    }
    entry.insert("object".to_string(), row_object(object, include, type_meta));
    Value::Object(entry)
}

fn row_object(object: &Value, include: IncludeObject, type_meta: Option<(&str, &str)>) -> Value {
    match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Metadata => MetaVersion::V1.partial_object(object),
        IncludeObject::Object => {
            let mut full = object.clone();
            if let (Some(map), Some((kind, api_version))) = (full.as_object_mut(), type_meta) {
                map.entry("kind").or_insert_with(|| Value::String(kind.to_string()));
                map.entry("apiVersion").or_insert_with(|| Value::String(api_version.to_string()));
            }
            full
        }
    }
}
