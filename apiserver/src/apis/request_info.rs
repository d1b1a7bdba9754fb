//! `RequestInfo`: what a request is about, parsed from its method, path and query alone (no body, no state),
//! like kube-apiserver's `RequestInfoFactory`, extended with the space a path names.
//!
//! The path is read decoded, as Go's `URL.Path` is: `system%3Adiscovery` is `system:discovery`, and an encoded `/`
//! separates segments like a literal one (so it never ends up inside a name). A list or watch whose
//! `fieldSelector` pins `metadata.name` names that object, as kube's does, so RBAC's `resourceNames` apply to it.

use super::query;
use crate::apis::lifecycle::{Lifecycle, SERVICES};
use crate::registry::selector::{FieldSelector, LabelSelector};

/// Which space a path names, before identity is considered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpacePath {
    /// A short path (`/api/v1/...`): the caller's own space.
    Short,
    /// `/api/v1/tenants/<t>/...` (`all` = every space).
    Tenant(String),
    /// `/clusters/<root:a:b>/...`.
    Workspace(String),
}

/// A parsed request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestInfo {
    /// True for API resource requests; false for discovery, health, OpenAPI and other non-resource URLs.
    pub is_resource: bool,
    /// The decoded path without any `/clusters/<path>` prefix.
    pub path: String,
    /// Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection (or the lowercase
    /// HTTP method for non-resource requests).
    pub verb: String,
    pub api_prefix: String,
    pub group: String,
    pub version: String,
    pub space: SpacePath,
    pub namespace: Option<String>,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    /// True when `name` comes from a list's or watch's `fieldSelector=metadata.name=<name>`, not from the path.
    pub name_from_field_selector: bool,
    /// Why the path could not be decoded (an escape that is not `%XX`): the request is a 400.
    pub invalid_path: Option<String>,
    /// `/services/initializingworkspaces/<initializer>/clusters/<x>/...` (or `terminatingworkspaces`), or
    /// `/services/apiexport/<cluster>/<export>/clusters/<x>/...`: the virtual workspace; `space` is then
    /// `Workspace(x)`.
    pub virtual_workspace: Option<VirtualPath>,
}

impl RequestInfo {
    /// A watch, or a subresource that streams for as long as the client wants (exec, attach, port-forward, log,
    /// proxy): kube's long-running requests, which `--request-timeout` does not cut off.
    pub fn is_long_running(&self) -> bool {
        self.verb == "watch" || (self.is_resource && matches!(self.subresource.as_str(), "exec" | "attach" | "portforward" | "log" | "proxy"))
            // A snapshot streamed out, or a tenant's streamed in and restored: as long as its size needs.
            || (!self.is_resource && self.path.trim_end_matches('/') == "/snapshot")
    }
}

/// Which virtual workspace a `/services/...` path names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VirtualPath {
    /// An initializing or terminating virtual workspace, and its entry (`<cluster>:<type>`).
    Lifecycle(Lifecycle, String),
    /// The virtual workspace of APIExport `export` in logical cluster `cluster`.
    ApiExport { cluster: String, export: String },
}

/// The service of the APIExport virtual workspace.
pub const API_EXPORT_SERVICE: &str = "apiexport";

/// Namespaces' own subresources: `/namespaces/<ns>/status` is about the namespace, not a resource in it.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];
const TENANT_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// kube's watch detection: a `watch` parameter with any value but `0` or `false` makes a list a watch.
fn watch_requested(query: &str) -> bool {
    query::first(query, "watch").is_some_and(|value| query::go_query_bool(&value))
}

/// The name a list's or watch's field selector pins (`metadata.name=<name>`), as kube's RequestInfo finds it:
/// only when the whole of the list options decode (integers, both selectors), and the name is a valid path
/// segment.
fn field_selector_name(query: &str) -> Option<String> {
    for integer in ["timeoutSeconds", "limit"] {
        if let Some(value) = query::first(query, integer) {
            value.parse::<i64>().ok()?;
        }
    }
    LabelSelector::parse(&query::first(query, "labelSelector").unwrap_or_default()).ok()?;
    let fields = FieldSelector::parse_generic(&query::first(query, "fieldSelector")?).ok()?;
    let name = fields.name()?;
    let valid_segment = name != "." && name != ".." && !name.contains('/') && !name.contains('%');
    valid_segment.then(|| name.to_owned())
}

/// Parses a request. Never fails: unknown shapes are non-resource requests, answered 404 later.
pub fn parse(method: &str, raw_path: &str, query: &str) -> RequestInfo {
    let (full_path, invalid_path) = match query::decode_path(raw_path) {
        Ok(decoded) => (decoded, None),
        Err(err) => (raw_path.to_owned(), Some(err.0)),
    };
    let (virtual_workspace, path) = split_virtual_workspace(&full_path);
    let (space, path) = split_cluster_prefix(path);
    let mut info = RequestInfo {
        is_resource: false,
        path: path.to_owned(),
        verb: method.to_ascii_lowercase(),
        api_prefix: String::new(),
        group: String::new(),
        version: String::new(),
        space,
        namespace: None,
        resource: String::new(),
        subresource: String::new(),
        name: String::new(),
        name_from_field_selector: false,
        invalid_path,
        virtual_workspace,
    };
    if info.invalid_path.is_some() {
        return info;
    }
    let mut parts: Vec<&str> = path.trim_matches('/').split('/').filter(|p| !p.is_empty()).collect();
    let rest = match parts.first() {
        Some(&"api") if parts.len() >= 2 => {
            info.api_prefix = "api".to_owned();
            info.version = parts[1].to_owned();
            parts.split_off(2)
        }
        Some(&"apis") if parts.len() >= 3 => {
            info.api_prefix = "apis".to_owned();
            info.group = parts[1].to_owned();
            info.version = parts[2].to_owned();
            parts.split_off(3)
        }
        _ => return info,
    };
    let mut rest = rest;
    if rest.is_empty() {
        return info; // group-version discovery
    }
    info.is_resource = true;
    let mut legacy_watch = false;
    if rest[0] == "watch" {
        legacy_watch = true;
        rest.remove(0);
    }
    if rest.len() > 2 && rest[0] == "tenants" && !TENANT_SUBRESOURCES.contains(&rest[2]) {
        if info.space == SpacePath::Short {
            info.space = SpacePath::Tenant(rest[1].to_owned());
        } else {
            // `/clusters/x/api/v1/tenants/y/...` names two spaces: treat it as a request for an unknown space.
            info.space = SpacePath::Workspace(String::new());
        }
        rest.drain(..2);
    }
    if rest.first() == Some(&"namespaces") && rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
        info.namespace = Some(rest[1].to_owned());
        rest.drain(..2);
    }
    info.resource = rest.first().map(|s| (*s).to_owned()).unwrap_or_default();
    info.name = rest.get(1).map(|s| (*s).to_owned()).unwrap_or_default();
    info.subresource = rest.get(2).map(|s| (*s).to_owned()).unwrap_or_default();
    if rest.len() > 3 {
        info.is_resource = false; // deeper paths are not served
    }
    info.verb = match method {
        "POST" => "create",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" if info.name.is_empty() => "deletecollection",
        "DELETE" => "delete",
        "GET" | "HEAD" if legacy_watch => "watch",
        "GET" | "HEAD" if !info.name.is_empty() => "get",
        "GET" | "HEAD" if watch_requested(query) => "watch",
        "GET" | "HEAD" => "list",
        other => return RequestInfo { verb: other.to_ascii_lowercase(), ..info },
    }
    .to_owned();
    if matches!(info.verb.as_str(), "list" | "watch") && info.name.is_empty() && !legacy_watch {
        if let Some(name) = field_selector_name(query) {
            info.name = name;
            info.name_from_field_selector = true;
        }
    }
    info
}

/// Splits `/services/<lifecycle>/<entry>` (or `/services/apiexport/<cluster>/<export>`) off a path that goes on
/// with `/clusters/<x>/...`; any other `/services/...` path is left whole (no such route: 404).
fn split_virtual_workspace(path: &str) -> (Option<VirtualPath>, &str) {
    let split = || {
        let after = path.strip_prefix(SERVICES)?.strip_prefix('/')?;
        let (service, after) = after.split_once('/')?;
        let (first, rest) = after.split_once('/')?;
        if first.is_empty() {
            return None;
        }
        if service == API_EXPORT_SERVICE {
            let (export, rest) = rest.split_once('/')?;
            let consumed = first.len() + 1 + export.len();
            return (!export.is_empty() && rest.starts_with("clusters/"))
                .then(|| (VirtualPath::ApiExport { cluster: first.to_owned(), export: export.to_owned() }, &after[consumed..]));
        }
        let lifecycle = Lifecycle::of_service(service)?;
        rest.starts_with("clusters/").then(|| (VirtualPath::Lifecycle(lifecycle, first.to_owned()), &after[first.len()..]))
    };
    match split() {
        Some((virtual_workspace, rest)) => (Some(virtual_workspace), rest),
        None => (None, path),
    }
}

/// Splits `/clusters/<path>/rest` into the workspace path and `/rest`.
fn split_cluster_prefix(path: &str) -> (SpacePath, &str) {
    if let Some(after) = path.strip_prefix("/clusters/") {
        let cluster = after.split('/').next().unwrap_or_default();
        let rest = &path["/clusters/".len() + cluster.len()..];
        return (SpacePath::Workspace(cluster.to_owned()), if rest.is_empty() { "/" } else { rest });
    }
    (SpacePath::Short, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per URL shape: (method, path, query, verb, space, namespace, group, resource, name, subresource).
    #[test]
    fn url_shapes() {
        let short = SpacePath::Short;
        let tenant = |t: &str| SpacePath::Tenant(t.to_owned());
        let ws = |w: &str| SpacePath::Workspace(w.to_owned());
        let rows = [
            ("GET", "/api/v1/namespaces", "", "list", short.clone(), None, "", "namespaces", "", ""),
            ("GET", "/api/v1/namespaces/default", "", "get", short.clone(), None, "", "namespaces", "default", ""),
            ("PUT", "/api/v1/namespaces/t/finalize", "", "update", short.clone(), None, "", "namespaces", "t", "finalize"),
            ("GET", "/api/v1/namespaces/default/pods", "", "list", short.clone(), Some("default"), "", "pods", "", ""),
            ("GET", "/api/v1/namespaces/default/pods", "watch=true", "watch", short.clone(), Some("default"), "", "pods", "", ""),
            ("GET", "/api/v1/watch/namespaces/default/pods", "", "watch", short.clone(), Some("default"), "", "pods", "", ""),
            ("GET", "/api/v1/pods", "watch=1", "watch", short.clone(), None, "", "pods", "", ""),
            ("PUT", "/apis/apps/v1/namespaces/ns/deployments/web/scale", "", "update", short.clone(), Some("ns"), "apps", "deployments", "web", "scale"),
            ("PATCH", "/apis/apps/v1/namespaces/ns/deployments/web/status", "", "patch", short.clone(), Some("ns"), "apps", "deployments", "web", "status"),
            ("DELETE", "/api/v1/namespaces/ns/configmaps", "", "deletecollection", short.clone(), Some("ns"), "", "configmaps", "", ""),
            ("DELETE", "/api/v1/namespaces/ns/configmaps/x", "", "delete", short.clone(), Some("ns"), "", "configmaps", "x", ""),
            ("POST", "/api/v1/tenants/t1/namespaces/ns/configmaps", "", "create", tenant("t1"), Some("ns"), "", "configmaps", "", ""),
            ("GET", "/apis/rbac.authorization.k8s.io/v1/tenants/t1/clusterroles/admin", "", "get", tenant("t1"), None, "rbac.authorization.k8s.io", "clusterroles", "admin", ""),
            ("GET", "/api/v1/tenants/t1", "", "get", short.clone(), None, "", "tenants", "t1", ""),
            ("PUT", "/api/v1/tenants/t1/status", "", "update", short.clone(), None, "", "tenants", "t1", "status"),
            ("GET", "/api/v1/tenants/all/pods", "", "list", tenant("all"), None, "", "pods", "", ""),
            ("GET", "/clusters/root:t1/api/v1/namespaces/ns/pods/p", "", "get", ws("root:t1"), Some("ns"), "", "pods", "p", ""),
            // Percent-encoded segments are decoded, as Go's URL.Path is; an encoded `/` separates segments.
            ("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Adiscovery", "", "get", short.clone(), None, "rbac.authorization.k8s.io", "clusterroles", "system:discovery", ""),
            ("GET", "/api/v1/namespaces/d%65fault/configmaps", "", "list", short.clone(), Some("default"), "", "configmaps", "", ""),
            ("GET", "/api/v1/namespaces/default/configmaps/a%2Fb", "", "get", short.clone(), Some("default"), "", "configmaps", "a", "b"),
            ("GET", "/clusters/root%3At1/api/v1/pods", "", "list", ws("root:t1"), None, "", "pods", "", ""),
            // `watch` is any value but 0 and false; with a name in the path it is a get, as in kube.
            ("GET", "/api/v1/pods", "watch=yes", "watch", short.clone(), None, "", "pods", "", ""),
            ("GET", "/api/v1/pods", "watch=False", "list", short.clone(), None, "", "pods", "", ""),
            ("GET", "/api/v1/namespaces/ns/pods/p", "watch=true", "get", short.clone(), Some("ns"), "", "pods", "p", ""),
            // A field selector pinning metadata.name names the object of a list or watch.
            ("GET", "/api/v1/namespaces/ns/configmaps", "fieldSelector=metadata.name%3Dx", "list", short.clone(), Some("ns"), "", "configmaps", "x", ""),
            ("GET", "/api/v1/namespaces/ns/configmaps", "watch=1&fieldSelector=metadata.name==x,metadata.namespace=ns", "watch", short.clone(), Some("ns"), "", "configmaps", "x", ""),
            ("GET", "/api/v1/namespaces/ns/configmaps", "fieldSelector=metadata.name!=x", "list", short.clone(), Some("ns"), "", "configmaps", "", ""),
            ("GET", "/api/v1/namespaces/ns/configmaps", "fieldSelector=metadata.name=x&labelSelector=a!==b", "list", short.clone(), Some("ns"), "", "configmaps", "", ""),
            ("GET", "/api/v1/namespaces/ns/configmaps", "fieldSelector=metadata.name=x&timeoutSeconds=soon", "list", short.clone(), Some("ns"), "", "configmaps", "", ""),
            ("GET", "/api/v1/namespaces/ns/configmaps", "fieldSelector=metadata.name=..", "list", short.clone(), Some("ns"), "", "configmaps", "", ""),
            ("GET", "/api/v1/watch/namespaces/ns/configmaps", "fieldSelector=metadata.name=x", "watch", short.clone(), Some("ns"), "", "configmaps", "", ""),
            ("DELETE", "/api/v1/namespaces/ns/configmaps", "fieldSelector=metadata.name=x", "deletecollection", short.clone(), Some("ns"), "", "configmaps", "", ""),
        ];
        for (method, path, query, verb, space, namespace, group, resource, name, subresource) in rows {
            let info = parse(method, path, query);
            assert!(info.is_resource, "{path} is a resource request");
            let got = (info.verb.as_str(), info.space.clone(), info.namespace.as_deref(), info.group.as_str(),
                info.resource.as_str(), info.name.as_str(), info.subresource.as_str());
            assert_eq!(got, (verb, space, namespace, group, resource, name, subresource), "{method} {path}?{query}");
        }
    }

    #[test]
    fn non_resource_shapes() {
        for path in ["/api", "/apis", "/api/v1", "/apis/apps", "/apis/apps/v1", "/version", "/healthz", "/openapi/v3",
            "/clusters/root/api/v1", "/api/v1/namespaces/a/pods/b/log/extra"] {
            assert!(!parse("GET", path, "").is_resource, "{path} is not a resource request");
        }
        let info = parse("GET", "/clusters/root:a/apis", "");
        assert_eq!((info.path.as_str(), info.space), ("/apis", SpacePath::Workspace("root:a".to_owned())));
        assert_eq!(parse("GET", "/m%65trics", "").path, "/metrics", "non-resource paths are decoded too");
    }

    #[test]
    fn virtual_workspace_paths() {
        let info = parse("GET", "/services/initializingworkspaces/root:org/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters", "watch=true");
        assert_eq!(info.virtual_workspace, Some(VirtualPath::Lifecycle(Lifecycle::Initializing, "root:org".to_owned())));
        assert_eq!((info.space, info.verb.as_str(), info.resource.as_str()), (SpacePath::Workspace("*".into()), "watch", "logicalclusters"));
        let info = parse("PATCH", "/services/terminatingworkspaces/t%3Ax/clusters/abc/apis/core.kcp.io/v1alpha1/logicalclusters/cluster/status", "");
        assert_eq!(info.virtual_workspace, Some(VirtualPath::Lifecycle(Lifecycle::Terminating, "t:x".to_owned())));
        let export = parse("GET", "/services/apiexport/k3x9/widgets/clusters/*/apis/example.io/v1/widgets", "");
        assert_eq!(export.virtual_workspace, Some(VirtualPath::ApiExport { cluster: "k3x9".into(), export: "widgets".into() }));
        assert_eq!((export.space, export.group.as_str(), export.resource.as_str()), (SpacePath::Workspace("*".into()), "example.io", "widgets"));
        assert_eq!((info.space, info.name.as_str(), info.subresource.as_str()), (SpacePath::Workspace("abc".into()), "cluster", "status"));
        for path in ["/services/initializingworkspaces/root:org/api/v1/pods", "/services/other/x/clusters/a/api/v1/pods",
            "/services/initializingworkspaces//clusters/a/api/v1/pods", "/services/initializingworkspaces/x",
            "/services/apiexport/k3x9/clusters/a/api/v1/pods", "/services/apiexport//widgets/clusters/a/api/v1/pods"] {
            let info = parse("GET", path, "");
            assert_eq!((info.virtual_workspace, info.is_resource, info.path.as_str()), (None, false, path), "{path}");
        }
    }

    #[test]
    fn long_running_requests_are_kubes() {
        let rows = [("GET", "/api/v1/pods", "watch=1", true), ("GET", "/api/v1/watch/namespaces/ns/pods", "", true),
            ("POST", "/api/v1/namespaces/ns/pods/p/exec", "", true), ("GET", "/api/v1/namespaces/ns/pods/p/log", "follow=true", true),
            ("POST", "/api/v1/namespaces/ns/pods/p/portforward", "", true), ("GET", "/api/v1/namespaces/ns/services/s/proxy", "", true),
            ("POST", "/api/v1/namespaces/ns/pods/p/attach", "", true), ("GET", "/api/v1/pods", "watch=false", false),
            ("POST", "/api/v1/namespaces/ns/configmaps", "", false), ("GET", "/api/v1/namespaces/ns/pods/p/status", "", false),
            ("GET", "/log", "", false), ("GET", "/readyz", "", false),
            // A snapshot streamed out, or a tenant's in and restored, takes as long as its size needs.
            ("GET", "/snapshot", "", true), ("POST", "/snapshot/", "tenant=t1", true), ("GET", "/snapshots", "", false)];
        for (method, path, query, long_running) in rows {
            assert_eq!(parse(method, path, query).is_long_running(), long_running, "{method} {path}?{query}");
        }
    }

    #[test]
    fn undecodable_paths_are_refused() {
        let info = parse("GET", "/api/v1/namespaces/%zz/pods", "");
        assert_eq!(info.invalid_path.as_deref(), Some("invalid URL escape \"%zz\""));
        assert!(!info.is_resource);
        assert_eq!(parse("GET", "/api/v1/pods", "").invalid_path, None);
    }

    #[test]
    fn only_field_selector_names_are_marked() {
        assert!(parse("GET", "/api/v1/namespaces/ns/configmaps", "fieldSelector=metadata.name%3Dx").name_from_field_selector);
        assert!(!parse("GET", "/api/v1/namespaces/ns/configmaps/x", "").name_from_field_selector);
        assert!(!parse("GET", "/api/v1/watch/namespaces/ns/configmaps/x", "").name_from_field_selector);
    }
}
