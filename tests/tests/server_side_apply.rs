//! Server-side apply through kubectl 1.32: field managers, conflicts and kubectl's help for them, forced
//! ownership, removal of fields a manager stops applying, the upgrade from client-side apply, custom resources
//! in a tenant (a `map` list, `/status`), server dry runs, and the managedFields every other write records.

use kspaces_tests::{certificate_kubeconfig, create_tenant, Kubectl, Server};
use serde_json::Value;

/// A Deployment manifest whose parts the tests vary between applies.
struct Deployment {
    replicas: u32,
    tier_label: bool,
    second_env: bool,
}

impl Deployment {
    fn yaml(&self) -> String {
        let tier = if self.tier_label { ", tier: front" } else { "" };
        let env_b = if self.second_env { "        - {name: B, value: \"2\"}\n" } else { "" };
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\n  labels: {{app: web{tier}}}\nspec:\n  \
             replicas: {}\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      \
             containers:\n      - name: nginx\n        image: nginx:1.25\n        env:\n        - {{name: A, value: \"1\"}}\n{env_b}",
            self.replicas
        )
    }
}

const WEB: Deployment = Deployment { replicas: 2, tier_label: true, second_env: true };

/// `kubectl apply --server-side` of `manifest` with extra flags (`--field-manager=...`, ...).
fn server_side(kubectl: &Kubectl, manifest: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["apply", "--server-side", "-f", "-"];
    args.extend_from_slice(extra);
    kubectl.run_with_stdin(&args, manifest)
}

fn ok(output: std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "kubectl failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

fn failed(output: std::process::Output) -> String {
    assert!(!output.status.success(), "kubectl should have failed: {}", String::from_utf8_lossy(&output.stdout));
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The object as `kubectl get -o json --show-managed-fields` prints it.
fn object(kubectl: &Kubectl, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json", "--show-managed-fields"]);
    serde_json::from_str(&kubectl.ok(&all)).expect("kubectl prints JSON")
}

/// The managedFields entry of `manager` (and `operation`), if any.
fn entry<'a>(object: &'a Value, manager: &str, operation: &str) -> Option<&'a Value> {
    object["metadata"]["managedFields"].as_array()?.iter().find(|e| e["manager"] == manager && e["operation"] == operation)
}

/// True if the entry's FieldsV1 holds this path (`["f:spec", "f:replicas"]`).
fn owns(entry: Option<&Value>, path: &[&str]) -> bool {
    let Some(entry) = entry else { return false };
    path.iter().try_fold(&entry["fieldsV1"], |at, key| at.get(*key)).is_some()
}

#[test]
fn a_conflict_names_field_and_manager_and_forcing_takes_the_field() {
    let server = Server::start();
    let kubectl = server.kubectl();
    assert_eq!(ok(server_side(&kubectl, &WEB.yaml(), &["--field-manager=a"])).trim(), "deployment.apps/web serverside-applied");
    let scaled = Deployment { replicas: 3, ..WEB }.yaml();

    let stderr = failed(server_side(&kubectl, &scaled, &["--field-manager=b"]));
    assert!(stderr.contains(r#"Apply failed with 1 conflict: conflict with "a": .spec.replicas"#), "{stderr}");
    assert!(stderr.contains("--force-conflicts"), "kubectl explains how to resolve it: {stderr}");
    assert_eq!(object(&kubectl, &["deploy", "web"])["spec"]["replicas"], 2, "a refused apply changes nothing");

    ok(server_side(&kubectl, &scaled, &["--field-manager=b", "--force-conflicts"]));
    let web = object(&kubectl, &["deploy", "web"]);
    assert_eq!(web["spec"]["replicas"], 3);
    assert!(owns(entry(&web, "b", "Apply"), &["f:spec", "f:replicas"]), "{web:#}");
    assert!(!owns(entry(&web, "a", "Apply"), &["f:spec", "f:replicas"]), "a lost spec.replicas: {web:#}");
    assert!(owns(entry(&web, "a", "Apply"), &["f:metadata", "f:labels", "f:tier"]), "a keeps the rest: {web:#}");
    assert!(owns(entry(&web, "b", "Apply"), &["f:metadata", "f:labels", "f:tier"]), "same values are shared: {web:#}");
    let yaml = kubectl.ok(&["get", "deploy", "web", "-o", "yaml", "--show-managed-fields"]);
    assert!(yaml.contains("manager: b") && yaml.contains("operation: Apply") && yaml.contains("f:replicas: {}"), "{yaml}");
}

#[test]
fn a_field_its_applier_stops_applying_goes_unless_another_manager_owns_it() {
    let server = Server::start();
    let kubectl = server.kubectl();
    ok(server_side(&kubectl, &WEB.yaml(), &["--field-manager=a"]));
    let team = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default, labels: {team: x}}\n";
    ok(server_side(&kubectl, team, &["--field-manager=b"]));
    let with_team = WEB.yaml().replace("labels: {app: web, tier: front}", "labels: {app: web, tier: front, team: x}");
    ok(server_side(&kubectl, &with_team, &["--field-manager=a"]));

    ok(server_side(&kubectl, &Deployment { tier_label: false, second_env: false, ..WEB }.yaml(), &["--field-manager=a"]));
    let web = object(&kubectl, &["deploy", "web"]);
    assert_eq!(web["metadata"]["labels"], serde_json::json!({"app": "web", "team": "x"}), "tier went; b still owns team");
    let env = &web["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(env, &serde_json::json!([{"name": "A", "value": "1"}]), "the env item a dropped went");
    assert!(!owns(entry(&web, "a", "Apply"), &["f:metadata", "f:labels", "f:team"]), "{web:#}");
    assert!(owns(entry(&web, "b", "Apply"), &["f:metadata", "f:labels", "f:team"]), "{web:#}");
}

#[test]
fn client_side_apply_upgrades_to_server_side_apply_without_conflicts() {
    let server = Server::start();
    let kubectl = server.kubectl();
    assert_eq!(kubectl.ok_with_stdin(&["apply", "-f", "-"], &WEB.yaml()).trim(), "deployment.apps/web created");
    let before = object(&kubectl, &["deploy", "web"]);
    assert!(owns(entry(&before, "kubectl-client-side-apply", "Update"), &["f:spec", "f:replicas"]), "{before:#}");

    let output = server_side(&kubectl, &Deployment { replicas: 4, ..WEB }.yaml(), &[]);
    assert_eq!(ok(output).trim(), "deployment.apps/web serverside-applied", "no conflict for the fields client-side apply owned");
    let web = object(&kubectl, &["deploy", "web"]);
    assert_eq!(web["spec"]["replicas"], 4);
    assert!(owns(entry(&web, "kubectl", "Apply"), &["f:spec", "f:replicas"]), "{web:#}");
    let last_applied = web["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].as_str().unwrap_or_default();
    assert!(last_applied.contains(r#""replicas":4"#), "the server keeps the annotation current: {last_applied}");

    // Back to client-side apply: the annotation still describes the object, so only the change is sent.
    let output = kubectl.run_with_stdin(&["apply", "-f", "-"], &Deployment { replicas: 5, ..WEB }.yaml());
    assert_eq!(ok(output).trim(), "deployment.apps/web configured");
    assert_eq!(object(&kubectl, &["deploy", "web"])["spec"]["replicas"], 5);
}

#[test]
fn server_dry_run_applies_nothing() {
    let server = Server::start();
    let kubectl = server.kubectl();
    let output = server_side(&kubectl, &WEB.yaml(), &["--dry-run=server"]);
    assert_eq!(ok(output).trim(), "deployment.apps/web serverside-applied (server dry run)");
    assert!(kubectl.fails(&["get", "deploy", "web"]).contains(r#"deployments.apps "web" not found"#), "a dry-run create stores nothing");

    ok(server_side(&kubectl, &WEB.yaml(), &[]));
    let version = object(&kubectl, &["deploy", "web"])["metadata"]["resourceVersion"].clone();
    let preview = ok(server_side(&kubectl, &Deployment { replicas: 9, ..WEB }.yaml(), &["--dry-run=server", "-o", "json"]));
    let preview: Value = serde_json::from_str(&preview).expect("JSON");
    assert_eq!(preview["spec"]["replicas"], 9, "the dry run shows the result");
    let stored = object(&kubectl, &["deploy", "web"]);
    assert_eq!(stored["spec"]["replicas"], 2);
    assert_eq!(stored["metadata"]["resourceVersion"], version, "nothing was written");
}

#[test]
fn an_apply_of_undeclared_fields_is_refused() {
    let server = Server::start();
    let kubectl = server.kubectl();
    let undeclared = WEB.yaml().replace("  replicas: 2\n", "  replicas: 2\n  replica: 3\n");
    let refused = failed(server_side(&kubectl, &undeclared, &[]));
    assert!(refused.contains("Error from server (BadRequest): failed to create typed patch object (default/web; apps/v1, Kind=Deployment): \
        .spec.replica: field not declared in schema"), "{refused}");
    assert!(kubectl.fails(&["get", "deploy", "web"]).contains("not found"), "nothing was created");
}

#[test]
fn every_other_write_records_its_manager() {
    let server = Server::start();
    let kubectl = server.kubectl();
    kubectl.ok(&["create", "deployment", "web", "--image=nginx"]);
    kubectl.ok(&["label", "deploy", "web", "team=x"]);
    kubectl.ok(&["scale", "deploy", "web", "--replicas=4"]);
    let web = object(&kubectl, &["deploy", "web"]);
    let created = entry(&web, "kubectl-create", "Update");
    assert!(owns(created, &["f:spec", "f:template", "f:spec", "f:containers", r#"k:{"name":"nginx"}"#, "f:image"]), "{web:#}");
    assert!(created.is_some_and(|e| e["time"].is_string() && e["apiVersion"] == "apps/v1" && e["fieldsType"] == "FieldsV1"), "{web:#}");
    assert!(owns(entry(&web, "kubectl-label", "Update"), &["f:metadata", "f:labels", "f:team"]), "{web:#}");
    let scaled = web["metadata"]["managedFields"].as_array().and_then(|all| all.iter().find(|e| e["subresource"] == "scale"));
    assert!(owns(scaled, &["f:spec", "f:replicas"]), "a write to /scale records subresource scale: {web:#}");
    assert!(!owns(created, &["f:spec", "f:replicas"]), "the scale took spec.replicas from kubectl-create: {web:#}");
}

const TEAMS_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: teams.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: teams, singular: team, kind: Team}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              members:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    role: {type: string}
          status:
            type: object
            properties:
              observed: {type: integer}
"#;

fn team(members: &str) -> String {
    format!("apiVersion: example.com/v1\nkind: Team\nmetadata: {{name: blue, namespace: default}}\nspec:\n  members: {members}\n")
}

#[test]
fn a_tenant_admin_applies_custom_resources_merged_by_their_list_keys() {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t-a");
    let admin = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[]));
    admin.ok_with_stdin(&["apply", "-f", "-"], TEAMS_CRD);
    admin.ok(&["wait", "--for", "condition=established", "crd/teams.example.com", "--timeout=10s"]);

    ok(server_side(&admin, &team("[{name: ann, role: lead}]"), &["--field-manager=alice"]));
    ok(server_side(&admin, &team("[{name: bob, role: dev}]"), &["--field-manager=bob"]));
    let blue = object(&admin, &["team", "blue"]);
    assert_eq!(blue["spec"]["members"], serde_json::json!([{"name": "ann", "role": "lead"}, {"name": "bob", "role": "dev"}]), "items merge by name");
    assert!(owns(entry(&blue, "bob", "Apply"), &["f:spec", "f:members", r#"k:{"name":"bob"}"#, "f:role"]), "{blue:#}");

    let stderr = failed(server_side(&admin, &team("[{name: ann, role: member}]"), &["--field-manager=bob"]));
    assert!(stderr.contains(r#"conflict with "alice": .spec.members[name="ann"].role"#), "{stderr}");

    let generation = blue["metadata"]["generation"].clone();
    let status = "apiVersion: example.com/v1\nkind: Team\nmetadata: {name: blue, namespace: default}\nstatus: {observed: 2}\n";
    ok(server_side(&admin, status, &["--field-manager=ctrl", "--subresource=status"]));
    let blue = object(&admin, &["team", "blue"]);
    assert_eq!(blue["status"]["observed"], 2);
    let ctrl = entry(&blue, "ctrl", "Apply");
    assert!(owns(ctrl, &["f:status", "f:observed"]) && ctrl.is_some_and(|e| e["subresource"] == "status"), "{blue:#}");
    assert_eq!(blue["metadata"]["generation"], generation, "a status apply does not bump the generation");
}
