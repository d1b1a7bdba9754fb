//! The built-in printers: one column set and one row function per kind, looked up by
//! (group, kind) as kube-apiserver's `pkg/printers/internalversion` registers them (a built-in kind's row in
//! `crate::builtin` names its printer).
//!
//! The server always prints the `-o wide` cells (kube calls its generator with `Wide: true`);
//! kubectl hides the priority-1 columns itself unless asked for them.

mod cluster;
mod core;
mod event;
mod flowcontrol;
mod pod;
mod workloads;

use std::collections::HashMap;
use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::columns::ColumnSpec;
use crate::builtin::builtin_kinds;

/// One row's cells plus the optional `conditions` kube attaches (only pods use them).
#[derive(Debug, Default)]
pub(crate) struct Row {
    pub cells: Vec<Value>,
    pub conditions: Option<Value>,
}

impl From<Vec<Value>> for Row {
    fn from(cells: Vec<Value>) -> Self {
        Row { cells, conditions: None }
    }
}

/// A kind's column headers and the function that fills one row from an object.
pub(crate) struct Printer {
    pub columns: &'static [ColumnSpec],
    pub print: fn(&Value, DateTime<Utc>) -> Row,
}

/// The table column of each built-in kind's row: (group, kind) and its printer, when kube registers one.
macro_rules! row_printers {
    ($( $($ty:ident)::+, [$($short:literal),*], $flags:expr, $verbs:ident, [$($sub:ident),*], $printer:expr; )*) => {
        vec![$( printer_of::<k8s_openapi::$($ty)::+>($printer), )*]
    };
}

fn printer_of<T: k8s_openapi::Resource>(printer: Option<&'static Printer>) -> ((&'static str, &'static str), Option<&'static Printer>) {
    ((T::GROUP, T::KIND), printer)
}

/// The printer kube-apiserver v1.33 registers for `(group, kind)`, or `None` when it uses the
/// default convertor (NAME, CREATED AT): roles, cluster roles, limit ranges and unknown kinds.
/// The built-in kinds' come from their rows (`crate::builtin`), kspaces' own kinds' and flow control's from here.
pub(crate) fn printer_for(group: &str, kind: &str) -> Option<&'static Printer> {
    static PRINTERS: OnceLock<HashMap<(&'static str, &'static str), &'static Printer>> = OnceLock::new();
    let printers = PRINTERS.get_or_init(|| {
        let own: [((&'static str, &'static str), Option<&'static Printer>); 5] = [
            (("", "Tenant"), Some(&core::TENANT)),
            (("core.kcp.io", "LogicalCluster"), Some(&core::LOGICAL_CLUSTER)),
            (("tenancy.kcp.io", "Workspace"), Some(&core::WORKSPACE)),
            (("flowcontrol.apiserver.k8s.io", "FlowSchema"), Some(&flowcontrol::FLOW_SCHEMA)),
            (("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"), Some(&flowcontrol::PRIORITY_LEVEL)),
        ];
        builtin_kinds!(row_printers)
            .into_iter()
            .chain(own)
            .filter_map(|(key, printer)| Some((key, printer?)))
            .collect()
    });
    printers.get(&(group, kind)).copied()
}

/// A string cell.
pub(crate) fn text(value: impl Into<String>) -> Value {
    Value::String(value.into())
}

/// An integer cell (Go's `int64(...)`).
pub(crate) fn int(value: impl Into<i64>) -> Value {
    Value::from(value.into())
}

/// A count cell; lengths never exceed `i64` in practice, saturate if they somehow do.
pub(crate) fn count(value: usize) -> Value {
    Value::from(i64::try_from(value).unwrap_or(i64::MAX))
}
