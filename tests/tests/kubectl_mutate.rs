//! kubectl's in-place changes: edit, patch (json, merge, strategic), label, annotate and scale.

use std::process::{Command, Output, Stdio};

use kspaces_tests::{kubectl_binary, Kubectl, Server};

const DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: nginx, image: 'nginx:1.25'}
";

/// `kubectl edit` with `$EDITOR` set: the harness's `Kubectl` cannot set environment variables, so this
/// builds the same command line (own kubeconfig, own cache dir, no `$KUBECONFIG`) by hand.
fn edit_with(server: &Server, editor: &str, args: &[&str]) -> Output {
    let cache = tempfile::tempdir().expect("temp dir");
    Command::new(kubectl_binary())
        .arg("--kubeconfig")
        .arg(&server.kubeconfig)
        .arg("--cache-dir")
        .arg(cache.path())
        .arg("edit")
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("KUBE_EDITOR")
        .env("EDITOR", editor)
        .stdin(Stdio::null())
        .output()
        .expect("run kubectl edit")
}

fn get(kubectl: &Kubectl, object: &str, path: &str) -> String {
    kubectl.ok(&["get", object, "-o", &format!("jsonpath={path}")])
}

#[test]
fn edit_saves_what_the_editor_wrote_and_cancels_when_nothing_changed() {
    let server = Server::start();
    let kubectl = server.kubectl();
    kubectl.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: alpha}\n");
    kubectl.ok_with_stdin(&["apply", "-f", "-"], DEPLOYMENT);

    let edited = edit_with(&server, "sed -i s/alpha/omega/", &["cm", "settings"]);
    assert!(edited.status.success(), "{}", String::from_utf8_lossy(&edited.stderr));
    assert_eq!(String::from_utf8_lossy(&edited.stdout).trim(), "configmap/settings edited");
    assert_eq!(get(&kubectl, "cm/settings", "{.data.mode}"), "omega");

    let unchanged = edit_with(&server, "sed -i s/no-such-text/x/", &["cm", "settings"]);
    assert!(unchanged.status.success(), "{}", String::from_utf8_lossy(&unchanged.stderr));
    let said = format!("{}{}", String::from_utf8_lossy(&unchanged.stdout), String::from_utf8_lossy(&unchanged.stderr));
    assert!(said.contains("Edit cancelled, no changes made."), "{said}");

    let image = edit_with(&server, "sed -i s/nginx:1.25/nginx:1.27/", &["deploy/web"]);
    assert!(image.status.success(), "{}", String::from_utf8_lossy(&image.stderr));
    assert_eq!(get(&kubectl, "deploy/web", "{.spec.template.spec.containers[0].image}"), "nginx:1.27");
    assert_eq!(get(&kubectl, "deploy/web", "{.metadata.generation}"), "2");
}

#[test]
fn patch_types_merge_lists_the_way_kube_does() {
    let server = Server::start();
    let kubectl = server.kubectl();
    kubectl.ok_with_stdin(&["apply", "-f", "-"], DEPLOYMENT);

    let json_patch = r#"[{"op":"replace","path":"/spec/replicas","value":5},{"op":"add","path":"/metadata/labels/patched","value":"json"}]"#;
    assert_eq!(kubectl.ok(&["patch", "deploy", "web", "--type", "json", "-p", json_patch]).trim(), "deployment.apps/web patched");
    assert_eq!(get(&kubectl, "deploy/web", "{.spec.replicas} {.metadata.labels.patched}"), "5 json");

    let sidecar = r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}}}"#;
    kubectl.ok(&["patch", "deploy", "web", "--type", "strategic", "-p", sidecar]);
    let mut names: Vec<String> = get(&kubectl, "deploy/web", "{.spec.template.spec.containers[*].name}").split(' ').map(str::to_owned).collect();
    names.sort();
    assert_eq!(names, ["nginx", "sidecar"], "a strategic patch merges containers by name");

    let only = r#"{"spec":{"template":{"spec":{"containers":[{"name":"only","image":"busybox"}]}}}}"#;
    kubectl.ok(&["patch", "deploy", "web", "--type", "merge", "-p", only]);
    assert_eq!(get(&kubectl, "deploy/web", "{.spec.template.spec.containers[*].name}"), "only", "a merge patch replaces lists");

    let no_op = kubectl.ok(&["patch", "deploy", "web", "--type", "merge", "-p", r#"{"spec":{"replicas":5}}"#]);
    assert_eq!(no_op.trim(), "deployment.apps/web patched (no change)");

    let bad_test = r#"[{"op":"test","path":"/spec/replicas","value":9}]"#;
    let failed = kubectl.fails(&["patch", "deploy", "web", "--type", "json", "-p", bad_test]);
    assert!(failed.contains("The request is invalid"), "a failed json-patch test op is a 422 without details: {failed}");
    assert_eq!(get(&kubectl, "deploy/web", "{.spec.replicas}"), "5", "a failed patch changes nothing");
}

#[test]
fn label_annotate_and_scale_follow_kubectl_rules() {
    let server = Server::start();
    let kubectl = server.kubectl();
    kubectl.ok_with_stdin(&["apply", "-f", "-"], DEPLOYMENT);

    assert_eq!(kubectl.ok(&["label", "deploy", "web", "stage=dev"]).trim(), "deployment.apps/web labeled");
    let refused = kubectl.fails(&["label", "deploy", "web", "stage=prod"]);
    assert!(refused.contains("'stage' already has a value (dev), and --overwrite is false"), "{refused}");
    kubectl.ok(&["label", "deploy", "web", "stage=prod", "--overwrite"]);
    assert_eq!(get(&kubectl, "deploy/web", "{.metadata.labels.stage}"), "prod");
    assert_eq!(kubectl.ok(&["label", "deploy", "web", "stage-"]).trim(), "deployment.apps/web unlabeled");
    let labels: serde_json::Value = serde_json::from_str(&get(&kubectl, "deploy/web", "{.metadata.labels}")).expect("labels JSON");
    assert_eq!(labels, serde_json::json!({"app": "web"}));

    assert_eq!(kubectl.ok(&["annotate", "deploy", "web", "owner=team-a"]).trim(), "deployment.apps/web annotated");
    let refused = kubectl.fails(&["annotate", "deploy", "web", "owner=team-b"]);
    assert!(refused.contains("--overwrite is false"), "{refused}");
    kubectl.ok(&["annotate", "deploy", "web", "owner=team-b", "--overwrite"]);
    assert_eq!(get(&kubectl, "deploy/web", "{.metadata.annotations.owner}"), "team-b");
    kubectl.ok(&["annotate", "deploy", "web", "owner-"]);
    let annotations = kubectl.ok(&["get", "deploy", "web", "-o", "json"]);
    let annotations: serde_json::Value = serde_json::from_str(&annotations).expect("deployment JSON");
    assert!(annotations["metadata"]["annotations"].get("owner").is_none(), "{}", annotations["metadata"]);

    assert_eq!(kubectl.ok(&["scale", "deploy", "web", "--replicas=4"]).trim(), "deployment.apps/web scaled");
    assert_eq!(get(&kubectl, "deploy/web", "{.spec.replicas}"), "4");
    let mismatch = kubectl.fails(&["scale", "deploy/web", "--replicas=9", "--current-replicas=3"]);
    assert!(mismatch.contains("Expected replicas to be 3, was 4"), "{mismatch}");
    assert_eq!(get(&kubectl, "deploy/web", "{.spec.replicas}"), "4", "a refused scale changes nothing");
    kubectl.ok(&["scale", "deploy/web", "--replicas=1", "--current-replicas=4"]);
    assert_eq!(get(&kubectl, "deploy/web", "{.spec.replicas}"), "1");
    let scale = kubectl.ok(&["get", "--raw", "/apis/apps/v1/namespaces/default/deployments/web/scale"]);
    let scale: serde_json::Value = serde_json::from_str(&scale).expect("Scale JSON");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 1);
}

#[test]
fn set_and_rollout_commands_change_the_pod_template() {
    let server = Server::start();
    let kubectl = server.kubectl();
    kubectl.ok_with_stdin(&["apply", "-f", "-"], DEPLOYMENT);

    assert_eq!(kubectl.ok(&["set", "image", "deploy/web", "nginx=nginx:1.26"]).trim(), "deployment.apps/web image updated");
    assert_eq!(get(&kubectl, "deploy/web", "{.spec.template.spec.containers[0].image}"), "nginx:1.26");
    assert_eq!(kubectl.ok(&["set", "env", "deploy/web", "MODE=fast"]).trim(), "deployment.apps/web env updated");
    assert_eq!(get(&kubectl, "deploy/web", "{.spec.template.spec.containers[0].env[0].name}={.spec.template.spec.containers[0].env[0].value}"), "MODE=fast");
    kubectl.ok(&["set", "env", "deploy/web", "MODE-"]);
    assert_eq!(get(&kubectl, "deploy/web", "{.spec.template.spec.containers[0].env}"), "");

    assert_eq!(kubectl.ok(&["rollout", "restart", "deploy/web"]).trim(), "deployment.apps/web restarted");
    let restarted_at = get(&kubectl, "deploy/web", "{.spec.template.metadata.annotations.kubectl\\.kubernetes\\.io/restartedAt}");
    assert!(restarted_at.ends_with('Z') && restarted_at.contains('T'), "an RFC 3339 time: {restarted_at:?}");
    assert_eq!(get(&kubectl, "deploy/web", "{.metadata.generation}"), "5", "each of the four template changes bumps the generation");

    let condition = kubectl.ok(&["wait", "--for=jsonpath={.spec.replicas}=3", "deploy/web", "--timeout=5s"]);
    assert_eq!(condition.trim(), "deployment.apps/web condition met");
}
