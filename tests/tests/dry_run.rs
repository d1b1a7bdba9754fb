//! `dryRun=All` on every mutating verb, as a tenant admin drives it with kubectl 1.32's `--dry-run=server`:
//! the answer looks like kube's, validation and admission still run, and nothing changes (the objects read
//! back the same, the list `resourceVersion` does not move, no watch event is sent, no controller reacts);
//! `kubectl diff` exit codes and output; invalid `dryRun` values are kube's 422.

use std::time::Duration;

use kspaces_tests::{certificate_kubeconfig, create_tenant, Kubectl, Server, WatchOutput};
use serde_json::Value;

/// A server with tenant `t-a` and kubectl as t-a's admin.
fn tenant() -> (Server, Kubectl) {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t-a");
    let kubectl = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[]));
    (server, kubectl)
}

fn deployment(name: &str, replicas: u32) -> String {
    format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, labels: {{app: {name}}}}}\nspec:\n  replicas: {replicas}\n  \
             selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      \
             containers: [{{name: web, image: \"nginx:1.27\"}}]\n")
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// `kubectl get <args> -o json`, parsed.
fn get_json(kubectl: &Kubectl, args: &[&str]) -> Value {
    let mut args = [&["get"], args].concat();
    args.extend(["-o", "json"]);
    parse(&kubectl.ok(&args))
}

/// The `resourceVersion` of a list of `path`: it moves with any write to the store.
fn list_revision(kubectl: &Kubectl, path: &str) -> String {
    let list = parse(&kubectl.ok(&["get", "--raw", path]));
    list["metadata"]["resourceVersion"].as_str().unwrap_or_else(|| panic!("no list resourceVersion: {list}")).to_owned()
}

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

#[test]
fn dry_run_creates_answer_like_kube_and_store_nothing() {
    let (_server, kubectl) = tenant();
    let before = list_revision(&kubectl, CONFIGMAPS);
    let created = parse(&kubectl.ok_with_stdin(&["create", "--dry-run=server", "-o", "json", "-f", "-"], &deployment("web", 2)));
    let metadata = &created["metadata"];
    assert!(metadata["uid"].as_str().is_some_and(|uid| uid.len() == 36), "a dry-run create gets a uid: {created}");
    assert!(metadata["creationTimestamp"].is_string(), "and a creationTimestamp: {created}");
    assert_eq!(metadata["generation"], 1, "{created}");
    assert!(metadata.get("resourceVersion").is_none(), "no revision is consumed, so none is shown: {created}");
    assert_eq!(created["spec"]["revisionHistoryLimit"], 10, "defaults are applied: {created}");
    assert_eq!(kubectl.ok(&["create", "configmap", "dry", "--from-literal=a=1", "--dry-run=server"]).trim(), "configmap/dry created (server dry run)");

    assert!(kubectl.fails(&["get", "deploy", "web"]).contains(r#"deployments.apps "web" not found"#));
    assert!(kubectl.fails(&["get", "cm", "dry"]).contains(r#"configmaps "dry" not found"#));
    assert_eq!(list_revision(&kubectl, CONFIGMAPS), before, "a dry run writes nothing");

    // Validation and admission run: an invalid name, an existing name, a missing namespace.
    let invalid = kubectl.fails(&["create", "configmap", "Bad_Name", "--dry-run=server"]);
    assert!(invalid.contains(r#"ConfigMap "Bad_Name" is invalid: metadata.name"#), "{invalid}");
    kubectl.ok(&["create", "configmap", "taken"]);
    let taken = kubectl.fails(&["create", "configmap", "taken", "--dry-run=server"]);
    assert!(taken.contains(r#"configmaps "taken" already exists"#), "{taken}");
    let missing = kubectl.fails(&["create", "configmap", "x", "-n", "nowhere", "--dry-run=server"]);
    assert!(missing.contains(r#"namespaces "nowhere" not found"#), "{missing}");
}

#[test]
fn dry_run_apply_replace_patch_scale_and_status_change_nothing() {
    let (_server, kubectl) = tenant();
    kubectl.ok_with_stdin(&["apply", "-f", "-"], &deployment("web", 2));
    let stored = get_json(&kubectl, &["deploy", "web"]);
    let before = list_revision(&kubectl, CONFIGMAPS);

    // kubectl patch alone does not say "(server dry run)"; what changed is read back after every run.
    let runs: Vec<(Vec<&str>, String, &str)> = vec![
        (vec!["apply", "--dry-run=server", "-f", "-"], deployment("other", 1), "deployment.apps/other created (server dry run)"),
        (vec!["apply", "--dry-run=server", "-f", "-"], deployment("web", 5), "deployment.apps/web configured (server dry run)"),
        (vec!["replace", "--dry-run=server", "-f", "-"], deployment("web", 6), "deployment.apps/web replaced (server dry run)"),
        (vec!["patch", "deploy", "web", "--dry-run=server", "-p", r#"{"spec":{"replicas":7}}"#], String::new(), "deployment.apps/web patched"),
        (vec!["patch", "deploy", "web", "--dry-run=server", "--type=json", "-p", r#"[{"op":"replace","path":"/spec/replicas","value":8}]"#],
            String::new(), "deployment.apps/web patched"),
        (vec!["scale", "deploy", "web", "--replicas=9", "--dry-run=server"], String::new(), "deployment.apps/web scaled (server dry run)"),
        (vec!["patch", "deploy", "web", "--subresource=status", "--type=merge", "--dry-run=server", "-p", r#"{"status":{"replicas":3}}"#],
            String::new(), "deployment.apps/web patched"),
        (vec!["label", "deploy", "web", "tier=front", "--dry-run=server"], String::new(), "deployment.apps/web labeled (server dry run)"),
    ];
    for (args, stdin, said) in runs {
        assert_eq!(kubectl.ok_with_stdin(&args, &stdin).trim(), said, "{args:?}");
        assert_eq!(get_json(&kubectl, &["deploy", "web"]), stored, "{args:?} changed nothing");
        assert_eq!(list_revision(&kubectl, CONFIGMAPS), before, "{args:?} wrote nothing");
    }
    assert!(kubectl.fails(&["get", "deploy", "other"]).contains("not found"));

    // The answer is the object as it would be, at the current revision.
    let patched = parse(&kubectl.ok(&["patch", "deploy", "web", "--dry-run=server", "-o", "json", "-p", r#"{"spec":{"replicas":4}}"#]));
    assert_eq!(patched["spec"]["replicas"], 4);
    assert_eq!(patched["metadata"]["generation"], 2, "a spec change bumps the generation: {patched}");
    assert_eq!(patched["metadata"]["resourceVersion"], stored["metadata"]["resourceVersion"]);
    let scale = parse(&kubectl.ok(&["get", "--raw", "/apis/apps/v1/namespaces/default/deployments/web/scale"]));
    assert_eq!(scale["spec"]["replicas"], 2, "{scale}");
}

#[test]
fn dry_run_deletes_keep_objects_namespaces_and_their_content() {
    let (_server, kubectl) = tenant();
    for name in ["one", "two"] {
        kubectl.ok(&["create", "configmap", name, "--from-literal=a=1"]);
    }
    kubectl.ok(&["create", "namespace", "team"]);
    kubectl.ok(&["create", "configmap", "inside", "-n", "team"]);
    let before = list_revision(&kubectl, CONFIGMAPS);

    assert_eq!(kubectl.ok(&["delete", "configmap", "one", "--dry-run=server"]).trim(), r#"configmap "one" deleted (server dry run)"#);
    let all = kubectl.ok(&["delete", "configmap", "--all", "--dry-run=server"]);
    assert!(all.contains(r#"configmap "one" deleted (server dry run)"#) && all.contains(r#"configmap "two" deleted (server dry run)"#), "{all}");
    assert_eq!(kubectl.ok(&["delete", "namespace", "team", "--dry-run=server"]).trim(), r#"namespace "team" deleted (server dry run)"#);
    let collection = parse(&kubectl.ok(&["delete", "--raw", "/api/v1/namespaces/default/configmaps?dryRun=All"]));
    // one, two and the namespace's kube-root-ca.crt (the server's, as in kube).
    assert_eq!(collection["items"].as_array().map(Vec::len), Some(3), "deletecollection answers what it would delete: {collection}");

    std::thread::sleep(Duration::from_millis(500));
    let names = kubectl.ok(&["get", "configmaps", "-o", "name"]);
    assert!(names.contains("configmap/one") && names.contains("configmap/two"), "{names}");
    let team = get_json(&kubectl, &["namespace", "team"]);
    assert_eq!(team["status"]["phase"], "Active", "the namespace controller saw nothing: {team}");
    assert!(team["metadata"].get("deletionTimestamp").is_none(), "{team}");
    assert_eq!(kubectl.ok(&["get", "configmap", "inside", "-n", "team", "-o", "name"]).trim(), "configmap/inside");
    assert_eq!(list_revision(&kubectl, CONFIGMAPS), before, "dry-run deletes write nothing");
}

#[test]
fn dry_runs_send_no_watch_events() {
    let (_server, kubectl) = tenant();
    kubectl.ok(&["create", "configmap", "kept"]);
    let mut watch = WatchOutput::start(&kubectl, &["get", "configmaps", "--watch-only", "-o", "name"]);
    std::thread::sleep(Duration::from_millis(500));
    kubectl.ok(&["create", "configmap", "dry-new", "--dry-run=server"]);
    kubectl.ok(&["label", "configmap", "kept", "dry=run", "--dry-run=server"]);
    kubectl.ok(&["delete", "configmap", "kept", "--dry-run=server"]);
    kubectl.ok(&["create", "configmap", "marker"]);
    assert!(watch.wait_for(Duration::from_secs(10), |line| line.contains("marker")), "{}", watch.transcript());
    assert_eq!(watch.lines(), ["configmap/marker"], "only the real write is seen");
}

#[test]
fn kubectl_diff_exits_1_with_a_diff_and_0_without() {
    let (_server, kubectl) = tenant();
    let new = kubectl.run_with_stdin(&["diff", "-f", "-"], &deployment("web", 2));
    let text = String::from_utf8_lossy(&new.stdout);
    assert_eq!(new.status.code(), Some(1), "a new object differs: {text} {}", String::from_utf8_lossy(&new.stderr));
    assert!(text.contains("+  name: web") && text.contains("+  replicas: 2"), "{text}");
    assert!(kubectl.fails(&["get", "deploy", "web"]).contains("not found"), "diff stores nothing");

    kubectl.ok_with_stdin(&["apply", "-f", "-"], &deployment("web", 2));
    let changed = kubectl.run_with_stdin(&["diff", "-f", "-"], &deployment("web", 3));
    let text = String::from_utf8_lossy(&changed.stdout);
    assert_eq!(changed.status.code(), Some(1), "{text}");
    assert!(text.contains("-  replicas: 2") && text.contains("+  replicas: 3"), "{text}");
    assert!(text.contains("-  generation: 1") && text.contains("+  generation: 2"), "the dry run bumps the generation as kube does: {text}");
    assert!(text.contains("apps.v1.Deployment.default.web"), "{text}");

    let same = kubectl.run_with_stdin(&["diff", "-f", "-"], &deployment("web", 2));
    assert_eq!(same.status.code(), Some(0), "{}", String::from_utf8_lossy(&same.stdout));
    assert!(same.stdout.is_empty());
    assert_eq!(kubectl.ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]), "2");
}

#[test]
fn invalid_dry_run_values_are_kubes_422() {
    let (_server, kubectl) = tenant();
    kubectl.ok(&["create", "configmap", "target"]);
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"}}"#).expect("write body");
    let path = file.path().to_string_lossy().into_owned();
    let rows = [
        (vec!["create", "--raw", "/api/v1/namespaces/default/configmaps?dryRun=true", "-f", &path], "CreateOptions", "true"),
        (vec!["replace", "--raw", "/api/v1/namespaces/default/configmaps/target?dryRun=server", "-f", &path], "UpdateOptions", "server"),
        (vec!["delete", "--raw", "/api/v1/namespaces/default/configmaps/target?dryRun=Everything"], "DeleteOptions", "Everything"),
    ];
    for (args, kind, value) in rows {
        let refused = kubectl.fails(&args);
        assert_eq!(refused.trim(), format!(r#"The {kind} "" is invalid: dryRun: Unsupported value: ["{value}"]: supported values: "All""#), "{args:?}");
    }
    assert_eq!(kubectl.ok(&["get", "configmap", "target", "-o", "name"]).trim(), "configmap/target");
}

#[test]
fn custom_resource_dry_runs_of_every_verb_and_subresource_change_nothing() {
    let (_server, kubectl) = tenant();
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.dry.example.com}\nspec:\n  \
               group: dry.example.com\n  scope: Namespaced\n  names: {plural: gadgets, singular: gadget, kind: Gadget}\n  versions:\n  \
               - name: v1\n    served: true\n    storage: true\n    \
               subresources: {status: {}, scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.size}}\n    \
               schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          \
               spec: {type: object, properties: {size: {type: integer}}}\n          status: {type: object, properties: {size: {type: integer}}}\n";
    kubectl.ok_with_stdin(&["apply", "-f", "-"], crd);
    kubectl.ok(&["wait", "--for", "condition=established", "crd/gadgets.dry.example.com", "--timeout=10s"]);
    let gadget = |size: u32| format!("apiVersion: dry.example.com/v1\nkind: Gadget\nmetadata: {{name: g}}\nspec: {{size: {size}}}\n");
    assert_eq!(kubectl.ok_with_stdin(&["create", "--dry-run=server", "-f", "-"], &gadget(1)).trim(), "gadget.dry.example.com/g created (server dry run)");
    assert!(kubectl.fails(&["get", "gadget", "g"]).contains("not found"));
    kubectl.ok_with_stdin(&["create", "-f", "-"], &gadget(1));
    let stored = get_json(&kubectl, &["gadget", "g"]);
    let before = list_revision(&kubectl, CONFIGMAPS);

    kubectl.ok_with_stdin(&["apply", "--dry-run=server", "-f", "-"], &gadget(2));
    kubectl.ok_with_stdin(&["replace", "--dry-run=server", "-f", "-"], &gadget(3));
    kubectl.ok(&["patch", "gadget", "g", "--type=merge", "--dry-run=server", "-p", r#"{"spec":{"size":4}}"#]);
    assert_eq!(kubectl.ok(&["scale", "gadget", "g", "--replicas=5", "--dry-run=server"]).trim(), "gadget.dry.example.com/g scaled (server dry run)");
    let status = kubectl.ok(&["patch", "gadget", "g", "--subresource=status", "--type=merge", "--dry-run=server", "-p", r#"{"status":{"size":6}}"#,
        "-o", "jsonpath={.status.size}"]);
    assert_eq!(status, "6", "the answer shows the status as it would be");
    assert_eq!(kubectl.ok(&["delete", "gadget", "g", "--dry-run=server"]).trim(), r#"gadget.dry.example.com "g" deleted (server dry run)"#);

    assert_eq!(get_json(&kubectl, &["gadget", "g"]), stored, "nothing changed");
    assert_eq!(list_revision(&kubectl, CONFIGMAPS), before, "nothing was written");
}
