//! CustomResourceDefinitions through kubectl, as tenants use them: a tenant's own CRD (establishment, discovery,
//! structural schemas with defaults, pruning, validation and CEL rules, printer columns, the status and scale
//! subresources, patch types, several versions, deletion), the same CRD name in two tenants, cluster-scoped CRDs
//! within a space, and sharing system CRDs with tenants: forced CRDs, the space's `LogicalCluster.spec.crdPolicy`
//! and the `crd.kspaces.io/applicable-tenants` range (`docs/crd-sharing.md`).
//!
//! kubectl validates fields strictly by default (`fieldValidation=Strict`), and a kube-apiserver then refuses
//! undeclared fields instead of pruning them; every write here that relies on pruning passes `--validate=false`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use kspaces_tests::{certificate_kubeconfig, eventually, Kubectl, Server};
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(20);

const CRONTABS: &str = "crontabs.stable.example.com";

/// The CronTab CRD of the Kubernetes documentation, grown: defaults, a pattern, a maximum, a CEL rule, an object
/// that keeps unknown fields, printer columns, the status and scale subresources, and a deprecated second version.
const CRONTAB_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    listKind: CronTabList
    shortNames: [ct]
    categories: [batch-jobs]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.labelSelector
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Image
      type: string
      jsonPath: .spec.image
      priority: 1
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.minReplicas <= self.maxReplicas"
              message: "minReplicas must not exceed maxReplicas"
            properties:
              cronSpec:
                type: string
                pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
              image:
                type: string
              replicas:
                type: integer
                minimum: 1
                maximum: 10
                default: 1
              minReplicas:
                type: integer
                default: 1
              maxReplicas:
                type: integer
                default: 5
              paused:
                type: boolean
                default: false
              extra:
                type: object
                x-kubernetes-preserve-unknown-fields: true
          status:
            type: object
            properties:
              replicas:
                type: integer
              labelSelector:
                type: string
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    deprecationWarning: "stable.example.com/v1beta1 CronTab is deprecated; use stable.example.com/v1 CronTab"
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

/// A CronTab with an undeclared field (`spec.unknownField`) and free-form `spec.extra`.
const NIGHTLY: &str = r#"apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: nightly
  namespace: default
spec:
  cronSpec: "0 3 * * *"
  image: registry.example.com/backup:1.2
  replicas: 2
  unknownField: dropped
  extra:
    anything: goes
    nested: {deep: true}
"#;

const DEPRECATION: &str = "Warning: stable.example.com/v1beta1 CronTab is deprecated; use stable.example.com/v1 CronTab";

/// A `crontabs.stable.example.com` CRD with one version `v1`: `metadata` continues the metadata flow mapping
/// (e.g. `, labels: {...}`), `categories` fills the category list, `spec` is the schema of `.spec` as a flow mapping.
fn crontab_crd(metadata: &str, categories: &str, spec: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: {CRONTABS}{metadata}}}\nspec:\n  group: stable.example.com\n  scope: Namespaced\n  names: {{plural: crontabs, singular: crontab, kind: CronTab, listKind: CronTabList, shortNames: [ct], categories: [{categories}]}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec: {spec}\n"
    )
}

/// The `.spec` schema of a system CronTab: a schedule and an image, nothing more.
const SYSTEM_SPEC: &str = "{type: object, properties: {cronSpec: {type: string}, image: {type: string}}}";
/// The `.spec` schema of a tenant's own CronTab: the system's fields and an `owner`.
const OWN_SPEC: &str = "{type: object, properties: {cronSpec: {type: string}, image: {type: string}, owner: {type: string}}}";

/// A CronTab in namespace `default`; `spec` is a flow mapping.
fn crontab(name: &str, spec: &str) -> String {
    format!("apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {{name: {name}, namespace: default}}\nspec: {spec}\n")
}

/// A server with tenants t-a (with `a_labels`, a flow mapping) and t-b, and kubectl as the system administrator and
/// as each tenant's `admin`.
struct Fixture {
    server: Server,
    system: Kubectl,
    a: Kubectl,
    b: Kubectl,
    a_config: PathBuf,
    b_config: PathBuf,
}

fn fixture(a_labels: &str) -> Fixture {
    let server = Server::start();
    let system = server.kubectl();
    for (tenant, labels) in [("t-a", a_labels), ("t-b", "{}")] {
        let yaml = format!("apiVersion: v1\nkind: Tenant\nmetadata: {{name: {tenant}, labels: {labels}}}\n");
        let created = system.ok_with_stdin(&["apply", "-f", "-"], &yaml);
        assert_eq!(created.trim(), format!("tenant/{tenant} created"));
    }
    let a_config = certificate_kubeconfig(&server, "t-a", "admin", &[]);
    let b_config = certificate_kubeconfig(&server, "t-b", "admin", &[]);
    Fixture { system, a: Kubectl::new(&a_config), b: Kubectl::new(&b_config), a_config, b_config, server }
}

impl Fixture {
    /// kubectl as `who` ("t-a", "t-b" or "system") with an empty discovery cache, for checks after a change of
    /// what a space serves.
    fn fresh(&self, who: &str) -> Kubectl {
        match who {
            "t-a" => Kubectl::new(&self.a_config),
            "t-b" => Kubectl::new(&self.b_config),
            _ => Kubectl::new(&self.server.kubeconfig),
        }
    }
}

/// `kubectl apply -f -` of `yaml`; returns stdout.
fn apply(kubectl: &Kubectl, yaml: &str) -> String {
    kubectl.ok_with_stdin(&["apply", "-f", "-"], yaml)
}

/// `kubectl apply --validate=false -f -`: undeclared fields are pruned instead of refused.
fn apply_pruned(kubectl: &Kubectl, yaml: &str) -> String {
    kubectl.ok_with_stdin(&["apply", "--validate=false", "-f", "-"], yaml)
}

/// Creates a CRD and waits for it to be established, as a tenant installing an operator does.
fn install_crd(kubectl: &Kubectl, name: &str, yaml: &str) {
    let created = apply(kubectl, yaml);
    assert!(created.contains(&format!("customresourcedefinition.apiextensions.k8s.io/{name} created")), "{created}");
    let waited = kubectl.ok(&["wait", "--for", "condition=established", &format!("crd/{name}"), "--timeout=10s"]);
    assert!(waited.contains("condition met"), "{waited}");
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// `kubectl get <args> -o json`, parsed.
fn get_json(kubectl: &Kubectl, args: &[&str]) -> Value {
    let mut full = vec!["get"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["-o", "json"]);
    json(&kubectl.ok(&full))
}

/// `kubectl get --raw <path>`, parsed.
fn raw(kubectl: &Kubectl, path: &str) -> Value {
    json(&kubectl.ok(&["get", "--raw", path]))
}

/// The sorted names of a list's items.
fn item_names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    names.sort();
    names
}

/// The sorted names of the objects `kubectl get <args>` lists.
fn names(kubectl: &Kubectl, args: &[&str]) -> Vec<String> {
    item_names(&get_json(kubectl, args))
}

/// `.spec` of one CronTab in namespace `default`.
fn crontab_spec(kubectl: &Kubectl, name: &str) -> Value {
    get_json(kubectl, &["crontab", name])["spec"].clone()
}

/// A kubectl table as rows of header -> cell, cut at the header's column positions (cells may hold spaces).
fn table(output: &str) -> Vec<HashMap<String, String>> {
    let mut lines = output.lines();
    let header = lines.next().unwrap_or_else(|| panic!("no table: {output:?}"));
    let mut starts = Vec::new();
    let mut previous = ' ';
    for (at, c) in header.char_indices() {
        if c != ' ' && previous == ' ' && (at == 0 || header[..at].ends_with("   ")) {
            starts.push(at);
        }
        previous = c;
    }
    let columns: Vec<(String, usize, Option<usize>)> = starts
        .iter()
        .enumerate()
        .map(|(i, &start)| {
            let end = starts.get(i + 1).copied();
            (header[start..end.unwrap_or(header.len())].trim().to_owned(), start, end)
        })
        .collect();
    lines
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            columns
                .iter()
                .map(|(name, start, end)| {
                    let start = (*start).min(line.len());
                    let end = end.unwrap_or(line.len()).min(line.len());
                    (name.clone(), line[start..end].trim().to_owned())
                })
                .collect()
        })
        .collect()
}

/// The row of `name` in a kubectl table.
fn row(output: &str, name: &str) -> HashMap<String, String> {
    table(output).into_iter().find(|row| row.get("NAME").map(String::as_str) == Some(name)).unwrap_or_else(|| panic!("no row {name}: {output}"))
}

fn header(output: &str) -> Vec<&str> {
    output.lines().next().unwrap_or_default().split_whitespace().collect()
}

/// What discovery says about `<plural>.<group>` (version v1) in a space: `Some(categories)` when served, `None` when
/// not. Checks that `kubectl api-resources`, `/apis` and `/apis/<group>/v1` agree. Give it a fresh kubectl.
fn discovered(kubectl: &Kubectl, group: &str, plural: &str) -> Option<Vec<String>> {
    let listed = kubectl.ok(&["api-resources", "--api-group", group, "-o", "name"]);
    let in_api_resources = listed.lines().any(|l| l.trim() == format!("{plural}.{group}"));

    let groups = raw(kubectl, "/apis");
    let group_entry = groups["groups"].as_array().expect("groups").iter().find(|g| g["name"] == group).cloned();
    let path = format!("/apis/{group}/v1");
    let answer = kubectl.run(&["get", "--raw", &path]);
    let resource = if answer.status.success() {
        let list = json(&String::from_utf8_lossy(&answer.stdout));
        assert!(group_entry.is_some(), "/apis lacks {group} although {path} answers {list}");
        list["resources"].as_array().expect("resources").iter().find(|r| r["name"] == plural).cloned()
    } else {
        let stderr = String::from_utf8_lossy(&answer.stderr);
        assert!(stderr.contains("NotFound"), "GET {path}: {stderr}");
        assert!(group_entry.is_none(), "/apis lists {group} but {path} is {stderr}");
        None
    };
    assert_eq!(in_api_resources, resource.is_some(), "kubectl api-resources ({listed}) and {path} ({resource:?}) disagree on {plural}");
    resource.map(|r| r["categories"].as_array().map(|c| c.iter().map(|v| v.as_str().unwrap_or_default().to_owned()).collect()).unwrap_or_default())
}

/// kubectl's answer for a resource type its space does not serve.
fn assert_not_served(stderr: &str, resource: &str, context: &str) {
    assert!(stderr.contains(&format!("the server doesn't have a resource type \"{resource}\"")), "{context}: {stderr}");
}

/// `kubectl patch logicalcluster cluster` to `policy` as a tenant's admin.
fn set_policy(kubectl: &Kubectl, policy: &str) {
    let patch = format!("{{\"spec\":{{\"crdPolicy\":\"{policy}\"}}}}");
    let patched = kubectl.ok(&["patch", "logicalcluster", "cluster", "--type", "merge", "-p", &patch]);
    assert!(patched.contains("cluster patched"), "{patched}");
    let shown = kubectl.ok(&["get", "logicalcluster"]);
    assert_eq!(row(&shown, "cluster")["CRD POLICY"], policy, "{shown}");
}

/// The 403 a tenant gets for a CRD name a forced system CRD holds.
fn assert_forced(stderr: &str, context: &str) {
    assert!(
        stderr.contains("Error from server (Forbidden)")
            && stderr.contains("forced")
            && stderr.contains("the system CRD crontabs.stable.example.com"),
        "{context}: expected a Forbidden naming the forced CRD, got: {stderr}"
    );
}

#[test]
fn a_tenant_crd_serves_schema_subresources_columns_and_versions() {
    let f = fixture("{}");
    install_crd(&f.a, CRONTABS, CRONTAB_CRD);
    let crd = get_json(&f.a, &["crd", CRONTABS]);
    for condition in ["NamesAccepted", "Established"] {
        let found = crd["status"]["conditions"].as_array().expect("conditions").iter().find(|c| c["type"] == condition).cloned();
        assert_eq!(found.map(|c| c["status"].clone()), Some("True".into()), "{condition}: {}", crd["status"]);
    }
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "CronTab", "{}", crd["status"]);
    assert_eq!(crd["status"]["storedVersions"], serde_json::json!(["v1"]), "{}", crd["status"]);

    // Created at once after `kubectl wait`; undeclared fields pruned, `extra` kept whole, defaults filled in.
    let created = apply_pruned(&f.a, NIGHTLY);
    assert_eq!(created.trim(), "crontab.stable.example.com/nightly created");
    let object = get_json(&f.a, &["ct", "nightly"]);
    assert_eq!(object["apiVersion"], "stable.example.com/v1");
    assert_eq!(object["kind"], "CronTab");
    let spec = &object["spec"];
    assert_eq!(spec["cronSpec"], "0 3 * * *", "{object}");
    assert_eq!(spec["replicas"], 2, "an explicit value beats the default: {object}");
    assert_eq!((spec["minReplicas"].clone(), spec["maxReplicas"].clone(), spec["paused"].clone()), (1.into(), 5.into(), false.into()), "defaults: {object}");
    assert!(spec.get("unknownField").is_none(), "an undeclared field is pruned: {object}");
    assert_eq!(spec["extra"], serde_json::json!({"anything": "goes", "nested": {"deep": true}}), "x-kubernetes-preserve-unknown-fields: {object}");

    // Discovery: short name, category.
    let resources = f.a.ok(&["api-resources", "--api-group", "stable.example.com"]);
    let crontabs = row(&resources, "crontabs");
    assert_eq!(
        (crontabs["SHORTNAMES"].as_str(), crontabs["APIVERSION"].as_str(), crontabs["NAMESPACED"].as_str(), crontabs["KIND"].as_str()),
        ("ct", "stable.example.com/v1", "true", "CronTab"),
        "{resources}"
    );
    assert_eq!(f.a.ok(&["get", "batch-jobs", "-o", "name"]).trim(), "crontab.stable.example.com/nightly", "the category batch-jobs");

    // Printer columns, with the priority-1 column under -o wide only.
    let listed = f.a.ok(&["get", "crontabs"]);
    assert_eq!(header(&listed), ["NAME", "SPEC", "REPLICAS", "AGE"], "{listed}");
    let nightly = row(&listed, "nightly");
    assert_eq!((nightly["SPEC"].as_str(), nightly["REPLICAS"].as_str()), ("0 3 * * *", "2"), "{listed}");
    let wide = f.a.ok(&["get", "ct", "-o", "wide"]);
    assert_eq!(header(&wide), ["NAME", "SPEC", "REPLICAS", "IMAGE", "AGE"], "{wide}");
    assert_eq!(row(&wide, "nightly")["IMAGE"], "registry.example.com/backup:1.2", "{wide}");

    // Validation: every violation with its field path; nothing stored.
    let bad = crontab("bad", r#"{cronSpec: "every day", replicas: 20}"#);
    let refused = f.a.fails_with_stdin(&["apply", "-f", "-"], &bad);
    assert!(refused.contains(r#"The CronTab "bad" is invalid"#), "{refused}");
    assert!(refused.contains("spec.replicas: Invalid value: 20: spec.replicas in body should be less than or equal to 10"), "{refused}");
    assert!(refused.contains(r#"spec.cronSpec: Invalid value: "every day": spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'"#), "{refused}");
    let refused = f.a.fails_with_stdin(&["apply", "-f", "-"], &crontab("bad", r#"{cronSpec: "* * * * *", replicas: 0}"#));
    assert!(refused.contains("spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"), "{refused}");
    // The CEL rule, against a default (maxReplicas 5) on create and on an update.
    let refused = f.a.fails_with_stdin(&["apply", "-f", "-"], &crontab("bad", r#"{cronSpec: "* * * * *", minReplicas: 7}"#));
    assert!(refused.contains(r#"The CronTab "bad" is invalid: spec: Invalid value: "object": minReplicas must not exceed maxReplicas"#), "{refused}");
    assert!(f.a.fails(&["get", "ct", "bad"]).contains(r#"crontabs.stable.example.com "bad" not found"#));
    let refused = f.a.fails(&["patch", "ct", "nightly", "--type", "merge", "-p", r#"{"spec":{"minReplicas":9}}"#]);
    assert!(refused.contains("minReplicas must not exceed maxReplicas"), "{refused}");

    // The status subresource: the main resource ignores .status, /status writes only .status.
    let generation = object["metadata"]["generation"].as_i64().expect("generation");
    let patched = f.a.ok(&["patch", "ct", "nightly", "--type", "merge", "-p", r#"{"spec":{"image":"registry.example.com/backup:1.3"},"status":{"replicas":9}}"#]);
    assert!(patched.contains("crontab.stable.example.com/nightly patched"), "{patched}");
    let object = get_json(&f.a, &["ct", "nightly"]);
    assert_eq!(object["spec"]["image"], "registry.example.com/backup:1.3", "{object}");
    assert!(object.get("status").is_none(), "the main resource ignores .status: {object}");
    assert_eq!(object["metadata"]["generation"], generation + 1, "a spec change bumps the generation: {object}");
    let status_patch = r#"{"spec":{"image":"ignored:0"},"status":{"replicas":2,"labelSelector":"app=nightly"}}"#;
    f.a.ok(&["patch", "ct", "nightly", "--subresource=status", "--type", "merge", "-p", status_patch]);
    let object = get_json(&f.a, &["ct", "nightly"]);
    assert_eq!(object["status"], serde_json::json!({"replicas": 2, "labelSelector": "app=nightly"}), "{object}");
    assert_eq!(object["spec"]["image"], "registry.example.com/backup:1.3", "/status ignores .spec: {object}");
    assert_eq!(object["metadata"]["generation"], generation + 1, "a status change keeps the generation: {object}");

    // The scale subresource.
    assert_eq!(f.a.ok(&["scale", "ct/nightly", "--replicas=3"]).trim(), "crontab.stable.example.com/nightly scaled");
    assert_eq!(crontab_spec(&f.a, "nightly")["replicas"], 3);
    let scale = raw(&f.a, "/apis/stable.example.com/v1/namespaces/default/crontabs/nightly/scale");
    assert_eq!((scale["apiVersion"].as_str(), scale["kind"].as_str()), (Some("autoscaling/v1"), Some("Scale")), "{scale}");
    assert_eq!(scale["spec"]["replicas"], 3, "{scale}");
    assert_eq!((scale["status"]["replicas"].clone(), scale["status"]["selector"].clone()), (2.into(), "app=nightly".into()), "{scale}");
    let refused = f.a.fails(&["scale", "ct/nightly", "--replicas=11"]);
    assert!(refused.contains("spec.replicas in body should be less than or equal to 10"), "scaling is validated: {refused}");
    assert_eq!(crontab_spec(&f.a, "nightly")["replicas"], 3);

    // Patch types: strategic merge patch is 415 on custom resources, merge and JSON patches work.
    let refused = f.a.fails(&["patch", "ct", "nightly", "-p", r#"{"spec":{"paused":true}}"#]);
    assert!(refused.contains("application/strategic-merge-patch+json is not supported"), "{refused}");
    assert!(refused.contains("the body of the request was in an unknown format"), "{refused}");
    assert_eq!(crontab_spec(&f.a, "nightly")["paused"], false);
    f.a.ok(&["patch", "ct", "nightly", "--type", "merge", "-p", r#"{"spec":{"paused":true}}"#]);
    f.a.ok(&["patch", "ct", "nightly", "--type", "json", "-p", r#"[{"op":"replace","path":"/spec/extra/anything","value":"changed"}]"#]);
    let spec = crontab_spec(&f.a, "nightly");
    assert_eq!((spec["paused"].clone(), spec["extra"]["anything"].clone()), (true.into(), "changed".into()), "{spec}");

    // Re-applying a changed manifest (kubectl falls back to a merge patch) keeps what the patches set.
    let changed = NIGHTLY.replace("backup:1.2", "backup:2.0").replace("replicas: 2", "replicas: 4");
    let configured = apply_pruned(&f.a, &changed);
    assert_eq!(configured.trim(), "crontab.stable.example.com/nightly configured");
    let object = get_json(&f.a, &["ct", "nightly"]);
    assert_eq!((object["spec"]["image"].as_str(), object["spec"]["replicas"].as_i64()), (Some("registry.example.com/backup:2.0"), Some(4)), "{object}");
    assert_eq!(object["spec"]["paused"], true, "apply leaves fields it never set: {object}");
    assert_eq!(object["status"]["replicas"], 2, "apply leaves the status: {object}");

    // Versions: the deprecated v1beta1 serves the same object with its own apiVersion, and a warning.
    let quiet = f.a.run(&["get", "crontabs.v1.stable.example.com", "nightly", "-o", "json"]);
    assert!(quiet.status.success() && !String::from_utf8_lossy(&quiet.stderr).contains("Warning"), "{quiet:?}");
    let old = f.a.run(&["get", "crontabs.v1beta1.stable.example.com", "nightly", "-o", "json"]);
    let stderr = String::from_utf8_lossy(&old.stderr);
    assert!(old.status.success(), "{stderr}");
    assert!(stderr.contains(DEPRECATION), "{stderr}");
    let object = json(&String::from_utf8_lossy(&old.stdout));
    assert_eq!(object["apiVersion"], "stable.example.com/v1beta1", "{object}");
    assert_eq!(object["spec"]["image"], "registry.example.com/backup:2.0", "{object}");
    let legacy = "apiVersion: stable.example.com/v1beta1\nkind: CronTab\nmetadata: {name: legacy, namespace: default}\nspec: {cronSpec: \"*/5 * * * *\", replicas: 4}\n";
    let written = f.a.run_with_stdin(&["apply", "-f", "-"], legacy);
    let stderr = String::from_utf8_lossy(&written.stderr);
    assert!(written.status.success(), "{stderr}");
    assert!(stderr.contains(DEPRECATION), "{stderr}");
    let object = get_json(&f.a, &["ct", "legacy"]);
    assert_eq!((object["apiVersion"].as_str(), object["spec"]["cronSpec"].as_str()), (Some("stable.example.com/v1"), Some("*/5 * * * *")), "{object}");
    assert_eq!(names(&f.a, &["ct"]), ["legacy", "nightly"]);

    // Deleting the CRD deletes its objects; created again, the kind is empty.
    let deleted = f.a.ok(&["delete", "crd", CRONTABS]);
    assert!(deleted.contains(r#"customresourcedefinition.apiextensions.k8s.io "crontabs.stable.example.com" deleted"#), "{deleted}");
    assert!(eventually(TIMEOUT, || !f.a.run(&["get", "crd", CRONTABS]).status.success()), "the CRD stays");
    assert_not_served(&f.fresh("t-a").fails(&["get", "ct"]), "ct", "after the CRD's deletion");
    install_crd(&f.a, CRONTABS, CRONTAB_CRD);
    assert_eq!(names(&f.a, &["ct", "-A"]), Vec::<String>::new(), "the objects went with the CRD");
    assert!(f.a.fails(&["get", "ct", "nightly"]).contains(r#"crontabs.stable.example.com "nightly" not found"#));
}

#[test]
fn kubectl_field_validation_reports_undeclared_custom_resource_fields() {
    let f = fixture("{}");
    install_crd(&f.a, CRONTABS, CRONTAB_CRD);
    // The default, --validate=strict: refused, nothing stored.
    let refused = f.a.fails_with_stdin(&["create", "-f", "-"], NIGHTLY);
    assert!(refused.contains("Error from server (BadRequest)"), "{refused}");
    assert!(refused.contains(r#"unknown field "spec.unknownField""#), "{refused}");
    assert!(f.a.fails(&["get", "ct", "nightly"]).contains("not found"), "a strictly refused object was stored");
    // --validate=warn: stored pruned, with a warning.
    let warned = f.a.run_with_stdin(&["create", "--validate=warn", "-f", "-"], NIGHTLY);
    let stderr = String::from_utf8_lossy(&warned.stderr);
    assert!(warned.status.success(), "{stderr}");
    assert!(stderr.contains(r#"Warning: unknown field "spec.unknownField""#), "{stderr}");
    assert!(crontab_spec(&f.a, "nightly").get("unknownField").is_none());
    // --validate=false: stored pruned, silently.
    let ignored = f.a.run_with_stdin(&["create", "--validate=false", "-f", "-"], &NIGHTLY.replace("nightly", "hourly"));
    assert!(ignored.status.success() && ignored.stderr.is_empty(), "{ignored:?}");
    assert!(crontab_spec(&f.a, "hourly").get("unknownField").is_none());
}

#[test]
fn the_same_crd_name_in_two_tenants_follows_each_tenants_schema() {
    let f = fixture("{}");
    let a_spec = "{type: object, required: [image], properties: {cronSpec: {type: string}, image: {type: string}}}";
    let b_spec = "{type: object, properties: {cronSpec: {type: string}, command: {type: string}}}";
    install_crd(&f.a, CRONTABS, &crontab_crd("", "a-jobs", a_spec));
    install_crd(&f.b, CRONTABS, &crontab_crd("", "b-jobs", b_spec));
    assert_eq!(discovered(&f.fresh("t-a"), "stable.example.com", "crontabs"), Some(vec!["a-jobs".to_owned()]));
    assert_eq!(discovered(&f.fresh("t-b"), "stable.example.com", "crontabs"), Some(vec!["b-jobs".to_owned()]));

    // t-a's schema requires an image, t-b's has none.
    let backup = crontab("backup", r#"{cronSpec: "0 * * * *", command: run-backup}"#);
    let refused = f.a.fails_with_stdin(&["apply", "--validate=false", "-f", "-"], &backup);
    assert!(refused.contains(r#"The CronTab "backup" is invalid: spec.image: Required value"#), "{refused}");
    assert_eq!(apply(&f.b, &backup).trim(), "crontab.stable.example.com/backup created");
    assert_eq!(crontab_spec(&f.b, "backup")["command"], "run-backup");

    // One manifest, one name, in both: each tenant's schema prunes what it lacks.
    let shared = crontab("shared", r#"{cronSpec: "*/10 * * * *", image: "nginx:1.27", command: serve}"#);
    assert_eq!(apply_pruned(&f.a, &shared).trim(), "crontab.stable.example.com/shared created");
    assert_eq!(apply_pruned(&f.b, &shared).trim(), "crontab.stable.example.com/shared created");
    assert_eq!(crontab_spec(&f.a, "shared"), serde_json::json!({"cronSpec": "*/10 * * * *", "image": "nginx:1.27"}));
    assert_eq!(crontab_spec(&f.b, "shared"), serde_json::json!({"cronSpec": "*/10 * * * *", "command": "serve"}));

    // Each sees its own objects only; the system space serves no such kind.
    assert_eq!(names(&f.a, &["ct", "-A"]), ["shared"]);
    assert_eq!(names(&f.b, &["ct", "-A"]), ["backup", "shared"]);
    assert!(f.a.fails(&["get", "ct", "backup"]).contains(r#"crontabs.stable.example.com "backup" not found"#));
    assert_not_served(&f.fresh("system").fails(&["get", "ct", "-A"]), "ct", "the system admin's short path");
    let missing = f.system.fails(&["get", "crd", CRONTABS]);
    assert!(missing.contains(r#"customresourcedefinitions.apiextensions.k8s.io "crontabs.stable.example.com" not found"#), "{missing}");
    let b_crd = get_json(&f.b, &["crd", CRONTABS]);
    assert_eq!(b_crd["spec"]["names"]["categories"], serde_json::json!(["b-jobs"]), "t-b's CRD is its own: {b_crd}");
    let a_list = raw(&f.system, "/apis/stable.example.com/v1/tenants/t-a/namespaces/default/crontabs");
    assert_eq!(item_names(&a_list), ["shared"], "the system admin through t-a's full path: {a_list}");
    let b_list = raw(&f.system, "/apis/stable.example.com/v1/tenants/t-b/namespaces/default/crontabs");
    assert_eq!(item_names(&b_list), ["backup", "shared"], "the system admin through t-b's full path: {b_list}");

    // Deleting t-b's CRD takes t-b's objects only.
    f.b.ok(&["delete", "crd", CRONTABS]);
    assert_not_served(&f.fresh("t-b").fails(&["get", "ct"]), "ct", "t-b after deleting its CRD");
    assert_eq!(crontab_spec(&f.a, "shared")["image"], "nginx:1.27", "t-a's object survives t-b's deletion");
    assert_eq!(names(&f.a, &["ct", "-A"]), ["shared"]);
}

#[test]
fn a_forced_system_crd_serves_every_tenant_and_blocks_their_own() {
    let f = fixture("{}");
    // Before the forcing: t-a has opted out of system CRDs, t-b has its own CronTab with an object.
    set_policy(&f.a, "NeverUseSystemCRDUnlessForced");
    install_crd(&f.b, CRONTABS, &crontab_crd("", "mine", OWN_SPEC));
    apply(&f.b, &crontab("b-own", r#"{cronSpec: "0 0 * * *", image: "b:1", owner: bob}"#));

    let forced = crontab_crd(", labels: {arktos.futurewei.com/crd-sharing-policy: Forced}", "shared", SYSTEM_SPEC);
    install_crd(&f.system, CRONTABS, &forced);
    for tenant in ["t-a", "t-b"] {
        assert_eq!(discovered(&f.fresh(tenant), "stable.example.com", "crontabs"), Some(vec!["shared".to_owned()]), "{tenant}");
    }

    // Both tenants use it, each in its own space, under the system schema; t-b's own objects are set aside.
    assert_eq!(names(&f.b, &["ct"]), Vec::<String>::new(), "t-b's own CRD's objects are not served while forced");
    apply(&f.a, &crontab("a-one", r#"{cronSpec: "1 * * * *", image: "a:1"}"#));
    apply_pruned(&f.b, &crontab("b-forced", r#"{cronSpec: "2 * * * *", image: "b:2", owner: bob}"#));
    assert_eq!(crontab_spec(&f.b, "b-forced"), serde_json::json!({"cronSpec": "2 * * * *", "image": "b:2"}), "the system schema prunes owner");
    assert_eq!(names(&f.a, &["ct", "-A"]), ["a-one"]);
    assert_eq!(names(&f.b, &["ct", "-A"]), ["b-forced"]);
    let through_full_path = raw(&f.system, "/apis/stable.example.com/v1/tenants/t-a/namespaces/default/crontabs");
    assert_eq!(item_names(&through_full_path), ["a-one"], "{through_full_path}");

    // The system space has its own objects of the system CRD, and sees none of the tenants'.
    apply(&f.system, &crontab("sys-one", r#"{cronSpec: "3 * * * *", image: "sys:1"}"#));
    assert_eq!(names(&f.system, &["ct", "-A"]), ["sys-one"]);
    assert!(f.system.fails(&["get", "ct", "a-one"]).contains(r#"crontabs.stable.example.com "a-one" not found"#));
    assert_eq!(names(&f.a, &["ct", "-A"]), ["a-one"], "t-a does not see the system space's objects");

    // A tenant may not create, change or delete a CRD of the forced name.
    let refused = f.a.fails_with_stdin(&["apply", "-f", "-"], &crontab_crd("", "mine", OWN_SPEC));
    assert_forced(&refused, "t-a creating its own CronTab CRD");
    assert_forced(&f.b.fails(&["label", "crd", CRONTABS, "team=b"]), "t-b changing its own CronTab CRD");
    assert_forced(&f.b.fails(&["delete", "crd", CRONTABS]), "t-b deleting its own CronTab CRD");
    assert!(f.fresh("t-a").fails(&["get", "crd", CRONTABS]).contains("not found"), "t-a's refused CRD was stored");

    // Forcing ends: t-b's own CRD serves again with its object as it was; t-a (never system CRDs) loses the kind.
    f.system.ok(&["label", "crd", CRONTABS, "arktos.futurewei.com/crd-sharing-policy-"]);
    assert_eq!(discovered(&f.fresh("t-b"), "stable.example.com", "crontabs"), Some(vec!["mine".to_owned()]));
    assert_eq!(names(&f.b, &["ct", "-A"]), ["b-own"]);
    assert_eq!(crontab_spec(&f.b, "b-own")["owner"], "bob");
    assert_not_served(&f.fresh("t-a").fails(&["get", "ct"]), "ct", "t-a, policy NeverUseSystemCRDUnlessForced, after the forcing");
    set_policy(&f.a, "LocalCRDFirst");
    assert_eq!(names(&f.fresh("t-a"), &["ct", "-A"]), ["a-one"], "t-a's objects of the system CRD were kept");
}

#[test]
fn policy_switches_serve_the_chosen_definition_and_lose_nothing() {
    let f = fixture("{}");
    install_crd(&f.system, CRONTABS, &crontab_crd("", "shared", SYSTEM_SPEC));
    let shown = f.a.ok(&["get", "logicalcluster"]);
    assert_eq!(header(&shown), ["NAME", "PHASE", "CRD", "POLICY", "AGE"], "{shown}");
    assert_eq!(row(&shown, "cluster")["CRD POLICY"], "LocalCRDFirst", "the default policy: {shown}");

    // LocalCRDFirst without an own CRD: the system CRD serves, with its schema.
    assert_eq!(discovered(&f.fresh("t-a"), "stable.example.com", "crontabs"), Some(vec!["shared".to_owned()]));
    apply_pruned(&f.a, &crontab("via-system", r#"{cronSpec: "0 1 * * *", image: "s:1", owner: alice}"#));
    assert_eq!(crontab_spec(&f.a, "via-system"), serde_json::json!({"cronSpec": "0 1 * * *", "image": "s:1"}), "the system schema has no owner");

    // t-a installs its own CronTab: LocalCRDFirst serves it, with owner, and none of the system CRD's objects.
    install_crd(&f.a, CRONTABS, &crontab_crd("", "mine", OWN_SPEC));
    assert_eq!(discovered(&f.fresh("t-a"), "stable.example.com", "crontabs"), Some(vec!["mine".to_owned()]));
    assert_eq!(names(&f.a, &["ct", "-A"]), Vec::<String>::new());
    apply_pruned(&f.a, &crontab("local-one", r#"{cronSpec: "0 2 * * *", image: "l:1", owner: alice}"#));
    assert_eq!(crontab_spec(&f.a, "local-one")["owner"], "alice", "the own schema keeps owner");
    let explained = f.fresh("t-a").ok(&["explain", "crontabs.spec"]);
    assert!(explained.contains("owner"), "kubectl explain shows t-a's own schema: {explained}");

    // SystemCRDFirst: the system CRD and its objects; a new object is pruned by the system schema.
    set_policy(&f.a, "SystemCRDFirst");
    assert_eq!(discovered(&f.fresh("t-a"), "stable.example.com", "crontabs"), Some(vec!["shared".to_owned()]));
    assert_eq!(names(&f.a, &["ct", "-A"]), ["via-system"]);
    apply_pruned(&f.a, &crontab("system-two", r#"{cronSpec: "0 3 * * *", image: "s:2", owner: alice}"#));
    assert!(crontab_spec(&f.a, "system-two").get("owner").is_none(), "the system schema prunes owner");
    assert_eq!(names(&f.a, &["ct", "-A"]), ["system-two", "via-system"]);
    let explained = f.fresh("t-a").ok(&["explain", "crontabs.spec"]);
    assert!(explained.contains("cronSpec") && !explained.contains("owner"), "kubectl explain shows the system schema: {explained}");

    // NeverUseSystemCRDUnlessForced and back to LocalCRDFirst: the own CRD's object, as it was.
    set_policy(&f.a, "NeverUseSystemCRDUnlessForced");
    assert_eq!(discovered(&f.fresh("t-a"), "stable.example.com", "crontabs"), Some(vec!["mine".to_owned()]));
    assert_eq!(names(&f.a, &["ct", "-A"]), ["local-one"]);
    assert_eq!(crontab_spec(&f.a, "local-one")["owner"], "alice");
    set_policy(&f.a, "SystemCRDFirst");
    assert_eq!(names(&f.a, &["ct", "-A"]), ["system-two", "via-system"], "nothing lost on the system side");
    set_policy(&f.a, "LocalCRDFirst");
    assert_eq!(names(&f.a, &["ct", "-A"]), ["local-one"], "nothing lost on the own side");

    // An unknown policy is refused with the supported values; the policy stays.
    let refused = f.a.fails(&["patch", "logicalcluster", "cluster", "--type", "merge", "-p", r#"{"spec":{"crdPolicy":"Sometimes"}}"#]);
    assert!(refused.contains(r#"The LogicalCluster "cluster" is invalid: spec.crdPolicy: Unsupported value: "Sometimes": supported values: "#), "{refused}");
    for policy in ["LocalCRDFirst", "SystemCRDFirst", "NeverUseSystemCRDUnlessForced"] {
        assert!(refused.contains(&format!("\"{policy}\"")), "{refused}");
    }
    assert_eq!(row(&f.a.ok(&["get", "logicalcluster"]), "cluster")["CRD POLICY"], "LocalCRDFirst");

    // Without an own CRD, LocalCRDFirst falls back to the system CRD and NeverUseSystemCRDUnlessForced serves nothing.
    f.a.ok(&["delete", "crd", CRONTABS]);
    assert_eq!(names(&f.fresh("t-a"), &["ct", "-A"]), ["system-two", "via-system"]);
    set_policy(&f.a, "NeverUseSystemCRDUnlessForced");
    assert_eq!(discovered(&f.fresh("t-a"), "stable.example.com", "crontabs"), None);
    assert_not_served(&f.fresh("t-a").fails(&["get", "ct"]), "ct", "NeverUseSystemCRDUnlessForced without an own CRD");

    // Nobody else saw any of it.
    assert_eq!(names(&f.fresh("t-b"), &["ct", "-A"]), Vec::<String>::new(), "t-b");
    assert_eq!(names(&f.system, &["ct", "-A"]), Vec::<String>::new(), "the system admin's short path");
}

#[test]
fn the_applicable_range_follows_tenant_labels_and_the_annotation() {
    let f = fixture("{tier: gold}");
    let gold_only = crontab_crd(r#", annotations: {crd.kspaces.io/applicable-tenants: "tier=gold"}"#, "shared", SYSTEM_SPEC);
    install_crd(&f.system, CRONTABS, &gold_only);

    assert_eq!(discovered(&f.fresh("t-a"), "stable.example.com", "crontabs"), Some(vec!["shared".to_owned()]), "gold t-a");
    apply(&f.a, &crontab("gold-one", r#"{cronSpec: "0 4 * * *", image: "g:1"}"#));
    assert_eq!(names(&f.a, &["ct", "-A"]), ["gold-one"]);
    assert_eq!(discovered(&f.fresh("t-b"), "stable.example.com", "crontabs"), None, "unlabelled t-b");
    assert_not_served(&f.fresh("t-b").fails(&["get", "ct"]), "ct", "unlabelled t-b");

    // Labelling t-b gold brings it into range at once.
    f.system.ok(&["label", "tenant", "t-b", "tier=gold", "--overwrite"]);
    assert_eq!(discovered(&f.fresh("t-b"), "stable.example.com", "crontabs"), Some(vec!["shared".to_owned()]), "gold t-b");
    assert_eq!(names(&f.fresh("t-b"), &["ct", "-A"]), Vec::<String>::new(), "t-b does not see t-a's objects");
    apply(&f.fresh("t-b"), &crontab("b-one", r#"{cronSpec: "0 5 * * *", image: "b:1"}"#));

    // Narrowing the annotation takes the kind from both at once; widening it again brings every object back.
    f.system.ok(&["annotate", "crd", CRONTABS, "crd.kspaces.io/applicable-tenants=tier in (platinum)", "--overwrite"]);
    for tenant in ["t-a", "t-b"] {
        assert_eq!(discovered(&f.fresh(tenant), "stable.example.com", "crontabs"), None, "{tenant} out of range");
        assert_not_served(&f.fresh(tenant).fails(&["get", "ct"]), "ct", tenant);
    }
    f.system.ok(&["annotate", "crd", CRONTABS, "crd.kspaces.io/applicable-tenants-"]);
    assert_eq!(names(&f.fresh("t-a"), &["ct", "-A"]), ["gold-one"]);
    assert_eq!(names(&f.fresh("t-b"), &["ct", "-A"]), ["b-one"]);
    assert_eq!(names(&f.system, &["ct", "-A"]), Vec::<String>::new(), "the system space holds none of them");

    // A forced CRD out of a tenant's range neither serves there nor blocks the tenant's own CRD of that name.
    const BACKUPS: &str = "backups.backup.example.com";
    let backups = |metadata: &str, field: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: {BACKUPS}{metadata}}}\nspec:\n  group: backup.example.com\n  scope: Namespaced\n  names: {{plural: backups, singular: backup, kind: Backup}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec: {{type: object, properties: {{{field}: {{type: string}}}}}}\n"
        )
    };
    let forced_platinum = r#", labels: {arktos.futurewei.com/crd-sharing-policy: forced}, annotations: {crd.kspaces.io/applicable-tenants: "tier=platinum"}"#;
    install_crd(&f.system, BACKUPS, &backups(forced_platinum, "target"));
    assert_eq!(discovered(&f.fresh("t-a"), "backup.example.com", "backups"), None, "a forced CRD out of range");
    install_crd(&f.a, BACKUPS, &backups("", "retention"));
    let weekly = "apiVersion: backup.example.com/v1\nkind: Backup\nmetadata: {name: weekly, namespace: default}\nspec: {retention: 7d, target: s3}\n";
    f.a.ok_with_stdin(&["apply", "--validate=false", "-f", "-"], weekly);
    assert_eq!(get_json(&f.a, &["backup", "weekly"])["spec"], serde_json::json!({"retention": "7d"}), "t-a's own schema");

    // t-a turns platinum: the forced CRD takes over (and blocks t-a's CRD); back to gold, t-a's own object returns.
    f.system.ok(&["label", "tenant", "t-a", "tier=platinum", "--overwrite"]);
    assert_eq!(names(&f.fresh("t-a"), &["backups", "-A"]), Vec::<String>::new(), "the forced CRD's objects of t-a");
    let refused = f.a.fails(&["label", "crd", BACKUPS, "team=a"]);
    assert!(refused.contains("Error from server (Forbidden)") && refused.contains("forced") && refused.contains(BACKUPS), "{refused}");
    f.system.ok(&["label", "tenant", "t-a", "tier=gold", "--overwrite"]);
    assert_eq!(names(&f.fresh("t-a"), &["backups", "-A"]), ["weekly"]);
    assert_eq!(get_json(&f.a, &["backup", "weekly"])["spec"]["retention"], "7d");

    // t-b, out of the forced CRD's range and without a CRD of its own, has no such kind: kubectl says so.
    assert_eq!(discovered(&f.fresh("t-b"), "backup.example.com", "backups"), None, "t-b");
    let monthly = "apiVersion: backup.example.com/v1\nkind: Backup\nmetadata: {name: monthly, namespace: default}\nspec: {target: s3}\n";
    let refused = f.fresh("t-b").fails_with_stdin(&["create", "-f", "-"], monthly);
    assert!(refused.contains(r#"no matches for kind "Backup" in version "backup.example.com/v1""#), "{refused}");
}

#[test]
fn cluster_scoped_crds_stay_within_their_space() {
    let f = fixture("{}");
    let policies = |scope: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: clusterpolicies.stable.example.com}}\nspec:\n  group: stable.example.com\n  scope: {scope}\n  names: {{plural: clusterpolicies, singular: clusterpolicy, kind: ClusterPolicy, shortNames: [cpol]}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec: {{type: object, properties: {{level: {{type: string}}}}}}\n"
        )
    };
    let policy = |name: &str, level: &str| format!("apiVersion: stable.example.com/v1\nkind: ClusterPolicy\nmetadata: {{name: {name}}}\nspec: {{level: {level}}}\n");
    const POLICIES: &str = "clusterpolicies.stable.example.com";
    install_crd(&f.a, POLICIES, &policies("Cluster"));
    install_crd(&f.b, POLICIES, &policies("Tenant"));
    install_crd(&f.system, POLICIES, &policies("Cluster"));
    for who in ["t-a", "t-b", "system"] {
        let resources = f.fresh(who).ok(&["api-resources", "--api-group", "stable.example.com"]);
        assert_eq!(row(&resources, "clusterpolicies")["NAMESPACED"], "false", "{who}: {resources}");
    }

    apply(&f.a, &policy("strict", "high"));
    apply(&f.a, &policy("audit", "medium"));
    apply(&f.b, &policy("lenient", "low"));
    apply(&f.system, &policy("global", "baseline"));

    assert_eq!(names(&f.a, &["cpol"]), ["audit", "strict"]);
    assert_eq!(names(&f.b, &["cpol"]), ["lenient"]);
    assert_eq!(names(&f.system, &["cpol"]), ["global"], "the system admin's short path is the system space");
    for (who, kubectl) in [("t-b", &f.b), ("system", &f.system)] {
        let missing = kubectl.fails(&["get", "cpol", "strict"]);
        assert!(missing.contains(r#"clusterpolicies.stable.example.com "strict" not found"#), "{who}: {missing}");
    }
    assert!(f.a.fails(&["get", "cpol", "lenient"]).contains("not found"));
    let strict = get_json(&f.a, &["cpol", "strict"]);
    assert!(strict["metadata"].get("namespace").is_none(), "{strict}");
    assert_eq!(strict["spec"]["level"], "high");

    // Writes do not cross either: t-b's object of the same name is its own.
    apply(&f.b, &policy("strict", "none"));
    assert_eq!(get_json(&f.a, &["cpol", "strict"])["spec"]["level"], "high");
    assert_eq!(get_json(&f.b, &["cpol", "strict"])["spec"]["level"], "none");
    f.b.ok(&["delete", "cpol", "strict"]);
    assert_eq!(names(&f.a, &["cpol"]), ["audit", "strict"], "t-b's delete did not reach t-a");

    // The system admin reaches a tenant's objects only through that tenant's full path.
    let list = raw(&f.system, "/apis/stable.example.com/v1/tenants/t-a/clusterpolicies");
    assert_eq!(item_names(&list), ["audit", "strict"], "{list}");
    let list = raw(&f.system, "/apis/stable.example.com/v1/tenants/t-b/clusterpolicies");
    assert_eq!(item_names(&list), ["lenient"], "{list}");
}

/// A CRD of t-a's `stable.example.com` group whose kind, list kind and short name the CronTab CRD already holds.
const SCHEDULES: &str = "schedules.stable.example.com";
const SCHEDULES_CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: schedules.stable.example.com}\nspec:\n  group: stable.example.com\n  scope: Namespaced\n  names: {plural: schedules, singular: schedule, kind: CronTab, shortNames: [ct]}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n";

/// The (status, reason, message) of a CRD's condition.
fn crd_condition(crd: &Value, kind: &str) -> (String, String, String) {
    let conditions = crd["status"]["conditions"].as_array().unwrap_or_else(|| panic!("no conditions: {crd}"));
    let found = conditions.iter().find(|c| c["type"] == kind).unwrap_or_else(|| panic!("no {kind} condition: {crd}"));
    let text = |key: &str| found[key].as_str().unwrap_or_default().to_owned();
    (text("status"), text("reason"), text("message"))
}

#[test]
fn a_crd_whose_names_another_crd_holds_waits_until_they_are_free() {
    let f = fixture("{}");
    install_crd(&f.a, CRONTABS, CRONTAB_CRD);
    apply(&f.a, &crontab("nightly", "{cronSpec: '0 0 * * *', image: backup}"));

    let created = apply(&f.a, SCHEDULES_CRD);
    assert!(created.contains(&format!("customresourcedefinition.apiextensions.k8s.io/{SCHEDULES} created")), "{created}");
    let schedules = get_json(&f.a, &["crd", SCHEDULES]);
    let (status, reason, message) = crd_condition(&schedules, "NamesAccepted");
    assert_eq!((status.as_str(), reason.as_str(), message.as_str()), ("False", "ListKindConflict", "\"CronTabList\" is already in use"), "{schedules}");
    let (status, reason, _) = crd_condition(&schedules, "Established");
    assert_eq!((status.as_str(), reason.as_str()), ("False", "NotAccepted"), "{schedules}");
    assert_eq!(schedules["status"]["acceptedNames"], serde_json::json!({"plural": "schedules", "singular": "schedule", "kind": ""}));
    let waited = f.a.fails(&["wait", "--for", "condition=established", &format!("crd/{SCHEDULES}"), "--timeout=1s"]);
    assert!(waited.contains("timed out"), "{waited}");
    assert_not_served(&f.fresh("t-a").fails(&["get", "schedules"]), "schedules", "a CRD whose names are not accepted is not served");
    assert_eq!(names(&f.fresh("t-a"), &["ct"]), ["nightly"], "the short name stays the CronTab CRD's");

    // Names are held per space: t-b has no CronTab CRD, so the same CRD is accepted there at once.
    install_crd(&f.b, SCHEDULES, SCHEDULES_CRD);
    assert_eq!(crd_condition(&get_json(&f.b, &["crd", SCHEDULES]), "NamesAccepted").1, "NoConflicts");

    // Once the CronTab CRD is gone, its names are free and the waiting CRD is accepted and served.
    f.a.ok(&["delete", "crd", CRONTABS]);
    let waited = f.a.ok(&["wait", "--for", "condition=established", &format!("crd/{SCHEDULES}"), "--timeout=10s"]);
    assert!(waited.contains("condition met"), "{waited}");
    let schedules = get_json(&f.a, &["crd", SCHEDULES]);
    assert_eq!(crd_condition(&schedules, "NamesAccepted"), ("True".into(), "NoConflicts".into(), "no conflicts found".into()));
    assert_eq!(schedules["status"]["acceptedNames"]["shortNames"], serde_json::json!(["ct"]), "{schedules}");
    let fresh = f.fresh("t-a");
    apply(&fresh, "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: weekly, namespace: default}\nspec: {every: week}\n");
    assert_eq!(names(&fresh, &["ct"]), ["weekly"], "the short name now reaches schedules");
    assert_eq!(get_json(&fresh, &["schedules", "weekly"])["spec"]["every"], "week");
}
