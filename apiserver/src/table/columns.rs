//! Column definitions (`metav1.TableColumnDefinition`) shared by the built-in printers.

use serde_json::{json, Value};

/// One column header; built-in printers keep theirs in `static` arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ColumnSpec {
    pub name: &'static str,
    /// OpenAPI type of the cells: `string`, `integer`, `number`, `boolean` or `date`.
    pub type_: &'static str,
    /// `name` marks the column kubectl treats as the object's name; otherwise empty.
    pub format: &'static str,
    pub description: &'static str,
    /// `0` is always shown; `1` only with `kubectl get -o wide`.
    pub priority: i64,
}

impl ColumnSpec {
    /// The JSON form a `Table` carries; every field is present, as kube-apiserver sends it.
    pub(crate) fn to_json(self) -> Value {
        json!({
            "name": self.name,
            "type": self.type_,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

/// A column shown by default.
pub(crate) const fn col(name: &'static str, type_: &'static str, description: &'static str) -> ColumnSpec {
    ColumnSpec { name, type_, format: "", description, priority: 0 }
}

/// A column shown only with `-o wide`.
pub(crate) const fn wide(name: &'static str, type_: &'static str, description: &'static str) -> ColumnSpec {
    ColumnSpec { name, type_, format: "", description, priority: 1 }
}

/// `ObjectMeta.name`'s documentation, the description of every NAME column.
pub(crate) const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// `ObjectMeta.creationTimestamp`'s documentation, the description of every AGE column.
pub(crate) use kspaces_crd::columns::CREATION_DESCRIPTION;

pub(crate) const NAME: ColumnSpec =
    ColumnSpec { name: "Name", type_: "string", format: "name", description: NAME_DESCRIPTION, priority: 0 };
pub(crate) const AGE: ColumnSpec = col("Age", "string", CREATION_DESCRIPTION);
pub(crate) const CONTAINERS: ColumnSpec = wide("Containers", "string", "Names of each container in the template.");
pub(crate) const IMAGES: ColumnSpec = wide("Images", "string", "Images referenced by each container in the template.");
pub(crate) const SELECTOR: ColumnSpec = wide("Selector", "string", "A label query over pods that should match the replica count.");

/// The default convertor's columns (`rest.NewDefaultTableConvertor`): kinds without a printer.
pub(crate) static DEFAULT_COLUMNS: [ColumnSpec; 2] = [NAME, col("Created At", "date", CREATION_DESCRIPTION)];

/// The JSON `columnDefinitions` array for `specs`.
pub(crate) fn definitions_json(specs: &[ColumnSpec]) -> Value {
    Value::Array(specs.iter().map(|spec| spec.to_json()).collect())
}
