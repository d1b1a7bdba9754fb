//! `kspaces snapshot save | inspect | restore` with the real binary (docs/operations.md): a world made with kubectl
//! is saved from the stopped server, restored into a new data dir and served object for object as it was (uid,
//! resourceVersion, managedFields, finalizers, ownerReferences), with the same PKI; a damaged or cut snapshot is
//! refused with the problem named and nothing written; a restore killed with -9 leaves nothing `serve` accepts. Also
//! online (a running server streams `/snapshot` to system users only), from etcd, into etcd and `kspaces migrate`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use bytes::Bytes;
use kspaces_storage::snapshot::{Header, SnapshotWriter};
use kspaces_tests::etcd::EtcdCluster;
use kspaces_tests::{certificate_kubeconfig, create_tenant, eventually, kspaces_binary, kubeconfig_with_server_url, refused_start, Kubectl,
    Server, WIDGET_CRD};
use serde_json::Value;

fn kspaces(args: &[&str]) -> Output {
    Command::new(kspaces_binary()).args(args).stdin(Stdio::null()).output().expect("run kspaces")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Runs `kspaces args`, expecting success; its stdout.
fn succeeds(args: &[&str]) -> String {
    let out = kspaces(args);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "kspaces {args:?} failed: {stderr}");
    assert!(stderr.is_empty(), "no terminal, so no progress: {stderr:?}");
    stdout.into_owned()
}

/// Runs `kspaces args`, expecting a failure that is no panic; its stderr.
fn fails(args: &[&str]) -> String {
    let out = kspaces(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "kspaces {args:?} succeeded: {}", String::from_utf8_lossy(&out.stdout));
    assert!(!stderr.contains("panicked"), "a panic: {stderr}");
    stderr
}

const WORLD: &str = r#"apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: owner, namespace: app, labels: {tier: web}, annotations: {note: kept}}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: app, finalizers: [example.com/hold]}
data: {b: "2"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: app}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader-bob, namespace: app}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
"#;

/// The objects the test made, by `kind/name`, as the server returns them (everything, resourceVersion included).
fn world(tenant: &Kubectl) -> Vec<(String, Value)> {
    let listed = tenant.ok(&["get", "configmaps,secrets,roles,rolebindings,widgets", "-n", "app", "-o", "json"]);
    let crds = tenant.ok(&["get", "crd", "widgets.example.com", "-o", "json"]);
    let namespace = tenant.ok(&["get", "namespace", "app", "-o", "json"]);
    let list: Value = serde_json::from_str(&listed).expect("list JSON");
    let mut items: Vec<Value> = list["items"].as_array().expect("items").clone();
    items.push(serde_json::from_str(&crds).expect("crd JSON"));
    items.push(serde_json::from_str(&namespace).expect("namespace JSON"));
    let made = ["owner", "held", "owned", "big", "reader", "reader-bob", "w1", "widgets.example.com", "app"];
    let mut out: Vec<(String, Value)> = items
        .into_iter()
        .filter(|item| item["metadata"]["name"].as_str().is_some_and(|name| made.contains(&name) || name.starts_with("cm-")))
        .map(|item| (format!("{}/{}", item["kind"].as_str().unwrap_or("?"), item["metadata"]["name"].as_str().unwrap_or("?")), item))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Makes the world in tenant t1; returns the tenant admin's kubeconfig.
fn make_world(server: &Server) -> PathBuf {
    create_tenant(&server.kubectl(), "t1");
    let kubeconfig = certificate_kubeconfig(server, "t1", "admin", &[]);
    let tenant = Kubectl::new(&kubeconfig);
    tenant.ok_with_stdin(&["apply", "-f", "-"], WORLD);
    tenant.ok_with_stdin(&["apply", "-f", "-"], WIDGET_CRD);
    assert!(eventually(Duration::from_secs(20), || tenant.run(&["get", "widgets"]).status.success()), "the CRD is served");
    tenant.ok_with_stdin(&["apply", "-n", "app", "-f", "-"], "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n");
    let uid = tenant.ok(&["get", "configmap", "owner", "-n", "app", "-o", "jsonpath={.metadata.uid}"]);
    tenant.ok_with_stdin(&["apply", "-f", "-"], &format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owned\n  namespace: app\n  ownerReferences: [{{apiVersion: v1, kind: ConfigMap, name: owner, uid: {uid}}}]\ndata: {{c: '3'}}\n"));
    for n in 0..20 {
        tenant.ok(&["create", "configmap", &format!("cm-{n}"), "-n", "app", &format!("--from-literal=n={n}")]);
    }
    let secret = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(secret.path(), vec![b'k'; 900 * 1024]).expect("write the secret's data");
    tenant.ok(&["create", "secret", "generic", "big", "-n", "app", &format!("--from-file=data={}", path(secret.path()))]);
    kubeconfig
}

#[test]
fn a_restored_server_serves_every_object_as_it_was_and_nothing_written_after() {
    let server = Server::start();
    let made = make_world(&server);
    let before = world(&Kubectl::new(&made));
    assert_eq!(before.len(), 29, "the world as made: {:?}", before.iter().map(|(name, _)| name).collect::<Vec<_>>());
    let data_dir = server.stop();
    let files = tempfile::tempdir().expect("temp dir");
    // Kept apart from the data dir, which goes with the server started on it.
    let tenant_kubeconfig = files.path().join("t1-admin.kubeconfig");
    std::fs::copy(&made, &tenant_kubeconfig).expect("copy the tenant's kubeconfig");
    let snapshot = files.path().join("world.ksnap");
    let saved = succeeds(&["snapshot", "save", path(&snapshot), "--data-dir", path(data_dir.path())]);
    assert!(saved.starts_with("saved ") && saved.contains(" files at revision "), "one summary line: {saved}");
    assert!(!files.path().join("world.ksnap.tmp").exists(), "the temporary file is renamed");

    // Written after the snapshot: not in the restored server.
    let later = Server::start_in(data_dir, &[]);
    let late = Kubectl::new(&kubeconfig_with_server_url(&later, &tenant_kubeconfig, &later.url));
    late.ok(&["create", "configmap", "late", "-n", "app"]);
    drop(later);

    let inspected = succeeds(&["snapshot", "inspect", path(&snapshot)]);
    for wanted in ["revision: ", "files: pki/ca.crt, pki/ca.key", "\nsystem ", "\nt1 ", "total: ", "(verified)"] {
        assert!(inspected.contains(wanted), "inspect prints {wanted:?}: {inspected}");
    }
    let t1_bytes: u64 = inspected.lines().find(|line| line.starts_with("t1 ")).and_then(|line| line.split_whitespace().nth(2))
        .and_then(|bytes| bytes.parse().ok()).expect("t1's bytes");
    assert!(t1_bytes > 900 * 1024, "t1 holds the 900 KiB Secret: {inspected}");

    let restored_dir = tempfile::tempdir().expect("temp dir");
    let restored = succeeds(&["snapshot", "restore", path(&snapshot), "--data-dir", path(restored_dir.path())]);
    assert!(restored.starts_with("restored "), "one summary line: {restored}");
    let restored = Server::start_in(restored_dir, &[]);
    // The same CA: the tenant's kubeconfig made for the first server works against the restored one.
    let tenant = Kubectl::new(&kubeconfig_with_server_url(&restored, &tenant_kubeconfig, &restored.url));
    let after = world(&tenant);
    let names = |objects: &[(String, Value)]| objects.iter().map(|(name, _)| name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&after), names(&before));
    for ((name, was), (_, is)) in before.iter().zip(&after) {
        assert_eq!(is, was, "{name} is served as it was saved");
    }
    assert!(!tenant.run(&["get", "configmap", "late", "-n", "app"]).status.success(), "what was written after the snapshot is not there");
    // The restored server writes on from the snapshot's revision.
    let revision = |object: &Value| object["metadata"]["resourceVersion"].as_str().and_then(|rv| rv.parse::<u64>().ok()).expect("resourceVersion");
    let newest = before.iter().map(|(_, object)| revision(object)).max().unwrap_or_default();
    let made = tenant.ok(&["create", "configmap", "after-restore", "-n", "app", "-o", "jsonpath={.metadata.resourceVersion}"]);
    assert!(made.parse::<u64>().expect("a number") > newest, "{made} follows {newest}");
    // History before the snapshot is not kept: a watch from an older resourceVersion is told to relist.
    let old_watch = tenant.ok(&["get", "--raw", "/api/v1/namespaces/app/configmaps?watch=true&resourceVersion=1&timeoutSeconds=2"]);
    assert!(old_watch.contains("\"code\":410"), "a watch from before the snapshot gets 410: {old_watch}");
    drop(files);
}

#[test]
fn a_snapshot_saved_from_etcd_restores_into_sled() {
    let etcd = EtcdCluster::start(1);
    let endpoints = etcd.endpoints();
    let flags = ["--storage-backend", "etcd", "--etcd-servers", &endpoints, "--etcd-prefix", "/snap"];
    let server = Server::start_with(&flags);
    server.kubectl().ok(&["create", "configmap", "from-etcd", "--from-literal=k=v"]);
    let was: Value = serde_json::from_str(&server.kubectl().ok(&["get", "configmap", "from-etcd", "-o", "json"])).expect("JSON");
    let data_dir = server.stop();
    let snapshot = data_dir.path().join("etcd.ksnap");
    let mut args = vec!["snapshot", "save", path(&snapshot), "--data-dir", path(data_dir.path())];
    args.extend_from_slice(&flags);
    succeeds(&args);
    let target = tempfile::tempdir().expect("temp dir");
    succeeds(&["snapshot", "restore", path(&snapshot), "--data-dir", path(target.path())]);
    let restored = Server::start_in(target, &["--etcd-prefix", "/snap"]);
    let is: Value = serde_json::from_str(&restored.kubectl().ok(&["get", "configmap", "from-etcd", "-o", "json"])).expect("JSON");
    assert_eq!(is, was, "the object is as it was in etcd, its resourceVersion included");
}

#[test]
fn progress_is_shown_on_a_terminal_and_not_with_quiet() {
    let dir = tempfile::tempdir().expect("temp dir");
    let snapshot = dir.path().join("big.ksnap");
    big_snapshot(&snapshot, 30_000);
    // `script` gives the command a terminal and copies what it drew.
    let on_terminal = |target: &str, quiet: bool| {
        let command = format!("{} snapshot restore {} --data-dir {}{}", path(&kspaces_binary()), path(&snapshot),
            path(&dir.path().join(target)), if quiet { " --quiet" } else { "" });
        let out = Command::new("script").args(["-qec", &command, "/dev/null"]).stdin(Stdio::null()).output().expect("run script");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let shown = on_terminal("drawn", false);
    assert!(shown.contains("restoring") && shown.contains("objects") && shown.contains("ETA"), "progress is drawn: {shown:?}");
    assert!(shown.contains("restored 30000 objects"), "then the summary: {shown:?}");
    let quiet = on_terminal("quiet", true);
    assert!(!quiet.contains("ETA") && quiet.contains("restored 30000 objects"), "only the summary: {quiet:?}");
}

/// A small world's snapshot (a 900 KiB Secret makes it several chunks), saved from a stopped server.
fn small_snapshot(dir: &Path) -> PathBuf {
    let server = Server::start();
    let secret = dir.join("secret-data");
    std::fs::write(&secret, vec![b'k'; 900 * 1024]).expect("write the secret's data");
    server.kubectl().ok(&["create", "secret", "generic", "big", &format!("--from-file=data={}", path(&secret))]);
    let data_dir = server.stop();
    let snapshot = dir.join("small.ksnap");
    succeeds(&["snapshot", "save", path(&snapshot), "--data-dir", path(data_dir.path()), "--quiet"]);
    snapshot
}

#[test]
fn a_damaged_or_cut_snapshot_is_refused_with_the_problem_named_and_nothing_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let snapshot = small_snapshot(dir.path());
    let bytes = std::fs::read(&snapshot).expect("read the snapshot");
    let target = dir.path().join("restored");
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x20;
    let cut = bytes[..bytes.len() * 2 / 3].to_vec();
    let not_one = b"apiVersion: v1\nkind: ConfigMap\n".to_vec();
    let cases = [
        ("flipped", flipped, "is corrupt: its SHA-256 is"),
        ("cut", cut, "truncated: the file ends inside chunk"),
        ("not a snapshot", not_one, "not a kspaces snapshot"),
    ];
    for (what, contents, named) in cases {
        let damaged = dir.path().join("damaged.ksnap");
        std::fs::write(&damaged, contents).expect("write the damaged snapshot");
        let inspect = fails(&["snapshot", "inspect", path(&damaged)]);
        assert!(inspect.contains(named), "{what}: inspect names the problem ({named}): {inspect}");
        let restore = fails(&["snapshot", "restore", path(&damaged), "--data-dir", path(&target), "--quiet"]);
        assert!(restore.contains(named), "{what}: restore names the problem ({named}): {restore}");
        assert!(!target.exists() && !dir.path().join("restored.partial").exists(), "{what}: nothing is written");
    }
    // A data dir that is not empty is refused too, and left as it was.
    std::fs::create_dir(&target).expect("mkdir");
    std::fs::write(target.join("mine"), "x").expect("write");
    let refused = fails(&["snapshot", "restore", path(&snapshot), "--data-dir", path(&target)]);
    assert!(refused.contains("is not empty"), "{refused}");
    assert_eq!(std::fs::read_dir(&target).expect("read dir").count(), 1);
}

#[test]
fn save_refuses_a_store_a_running_server_holds() {
    let server = Server::start();
    let file = server.data_dir.path().join("s.ksnap");
    let refused = fails(&["snapshot", "save", path(&file), "--data-dir", path(server.data_dir.path())]);
    assert!(refused.contains("in use by another process"), "{refused}");
    assert!(!file.exists() && !server.data_dir.path().join("s.ksnap.tmp").exists(), "nothing is left behind");
}

/// A snapshot big enough that its restore takes a while: `records` ConfigMaps of 2 KiB in space t9.
fn big_snapshot(file: &Path, records: u64) {
    let out = std::io::BufWriter::new(std::fs::File::create(file).expect("create"));
    let mut writer = SnapshotWriter::new(out, Header { revision: kspaces_storage::Revision(records), revisions_kept: true }).expect("header");
    let value = Bytes::from(vec![b'v'; 2048]);
    for n in 1..=records {
        let key = format!("/registry/core/configmaps/builtin/t9/default/cm-{n:08}");
        let record = kspaces_storage::Record { key: stored_key(&key), value: value.clone(), revision: kspaces_storage::Revision(n),
            create_revision: kspaces_storage::Revision(n) };
        writer.record(&record).expect("record");
    }
    writer.finish().expect("finish");
}

fn stored_key(raw: &str) -> kspaces_storage::Key {
    kspaces_storage::Key::parse(&kspaces_storage::KeyLayout::default(), raw).expect("a valid key")
}

#[test]
fn a_restore_killed_with_sigkill_leaves_nothing_serve_accepts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let snapshot = dir.path().join("big.ksnap");
    big_snapshot(&snapshot, 60_000);
    let target = dir.path().join("restored");
    let partial = dir.path().join("restored.partial");
    let mut restore = Command::new(kspaces_binary())
        .args(["snapshot", "restore", path(&snapshot), "--data-dir", path(&target), "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the restore");
    // Killed while it writes the store.
    assert!(eventually(Duration::from_secs(60), || partial.join("db").exists()), "the restore started writing");
    std::thread::sleep(Duration::from_millis(50));
    restore.kill().expect("kill -9");
    let status = restore.wait().expect("wait");
    assert!(!status.success(), "the restore was killed before it finished");
    assert!(!target.exists(), "no data dir at the target");
    let refused = refused_start(&partial, &[]);
    assert!(refused.contains("restore that did not finish"), "serve refuses what the restore left: {refused}");
    // A second restore replaces what the first left and finishes.
    let done = succeeds(&["snapshot", "restore", path(&snapshot), "--data-dir", path(&target), "--quiet"]);
    assert!(done.starts_with("restored 60000 objects"), "{done}");
    assert!(target.join("db").exists() && !partial.exists() && !target.join("restore-incomplete").exists());
}

#[test]
fn a_running_server_streams_a_snapshot_to_system_users_only() {
    let server = Server::start();
    let system = server.kubectl();
    create_tenant(&system, "t1");
    for n in 0..30 {
        system.ok(&["create", "configmap", &format!("cm-{n}"), &format!("--from-literal=n={n}")]);
    }
    let files = tempfile::tempdir().expect("temp dir");
    // A writer keeps writing while the snapshot is taken.
    let writer = system.spawn(&["create", "configmap", "during", "--from-literal=k=v"]);
    let snapshot = files.path().join("online.ksnap");
    let saved = succeeds(&["snapshot", "save", path(&snapshot), "--kubeconfig", path(&server.kubeconfig)]);
    assert!(saved.starts_with("saved ") && saved.contains("8 files"), "{saved}");
    let _ = writer.wait_with_output();
    let tenant = certificate_kubeconfig(&server, "t1", "admin", &[]);
    let refused = fails(&["snapshot", "save", path(&files.path().join("tenant.ksnap")), "--kubeconfig", path(&tenant)]);
    assert!(refused.contains("403") || refused.contains("orbidden"), "a tenant is refused: {refused}");
    assert!(!files.path().join("tenant.ksnap").exists() && !files.path().join("tenant.ksnap.tmp").exists(), "and nothing is left");
    let was: Value = serde_json::from_str(&system.ok(&["get", "configmaps", "-o", "json"])).expect("JSON");
    drop(server);

    let target = tempfile::tempdir().expect("temp dir");
    succeeds(&["snapshot", "restore", path(&snapshot), "--data-dir", path(target.path())]);
    let restored = Server::start_in(target, &[]);
    let is: Value = serde_json::from_str(&restored.kubectl().ok(&["get", "configmaps", "-o", "json"])).expect("JSON");
    let by_name = |list: &Value| -> Vec<Value> {
        list["items"].as_array().expect("items").iter().filter(|cm| cm["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("cm-"))).cloned().collect()
    };
    assert_eq!(by_name(&is), by_name(&was), "every object saved online is served as it was");
    assert_eq!(by_name(&is).len(), 30);
}

#[test]
fn migrate_moves_a_sled_store_into_etcd_and_the_same_pki_keeps_working() {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t1");
    let made = certificate_kubeconfig(&server, "t1", "admin", &[]);
    let tenant = Kubectl::new(&made);
    tenant.ok(&["create", "configmap", "moved", "--from-literal=k=v"]);
    tenant.ok(&["label", "configmap", "moved", "tier=web"]);
    let was: Value = serde_json::from_str(&tenant.ok(&["get", "configmap", "moved", "-o", "json"])).expect("JSON");
    let files = tempfile::tempdir().expect("temp dir");
    let tenant_kubeconfig = files.path().join("t1-admin.kubeconfig");
    std::fs::copy(&made, &tenant_kubeconfig).expect("copy the tenant's kubeconfig");
    let data_dir = server.stop();
    let etcd = EtcdCluster::start(1);
    let endpoints = etcd.endpoints();
    let migrated = succeeds(&["migrate", "--data-dir", path(data_dir.path()), "--to-etcd", &endpoints, "--quiet"]);
    assert!(migrated.starts_with("migrated "), "{migrated}");
    assert!(!data_dir.path().join("migrate.ksnap").exists(), "the intermediate file is removed");
    let again = fails(&["migrate", "--data-dir", path(data_dir.path()), "--to-etcd", &endpoints, "--quiet"]);
    assert!(again.contains("is not empty"), "a prefix that holds a store is refused: {again}");

    let served = Server::start_in(data_dir, &["--storage-backend", "etcd", "--etcd-servers", &endpoints]);
    let tenant = Kubectl::new(&kubeconfig_with_server_url(&served, &tenant_kubeconfig, &served.url));
    let is: Value = serde_json::from_str(&tenant.ok(&["get", "configmap", "moved", "-o", "json"])).expect("JSON");
    for field in ["uid", "labels", "managedFields", "creationTimestamp"] {
        assert_eq!(is["metadata"][field], was["metadata"][field], "{field} is kept");
    }
    assert_eq!(is["data"], was["data"]);
    let rv = was["metadata"]["resourceVersion"].as_str().expect("resourceVersion");
    let old_watch = tenant.ok(&["get", "--raw", &format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=2")]);
    assert!(old_watch.contains("\"code\":410"), "a watch from the sled store's resourceVersion gets 410: {old_watch}");
}

#[test]
fn a_restore_into_etcd_killed_with_sigkill_leaves_a_prefix_serve_refuses() {
    let dir = tempfile::tempdir().expect("temp dir");
    let snapshot = dir.path().join("big.ksnap");
    big_snapshot(&snapshot, 20_000);
    let etcd = EtcdCluster::start(1);
    let endpoints = etcd.endpoints();
    let target = dir.path().join("restored");
    let mut restore = Command::new(kspaces_binary())
        .args(["snapshot", "restore", path(&snapshot), "--data-dir", path(&target), "--storage-backend", "etcd", "--etcd-servers", &endpoints,
            "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the restore");
    assert!(eventually(Duration::from_secs(60), || dir.path().join("restored.partial").exists()), "the restore started");
    std::thread::sleep(Duration::from_millis(500));
    restore.kill().expect("kill -9");
    assert!(!restore.wait().expect("wait").success(), "the restore was killed before it finished");
    assert!(!target.exists(), "no data dir at the target");
    let elsewhere = tempfile::tempdir().expect("temp dir");
    let refused = refused_start(elsewhere.path(), &["--storage-backend", "etcd", "--etcd-servers", &endpoints]);
    assert!(refused.contains("restore that did not finish"), "serve refuses the prefix: {refused}");
    let again = fails(&["snapshot", "restore", path(&snapshot), "--data-dir", path(&target), "--storage-backend", "etcd", "--etcd-servers",
        &endpoints, "--quiet"]);
    assert!(again.contains("an earlier restore into /registry/ did not finish"), "{again}");
}
