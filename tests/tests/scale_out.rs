//! Scale-out: three `kspaces serve --storage-backend etcd` replicas sharing one data dir (CA, service-account keys)
//! and one real 3-member etcd cluster. What one replica writes the others serve (tenants, CRDs, RBAC, namespaces,
//! workspaces) within a short delay, printed, and a namespace terminating through one replica refuses creates through
//! the others; a watch on one replica sees what the others write, once each, in
//! resourceVersion order, and resumes on another replica; the controllers run on the replica holding the
//! `kspaces-controllers` Lease and move to another when it is killed. Faults: with one etcd member of three down
//! (a follower, then the leader) every request through every replica still succeeds; every create a replica
//! acknowledged before it was killed is kept; without quorum a create answers an error Status instead of hanging,
//! and writes resume once the quorum is back, without restarting a replica. Limits: a space's object limit holds
//! across the replicas writing into it at once, and a tally its maker left uncounted is counted by another.
//!
//! The file's tests share the cluster and the replicas and take turns (a lock); each first replaces a replica or
//! restarts an etcd member an earlier test killed, then waits until every replica writes to etcd again.

use std::future::Future;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use kspaces_tests::etcd::EtcdCluster;
use kspaces_tests::{create_tenant, curl_url, kube_client, Http, Kubectl, Replica, Server, WatchOutput, WIDGET_CRD};
use serde_json::{json, Value};

const REPLICAS: usize = 3;
/// The bound on a cross-replica delay (expected well under a second).
const VISIBLE_WITHIN: Duration = Duration::from_secs(10);
/// The bound on a controller's work (a namespace emptied and removed, a workspace made Ready).
const CONTROLLERS_WITHIN: Duration = Duration::from_secs(20);

/// Static tokens (the file every replica reads): the system administrator, and the `admin` and `carol` (no
/// grants) of tenant `vis`.
const ROOT: &str = "root-token";
const VIS_ADMIN: &str = "vis-admin-token";
const CAROL: &str = "carol-token";
const TOKENS: &str = "root-token,root,u-root,\"system:masters\"\n\
                      vis-admin-token,admin,u-vis-admin,\"\",,vis\n\
                      carol-token,carol,u-carol,\"\",,vis\n";

/// Leader election shortened for the tests (kube-controller-manager's flags).
const LEADER_ELECTION: [&str; 6] =
    ["--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms"];

const LEASE: &str = "/clusters/system:admin/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kspaces-controllers";

struct Fixture {
    etcd: EtcdCluster,
    /// The replicas' shared data dir, inside the etcd cluster's folder (removed with it).
    dir: PathBuf,
    tokens: PathBuf,
    replicas: Vec<Replica>,
}

impl Fixture {
    fn start() -> Fixture {
        let started = Instant::now();
        let etcd = EtcdCluster::start(3);
        eprintln!("etcd: 3 members healthy in {:?} at {}", started.elapsed(), etcd.endpoints());
        let dir = etcd.root().join("kspaces");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let tokens = etcd.root().join("tokens.csv");
        std::fs::write(&tokens, TOKENS).unwrap_or_else(|e| panic!("{e}"));
        let mut fixture = Fixture { etcd, dir, tokens, replicas: Vec::new() };
        for _ in 0..REPLICAS {
            let replica = fixture.start_replica();
            fixture.replicas.push(replica);
        }
        fixture
    }

    /// One more replica (started alone: each writes the shared admin.kubeconfig).
    fn start_replica(&self) -> Replica {
        let endpoints = self.etcd.endpoints();
        let tokens = self.tokens.to_str().unwrap_or_else(|| panic!("a UTF-8 temp path"));
        let mut flags = vec!["--storage-backend", "etcd", "--etcd-servers", &endpoints, "--token-auth-file", tokens];
        flags.extend(LEADER_ELECTION);
        let replica = Server::start_replica(&self.dir, &flags);
        eprintln!("replica pid {} serving on {} after {:?}", replica.pid(), replica.url, replica.startup);
        replica
    }

    /// Restarts the etcd members and replaces the replicas an earlier test killed, then waits until every replica
    /// writes to etcd again, so that a test sees no aftermath of an earlier one's faults.
    fn heal(&mut self) {
        for i in 0..self.etcd.len() {
            if !self.etcd.running(i) {
                eprintln!("etcd member {i} is down; restarting it:\n{}", self.etcd.describe());
                self.etcd.restart(i);
            }
        }
        for i in 0..self.replicas.len() {
            if !self.replicas[i].running() {
                self.replicas[i] = self.start_replica();
            }
        }
        // Five writes in a row through each replica (an update of its own ConfigMap, made by the first).
        for (i, replica) in self.replicas.iter().enumerate() {
            let path = format!("/api/v1/namespaces/default/configmaps/settle-{i}");
            let (mut in_a_row, mut failed, mut n) = (0, Vec::new(), 0);
            let settled = poll(Duration::from_secs(30), || {
                n += 1;
                let object = json!({"metadata": {"name": format!("settle-{i}")}, "data": {"n": n.to_string()}});
                let (code, body) = match call(replica, Http::One, ROOT, "PUT", &path, Some(&object)) {
                    (404, _) => call(replica, Http::One, ROOT, "POST", "/api/v1/namespaces/default/configmaps", Some(&object)),
                    answer => answer,
                };
                if code == 200 || code == 201 {
                    in_a_row += 1;
                } else {
                    in_a_row = 0;
                    failed.push(format!("{code} {body}"));
                }
                in_a_row == 5
            });
            let Some(took) = settled else {
                panic!(
                    "replica {i} (pid {}) did not write five times in a row within 30 s; its last failures:\n{}\n{}",
                    replica.pid(),
                    failed[failed.len().saturating_sub(3)..].join("\n"),
                    self.etcd.describe()
                )
            };
            if !failed.is_empty() {
                eprintln!("replica {i} settled after {took:?} and {} failed writes, the first: {}", failed.len(), failed[0]);
            }
        }
    }
}

/// The file's cluster, healed, for one test at a time.
fn fixture() -> MutexGuard<'static, Fixture> {
    static FIXTURE: OnceLock<Mutex<Fixture>> = OnceLock::new();
    let mut fixture = FIXTURE.get_or_init(|| Mutex::new(Fixture::start())).lock().unwrap_or_else(PoisonError::into_inner);
    fixture.heal();
    fixture
}

// ---- Helpers ----

/// One curl request to a replica with a static token; the status and the body as JSON (else as a string).
fn call(replica: &Replica, http: Http, token: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let text = body.map(Value::to_string);
    let (code, answer) = curl_url(&replica.url, http, Some(token), method, path, text.as_deref());
    (code, serde_json::from_str(&answer).unwrap_or(Value::String(answer)))
}

fn get(replica: &Replica, token: &str, path: &str) -> (u16, Value) {
    call(replica, Http::One, token, "GET", path, None)
}

/// Polls `probe` every 20 ms until it holds; returns how long that took, or panics after `within` naming `what`.
fn wait_for(what: &str, within: Duration, probe: impl FnMut() -> bool) -> Duration {
    let took = poll(within, probe).unwrap_or_else(|| panic!("{what}: not within {within:?}"));
    eprintln!("{what}: {took:?}");
    took
}

/// Polls `probe` every 20 ms until it holds (how long that took) or `within` has passed (`None`).
fn poll(within: Duration, mut probe: impl FnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    loop {
        if probe() {
            return Some(started.elapsed());
        }
        if started.elapsed() >= within {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs a future of kube-rs calls to completion.
fn block_on<T>(future: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}")).block_on(future)
}

fn configmap(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()),
            ..ObjectMeta::default()
        },
        data: Some([("written".to_owned(), name.to_owned())].into()),
        ..ConfigMap::default()
    }
}

/// The system administrator creates namespace `name` through `replica` (its own space).
fn create_namespace(replica: &Replica, name: &str) {
    let (code, body) = call(replica, Http::One, ROOT, "POST", "/api/v1/namespaces", Some(&json!({"metadata": {"name": name}})));
    assert_eq!(code, 201, "create namespace {name}: {body}");
}

/// The Lease's holder as `replica` serves it, if there is one.
fn lease_holder(replica: &Replica) -> Option<String> {
    let (code, lease) = get(replica, ROOT, LEASE);
    (code == 200).then(|| lease["spec"]["holderIdentity"].as_str().map(str::to_owned)).flatten()
}

/// The pid in a holder identity `<hostname>_<pid>_<8 hex>`.
fn holder_pid(identity: &str) -> u32 {
    let parts: Vec<&str> = identity.rsplitn(3, '_').collect();
    assert_eq!(parts.len(), 3, "holderIdentity {identity:?} is not <hostname>_<pid>_<random>");
    assert!(parts[0].len() == 8 && parts[0].chars().all(|c| c.is_ascii_hexdigit()), "holderIdentity {identity:?}: the random part is not 8 hex");
    parts[1].parse().unwrap_or_else(|e| panic!("holderIdentity {identity:?}: the pid: {e}"))
}

/// The index of the replica holding the Lease, as `reader` serves it, once it names a live replica.
fn leader(replicas: &mut [Replica], reader: usize) -> usize {
    leader_but(replicas, reader, None)
}

/// The replica the Lease names, once it names a live one other than `not` (a leader just told to stop may still
/// hold the Lease for the few milliseconds its release takes).
fn leader_but(replicas: &mut [Replica], reader: usize, not: Option<usize>) -> usize {
    let mut found = None;
    wait_for("the Lease names a live replica", CONTROLLERS_WITHIN, || {
        // No holder: a leader gave the Lease up and nobody has taken it yet.
        let Some(holder) = lease_holder(&replicas[reader]).filter(|h| !h.is_empty()) else { return false };
        let pid = holder_pid(&holder);
        found = replicas.iter_mut().position(|r| r.pid() == pid && r.running()).filter(|&index| Some(index) != not);
        found.is_some()
    });
    found.unwrap_or_else(|| panic!("no leader"))
}

fn workspace(name: &str) -> String {
    format!("apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\n")
}

// ---- 1. What one replica creates, the others serve ----

#[test]
fn tenants_crds_rbac_namespaces_and_workspaces_made_through_one_replica_are_served_by_the_others() {
    let f = fixture();
    let (r1, r2) = (&f.replicas[0], &f.replicas[1]);

    // A tenant, and its admin acting through the other replica.
    assert_eq!(create_tenant(&r1.kubectl(), "vis").trim(), "tenant/vis created");
    wait_for("tenant vis created through replica 1 is served by replica 2", VISIBLE_WITHIN, || {
        get(r2, ROOT, "/api/v1/tenants/vis").0 == 200
    });
    let listed = r2.kubectl().ok(&["get", "tenants", "-o", "name"]);
    assert!(listed.lines().any(|l| l == "tenant/vis"), "replica 2 lists: {listed}");
    let admin1 = Kubectl::new(&r1.certificate_kubeconfig("vis", "admin", &[], &r1.url));
    let admin2 = Kubectl::new(&r2.certificate_kubeconfig("vis", "admin", &[], &r2.url));
    wait_for("vis's admin creates a ConfigMap through replica 2", VISIBLE_WITHIN, || {
        admin2.run(&["create", "configmap", "from-r2", "-n", "default", "--from-literal=k=v"]).status.success()
    });
    let kubeconfig1 = r1.certificate_kubeconfig("vis", "admin", &[], &r1.url);
    let read = block_on(async {
        let client = kube_client(&kubeconfig1).await?;
        Api::<ConfigMap>::namespaced(client, "default").get("from-r2").await
    })
    .unwrap_or_else(|e| panic!("kube-rs reads from-r2 through replica 1: {e}"));
    assert_eq!(read.data.unwrap_or_default().get("k").map(String::as_str), Some("v"));

    // A CRD made through replica 1 serves its custom resources through replica 2.
    admin1.ok_with_stdin(&["apply", "-f", "-"], WIDGET_CRD);
    let widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {size: 5}\n";
    wait_for("a Widget (CRD made through replica 1) is created through replica 2", VISIBLE_WITHIN, || {
        admin2.run_with_stdin(&["create", "-f", "-"], widget).status.success()
    });
    assert_eq!(admin2.ok(&["get", "widget", "w1", "-n", "default", "-o", "jsonpath={.spec.size}"]), "5");
    let (code, body) = get(r1, VIS_ADMIN, "/apis/example.com/v1/namespaces/default/widgets/w1");
    assert_eq!((code, &body["spec"]["size"]), (200, &json!(5)), "{body}");

    // A Role and RoleBinding made through replica 1 authorize carol on replica 2.
    let path = "/api/v1/namespaces/default/configmaps";
    let by_carol = json!({"metadata": {"name": "by-carol"}});
    let denied = call(r2, Http::Two, CAROL, "POST", path, Some(&by_carol));
    assert_eq!(denied.0, 403, "carol has no grant yet: {}", denied.1);
    admin1.ok_with_stdin(
        &["apply", "-f", "-"],
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: cm-writer, namespace: default}\n\
         rules: [{apiGroups: [\"\"], resources: [configmaps], verbs: [get, list, create]}]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: cm-writer-carol, namespace: default}\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-writer}\n\
         subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}]\n",
    );
    wait_for("carol's RoleBinding made through replica 1 lets her create through replica 2", VISIBLE_WITHIN, || {
        let (code, body) = call(r2, Http::Two, CAROL, "POST", path, Some(&by_carol));
        assert!(code == 201 || code == 403, "carol's create: {code} {body}");
        code == 201
    });
    assert_eq!(call(r2, Http::Two, CAROL, "GET", &format!("{path}/by-carol"), None).0, 200);

    // A namespace made through replica 2 is served by replica 1.
    admin2.ok(&["create", "namespace", "made-on-r2"]);
    wait_for("namespace made-on-r2 created through replica 2 is served by replica 1", VISIBLE_WITHIN, || {
        get(r1, VIS_ADMIN, "/api/v1/namespaces/made-on-r2").0 == 200
    });
    admin1.ok(&["create", "configmap", "in-made-on-r2", "-n", "made-on-r2"]);

    // A workspace made through replica 1 is Ready and served through replica 2.
    let in_vis = Kubectl::new(&r1.kubeconfig_for_url(&format!("{}/clusters/root:vis", r1.url)));
    in_vis.ok_with_stdin(&["create", "-f", "-"], &workspace("ws1"));
    wait_for("workspace ws1 created through replica 1 is Ready on replica 2", CONTROLLERS_WITHIN, || {
        get(r2, ROOT, "/clusters/root:vis/apis/tenancy.kcp.io/v1alpha1/workspaces/ws1").1["status"]["phase"] == "Ready"
    });
    let (code, namespaces) = get(r2, ROOT, "/clusters/root:vis:ws1/api/v1/namespaces");
    assert_eq!((code, &namespaces["kind"]), (200, &json!("NamespaceList")), "{namespaces}");
}

// ---- 2. Watches across replicas ----

/// NamespaceLifecycle holds what it knows of the namespaces creates go to (`kinds/namespace.rs`). A namespace
/// another replica starts terminating refuses creates on this one once the caches' feed has told it (until then
/// one may be admitted, as kube's informer lag allows); once the namespace is gone, creates get 404.
#[test]
fn a_namespace_terminating_through_one_replica_refuses_creates_through_the_others() {
    let f = fixture();
    let (r1, r2) = (&f.replicas[0], &f.replicas[1]);
    let (namespace, path) = ("held-across", "/api/v1/namespaces/held-across/configmaps");
    create_namespace(r1, namespace);
    // The first create through replica 2 reads the namespace and holds it as active; the finalizer keeps the
    // namespace terminating once it is deleted.
    let pinned = json!({"metadata": {"name": "pin", "finalizers": ["example.com/hold"]}});
    let (code, body) = call(r2, Http::Two, ROOT, "POST", path, Some(&pinned));
    assert_eq!(code, 201, "{body}");
    let (code, body) = call(r1, Http::Two, ROOT, "DELETE", &format!("/api/v1/namespaces/{namespace}"), None);
    assert_eq!(code, 200, "{body}");
    let attempt = AtomicUsize::new(0);
    let create_through_r2 = || {
        let name = format!("late-{}", attempt.fetch_add(1, Ordering::Relaxed));
        call(r2, Http::Two, ROOT, "POST", path, Some(&json!({"metadata": {"name": name}})))
    };
    wait_for("replica 2 refuses creates in a namespace terminating through replica 1", VISIBLE_WITHIN, || {
        let (code, body) = create_through_r2();
        assert!(code == 201 || code == 403, "a create while the namespace terminates: {code} {body}");
        code == 403 && body["message"].as_str().is_some_and(|m| m.contains("because it is being terminated"))
    });
    // Lifting the finalizer (an update through replica 1) lets the namespace go.
    let pin = format!("{path}/pin");
    let (code, mut lifted) = get(r1, ROOT, &pin);
    assert_eq!(code, 200, "{lifted}");
    lifted["metadata"]["finalizers"] = json!([]);
    let (code, body) = call(r1, Http::One, ROOT, "PUT", &pin, Some(&lifted));
    assert_eq!(code, 200, "{body}");
    wait_for("replica 2 answers 404 for a create in the namespace once it is gone", CONTROLLERS_WITHIN, || {
        let (code, body) = create_through_r2();
        assert!(code == 403 || code == 404, "a create while the namespace goes: {code} {body}");
        code == 404
    });
}

#[test]
fn a_watch_on_one_replica_sees_what_the_others_write_once_each_in_order_and_resumes_on_another() {
    let f = fixture();
    let (r1, r2, r3) = (&f.replicas[0], &f.replicas[1], &f.replicas[2]);
    let ns = "watch-order";
    create_namespace(r1, ns);
    for replica in [r2, r3] {
        wait_for("namespace watch-order on another replica", VISIBLE_WITHIN, || get(replica, ROOT, &format!("/api/v1/namespaces/{ns}")).0 == 200);
    }
    // With --output-watch-events the columns read the event (type, object).
    let columns = "custom-columns=EVENT:.type,NAME:.object.metadata.name,RV:.object.metadata.resourceVersion";
    let mut watch = WatchOutput::start(&r2.kubectl(), &["get", "configmaps", "-n", ns, "-l", "scale-out=watch", "-w", "--output-watch-events", "-o", columns]);

    const N: usize = 20;
    let created: Vec<(String, String)> = block_on(async {
        let writers = [kube_client(&r1.kubeconfig).await?, kube_client(&r3.kubeconfig).await?];
        let mut created = Vec::new();
        for i in 1..=N {
            let api = Api::<ConfigMap>::namespaced(writers[i % 2].clone(), ns);
            let name = format!("cm-{i:02}");
            let object = api.create(&PostParams::default(), &configmap(&name, &[("scale-out", "watch")])).await?;
            created.push((name, object.metadata.resource_version.unwrap_or_default()));
        }
        Ok::<_, kube::Error>(created)
    })
    .unwrap_or_else(|e| panic!("creating the ConfigMaps through replicas 1 and 3: {e}"));

    let added = |line: &str| line.split_whitespace().next() == Some("ADDED");
    let started = Instant::now();
    assert!(watch.wait_for_nth(VISIBLE_WITHIN, N, added), "the watch on replica 2 saw fewer than {N} ADDED:\n{}", watch.transcript());
    eprintln!("the watch on replica 2 saw the last create {:?} after it returned", started.elapsed());
    // Anything more (a duplicate) would come now.
    watch.wait_for(Duration::from_secs(1), |_| false);
    let events: Vec<Vec<&str>> = watch.lines().iter().filter(|l| !l.starts_with("EVENT")).map(|l| l.split_whitespace().collect()).collect();
    let seen: Vec<(String, String)> = events.iter().map(|cells| (cells.get(1).map_or("", |c| c).to_owned(), cells.get(2).map_or("", |c| c).to_owned())).collect();
    assert!(events.iter().all(|cells| cells.first() == Some(&"ADDED")), "only ADDED events:\n{}", watch.transcript());
    assert_eq!(seen, created, "each create once, in resourceVersion order:\n{}", watch.transcript());
    let revisions: Vec<u64> = created.iter().map(|(_, rv)| rv.parse().unwrap_or_else(|e| panic!("resourceVersion {rv}: {e}"))).collect();
    assert!(revisions.windows(2).all(|w| w[0] < w[1]), "resourceVersions increase: {revisions:?}");

    // Resuming on replica 3 from the 10th object's resourceVersion (returned by replica 1 or 3) gives 11..20.
    let from = &created[9].1;
    let path = format!("/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion={from}&labelSelector=scale-out%3Dwatch&timeoutSeconds=2");
    let (code, body) = curl_url(&r3.url, Http::Two, Some(ROOT), "GET", &path, None);
    assert_eq!(code, 200, "{body}");
    let resumed: Vec<(String, String)> = body
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let event: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("a watch event ({e}): {line}"));
            assert_eq!(event["type"], "ADDED", "{line}");
            let meta = &event["object"]["metadata"];
            (meta["name"].as_str().unwrap_or_default().to_owned(), meta["resourceVersion"].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    assert_eq!(resumed, created[10..].to_vec(), "the watch resumed on replica 3 from {from}:\n{body}");
}

// ---- 3. Leader election ----

#[test]
fn controllers_run_on_the_lease_holder_and_move_to_another_replica_when_it_is_killed() {
    let mut f = fixture();
    let live: Vec<u32> = f.replicas.iter().map(Replica::pid).collect();
    let old = leader(&mut f.replicas, 0);
    let old_pid = f.replicas[old].pid();
    let follower = (old + 1) % REPLICAS;
    eprintln!("replica {old} (pid {old_pid}) holds the Lease; replicas {live:?}");

    // The system administrator reads it with kubectl too, through a follower.
    let system_admin = Kubectl::new(&f.replicas[follower].kubeconfig_for_url(&format!("{}/clusters/system:admin", f.replicas[follower].url)));
    let lease: Value = serde_json::from_str(&system_admin.ok(&["get", "lease", "kspaces-controllers", "-n", "kube-system", "-o", "json"]))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(holder_pid(lease["spec"]["holderIdentity"].as_str().unwrap_or_default()), old_pid, "{lease}");
    assert!(lease["spec"]["leaseDurationSeconds"].as_i64() == Some(4), "--leader-elect-lease-duration 4s: {lease}");

    // Each replica's /metrics says whether it leads, as client-go's elector does.
    for (i, replica) in f.replicas.iter().enumerate() {
        let text = replica.kubectl().ok(&["get", "--raw", "/metrics"]);
        let wanted = format!(r#"leader_election_master_status{{name="kspaces-controllers"}} {}"#, u8::from(i == old));
        assert!(text.lines().any(|l| l == wanted), "replica {i}: no line {wanted:?}");
    }

    // A namespace deleted through a follower is emptied and removed (by the leader's controller).
    delete_namespace_and_wait(&f.replicas[follower], "doomed-before");

    // The leader dies; another live replica takes the Lease.
    f.replicas[old].kill();
    let killed = Instant::now();
    let survivor = (old + 1) % REPLICAS;
    let new = leader(&mut f.replicas, survivor);
    let took = killed.elapsed();
    eprintln!("the Lease moved from pid {old_pid} to pid {} {took:?} after the kill", f.replicas[new].pid());
    assert_ne!(new, old);
    assert!(took < Duration::from_secs(30), "the Lease moved only after {took:?}");

    // The controllers run on the new leader: a namespace deletion completes, a new tenant's workspace is Ready.
    let survivor = &f.replicas[survivor];
    delete_namespace_and_wait(survivor, "doomed-after");
    assert_eq!(create_tenant(&survivor.kubectl(), "after-failover").trim(), "tenant/after-failover created");
    let (code, cluster) = get(survivor, ROOT, "/clusters/root:after-failover/apis/core.kcp.io/v1alpha1/logicalclusters/cluster");
    assert_eq!(code, 200, "the new tenant's LogicalCluster: {cluster}");
    let (code, namespaces) = get(survivor, ROOT, "/clusters/root:after-failover/api/v1/namespaces");
    let names: Vec<&str> = namespaces["items"].as_array().into_iter().flatten().filter_map(|n| n["metadata"]["name"].as_str()).collect();
    assert!(code == 200 && names.contains(&"default"), "the new tenant's namespaces: {namespaces}");
    let in_tenant = Kubectl::new(&survivor.kubeconfig_for_url(&format!("{}/clusters/root:after-failover", survivor.url)));
    in_tenant.ok_with_stdin(&["create", "-f", "-"], &workspace("after"));
    wait_for("a workspace created after the failover is Ready", CONTROLLERS_WITHIN, || {
        in_tenant.ok(&["get", "workspace", "after", "-o", "jsonpath={.status.phase}"]) == "Ready"
    });
}

/// Creates namespace `name` with a ConfigMap through `replica`, deletes it there and waits until it is gone.
fn delete_namespace_and_wait(replica: &Replica, name: &str) {
    create_namespace(replica, name);
    let (code, body) = call(replica, Http::One, ROOT, "POST", &format!("/api/v1/namespaces/{name}/configmaps"), Some(&json!({"metadata": {"name": "content"}})));
    assert_eq!(code, 201, "{body}");
    let (code, body) = call(replica, Http::Two, ROOT, "DELETE", &format!("/api/v1/namespaces/{name}"), None);
    assert_eq!(code, 200, "delete namespace {name}: {body}");
    wait_for(&format!("namespace {name} deleted through pid {} is gone", replica.pid()), CONTROLLERS_WITHIN, || {
        get(replica, ROOT, &format!("/api/v1/namespaces/{name}")).0 == 404
    });
}

// ---- 4. Limits ----

/// `status.quota` of tenant `tenant`'s LogicalCluster as `replica` shows it.
fn space_quota(replica: &Replica, tenant: &str) -> Value {
    let (code, body) = get(replica, ROOT, &format!("/clusters/root:{tenant}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"));
    assert_eq!(code, 200, "{body}");
    body["status"]["quota"].clone()
}

/// Sets tenant `tenant`'s object limit (`None`: lifts it) through `replica`.
fn limit_objects(replica: &Replica, tenant: &str, limit: Option<i64>) {
    let patch = json!({"metadata": {"annotations": {"core.kcp.io/max-total-objects": limit.map(|l| l.to_string())}}}).to_string();
    let path = format!("{}/clusters/root:{tenant}", replica.url);
    replica.kubectl().ok(&["--server", &path, "patch", "logicalcluster", "cluster", "--type=merge", "-p", &patch]);
}

/// What tenant `tenant` stores in all, as `replica` counts it once its tally is counted.
fn counted_objects(replica: &Replica, tenant: &str) -> i64 {
    let mut objects = -1;
    wait_for("the space's usage is counted", VISIBLE_WITHIN, || {
        let quota = space_quota(replica, tenant);
        objects = quota["used"]["objects"].as_str().and_then(|o| o.parse().ok()).unwrap_or(-1);
        objects >= 0
    });
    objects
}

/// Creates tenant `tenant` through the first replica; once every replica serves its `default` namespace, the path of
/// its ConfigMaps there.
fn tenant_served_by_all(replicas: &[Replica], tenant: &str) -> String {
    create_tenant(&replicas[0].kubectl(), tenant);
    let configmaps = format!("/clusters/root:{tenant}/api/v1/namespaces/default/configmaps");
    wait_for("every replica serves the new tenant's default namespace", VISIBLE_WITHIN, || {
        replicas.iter().all(|r| get(r, ROOT, &configmaps).0 == 200)
    });
    configmaps
}

#[test]
fn a_space_limit_holds_across_replicas_writing_at_once() {
    let f = fixture();
    let tenant = "lim";
    let (r1, r2, r3) = (&f.replicas[0], &f.replicas[1], &f.replicas[2]);
    let configmaps = tenant_served_by_all(&f.replicas, tenant);
    // Counted under a far limit, then lifted.
    limit_objects(r1, tenant, Some(1_000_000));
    let before = counted_objects(r1, tenant);
    limit_objects(r1, tenant, None);
    wait_for("the lifted limit leaves no status.quota", VISIBLE_WITHIN, || space_quota(r1, tenant).is_null());
    // Limited again while two other replicas create: whatever the count read as of the tally's making and what
    // the writes after it added make exactly what is stored.
    let stop = AtomicBool::new(false);
    let made = AtomicUsize::new(0);
    let stored = std::thread::scope(|scope| {
        for (w, replica) in [r2, r3].into_iter().enumerate() {
            let (stop, made, configmaps) = (&stop, &made, &configmaps);
            scope.spawn(move || {
                for n in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let object = json!({"metadata": {"name": format!("during-{w}-{n}")}});
                    let (code, body) = call(replica, Http::One, ROOT, "POST", configmaps, Some(&object));
                    assert!(code == 201 || code == 503, "a create while the limit is set: {code} {body}");
                    if code == 201 {
                        made.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        std::thread::sleep(Duration::from_millis(300));
        limit_objects(r1, tenant, Some(1_000_000));
        let counted = counted_objects(r1, tenant);
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::Relaxed);
        counted
    });
    let made = made.load(Ordering::Relaxed) as i64;
    eprintln!("{made} ConfigMaps created through replicas 2 and 3 while the limit was set");
    assert!(made > 0 && stored >= before, "{made} {stored} {before}");
    for replica in &f.replicas {
        wait_for("every replica shows the usage of what is stored", VISIBLE_WITHIN, || counted_objects(replica, tenant) == before + made);
    }
    let stored = before + made;
    // Limited to what it stores plus 10.
    limit_objects(r2, tenant, Some(stored + 10));
    wait_for("the new limit is in the tally", VISIBLE_WITHIN, || {
        space_quota(r2, tenant)["hard"]["objects"] == json!((stored + 10).to_string())
    });

    // 64 clients at once, spread over the three replicas and both HTTP versions.
    let answers: Vec<(u16, Value)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..64)
            .map(|i| {
                let (replica, configmaps) = (&f.replicas[i % REPLICAS], &configmaps);
                let http = if i % 2 == 0 { Http::One } else { Http::Two };
                scope.spawn(move || call(replica, http, ROOT, "POST", configmaps, Some(&json!({"metadata": {"name": format!("race-{i}")}}))))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| panic!("a client"))).collect()
    });
    let codes: Vec<u16> = answers.iter().map(|(code, _)| *code).collect();
    assert_eq!(codes.iter().filter(|c| **c == 201).count(), 10, "exactly the room left, whichever replica: {codes:?}");
    for (code, body) in answers.iter().filter(|(code, _)| *code != 201) {
        assert_eq!(*code, 403, "{body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.contains("exceeded quota: cluster, requested: objects=1") && message.contains(&format!("limited: objects={}", stored + 10)),
            "{body}");
    }
    let (_, listed) = get(r3, ROOT, &configmaps);
    let is_race = |item: &&Value| item["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("race-"));
    let races = listed["items"].as_array().map_or(0, |items| items.iter().filter(is_race).count());
    assert_eq!(races, 10, "stored: exactly 10");
    assert_eq!(counted_objects(r1, tenant), stored + 10, "the usage every replica's writes added");

    // A deletion through one replica makes room for one create through another, and no more.
    let made = answers.iter().position(|(code, _)| *code == 201).unwrap_or_else(|| panic!("a create"));
    let (code, body) = call(r2, Http::One, ROOT, "DELETE", &format!("{configmaps}/race-{made}"), None);
    assert_eq!(code, 200, "{body}");
    assert_eq!(call(r3, Http::Two, ROOT, "POST", &configmaps, Some(&json!({"metadata": {"name": "after"}}))).0, 201);
    let (code, body) = call(r1, Http::One, ROOT, "POST", &configmaps, Some(&json!({"metadata": {"name": "over"}})));
    assert_eq!(code, 403, "{body}");

    // Lifted through one replica: the others create again.
    limit_objects(r3, tenant, None);
    wait_for("once the limit is lifted, replica 1 creates again", VISIBLE_WITHIN, || {
        call(r1, Http::One, ROOT, "POST", &configmaps, Some(&json!({"metadata": {"name": "free"}}))).0 == 201
    });
    assert_eq!(call(r2, Http::Two, ROOT, "POST", &configmaps, Some(&json!({"metadata": {"name": "free-2"}}))).0, 201);
}

/// A tally left uncounted by the replica that made it (as if it died right after making it) is counted by another
/// once its grace is over: as of the tally's making, plus what writes added since.
#[test]
fn an_uncounted_tally_left_by_a_dead_replica_is_counted_by_another() {
    let f = fixture();
    let tenant = "lim-orphan";
    let (r1, r2, r3) = (&f.replicas[0], &f.replicas[1], &f.replicas[2]);
    let configmaps = tenant_served_by_all(&f.replicas, tenant);
    for name in ["pre-0", "pre-1"] {
        let (code, body) = call(r1, Http::One, ROOT, "POST", &configmaps, Some(&json!({"metadata": {"name": name}})));
        assert_eq!(code, 201, "{body}");
    }
    limit_objects(r1, tenant, Some(1_000_000));
    let before = counted_objects(r1, tenant);
    // The tally made again straight in etcd, with the same limits and nothing counted: no replica made it.
    let etcd = kspaces_storage::etcd::EtcdConfig::new(f.etcd.endpoints().split(',').map(str::to_owned).collect());
    let key = format!("/registry//kspaces-tally/{tenant}").into_bytes();
    let orphan = block_on(async {
        use kspaces_storage::etcd::proto::etcdserverpb::{DeleteRangeRequest, PutRequest, RangeRequest};
        let mut kv = kspaces_storage::etcd::kv_client(&etcd).map_err(|e| e.to_string())?;
        let read = kv.range(RangeRequest { key: key.clone(), ..RangeRequest::default() }).await.map_err(|e| e.to_string())?.into_inner();
        let made: Value = serde_json::from_slice(&read.kvs.first().ok_or("no tally")?.value).map_err(|e| e.to_string())?;
        let orphan = json!({"maxObjects": made["maxObjects"], "limitsRevision": made["limitsRevision"], "objects": 0, "bytes": 0, "counted": false});
        kv.delete_range(DeleteRangeRequest { key: key.clone(), ..DeleteRangeRequest::default() }).await.map_err(|e| e.to_string())?;
        kv.put(PutRequest { key: key.clone(), value: orphan.to_string().into_bytes(), ..PutRequest::default() }).await.map_err(|e| e.to_string())?;
        Ok::<Value, String>(orphan)
    })
    .unwrap_or_else(|e| panic!("the orphan tally: {e}"));
    wait_for("every replica shows the tally uncounted", VISIBLE_WITHIN, || f.replicas.iter().all(|r| space_quota(r, tenant)["used"].is_null()));
    // Writes that need no room are added to it at once; a create waits for the count, which a replica that did not
    // make the tally does after its grace.
    for (replica, name) in [(r2, "pre-0"), (r3, "pre-1")] {
        let (code, body) = call(replica, Http::One, ROOT, "DELETE", &format!("{configmaps}/{name}"), None);
        assert_eq!(code, 200, "{body}");
    }
    let sent = Instant::now();
    let (code, body) = call(r1, Http::Two, ROOT, "POST", &configmaps, Some(&json!({"metadata": {"name": "after"}})));
    assert_eq!(code, 201, "{body}");
    eprintln!("the create waited {:?} for the count of the orphan {orphan}", sent.elapsed());
    for replica in &f.replicas {
        wait_for("every replica shows the usage of what is stored", VISIBLE_WITHIN, || counted_objects(replica, tenant) == before - 2 + 1);
    }
}

// ---- 5. Faults ----

#[test]
fn with_one_etcd_member_down_every_replica_still_creates_and_reads() {
    let mut f = fixture();
    let leader = f.etcd.leader().unwrap_or_else(|| panic!("the etcd cluster has no leader"));
    // A follower first (the replicas connected to it move to the others), then the leader (an election).
    let follower = (leader + 1) % f.etcd.len();
    let mut failures = Vec::new();
    for (down, which) in [(follower, "a follower"), (leader, "the leader")] {
        f.etcd.kill(down);
        eprintln!("etcd member {down} ({which}) killed");
        let mut failed = create_and_read_through_each(&f.replicas, &format!("member-{down}-down"));
        if down == leader {
            // A write in flight while etcd elects a new leader may fail (etcd answers "leader changed"; kube-apiserver
            // answers an error then too): only that is forgiven.
            failed.retain(|failure| !failure.contains("etcdserver: leader changed"));
        }
        failures.extend(failed);
        f.etcd.restart(down);
        eprintln!("etcd member {down} restarted");
        failures.extend(create_and_read_through_each(&f.replicas, &format!("member-{down}-back")));
    }
    assert!(failures.is_empty(), "requests that failed with one etcd member of three killed or just restarted:\n{}", failures.join("\n"));
}

/// Through each replica: a create, then a read of it through the next replica; each must succeed within 10 s.
/// Returns the failed attempts (each retried until 10 s have passed).
fn create_and_read_through_each(replicas: &[Replica], prefix: &str) -> Vec<String> {
    let mut failures = Vec::new();
    let path = "/api/v1/namespaces/default/configmaps";
    for (i, replica) in replicas.iter().enumerate() {
        let name = format!("{prefix}-{i}");
        let body = json!({"metadata": {"name": name}});
        // A create retried after an error may find the object the failed attempt stored.
        retry(&format!("{prefix}: create {name} through replica {i}"), &mut failures, |retried| {
            let (code, answer) = call(replica, Http::Two, ROOT, "POST", path, Some(&body));
            (code == 201 || (retried && code == 409), code, answer)
        });
        let j = (i + 1) % replicas.len();
        retry(&format!("{prefix}: read {name} through replica {j}"), &mut failures, |_| {
            let (code, answer) = get(&replicas[j], ROOT, &format!("{path}/{name}"));
            (code == 200, code, answer)
        });
    }
    failures
}

/// Runs `request` (told whether it is a retry) until it succeeds, recording each failure (a 5xx or no answer;
/// anything else fails the test), for at most 10 s.
fn retry(what: &str, failures: &mut Vec<String>, mut request: impl FnMut(bool) -> (bool, u16, Value)) {
    let started = Instant::now();
    let mut retried = false;
    loop {
        let (ok, code, body) = request(retried);
        if ok {
            eprintln!("{what}: {code} after {:?}", started.elapsed());
            return;
        }
        failures.push(format!("{what}: {code} {body} after {:?}", started.elapsed()));
        assert!(code >= 500 || code == 0, "{what}: {code} {body}");
        assert!(started.elapsed() < Duration::from_secs(10), "{what}: failing for 10 s:\n{}", failures.join("\n"));
        retried = true;
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn every_create_acknowledged_by_a_replica_killed_mid_stream_is_readable_through_another() {
    let mut f = fixture();
    let ns = "killed-writer";
    create_namespace(&f.replicas[0], ns);
    let victim = 2;
    wait_for("namespace killed-writer on the victim", VISIBLE_WITHIN, || get(&f.replicas[victim], ROOT, &format!("/api/v1/namespaces/{ns}")).0 == 200);
    let url = f.replicas[victim].url.clone();
    let acknowledged = Arc::new(AtomicUsize::new(0));
    let killed = Arc::new(AtomicBool::new(false));
    let writer = {
        let (acknowledged, killed) = (acknowledged.clone(), killed.clone());
        std::thread::spawn(move || {
            let (mut created, mut refused) = (Vec::new(), Vec::new());
            for i in 0..5000 {
                let name = format!("w-{i:04}");
                let body = json!({"metadata": {"name": name}}).to_string();
                let (code, answer) = curl_url(&url, Http::One, Some(ROOT), "POST", &format!("/api/v1/namespaces/{ns}/configmaps"), Some(&body));
                match code {
                    201 => {
                        created.push(name);
                        acknowledged.fetch_add(1, Ordering::SeqCst);
                    }
                    _ if killed.load(Ordering::SeqCst) => break,
                    _ => refused.push(format!("{name}: {code} {answer}")),
                }
            }
            (created, refused)
        })
    };
    wait_for("20 creates acknowledged by the replica about to be killed", VISIBLE_WITHIN, || acknowledged.load(Ordering::SeqCst) >= 20);
    killed.store(true, Ordering::SeqCst);
    f.replicas[victim].kill();
    let (created, refused) = writer.join().unwrap_or_else(|_| panic!("the writer panicked"));
    assert!(refused.is_empty(), "creates refused before the kill: {refused:?}");
    eprintln!("{} creates acknowledged before the kill", created.len());

    let reader = &f.replicas[0];
    let mut missing = Vec::new();
    wait_for("every acknowledged create readable through another replica", VISIBLE_WITHIN, || {
        let (code, list) = get(reader, ROOT, &format!("/api/v1/namespaces/{ns}/configmaps"));
        let names: Vec<&str> = list["items"].as_array().into_iter().flatten().filter_map(|c| c["metadata"]["name"].as_str()).collect();
        missing = created.iter().filter(|name| !names.contains(&name.as_str())).cloned().collect();
        code == 200 && missing.is_empty()
    });
    for name in [created.first(), created.last()].into_iter().flatten() {
        assert_eq!(get(&f.replicas[1], ROOT, &format!("/api/v1/namespaces/{ns}/configmaps/{name}")).0, 200, "{name}");
    }
}

#[test]
fn a_lost_quorum_answers_an_error_status_and_writes_resume_once_it_is_back() {
    let mut f = fixture();
    let down = [1, 2];
    for i in down {
        f.etcd.kill(i);
    }
    eprintln!("etcd members {down:?} killed: no quorum");
    // Through each replica at once (each reaches the live member or a dead one): an error Status, not a hang.
    let answers: Vec<(u16, String, Duration)> = std::thread::scope(|scope| {
        let creates: Vec<_> = f.replicas.iter().enumerate().map(|(i, r)| scope.spawn(move || slow_create(r, &format!("no-quorum-{i}")))).collect();
        creates.into_iter().map(|create| create.join().unwrap_or_else(|_| panic!("curl's thread panicked"))).collect()
    });
    for (i, (code, body, took)) in answers.into_iter().enumerate() {
        eprintln!("a create through replica {i} without quorum answered {code} after {took:?}: {body}");
        assert!(took < Duration::from_secs(70), "the create through replica {i} without quorum took {took:?}");
        assert!(code >= 500, "the create through replica {i} without quorum answered {code}: {body}");
        let status: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
        assert_eq!((&status["kind"], &status["code"]), (&json!("Status"), &json!(code)), "{status}");
    }

    for i in down {
        f.etcd.restart(i);
    }
    eprintln!("etcd members {down:?} restarted");
    for (i, replica) in f.replicas.iter().enumerate() {
        let name = format!("quorum-back-{i}");
        let mut last = (0, Value::Null);
        wait_for(&format!("a create through replica {i} (not restarted) once the quorum is back"), Duration::from_secs(30), || {
            last = call(replica, Http::One, ROOT, "POST", "/api/v1/namespaces/default/configmaps", Some(&json!({"metadata": {"name": name}})));
            // A failed attempt may have stored it.
            last.0 == 201 || last.0 == 409
        });
        let reader = &f.replicas[(i + 1) % REPLICAS];
        wait_for(&format!("{name} read through another replica"), VISIBLE_WITHIN, || {
            get(reader, ROOT, &format!("/api/v1/namespaces/default/configmaps/{name}")).0 == 200
        });
    }
}

/// A create with curl allowing 120 s (the helper's curl gives up after 60): the status, the body, the time taken.
fn slow_create(replica: &Replica, name: &str) -> (u16, String, Duration) {
    let started = Instant::now();
    let output = Command::new("curl")
        .args(["-sk", "--http1.1", "--max-time", "120", "-X", "POST", "-w", "\n%{http_code}", "-H", &format!("Authorization: Bearer {ROOT}")])
        .args(["-H", "Content-Type: application/json", "--data-binary", &json!({"metadata": {"name": name}}).to_string()])
        .arg(format!("{}/api/v1/namespaces/default/configmaps", replica.url))
        .output()
        .unwrap_or_else(|e| panic!("run curl: {e}"));
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), body.to_owned(), took)
}

#[test]
fn replicas_started_together_on_a_fresh_data_dir_share_one_ca_and_one_service_account_key() {
    let f = fixture();
    let dir = f.etcd.root().join(format!("together-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let endpoints = f.etcd.endpoints();
    // A prefix of their own: these replicas must not compete with the fixture's for its Lease.
    let flags = ["--storage-backend", "etcd", "--etcd-servers", &endpoints, "--etcd-prefix", "/together"];
    let (first, second) = std::thread::scope(|scope| {
        let one = scope.spawn(|| Server::start_replica(&dir, &flags));
        let two = scope.spawn(|| Server::start_replica(&dir, &flags));
        (one.join().unwrap_or_else(|_| panic!("start a replica")), two.join().unwrap_or_else(|_| panic!("start a replica")))
    });
    let authority = |replica: &Replica| {
        let kubeconfig = std::fs::read_to_string(&replica.kubeconfig).unwrap_or_else(|e| panic!("{e}"));
        kubeconfig.lines().find(|l| l.trim_start().starts_with("certificate-authority-data:")).map(str::to_owned)
    };
    assert!(authority(&first).is_some());
    assert_eq!(authority(&first), authority(&second), "both replicas made or read the same CA");
    // The first replica's credentials (signed by that CA) are good on the second, whose serving certificate the
    // CA signed too.
    let across = Kubectl::new(&first.kubeconfig_for_url(&second.url));
    assert!(across.ok(&["get", "namespaces", "-o", "name"]).lines().any(|l| l == "namespace/default"));
    // A service-account token one replica issues is accepted by the other.
    first.kubectl().ok(&["create", "serviceaccount", "bot", "-n", "default"]);
    let token = first.kubectl().ok(&["create", "token", "bot", "-n", "default"]);
    let (code, body) = curl_url(&second.url, Http::Two, Some(token.trim()), "GET", "/api", None);
    assert_eq!(code, 200, "{body}");
}

#[test]
fn a_leader_stopped_gracefully_gives_the_lease_up_at_once() {
    let mut f = fixture();
    let old = leader(&mut f.replicas, 0);
    let old_pid = f.replicas[old].pid();
    let survivor = (old + 1) % REPLICAS;
    f.replicas[old].terminate();
    let stopped = Instant::now();
    let new = leader_but(&mut f.replicas, survivor, Some(old));
    let took = stopped.elapsed();
    eprintln!("after SIGTERM of pid {old_pid} the Lease moved to pid {} in {took:?}", f.replicas[new].pid());
    assert_ne!(new, old);
    // Within about one retry period (500 ms), not the lease duration (4 s) an expiry would take.
    assert!(took < Duration::from_millis(2500), "the Lease moved only after {took:?}");
    f.replicas[old].kill();
}
