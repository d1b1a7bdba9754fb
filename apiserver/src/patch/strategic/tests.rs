//! Table tests for strategic merge patch: one row per behaviour, all run through one `check` helper.
//!
//! Rows are (name, schema root, original, patch, expected document or error variant). The
//! `kubectl_*` rows reproduce the patches kubectl sends for label, scale, rollout restart and
//! client-side apply; the `MergeItem` rows pin kube's ordering and directive rules.

mod fixture;
mod rows;

use serde_json::{json, Value};

use super::{
    apply_strategic_merge_patch, DefinitionsSchema, PatchErrorClass, PatchSchema, PatchStrategy,
    StrategicPatchError,
};

/// Which definition a row starts at.
#[derive(Debug, Clone, Copy)]
enum Root {
    Deployment,
    MergeItem,
}

impl Root {
    fn definition(self) -> &'static str {
        match self {
            Root::Deployment => "io.k8s.api.apps.v1.Deployment",
            Root::MergeItem => "test.MergeItem",
        }
    }
}

/// What a row expects.
enum Expect {
    Doc(Value),
    Error(&'static str),
}

struct Case {
    name: &'static str,
    root: Root,
    original: Value,
    patch: Value,
    expect: Expect,
}

fn variant(error: &StrategicPatchError) -> &'static str {
    match error {
        StrategicPatchError::PatchNotAnObject { .. } => "PatchNotAnObject",
        StrategicPatchError::OriginalNotAnObject { .. } => "OriginalNotAnObject",
        StrategicPatchError::UnknownPatchDirective { .. } => "UnknownPatchDirective",
        StrategicPatchError::MissingMergeKey { .. } => "MissingMergeKey",
        StrategicPatchError::NoMergeKeyInSchema { .. } => "NoMergeKeyInSchema",
        StrategicPatchError::InvalidDirective { .. } => "InvalidDirective",
        StrategicPatchError::UnsupportedListElements { .. } => "UnsupportedListElements",
        StrategicPatchError::Schema { .. } => "Schema",
    }
}

/// Fails if any `$`-directive key or `$patch` item survives in a result.
fn directive_leaks(value: &Value, path: &str) -> Vec<String> {
    match value {
        Value::Object(map) => map
            .iter()
            .flat_map(|(k, v)| {
                let here = format!("{path}.{k}");
                let mut found = directive_leaks(v, &here);
                if k == "$patch"
                    || k == "$retainKeys"
                    || k.starts_with("$setElementOrder")
                    || k.starts_with("$deleteFromPrimitiveList")
                {
                    found.push(here);
                }
                found
            })
            .collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .flat_map(|(i, v)| directive_leaks(v, &format!("{path}[{i}]")))
            .collect(),
        _ => Vec::new(),
    }
}

/// Runs one row; returns a description of the mismatch, if any.
fn check(case: &Case, definitions: &serde_json::Map<String, Value>) -> Option<String> {
    let schema = match DefinitionsSchema::new(definitions, case.root.definition()) {
        Ok(schema) => schema,
        Err(e) => return Some(format!("{}: fixture error {e}", case.name)),
    };
    let got = apply_strategic_merge_patch(&case.original, &case.patch, &schema);
    match (&case.expect, got) {
        (Expect::Doc(want), Ok(got)) if *want == got => {
            let leaks = directive_leaks(&got, "");
            (!leaks.is_empty()).then(|| format!("{}: directives leaked at {leaks:?}", case.name))
        }
        (Expect::Error(want), Err(got)) if *want == variant(&got) => None,
        (Expect::Doc(want), got) => Some(format!("{}:\n  want {want}\n  got  {got:?}", case.name)),
        (Expect::Error(want), got) => Some(format!(
            "{}:\n  want error {want}\n  got  {got:?}",
            case.name
        )),
    }
}

#[test]
fn table() {
    let definitions = fixture::definitions();
    let cases = rows::rows();
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| check(case, &definitions))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn row_names_are_unique() {
    let cases = rows::rows();
    let mut names: Vec<&str> = cases.iter().map(|c| c.name).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len(), "duplicate row names");
}

#[test]
fn error_paths_name_the_offending_item() {
    let definitions = fixture::definitions();
    let schema =
        DefinitionsSchema::new(&definitions, "io.k8s.api.apps.v1.Deployment").expect("fixture");
    let original = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "env": [{"name": "X"}]}]}}}});
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "env": [{"name": "Y"}, {"value": "v"}]}]}}}});
    let error =
        apply_strategic_merge_patch(&original, &patch, &schema).expect_err("missing merge key");
    assert_eq!(error.to_string(), "spec.template.spec.containers[0].env[1]: list item does not contain its merge key \"name\"");
    assert_eq!(error.class(), PatchErrorClass::Unprocessable);
}

#[test]
fn error_classes_separate_client_and_server_faults() {
    let definitions = fixture::definitions();
    let schema = DefinitionsSchema::new(&definitions, "test.MergeItem").expect("fixture");
    let bad_directive =
        apply_strategic_merge_patch(&json!({}), &json!({"$patch": "nope"}), &schema)
            .expect_err("bad $patch");
    assert_eq!(bad_directive.class(), PatchErrorClass::BadRequest);
    let broken = apply_strategic_merge_patch(
        &json!({"broken": {"a": 1}}),
        &json!({"broken": {"b": 2}}),
        &schema,
    )
    .expect_err("dangling $ref");
    assert_eq!(broken.class(), PatchErrorClass::Internal);
    assert!(
        broken
            .to_string()
            .starts_with("broken: invalid patch schema"),
        "{broken}"
    );
}

#[test]
fn definitions_schema_reads_patch_extensions_through_refs() {
    let definitions = fixture::definitions();
    let pod_spec =
        DefinitionsSchema::new(&definitions, "io.k8s.api.core.v1.PodSpec").expect("fixture");
    let volumes = pod_spec
        .field("volumes")
        .expect("lookup")
        .expect("known field");
    assert!(volumes.is_list);
    assert_eq!(volumes.meta.strategy, PatchStrategy::Merge);
    assert!(volumes.meta.retain_keys);
    assert_eq!(volumes.meta.merge_key.as_deref(), Some("name"));
    let empty_dir = volumes
        .child
        .field("emptyDir")
        .expect("lookup")
        .expect("item schema followed allOf/$ref");
    assert!(!empty_dir.is_list);
    let tolerations = pod_spec
        .field("tolerations")
        .expect("lookup")
        .expect("known field");
    assert_eq!(tolerations.meta.strategy, PatchStrategy::Default);
    assert!(
        tolerations.child.field("effect").expect("lookup").is_some(),
        "#/definitions/ ref followed"
    );
    let selector = pod_spec
        .field("nodeSelector")
        .expect("lookup")
        .expect("known field");
    assert!(
        selector.child.field("any-key").expect("lookup").is_some(),
        "additionalProperties followed"
    );
    assert!(pod_spec.field("noSuchField").expect("lookup").is_none());
}

#[test]
fn definitions_schema_rejects_unknown_roots_and_strategies() {
    let definitions = fixture::definitions();
    assert!(DefinitionsSchema::new(&definitions, "io.k8s.api.core.v1.Missing").is_err());
    assert_eq!(
        super::schema::parse_strategy("merge,retainKeys"),
        Ok((PatchStrategy::Merge, true))
    );
    assert_eq!(
        super::schema::parse_strategy("retainKeys"),
        Ok((PatchStrategy::Default, true))
    );
    assert_eq!(
        super::schema::parse_strategy("replace"),
        Ok((PatchStrategy::Replace, false))
    );
    assert!(super::schema::parse_strategy("merge,replace").is_err());
    assert!(super::schema::parse_strategy("merge,retainKeys,merge").is_err());
    assert!(super::schema::parse_strategy("sideways").is_err());
}

#[test]
fn inputs_are_not_modified() {
    let definitions = fixture::definitions();
    let schema = DefinitionsSchema::new(&definitions, "test.MergeItem").expect("fixture");
    let original = json!({"mergingList": [{"name": "a", "value": "1"}]});
    let patch = json!({"mergingList": [{"name": "a", "$patch": "delete"}]});
    let (original_before, patch_before) = (original.clone(), patch.clone());
    let result = apply_strategic_merge_patch(&original, &patch, &schema).expect("valid patch");
    assert_eq!(result, json!({"mergingList": []}));
    assert_eq!((original, patch), (original_before, patch_before));
}

#[test]
fn check_reports_wrong_documents_and_wrong_errors() {
    let definitions = fixture::definitions();
    let wrong_doc = Case {
        name: "wrong doc",
        root: Root::MergeItem,
        original: json!({"name": "a"}),
        patch: json!({"name": "b"}),
        expect: Expect::Doc(json!({"name": "a"})),
    };
    let wrong_error = Case {
        name: "wrong error",
        root: Root::MergeItem,
        original: json!({}),
        patch: json!({"$patch": "x"}),
        expect: Expect::Error("MissingMergeKey"),
    };
    assert!(check(&wrong_doc, &definitions).is_some());
    assert!(check(&wrong_error, &definitions).is_some());
    assert_eq!(
        directive_leaks(&json!({"a": [{"$patch": "delete"}]}), ""),
        vec![".a[0].$patch".to_owned()]
    );
}
