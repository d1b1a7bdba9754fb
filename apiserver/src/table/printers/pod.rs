//! Pods (READY, STATUS, RESTARTS with "(5m ago)") and pod templates.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{text, Printer, Row};
use crate::table::age::{creation_age, parse_time, since};
use crate::table::columns::{col, wide, ColumnSpec, AGE, NAME};
use crate::table::read::{array_at, at, bool_at, container_cells, format_labels, int_at, name, opt_str, or_none, str_at};

static POD_COLUMNS: [ColumnSpec; 9] = [
    NAME,
    col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    col("Status", "string", "The aggregate status of the containers in this pod."),
    col("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
    AGE,
    wide("IP", "string", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."),
    wide("Node", "string", "NodeName indicates in which node this pod is scheduled."),
    wide("Nominated Node", "string", "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods."),
    wide("Readiness Gates", "string", "If specified, all readiness gates will be evaluated for pod readiness."),
];

pub(crate) static POD: Printer = Printer { columns: &POD_COLUMNS, print: print_pod };

static POD_TEMPLATE_COLUMNS: [ColumnSpec; 4] = [
    NAME,
    col("Containers", "string", "Names of each container in the template."),
    col("Images", "string", "Images referenced by each container in the template."),
    col("Pod Labels", "string", "The labels for the pod template."),
];

pub(crate) static POD_TEMPLATE: Printer = Printer { columns: &POD_TEMPLATE_COLUMNS, print: print_pod_template };

fn print_pod_template(object: &Value, _now: DateTime<Utc>) -> Row {
    let (names, images) = container_cells(array_at(object, &["template", "spec", "containers"]));
    let labels = format_labels(at(object, &["template", "metadata", "labels"]));
    vec![text(name(object)), text(names), text(images), text(labels)].into()
}

/// Running totals while walking container statuses, as `printPod` keeps them.
#[derive(Clone, Copy, Default)]
struct Tally {
    restarts: i64,
    last_restart: Option<DateTime<Utc>>,
}

impl Tally {
    /// Adds one status's restart count and its last termination's `finishedAt`.
    fn add(&mut self, status: &Value) {
        self.restarts = self.restarts.saturating_add(int_at(status, &["restartCount"]));
        let terminated = object_at(status, &["lastState", "terminated"]);
        if let Some(finished) = terminated.and_then(|t| parse_time(at(t, &["finishedAt"]))) {
            self.last_restart = self.last_restart.max(Some(finished));
        }
    }
}

/// The state `printPod` builds up: STATUS reason, ready containers and restart tallies.
struct PodSummary {
    reason: String,
    ready: usize,
    restarts: Tally,
}

/// The sub-object at `path`, when it is an object (Go's non-nil pointer).
fn object_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    at(value, path).filter(|v| v.is_object())
}

fn print_pod(pod: &Value, now: DateTime<Utc>) -> Row {
    let phase = str_at(pod, &["status", "phase"]);
    let mut reason = opt_str(pod, &["status", "reason"]).filter(|r| !r.is_empty()).unwrap_or(phase).to_string();
    let conditions = array_at(pod, &["status", "conditions"]);
    if conditions.iter().any(|c| str_at(c, &["type"]) == "PodScheduled" && str_at(c, &["reason"]) == "SchedulingGated") {
        reason = "SchedulingGated".to_string();
    }
    let sidecars = array_at(pod, &["spec", "initContainers"]).iter().filter(|c| is_sidecar(c)).count();
    let total = array_at(pod, &["spec", "containers"]).len() + sidecars;
    let mut summary = PodSummary { reason, ready: 0, restarts: Tally::default() };
    let (initializing, sidecar_tally) = init_container_pass(pod, &mut summary);
    if !initializing || condition_true(conditions, "Initialized") {
        summary.restarts = sidecar_tally;
        container_pass(pod, conditions, &mut summary);
    }
    let deleting = at(pod, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null());
    if deleting && opt_str(pod, &["status", "reason"]) == Some("NodeLost") {
        summary.reason = "Unknown".to_string();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        summary.reason = "Terminating".to_string();
    }
    let Tally { restarts, last_restart } = summary.restarts;
    let restarts_cell = match last_restart {
        Some(_) if restarts != 0 => format!("{restarts} ({} ago)", since(last_restart, now)),
        _ => restarts.to_string(),
    };
    let first_ip = array_at(pod, &["status", "podIPs"]).first().map_or("", |ip| str_at(ip, &["ip"]));
    let cells = vec![
        text(name(pod)),
        text(format!("{}/{total}", summary.ready)),
        text(summary.reason),
        text(restarts_cell),
        text(creation_age(pod, now)),
        text(or_none(first_ip)),
        text(or_none(str_at(pod, &["spec", "nodeName"]))),
        text(or_none(str_at(pod, &["status", "nominatedNodeName"]))),
        text(readiness_gates(pod, conditions)),
    ];
    Row { cells, conditions: row_conditions(phase) }
}

/// A restartable init container (a sidecar): `restartPolicy: Always`.
fn is_sidecar(container: &Value) -> bool {
    str_at(container, &["restartPolicy"]) == "Always"
}

/// Walks init container statuses until one is still initializing. Returns whether the pod is
/// initializing and the tally of sidecar restarts; `summary` gets all init restarts.
fn init_container_pass(pod: &Value, summary: &mut PodSummary) -> (bool, Tally) {
    let specs = array_at(pod, &["spec", "initContainers"]);
    let sidecar = |container_name: &str| specs.iter().any(|c| str_at(c, &["name"]) == container_name && is_sidecar(c));
    let mut sidecars = Tally::default();
    for (index, status) in array_at(pod, &["status", "initContainerStatuses"]).iter().enumerate() {
        summary.restarts.add(status);
        let is_sidecar = sidecar(str_at(status, &["name"]));
        if is_sidecar {
            sidecars.add(status);
        }
        let terminated = object_at(status, &["state", "terminated"]);
        if terminated.is_some_and(|t| int_at(t, &["exitCode"]) == 0) {
            continue;
        }
        if is_sidecar && bool_at(status, &["started"]) {
            summary.ready += usize::from(bool_at(status, &["ready"]));
            continue;
        }
        let waiting = object_at(status, &["state", "waiting"]).map(|w| str_at(w, &["reason"]));
        summary.reason = match (terminated, waiting) {
            (Some(terminated), _) => format!("Init:{}", terminated_reason(terminated)),
            (None, Some(waiting)) if !waiting.is_empty() && waiting != "PodInitializing" => format!("Init:{waiting}"),
            _ => format!("Init:{index}/{}", specs.len()),
        };
        return (true, sidecars);
    }
    (false, sidecars)
}

/// Walks regular container statuses last to first, as kube does, so the first container's
/// state wins the STATUS column.
fn container_pass(pod: &Value, conditions: &[Value], summary: &mut PodSummary) {
    let mut has_running = false;
    let mut error_reason = String::new();
    for status in array_at(pod, &["status", "containerStatuses"]).iter().rev() {
        summary.restarts.add(status);
        let waiting = object_at(status, &["state", "waiting"]).filter(|w| !str_at(w, &["reason"]).is_empty());
        if let Some(waiting) = waiting {
            summary.reason = str_at(waiting, &["reason"]).to_string();
        } else if let Some(terminated) = object_at(status, &["state", "terminated"]) {
            summary.reason = terminated_reason(terminated);
            if int_at(terminated, &["exitCode"]) != 0 {
                error_reason = summary.reason.clone();
            }
        } else if bool_at(status, &["ready"]) && object_at(status, &["state", "running"]).is_some() {
            has_running = true;
            summary.ready += 1;
        }
    }
    if summary.reason == "Completed" {
        if has_running && condition_true(conditions, "Ready") {
            summary.reason = "Running".to_string();
        } else if !error_reason.is_empty() {
            summary.reason = error_reason;
        } else if has_running {
            summary.reason = "NotReady".to_string();
        }
    }
}

/// `Signal:N`, `ExitCode:N` or the terminated state's reason.
fn terminated_reason(terminated: &Value) -> String {
    let reason = str_at(terminated, &["reason"]);
    if !reason.is_empty() {
        return reason.to_string();
    }
    let signal = int_at(terminated, &["signal"]);
    if signal != 0 {
        return format!("Signal:{signal}");
    }
    format!("ExitCode:{}", int_at(terminated, &["exitCode"]))
}

/// Whether the first pod condition of `type_` (kube stops at the first) has status `True`.
fn condition_true(conditions: &[Value], type_: &str) -> bool {
    conditions.iter().find(|c| str_at(c, &["type"]) == type_).is_some_and(|c| str_at(c, &["status"]) == "True")
}

/// `true/total` of readiness gates whose condition is `True`, or `<none>`.
fn readiness_gates(pod: &Value, conditions: &[Value]) -> String {
    let gates = array_at(pod, &["spec", "readinessGates"]);
    if gates.is_empty() {
        return "<none>".to_string();
    }
    let satisfied = gates.iter().filter(|gate| condition_true(conditions, str_at(gate, &["conditionType"]))).count();
    format!("{satisfied}/{}", gates.len())
}

/// Kube marks finished pods' rows `Completed` so clients can hide them.
fn row_conditions(phase: &str) -> Option<Value> {
    let (reason, message) = match phase {
        "Succeeded" => ("Succeeded", "The pod has completed successfully."),
        "Failed" => ("Failed", "The pod failed."),
        _ => return None,
    };
    Some(json!([{ "type": "Completed", "status": "True", "reason": reason, "message": message }]))
}
