//! Table tests of server-side apply and managedFields: each row is (live object with its managedFields, an
//! apply or update by a manager, the expected object and managedFields or the expected conflicts), run through
//! one `check` helper against a small test schema (`fixture.rs`) or a CRD's structural schema.

mod fixture;
mod rows;
mod units;

use serde_json::{json, Value};

use super::*;
use fixture::{crd_schema, test_types, API_VERSION, KIND, NOW};

/// What a row does.
enum Op {
    /// An apply by `manager` (force or not) of `config`.
    Apply { manager: &'static str, config: Value, force: bool },
    /// A non-apply write of `new` (an update, or a create when the row has no live object).
    Update { manager: &'static str, new: Value },
}

/// What a row expects.
enum Expect {
    /// The object (without managedFields) and its managedFields (entries as `entry` builds them; none: absent).
    Done { object: Value, managed: Vec<Value> },
    /// kube's conflict causes: (field, message).
    Conflicts(&'static [(&'static str, &'static str)]),
    /// A refused configuration; the message contains this.
    Invalid(&'static str),
}

/// Which schema a row uses.
#[derive(Clone, Copy)]
enum Schema {
    /// `test.Widget` of the fixture definitions.
    Widget,
    /// The fixture CRD's structural schema.
    Crd,
}

/// Which part of the object a row writes.
#[derive(Clone, Copy)]
enum Part {
    Main,
    Status,
}

struct Case {
    name: &'static str,
    schema: Schema,
    part: Part,
    live: Option<Value>,
    op: Op,
    expect: Expect,
}

impl Case {
    fn new(name: &'static str, live: Option<Value>, op: Op, expect: Expect) -> Case {
        Case { name, schema: Schema::Widget, part: Part::Main, live, op, expect }
    }

    fn crd(self) -> Case {
        Case { schema: Schema::Crd, ..self }
    }

    fn status(self) -> Case {
        Case { part: Part::Status, ..self }
    }
}

/// A managedFields entry of the fixture's apiVersion (`time`: `None` for an entry without one).
fn entry(manager: &str, operation: &str, time: Option<&str>, fields: Value) -> Value {
    let mut entry = json!({"manager": manager, "operation": operation, "apiVersion": API_VERSION, "fieldsType": "FieldsV1", "fieldsV1": fields});
    if let Some(time) = time {
        entry["time"] = json!(time);
    }
    entry
}

/// Like [`entry`], for a write of a subresource.
fn sub_entry(manager: &str, operation: &str, time: Option<&str>, subresource: &str, fields: Value) -> Value {
    let mut entry = entry(manager, operation, time, fields);
    entry["subresource"] = json!(subresource);
    entry
}

/// A Widget named `w` with `fields` (spec, status, metadata extras...) merged in.
fn widget(fields: Value) -> Value {
    let mut object = json!({"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "w"}});
    merge_into(&mut object, fields);
    object
}

/// `object` with these managedFields entries.
fn owned(mut object: Value, entries: Vec<Value>) -> Value {
    object["metadata"]["managedFields"] = Value::Array(entries);
    object
}

fn merge_into(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                match target.get_mut(&key) {
                    Some(existing) if existing.is_object() && value.is_object() => merge_into(existing, value),
                    _ => {
                        target.insert(key, value);
                    }
                }
            }
        }
        (target, patch) => *target = patch,
    }
}

fn run<S: SchemaView>(schema: S, case: &Case) -> Result<Value, ApplyError> {
    let (filter, subresource) = match case.part {
        Part::Main => (Filter::Exclude(FieldSet::of(&[field_path(&["status"])])), ""),
        Part::Status => (Filter::Only(field_path(&["status"])), "status"),
    };
    let zero = json!({});
    let manager = match &case.op {
        Op::Apply { manager, .. } | Op::Update { manager, .. } => *manager,
    };
    let write = Write { schema, filter: &filter, zero: &zero, manager, api_version: API_VERSION, kind: KIND, subresource, now: NOW };
    match &case.op {
        Op::Apply { config, force, .. } => apply(&write, case.live.as_ref(), config, *force),
        Op::Update { new, .. } => {
            let mut new = new.clone();
            record_update(&write, case.live.as_ref(), &mut new);
            Ok(new)
        }
    }
}

fn check(case: &Case) {
    let types = test_types();
    let schema = crd_schema();
    let result = match case.schema {
        Schema::Widget => run(types.view("test.Widget"), case),
        Schema::Crd => run(StructuralView::root(&schema, types), case),
    };
    match (&case.expect, result) {
        (Expect::Done { object, managed }, Ok(mut actual)) => {
            let entries = actual["metadata"].as_object_mut().and_then(|m| m.remove("managedFields"));
            assert_eq!(&actual, object, "{}: object", case.name);
            let expected = (!managed.is_empty()).then(|| Value::Array(managed.clone()));
            assert_eq!(entries, expected, "{}: managedFields", case.name);
        }
        (Expect::Conflicts(expected), Err(ApplyError::Conflicts(conflicts))) => {
            let (message, causes) = conflict_report(&conflicts);
            let expected: Vec<(String, String)> = expected.iter().map(|(f, m)| ((*f).to_owned(), (*m).to_owned())).collect();
            assert_eq!(causes, expected, "{}: conflicts ({message})", case.name);
        }
        (Expect::Invalid(text), Err(ApplyError::Invalid(message))) => {
            assert!(message.contains(text), "{}: {message:?} should contain {text:?}", case.name);
        }
        (_, other) => panic!("{}: unexpected result {other:?}", case.name),
    }
}

#[test]
fn table() {
    for case in rows::rows() {
        check(&case);
    }
}
