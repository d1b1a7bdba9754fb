//! Tenancy through kubectl: which space each path form reaches (short, full `/tenants/<t>/`, workspace
//! `/clusters/root:<t>/`, `tenants/all`, `tenants/system`), for the system administrator and the admins of two
//! tenants, with client certificates from `kspaces kubeconfig` and with static tokens; isolation between tenants,
//! default-tenant routing, system-only resources, `metadata.tenant`.

use std::time::Duration;

use kspaces_tests::{
    certificate_kubeconfig, certificate_kubeconfig_with, contains, create_tenant, eventually, grant, kubeconfig_with_server_url, token_file,
    token_kubeconfig, token_kubeconfig_for_url, Kubectl, Server, WatchOutput,
};
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(20);

/// Static tokens of the fixture: a system administrator (no tenant, system:masters) and the `admin` user of each
/// tenant (Arktos' tenant column after an empty column).
const TOKENS: [&str; 3] = [
    "root-token,root,u-root,\"system:masters\"",
    "a-token,admin,u-a,\"tenant-admins\",,t-a",
    "b-token,admin,u-b,\"tenant-admins\",,t-b",
];

#[derive(Clone, Copy, Debug)]
enum Credentials {
    Certificates,
    Tokens,
}

/// A server with tenants t-a and t-b, and kubectl as the system administrator and as each tenant's admin.
struct Fixture {
    server: Server,
    system: Kubectl,
    a: Kubectl,
    b: Kubectl,
    _tokens: tempfile::NamedTempFile,
}

fn fixture(credentials: Credentials) -> Fixture {
    let tokens = token_file(&TOKENS);
    let token_path = tokens.path().to_str().expect("utf-8 temp path").to_owned();
    let server = Server::start_with(&["--token-auth-file", &token_path]);
    let admin = server.kubectl();
    for tenant in ["t-a", "t-b"] {
        let created = create_tenant(&admin, tenant);
        assert!(created.contains(&format!("tenant/{tenant} created")), "{created}");
    }
    let (system, a, b) = match credentials {
        Credentials::Certificates => (
            server.kubectl(),
            Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[])),
            Kubectl::new(&certificate_kubeconfig(&server, "t-b", "admin", &[])),
        ),
        Credentials::Tokens => (
            Kubectl::new(&token_kubeconfig(&server, "root-token")),
            Kubectl::new(&token_kubeconfig(&server, "a-token")),
            Kubectl::new(&token_kubeconfig(&server, "b-token")),
        ),
    };
    Fixture { server, system, a, b, _tokens: tokens }
}

fn configmap(kubectl: &Kubectl, namespace: &str, name: &str, value: &str) {
    let yaml = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {namespace}}}\ndata: {{k: {value}}}\n");
    kubectl.ok_with_stdin(&["apply", "-f", "-"], &yaml);
}

/// `kubectl get --raw <path>` parsed as JSON.
fn raw(kubectl: &Kubectl, path: &str) -> Value {
    let body = kubectl.ok(&["get", "--raw", path]);
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path} answered no JSON ({e}): {body}"))
}

fn data_k(object: &Value) -> &str {
    object["data"]["k"].as_str().unwrap_or_default()
}

/// (tenant, namespace, name) of every item of a list.
fn items(list: &Value) -> Vec<(String, String, String)> {
    let field = |item: &Value, name: &str| item["metadata"][name].as_str().unwrap_or_default().to_owned();
    list["items"]
        .as_array()
        .map(|items| items.iter().map(|i| (field(i, "tenant"), field(i, "namespace"), field(i, "name"))).collect())
        .unwrap_or_default()
}

/// kubectl prints a 422 as `The <Kind> "<name>" is invalid: ...` and other errors as `Error from server (<Reason>): ...`.
fn assert_error(stderr: &str, reason: &str, context: &str) {
    let matched = match reason {
        "Invalid" => stderr.contains("\" is invalid: "),
        _ => stderr.contains(&format!("Error from server ({reason})")),
    };
    assert!(matched, "{context}: expected {reason}, got: {stderr}");
}

fn configmap_json(name: &str, tenant: Option<&str>) -> String {
    let tenant = tenant.map(|t| format!(",\"tenant\":\"{t}\"")).unwrap_or_default();
    format!("{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"{name}\"{tenant}}},\"data\":{{\"k\":\"v\"}}}}")
}

fn short_paths_land_in_the_callers_tenant(credentials: Credentials) {
    let f = fixture(credentials);
    configmap(&f.a, "default", "x", "from-a");
    assert_eq!(f.a.ok(&["get", "cm", "x", "-o", "jsonpath={.data.k}"]), "from-a");

    for path in ["/api/v1/tenants/t-a/namespaces/default/configmaps/x", "/clusters/root:t-a/api/v1/namespaces/default/configmaps/x"] {
        assert_eq!(data_k(&raw(&f.a, path)), "from-a", "t-a's admin reads {path}");
        assert_eq!(data_k(&raw(&f.system, path)), "from-a", "the system admin reads {path}");
    }
    let listed = items(&raw(&f.a, "/api/v1/tenants/t-a/configmaps"));
    assert!(listed.iter().any(|(_, ns, name)| ns == "default" && name == "x"), "t-a's all-namespaces list: {listed:?}");
    let role = raw(&f.a, "/apis/rbac.authorization.k8s.io/v1/tenants/t-a/clusterroles/admin-role");
    assert_eq!(role["metadata"]["name"], "admin-role", "a group API full path reaches t-a: {role}");

    let missing = f.system.fails(&["get", "cm", "x"]);
    assert!(missing.contains("configmaps \"x\" not found"), "the system admin's short path is the system space: {missing}");
    let everything = f.system.ok(&["get", "cm", "-A", "-o", "name"]);
    assert!(!everything.lines().any(|l| l == "configmap/x"), "the system space's list holds no t-a object: {everything}");
    let missing = f.b.fails(&["get", "cm", "x"]);
    assert!(missing.contains("configmaps \"x\" not found"), "t-b's short path is t-b's space: {missing}");
}

#[test]
fn short_paths_land_in_the_callers_tenant_with_certificates() {
    short_paths_land_in_the_callers_tenant(Credentials::Certificates);
}

#[test]
fn short_paths_land_in_the_callers_tenant_with_tokens() {
    short_paths_land_in_the_callers_tenant(Credentials::Tokens);
}

fn every_path_to_another_space_is_forbidden(credentials: Credentials) {
    let f = fixture(credentials);
    configmap(&f.b, "default", "secret-b", "b");
    configmap(&f.system, "default", "secret-system", "system");

    let reads = [
        "/api/v1/tenants/t-b/namespaces/default/configmaps/secret-b",
        "/api/v1/tenants/t-b/namespaces/default/configmaps",
        "/api/v1/tenants/t-b/configmaps",
        "/api/v1/tenants/t-b/namespaces",
        "/apis/rbac.authorization.k8s.io/v1/tenants/t-b/clusterroles",
        "/apis/apps/v1/tenants/t-b/namespaces/default/deployments",
        "/clusters/root:t-b/api/v1/namespaces/default/configmaps/secret-b",
        "/clusters/root:t-b/api/v1/namespaces",
        "/clusters/root/api/v1/namespaces/default/configmaps/secret-system",
        "/clusters/root/api/v1/namespaces",
        "/api/v1/tenants/system/namespaces/default/configmaps/secret-system",
        "/api/v1/tenants/system/configmaps",
        "/api/v1/tenants/all/configmaps",
        "/apis/apps/v1/tenants/all/deployments",
        "/api/v1/tenants/nope/namespaces/default/configmaps",
        "/api/v1/tenants/nope/configmaps",
        "/clusters/root:nope/api/v1/namespaces",
        "/api/v1/tenants/t-b/configmaps?watch=true&timeoutSeconds=2",
        "/clusters/root:t-b/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=2",
        "/clusters/root/api/v1/configmaps?watch=true&timeoutSeconds=2",
        "/api/v1/tenants/system/configmaps?watch=true&timeoutSeconds=2",
        "/api/v1/tenants/all/configmaps?watch=true&timeoutSeconds=2",
        "/api/v1/tenants/nope/configmaps?watch=true&timeoutSeconds=2",
    ];
    for path in reads {
        assert_error(&f.a.fails(&["get", "--raw", path]), "Forbidden", &format!("t-a's admin: GET {path}"));
    }
    let creates = [
        "/api/v1/tenants/t-b/namespaces/default/configmaps",
        "/clusters/root:t-b/api/v1/namespaces/default/configmaps",
        "/api/v1/tenants/system/namespaces/default/configmaps",
        "/clusters/root/api/v1/namespaces/default/configmaps",
        "/api/v1/tenants/nope/namespaces/default/configmaps",
        "/clusters/root:nope/api/v1/namespaces/default/configmaps",
    ];
    for path in creates {
        let refused = f.a.fails_with_stdin(&["create", "--raw", path, "-f", "-"], &configmap_json("intruder", None));
        assert_error(&refused, "Forbidden", &format!("t-a's admin: POST {path}"));
    }
    let replaced = f.a.fails_with_stdin(
        &["replace", "--raw", "/api/v1/tenants/t-b/namespaces/default/configmaps/secret-b", "-f", "-"],
        &configmap_json("secret-b", None),
    );
    assert_error(&replaced, "Forbidden", "t-a's admin: PUT t-b's config map");
    for path in [
        "/api/v1/tenants/t-b/namespaces/default/configmaps/secret-b",
        "/clusters/root:t-b/api/v1/namespaces/default/configmaps/secret-b",
        "/api/v1/tenants/system/namespaces/default/configmaps/secret-system",
        "/clusters/root/api/v1/namespaces/default/configmaps/secret-system",
    ] {
        assert_error(&f.a.fails(&["delete", "--raw", path]), "Forbidden", &format!("t-a's admin: DELETE {path}"));
    }

    assert_eq!(f.b.ok(&["get", "cm", "secret-b", "-o", "jsonpath={.data.k}"]), "b", "t-b's object is untouched");
    assert_eq!(f.system.ok(&["get", "cm", "secret-system", "-o", "jsonpath={.data.k}"]), "system");
    for kubectl in [&f.b, &f.system] {
        let intruder = kubectl.run(&["get", "cm", "intruder"]);
        assert!(!intruder.status.success(), "an intruder was created: {}", String::from_utf8_lossy(&intruder.stdout));
    }

    // No existence leak: a tenant that does not exist is refused exactly like one that does.
    let existing = f.a.fails(&["get", "--raw", "/api/v1/tenants/t-b/configmaps"]);
    let missing = f.a.fails(&["get", "--raw", "/api/v1/tenants/nope/configmaps"]);
    assert_eq!(existing.replace("t-b", "nope"), missing, "the refusals differ between an existing and a missing tenant");
}

#[test]
fn every_path_to_another_space_is_forbidden_with_certificates() {
    every_path_to_another_space_is_forbidden(Credentials::Certificates);
}

#[test]
fn every_path_to_another_space_is_forbidden_with_tokens() {
    every_path_to_another_space_is_forbidden(Credentials::Tokens);
}

fn full_and_workspace_paths_serve_every_verb(credentials: Credentials) {
    let f = fixture(credentials);
    for (who, kubectl) in [("t-a's admin", &f.a), ("the system admin", &f.system)] {
        let full = "/api/v1/tenants/t-a/namespaces/default/configmaps";
        let workspace = "/clusters/root:t-a/api/v1/namespaces/default/configmaps";
        kubectl.ok_with_stdin(&["create", "--raw", full, "-f", "-"], &configmap_json("by-full", None));
        kubectl.ok_with_stdin(&["create", "--raw", workspace, "-f", "-"], &configmap_json("by-workspace", None));
        let replaced = configmap_json("by-full", None).replace("\"k\":\"v\"", "\"k\":\"replaced\"");
        kubectl.ok_with_stdin(&["replace", "--raw", &format!("{full}/by-full"), "-f", "-"], &replaced);
        assert_eq!(f.a.ok(&["get", "cm", "by-full", "-o", "jsonpath={.data.k}"]), "replaced", "{who}: PUT through the full path");
        assert_eq!(f.a.ok(&["get", "cm", "by-workspace", "-o", "jsonpath={.data.k}"]), "v", "{who}: POST through the workspace path");
        let listed = items(&raw(kubectl, workspace));
        assert!(listed.iter().any(|(_, _, n)| n == "by-full") && listed.iter().any(|(_, _, n)| n == "by-workspace"), "{who}: {listed:?}");
        kubectl.ok(&["delete", "--raw", &format!("{workspace}/by-full")]);
        let gone = f.a.fails(&["get", "cm", "by-full"]);
        assert!(gone.contains("configmaps \"by-full\" not found"), "{who}: DELETE through the workspace path: {gone}");
        kubectl.ok(&["delete", "--raw", full]);
        let left = f.a.ok(&["get", "cm", "-o", "name"]);
        assert!(!left.contains("by-workspace"), "{who}: DELETE of the collection through the full path: {left}");
    }
    let untouched = f.system.fails(&["get", "cm", "by-workspace"]);
    assert!(untouched.contains("not found"), "nothing landed in the system space: {untouched}");
}

#[test]
fn full_and_workspace_paths_serve_every_verb_with_certificates() {
    full_and_workspace_paths_serve_every_verb(Credentials::Certificates);
}

#[test]
fn full_and_workspace_paths_serve_every_verb_with_tokens() {
    full_and_workspace_paths_serve_every_verb(Credentials::Tokens);
}

#[test]
fn the_system_space_is_reached_by_root_and_tenants_system_paths_for_system_users() {
    let f = fixture(Credentials::Tokens);
    configmap(&f.system, "default", "sys-x", "system");
    for path in ["/clusters/root/api/v1/namespaces/default/configmaps/sys-x", "/api/v1/tenants/system/namespaces/default/configmaps/sys-x"] {
        assert_eq!(data_k(&raw(&f.system, path)), "system", "the system admin reads {path}");
    }
    let listed = items(&raw(&f.system, "/api/v1/tenants/system/configmaps"));
    assert!(listed.iter().any(|(_, ns, n)| ns == "default" && n == "sys-x"), "{listed:?}");
    assert!(!listed.iter().any(|(t, _, _)| t == "t-a" || t == "t-b"), "the system space holds no tenant's object: {listed:?}");
    let missing = f.a.fails(&["get", "cm", "sys-x"]);
    assert!(missing.contains("configmaps \"sys-x\" not found"), "t-a's short path does not reach the system space: {missing}");
}

#[test]
fn watches_on_full_and_workspace_paths_see_only_their_tenant() {
    let f = fixture(Credentials::Certificates);
    let revision = raw(&f.a, "/api/v1/tenants/t-a/configmaps")["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_owned();
    assert!(!revision.is_empty(), "the list has a resourceVersion");
    let mut watches = [
        ("t-a's admin, full path", WatchOutput::start(&f.a, &["get", "--raw", &format!("/api/v1/tenants/t-a/configmaps?watch=true&resourceVersion={revision}")])),
        ("t-a's admin, workspace path", WatchOutput::start(&f.a, &["get", "--raw", &format!("/clusters/root:t-a/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={revision}")])),
        ("the system admin, full path", WatchOutput::start(&f.system, &["get", "--raw", &format!("/api/v1/tenants/t-a/namespaces/default/configmaps?watch=true&resourceVersion={revision}")])),
    ];
    configmap(&f.b, "default", "event-b", "b");
    configmap(&f.system, "default", "event-system", "s");
    configmap(&f.a, "default", "event-a", "a");
    for (who, watch) in &mut watches {
        assert!(watch.wait_for(TIMEOUT, contains("event-a")), "{who}: the watch missed t-a's create: {}", watch.transcript());
        assert!(!watch.saw(contains("event-b")) && !watch.saw(contains("event-system")), "{who}: the watch saw another space: {}", watch.transcript());
    }
}

#[test]
fn a_space_that_does_not_exist_is_not_found_for_the_system_admin() {
    let f = fixture(Credentials::Certificates);
    for path in [
        "/api/v1/tenants/nope/namespaces/default/configmaps",
        "/api/v1/tenants/nope/configmaps",
        "/clusters/root:nope/api/v1/namespaces",
        "/clusters/root:nope/api/v1/namespaces/default/configmaps",
    ] {
        assert_error(&f.system.fails(&["get", "--raw", path]), "NotFound", &format!("system admin: GET {path}"));
    }
    let created = f.system.fails_with_stdin(
        &["create", "--raw", "/api/v1/tenants/nope/namespaces/default/configmaps", "-f", "-"],
        &configmap_json("lost", None),
    );
    assert_error(&created, "NotFound", "system admin: POST into a missing tenant");
    let listed = items(&raw(&f.system, "/api/v1/tenants/t-b/namespaces"));
    assert!(listed.iter().any(|(_, _, name)| name == "default"), "an existing tenant is reachable: {listed:?}");
}

#[test]
fn same_name_objects_in_two_tenants_are_independent() {
    let f = fixture(Credentials::Tokens);
    configmap(&f.a, "default", "shared", "a");
    configmap(&f.b, "default", "shared", "b");
    configmap(&f.system, "default", "shared", "system");

    assert_eq!(f.a.ok(&["get", "cm", "shared", "-o", "jsonpath={.data.k}"]), "a");
    assert_eq!(f.b.ok(&["get", "cm", "shared", "-o", "jsonpath={.data.k}"]), "b");
    assert_eq!(f.system.ok(&["get", "cm", "shared", "-o", "jsonpath={.data.k}"]), "system");
    assert_eq!(data_k(&raw(&f.system, "/api/v1/tenants/t-a/namespaces/default/configmaps/shared")), "a");
    assert_eq!(data_k(&raw(&f.system, "/api/v1/tenants/t-b/namespaces/default/configmaps/shared")), "b");
    let uid_a = f.a.ok(&["get", "cm", "shared", "-o", "jsonpath={.metadata.uid}"]);
    let uid_b = f.b.ok(&["get", "cm", "shared", "-o", "jsonpath={.metadata.uid}"]);
    assert!(!uid_a.is_empty() && uid_a != uid_b, "two objects, two uids: {uid_a} {uid_b}");

    configmap(&f.a, "default", "shared", "a2");
    assert_eq!(f.b.ok(&["get", "cm", "shared", "-o", "jsonpath={.data.k}"]), "b", "an update in t-a leaves t-b's object");
    assert_eq!(f.a.ok(&["delete", "cm", "shared"]).trim(), "configmap \"shared\" deleted");
    assert_eq!(f.b.ok(&["get", "cm", "shared", "-o", "jsonpath={.data.k}"]), "b", "a delete in t-a leaves t-b's object");
    assert_eq!(f.system.ok(&["get", "cm", "shared", "-o", "jsonpath={.data.k}"]), "system");
    let gone = f.a.fails(&["get", "cm", "shared"]);
    assert!(gone.contains("configmaps \"shared\" not found"), "{gone}");
}

/// Creates probe config maps in `namespace` until `watch` reports one, so later events are surely watched.
fn sync(watch: &mut WatchOutput, kubectl: &Kubectl, namespace: &str, prefix: &str) {
    let mut attempt = 0;
    let synced = eventually(TIMEOUT, || {
        attempt += 1;
        let probe = format!("{prefix}-{attempt}");
        configmap(kubectl, namespace, &probe, "probe");
        watch.wait_for(Duration::from_millis(500), contains(&probe))
    });
    assert!(synced, "the watch never reported a probe: {}", watch.transcript());
}

#[test]
fn watch_on_a_short_path_sees_only_the_callers_tenant() {
    let f = fixture(Credentials::Certificates);
    let mut watch_a = WatchOutput::start(&f.a, &["get", "cm", "-w"]);
    let mut watch_a_all = WatchOutput::start(&f.a, &["get", "cm", "-A", "-w"]);
    let mut watch_b = WatchOutput::start(&f.b, &["get", "cm", "-w"]);
    let mut watch_system = WatchOutput::start(&f.system, &["get", "cm", "-A", "-w"]);
    sync(&mut watch_a, &f.a, "default", "probe-a");
    sync(&mut watch_a_all, &f.a, "kube-system", "probe-a-all");
    sync(&mut watch_b, &f.b, "default", "probe-b");
    sync(&mut watch_system, &f.system, "default", "probe-system");

    configmap(&f.b, "default", "event-b", "b");
    configmap(&f.b, "kube-system", "event-b-system", "b");
    configmap(&f.a, "default", "event-a", "a");
    assert!(watch_a.wait_for(TIMEOUT, contains("event-a")), "t-a's watch missed its create: {}", watch_a.transcript());
    assert!(watch_a_all.wait_for(TIMEOUT, contains("event-a")), "t-a's -A watch missed its create: {}", watch_a_all.transcript());
    assert!(watch_b.wait_for(TIMEOUT, contains("event-b")), "t-b's watch missed its create: {}", watch_b.transcript());
    // Markers written after the other tenants' events: one revision order, so a leaked event would come first.
    configmap(&f.a, "default", "last-a", "a");
    configmap(&f.b, "default", "last-b", "b");
    configmap(&f.system, "default", "last-system", "s");
    assert!(watch_a.wait_for(TIMEOUT, contains("last-a")), "{}", watch_a.transcript());
    assert!(watch_a_all.wait_for(TIMEOUT, contains("last-a")), "{}", watch_a_all.transcript());
    assert!(watch_b.wait_for(TIMEOUT, contains("last-b")), "{}", watch_b.transcript());
    assert!(watch_system.wait_for(TIMEOUT, contains("last-system")), "{}", watch_system.transcript());

    for (watch, foreign) in [
        (&watch_a, ["event-b", "probe-b", "probe-system", "last-b"]),
        (&watch_a_all, ["event-b", "probe-b", "probe-system", "last-b"]),
        (&watch_b, ["event-a", "probe-a", "probe-system", "last-a"]),
        (&watch_system, ["event-a", "event-b", "probe-a", "probe-b"]),
    ] {
        for name in foreign {
            assert!(!watch.saw(contains(name)), "a watch saw another space's {name}: {}", watch.transcript());
        }
    }
    assert!(!watch_a_all.saw(contains("event-b-system")), "t-a's -A watch saw t-b's kube-system: {}", watch_a_all.transcript());
}

#[test]
fn users_without_a_tenant_land_in_the_default_tenant() {
    let tokens = token_file(&[
        "root-token,root,u-root,\"system:masters\"",
        "plain-token,plain,u-plain,\"developers\"",
        "alice-token,alice,u-alice,\"developers\",,t-a",
    ]);
    let token_path = tokens.path().to_str().expect("utf-8 temp path").to_owned();
    let server = Server::start_with(&["--default-tenant", "dflt", "--token-auth-file", &token_path]);
    let system = server.kubectl();
    let started = eventually(TIMEOUT, || system.run(&["get", "tenant", "dflt"]).status.success());
    assert!(started, "the default tenant is created at startup: {}", system.ok(&["get", "tenants", "-o", "name"]));
    create_tenant(&system, "t-a");
    let plain = Kubectl::new(&token_kubeconfig(&server, "plain-token"));
    let alice = Kubectl::new(&token_kubeconfig(&server, "alice-token"));
    let root = Kubectl::new(&token_kubeconfig(&server, "root-token"));
    grant(&system, "dflt", "default", "edit", "plain");
    grant(&system, "t-a", "default", "edit", "alice");

    configmap(&plain, "default", "from-plain", "p");
    assert_eq!(plain.ok(&["get", "cm", "from-plain", "-o", "jsonpath={.data.k}"]), "p");
    let stored = raw(&system, "/api/v1/tenants/dflt/namespaces/default/configmaps/from-plain");
    assert_eq!(data_k(&stored), "p", "a user without a tenant writes into dflt: {stored}");
    assert_eq!(stored["metadata"]["tenant"], "dflt", "{stored}");

    configmap(&alice, "default", "from-alice", "a");
    let stored = raw(&system, "/api/v1/tenants/t-a/namespaces/default/configmaps/from-alice");
    assert_eq!(data_k(&stored), "a", "a token with a tenant column writes into its tenant: {stored}");
    let not_in_default = system.fails(&["get", "--raw", "/api/v1/tenants/dflt/namespaces/default/configmaps/from-alice"]);
    assert_error(&not_in_default, "NotFound", "alice's object is not in dflt");
    let not_in_t_a = system.fails(&["get", "--raw", "/api/v1/tenants/t-a/namespaces/default/configmaps/from-plain"]);
    assert_error(&not_in_t_a, "NotFound", "plain's object is not in t-a");

    let tenants = root.ok(&["get", "tenants", "-o", "name"]);
    assert!(tenants.contains("tenant/system") && tenants.contains("tenant/dflt"), "system:masters without a tenant is a system user: {tenants}");
    let missing = root.fails(&["get", "cm", "from-plain"]);
    assert!(missing.contains("not found"), "system:masters' short path is the system space, not dflt: {missing}");
    assert_error(&plain.fails(&["get", "--raw", "/api/v1/tenants"]), "Forbidden", "dflt's user lists tenants");
    assert_error(&plain.fails(&["get", "--raw", "/api/v1/tenants/t-a/configmaps"]), "Forbidden", "dflt's user reads t-a");
    assert_error(&alice.fails(&["get", "--raw", "/api/v1/tenants/dflt/configmaps"]), "Forbidden", "t-a's user reads dflt");
}

#[test]
fn a_user_without_a_tenant_and_no_default_tenant_is_forbidden() {
    let tokens = token_file(&["root-token,root,u-root,\"system:masters\"", "plain-token,plain,u-plain,\"developers\""]);
    let token_path = tokens.path().to_str().expect("utf-8 temp path").to_owned();
    let server = Server::start_with(&["--token-auth-file", &token_path]);
    let plain = Kubectl::new(&token_kubeconfig(&server, "plain-token"));
    let root = Kubectl::new(&token_kubeconfig(&server, "root-token"));

    let refused = plain.fails(&["get", "--raw", "/api/v1/namespaces/default/configmaps"]);
    assert_error(&refused, "Forbidden", "a user without a tenant lists config maps");
    assert!(refused.contains("credentials name no tenant"), "the refusal says why: {refused}");
    let refused = plain.fails_with_stdin(&["create", "--raw", "/api/v1/namespaces/default/configmaps", "-f", "-"], &configmap_json("x", None));
    assert_error(&refused, "Forbidden", "a user without a tenant creates a config map");
    assert!(refused.contains("credentials name no tenant"), "the refusal says why: {refused}");
    let refused = plain.fails(&["get", "cm"]);
    assert!(refused.contains("Forbidden") && refused.contains("credentials name no tenant"), "kubectl get cm: {refused}");

    let tenants = root.ok(&["get", "tenants", "-o", "name"]);
    assert!(tenants.contains("tenant/system"), "a system:masters token without a tenant is a system user: {tenants}");
}

#[test]
fn a_kubeconfig_whose_server_names_the_tenants_workspace_works_with_plain_kubectl() {
    let f = fixture(Credentials::Certificates);
    let workspace_url = format!("{}/clusters/root:t-a", f.server.url);
    let a_ws = Kubectl::new(&certificate_kubeconfig_with(&f.server, "t-a", "admin", &[], Some(&workspace_url)));

    let created = a_ws.ok(&["create", "configmap", "ws-made", "--from-literal=k=v"]);
    assert_eq!(created.trim(), "configmap/ws-made created");
    assert_eq!(a_ws.ok(&["get", "cm", "ws-made", "-o", "jsonpath={.data.k}"]), "v");
    let namespaces = a_ws.ok(&["get", "ns", "-o", "name"]);
    assert!(namespaces.contains("namespace/kube-public"), "{namespaces}");
    let resources = a_ws.ok(&["api-resources", "-o", "name"]);
    assert!(resources.lines().any(|l| l == "configmaps"), "discovery through the workspace URL: {resources}");
    a_ws.ok(&["label", "cm", "ws-made", "via=workspace"]);
    assert_eq!(a_ws.ok(&["get", "cm", "-l", "via=workspace", "-o", "name"]).trim(), "configmap/ws-made");

    assert_eq!(f.a.ok(&["get", "cm", "ws-made", "-o", "jsonpath={.data.k}"]), "v", "the workspace is t-a's space");
    assert_eq!(data_k(&raw(&f.system, "/api/v1/tenants/t-a/namespaces/default/configmaps/ws-made")), "v");

    let tokens_ws = Kubectl::new(&token_kubeconfig_for_url(&f.server, "a-token", &workspace_url));
    assert_eq!(tokens_ws.ok(&["get", "cm", "ws-made", "-o", "name"]).trim(), "configmap/ws-made", "a token user of t-a too");
    let system_ws = Kubectl::new(&kubeconfig_with_server_url(&f.server, &f.server.kubeconfig, &workspace_url));
    assert_eq!(system_ws.ok(&["get", "cm", "ws-made", "-o", "name"]).trim(), "configmap/ws-made", "the system admin too");

    let b_at_a = Kubectl::new(&kubeconfig_with_server_url(&f.server, &certificate_kubeconfig(&f.server, "t-b", "admin", &[]), &workspace_url));
    // (Not `get --raw`: kubectl's raw URI replaces the server URL's path.)
    let refused = b_at_a.fails(&["get", "cm", "ws-made"]);
    assert!(refused.to_lowercase().contains("forbidden"), "t-b's admin: kubectl get cm through t-a's workspace URL: {refused}");
    let refused = b_at_a.fails(&["create", "configmap", "from-b"]);
    assert!(refused.to_lowercase().contains("forbidden"), "t-b's admin: kubectl create cm through t-a's workspace URL: {refused}");
    assert!(!f.a.ok(&["get", "cm", "-o", "name"]).contains("from-b"), "t-b's admin created nothing in t-a");
}

/// (discovery name as `kubectl api-resources -o name` prints it, collection path).
const SYSTEM_ONLY: [(&str, &str); 7] = [
    ("tenants", "/api/v1/tenants"),
    ("nodes", "/api/v1/nodes"),
    ("componentstatuses", "/api/v1/componentstatuses"),
    ("priorityclasses.scheduling.k8s.io", "/apis/scheduling.k8s.io/v1/priorityclasses"),
    ("runtimeclasses.node.k8s.io", "/apis/node.k8s.io/v1/runtimeclasses"),
    ("csidrivers.storage.k8s.io", "/apis/storage.k8s.io/v1/csidrivers"),
    ("csinodes.storage.k8s.io", "/apis/storage.k8s.io/v1/csinodes"),
];

#[test]
fn system_only_resources_are_forbidden_and_hidden_for_tenant_users() {
    let f = fixture(Credentials::Certificates);
    for (_, path) in SYSTEM_ONLY {
        assert_error(&f.a.fails(&["get", "--raw", path]), "Forbidden", &format!("t-a's admin: GET {path}"));
        f.system.ok(&["get", "--raw", path]);
    }
    assert_error(&f.a.fails(&["get", "--raw", "/api/v1/tenants/t-a"]), "Forbidden", "t-a's admin reads its own Tenant");
    assert_error(&f.a.fails(&["get", "--raw", "/api/v1/tenants/t-a/status"]), "Forbidden", "t-a's admin reads its Tenant's status");
    let node = "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"}}";
    assert_error(&f.a.fails_with_stdin(&["create", "--raw", "/api/v1/nodes", "-f", "-"], node), "Forbidden", "t-a's admin creates a node");
    let priority = "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":{\"name\":\"p\"},\"value\":10}";
    let refused = f.a.fails_with_stdin(&["create", "--raw", "/apis/scheduling.k8s.io/v1/priorityclasses", "-f", "-"], priority);
    assert_error(&refused, "Forbidden", "t-a's admin creates a priority class");
    let tenant = "{\"apiVersion\":\"v1\",\"kind\":\"Tenant\",\"metadata\":{\"name\":\"t-c\"}}";
    assert_error(&f.a.fails_with_stdin(&["create", "--raw", "/api/v1/tenants", "-f", "-"], tenant), "Forbidden", "t-a's admin creates a tenant");
    assert!(!f.system.ok(&["get", "tenants", "-o", "name"]).contains("tenant/t-c"), "no tenant t-c was created");

    let tenant_view = f.a.ok(&["api-resources", "-o", "name"]);
    let system_view = f.system.ok(&["api-resources", "-o", "name"]);
    for (name, _) in SYSTEM_ONLY {
        assert!(system_view.lines().any(|l| l == name), "the system admin's discovery lists {name}: {system_view}");
        assert!(!tenant_view.lines().any(|l| l == name), "t-a's discovery hides {name}: {tenant_view}");
    }
    assert!(tenant_view.lines().any(|l| l == "configmaps") && tenant_view.lines().any(|l| l == "deployments.apps"), "{tenant_view}");
    let refused = f.a.fails(&["get", "nodes"]);
    assert!(refused.contains("Forbidden") || refused.contains("the server doesn't have a resource type \"nodes\""), "{refused}");
}

#[test]
fn objects_carry_their_tenant_and_a_foreign_tenant_in_the_body_is_rejected() {
    let f = fixture(Credentials::Tokens);
    configmap(&f.a, "default", "mine", "a");
    configmap(&f.b, "default", "theirs", "b");
    assert_eq!(f.a.ok(&["get", "cm", "mine", "-o", "jsonpath={.metadata.tenant}"]), "t-a");
    assert_eq!(f.b.ok(&["get", "cm", "theirs", "-o", "jsonpath={.metadata.tenant}"]), "t-b");
    assert_eq!(f.a.ok(&["get", "ns", "default", "-o", "jsonpath={.metadata.tenant}"]), "t-a", "namespaces too");
    assert_eq!(f.a.ok(&["get", "clusterrole", "admin-role", "-o", "jsonpath={.metadata.tenant}"]), "t-a", "cluster-scoped too");
    let stored = raw(&f.system, "/api/v1/tenants/t-a/namespaces/default/configmaps/mine");
    assert_eq!(stored["metadata"]["tenant"], "t-a", "{stored}");

    let posts = [(&f.a, "/api/v1/namespaces/default/configmaps"), (&f.a, "/api/v1/tenants/t-a/namespaces/default/configmaps"), (&f.system, "/api/v1/tenants/t-a/namespaces/default/configmaps")];
    for (kubectl, path) in posts {
        let refused = kubectl.fails_with_stdin(&["create", "--raw", path, "-f", "-"], &configmap_json("foreign", Some("t-b")));
        assert_error(&refused, "BadRequest", &format!("POST {path} with metadata.tenant t-b"));
    }
    let refused = f.a.fails_with_stdin(
        &["replace", "--raw", "/api/v1/namespaces/default/configmaps/mine", "-f", "-"],
        &configmap_json("mine", Some("t-b")),
    );
    assert_error(&refused, "BadRequest", "PUT t-a's config map with metadata.tenant t-b");

    for kubectl in [&f.a, &f.b] {
        let missing = kubectl.fails(&["get", "cm", "foreign"]);
        assert!(missing.contains("configmaps \"foreign\" not found"), "{missing}");
    }
    assert_eq!(f.a.ok(&["get", "cm", "mine", "-o", "jsonpath={.metadata.tenant}"]), "t-a", "the refused update changed nothing");
}

#[test]
fn tenants_all_lists_every_space_for_system_users_only() {
    let f = fixture(Credentials::Certificates);
    configmap(&f.a, "default", "from-a", "a");
    configmap(&f.b, "kube-system", "from-b", "b");
    configmap(&f.system, "default", "from-system", "s");

    let listed = items(&raw(&f.system, "/api/v1/tenants/all/configmaps"));
    let has = |tenant: &str, namespace: &str, name: &str| listed.iter().any(|(t, ns, n)| t == tenant && ns == namespace && n == name);
    assert!(has("t-a", "default", "from-a"), "{listed:?}");
    assert!(has("t-b", "kube-system", "from-b"), "{listed:?}");
    assert!(listed.iter().any(|(_, ns, n)| ns == "default" && n == "from-system"), "{listed:?}");
    let namespaces = items(&raw(&f.system, "/api/v1/tenants/all/namespaces"));
    for tenant in ["t-a", "t-b"] {
        assert!(namespaces.iter().any(|(t, _, n)| t == tenant && n == "kube-public"), "{namespaces:?}");
    }

    for tenant_admin in [&f.a, &f.b] {
        assert_error(&tenant_admin.fails(&["get", "--raw", "/api/v1/tenants/all/configmaps"]), "Forbidden", "a tenant admin lists tenants/all");
    }
}

#[test]
fn tenants_all_watch_sees_events_of_every_tenant() {
    let f = fixture(Credentials::Tokens);
    let list = raw(&f.system, "/api/v1/tenants/all/configmaps");
    let revision = list["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_owned();
    assert!(!revision.is_empty(), "the list has a resourceVersion: {list}");
    let path = format!("/api/v1/tenants/all/configmaps?watch=true&resourceVersion={revision}");
    let mut watch = WatchOutput::start(&f.system, &["get", "--raw", &path]);

    configmap(&f.a, "default", "watched-a", "a");
    configmap(&f.b, "default", "watched-b", "b");
    configmap(&f.system, "default", "watched-system", "s");
    for name in ["watched-a", "watched-b", "watched-system"] {
        assert!(watch.wait_for(TIMEOUT, contains(name)), "tenants/all watch missed {name}: {}", watch.transcript());
    }
    let event_a = watch.find(contains("watched-a")).unwrap_or_default().to_owned();
    let event: Value = serde_json::from_str(&event_a).unwrap_or_else(|e| panic!("a watch event is one JSON line ({e}): {event_a}"));
    assert_eq!(event["type"], "ADDED", "{event_a}");
    assert_eq!(event["object"]["metadata"]["tenant"], "t-a", "{event_a}");
}

const DAEMONSET: &str = "\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: default}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: busybox}]}
";

const DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: default}
spec:
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: a}}
    spec: {containers: [{name: c, image: busybox}]}
";

#[test]
fn daemonsets_are_forbidden_outside_the_system_space() {
    let f = fixture(Credentials::Certificates);
    let refused = f.a.fails_with_stdin(&["create", "-f", "-"], DAEMONSET);
    assert_error(&refused, "Forbidden", "t-a's admin creates a DaemonSet");
    let body = "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"agent\"},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"agent\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"agent\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}}}";
    let refused = f.system.fails_with_stdin(&["create", "--raw", "/apis/apps/v1/tenants/t-a/namespaces/default/daemonsets", "-f", "-"], body);
    assert_error(&refused, "Forbidden", "the system admin creates a DaemonSet in t-a");
    let listed = f.a.ok(&["get", "daemonsets", "-A", "-o", "name"]);
    assert!(listed.trim().is_empty(), "no DaemonSet in t-a: {listed}");

    let created = f.system.ok_with_stdin(&["create", "-f", "-"], DAEMONSET);
    assert_eq!(created.trim(), "daemonset.apps/agent created", "the system space accepts DaemonSets");
    let created = f.a.ok_with_stdin(&["create", "-f", "-"], DEPLOYMENT);
    assert_eq!(created.trim(), "deployment.apps/app created", "t-a's admin may create other workloads");
}

/// `kubectl auth whoami` (SelfSubjectReview) names the caller's tenant as the extra `kspaces.io/tenant`.
#[test]
fn auth_whoami_names_the_callers_tenant() {
    for credentials in [Credentials::Certificates, Credentials::Tokens] {
        let fixture = fixture(credentials);
        for (kubectl, user, tenant) in [(&fixture.system, "", "system"), (&fixture.a, "admin", "t-a"), (&fixture.b, "admin", "t-b")] {
            let review: Value = serde_json::from_str(&kubectl.ok(&["auth", "whoami", "-o", "json"])).expect("json");
            let info = &review["status"]["userInfo"];
            assert_eq!(info["extra"]["kspaces.io/tenant"], serde_json::json!([tenant]), "{credentials:?}: {review}");
            if !user.is_empty() {
                assert_eq!(info["username"], user, "{credentials:?}: {review}");
            }
            let groups = info["groups"].as_array().cloned().unwrap_or_default();
            assert!(groups.iter().any(|g| g == "system:authenticated"), "{credentials:?}: {review}");
            assert!(!groups.iter().any(|g| g.as_str().is_some_and(|g| g.starts_with("tenant:"))), "the tenant O is not a group: {review}");
        }
        let table = fixture.a.ok(&["auth", "whoami"]);
        assert!(table.contains("Extra: kspaces.io/tenant") && table.contains("[t-a]"), "{table}");
    }
}
