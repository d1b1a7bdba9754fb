//! A decoded or patched object against its resource's schema: the fields it does not declare, dropping them as
//! kube's typed decoding does, and a patch's problems judged once it is applied ([`PatchCheck`]).

use serde_json::Value;

use super::schema::{self, Node, Problem, OBJECT_META};
use super::FieldValidation;
use crate::openapi::OpenApi;
use crate::registry::ResourceInfo;
use crate::status::{ApiError, ApiResult, Cause};

/// What a body is checked against, with the served definitions (built on first use) it reads.
#[derive(Clone, Copy)]
pub struct Schema<'r> {
    openapi: &'r OpenApi,
    declared: Declared<'r>,
}

#[derive(Clone, Copy)]
enum Declared<'r> {
    /// A built-in kind's definition (`None`: the kind has none, so only duplicates are found).
    Definition(Option<&'r str>),
    /// A custom resource version's structural schema.
    Custom(&'r kspaces_crd::structural::Structural),
}

impl<'r> Schema<'r> {
    /// The schema of `resource`'s objects.
    pub fn of(openapi: &'r OpenApi, resource: &'r ResourceInfo) -> Schema<'r> {
        let declared = match resource.custom.as_ref().and_then(|custom| custom.version()) {
            Some(version) => Declared::Custom(&version.schema),
            None if resource.custom.is_some() => Declared::Definition(None),
            None => Declared::Definition(resource.definition.as_deref()),
        };
        Schema { openapi, declared }
    }

    /// The served definition `name` (`io.k8s.api.autoscaling.v1.Scale`).
    pub fn definition(openapi: &'r OpenApi, name: &'r str) -> Schema<'r> {
        Schema { openapi, declared: Declared::Definition(Some(name)) }
    }

    /// The node a built-in kind's JSON body is checked against as it is read.
    pub(super) fn node(self) -> Option<Node<'r>> {
        match self.declared {
            Declared::Definition(Some(name)) => Node::definition(self.openapi.definitions(), name),
            _ => None,
        }
    }
}

/// The fields of `object` its schema does not declare: for built-ins depth first in key order; for custom
/// resources `metadata`'s, then what pruning removes (sorted), then embedded resources' `metadata`'s.
pub fn unknown_fields(schema: Schema<'_>, object: &Value) -> Vec<Problem> {
    let found = match schema.declared {
        Declared::Definition(_) => schema.node().map(|node| schema::unknown_fields(node, object, "")).unwrap_or_default(),
        Declared::Custom(structural) => {
            let meta = Node::definition(schema.openapi.definitions(), OBJECT_META);
            let metadata = |value: &Value, path: &str| meta.map(|node| schema::unknown_fields(node, value, path)).unwrap_or_default();
            let undeclared = structural.undeclared(object);
            let mut found = object.get("metadata").map(|m| metadata(m, "metadata")).unwrap_or_default();
            found.extend(undeclared.pruned);
            for (path, value) in undeclared.embedded_metadata {
                found.extend(metadata(value, &path));
            }
            found
        }
    };
    found.into_iter().map(Problem::Unknown).collect()
}

/// Drops what the kind does not declare, as kube's decoding does: a built-in kind's undeclared fields, and a
/// custom resource's undeclared `metadata` fields and embedded resources' (the registry prunes the rest of a
/// custom resource against its version's schema).
pub fn prune(schema: Schema<'_>, object: &mut Value) {
    match schema.declared {
        Declared::Definition(_) => {
            if let Some(node) = schema.node() {
                schema::prune(node, object);
            }
        }
        Declared::Custom(structural) => {
            let Some(meta) = Node::definition(schema.openapi.definitions(), OBJECT_META) else { return };
            if let Some(metadata) = object.get_mut("metadata") {
                schema::prune(meta, metadata);
            }
            structural.embedded_metadata_mut(object, &mut |metadata| schema::prune(meta, metadata));
        }
    }
}

/// A patch's problems across the attempts of its read-modify-write: the patch's own (duplicate keys, a JSON
/// patch's undeclared operation fields), then the undeclared fields of the object it produced last.
pub struct PatchCheck<'a> {
    validation: FieldValidation,
    schema: Schema<'a>,
    own: Vec<Problem>,
    last: std::sync::Mutex<Vec<Problem>>,
}

impl<'a> PatchCheck<'a> {
    /// `own`: the patch's own problems, as [`super::decode`] returned them.
    pub fn new(validation: FieldValidation, schema: Schema<'a>, own: Vec<Problem>) -> PatchCheck<'a> {
        PatchCheck { validation, schema, own, last: std::sync::Mutex::new(Vec::new()) }
    }

    /// Checks one patched object, then drops what its kind does not declare: `Strict` refuses a problem as
    /// kube does, 422 on the field `patch` whose value is `shown(patched)` (the patched object's JSON, or a strategic
    /// patch as Go prints a map).
    pub fn check(&self, patched: &mut Value, shown: impl FnOnce(&Value) -> String) -> ApiResult<()> {
        let checked = self.check_fields(patched, || shown(patched));
        prune(self.schema, patched);
        checked
    }

    fn check_fields(&self, patched: &Value, shown: impl FnOnce() -> String) -> ApiResult<()> {
        if self.validation == FieldValidation::Ignore {
            return Ok(());
        }
        let mut problems = self.own.clone();
        problems.extend(unknown_fields(self.schema, patched));
        if self.validation == FieldValidation::Strict && !problems.is_empty() {
            let message = schema::strict_decoding_error(&problems);
            return Err(ApiError::invalid("", "", "", vec![Cause::invalid("patch", &shown(), &message)]));
        }
        *self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = problems;
        Ok(())
    }

    /// Hands `warn` the last checked object's problems (`Warn`), once the patch is written.
    pub fn warn(&self, mut warn: impl FnMut(String)) {
        if self.validation == FieldValidation::Warn {
            self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).iter().for_each(|problem| warn(problem.to_string()));
        }
    }
}

/// A JSON value as Go's `%+v` prints it once decoded into `map[string]interface{}` (kube shows a refused
/// strategic merge patch so): `map[spec:map[replicas:2]]`.
pub fn go_format(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => go_float(f),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(items) => format!("[{}]", items.iter().map(go_format).collect::<Vec<_>>().join(" ")),
        Value::Object(map) => format!("map[{}]", map.iter().map(|(k, v)| format!("{k}:{}", go_format(v))).collect::<Vec<_>>().join(" ")),
    }
}

/// Go's `%v` of a float64: the shortest representation, exponent form for very large or small magnitudes.
fn go_float(value: f64) -> String {
    let exponent = if value == 0.0 { 0 } else { value.abs().log10().floor() as i32 };
    if (-4..21).contains(&exponent) {
        return format!("{value}");
    }
    let text = format!("{value:e}");
    match text.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = exp.strip_prefix('-').map_or(("+", exp), |d| ("-", d));
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => text,
    }
}
