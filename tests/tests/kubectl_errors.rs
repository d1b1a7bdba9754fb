//! The errors kubectl users see: 422 with every cause, unknown types, NotFound, 413, 400 and Conflict.

use kspaces_tests::Server;

#[test]
fn invalid_objects_are_rejected_with_every_cause() {
    let server = Server::start();
    let kubectl = server.kubectl();
    let bad_config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n  labels: {\"bad key!\": \"v@lue\"}\n";
    let refused = kubectl.fails_with_stdin(&["apply", "-f", "-"], bad_config_map);
    assert!(refused.contains("The ConfigMap \"Bad_Name\" is invalid:"), "{refused}");
    for cause in [
        "* metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of",
        "* metadata.labels: Invalid value: \"bad key!\": name part must consist of",
        "* metadata.labels: Invalid value: \"v@lue\": a valid label must be an empty string or consist of",
    ] {
        assert!(refused.contains(cause), "missing cause {cause:?} in:\n{refused}");
    }
    assert!(kubectl.ok(&["get", "cm", "-o", "name"]).lines().all(|line| !line.contains("Bad_Name")));

    let bad_deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: broken}\nspec:\n  replicas: -1\n  \
                          selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: b}}\n    \
                          spec: {containers: [{name: c, image: busybox}]}\n";
    let refused = kubectl.fails_with_stdin(&["apply", "-f", "-"], bad_deployment);
    assert!(refused.contains("The Deployment \"broken\" is invalid:"), "{refused}");
    assert!(refused.contains("* spec.replicas: Invalid value: -1: must be greater than or equal to 0"), "{refused}");
    assert!(refused.contains("* spec.template.metadata.labels: Invalid value:"), "{refused}");
    assert!(refused.contains("`selector` does not match template `labels`"), "{refused}");
}

#[test]
fn unknown_types_missing_objects_and_missing_namespaces() {
    let server = Server::start();
    let kubectl = server.kubectl();

    let unknown = kubectl.fails(&["get", "frobnicators"]);
    assert!(unknown.contains("error: the server doesn't have a resource type \"frobnicators\""), "{unknown}");

    let missing = kubectl.fails(&["get", "cm", "nope"]);
    assert!(missing.contains("Error from server (NotFound): configmaps \"nope\" not found"), "{missing}");

    let listed = kubectl.run(&["get", "cm", "-n", "no-such-ns"]);
    assert!(listed.status.success(), "listing a missing namespace is an empty list");
    assert!(String::from_utf8_lossy(&listed.stderr).contains("No resources found in no-such-ns namespace."));

    let create = kubectl.fails_with_stdin(&["apply", "-f", "-"], "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: no-such-ns}\n");
    assert!(create.contains("Error from server (NotFound)") && create.contains("namespaces \"no-such-ns\" not found"), "{create}");

    // kube does not look the namespace up on a read: the server reports the object missing (kubectl 1.32
    // then looks the namespace up itself and prints that error instead).
    let raw = kubectl.fails(&["get", "--raw", "/api/v1/namespaces/no-such-ns/configmaps/x"]);
    assert!(raw.contains("configmaps \"x\" not found"), "{raw}");
    let in_missing_namespace = kubectl.fails(&["get", "cm", "x", "-n", "no-such-ns"]);
    assert!(in_missing_namespace.contains("namespaces \"no-such-ns\" not found"), "{in_missing_namespace}");
}

#[test]
fn oversized_malformed_and_stale_requests() {
    let server = Server::start();
    let kubectl = server.kubectl();
    let dir = tempfile::tempdir().expect("temp dir");

    let big = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
        "data": {"k": "x".repeat(3 * 1024 * 1024 + 100)},
    });
    let big_path = dir.path().join("big.json");
    std::fs::write(&big_path, big.to_string()).expect("write big.json");
    let big_path = big_path.to_str().expect("utf-8 path");
    let too_large = kubectl.fails(&["create", "--raw", "/api/v1/namespaces/default/configmaps", "-f", big_path]);
    assert!(too_large.contains("Error from server (RequestEntityTooLarge)"), "{too_large}");
    assert!(too_large.contains("limit is 3145728"), "{too_large}");
    assert!(kubectl.fails(&["get", "cm", "big"]).contains("not found"), "nothing was stored");

    let malformed_path = dir.path().join("bad.json");
    std::fs::write(&malformed_path, "{\"apiVersion\": \"v1\", \"kind\": ").expect("write bad.json");
    let malformed = kubectl.fails(&["create", "--raw", "/api/v1/namespaces/default/configmaps", "-f", malformed_path.to_str().expect("utf-8")]);
    assert!(malformed.contains("Error from server (BadRequest)"), "{malformed}");

    kubectl.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\ndata: {v: '1'}\n");
    let stale = kubectl.ok(&["get", "cm", "shared", "-o", "json"]);
    kubectl.ok(&["label", "cm", "shared", "bumped=yes"]);
    let conflict = kubectl.run_with_stdin(&["replace", "-f", "-"], &stale);
    assert!(!conflict.status.success(), "replace with a stale resourceVersion must fail");
    let conflict = String::from_utf8_lossy(&conflict.stderr);
    assert!(conflict.contains("Error from server (Conflict)"), "{conflict}");
    assert!(
        conflict.contains("Operation cannot be fulfilled on configmaps \"shared\": the object has been modified; please apply your changes to the latest version and try again"),
        "{conflict}"
    );
    assert_eq!(kubectl.ok(&["get", "cm", "shared", "-o", "jsonpath={.metadata.labels.bumped}"]), "yes", "the newer write survives");
}
