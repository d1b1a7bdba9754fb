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
use crate::kinds::service::endpoints::{Endpoints, Unreachable};
use crate::registry::GenericStore;

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
    endpoints: Endpoints,
}

impl Client {
    pub fn new(context: &Context) -> Client {
        Client { reach: context.webhook_reach.clone(), endpoints: Endpoints::new(&context.resources) }
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
    /// The URL of a ready endpoint of service `namespace`/`name` in `space`, through its EndpointSlices.
    async fn service_url(&self, registry: &GenericStore, space: &SpaceName, namespace: &str, name: &str, port: u16, path: &str) -> Result<url::Url, String> {
        let address = self.endpoints.ready(registry, space, namespace, name, port).await.map_err(|why| match why {
            Unreachable::NoService => format!("failed to call webhook: service \"{name}.{namespace}.svc\" not found"),
            Unreachable::NoPort(port) => format!("failed to call webhook: service \"{name}.{namespace}.svc\" has no port {port}"),
            Unreachable::NoEndpoints => format!("failed to call webhook: service \"{name}.{namespace}.svc\" has no ready endpoints"),
        })?;
        url::Url::parse(&format!("https://{address}{path}")).map_err(|e| e.to_string())
    }
}
