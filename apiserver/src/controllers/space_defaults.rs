//! The objects every space and namespace of a Kubernetes cluster holds, kept as kube keeps them: in each namespace
//! a `default` ServiceAccount (kube-controller-manager's serviceaccounts-controller) and the `kube-root-ca.crt`
//! ConfigMap holding the CA clients trust (its root-ca-cert-publisher); in each space's `default` namespace the
//! `kubernetes` Service, its legacy Endpoints and its EndpointSlice (kube-apiserver's own "kubernetes service"
//! controller), pointing at this server.
//!
//! It learns what to look at from the registry's write observer: a namespace written (not terminating), or one of
//! these objects deleted. Nothing is done in the request that creates a namespace (creates stay as fast as they
//! were), and a space with no namespaces costs nothing. A namespace that is terminating, or gone (its space
//! deleted), is left alone; the creates go through NamespaceLifecycle admission, which refuses them in a namespace
//! being terminated.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kspaces_storage::{Revision, SpaceName};
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::registry::observe::WriteObserver;
use crate::registry::{is_deleting, GenericStore, Part, ResourceInfo, ResourceTable, Scope, WriteContext};
use crate::status::{ApiError, ApiResult};
use crate::tenancy::{Phase, TenantCache};

/// The ServiceAccount every namespace has.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
/// The ConfigMap holding the cluster's CA in every namespace (kube's root-ca-cert-publisher).
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// The Service (and Endpoints, EndpointSlice) naming the API server in the `default` namespace.
pub const KUBERNETES_SERVICE: &str = "kubernetes";
/// The namespace holding the `kubernetes` Service.
const DEFAULT_NAMESPACE: &str = "default";
/// kube's description of the root CA ConfigMap.
const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";
/// How many namespaces are looked at once.
const PARALLEL: usize = 16;

/// Namespaces to look at, by (space, namespace).
#[derive(Debug, Default)]
pub struct SpaceDefaultsQueue {
    pending: Mutex<BTreeSet<(SpaceName, String)>>,
    wake: Notify,
}

impl SpaceDefaultsQueue {
    pub fn push(&self, space: SpaceName, namespace: String) {
        if self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert((space, namespace)) {
            self.wake.notify_one();
        }
    }

    fn take(&self) -> Vec<(SpaceName, String)> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner())).into_iter().collect()
    }
}

/// True for the objects this controller keeps, by resource and name.
fn kept(resource: &ResourceInfo, name: &str) -> bool {
    match name {
        DEFAULT_SERVICE_ACCOUNT => resource.is("", "ServiceAccount"),
        ROOT_CA_CONFIG_MAP => resource.is("", "ConfigMap"),
        KUBERNETES_SERVICE => resource.is("", "Service") || resource.is("", "Endpoints") || resource.is("discovery.k8s.io", "EndpointSlice"),
        _ => false,
    }
}

impl WriteObserver for SpaceDefaultsQueue {
    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, _revision: Revision) {
        if object.is_some_and(|namespace| !terminating(namespace)) && resource.is("", "Namespace") {
            self.push(space.clone(), name.to_owned());
        }
    }

    fn deleted(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, last: &Value, revision: Revision) {
        if kept(resource, name) {
            if let Some(namespace) = last.pointer("/metadata/namespace").and_then(Value::as_str) {
                self.push(space.clone(), namespace.to_owned());
            }
        }
        self.written(resource, space, name, None, revision);
    }
}


/// Deleted, or in phase Terminating.
fn terminating(namespace: &Value) -> bool {
    is_deleting(namespace) || namespace.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
}

/// Where clients reach this server and which CA they trust: what the objects say. Set once the listener is bound.
#[derive(Clone, Debug)]
pub struct Serving {
    pub ca_pem: String,
    pub address: SocketAddr,
}

/// The controller: what it reads and writes through.
#[derive(Clone)]
pub struct SpaceDefaultsController {
    pub registry: GenericStore,
    pub resources: ResourceTable,
    pub queue: Arc<SpaceDefaultsQueue>,
    /// The tenants, whose spaces' `default` namespaces are looked at on every start.
    pub tenants: Arc<TenantCache>,
    /// Unset until the server listens (in-process tests without a listener): then nothing is made.
    pub serving: Option<Arc<Serving>>,
}

/// The manager of the objects it makes, kube-controller-manager's.
const MANAGER: &str = super::CONTROLLER_MANAGER;

impl SpaceDefaultsController {
    /// Runs forever: waits for queued namespaces, then looks at each, `PARALLEL` at once; a failed one is tried
    /// again after `pause`.
    pub async fn run(self, pause: Duration) {
        let Some(serving) = self.serving.clone() else { return };
        // The system space's and the tenants' `default` namespaces are looked at on every start: the server's
        // address may have changed since. Nested workspaces' are looked at when something of theirs is written.
        self.queue.push(SpaceName::system(), DEFAULT_NAMESPACE.to_owned());
        for (tenant, phase) in self.tenants.tenants() {
            if let (Phase::Active, Ok(space)) = (phase, crate::tenancy::space_of(&tenant)) {
                self.queue.push(space, DEFAULT_NAMESPACE.to_owned());
            }
        }
        loop {
            self.queue.wake.notified().await;
            let controller = &self;
            let serving = &serving;
            let mut failed = Vec::new();
            let items = self.queue.take();
            let mut outcomes = futures::stream::iter(items.into_iter().map(|item| async move {
                let outcome = controller.reconcile(serving, &item.0, &item.1).await;
                (item, outcome)
            })).buffer_unordered(PARALLEL);
            while let Some(((space, namespace), outcome)) = outcomes.next().await {
                if let Err(err) = outcome {
                    tracing::warn!(%err, space = %space, namespace, "making a namespace's default objects");
                    failed.push((space, namespace));
                }
            }
            drop(outcomes);
            if !failed.is_empty() {
                tokio::time::sleep(pause).await;
                for (space, namespace) in failed {
                    self.queue.push(space, namespace);
                }
            }
        }
    }

    fn row(&self, group: &str, kind: &str) -> ApiResult<Arc<ResourceInfo>> {
        self.resources.by_kind(group, kind).cloned().ok_or_else(|| ApiError::internal(format!("no {group}/{kind} resource")))
    }

    /// Makes what `namespace` of `space` lacks, unless the namespace is gone or terminating.
    pub async fn reconcile(&self, serving: &Serving, space: &SpaceName, namespace: &str) -> ApiResult<()> {
        let namespaces = self.row("", "Namespace")?;
        match self.registry.reader().get(&namespaces, &Scope::one(space.clone(), None), namespace).await {
            Ok(found) if !terminating(&found) => {}
            Ok(_) | Err(ApiError { code: 404, .. }) => return Ok(()),
            Err(err) => return Err(err),
        }
        let scope = Scope::one(space.clone(), Some(namespace.to_owned()));
        let mut wanted = vec![
            (self.row("", "ServiceAccount")?, json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace}})),
            (self.row("", "ConfigMap")?, root_ca(namespace, &serving.ca_pem)),
        ];
        if namespace == DEFAULT_NAMESPACE {
            wanted.push((self.row("", "Service")?, kubernetes_service(serving.address.port())));
            wanted.push((self.row("", "Endpoints")?, kubernetes_endpoints(serving.address)));
            wanted.push((self.row("discovery.k8s.io", "EndpointSlice")?, kubernetes_endpoint_slice(serving.address)));
        }
        for (resource, desired) in wanted {
            self.ensure(&resource, &scope, desired).await?;
        }
        Ok(())
    }

    /// Creates `desired` when missing; brings the fields this server decides (a ConfigMap's data, the endpoints'
    /// address and port) back to `desired` when they differ. A refusal (the namespace terminating since, a quota
    /// full) leaves it missing, as kube's controllers do until the next event.
    async fn ensure(&self, resource: &ResourceInfo, scope: &Scope, desired: Value) -> ApiResult<()> {
        let name = desired.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned();
        let write = WriteContext::server(MANAGER, "");
        let current = match self.registry.reader().get(resource, scope, &name).await {
            Ok(current) => current,
            Err(ApiError { code: 404, .. }) => {
                return match self.registry.create(resource, scope, desired, &write).await {
                    Ok(_) | Err(ApiError { code: 403 | 404 | 409, .. }) => Ok(()),
                    Err(err) => Err(err),
                };
            }
            Err(err) => return Err(err),
        };
        // The fields this server decides, as (parent, field).
        let owned: &[(&str, &str)] = match resource.kind.as_str() {
            "ConfigMap" => &[("", "data")],
            "Endpoints" => &[("", "subsets")],
            "EndpointSlice" => &[("", "addressType"), ("", "endpoints"), ("", "ports")],
            "Service" => &[("/spec", "ports")],
            _ => &[],
        };
        let field = |object: &Value, (parent, name): (&str, &str)| object.pointer(parent).and_then(|p| p.get(name)).cloned();
        if owned.iter().all(|at| field(&current, *at) == field(&desired, *at)) || is_deleting(&current) {
            return Ok(());
        }
        let update = self.registry.guaranteed_update(resource, scope, &name, Part::Main, &write, |current| {
            let mut next = current.clone();
            for (parent, name) in owned {
                if let (Some(target), Some(value)) = (next.pointer_mut(parent).and_then(Value::as_object_mut), field(&desired, (parent, name))) {
                    target.insert((*name).to_owned(), value);
                }
            }
            Ok(next)
        }).await;
        match update {
            Ok(_) | Err(ApiError { code: 403 | 404 | 409, .. }) => Ok(()),
            Err(err) => Err(err),
        }
    }
}

/// The address clients are told: the bound address, or loopback for an unspecified one (as the admin kubeconfig).
fn advertised(address: SocketAddr) -> IpAddr {
    match address.ip() {
        ip if ip.is_unspecified() && ip.is_ipv6() => IpAddr::from(std::net::Ipv6Addr::LOCALHOST),
        ip if ip.is_unspecified() => IpAddr::from([127, 0, 0, 1]),
        ip => ip,
    }
}

fn root_ca(namespace: &str, ca_pem: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": namespace, "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION}},
        "data": {"ca.crt": ca_pem}})
}

/// kube-apiserver's `default/kubernetes` Service: port 443 named `https` to the server's secure port.
pub fn kubernetes_service(port: u16) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": KUBERNETES_SERVICE, "namespace": DEFAULT_NAMESPACE, "labels": {"component": "apiserver", "provider": "kubernetes"}},
        // Its cluster IP is the first of --service-cluster-ip-range, as the Service kind allocates it.
        "spec": {"type": "ClusterIP", "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster", "sessionAffinity": "None",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]}})
}

fn kubernetes_endpoints(address: SocketAddr) -> Value {
    json!({"apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": KUBERNETES_SERVICE, "namespace": DEFAULT_NAMESPACE, "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": advertised(address).to_string()}],
            "ports": [{"name": "https", "port": address.port(), "protocol": "TCP"}]}]})
}

fn kubernetes_endpoint_slice(address: SocketAddr) -> Value {
    let ip = advertised(address);
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": KUBERNETES_SERVICE, "namespace": DEFAULT_NAMESPACE, "labels": {"kubernetes.io/service-name": KUBERNETES_SERVICE}},
        "addressType": if ip.is_ipv6() { "IPv6" } else { "IPv4" },
        "endpoints": [{"addresses": [ip.to_string()], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": address.port(), "protocol": "TCP"}]})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_hears_of_live_namespaces_and_of_its_objects_deleted() {
        let table = ResourceTable::new(crate::kinds::resources());
        let row = |group: &str, kind: &str| table.by_kind(group, kind).cloned().expect("a row");
        let (namespaces, accounts, maps) = (row("", "Namespace"), row("", "ServiceAccount"), row("", "ConfigMap"));
        let space = SpaceName::system();
        let queue = SpaceDefaultsQueue::default();
        queue.written(&namespaces, &space, "live", Some(&json!({"metadata": {"name": "live"}})), Revision::ZERO);
        queue.written(&namespaces, &space, "going", Some(&json!({"metadata": {"name": "going"}, "status": {"phase": "Terminating"}})), Revision::ZERO);
        queue.written(&namespaces, &space, "gone", None, Revision::ZERO);
        queue.deleted(&accounts, &space, "default", &json!({"metadata": {"name": "default", "namespace": "a"}}), Revision::ZERO);
        queue.deleted(&accounts, &space, "other", &json!({"metadata": {"name": "other", "namespace": "b"}}), Revision::ZERO);
        queue.deleted(&maps, &space, ROOT_CA_CONFIG_MAP, &json!({"metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": "c"}}), Revision::ZERO);
        queue.written(&maps, &space, "settings", Some(&json!({"metadata": {"name": "settings", "namespace": "d"}})), Revision::ZERO);
        let names: Vec<String> = queue.take().into_iter().map(|(_, namespace)| namespace).collect();
        assert_eq!(names, ["a", "c", "live"]);
    }

    #[test]
    fn the_endpoints_name_the_address_clients_reach() {
        let any: SocketAddr = "0.0.0.0:6443".parse().expect("an address");
        assert_eq!(kubernetes_endpoint_slice(any)["endpoints"][0]["addresses"], json!(["127.0.0.1"]));
        let six: SocketAddr = "[::]:443".parse().expect("an address");
        assert_eq!(kubernetes_endpoint_slice(six)["addressType"], "IPv6");
        assert_eq!(kubernetes_service(6443)["spec"]["ports"][0]["targetPort"], 6443);
    }
}
