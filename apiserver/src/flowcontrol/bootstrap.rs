//! The objects every server starts with, as kube-apiserver v1.33 makes them: the mandatory `exempt` and
//! `catch-all` levels and schemas, and the suggested ones. The tenant needs no change to them: it is part of every
//! flow whatever a schema's distinguisher (see `FlowControl::flow`).

use serde_json::{json, Value};

use super::GROUP_VERSION;

/// kube's annotation on objects it keeps up to date itself.
const AUTO_UPDATE: &str = "apf.kubernetes.io/autoupdate-spec";

fn object(kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": GROUP_VERSION, "kind": kind, "metadata": {"name": name, "annotations": {AUTO_UPDATE: "true"}}, "spec": spec})
}

/// A Limited level that queues.
fn queuing(name: &str, shares: u32, lendable: u32, queues: u32, hand_size: u32, queue_length_limit: u32) -> Value {
    object("PriorityLevelConfiguration", name, json!({"type": "Limited", "limited": {
        "nominalConcurrencyShares": shares, "lendablePercent": lendable,
        "limitResponse": {"type": "Queue", "queuing": {"queues": queues, "handSize": hand_size, "queueLengthLimit": queue_length_limit}}}}))
}

/// Every PriorityLevelConfiguration of the bootstrap set.
pub fn priority_levels() -> Vec<Value> {
    vec![
        object("PriorityLevelConfiguration", "exempt", json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}})),
        object("PriorityLevelConfiguration", "catch-all", json!({"type": "Limited", "limited": {
            "nominalConcurrencyShares": 5, "lendablePercent": 0, "limitResponse": {"type": "Reject"}}})),
        queuing("system", 30, 33, 64, 6, 50),
        queuing("node-high", 40, 25, 64, 6, 50),
        queuing("leader-election", 10, 0, 16, 4, 50),
        queuing("workload-high", 40, 50, 128, 6, 50),
        queuing("workload-low", 100, 90, 128, 6, 50),
        queuing("global-default", 20, 50, 128, 6, 50),
    ]
}

fn groups(names: &[&str]) -> Vec<Value> {
    names.iter().map(|name| json!({"kind": "Group", "group": {"name": name}})).collect()
}

fn users(names: &[&str]) -> Vec<Value> {
    names.iter().map(|name| json!({"kind": "User", "user": {"name": name}})).collect()
}

fn kube_system_account(name: &str) -> Value {
    json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": name}})
}

fn resource_rule(verbs: &[&str], groups: &[&str], resources: &[&str], namespaces: &[&str], cluster_scope: bool) -> Value {
    let mut rule = json!({"verbs": verbs, "apiGroups": groups, "resources": resources, "clusterScope": cluster_scope});
    if !namespaces.is_empty() {
        rule["namespaces"] = json!(namespaces);
    }
    rule
}

/// Every request of `subjects`.
fn everything(subjects: Vec<Value>) -> Value {
    json!([{"subjects": subjects,
        "resourceRules": [resource_rule(&["*"], &["*"], &["*"], &["*"], true)],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}])
}

fn schema(name: &str, level: &str, precedence: u32, distinguisher: Option<&str>, rules: Value) -> Value {
    let mut spec = json!({"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": precedence, "rules": rules});
    if let Some(method) = distinguisher {
        spec["distinguisherMethod"] = json!({"type": method});
    }
    object("FlowSchema", name, spec)
}

/// Every FlowSchema of the bootstrap set.
pub fn flow_schemas() -> Vec<Value> {
    let authenticated = ["system:unauthenticated", "system:authenticated"];
    let leases = |namespaces: &[&str]| resource_rule(&["get", "create", "update"], &["coordination.k8s.io"], &["leases"], namespaces, false);
    let election = |namespaces: &[&str]| resource_rule(&["get", "create", "update"], &[""], &["endpoints", "configmaps"], namespaces, false);
    let mut leader_election_subjects = users(&["system:kube-controller-manager", "system:kube-scheduler"]);
    leader_election_subjects.push(kube_system_account("*"));
    vec![
        schema("exempt", "exempt", 1, None, everything(groups(&["system:masters"]))),
        schema("probes", "exempt", 2, None, json!([{"subjects": groups(&authenticated),
            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}]}])),
        schema("system-leader-election", "leader-election", 100, Some("ByUser"), json!([{"subjects": leader_election_subjects,
            "resourceRules": [election(&["kube-system"]), leases(&["*"])]}])),
        schema("endpoint-controller", "workload-high", 150, Some("ByUser"), json!([{
            "subjects": [users(&["system:kube-controller-manager"])[0].clone(), kube_system_account("endpoint-controller")],
            "resourceRules": [resource_rule(&["get", "create", "update"], &[""], &["endpoints"], &["*"], false)]}])),
        schema("workload-leader-election", "leader-election", 200, Some("ByUser"), json!([{"subjects": [kube_system_account("*")],
            "resourceRules": [election(&["*"]), leases(&["*"])]}])),
        schema("system-node-high", "node-high", 400, Some("ByUser"), json!([{"subjects": groups(&["system:nodes"]),
            "resourceRules": [resource_rule(&["*"], &[""], &["nodes", "nodes/status"], &[], true),
                resource_rule(&["*"], &["coordination.k8s.io"], &["leases"], &["*"], false)]}])),
        schema("system-nodes", "system", 500, Some("ByUser"), everything(groups(&["system:nodes"]))),
        schema("kube-controller-manager", "workload-high", 800, Some("ByNamespace"), everything(users(&["system:kube-controller-manager"]))),
        schema("kube-scheduler", "workload-high", 800, Some("ByNamespace"), everything(users(&["system:kube-scheduler"]))),
        schema("kube-system-service-accounts", "workload-high", 900, Some("ByNamespace"), everything(vec![kube_system_account("*")])),
        schema("service-accounts", "workload-low", 9000, Some("ByUser"), everything(groups(&["system:serviceaccounts"]))),
        schema("global-default", "global-default", 9900, Some("ByUser"), everything(groups(&authenticated))),
        schema("catch-all", "catch-all", 10000, Some("ByUser"), everything(groups(&authenticated))),
    ]
}
