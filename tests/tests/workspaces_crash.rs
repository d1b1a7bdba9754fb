//! Deleting a workspace tree, checked where it ends: in storage (the stopped server's sled store holds no live key
//! of a deleted logical cluster, objects made through APIBindings included, a deleted binding's too), and across a kill -9 in the middle of a deletion of a few hundred workspaces (the
//! restarted server finishes it; the sibling subtree is intact).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use kspaces_storage::sled::SledConfig;
use kspaces_storage::{KeyLayout, ListRequest, Store, StoreConfig};
use kspaces_tests::{certificate_kubeconfig, create_tenant, curl, eventually, kubeconfig_with_server_url, token_file, Http, Kubectl, Server, WIDGET_CRD};
use serde_json::{json, Value};

const TOKENS: [&str; 2] = ["root-token,root,u-root,\"system:masters\"", "a-token,admin,u-a,\"tenant-admins\",,t-a"];
const WORKSPACES: &str = "apis/tenancy.kcp.io/v1alpha1/workspaces";
/// A schema and its export, applied in the kept subtree.
const GADGETS_EXPORT: &str = r#"apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
metadata: {name: v1.gadgets.example.io}
spec:
  group: example.io
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apis.kcp.io/v1alpha1
kind: APIExport
metadata: {name: gadgets}
spec: {latestResourceSchemas: [v1.gadgets.example.io]}
"#;
/// How many requests are in flight while a tree is built.
const WORKERS: usize = 12;

/// A server with tenant t-a and the static tokens.
fn start() -> (Server, tempfile::NamedTempFile) {
    let tokens = token_file(&TOKENS);
    let server = Server::start_with(&["--token-auth-file", path_str(tokens.path())]);
    create_tenant(&server.kubectl(), "t-a");
    (server, tokens)
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

fn request(server: &Server, token: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let text = body.map(Value::to_string);
    let (code, answer) = curl(server, Http::One, Some(token), method, path, text.as_deref());
    (code, serde_json::from_str(&answer).unwrap_or(Value::String(answer)))
}

fn workspace(name: &str) -> Value {
    json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name},
        "spec": {"type": {"name": "universal", "path": "root"}}})
}

fn configmap(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": value}})
}

/// Runs `each` on every item, `WORKERS` at a time.
fn parallel<T: Sync>(items: &[T], each: impl Fn(&T) + Sync) {
    let chunk = items.len().div_ceil(WORKERS).max(1);
    std::thread::scope(|scope| {
        for part in items.chunks(chunk) {
            let each = &each;
            scope.spawn(move || part.iter().for_each(each));
        }
    });
}

/// Creates the workspaces `parent:name` (each with a ConfigMap `content` holding its path), level by level.
fn build(server: &Server, paths: &[String]) {
    let mut levels: Vec<Vec<&String>> = Vec::new();
    for path in paths {
        let depth = path.matches(':').count();
        if levels.len() < depth {
            levels.resize(depth, Vec::new());
        }
        levels[depth - 1].push(path);
    }
    for level in levels.iter().filter(|l| !l.is_empty()) {
        parallel(level, |path| {
            let (parent, name) = path.rsplit_once(':').expect("a nested path");
            let (code, body) = request(server, "a-token", "POST", &format!("/clusters/{parent}/{WORKSPACES}"), Some(&workspace(name)));
            assert_eq!(code, 201, "create {path}: {body}");
            let (code, body) =
                request(server, "a-token", "POST", &format!("/clusters/{path}/api/v1/namespaces/default/configmaps"), Some(&configmap("content", path)));
            assert_eq!(code, 201, "content in {path}: {body}");
        });
    }
}

/// `top` and its children `<top>:c<i>`, each with `grandchildren` children `<child>:g<j>`.
fn tree(top: &str, children: usize, grandchildren: usize) -> Vec<String> {
    let mut paths = vec![top.to_owned()];
    for i in 0..children {
        let child = format!("{top}:c{i}");
        paths.extend((0..grandchildren).map(|j| format!("{child}:g{j}")));
        paths.push(child);
    }
    paths
}

/// The logical cluster of each workspace in `paths`.
fn clusters(server: &Server, paths: &[String]) -> BTreeSet<String> {
    let mut clusters = BTreeSet::new();
    let parents: BTreeSet<&str> = paths.iter().filter_map(|p| p.rsplit_once(':').map(|(parent, _)| parent)).collect();
    for parent in parents {
        let (code, list) = request(server, "root-token", "GET", &format!("/clusters/{parent}/{WORKSPACES}"), None);
        assert_eq!(code, 200, "{list}");
        for item in list["items"].as_array().into_iter().flatten() {
            let name = item["metadata"]["name"].as_str().unwrap_or_default();
            if paths.contains(&format!("{parent}:{name}")) {
                clusters.insert(item["spec"]["cluster"].as_str().expect("spec.cluster").to_owned());
            }
        }
    }
    assert_eq!(clusters.len(), paths.len(), "every workspace has its own logical cluster");
    clusters
}

/// The logical clusters the server serves (every space's LogicalCluster, listed by a system user).
fn live_clusters(server: &Server) -> BTreeSet<String> {
    let (code, list) = request(server, "root-token", "GET", "/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters", None);
    assert_eq!(code, 200, "{list}");
    list["items"].as_array().into_iter().flatten().filter_map(|i| i["metadata"]["annotations"]["kcp.io/cluster"].as_str().map(str::to_owned)).collect()
}

/// Every live object key in the stopped server's store, as (space, group/resource, name).
fn stored_keys(data_dir: &Path) -> Vec<(String, String, String)> {
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(async {
        let config = StoreConfig { bookmark_interval: None, ..StoreConfig::default() };
        let store = Store::open_sled(&SledConfig::new(data_dir.join("db")), config).expect("open the stopped server's store");
        let layout = KeyLayout::default();
        let mut keys = Vec::new();
        let mut request = ListRequest { limit: Some(1000), skip_remaining: true, ..ListRequest::default() };
        loop {
            let page = store.list(&layout.everything(), &request).await.expect("list the store");
            for record in &page.items {
                let parts = record.key.parts(&layout).expect("a key of the layout");
                keys.push((parts.space.to_owned(), format!("{}/{}", parts.group, parts.resource), parts.name.to_owned()));
            }
            match page.continue_token {
                Some(token) => request.continue_token = Some(token),
                None => break,
            }
        }
        keys
    })
}

fn assert_intact(server: &Server, paths: &[String]) {
    for path in paths {
        let (parent, name) = path.rsplit_once(':').expect("nested");
        let (_, ws) = request(server, "a-token", "GET", &format!("/clusters/{parent}/{WORKSPACES}/{name}"), None);
        assert_eq!(ws["status"]["phase"], "Ready", "{path}: {ws}");
        assert!(ws["metadata"]["deletionTimestamp"].is_null(), "{path} is not being deleted: {ws}");
        let (code, content) = request(server, "a-token", "GET", &format!("/clusters/{path}/api/v1/namespaces/default/configmaps/content"), None);
        assert_eq!((code, &content["data"]["k"]), (200, &json!(path)), "{path}'s content");
    }
}

#[test]
fn a_deleted_tree_leaves_no_key_behind_in_storage() {
    let (server, _tokens) = start();
    let doomed = tree("root:t-a:s-top", 3, 2);
    let kept = tree("root:t-a:s-keep", 2, 0);
    build(&server, &doomed);
    build(&server, &kept);
    // Richer content in one leaf: a CRD with an object, another namespace, a secret.
    let leaf = "root:t-a:s-top:c1:g1";
    let admin = Kubectl::new(&kubeconfig_with_server_url(&server, &certificate_kubeconfig(&server, "t-a", "admin", &[]),
        &format!("{}/clusters/{leaf}", server.url)));
    admin.ok_with_stdin(&["apply", "-f", "-"], WIDGET_CRD);
    admin.ok(&["wait", "--for", "condition=established", "crd/widgets.example.com", "--timeout=20s"]);
    admin.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\nspec: {size: 1}\n");
    admin.ok(&["create", "namespace", "extra"]);
    admin.ok(&["create", "secret", "generic", "s", "-n", "extra", "--from-literal=k=v"]);
    // Objects made through APIBindings to an export of the kept subtree: in one workspace bound still, in another
    // whose binding is gone by the time the tree is deleted (its objects stay stored until then).
    let at = |path: &str| Kubectl::new(&kubeconfig_with_server_url(&server, &certificate_kubeconfig(&server, "t-a", "admin", &[]),
        &format!("{}/clusters/{path}", server.url)));
    at("root:t-a:s-keep").ok_with_stdin(&["apply", "-f", "-"], GADGETS_EXPORT);
    assert!(eventually(Duration::from_secs(20), || !at("root:t-a:s-keep").ok(&["get", "apiexport", "gadgets", "-o", "jsonpath={.status.identityHash}"]).is_empty()));
    for path in [leaf, "root:t-a:s-top:c2"] {
        let consumer = at(path);
        consumer.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: apis.kcp.io/v1alpha1\nkind: APIBinding\nmetadata: {name: gadgets}\nspec: {reference: {export: {path: \"root:t-a:s-keep\", name: gadgets}}}\n");
        let gadget = "apiVersion: example.io/v1\nkind: Gadget\nmetadata: {name: g, namespace: default}\n";
        assert!(eventually(Duration::from_secs(20), || consumer.run_with_stdin(&["apply", "-f", "-"], gadget).status.success()), "a gadget in {path}");
    }
    at("root:t-a:s-top:c2").ok(&["delete", "apibinding", "gadgets"]);
    let doomed_clusters = clusters(&server, &doomed);
    let kept_clusters = clusters(&server, &kept);

    let (code, body) = request(&server, "a-token", "DELETE", &format!("/clusters/root:t-a/{WORKSPACES}/s-top"), None);
    assert_eq!(code, 200, "{body}");
    let gone = eventually(Duration::from_secs(30), || {
        request(&server, "a-token", "GET", &format!("/clusters/root:t-a/{WORKSPACES}/s-top"), None).0 == 404
    });
    assert!(gone, "the deletion finished");
    assert_intact(&server, &kept);

    let data_dir = server.stop();
    let keys = stored_keys(data_dir.path());
    let left: Vec<_> = keys.iter().filter(|(space, _, _)| doomed_clusters.contains(space)).collect();
    assert!(left.is_empty(), "keys of deleted logical clusters remain: {left:?}");
    let workspace_left = keys.iter().any(|(space, resource, name)| space == "t-a" && resource.ends_with("/workspaces") && name == "s-top");
    assert!(!workspace_left, "the Workspace s-top itself is gone");
    for cluster in &kept_clusters {
        assert!(keys.iter().any(|(space, _, _)| space == cluster), "the kept logical cluster {cluster} is in storage");
    }
}

#[test]
fn a_tree_deletion_cut_by_kill_9_finishes_after_the_restart() {
    let (server, tokens) = start();
    let doomed = tree("root:t-a:k-top", 10, 30);
    let kept = tree("root:t-a:k-keep", 5, 2);
    build(&server, &doomed);
    build(&server, &kept);
    let doomed_clusters = clusters(&server, &doomed);
    assert!(doomed_clusters.len() > 300, "a few hundred workspaces");
    // One leaf's ConfigMap holds the deletion until after the restart, so the kill always lands mid-deletion.
    let held = "/clusters/root:t-a:k-top:c0:g0/api/v1/namespaces/default/configmaps";
    let mut holding = configmap("held", "x");
    holding["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert_eq!(request(&server, "a-token", "POST", held, Some(&holding)).0, 201);

    let top = format!("/clusters/root:t-a/{WORKSPACES}/k-top");
    let (code, body) = request(&server, "a-token", "DELETE", &top, None);
    assert_eq!(code, 200, "{body}");
    // Kill it once the deletion has started to remove logical clusters but has not finished.
    let mut remaining = doomed_clusters.len();
    let started = eventually(Duration::from_secs(30), || {
        remaining = live_clusters(&server).intersection(&doomed_clusters).count();
        remaining < doomed_clusters.len()
    });
    assert!(started && remaining > 0, "the deletion did not start, or finished before the kill ({remaining} left)");
    let killed = std::process::Command::new("kill").args(["-9", &server.pid().to_string()]).status().expect("run kill");
    assert!(killed.success());
    let data_dir = server.stop();

    // In storage, mid-way: the top Workspace is still there, and so is part of its subtree.
    let keys = stored_keys(data_dir.path());
    assert!(keys.iter().any(|(space, resource, name)| space == "t-a" && resource.ends_with("/workspaces") && name == "k-top"), "cut mid-deletion");
    let cut = keys.iter().filter(|(space, _, _)| doomed_clusters.contains(space)).count();
    assert!(cut > 0, "some of the subtree was left when the server died");

    let server = Server::start_in(data_dir, &["--token-auth-file", path_str(tokens.path())]);
    let (code, mut holding) = request(&server, "a-token", "GET", &format!("{held}/held"), None);
    assert_eq!(code, 200, "still held after the restart: {holding}");
    holding["metadata"]["finalizers"] = Value::Null;
    let (code, released) = request(&server, "a-token", "PUT", &format!("{held}/held"), Some(&holding));
    assert_eq!(code, 200, "{released}");
    let finished = eventually(Duration::from_secs(60), || {
        request(&server, "a-token", "GET", &top, None).0 == 404 && live_clusters(&server).is_disjoint(&doomed_clusters)
    });
    assert!(finished, "the restarted server finishes the deletion: {} left", live_clusters(&server).intersection(&doomed_clusters).count());
    assert_intact(&server, &kept);
    let data_dir = server.stop();
    let left = stored_keys(data_dir.path()).into_iter().filter(|(space, _, _)| doomed_clusters.contains(space)).count();
    assert_eq!(left, 0, "no key of the deleted tree is left");
}


/// Issue 17 across restarts: a workspace waiting for its initializer, and then for its terminator, is still served
/// by the virtual workspaces after a kill -9, and moves on once the entry is removed there.
#[test]
fn a_waiting_workspace_resumes_after_a_restart_in_each_phase() {
    let (server, tokens) = start();
    let kind = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType", "metadata": {"name": "held"},
        "spec": {"initializer": true, "terminator": true, "extend": {"with": [{"name": "universal", "path": "root"}]}}});
    assert_eq!(request(&server, "a-token", "POST", "/clusters/root:t-a/apis/tenancy.kcp.io/v1alpha1/workspacetypes", Some(&kind)).0, 201);
    let held = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "held"},
        "spec": {"type": {"name": "held", "path": "root:t-a"}}});
    assert_eq!(request(&server, "a-token", "POST", &format!("/clusters/root:t-a/{WORKSPACES}"), Some(&held)).0, 201);
    let path = format!("/clusters/root:t-a/{WORKSPACES}/held");
    let phase = |server: &Server| request(server, "a-token", "GET", &path, None).1["status"]["phase"].as_str().unwrap_or_default().to_owned();
    assert!(eventually(Duration::from_secs(20), || phase(&server) == "Initializing"));
    let cluster = request(&server, "a-token", "GET", &path, None).1["spec"]["cluster"].as_str().expect("a logical cluster").to_owned();
    let restart = |server: Server| {
        let killed = std::process::Command::new("kill").args(["-9", &server.pid().to_string()]).status().expect("run kill");
        assert!(killed.success());
        Server::start_in(server.stop(), &["--token-auth-file", path_str(tokens.path())])
    };
    let listed = |server: &Server, service: &str| {
        let list = request(server, "a-token", "GET", &format!("/services/{service}/t-a:held/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters"), None).1;
        list["items"].as_array().into_iter().flatten().filter_map(|i| i["metadata"]["annotations"]["kcp.io/cluster"].as_str().map(str::to_owned)).collect::<Vec<_>>()
    };
    let remove = |server: &Server, service: &str, field: &str| {
        let status = format!("/services/{service}/t-a:held/clusters/{cluster}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster/status");
        let output = std::process::Command::new("curl")
            .args(["-sk", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PATCH", "-H", "Authorization: Bearer a-token"])
            .args(["-H", "Content-Type: application/merge-patch+json", "--data-binary", &json!({"status": {field: []}}).to_string()])
            .arg(format!("{}{status}", server.url)).output().expect("curl");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };

    let server = restart(server);
    assert_eq!(phase(&server), "Initializing", "still waiting after the restart");
    assert_eq!(listed(&server, "initializingworkspaces"), std::slice::from_ref(&cluster));
    assert_eq!(remove(&server, "initializingworkspaces", "initializers"), "200");
    assert!(eventually(Duration::from_secs(20), || phase(&server) == "Ready"), "Ready once the initializer is gone");

    assert_eq!(request(&server, "a-token", "DELETE", &path, None).0, 200);
    assert!(eventually(Duration::from_secs(20), || phase(&server) == "Terminating"));
    let server = restart(server);
    assert_eq!(phase(&server), "Terminating", "still waiting after the restart");
    assert_eq!(listed(&server, "terminatingworkspaces"), std::slice::from_ref(&cluster));
    assert_eq!(remove(&server, "terminatingworkspaces", "terminators"), "200");
    assert!(eventually(Duration::from_secs(30), || request(&server, "a-token", "GET", &path, None).0 == 404), "gone once terminated");
    drop(server.stop());
}

/// Issue 45 (2): a data dir from before `users` was reserved, holding a Tenant named `users` (here written into the
/// stopped server's store as an earlier kspaces would have stored it), is refused at startup with a message saying
/// why and what to do, rather than giving that tenant's admin the buckets of the system users' homes.
#[test]
fn a_tenant_named_users_from_before_is_refused_at_startup() {
    let server = Server::start();
    create_tenant(&server.kubectl(), "was-users");
    let dir = server.stop();
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(async {
        let config = StoreConfig { bookmark_interval: None, ..StoreConfig::default() };
        let store = Store::open_sled(&SledConfig::new(dir.path().join("db")), config).expect("open the stopped server's store");
        let layout = KeyLayout::default();
        let page = store.list(&layout.everything(), &ListRequest::default()).await.expect("list the store");
        let record = page.items.iter().find(|r| r.key.parts(&layout).is_ok_and(|p| p.resource == "tenants" && p.name == "was-users"))
            .expect("the Tenant was-users");
        let mut tenant: Value = serde_json::from_slice(&record.value).expect("a stored Tenant");
        tenant["metadata"]["name"] = json!("users");
        let raw = record.key.as_str().strip_suffix("/was-users").expect("a key ending in the name");
        let key = kspaces_storage::Key::parse(&layout, &format!("{raw}/users")).expect("the key of Tenant users");
        let created = store.create(&key, serde_json::to_vec(&tenant).expect("json").into()).await.expect("write");
        assert!(created.is_ok(), "the key was free");
    });
    let stderr = kspaces_tests::refused_start(dir.path(), &[]);
    assert!(stderr.contains("a tenant named \"users\" exists") && stderr.contains("home workspaces"), "{stderr}");
}
