//! Tenant lifecycle through kubectl: creation and the default content of a new space (namespaces, admin-role,
//! admin-role-binding, the LogicalCluster `cluster` and its CRD policy), reserved names, deletion (Terminating,
//! the space emptied with finalizers honoured, then gone; re-creation starts empty), and what may not be deleted.

use std::time::Duration;

use kspaces_tests::{certificate_kubeconfig, create_tenant, eventually, kubeconfig_with_server_url, token_file, token_kubeconfig, Kubectl, Server};
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(20);

/// kubectl prints a 422 as `The <Kind> "<name>" is invalid: ...` and other errors as `Error from server (<Reason>): ...`.
fn assert_error(stderr: &str, reason: &str, context: &str) {
    let matched = match reason {
        "Invalid" => stderr.contains("\" is invalid: "),
        _ => stderr.contains(&format!("Error from server ({reason})")),
    };
    assert!(matched, "{context}: expected {reason}, got: {stderr}");
}

/// A server with tenant t-a; kubectl as the system administrator and as t-a's `admin` (client certificate).
fn server_with_tenant() -> (Server, Kubectl, Kubectl) {
    let server = Server::start();
    let system = server.kubectl();
    let created = create_tenant(&system, "t-a");
    assert_eq!(created.trim(), "tenant/t-a created");
    let admin = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[]));
    (server, system, admin)
}

fn raw(kubectl: &Kubectl, path: &str) -> Value {
    let body = kubectl.ok(&["get", "--raw", path]);
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path} answered no JSON ({e}): {body}"))
}

/// The names of a list's items.
fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .map(|items| items.iter().map(|i| i["metadata"]["name"].as_str().unwrap_or_default().to_owned()).collect())
        .unwrap_or_default()
}

fn lines(output: &str) -> Vec<&str> {
    output.lines().map(str::trim).filter(|l| !l.is_empty()).collect()
}

#[test]
fn a_created_tenant_is_active_listed_with_system_and_defaults_its_storage_cluster() {
    let (_server, system, _) = server_with_tenant();
    let listed = system.ok(&["get", "tenants", "-o", "name"]);
    assert!(lines(&listed).contains(&"tenant/system") && lines(&listed).contains(&"tenant/t-a"), "{listed}");
    let table = system.ok(&["get", "tenants"]);
    assert!(table.starts_with("NAME") && table.lines().any(|l| l.starts_with("t-a ")), "{table}");

    let tenant: Value = serde_json::from_str(&system.ok(&["get", "tenant", "t-a", "-o", "json"])).expect("JSON");
    assert_eq!(tenant["apiVersion"], "v1", "{tenant}");
    assert_eq!(tenant["kind"], "Tenant", "{tenant}");
    assert_eq!(tenant["spec"]["storageClusterId"], "0", "storageClusterId defaults to \"0\": {tenant}");
    assert_eq!(tenant["status"]["phase"], "Active", "{tenant}");
    assert!(tenant["metadata"].get("namespace").is_none(), "a Tenant is cluster-scoped: {tenant}");
    assert_eq!(system.ok(&["get", "tenant", "system", "-o", "jsonpath={.status.phase}"]), "Active");
    let status = raw(&system, "/api/v1/tenants/t-a/status");
    assert_eq!(status["status"]["phase"], "Active", "the status subresource: {status}");

    let again = create_tenant(&system, "t-a");
    assert_eq!(again.trim(), "tenant/t-a unchanged", "applying the same tenant again changes nothing");
}

#[test]
fn a_new_tenant_space_holds_the_default_content_when_the_create_returns() {
    let (_server, system, admin) = server_with_tenant();
    let namespaces = admin.ok(&["get", "ns", "-o", "name"]);
    for ns in ["default", "kube-system", "kube-public"] {
        assert!(lines(&namespaces).contains(&format!("namespace/{ns}").as_str()), "{namespaces}");
        assert_eq!(admin.ok(&["get", "ns", ns, "-o", "jsonpath={.status.phase}"]), "Active");
    }
    assert_eq!(admin.ok(&["get", "clusterrole", "admin-role", "-o", "name"]).trim(), "clusterrole.rbac.authorization.k8s.io/admin-role");
    let binding: Value = serde_json::from_str(&admin.ok(&["get", "clusterrolebinding", "admin-role-binding", "-o", "json"])).expect("JSON");
    assert_eq!(binding["roleRef"]["kind"], "ClusterRole", "{binding}");
    assert_eq!(binding["roleRef"]["name"], "admin-role", "{binding}");
    let subjects = binding["subjects"].as_array().cloned().unwrap_or_default();
    assert!(subjects.iter().any(|s| s["kind"] == "User" && s["name"] == "admin"), "the binding names User admin: {binding}");

    let cluster: Value = serde_json::from_str(&admin.ok(&["get", "logicalclusters", "cluster", "-o", "json"])).expect("JSON");
    assert_eq!(cluster["apiVersion"], "core.kcp.io/v1alpha1", "{cluster}");
    assert_eq!(cluster["kind"], "LogicalCluster", "{cluster}");
    assert_eq!(cluster["spec"]["crdPolicy"], "LocalCRDFirst", "{cluster}");
    assert!(cluster["metadata"].get("namespace").is_none(), "LogicalCluster is cluster-scoped: {cluster}");

    let seen_by_system = raw(&system, "/apis/core.kcp.io/v1alpha1/tenants/t-a/logicalclusters/cluster");
    assert_eq!(seen_by_system["spec"]["crdPolicy"], "LocalCRDFirst", "{seen_by_system}");
    let role = raw(&system, "/apis/rbac.authorization.k8s.io/v1/tenants/t-a/clusterroles/admin-role");
    assert_eq!(role["metadata"]["name"], "admin-role", "{role}");
    let spaces_namespaces = names(&raw(&system, "/clusters/root:t-a/api/v1/namespaces"));
    assert!(spaces_namespaces.iter().any(|n| n == "kube-system"), "{spaces_namespaces:?}");
}

#[test]
fn the_tenant_admin_may_set_the_crd_policy_to_the_three_allowed_values_only() {
    let (_server, system, admin) = server_with_tenant();
    for policy in ["NeverUseSystemCRDUnlessForced", "SystemCRDFirst", "LocalCRDFirst", "SystemCRDFirst"] {
        let patch = format!("{{\"spec\":{{\"crdPolicy\":\"{policy}\"}}}}");
        let patched = admin.ok(&["patch", "logicalcluster", "cluster", "--type=merge", "-p", &patch]);
        assert_eq!(patched.trim(), "logicalcluster.core.kcp.io/cluster patched", "{policy}");
        assert_eq!(admin.ok(&["get", "logicalcluster", "cluster", "-o", "jsonpath={.spec.crdPolicy}"]), policy);
    }
    for invalid in ["Whatever", "localcrdfirst", ""] {
        let patch = format!("{{\"spec\":{{\"crdPolicy\":\"{invalid}\"}}}}");
        let refused = admin.fails(&["patch", "logicalcluster", "cluster", "--type=merge", "-p", &patch]);
        assert_error(&refused, "Invalid", &format!("crdPolicy {invalid:?}"));
    }
    assert_eq!(admin.ok(&["get", "logicalcluster", "cluster", "-o", "jsonpath={.spec.crdPolicy}"]), "SystemCRDFirst", "refused patches change nothing");
    let stored = raw(&system, "/apis/core.kcp.io/v1alpha1/tenants/t-a/logicalclusters/cluster");
    assert_eq!(stored["spec"]["crdPolicy"], "SystemCRDFirst", "{stored}");
}

#[test]
fn reserved_and_invalid_tenant_names_are_refused() {
    let server = Server::start();
    let system = server.kubectl();
    let tenant = |name: &str| format!("apiVersion: v1\nkind: Tenant\nmetadata: {{name: \"{name}\"}}\n");
    let refused = system.fails_with_stdin(&["create", "-f", "-"], &tenant("all"));
    assert_error(&refused, "Invalid", "tenant all");
    let refused = system.fails_with_stdin(&["create", "-f", "-"], &tenant("system"));
    assert_error(&refused, "AlreadyExists", "tenant system");
    // Not DNS labels: every one is checked before failing, so the report names all that were accepted.
    let mut accepted = Vec::new();
    for name in ["Bad_Name", "a.b", "-lead", "trail-", "x".repeat(64).as_str()] {
        let output = system.run_with_stdin(&["create", "-f", "-"], &tenant(name));
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.success() || !stderr.contains("\" is invalid: ") {
            accepted.push(format!("{name}: stdout {:?} stderr {stderr:?}", String::from_utf8_lossy(&output.stdout)));
        }
    }
    assert!(accepted.is_empty(), "tenant names that are not DNS labels were not refused as Invalid:\n{}", accepted.join("\n"));
    let listed = system.ok(&["get", "tenants", "-o", "name"]);
    assert_eq!(lines(&listed), ["tenant/system"], "only the system tenant exists: {listed}");
    let created = system.ok_with_stdin(&["create", "-f", "-"], &tenant("t-1"));
    assert_eq!(created.trim(), "tenant/t-1 created", "a DNS label is a fine name");
}

const CONTENT: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: work}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: plain, namespace: work}
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: work, finalizers: [example.com/hold]}
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: in-default, namespace: default}
data: {k: v}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: default}
spec:
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: a}}
    spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: extra}
rules: []
";

#[test]
fn deleting_a_tenant_empties_its_space_then_removes_it_and_a_recreated_tenant_starts_empty() {
    let tokens = token_file(&["a-token,admin,u-a,\"tenant-admins\",,t-a", "b-token,admin,u-b,\"tenant-admins\",,t-b"]);
    let token_path = tokens.path().to_str().expect("utf-8 temp path").to_owned();
    let server = Server::start_with(&["--token-auth-file", &token_path]);
    let system = server.kubectl();
    create_tenant(&system, "t-a");
    create_tenant(&system, "t-b");
    let a = Kubectl::new(&token_kubeconfig(&server, "a-token"));
    let b = Kubectl::new(&token_kubeconfig(&server, "b-token"));
    let applied = a.ok_with_stdin(&["apply", "-f", "-"], CONTENT);
    assert!(applied.contains("namespace/work created") && applied.contains("clusterrole.rbac.authorization.k8s.io/extra created"), "{applied}");
    b.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: survivor, namespace: default}\n");

    assert_eq!(system.ok(&["delete", "tenant", "t-a", "--wait=false"]).trim(), "tenant \"t-a\" deleted");
    let terminating = eventually(TIMEOUT, || system.ok(&["get", "tenant", "t-a", "-o", "jsonpath={.status.phase}"]) == "Terminating");
    assert!(terminating, "the tenant goes Terminating: {}", system.ok(&["get", "tenant", "t-a", "-o", "yaml"]));
    let stamp = system.ok(&["get", "tenant", "t-a", "-o", "jsonpath={.metadata.deletionTimestamp}"]);
    assert!(!stamp.is_empty(), "a terminating tenant has a deletionTimestamp");
    // A repeated delete while content remains is a Conflict, as kube-apiserver answers for namespaces.
    let again = system.fails(&["delete", "tenant", "t-a", "--wait=false"]);
    assert!(again.contains("Error from server (Conflict)") && again.contains("ensuring all content is removed from this tenant"), "{again}");
    let work_terminating = eventually(TIMEOUT, || a.ok(&["get", "namespace", "work", "-o", "jsonpath={.status.phase}"]) == "Terminating");
    assert!(work_terminating, "the tenant controller deletes the tenant's namespaces");
    let again = a.fails(&["delete", "namespace", "work", "--wait=false"]);
    assert!(again.contains("Error from server (Conflict)") && again.contains("removed from this namespace"), "{again}");

    // Cluster-scoped creates: refused by the tenant, whatever state its namespaces are in.
    let refused = a.fails_with_stdin(&["create", "-f", "-"], "apiVersion: v1\nkind: Namespace\nmetadata: {name: late}\n");
    assert_error(&refused, "Forbidden", "t-a's admin creates a namespace in a Terminating tenant");
    let refused = a.fails_with_stdin(&["create", "-f", "-"], "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: late}\nrules: []\n");
    assert_error(&refused, "Forbidden", "t-a's admin creates a cluster role in a Terminating tenant");
    let refused = system.fails_with_stdin(
        &["create", "--raw", "/api/v1/tenants/t-a/namespaces", "-f", "-"],
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"late\"}}",
    );
    assert_error(&refused, "Forbidden", "the system admin creates a namespace in a Terminating tenant");
    let refused = a.fails_with_stdin(&["create", "-f", "-"], "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: late, namespace: work}\n");
    assert_error(&refused, "Forbidden", "t-a's admin creates a config map in a Terminating tenant");

    let emptied = eventually(TIMEOUT, || {
        names(&raw(&system, "/api/v1/tenants/t-a/configmaps")) == ["held"]
            && names(&raw(&system, "/apis/apps/v1/tenants/t-a/deployments")).is_empty()
            && names(&raw(&system, "/api/v1/tenants/t-a/namespaces")) == ["work"]
    });
    assert!(
        emptied,
        "everything but the finalized config map and its namespace is deleted: configmaps {:?}, deployments {:?}, namespaces {:?}",
        names(&raw(&system, "/api/v1/tenants/t-a/configmaps")),
        names(&raw(&system, "/apis/apps/v1/tenants/t-a/deployments")),
        names(&raw(&system, "/api/v1/tenants/t-a/namespaces")),
    );
    // Cluster-wide RBAC goes last, so t-a's admin can still lift the finalizer that holds the deletion up.
    let roles = names(&raw(&system, "/apis/rbac.authorization.k8s.io/v1/tenants/t-a/clusterroles"));
    assert!(roles.contains(&"extra".to_owned()) && roles.contains(&"admin-role".to_owned()), "{roles:?}");
    let held = raw(&system, "/api/v1/tenants/t-a/namespaces/work/configmaps/held");
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "the finalized config map is marked and kept: {held}");
    assert_eq!(system.ok(&["get", "tenant", "t-a", "-o", "jsonpath={.status.phase}"]), "Terminating", "the tenant waits for its content");

    a.ok(&["patch", "cm", "held", "-n", "work", "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    let gone = eventually(TIMEOUT, || {
        let output = system.run(&["get", "tenant", "t-a"]);
        String::from_utf8_lossy(&output.stderr).contains("tenants \"t-a\" not found")
    });
    assert!(gone, "the tenant disappears once its space is empty: {}", String::from_utf8_lossy(&system.run(&["get", "tenant", "t-a", "-o", "yaml"]).stdout));
    assert_eq!(b.ok(&["get", "cm", "survivor", "-o", "name"]).trim(), "configmap/survivor", "another tenant is untouched");

    assert_eq!(create_tenant(&system, "t-a").trim(), "tenant/t-a created");
    assert_eq!(system.ok(&["get", "tenant", "t-a", "-o", "jsonpath={.status.phase}"]), "Active");
    let configmaps = a.ok(&["get", "cm", "-A", "-o", "name"]);
    for old in ["configmap/plain", "configmap/held", "configmap/in-default"] {
        assert!(!lines(&configmaps).contains(&old), "the re-created tenant holds the old {old}: {configmaps}");
    }
    let namespaces = a.ok(&["get", "ns", "-o", "name"]);
    assert!(!lines(&namespaces).contains(&"namespace/work"), "{namespaces}");
    assert!(lines(&namespaces).contains(&"namespace/default"), "{namespaces}");
    assert!(a.ok(&["get", "deploy", "-A", "-o", "name"]).trim().is_empty(), "no old deployment");
    let roles = a.ok(&["get", "clusterroles", "-o", "name"]);
    assert!(!lines(&roles).contains(&"clusterrole.rbac.authorization.k8s.io/extra"), "{roles}");
    assert!(lines(&roles).contains(&"clusterrole.rbac.authorization.k8s.io/admin-role"), "{roles}");
    assert_eq!(a.ok(&["get", "logicalcluster", "cluster", "-o", "jsonpath={.spec.crdPolicy}"]), "LocalCRDFirst");
}

#[test]
fn the_system_tenant_cannot_be_deleted() {
    let server = Server::start();
    let system = server.kubectl();
    let refused = system.fails(&["delete", "tenant", "system", "--wait=false"]);
    assert_error(&refused, "Forbidden", "kubectl delete tenant system");
    assert_eq!(system.ok(&["get", "tenant", "system", "-o", "jsonpath={.status.phase}"]), "Active");
    let stamp = system.ok(&["get", "tenant", "system", "-o", "jsonpath={.metadata.deletionTimestamp}"]);
    assert!(stamp.is_empty(), "the system tenant was not marked for deletion: {stamp}");
    system.ok(&["create", "configmap", "still-works"]);
}

#[test]
fn the_default_namespaces_of_an_active_tenant_cannot_be_deleted() {
    let (_server, system, admin) = server_with_tenant();
    for ns in ["default", "kube-system", "kube-public"] {
        let refused = admin.fails(&["delete", "ns", ns, "--wait=false"]);
        assert_error(&refused, "Forbidden", &format!("t-a's admin deletes namespace {ns}"));
        let refused = system.fails(&["delete", "--raw", &format!("/api/v1/tenants/t-a/namespaces/{ns}")]);
        assert_error(&refused, "Forbidden", &format!("the system admin deletes t-a's namespace {ns}"));
        assert_eq!(admin.ok(&["get", "ns", ns, "-o", "jsonpath={.status.phase}"]), "Active");
    }
    admin.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: v1\nkind: Namespace\nmetadata: {name: scratch}\n");
    assert_eq!(admin.ok(&["delete", "ns", "scratch", "--wait=false"]).trim(), "namespace \"scratch\" deleted", "other namespaces may be deleted");
}

/// kill -9 while a tenant with 240 objects in 60 namespaces is being deleted: the restarted server finishes the
/// deletion by itself (docs/tenancy.md), and promptly; the time it takes is printed. One ConfigMap's finalizer
/// holds the deletion until after the restart, so the kill always lands mid-deletion (without it a fast server
/// could finish before the test looks).
#[test]
fn a_tenant_deletion_cut_by_a_kill_finishes_promptly_after_the_restart() {
    let server = Server::start();
    let system = server.kubectl();
    create_tenant(&system, "t-k");
    let mut items = Vec::new();
    for n in 0..60 {
        items.push(serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("ns-{n}")}}));
        for c in 0..3 {
            items.push(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{c}"), "namespace": format!("ns-{n}")}}));
        }
    }
    items.push(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "held", "namespace": "ns-0", "finalizers": ["example.com/hold"]}}));
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string();
    let in_tenant = Kubectl::new(&kubeconfig_with_server_url(&server, &server.kubeconfig, &format!("{}/clusters/root:t-k", server.url)));
    in_tenant.ok_with_stdin(&["create", "-f", "-"], &list);
    let left = |system: &Kubectl| {
        let namespaces = names(&raw(system, "/api/v1/tenants/t-k/namespaces")).iter().filter(|n| n.starts_with("ns-")).count();
        (namespaces, names(&raw(system, "/api/v1/tenants/t-k/configmaps")).iter().filter(|n| n.starts_with("cm-")).count())
    };
    assert_eq!(left(&system), (60, 180));

    system.ok(&["delete", "tenant", "t-k", "--wait=false"]);
    let under_way = eventually(TIMEOUT, || left(&system).1 < 180);
    assert!(under_way, "the tenant controller starts deleting");
    let at_kill = left(&system);
    let data_dir = server.stop();
    let restarted = std::time::Instant::now();
    let server = Server::start_in(data_dir, &[]);
    let system = server.kubectl();
    assert!(system.run(&["get", "tenant", "t-k"]).status.success(), "the held ConfigMap keeps the tenant");
    let in_tenant = Kubectl::new(&kubeconfig_with_server_url(&server, &server.kubeconfig, &format!("{}/clusters/root:t-k", server.url)));
    in_tenant.ok(&["patch", "configmap", "held", "-n", "ns-0", "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    let gone = eventually(Duration::from_secs(60), || {
        String::from_utf8_lossy(&system.run(&["get", "tenant", "t-k"]).stderr).contains("tenants \"t-k\" not found")
    });
    let took = restarted.elapsed();
    println!("the deletion of t-k finished {took:?} after the restart ({} namespaces and {} config maps were left at the kill)", at_kill.0, at_kill.1);
    assert!(gone, "the restarted server finishes the deletion");
    assert!(took < Duration::from_secs(15), "the deletion took {took:?} to finish after the restart");
    assert_eq!(create_tenant(&system, "t-k").trim(), "tenant/t-k created");
    assert_eq!(left(&system), (0, 0), "the re-created tenant starts empty");
}
