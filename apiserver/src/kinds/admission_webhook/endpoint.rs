//! A webhook's `clientConfig` parsed once (`Endpoint`) and the POST to it (`Client`), for admission webhooks and
//! CRD conversion webhooks alike: a `url`, or a `service` of the webhook's space resolved through its
//! EndpointSlices; TLS verified against `caBundle` (`outbound`); only to an address `Reach` allows that space.

use std::sync::Arc;
use std::time::Duration;

use kspaces_storage::SpaceName;
use serde_json::Value;

use super::config::{self, text};
use super::reach::Reach;
use crate::kinds::Context;
use crate::outbound::{self, Call, Tls};
use crate::registry::{GenericStore, ResourceInfo, Scope};

/// Where a webhook is called.
#[derive(Debug)]
pub enum Target {
    Url(url::Url),
    /// `service`: namespace, name, port, path; resolved through the space's EndpointSlices.
    Service { namespace: String, name: String, port: u16, path: String },
    /// A configuration that cannot be called (written before a rule it breaks existed): every call fails.
    Broken(String),
}

/// One webhook's `clientConfig`, parsed.
#[derive(Debug)]
pub struct Endpoint {
    /// The space holding the configuration (whose services and allowed ranges apply).
    pub space: SpaceName,
    pub target: Target,
    /// The name the server's certificate must hold when it differs from the URL's host (a service's
    /// `<name>.<namespace>.svc`).
    pub server_name: Option<String>,
    pub tls: Result<Tls, String>,
}

impl Endpoint {
    pub fn parse(client: &Value, space: &SpaceName) -> Endpoint {
        use base64::Engine;
        let bundle = client.get("caBundle").and_then(Value::as_str).unwrap_or_default();
        let bundle = base64::engine::general_purpose::STANDARD.decode(bundle).unwrap_or_default();
        let target = match (client.get("url").and_then(Value::as_str), client.get("service").filter(|s| !s.is_null())) {
            (Some(url), _) => config::check_url(url).map(Target::Url).unwrap_or_else(|why| Target::Broken(why.into())),
            (None, Some(service)) => Target::Service {
                namespace: text(service, "namespace").to_owned(),
                name: text(service, "name").to_owned(),
                port: service.get("port").and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok()).unwrap_or(443),
                path: service.get("path").and_then(Value::as_str).unwrap_or("/").to_owned(),
            },
            (None, None) => Target::Broken("no url or service".into()),
        };
        let server_name = match &target {
            Target::Service { namespace, name, .. } => Some(format!("{name}.{namespace}.svc")),
            _ => None,
        };
        Endpoint { space: space.clone(), target, server_name, tls: Tls::new(&bundle) }
    }
}

/// Calls endpoints: where they may call, and the rows a service is resolved through.
pub struct Client {
    reach: Arc<Reach>,
    services: Option<Arc<ResourceInfo>>,
    slices: Option<Arc<ResourceInfo>>,
}

impl Client {
    pub fn new(context: &Context) -> Client {
        Client {
            reach: context.webhook_reach.clone(),
            services: context.resources.by_kind("", "Service").cloned(),
            slices: context.resources.by_kind("discovery.k8s.io", "EndpointSlice").cloned(),
        }
    }

    /// Posts `review` to `endpoint` within `timeout`; the answer's body, or why there is none (kube's words
    /// after `failed calling webhook "<name>": `).
    pub async fn post(&self, registry: &GenericStore, endpoint: &Endpoint, review: &Value, timeout: Duration) -> Result<Vec<u8>, String> {
        let tls = endpoint.tls.as_ref().map_err(|why| format!("failed to call webhook: {why}"))?;
        let body = serde_json::to_vec(review).map_err(|e| e.to_string())?;
        let url = match &endpoint.target {
            Target::Url(url) => url.clone(),
            Target::Service { namespace, name, port, path } => self.service_url(registry, &endpoint.space, namespace, name, *port, path).await?,
            Target::Broken(why) => return Err(format!("failed to call webhook: {why}")),
        };
        let allowed = |address| self.reach.may_call(&endpoint.space, address);
        let call = Call { url: &url, tls, body, timeout, allowed: &allowed, server_name: endpoint.server_name.as_deref(), bearer: None };
        outbound::post_json(call).await.map_err(|e| e.to_string())
    }
    /// The URL of a ready endpoint of service `namespace`/`name` in `space`, through its EndpointSlices (the
    /// endpoint port named as the service port `port` is).
    async fn service_url(&self, registry: &GenericStore, space: &SpaceName, namespace: &str, name: &str, port: u16, path: &str) -> Result<url::Url, String> {
        let missing = || format!("failed to call webhook: service \"{name}.{namespace}.svc\" has no ready endpoints");
        let (Some(services), Some(slices)) = (&self.services, &self.slices) else { return Err(missing()) };
        let scope = Scope::one(space.clone(), Some(namespace.to_owned()));
        let service: Value = match registry.reader().record(services, &scope, name).await {
            Ok(record) => serde_json::from_slice(&record.value).map_err(|e| e.to_string())?,
            Err(_) => return Err(format!("failed to call webhook: service \"{name}.{namespace}.svc\" not found")),
        };
        let ports = service.pointer("/spec/ports").and_then(Value::as_array).cloned().unwrap_or_default();
        let service_port = ports.iter().find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(port)));
        let Some(service_port) = service_port else {
            return Err(format!("failed to call webhook: service \"{name}.{namespace}.svc\" has no port {port}"));
        };
        let port_name = service_port.get("name").and_then(Value::as_str).unwrap_or_default();
        let labels = crate::registry::selector::LabelSelector::parse(&format!("kubernetes.io/service-name={name}")).map_err(|e| e.message)?;
        let options = crate::registry::ListOptions { labels, ..Default::default() };
        let (items, _) = registry.list(slices, &scope, &options).await.map_err(|e| e.message)?;
        for slice in &items {
            let target = slice.get("ports").and_then(Value::as_array).and_then(|ports| {
                ports.iter().find(|p| p.get("name").and_then(Value::as_str).unwrap_or_default() == port_name)
            });
            let Some(target) = target.and_then(|p| p.get("port")).and_then(Value::as_u64) else { continue };
            let endpoints = slice.get("endpoints").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            let ready = endpoints.iter().filter(|e| e.pointer("/conditions/ready").and_then(Value::as_bool) != Some(false));
            if let Some(address) = ready.flat_map(|e| config::strings(e.get("addresses"))).next() {
                let host = if address.contains(':') { format!("[{address}]") } else { address.to_owned() };
                return url::Url::parse(&format!("https://{host}:{target}{path}")).map_err(|e| e.to_string());
            }
        }
        Err(missing())
    }
}
