//! Networking, discovery, coordination, storage, scheduling, policy, RBAC and admission kinds.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{count, int, text, Printer, Row};
use crate::table::age::creation_age;
use crate::table::columns::{col, wide, ColumnSpec, AGE, NAME};
use crate::table::read::{
    annotation, array_at, as_int, at, bool_at, format_label_selector, int_at, int_or_string, name, opt_str, str_at,
};

static POD_DISRUPTION_BUDGET_COLUMNS: [ColumnSpec; 5] = [
    NAME,
    col("Min Available", "string", "The minimum number of pods that must be available."),
    col("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
    col("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
    AGE,
];
pub(crate) static POD_DISRUPTION_BUDGET: Printer =
    Printer { columns: &POD_DISRUPTION_BUDGET_COLUMNS, print: print_pod_disruption_budget };

fn print_pod_disruption_budget(budget: &Value, now: DateTime<Utc>) -> Row {
    let bound = |field: &str| int_or_string(at(budget, &["spec", field])).unwrap_or_else(|| "N/A".to_string());
    let cells = vec![
        text(name(budget)),
        text(bound("minAvailable")),
        text(bound("maxUnavailable")),
        int(int_at(budget, &["status", "disruptionsAllowed"])),
        text(creation_age(budget, now)),
    ];
    cells.into()
}

static LEASE_COLUMNS: [ColumnSpec; 3] = [
    NAME,
    col("Holder", "string", "holderIdentity contains the identity of the holder of a current lease."),
    AGE,
];
pub(crate) static LEASE: Printer = Printer { columns: &LEASE_COLUMNS, print: print_lease };

fn print_lease(lease: &Value, now: DateTime<Utc>) -> Row {
    vec![text(name(lease)), text(str_at(lease, &["spec", "holderIdentity"])), text(creation_age(lease, now))].into()
}

static ENDPOINT_SLICE_COLUMNS: [ColumnSpec; 5] = [
    NAME,
    col("AddressType", "string", "addressType specifies the type of address carried by this EndpointSlice."),
    col("Ports", "string", "ports specifies the list of network ports exposed by each endpoint in this slice."),
    col("Endpoints", "string", "endpoints is a list of unique endpoints in this slice."),
    AGE,
];
pub(crate) static ENDPOINT_SLICE: Printer = Printer { columns: &ENDPOINT_SLICE_COLUMNS, print: print_endpoint_slice };

fn print_endpoint_slice(slice: &Value, now: DateTime<Utc>) -> Row {
    let ports: Vec<String> = array_at(slice, &["ports"])
        .iter()
        .map(|port| match (at(port, &["port"]).and_then(as_int), opt_str(port, &["name"])) {
            (Some(number), _) => number.to_string(),
            (None, Some(port_name)) => port_name.to_string(),
            (None, None) => "*".to_string(),
        })
        .collect();
    let addresses: Vec<String> = array_at(slice, &["endpoints"])
        .iter()
        .flat_map(|endpoint| array_at(endpoint, &["addresses"]))
        .map(|address| address.as_str().unwrap_or("").to_string())
        .collect();
    let cells = vec![
        text(name(slice)),
        text(str_at(slice, &["addressType"])),
        text(list_with_more(&ports)),
        text(list_with_more(&addresses)),
        text(creation_age(slice, now)),
    ];
    cells.into()
}

/// `listWithMoreString` with three entries: `a,b,c + N more...`, `<unset>` when empty.
fn list_with_more(items: &[String]) -> String {
    const MAX: usize = 3;
    let shown = items[..items.len().min(MAX)].join(",");
    if items.len() > MAX {
        format!("{shown} + {} more...", items.len() - MAX)
    } else if shown.is_empty() {
        "<unset>".to_string()
    } else {
        shown
    }
}

static INGRESS_COLUMNS: [ColumnSpec; 6] = [
    NAME,
    col("Class", "string", "The name of the IngressClass resource that should be used for additional configuration"),
    col("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
    col("Address", "string", "Address is a list containing ingress points for the load-balancer"),
    col("Ports", "string", "Ports of TLS configurations that open"),
    AGE,
];
pub(crate) static INGRESS: Printer = Printer { columns: &INGRESS_COLUMNS, print: print_ingress };

fn print_ingress(ingress: &Value, now: DateTime<Utc>) -> Row {
    let address = super::core::load_balancer_ingress(at(ingress, &["status", "loadBalancer"])).join(",");
    let ports = if array_at(ingress, &["spec", "tls"]).is_empty() { "80" } else { "80, 443" };
    let cells = vec![
        text(name(ingress)),
        text(opt_str(ingress, &["spec", "ingressClassName"]).unwrap_or("<none>")),
        text(format_hosts(array_at(ingress, &["spec", "rules"]))),
        text(address),
        text(ports),
        text(creation_age(ingress, now)),
    ];
    cells.into()
}

/// `formatHosts`: up to three non-empty rule hosts, `*` when none.
fn format_hosts(rules: &[Value]) -> String {
    const MAX: usize = 3;
    let hosts: Vec<&str> = rules.iter().map(|rule| str_at(rule, &["host"])).filter(|host| !host.is_empty()).collect();
    // Kube stops collecting once three hosts are found and counts the remaining *rules*.
    let shown = &hosts[..hosts.len().min(MAX)];
    if shown.is_empty() {
        return "*".to_string();
    }
    let more = rules.len() > MAX && shown.len() == MAX && has_rule_after_third_host(rules);
    if more {
        format!("{} + {} more...", shown.join(","), rules.len() - MAX)
    } else {
        shown.join(",")
    }
}

/// Whether any rule follows the one holding the third non-empty host (kube's `more` flag).
fn has_rule_after_third_host(rules: &[Value]) -> bool {
    let mut found = 0;
    for (index, rule) in rules.iter().enumerate() {
        if !str_at(rule, &["host"]).is_empty() {
            found += 1;
            if found == 3 {
                return index + 1 < rules.len();
            }
        }
    }
    false
}

static INGRESS_CLASS_COLUMNS: [ColumnSpec; 4] = [
    NAME,
    col("Controller", "string", "Controller that is responsible for handling this class"),
    col("Parameters", "string", "A reference to a resource with additional parameters"),
    AGE,
];
pub(crate) static INGRESS_CLASS: Printer = Printer { columns: &INGRESS_CLASS_COLUMNS, print: print_ingress_class };

fn print_ingress_class(class: &Value, now: DateTime<Utc>) -> Row {
    let parameters = match at(class, &["spec", "parameters"]).filter(|p| p.is_object()) {
        Some(parameters) => {
            let group = opt_str(parameters, &["apiGroup"]).map_or(String::new(), |group| format!(".{group}"));
            format!("{}{group}/{}", str_at(parameters, &["kind"]), str_at(parameters, &["name"]))
        }
        None => "<none>".to_string(),
    };
    let cells = vec![
        text(name(class)),
        text(str_at(class, &["spec", "controller"])),
        text(parameters),
        text(creation_age(class, now)),
    ];
    cells.into()
}

static NETWORK_POLICY_COLUMNS: [ColumnSpec; 3] = [
    NAME,
    col("Pod-Selector", "string", "Selects the pods to which this NetworkPolicy object applies."),
    AGE,
];
pub(crate) static NETWORK_POLICY: Printer = Printer { columns: &NETWORK_POLICY_COLUMNS, print: print_network_policy };

fn print_network_policy(policy: &Value, now: DateTime<Utc>) -> Row {
    let selector = format_label_selector(at(policy, &["spec", "podSelector"]));
    vec![text(name(policy)), text(selector), text(creation_age(policy, now))].into()
}

static STORAGE_CLASS_COLUMNS: [ColumnSpec; 6] = [
    NAME,
    col("Provisioner", "string", "provisioner indicates the type of the provisioner."),
    col("ReclaimPolicy", "string", "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete."),
    col("VolumeBindingMode", "string", "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound."),
    col("AllowVolumeExpansion", "string", "allowVolumeExpansion shows whether the storage class allow volume expand."),
    AGE,
];
pub(crate) static STORAGE_CLASS: Printer = Printer { columns: &STORAGE_CLASS_COLUMNS, print: print_storage_class };

fn print_storage_class(class: &Value, now: DateTime<Utc>) -> Row {
    let is_default = annotation(class, "storageclass.kubernetes.io/is-default-class") == Some("true")
        || annotation(class, "storageclass.beta.kubernetes.io/is-default-class") == Some("true");
    let display_name = if is_default { format!("{} (default)", name(class)) } else { name(class).to_string() };
    let cells = vec![
        text(display_name),
        text(str_at(class, &["provisioner"])),
        text(opt_str(class, &["reclaimPolicy"]).unwrap_or("Delete")),
        text(opt_str(class, &["volumeBindingMode"]).unwrap_or("Immediate")),
        Value::Bool(bool_at(class, &["allowVolumeExpansion"])),
        text(creation_age(class, now)),
    ];
    cells.into()
}

static PRIORITY_CLASS_COLUMNS: [ColumnSpec; 5] = [
    NAME,
    col("Value", "integer", "value represents the integer value of this priority class."),
    col("Global-Default", "boolean", "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class."),
    AGE,
    col("PreemptionPolicy", "string", "preemptionPolicy is the Policy for preempting pods with lower priority."),
];
pub(crate) static PRIORITY_CLASS: Printer = Printer { columns: &PRIORITY_CLASS_COLUMNS, print: print_priority_class };

fn print_priority_class(class: &Value, now: DateTime<Utc>) -> Row {
    let cells = vec![
        text(name(class)),
        int(int_at(class, &["value"])),
        Value::Bool(bool_at(class, &["globalDefault"])),
        text(creation_age(class, now)),
        text(str_at(class, &["preemptionPolicy"])),
    ];
    cells.into()
}

static ROLE_BINDING_COLUMNS: [ColumnSpec; 6] = [
    NAME,
    col("Role", "string", "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace."),
    AGE,
    wide("Users", "string", "Users in the roleBinding"),
    wide("Groups", "string", "Groups in the roleBinding"),
    wide("ServiceAccounts", "string", "ServiceAccounts in the roleBinding"),
];
pub(crate) static ROLE_BINDING: Printer = Printer { columns: &ROLE_BINDING_COLUMNS, print: print_binding };

static CLUSTER_ROLE_BINDING_COLUMNS: [ColumnSpec; 6] = [
    NAME,
    col("Role", "string", "RoleRef can only reference a ClusterRole in the global namespace."),
    AGE,
    wide("Users", "string", "Users in the clusterRoleBinding"),
    wide("Groups", "string", "Groups in the clusterRoleBinding"),
    wide("ServiceAccounts", "string", "ServiceAccounts in the clusterRoleBinding"),
];
pub(crate) static CLUSTER_ROLE_BINDING: Printer = Printer { columns: &CLUSTER_ROLE_BINDING_COLUMNS, print: print_binding };

fn print_binding(binding: &Value, now: DateTime<Utc>) -> Row {
    let (mut users, mut groups, mut service_accounts) = (Vec::new(), Vec::new(), Vec::new());
    for subject in array_at(binding, &["subjects"]) {
        let subject_name = str_at(subject, &["name"]).to_string();
        match str_at(subject, &["kind"]) {
            "ServiceAccount" => service_accounts.push(format!("{}/{subject_name}", str_at(subject, &["namespace"]))),
            "User" => users.push(subject_name),
            "Group" => groups.push(subject_name),
            _ => {}
        }
    }
    let role = format!("{}/{}", str_at(binding, &["roleRef", "kind"]), str_at(binding, &["roleRef", "name"]));
    let cells = vec![
        text(name(binding)),
        text(role),
        text(creation_age(binding, now)),
        text(users.join(", ")),
        text(groups.join(", ")),
        text(service_accounts.join(", ")),
    ];
    cells.into()
}

static WEBHOOK_COLUMNS: [ColumnSpec; 3] = [
    NAME,
    col("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration"),
    AGE,
];
pub(crate) static MUTATING_WEBHOOK: Printer = Printer { columns: &WEBHOOK_COLUMNS, print: print_webhooks };
pub(crate) static VALIDATING_WEBHOOK: Printer = Printer { columns: &WEBHOOK_COLUMNS, print: print_webhooks };

fn print_webhooks(configuration: &Value, now: DateTime<Utc>) -> Row {
    let webhooks = array_at(configuration, &["webhooks"]).len();
    vec![text(name(configuration)), count(webhooks), text(creation_age(configuration, now))].into()
}

static IP_ADDRESS_COLUMNS: [ColumnSpec; 2] = [
    NAME,
    col("ParentRef", "string", "ParentRef references the resource that an IPAddress is attached to. An IPAddress must reference a parent object."),
];
pub(crate) static IP_ADDRESS: Printer = Printer { columns: &IP_ADDRESS_COLUMNS, print: print_ip_address };

/// kube prints the parent as `resource[.group][/namespace]/name`, lower case, and no age.
fn print_ip_address(address: &Value, _now: DateTime<Utc>) -> Row {
    let parent = match at(address, &["spec", "parentRef"]).filter(|p| p.is_object()) {
        Some(parent) => {
            let mut text = str_at(parent, &["resource"]).to_string();
            if let Some(group) = opt_str(parent, &["group"]).filter(|g| !g.is_empty()) {
                text = format!("{text}.{group}");
            }
            text = text.to_lowercase();
            if let Some(namespace) = opt_str(parent, &["namespace"]).filter(|n| !n.is_empty()) {
                text = format!("{text}/{namespace}");
            }
            format!("{text}/{}", str_at(parent, &["name"]))
        }
        None => "<none>".to_string(),
    };
    vec![text(name(address)), text(parent)].into()
}

static SERVICE_CIDR_COLUMNS: [ColumnSpec; 3] = [
    NAME,
    col("CIDRs", "string", "CIDRs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is immutable."),
    AGE,
];
pub(crate) static SERVICE_CIDR: Printer = Printer { columns: &SERVICE_CIDR_COLUMNS, print: print_service_cidr };

fn print_service_cidr(cidr: &Value, now: DateTime<Utc>) -> Row {
    let cidrs: Vec<&str> = array_at(cidr, &["spec", "cidrs"]).iter().filter_map(Value::as_str).collect();
    vec![text(name(cidr)), text(cidrs.join(",")), text(creation_age(cidr, now))].into()
}
