//! Tests of the generated OpenAPI documents against what kubectl and strategic merge patch rely on.

use std::sync::OnceLock;

use serde_json::{json, Map, Value};

use super::refs::{for_each_ref, resolve};
use super::*;
use crate::registry::builtin::builtin_resources;

/// Built once: generation is deterministic, and several tests read the same documents.
fn built() -> &'static OpenApi {
    static OPENAPI: OnceLock<OpenApi> = OnceLock::new();
    OPENAPI.get_or_init(|| OpenApi::build(&builtin_resources()))
}

fn v3(path: &str) -> Value {
    let (body, _) = built()
        .v3_document(path)
        .unwrap_or_else(|| panic!("no v3 document {path}"));
    serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{path} is not JSON: {e}"))
}

/// Follows `$ref` and single-element `allOf` until a schema with content is reached.
fn follow<'a>(document: &'a Value, mut schema: &'a Value) -> &'a Value {
    loop {
        let reference = schema.get("$ref").or_else(|| {
            schema
                .get("allOf")
                .and_then(|all| all.get(0))
                .and_then(|first| first.get("$ref"))
        });
        match reference.and_then(Value::as_str) {
            Some(reference) => {
                schema =
                    resolve(document, reference).unwrap_or_else(|| panic!("unresolved {reference}"))
            }
            None => return schema,
        }
    }
}

/// Walks `fields` from a definition through properties, array items and refs.
fn field<'a>(document: &'a Value, definition: &str, fields: &[&str]) -> &'a Value {
    let mut schema = follow(document, &document["components"]["schemas"][definition]);
    for name in fields {
        let next = &schema["properties"][*name];
        assert!(!next.is_null(), "{definition}: no field {name}");
        schema = next;
        if schema.get("type") == Some(&json!("array")) && fields.last() != Some(name) {
            schema = &schema["items"];
        }
        if fields.last() != Some(name) {
            schema = follow(document, schema);
        }
    }
    schema
}

/// The operation of `method` on `path`.
fn operation<'a>(document: &'a Value, path: &str, method: &str) -> &'a Value {
    let op = &document["paths"][path][method];
    assert!(op.is_object(), "no {method} {path}");
    op
}

#[test]
fn v3_index_lists_group_versions_with_hash_urls() {
    let index = built().v3_index();
    for path in [
        "api",
        "api/v1",
        "apis",
        "apis/apps",
        "apis/apps/v1",
        "apis/rbac.authorization.k8s.io/v1",
    ] {
        let url = index["paths"][path]["serverRelativeURL"]
            .as_str()
            .unwrap_or_else(|| panic!("{path} missing"));
        let (_, hash) = built()
            .v3_document(path)
            .unwrap_or_else(|| panic!("{path} not served"));
        assert_eq!(url, format!("/openapi/v3/{path}?hash={hash}"));
    }
    assert!(built().v3_document("apis/nope/v1").is_none());
}

#[test]
fn deployment_has_gvk_and_container_merge_key() {
    let apps = v3("apis/apps/v1");
    let deployment = &apps["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deployment["x-kubernetes-group-version-kind"],
        json!([{ "group": "apps", "kind": "Deployment", "version": "v1" }])
    );
    let list = &apps["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentList"];
    assert_eq!(
        list["x-kubernetes-group-version-kind"][0]["kind"],
        "DeploymentList"
    );
    let containers = field(
        &apps,
        "io.k8s.api.apps.v1.Deployment",
        &["spec", "template", "spec", "containers"],
    );
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
    let ports = field(
        &apps,
        "io.k8s.api.apps.v1.Deployment",
        &["spec", "template", "spec", "containers", "ports"],
    );
    assert_eq!(ports["x-kubernetes-patch-merge-key"], "containerPort");
    let strategy = field(
        &apps,
        "io.k8s.api.apps.v1.Deployment",
        &["spec", "strategy"],
    );
    assert_eq!(strategy["x-kubernetes-patch-strategy"], "retainKeys");
    let tolerations = field(&apps, "io.k8s.api.core.v1.PodSpec", &["tolerations"]);
    assert!(tolerations.get("x-kubernetes-patch-strategy").is_none());
    assert_eq!(tolerations["x-kubernetes-list-type"], "atomic");
}

#[test]
fn patch_operation_lets_kubectl_find_field_validation() {
    let apps = v3("apis/apps/v1");
    let patch = operation(
        &apps,
        "/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
        "patch",
    );
    assert_eq!(patch["operationId"], "patchAppsV1NamespacedDeployment");
    assert_eq!(patch["x-kubernetes-action"], "patch");
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({ "group": "apps", "kind": "Deployment", "version": "v1" })
    );
    let names: Vec<&str> = patch["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["dryRun", "fieldManager", "fieldValidation", "force"]
    );
    let content = patch["requestBody"]["content"]
        .as_object()
        .map(|c| c.keys().cloned().collect::<Vec<_>>());
    assert_eq!(
        content.unwrap_or_default(),
        [
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
        ]
    );
    let scale = operation(
        &apps,
        "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale",
        "patch",
    );
    assert_eq!(scale["operationId"], "patchAppsV1NamespacedDeploymentScale");
    assert_eq!(scale["x-kubernetes-group-version-kind"]["kind"], "Scale");
}

#[test]
fn core_paths_have_kube_operation_ids() {
    let core = v3("api/v1");
    let cases = [
        (
            "/api/v1/namespaces/{namespace}/configmaps/{name}",
            "get",
            "readCoreV1NamespacedConfigMap",
        ),
        (
            "/api/v1/namespaces/{namespace}/configmaps",
            "get",
            "listCoreV1NamespacedConfigMap",
        ),
        (
            "/api/v1/namespaces/{namespace}/configmaps",
            "delete",
            "deleteCoreV1CollectionNamespacedConfigMap",
        ),
        (
            "/api/v1/configmaps",
            "get",
            "listCoreV1ConfigMapForAllNamespaces",
        ),
        ("/api/v1/namespaces/{name}", "put", "replaceCoreV1Namespace"),
        (
            "/api/v1/namespaces/{name}/status",
            "patch",
            "patchCoreV1NamespaceStatus",
        ),
        ("/api/v1/namespaces", "post", "createCoreV1Namespace"),
        (
            "/api/v1/watch/namespaces/{namespace}/pods",
            "get",
            "watchCoreV1NamespacedPodList",
        ),
        (
            "/api/v1/watch/pods",
            "get",
            "watchCoreV1PodListForAllNamespaces",
        ),
        ("/api/v1/", "get", "getCoreV1APIResources"),
    ];
    for (path, method, id) in cases {
        assert_eq!(
            operation(&core, path, method)["operationId"],
            id,
            "{method} {path}"
        );
    }
    assert!(
        core["paths"]["/api/v1/namespaces"].get("delete").is_none(),
        "namespaces have no deletecollection"
    );
    let rbac = v3("apis/rbac.authorization.k8s.io/v1");
    assert_eq!(
        operation(
            &rbac,
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}",
            "get"
        )["operationId"],
        "readRbacAuthorizationV1ClusterRole"
    );
}

#[test]
fn extension_table_rows_name_existing_fields() {
    let definitions = built().definitions();
    for (definition, field) in super::extensions::table_keys() {
        let property = &definitions
            .get(&definition)
            .unwrap_or_else(|| panic!("{definition} missing"))["properties"][field];
        assert!(property.is_object(), "{definition}.{field} missing");
    }
    let owner_references = &definitions["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
        ["properties"]["ownerReferences"];
    assert_eq!(owner_references["x-kubernetes-patch-merge-key"], "uid");
    let finalizers =
        &definitions["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]["finalizers"];
    assert_eq!(finalizers["x-kubernetes-patch-strategy"], "merge");
    let service_ports = &definitions["io.k8s.api.core.v1.ServiceSpec"]["properties"]["ports"];
    assert_eq!(service_ports["x-kubernetes-patch-merge-key"], "port");
}

#[test]
fn v2_has_definitions_and_paths() {
    let v2: Value = serde_json::from_slice(&built().v2_json()).unwrap_or_default();
    assert_eq!(v2["swagger"], "2.0");
    let config_map = &v2["definitions"]["io.k8s.api.core.v1.ConfigMap"];
    assert_eq!(
        config_map["x-kubernetes-group-version-kind"],
        json!([{ "group": "", "kind": "ConfigMap", "version": "v1" }])
    );
    let patch = &v2["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
    assert!(patch["consumes"]
        .as_array()
        .is_some_and(|c| c.contains(&json!("application/strategic-merge-patch+json"))));
    let parameters = patch["parameters"].as_array().cloned().unwrap_or_default();
    assert!(parameters
        .iter()
        .any(|p| p["name"] == "fieldValidation" && p["type"] == "string"));
    assert!(parameters.iter().any(|p| p["in"] == "body"
        && p["schema"]["$ref"] == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"));
    assert_every_ref_resolves(&v2, "v2");
}

#[test]
fn hashes_are_stable_across_builds() {
    assert_eq!(
        super::schemas::generate(Form::V3),
        super::schemas::generate(Form::V3)
    );
    let again = OpenApi::build(&builtin_resources());
    assert_eq!(again.v3_index(), built().v3_index());
    assert_eq!(again.v2_json(), built().v2_json());
}

fn assert_every_ref_resolves(document: &Value, name: &str) {
    let mut unresolved = Vec::new();
    let mut count = 0;
    for_each_ref(document, &mut |reference| {
        count += 1;
        if resolve(document, reference).is_none() {
            unresolved.push(reference.to_string());
        }
    });
    assert!(count > 0, "{name} has no refs at all");
    assert!(unresolved.is_empty(), "{name}: unresolved {unresolved:?}");
}

#[test]
fn every_ref_in_every_v3_document_resolves_inside_it() {
    let index = built().v3_index();
    let paths = index["paths"].as_object().cloned().unwrap_or_default();
    assert!(paths.len() > 20);
    for path in paths.keys() {
        assert_every_ref_resolves(&v3(path), path);
    }
}

#[test]
fn crd_resources_get_placeholder_or_supplied_schemas_without_strategic_merge_patch() {
    let mut resources = builtin_resources();
    resources.push(ResourceInfo {
        group: "stable.example.com".into(),
        version: "v1".into(),
        kind: "CronTab".into(),
        plural: "crontabs".into(),
        singular: "crontab".into(),
        short_names: vec!["ct".into()],
        categories: vec![],
        namespaced: true,
        subresources: vec![],
        verbs: ["get", "list", "patch"].map(String::from).to_vec(),
        definition: None,
        system_only: false,
            custom: None,
    });
    let mut extra = Map::new();
    extra.insert("com.example.stable.v1.CronTab".into(), json!({
        "type": "object",
        "properties": { "metadata": { "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" } },
    }));
    let openapi = OpenApi::build_with(&resources, extra);
    let (body, _) = openapi
        .v3_document("apis/stable.example.com/v1")
        .unwrap_or_else(|| panic!("no CRD document"));
    let document: Value = serde_json::from_slice(&body).unwrap_or_default();
    assert_every_ref_resolves(&document, "crd");
    let patch = operation(
        &document,
        "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}",
        "patch",
    );
    assert_eq!(
        patch["operationId"],
        "patchStableExampleComV1NamespacedCronTab"
    );
    assert!(patch["requestBody"]["content"]
        .get("application/strategic-merge-patch+json")
        .is_none());
    let schema = &document["components"]["schemas"]["com.example.stable.v1.CronTab"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"][0]["kind"],
        "CronTab"
    );
    assert!(
        document["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs"]
            .get("post")
            .is_none()
    );
}

#[test]
fn content_hash_is_fnv1a_128() {
    // Reference values of FNV-1a 128: the offset basis for empty input, and "a".
    assert_eq!(content_hash(b""), "6C62272E07BB014262B821756295C58D");
    assert_eq!(content_hash(b"a"), "D228CB696F1A8CAF78912B704E4A8964");
}
