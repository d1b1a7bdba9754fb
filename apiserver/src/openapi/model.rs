//! The model behind every document: all definitions (OpenAPI 3.0 form) and the paths of each document.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::paths::{
    capitalize, discovery_path, discovery_tag, group_id, group_version_prefix, ResourcePaths,
};
use super::{extensions, refs, schemas, Form};
use crate::registry::ResourceInfo;

/// Definitions and paths, computed once and shared by the v2 and v3 documents.
#[derive(Debug)]
pub(crate) struct Model {
    /// All definitions in OpenAPI 3.0 form.
    pub(crate) definitions: Map<String, Value>,
    /// OpenAPI 3.0 `paths` of each document, keyed by document path (`api/v1`, `apis/apps`, `api`, ...).
    pub(crate) documents: BTreeMap<String, Map<String, Value>>,
}

impl Model {
    pub(crate) fn build(
        resources: &[ResourceInfo],
        extra_definitions: &Map<String, Value>,
    ) -> Model {
        let definitions = all_definitions(resources, extra_definitions, Form::V3);
        let builtin = builtin_kinds(resources, extra_definitions);
        Model {
            definitions,
            documents: document_paths(resources, &builtin),
        }
    }
}

/// Built-in definitions, the extra ones, kind and list schemas, extensions and GVKs, in `form`.
pub(crate) fn all_definitions(
    resources: &[ResourceInfo],
    extra: &Map<String, Value>,
    form: Form,
) -> Map<String, Value> {
    with_extensions(schemas::builtin_definitions(form).clone(), resources, extra, form)
}

/// `base` (the built-in definitions) with the extra definitions, kind and list schemas, extensions and GVKs.
pub(crate) fn with_extensions(
    mut definitions: Map<String, Value>,
    resources: &[ResourceInfo],
    extra: &Map<String, Value>,
    form: Form,
) -> Map<String, Value> {
    for (name, schema) in extra {
        let mut schema = schema.clone();
        refs::rewrite_prefix(&mut schema, Form::V3.ref_prefix(), form.ref_prefix());
        definitions.insert(name.clone(), schema);
    }
    for resource in resources {
        add_kind_definitions(&mut definitions, form, resource);
    }
    extensions::apply(&mut definitions, form);
    add_group_version_kinds(&mut definitions, resources);
    definitions
}

/// Definitions of resources served from k8s-openapi types: only these accept strategic merge patch.
fn builtin_kinds(resources: &[ResourceInfo], extra: &Map<String, Value>) -> BTreeSet<String> {
    let builtin: BTreeSet<&str> = schemas::builtin_names().collect();
    resources
        .iter()
        .map(definition_name)
        .filter(|name| builtin.contains(name.as_str()) && !extra.contains_key(name))
        .collect()
}

/// The definition name of a resource's kind: its own, or kube's CRD naming (`com.example.stable.v1.CronTab`).
pub(crate) fn definition_name(resource: &ResourceInfo) -> String {
    if let Some(definition) = &resource.definition {
        return definition.clone();
    }
    let reversed: Vec<&str> = resource.group.split('.').rev().collect();
    format!(
        "{}.{}.{}",
        reversed.join("."),
        resource.version,
        resource.kind
    )
}

/// Makes sure the kind and its list have schemas.
fn add_kind_definitions(definitions: &mut Map<String, Value>, form: Form, resource: &ResourceInfo) {
    let name = definition_name(resource);
    if !definitions.contains_key(&name) {
        definitions.insert(name.clone(), schemas::placeholder_schema(&resource.kind));
    }
    definitions
        .entry(format!("{name}List"))
        .or_insert_with(|| schemas::list_schema(&name, &resource.kind, form));
}

/// `x-kubernetes-group-version-kind` on every kind, its list, and the meta kinds every group version uses.
fn add_group_version_kinds(definitions: &mut Map<String, Value>, resources: &[ResourceInfo]) {
    let mut group_versions: BTreeSet<(&str, &str)> = BTreeSet::from([("", "v1")]);
    for r in resources {
        let name = definition_name(r);
        schemas::add_gvk(definitions, &name, &r.group, &r.version, &r.kind);
        schemas::add_gvk(
            definitions,
            &format!("{name}List"),
            &r.group,
            &r.version,
            &r.list_kind(),
        );
        group_versions.insert((&r.group, &r.version));
    }
    for (group, version) in group_versions {
        schemas::add_gvk(
            definitions,
            schemas::DELETE_OPTIONS,
            group,
            version,
            "DeleteOptions",
        );
        schemas::add_gvk(
            definitions,
            schemas::WATCH_EVENT,
            group,
            version,
            "WatchEvent",
        );
    }
    schemas::add_gvk(definitions, schemas::STATUS, "", "v1", "Status");
    schemas::add_gvk(definitions, schemas::SCALE, "autoscaling", "v1", "Scale");
}

/// The OpenAPI 3.0 `paths` of each document, keyed by document path.
fn document_paths(
    resources: &[ResourceInfo],
    builtin: &BTreeSet<String>,
) -> BTreeMap<String, Map<String, Value>> {
    let mut documents: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    let mut groups = BTreeSet::new();
    for resource in resources {
        let definition = definition_name(resource);
        let key = group_version_prefix(&resource.group, &resource.version)
            .trim_start_matches('/')
            .to_string();
        let paths = documents.entry(key).or_default();
        let writer = ResourcePaths {
            resource,
            definition: &definition,
            strategic_merge_patch: builtin.contains(&definition),
        };
        writer.write(paths);
        add_resource_list_path(paths, &resource.group, &resource.version);
        if !resource.group.is_empty() {
            groups.insert(resource.group.clone());
        }
    }
    for group in &groups {
        let operation_id = format!("get{}APIGroup", group_id(group));
        let path = discovery_path(
            operation_id,
            &discovery_tag(group, ""),
            "get information of a group",
            schemas::API_GROUP,
        );
        documents
            .entry(format!("apis/{group}"))
            .or_default()
            .insert(format!("/apis/{group}/"), path);
    }
    let core = discovery_path(
        "getCoreAPIVersions".into(),
        "core",
        "get available API versions",
        schemas::API_VERSIONS,
    );
    documents
        .entry("api".into())
        .or_default()
        .insert("/api/".into(), core);
    let apis = discovery_path(
        "getAPIVersions".into(),
        "apis",
        "get available API versions",
        schemas::API_GROUP_LIST,
    );
    documents
        .entry("apis".into())
        .or_default()
        .insert("/apis/".into(), apis);
    documents
}

/// `/apis/<group>/<version>/`: the group version's APIResourceList.
fn add_resource_list_path(paths: &mut Map<String, Value>, group: &str, version: &str) {
    let path = format!("{}/", group_version_prefix(group, version));
    if !paths.contains_key(&path) {
        let operation_id = format!("get{}{}APIResources", group_id(group), capitalize(version));
        let tag = discovery_tag(group, version);
        paths.insert(
            path,
            discovery_path(
                operation_id,
                &tag,
                "get available resources",
                schemas::API_RESOURCE_LIST,
            ),
        );
    }
}
