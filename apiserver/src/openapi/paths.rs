//! The `paths` of a resource in kube-apiserver's shapes, written once in OpenAPI 3.0 form.
//!
//! Operation ids, `x-kubernetes-action` and `x-kubernetes-group-version-kind` follow kube-apiserver
//! (`readCoreV1NamespacedConfigMap`, `deleteAppsV1CollectionNamespacedDeployment`), because kubectl finds
//! the PATCH operation of a kind by its GVK extension and then looks for the `fieldValidation` parameter.

use serde_json::{json, Map, Value};

use super::parameters::{parameter, path_parameter};
use super::schemas::{DELETE_OPTIONS, PATCH, SCALE, STATUS, WATCH_EVENT};
use crate::registry::{ResourceInfo, Subresource};

const V3_PREFIX: &str = "#/components/schemas/";

/// Media types of ordinary responses.
const RESPONSE_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];
/// Media types of list responses, which may also stream.
const LIST_RESPONSE_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];
const WATCH_RESPONSE_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];

/// Query parameters per operation kind, in kube-apiserver's (alphabetical) order.
const LIST_PARAMS: &[&str] = &[
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];
const WRITE_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation"];
const PATCH_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "force"];
const DELETE_PARAMS: &[&str] = &[
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
];
const DELETE_COLLECTION_PARAMS: &[&str] = &[
    "continue",
    "dryRun",
    "fieldSelector",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "labelSelector",
    "limit",
    "orphanDependents",
    "propagationPolicy",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
];

/// `/api/v1` or `/apis/<group>/<version>`.
pub(crate) fn group_version_prefix(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// `Core`, `Apps`, `RbacAuthorization`, `StableExampleCom`: the group as kube-apiserver spells it in operation ids.
pub(crate) fn group_id(group: &str) -> String {
    if group.is_empty() {
        return "Core".to_string();
    }
    let trimmed = group.strip_suffix(".k8s.io").unwrap_or(group);
    trimmed.split(['.', '-']).map(capitalize).collect()
}

/// `core_v1`, `apps_v1`, `rbacAuthorization_v1`: the operation tag.
fn tag(group: &str, version: &str) -> String {
    let mut id = group_id(group);
    if let Some(first) = id.get(..1) {
        id = format!(
            "{}{}",
            first.to_ascii_lowercase(),
            id.get(1..).unwrap_or("")
        );
    }
    format!("{id}_{version}")
}

pub(crate) fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn schema_ref(definition: &str) -> Value {
    json!({ "$ref": format!("{V3_PREFIX}{definition}") })
}

/// What one resource needs to write its operations.
pub(crate) struct ResourcePaths<'a> {
    pub(crate) resource: &'a ResourceInfo,
    /// The definition name of the kind; its list is this plus `List`.
    pub(crate) definition: &'a str,
    /// Whether strategic merge patch is offered (built-in kinds only; kube answers 415 for CRDs).
    pub(crate) strategic_merge_patch: bool,
}

/// One operation being assembled.
struct Operation<'a> {
    verb: &'a str,
    action: &'a str,
    /// The operation id after `<verb><Group><Version>`, e.g. `NamespacedConfigMapStatus`.
    subject: String,
    description: String,
    parameters: &'a [&'a str],
    body: Body<'a>,
    responses: &'a [&'a str],
    response_definition: &'a str,
    response_types: &'a [&'a str],
    gvk: Value,
}

enum Body<'a> {
    None,
    Object(&'a str),
    Patch,
    DeleteOptions,
}

impl ResourcePaths<'_> {
    /// Adds every path of the resource to `paths`.
    pub(crate) fn write(&self, paths: &mut Map<String, Value>) {
        let r = self.resource;
        let prefix = group_version_prefix(&r.group, &r.version);
        let scope = if r.namespaced {
            "namespaces/{namespace}/"
        } else {
            ""
        };
        let namespaced = if r.namespaced { "Namespaced" } else { "" };
        let collection = format!("{prefix}/{scope}{}", r.plural);
        let item = format!("{collection}/{{name}}");
        self.collection(paths, &collection, namespaced);
        self.item(paths, &item, namespaced);
        if r.namespaced && self.can("list") {
            let path = format!("{prefix}/{}", r.plural);
            let list = self.list_operation(format!("{}ForAllNamespaces", r.kind));
            paths.insert(path, self.path_item(&[], vec![("get", list)]));
        }
        for (subresource, suffix) in [
            (Subresource::Status, "status"),
            (Subresource::Scale, "scale"),
        ] {
            if r.has_subresource(subresource) {
                self.subresource(paths, &format!("{item}/{suffix}"), namespaced, subresource);
            }
        }
        if self.can("watch") {
            self.watch_paths(paths, &prefix, scope, namespaced);
        }
    }

    fn can(&self, verb: &str) -> bool {
        self.resource.verbs.iter().any(|v| v == verb)
    }

    fn kind(&self) -> &str {
        &self.resource.kind
    }

    fn list_definition(&self) -> String {
        format!("{}List", self.definition)
    }

    fn gvk(&self) -> Value {
        let r = self.resource;
        json!({ "group": r.group, "kind": r.kind, "version": r.version })
    }

    fn collection(&self, paths: &mut Map<String, Value>, path: &str, namespaced: &str) {
        let kind = self.kind().to_string();
        let mut operations = Vec::new();
        if self.can("list") {
            operations.push(("get", self.list_operation(format!("{namespaced}{kind}"))));
        }
        if self.can("create") {
            operations.push((
                "post",
                self.build(Operation {
                    verb: "create",
                    action: "post",
                    subject: format!("{namespaced}{kind}"),
                    description: format!("create a {kind}"),
                    parameters: WRITE_PARAMS,
                    body: Body::Object(self.definition),
                    responses: &["200", "201", "202"],
                    response_definition: self.definition,
                    response_types: RESPONSE_TYPES,
                    gvk: self.gvk(),
                }),
            ));
        }
        if self.can("deletecollection") {
            operations.push((
                "delete",
                self.build(Operation {
                    verb: "delete",
                    action: "deletecollection",
                    subject: format!("Collection{namespaced}{kind}"),
                    description: format!("delete collection of {kind}"),
                    parameters: DELETE_COLLECTION_PARAMS,
                    body: Body::DeleteOptions,
                    responses: &["200"],
                    response_definition: STATUS,
                    response_types: RESPONSE_TYPES,
                    gvk: self.gvk(),
                }),
            ));
        }
        if !operations.is_empty() {
            let scope: &[&str] = if namespaced.is_empty() {
                &[]
            } else {
                &["namespace"]
            };
            paths.insert(path.to_string(), self.path_item(scope, operations));
        }
    }

    fn list_operation(&self, subject: String) -> Value {
        let kind = self.kind();
        let list = self.list_definition();
        self.build(Operation {
            verb: "list",
            action: "list",
            subject,
            description: format!("list or watch objects of kind {kind}"),
            parameters: LIST_PARAMS,
            body: Body::None,
            responses: &["200"],
            response_definition: &list,
            response_types: LIST_RESPONSE_TYPES,
            gvk: self.gvk(),
        })
    }

    fn item(&self, paths: &mut Map<String, Value>, path: &str, namespaced: &str) {
        let kind = self.kind().to_string();
        let subject = format!("{namespaced}{kind}");
        let mut operations = self.read_write_operations(
            &subject,
            &format!("the specified {kind}"),
            self.definition,
            self.gvk(),
        );
        if self.can("delete") {
            operations.push((
                "delete",
                self.build(Operation {
                    verb: "delete",
                    action: "delete",
                    subject,
                    description: format!("delete a {kind}"),
                    parameters: DELETE_PARAMS,
                    body: Body::DeleteOptions,
                    responses: &["200", "202"],
                    response_definition: STATUS,
                    response_types: RESPONSE_TYPES,
                    gvk: self.gvk(),
                }),
            ));
        }
        if !operations.is_empty() {
            paths.insert(
                path.to_string(),
                self.path_item(&self.item_scope(namespaced), operations),
            );
        }
    }

    fn item_scope(&self, namespaced: &str) -> Vec<&'static str> {
        if namespaced.is_empty() {
            vec!["name"]
        } else {
            vec!["name", "namespace"]
        }
    }

    /// get, put and patch of one object (the main resource or a subresource).
    fn read_write_operations(
        &self,
        subject: &str,
        what: &str,
        definition: &str,
        gvk: Value,
    ) -> Vec<(&'static str, Value)> {
        let mut operations = Vec::new();
        let subject = subject.to_string();
        if self.can("get") {
            operations.push((
                "get",
                self.build(Operation {
                    verb: "read",
                    action: "get",
                    subject: subject.clone(),
                    description: format!("read {what}"),
                    parameters: &[],
                    body: Body::None,
                    responses: &["200"],
                    response_definition: definition,
                    response_types: RESPONSE_TYPES,
                    gvk: gvk.clone(),
                }),
            ));
        }
        if self.can("update") {
            operations.push((
                "put",
                self.build(Operation {
                    verb: "replace",
                    action: "put",
                    subject: subject.clone(),
                    description: format!("replace {what}"),
                    parameters: WRITE_PARAMS,
                    body: Body::Object(definition),
                    responses: &["200", "201"],
                    response_definition: definition,
                    response_types: RESPONSE_TYPES,
                    gvk: gvk.clone(),
                }),
            ));
        }
        if self.can("patch") {
            operations.push((
                "patch",
                self.build(Operation {
                    verb: "patch",
                    action: "patch",
                    subject,
                    description: format!("partially update {what}"),
                    parameters: PATCH_PARAMS,
                    body: Body::Patch,
                    responses: &["200", "201"],
                    response_definition: definition,
                    response_types: RESPONSE_TYPES,
                    gvk,
                }),
            ));
        }
        operations
    }

    fn subresource(
        &self,
        paths: &mut Map<String, Value>,
        path: &str,
        namespaced: &str,
        subresource: Subresource,
    ) {
        let kind = self.kind();
        let (suffix, what, definition, gvk) = match subresource {
            Subresource::Status => ("Status", "status of", self.definition, self.gvk()),
            Subresource::Finalize => ("Finalize", "finalize of", self.definition, self.gvk()),
            Subresource::Approval => ("Approval", "approval of", self.definition, self.gvk()),
            Subresource::Scale => (
                "Scale",
                "scale of",
                SCALE,
                json!({ "group": "autoscaling", "kind": "Scale", "version": "v1" }),
            ),
        };
        let subject = format!("{namespaced}{kind}{suffix}");
        let operations = self.read_write_operations(
            &subject,
            &format!("{what} the specified {kind}"),
            definition,
            gvk,
        );
        if !operations.is_empty() {
            paths.insert(
                path.to_string(),
                self.path_item(&self.item_scope(namespaced), operations),
            );
        }
    }

    /// The deprecated `/watch/` paths kube-apiserver still publishes.
    fn watch_paths(
        &self,
        paths: &mut Map<String, Value>,
        prefix: &str,
        scope: &str,
        namespaced: &str,
    ) {
        let r = self.resource;
        let kind = self.kind();
        let collection = format!("{prefix}/watch/{scope}{}", r.plural);
        let watch_list = self.watch_operation(
            "watchlist",
            format!("{namespaced}{kind}List"),
            format!("watch individual changes to a list of {kind}"),
        );
        let scope_params: &[&str] = if namespaced.is_empty() {
            &[]
        } else {
            &["namespace"]
        };
        paths.insert(
            collection.clone(),
            self.path_item(scope_params, vec![("get", watch_list)]),
        );
        let watch_one = self.watch_operation(
            "watch",
            format!("{namespaced}{kind}"),
            format!("watch changes to an object of kind {kind}"),
        );
        paths.insert(
            format!("{collection}/{{name}}"),
            self.path_item(&self.item_scope(namespaced), vec![("get", watch_one)]),
        );
        if r.namespaced {
            let all = self.watch_operation(
                "watchlist",
                format!("{kind}ListForAllNamespaces"),
                format!("watch individual changes to a list of {kind}"),
            );
            paths.insert(
                format!("{prefix}/watch/{}", r.plural),
                self.path_item(&[], vec![("get", all)]),
            );
        }
    }

    fn watch_operation(&self, action: &str, subject: String, description: String) -> Value {
        self.build(Operation {
            verb: "watch", action, subject, description: format!("{description}; deprecated: use the 'watch' parameter with a list operation instead"),
            parameters: LIST_PARAMS, body: Body::None, responses: &["200"], response_definition: WATCH_EVENT,
            response_types: WATCH_RESPONSE_TYPES, gvk: self.gvk(),
        })
    }

    /// A path item: its scope parameters (`name`, `namespace`) and `pretty` at path level, then operations.
    fn path_item(&self, scope: &[&str], operations: Vec<(&str, Value)>) -> Value {
        let mut parameters: Vec<Value> = scope
            .iter()
            .map(|name| path_parameter(name, self.kind()))
            .collect();
        parameters.push(parameter("pretty"));
        let mut item = Map::new();
        item.insert("parameters".into(), Value::Array(parameters));
        for (method, operation) in operations {
            item.insert(method.to_string(), operation);
        }
        Value::Object(item)
    }

    fn build(&self, op: Operation<'_>) -> Value {
        let r = self.resource;
        let mut operation = json!({
            "description": op.description,
            "operationId": format!("{}{}{}{}", op.verb, group_id(&r.group), capitalize(&r.version), op.subject),
            "tags": [tag(&r.group, &r.version)],
            "parameters": op.parameters.iter().map(|name| parameter(name)).collect::<Vec<_>>(),
            "responses": responses(op.responses, op.response_definition, op.response_types),
            "x-kubernetes-action": op.action,
            "x-kubernetes-group-version-kind": op.gvk,
        });
        if let Some(body) = self.request_body(&op.body) {
            operation["requestBody"] = body;
        }
        operation
    }

    fn request_body(&self, body: &Body<'_>) -> Option<Value> {
        match body {
            Body::None => None,
            Body::Object(definition) => Some(
                json!({ "required": true, "content": { "*/*": { "schema": schema_ref(definition) } } }),
            ),
            Body::DeleteOptions => {
                Some(json!({ "content": { "*/*": { "schema": schema_ref(DELETE_OPTIONS) } } }))
            }
            Body::Patch => {
                let mut types = vec![
                    "application/apply-patch+yaml",
                    "application/json-patch+json",
                    "application/merge-patch+json",
                ];
                if self.strategic_merge_patch {
                    types.push("application/strategic-merge-patch+json");
                }
                Some(json!({ "required": true, "content": media_types(&types, PATCH) }))
            }
        }
    }
}

/// `{"<media type>": {"schema": {"$ref": ...}}}` for each media type.
fn media_types(types: &[&str], definition: &str) -> Value {
    let content: Map<String, Value> = types
        .iter()
        .map(|media_type| {
            (
                media_type.to_string(),
                json!({ "schema": schema_ref(definition) }),
            )
        })
        .collect();
    Value::Object(content)
}

fn responses(codes: &[&str], definition: &str, types: &[&str]) -> Value {
    let mut responses = Map::new();
    for code in codes {
        let description = match *code {
            "201" => "Created",
            "202" => "Accepted",
            _ => "OK",
        };
        responses.insert(
            code.to_string(),
            json!({ "description": description, "content": media_types(types, definition) }),
        );
    }
    responses.insert("401".into(), json!({ "description": "Unauthorized" }));
    Value::Object(responses)
}

/// A GET operation of a discovery endpoint (`/api/`, `/apis/`, `/apis/<group>/`, `/apis/<group>/<version>/`).
pub(crate) fn discovery_path(
    operation_id: String,
    tag: &str,
    description: &str,
    definition: &str,
) -> Value {
    json!({
        "get": {
            "description": description,
            "operationId": operation_id,
            "tags": [tag],
            "responses": responses(&["200"], definition, RESPONSE_TYPES),
        }
    })
}

/// The discovery operation tag of a group version (`core_v1`), or of a group (`apps`) when `version` is empty.
pub(crate) fn discovery_tag(group: &str, version: &str) -> String {
    let full = tag(group, if version.is_empty() { "x" } else { version });
    match version {
        "" => full.strip_suffix("_x").unwrap_or(&full).to_string(),
        _ => full,
    }
}
