//! `RequestInfo`: what a request is about, parsed from its method, path and query alone (no body, no state),
//! like kube-apiserver's `RequestInfoFactory`, extended with the space a path names.

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
    /// The path without any `/clusters/<path>` prefix.
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
}

/// Namespaces' own subresources: `/namespaces/<ns>/status` is about the namespace, not a resource in it.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];
const TENANT_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

fn query_flag(query: &str, name: &str) -> bool {
    query.split('&').filter_map(|pair| pair.split_once('=')).any(|(k, v)| k == name && (v == "true" || v == "1"))
}

/// Parses a request. Never fails: unknown shapes are non-resource requests, answered 404 later.
pub fn parse(method: &str, full_path: &str, query: &str) -> RequestInfo {
    let (space, path) = split_cluster_prefix(full_path);
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
    };
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
        "GET" | "HEAD" if legacy_watch || query_flag(query, "watch") => "watch",
        "GET" | "HEAD" if info.name.is_empty() => "list",
        "GET" | "HEAD" => "get",
        other => return RequestInfo { verb: other.to_ascii_lowercase(), ..info },
    }
    .to_owned();
    info
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
    }
}
