//! The query options every write shares (`dryRun`, `fieldValidation`), validated as kube validates its
//! CreateOptions, UpdateOptions, PatchOptions and DeleteOptions, and what `fieldValidation` does with the
//! problems a body has: `Strict` refuses the request with kube's message, `Warn` (the default) answers with one
//! `Warning` header per problem, `Ignore` says nothing.
//!
//! A body's problems are its duplicate keys and the fields its kind does not declare: built-in kinds against
//! the served OpenAPI definitions, custom resources against their version's structural schema (what pruning
//! removes) and `ObjectMeta` (their `metadata` and their embedded resources').

use serde_json::Value;

use crate::negotiate::{self, BodyFormat, Decoded, Strictness};
use crate::registry::field_validation::{self as fields, Node, Problem, OBJECT_META};
use crate::registry::ResourceInfo;
use crate::api_server::ApiServer;
use crate::status::{ApiError, ApiResult, Cause};

use super::Ctx;

/// The definition of the `scale` subresource's body.
pub const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

/// `fieldValidation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

/// The options of one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and admit, store nothing.
    pub dry_run: bool,
    pub field_validation: FieldValidation,
}

/// The options object kube decodes a verb's query into (named in its 422).
fn options_kind(verb: &str) -> &'static str {
    match verb {
        "create" => "CreateOptions",
        "update" => "UpdateOptions",
        "patch" => "PatchOptions",
        _ => "DeleteOptions",
    }
}

/// Validates `dryRun` and `fieldValidation` of a `verb`'s query (DeleteOptions have no `fieldValidation`);
/// anything else than `All`, `Ignore`, `Warn` or `Strict` is kube's 422
/// (`CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["x"]: supported values: "All"`).
pub fn parse(verb: &str, dry_run: Option<&str>, field_validation: Option<&str>) -> ApiResult<WriteOptions> {
    let kind = options_kind(verb);
    let mut causes = Vec::new();
    if let Some(value) = dry_run.filter(|v| *v != "All") {
        let shown = serde_json::to_string(&[value]).unwrap_or_default();
        causes.push(Cause { reason: "FieldValueNotSupported", message: format!("Unsupported value: {shown}: supported values: \"All\""),
            field: "dryRun".into() });
    }
    let validation = match (kind, field_validation) {
        ("DeleteOptions", _) | (_, None | Some("Warn")) => FieldValidation::Warn,
        (_, Some("Ignore")) => FieldValidation::Ignore,
        (_, Some("Strict")) => FieldValidation::Strict,
        (_, Some(other)) => {
            causes.push(Cause::not_supported("fieldValidation", other, &["", "Ignore", "Strict", "Warn"]));
            FieldValidation::Warn
        }
    };
    if !causes.is_empty() {
        return Err(ApiError::invalid_options(kind, causes));
    }
    Ok(WriteOptions { dry_run: dry_run.is_some(), field_validation: validation })
}

/// What a body is checked against.
#[derive(Clone, Copy)]
pub enum Schema<'r> {
    /// A built-in kind's definition (`None`: the kind has none, so only duplicates are found).
    Definition(Option<&'r str>),
    /// A custom resource version's structural schema.
    Custom(&'r kspaces_crd::structural::Structural),
}

impl<'r> Schema<'r> {
    /// The schema of `resource`'s objects.
    pub fn of(resource: &'r ResourceInfo) -> Schema<'r> {
        match resource.custom.as_ref().and_then(|custom| custom.version()) {
            Some(version) => Schema::Custom(&version.schema),
            None if resource.custom.is_some() => Schema::Definition(None),
            None => Schema::Definition(resource.definition.as_deref()),
        }
    }

    fn node(self, server: &ApiServer) -> Option<Node<'_>> {
        match self {
            Schema::Definition(Some(name)) => Node::definition(server.openapi().definitions(), name),
            _ => None,
        }
    }
}

/// Decodes a create's or update's body, finding its problems unless they are ignored: a JSON body of a
/// built-in kind is checked as it is read (kube reports its problems in document order); YAML bodies and custom
/// resources get their undeclared fields listed after their duplicates, in the order kube lists them.
pub fn decode(server: &ApiServer, validation: FieldValidation, schema: Schema<'_>, format: BodyFormat, body: &[u8]) -> ApiResult<Decoded> {
    if validation == FieldValidation::Ignore || format == BodyFormat::Protobuf {
        return negotiate::decode_strict(format, body, Strictness::None);
    }
    let node = schema.node(server);
    let strictness = match (format, node) {
        (BodyFormat::Json, Some(node)) => Strictness::Schema(node),
        _ => Strictness::Duplicates,
    };
    let mut decoded = negotiate::decode_strict(format, body, strictness)?;
    if !matches!(strictness, Strictness::Schema(_)) {
        decoded.problems.extend(unknown_fields(server, schema, &decoded.value));
    }
    Ok(decoded)
}

/// The fields of `object` its schema does not declare: for built-ins depth first in key order; for custom
/// resources `metadata`'s, then what pruning removes (sorted), then embedded resources' `metadata`'s.
pub fn unknown_fields(server: &ApiServer, schema: Schema<'_>, object: &Value) -> Vec<Problem> {
    let found = match schema {
        Schema::Definition(_) => schema.node(server).map(|node| fields::unknown_fields(node, object, "")).unwrap_or_default(),
        Schema::Custom(structural) => {
            let meta = Node::definition(server.openapi().definitions(), OBJECT_META);
            let metadata = |value: &Value, path: &str| meta.map(|node| fields::unknown_fields(node, value, path)).unwrap_or_default();
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

/// Decodes the body of a create or update of `ctx`'s resource, acts on its problems (see [`report_body`]) and
/// drops what the kind does not declare.
pub fn decode_object(ctx: &Ctx, validation: FieldValidation, body: &[u8]) -> ApiResult<Value> {
    let format = negotiate::body_format(ctx.content_type.as_deref())?;
    let schema = Schema::of(&ctx.resource);
    let mut decoded = decode(&ctx.server, validation, schema, format, body)?;
    report_body(ctx, validation, &ctx.resource.kind, &ctx.resource.version, &decoded.problems)?;
    prune(&ctx.server, schema, &mut decoded.value);
    Ok(decoded.value)
}

/// Drops what the kind does not declare, as kube's decoding does: a built-in kind's undeclared fields, and a
/// custom resource's undeclared `metadata` fields and embedded resources' (the registry prunes the rest of a
/// custom resource against its version's schema).
pub fn prune(server: &ApiServer, schema: Schema<'_>, object: &mut Value) {
    match schema {
        Schema::Definition(_) => {
            if let Some(node) = schema.node(server) {
                fields::prune(node, object);
            }
        }
        Schema::Custom(structural) => {
            let Some(meta) = Node::definition(server.openapi().definitions(), OBJECT_META) else { return };
            if let Some(metadata) = object.get_mut("metadata") {
                fields::prune(meta, metadata);
            }
            structural.embedded_metadata_mut(object, &mut |metadata| fields::prune(meta, metadata));
        }
    }
}

/// A create's or update's problems: `Strict` refuses the request (400, `<Kind> in version "<v>" cannot be
/// handled as a <Kind>: strict decoding error: ...`), `Warn` warns once per problem.
pub fn report_body(ctx: &Ctx, validation: FieldValidation, kind: &str, version: &str, problems: &[Problem]) -> ApiResult<()> {
    match validation {
        _ if problems.is_empty() => Ok(()),
        FieldValidation::Ignore => Ok(()),
        FieldValidation::Warn => {
            warn(ctx, problems);
            Ok(())
        }
        FieldValidation::Strict => Err(ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {}", fields::strict_decoding_error(problems)))),
    }
}

fn warn(ctx: &Ctx, problems: &[Problem]) {
    problems.iter().for_each(|problem| ctx.warn(problem.to_string()));
}

/// A patch's problems across the attempts of its read-modify-write: the patch's own (duplicate keys, a JSON
/// patch's undeclared operation fields), then the undeclared fields of the object it produced last.
pub struct PatchCheck<'a> {
    server: &'a ApiServer,
    validation: FieldValidation,
    schema: Schema<'a>,
    own: Vec<Problem>,
    last: std::sync::Mutex<Vec<Problem>>,
}

impl<'a> PatchCheck<'a> {
    pub fn new(server: &'a ApiServer, validation: FieldValidation, schema: Schema<'a>, own: Vec<Problem>) -> PatchCheck<'a> {
        PatchCheck { server, validation, schema, own, last: std::sync::Mutex::new(Vec::new()) }
    }

    /// Checks one patched object, then drops what its kind does not declare: `Strict` refuses a problem as
    /// kube does, 422 on the field `patch` whose value is `shown(patched)` (the patched object's JSON, or a strategic
    /// patch as Go prints a map).
    pub fn check(&self, patched: &mut Value, shown: impl FnOnce(&Value) -> String) -> ApiResult<()> {
        let checked = self.check_fields(patched, || shown(patched));
        prune(self.server, self.schema, patched);
        checked
    }

    fn check_fields(&self, patched: &Value, shown: impl FnOnce() -> String) -> ApiResult<()> {
        if self.validation == FieldValidation::Ignore {
            return Ok(());
        }
        let mut problems = self.own.clone();
        problems.extend(unknown_fields(self.server, self.schema, patched));
        if self.validation == FieldValidation::Strict && !problems.is_empty() {
            let message = fields::strict_decoding_error(&problems);
            return Err(ApiError::invalid("", "", "", vec![Cause::invalid("patch", &shown(), &message)]));
        }
        *self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = problems;
        Ok(())
    }

    /// Warns of the last checked object's problems (`Warn`), once the patch is written.
    pub fn warn(&self, ctx: &Ctx) {
        if self.validation == FieldValidation::Warn {
            warn(ctx, &self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A verb, its `dryRun` and `fieldValidation`, and the options or the 422 message expected.
    type Row = (&'static str, Option<&'static str>, Option<&'static str>, Result<WriteOptions, &'static str>);

    #[test]
    fn options_are_validated_as_kube_validates_them() {
        let rows: Vec<Row> = vec![
            ("create", None, None, Ok(WriteOptions { dry_run: false, field_validation: FieldValidation::Warn })),
            ("create", Some("All"), Some("Strict"), Ok(WriteOptions { dry_run: true, field_validation: FieldValidation::Strict })),
            ("update", None, Some("Ignore"), Ok(WriteOptions { dry_run: false, field_validation: FieldValidation::Ignore })),
            ("patch", None, Some("Warn"), Ok(WriteOptions { dry_run: false, field_validation: FieldValidation::Warn })),
            ("delete", Some("All"), Some("anything"), Ok(WriteOptions { dry_run: true, field_validation: FieldValidation::Warn })),
            ("create", Some("true"), None,
                Err(r#"CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["true"]: supported values: "All""#)),
            ("patch", None, Some("strict"),
                Err(r#"PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn""#)),
            ("update", Some("Server"), Some("Loud"),
                Err(r#"UpdateOptions.meta.k8s.io "" is invalid: [dryRun: Unsupported value: ["Server"]: supported values: "All", fieldValidation: Unsupported value: "Loud": supported values: "", "Ignore", "Strict", "Warn"]"#)),
            ("deletecollection", Some("x"), None,
                Err(r#"DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["x"]: supported values: "All""#)),
        ];
        for (verb, dry_run, validation, expected) in rows {
            let found = parse(verb, dry_run, validation);
            match expected {
                Ok(options) => assert_eq!(found, Ok(options), "{verb} {dry_run:?} {validation:?}"),
                Err(message) => {
                    let err = found.err().unwrap_or_else(|| panic!("{verb} {dry_run:?} {validation:?} should fail"));
                    assert_eq!((err.code, err.reason, err.message.as_str()), (422, "Invalid", message));
                }
            }
        }
    }

    #[test]
    fn values_print_as_go_prints_decoded_json() {
        let rows = [
            (json!({"spec": {"replicas": 2, "paused": true, "x": null}}), "map[spec:map[paused:true replicas:2 x:<nil>]]"),
            (json!({"a": [1, "b", {"c": 1.5}], "big": 1e21, "small": 0.00001, "n": -3}), "map[a:[1 b map[c:1.5]] big:1e+21 n:-3 small:1e-05]"),
        ];
        for (value, text) in rows {
            assert_eq!(go_format(&value), text);
        }
    }
}
