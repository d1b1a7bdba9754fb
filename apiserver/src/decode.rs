//! The one request-body decoder: every handler that reads a body (create, update, patch, apply, the `scale`
//! subresource, reviews, evictions, bindings, token requests, DeleteOptions) calls [`decode`] with the body, its
//! `Content-Type`, the request's `fieldValidation` and what the body is decoded for, and gets the JSON value or
//! kube's `Status` (400 for a malformed body, 415 for a type it does not read, 400 or 422 for what
//! `fieldValidation=Strict` refuses), its warnings handed to the caller's sink.
//!
//! A body's problems are its duplicate keys and the fields its kind does not declare: built-in kinds against
//! the served OpenAPI definitions, custom resources against their version's structural schema (what pruning
//! removes) and `ObjectMeta` (their `metadata` and their embedded resources'). `Strict` refuses them with kube's
//! message, `Warn` (the default) warns once per problem, `Ignore` says nothing. `strict.rs` reads JSON and YAML
//! in one pass noting them; `schema.rs` is the schema walk and the problems' words; `fields.rs` checks a decoded
//! or patched object against its resource's schema and drops what the kind does not declare.

mod fields;
pub mod schema;
mod strict;

use std::sync::OnceLock;

use serde::de::DeserializeSeed;
use serde_json::{json, Map, Value};

use crate::negotiate::{self, BodyFormat, PatchKind};
use crate::status::{ApiError, ApiResult};
pub use fields::{go_format, prune, unknown_fields, PatchCheck, Schema};
use schema::{Node, Problem};
pub use strict::Strictness;

/// `fieldValidation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

/// What a body is decoded for, which decides the formats it may come in and what is checked.
#[derive(Clone, Copy)]
pub enum Purpose<'r> {
    /// A whole object (create, update, a Scale's replacement) of the kind `kind` in `version`: JSON, YAML or
    /// protobuf, checked against `schema`; what the kind does not declare is dropped.
    Object { schema: Schema<'r>, kind: &'r str, version: &'r str },
    /// A JSON, merge or strategic merge patch (always JSON): its own problems (duplicate keys, a JSON patch's
    /// undeclared operation fields) are returned in [`Decoded::pending`] for [`PatchCheck`], which judges them
    /// with the patched object's.
    Patch(PatchKind),
    /// A server-side apply configuration: a YAML (or JSON) object whose duplicate keys `fieldValidation` judges.
    Apply,
    /// A body read as it is, nothing checked: DeleteOptions, reviews, an Eviction, a Binding, a TokenRequest.
    Untyped,
}

/// A decoded body.
#[derive(Debug)]
pub struct Decoded {
    pub value: Value,
    /// A patch's own problems, judged once it is applied (empty for every other purpose).
    pub pending: Vec<Problem>,
}

/// Decodes a request body for `purpose`: `content_type` names its format (a patch is JSON whatever its patch
/// type), `validation` says what its problems do, and `warn` receives each warning (kube sends them with the
/// answer, an error too).
pub fn decode(body: &[u8], content_type: Option<&str>, validation: FieldValidation, purpose: Purpose<'_>, warn: &mut dyn FnMut(String)) -> ApiResult<Decoded> {
    let value = match purpose {
        Purpose::Object { schema, kind, version } => object(body, content_type, validation, schema, kind, version, warn)?,
        Purpose::Patch(kind) => return patch(body, kind, validation),
        Purpose::Apply => apply(body, validation, warn)?,
        Purpose::Untyped => read(negotiate::body_format(content_type)?, body, Strictness::None)?.value,
    };
    Ok(Decoded { value, pending: Vec::new() })
}

/// A whole object: a JSON body of a built-in kind is checked as it is read (kube reports its problems in document
/// order); YAML bodies and custom resources get their undeclared fields listed after their duplicates, in the
/// order kube lists them. `Strict` refuses a problem (400, `<Kind> in version "<v>" cannot be handled as a <Kind>:
/// strict decoding error: ...`).
fn object(body: &[u8], content_type: Option<&str>, validation: FieldValidation, schema: Schema<'_>, kind: &str, version: &str, warn: &mut dyn FnMut(String)) -> ApiResult<Value> {
    let format = negotiate::body_format(content_type)?;
    let mut decoded = if validation == FieldValidation::Ignore || format == BodyFormat::Protobuf {
        read(format, body, Strictness::None)?
    } else {
        let strictness = match (format, schema.node()) {
            (BodyFormat::Json, Some(node)) => Strictness::Schema(node),
            _ => Strictness::Duplicates,
        };
        let mut decoded = read(format, body, strictness)?;
        if !matches!(strictness, Strictness::Schema(_)) {
            decoded.problems.extend(unknown_fields(schema, &decoded.value));
        }
        decoded
    };
    match validation {
        _ if decoded.problems.is_empty() => {}
        FieldValidation::Ignore => {}
        FieldValidation::Warn => decoded.problems.iter().for_each(|problem| warn(problem.to_string())),
        FieldValidation::Strict => return Err(ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {}", schema::strict_decoding_error(&decoded.problems)))),
    }
    prune(schema, &mut decoded.value);
    Ok(decoded.value)
}

/// A patch's JSON, noting its own problems unless they are ignored: duplicate keys, and a JSON patch's
/// undeclared operation fields (`json patch unknown field "[0].foo"`), as kube does.
fn patch(body: &[u8], kind: PatchKind, validation: FieldValidation) -> ApiResult<Decoded> {
    let strictness = match (validation, kind) {
        (FieldValidation::Ignore, _) => Strictness::None,
        (_, PatchKind::Json) => Strictness::Schema(json_patch_operations()),
        _ => Strictness::Duplicates,
    };
    let read = read_json(body, strictness).map_err(|err| ApiError::bad_request(format!("the patch is not valid JSON: {err}")))?;
    let pending = match kind {
        PatchKind::Json => read.problems.into_iter().map(|p| Problem::InJsonPatch(Box::new(p))).collect(),
        _ => read.problems,
    };
    Ok(Decoded { value: read.value, pending })
}

/// The schema of a JSON patch's operations, as kube decodes them (`value` may be anything).
fn json_patch_operations() -> Node<'static> {
    static SCHEMA: OnceLock<(Map<String, Value>, Value)> = OnceLock::new();
    let (definitions, schema) = SCHEMA.get_or_init(|| {
        let operation = json!({"type": "object", "properties": {
            "op": {"type": "string"}, "path": {"type": "string"}, "from": {"type": "string"},
            "value": {"x-kubernetes-preserve-unknown-fields": true},
        }});
        (Map::new(), json!({"type": "array", "items": operation}))
    });
    Node::schema(definitions, schema)
}

/// An applied configuration: keys given twice are what `fieldValidation` judges for an apply, as in kube (which
/// reads the body with a strict YAML decoder): `Strict` refuses them, `Warn` warns.
fn apply(body: &[u8], validation: FieldValidation, warn: &mut dyn FnMut(String)) -> ApiResult<Value> {
    let parsed = match validation {
        FieldValidation::Ignore => serde_json::from_slice::<Value>(body)
            .or_else(|_| read(BodyFormat::Yaml, body, Strictness::None).map(|read| read.value).map_err(|err| err.message)),
        _ => read(BodyFormat::Yaml, body, Strictness::Duplicates).map_err(|err| err.message).and_then(|read| {
            apply_duplicates(validation, &read.problems, warn)?;
            Ok(read.value)
        }),
    };
    match parsed {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(other) => Err(ApiError::bad_request(format!("error decoding patch: the applied configuration must be an object, not {other}"))),
        Err(why) => Err(ApiError::bad_request(format!("error decoding patch: {why}"))),
    }
}

/// kube's words for the keys an apply body sets twice.
fn apply_duplicates(validation: FieldValidation, problems: &[Problem], warn: &mut dyn FnMut(String)) -> Result<(), String> {
    if problems.is_empty() {
        return Ok(());
    }
    let error = schema::strict_decoding_error(problems).replacen("strict decoding error: ", "error converting YAML to JSON: ", 1);
    match validation {
        FieldValidation::Strict => Err(format!("error strict decoding YAML: {error}")),
        _ => {
            warn(error);
            Ok(())
        }
    }
}

/// A body as read: its value (the last of duplicate keys wins) and the problems found, in the order kube
/// reports them.
#[derive(Debug)]
pub struct Read {
    pub value: Value,
    pub problems: Vec<Problem>,
}

/// Reads a JSON or YAML body in one pass, noting duplicate keys (and, for JSON with a schema, undeclared
/// fields) as `strictness` asks. YAML duplicates are noted with their lines whatever the schema; protobuf
/// bodies have neither duplicates nor undeclared fields. 400 when malformed.
pub fn read(format: BodyFormat, body: &[u8], strictness: Strictness<'_>) -> ApiResult<Read> {
    match format {
        BodyFormat::Json => read_json(body, strictness).map_err(|err| ApiError::bad_request(format!("the request body is not valid JSON: {err}"))),
        BodyFormat::Yaml => read_yaml(body, strictness),
        BodyFormat::Protobuf => crate::protobuf::decode_request(body)
            .map(|value| Read { value, problems: Vec::new() })
            .map_err(|err| ApiError::bad_request(format!("the request body is not a valid protobuf object: {err}"))),
    }
}

/// Reads a JSON document (see [`read`]); the caller words the error.
fn read_json(body: &[u8], strictness: Strictness<'_>) -> Result<Read, serde_json::Error> {
    let mut notes = strict::Notes::default();
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = strict::Seed::<strict::JsonKeys>::new(&mut notes, strictness).deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(Read { value, problems: notes.problems })
}

/// The fewest events aliases of a YAML body may replay, however short the body.
const MIN_ALIAS_REPLAY: usize = 10_000;

/// YAML keys set twice are reported with their lines, whatever the schema: kube finds them while converting
/// YAML to JSON, before the kind's decoder sees the document.
fn read_yaml(body: &[u8], strictness: Strictness<'_>) -> ApiResult<Read> {
    let text = std::str::from_utf8(body).map_err(|_| ApiError::bad_request("the request body is not UTF-8"))?;
    let strictness = match strictness {
        Strictness::None => Strictness::None,
        _ => Strictness::Duplicates,
    };
    // The decoder recurses several frames per level of nesting, up to its budget of 64 levels. An unoptimized
    // build's frames are large enough for that to pass the 2 MiB a worker thread has (a crash of the whole server),
    // so there it runs on a thread of its own with room for it; an optimized build's 64 levels fit the worker's
    // stack (`hostile_input`'s deepest apply passes on one), and a thread per body would cost it ~40 µs.
    let decode = move || {
        let mut options = serde_saphyr::Options::default();
        options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::PassThrough;
        // Aliases may replay no more events than the body has bytes (at least 10,000): a few hundred bytes of nested
        // aliases (a "billion laughs") would otherwise cost seconds of CPU before the default million-event bound.
        options.alias_limits.max_total_replayed_events = body.len().max(MIN_ALIAS_REPLAY);
        let mut notes = strict::Notes::default();
        let value = serde_saphyr::with_deserializer_from_str_with_options(text, options, |deserializer| {
            strict::Seed::<strict::YamlKeys>::new(&mut notes, strictness).deserialize(deserializer)
        })
        .map_err(|err| ApiError::bad_request(format!("the request body is not valid YAML: {err}")))?;
        Ok(Read { value, problems: notes.problems })
    };
    if !cfg!(debug_assertions) {
        return decode();
    }
    std::thread::scope(|scope| match std::thread::Builder::new().name("yaml-decode".into()).stack_size(YAML_STACK).spawn_scoped(scope, decode) {
        Ok(thread) => thread.join().unwrap_or_else(|_| Err(ApiError::bad_request("the request body could not be decoded as YAML"))),
        Err(_) => Err(ApiError::internal("no thread to decode the request body")),
    })
}

/// The stack the YAML decoder runs on (reserved, touched only as deep as a body nests).
const YAML_STACK: usize = 32 << 20;

#[cfg(test)]
mod tests;
