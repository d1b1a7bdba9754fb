//! Workload controllers: deployments, replica sets, stateful sets, daemon sets, jobs, cron jobs,
//! replication controllers and controller revisions.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{int, text, Printer, Row};
use crate::table::age::{age_of, creation_age, human_duration, parse_time};
use crate::table::columns::{col, ColumnSpec, AGE, CONTAINERS, IMAGES, NAME, SELECTOR};
use crate::table::read::{
    array_at, at, container_cells, format_label_selector, format_labels, int_at, label_selector_string, name, opt_bool,
    opt_int, opt_str, str_at, template_containers,
};

/// `spec.replicas`, which kube defaults to 1 on write for every kind printed here.
fn desired_replicas(object: &Value) -> i64 {
    at(object, &["spec", "replicas"]).map_or(1, |value| crate::table::read::as_int(value).unwrap_or(0))
}

/// The wide CONTAINERS and IMAGES cells for the pod template at `spec.template`.
fn template_cells(object: &Value) -> [Value; 2] {
    let (names, images) = container_cells(template_containers(object, &["spec", "template"]));
    [text(names), text(images)]
}

static DEPLOYMENT_COLUMNS: [ColumnSpec; 8] = [
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    col("Up-to-date", "string", "Total number of non-terminated pods targeted by this deployment that have the desired template spec."),
    col("Available", "string", "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];
pub(crate) static DEPLOYMENT: Printer = Printer { columns: &DEPLOYMENT_COLUMNS, print: print_deployment };

fn print_deployment(deployment: &Value, now: DateTime<Utc>) -> Row {
    let ready = int_at(deployment, &["status", "readyReplicas"]);
    let selector = label_selector_string(at(deployment, &["spec", "selector"])).unwrap_or_else(|()| "<invalid>".to_string());
    let [names, images] = template_cells(deployment);
    let cells = vec![
        text(name(deployment)),
        text(format!("{ready}/{}", desired_replicas(deployment))),
        int(int_at(deployment, &["status", "updatedReplicas"])),
        int(int_at(deployment, &["status", "availableReplicas"])),
        text(creation_age(deployment, now)),
        names,
        images,
        text(selector),
    ];
    cells.into()
}

static REPLICA_SET_COLUMNS: [ColumnSpec; 8] = [
    NAME,
    col("Desired", "integer", "Replicas is the number of desired pods."),
    col("Current", "integer", "Replicas is the most recently observed number of replicas."),
    col("Ready", "integer", "The number of ready replicas for this replica set."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];
pub(crate) static REPLICA_SET: Printer = Printer { columns: &REPLICA_SET_COLUMNS, print: print_replica_set };

fn print_replica_set(replica_set: &Value, now: DateTime<Utc>) -> Row {
    let selector = format_label_selector(at(replica_set, &["spec", "selector"]));
    replica_row(replica_set, now, selector)
}

pub(crate) static REPLICATION_CONTROLLER: Printer =
    Printer { columns: &REPLICA_SET_COLUMNS, print: print_replication_controller };

fn print_replication_controller(controller: &Value, now: DateTime<Utc>) -> Row {
    let selector = format_labels(at(controller, &["spec", "selector"]));
    replica_row(controller, now, selector)
}

/// NAME DESIRED CURRENT READY AGE + wide cells, shared by replica sets and controllers.
fn replica_row(object: &Value, now: DateTime<Utc>, selector: String) -> Row {
    let [names, images] = template_cells(object);
    let cells = vec![
        text(name(object)),
        int(desired_replicas(object)),
        int(int_at(object, &["status", "replicas"])),
        int(int_at(object, &["status", "readyReplicas"])),
        text(creation_age(object, now)),
        names,
        images,
        text(selector),
    ];
    cells.into()
}

static STATEFUL_SET_COLUMNS: [ColumnSpec; 5] =
    [NAME, col("Ready", "string", "Number of the pod with ready state"), AGE, CONTAINERS, IMAGES];
pub(crate) static STATEFUL_SET: Printer = Printer { columns: &STATEFUL_SET_COLUMNS, print: print_stateful_set };

fn print_stateful_set(stateful_set: &Value, now: DateTime<Utc>) -> Row {
    let ready = int_at(stateful_set, &["status", "readyReplicas"]);
    let [names, images] = template_cells(stateful_set);
    let cells = vec![
        text(name(stateful_set)),
        text(format!("{ready}/{}", desired_replicas(stateful_set))),
        text(creation_age(stateful_set, now)),
        names,
        images,
    ];
    cells.into()
}

static DAEMON_SET_COLUMNS: [ColumnSpec; 11] = [
    NAME,
    col("Desired", "integer", "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod)."),
    col("Current", "integer", "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod."),
    col("Ready", "integer", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready."),
    col("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod"),
    col("Available", "integer", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)"),
    col("Node Selector", "string", "NodeSelector is a selector which must be true for the pod to fit on a node."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];
pub(crate) static DAEMON_SET: Printer = Printer { columns: &DAEMON_SET_COLUMNS, print: print_daemon_set };

fn print_daemon_set(daemon_set: &Value, now: DateTime<Utc>) -> Row {
    let status = |field: &str| int(int_at(daemon_set, &["status", field]));
    let [names, images] = template_cells(daemon_set);
    let cells = vec![
        text(name(daemon_set)),
        status("desiredNumberScheduled"),
        status("currentNumberScheduled"),
        status("numberReady"),
        status("updatedNumberScheduled"),
        status("numberAvailable"),
        text(format_labels(at(daemon_set, &["spec", "template", "spec", "nodeSelector"]))),
        text(creation_age(daemon_set, now)),
        names,
        images,
        text(format_label_selector(at(daemon_set, &["spec", "selector"]))),
    ];
    cells.into()
}

static JOB_COLUMNS: [ColumnSpec; 8] = [
    NAME,
    col("Status", "string", "Status of the job."),
    col("Completions", "string", "The number of pods which reached phase Succeeded."),
    col("Duration", "string", "Time required to complete the job."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];
pub(crate) static JOB: Printer = Printer { columns: &JOB_COLUMNS, print: print_job };

fn print_job(job: &Value, now: DateTime<Utc>) -> Row {
    let succeeded = int_at(job, &["status", "succeeded"]);
    let completions = match opt_int(job, &["spec", "completions"]) {
        Some(wanted) => format!("{succeeded}/{wanted}"),
        None => match opt_int(job, &["spec", "parallelism"]).unwrap_or(0) {
            parallelism if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let started = parse_time(at(job, &["status", "startTime"]));
    let completed = parse_time(at(job, &["status", "completionTime"]));
    let duration = match (started, completed) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(now.signed_duration_since(start)),
        (Some(start), Some(end)) => human_duration(end.signed_duration_since(start)),
    };
    let [names, images] = template_cells(job);
    let cells = vec![
        text(name(job)),
        text(job_status(job)),
        text(completions),
        text(duration),
        text(creation_age(job, now)),
        names,
        images,
        text(format_label_selector(at(job, &["spec", "selector"]))),
    ];
    cells.into()
}

/// The job's STATUS: the first of these that holds, in kube's order of precedence.
fn job_status(job: &Value) -> &'static str {
    let conditions = array_at(job, &["status", "conditions"]);
    let holds = |type_: &str| {
        conditions.iter().find(|c| str_at(c, &["type"]) == type_).is_some_and(|c| str_at(c, &["status"]) == "True")
    };
    let deleting = at(job, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null());
    if holds("Complete") {
        "Complete"
    } else if holds("Failed") {
        "Failed"
    } else if deleting {
        "Terminating"
    } else if holds("Suspended") {
        "Suspended"
    } else if holds("FailureTarget") {
        "FailureTarget"
    } else if holds("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

static CRON_JOB_COLUMNS: [ColumnSpec; 10] = [
    NAME,
    col("Schedule", "string", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    col("Timezone", "string", "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones."),
    col("Suspend", "boolean", "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions."),
    col("Active", "integer", "A list of pointers to currently running jobs."),
    col("Last Schedule", "string", "Information when was the last time the job was successfully scheduled."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];
pub(crate) static CRON_JOB: Printer = Printer { columns: &CRON_JOB_COLUMNS, print: print_cron_job };

fn print_cron_job(cron_job: &Value, now: DateTime<Utc>) -> Row {
    let last_schedule = match at(cron_job, &["status", "lastScheduleTime"]).filter(|v| !v.is_null()) {
        Some(timestamp) => age_of(Some(timestamp), now),
        None => "<none>".to_string(),
    };
    let suspend = match opt_bool(cron_job, &["spec", "suspend"]) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    let job_template = at(cron_job, &["spec", "jobTemplate"]).unwrap_or(&Value::Null);
    let (names, images) = container_cells(template_containers(job_template, &["spec", "template"]));
    let cells = vec![
        text(name(cron_job)),
        text(str_at(cron_job, &["spec", "schedule"])),
        text(opt_str(cron_job, &["spec", "timeZone"]).unwrap_or("<none>")),
        text(suspend),
        super::count(array_at(cron_job, &["status", "active"]).len()),
        text(last_schedule),
        text(creation_age(cron_job, now)),
        text(names),
        text(images),
        text(format_label_selector(at(job_template, &["spec", "selector"]))),
    ];
    cells.into()
}

static CONTROLLER_REVISION_COLUMNS: [ColumnSpec; 4] = [
    NAME,
    col("Controller", "string", "Controller of the object"),
    col("Revision", "string", "Revision indicates the revision of the state represented by Data."),
    AGE,
];
pub(crate) static CONTROLLER_REVISION: Printer =
    Printer { columns: &CONTROLLER_REVISION_COLUMNS, print: print_controller_revision };

fn print_controller_revision(revision: &Value, now: DateTime<Utc>) -> Row {
    let cells = vec![
        text(name(revision)),
        text(controller_name(revision)),
        int(int_at(revision, &["revision"])),
        text(creation_age(revision, now)),
    ];
    cells.into()
}

/// The controlling owner as `kind.group/name` in lower case, or `<none>`.
fn controller_name(object: &Value) -> String {
    let owners = array_at(object, &["metadata", "ownerReferences"]);
    let Some(owner) = owners.iter().find(|o| crate::table::read::bool_at(o, &["controller"])) else {
        return "<none>".to_string();
    };
    let kind = str_at(owner, &["kind"]);
    let owner_name = str_at(owner, &["name"]);
    let api_version = str_at(owner, &["apiVersion"]);
    let group = match api_version.split_once('/') {
        Some((group, _)) => group,
        None => "",
    };
    match (kind, group) {
        ("", "") => owner_name.to_string(),
        (kind, "") => format!("{}/{owner_name}", kind.to_lowercase()),
        (kind, group) => format!("{}.{}/{owner_name}", kind.to_lowercase(), group.to_lowercase()),
    }
}
