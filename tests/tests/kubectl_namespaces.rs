//! Namespace lifecycle through kubectl: Terminating, content finalizers, creation refused, immortal namespaces.

use std::time::Duration;

use kspaces_tests::{eventually, Server};

const DOOMED: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: doomed}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: doomed, finalizers: [example.com/hold]}
data: {k: v}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: doomed}
spec:
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: a}}
    spec: {containers: [{name: c, image: busybox}]}
";

#[test]
fn deleting_a_namespace_waits_for_finalized_content_then_disappears() {
    let server = Server::start();
    let kubectl = server.kubectl();
    let created = kubectl.ok_with_stdin(&["apply", "-f", "-"], DOOMED);
    assert!(created.contains("namespace/doomed created") && created.contains("deployment.apps/app created"), "{created}");
    assert_eq!(kubectl.ok(&["get", "ns", "doomed", "-o", "jsonpath={.status.phase}"]), "Active");

    assert_eq!(kubectl.ok(&["delete", "ns", "doomed", "--wait=false"]).trim(), "namespace \"doomed\" deleted");
    let listed = kubectl.ok(&["get", "ns", "doomed"]);
    let row: Vec<&str> = listed.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(row[..2], ["doomed", "Terminating"], "{listed}");
    assert_eq!(kubectl.ok(&["get", "ns", "doomed", "-o", "jsonpath={.status.phase}"]), "Terminating");
    let deletion_timestamp = kubectl.ok(&["get", "ns", "doomed", "-o", "jsonpath={.metadata.deletionTimestamp}"]);
    assert!(!deletion_timestamp.is_empty(), "a terminating namespace has a deletionTimestamp");

    let refused = kubectl.run_with_stdin(&["apply", "-f", "-"], "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: late, namespace: doomed}\n");
    assert!(!refused.status.success(), "creating in a terminating namespace must fail");
    let refused = String::from_utf8_lossy(&refused.stderr);
    assert!(refused.contains("Error from server (Forbidden)"), "{refused}");
    assert!(refused.contains("is forbidden: unable to create new content in namespace doomed because it is being terminated"), "{refused}");
    let refused = refused.into_owned();

    let deployment_gone = eventually(Duration::from_secs(10), || kubectl.ok(&["get", "deploy", "-n", "doomed", "-o", "name"]).trim().is_empty());
    assert!(deployment_gone, "the namespace's content is deleted");
    let held = kubectl.ok(&["get", "cm", "held", "-n", "doomed", "-o", "jsonpath={.metadata.deletionTimestamp}"]);
    assert!(!held.is_empty(), "the finalized config map is marked for deletion and kept");
    assert_eq!(kubectl.ok(&["get", "ns", "doomed", "-o", "jsonpath={.status.phase}"]), "Terminating", "the namespace waits for its content");

    // The content finalizer is the namespace controller's to lift, through /finalize: a patch of the main resource
    // keeps it (as kube's namespace strategy does), so the namespace cannot skip its content.
    kubectl.ok(&["patch", "ns", "doomed", "--type", "merge", "-p", r#"{"spec":{"finalizers":[]}}"#]);
    assert_eq!(kubectl.ok(&["get", "ns", "doomed", "-o", "jsonpath={.spec.finalizers}"]), r#"["kubernetes"]"#);
    assert_eq!(kubectl.ok(&["get", "ns", "doomed", "-o", "jsonpath={.status.phase}"]), "Terminating");

    kubectl.ok(&["patch", "cm", "held", "-n", "doomed", "--type", "json", "-p", r#"[{"op":"remove","path":"/metadata/finalizers"}]"#]);
    let gone = eventually(Duration::from_secs(15), || {
        let output = kubectl.run(&["get", "ns", "doomed"]);
        String::from_utf8_lossy(&output.stderr).contains("namespaces \"doomed\" not found")
    });
    assert!(gone, "the namespace disappears once its content is gone");
    let recreated = kubectl.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: v1\nkind: Namespace\nmetadata: {name: doomed}\n");
    assert_eq!(recreated.trim(), "namespace/doomed created");

    // Checked last so the lifecycle above is checked even while this detail is wrong: kube names the refused object.
    assert!(refused.contains("configmaps \"late\" is forbidden:"), "the Forbidden error names the object, not the namespace: {refused}");
}

#[test]
fn system_namespaces_cannot_be_deleted_and_every_namespace_is_labelled_with_its_name() {
    let server = Server::start();
    let kubectl = server.kubectl();
    for name in ["default", "kube-system", "kube-public"] {
        let refused = kubectl.fails(&["delete", "ns", name]);
        let expected = format!("Error from server (Forbidden): namespaces \"{name}\" is forbidden: this namespace may not be deleted");
        assert!(refused.contains(&expected), "{refused}");
        assert_eq!(kubectl.ok(&["get", "ns", name, "-o", "jsonpath={.status.phase}"]), "Active");
    }
    kubectl.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: v1\nkind: Namespace\nmetadata: {name: fresh}\n");
    let missing = kubectl.fails(&["delete", "ns", "never-was"]);
    assert!(missing.contains("Error from server (NotFound): namespaces \"never-was\" not found"), "{missing}");

    // kube labels every namespace with its own name so that namespace selectors can pick it by name.
    for name in ["default", "kube-system", "fresh"] {
        let label = kubectl.ok(&["get", "ns", name, "-o", "jsonpath={.metadata.labels.kubernetes\\.io/metadata\\.name}"]);
        assert_eq!(label, name, "namespace {name} lacks the kubernetes.io/metadata.name label");
    }
    let selected = kubectl.ok(&["get", "ns", "-l", "kubernetes.io/metadata.name=fresh", "-o", "name"]);
    assert_eq!(selected.trim(), "namespace/fresh");
}
