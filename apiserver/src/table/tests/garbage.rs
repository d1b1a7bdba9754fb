//! Wrongly typed input never panics and never breaks a row's shape: every field of every
//! fixture is replaced in turn by values of every other JSON type.

use serde_json::{json, Value};

use super::{build_table, custom_columns, fixtures, now, resource, IncludeObject};

/// Values of every JSON type, plus a few that look almost right.
fn replacements() -> Vec<Value> {
    vec![
        Value::Null,
        json!(7),
        json!(-3.5),
        json!(1e300),
        json!("x"),
        json!(""),
        json!("2025-13-45T99:00:00Z"),
        json!(true),
        json!([]),
        json!({}),
        json!([1, "a", null, {"b": []}]),
        json!({"a": 1, "state": [], "terminated": "no"}),
    ]
}

/// Every JSON pointer inside `value`, the root included.
fn pointers(value: &Value, prefix: String, out: &mut Vec<String>) {
    out.push(prefix.clone());
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                pointers(child, format!("{prefix}/{}", key.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                pointers(child, format!("{prefix}/{index}"), out);
            }
        }
        _ => {}
    }
}

/// Builds a table and checks it has one well-formed row whose width matches the columns.
#[track_caller]
fn assert_well_formed(group: &str, kind: &str, object: &Value) {
    let table = build_table(&resource(group, "v1", kind), std::slice::from_ref(object), json!({}), IncludeObject::Metadata, now());
    let columns = table["columnDefinitions"].as_array().map_or(0, Vec::len);
    let cells = table["rows"][0]["cells"].as_array().map_or(usize::MAX, Vec::len);
    assert!(columns >= 2, "{group}/{kind} has too few columns");
    assert_eq!(cells, columns, "{group}/{kind} row width differs from its columns for {object}");
    assert_eq!(table["rows"][0]["object"]["kind"], json!("PartialObjectMetadata"));
}

#[test]
fn every_field_of_every_kind_replaced_by_every_type() {
    let mut checked = 0usize;
    for (group, kind, object) in fixtures::every_kind() {
        let mut paths = Vec::new();
        pointers(&object, String::new(), &mut paths);
        for path in paths {
            for replacement in replacements() {
                let mut mutated = object.clone();
                match mutated.pointer_mut(&path) {
                    Some(slot) => *slot = replacement,
                    None => continue,
                }
                assert_well_formed(group, kind, &mutated);
                checked += 1;
            }
        }
    }
    assert!(checked > 5_000, "only {checked} mutations ran");
}

#[test]
fn non_objects_print_as_empty_rows() {
    for (group, kind, _) in fixtures::every_kind() {
        for garbage in replacements() {
            assert_well_formed(group, kind, &garbage);
        }
    }
    // A deployment with a wrongly typed selector prints `<invalid>`, as kube does.
    let deployment = json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}}});
    let table = build_table(&resource("apps", "v1", "Deployment"), &[deployment], json!(null), IncludeObject::Object, now());
    assert_eq!(table["rows"][0]["cells"][7], json!("<invalid>"));
    assert_eq!(table["rows"][0]["cells"][1], json!("0/1"));
}

#[test]
fn custom_columns_survive_garbage() {
    let columns = [
        json!({"name": "Int", "type": "integer", "jsonPath": ".spec.n"}),
        json!({"name": "Num", "type": "number", "jsonPath": ".spec.n"}),
        json!({"name": "Bool", "type": "boolean", "jsonPath": ".spec.n"}),
        json!({"name": "Date", "type": "date", "jsonPath": ".spec.n"}),
        json!({"name": "Str", "type": "string", "jsonPath": ".spec.n"}),
        json!({"name": "Filter", "type": "string", "jsonPath": ".spec.n[?(@.type==\"Ready\")].status"}),
        json!({"name": "Index", "type": "string", "jsonPath": ".spec.n[-1]"}),
    ];
    let columns = custom_columns(&columns).unwrap_or_else(|error| panic!("columns should parse: {error}"));
    for garbage in replacements() {
        let object = json!({"metadata": {"name": "g"}, "spec": {"n": garbage}});
        for candidate in [object, garbage.clone()] {
            let table = super::super::custom::build_table(&columns, std::slice::from_ref(&candidate), json!({}), IncludeObject::Object, now());
            assert_eq!(table["rows"][0]["cells"].as_array().map(Vec::len), Some(8), "for {candidate}");
        }
    }
    let spec_n = |n: Value| {
        let table = super::super::custom::build_table(&columns, &[json!({"spec": {"n": n}})], json!({}), IncludeObject::None, now());
        table["rows"][0]["cells"].clone()
    };
    assert_eq!(spec_n(json!(2.9)), json!(["", 2, 2.9, null, null, "2.9", null, null]));
    assert_eq!(spec_n(json!("2025-13-45T99:00:00Z")), json!(["", null, null, null, "<invalid>", "2025-13-45T99:00:00Z", null, null]));
    assert_eq!(spec_n(json!([{"type": "Ready", "status": "True"}, 4])), json!(["", null, null, null, null, "[{\"status\":\"True\",\"type\":\"Ready\"},4]", "True", "4"]));
}

#[test]
fn invalid_printer_columns_are_reported() {
    for (column, fragment) in [
        (json!({"name": "A", "type": "string"}), "jsonPath is required"),
        (json!({"name": "A", "type": "string", "jsonPath": ".spec..x"}), "recursive descent"),
        (json!({"name": "A", "type": "string", "jsonPath": ".spec[?(@.a=="}), "invalid literal"),
        (json!({"name": "A", "type": "string", "jsonPath": ".spec[abc]"}), "invalid array index"),
        (json!("not an object"), "must be an object"),
    ] {
        match custom_columns(&[column]) {
            Err(error) => assert!(error.to_string().contains(fragment), "{error} lacks {fragment:?}"),
            Ok(columns) => panic!("expected an error containing {fragment:?}, got {columns:?}"),
        }
    }
}
