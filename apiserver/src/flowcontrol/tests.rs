//! Classification over the bootstrap objects, seat shares, flows, the tenant a request is charged to, and the
//! dispatcher following edits, in process.

use std::time::Duration;

use kspaces_authz::{Caller, UserInfo};
use kspaces_storage::{Revision, SpaceName};
use serde_json::{json, Value};

use super::*;
use crate::apis::request_info;

fn caller(name: &str, groups: &[&str], tenant: &str) -> Caller {
    let user = UserInfo::authenticated(name.into(), String::new(), groups.iter().map(|g| g.to_string()).collect(), Some(tenant.into()));
    Caller { user, tenant: Some(tenant.into()), system: tenant == tenancy::SYSTEM }
}

fn rows() -> (ResourceInfo, ResourceInfo) {
    let rows = crate::kinds::resources();
    let find = |kind: &str| rows.iter().find(|r| r.group == GROUP && r.kind == kind).cloned().expect("a flowcontrol row");
    (find(FLOW_SCHEMA), find(PRIORITY_LEVEL))
}

/// A dispatcher holding the bootstrap objects (each with a UID), as the server primes it.
fn bootstrapped(settings: Settings) -> FlowControl {
    let flowcontrol = FlowControl::default();
    flowcontrol.configure(settings);
    let (schemas, levels) = rows();
    let mut revision = 1;
    for (row, objects) in [(&levels, bootstrap::priority_levels()), (&schemas, bootstrap::flow_schemas())] {
        for mut object in objects {
            let name = object["metadata"]["name"].as_str().unwrap_or_default().to_owned();
            object["metadata"]["uid"] = json!(format!("uid-{name}"));
            flowcontrol.written(row, &SpaceName::system(), &name, Some(&object), Revision(revision));
            revision += 1;
        }
    }
    flowcontrol
}

fn schema_of(flowcontrol: &FlowControl, caller: Option<&Caller>, method: &str, path: &str) -> String {
    let info = request_info::parse(method, path, "");
    flowcontrol.classify(caller, &info).map(|c| c.schema.name.clone()).unwrap_or_default()
}

#[test]
fn requests_are_classified_as_kube_classifies_them() {
    let flowcontrol = bootstrapped(Settings::default());
    let admin = caller("kubernetes-admin", &["system:masters"], tenancy::SYSTEM);
    let alice = caller("alice", &[], "t-a");
    let account = caller("system:serviceaccount:default:builder", &["system:serviceaccounts", "system:serviceaccounts:default"], "t-a");
    let system_account = caller("system:serviceaccount:kube-system:job", &["system:serviceaccounts"], "t-a");
    let node = caller("system:node:n1", &["system:nodes"], tenancy::SYSTEM);
    let get = |who: Option<&Caller>, path: &str| schema_of(&flowcontrol, who, "GET", path);
    assert_eq!(get(Some(&admin), "/api/v1/namespaces/default/configmaps"), "exempt");
    assert_eq!(get(None, "/healthz"), "probes");
    assert_eq!(get(Some(&alice), "/readyz"), "probes");
    assert_eq!(get(None, "/version"), "global-default");
    assert_eq!(get(Some(&alice), "/api/v1/namespaces/default/configmaps"), "global-default");
    assert_eq!(get(Some(&account), "/api/v1/namespaces/default/configmaps"), "service-accounts");
    assert_eq!(get(Some(&system_account), "/api/v1/namespaces/kube-system/configmaps/x"), "system-leader-election");
    assert_eq!(get(Some(&system_account), "/api/v1/namespaces/kube-system/pods"), "kube-system-service-accounts");
    assert_eq!(get(Some(&node), "/api/v1/nodes/n1"), "system-node-high");
    assert_eq!(get(Some(&node), "/api/v1/namespaces/default/pods"), "system-nodes");
    let exempt = flowcontrol.classify(Some(&admin), &request_info::parse("GET", "/api", "")).expect("classified");
    let mut headers = HeaderMap::new();
    exempt.set_headers(&mut headers);
    assert_eq!(headers.get(FLOW_SCHEMA_UID).and_then(|v| v.to_str().ok()), Some("uid-exempt"));
    assert_eq!(headers.get(PRIORITY_LEVEL_UID).and_then(|v| v.to_str().ok()), Some("uid-exempt"));
}

#[test]
fn seats_are_the_levels_shares_of_the_total() {
    let flowcontrol = bootstrapped(Settings { total_seats: 600, ..Settings::default() });
    let seats = |level: &str| flowcontrol.current().levels[level].set.params().seats;
    // kube's figures for its defaults (400 + 200): Σ shares = 245.
    assert_eq!((seats("global-default"), seats("workload-low"), seats("catch-all"), seats("leader-election")), (49, 245, 13, 25));
    flowcontrol.configure(Settings { total_seats: 60, ..Settings::default() });
    assert_eq!((seats("global-default"), seats("workload-low"), seats("catch-all")), (5, 25, 2));
    let text = {
        let mut registry = prometheus_client::registry::Registry::default();
        flowcontrol.metrics().register(&mut registry);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).expect("encoded");
        out
    };
    assert!(text.contains(r#"apiserver_flowcontrol_nominal_limit_seats{priority_level="global-default"} 5"#), "{text}");
}

#[test]
fn the_tenant_is_part_of_every_flow() {
    assert_ne!(flow("global-default", "t-a", "alice"), flow("global-default", "t-b", "alice"));
    assert_ne!(flow("global-default", "t-a", ""), flow("service-accounts", "t-a", ""));
    assert_eq!(flow("global-default", "t-a", "alice"), flow("global-default", "t-a", "alice"));
    let tree = Tree::default();
    let alice = caller("alice", &[], "t-a");
    let admin = caller("admin", &["system:masters"], tenancy::SYSTEM);
    let path = |text: &str| SpacePath::Workspace(text.into());
    assert_eq!(tenant_of(Some(&alice), &path("root:t-b"), &tree), "t-a", "a tenant user is charged for what it asks, anywhere");
    assert_eq!(tenant_of(Some(&admin), &path("root:t-b:team"), &tree), "t-b");
    assert_eq!(tenant_of(Some(&admin), &SpacePath::Tenant("t-c".into()), &tree), "t-c");
    assert_eq!(tenant_of(Some(&admin), &path("root"), &tree), "system");
    assert_eq!(tenant_of(Some(&admin), &SpacePath::Short, &tree), "system");
    assert_eq!(tenant_of(None, &SpacePath::Short, &tree), "");
}

fn level(name: &str, shares: u32, queues: u32, hand_size: u32, queue_length_limit: u32) -> Value {
    json!({"apiVersion": GROUP_VERSION, "kind": PRIORITY_LEVEL, "metadata": {"name": name, "uid": format!("uid-{name}")},
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": shares,
            "limitResponse": {"type": "Queue", "queuing": {"queues": queues, "handSize": hand_size, "queueLengthLimit": queue_length_limit}}}}})
}

#[tokio::test]
async fn an_edited_level_changes_what_the_next_request_gets() {
    let flowcontrol = bootstrapped(Settings { total_seats: 60, wait_limit: Duration::from_millis(50), ..Settings::default() });
    let (schemas, levels) = rows();
    // A tiny level for tenant users, made by an admin: one seat, one queue of one.
    flowcontrol.written(&levels, &SpaceName::system(), "tiny", Some(&level("tiny", 1, 1, 1, 1)), Revision(100));
    let tiny_users = json!({"apiVersion": GROUP_VERSION, "kind": FLOW_SCHEMA, "metadata": {"name": "tiny-users", "uid": "uid-tiny-users"},
        "spec": {"priorityLevelConfiguration": {"name": "tiny"}, "matchingPrecedence": 500, "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"], "clusterScope": true}]}]}});
    flowcontrol.written(&schemas, &SpaceName::system(), "tiny-users", Some(&tiny_users), Revision(101));
    let alice = caller("alice", &[], "t-a");
    let info = request_info::parse("GET", "/api/v1/namespaces/default/configmaps", "");
    let classified = flowcontrol.classify(Some(&alice), &info).expect("classified");
    assert_eq!(classified.schema.name, "tiny-users");
    let running = flowcontrol.admit(&classified, Some(&alice), "t-a", &info).await.expect("the one seat");
    let waiting = flowcontrol.admit(&classified, Some(&alice), "t-a", &info);
    let (waited, full) = tokio::join!(waiting, async {
        tokio::task::yield_now().await;
        flowcontrol.admit(&classified, Some(&alice), "t-a", &info).await
    });
    let full = full.err().expect("the queue of one is full");
    assert_eq!((full.code, full.reason, full.message.as_str()), (429, "TooManyRequests", TOO_MANY_REQUESTS));
    assert_eq!(full.details.as_ref().and_then(|d| d.retry_after_seconds), Some(1));
    assert_eq!(waited.err().map(|e| e.code), Some(429), "waited past the 50 ms limit");
    drop(running);
    // The admin gives the level ten seats: the same requests now run together.
    flowcontrol.written(&levels, &SpaceName::system(), "tiny", Some(&level("tiny", 10, 1, 1, 1)), Revision(102));
    let seats = flowcontrol.current().levels["tiny"].set.params().seats;
    assert!(seats > 1, "{seats}");
    let first = flowcontrol.admit(&classified, Some(&alice), "t-a", &info).await.expect("a seat");
    let second = flowcontrol.admit(&classified, Some(&alice), "t-a", &info).await.expect("another seat");
    drop((first, second));
    // The schema deleted: tenant users are back in global-default.
    flowcontrol.written(&schemas, &SpaceName::system(), "tiny-users", None, Revision(103));
    assert_eq!(flowcontrol.classify(Some(&alice), &info).map(|c| c.schema.name.clone()).as_deref(), Some("global-default"));
}
