//! Access reviews give the answer the request itself would get: `kubectl auth can-i` (SelfSubjectAccessReview),
//! `kubectl auth can-i --list` (SelfSubjectRulesReview) and SubjectAccessReviews agree with what tenancy and
//! admission refuse whatever RBAC says (system-only resources, DaemonSets in tenant spaces, undeletable
//! namespaces, server-wide endpoints). And a list or watch whose field selector names one object is authorized
//! as on that object, so a `resourceNames` grant lets `kubectl get cm x -w` run.

use std::time::Duration;

use kspaces_tests::{certificate_kubeconfig, create_tenant, kubeconfig_with_server_url, Kubectl, Server, WatchOutput};
use serde_json::Value;

/// kubectl auth can-i's answer (`yes`, or `no` with its reason) and whether the request itself succeeded.
fn can_i(kubectl: &Kubectl, args: &[&str]) -> String {
    let mut all = vec!["auth", "can-i"];
    all.extend_from_slice(args);
    let output = kubectl.run(&all);
    let answer = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert_eq!(output.status.success(), answer == "yes", "can-i {args:?}: exit status and answer disagree: {answer}");
    answer
}

fn server_with_tenant() -> (Server, Kubectl, Kubectl) {
    let server = Server::start();
    let system = server.kubectl();
    create_tenant(&system, "t-a");
    let admin = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[]));
    (server, system, admin)
}

#[test]
fn can_i_agrees_with_the_request_for_a_tenant_admin() {
    let (_server, _system, admin) = server_with_tenant();
    // (can-i arguments, the request, whether the request is allowed)
    let rows: [(&[&str], &[&str], bool); 9] = [
        (&["list", "nodes"], &["get", "--raw", "/api/v1/nodes"], false),
        (&["list", "tenants"], &["get", "--raw", "/api/v1/tenants"], false),
        (&["list", "priorityclasses.scheduling.k8s.io"], &["get", "--raw", "/apis/scheduling.k8s.io/v1/priorityclasses"], false),
        (&["create", "daemonsets.apps"], &["create", "--raw", "/apis/apps/v1/namespaces/default/daemonsets", "-f", "-"], false),
        (&["list", "daemonsets.apps"], &["get", "--raw", "/apis/apps/v1/namespaces/default/daemonsets"], true),
        (&["delete", "namespace/default"], &["delete", "--raw", "/api/v1/namespaces/default"], false),
        (&["get", "/metrics"], &["get", "--raw", "/metrics"], false),
        (&["get", "/version"], &["get", "--raw", "/version"], true),
        (&["list", "configmaps"], &["get", "--raw", "/api/v1/namespaces/default/configmaps"], true),
    ];
    let daemonset = r#"{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},
        "template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}"#;
    for (question, request, allowed) in rows {
        let answer = can_i(&admin, question);
        let output = admin.run_with_stdin(request, daemonset);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.success(), allowed, "{request:?}: {stderr}");
        if allowed {
            assert_eq!(answer, "yes", "{question:?}");
        } else {
            assert!(answer.starts_with("no - "), "{question:?}: a refusal says why: {answer}");
            assert!(stderr.contains("(Forbidden)"), "{request:?}: {stderr}");
        }
    }
    assert!(can_i(&admin, &["*", "*"]).starts_with("no - "), "not everything: the system-only resources are refused");
    assert_eq!(can_i(&admin, &["delete", "namespace/team"]), "yes");
}

#[test]
fn can_i_list_leaves_out_what_is_refused() {
    let (_server, _system, admin) = server_with_tenant();
    let listed = admin.ok(&["auth", "can-i", "--list"]);
    let rows: Vec<Vec<&str>> = listed.lines().map(|l| l.split_whitespace().collect()).collect();
    let row = |resource: &str| rows.iter().find(|cells| cells.first() == Some(&resource)).cloned();
    for refused in ["nodes", "tenants", "priorityclasses.scheduling.k8s.io", "[/metrics]"] {
        assert!(row(refused).is_none(), "{refused} is listed:\n{listed}");
    }
    assert!(!listed.lines().any(|l| l.starts_with("*.* ")), "the unrestricted rule is expanded:\n{listed}");
    let configmaps = row("configmaps").unwrap_or_else(|| panic!("configmaps:\n{listed}"));
    assert!(configmaps.last() == Some(&"[*]") || configmaps.join(" ").contains("create"), "{configmaps:?}");
    let daemonsets = row("daemonsets.apps").unwrap_or_else(|| panic!("daemonsets:\n{listed}"));
    let verbs = daemonsets.join(" ");
    assert!(verbs.contains("get") && verbs.contains("delete") && !verbs.contains("create") && !verbs.contains("patch"), "{verbs}");
    assert!(row("[/version]").is_some() && row("[/healthz]").is_some(), "public URLs stay:\n{listed}");
}

#[test]
fn subject_access_reviews_agree_and_system_users_are_answered_per_space() {
    let (server, system, admin) = server_with_tenant();
    let review = |kubectl: &Kubectl, spec: &str| -> Value {
        let body = format!(r#"{{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{spec}}}"#);
        serde_json::from_str(&kubectl.ok_with_stdin(&["create", "-f", "-", "-o", "json"], &body)).expect("a review")
    };
    let nodes = r#"{"user":"admin","resourceAttributes":{"verb":"list","resource":"nodes"}}"#;
    let status = &review(&admin, nodes)["status"];
    assert_eq!((status["allowed"].as_bool(), status["denied"].as_bool()), (Some(false), Some(true)), "{status}");
    assert!(status["reason"].as_str().unwrap_or_default().contains("reserved for the system tenant"), "{status}");
    let configmaps = r#"{"user":"admin","resourceAttributes":{"verb":"list","resource":"configmaps","namespace":"default"}}"#;
    assert_eq!(review(&admin, configmaps)["status"]["allowed"], true);
    // The system administrator lists nodes in the system space, but a tenant's space does not serve them (404).
    assert_eq!(can_i(&system, &["list", "nodes"]), "yes");
    assert!(system.ok(&["get", "--raw", "/api/v1/nodes"]).contains("NodeList"));
    let in_tenant = Kubectl::new(&kubeconfig_with_server_url(&server, &server.kubeconfig, &format!("{}/clusters/root:t-a", server.url)));
    assert!(can_i(&in_tenant, &["list", "nodes"]).starts_with("no - "));
    // (kubectl's --raw path ignores the server URL's path, so the space is in the raw path.)
    assert!(system.fails(&["get", "--raw", "/clusters/root:t-a/api/v1/nodes"]).contains("(NotFound)"));
    assert!(can_i(&in_tenant, &["create", "daemonsets.apps"]).starts_with("no - "));
    assert_eq!(can_i(&in_tenant, &["get", "/metrics"]), "yes", "judged in the system space, as the request is");
}

#[test]
fn a_resource_names_grant_lets_a_field_selector_list_and_watch_that_object() {
    let (server, system, admin) = server_with_tenant();
    let role = r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"x-reader","namespace":"default"},
        "rules":[{"apiGroups":[""],"resources":["configmaps"],"resourceNames":["x"],"verbs":["get","list","watch"]}]}"#;
    admin.ok_with_stdin(&["create", "-f", "-"], role);
    let binding = r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"x-reader","namespace":"default"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"x-reader"},
        "subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"bob"}]}"#;
    admin.ok_with_stdin(&["create", "-f", "-"], binding);
    admin.ok(&["create", "configmap", "x", "--from-literal=k=1"]);
    admin.ok(&["create", "configmap", "y", "--from-literal=k=1"]);
    let bob = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "bob", &[]));
    // kubectl get cm x -w: a GET of x, then a watch with fieldSelector=metadata.name=x.
    let mut watch = WatchOutput::start(&bob, &["get", "configmap", "x", "-w", "--output-watch-events"]);
    assert!(watch.wait_for(Duration::from_secs(20), |line| line.contains("ADDED") && line.contains(" x ")), "{}", watch.transcript());
    admin.ok(&["label", "configmap", "x", "seen=yes"]);
    assert!(watch.wait_for(Duration::from_secs(20), |line| line.contains("MODIFIED")), "{}", watch.transcript());
    let listed = bob.ok(&["get", "--raw", "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Dx"]);
    assert!(listed.contains("\"name\":\"x\"") && !listed.contains("\"name\":\"y\""), "{listed}");
    // Anything wider, or another name, is refused as before.
    for args in [&["get", "configmaps"][..], &["get", "configmap", "y"], &["get", "--raw", "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Dy"]] {
        assert!(bob.fails(args).contains("(Forbidden)"), "{args:?}");
    }
    assert_eq!(can_i(&bob, &["list", "configmaps/x"]), "yes");
    assert!(can_i(&bob, &["list", "configmaps"]).starts_with("no"));
    drop(system);
}
