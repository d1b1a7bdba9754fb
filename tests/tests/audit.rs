//! The audit log through kubectl: `--audit-log-path` writes one `audit.k8s.io/v1` Event per request as a JSON
//! line, with user, tenant, verb, objectRef, response code and the authorization decision; `--audit-policy-file`
//! picks levels per request.

use std::time::Duration;

use kspaces_tests::{certificate_kubeconfig, create_tenant, eventually, Kubectl, Server};
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(20);

fn events(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))).collect()
}

/// The events whose requestURI is exactly `uri`.
fn for_uri(events: &[Value], uri: &str) -> Vec<Value> {
    events.iter().filter(|e| e["requestURI"] == uri).cloned().collect()
}

#[test]
fn every_request_gets_one_event_line() {
    let logs = tempfile::tempdir().expect("temp dir");
    let log = logs.path().join("audit.log");
    let server = Server::start_with(&["--audit-log-path", log.to_str().expect("utf-8")]);
    let system = server.kubectl();
    create_tenant(&system, "t-a");
    let alice = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "alice", &[]));
    let admin = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[]));

    let created = "/api/v1/namespaces/default/configmaps";
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"audited"}}"#;
    admin.ok_with_stdin(&["create", "--raw", created, "-f", "-"], body);
    for i in 0..3 {
        admin.ok(&["get", "--raw", &format!("/api/v1/namespaces/default/configmaps/audited?probe={i}")]);
    }
    alice.fails(&["get", "--raw", "/api/v1/namespaces/default/secrets"]);

    let complete = eventually(TIMEOUT, || for_uri(&events(&log), "/api/v1/namespaces/default/secrets").len() == 1);
    assert!(complete, "the forbidden request was logged: {:?}", events(&log).len());
    let all = events(&log);
    for i in 0..3 {
        let uri = format!("/api/v1/namespaces/default/configmaps/audited?probe={i}");
        assert_eq!(for_uri(&all, &uri).len(), 1, "one line for {uri}");
    }
    let create = &for_uri(&all, created)[0];
    assert_eq!(create["kind"], "Event");
    assert_eq!(create["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(create["level"], "Metadata");
    assert_eq!(create["stage"], "ResponseComplete");
    assert_eq!(create["verb"], "create");
    assert_eq!(create["user"]["username"], "admin");
    assert_eq!(create["objectRef"]["resource"], "configmaps");
    assert_eq!(create["objectRef"]["namespace"], "default");
    assert_eq!(create["responseStatus"]["code"], 201);
    assert_eq!(create["annotations"]["authorization.k8s.io/decision"], "allow");
    assert!(create["annotations"]["authorization.k8s.io/reason"].as_str().is_some_and(|r| r.contains("admin-role-binding")), "{create}");
    assert_eq!(create["annotations"]["kspaces.io/tenant"], "t-a");
    assert!(create["auditID"].as_str().is_some_and(|id| !id.is_empty()));

    let denied = &for_uri(&all, "/api/v1/namespaces/default/secrets")[0];
    assert_eq!(denied["user"]["username"], "alice");
    assert_eq!(denied["verb"], "list");
    assert_eq!(denied["responseStatus"]["code"], 403);
    assert_eq!(denied["annotations"]["authorization.k8s.io/decision"], "forbid");
    let ids: std::collections::HashSet<&str> = all.iter().filter_map(|e| e["auditID"].as_str()).collect();
    assert_eq!(ids.len(), all.len(), "every event has its own auditID");
}

#[test]
fn the_policy_file_chooses_levels() {
    let logs = tempfile::tempdir().expect("temp dir");
    let log = logs.path().join("audit.log");
    let policy = logs.path().join("policy.yaml");
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n\
        - level: None\n  resources: [{group: \"\", resources: [\"secrets\"]}]\n\
        - level: RequestResponse\n  resources: [{group: \"\", resources: [\"configmaps\"]}]\n\
        - level: Metadata\n").expect("write policy");
    let server = Server::start_with(&["--audit-log-path", log.to_str().expect("utf-8"), "--audit-policy-file", policy.to_str().expect("utf-8")]);
    let system = server.kubectl();
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"logged"},"data":{"k":"v"}}"#;
    system.ok_with_stdin(&["create", "--raw", "/api/v1/namespaces/default/configmaps", "-f", "-"], body);
    system.ok(&["get", "--raw", "/api/v1/namespaces/default/secrets"]);
    system.ok(&["get", "--raw", "/api/v1/namespaces/default/serviceaccounts"]);

    let done = eventually(TIMEOUT, || !for_uri(&events(&log), "/api/v1/namespaces/default/serviceaccounts").is_empty());
    assert!(done, "the Metadata request was logged");
    let all = events(&log);
    assert!(for_uri(&all, "/api/v1/namespaces/default/secrets").is_empty(), "level None writes nothing");
    let create = &for_uri(&all, "/api/v1/namespaces/default/configmaps")[0];
    assert_eq!(create["level"], "RequestResponse");
    assert_eq!(create["requestObject"]["data"]["k"], "v", "{create}");
    assert_eq!(create["responseObject"]["metadata"]["name"], "logged", "{create}");
    assert_eq!(for_uri(&all, "/api/v1/namespaces/default/serviceaccounts")[0]["level"], "Metadata");
}
