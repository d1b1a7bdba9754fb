//! CRDs through kubectl, as the system administrator and the admins of two tenants: a tenant's own CRD with
//! everything helm and operators rely on, the same CRD name in two tenants, cluster-scoped CRDs that do not leak,
//! and system CRDs shared with tenants (forced, the per-space `crdPolicy`, the applicable-tenants range), with no
//! object lost when resolution changes (docs/crd-sharing.md).

use std::time::Duration;

use kspaces_tests::{certificate_kubeconfig, eventually, Kubectl, Server};
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(15);

/// A server with tenants t-a (labelled `tier: gold`) and t-b, kubectl as the system admin and as each tenant's
/// admin.
struct Fixture {
    _server: Server,
    system: Kubectl,
    a: Kubectl,
    b: Kubectl,
}

fn fixture() -> Fixture {
    let server = Server::start();
    let system = server.kubectl();
    system.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: v1\nkind: Tenant\nmetadata: {name: t-a, labels: {tier: gold}}\n");
    system.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: v1\nkind: Tenant\nmetadata: {name: t-b}\n");
    let a = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[]));
    let b = Kubectl::new(&certificate_kubeconfig(&server, "t-b", "admin", &[]));
    Fixture { _server: server, system, a, b }
}

/// A CronTab CRD. `extra_property` adds one more property to `spec` (a tenant's variant of the schema);
/// `metadata` is spliced into the CRD's metadata (labels, annotations).
fn crontab_crd(scope: &str, extra_property: &str, metadata: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
  {metadata}
spec:
  group: stable.example.com
  scope: {scope}
  names: {{plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct], categories: [all]}}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {{}}
      scale: {{specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}}
    additionalPrinterColumns:
    - {{name: Spec, type: string, jsonPath: .spec.cronSpec}}
    - {{name: Replicas, type: integer, jsonPath: .spec.replicas}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [cronSpec]
            x-kubernetes-validations:
            - {{rule: "self.minReplicas <= self.maxReplicas", message: "minReplicas must not exceed maxReplicas"}}
            properties:
              cronSpec: {{type: string}}
              replicas: {{type: integer, default: 1, maximum: 10}}
              minReplicas: {{type: integer, default: 0}}
              maxReplicas: {{type: integer, default: 5}}
              {extra_property}
          status:
            type: object
            properties:
              replicas: {{type: integer}}
              ready: {{type: boolean}}
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    deprecationWarning: "stable.example.com/v1beta1 CronTab is deprecated; use stable.example.com/v1"
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#
    )
}

fn crontab(name: &str, spec: &str) -> String {
    format!("apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {{name: {name}}}\nspec: {spec}\n")
}

fn json(kubectl: &Kubectl, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.extend(["-o", "json"]);
    serde_json::from_str(&kubectl.ok(&args)).unwrap_or_else(|err| panic!("kubectl {args:?}: {err}"))
}

/// Names kubectl lists (`-o name`), or the error text when the resource is unknown.
fn names(kubectl: &Kubectl, args: &[&str]) -> String {
    let mut args = args.to_vec();
    args.extend(["-o", "name"]);
    let output = kubectl.run(&args);
    let text = String::from_utf8_lossy(if output.status.success() { &output.stdout } else { &output.stderr }).into_owned();
    text.trim().to_owned()
}

/// kubectl's answer for a resource the space does not serve: unknown to discovery, or (with discovery cached
/// from before a switch) 404 from the server.
fn unserved(text: &str) -> bool {
    text.contains("doesn't have a resource type") || text.contains("could not find the requested resource")
}

fn install(kubectl: &Kubectl, crd: &str) {
    kubectl.ok_with_stdin(&["apply", "-f", "-"], crd);
    kubectl.ok(&["wait", "--for", "condition=established", "crd/crontabs.stable.example.com", "--timeout=10s"]);
}

#[test]
fn a_tenant_installs_and_uses_its_own_crd_like_on_a_cluster_of_its_own() {
    let f = fixture();
    install(&f.a, &crontab_crd("Namespaced", "", ""));
    // Right after `kubectl wait`, as helm does: create, defaults applied, unknown fields pruned.
    f.a.ok_with_stdin(&["apply", "-f", "-"], &crontab("nightly", "{cronSpec: '0 0 * * *', bogus: 1}"));
    let stored = json(&f.a, &["get", "ct", "nightly"]);
    assert_eq!(stored["spec"]["replicas"], 1, "defaulted: {stored}");
    assert_eq!(stored["spec"]["maxReplicas"], 5, "{stored}");
    assert!(stored["spec"].get("bogus").is_none(), "pruned: {stored}");
    assert_eq!(stored["metadata"]["tenant"], "t-a");
    assert!(f.a.ok(&["api-resources"]).lines().any(|l| l.starts_with("crontabs") && l.contains("ct") && l.contains("stable.example.com/v1")));

    // Every violation is a 422 cause with its path; the CEL rule's message is shown.
    let refused = f.a.fails_with_stdin(&["create", "-f", "-"], &crontab("bad", "{replicas: 20, minReplicas: 3, maxReplicas: 2}"));
    assert!(refused.contains("The CronTab \"bad\" is invalid"), "{refused}");
    assert!(refused.contains("spec.cronSpec: Required value"), "{refused}");
    assert!(refused.contains("spec.replicas: Invalid value: 20: spec.replicas in body should be less than or equal to 10"), "{refused}");
    assert!(refused.contains("minReplicas must not exceed maxReplicas"), "{refused}");

    // Printer columns, categories, short names.
    let table = f.a.ok(&["get", "ct"]);
    let header = table.lines().next().unwrap_or_default();
    assert!(header.contains("SPEC") && header.contains("REPLICAS"), "{table}");
    assert!(table.lines().any(|l| l.starts_with("nightly") && l.contains("0 0 * * *") && l.split_whitespace().last() == Some("1")), "{table}");
    assert!(f.a.ok(&["get", "all"]).contains("crontab.stable.example.com/nightly"));

    // Strategic merge patch is 415, merge patch works, and a re-apply falls back to merge patch by itself.
    let smp = f.a.fails(&["patch", "ct", "nightly", "-p", "{\"spec\":{\"replicas\":2}}"]);
    assert!(smp.contains("application/strategic-merge-patch+json is not supported"), "{smp}");
    f.a.ok(&["patch", "ct", "nightly", "--type", "merge", "-p", "{\"spec\":{\"replicas\":2}}"]);
    f.a.ok_with_stdin(&["apply", "-f", "-"], &crontab("nightly", "{cronSpec: '0 1 * * *'}"));
    assert_eq!(f.a.ok(&["get", "ct", "nightly", "-o", "jsonpath={.spec.cronSpec}"]), "0 1 * * *");

    // Status and scale subresources; the main resource ignores status.
    f.a.ok(&["patch", "ct", "nightly", "--subresource=status", "--type", "merge", "-p", "{\"status\":{\"ready\":true,\"replicas\":2}}"]);
    f.a.ok(&["patch", "ct", "nightly", "--type", "merge", "-p", "{\"status\":{\"ready\":false}}"]);
    assert_eq!(f.a.ok(&["get", "ct", "nightly", "-o", "jsonpath={.status.ready}"]), "true");
    f.a.ok(&["scale", "ct", "nightly", "--replicas=4"]);
    assert_eq!(f.a.ok(&["get", "ct", "nightly", "-o", "jsonpath={.spec.replicas}"]), "4");
    let scale: Value = serde_json::from_str(&f.a.ok(&["get", "--raw", "/apis/stable.example.com/v1/namespaces/default/crontabs/nightly/scale"]))
        .unwrap_or_default();
    assert_eq!((scale["spec"]["replicas"].as_i64(), scale["status"]["replicas"].as_i64()), (Some(4), Some(2)), "{scale}");

    // The deprecated version serves the same object under its own apiVersion, with a warning.
    let old = f.a.run(&["get", "crontabs.v1beta1.stable.example.com", "nightly", "-o", "jsonpath={.apiVersion}"]);
    assert_eq!(String::from_utf8_lossy(&old.stdout), "stable.example.com/v1beta1");
    assert!(String::from_utf8_lossy(&old.stderr).contains("Warning: stable.example.com/v1beta1 CronTab is deprecated"));

    // Nobody else sees the CRD; deleting it deletes its objects, and a new CRD of that name starts empty.
    assert!(unserved(&names(&f.b, &["get", "ct"])), "t-b");
    assert!(names(&f.system, &["get", "crd"]).is_empty(), "the system space has no CRD");
    f.a.ok(&["delete", "crd", "crontabs.stable.example.com", "--timeout=15s"]);
    assert!(eventually(TIMEOUT, || names(&f.a, &["get", "crd"]).is_empty()));
    install(&f.a, &crontab_crd("Namespaced", "", ""));
    assert_eq!(names(&f.a, &["get", "ct", "-A"]), "");
}

#[test]
fn the_same_crd_in_two_tenants_has_two_schemas_and_cluster_scoped_objects_do_not_leak() {
    let f = fixture();
    install(&f.a, &crontab_crd("Cluster", "owner: {type: string}", ""));
    // Arktos' `Tenant` scope is the same as Cluster.
    install(&f.b, &crontab_crd("Tenant", "team: {type: string}", ""));
    f.a.ok_with_stdin(&["apply", "-f", "-"], &crontab("a-job", "{cronSpec: '*', owner: alice, team: red}"));
    f.b.ok_with_stdin(&["apply", "-f", "-"], &crontab("b-job", "{cronSpec: '*', owner: bob, team: blue}"));
    let a = json(&f.a, &["get", "ct", "a-job"]);
    let b = json(&f.b, &["get", "ct", "b-job"]);
    assert_eq!((a["spec"]["owner"].as_str(), a["spec"].get("team")), (Some("alice"), None), "t-a's schema: {a}");
    assert_eq!((b["spec"]["team"].as_str(), b["spec"].get("owner")), (Some("blue"), None), "t-b's schema: {b}");
    assert!(a["metadata"].get("namespace").is_none(), "cluster-scoped: {a}");
    assert_eq!(names(&f.a, &["get", "ct"]), "crontab.stable.example.com/a-job");
    assert_eq!(names(&f.b, &["get", "ct"]), "crontab.stable.example.com/b-job");
    assert!(unserved(&names(&f.system, &["get", "ct"])), "the system space has no such CRD");
    let b_at_a = f.b.run(&["get", "--raw", "/apis/stable.example.com/v1/tenants/t-a/crontabs"]);
    assert!(!b_at_a.status.success(), "t-b's admin cannot read t-a's space");
    let all = f.system.ok(&["get", "--raw", "/apis/stable.example.com/v1/tenants/t-a/crontabs"]);
    assert!(all.contains("a-job") && !all.contains("b-job"), "{all}");
}

#[test]
fn system_crds_are_shared_by_policy_forced_and_bounded_by_range_and_nothing_is_lost() {
    let f = fixture();
    install(&f.system, &crontab_crd("Namespaced", "", ""));
    // LocalCRDFirst (the default), no own CRD: both tenants use the system CRD, each with its own objects.
    f.a.ok_with_stdin(&["apply", "-f", "-"], &crontab("shared-a", "{cronSpec: '*', owner: x}"));
    f.b.ok_with_stdin(&["apply", "-f", "-"], &crontab("shared-b", "{cronSpec: '*'}"));
    assert_eq!(names(&f.a, &["get", "ct"]), "crontab.stable.example.com/shared-a");
    assert_eq!(names(&f.b, &["get", "ct"]), "crontab.stable.example.com/shared-b");
    assert_eq!(names(&f.system, &["get", "ct", "-A"]), "", "the system space's own short path sees no tenant's objects");
    assert!(json(&f.a, &["get", "ct", "shared-a"])["spec"].get("owner").is_none(), "the system schema prunes owner");
    assert!(f.a.ok(&["get", "--raw", "/apis/stable.example.com/v1"]).contains("\"crontabs\""));

    // t-a installs its own CRD (with `owner`): LocalCRDFirst now serves it, and its objects are apart.
    install(&f.a, &crontab_crd("Namespaced", "owner: {type: string}", ""));
    assert_eq!(names(&f.a, &["get", "ct"]), "");
    f.a.ok_with_stdin(&["apply", "-f", "-"], &crontab("local-a", "{cronSpec: '*', owner: x}"));
    assert_eq!(json(&f.a, &["get", "ct", "local-a"])["spec"]["owner"], "x", "t-a's schema keeps owner");

    // Switching policy flips between the two sets; nothing is lost either way.
    let policy = |kubectl: &Kubectl, name: &str| {
        kubectl.ok(&["patch", "logicalcluster", "cluster", "--type", "merge", "-p", &format!("{{\"spec\":{{\"crdPolicy\":\"{name}\"}}}}")]);
    };
    policy(&f.a, "SystemCRDFirst");
    assert_eq!(names(&f.a, &["get", "ct"]), "crontab.stable.example.com/shared-a");
    assert!(f.a.ok(&["get", "logicalcluster"]).contains("SystemCRDFirst"));
    policy(&f.a, "NeverUseSystemCRDUnlessForced");
    assert_eq!(names(&f.a, &["get", "ct"]), "crontab.stable.example.com/local-a");
    policy(&f.b, "NeverUseSystemCRDUnlessForced");
    assert!(unserved(&names(&f.b, &["get", "ct"])), "t-b has no own CRD");
    let invalid = f.a.fails(&["patch", "logicalcluster", "cluster", "--type", "merge", "-p", "{\"spec\":{\"crdPolicy\":\"Sometimes\"}}"]);
    assert!(invalid.contains("spec.crdPolicy: Unsupported value: \"Sometimes\""), "{invalid}");

    // Forcing the system CRD overrides every policy, and t-a may no longer touch its own CRD of that name.
    f.system.ok(&["label", "crd", "crontabs.stable.example.com", "arktos.futurewei.com/crd-sharing-policy=Forced"]);
    assert_eq!(names(&f.a, &["get", "ct"]), "crontab.stable.example.com/shared-a");
    assert_eq!(names(&f.b, &["get", "ct"]), "crontab.stable.example.com/shared-b");
    let refused = f.a.fails(&["delete", "crd", "crontabs.stable.example.com"]);
    assert!(refused.contains("Forbidden") && refused.contains("forced"), "{refused}");
    let refused = f.b.fails_with_stdin(&["create", "-f", "-"], &crontab_crd("Namespaced", "", ""));
    assert!(refused.contains("Forbidden") && refused.contains("crontabs.stable.example.com is forced"), "{refused}");

    // The range: only gold tenants. t-b drops out (nothing of its own), t-a keeps the forced CRD.
    f.system.ok(&["annotate", "crd", "crontabs.stable.example.com", "crd.kspaces.io/applicable-tenants=tier=gold"]);
    assert!(unserved(&names(&f.b, &["get", "ct"])), "t-b is out of range");
    assert_eq!(names(&f.a, &["get", "ct"]), "crontab.stable.example.com/shared-a");
    f.system.ok(&["label", "tenant", "t-b", "tier=gold"]);
    assert_eq!(names(&f.b, &["get", "ct"]), "crontab.stable.example.com/shared-b", "relabelled into range");
    f.system.ok(&["annotate", "crd", "crontabs.stable.example.com", "crd.kspaces.io/applicable-tenants=tier=platinum", "--overwrite"]);
    assert_eq!(names(&f.a, &["get", "ct"]), "crontab.stable.example.com/local-a", "out of range: t-a's own CRD again");

    // Unforced and back to LocalCRDFirst: every object is where it was.
    f.system.ok(&["label", "crd", "crontabs.stable.example.com", "arktos.futurewei.com/crd-sharing-policy-"]);
    f.system.ok(&["annotate", "crd", "crontabs.stable.example.com", "crd.kspaces.io/applicable-tenants-"]);
    policy(&f.a, "SystemCRDFirst");
    assert_eq!(names(&f.a, &["get", "ct"]), "crontab.stable.example.com/shared-a");
    policy(&f.a, "LocalCRDFirst");
    assert_eq!(names(&f.a, &["get", "ct"]), "crontab.stable.example.com/local-a");

    // Deleting the system CRD deletes the objects made through it in every tenant, not t-a's own.
    f.system.ok(&["delete", "crd", "crontabs.stable.example.com", "--timeout=15s"]);
    assert!(eventually(TIMEOUT, || names(&f.system, &["get", "crd"]).is_empty()));
    install(&f.system, &crontab_crd("Namespaced", "", ""));
    policy(&f.a, "SystemCRDFirst");
    assert_eq!(names(&f.a, &["get", "ct"]), "", "t-a's objects of the deleted system CRD are gone");
    policy(&f.a, "LocalCRDFirst");
    assert_eq!(names(&f.a, &["get", "ct"]), "crontab.stable.example.com/local-a");
}
