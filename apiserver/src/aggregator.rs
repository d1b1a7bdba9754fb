//! The aggregation layer, as kube-aggregator: a group-version an APIService with a `service` names is served by
//! that service's server. Requests for it, resource and discovery alike, are authenticated and authorized here in
//! their space as any request is, then proxied (`proxy.rs`) with the caller's identity in kube's front-proxy
//! headers, the tenant and the space among its `extra`. Its discovery is merged into `/apis` and aggregated
//! discovery from what the server last answered, and its `Available` condition follows that answer
//! (`available.rs`). APIServices live in the system space and serve every space.

pub mod available;
pub mod proxy;

use std::sync::Arc;

use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;
use kspaces_authz::Caller;
use kspaces_storage::SpaceName;

use crate::apis::request_info::RequestInfo;
use crate::discovery::Remote;
use crate::kinds::api_service::{ApiService, ApiServices};
use crate::kinds::service::endpoints::{Endpoints, Unreachable};
use crate::registry::{GenericStore, Spaces};
use crate::status::{ApiError, ApiResult};
use crate::tenancy::Tree;

/// What the aggregator reads: the APIServices, and where their Services are.
pub struct Aggregator {
    pub apis: Arc<ApiServices>,
    pub endpoints: Endpoints,
    pub registry: GenericStore,
    pub tree: Arc<Tree>,
}

impl Aggregator {
    /// The APIService proxying the group-version `info`'s path is under (`/apis/<group>/<version>[/...]`).
    pub fn proxied(&self, info: &RequestInfo) -> Option<Arc<ApiService>> {
        if info.is_resource {
            return (info.api_prefix == "apis").then(|| self.apis.proxied(&info.group, &info.version)).flatten();
        }
        // The group-version's discovery (`/apis/<g>/<v>`) and OpenAPI (`/openapi/v3/apis/<g>/<v>`) are its server's.
        let path = info.path.trim_start_matches('/');
        let path = path.strip_prefix("openapi/v3/").unwrap_or(path);
        let mut parts = path.split('/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("apis"), Some(group), Some(version)) if !version.is_empty() => self.apis.proxied(group, version),
            _ => None,
        }
    }

    /// Proxies the request to `api`'s server as `caller` in `spaces` (`body`: what the client sent).
    pub async fn proxy(&self, req: &HttpRequest, info: &RequestInfo, caller: &Caller, spaces: &Spaces, api: &ApiService, body: Bytes)
        -> ApiResult<HttpResponse> {
        let address = self.address(api).await.map_err(|why| ApiError::service_unavailable(format!("service unavailable: {why}")))?;
        if !api.available {
            return Err(ApiError::service_unavailable("service unavailable".to_owned()));
        }
        let space = match spaces {
            Spaces::One(space) => Some(self.tree.cluster(space).map(|node| node.path).unwrap_or_else(|| space.as_str().to_owned())),
            Spaces::All => None,
        };
        let forward = proxy::Forward { path: forwarded_path(info), query: req.query_string(), method: req.method().clone(), headers: req.headers(),
            body, caller, space: space.as_deref() };
        proxy::forward(&address, api, forward).await
    }

    /// `host:port` of a ready endpoint of `api`'s Service (in the system space), or why there is none in
    /// kube-aggregator's words.
    pub async fn address(&self, api: &ApiService) -> Result<String, String> {
        let Some(service) = &api.service else { return Err("the APIService is served locally".into()) };
        let found = self.endpoints.ready(&self.registry, &SpaceName::system(), &service.namespace, &service.name, service.port).await;
        found.map_err(|why| match why {
            Unreachable::NoService => format!("service/{} in {:?} is not present", service.name, service.namespace),
            Unreachable::NoPort(port) => format!("service/{} in {:?} is not listening on port {port}", service.name, service.namespace),
            Unreachable::NoEndpoints => format!("endpoints for service/{} in {:?} have no addresses with port {}", service.name, service.namespace, service.port),
        })
    }

    /// The OpenAPI v3 index with the group-versions other servers serve (and answered) added.
    pub fn with_openapi_v3(&self, mut index: serde_json::Value) -> serde_json::Value {
        for remote in self.remote().into_iter().filter(|r| r.resources.is_some()) {
            let path = format!("apis/{}/{}", remote.group, remote.version);
            if let Some(paths) = index.get_mut("paths").and_then(serde_json::Value::as_object_mut) {
                paths.entry(path.clone()).or_insert_with(|| serde_json::json!({"serverRelativeURL": format!("/openapi/v3/{path}")}));
            }
        }
        index
    }

    /// The group-versions other servers serve, for discovery.
    pub fn remote(&self) -> Vec<Remote> {
        self.apis.all_proxied().into_iter().map(|api| Remote {
            group: api.group.clone(),
            version: api.version.clone(),
            group_priority: api.group_priority,
            version_priority: api.version_priority,
            resources: self.apis.resources_of(&api.name).filter(|_| api.available),
        }).collect()
    }
}

/// The path the backend is asked for: the group-version's own, without the space kspaces reads from a
/// `/clusters/<path>` prefix or a `tenants/<t>` segment (aggregated servers know kube's paths only).
fn forwarded_path(info: &RequestInfo) -> String {
    let mut url = url::Url::parse("https://backend/").unwrap_or_else(|_| unreachable!("a constant URL"));
    if let Ok(mut segments) = url.path_segments_mut() {
        segments.clear();
        if info.is_resource {
            segments.extend(["apis", info.group.as_str(), info.version.as_str()]);
            if let Some(namespace) = &info.namespace {
                segments.extend(["namespaces", namespace.as_str()]);
            }
            segments.push(&info.resource);
            for part in [&info.name, &info.subresource] {
                if !part.is_empty() && !info.name_from_field_selector {
                    segments.push(part);
                }
            }
        } else {
            segments.extend(info.path.trim_start_matches('/').split('/'));
        }
    }
    url.path().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::request_info::parse;

    #[test]
    fn the_backend_sees_kube_paths() {
        let cases = [
            ("/clusters/root:t-a/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/web", "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/web"),
            ("/apis/metrics.k8s.io/v1beta1/tenants/t-a/nodes", "/apis/metrics.k8s.io/v1beta1/nodes"),
            ("/apis/metrics.k8s.io/v1beta1", "/apis/metrics.k8s.io/v1beta1"),
            ("/apis/x.io/v1/namespaces/ns/things/a%20b/status", "/apis/x.io/v1/namespaces/ns/things/a%20b/status"),
        ];
        for (path, expected) in cases {
            assert_eq!(forwarded_path(&parse("GET", path, "")), expected, "{path}");
        }
        assert_eq!(forwarded_path(&parse("GET", "/apis/x.io/v1/things", "fieldSelector=metadata.name%3Da")), "/apis/x.io/v1/things");
    }
}
