//! Storage clusters (Arktos' `spec.storageClusterId`): two real etcd clusters, the default (`--etcd-servers`) and
//! cluster 1 (`--storage-cluster 1=...`), and two kspaces replicas configured alike. A tenant on cluster 1 keeps
//! its spaces and its workspaces' there, read back from each etcd's own keys; lists and watches across tenants
//! merge both clusters with a resourceVersion naming each cluster's revision, which kubectl, kube-rs's watcher
//! and curl (HTTP/1.1 and HTTP/2) resume from; cluster 1 down fails only its tenants, and they resume with it;
//! deleting the tenant empties cluster 1.

use std::future::Future;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kspaces_tests::etcd::EtcdCluster;
use kspaces_tests::{curl_url, kube_client, Http, Kubectl, Replica, Server};
use serde_json::{json, Value};

const ROOT: &str = "root-token";
const TOKENS: &str = "root-token,root,u-root,\"system:masters\"\n";
const WITHIN: Duration = Duration::from_secs(20);

struct Fixture {
    default: EtcdCluster,
    far: EtcdCluster,
    replicas: Vec<Replica>,
    /// The replicas' shared data dir and flags (a replica is restarted with them).
    dir: std::path::PathBuf,
    flags: Vec<String>,
}

impl Fixture {
    fn start() -> Fixture {
        let (default, far) = (EtcdCluster::start(1), EtcdCluster::start(1));
        let dir = default.root().join("kspaces");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let tokens = default.root().join("tokens.csv");
        std::fs::write(&tokens, TOKENS).unwrap_or_else(|e| panic!("{e}"));
        let (endpoints, cluster) = (default.endpoints(), format!("1={}", far.endpoints()));
        let tokens = tokens.to_str().unwrap_or_else(|| panic!("a UTF-8 temp path")).to_owned();
        let flags: Vec<String> = ["--storage-backend", "etcd", "--etcd-servers", &endpoints, "--storage-cluster", &cluster, "--token-auth-file", &tokens]
            .map(str::to_owned).into();
        let mut fixture = Fixture { default, far, replicas: Vec::new(), dir, flags };
        fixture.replicas = (0..2).map(|_| fixture.start_replica()).collect();
        fixture
    }

    fn start_replica(&self) -> Replica {
        let flags: Vec<&str> = self.flags.iter().map(String::as_str).collect();
        Server::start_replica(&self.dir, &flags)
    }

    /// Restarts cluster 1 if a test stopped it (a test that kills it waits for it to come back itself).
    fn heal(&mut self) {
        if !self.far.running(0) {
            self.far.restart(0);
        }
    }
}

fn fixture() -> MutexGuard<'static, Fixture> {
    static FIXTURE: OnceLock<Mutex<Fixture>> = OnceLock::new();
    let mut fixture = FIXTURE.get_or_init(|| Mutex::new(Fixture::start())).lock().unwrap_or_else(PoisonError::into_inner);
    fixture.heal();
    fixture
}

fn call(replica: &Replica, http: Http, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let text = body.map(Value::to_string);
    let (code, answer) = curl_url(&replica.url, http, Some(ROOT), method, path, text.as_deref());
    (code, serde_json::from_str(&answer).unwrap_or(Value::String(answer)))
}

fn create_tenant(replica: &Replica, name: &str, cluster: Option<&str>) -> (u16, Value) {
    let spec = cluster.map_or(json!({}), |id| json!({"storageClusterId": id}));
    call(replica, Http::One, "POST", "/api/v1/tenants", Some(&json!({"apiVersion": "v1", "kind": "Tenant", "metadata": {"name": name}, "spec": spec})))
}

/// kubectl 1.32 as the system administrator, at `<replica>/clusters/<path>`.
fn kubectl_at(replica: &Replica, path: &str) -> Kubectl {
    Kubectl::new(&replica.kubeconfig_for_url(&format!("{}/clusters/{path}", replica.url)))
}

/// Every key one etcd cluster holds under `/registry/`, read through etcd's own JSON gateway.
fn etcd_keys(cluster: &EtcdCluster) -> Vec<String> {
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let body = json!({"key": b64("/registry/"), "range_end": b64("/registry0"), "keys_only": true}).to_string();
    let output = std::process::Command::new("curl")
        .args(["-s", "-X", "POST", &format!("{}/v3/kv/range", cluster.endpoint(0)), "--data-binary", &body])
        .output()
        .unwrap_or_else(|e| panic!("curl: {e}"));
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("etcd's answer: {e}: {}", String::from_utf8_lossy(&output.stdout)));
    let decode = |k: &Value| String::from_utf8(base64::engine::general_purpose::STANDARD.decode(k.as_str().unwrap_or_default()).unwrap_or_default()).unwrap_or_default();
    answer["kvs"].as_array().map(|kvs| kvs.iter().map(|kv| decode(&kv["key"])).collect()).unwrap_or_default()
}

/// The keys of `space` (the space segment of `<prefix>/<group>/<resource>/<identity>/<space>/...`).
fn keys_of(keys: &[String], space: &str) -> Vec<String> {
    keys.iter().filter(|k| k.split('/').nth(5) == Some(space)).cloned().collect()
}

fn poll(within: Duration, mut probe: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < within {
        if probe() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn block_on<T>(future: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}")).block_on(future)
}

/// A nested workspace `name` in `parent`, made through kubectl and waited for until Ready; its logical cluster.
fn ready_workspace(replica: &Replica, parent: &str, name: &str) -> String {
    let kubectl = kubectl_at(replica, parent);
    kubectl.ok_with_stdin(&["create", "-f", "-"], &format!("apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\n"));
    let mut cluster = String::new();
    let ready = poll(WITHIN, || {
        let out = kubectl.run(&["get", "workspace", name, "-o", "jsonpath={.status.phase} {.spec.cluster}"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        match text.split_once(' ') {
            Some(("Ready", c)) => {
                cluster = c.to_owned();
                true
            }
            _ => false,
        }
    });
    assert!(ready, "workspace {parent}:{name} not Ready within {WITHIN:?}");
    cluster
}

#[test]
fn a_tenant_on_a_storage_cluster_keeps_its_spaces_and_its_workspaces_there() {
    let mut f = fixture();
    let (one, two) = (&f.replicas[0], &f.replicas[1]);
    assert_eq!(create_tenant(one, "far", Some("1")).0, 201);
    assert_eq!(create_tenant(one, "near", None).0, 201);
    let (code, refused) = create_tenant(one, "nowhere", Some("7"));
    assert_eq!(code, 422, "{refused}");
    assert_eq!(refused["details"]["causes"][0]["field"], "spec.storageClusterId", "{refused}");
    assert!(refused["message"].as_str().unwrap_or_default().contains("no storage cluster 7 is configured"), "{refused}");

    kubectl_at(one, "root:far").ok(&["create", "configmap", "c", "-n", "default", "--from-literal=k=far"]);
    kubectl_at(one, "root:near").ok(&["create", "configmap", "c", "-n", "default", "--from-literal=k=near"]);
    let team = ready_workspace(one, "root:far", "team");
    kubectl_at(one, "root:far:team").ok(&["create", "configmap", "deep", "-n", "default"]);

    let (default_keys, far_keys) = (etcd_keys(&f.default), etcd_keys(&f.far));
    for (space, on_far) in [("far", true), (team.as_str(), true), ("near", false), ("system", false)] {
        let (there, elsewhere) = if on_far { (&far_keys, &default_keys) } else { (&default_keys, &far_keys) };
        assert!(!keys_of(there, space).is_empty(), "space {space} has no key on its cluster");
        assert_eq!(keys_of(elsewhere, space), Vec::<String>::new(), "space {space} has keys on the other cluster");
    }
    assert!(default_keys.contains(&"/registry/core/tenants/builtin/system/_/far".to_owned()), "the Tenant itself is in the system space");
    assert!(far_keys.contains(&format!("/registry/core/configmaps/builtin/{team}/default/deep")));

    // The other replica serves them (its caches follow both clusters), and kube-rs reads the nested workspace.
    assert!(poll(WITHIN, || kubectl_at(two, "root:far:team").run(&["get", "configmap", "deep", "-n", "default"]).status.success()));
    let kubeconfig = two.kubeconfig_for_url(&format!("{}/clusters/root:far", two.url));
    let got = block_on(async {
        let client = kube_client(&kubeconfig).await.unwrap_or_else(|e| panic!("{e}"));
        Api::<ConfigMap>::namespaced(client, "default").get("c").await.unwrap_or_else(|e| panic!("{e}"))
    });
    assert_eq!(got.data.unwrap_or_default().get("k").map(String::as_str), Some("far"));

    // A replica started afresh primes its caches from both clusters and serves the nested workspace at once.
    f.replicas[1].kill();
    f.replicas[1] = f.start_replica();
    let fresh = &f.replicas[1];
    let deep = kubectl_at(fresh, "root:far:team").ok(&["get", "configmap", "deep", "-n", "default", "-o", "jsonpath={.metadata.name}"]);
    assert_eq!(deep, "deep");
    let tenants = kubectl_at(fresh, "root").ok(&["get", "tenant", "far", "-o", "jsonpath={.spec.storageClusterId}"]);
    assert_eq!(tenants, "1");
}

#[test]
fn lists_and_watches_across_storage_clusters_merge_and_resume_from_their_resource_version() {
    let f = fixture();
    let (one, two) = (&f.replicas[0], &f.replicas[1]);
    assert_eq!(create_tenant(one, "wfar", Some("1")).0, 201);
    assert_eq!(create_tenant(one, "wnear", None).0, 201);
    for (tenant, name) in [("wfar", "a1"), ("wnear", "b1"), ("wfar", "a2"), ("wnear", "b2")] {
        let (code, body) = call(one, Http::One, "POST", &format!("/api/v1/tenants/{tenant}/namespaces/default/configmaps"),
            Some(&json!({"metadata": {"name": name, "labels": {"merged": "yes"}}})));
        assert_eq!(code, 201, "{body}");
    }
    let selector = "labelSelector=merged%3Dyes";

    // One list: both clusters, one revision each.
    let (code, list) = call(two, Http::Two, "GET", &format!("/api/v1/tenants/all/configmaps?{selector}"), None);
    assert_eq!(code, 200, "{list}");
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_owned();
    assert!(rv.starts_with("0:") && rv.contains(",1:"), "a merged list's resourceVersion names both clusters: {rv}");
    let names = |list: &Value| -> Vec<String> { list["items"].as_array().into_iter().flatten().map(|i| i["metadata"]["name"].as_str().unwrap_or_default().to_owned()).collect() };
    assert_eq!(names(&list), ["a1", "a2", "b1", "b2"], "key order: tenant wfar's, then wnear's");

    // Pages of one, from one snapshot across both clusters, with a write in between.
    let mut paged = Vec::new();
    let mut next = format!("/api/v1/tenants/all/configmaps?{selector}&limit=1");
    loop {
        let (code, page) = call(one, Http::One, "GET", &next, None);
        assert_eq!(code, 200, "{page}");
        paged.extend(names(&page));
        if paged.len() == 1 {
            call(one, Http::One, "POST", "/api/v1/tenants/wfar/namespaces/default/configmaps", Some(&json!({"metadata": {"name": "a0", "labels": {"merged": "yes"}}})));
        }
        match page["metadata"]["continue"].as_str() {
            Some(token) => next = format!("/api/v1/tenants/all/configmaps?{selector}&limit=1&continue={token}"),
            None => break,
        }
    }
    assert_eq!(paged, ["a1", "a2", "b1", "b2"], "a0 came after the snapshot");

    // kubectl across every space (`/clusters/*`).
    let everywhere = kubectl_at(one, "*").ok(&["get", "configmaps", "-A", "-l", "merged=yes", "-o", "name"]);
    assert_eq!(everywhere.lines().count(), 5, "{everywhere}");

    // A watch from the list's resourceVersion sees writes to both clusters; each event's resourceVersion is where
    // the merged watch stands, and a watch resumed from the first one's sees exactly the second.
    let watch = |from: &str, http: Http| -> Vec<Value> {
        let (code, text) = curl_url(&one.url, http, Some(ROOT), "GET",
            &format!("/api/v1/tenants/all/configmaps?{selector}&watch=1&timeoutSeconds=2&resourceVersion={from}"), None);
        assert_eq!(code, 200, "{text}");
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
    };
    let seen = watch(&rv, Http::One);
    let events: Vec<(&str, &str, &str)> = seen.iter()
        .map(|e| (e["type"].as_str().unwrap_or_default(), e["object"]["metadata"]["name"].as_str().unwrap_or_default(), e["object"]["metadata"]["resourceVersion"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(events.iter().map(|e| (e.0, e.1)).collect::<Vec<_>>(), [("ADDED", "a0")], "{seen:?}");
    let after_a0 = events[0].2.to_owned();
    assert!(after_a0.starts_with("0:") && after_a0.contains(",1:"), "{after_a0}");
    call(one, Http::One, "POST", "/api/v1/tenants/wnear/namespaces/default/configmaps", Some(&json!({"metadata": {"name": "b3", "labels": {"merged": "yes"}}})));
    for http in [Http::One, Http::Two] {
        let resumed = watch(&after_a0, http);
        let resumed: Vec<&str> = resumed.iter().map(|e| e["object"]["metadata"]["name"].as_str().unwrap_or_default()).collect();
        assert_eq!(resumed, ["b3"], "{http:?}: exactly what came after the position");
    }
    // One revision cannot resume a watch across clusters: kube's 410, and clients list again.
    let expired = watch("5", Http::Two);
    assert_eq!((expired[0]["type"].as_str(), expired[0]["object"]["code"].as_u64()), (Some("ERROR"), Some(410)), "{expired:?}");

    // An object as the merged watch showed it updates with that resourceVersion; a stale one is 409.
    let mut a0 = seen[0]["object"].clone();
    a0["data"] = json!({"edited": "yes"});
    let path = "/api/v1/tenants/wfar/namespaces/default/configmaps/a0";
    assert_eq!(call(one, Http::One, "PUT", path, Some(&a0)).0, 200);
    assert_eq!(call(one, Http::One, "PUT", path, Some(&a0)).0, 409);

    // kube-rs's watcher across every space (list, then watch from the list's resourceVersion).
    let kubeconfig = two.kubeconfig_for_url(&format!("{}/clusters/*", two.url));
    let found = block_on(async {
        let api: Api<ConfigMap> = Api::all(kube_client(&kubeconfig).await.unwrap_or_else(|e| panic!("{e}")));
        let config = kube::runtime::watcher::Config::default().labels("merged=yes");
        let mut stream = Box::pin(kube::runtime::watcher(api, config));
        let mut names = std::collections::BTreeSet::new();
        let mut created = false;
        tokio::time::timeout(WITHIN, async {
            while let Some(event) = stream.next().await {
                match event.unwrap_or_else(|e| panic!("{e}")) {
                    kube::runtime::watcher::Event::InitDone if !created => {
                        created = true;
                        for (tenant, name) in [("wfar", "a9"), ("wnear", "b9")] {
                            let code = call(one, Http::One, "POST", &format!("/api/v1/tenants/{tenant}/namespaces/default/configmaps"),
                                Some(&json!({"metadata": {"name": name, "labels": {"merged": "yes"}}}))).0;
                            assert_eq!(code, 201);
                        }
                    }
                    kube::runtime::watcher::Event::Apply(cm) | kube::runtime::watcher::Event::InitApply(cm) => {
                        names.insert(cm.metadata.name.unwrap_or_default());
                        if names.contains("a9") && names.contains("b9") {
                            return names;
                        }
                    }
                    _ => {}
                }
            }
            names
        }).await.unwrap_or_else(|_| panic!("kube-rs's watcher did not see both new objects within {WITHIN:?}"))
    });
    assert_eq!(found.len(), 8, "a1 a2 b1 b2 a0 b3 a9 b9: {found:?}");
}

#[test]
fn a_storage_cluster_down_fails_only_its_tenants_and_they_resume_with_it() {
    let mut f = fixture();
    assert_eq!(create_tenant(&f.replicas[0], "dfar", Some("1")).0, 201);
    assert_eq!(create_tenant(&f.replicas[0], "dnear", None).0, 201);
    f.far.kill(0);
    let one = &f.replicas[0];
    let write = |tenant: &str, name: &str| {
        call(one, Http::Two, "POST", &format!("/api/v1/tenants/{tenant}/namespaces/default/configmaps"), Some(&json!({"metadata": {"name": name}})))
    };
    let started = Instant::now();
    let (code, status) = write("dfar", "while-down");
    assert!(matches!(code, 503 | 504), "a write to a tenant on the stopped cluster: {code} {status}");
    assert_eq!(status["kind"], "Status", "{status}");
    assert!(started.elapsed() < Duration::from_secs(40), "answered within the request timeout: {:?}", started.elapsed());
    assert_eq!(write("dnear", "while-down").0, 201, "tenants on the default cluster do not notice");
    assert_eq!(call(one, Http::One, "GET", "/api/v1/tenants/dnear/namespaces/default/configmaps/while-down", None).0, 200);

    f.far.restart(0);
    let one = &f.replicas[0];
    let back = poll(Duration::from_secs(30), || {
        call(one, Http::Two, "POST", "/api/v1/tenants/dfar/namespaces/default/configmaps", Some(&json!({"metadata": {"name": "after"}}))).0 == 201
    });
    assert!(back, "writes to cluster 1 resume once it is back, without a restart");
    assert!(poll(WITHIN, || call(&f.replicas[1], Http::One, "GET", "/api/v1/tenants/dfar/namespaces/default/configmaps/after", None).0 == 200));
}

#[test]
fn deleting_a_tenant_on_a_storage_cluster_leaves_no_key_there() {
    let f = fixture();
    let one = &f.replicas[0];
    assert_eq!(create_tenant(one, "gone", Some("1")).0, 201);
    let nested = ready_workspace(one, "root:gone", "inner");
    kubectl_at(one, "root:gone:inner").ok(&["create", "configmap", "x", "-n", "default"]);
    assert!(!keys_of(&etcd_keys(&f.far), "gone").is_empty());
    kubectl_at(one, "root").ok(&["delete", "workspace", "gone", "--wait=true", "--timeout=60s"]);
    let far = etcd_keys(&f.far);
    assert_eq!((keys_of(&far, "gone"), keys_of(&far, &nested)), (Vec::new(), Vec::new()), "every key of the tenant and its workspace is gone");
    assert!(!etcd_keys(&f.default).iter().any(|k| k.ends_with("/tenants/builtin/system/_/gone")));
}
