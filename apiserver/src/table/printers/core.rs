//! Core-group kinds other than pods and events: namespaces, config, services, nodes, volumes.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{count, text, Printer, Row};
use crate::table::age::creation_age;
use crate::table::columns::{col, wide, ColumnSpec, AGE, NAME};
use crate::table::read::{annotation, array_at, at, format_labels, map_len, name, opt_str, or_none, str_at};

static NAMESPACE_COLUMNS: [ColumnSpec; 3] = [NAME, col("Status", "string", "The status of the namespace"), AGE];
pub(crate) static NAMESPACE: Printer = Printer { columns: &NAMESPACE_COLUMNS, print: print_namespace };

static TENANT_COLUMNS: [ColumnSpec; 3] = [NAME, col("Status", "string", "The status of the tenant"), AGE];
/// Tenants print like namespaces (Arktos does the same).
pub(crate) static TENANT: Printer = Printer { columns: &TENANT_COLUMNS, print: print_namespace };
static LOGICAL_CLUSTER_COLUMNS: [ColumnSpec; 4] = [
    NAME,
    col("Phase", "string", "The phase of the space"),
    col("CRD Policy", "string", "How the space resolves a resource defined both by a system CRD and by its own CRD"),
    AGE,
];
pub(crate) static LOGICAL_CLUSTER: Printer = Printer { columns: &LOGICAL_CLUSTER_COLUMNS, print: print_logical_cluster };

static WORKSPACE_COLUMNS: [ColumnSpec; 6] = [
    NAME,
    col("Type", "string", "Type of the workspace"),
    col("Region", "string", "The region this workspace is in"),
    col("Phase", "string", "The current phase (e.g. Scheduling, Initializing, Ready, Deleting)"),
    col("URL", "string", "URL to access the workspace"),
    AGE,
];
/// Workspaces print as kcp's CRD prints them.
pub(crate) static WORKSPACE: Printer = Printer { columns: &WORKSPACE_COLUMNS, print: print_workspace };

/// NAME, `spec.type.name`, the `region` label, `status.phase`, `spec.URL`, AGE.
fn print_workspace(object: &Value, now: DateTime<Utc>) -> Row {
    let cells = [
        name(object),
        str_at(object, &["spec", "type", "name"]),
        str_at(object, &["metadata", "labels", "region"]),
        str_at(object, &["status", "phase"]),
        str_at(object, &["spec", "URL"]),
    ];
    let mut row: Vec<Value> = cells.into_iter().map(text).collect();
    row.push(text(creation_age(object, now)));
    row.into()
}

/// NAME, `status.phase`, `spec.crdPolicy`, AGE.
fn print_logical_cluster(object: &Value, now: DateTime<Utc>) -> Row {
    let cells = [name(object), str_at(object, &["status", "phase"]), str_at(object, &["spec", "crdPolicy"])];
    let mut row: Vec<Value> = cells.into_iter().map(text).collect();
    row.push(text(creation_age(object, now)));
    row.into()
}

/// NAME, `status.phase`, AGE.
fn print_namespace(object: &Value, now: DateTime<Utc>) -> Row {
    vec![text(name(object)), text(str_at(object, &["status", "phase"])), text(creation_age(object, now))].into()
}

static CONFIG_MAP_COLUMNS: [ColumnSpec; 3] = [
    NAME,
    col("Data", "string", "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'."),
    AGE,
];
pub(crate) static CONFIG_MAP: Printer = Printer { columns: &CONFIG_MAP_COLUMNS, print: print_config_map };

fn print_config_map(object: &Value, now: DateTime<Utc>) -> Row {
    let entries = map_len(object, &["data"]) + map_len(object, &["binaryData"]);
    vec![text(name(object)), count(entries), text(creation_age(object, now))].into()
}

static COMPONENT_STATUS_COLUMNS: [ColumnSpec; 4] = [
    NAME,
    col("Status", "string", "Status of the component conditions"),
    col("Message", "string", "Message of the component conditions"),
    col("Error", "string", "Error of the component conditions"),
];
pub(crate) static COMPONENT_STATUS: Printer = Printer { columns: &COMPONENT_STATUS_COLUMNS, print: print_component_status };

/// kube's `printComponentStatus`: the `Healthy` condition's status, message and error.
fn print_component_status(object: &Value, _now: DateTime<Utc>) -> Row {
    let healthy = object.get("conditions").and_then(Value::as_array).into_iter().flatten()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Healthy"));
    let field = |c: &Value, key: &str| c.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let (status, message, error) = match healthy {
        Some(c) => (if field(c, "status") == "True" { "Healthy" } else { "Unhealthy" }.to_owned(), field(c, "message"), field(c, "error")),
        None => ("Unknown".to_owned(), String::new(), String::new()),
    };
    vec![text(name(object)), text(&status), text(&message), text(&error)].into()
}

static SECRET_COLUMNS: [ColumnSpec; 4] = [
    NAME,
    col("Type", "string", "Used to facilitate programmatic handling of secret data."),
    col("Data", "string", "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'."),
    AGE,
];
pub(crate) static SECRET: Printer = Printer { columns: &SECRET_COLUMNS, print: print_secret };

fn print_secret(object: &Value, now: DateTime<Utc>) -> Row {
    let cells = vec![
        text(name(object)),
        text(str_at(object, &["type"])),
        count(map_len(object, &["data"])),
        text(creation_age(object, now)),
    ];
    cells.into()
}

static SERVICE_ACCOUNT_COLUMNS: [ColumnSpec; 3] = [
    NAME,
    col("Secrets", "string", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use."),
    AGE,
];
pub(crate) static SERVICE_ACCOUNT: Printer = Printer { columns: &SERVICE_ACCOUNT_COLUMNS, print: print_service_account };

fn print_service_account(object: &Value, now: DateTime<Utc>) -> Row {
    let secrets = array_at(object, &["secrets"]).len();
    vec![text(name(object)), count(secrets), text(creation_age(object, now))].into()
}

static SERVICE_COLUMNS: [ColumnSpec; 7] = [
    NAME,
    col("Type", "string", "type determines how the Service is exposed."),
    col("Cluster-IP", "string", "clusterIP is the IP address of the service and is usually assigned randomly."),
    col("External-IP", "string", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service."),
    col("Port(s)", "string", "The list of ports that are exposed by this service."),
    AGE,
    wide("Selector", "string", "Route service traffic to pods with label keys and values matching this selector."),
];
pub(crate) static SERVICE: Printer = Printer { columns: &SERVICE_COLUMNS, print: print_service };

fn print_service(service: &Value, now: DateTime<Utc>) -> Row {
    // Kube defaults `type` to ClusterIP and `protocol` to TCP on write; do the same for display.
    let service_type = opt_str(service, &["spec", "type"]).filter(|t| !t.is_empty()).unwrap_or("ClusterIP");
    let cluster_ip = array_at(service, &["spec", "clusterIPs"])
        .first()
        .and_then(Value::as_str)
        .or_else(|| opt_str(service, &["spec", "clusterIP"]).filter(|ip| !ip.is_empty()))
        .unwrap_or("<none>");
    let ports = port_string(array_at(service, &["spec", "ports"]));
    let cells = vec![
        text(name(service)),
        text(service_type),
        text(cluster_ip),
        text(external_ip(service, service_type)),
        text(or_none(&ports)),
        text(creation_age(service, now)),
        text(format_labels(at(service, &["spec", "selector"]))),
    ];
    cells.into()
}

/// `getServiceExternalIP` with `wide` set, as the server always prints.
fn external_ip(service: &Value, service_type: &str) -> String {
    let external: Vec<&str> = array_at(service, &["spec", "externalIPs"]).iter().filter_map(Value::as_str).collect();
    match service_type {
        "ClusterIP" | "NodePort" if external.is_empty() => "<none>".to_string(),
        "ClusterIP" | "NodePort" => external.join(","),
        "LoadBalancer" => {
            let mut all = load_balancer_ingress(at(service, &["status", "loadBalancer"]));
            all.extend(external.iter().map(|ip| ip.to_string()));
            if all.is_empty() {
                "<pending>".to_string()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => str_at(service, &["spec", "externalName"]).to_string(),
        _ => "<unknown>".to_string(),
    }
}

/// A load balancer status's ingress IPs (or hostnames when no IP), sorted and de-duplicated.
pub(crate) fn load_balancer_ingress(status: Option<&Value>) -> Vec<String> {
    let ingress = status.map_or(&[][..], |status| array_at(status, &["ingress"]));
    let mut addresses: Vec<String> = ingress
        .iter()
        .filter_map(|entry| {
            let ip = str_at(entry, &["ip"]);
            let host = str_at(entry, &["hostname"]);
            let address = if ip.is_empty() { host } else { ip };
            (!address.is_empty()).then(|| address.to_string())
        })
        .collect();
    addresses.sort();
    addresses.dedup();
    addresses
}

/// `makePortString`: `port/protocol` or `port:nodePort/protocol`, joined by `,`.
fn port_string(ports: &[Value]) -> String {
    let pieces: Vec<String> = ports
        .iter()
        .map(|port| {
            let number = crate::table::read::int_at(port, &["port"]);
            let protocol = opt_str(port, &["protocol"]).filter(|p| !p.is_empty()).unwrap_or("TCP");
            match crate::table::read::int_at(port, &["nodePort"]) {
                node_port if node_port > 0 => format!("{number}:{node_port}/{protocol}"),
                _ => format!("{number}/{protocol}"),
            }
        })
        .collect();
    pieces.join(",")
}

static ENDPOINTS_COLUMNS: [ColumnSpec; 3] = [
    NAME,
    col("Endpoints", "string", "The set of all endpoints is the union of all subsets."),
    AGE,
];
pub(crate) static ENDPOINTS: Printer = Printer { columns: &ENDPOINTS_COLUMNS, print: print_endpoints };

fn print_endpoints(object: &Value, now: DateTime<Utc>) -> Row {
    vec![text(name(object)), text(format_endpoints(object)), text(creation_age(object, now))].into()
}

/// `formatEndpoints(ep, nil)`: up to three `ip:port` entries, then ` + N more...`.
fn format_endpoints(endpoints: &Value) -> String {
    const MAX: usize = 3;
    let subsets = array_at(endpoints, &["subsets"]);
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    let mut list: Vec<String> = Vec::new();
    let mut total = 0usize;
    for subset in subsets {
        let addresses = array_at(subset, &["addresses"]);
        let ports = array_at(subset, &["ports"]);
        let port_numbers: Vec<Option<i64>> = if ports.is_empty() {
            vec![None]
        } else {
            ports.iter().map(|p| Some(crate::table::read::int_at(p, &["port"]))).collect()
        };
        for port in port_numbers {
            total += addresses.len();
            for address in addresses.iter().take(MAX.saturating_sub(list.len())) {
                let ip = str_at(address, &["ip"]);
                list.push(match port {
                    Some(port) if ip.contains(':') => format!("[{ip}]:{port}"),
                    Some(port) => format!("{ip}:{port}"),
                    None => ip.to_string(),
                });
            }
        }
    }
    let joined = list.join(",");
    if total > MAX {
        format!("{joined} + {} more...", total - MAX)
    } else {
        joined
    }
}

static NODE_COLUMNS: [ColumnSpec; 10] = [
    NAME,
    col("Status", "string", "The status of the node"),
    col("Roles", "string", "The roles of the node"),
    AGE,
    col("Version", "string", "Kubelet Version reported by the node."),
    wide("Internal-IP", "string", "List of addresses reachable to the node."),
    wide("External-IP", "string", "List of addresses reachable to the node."),
    wide("OS-Image", "string", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."),
    wide("Kernel-Version", "string", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."),
    wide("Container-Runtime", "string", "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2)."),
];
pub(crate) static NODE: Printer = Printer { columns: &NODE_COLUMNS, print: print_node };

fn print_node(node: &Value, now: DateTime<Utc>) -> Row {
    let ready = array_at(node, &["status", "conditions"]).iter().rev().find(|c| str_at(c, &["type"]) == "Ready");
    let mut status = vec![match ready {
        Some(condition) if str_at(condition, &["status"]) == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if crate::table::read::bool_at(node, &["spec", "unschedulable"]) {
        status.push("SchedulingDisabled");
    }
    let info = |field: &str| {
        let value = str_at(node, &["status", "nodeInfo", field]);
        if value.is_empty() { "<unknown>".to_string() } else { value.to_string() }
    };
    let cells = vec![
        text(name(node)),
        text(status.join(",")),
        text(or_none(&node_roles(node).join(","))),
        text(creation_age(node, now)),
        text(str_at(node, &["status", "nodeInfo", "kubeletVersion"])),
        text(node_address(node, "InternalIP")),
        text(node_address(node, "ExternalIP")),
        text(info("osImage")),
        text(info("kernelVersion")),
        text(info("containerRuntimeVersion")),
    ];
    cells.into()
}

/// Roles from `node-role.kubernetes.io/<role>` label keys and the `kubernetes.io/role` value.
fn node_roles(node: &Value) -> Vec<String> {
    let Some(labels) = at(node, &["metadata", "labels"]).and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut roles: Vec<String> = labels
        .iter()
        .filter_map(|(key, value)| match key.strip_prefix("node-role.kubernetes.io/") {
            Some(role) if !role.is_empty() => Some(role.to_string()),
            Some(_) => None,
            None if key == "kubernetes.io/role" => value.as_str().filter(|v| !v.is_empty()).map(str::to_string),
            None => None,
        })
        .collect();
    roles.sort();
    roles.dedup();
    roles
}

/// The first node address of `type_`, or `<none>`.
fn node_address(node: &Value, type_: &str) -> String {
    array_at(node, &["status", "addresses"])
        .iter()
        .find(|address| str_at(address, &["type"]) == type_)
        .map_or_else(|| "<none>".to_string(), |address| str_at(address, &["address"]).to_string())
}

static PERSISTENT_VOLUME_COLUMNS: [ColumnSpec; 11] = [
    NAME,
    col("Capacity", "string", "capacity is the description of the persistent volume's resources and capacity."),
    col("Access Modes", "string", "accessModes contains all ways the volume can be mounted."),
    col("Reclaim Policy", "string", "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim."),
    col("Status", "string", "phase indicates if a volume is available, bound to a claim, or released by a claim."),
    col("Claim", "string", "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim."),
    col("StorageClass", "string", "StorageClass of the pv"),
    col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
    col("Reason", "string", "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI."),
    AGE,
    wide("VolumeMode", "string", "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state."),
];
pub(crate) static PERSISTENT_VOLUME: Printer = Printer { columns: &PERSISTENT_VOLUME_COLUMNS, print: print_persistent_volume };

fn print_persistent_volume(volume: &Value, now: DateTime<Utc>) -> Row {
    let claim = at(volume, &["spec", "claimRef"])
        .filter(|claim| claim.is_object())
        .map_or(String::new(), |claim| format!("{}/{}", str_at(claim, &["namespace"]), str_at(claim, &["name"])));
    let class = annotation(volume, "volume.beta.kubernetes.io/storage-class")
        .unwrap_or_else(|| str_at(volume, &["spec", "storageClassName"]));
    let cells = vec![
        text(name(volume)),
        text(quantity(at(volume, &["spec", "capacity", "storage"]))),
        text(access_modes(array_at(volume, &["spec", "accessModes"]))),
        text(str_at(volume, &["spec", "persistentVolumeReclaimPolicy"])),
        text(terminating_or(volume, str_at(volume, &["status", "phase"]))),
        text(claim),
        text(class),
        text(unset_or(opt_str(volume, &["spec", "volumeAttributesClassName"]))),
        text(str_at(volume, &["status", "reason"])),
        text(creation_age(volume, now)),
        text(unset_or(opt_str(volume, &["spec", "volumeMode"]))),
    ];
    cells.into()
}

static PERSISTENT_VOLUME_CLAIM_COLUMNS: [ColumnSpec; 9] = [
    NAME,
    col("Status", "string", "phase represents the current phase of PersistentVolumeClaim."),
    col("Volume", "string", "volumeName is the binding reference to the PersistentVolume backing this claim."),
    col("Capacity", "string", "capacity represents the actual resources of the underlying volume."),
    col("Access Modes", "string", "accessModes contains the actual access modes the volume backing the PVC has."),
    col("StorageClass", "string", "StorageClass of the pvc"),
    col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
    AGE,
    wide("VolumeMode", "string", "volumeMode defines what type of volume is required by the claim."),
];
pub(crate) static PERSISTENT_VOLUME_CLAIM: Printer =
    Printer { columns: &PERSISTENT_VOLUME_CLAIM_COLUMNS, print: print_persistent_volume_claim };

fn print_persistent_volume_claim(claim: &Value, now: DateTime<Utc>) -> Row {
    let volume_name = str_at(claim, &["spec", "volumeName"]);
    let (capacity, modes) = if volume_name.is_empty() {
        (String::new(), String::new())
    } else {
        (quantity(at(claim, &["status", "capacity", "storage"])), access_modes(array_at(claim, &["status", "accessModes"])))
    };
    let class = annotation(claim, "volume.beta.kubernetes.io/storage-class")
        .unwrap_or_else(|| str_at(claim, &["spec", "storageClassName"]));
    let cells = vec![
        text(name(claim)),
        text(terminating_or(claim, str_at(claim, &["status", "phase"]))),
        text(volume_name),
        text(capacity),
        text(modes),
        text(class),
        text(unset_or(opt_str(claim, &["spec", "volumeAttributesClassName"]))),
        text(creation_age(claim, now)),
        text(unset_or(opt_str(claim, &["spec", "volumeMode"]))),
    ];
    cells.into()
}

/// `Terminating` once `deletionTimestamp` is set, `phase` otherwise.
fn terminating_or(object: &Value, phase: &str) -> String {
    let deleting = at(object, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null());
    if deleting { "Terminating".to_string() } else { phase.to_string() }
}

/// The value, or `<unset>` when the optional field is absent.
fn unset_or(value: Option<&str>) -> String {
    value.unwrap_or("<unset>").to_string()
}

/// `GetAccessModesAsString`: RWO, ROX, RWX, RWOP in that fixed order.
fn access_modes(modes: &[Value]) -> String {
    let present = |mode: &str| modes.iter().any(|m| m.as_str() == Some(mode));
    let table = [("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP")];
    let short: Vec<&str> = table.iter().filter(|(mode, _)| present(mode)).map(|(_, short)| *short).collect();
    short.join(",")
}

/// A `resource.Quantity` as stored (kube would print its canonical form); `0` when absent.
pub(crate) fn quantity(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(number)) => number.to_string(),
        _ => "0".to_string(),
    }
}

static RESOURCE_QUOTA_COLUMNS: [ColumnSpec; 4] = [
    NAME,
    col("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
    col("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
    AGE,
];
pub(crate) static RESOURCE_QUOTA: Printer = Printer { columns: &RESOURCE_QUOTA_COLUMNS, print: print_resource_quota };

fn print_resource_quota(quota: &Value, now: DateTime<Utc>) -> Row {
    let mut requests = Vec::new();
    let mut limits = Vec::new();
    if let Some(hard) = at(quota, &["status", "hard"]).and_then(Value::as_object) {
        let mut resources: Vec<&String> = hard.keys().collect();
        resources.sort();
        for resource in resources {
            let used = quantity(at(quota, &["status", "used", resource]));
            let entry = format!("{resource}: {used}/{}", quantity(hard.get(resource)));
            let is_limit = resource.split('.').count() > 1 && resource.starts_with("limits.");
            if is_limit { limits.push(entry) } else { requests.push(entry) }
        }
    }
    let cells = vec![text(name(quota)), text(requests.join(", ")), text(limits.join(", ")), text(creation_age(quota, now))];
    cells.into()
}
