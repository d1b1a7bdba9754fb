//! Client-side `kubectl apply`, `create -f`, dry runs and `kubectl diff` against the real server.

use kspaces_tests::{Kubectl, Server};

/// A Deployment manifest; the optional parts let one test add and remove fields between applies.
struct Manifest {
    replicas: u32,
    tier_label: bool,
    second_env: bool,
}

impl Manifest {
    fn yaml(&self) -> String {
        let tier = if self.tier_label { ", tier: front" } else { "" };
        let env_b = if self.second_env { "        - {name: B, value: \"2\"}\n" } else { "" };
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: {{app: web{tier}}}\nspec:\n  replicas: {}\n  \
             selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers:\n      \
             - name: nginx\n        image: nginx:1.25\n        env:\n        - {{name: A, value: \"1\"}}\n{env_b}",
            self.replicas
        )
    }
}

const ORIGINAL: Manifest = Manifest { replicas: 2, tier_label: true, second_env: true };

fn apply(kubectl: &Kubectl, manifest: &Manifest, extra: &[&str]) -> String {
    let mut args = vec!["apply", "-f", "-"];
    args.extend_from_slice(extra);
    kubectl.ok_with_stdin(&args, &manifest.yaml())
}

fn jsonpath(kubectl: &Kubectl, path: &str) -> String {
    kubectl.ok(&["get", "deploy", "web", "-o", &format!("jsonpath={path}")])
}

#[test]
fn apply_creates_is_idempotent_configures_and_prunes_removed_fields() {
    let server = Server::start();
    let kubectl = server.kubectl();

    assert_eq!(apply(&kubectl, &ORIGINAL, &[]).trim(), "deployment.apps/web created");
    assert_eq!(apply(&kubectl, &ORIGINAL, &[]).trim(), "deployment.apps/web unchanged");
    assert_eq!(jsonpath(&kubectl, "{.metadata.labels.tier}"), "front");
    assert_eq!(jsonpath(&kubectl, "{.spec.template.spec.containers[0].env[*].name}"), "A B");

    let scaled = Manifest { replicas: 3, ..ORIGINAL };
    assert_eq!(apply(&kubectl, &scaled, &[]).trim(), "deployment.apps/web configured");
    assert_eq!(jsonpath(&kubectl, "{.spec.replicas}"), "3");

    let pruned = Manifest { replicas: 3, tier_label: false, second_env: false };
    assert_eq!(apply(&kubectl, &pruned, &[]).trim(), "deployment.apps/web configured");
    let labels: serde_json::Value = serde_json::from_str(&jsonpath(&kubectl, "{.metadata.labels}")).expect("labels JSON");
    assert_eq!(labels, serde_json::json!({"app": "web"}), "the label dropped from the manifest is pruned");
    assert_eq!(jsonpath(&kubectl, "{.spec.template.spec.containers[0].env[*].name}"), "A", "the env var dropped from the manifest is pruned");
    let last_applied = jsonpath(&kubectl, "{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}");
    assert!(last_applied.contains("\"replicas\":3") && !last_applied.contains("tier"), "{last_applied}");
    assert_eq!(apply(&kubectl, &pruned, &[]).trim(), "deployment.apps/web unchanged");

    let duplicate = kubectl.run_with_stdin(&["create", "-f", "-"], &pruned.yaml());
    assert!(!duplicate.status.success(), "create of an existing object must fail");
    let stderr = String::from_utf8_lossy(&duplicate.stderr);
    assert!(stderr.contains("Error from server (AlreadyExists)"), "{stderr}");
    assert!(stderr.contains("deployments.apps \"web\" already exists"), "{stderr}");
}

#[test]
fn dry_runs_store_nothing_and_diff_exit_code_tells_whether_anything_changed() {
    let server = Server::start();
    let kubectl = server.kubectl();

    assert_eq!(apply(&kubectl, &ORIGINAL, &["--dry-run=client"]).trim(), "deployment.apps/web created (dry run)");
    assert_eq!(apply(&kubectl, &ORIGINAL, &["--dry-run=server"]).trim(), "deployment.apps/web created (server dry run)");
    let missing = kubectl.fails(&["get", "deploy", "web"]);
    assert!(missing.contains("deployments.apps \"web\" not found"), "a dry-run create stores nothing: {missing}");

    apply(&kubectl, &ORIGINAL, &[]);
    let changed = Manifest { replicas: 5, ..ORIGINAL };
    assert_eq!(apply(&kubectl, &changed, &["--dry-run=server"]).trim(), "deployment.apps/web configured (server dry run)");
    assert_eq!(apply(&kubectl, &changed, &["--dry-run=client"]).trim(), "deployment.apps/web configured (dry run)");
    assert_eq!(jsonpath(&kubectl, "{.spec.replicas}"), "2", "a dry-run update stores nothing");
    assert_eq!(jsonpath(&kubectl, "{.metadata.generation}"), "1");

    let diff = kubectl.run_with_stdin(&["diff", "-f", "-"], &changed.yaml());
    let diff_text = String::from_utf8_lossy(&diff.stdout);
    assert_eq!(diff.status.code(), Some(1), "diff exits 1 when something differs: {diff_text} {}", String::from_utf8_lossy(&diff.stderr));
    assert!(diff_text.contains("-  replicas: 2") && diff_text.contains("+  replicas: 5"), "{diff_text}");
    assert!(diff_text.contains("apps.v1.Deployment.default.web"), "{diff_text}");

    let same = kubectl.run_with_stdin(&["diff", "-f", "-"], &ORIGINAL.yaml());
    assert_eq!(same.status.code(), Some(0), "diff exits 0 when nothing differs: {}", String::from_utf8_lossy(&same.stdout));
    assert!(same.stdout.is_empty(), "{}", String::from_utf8_lossy(&same.stdout));
    assert_eq!(jsonpath(&kubectl, "{.spec.replicas}"), "2", "diff stores nothing");
}

#[test]
fn applied_objects_get_kube_defaults_even_for_empty_structs() {
    let server = Server::start();
    let kubectl = server.kubectl();
    let manifest = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: plain}\nspec:\n  strategy: {}\n  \
                    selector: {matchLabels: {app: plain}}\n  template:\n    metadata: {labels: {app: plain}}\n    \
                    spec: {containers: [{name: c, image: busybox}]}\n";
    kubectl.ok_with_stdin(&["apply", "-f", "-"], manifest);
    let live = kubectl.ok(&["get", "deploy", "plain", "-o", "json"]);
    let live: serde_json::Value = serde_json::from_str(&live).expect("deployment JSON");
    assert_eq!(live["spec"]["replicas"], 1);
    assert_eq!(live["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(live["spec"]["progressDeadlineSeconds"], 600);
    assert_eq!(live["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "Always");
    assert_eq!(live["spec"]["template"]["spec"]["restartPolicy"], "Always");
    // `kubectl create deployment` sends `strategy: {}`; kube defaults its fields all the same.
    let expected_strategy = serde_json::json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}});
    assert_eq!(live["spec"]["strategy"], expected_strategy, "an empty strategy is defaulted");
}

#[test]
fn create_with_generate_name_replace_force_and_delete_from_a_file() {
    let server = Server::start();
    let kubectl = server.kubectl();
    let generated = "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: gen-, labels: {made: generated}}\n";
    let first = kubectl.ok_with_stdin(&["create", "-f", "-"], generated);
    let second = kubectl.ok_with_stdin(&["create", "-f", "-"], generated);
    assert!(first.starts_with("configmap/gen-") && first.trim().ends_with(" created"), "{first}");
    assert_ne!(first, second, "each create gets its own generated name");
    assert_eq!(kubectl.ok(&["get", "cm", "-l", "made=generated", "-o", "name"]).lines().count(), 2);

    apply(&kubectl, &ORIGINAL, &[]);
    let uid_before = jsonpath(&kubectl, "{.metadata.uid}");
    let replaced = kubectl.ok_with_stdin(&["replace", "--force", "-f", "-"], &Manifest { replicas: 6, ..ORIGINAL }.yaml());
    assert!(replaced.contains("deployment.apps \"web\" deleted") && replaced.contains("deployment.apps/web replaced"), "{replaced}");
    assert_eq!(jsonpath(&kubectl, "{.spec.replicas}"), "6");
    assert_ne!(jsonpath(&kubectl, "{.metadata.uid}"), uid_before, "--force deletes and recreates");

    assert_eq!(kubectl.ok_with_stdin(&["delete", "-f", "-"], &ORIGINAL.yaml()).trim(), "deployment.apps \"web\" deleted");
    assert!(kubectl.fails(&["get", "deploy", "web"]).contains("deployments.apps \"web\" not found"));
}
