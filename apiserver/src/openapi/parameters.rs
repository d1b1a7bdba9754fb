//! The query and path parameters of kube-apiserver's operations, in OpenAPI 3.0 form.
//!
//! kubectl decides whether the server validates fields by finding `fieldValidation` among the
//! PATCH operation's query parameters, so the names here must be exactly kube-apiserver's.

use serde_json::{json, Value};

/// Type and description of each query parameter.
fn query_parameter(name: &str) -> (&'static str, &'static str) {
    match name {
        "pretty" => ("string", "If 'true', the output is pretty printed."),
        "dryRun" => ("string", "When present, modifications are not persisted. The only valid value is 'All'."),
        "fieldManager" => ("string", "The name of the actor or entity making these changes; required for apply patches."),
        "fieldValidation" => (
            "string",
            "How the server handles unknown or duplicate fields in the request body: Ignore, Warn (the default) or Strict.",
        ),
        "force" => ("boolean", "Force an apply request to take over conflicting fields owned by other managers."),
        "gracePeriodSeconds" => ("integer", "Seconds before the object should be deleted; zero means delete immediately."),
        "ignoreStoreReadErrorWithClusterBreakingPotential" => (
            "boolean",
            "Delete an object even if it cannot be read from storage. Dangerous; needs extra permission.",
        ),
        "orphanDependents" => ("boolean", "Deprecated: use propagationPolicy. Whether dependents are orphaned."),
        "propagationPolicy" => ("string", "Garbage collection of dependents: Orphan, Background or Foreground."),
        "allowWatchBookmarks" => ("boolean", "Ask for BOOKMARK watch events; servers may ignore it."),
        "continue" => ("string", "The continue token of a previous, paginated list response."),
        "fieldSelector" => ("string", "Restrict the returned objects by their fields. Defaults to everything."),
        "labelSelector" => ("string", "Restrict the returned objects by their labels. Defaults to everything."),
        "limit" => ("integer", "The maximum number of objects to return in a list response."),
        "resourceVersion" => ("string", "Constrains which resource versions a request may be served from."),
        "resourceVersionMatch" => ("string", "How resourceVersion applies to a list: Exact or NotOlderThan."),
        "sendInitialEvents" => ("boolean", "Start a watch with synthetic events for the current state, then a bookmark."),
        "timeoutSeconds" => ("integer", "Timeout of a list or watch call, regardless of activity."),
        "watch" => ("boolean", "Watch for changes to the described resources instead of returning a list."),
        _ => ("string", ""),
    }
}

/// A query parameter; `uniqueItems` appears on each as kube-apiserver writes it.
pub(crate) fn parameter(name: &str) -> Value {
    let (kind, description) = query_parameter(name);
    json!({
        "name": name,
        "in": "query",
        "description": description,
        "schema": { "type": kind, "uniqueItems": true },
    })
}

/// The `name` or `namespace` path parameter of an operation on `kind`.
pub(crate) fn path_parameter(name: &str, kind: &str) -> Value {
    let description = match name {
        "namespace" => "object name and auth scope, such as for teams and projects".to_string(),
        _ => format!("name of the {kind}"),
    };
    json!({
        "name": name,
        "in": "path",
        "description": description,
        "required": true,
        "schema": { "type": "string", "uniqueItems": true },
    })
}
