//! Service: kube's defaults (`ClusterIP`, no session affinity, TCP ports whose target is their own number, one IPv4
//! family, `internalTrafficPolicy: Cluster`, ...) and kube's allocations, each space being a cluster of its own: a
//! cluster IP from `--service-cluster-ip-range` (its first address for `default/kubernetes`), and node ports from
//! `--service-node-port-range` for NodePort and LoadBalancer Services. An address or port asked for must be in its
//! range and free in the space (kube's 422s). What a space has allocated is `ServiceAllocations`, fed by the
//! Services' writes; Service writes take turns (`begin_write`), so two creates never get one address.
//!
//! With replicas on one etcd, each replica allocates from what it has seen: two replicas creating Services in one
//! space at the same instant could pick the same address (kube's allocator would retry on a conflict).

pub mod endpoints;

use std::collections::{BTreeSet, HashMap};
use std::net::Ipv4Addr;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use kspaces_authz::Caller;
use kspaces_storage::{Revision, SpaceName};
use serde_json::{json, Value};
use tokio::sync::Mutex;

use super::pod_template::set_default;
use super::{Context, Kind, Rules};
use crate::registry::admission::{Admission, AdmissionPhase, Attributes, Operation};
use crate::registry::observe::{RevisionMap, WriteObserver};
use crate::registry::strategy::{Part, Strategy, WriteGuard};
use crate::registry::{GenericStore, ResourceInfo};
use crate::status::{ApiError, ApiResult, Cause};

/// Service: its strategy and the allocation checks.
pub const KIND: Kind = Kind::rules(rules);

fn rules(context: &Context, rules: &mut Rules) {
    rules.strategy("", "Service", Arc::new(ServiceStrategy { allocations: context.services.clone() }));
    rules.admit(Arc::new(ServiceAllocationAdmission { allocations: context.services.clone() }));
}

/// The ranges Services are allocated from (`--service-cluster-ip-range`, `--service-node-port-range`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ranges {
    /// The network and its prefix length.
    pub network: Ipv4Addr,
    pub prefix: u8,
    pub node_ports: (u16, u16),
}

impl Default for Ranges {
    /// kube-apiserver's defaults.
    fn default() -> Ranges {
        Ranges { network: Ipv4Addr::new(10, 0, 0, 0), prefix: 24, node_ports: (30000, 32767) }
    }
}

impl Ranges {
    /// Parses `--service-cluster-ip-range` (an IPv4 CIDR of /8 to /30) and `--service-node-port-range` (`A-B`).
    pub fn parse(cidr: &str, ports: &str) -> Result<Ranges, String> {
        let (address, prefix) = cidr.split_once('/').ok_or_else(|| format!("--service-cluster-ip-range {cidr:?}: not a CIDR"))?;
        let address: Ipv4Addr = address.parse().map_err(|_| format!("--service-cluster-ip-range {cidr:?}: only IPv4 ranges are served"))?;
        let prefix: u8 = prefix.parse().ok().filter(|p| (8..=30).contains(p))
            .ok_or_else(|| format!("--service-cluster-ip-range {cidr:?}: the prefix must be /8 to /30"))?;
        let network = Ipv4Addr::from(u32::from(address) & mask(prefix));
        let (low, high) = ports.split_once('-').and_then(|(a, b)| Some((a.trim().parse::<u16>().ok()?, b.trim().parse::<u16>().ok()?)))
            .filter(|(a, b)| a < b).ok_or_else(|| format!("--service-node-port-range {ports:?}: must be A-B with A < B"))?;
        Ok(Ranges { network, prefix, node_ports: (low, high) })
    }

    fn cidr(&self) -> String {
        format!("{}/{}", self.network, self.prefix)
    }

    fn contains(&self, ip: Ipv4Addr) -> bool {
        u32::from(ip) & mask(self.prefix) == u32::from(self.network)
    }

    /// The addresses Services may get: all but the network's and the broadcast address.
    fn first(&self) -> u32 {
        u32::from(self.network) + 1
    }

    fn last(&self) -> u32 {
        (u32::from(self.network) | !mask(self.prefix)) - 1
    }
}

fn mask(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)
}

/// What one Service holds: its cluster IPs and node ports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Held {
    ips: Vec<Ipv4Addr>,
    ports: Vec<u16>,
}

impl Held {
    fn of(service: &Value) -> Held {
        let ips = service.pointer("/spec/clusterIPs").and_then(Value::as_array).into_iter().flatten()
            .chain(service.pointer("/spec/clusterIP"))
            .filter_map(Value::as_str).filter_map(|ip| ip.parse().ok()).collect::<BTreeSet<Ipv4Addr>>().into_iter().collect();
        let ports = node_ports(service).into_iter().map(|(_, port)| port).collect::<BTreeSet<u16>>().into_iter().collect();
        Held { ips, ports }
    }
}

/// The node ports of a Service's ports, with their index.
fn node_ports(service: &Value) -> Vec<(usize, u16)> {
    service.pointer("/spec/ports").and_then(Value::as_array).into_iter().flatten().enumerate()
        .filter_map(|(i, p)| Some((i, u16::try_from(p.get("nodePort")?.as_u64()?).ok()?)))
        .filter(|(_, port)| *port != 0)
        .collect()
}

/// What every space's Services have allocated, by space then `namespace/name`; the ranges; the turn Service writes
/// take.
#[derive(Debug, Default)]
pub struct ServiceAllocations {
    ranges: RwLock<Ranges>,
    spaces: RwLock<HashMap<SpaceName, RevisionMap<String, Held>>>,
    turn: Arc<Mutex<()>>,
}

impl ServiceAllocations {
    /// Sets the ranges (from the flags, before the server serves).
    pub fn set_ranges(&self, ranges: Ranges) {
        *self.ranges.write().unwrap_or_else(|e| e.into_inner()) = ranges;
    }

    fn ranges(&self) -> Ranges {
        *self.ranges.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The addresses and ports the Services of `space` other than `except` (`namespace/name`) hold.
    fn taken(&self, space: &SpaceName, except: &str) -> (BTreeSet<Ipv4Addr>, BTreeSet<u16>) {
        let spaces = self.spaces.read().unwrap_or_else(|e| e.into_inner());
        let mut taken = (BTreeSet::new(), BTreeSet::new());
        for (_, held) in spaces.get(space).into_iter().flat_map(|s| s.iter()).filter(|(key, _)| key.as_str() != except) {
            taken.0.extend(held.ips.iter().copied());
            taken.1.extend(held.ports.iter().copied());
        }
        taken
    }

    /// Fills in what `service` (in `space`) is to be given: a cluster IP unless it names one (or is headless or
    /// ExternalName), and a node port for each port that needs one and names none. What it names is checked by
    /// `check`; `old` (an update) keeps what it had.
    fn allocate(&self, space: &SpaceName, service: &mut Value) {
        let ranges = self.ranges();
        let key = key_of(service);
        let (mut ips, mut ports) = self.taken(space, &key);
        let Some(spec) = service.get_mut("spec").and_then(Value::as_object_mut) else { return };
        let kind = spec.get("type").and_then(Value::as_str).unwrap_or("ClusterIP").to_owned();
        if kind != "ExternalName" && spec.get("clusterIP").and_then(Value::as_str).is_none_or(str::is_empty) {
            let wanted = spec.get("clusterIPs").and_then(|l| l.get(0)).and_then(Value::as_str).filter(|ip| !ip.is_empty()).map(str::to_owned);
            let ip = match wanted {
                Some(ip) => Some(ip),
                // The range's first address is the `kubernetes` Service's, as kube reserves it.
                None if key == "default/kubernetes" => Some(Ipv4Addr::from(ranges.first()).to_string()),
                None => (ranges.first() + 1..=ranges.last()).map(Ipv4Addr::from).find(|ip| !ips.contains(ip)).map(|ip| ip.to_string()),
            };
            if let Some(ip) = ip {
                ips.insert(ip.parse().unwrap_or(Ipv4Addr::UNSPECIFIED));
                spec.insert("clusterIP".into(), json!(ip));
            }
        }
        if kind != "ExternalName" {
            if let Some(ip) = spec.get("clusterIP").cloned() {
                set_default(spec, "clusterIPs", json!([ip]));
            }
        }
        let needs_node_ports = kind == "NodePort"
            || (kind == "LoadBalancer" && spec.get("allocateLoadBalancerNodePorts").and_then(Value::as_bool) != Some(false));
        if needs_node_ports {
            let (low, high) = ranges.node_ports;
            for port in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut) {
                if port.get("nodePort").and_then(Value::as_u64).is_some_and(|p| p != 0) {
                    continue;
                }
                if let Some(free) = (low..=high).find(|p| !ports.contains(p)) {
                    ports.insert(free);
                    port.insert("nodePort".into(), json!(free));
                }
            }
        }
    }

    /// kube's 422 causes for what `service` names in `space`: addresses and ports outside their ranges or held by
    /// another Service of the space.
    fn check(&self, space: &SpaceName, service: &Value) -> Vec<Cause> {
        let ranges = self.ranges();
        let (ips, ports) = self.taken(space, &key_of(service));
        let mut causes = Vec::new();
        let listed: Vec<&str> = service.pointer("/spec/clusterIPs").and_then(Value::as_array).into_iter().flatten()
            .filter_map(Value::as_str).collect();
        for text in listed.iter().filter(|ip| **ip != "None" && !ip.is_empty()) {
            let shown = format!("[]string{{{}}}", listed.iter().map(|ip| format!("{ip:?}")).collect::<Vec<_>>().join(", "));
            let why = match text.parse::<Ipv4Addr>() {
                Err(_) => "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".to_owned(),
                Ok(ip) if !ranges.contains(ip) => format!("failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. \
                    The range of valid IPs is {}", ranges.cidr()),
                Ok(ip) if ips.contains(&ip) => format!("failed to allocate IP {ip}: provided IP is already allocated"),
                Ok(_) => continue,
            };
            causes.push(Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {shown}: {why}"), field: "spec.clusterIPs".into() });
        }
        let (low, high) = ranges.node_ports;
        for (index, port) in node_ports(service) {
            let why = if !(low..=high).contains(&port) {
                format!("provided port is not in the valid range. The range of valid ports is {low}-{high}")
            } else if ports.contains(&port) {
                "provided port is already allocated".to_owned()
            } else {
                continue;
            };
            causes.push(Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {port}: {why}"), field: format!("spec.ports[{index}].nodePort") });
        }
        causes
    }
}

/// `namespace/name` of a Service.
fn key_of(service: &Value) -> String {
    let text = |pointer: &str| service.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
    format!("{}/{}", text("/metadata/namespace"), text("/metadata/name"))
}

impl WriteObserver for ServiceAllocations {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[("", "Service")]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        if !resource.is("", "Service") {
            return;
        }
        let key = object.map(key_of).unwrap_or_else(|| name.to_owned());
        let mut spaces = self.spaces.write().unwrap_or_else(|e| e.into_inner());
        spaces.entry(space.clone()).or_default().apply(key, object.map(Held::of), revision);
    }

    fn deleted(&self, resource: &ResourceInfo, space: &SpaceName, _name: &str, last: &Value, revision: Revision) {
        if !resource.is("", "Service") {
            return;
        }
        let mut spaces = self.spaces.write().unwrap_or_else(|e| e.into_inner());
        spaces.entry(space.clone()).or_default().apply(key_of(last), None, revision);
    }

    fn holds(&self, resource: &ResourceInfo) -> Vec<(SpaceName, String)> {
        if !resource.is("", "Service") {
            return Vec::new();
        }
        let spaces = self.spaces.read().unwrap_or_else(|e| e.into_inner());
        spaces.iter().flat_map(|(space, held)| held.keys().map(move |key| (space.clone(), key.clone()))).collect()
    }
}

/// How long a client sticks to one endpoint under `ClientIP` affinity unless told (kube's three hours).
const CLIENT_IP_AFFINITY_SECONDS: i64 = 10800;

pub struct ServiceStrategy {
    allocations: Arc<ServiceAllocations>,
}

fn defaults(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else { return };
    set_default(spec, "type", json!("ClusterIP"));
    set_default(spec, "sessionAffinity", json!("None"));
    let kind = spec.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
    if kind != "ExternalName" {
        set_default(spec, "ipFamilies", json!(["IPv4"]));
        set_default(spec, "ipFamilyPolicy", json!("SingleStack"));
        set_default(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if kind == "NodePort" || kind == "LoadBalancer" {
        set_default(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        set_default(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    if spec.get("sessionAffinity").and_then(Value::as_str) == Some("ClientIP")
        && spec.get("sessionAffinityConfig").and_then(|config| config.pointer("/clientIP/timeoutSeconds")).is_none_or(Value::is_null)
    {
        spec.insert("sessionAffinityConfig".into(), json!({"clientIP": {"timeoutSeconds": CLIENT_IP_AFFINITY_SECONDS}}));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(port, "protocol", json!("TCP"));
            let unset = port.get("targetPort").is_none_or(|target| target.is_null() || target == &json!(0) || target == &json!(""));
            if let (true, Some(number)) = (unset, port.get("port").cloned()) {
                port.insert("targetPort".into(), number);
            }
        }
    }
}

/// kube's `patchAllocatedValues`: an update that leaves the cluster IPs or a port's node port out keeps what the
/// Service had (a `kubectl apply` of a manifest without them).
fn keep_allocated(old: &Value, new: &mut Value) {
    let old_type = old.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP");
    let new_type = new.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP").to_owned();
    if old_type == "ExternalName" || new_type == "ExternalName" {
        return;
    }
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else { return };
    for field in ["clusterIP", "clusterIPs"] {
        let missing = spec.get(field).is_none_or(|v| v.is_null() || v.as_str() == Some("") || v.as_array().is_some_and(Vec::is_empty));
        if let (true, Some(value)) = (missing, old.pointer(&format!("/spec/{field}"))) {
            spec.insert(field.into(), value.clone());
        }
    }
    if new_type != "NodePort" && new_type != "LoadBalancer" {
        return;
    }
    let old_ports = old.pointer("/spec/ports").and_then(Value::as_array).cloned().unwrap_or_default();
    for port in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut) {
        if port.get("nodePort").and_then(Value::as_u64).is_some_and(|p| p != 0) {
            continue;
        }
        let same = |o: &&Value| o.get("port") == port.get("port") && o.get("protocol").unwrap_or(&json!("TCP")) == port.get("protocol").unwrap_or(&json!("TCP"));
        if let Some(node_port) = old_ports.iter().find(same).and_then(|o| o.get("nodePort")).cloned() {
            port.insert("nodePort".into(), node_port);
        }
    }
}

#[async_trait]
impl Strategy for ServiceStrategy {
    fn prepare_create(&self, _resource: &ResourceInfo, space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        defaults(object);
        self.allocations.allocate(space, object);
    }

    fn prepare_update(&self, _resource: &ResourceInfo, space: &SpaceName, old: &Value, new: &mut Value, part: Part) {
        defaults(new);
        if part == Part::Main {
            keep_allocated(old, new);
            self.allocations.allocate(space, new);
        }
    }

    fn validate(&self, _resource: &ResourceInfo, object: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
        let Some(old) = old else { return };
        let external = |o: &Value| o.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName");
        let had = old.pointer("/spec/clusterIPs").and_then(Value::as_array).is_some_and(|ips| !ips.is_empty());
        if had && !external(old) && !external(object) && old.pointer("/spec/clusterIPs") != object.pointer("/spec/clusterIPs") {
            causes.push(Cause { reason: "FieldValueInvalid", message: "Invalid value: []string(nil): may not change once set".into(),
                field: "spec.clusterIPs[0]".into() });
        }
    }

    /// Service writes take turns: an address is chosen from what the space's Services hold, then stored.
    async fn begin_write(&self, _resource: &ResourceInfo) -> Option<WriteGuard> {
        Some(Box::new(self.allocations.turn.clone().lock_owned().await))
    }
}

/// Refuses a Service whose addresses or node ports are outside their ranges or held by another Service of the
/// space (kube's 422 `provided IP is already allocated`, `provided port is already allocated`).
pub struct ServiceAllocationAdmission {
    allocations: Arc<ServiceAllocations>,
}

#[async_trait]
impl Admission for ServiceAllocationAdmission {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        resource.is("", "Service") && matches!(operation, Operation::Create | Operation::Update)
    }

    fn phase(&self) -> AdmissionPhase {
        AdmissionPhase::Validating
    }

    async fn admit(&self, _registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        let Some(service) = attributes.object else { return Ok(()) };
        let causes = self.allocations.check(attributes.space, service);
        if causes.is_empty() {
            return Ok(());
        }
        Err(ApiError::invalid("", "Service", attributes.name, causes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name, "namespace": "default"}, "spec": spec})
    }

    #[test]
    fn addresses_and_ports_come_from_their_ranges_once_each() {
        let allocations = ServiceAllocations::default();
        let row = crate::kinds::resources().into_iter().find(|r| r.is("", "Service")).unwrap_or_else(|| panic!("no Service row"));
        let space = SpaceName::new("t1").unwrap_or_else(|e| panic!("{e}"));
        let mut kubernetes = service("kubernetes", json!({"ports": [{"port": 443}]}));
        defaults(&mut kubernetes);
        allocations.allocate(&space, &mut kubernetes);
        assert_eq!(kubernetes["spec"]["clusterIP"], "10.0.0.1", "the first address is the kubernetes Service's");
        allocations.written(&row, &space, "default/kubernetes", Some(&kubernetes), Revision(1));
        let mut web = service("web", json!({"type": "NodePort", "ports": [{"port": 80}, {"port": 81}]}));
        defaults(&mut web);
        allocations.allocate(&space, &mut web);
        assert_eq!((&web["spec"]["clusterIP"], &web["spec"]["clusterIPs"]), (&json!("10.0.0.2"), &json!(["10.0.0.2"])));
        assert_eq!((&web["spec"]["ports"][0]["nodePort"], &web["spec"]["ports"][1]["nodePort"]), (&json!(30000), &json!(30001)));
        assert!(allocations.check(&space, &web).is_empty());
        allocations.written(&row, &space, "default/web", Some(&web), Revision(2));
        // Another space is another cluster.
        let other = SpaceName::new("t2").unwrap_or_else(|e| panic!("{e}"));
        let mut elsewhere = service("web", json!({"ports": [{"port": 80}]}));
        allocations.allocate(&other, &mut elsewhere);
        assert_eq!(elsewhere["spec"]["clusterIP"], "10.0.0.2");
        // Taken or outside: kube's words.
        let taken = service("copy", json!({"clusterIP": "10.0.0.2", "clusterIPs": ["10.0.0.2"], "ports": [{"port": 1, "nodePort": 30001}]}));
        let messages: Vec<String> = allocations.check(&space, &taken).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(messages, [
            "spec.clusterIPs: Invalid value: []string{\"10.0.0.2\"}: failed to allocate IP 10.0.0.2: provided IP is already allocated",
            "spec.ports[0].nodePort: Invalid value: 30001: provided port is already allocated",
        ]);
        let outside = service("far", json!({"clusterIPs": ["10.1.0.9"], "ports": [{"port": 1, "nodePort": 80}]}));
        let messages: Vec<String> = allocations.check(&space, &outside).into_iter().map(|c| c.message).collect();
        assert!(messages[0].ends_with("is not in the valid range. The range of valid IPs is 10.0.0.0/24"), "{messages:?}");
        assert!(messages[1].ends_with("The range of valid ports is 30000-32767"), "{messages:?}");
        // Deleted: its address is free again.
        allocations.deleted(&row, &space, "web", &web, Revision(3));
        let mut again = service("again", json!({"ports": [{"port": 80}]}));
        allocations.allocate(&space, &mut again);
        assert_eq!(again["spec"]["clusterIP"], "10.0.0.2");
    }

    #[test]
    fn ranges_are_parsed_as_the_flags_give_them() {
        assert_eq!(Ranges::parse("10.96.0.0/12", "30000-32767"), Ok(Ranges { network: Ipv4Addr::new(10, 96, 0, 0), prefix: 12, node_ports: (30000, 32767) }));
        assert!(Ranges::parse("fd00::/108", "30000-32767").is_err());
        assert!(Ranges::parse("10.0.0.0/24", "32767-30000").is_err());
    }
}
