//! Workspaces (issue 16) from the outside, on one shared server: kcp's plugins run by kubectl 1.32 (`kubectl ws`,
//! `kubectl create workspace`) as the system administrator and as a tenant admin; ordinary kubectl, CRDs and RBAC
//! inside nested workspaces; `/clusters/<path>` and `/clusters/<logical cluster>` over HTTP/1.1 and HTTP/2 and in
//! protobuf; Tenants as root's Workspaces; workspace types, their limits and the `use` verb; phases and the
//! LogicalCluster; isolation of a tenant's whole subtree; home and system workspaces; deleting a subtree; bad input;
//! kube-rs against a nested workspace URL. The crash and storage checks of a deletion are `workspaces_crash.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};
use kspaces_tests::{
    assert_status, list_names, status_message,
    certificate_kubeconfig, certificate_kubeconfig_with, contains, create_tenant, curl, current_server, eventually, kube_client, kubeconfig_with_server_url,
    start_shared_with_tokens, Http, Kubectl, PluginKubectl, Server, WatchOutput, WIDGET_CRD,
};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(20);
const WORKSPACES: &str = "apis/tenancy.kcp.io/v1alpha1/workspaces";
const WORKSPACE_TYPES: &str = "apis/tenancy.kcp.io/v1alpha1/workspacetypes";

/// Static tokens: the system administrator, the `admin` of t-a and of t-b, and `carol` of t-a (no grants).
const TOKENS: [&str; 5] = [
    "root-token,root,u-root,\"system:masters\"",
    "a-token,admin,u-a,\"tenant-admins\",,t-a",
    "b-token,admin,u-b,\"tenant-admins\",,t-b",
    "carol-token,carol,u-carol,\"\",,t-a",
    "users-token,admin,u-users,\"\",,users",
];

/// The file's one server, with tenants t-a and t-b. Each test works in workspaces of its own names.
struct Fixture {
    server: Server,
    system: Kubectl,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let server = start_shared_with_tokens(&TOKENS);
        let system = server.kubectl();
        for tenant in ["t-a", "t-b"] {
            create_tenant(&system, tenant);
        }
        Fixture { server, system }
    })
}

// ---- Requests with curl (static tokens) ----

/// One request; the status and the body as JSON (a non-JSON body as a string).
fn call(http: Http, token: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let text = body.map(Value::to_string);
    let (code, answer) = curl(&fixture().server, http, Some(token), method, path, text.as_deref());
    (code, serde_json::from_str(&answer).unwrap_or(Value::String(answer)))
}

fn get(token: &str, path: &str) -> (u16, Value) {
    call(Http::One, token, "GET", path, None)
}

fn post(token: &str, path: &str, body: &Value) -> (u16, Value) {
    call(Http::One, token, "POST", path, Some(body))
}

/// A Workspace named `name`, of type `(path, name)` when given.
fn workspace(name: &str, kind: Option<(&str, &str)>) -> Value {
    let mut object = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name}});
    if let Some((path, type_name)) = kind {
        object["spec"] = json!({"type": {"name": type_name}});
        if !path.is_empty() {
            object["spec"]["type"]["path"] = json!(path);
        }
    }
    object
}

fn workspaces_of(parent: &str) -> String {
    format!("/clusters/{parent}/{WORKSPACES}")
}

/// Creates `parent:name` as `token`'s user and waits until it is Ready; returns the Workspace as created.
fn create_workspace(token: &str, parent: &str, name: &str, kind: Option<(&str, &str)>) -> Value {
    let (code, created) = post(token, &workspaces_of(parent), &workspace(name, kind));
    assert_eq!(code, 201, "create {parent}:{name}: {created}");
    wait_ready(token, parent, name);
    created
}

fn wait_ready(token: &str, parent: &str, name: &str) -> Value {
    wait_phase(token, &format!("{}/{name}", workspaces_of(parent)), "Ready")
}

/// GETs the Workspace at `path` until its `status.phase` is `phase`; returns it as last seen.
fn wait_phase(token: &str, path: &str, phase: &str) -> Value {
    let mut last = Value::Null;
    let reached = eventually(TIMEOUT, || {
        last = get(token, path).1;
        last["status"]["phase"] == phase
    });
    assert!(reached, "{path} never became {phase}: {last}");
    last
}

/// The logical cluster of `parent:name` (its Workspace's `spec.cluster`).
fn cluster_of(parent: &str, name: &str) -> String {
    let (code, ws) = get("root-token", &format!("{}/{name}", workspaces_of(parent)));
    assert_eq!(code, 200, "{ws}");
    ws["spec"]["cluster"].as_str().unwrap_or_else(|| panic!("no spec.cluster: {ws}")).to_owned()
}

fn configmap(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": value}})
}

// ---- kubectl and the plugins ----

/// kubectl with `kubeconfig`'s credentials pointed at workspace `path`.
fn kubectl_at(kubeconfig: &Path, path: &str) -> Kubectl {
    let f = fixture();
    Kubectl::new(&kubeconfig_with_server_url(&f.server, kubeconfig, &format!("{}/clusters/{path}", f.server.url)))
}

/// A copy of `kubeconfig` the plugins may edit, and kubectl running them on it.
fn plugin_kubectl(kubeconfig: &Path) -> (PluginKubectl, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let copy = dir.path().join("kubeconfig");
    std::fs::copy(kubeconfig, &copy).expect("copy the kubeconfig");
    (PluginKubectl::new(&copy), copy, dir)
}

fn prints(kubectl: &PluginKubectl, args: &[&str], stdout: &str) {
    let printed = kubectl.ok(args);
    assert_eq!((printed.stdout.as_str(), printed.stderr.as_str()), (stdout, ""), "kubectl {args:?}");
}

fn current(path: &str, kind: &str) -> String {
    format!("Current workspace is '{path}' (type {kind}).\n")
}

fn created(name: &str, kind: &str) -> String {
    format!("Workspace \"{name}\" (type {kind}) created. Waiting for it to be ready...\nWorkspace \"{name}\" (type {kind}) is ready to use.\n")
}

#[test]
fn the_plugins_build_and_walk_a_nested_tree_as_the_system_admin() {
    let f = fixture();
    let (kubectl, kubeconfig, _dir) = plugin_kubectl(&f.server.kubeconfig);
    let url = |path: &str| format!("{}/clusters/{path}", f.server.url);

    prints(&kubectl, &["ws", ":root:t-a"], &current("root:t-a", "root:organization"));
    assert_eq!(current_server(&kubeconfig), url("root:t-a"), "kcp's edit: the server URL ends in /clusters/<path>");
    prints(&kubectl, &["create", "workspace", "p-team", "--type", "team", "--enter"],
        &(created("p-team", "root:team") + &current("root:t-a:p-team", "root:team")));
    prints(&kubectl, &["create", "workspace", "p-dev", "--type", "universal", "--enter"],
        &(created("p-dev", "root:universal") + &current("root:t-a:p-team:p-dev", "root:universal")));
    prints(&kubectl, &["create", "workspace", "p-deep", "--type", "universal"], &created("p-deep", "root:universal"));
    assert_eq!(current_server(&kubeconfig), url("root:t-a:p-team:p-dev"), "without --enter the kubeconfig stays");

    prints(&kubectl, &["ws", "p-deep"], &current("root:t-a:p-team:p-dev:p-deep", "root:universal"));
    assert_eq!(current_server(&kubeconfig), url("root:t-a:p-team:p-dev:p-deep"));
    prints(&kubectl, &["ws", ".."], &current("root:t-a:p-team:p-dev", "root:universal"));
    prints(&kubectl, &["ws", "-"], "Current workspace is 'root:t-a:p-team:p-dev:p-deep'.\n");
    prints(&kubectl, &["ws", "..:.."], &current("root:t-a:p-team", "root:team"));
    prints(&kubectl, &["ws", "p-dev:p-deep"], &current("root:t-a:p-team:p-dev:p-deep", "root:universal"));
    prints(&kubectl, &["ws", ":root:t-a:p-team"], &current("root:t-a:p-team", "root:team"));
    prints(&kubectl, &["ws", "tree"], ".\n└── p-team\n    └── p-dev\n        └── p-deep\n\n");
    prints(&kubectl, &["ws", "tree", "--full"], ".\n└── root:t-a:p-team\n    └── root:t-a:p-team:p-dev\n        └── root:t-a:p-team:p-dev:p-deep\n\n");
    prints(&kubectl, &["ws", "."], "Current workspace is 'root:t-a:p-team'.\n");
    prints(&kubectl, &["ws", "current"], "Current workspace is 'root:t-a:p-team'.\n");
    prints(&kubectl, &["ws", "current", "--short"], "root:t-a:p-team\n");
    prints(&kubectl, &["ws", ":"], "Current workspace is 'root'.\n");
    assert_eq!(current_server(&kubeconfig), url("root"));

    let home = kubectl.ok(&["ws", "~"]).stdout;
    let home_path = home.strip_prefix("Current workspace is '").and_then(|rest| rest.strip_suffix("' (type root:home).\n"));
    let segments: Vec<&str> = home_path.unwrap_or_else(|| panic!("ws ~ printed {home:?}")).split(':').collect();
    assert_eq!((segments.len(), segments[..2].join(":"), segments[4]), (5, "root:users".to_owned(), "kubernetes-admin"), "{home}");
    assert!(segments[2..4].iter().all(|b| b.len() == 2 && b.chars().all(|c| c.is_ascii_lowercase())), "two 2-letter buckets: {home}");
    prints(&kubectl, &["ws", "-"], "Current workspace is 'root'.\n");

    // The user's own cluster is untouched; the plugin's context carries the admin's credentials to the workspace.
    let config = kube::config::Kubeconfig::read_from(&kubeconfig).expect("read");
    let own = config.clusters.iter().find(|c| !c.name.starts_with("workspace.kcp.io/")).and_then(|c| c.cluster.clone());
    assert_eq!(own.and_then(|c| c.server), Some(f.server.url.clone()));
    assert_eq!(config.current_context.as_deref(), Some("workspace.kcp.io/current"));
    kubectl.ok(&["ws", ":root:t-a:p-team:p-dev:p-deep"]);
    let namespaces = Kubectl::new(&kubeconfig).ok(&["get", "namespaces", "-o", "name"]);
    assert_eq!(namespaces, "namespace/default\nnamespace/kube-system\n", "kubectl itself follows the edited kubeconfig");
}

#[test]
fn the_plugins_work_for_a_tenant_admin_with_a_certificate() {
    let f = fixture();
    let (kubectl, kubeconfig, _dir) = plugin_kubectl(&certificate_kubeconfig(&f.server, "t-a", "admin", &[]));
    prints(&kubectl, &["ws", "."], &format!("Current workspace is the URL \"{}\".\n", f.server.url));

    let refused = kubectl.fails(&["create", "workspace", "c-org", "--type", "organization"]);
    assert!(refused.starts_with("Error: workspaces.tenancy.kcp.io \"c-org\" is forbidden: "), "organizations live under root only: {refused}");
    prints(&kubectl, &["create", "workspace", "c-team", "--type", "team", "--enter"],
        &(created("c-team", "root:team") + &current("root:t-a:c-team", "root:team")));
    prints(&kubectl, &["create", "workspace", "c-dev", "--enter"],
        &(created("c-dev", "root:universal") + &current("root:t-a:c-team:c-dev", "root:universal")));
    prints(&kubectl, &["create", "workspace", "c-deep", "--type", "universal", "--enter"],
        &(created("c-deep", "root:universal") + &current("root:t-a:c-team:c-dev:c-deep", "root:universal")));
    assert_eq!(current_server(&kubeconfig), format!("{}/clusters/root:t-a:c-team:c-dev:c-deep", f.server.url));
    let inside = Kubectl::new(&kubeconfig);
    assert_eq!(inside.ok(&["get", "namespaces", "-o", "name"]), "namespace/default\nnamespace/kube-system\n");
    assert_eq!(inside.ok(&["auth", "can-i", "delete", "clusterrolebindings"]), "yes\n", "the creator administers the workspace");

    // Another tenant's workspaces are denied alike, whether they exist or not; the own tenant says "not found".
    create_workspace("b-token", "root:t-b", "c-secret", Some(("root", "universal")));
    assert_eq!(kubectl.fails(&["ws", ":root:t-b:c-secret"]), "Error: access to workspace \"root:t-b:c-secret\" denied\n");
    assert_eq!(kubectl.fails(&["ws", ":root:t-b:c-nothing"]), "Error: access to workspace \"root:t-b:c-nothing\" denied\n");
    assert_eq!(kubectl.fails(&["ws", ":root:t-b"]), "Error: access to workspace \"root:t-b\" denied\n");
    assert_eq!(kubectl.fails(&["ws", ":root:t-a:c-nothing"]), "Error: workspace \"root:t-a:c-nothing\" not found\n");
    assert_eq!(current_server(&kubeconfig), format!("{}/clusters/root:t-a:c-team:c-dev:c-deep", f.server.url), "refusals leave it");

    let home = kubectl.ok(&["ws", "~"]).stdout;
    assert!(home.starts_with("Current workspace is 'root:t-a:users:") && home.contains(":admin'"), "a tenant user's home is in its tenant: {home}");
    assert_eq!(inside.ok(&["auth", "can-i", "create", "configmaps"]), "yes\n", "the home's owner administers it");
}

/// kcp's WorkspaceType CRD defaults `defaultChildWorkspaceType` to `root:universal`, so `kubectl create workspace x`
/// works in a universal workspace, as in kcp.
#[test]
fn a_workspace_without_a_type_in_a_universal_workspace_is_universal() {
    let f = fixture();
    create_workspace("a-token", "root:t-a", "u-parent", Some(("root", "universal")));
    let (kubectl, _kubeconfig, _dir) = plugin_kubectl(&f.server.kubeconfig);
    kubectl.ok(&["ws", ":root:t-a:u-parent"]);
    prints(&kubectl, &["create", "workspace", "u-child"], &created("u-child", "root:universal"));
    let (_, universal) = get("root-token", &format!("/clusters/root/{WORKSPACE_TYPES}/universal"));
    assert_eq!(universal["spec"]["defaultChildWorkspaceType"], json!({"name": "universal", "path": "root"}), "{universal}");
}

#[test]
fn kubectl_crds_and_rbac_work_inside_a_nested_workspace() {
    let f = fixture();
    create_workspace("a-token", "root:t-a", "k-team", Some(("root", "team")));
    create_workspace("a-token", "root:t-a:k-team", "k-dev", None);
    create_workspace("a-token", "root:t-a:k-team:k-dev", "k-deep", Some(("root", "universal")));
    let path = "root:t-a:k-team:k-dev:k-deep";
    let admin_kubeconfig = certificate_kubeconfig(&f.server, "t-a", "admin", &[]);
    let admin = kubectl_at(&admin_kubeconfig, path);

    admin.ok(&["create", "configmap", "c1", "--from-literal=k=one"]);
    assert_eq!(admin.ok(&["get", "configmap", "c1", "-o", "jsonpath={.data.k}"]), "one");
    let apply = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c2, namespace: default}\ndata: {k: two}\n";
    assert_eq!(admin.ok_with_stdin(&["apply", "-f", "-"], apply), "configmap/c2 created\n");
    assert_eq!(admin.ok_with_stdin(&["apply", "-f", "-"], apply), "configmap/c2 unchanged\n");
    let ssa = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c3, namespace: default}\ndata: {k: three}\n";
    assert_eq!(admin.ok_with_stdin(&["apply", "--server-side", "--field-manager", "ws-test", "-f", "-"], ssa), "configmap/c3 serverside-applied\n");
    let managers = admin.ok(&["get", "configmap", "c3", "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields[*].manager}"]);
    assert_eq!(managers, "ws-test");
    let own: Vec<String> = admin.ok(&["get", "configmaps", "-o", "name"]).lines().filter(|line| *line != "configmap/kube-root-ca.crt").map(str::to_owned).collect();
    assert_eq!(own, ["configmap/c1", "configmap/c2", "configmap/c3"], "its own ConfigMaps only (and the server's kube-root-ca.crt)");

    let mut watch = WatchOutput::start(&admin, &["get", "configmaps", "--watch", "--output-watch-events"]);
    assert!(watch.wait_for(TIMEOUT, contains("c3")), "the watch lists first: {}", watch.transcript());
    admin.ok(&["create", "configmap", "w1"]);
    admin.ok(&["delete", "configmap", "w1"]);
    let event = |kind: &'static str| move |line: &str| line.split_whitespace().take(2).eq([kind, "w1"]);
    assert!(watch.wait_for(TIMEOUT, event("ADDED")) && watch.wait_for(TIMEOUT, event("DELETED")), "{}", watch.transcript());
    assert!(admin.fails(&["get", "configmap", "w1"]).contains("configmaps \"w1\" not found"));

    // A CRD installed in the nested workspace serves there, and nowhere else.
    admin.ok_with_stdin(&["apply", "-f", "-"], WIDGET_CRD);
    admin.ok(&["wait", "--for", "condition=established", "crd/widgets.example.com", "--timeout=20s"]);
    admin.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\nspec: {size: 3}\n");
    assert_eq!(admin.ok(&["get", "widgets", "w", "-o", "jsonpath={.spec.size}"]), "3");
    let parent = kubectl_at(&admin_kubeconfig, "root:t-a:k-team:k-dev");
    assert!(parent.fails(&["get", "widgets"]).contains("the server doesn't have a resource type \"widgets\""), "the parent has no widgets");

    // The creator is admin through ClusterRoleBinding workspace-admin; a user of the tenant without grants is not.
    let binding = admin.ok(&["get", "clusterrolebinding", "workspace-admin", "-o", "jsonpath={.roleRef.name} {.subjects[0].kind}/{.subjects[0].name}"]);
    assert_eq!(binding, "cluster-admin User/admin");
    let carol = kubectl_at(&certificate_kubeconfig(&f.server, "t-a", "carol", &[]), path);
    let forbidden = carol.fails(&["get", "configmaps"]);
    assert!(forbidden.contains("Error from server (Forbidden)") && forbidden.contains("User \"carol\" cannot list resource \"configmaps\""), "{forbidden}");
    admin.ok(&["create", "rolebinding", "carol-view", "--clusterrole", "view", "--user", "carol", "-n", "default"]);
    assert!(eventually(TIMEOUT, || carol.run(&["get", "configmap", "c1"]).status.success()), "a grant inside the workspace lets carol read");

    // `kubectl get ws`: kcp's columns.
    let table = kubectl_at(&admin_kubeconfig, "root:t-a:k-team").ok(&["get", "workspaces"]);
    let lines: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["NAME", "TYPE", "REGION", "PHASE", "URL", "AGE"], "{table}");
    let url = format!("{}/clusters/root:t-a:k-team:k-dev", f.server.url);
    assert_eq!(lines[1][..4], ["k-dev", "universal", "Ready", url.as_str()], "{table}");
}

#[test]
fn a_path_and_a_logical_cluster_name_reach_the_same_workspace_over_http1_http2_and_protobuf() {
    let f = fixture();
    create_workspace("a-token", "root:t-a", "h-team", Some(("root", "team")));
    create_workspace("a-token", "root:t-a:h-team", "h-dev", None);
    let path = "root:t-a:h-team:h-dev";
    let cluster = cluster_of("root:t-a:h-team", "h-dev");
    let created = post("a-token", &format!("/clusters/{path}/api/v1/namespaces/default/configmaps"), &configmap("same", "v"));
    assert_eq!(created.0, 201, "{}", created.1);
    assert_eq!(created.1["metadata"]["annotations"]["kcp.io/cluster"], cluster.as_str(), "objects name their logical cluster");
    for http in [Http::One, Http::Two] {
        for prefix in [path, cluster.as_str()] {
            let (code, object) = call(http, "a-token", "GET", &format!("/clusters/{prefix}/api/v1/namespaces/default/configmaps/same"), None);
            assert_eq!((code, &object["metadata"]["uid"]), (200, &created.1["metadata"]["uid"]), "{http:?} /clusters/{prefix}: {object}");
            let (code, list) = call(http, "a-token", "GET", &format!("/clusters/{prefix}/api/v1/configmaps"), None);
            let names: Vec<String> = list_names(&list).into_iter().filter(|name| name != "kube-root-ca.crt").collect();
            assert_eq!((code, names), (200, vec!["same".to_owned()]), "{http:?} list at /clusters/{prefix}");
        }
    }
    let (_, logical_cluster) = get("a-token", &format!("/clusters/{cluster}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"));
    assert_eq!(logical_cluster["metadata"]["annotations"]["kcp.io/path"], path, "{logical_cluster}");
    let (_, ws) = get("a-token", &format!("{}/h-dev", workspaces_of("root:t-a:h-team")));
    assert_eq!(ws["spec"]["URL"], format!("{}/clusters/{path}", f.server.url), "spec.URL names the path: {ws}");

    // Protobuf, as client-go asks for it.
    let output = std::process::Command::new("curl")
        .args(["-sk", "--http2", "-H", "Authorization: Bearer a-token", "-H", "Accept: application/vnd.kubernetes.protobuf"])
        .arg(format!("{}/clusters/{path}/api/v1/namespaces/default/configmaps/same", f.server.url))
        .output()
        .expect("run curl");
    let body = output.stdout;
    let unknown = body.strip_prefix(b"k8s\0").map(<k8s_pb::apimachinery::pkg::runtime::Unknown as prost::Message>::decode);
    let unknown = unknown.unwrap_or_else(|| panic!("no protobuf magic: {}", String::from_utf8_lossy(&body))).expect("a runtime.Unknown");
    let map: k8s_pb::api::core::v1::ConfigMap = prost::Message::decode(unknown.raw.unwrap_or_default().as_slice()).expect("a ConfigMap");
    assert_eq!(map.metadata.and_then(|m| m.name).as_deref(), Some("same"));
    assert_eq!(map.data.get("k").map(String::as_str), Some("v"));
}

#[test]
fn tenants_are_root_workspaces_and_back() {
    let f = fixture();
    let root = kubectl_at(&f.server.kubeconfig, "root");
    create_tenant(&f.system, "t-from-tenant");
    let listed = root.ok(&["get", "workspaces", "t-from-tenant", "-o", "jsonpath={.spec.type.path}:{.spec.type.name} {.status.phase} {.spec.URL}"]);
    assert_eq!(listed, format!("root:organization Ready {}/clusters/root:t-from-tenant", f.server.url));
    assert_eq!(get("root-token", "/clusters/root:t-from-tenant/api/v1/namespaces/default").0, 200);

    root.ok_with_stdin(&["create", "-f", "-"], &workspace("t-from-ws", Some(("root", "organization"))).to_string());
    assert_eq!(f.system.ok(&["get", "tenant", "t-from-ws", "-o", "jsonpath={.status.phase}"]), "Active");
    let (_, namespaces) = get("root-token", "/api/v1/tenants/t-from-ws/namespaces");
    assert_eq!(list_names(&namespaces), ["default", "kube-public", "kube-system"], "Arktos' full path reaches the new tenant");
    let admin = Kubectl::new(&certificate_kubeconfig(&f.server, "t-from-ws", "admin", &[]));
    assert_eq!(admin.ok(&["get", "namespaces", "-o", "name"]), "namespace/default\nnamespace/kube-public\nnamespace/kube-system\n", "short paths");
    let tenants = f.system.ok(&["get", "tenants", "-o", "name"]);
    assert!(tenants.contains("tenant/t-from-ws\n") && tenants.contains("tenant/t-from-tenant\n"), "{tenants}");

    root.ok(&["delete", "workspace", "t-from-tenant", "--wait=false"]);
    f.system.ok(&["delete", "tenant", "t-from-ws", "--wait=false"]);
    for name in ["t-from-tenant", "t-from-ws"] {
        let gone = eventually(TIMEOUT, || {
            get("root-token", &format!("/api/v1/tenants/{name}")).0 == 404 && get("root-token", &format!("{}/{name}", workspaces_of("root"))).0 == 404
        });
        assert!(gone, "deleting either view of {name} removes both");
    }
    assert_eq!(get("root-token", "/clusters/root:t-from-ws/api/v1/namespaces").0, 404);
}

#[test]
fn built_in_types_keep_their_parents_and_children() {
    let _ = fixture();
    let refused = |token: &str, parent: &str, name: &str, kind: &str, needle: &str| {
        let answer = post(token, &workspaces_of(parent), &workspace(name, Some(("root", kind))));
        assert_status(&answer, 403, needle, &format!("{kind} under {parent}"));
        assert_eq!(get("root-token", &format!("{}/{name}", workspaces_of(parent))).0, 404, "no {name} is left behind");
    };
    refused("root-token", "root", "bt-team", "team", "does not allow parents");
    refused("root-token", "root", "bt-home", "home", "does not allow parents");
    refused("a-token", "root:t-a", "bt-org", "organization", "does not allow parents");
    refused("root-token", "root:t-a", "bt-bucket", "homebucket", "does not allow parents");
    refused("root-token", "root:t-a", "bt-root", "root", "does not allow parents");
    refused("a-token", "root:t-a", "bt-root", "root", "unable to use workspace type root:root: missing verb='use' permission on workspacetype");
    create_workspace("a-token", "root:t-a", "bt-uni", Some(("root", "universal")));
    refused("a-token", "root:t-a:bt-uni", "bt-team", "team", "does not allow parents");
    refused("a-token", "root:t-a:bt-uni", "bt-org", "organization", "does not allow parents");
    create_workspace("root-token", "root:t-a", "bt-homes", Some(("root", "homeroot")));
    refused("root-token", "root:t-a:bt-homes", "bt-uni", "universal", "does not allow children");
    refused("root-token", "root:t-a:bt-uni", "bt-deep-homes", "homeroot", "allowed only in root or a tenant's workspace");

    // No type: the parent type's default child, filled into the create response with its path.
    let (code, in_org) = post("a-token", &workspaces_of("root:t-a"), &workspace("bt-default", None));
    assert_eq!((code, &in_org["spec"]["type"]), (201, &json!({"name": "universal", "path": "root"})), "{in_org}");
    let (code, in_root) = post("root-token", &workspaces_of("root"), &workspace("t-bt-default", None));
    assert_eq!((code, &in_root["spec"]["type"]), (201, &json!({"name": "organization", "path": "root"})), "{in_root}");
    assert_eq!(call(Http::One, "root-token", "DELETE", "/api/v1/tenants/t-bt-default", None).0, 200);
}

/// An admin-defined type in t-a's workspace: `extend.with`, limits both ways (inherited through `extend`),
/// `defaultChildWorkspaceType`, the `use` verb, and chains that do not resolve refused when written.
#[test]
fn admin_defined_types_extend_limit_default_and_need_use() {
    let f = fixture();
    let admin = kubectl_at(&certificate_kubeconfig(&f.server, "t-a", "admin", &[]), "root:t-a");
    let types = "apiVersion: tenancy.kcp.io/v1alpha1
kind: WorkspaceType
metadata: {name: ty-analytics}
spec:
  extend: {with: [{name: universal, path: root}]}
  limitAllowedParents: {types: [{name: organization, path: root}]}
  defaultChildWorkspaceType: {name: ty-leaf, path: root:t-a}
---
apiVersion: tenancy.kcp.io/v1alpha1
kind: WorkspaceType
metadata: {name: ty-leaf}
spec:
  extend: {with: [{name: universal, path: root}]}
  limitAllowedParents: {types: [{name: ty-analytics, path: root:t-a}, {name: ty-picky, path: root:t-a}]}
---
apiVersion: tenancy.kcp.io/v1alpha1
kind: WorkspaceType
metadata: {name: ty-picky}
spec:
  limitAllowedChildren: {types: [{name: ty-leaf, path: root:t-a}]}
---
apiVersion: tenancy.kcp.io/v1alpha1
kind: WorkspaceType
metadata: {name: ty-derived}
spec:
  extend: {with: [{name: ty-leaf}]}
";
    admin.ok_with_stdin(&["apply", "-f", "-"], types);

    let analytics = create_workspace("a-token", "root:t-a", "ty-a", Some(("", "ty-analytics")));
    assert_eq!(analytics["spec"]["type"], json!({"name": "ty-analytics", "path": "root:t-a"}), "the path is resolved: {analytics}");
    let (code, child) = post("a-token", &workspaces_of("root:t-a:ty-a"), &workspace("child", None));
    assert_eq!((code, &child["spec"]["type"]), (201, &json!({"name": "ty-leaf", "path": "root:t-a"})), "defaultChildWorkspaceType: {child}");
    wait_ready("a-token", "root:t-a:ty-a", "child");

    create_workspace("a-token", "root:t-a", "ty-team", Some(("root", "team")));
    let parents = post("a-token", &workspaces_of("root:t-a:ty-team"), &workspace("x", Some(("root:t-a", "ty-analytics"))));
    assert_status(&parents, 403, "workspace type root:t-a:ty-analytics does not allow parents of type root:team", "analytics under a team");
    let leaf_in_org = post("a-token", &workspaces_of("root:t-a"), &workspace("x", Some(("root:t-a", "ty-leaf"))));
    assert_status(&leaf_in_org, 403, "does not allow parents", "a leaf under the organization");
    create_workspace("a-token", "root:t-a", "ty-p", Some(("root:t-a", "ty-picky")));
    let children = post("a-token", &workspaces_of("root:t-a:ty-p"), &workspace("x", Some(("root", "universal"))));
    assert_status(&children, 403, "workspace type root:t-a:ty-picky does not allow children of type root:universal", "picky parent");
    create_workspace("a-token", "root:t-a:ty-p", "leaf", Some(("root:t-a", "ty-leaf")));
    create_workspace("a-token", "root:t-a:ty-p", "derived", Some(("root:t-a", "ty-derived")));
    let derived_in_org = post("a-token", &workspaces_of("root:t-a"), &workspace("x", Some(("root:t-a", "ty-derived"))));
    assert_status(&derived_in_org, 403, "does not allow parents", "an extending type inherits its base's parents");

    // `use`: carol may create workspaces but not use ty-analytics until granted; universal is everyone's.
    admin.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ty-maker}
rules: [{apiGroups: [tenancy.kcp.io], resources: [workspaces], verbs: [create, get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ty-carol-maker}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ty-maker}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}]
");
    let body = workspace("ty-carol", Some(("root:t-a", "ty-analytics")));
    let mut refused = (0, Value::Null);
    assert!(eventually(TIMEOUT, || {
        refused = post("carol-token", &workspaces_of("root:t-a"), &body);
        status_message(&refused).contains("unable to use")
    }), "{refused:?}");
    assert_status(&refused, 403, "unable to use workspace type root:t-a:ty-analytics: missing verb='use' permission on workspacetype", "no use");
    assert_eq!(get("a-token", &format!("{}/ty-carol", workspaces_of("root:t-a"))).0, 404, "nothing half-made");
    create_workspace("carol-token", "root:t-a", "ty-carol-uni", Some(("root", "universal")));
    admin.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ty-use-analytics}
rules: [{apiGroups: [tenancy.kcp.io], resources: [workspacetypes], resourceNames: [ty-analytics], verbs: [use]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ty-carol-use}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ty-use-analytics}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}]
");
    assert!(eventually(TIMEOUT, || post("carol-token", &workspaces_of("root:t-a"), &body).0 == 201), "use granted");
    wait_ready("carol-token", "root:t-a", "ty-carol");

    // Chains that do not resolve are refused when written: a missing base, a cycle made by an update.
    let missing = admin.fails_with_stdin(&["apply", "-f", "-"],
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata: {name: ty-orphan}\nspec: {extend: {with: [{name: ty-missing}]}}\n");
    assert!(missing.contains("The WorkspaceType \"ty-orphan\" is invalid: spec.extend.with") && missing.contains("not found"), "{missing}");
    let cycle = admin.fails_with_stdin(&["apply", "-f", "-"],
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata: {name: ty-leaf}\nspec: {extend: {with: [{name: ty-derived}]}}\n");
    assert!(cycle.contains("The WorkspaceType \"ty-leaf\" is invalid: spec.extend.with") && cycle.contains("cycle"), "{cycle}");
    let reserved = admin.fails_with_stdin(&["apply", "-f", "-"], "apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata: {name: any}\nspec: {}\n");
    assert!(reserved.contains("\"any\" is a reserved name"), "{reserved}");
}

#[test]
fn a_new_workspace_is_ready_with_its_logical_cluster_and_its_crd_policy_switches() {
    let f = fixture();
    let admin_kubeconfig = certificate_kubeconfig(&f.server, "t-a", "admin", &[]);
    let parent = kubectl_at(&admin_kubeconfig, "root:t-a");
    parent.ok_with_stdin(&["create", "-f", "-"], &workspace("ph-ws", Some(("root", "universal"))).to_string());
    parent.ok(&["wait", "--for=jsonpath={.status.phase}=Ready", "workspace/ph-ws", "--timeout=20s"]);
    let cluster = cluster_of("root:t-a", "ph-ws");
    let (_, ws) = get("a-token", &format!("{}/ph-ws", workspaces_of("root:t-a")));
    assert_eq!(ws["metadata"]["finalizers"], json!(["core.kcp.io/logicalcluster"]), "{ws}");

    let inside = kubectl_at(&admin_kubeconfig, "root:t-a:ph-ws");
    let logical_cluster: Value = serde_json::from_str(&inside.ok(&["get", "logicalcluster", "cluster", "-o", "json"])).expect("json");
    let annotations = &logical_cluster["metadata"]["annotations"];
    assert_eq!((annotations["kcp.io/path"].as_str(), annotations["kcp.io/cluster"].as_str()), (Some("root:t-a:ph-ws"), Some(cluster.as_str())));
    assert_eq!(logical_cluster["spec"]["crdPolicy"], "LocalCRDFirst", "{logical_cluster}");
    assert_eq!(logical_cluster["status"]["phase"], "Ready", "{logical_cluster}");
    assert_eq!(logical_cluster["spec"]["owner"]["name"], "ph-ws", "{logical_cluster}");

    // A system CRD and the workspace's own CRD of one name: the workspace's policy picks, as in a tenant space.
    let crd = |categories: &str| format!("apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: gizmos.ws.example.com}}
spec:
  group: ws.example.com
  scope: Namespaced
  names: {{plural: gizmos, kind: Gizmo, categories: [{categories}]}}
  versions: [{{name: v1, served: true, storage: true, schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}}}]
");
    f.system.ok_with_stdin(&["apply", "-f", "-"], &crd("system-made"));
    inside.ok_with_stdin(&["apply", "-f", "-"], &crd("own"));
    let served = || {
        let (_, group) = get("a-token", "/clusters/root:t-a:ph-ws/apis/ws.example.com/v1");
        group["resources"].as_array().into_iter().flatten().find(|r| r["name"] == "gizmos").map(|r| r["categories"][0].clone())
    };
    assert!(eventually(TIMEOUT, || served() == Some(json!("own"))), "LocalCRDFirst: {:?}", served());
    for (policy, expected) in [("SystemCRDFirst", "system-made"), ("NeverUseSystemCRDUnlessForced", "own"), ("LocalCRDFirst", "own")] {
        inside.ok(&["patch", "logicalcluster", "cluster", "--type", "merge", "-p", &format!("{{\"spec\":{{\"crdPolicy\":\"{policy}\"}}}}")]);
        assert_eq!(served(), Some(json!(expected)), "{policy}");
    }
    let refused = inside.fails(&["patch", "logicalcluster", "cluster", "--type", "merge", "-p", r#"{"spec":{"crdPolicy":"Sometimes"}}"#]);
    assert!(refused.contains("spec.crdPolicy: Unsupported value: \"Sometimes\""), "{refused}");
}

/// The workspace controller completes a creation cut short (as by a crash between its steps) by what the
/// Workspace's phase says: one still `Scheduling` gets whatever of its logical cluster is missing, one that was
/// already `Initializing` only moves on, and what was removed from it stays removed.
#[test]
fn a_creation_cut_short_is_completed_as_far_as_its_phase_says() {
    let _ = fixture();
    for (name, phase, made_again) in [("cut-scheduling", "Scheduling", true), ("cut-initializing", "Initializing", false)] {
        create_workspace("a-token", "root:t-a", name, Some(("root", "universal")));
        let binding = format!("/clusters/root:t-a:{name}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/workspace-admin");
        let (code, body) = call(Http::One, "root-token", "DELETE", &binding, None);
        assert_eq!(code, 200, "{body}");
        let path = format!("{}/{name}", workspaces_of("root:t-a"));
        let (_, mut cut) = get("root-token", &path);
        cut["status"]["phase"] = json!(phase);
        let (code, body) = call(Http::One, "root-token", "PUT", &format!("{path}/status"), Some(&cut));
        assert_eq!((code, body["status"]["phase"].as_str()), (200, Some(phase)), "{body}");
        assert!(eventually(TIMEOUT, || get("a-token", &path).1["status"]["phase"] == "Ready"), "{name} is completed");
        let (code, body) = get("root-token", &binding);
        assert_eq!(code == 200, made_again, "{name}'s workspace-admin binding: {code} {body}");
    }
}

/// kcp's phases: Scheduling → Initializing → Ready, the LogicalCluster's mirroring the Workspace's.
#[test]
fn a_new_workspace_passes_through_initializing() {
    let _ = fixture();
    let (_, list) = get("a-token", &workspaces_of("root:t-a"));
    let from = list["metadata"]["resourceVersion"].as_str().expect("a list resourceVersion").to_owned();
    create_workspace("a-token", "root:t-a", "in-ws", Some(("root", "universal")));
    let phases = |path: &str, name: &str| {
        let (_, events) = get("a-token", &format!("{path}?watch=1&resourceVersion={from}&timeoutSeconds=1"));
        let text = events.as_str().map(str::to_owned).unwrap_or_else(|| events.to_string());
        let mut phases: Vec<String> = Vec::new();
        for event in text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()) {
            let object = &event["object"];
            if object["metadata"]["name"] == name {
                let phase = object["status"]["phase"].as_str().unwrap_or_default().to_owned();
                if phases.last() != Some(&phase) {
                    phases.push(phase);
                }
            }
        }
        phases
    };
    assert_eq!(phases(&workspaces_of("root:t-a"), "in-ws"), ["Scheduling", "Initializing", "Ready"], "the Workspace's phases");
    let mirrored = phases("/clusters/root:t-a:in-ws/apis/core.kcp.io/v1alpha1/logicalclusters", "cluster");
    assert!(mirrored.windows(2).any(|w| w == ["Initializing", "Ready"]), "the LogicalCluster's phases: {mirrored:?}");

    // kcp's label follows the phase, so a label selector finds Ready workspaces (root's too: tenants).
    let (_, ready) = get("a-token", &format!("{}?labelSelector=tenancy.kcp.io/phase%3DReady", workspaces_of("root:t-a")));
    assert!(list_names(&ready).contains(&"in-ws".to_owned()), "{ready}");
    let (_, initializing) = get("a-token", &format!("{}?labelSelector=tenancy.kcp.io/phase%3DInitializing", workspaces_of("root:t-a")));
    assert!(!list_names(&initializing).contains(&"in-ws".to_owned()), "{initializing}");
    let (_, tenant) = get("root-token", &format!("/clusters/root/{WORKSPACES}/t-a"));
    assert_eq!(tenant["metadata"]["labels"]["tenancy.kcp.io/phase"], "Ready", "{tenant}");
    let (_, stored) = get("root-token", "/api/v1/tenants/t-a");
    assert!(stored["metadata"]["labels"].get("tenancy.kcp.io/phase").is_none(), "not a Tenant's label: {stored}");
}

/// A deleted workspace holding nothing but what the server made in it goes in one pass: a watch sees its
/// deletion mark, then `DELETED`, with no `Deleting` phase between (that phase shows only while something holds
/// a deletion up: `deleting_a_workspace_deletes_its_subtree_first_and_nothing_else`), and its logical cluster is gone.
#[test]
fn an_empty_workspace_goes_in_one_step() {
    let _ = fixture();
    create_workspace("a-token", "root:t-a", "quick", Some(("root", "universal")));
    let cluster = cluster_of("root:t-a", "quick");
    let (_, list) = get("a-token", &workspaces_of("root:t-a"));
    let from = list["metadata"]["resourceVersion"].as_str().expect("a list resourceVersion").to_owned();
    let (code, deleted) = call(Http::Two, "a-token", "DELETE", &format!("{}/quick", workspaces_of("root:t-a")), None);
    assert_eq!(code, 200, "{deleted}");
    assert!(eventually(TIMEOUT, || get("a-token", &format!("{}/quick", workspaces_of("root:t-a"))).0 == 404), "it goes");
    let (_, events) = get("a-token", &format!("{}?watch=1&resourceVersion={from}&timeoutSeconds=1", workspaces_of("root:t-a")));
    let text = events.as_str().map(str::to_owned).unwrap_or_else(|| events.to_string());
    let seen: Vec<String> = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|event| event["object"]["metadata"]["name"] == "quick")
        .map(|event| format!("{} {}", event["type"].as_str().unwrap_or_default(), event["object"]["status"]["phase"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(seen.last().map(String::as_str), Some("DELETED Ready"), "{seen:?}");
    assert!(!seen.iter().any(|event| event.ends_with("Deleting")), "{seen:?}");
    assert_eq!(get("root-token", &format!("/clusters/{cluster}/api/v1/namespaces")).0, 404, "logical cluster {cluster} is gone");
}

/// What a t-b identity gets for every way into t-a's subtree, and that the answer is the same for what exists and
/// what does not (so nothing is learned).
fn probes(lc: &str, ws: &str) -> Vec<String> {
    vec![
        format!("/clusters/root:t-a:{ws}/api/v1/namespaces/default/configmaps/secret-cm"),
        format!("/clusters/root:t-a:{ws}/api/v1/configmaps"),
        format!("/clusters/root:t-a:{ws}/api/v1/configmaps?watch=1&timeoutSeconds=1"),
        format!("/clusters/root:t-a:{ws}/api"),
        format!("/clusters/root:t-a:{ws}/apis"),
        format!("/clusters/root:t-a:{ws}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"),
        format!("/clusters/root:t-a:{ws}/{WORKSPACES}"),
        format!("/clusters/{lc}/api/v1/namespaces/default/configmaps/secret-cm"),
        format!("/clusters/{lc}/api/v1/configmaps?watch=1&timeoutSeconds=1"),
        format!("/clusters/{lc}/apis"),
    ]
}

#[test]
fn a_tenant_b_identity_reaches_nothing_in_tenant_a_subtree_and_learns_nothing() {
    let f = fixture();
    create_workspace("a-token", "root:t-a", "iso-ws", Some(("root", "universal")));
    assert_eq!(post("a-token", "/clusters/root:t-a:iso-ws/api/v1/namespaces/default/configmaps", &configmap("secret-cm", "x")).0, 201);
    let lc = cluster_of("root:t-a", "iso-ws");
    let fake_lc = "zzzzzzzzzzzzzzzz";

    // t-b's service account, with a token that works in t-b.
    let b = Kubectl::new(&certificate_kubeconfig(&f.server, "t-b", "admin", &[]));
    b.ok(&["create", "serviceaccount", "iso-bot", "-n", "default"]);
    b.ok(&["create", "clusterrolebinding", "iso-bot-admin", "--clusterrole", "cluster-admin", "--serviceaccount", "default:iso-bot"]);
    let sa_token = b.ok(&["create", "token", "iso-bot", "-n", "default"]).trim().to_owned();
    assert!(eventually(TIMEOUT, || get(&sa_token, "/api/v1/namespaces/default/configmaps").0 == 200), "the token works in t-b");

    for (who, token) in [("t-b's admin token", "b-token"), ("t-b's service account", sa_token.as_str())] {
        for (real, fake) in probes(&lc, "iso-ws").iter().zip(probes(fake_lc, "iso-nothing")) {
            let (code, body) = get(token, real);
            assert!(code == 403 || code == 404, "{who} GET {real}: {code} {body}");
            let answer = body.to_string();
            assert!(!answer.contains("\"data\""), "{who} GET {real} shows content: {answer}");
            assert!(!answer.contains(&lc) || real.contains(&lc), "{who} GET {real} names the logical cluster: {answer}");
            let (fake_code, fake_body) = get(token, &fake);
            let strip = |text: String| text.replace(&lc, "LC").replace(fake_lc, "LC").replace("iso-nothing", "WS").replace("iso-ws", "WS");
            assert_eq!((code, strip(status_message(&(code, body)))), (fake_code, strip(status_message(&(fake_code, fake_body)))),
                "{who}: {real} and {fake} answer alike");
        }
    }

    // t-b's certificate user through kubectl, and impersonating a t-a identity.
    let path = "/clusters/root:t-a:iso-ws/api/v1/namespaces/default/configmaps/secret-cm";
    for extra in [&[][..], &["--as", "admin", "--as-group", "tenant:t-a"][..], &["--as", "admin"][..]] {
        let args: Vec<&str> = ["get", "--raw", path].into_iter().chain(extra.iter().copied()).collect();
        let refused = b.fails(&args);
        assert!(refused.contains("(Forbidden)") || refused.contains("(NotFound)"), "{extra:?}: {refused}");
        assert!(!refused.contains("\"k\""), "{extra:?}: {refused}");
    }
    let listed = b.fails(&["get", "configmaps", "-A", "--server", &format!("{}/clusters/{lc}", f.server.url)]);
    assert!(listed.contains("(Forbidden)"), "{listed}");
}

/// `system:masters` in a tenant's credentials (here: impersonated by the tenant's admin, which RBAC in its own
/// space allows) is not a system user: it may not point a workspace at another tenant's logical cluster.
#[test]
fn a_tenant_cannot_adopt_another_tenants_logical_cluster_as_system_masters() {
    let f = fixture();
    create_workspace("a-token", "root:t-a", "adopt-target", Some(("root", "universal")));
    assert_eq!(post("a-token", "/clusters/root:t-a:adopt-target/api/v1/namespaces/default/configmaps", &configmap("private", "x")).0, 201);
    let lc = cluster_of("root:t-a", "adopt-target");
    let b = kubectl_at(&certificate_kubeconfig(&f.server, "t-b", "admin", &[]), "root:t-b");
    let mut body = workspace("adopted", Some(("root", "universal")));
    body["spec"]["cluster"] = json!(lc);
    let refused = b.fails_with_stdin(&["create", "-f", "-", "--as", "admin", "--as-group", "system:masters"], &body.to_string());
    assert!(refused.contains("(Forbidden)"), "{refused}");
    assert_eq!(get("b-token", "/clusters/root:t-b:adopted/api/v1/namespaces/default/configmaps/private").0, 404, "t-b reads nothing of t-a");
    assert_eq!(get("a-token", "/clusters/root:t-a:adopt-target/api/v1/namespaces/default/configmaps/private").0, 200, "t-a keeps it");
}

/// Even a system administrator may not give a new workspace a logical cluster that is already another
/// workspace's, or one that is no name at all (422, not 500, and nothing left behind).
#[test]
fn spec_cluster_must_be_a_new_valid_logical_cluster_name() {
    let _ = fixture();
    let mut aliasing = workspace("sc-alias", Some(("root", "universal")));
    aliasing["spec"]["cluster"] = json!("t-b");
    let answer = post("root-token", &workspaces_of("root:t-a"), &aliasing);
    assert!(answer.0 == 409 || answer.0 == 422 || answer.0 == 403, "t-b's space is taken: {answer:?}");
    assert_eq!(get("root-token", &format!("{}/sc-alias", workspaces_of("root:t-a"))).0, 404, "nothing left behind");
    assert_eq!(get("a-token", "/clusters/t-b/api/v1/namespaces").0, 403, "t-a's admin still cannot reach t-b");

    // Nor may a new tenant take a nested workspace's logical cluster name, as a Tenant or as a root Workspace.
    create_workspace("root-token", "root:t-a", "sc-nested", Some(("root", "universal")));
    let nested = cluster_of("root:t-a", "sc-nested");
    let tenant = json!({"apiVersion": "v1", "kind": "Tenant", "metadata": {"name": nested}, "spec": {"storageClusterId": "0"}});
    assert_status(&post("root-token", "/api/v1/tenants", &tenant), 422, "a logical cluster of this name already exists", "a Tenant");
    assert_status(&post("root-token", &workspaces_of("root"), &workspace(&nested, None)), 422, "a logical cluster of this name already exists", "a root Workspace");
    assert_eq!(get("root-token", &format!("/api/v1/tenants/{nested}")).0, 404, "no tenant left behind");

    let mut invalid = workspace("sc-invalid", Some(("root", "universal")));
    invalid["spec"]["cluster"] = json!("Bad/Name");
    let answer = post("root-token", &workspaces_of("root:t-a"), &invalid);
    assert_eq!(answer.0, 422, "{answer:?}");
    assert_eq!(get("root-token", &format!("{}/sc-invalid", workspaces_of("root:t-a"))).0, 404, "nothing left behind");
}

/// A type reference into another tenant's workspace is refused alike whether the type exists or not.
#[test]
fn type_references_into_another_tenant_leak_nothing() {
    let f = fixture();
    let admin = kubectl_at(&certificate_kubeconfig(&f.server, "t-a", "admin", &[]), "root:t-a");
    admin.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata: {name: leak-secret}\nspec: {}\n");
    let existing = post("b-token", &workspaces_of("root:t-b"), &workspace("leak-x", Some(("root:t-a", "leak-secret"))));
    let missing = post("b-token", &workspaces_of("root:t-b"), &workspace("leak-x", Some(("root:t-a", "leak-nothing"))));
    assert_eq!(existing.0, missing.0, "{existing:?} / {missing:?}");
    assert_eq!(status_message(&existing).replace("leak-secret", "T"), status_message(&missing).replace("leak-nothing", "T"));
}

/// kcp's vector (kcp#1583): with the default flags, `kcp-admin`'s home is `root:users:zu:yc:kcp-admin`, made on
/// first access; its owner administers it.
#[test]
fn a_system_users_home_is_made_at_the_bucketed_path_and_is_theirs() {
    let f = fixture();
    let root = format!("{}/clusters/root", f.server.url);
    let kcp_admin = certificate_kubeconfig_with(&f.server, "system", "kcp-admin", &[], Some(&root));
    let raw = Kubectl::new(&kcp_admin);
    let first: Value = serde_json::from_str(&raw.ok(&["get", "--raw", &format!("/clusters/root/{WORKSPACES}/~")])).expect("json");
    assert_eq!(first["spec"]["URL"], format!("{root}:users:zu:yc:kcp-admin"), "{first}");
    assert_eq!(first["spec"]["type"], json!({"name": "home", "path": "root"}), "{first}");
    let again: Value = serde_json::from_str(&raw.ok(&["get", "--raw", &format!("/clusters/root/{WORKSPACES}/~")])).expect("json");
    assert_eq!(first["metadata"]["uid"], again["metadata"]["uid"], "made once");

    let (kubectl, kubeconfig, _dir) = plugin_kubectl(&kcp_admin);
    prints(&kubectl, &["ws", "~", "--short"], "root:users:zu:yc:kcp-admin\n");
    assert_eq!(current_server(&kubeconfig), format!("{root}:users:zu:yc:kcp-admin"));
    let home = Kubectl::new(&kubeconfig);
    assert_eq!(home.ok(&["get", "clusterrolebinding", "workspace-admin", "-o", "jsonpath={.subjects[0].name}"]), "kcp-admin");
    assert_eq!(home.ok(&["auth", "can-i", "create", "configmaps"]), "yes\n", "the home's owner administers it");
    home.ok(&["create", "configmap", "mine"]);
}

/// Issue 45 (security): root's home root `root:users` is no tenant. After a system user's home is made there,
/// `users` is no Tenant, has no tenant administrator, and no credential or impersonation may name it as a tenant;
/// nobody makes a tenant or a root workspace of that name.
#[test]
fn roots_home_root_is_no_tenant_and_no_credential_reaches_it() {
    let f = fixture();
    let (code, home) = get("root-token", &format!("/clusters/root/{WORKSPACES}/~"));
    assert_eq!(code, 200, "{home}");
    assert!(home["spec"]["URL"].as_str().unwrap_or_default().contains("/clusters/root:users:"), "{home}");

    // No Tenant view, over both protocols and with kubectl.
    for http in [Http::One, Http::Two] {
        let (code, tenants) = call(http, "root-token", "GET", "/api/v1/tenants", None);
        assert_eq!(code, 200, "{tenants}");
        assert!(!list_names(&tenants).contains(&"users".to_owned()), "{http:?}: {tenants}");
        let (code, one) = call(http, "root-token", "GET", "/api/v1/tenants/users", None);
        assert_eq!(code, 404, "{http:?}: {one}");
    }
    let names = f.system.ok(&["get", "tenants", "-o", "name"]);
    assert!(!names.lines().any(|l| l == "tenant/users"), "{names}");
    let (code, deleted) = call(Http::One, "root-token", "DELETE", "/api/v1/tenants/users", None);
    assert_eq!(code, 404, "{deleted}");
    // Still root's workspace, of type homeroot, with no tenant administrator in it.
    let (code, ws) = get("root-token", &format!("{}/users", workspaces_of("root")));
    assert_eq!((code, &ws["spec"]["type"]["name"]), (200, &json!("homeroot")), "{ws}");
    for what in ["clusterroles/admin-role", "clusterrolebindings/admin-role-binding"] {
        let (code, found) = get("root-token", &format!("/clusters/root:users/apis/rbac.authorization.k8s.io/v1/{what}"));
        assert_eq!(code, 404, "{what} in root:users: {found}");
    }

    // `users` is reserved: as a new Tenant, as a root workspace of another type, in a minted certificate.
    let tenant = json!({"apiVersion": "v1", "kind": "Tenant", "metadata": {"name": "users"}});
    let (code, refused) = post("root-token", "/api/v1/tenants", &tenant);
    assert_eq!(code, 422, "{refused}");
    let (code, refused) = post("root-token", &workspaces_of("root"), &workspace("users", Some(("root", "organization"))));
    assert!(code == 422 || code == 409, "{refused}");
    let minted = std::process::Command::new(kspaces_tests::kspaces_binary())
        .args(["kubeconfig", "--data-dir"]).arg(f.server.data_dir.path()).args(["--tenant", "users", "--user", "admin"])
        .output().expect("kspaces kubeconfig");
    assert!(!minted.status.success(), "a certificate for tenant users was minted");
    assert!(String::from_utf8_lossy(&minted.stderr).contains("reserved"), "{}", String::from_utf8_lossy(&minted.stderr));

    // A token naming tenant `users` is refused everywhere, and so is impersonating into it.
    for path in ["/api/v1/namespaces", "/clusters/root:users/apis/tenancy.kcp.io/v1alpha1/workspaces", "/api/v1/tenants/users/namespaces"] {
        for http in [Http::One, Http::Two] {
            let (code, answer) = call(http, "users-token", "GET", path, None);
            assert_eq!(code, 401, "{http:?} {path}: {answer}");
        }
    }
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "delete", "group": "tenancy.kcp.io", "resource": "workspaces"}}});
    let (code, answer) = post("users-token", "/clusters/root:users/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", &review);
    assert_eq!(code, 401, "can-i as tenant users: {answer}");
    let impersonating = Command::new("curl")
        .args(["-sk", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer root-token"])
        .args(["-H", "Impersonate-User: admin", "-H", "Impersonate-Group: tenant:users"])
        .arg(format!("{}/clusters/root:users/api/v1/namespaces", f.server.url))
        .output().expect("curl");
    assert_eq!(String::from_utf8_lossy(&impersonating.stdout), "403", "impersonating tenant users");
    // A tenant's users reach nothing there.
    let (code, answer) = get("a-token", "/clusters/root:users/api/v1/namespaces");
    assert_eq!(code, 403, "{answer}");
}

#[test]
fn a_tenant_users_home_is_in_its_tenant_and_nobody_elses() {
    let f = fixture();
    let dave = Kubectl::new(&certificate_kubeconfig(&f.server, "t-a", "dave", &[]));
    let dave_home: Value = serde_json::from_str(&dave.ok(&["get", "--raw", &format!("/clusters/root/{WORKSPACES}/~")])).expect("json");
    let url = dave_home["spec"]["URL"].as_str().unwrap_or_default().to_owned();
    let path = url.rsplit_once("/clusters/").map(|(_, p)| p.to_owned()).unwrap_or_default();
    let segments: Vec<&str> = path.split(':').collect();
    assert_eq!((segments.len(), &segments[..3], segments[5]), (6, &["root", "t-a", "users"][..], "dave"), "{url}");
    let in_home = Kubectl::new(&certificate_kubeconfig_with(&f.server, "t-a", "dave", &[], Some(&url)));
    in_home.ok(&["create", "configmap", "daves"]);
    assert_eq!(in_home.ok(&["auth", "can-i", "delete", "clusterrolebindings"]), "yes\n", "the owner administers the home");

    let erin = Kubectl::new(&certificate_kubeconfig(&f.server, "t-a", "erin", &[]));
    let erin_home: Value = serde_json::from_str(&erin.ok(&["get", "--raw", &format!("/clusters/root:t-a/{WORKSPACES}/~")])).expect("json");
    let erins = erin_home["spec"]["URL"].as_str().unwrap_or_default();
    assert_ne!(erins, url);
    let into_erins = Kubectl::new(&certificate_kubeconfig_with(&f.server, "t-a", "dave", &[], Some(erins))).fails(&["get", "configmaps"]);
    assert!(into_erins.contains("(Forbidden)"), "dave in erin's home: {into_erins}");
    let from_b = Kubectl::new(&certificate_kubeconfig_with(&f.server, "t-b", "dave", &[], Some(&url))).fails(&["get", "configmaps"]);
    assert!(from_b.contains("(Forbidden)"), "t-b's dave in t-a's dave's home: {from_b}");
}

#[test]
fn invalid_home_bucket_settings_are_refused_at_startup() {
    let cases: [&[&str]; 5] = [
        &["--home-workspaces-bucket-levels", "0"],
        &["--home-workspaces-bucket-size", "5"],
        &["--home-workspaces-bucket-size", "2", "--home-workspaces-bucket-levels", "3"],
        &["--home-workspaces-bucket-size", "1", "--home-workspaces-bucket-levels", "2"],
        &["--home-workspaces-bucket-size", "3", "--home-workspaces-bucket-levels", "1"],
    ];
    for flags in cases {
        let dir = tempfile::tempdir().expect("temp dir");
        let stderr = kspaces_tests::refused_start(dir.path(), flags);
        assert!(stderr.contains("is not a valid configuration") && stderr.contains("size 2 with 2 levels"), "{flags:?}: {stderr}");
    }
}

#[test]
fn home_creator_groups_and_bucket_settings_apply() {
    let server = Server::start_with(&[
        "--home-workspaces-bucket-size", "1", "--home-workspaces-bucket-levels", "3",
        "--home-workspaces-home-creator-groups", "homers", "--home-workspaces-root-prefix", "root:homes",
    ]);
    let homer = Kubectl::new(&certificate_kubeconfig(&server, "system", "homer", &["homers"]));
    let home: Value = serde_json::from_str(&homer.ok(&["get", "--raw", &format!("/clusters/root/{WORKSPACES}/~")])).expect("json");
    let url = home["spec"]["URL"].as_str().unwrap_or_default();
    let path = url.rsplit_once("/clusters/").map(|(_, p)| p).unwrap_or_default();
    let segments: Vec<&str> = path.split(':').collect();
    assert_eq!((segments.len(), &segments[..2], segments[5]), (6, &["root", "homes"][..], "homer"), "{url}");
    assert!(segments[2..5].iter().all(|b| b.len() == 1), "three one-letter buckets: {url}");
    let outsider = Kubectl::new(&certificate_kubeconfig(&server, "system", "otto", &[]));
    let refused = outsider.fails(&["get", "--raw", &format!("/clusters/root/{WORKSPACES}/~")]);
    assert!(refused.contains("(Forbidden)"), "only the home-creator groups get a home: {refused}");
}

#[test]
fn system_workspaces_hold_leases_for_system_users_only() {
    let _ = fixture();
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "sys-lease"}, "spec": {"holderIdentity": "kspaces"}});
    let leases = "/clusters/system:admin/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
    let created = post("root-token", leases, &lease);
    assert_eq!(created.0, 201, "{}", created.1);
    let (code, read) = get("root-token", &format!("{leases}/sys-lease"));
    assert_eq!((code, &read["spec"]["holderIdentity"]), (200, &json!("kspaces")), "{read}");
    let (_, logical_cluster) = get("root-token", "/clusters/system:admin/apis/core.kcp.io/v1alpha1/logicalclusters/cluster");
    assert_eq!(logical_cluster["metadata"]["annotations"]["kcp.io/path"], "system:admin", "{logical_cluster}");
    for token in ["a-token", "b-token", "carol-token"] {
        for path in [leases.to_owned(), format!("{leases}/sys-lease"), "/clusters/system:admin/api".to_owned(), "/clusters/system:other/api/v1/namespaces".to_owned()] {
            let (code, body) = get(token, &path);
            assert!(code == 403 || code == 404, "{token} GET {path}: {code} {body}");
        }
        let (code, body) = post(token, leases, &lease);
        assert!(code == 403 || code == 404, "{token} POST a lease: {code} {body}");
    }

    // A service account of system:admin (a leader-election client's) authenticates there, as itself.
    let accounts = "/clusters/system:admin/api/v1/namespaces/kube-system/serviceaccounts";
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "lease-bot"}});
    assert_eq!(post("root-token", accounts, &account).0, 201);
    let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
    let (code, issued) = post("root-token", &format!("{accounts}/lease-bot/token"), &request);
    assert_eq!(code, 201, "{issued}");
    let token = issued["status"]["token"].as_str().expect("a token").to_owned();
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let (code, me) = post(&token, "/clusters/system:admin/apis/authentication.k8s.io/v1/selfsubjectreviews", &review);
    assert_eq!((code, &me["status"]["userInfo"]["username"]), (201, &json!("system:serviceaccount:kube-system:lease-bot")), "{me}");
}

#[test]
fn deleting_a_workspace_deletes_its_subtree_first_and_nothing_else() {
    let _ = fixture();
    create_workspace("a-token", "root:t-a", "d-top", Some(("root", "universal")));
    create_workspace("a-token", "root:t-a:d-top", "child", Some(("root", "universal")));
    create_workspace("a-token", "root:t-a:d-top:child", "grand", Some(("root", "universal")));
    create_workspace("a-token", "root:t-a", "d-sibling", Some(("root", "universal")));
    let clusters = [cluster_of("root:t-a", "d-top"), cluster_of("root:t-a:d-top", "child"), cluster_of("root:t-a:d-top:child", "grand")];
    for path in ["root:t-a:d-top", "root:t-a:d-top:child", "root:t-a:d-top:child:grand", "root:t-a:d-sibling", "root:t-a"] {
        assert_eq!(post("a-token", &format!("/clusters/{path}/api/v1/namespaces/default/configmaps"), &configmap("d-content", path)).0, 201);
    }
    let mut held = configmap("d-held", "x");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    let grand_configmaps = "/clusters/root:t-a:d-top:child:grand/api/v1/namespaces/default/configmaps";
    assert_eq!(post("a-token", grand_configmaps, &held).0, 201);

    let (code, deleted) = call(Http::One, "a-token", "DELETE", &format!("{}/d-top", workspaces_of("root:t-a")), None);
    assert_eq!(code, 200, "{deleted}");
    let top = format!("{}/d-top", workspaces_of("root:t-a"));
    let seen = wait_phase("a-token", &top, "Deleting");
    assert_eq!(seen["metadata"]["finalizers"], json!(["core.kcp.io/logicalcluster"]), "held by the finalizer: {seen}");
    assert!(seen["metadata"]["deletionTimestamp"].is_string());
    assert!(eventually(TIMEOUT, || get("a-token", &format!("{}/child", workspaces_of("root:t-a:d-top"))).1["status"]["phase"] == "Deleting"),
        "the child is deleted as content");
    let late = post("a-token", &workspaces_of("root:t-a:d-top"), &workspace("late", Some(("root", "universal"))));
    assert_status(&late, 403, "being deleted", "a workspace in a workspace being deleted");
    assert_eq!(get("a-token", &format!("{}/late", workspaces_of("root:t-a:d-top"))).0, 404);
    // The held ConfigMap keeps the tree: still there after a while, then released.
    assert!(!eventually(Duration::from_secs(1), || get("a-token", &top).0 == 404), "the top waits for its content");
    let (code, released) = merge_patch("a-token", &format!("{grand_configmaps}/d-held"), &json!({"metadata": {"finalizers": null}}));
    assert_eq!(code, 200, "{released}");
    assert!(eventually(TIMEOUT, || get("a-token", &top).0 == 404), "the top goes once its subtree is empty");
    for cluster in &clusters {
        assert_eq!(get("root-token", &format!("/clusters/{cluster}/api/v1/namespaces")).0, 404, "logical cluster {cluster} is gone");
    }
    for path in ["root:t-a:d-sibling", "root:t-a"] {
        let (code, kept) = get("a-token", &format!("/clusters/{path}/api/v1/namespaces/default/configmaps/d-content"));
        assert_eq!((code, &kept["data"]["k"]), (200, &json!(path)), "{path} is untouched");
    }
    assert_eq!(get("a-token", &format!("{}/d-sibling", workspaces_of("root:t-a"))).1["status"]["phase"], "Ready");
}

/// Every case is tried (a server that survives a bad one must still answer the next); the failures are listed together.
#[test]
fn bad_input_gets_a_status_and_leaves_nothing_behind() {
    let _ = fixture();
    let parent = workspaces_of("root:t-a");
    let mut problems: Vec<String> = Vec::new();
    let mut expect = |what: &str, answer: &(u16, Value), code: u16, needle: &str, name: &str| {
        let reason_ok = answer.1["kind"] == "Status" && status_message(answer).contains(needle);
        if answer.0 != code || !reason_ok {
            problems.push(format!("{what}: expected a {code} Status with {needle:?}, got {} {}", answer.0, answer.1));
        }
        if !name.is_empty() && get("root-token", &format!("{parent}/{name}")).0 != 404 {
            problems.push(format!("{what}: workspace {name:?} was left behind"));
        }
    };
    let invalid: Vec<(&str, Value)> = vec![
        ("Bad_Name", workspace("Bad_Name", None)),
        ("a dotted name", workspace("bi.dotted", None)),
        ("64 characters", workspace(&"a".repeat(64), None)),
        ("any", workspace("any", None)),
        ("system", workspace("system", None)),
        ("all", workspace("all", None)),
        ("a type path", workspace("bi-path", Some(("root::x", "universal")))),
        ("a type name", workspace("bi-name", Some(("root", "Universal")))),
        ("a string spec", json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "bi-spec"}, "spec": "x"})),
        ("a string type", json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "bi-type"}, "spec": {"type": "universal"}})),
    ];
    for (what, body) in &invalid {
        let name = body["metadata"]["name"].as_str().unwrap_or_default();
        expect(what, &post("a-token", &parent, body), 422, "is invalid", name);
    }
    let unknown = post("a-token", &parent, &workspace("bi-unknown", Some(("", "no-such-type"))));
    expect("an unknown type", &unknown, 403, "not found", "bi-unknown");
    let missing = post("a-token", &parent, &workspace("bi-missing", Some(("root:t-a:nowhere", "universal"))));
    expect("a type in a missing workspace", &missing, 403, "not found", "bi-missing");
    for (field, value) in [("cluster", "bi-mine"), ("URL", "https://elsewhere.example.com/clusters/root:x")] {
        let mut body = workspace("bi-system-field", Some(("root", "universal")));
        body["spec"][field] = json!(value);
        expect(&format!("spec.{field} by a tenant admin"), &post("a-token", &parent, &body), 403, &format!("spec.{field}"), "bi-system-field");
    }
    for path in ["root::x", ":root", "root:t-a:", "root:", "ROOT", "root:t-a:Bad", "x..y", "*"] {
        for token in ["a-token", "root-token"] {
            let (code, body) = get(token, &format!("/clusters/{path}/api/v1/namespaces"));
            let fine = if token == "root-token" && path == "*" { code == 200 } else { matches!(code, 400 | 403 | 404) && body["kind"] == "Status" };
            if !fine {
                problems.push(format!("{token} GET /clusters/{path}: {code} {body}"));
            }
        }
    }
    if get("a-token", "/clusters/root:t-a/api/v1/namespaces").0 != 200 {
        problems.push("the server stopped answering".to_owned());
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[tokio::test]
async fn kube_rs_lists_creates_watches_and_patches_in_a_nested_workspace() -> TestResult {
    let f = fixture();
    create_workspace("a-token", "root:t-a", "kr-team", Some(("root", "team")));
    create_workspace("a-token", "root:t-a:kr-team", "kr-dev", None);
    let url = format!("{}/clusters/root:t-a:kr-team:kr-dev", f.server.url);
    let client = kube_client(&certificate_kubeconfig_with(&f.server, "t-a", "admin", &[], Some(&url))).await?;

    let namespaces: Vec<String> = Api::<Namespace>::all(client.clone()).list(&ListParams::default()).await?.iter().map(|n| n.name_any()).collect();
    assert_eq!(namespaces, ["default", "kube-system"]);
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    // The namespace's kube-root-ca.crt (the server's, as in kube) aside.
    let mut events = watcher(configmaps.clone(), watcher::Config::default()).applied_objects()
        .try_filter(|map| std::future::ready(map.name_any() != "kube-root-ca.crt")).boxed();
    let map = ConfigMap { metadata: ObjectMeta { name: Some("kr".into()), ..ObjectMeta::default() }, ..ConfigMap::default() };
    configmaps.create(&PostParams::default(), &map).await?;
    let seen = tokio::time::timeout(TIMEOUT, events.try_next()).await??.ok_or("the watcher ended")?;
    assert_eq!(seen.name_any(), "kr");
    let patched = configmaps.patch("kr", &PatchParams::default(), &Patch::Merge(json!({"data": {"k": "patched"}}))).await?;
    assert_eq!(patched.data.and_then(|d| d.get("k").cloned()).as_deref(), Some("patched"));
    let next = tokio::time::timeout(TIMEOUT, events.try_next()).await??.ok_or("the watcher ended")?;
    assert_eq!(next.data.and_then(|d| d.get("k").cloned()).as_deref(), Some("patched"), "the watch saw the patch");

    // Workspaces themselves, as a kube-rs controller of kcp's API reads and writes them.
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("tenancy.kcp.io", "v1alpha1", "Workspace"));
    let workspaces: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let mut child = DynamicObject::new("kr-child", &resource);
    child.data = json!({"spec": {"type": {"name": "universal", "path": "root"}}});
    workspaces.create(&PostParams::default(), &child).await?;
    let ready = async {
        loop {
            let ws = workspaces.get("kr-child").await?;
            if ws.data["status"]["phase"] == "Ready" {
                return Ok::<_, kube::Error>(ws);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let ws = tokio::time::timeout(TIMEOUT, ready).await??;
    assert_eq!(ws.data["spec"]["URL"], format!("{url}:kr-child"));
    let listed: Vec<String> = workspaces.list(&ListParams::default()).await?.iter().map(|w| w.name_any()).collect();
    assert_eq!(listed, ["kr-child"]);
    Ok(())
}

/// A merge patch as `token`'s user: the status and the body.
fn merge_patch(token: &str, path: &str, patch: &Value) -> (u16, Value) {
    let output = std::process::Command::new("curl")
        .args(["-sk", "-w", "\n%{http_code}", "-X", "PATCH", "-H", &format!("Authorization: Bearer {token}")])
        .args(["-H", "Content-Type: application/merge-patch+json", "--data-binary", &patch.to_string()])
        .arg(format!("{}{path}", fixture().server.url))
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), serde_json::from_str(body).unwrap_or(Value::String(body.to_owned())))
}

/// Issue 17's lifecycle without its virtual workspaces: a type with `initializer` and `terminator` (inherited by a
/// type extending it) holds new workspaces `Initializing` and deleted ones `Terminating` until the entry
/// `<cluster>:<type>` is removed from the LogicalCluster's status by a caller with the verb `initialize` or
/// `terminate` on the type; the lists only shrink and the phase is the system's.
#[test]
fn initializers_and_terminators_hold_a_workspace_until_removed() {
    let f = fixture();
    let admin = kubectl_at(&certificate_kubeconfig(&f.server, "t-a", "admin", &[]), "root:t-a");
    admin.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata: {name: lc-guarded}\n\
        spec: {initializer: true, terminator: true, extend: {with: [{name: universal, path: root}]}}\n---\n\
        apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata: {name: lc-derived}\nspec: {extend: {with: [{name: lc-guarded, path: root:t-a}]}}\n");
    let entry = "t-a:lc-guarded";
    for (name, kind) in [("lc-held", "lc-guarded"), ("lc-heir", "lc-derived")] {
        let (code, created) = post("a-token", &workspaces_of("root:t-a"), &workspace(name, Some(("root:t-a", kind))));
        assert_eq!(code, 201, "{created}");
        let path = format!("{}/{name}", workspaces_of("root:t-a"));
        let seen = wait_phase("a-token", &path, "Initializing");
        assert_eq!((&seen["status"]["initializers"], &seen["status"]["terminators"]), (&json!([entry]), &json!([entry])), "{name}: {seen}");
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(get("a-token", &format!("{}/lc-held", workspaces_of("root:t-a"))).1["status"]["phase"], "Initializing", "it waits");

    let base = "/clusters/root:t-a:lc-held";
    let status = format!("{base}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster/status");
    let (_, logical_cluster) = get("a-token", &format!("{base}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"));
    assert_eq!((&logical_cluster["spec"]["initializers"], &logical_cluster["status"]["phase"]), (&json!([entry]), &json!("Initializing")), "{logical_cluster}");
    assert_eq!(post("a-token", &format!("{base}/api/v1/namespaces/default/configmaps"), &configmap("lc-setup", "x")).0, 201, "content while initializing");

    // carol administers the workspace but may not `initialize` t-a's type; nobody adds entries or sets the phase.
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "carol-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "carol"}]});
    assert_eq!(post("a-token", &format!("{base}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"), &binding).0, 201);
    let refused = merge_patch("carol-token", &status, &json!({"status": {"initializers": []}}));
    assert_status(&refused, 403, "missing verb='initialize' permission on workspacetypes", "carol removes the initializer");
    let added = merge_patch("a-token", &status, &json!({"status": {"initializers": [entry, "t-a:other"]}}));
    assert_status(&added, 403, "can only be removed", "an added initializer");
    let phased = merge_patch("a-token", &status, &json!({"status": {"phase": "Ready"}}));
    assert_status(&phased, 403, "status.phase is set by the system", "a phase set by a user");
    assert_eq!(get("a-token", &format!("{base}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster")).1["status"]["initializers"], json!([entry]), "nothing changed");

    // The type's admin removes it: Ready, the list gone from the Workspace.
    let (code, removed) = merge_patch("a-token", &status, &json!({"status": {"initializers": []}}));
    assert_eq!(code, 200, "{removed}");
    let path = format!("{}/lc-held", workspaces_of("root:t-a"));
    let seen = wait_phase("a-token", &path, "Ready");
    assert!(seen["status"].get("initializers").is_none(), "{seen}");

    // Deleted: Terminating with its content until the terminator is removed, then gone.
    assert_eq!(call(Http::One, "a-token", "DELETE", &path, None).0, 200);
    wait_phase("a-token", &path, "Terminating");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(get("a-token", &format!("{base}/api/v1/namespaces/default/configmaps/lc-setup")).0, 200, "content stays while terminating");
    let refused = merge_patch("carol-token", &status, &json!({"status": {"terminators": []}}));
    assert_status(&refused, 403, "missing verb='terminate' permission on workspacetypes", "carol removes the terminator");
    let (code, removed) = merge_patch("a-token", &status, &json!({"status": {"terminators": []}}));
    assert_eq!(code, 200, "{removed}");
    assert!(eventually(TIMEOUT, || get("a-token", &path).0 == 404), "gone once terminated");
}

/// Issue 45 (4, 5): every change of a waiting LogicalCluster's entries shows on its Workspace at once (one of two
/// removed), and a deleted workspace's LogicalCluster carries a `deletionTimestamp` from the moment it is
/// Terminating, through the workspace's path and through the terminating virtual workspace (kcp's terminators select
/// by it), over HTTP/1.1 and HTTP/2.
#[test]
fn a_waiting_workspace_mirrors_every_entry_and_its_logical_cluster_is_marked_deleted() {
    let f = fixture();
    let admin = kubectl_at(&certificate_kubeconfig(&f.server, "t-a", "admin", &[]), "root:t-a");
    admin.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata: {name: two-a}\n\
        spec: {initializer: true, terminator: true, extend: {with: [{name: universal, path: root}]}}\n---\n\
        apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata: {name: two-b}\n\
        spec: {initializer: true, terminator: true, extend: {with: [{name: two-a, path: root:t-a}]}}\n");
    let (code, created) = post("a-token", &workspaces_of("root:t-a"), &workspace("two-held", Some(("root:t-a", "two-b"))));
    assert_eq!(code, 201, "{created}");
    let path = format!("{}/two-held", workspaces_of("root:t-a"));
    let seen = wait_phase("a-token", &path, "Initializing");
    let mut both: Vec<String> = seen["status"]["initializers"].as_array().into_iter().flatten().filter_map(|e| e.as_str().map(str::to_owned)).collect();
    both.sort();
    assert_eq!(both, ["t-a:two-a", "t-a:two-b"], "{seen}");
    let base = "/clusters/root:t-a:two-held";
    let status = format!("{base}/{LOGICAL_CLUSTERS}/cluster/status");
    let logical_cluster = format!("{base}/{LOGICAL_CLUSTERS}/cluster");

    // One of two initializers removed: the Workspace lists the other at once, still Initializing.
    assert_eq!(merge_patch("a-token", &status, &json!({"status": {"initializers": ["t-a:two-b"]}})).0, 200);
    let mut last = Value::Null;
    assert!(eventually(Duration::from_secs(5), || {
        last = get("a-token", &path).1;
        last["status"]["initializers"] == json!(["t-a:two-b"])
    }), "the Workspace mirrors the removal: {last}");
    assert_eq!(last["status"]["phase"], "Initializing", "{last}");
    assert_eq!(merge_patch("a-token", &status, &json!({"status": {"initializers": []}})).0, 200);
    wait_phase("a-token", &path, "Ready");
    assert!(get("a-token", &logical_cluster).1["metadata"].get("deletionTimestamp").is_none(), "not deleted yet");

    // Deleted: Terminating, and its LogicalCluster has a deletionTimestamp wherever it is read.
    assert_eq!(call(Http::One, "a-token", "DELETE", &path, None).0, 200);
    wait_phase("a-token", &path, "Terminating");
    for http in [Http::One, Http::Two] {
        let (code, lc) = call(http, "a-token", "GET", &logical_cluster, None);
        assert_eq!(code, 200, "{lc}");
        assert!(lc["metadata"]["deletionTimestamp"].is_string(), "{http:?}: {lc}");
        assert_eq!(lc["status"]["phase"], "Terminating", "{lc}");
        let terminating = virtual_path("terminatingworkspaces", "t-a:two-a", "*", LOGICAL_CLUSTERS);
        let (code, listed) = call(http, "a-token", "GET", &terminating, None);
        assert_eq!(code, 200, "{listed}");
        let items = listed["items"].as_array().cloned().unwrap_or_default();
        let ours: Vec<&Value> = items.iter().filter(|i| i["metadata"]["annotations"]["kcp.io/path"] == "root:t-a:two-held").collect();
        assert_eq!(ours.len(), 1, "{listed}");
        assert!(ours[0]["metadata"]["deletionTimestamp"].is_string(), "{http:?} through the virtual workspace: {listed}");
    }
    // One of two terminators removed: mirrored at once, still Terminating.
    assert_eq!(merge_patch("a-token", &status, &json!({"status": {"terminators": ["t-a:two-b"]}})).0, 200);
    assert!(eventually(Duration::from_secs(5), || {
        last = get("a-token", &path).1;
        last["status"]["terminators"] == json!(["t-a:two-b"])
    }), "the Workspace mirrors the removal: {last}");
    assert_eq!(last["status"]["phase"], "Terminating", "{last}");
    assert_eq!(merge_patch("a-token", &status, &json!({"status": {"terminators": []}})).0, 200);
    assert!(eventually(TIMEOUT, || get("a-token", &path).0 == 404), "gone once terminated");
    assert_eq!(get("root-token", &logical_cluster).0, 404, "its LogicalCluster with it");
}

/// Issue 45 (6): a home is made on its owner's first request to its own path (seed 001), not only through `~`
/// (kubectl's discovery comes first); another user of the tenant gets the same 403 for a home that does not exist
/// as for one that does, and learns nothing.
#[test]
fn a_home_is_made_on_its_owners_first_request_to_its_path() {
    let f = fixture();
    // kcp's vector: `kcp-admin`'s buckets are zu:yc.
    let home = "root:t-a:users:zu:yc:kcp-admin";
    let url = format!("{}/clusters/{home}", f.server.url);
    let owner = Kubectl::new(&certificate_kubeconfig_with(&f.server, "t-a", "kcp-admin", &[], Some(&url)));
    let stranger = Kubectl::new(&certificate_kubeconfig_with(&f.server, "t-a", "gina", &[], Some(&url)));
    // kubectl's own log lines carry times and pids: its verdict is the last line.
    let verdict = |printed: String| printed.lines().last().unwrap_or_default().to_owned();
    let raw = format!("/clusters/{home}/api/v1/namespaces/default/configmaps");
    let before = verdict(stranger.fails(&["get", "configmaps"]));
    let raw_before = get("carol-token", &raw);
    assert!(before.contains("(Forbidden)"), "a stranger, before the home exists: {before}");
    assert_eq!(raw_before.0, 403, "{raw_before:?}");
    // Nothing but the namespace's kube-root-ca.crt (the server's, as in kube), if it is made already.
    let first = owner.ok(&["get", "configmaps", "-o", "name"]);
    assert!(first.lines().all(|line| line == "configmap/kube-root-ca.crt"), "the owner's first request makes the home: {first}");
    owner.ok(&["create", "configmap", "first"]);
    let (code, ws) = get("root-token", &format!("/clusters/root:t-a:users:zu:yc/{WORKSPACES}/kcp-admin"));
    assert_eq!((code, &ws["spec"]["type"]["name"]), (200, &json!("home")), "{ws}");
    let after = verdict(stranger.fails(&["get", "configmaps"]));
    assert_eq!(before, after, "the same answer whether the home exists or not");
    assert_eq!(raw_before, get("carol-token", &raw), "the same Status whether the home exists or not");
    // Over HTTP/1.1 and HTTP/2 with a token: carol's own home path works, another missing one is 403, not 404.
    for http in [Http::One, Http::Two] {
        let (code, answer) = call(http, "carol-token", "GET", "/clusters/root:t-a:users:zz:zz:nobody/api/v1/namespaces", None);
        assert_eq!(code, 403, "{http:?}: {answer}");
    }
}

/// Issue 45 (9): a path another tenant's user may not reach is refused as kube refuses a path.
#[test]
fn a_refused_path_is_worded_as_kube_words_it() {
    let _ = fixture();
    for http in [Http::One, Http::Two] {
        let (code, answer) = call(http, "b-token", "GET", "/clusters/root:t-a/api", None);
        assert_eq!(code, 403, "{answer}");
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(message.contains("cannot get path \"/api\""), "{http:?}: {message}");
        assert!(!message.contains("resource \"\""), "{message}");
    }
}

// ---- Issue 17: the initializing and terminating virtual workspaces ----

const LOGICAL_CLUSTERS: &str = "apis/core.kcp.io/v1alpha1/logicalclusters";

/// `/services/<service>/<entry>/clusters/<cluster>/<rest>`.
fn virtual_path(service: &str, entry: &str, cluster: &str, rest: &str) -> String {
    format!("/services/{service}/{entry}/clusters/{cluster}/{rest}")
}

/// The `kcp.io/path` of each LogicalCluster a list holds, sorted.
fn paths(list: &Value) -> Vec<String> {
    let mut paths: Vec<String> = list["items"].as_array().into_iter().flatten()
        .filter_map(|i| i["metadata"]["annotations"]["kcp.io/path"].as_str().map(str::to_owned)).collect();
    paths.sort();
    paths
}

/// kcp's virtual workspaces as a controller uses them: the URL published in the type's status; with the verb
/// `initialize` (`terminate`) on the type, a list of the LogicalClusters waiting for the entry across every
/// workspace (kubectl too), their status patched to remove that entry only, and content reached only while the
/// workspace waits: as its creator, or by the type's `initializerPermissions` with the synthetic group, which no
/// credential can claim. Another tenant, a caller without the verb, and everything outside the served shapes are
/// refused with kube's Status.
#[test]
fn virtual_workspaces_serve_initializers_and_terminators() {
    let f = fixture();
    let admin = kubectl_at(&certificate_kubeconfig(&f.server, "t-a", "admin", &[]), "root:t-a");
    admin.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata: {name: vw-init}\n\
        spec: {initializer: true, terminator: true, extend: {with: [{name: universal, path: root}]}}\n---\n\
        apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata: {name: vw-perm}\n\
        spec: {initializer: true, extend: {with: [{name: vw-init, path: root:t-a}]},\n  \
        initializerPermissions: [{apiGroups: [\"\"], resources: [configmaps], verbs: [create, get, list]}]}\n---\n\
        apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: vw-initializer}\n\
        rules: [{apiGroups: [tenancy.kcp.io], resources: [workspacetypes], resourceNames: [vw-init], verbs: [initialize, terminate]}]\n---\n\
        apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: vw-initializer-carol}\n\
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: vw-initializer}\n\
        subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}]\n");
    let (init, perm) = ("t-a:vw-init", "t-a:vw-perm");
    let (_, kind) = get("a-token", &format!("/clusters/root:t-a/{WORKSPACE_TYPES}/vw-init"));
    let published: Vec<&str> = kind["status"]["virtualWorkspaces"].as_array().into_iter().flatten().filter_map(|v| v["url"].as_str()).collect();
    assert_eq!(published, [format!("{}/services/initializingworkspaces/{init}", f.server.url), format!("{}/services/terminatingworkspaces/{init}", f.server.url)], "{kind}");
    let ready = create_workspace("a-token", "root:t-a", "vw-ready", None);
    for (name, kind) in [("vw-one", "vw-init"), ("vw-two", "vw-perm")] {
        assert_eq!(post("a-token", &workspaces_of("root:t-a"), &workspace(name, Some(("root:t-a", kind)))).0, 201);
        wait_phase("a-token", &format!("{}/{name}", workspaces_of("root:t-a")), "Initializing");
    }
    let (one, two) = (cluster_of("root:t-a", "vw-one"), cluster_of("root:t-a", "vw-two"));
    let ready = ready["spec"]["cluster"].as_str().expect("a logical cluster").to_owned();

    // Listing across every workspace: only those waiting for the entry; kubectl lists them at the published URL.
    let list = virtual_path("initializingworkspaces", init, "*", LOGICAL_CLUSTERS);
    let (code, listed) = get("carol-token", &list);
    assert_eq!((code, paths(&listed)), (200, vec!["root:t-a:vw-one".to_owned(), "root:t-a:vw-two".to_owned()]), "{listed}");
    let (_, listed) = get("a-token", &virtual_path("initializingworkspaces", perm, "*", LOGICAL_CLUSTERS));
    assert_eq!(paths(&listed), ["root:t-a:vw-two"]);
    let carol = Kubectl::new(&kubeconfig_with_server_url(&f.server, &certificate_kubeconfig(&f.server, "t-a", "carol", &[]),
        &format!("{}/services/initializingworkspaces/{init}/clusters/*", f.server.url)));
    let printed = carol.ok(&["get", "logicalclusters.core.kcp.io", "-o", "jsonpath={.items[*].metadata.annotations.kcp\\.io/path}"]);
    let mut printed: Vec<&str> = printed.split_whitespace().collect();
    printed.sort_unstable();
    assert_eq!(printed, ["root:t-a:vw-one", "root:t-a:vw-two"]);

    // Who may not: another tenant, a caller without the verb, a credential claiming the synthetic group.
    assert_status(&get("b-token", &list), 403, "cannot initialize resource \"workspacetypes\"", "tenant b");
    assert_status(&get("carol-token", &virtual_path("initializingworkspaces", perm, "*", LOGICAL_CLUSTERS)), 403,
        "missing verb='initialize' permission on workspacetypes", "carol without the verb on vw-perm");
    let forged = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "initializer-group"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": format!("system:kcp:initializer:{init}")}]});
    assert_eq!(post("a-token", &format!("/clusters/{one}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"), &forged).0, 201);
    let mallory = kubectl_at(&certificate_kubeconfig(&f.server, "t-a", "mallory", &[&format!("system:kcp:initializer:{init}")]), "root:t-a:vw-one");
    assert!(mallory.fails(&["get", "configmaps"]).contains("forbidden"), "a certificate cannot claim the synthetic group");

    // Only the shapes kcp serves.
    assert_status(&call(Http::Two, "carol-token", "POST", &virtual_path("initializingworkspaces", init, "*", "api/v1/namespaces/default/configmaps"),
        Some(&configmap("x", "y"))), 404, "", "content across every workspace");
    let logical_cluster = virtual_path("initializingworkspaces", init, &one, &format!("{LOGICAL_CLUSTERS}/cluster"));
    assert_eq!(get("carol-token", &logical_cluster).1["status"]["initializers"], json!([init]));
    assert_status(&merge_patch("carol-token", &logical_cluster, &json!({"spec": {"crdPolicy": "SystemCRDFirst"}})), 405, "", "the main resource");
    assert_status(&get("carol-token", &virtual_path("initializingworkspaces", init, &ready, &format!("{LOGICAL_CLUSTERS}/cluster"))), 404, "not found", "a Ready one");
    assert_status(&get("carol-token", &virtual_path("initializingworkspaces", init, &ready, "api/v1/namespaces/default/configmaps")), 403,
        &format!("initializer \"{init}\" cannot access this workspace"), "content of a Ready workspace");

    // Content while it waits: as the creator (vw-init has no permissions listed), or by vw-perm's rules.
    let made = call(Http::Two, "carol-token", "POST", &virtual_path("initializingworkspaces", init, &one, "api/v1/namespaces/default/configmaps"), Some(&configmap("setup", "1")));
    assert_eq!(made.0, 201, "{}", made.1);
    assert_eq!(get("a-token", "/clusters/root:t-a:vw-one/api/v1/namespaces/default/configmaps/setup").0, 200, "written in the workspace");
    let by_rules = |method: &str, rest: &str, body: Option<&Value>| call(Http::One, "a-token", method, &virtual_path("initializingworkspaces", perm, &two, rest), body);
    assert_eq!(by_rules("POST", "api/v1/namespaces/default/configmaps", Some(&configmap("setup", "2"))).0, 201);
    assert_status(&by_rules("DELETE", "api/v1/namespaces/default/configmaps/setup", None), 403,
        &format!("initializer \"{perm}\" denied by initializerPermissions: no rule allows delete on core/configmaps (setup) in namespace default"), "beyond the rules");
    assert_status(&by_rules("GET", "api/v1/namespaces/default/secrets", None), 403, "no rule allows list on core/secrets", "secrets");

    // The status: the caller's own entry only, then Ready; the list and the content close.
    let status = virtual_path("initializingworkspaces", init, &two, &format!("{LOGICAL_CLUSTERS}/cluster/status"));
    let both = merge_patch("carol-token", &status, &json!({"status": {"initializers": []}}));
    assert_status(&both, 422, &format!("only removing the \"{init}\" initializer is supported"), "removing vw-perm's entry too");
    assert_eq!(merge_patch("carol-token", &status, &json!({"status": {"initializers": [perm]}})).0, 200, "its own entry");
    assert_eq!(get("a-token", &format!("{}/vw-two", workspaces_of("root:t-a"))).1["status"]["phase"], "Initializing", "vw-perm's entry is left");
    let status = virtual_path("initializingworkspaces", init, &one, &format!("{LOGICAL_CLUSTERS}/cluster/status"));
    assert_eq!(merge_patch("carol-token", &status, &json!({"status": {"initializers": []}})).0, 200);
    wait_ready("a-token", "root:t-a", "vw-one");
    let (_, listed) = get("carol-token", &list);
    assert!(paths(&listed).is_empty(), "nothing waits for {init} now: {listed}");
    assert_status(&get("carol-token", &virtual_path("initializingworkspaces", init, &one, "api/v1/namespaces/default/configmaps")), 403,
        "cannot access this workspace", "content once Ready");

    // Terminating: the terminating virtual workspace lists it once deleted; the terminator removed, it goes.
    let terminating = virtual_path("terminatingworkspaces", init, "*", LOGICAL_CLUSTERS);
    assert!(paths(&get("carol-token", &terminating).1).is_empty(), "nothing is deleted yet");
    let path = format!("{}/vw-one", workspaces_of("root:t-a"));
    assert_eq!(call(Http::One, "a-token", "DELETE", &path, None).0, 200);
    wait_phase("a-token", &path, "Terminating");
    assert_eq!(paths(&get("carol-token", &terminating).1), ["root:t-a:vw-one"]);
    let cleanup = virtual_path("terminatingworkspaces", init, &one, "api/v1/namespaces/default/configmaps/setup");
    assert_eq!(call(Http::Two, "carol-token", "DELETE", &cleanup, None).0, 200, "the terminator cleans up as the creator");
    let status = virtual_path("terminatingworkspaces", init, &one, &format!("{LOGICAL_CLUSTERS}/cluster/status"));
    assert_eq!(merge_patch("carol-token", &status, &json!({"status": {"terminators": []}})).0, 200);
    assert!(eventually(TIMEOUT, || get("a-token", &path).0 == 404), "gone once terminated");
}

/// Arktos' tenant lifecycle under a terminator: a tenant whose type (a root type) has `terminator: true` is
/// deleted the Arktos way (`Terminating`, the `arktos` finalizer) but its space stays untouched, its LogicalCluster
/// `Terminating`, until the terminator is removed through the terminating virtual workspace; then it goes.
#[test]
fn a_tenant_of_a_terminator_type_waits_for_its_terminator() {
    let _ = fixture();
    let kind = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType", "metadata": {"name": "vw-tenant"},
        "spec": {"terminator": true, "extend": {"with": [{"name": "organization", "path": "root"}]}}});
    assert_eq!(post("root-token", &format!("/clusters/root/{WORKSPACE_TYPES}"), &kind).0, 201);
    create_workspace("root-token", "root", "t-held", Some(("root", "vw-tenant")));
    let logical_cluster = format!("/clusters/root:t-held/{LOGICAL_CLUSTERS}/cluster");
    assert_eq!(get("root-token", &logical_cluster).1["status"]["terminators"], json!(["root:vw-tenant"]));
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "keep"}});
    assert_eq!(post("root-token", "/clusters/root:t-held/api/v1/namespaces", &namespace).0, 201);
    assert_eq!(post("root-token", "/clusters/root:t-held/api/v1/namespaces/keep/configmaps", &configmap("kept", "1")).0, 201);

    assert_eq!(call(Http::One, "root-token", "DELETE", "/api/v1/tenants/t-held", None).0, 200);
    assert!(eventually(TIMEOUT, || get("root-token", &logical_cluster).1["status"]["phase"] == "Terminating"), "the LogicalCluster waits");
    std::thread::sleep(Duration::from_millis(1500));
    let (_, tenant) = get("root-token", "/api/v1/tenants/t-held");
    assert_eq!((&tenant["status"]["phase"], &tenant["spec"]["finalizers"]), (&json!("Terminating"), &json!(["arktos"])), "{tenant}");
    assert_eq!(get("root-token", "/clusters/root:t-held/api/v1/namespaces/keep/configmaps/kept").0, 200, "content stays");
    let (_, listed) = get("root-token", &virtual_path("terminatingworkspaces", "root:vw-tenant", "*", LOGICAL_CLUSTERS));
    assert_eq!(paths(&listed), ["root:t-held"]);

    let status = virtual_path("terminatingworkspaces", "root:vw-tenant", "t-held", &format!("{LOGICAL_CLUSTERS}/cluster/status"));
    assert_eq!(merge_patch("root-token", &status, &json!({"status": {"terminators": []}})).0, 200);
    assert!(eventually(Duration::from_secs(40), || get("root-token", "/api/v1/tenants/t-held").0 == 404), "gone once terminated");
}
