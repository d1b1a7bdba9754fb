//! `kspaces snapshot save | inspect | restore` with the real binary (docs/operations.md): a world made with kubectl
//! is saved from the stopped server, restored into a new data dir and served object for object as it was (uid,
//! resourceVersion, managedFields, finalizers, ownerReferences), with the same PKI; a damaged or cut snapshot is
//! refused with the problem named and nothing written; a restore killed with -9 leaves nothing `serve` accepts. Also
//! online (a running server streams `/snapshot` to system users only), from etcd, into etcd and `kspaces migrate`.
//! One tenant (`--tenant`): saved online and offline, put back into a running server while another tenant is
//! written, refused over an existing tenant, with its bindings and bound objects, wholly there or wholly absent
//! after a kill -9 of the server (sled and etcd), and finished when its client is killed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use bytes::Bytes;
use kspaces_storage::snapshot::{Header, SnapshotWriter};
use kspaces_tests::etcd::EtcdCluster;
use kspaces_tests::{certificate_kubeconfig, create_tenant, eventually, kspaces_binary, kubeconfig_with_server_url, refused_start, Kubectl, WIDGETS_EXPORT,
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

/// `value` without what a restore may change (resourceVersion) and what the server fills on reads.
fn without_revisions(mut objects: Vec<(String, Value)>) -> Vec<(String, Value)> {
    for (_, object) in &mut objects {
        if let Some(meta) = object["metadata"].as_object_mut() {
            meta.remove("resourceVersion");
        }
    }
    objects
}

/// Deletes tenant `name` (lifting the test's finalizers first) and waits until it is gone.
fn delete_tenant(system: &Kubectl, tenant: &Kubectl, name: &str) {
    let _ = tenant.run(&["patch", "configmap", "held", "-n", "app", "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    system.ok(&["delete", "tenant", name, "--wait=false"]);
    let gone = eventually(Duration::from_secs(120), || !system.run(&["get", "tenant", name]).status.success());
    assert!(gone, "tenant {name} is deleted: {}", system.ok(&["get", "tenant", name, "-o", "yaml"]));
}

#[test]
fn one_tenant_is_saved_and_put_back_into_a_running_server_while_another_keeps_working() {
    let server = Server::start();
    let system = server.kubectl();
    let admin = make_world(&server);
    let tenant = Kubectl::new(&admin);
    tenant.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {name: team}\n");
    let ready = eventually(Duration::from_secs(30), || tenant.ok(&["get", "workspace", "team", "-o", "jsonpath={.status.phase}"]) == "Ready");
    assert!(ready, "the nested workspace is ready");
    let team = Kubectl::new(&kubeconfig_with_server_url(&server, &admin, &format!("{}/clusters/root:t1:team", server.url)));
    team.ok(&["create", "configmap", "nested", "--from-literal=k=v"]);
    create_tenant(&system, "t2");
    let other = Kubectl::new(&certificate_kubeconfig(&server, "t2", "admin", &[]));
    other.ok(&["create", "configmap", "b-kept", "--from-literal=k=v"]);
    let was = world(&tenant);
    let nested_was: Value = serde_json::from_str(&team.ok(&["get", "configmap", "nested", "-o", "json"])).expect("JSON");
    let other_was = other.ok(&["get", "configmap", "b-kept", "-o", "json"]);

    let files = tempfile::tempdir().expect("temp dir");
    let snapshot = files.path().join("t1.ksnap");
    // A tenant's own user may neither save nor restore it; a tenant that does not exist is named.
    let refused = fails(&["snapshot", "save", path(&snapshot), "--tenant", "t1", "--kubeconfig", path(&admin)]);
    assert!(refused.contains("403") || refused.contains("orbidden"), "a tenant is refused: {refused}");
    let missing = fails(&["snapshot", "save", path(&snapshot), "--tenant", "nope", "--kubeconfig", path(&server.kubeconfig)]);
    assert!(missing.contains("nope") && missing.contains("not found"), "{missing}");
    assert!(!snapshot.exists(), "nothing is left of a refused save");

    let saved = succeeds(&["snapshot", "save", path(&snapshot), "--tenant", "t1", "--kubeconfig", path(&server.kubeconfig)]);
    assert!(saved.starts_with("saved ") && saved.contains(" 1 files"), "{saved}");
    let inspected = succeeds(&["snapshot", "inspect", path(&snapshot)]);
    assert!(inspected.contains("tenant: t1\n") && inspected.contains("files: none"), "{inspected}");
    let spaces: Vec<&str> = inspected.lines().skip_while(|l| !l.starts_with("SPACE")).skip(1).take_while(|l| !l.starts_with("total:"))
        .filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(spaces.len(), 3, "t1's space, its nested workspace's and the system space (the Tenant alone): {inspected}");
    assert!(spaces.contains(&"t1") && !spaces.contains(&"t2"), "{inspected}");
    assert!(inspected.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["system", "1", l.split_whitespace().nth(2).unwrap_or("")]),
        "only the Tenant of the system space: {inspected}");
    // A whole-store restore refuses a tenant's snapshot.
    let whole = fails(&["snapshot", "restore", path(&snapshot), "--data-dir", path(&files.path().join("new"))]);
    assert!(whole.contains("holds tenant t1 only"), "{whole}");

    delete_tenant(&system, &tenant, "t1");
    assert!(!tenant.run(&["get", "namespace", "app"]).status.success(), "t1 is gone");

    // Tenant t2 keeps being written and read while t1 is restored.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let stop = stop.clone();
        let other = Kubectl::new(&certificate_kubeconfig(&server, "t2", "admin", &[]));
        std::thread::spawn(move || {
            let (mut done, mut failed) = (0, Vec::new());
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || done < 3 {
                let name = format!("during-{done}");
                for args in [vec!["create", "configmap", name.as_str(), "--from-literal=k=v"], vec!["get", "configmap", name.as_str()]] {
                    let out = other.run(&args);
                    if !out.status.success() {
                        failed.push(String::from_utf8_lossy(&out.stderr).into_owned());
                    }
                }
                done += 1;
            }
            (done, failed)
        })
    };
    let restored = succeeds(&["snapshot", "restore", path(&snapshot), "--tenant", "t1", "--kubeconfig", path(&server.kubeconfig)]);
    assert!(restored.starts_with("restored tenant t1: "), "{restored}");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (done, failed) = load.join().expect("the load");
    assert!(failed.is_empty() && done >= 3, "every write and read of t2 during the restore succeeded: {failed:?}");

    // Every object as it was (its resourceVersion aside), the nested workspace's too, served at once.
    let is = world(&tenant);
    assert_eq!(without_revisions(is.clone()), without_revisions(was.clone()));
    assert_eq!(is.len(), was.len());
    let nested_is: Value = serde_json::from_str(&team.ok(&["get", "configmap", "nested", "-o", "json"])).expect("JSON");
    assert_eq!(nested_is["metadata"]["uid"], nested_was["metadata"]["uid"]);
    assert_eq!(nested_is["data"], nested_was["data"]);
    assert_eq!(system.ok(&["get", "tenant", "t1", "-o", "jsonpath={.status.phase}"]), "Active");
    // RBAC is enforced as it was: bob reads configmaps in app and nothing else.
    let bob = Kubectl::new(&certificate_kubeconfig(&server, "t1", "bob", &[]));
    bob.ok(&["get", "configmap", "owner", "-n", "app"]);
    assert!(!bob.run(&["get", "secrets", "-n", "app"]).status.success(), "bob still may not read secrets");
    assert_eq!(other.ok(&["get", "configmap", "b-kept", "-o", "json"]), other_was, "t2 is untouched");

    // Restoring over the existing tenant is refused and changes nothing.
    let again = fails(&["snapshot", "restore", path(&snapshot), "--tenant", "t1", "--kubeconfig", path(&server.kubeconfig)]);
    assert!(again.contains("already exists"), "{again}");
    assert_eq!(world(&tenant), is, "nothing changed");
    // The tenant named must be the snapshot's; a tenant's user may not restore.
    let renamed = fails(&["snapshot", "restore", path(&snapshot), "--tenant", "t3", "--kubeconfig", path(&server.kubeconfig)]);
    assert!(renamed.contains("holds tenant t1, not t3"), "{renamed}");
    let forbidden = fails(&["snapshot", "restore", path(&snapshot), "--tenant", "t1", "--kubeconfig", path(&admin)]);
    assert!(forbidden.contains("403") || forbidden.contains("orbidden"), "{forbidden}");
}

/// A copy of tenant snapshot `from` with `extra` more ConfigMaps in namespace default of the tenant's space.
fn enlarged(from: &Path, to: &Path, tenant: &str, extra: u64) {
    let mut reader = kspaces_storage::snapshot::SnapshotReader::open(std::io::BufReader::new(std::fs::File::open(from).expect("open"))).expect("a snapshot");
    let out = std::io::BufWriter::new(std::fs::File::create(to).expect("create"));
    let mut writer = SnapshotWriter::new(out, reader.header()).expect("header");
    while let Some(item) = reader.next_item().expect("an item") {
        match item {
            kspaces_storage::snapshot::Item::File { name, contents } => writer.file(&name, &contents).expect("file"),
            kspaces_storage::snapshot::Item::Record(record) => writer.record(&record).expect("record"),
        }
    }
    let data = "v".repeat(1024);
    for n in 0..extra {
        let name = format!("x-{n:06}");
        let value = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default",
            "uid": format!("00000000-0000-4000-8000-{n:012}"), "creationTimestamp": "2026-01-01T00:00:00Z"}, "data": {"k": data}});
        let record = kspaces_storage::Record { key: stored_key(&format!("/registry/core/configmaps/builtin/{tenant}/default/{name}")),
            value: Bytes::from(value.to_string()), revision: kspaces_storage::Revision(1), create_revision: kspaces_storage::Revision(1) };
        writer.record(&record).expect("record");
    }
    writer.finish().expect("finish");
}

/// A server whose tenant `name` (with ConfigMap `mine`) was saved offline and then deleted; the snapshot, enlarged
/// with `extra` ConfigMaps, in the returned dir.
fn saved_and_deleted(name: &str, extra: u64, flags: &[&str]) -> (Server, PathBuf, tempfile::TempDir) {
    let server = Server::start_with(flags);
    let system = server.kubectl();
    create_tenant(&system, name);
    Kubectl::new(&certificate_kubeconfig(&server, name, "admin", &[])).ok(&["create", "configmap", "mine", "--from-literal=k=v"]);
    // Saved offline, from the stopped server's data dir.
    let dir = server.stop();
    let files = tempfile::tempdir().expect("temp dir");
    let small = files.path().join("small.ksnap");
    let missing = fails(&[&["snapshot", "save", path(&small), "--tenant", "nope", "--data-dir", path(dir.path())], flags].concat());
    assert!(missing.contains("no tenant \"nope\""), "{missing}");
    succeeds(&[&["snapshot", "save", path(&small), "--tenant", name, "--data-dir", path(dir.path())], flags].concat());
    assert!(succeeds(&["snapshot", "inspect", path(&small)]).contains(&format!("tenant: {name}\n")));
    let big = files.path().join("big.ksnap");
    enlarged(&small, &big, name, extra);
    let server = Server::start_in(dir, flags);
    let system = server.kubectl();
    system.ok(&["delete", "tenant", name, "--wait=false"]);
    assert!(eventually(Duration::from_secs(120), || !system.run(&["get", "tenant", name]).status.success()), "{name} is deleted");
    (server, big, files)
}

/// `kspaces snapshot restore FILE --tenant T` into `server`, started; returns once the server has the whole file.
fn restore_received(server: &Server, big: &Path, tenant: &str) -> std::process::Child {
    let restore = Command::new(kspaces_binary())
        .args(["snapshot", "restore", path(big), "--tenant", tenant, "--kubeconfig", path(&server.kubeconfig)])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the restore");
    let size = std::fs::metadata(big).expect("size").len();
    let received = || {
        std::fs::read_dir(server.data_dir.path()).expect("the data dir").flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("tenant-restore-") && e.metadata().is_ok_and(|m| m.len() == size))
    };
    assert!(eventually(Duration::from_secs(60), received), "the server received the snapshot");
    restore
}

#[test]
fn a_tenant_restore_killed_with_sigkill_leaves_the_tenant_wholly_there_or_wholly_absent() {
    const EXTRA: u64 = 40_000;
    let (server, big, _files) = saved_and_deleted("t9", EXTRA, &[]);
    let mut restore = restore_received(&server, &big, "t9");
    // The server is killed while it writes.
    std::thread::sleep(Duration::from_millis(1500));
    let dir = server.stop();
    assert!(!restore.wait().expect("wait").success(), "the restore did not finish");
    let server = Server::start_in(dir, &[]);
    let leftover = std::fs::read_dir(server.data_dir.path()).expect("the data dir").flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("tenant-restore-"));
    assert!(!leftover, "the received file is removed at start");
    let system = server.kubectl();
    let tenant = Kubectl::new(&certificate_kubeconfig(&server, "t9", "admin", &[]));
    let there = system.run(&["get", "tenant", "t9"]).status.success();
    eprintln!("after the kill, t9 is {}", if there { "there" } else { "absent" });
    let count = |tenant: &Kubectl| tenant.ok(&["get", "configmaps", "-o", "name"]).lines().count();
    if there {
        assert!(count(&tenant) > EXTRA as usize, "all of t9 is there");
    } else {
        assert!(!tenant.run(&["get", "configmap", "mine"]).status.success(), "none of t9 is visible");
        // Nothing of it is left behind either: a restore finds every key free.
        let done = succeeds(&["snapshot", "restore", path(&big), "--tenant", "t9", "--kubeconfig", path(&server.kubeconfig)]);
        assert!(done.starts_with("restored tenant t9: "), "{done}");
    }
    tenant.ok(&["get", "configmap", "mine"]);
    assert!(count(&tenant) > EXTRA as usize);
}

#[test]
fn a_tenant_restore_whose_client_is_killed_finishes() {
    const EXTRA: u64 = 20_000;
    let (server, big, _files) = saved_and_deleted("t8", EXTRA, &[]);
    let mut restore = restore_received(&server, &big, "t8");
    restore.kill().expect("kill -9 the client");
    let _ = restore.wait();
    let system = server.kubectl();
    assert!(eventually(Duration::from_secs(120), || system.run(&["get", "tenant", "t8"]).status.success()), "the restore went on");
    let tenant = Kubectl::new(&certificate_kubeconfig(&server, "t8", "admin", &[]));
    tenant.ok(&["get", "configmap", "mine"]);
    assert!(tenant.ok(&["get", "configmaps", "-o", "name"]).lines().count() > EXTRA as usize, "all of t8 is there");
}

#[test]
fn a_tenant_restore_into_etcd_killed_with_sigkill_is_undone_by_the_next_one() {
    const EXTRA: u64 = 10_000;
    let etcd = EtcdCluster::start(1);
    let endpoints = etcd.endpoints();
    let flags = ["--storage-backend", "etcd", "--etcd-servers", &endpoints];
    let (server, big, _files) = saved_and_deleted("t7", EXTRA, &flags);
    let mut restore = restore_received(&server, &big, "t7");
    std::thread::sleep(Duration::from_millis(1000));
    let dir = server.stop();
    assert!(!restore.wait().expect("wait").success(), "the restore did not finish");
    let server = Server::start_in(dir, &flags);
    let system = server.kubectl();
    let tenant = Kubectl::new(&certificate_kubeconfig(&server, "t7", "admin", &[]));
    let count = |tenant: &Kubectl| tenant.ok(&["get", "configmaps", "-o", "name"]).lines().count();
    let there = system.run(&["get", "tenant", "t7"]).status.success();
    eprintln!("after the kill, t7 is {}", if there { "there" } else { "absent" });
    if there {
        assert!(count(&tenant) > EXTRA as usize, "all of t7 is there");
    } else {
        assert!(!tenant.run(&["get", "configmap", "mine"]).status.success(), "none of t7 is visible");
        // What the killed restore wrote is removed by the next restore, which then finishes.
        let done = succeeds(&["snapshot", "restore", path(&big), "--tenant", "t7", "--kubeconfig", path(&server.kubeconfig)]);
        assert!(done.starts_with("restored tenant t7: "), "{done}");
    }
    tenant.ok(&["get", "configmap", "mine"]);
    assert!(count(&tenant) > EXTRA as usize);
    let again = fails(&["snapshot", "restore", path(&big), "--tenant", "t7", "--kubeconfig", path(&server.kubeconfig)]);
    assert!(again.contains("already exists"), "{again}");
}

#[test]
fn a_tenant_restore_brings_back_its_bindings_and_the_objects_bound_through_them() {
    let server = Server::start();
    let system = server.kubectl();
    create_tenant(&system, "t1");
    let admin = certificate_kubeconfig(&server, "t1", "admin", &[]);
    let tenant = Kubectl::new(&admin);
    tenant.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {name: provider}\n");
    let ready = eventually(Duration::from_secs(30), || tenant.ok(&["get", "workspace", "provider", "-o", "jsonpath={.status.phase}"]) == "Ready");
    assert!(ready, "the provider workspace is ready");
    let provider = Kubectl::new(&kubeconfig_with_server_url(&server, &admin, &format!("{}/clusters/root:t1:provider", server.url)));
    provider.ok_with_stdin(&["apply", "-f", "-"], WIDGETS_EXPORT);
    tenant.ok_with_stdin(&["apply", "-f", "-"],
        "apiVersion: apis.kcp.io/v1alpha1\nkind: APIBinding\nmetadata: {name: widgets}\nspec: {reference: {export: {path: 'root:t1:provider', name: widgets}}}\n");
    let bound = || tenant.run(&["get", "widgets.example.io"]).status.success();
    assert!(eventually(Duration::from_secs(30), bound), "the binding serves widgets");
    tenant.ok_with_stdin(&["apply", "-n", "default", "-f", "-"], "apiVersion: example.io/v1\nkind: Widget\nmetadata: {name: bound}\nspec: {size: 2}\n");
    let get = |tenant: &Kubectl| -> Vec<(String, Value)> {
        ["widgets.example.io/bound", "apibinding/widgets", "apiexport/widgets"].iter().map(|what| {
            let on = if what.starts_with("apiexport") { &provider } else { tenant };
            (what.to_string(), serde_json::from_str(&on.ok(&["get", what, "-n", "default", "-o", "json"])).expect("JSON"))
        }).collect()
    };
    let was = get(&tenant);
    let files = tempfile::tempdir().expect("temp dir");
    let snapshot = files.path().join("t1.ksnap");
    succeeds(&["snapshot", "save", path(&snapshot), "--tenant", "t1", "--kubeconfig", path(&server.kubeconfig)]);
    system.ok(&["delete", "tenant", "t1", "--wait=false"]);
    assert!(eventually(Duration::from_secs(120), || !system.run(&["get", "tenant", "t1"]).status.success()), "t1 is deleted");
    succeeds(&["snapshot", "restore", path(&snapshot), "--tenant", "t1", "--kubeconfig", path(&server.kubeconfig)]);
    // Served at once: the binding resolves, and the bound object is as it was.
    assert!(bound(), "the restored binding serves widgets");
    assert_eq!(without_revisions(get(&tenant)), without_revisions(was));
}
