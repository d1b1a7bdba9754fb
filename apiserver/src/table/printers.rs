//! The built-in printers: one column set and one row function per kind, looked up by
//! (group, kind) as kube-apiserver's `pkg/printers/internalversion` registers them.
//!
//! The server always prints the `-o wide` cells (kube calls its generator with `Wide: true`);
//! kubectl hides the priority-1 columns itself unless asked for them.

mod cluster;
mod core;
mod event;
mod flowcontrol;
mod pod;
mod workloads;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::columns::ColumnSpec;

/// One row's cells plus the optional `conditions` kube attaches (only pods use them).
#[derive(Debug, Default)]
pub(crate) struct Row {
    pub cells: Vec<Value>,
    pub conditions: Option<Value>,
}

impl From<Vec<Value>> for Row {
    fn from(cells: Vec<Value>) -> Self {
        Row { cells, conditions: None }
    }
}

/// A kind's column headers and the function that fills one row from an object.
pub(crate) struct Printer {
    pub columns: &'static [ColumnSpec],
    pub print: fn(&Value, DateTime<Utc>) -> Row,
}

/// The printer kube-apiserver v1.33 registers for `(group, kind)`, or `None` when it uses the
/// default convertor (NAME, CREATED AT): roles, cluster roles, limit ranges and unknown kinds.
pub(crate) fn printer_for(group: &str, kind: &str) -> Option<&'static Printer> {
    let printer = match (group, kind) {
        ("", "Pod") => &pod::POD,
        ("", "PodTemplate") => &pod::POD_TEMPLATE,
        ("", "Namespace") => &core::NAMESPACE,
        ("", "Tenant") => &core::TENANT,
        ("core.kcp.io", "LogicalCluster") => &core::LOGICAL_CLUSTER,
        ("tenancy.kcp.io", "Workspace") => &core::WORKSPACE,
        ("", "ConfigMap") => &core::CONFIG_MAP,
        ("", "ComponentStatus") => &core::COMPONENT_STATUS,
        ("", "Secret") => &core::SECRET,
        ("", "ServiceAccount") => &core::SERVICE_ACCOUNT,
        ("", "Service") => &core::SERVICE,
        ("", "Endpoints") => &core::ENDPOINTS,
        ("", "Node") => &core::NODE,
        ("", "PersistentVolume") => &core::PERSISTENT_VOLUME,
        ("", "PersistentVolumeClaim") => &core::PERSISTENT_VOLUME_CLAIM,
        ("", "ResourceQuota") => &core::RESOURCE_QUOTA,
        ("", "ReplicationController") => &workloads::REPLICATION_CONTROLLER,
        ("", "Event") => &event::CORE_EVENT,
        ("events.k8s.io", "Event") => &event::EVENTS_EVENT,
        ("apps", "Deployment") => &workloads::DEPLOYMENT,
        ("apps", "ReplicaSet") => &workloads::REPLICA_SET,
        ("apps", "StatefulSet") => &workloads::STATEFUL_SET,
        ("apps", "DaemonSet") => &workloads::DAEMON_SET,
        ("apps", "ControllerRevision") => &workloads::CONTROLLER_REVISION,
        ("batch", "Job") => &workloads::JOB,
        ("batch", "CronJob") => &workloads::CRON_JOB,
        ("policy", "PodDisruptionBudget") => &cluster::POD_DISRUPTION_BUDGET,
        ("coordination.k8s.io", "Lease") => &cluster::LEASE,
        ("discovery.k8s.io", "EndpointSlice") => &cluster::ENDPOINT_SLICE,
        ("networking.k8s.io", "Ingress") => &cluster::INGRESS,
        ("networking.k8s.io", "IngressClass") => &cluster::INGRESS_CLASS,
        ("networking.k8s.io", "NetworkPolicy") => &cluster::NETWORK_POLICY,
        ("storage.k8s.io", "StorageClass") => &cluster::STORAGE_CLASS,
        ("scheduling.k8s.io", "PriorityClass") => &cluster::PRIORITY_CLASS,
        ("rbac.authorization.k8s.io", "RoleBinding") => &cluster::ROLE_BINDING,
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => &cluster::CLUSTER_ROLE_BINDING,
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => &cluster::MUTATING_WEBHOOK,
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => &cluster::VALIDATING_WEBHOOK,
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => &flowcontrol::FLOW_SCHEMA,
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => &flowcontrol::PRIORITY_LEVEL,
        _ => return None,
    };
    Some(printer)
}

/// A string cell.
pub(crate) fn text(value: impl Into<String>) -> Value {
    Value::String(value.into())
}

/// An integer cell (Go's `int64(...)`).
pub(crate) fn int(value: impl Into<i64>) -> Value {
    Value::from(value.into())
}

/// A count cell; lengths never exceed `i64` in practice, saturate if they somehow do.
pub(crate) fn count(value: usize) -> Value {
    Value::from(i64::try_from(value).unwrap_or(i64::MAX))
}
