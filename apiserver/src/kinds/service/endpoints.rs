//! Where a Service of a space is reached: the first ready address of its EndpointSlices, on the endpoint port
//! named as the Service's port is, as kube's webhook and aggregator clients resolve a `service` reference (a
//! cluster IP routes nowhere here).

use std::sync::Arc;

use kspaces_storage::SpaceName;
use serde_json::Value;

use crate::registry::selector::LabelSelector;
use crate::registry::{GenericStore, ListOptions, ResourceInfo, ResourceTable, Scope};

/// Why a Service has no address to call.
#[derive(Debug, PartialEq, Eq)]
pub enum Unreachable {
    /// No such Service.
    NoService,
    /// The Service has no port of this number.
    NoPort(u16),
    /// No ready endpoint serves that port.
    NoEndpoints,
}

/// Resolves Services through their EndpointSlices.
pub struct Endpoints {
    services: Option<Arc<ResourceInfo>>,
    slices: Option<Arc<ResourceInfo>>,
}

impl Endpoints {
    pub fn new(resources: &ResourceTable) -> Endpoints {
        Endpoints { services: resources.by_kind("", "Service").cloned(), slices: resources.by_kind("discovery.k8s.io", "EndpointSlice").cloned() }
    }

    /// The `host:port` (an IPv6 host in brackets) of a ready endpoint of Service `namespace`/`name` in `space`
    /// for its port `port`.
    pub async fn ready(&self, registry: &GenericStore, space: &SpaceName, namespace: &str, name: &str, port: u16) -> Result<String, Unreachable> {
        let (Some(services), Some(slices)) = (&self.services, &self.slices) else { return Err(Unreachable::NoService) };
        let scope = Scope::one(space.clone(), Some(namespace.to_owned()));
        let record = registry.reader().record(services, &scope, name).await.map_err(|_| Unreachable::NoService)?;
        let service: Value = serde_json::from_slice(&record.value).map_err(|_| Unreachable::NoService)?;
        let ports = service.pointer("/spec/ports").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let service_port = ports.iter().find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(port))).ok_or(Unreachable::NoPort(port))?;
        let port_name = service_port.get("name").and_then(Value::as_str).unwrap_or_default();
        let labels = LabelSelector::parse(&format!("kubernetes.io/service-name={name}")).map_err(|_| Unreachable::NoEndpoints)?;
        let options = ListOptions { labels, ..Default::default() };
        let (items, _) = registry.list(slices, &scope, &options).await.map_err(|_| Unreachable::NoEndpoints)?;
        for slice in &items {
            let named = slice.get("ports").and_then(Value::as_array)
                .and_then(|ports| ports.iter().find(|p| p.get("name").and_then(Value::as_str).unwrap_or_default() == port_name));
            let Some(target) = named.and_then(|p| p.get("port")).and_then(Value::as_u64) else { continue };
            let endpoints = slice.get("endpoints").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            let ready = endpoints.iter().filter(|e| e.pointer("/conditions/ready").and_then(Value::as_bool) != Some(false));
            let address = ready.flat_map(|e| e.get("addresses").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)).next();
            if let Some(address) = address {
                return Ok(if address.contains(':') { format!("[{address}]:{target}") } else { format!("{address}:{target}") });
            }
        }
        Err(Unreachable::NoEndpoints)
    }
}
