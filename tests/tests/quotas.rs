//! Per-space limits (issue 22; decisions.md "Tenant fairness and quotas"): a system user sets
//! `core.kcp.io/max-total-objects` and `quota.kspaces.io/max-bytes` on a space's LogicalCluster `cluster`; writes
//! over either are 403 `exceeded quota`, never exceeded even by concurrent creates; the usage is shown in
//! `status.quota`; a tenant may not change its own limits; deletions are never refused; the count survives a
//! restart. kubectl 1.32 and curl over HTTP/1.1 and HTTP/2, one shared server (each test its own tenant).

use std::sync::OnceLock;
use std::time::Duration;

use kspaces_tests::{assert_status, create_tenant, curl, eventually, start_shared_with_tokens, Http, Kubectl, Server};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(30);
const OBJECTS: &str = "core.kcp.io/max-total-objects";
const BYTES: &str = "quota.kspaces.io/max-bytes";

/// The tenants of this file, one per test, each with an `admin` token (`admin-<tenant>`).
const TENANTS: [&str; 6] = ["q-rules", "q-race", "q-bytes", "q-nested", "q-rq", "q-lr"];

struct Fixture {
    server: Server,
    system: Kubectl,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let lines: Vec<String> = TENANTS.iter().map(|t| format!("admin-{t},admin,uid-{t},\"\",,{t}")).collect();
        let server = start_shared_with_tokens(&lines.iter().map(String::as_str).collect::<Vec<_>>());
        let system = server.kubectl();
        for tenant in TENANTS {
            create_tenant(&system, tenant);
        }
        for tenant in TENANTS {
            settled(&system, &format!("{}/clusters/root:{tenant}", server.url), &["default", "kube-system", "kube-public"]);
        }
        Fixture { server, system }
    })
}

/// Waits until the space at `url` holds what the server makes in it besides its initial objects (they count, as
/// in kube): `kube-root-ca.crt` and the `default` ServiceAccount in each of `namespaces`, and in `default` the
/// `kubernetes` Service's EndpointSlice (made last).
fn settled(system: &Kubectl, url: &str, namespaces: &[&str]) {
    let made = |namespace: &str| {
        let names = system.ok(&["--server", url, "get", "sa,cm", "-n", namespace, "-o", "name"]);
        names.contains("serviceaccount/default") && names.contains("configmap/kube-root-ca.crt")
    };
    let slice = || system.run(&["--server", url, "get", "endpointslice", "kubernetes", "-n", "default"]).status.success();
    assert!(eventually(TIMEOUT, || namespaces.iter().all(|n| made(n)) && slice()), "{url}: the default objects never appeared");
}

fn token(tenant: &str) -> String {
    format!("admin-{tenant}")
}

/// kubectl as `tenant`'s administrator (its token).
fn tenant_admin(tenant: &str) -> Kubectl {
    Kubectl::new(&kspaces_tests::token_kubeconfig(&fixture().server, &token(tenant)))
}

/// The LogicalCluster of workspace `path`, as the system administrator reads it.
fn logical_cluster(path: &str) -> Value {
    let f = fixture();
    let body = f.system.ok(&["get", "--raw", &format!("/clusters/{path}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster")]);
    serde_json::from_str(&body).expect("a LogicalCluster")
}

/// `status.quota.used` of workspace `path` once counted: (objects, bytes).
fn used(path: &str) -> (i64, i64) {
    let mut found = None;
    let counted = eventually(TIMEOUT, || {
        let quota = &logical_cluster(path)["status"]["quota"];
        let read = |field: &str| quota["used"][field].as_str().and_then(|v| v.parse::<i64>().ok());
        found = Some((read("objects").unwrap_or(-1), read("bytes").unwrap_or(-1)));
        quota["used"].is_object()
    });
    assert!(counted, "{path}: status.quota.used never appeared: {}", logical_cluster(path));
    found.expect("read")
}

/// Sets (or with `None` removes) a limit on workspace `path`'s LogicalCluster as the system administrator.
fn set_limit(path: &str, annotation: &str, value: Option<i64>) {
    let f = fixture();
    let patch = json!({"metadata": {"annotations": {annotation: value.map(|v| v.to_string())}}}).to_string();
    f.system.ok(&["--server", &format!("{}/clusters/{path}", f.server.url), "patch", "logicalcluster", "cluster", "--type=merge", "-p", &patch]);
}

/// Limits workspace `path` by `annotation` to what it stores now plus `room` (counted under a limit far away
/// first); returns the usage before, (objects, bytes).
fn leave_room(path: &str, annotation: &str, room: i64) -> (i64, i64) {
    set_limit(path, annotation, Some(1_000_000_000_000));
    let before = used(path);
    let now = if annotation == OBJECTS { before.0 } else { before.1 };
    set_limit(path, annotation, Some(now + room));
    before
}

fn config_map(name: &str, data: &str) -> String {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": data}}).to_string()
}

fn create(tenant: &str, http: Http, name: &str, data: &str) -> (u16, Value) {
    let (code, body) = curl(&fixture().server, http, Some(&token(tenant)), "POST", "/api/v1/namespaces/default/configmaps", Some(&config_map(name, data)));
    (code, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// The ConfigMaps of `tenant`'s `default` namespace but its `kube-root-ca.crt`.
fn config_map_count(tenant: &str) -> usize {
    let (code, body) = curl(&fixture().server, Http::One, Some(&token(tenant)), "GET", "/api/v1/namespaces/default/configmaps", None);
    assert_eq!(code, 200, "{body}");
    let list: Value = serde_json::from_str(&body).expect("a list");
    list["items"].as_array().into_iter().flatten().filter(|item| item["metadata"]["name"] != "kube-root-ca.crt").count()
}

#[test]
fn only_system_users_set_limits_and_their_values_are_counts() {
    let f = fixture();
    let tenant = "q-rules";
    let admin = tenant_admin(tenant);
    let refused = admin.fails(&["annotate", "logicalcluster", "cluster", &format!("{OBJECTS}=1000000")]);
    assert!(refused.contains("Error from server (Forbidden)") && refused.contains(&format!("the annotation {OBJECTS} can only be set by system users")),
        "{refused}");
    let path = format!("root:{tenant}");
    set_limit(&path, BYTES, Some(1_000_000));
    let lifted = admin.fails(&["annotate", "logicalcluster", "cluster", &format!("{BYTES}-")]);
    assert!(lifted.contains("Error from server (Forbidden)"), "a tenant may not remove its limit either: {lifted}");
    // The tenant's admin may still change what is theirs (the CRD policy) while a limit is set.
    admin.ok(&["patch", "logicalcluster", "cluster", "--type=merge", "-p", r#"{"spec":{"crdPolicy":"SystemCRDFirst"}}"#]);

    for bad in ["ten", "-1", "01", "1.5", ""] {
        let out = f.system.fails(&["--server", &format!("{}/clusters/{path}", f.server.url), "annotate", "--overwrite", "logicalcluster", "cluster",
            &format!("{OBJECTS}={bad}")]);
        assert!(out.contains("is invalid") && out.contains(&format!("metadata.annotations[{OBJECTS}]")) && out.contains("must be a non-negative integer"),
            "{bad:?}: {out}");
    }
    // The usage is shown, never stored: a status sent back by a client is ignored.
    let (objects, bytes) = used(&path);
    assert!(objects == -1 && bytes > 0, "only the bytes are limited, and shown: {objects} {bytes}");
    let shown = logical_cluster(&path);
    assert_eq!(shown["status"]["quota"]["hard"], json!({"bytes": "1000000"}), "{shown}");
    set_limit(&path, BYTES, None);
    assert!(eventually(TIMEOUT, || logical_cluster(&path)["status"].get("quota").is_none()), "no limits, no status.quota");
}

#[test]
fn concurrent_creates_stop_exactly_at_the_object_limit() {
    let tenant = "q-race";
    let path = format!("root:{tenant}");
    let (objects, _) = leave_room(&path, OBJECTS, 10);

    // 64 clients at once, half over HTTP/1.1, half over HTTP/2.
    let answers: Vec<(u16, Value)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..64)
            .map(|i| scope.spawn(move || create(tenant, if i % 2 == 0 { Http::One } else { Http::Two }, &format!("race-{i}"), "x")))
            .collect();
        handles.into_iter().map(|h| h.join().expect("a client")).collect()
    });
    let created = answers.iter().filter(|(code, _)| *code == 201).count();
    assert_eq!(created, 10, "exactly the room left: {:?}", answers.iter().map(|(c, _)| c).collect::<Vec<_>>());
    for answer in answers.iter().filter(|(code, _)| *code != 201) {
        assert_status(answer, 403, "exceeded quota: cluster, requested: objects=1, used: objects=", "a refused create");
        assert_eq!(answer.1["reason"], "Forbidden", "{}", answer.1);
        assert!(status_has(answer, &format!("limited: objects={}", objects + 10)), "{}", answer.1);
    }
    assert_eq!(config_map_count(tenant), 10, "stored: exactly 10");
    assert_eq!(used(&path).0, objects + 10, "status.quota.used.objects");

    // kubectl shows kube's quota error; a dry run is judged the same way.
    let admin = tenant_admin(tenant);
    let refused = admin.fails(&["create", "configmap", "one-more", "--from-literal=a=b"]);
    assert!(refused.contains("configmaps \"one-more\" is forbidden: exceeded quota: cluster"), "{refused}");
    let dry = admin.fails(&["create", "configmap", "one-more", "--from-literal=a=b", "--dry-run=server"]);
    assert!(dry.contains("exceeded quota"), "{dry}");

    // Deleting makes room for exactly one.
    let victim = answers.iter().zip(0..).find(|((code, _), _)| *code == 201).map(|(_, i)| format!("race-{i}")).expect("one created");
    admin.ok(&["delete", "configmap", &victim]);
    assert_eq!(create(tenant, Http::Two, "after-delete", "x").0, 201);
    assert_eq!(create(tenant, Http::One, "after-delete-2", "x").0, 403);
    // Raising the limit makes room at once.
    set_limit(&path, OBJECTS, Some(objects + 11));
    assert_eq!(create(tenant, Http::One, "after-raise", "x").0, 201);
}

fn status_has(answer: &(u16, Value), needle: &str) -> bool {
    answer.1["message"].as_str().is_some_and(|m| m.contains(needle))
}

#[test]
fn the_bytes_limit_refuses_growing_writes_and_never_deletions() {
    let tenant = "q-bytes";
    let path = format!("root:{tenant}");
    let (_, bytes) = leave_room(&path, BYTES, 3000);
    let big = "b".repeat(1500);
    assert_eq!(create(tenant, Http::One, "big-1", &big).0, 201);
    let refused = create(tenant, Http::Two, "big-2", &big);
    assert_status(&refused, 403, "exceeded quota: cluster, requested: bytes=", "a second 1,500-byte ConfigMap");
    assert!(status_has(&refused, &format!("limited: bytes={}", bytes + 3000)), "{}", refused.1);

    // An update that grows the object past the limit is refused; one that shrinks it is not.
    let admin = tenant_admin(tenant);
    let grow = json!({"data": {"v": "c".repeat(3500)}}).to_string();
    let out = admin.fails(&["patch", "configmap", "big-1", "--type=merge", "-p", &grow]);
    assert!(out.contains("exceeded quota"), "{out}");
    admin.ok(&["patch", "configmap", "big-1", "--type=merge", "-p", r#"{"data":{"v":"small"}}"#]);
    assert_eq!(create(tenant, Http::Two, "big-2", &big).0, 201, "room after the shrink");
    admin.ok(&["patch", "configmap", "big-2", "--type=merge", "-p", r#"{"metadata":{"finalizers":["example.io/hold"]}}"#]);

    // A full space still deletes, finalizers and all: marking an object deleted grows it, and is never refused.
    assert_eq!(create(tenant, Http::One, "big-3", &big).0, 403, "big-1 (small) and big-2 leave less than 1,500 bytes");
    admin.ok(&["delete", "configmap", "big-2", "--wait=false"]);
    admin.ok(&["patch", "configmap", "big-2", "--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    assert!(eventually(TIMEOUT, || admin.run(&["get", "configmap", "big-2"]).status.code() == Some(1)), "big-2 is gone");
    let (_, now) = used(&path);
    assert!(now < bytes + 3000, "{now} >= {}", bytes + 3000);
    assert_eq!(create(tenant, Http::One, "big-3", &big).0, 201, "room after the deletion");
}

#[test]
fn a_nested_workspace_has_limits_of_its_own() {
    let f = fixture();
    let tenant = "q-nested";
    let admin = tenant_admin(tenant);
    admin.ok_with_stdin(&["create", "-f", "-"], "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {name: team}\nspec: {type: {name: universal, path: root}}\n");
    let path = format!("root:{tenant}:team");
    assert!(eventually(TIMEOUT, || admin.run(&["get", "workspace", "team", "-o", "jsonpath={.status.phase}"]).stdout == b"Ready"), "team is Ready");
    settled(&f.system, &format!("{}/clusters/{path}", f.server.url), &["default", "kube-system"]);
    leave_room(&path, OBJECTS, 1);
    let in_team = |name: &str| {
        let (code, body) = curl(&f.server, Http::Two, Some(&token(tenant)), "POST", &format!("/clusters/{path}/api/v1/namespaces/default/configmaps"),
            Some(&config_map(name, "x")));
        (code, serde_json::from_str::<Value>(&body).unwrap_or(Value::Null))
    };
    assert_eq!(in_team("first").0, 201);
    assert_status(&in_team("second"), 403, "exceeded quota", "the workspace is full");
    // The tenant's own space has no limit: it is another space.
    assert_eq!(create(tenant, Http::One, "in-the-tenant", "x").0, 201);
}

#[test]
fn the_count_survives_a_restart() {
    let server = Server::start();
    let system = server.kubectl();
    create_tenant(&system, "q-restart");
    let at = |path: &str| format!("{}/clusters/{path}", server.url);
    let lc = |system: &Kubectl, url: &str| -> Value {
        serde_json::from_str(&system.ok(&["--server", url, "get", "logicalcluster", "cluster", "-o", "json"])).expect("json")
    };
    let url = at("root:q-restart");
    settled(&system, &url, &["default", "kube-system", "kube-public"]);
    system.ok(&["--server", &url, "annotate", "logicalcluster", "cluster", &format!("{OBJECTS}=1000000")]);
    let mut objects = 0;
    assert!(eventually(TIMEOUT, || {
        objects = lc(&system, &url)["status"]["quota"]["used"]["objects"].as_str().and_then(|v| v.parse().ok()).unwrap_or(0);
        objects > 0
    }));
    system.ok(&["--server", &url, "annotate", "--overwrite", "logicalcluster", "cluster", &format!("{OBJECTS}={}", objects + 2)]);
    system.ok(&["--server", &url, "create", "configmap", "one"]);
    system.ok(&["--server", &url, "create", "configmap", "two"]);
    let full = system.fails(&["--server", &url, "create", "configmap", "three"]);
    assert!(full.contains("exceeded quota"), "{full}");

    let data_dir = server.stop();
    let server = Server::start_in(data_dir, &[]);
    let system = server.kubectl();
    let url = format!("{}/clusters/root:q-restart", server.url);
    assert!(eventually(TIMEOUT, || lc(&system, &url)["status"]["quota"]["used"]["objects"] == json!((objects + 2).to_string())),
        "counted again after the restart: {}", lc(&system, &url));
    let full = system.fails(&["--server", &url, "create", "configmap", "three"]);
    assert!(full.contains("exceeded quota"), "still full after the restart: {full}");
    system.ok(&["--server", &url, "delete", "configmap", "one"]);
    system.ok(&["--server", &url, "create", "configmap", "three"]);
}

fn pod(name: &str, cpu: Option<&str>, memory_limit: Option<&str>) -> String {
    let mut resources = json!({});
    if let Some(cpu) = cpu {
        resources["requests"] = json!({"cpu": cpu});
    }
    if let Some(memory) = memory_limit {
        resources["limits"] = json!({"memory": memory});
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27", "resources": resources}]}}).to_string()
}

#[test]
fn a_resource_quota_in_a_namespace_is_enforced_exactly_and_shows_its_usage() {
    let f = fixture();
    let tenant = "q-rq";
    let admin = tenant_admin(tenant);
    admin.ok(&["create", "namespace", "team"]);
    // The namespace's kube-root-ca.crt counts, as in kube.
    assert!(eventually(TIMEOUT, || admin.run(&["get", "configmap", "kube-root-ca.crt", "-n", "team"]).status.success()), "kube-root-ca.crt in team");
    admin.ok(&["create", "quota", "counts", "-n", "team", "--hard=count/configmaps=3,pods=2,requests.cpu=1,limits.memory=1Gi"]);
    let quota = || -> Value { serde_json::from_str(&admin.ok(&["get", "quota", "counts", "-n", "team", "-o", "json"])).expect("json") };
    assert!(eventually(TIMEOUT, || quota()["status"]["used"].is_object()), "status.used appears: {}", quota());
    let shown = quota();
    assert_eq!(shown["status"]["hard"], json!({"count/configmaps": "3", "pods": "2", "requests.cpu": "1", "limits.memory": "1Gi"}), "{shown}");
    assert_eq!(shown["status"]["used"], json!({"count/configmaps": "1", "pods": "0", "requests.cpu": "0", "limits.memory": "0"}), "{shown}");

    // 16 clients at once: exactly two ConfigMaps beside kube-root-ca.crt.
    let answers: Vec<(u16, Value)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16).map(|i| scope.spawn(move || {
            let http = if i % 2 == 0 { Http::One } else { Http::Two };
            let (code, body) = curl(&f.server, http, Some(&token(tenant)), "POST", "/api/v1/namespaces/team/configmaps", Some(&config_map(&format!("cm-{i}"), "x")));
            (code, serde_json::from_str(&body).unwrap_or(Value::Null))
        })).collect();
        handles.into_iter().map(|h| h.join().expect("a client")).collect()
    });
    assert_eq!(answers.iter().filter(|(code, _)| *code == 201).count(), 2, "{:?}", answers.iter().map(|(c, _)| c).collect::<Vec<_>>());
    for answer in answers.iter().filter(|(code, _)| *code != 201) {
        assert_status(answer, 403, "exceeded quota: counts, requested: count/configmaps=1, used: count/configmaps=3, limited: count/configmaps=3", "refused");
    }
    // Another namespace of the same tenant is not bound by it.
    admin.ok(&["create", "configmap", "free", "-n", "default"]);

    // Pods: kube's "must specify", then compute requests and limits summed and bounded.
    let refused = admin.fails_with_stdin(&["create", "-n", "team", "-f", "-"], &pod("bare", None, None));
    assert!(refused.contains("is forbidden: failed quota: counts: must specify limits.memory,requests.cpu"), "{refused}");
    admin.ok_with_stdin(&["create", "-n", "team", "-f", "-"], &pod("one", Some("600m"), Some("512Mi")));
    let refused = admin.fails_with_stdin(&["create", "-n", "team", "-f", "-"], &pod("two", Some("600m"), Some("256Mi")));
    assert!(refused.contains("exceeded quota: counts, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"), "{refused}");
    admin.ok_with_stdin(&["create", "-n", "team", "-f", "-"], &pod("two", Some("400m"), Some("256Mi")));
    let table = admin.ok(&["get", "quota", "counts", "-n", "team"]);
    assert!(table.contains("count/configmaps: 3/3") && table.contains("pods: 2/2") && table.contains("requests.cpu: 1/1"), "{table}");
    assert!(table.contains("limits.memory: 768Mi/1Gi") || table.contains("limits.memory: 805306368/1Gi"), "{table}");

    // A pod that finished uses nothing: room for another.
    admin.ok(&["patch", "pod", "one", "-n", "team", "--subresource=status", "--type=merge", "-p", r#"{"status":{"phase":"Succeeded"}}"#]);
    admin.ok_with_stdin(&["create", "-n", "team", "-f", "-"], &pod("three", Some("500m"), Some("256Mi")));
    // Deleting a ConfigMap makes room for one.
    admin.ok(&["delete", "configmap", "-n", "team", answers.iter().zip(0..).find(|((c, _), _)| *c == 201).map(|(_, i)| format!("cm-{i}")).expect("one").as_str()]);
    admin.ok(&["create", "configmap", "after", "-n", "team"]);
    assert!(admin.fails(&["create", "configmap", "after-2", "-n", "team"]).contains("exceeded quota"));

    // kube's validation of the quota itself.
    let bad = admin.fails(&["create", "quota", "bad", "-n", "team", "--hard=pods=-1"]);
    assert!(bad.contains("spec.hard[pods]") && bad.contains("must be greater than or equal to 0"), "{bad}");
    // A quota added over existing objects counts them; raising a limit applies at once.
    admin.ok(&["create", "quota", "late", "-n", "team", "--hard=count/configmaps=10"]);
    assert!(eventually(TIMEOUT, || admin.ok(&["get", "quota", "late", "-n", "team", "-o", "jsonpath={.status.used.count/configmaps}"]) == "3"),
        "{}", admin.ok(&["get", "quota", "late", "-n", "team", "-o", "json"]));
    admin.ok(&["patch", "quota", "counts", "-n", "team", "--type=merge", "-p", r#"{"spec":{"hard":{"count/configmaps":"4"}}}"#]);
    assert!(eventually(TIMEOUT, || admin.run(&["create", "configmap", "after-2", "-n", "team"]).status.success()), "room after raising the limit");
}

/// kube's LimitRanger: a namespace's LimitRange gives new pods' containers their defaults (and says so in the
/// `kubernetes.io/limit-ranger` annotation), refuses what passes its limits with kube's texts, and its defaults
/// count in the namespace's ResourceQuota; the LimitRange itself is defaulted and validated as kube does it.
#[test]
fn a_limit_range_defaults_and_bounds_new_pods_before_the_quota_counts_them() {
    let f = fixture();
    let tenant = "q-lr";
    let admin = tenant_admin(tenant);
    admin.ok(&["create", "namespace", "limited"]);
    let range = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits"}, "spec": {"limits": [
        {"type": "Container", "max": {"cpu": "1"}, "defaultRequest": {"cpu": "200m"}, "default": {"memory": "256Mi"}},
        {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}},
    ]}});
    admin.ok_with_stdin(&["create", "-n", "limited", "-f", "-"], &range.to_string());
    let stored: Value = serde_json::from_str(&admin.ok(&["get", "limitrange", "limits", "-n", "limited", "-o", "json"])).expect("json");
    assert_eq!(stored["spec"]["limits"][0]["default"], json!({"cpu": "1", "memory": "256Mi"}), "the default limit from max: {stored}");
    assert_eq!(stored["spec"]["limits"][0]["defaultRequest"], json!({"cpu": "200m", "memory": "256Mi"}), "{stored}");
    admin.ok(&["create", "quota", "compute", "-n", "limited", "--hard=requests.cpu=1,limits.memory=1Gi"]);

    // A pod without resources gets the defaults, so the quota's "must specify" is satisfied, and counts them.
    admin.ok_with_stdin(&["create", "-n", "limited", "-f", "-"], &pod("bare", None, None));
    let created: Value = serde_json::from_str(&admin.ok(&["get", "pod", "bare", "-n", "limited", "-o", "json"])).expect("json");
    assert_eq!(created["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "1", "memory": "256Mi"}, "requests": {"cpu": "200m", "memory": "256Mi"}}), "{created}");
    assert_eq!(created["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app");
    assert!(eventually(TIMEOUT, || admin.ok(&["get", "quota", "compute", "-n", "limited", "-o", "jsonpath={.status.used.requests\\.cpu}"]) == "200m"),
        "{}", admin.ok(&["get", "quota", "compute", "-n", "limited", "-o", "json"]));

    // Past the container's max: kube's 403 and text, over HTTP/1.1 and HTTP/2.
    let mut greedy: Value = serde_json::from_str(&pod("greedy", Some("500m"), None)).expect("json");
    greedy["spec"]["containers"][0]["resources"]["limits"] = json!({"cpu": "2"});
    for http in [Http::One, Http::Two] {
        let (code, body) = curl(&f.server, http, Some(&token(tenant)), "POST", "/api/v1/namespaces/limited/pods", Some(&greedy.to_string()));
        let answer = (code, serde_json::from_str(&body).unwrap_or(Value::Null));
        assert_status(&answer, 403, "pods \"greedy\" is forbidden: maximum cpu usage per Container is 1, but limit is 2", "over the max");
    }
    // A claim under the minimum storage.
    let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "small"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "500Mi"}}}});
    let refused = admin.fails_with_stdin(&["create", "-n", "limited", "-f", "-"], &claim.to_string());
    assert!(refused.contains("minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"), "{refused}");
    // Another namespace has no LimitRange: nothing is set there.
    admin.ok_with_stdin(&["create", "-n", "default", "-f", "-"], &pod("free", None, None));
    let free = admin.ok(&["get", "pod", "free", "-n", "default", "-o", "jsonpath={.spec.containers[0].resources}"]);
    assert!(free.is_empty() || free == "{}", "{free}");

    // kube's validation of the LimitRange itself.
    let bad = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "bad"},
        "spec": {"limits": [{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}]}});
    let refused = admin.fails_with_stdin(&["create", "-n", "limited", "-f", "-"], &bad.to_string());
    assert!(refused.contains("spec.limits[0].min[cpu]") && refused.contains("min value 2 is greater than max value 1"), "{refused}");
    let unknown = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "bad"},
        "spec": {"limits": [{"type": "Container", "max": {"cpus": "1"}}]}});
    let refused = admin.fails_with_stdin(&["create", "-n", "limited", "-f", "-"], &unknown.to_string());
    assert!(refused.contains("spec.limits[0].max[cpus]") && refused.contains("must be a standard resource for containers"), "{refused}");
}
