//! OpenAPI v2 and v3 documents, generated from the resource table, k8s-openapi's schemas and our extension table.
//!
//! Clients depend on these documents: kubectl finds server-side field validation through the PATCH
//! operation's `fieldValidation` parameter in `/openapi/v3`, client-side apply computes strategic merge
//! patches from the `x-kubernetes-patch-*` extensions, and `kubectl explain` prints the schemas.
//! Nothing here is copied from upstream spec files: schemas come from k8s-openapi's `schemars` feature,
//! paths from `paths.rs`, extensions from `extensions.rs`.

mod extensions;
mod parameters;
mod paths;
mod refs;
mod schemas;
mod swagger;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use serde_json::{json, Map, Value};

use crate::registry::ResourceInfo;
use paths::{capitalize, discovery_path, discovery_tag, group_id, group_version_prefix, ResourcePaths};

/// The Kubernetes version whose API the documents describe (k8s-openapi feature `v1_33`).
const KUBERNETES_VERSION: &str = "v1.33.0";

/// Which document form a schema or reference is written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// Swagger 2.0: `#/definitions/`, `description` beside `$ref`.
    V2,
    /// OpenAPI 3.0: `#/components/schemas/`, `$ref` siblings moved into `allOf`.
    V3,
}

impl Form {
    pub(crate) fn ref_prefix(self) -> &'static str {
        match self {
            Form::V2 => "#/definitions/",
            Form::V3 => "#/components/schemas/",
        }
    }
}

/// One served OpenAPI 3.0 document and the hash clients cache it under (`?hash=`, `ETag`).
#[derive(Clone, Debug)]
struct Document {
    body: Bytes,
    hash: String,
}

/// Every OpenAPI document the server serves, built once from the resource table.
#[derive(Debug)]
pub struct OpenApi {
    /// All definitions in OpenAPI 3.0 form, for strategic merge patch and validation.
    definitions: Map<String, Value>,
    v2: Bytes,
    /// Keyed by the `/openapi/v3/` path: `api`, `api/v1`, `apis`, `apis/apps`, `apis/apps/v1`, ...
    documents: BTreeMap<String, Document>,
}

impl OpenApi {
    /// Documents for `resources`, whose definitions are all built-in (k8s-openapi) types.
    pub fn build(resources: &[ResourceInfo]) -> OpenApi {
        OpenApi::build_with(resources, Map::new())
    }

    /// Documents for `resources`, with `extra_definitions` (OpenAPI 3.0 form, refs to
    /// `#/components/schemas/`), e.g. CRD schemas keyed by their definition names.
    /// A resource whose definition is nowhere gets an open object schema so its GVK is still published.
    pub fn build_with(resources: &[ResourceInfo], extra_definitions: Map<String, Value>) -> OpenApi {
        let mut v3 = schemas::builtin_definitions(Form::V3);
        let mut v2 = schemas::builtin_definitions(Form::V2);
        let builtin: BTreeSet<String> = v3.keys().cloned().collect();
        for (name, mut schema) in extra_definitions {
            v3.insert(name.clone(), schema.clone());
            refs::rewrite_prefix(&mut schema, Form::V3.ref_prefix(), Form::V2.ref_prefix());
            v2.insert(name, schema);
        }
        for resource in resources {
            add_kind_definitions(&mut v3, Form::V3, resource);
            add_kind_definitions(&mut v2, Form::V2, resource);
        }
        for (definitions, form) in [(&mut v3, Form::V3), (&mut v2, Form::V2)] {
            extensions::apply(definitions, form);
            add_group_version_kinds(definitions, resources);
        }
        let group_versions = group_version_paths(resources, &builtin);
        let documents = build_documents(&group_versions, &v3);
        let v2 = swagger_document(&group_versions, v2);
        OpenApi { definitions: v3, v2, documents }
    }

    /// The Swagger 2.0 document served at `/openapi/v2`.
    pub fn v2_json(&self) -> Bytes {
        self.v2.clone()
    }

    /// The `/openapi/v3` index: every document path with its hash-pinned URL.
    pub fn v3_index(&self) -> Value {
        let paths: Map<String, Value> = self
            .documents
            .iter()
            .map(|(path, doc)| (path.clone(), json!({ "serverRelativeURL": format!("/openapi/v3/{path}?hash={}", doc.hash) })))
            .collect();
        json!({ "paths": paths })
    }

    /// The OpenAPI 3.0 document at `/openapi/v3/<path>` (`api/v1`, `apis/apps/v1`, ...) and its hash.
    pub fn v3_document(&self, path: &str) -> Option<(Bytes, String)> {
        let doc = self.documents.get(path.trim_matches('/'))?;
        Some((doc.body.clone(), doc.hash.clone()))
    }

    /// Every definition in OpenAPI 3.0 form (refs `#/components/schemas/<name>`).
    pub fn definitions(&self) -> &Map<String, Value> {
        &self.definitions
    }
}

/// The definition name of a resource's kind: its own, or kube's CRD naming (`com.example.stable.v1.CronTab`).
fn definition_name(resource: &ResourceInfo) -> String {
    if let Some(definition) = &resource.definition {
        return definition.clone();
    }
    let reversed: Vec<&str> = resource.group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), resource.version, resource.kind)
}

/// Makes sure the kind and its list have schemas.
fn add_kind_definitions(definitions: &mut Map<String, Value>, form: Form, resource: &ResourceInfo) {
    let name = definition_name(resource);
    if !definitions.contains_key(&name) {
        definitions.insert(name.clone(), schemas::placeholder_schema(&resource.kind));
    }
    definitions.entry(format!("{name}List")).or_insert_with(|| schemas::list_schema(&name, &resource.kind, form));
}

/// `x-kubernetes-group-version-kind` on every kind, its list, and the meta kinds every group version uses.
fn add_group_version_kinds(definitions: &mut Map<String, Value>, resources: &[ResourceInfo]) {
    let mut group_versions: BTreeSet<(&str, &str)> = BTreeSet::from([("", "v1")]);
    for r in resources {
        let name = definition_name(r);
        schemas::add_gvk(definitions, &name, &r.group, &r.version, &r.kind);
        schemas::add_gvk(definitions, &format!("{name}List"), &r.group, &r.version, &r.list_kind());
        group_versions.insert((&r.group, &r.version));
    }
    for (group, version) in group_versions {
        schemas::add_gvk(definitions, schemas::DELETE_OPTIONS, group, version, "DeleteOptions");
        schemas::add_gvk(definitions, schemas::WATCH_EVENT, group, version, "WatchEvent");
    }
    schemas::add_gvk(definitions, schemas::STATUS, "", "v1", "Status");
    schemas::add_gvk(definitions, schemas::SCALE, "autoscaling", "v1", "Scale");
}

/// The OpenAPI 3.0 `paths` of each document, keyed by document path (`api/v1`, `apis/apps`, `api`, ...).
fn group_version_paths(resources: &[ResourceInfo], builtin: &BTreeSet<String>) -> BTreeMap<String, Map<String, Value>> {
    let mut documents: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    let mut groups = BTreeSet::new();
    for resource in resources {
        let definition = definition_name(resource);
        let key = group_version_prefix(&resource.group, &resource.version).trim_start_matches('/').to_string();
        let paths = documents.entry(key).or_default();
        let writer = ResourcePaths { resource, definition: &definition, strategic_merge_patch: builtin.contains(&definition) };
        writer.write(paths);
        add_resource_list_path(paths, &resource.group, &resource.version);
        if !resource.group.is_empty() {
            groups.insert(resource.group.clone());
        }
    }
    for group in &groups {
        let operation_id = format!("get{}APIGroup", group_id(group));
        let path = discovery_path(operation_id, &discovery_tag(group, ""), "get information of a group", schemas::API_GROUP);
        documents.entry(format!("apis/{group}")).or_default().insert(format!("/apis/{group}/"), path);
    }
    let core = discovery_path("getCoreAPIVersions".into(), "core", "get available API versions", schemas::API_VERSIONS);
    documents.entry("api".into()).or_default().insert("/api/".into(), core);
    let apis = discovery_path("getAPIVersions".into(), "apis", "get available API versions", schemas::API_GROUP_LIST);
    documents.entry("apis".into()).or_default().insert("/apis/".into(), apis);
    documents
}

/// `/apis/<group>/<version>/`: the group version's APIResourceList.
fn add_resource_list_path(paths: &mut Map<String, Value>, group: &str, version: &str) {
    let path = format!("{}/", group_version_prefix(group, version));
    if !paths.contains_key(&path) {
        let operation_id = format!("get{}{}APIResources", group_id(group), capitalize(version));
        let tag = discovery_tag(group, version);
        paths.insert(path, discovery_path(operation_id, &tag, "get available resources", schemas::API_RESOURCE_LIST));
    }
}

/// Serializes each document with exactly the definitions its paths reach.
fn build_documents(group_versions: &BTreeMap<String, Map<String, Value>>, v3: &Map<String, Value>) -> BTreeMap<String, Document> {
    let mut documents = BTreeMap::new();
    for (key, paths) in group_versions {
        let paths = Value::Object(paths.clone());
        let reachable = refs::reachable(&paths, v3, Form::V3.ref_prefix());
        let schemas: Map<String, Value> =
            reachable.iter().filter_map(|name| Some((name.clone(), v3.get(name)?.clone()))).collect();
        let document = json!({
            "openapi": "3.0.0",
            "info": { "title": "Kubernetes", "version": KUBERNETES_VERSION },
            "paths": paths,
            "components": { "schemas": schemas, "securitySchemes": security_schemes() },
            "security": [{ "BearerToken": [] }],
        });
        documents.insert(key.clone(), encode_document(&document));
    }
    documents
}

fn encode_document(document: &Value) -> Document {
    let body = Bytes::from(serde_json::to_vec(document).unwrap_or_default());
    let hash = content_hash(&body);
    Document { body, hash }
}

/// The Swagger 2.0 document: every path of every group version and every definition.
fn swagger_document(group_versions: &BTreeMap<String, Map<String, Value>>, definitions: Map<String, Value>) -> Bytes {
    let paths: Map<String, Value> = group_versions
        .values()
        .flat_map(|paths| paths.iter())
        .map(|(path, item)| (path.clone(), swagger::path_item_to_v2(item)))
        .collect();
    let document = json!({
        "swagger": "2.0",
        "info": { "title": "Kubernetes", "version": KUBERNETES_VERSION },
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": security_schemes(),
        "security": [{ "BearerToken": [] }],
    });
    Bytes::from(serde_json::to_vec(&document).unwrap_or_default())
}

fn security_schemes() -> Value {
    json!({ "BearerToken": { "type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header" } })
}

/// FNV-1a (128 bit) of a document, as 32 upper-case hex digits: stable across builds and Rust releases.
fn content_hash(bytes: &[u8]) -> String {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013b;
    let hash = bytes.iter().fold(OFFSET, |hash, byte| (hash ^ u128::from(*byte)).wrapping_mul(PRIME));
    format!("{hash:032X}")
}
