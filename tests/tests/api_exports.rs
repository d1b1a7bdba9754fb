//! kcp's API exports and bindings (issue 18) from the outside, on one shared server: a provider workspace's
//! `APIResourceSchema` and `APIExport` (its identity secret and hash, its `APIExportEndpointSlice` and virtual
//! workspace URL), `kubectl kcp bind apiexport` and hand-written `APIBinding`s, kubectl 1.32 on the bound `widgets`
//! (CRUD, table, watch, apply, server-side apply, patch, the schema's validation and defaults, discovery), two exports
//! of one group/resource kept apart by identity, the `bind` verb (within a tenant, across tenants, root's exports),
//! bad input, collisions with local CRDs, the APIExport virtual workspace over HTTP/1.1 and HTTP/2, the maximal
//! permission policy, permission claims accepted and rejected (built-in resources, and another export's by identity
//! hash), and a WorkspaceType's `defaultAPIBindings`.
//!
//! The provider `root:t-a:provider` (export `widgets`) and the consumer `root:t-a:consumer` bound to it by the plugin
//! are made once ([`provider`], [`consumer`]); every other test works in workspaces of its own names.

use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use base64::Engine;
use kspaces_tests::{
    assert_status, list_names, status_message, WIDGETS_EXPORT,
    cells, certificate_kubeconfig, contains, create_tenant, curl, eventually, kubeconfig_with_server_url, start_shared_with_tokens, token_kubeconfig_for_url, Http,
    Kubectl, PluginKubectl, Printed, Server, WatchOutput,
};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(20);
const WORKSPACES: &str = "apis/tenancy.kcp.io/v1alpha1/workspaces";
const PROVIDER: &str = "root:t-a:provider";
const CONSUMER: &str = "root:t-a:consumer";
const SCHEMA: &str = "v1.widgets.example.io";

/// Static tokens: the system administrator, the `admin` of t-a and of t-b, and `carol` of t-a (no grants).
const TOKENS: [&str; 5] = [
    "root-token,root,u-root,\"system:masters\"",
    "a-token,admin,u-a,\"tenant-admins\",,t-a",
    "b-token,admin,u-b,\"tenant-admins\",,t-b",
    "carol-token,carol,u-carol,\"\",,t-a",
    "gone-token,admin,u-gone,\"tenant-admins\",,t-gone",
];

// ---- Shared state: the server, the provider, the bound consumer ----

/// The file's one server, with tenants t-a and t-b.
struct Fixture {
    server: Server,
    /// t-a's `admin`, with a client certificate (the same user as `a-token`).
    admin: PathBuf,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Result<Fixture, String>> = OnceLock::new();
    shared(&FIXTURE, "starting the server", || {
        let server = start_shared_with_tokens(&TOKENS);
        for tenant in ["t-a", "t-b"] {
            create_tenant(&server.kubectl(), tenant);
        }
        let admin = certificate_kubeconfig(&server, "t-a", "admin", &[]);
        Fixture { server, admin }
    })
}

/// `root:t-a:provider` and `root:t-a:consumer`, made by t-a's admin with the plugins; the schema and the export
/// applied with kubectl in the provider; the export's identity hash once the server gave it.
struct Provider {
    /// What the plugins printed for `ws :root:t-a`, `create workspace provider` and `create workspace consumer`.
    made: Vec<Printed>,
    /// What `kubectl apply` printed for the schema and the export.
    applied: String,
    /// The provider's logical cluster (its Workspace's `spec.cluster`).
    cluster: String,
    identity_hash: String,
    schema_uid: String,
}

fn provider() -> &'static Provider {
    static PROVIDER_STATE: OnceLock<Result<Provider, String>> = OnceLock::new();
    shared(&PROVIDER_STATE, "making the provider", || {
        let f = fixture();
        let (plugin, _kubeconfig, dir) = plugin_kubectl(&f.admin);
        let made = vec![
            plugin.ok(&["ws", ":root:t-a"]),
            plugin.ok(&["create", "workspace", "provider"]),
            plugin.ok(&["create", "workspace", "consumer"]),
        ];
        drop(dir);
        wait_ready("a-token", "root:t-a", "provider");
        wait_ready("a-token", "root:t-a", "consumer");
        let applied = kubectl_at(&f.admin, PROVIDER).ok_with_stdin(&["apply", "-f", "-"], WIDGETS_EXPORT);
        let identity_hash = wait_identity_hash("a-token", PROVIDER, "widgets");
        let (code, schema) = get("a-token", &apis(PROVIDER, &format!("apiresourceschemas/{SCHEMA}")));
        assert_eq!(code, 200, "{schema}");
        let schema_uid = schema["metadata"]["uid"].as_str().unwrap_or_else(|| panic!("no uid: {schema}")).to_owned();
        Provider { made, applied, cluster: cluster_of("root:t-a", "provider"), identity_hash, schema_uid }
    })
}

/// `root:t-a:consumer` bound to `root:t-a:provider:widgets` by `kubectl kcp bind apiexport`.
struct Consumer {
    /// What `kubectl kcp bind apiexport root:t-a:provider:widgets` printed.
    bound: Printed,
    cluster: String,
}

fn consumer() -> &'static Consumer {
    static CONSUMER_STATE: OnceLock<Result<Consumer, String>> = OnceLock::new();
    shared(&CONSUMER_STATE, "binding the consumer", || {
        let f = fixture();
        let _ = provider();
        let (plugin, _kubeconfig, _dir) = plugin_kubectl(&f.admin);
        plugin.ok(&["ws", &format!(":{CONSUMER}")]);
        let bound = plugin.ok(&["kcp", "bind", "apiexport", "root:t-a:provider:widgets"]);
        wait_served("a-token", CONSUMER);
        Consumer { bound, cluster: cluster_of("root:t-a", "consumer") }
    })
}

/// Initializes `cell` once with `make`; a panic while making it is kept and reported to every test that needs it.
fn shared<T: Send + Sync>(cell: &'static OnceLock<Result<T, String>>, what: &str, make: impl FnOnce() -> T) -> &'static T {
    let made = cell.get_or_init(|| {
        std::panic::catch_unwind(AssertUnwindSafe(make)).map_err(|panic| {
            panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned())).unwrap_or_default()
        })
    });
    match made {
        Ok(value) => value,
        Err(message) => panic!("{what} failed (see the first failure): {message}"),
    }
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

fn delete(token: &str, path: &str) -> (u16, Value) {
    call(Http::One, token, "DELETE", path, None)
}

/// A merge patch as `token`'s user.
fn merge_patch(token: &str, path: &str, patch: &Value) -> (u16, Value) {
    let output = Command::new("curl")
        .args(["-sk", "--max-time", "60", "-w", "\n%{http_code}", "-X", "PATCH", "-H", &format!("Authorization: Bearer {token}")])
        .args(["-H", "Content-Type: application/merge-patch+json", "--data-binary", &patch.to_string()])
        .arg(format!("{}{path}", fixture().server.url))
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), serde_json::from_str(body).unwrap_or(Value::String(body.to_owned())))
}

/// Each item's `(name, kcp.io/cluster annotation)`, sorted; each namespace's `kube-root-ca.crt` (the server's, as
/// kcp's root CA publisher keeps it, and claimed by an `all` configmaps claim like any other) aside.
fn names_and_clusters(list: &Value) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["metadata"]["name"] != "kube-root-ca.crt")
        .map(|i| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (text(&i["metadata"]["name"]), text(&i["metadata"]["annotations"]["kcp.io/cluster"]))
        })
        .collect();
    found.sort();
    found
}

/// `sha256sum` of `data`, lowercase hex.
fn sha256_hex(data: &[u8]) -> String {
    let mut child = Command::new("sha256sum").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("run sha256sum");
    child.stdin.take().expect("stdin").write_all(data).expect("write to sha256sum");
    let output = child.wait_with_output().expect("sha256sum output");
    String::from_utf8_lossy(&output.stdout).split_whitespace().next().unwrap_or_default().to_owned()
}

fn is_identity_hash(hash: &str) -> bool {
    hash.len() == 64 && hash.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
}

// ---- Workspaces ----

fn workspaces_of(parent: &str) -> String {
    format!("/clusters/{parent}/{WORKSPACES}")
}

/// Creates `parent:name` (type universal) as `token`'s user and waits until it is Ready.
fn create_workspace(token: &str, parent: &str, name: &str) {
    let body = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name},
        "spec": {"type": {"name": "universal", "path": "root"}}});
    let (code, created) = post(token, &workspaces_of(parent), &body);
    assert_eq!(code, 201, "create {parent}:{name}: {created}");
    wait_ready(token, parent, name);
}

fn wait_ready(token: &str, parent: &str, name: &str) {
    let path = format!("{}/{name}", workspaces_of(parent));
    let mut last = Value::Null;
    assert!(eventually(TIMEOUT, || {
        last = get(token, &path).1;
        last["status"]["phase"] == "Ready"
    }), "{parent}:{name} never became Ready: {last}");
}

/// The logical cluster of `parent:name` (its Workspace's `spec.cluster`).
fn cluster_of(parent: &str, name: &str) -> String {
    let (code, ws) = get("root-token", &format!("{}/{name}", workspaces_of(parent)));
    assert_eq!(code, 200, "{ws}");
    ws["spec"]["cluster"].as_str().unwrap_or_else(|| panic!("no spec.cluster: {ws}")).to_owned()
}

/// A ClusterRoleBinding of ClusterRole `role` to `subject` (`User` or `Group`, named).
fn cluster_role_binding(name: &str, role: &str, kind: &str, subject: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": subject}]})
}

/// A ClusterRole allowing `bind` on `apiexports/<export>`.
fn bind_role(name: &str, export: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
        "rules": [{"apiGroups": ["apis.kcp.io"], "resources": ["apiexports"], "resourceNames": [export], "verbs": ["bind"]}]})
}

fn rbac(path: &str, resource: &str) -> String {
    format!("/clusters/{path}/apis/rbac.authorization.k8s.io/v1/{resource}")
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

fn widget_yaml(name: &str, spec: &str) -> String {
    format!("apiVersion: example.io/v1\nkind: Widget\nmetadata: {{name: {name}}}\nspec: {{{spec}}}\n")
}

// ---- apis.kcp.io ----

/// `/clusters/<path>/apis/apis.kcp.io/v1alpha1/<rest>`.
fn apis(path: &str, rest: &str) -> String {
    format!("/clusters/{path}/apis/apis.kcp.io/v1alpha1/{rest}")
}

/// `/clusters/<path>/apis/apis.kcp.io/v1alpha2/<rest>`: kcp's current version of exports and bindings.
fn apis_v1alpha2(path: &str, rest: &str) -> String {
    format!("/clusters/{path}/apis/apis.kcp.io/v1alpha2/{rest}")
}

/// The fields a 422's causes name.
fn cause_fields(answer: &(u16, Value)) -> Vec<String> {
    answer.1["details"]["causes"].as_array().into_iter().flatten().filter_map(|c| c["field"].as_str().map(str::to_owned)).collect()
}

/// An APIResourceSchema `<prefix>.<plural>.<group>`-named `name` for `plural`/`kind` of `group`, one version `v1`.
fn resource_schema(name: &str, group: &str, plural: &str, kind: &str, scope: &str, schema: Value) -> Value {
    json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema", "metadata": {"name": name},
        "spec": {"group": group, "scope": scope,
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": schema, "subresources": {"status": {}}}]}})
}

/// The provider's widgets schema (as [`WIDGETS_EXPORT`]), named `name`.
fn widget_schema(name: &str) -> Value {
    let mut schema = resource_schema(name, "example.io", "widgets", "Widget", "Namespaced", json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 1, "default": 3}, "color": {"type": "string"}}},
        "status": {"type": "object", "properties": {"observedSize": {"type": "integer"}}}}}));
    schema["spec"]["versions"][0]["additionalPrinterColumns"] = json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]);
    schema
}

fn export(name: &str, schemas: &[&str]) -> Value {
    json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": name}, "spec": {"latestResourceSchemas": schemas}})
}

/// POSTs `schema` and `export` in `path`, expecting 201 for both.
fn publish(token: &str, path: &str, schema: &Value, export: &Value) {
    for (resource, body) in [("apiresourceschemas", schema), ("apiexports", export)] {
        let (code, created) = post(token, &apis(path, resource), body);
        assert_eq!(code, 201, "create a {resource} in {path}: {created}");
    }
}

/// A hand-written APIBinding `name` to `export_path:export`.
fn binding(name: &str, export_path: &str, export: &str) -> Value {
    json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": name},
        "spec": {"reference": {"export": {"path": export_path, "name": export}}}})
}

fn bind(token: &str, path: &str, name: &str, export_path: &str, export: &str) -> (u16, Value) {
    post(token, &apis(path, "apibindings"), &binding(name, export_path, export))
}

/// GETs the APIBinding until its phase is `Bound`; returns it.
fn wait_bound(token: &str, path: &str, name: &str) -> Value {
    let mut last = Value::Null;
    assert!(eventually(TIMEOUT, || {
        last = get(token, &apis(path, &format!("apibindings/{name}"))).1;
        last["status"]["phase"] == "Bound"
    }), "APIBinding {name} in {path} never became Bound: {last}");
    last
}

/// Waits until the export has `status.identityHash`; returns it.
fn wait_identity_hash(token: &str, path: &str, export: &str) -> String {
    let mut last = Value::Null;
    assert!(eventually(TIMEOUT, || {
        last = get(token, &apis(path, &format!("apiexports/{export}"))).1;
        last["status"]["identityHash"].as_str().is_some_and(|hash| !hash.is_empty())
    }), "APIExport {export} in {path} has no identityHash: {last}");
    last["status"]["identityHash"].as_str().unwrap_or_default().to_owned()
}

/// Waits until the export's APIExportEndpointSlice has an endpoint; returns its URL.
fn wait_virtual_workspace_url(token: &str, path: &str, export: &str) -> String {
    let mut last = Value::Null;
    assert!(eventually(TIMEOUT, || {
        last = get(token, &apis(path, &format!("apiexportendpointslices/{export}"))).1;
        last["status"]["endpoints"][0]["url"].is_string()
    }), "APIExportEndpointSlice {export} in {path} has no endpoint: {last}");
    last["status"]["endpoints"][0]["url"].as_str().unwrap_or_default().to_owned()
}

/// `/clusters/<path>/apis/example.io/v1/namespaces/default/widgets`.
fn widgets(path: &str) -> String {
    format!("/clusters/{path}/apis/example.io/v1/namespaces/default/widgets")
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

/// Waits until `path` serves `widgets.example.io` (a list answers 200).
fn wait_served(token: &str, path: &str) {
    let mut last = (0, Value::Null);
    assert!(eventually(TIMEOUT, || {
        last = get(token, &format!("/clusters/{path}/apis/example.io/v1/widgets"));
        last.0 == 200
    }), "{path} does not serve widgets: {last:?}");
}

/// Creates widget `name` in `default` of `path`; returns it as created.
fn create_widget(token: &str, path: &str, name: &str, spec: Value) -> Value {
    let (code, created) = post(token, &widgets(path), &widget(name, spec));
    assert_eq!(code, 201, "create widget {name} in {path}: {created}");
    created
}

fn binding_label(binding: &Value) -> String {
    binding["metadata"]["labels"]["internal.apis.kcp.io/export"].as_str().unwrap_or_default().to_owned()
}

// ---- Tests ----

/// Issue 45 item 7: an APIExport made through `apis.kcp.io/v1alpha2` (`resources`, claims with `verbs`) is one
/// object with its `v1alpha1` form (`latestResourceSchemas`, `all`), gets its identity and endpoint slice, and a
/// `v1alpha2` APIBinding accepting its claim with `selector: {matchAll: true}` binds it and applies the claim;
/// an acceptance with narrower verbs or a label selector is not applied. Over HTTP/1.1 and HTTP/2.
#[test]
fn v1alpha2_exports_and_bindings_are_views_of_the_stored_v1alpha1_objects() {
    let prov = "root:t-a:v2-provider";
    create_workspace("a-token", "root:t-a", "v2-provider");
    let (code, made) = post("a-token", &apis(prov, "apiresourceschemas"), &widget_schema(SCHEMA));
    assert_eq!(code, 201, "{made}");

    // What v1alpha2 refuses, as kcp's schema does, naming v1alpha2's fields.
    let refused = post("a-token", &apis_v1alpha2(prov, "apiexports"), &json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
        "metadata": {"name": "bad"}, "spec": {"resources": [{"name": "widgets", "group": "example.io", "storage": {"crd": {}}}],
            "permissionClaims": [{"group": "", "resource": "configmaps"}]}}));
    assert_eq!((refused.0, cause_fields(&refused)), (422, vec!["spec.resources[0].schema".to_owned(), "spec.permissionClaims[0].verbs".to_owned()]), "{}", refused.1);
    assert_eq!(get("a-token", &apis(prov, "apiexports/bad")).0, 404, "nothing stored");

    // The export, made through v1alpha2 over HTTP/2.
    let claims = json!([{"group": "", "resource": "configmaps", "verbs": ["*"]}, {"group": "", "resource": "secrets", "verbs": ["get", "list"]}]);
    let resources = json!([{"name": "widgets", "group": "example.io", "schema": SCHEMA, "storage": {"crd": {}}}]);
    let sent = json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport", "metadata": {"name": "widgets"},
        "spec": {"resources": resources, "permissionClaims": claims}});
    let (code, created) = call(Http::Two, "a-token", "POST", &apis_v1alpha2(prov, "apiexports"), Some(&sent));
    assert_eq!((code, &created["apiVersion"], &created["spec"]["resources"], &created["spec"]["permissionClaims"]),
        (201, &json!("apis.kcp.io/v1alpha2"), &resources, &claims), "{created}");

    // Read through v1alpha1: the same object in its form; the claim v1alpha1 cannot say is kept aside, not in effect.
    let hash = wait_identity_hash("a-token", prov, "widgets");
    assert!(is_identity_hash(&hash), "{hash}");
    let (code, old) = get("a-token", &apis(prov, "apiexports/widgets"));
    assert_eq!((code, &old["apiVersion"], &old["spec"]["latestResourceSchemas"], &old["spec"]["permissionClaims"]),
        (200, &json!("apis.kcp.io/v1alpha1"), &json!([SCHEMA]), &json!([{"group": "", "resource": "configmaps", "all": true}])), "{old}");
    assert_eq!(old["metadata"]["uid"], created["metadata"]["uid"], "one object");
    let kept = old["metadata"]["annotations"]["apis.v1alpha2.kcp.io/permission-claims"].as_str().unwrap_or_default();
    assert_eq!(serde_json::from_str::<Value>(kept).ok(), Some(json!([claims[1]])), "{old}");
    // Through v1alpha2 over both protocols: the identity, the endpoint slice, the claims as sent.
    for http in [Http::One, Http::Two] {
        let (code, new) = call(http, "a-token", "GET", &apis_v1alpha2(prov, "apiexports/widgets"), None);
        assert_eq!((code, &new["status"]["identityHash"], &new["spec"]["permissionClaims"], &new["spec"]["resources"]),
            (200, &json!(hash), &claims, &resources), "{http:?}: {new}");
        assert_eq!(new["metadata"]["annotations"].get("apis.v1alpha2.kcp.io/permission-claims"), None, "{new}");
        let (code, listed) = call(http, "a-token", "GET", &apis_v1alpha2(prov, "apiexports"), None);
        assert_eq!((code, list_names(&listed), &listed["items"][0]["spec"]["resources"]), (200, vec!["widgets".to_owned()], &resources), "{listed}");
    }
    assert!(wait_virtual_workspace_url("a-token", prov, "widgets").ends_with("/widgets"));
    let (code, text) = curl(&fixture().server, Http::Two, Some("a-token"), "GET", &format!("{}?watch=1&timeoutSeconds=1", apis_v1alpha2(prov, "apiexports")), None);
    let event: Value = serde_json::from_str(text.lines().next().unwrap_or_default()).unwrap_or_default();
    assert_eq!((code, &event["type"], &event["object"]["apiVersion"], &event["object"]["spec"]["resources"]),
        (200, &json!("ADDED"), &json!("apis.kcp.io/v1alpha2"), &resources), "a watch through v1alpha2: {text}");

    // Bindings through v1alpha2: `verbs: ["*"]` with `matchAll` is the v1alpha1 `all` acceptance and applies; a
    // narrower verb list or a label selector is kept, shown, and not applied.
    let accept = |verbs: Value, selector: Value| json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding", "metadata": {"name": "widgets"},
        "spec": {"reference": {"export": {"path": prov, "name": "widgets"}},
            "permissionClaims": [{"group": "", "resource": "configmaps", "verbs": verbs, "selector": selector, "state": "Accepted"}]}});
    let refused = post("a-token", &apis_v1alpha2("root:t-a:v2-provider", "apibindings"), &json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
        "metadata": {"name": "bad"}, "spec": {"reference": {"export": {"name": "widgets"}},
            "permissionClaims": [{"group": "", "resource": "configmaps", "selector": {"matchAll": true}, "state": "Accepted"}]}}));
    assert_eq!((refused.0, cause_fields(&refused)), (422, vec!["spec.permissionClaims[0].verbs".to_owned()]), "{}", refused.1);
    for (ws, verbs, selector, applies) in [
        ("v2-consumer", json!(["*"]), json!({"matchAll": true}), true),
        ("v2-verbs", json!(["get"]), json!({"matchAll": true}), false),
        ("v2-labels", json!(["*"]), json!({"matchLabels": {"team": "a"}}), false),
    ] {
        create_workspace("a-token", "root:t-a", ws);
        let path = format!("root:t-a:{ws}");
        let body = accept(verbs, selector);
        let (code, made) = call(Http::Two, "a-token", "POST", &apis_v1alpha2(&path, "apibindings"), Some(&body));
        assert_eq!((code, &made["spec"]["permissionClaims"]), (201, &body["spec"]["permissionClaims"]), "{ws}: {made}");
        let mut new = Value::Null;
        assert!(eventually(TIMEOUT, || {
            new = get("a-token", &apis_v1alpha2(&path, "apibindings/widgets")).1;
            new["status"]["phase"] == "Bound" && new["status"]["exportPermissionClaims"].is_array()
        }), "{ws}: Bound through v1alpha2: {new}");
        let old = wait_bound("a-token", &path, "widgets");
        assert_eq!(new["status"]["exportPermissionClaims"], json!([{"group": "", "resource": "configmaps", "verbs": ["*"]}]), "{ws}: {new}");
        assert_eq!(old["status"]["boundResources"][0]["schema"]["identityHash"], hash.as_str(), "{ws}: {old}");
        if applies {
            assert_eq!(old["spec"]["permissionClaims"], json!([{"group": "", "resource": "configmaps", "all": true, "state": "Accepted"}]), "{old}");
            assert_eq!(old["status"]["appliedPermissionClaims"], json!([{"group": "", "resource": "configmaps", "all": true}]), "{old}");
            assert_eq!(new["status"]["appliedPermissionClaims"], json!([{"group": "", "resource": "configmaps", "verbs": ["*"], "selector": {"matchAll": true}}]), "{new}");
            wait_served("a-token", &path);
            create_widget("a-token", &path, "w1", json!({"size": 2}));
        } else {
            assert_eq!((&old["spec"]["permissionClaims"], &old["status"]["appliedPermissionClaims"]), (&json!([]), &json!([])), "{ws}: not all: {old}");
            assert_eq!(new["spec"]["permissionClaims"], body["spec"]["permissionClaims"], "{ws}: shown as sent: {new}");
        }
    }
    // The provider reads the bindings through its virtual workspace in either version.
    let vw = wait_virtual_workspace_url("a-token", prov, "widgets");
    let vw = vw.strip_prefix(&fixture().server.url).expect("on this server").to_owned();
    for (version, http) in [("v1alpha2", Http::Two), ("v1alpha1", Http::One)] {
        let (code, listed) = call(http, "a-token", "GET", &format!("{vw}/clusters/*/apis/apis.kcp.io/{version}/apibindings"), None);
        let items = listed["items"].as_array().cloned().unwrap_or_default();
        assert_eq!((code, items.len()), (200, 3), "{version}: {listed}");
        let verbs = items.iter().all(|i| i["spec"]["permissionClaims"][0]["verbs"].is_array());
        assert_eq!(verbs, version == "v1alpha2", "{version}: {listed}");
    }
}

/// Issue 45 item 7: an object written through `v1alpha1` and read, patched and replaced through `v1alpha2` keeps
/// what only `v1alpha1` says (a claim's `resourceSelector`); discovery (kubectl 1.32's and `/apis/apis.kcp.io`)
/// and OpenAPI show both versions, `v1alpha2` preferred as in kcp, and kubectl reads exports through it.
#[test]
fn v1alpha1_objects_survive_v1alpha2_writes_and_discovery_shows_both_versions() {
    let f = fixture();
    let prov = "root:t-a:v2-roundtrip";
    create_workspace("a-token", "root:t-a", "v2-roundtrip");
    let selected = json!([{"resource": "secrets", "resourceSelector": [{"name": "a", "namespace": "default"}]}]);
    let mut claiming = export("selected", &[SCHEMA]);
    claiming["spec"]["permissionClaims"] = selected.clone();
    publish("a-token", prov, &widget_schema(SCHEMA), &claiming);
    wait_identity_hash("a-token", prov, "selected");

    for http in [Http::One, Http::Two] {
        let (code, mut new) = call(http, "a-token", "GET", &apis_v1alpha2(prov, "apiexports/selected"), None);
        assert_eq!((code, &new["spec"]["permissionClaims"]), (200, &json!([{"resource": "secrets", "verbs": ["*"]}])), "{new}");
        new["metadata"]["labels"] = json!({"through": format!("{http:?}")});
        let (code, put) = call(http, "a-token", "PUT", &apis_v1alpha2(prov, "apiexports/selected"), Some(&new));
        assert_eq!((code, &put["spec"]["permissionClaims"]), (200, &new["spec"]["permissionClaims"]), "{http:?}: {put}");
        let (code, old) = get("a-token", &apis(prov, "apiexports/selected"));
        assert_eq!((code, &old["spec"]["permissionClaims"], &old["metadata"]["labels"]["through"]), (200, &selected, &json!(format!("{http:?}"))), "{old}");
        assert!(old["metadata"]["annotations"].as_object().into_iter().flatten().all(|(k, _)| !k.starts_with("apis.v1alpha2.kcp.io/")), "{old}");
    }
    let (code, patched) = merge_patch("a-token", &apis_v1alpha2(prov, "apiexports/selected"), &json!({"metadata": {"labels": {"patched": "yes"}}}));
    assert_eq!((code, &patched["apiVersion"]), (200, &json!("apis.kcp.io/v1alpha2")), "{patched}");
    let (_, old) = get("a-token", &apis(prov, "apiexports/selected"));
    assert_eq!((&old["spec"]["permissionClaims"], &old["metadata"]["labels"]["patched"]), (&selected, &json!("yes")), "{old}");

    // A v1alpha1 binding accepting the selected claim, replaced through v1alpha2 as read: its acceptance and the
    // applied claim keep their selector. Replaced without the annotations that keep it, the acceptance is what
    // v1alpha2 says (every object), which does not match the export's claim: nothing is applied.
    let cons = "root:t-a:v2-selected";
    create_workspace("a-token", "root:t-a", "v2-selected");
    let mut accepting = binding("selected", prov, "selected");
    let mut acceptance = selected.clone();
    acceptance[0]["state"] = json!("Accepted");
    accepting["spec"]["permissionClaims"] = acceptance.clone();
    assert_eq!(post("a-token", &apis(cons, "apibindings"), &accepting).0, 201);
    let mut applied = Value::Null;
    assert!(eventually(TIMEOUT, || {
        applied = get("a-token", &apis(cons, "apibindings/selected")).1["status"]["appliedPermissionClaims"].clone();
        applied == selected
    }), "{applied}");
    let (code, mut new) = call(Http::Two, "a-token", "GET", &apis_v1alpha2(cons, "apibindings/selected"), None);
    assert_eq!((code, &new["spec"]["permissionClaims"][0]["selector"]), (200, &json!({"matchAll": true})), "kcp's view of a selector: {new}");
    new["metadata"]["labels"]["round"] = json!("trip");
    let (code, put) = call(Http::Two, "a-token", "PUT", &apis_v1alpha2(cons, "apibindings/selected"), Some(&new));
    assert_eq!(code, 200, "{put}");
    let (_, old) = get("a-token", &apis(cons, "apibindings/selected"));
    assert_eq!((&old["spec"]["permissionClaims"], &old["status"]["appliedPermissionClaims"], &old["metadata"]["labels"]["round"]),
        (&acceptance, &selected, &json!("trip")), "{old}");
    let (_, mut bare) = get("a-token", &apis_v1alpha2(cons, "apibindings/selected"));
    bare["metadata"]["annotations"].as_object_mut().expect("annotations").retain(|k, _| !k.starts_with("apis.v1alpha2.kcp.io/"));
    let (code, put) = call(Http::One, "a-token", "PUT", &apis_v1alpha2(cons, "apibindings/selected"), Some(&bare));
    assert_eq!(code, 200, "{put}");
    let (_, old) = get("a-token", &apis(cons, "apibindings/selected"));
    assert_eq!(old["spec"]["permissionClaims"], json!([{"resource": "secrets", "all": true, "state": "Accepted"}]), "{old}");
    assert!(eventually(TIMEOUT, || {
        applied = get("a-token", &apis(cons, "apibindings/selected")).1["status"]["appliedPermissionClaims"].clone();
        applied == json!([])
    }), "an acceptance wider than the export's claim is not applied: {applied}");

    // Discovery and OpenAPI: both versions, v1alpha2 preferred; v1alpha2 has exports and bindings only.
    let (code, group) = get("a-token", &format!("/clusters/{prov}/apis/apis.kcp.io"));
    let versions: Vec<&str> = group["versions"].as_array().into_iter().flatten().filter_map(|v| v["version"].as_str()).collect();
    assert_eq!((code, versions, &group["preferredVersion"]["version"]), (200, vec!["v1alpha2", "v1alpha1"], &json!("v1alpha2")), "{group}");
    let (code, list) = call(Http::Two, "a-token", "GET", &format!("/clusters/{prov}/apis/apis.kcp.io/v1alpha2"), None);
    let names: Vec<&str> = list["resources"].as_array().into_iter().flatten().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!((code, names), (200, vec!["apiexports", "apiexports/status", "apibindings", "apibindings/status"]), "{list}");
    let (code, openapi) = get("a-token", &format!("/clusters/{prov}/openapi/v3/apis/apis.kcp.io/v1alpha2"));
    assert_eq!(code, 200, "{openapi}");
    assert!(openapi["components"]["schemas"]["io.kcp.apis.v1alpha2.APIExport"]["properties"]["spec"]["properties"]["resources"].is_object(), "{openapi}");
    let admin = kubectl_at(&f.admin, prov);
    let resources = admin.ok(&["api-resources", "--api-group", "apis.kcp.io", "--no-headers"]);
    let version_of = |plural: &str| resources.lines().find(|l| l.starts_with(&format!("{plural} "))).and_then(|l| l.split_whitespace().nth(1)).unwrap_or_default().to_owned();
    assert_eq!(["apiexports", "apibindings", "apiresourceschemas"].map(version_of), ["apis.kcp.io/v1alpha2", "apis.kcp.io/v1alpha2", "apis.kcp.io/v1alpha1"], "{resources}");
    assert_eq!(admin.ok(&["get", "apiexports", "-o", "name"]), "apiexport.apis.kcp.io/selected\n");
    assert_eq!(admin.ok(&["get", "apiexport", "selected", "-o", "jsonpath={.spec.resources[0].schema}"]), SCHEMA);
    assert!(admin.ok(&["get", "apiexports"]).contains("selected"));

    // kubectl apply of a v1alpha2 manifest, client-side then server-side.
    let manifest = |verbs: &str| format!("apiVersion: apis.kcp.io/v1alpha2\nkind: APIExport\nmetadata: {{name: applied}}\nspec:\n  \
        resources: [{{name: widgets, group: example.io, schema: {SCHEMA}, storage: {{crd: {{}}}}}}]\n  \
        permissionClaims: [{{group: \"\", resource: configmaps, verbs: {verbs}}}]\n");
    admin.ok_with_stdin(&["apply", "-f", "-"], &manifest("[\"*\"]"));
    let (code, old) = get("a-token", &apis(prov, "apiexports/applied"));
    assert_eq!((code, &old["spec"]["latestResourceSchemas"], &old["spec"]["permissionClaims"]),
        (200, &json!([SCHEMA]), &json!([{"group": "", "resource": "configmaps", "all": true}])), "{old}");
    admin.ok_with_stdin(&["apply", "--server-side", "--force-conflicts", "-f", "-"], &manifest("[get, list]"));
    let (_, old) = get("a-token", &apis(prov, "apiexports/applied"));
    assert_eq!(old["spec"]["permissionClaims"], json!([]), "narrower verbs are not stored as all: {old}");
    let (_, new) = get("a-token", &apis_v1alpha2(prov, "apiexports/applied"));
    assert_eq!(new["spec"]["permissionClaims"], json!([{"group": "", "resource": "configmaps", "verbs": ["get", "list"]}]), "{new}");
}

/// Step 2: the identity secret in `kcp-system`, its hash in the status, the endpoint slice and the virtual
/// workspace URL; the kcp objects through kubectl.
#[test]
fn the_export_gets_an_identity_secret_an_endpoint_slice_and_a_virtual_workspace_url() {
    let f = fixture();
    let p = provider();
    let printed: Vec<(&str, &str)> = p.made.iter().map(|p| (p.stdout.as_str(), p.stderr.as_str())).collect();
    let created = |name: &str| format!("Workspace \"{name}\" (type root:universal) created. Waiting for it to be ready...\nWorkspace \"{name}\" (type root:universal) is ready to use.\n");
    // A tenant admin cannot read root's Workspace t-a, so the plugin names no type there (as kcp's does).
    assert_eq!(printed, [("Current workspace is 'root:t-a'.\n", ""), (created("provider").as_str(), ""), (created("consumer").as_str(), "")]);
    assert_eq!(p.applied, "apiresourceschema.apis.kcp.io/v1.widgets.example.io created\napiexport.apis.kcp.io/widgets created\n");

    // The identity: a 43-character key in Secret kcp-system/widgets, the hash its sha256.
    assert!(is_identity_hash(&p.identity_hash), "64 lowercase hex characters: {:?}", p.identity_hash);
    assert_eq!(get("a-token", &format!("/clusters/{PROVIDER}/api/v1/namespaces/kcp-system")).0, 200, "namespace kcp-system is made");
    let (code, secret) = get("a-token", &format!("/clusters/{PROVIDER}/api/v1/namespaces/kcp-system/secrets/widgets"));
    assert_eq!(code, 200, "{secret}");
    let encoded = secret["data"]["key"].as_str().unwrap_or_else(|| panic!("no data.key: {secret}"));
    let key = base64::engine::general_purpose::STANDARD.decode(encoded).expect("data.key is base64");
    assert_eq!(key.len(), 43, "a 43-character key: {:?}", String::from_utf8_lossy(&key));
    assert!(key.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_'), "base64url: {:?}", String::from_utf8_lossy(&key));
    assert_eq!(sha256_hex(&key), p.identity_hash, "identityHash = hex(sha256(key))");

    let (code, exported) = get("a-token", &apis(PROVIDER, "apiexports/widgets"));
    assert_eq!(code, 200, "{exported}");
    assert_eq!(exported["spec"]["identity"]["secretRef"], json!({"namespace": "kcp-system", "name": "widgets"}), "{exported}");
    assert_eq!(exported["spec"]["latestResourceSchemas"], json!([SCHEMA]), "{exported}");

    // The endpoint slice and the export publish one URL: /services/apiexport/<logical cluster>/<export>.
    let expected = format!("{}/services/apiexport/{}/widgets", f.server.url, p.cluster);
    assert_eq!(wait_virtual_workspace_url("a-token", PROVIDER, "widgets"), expected);
    let (_, slice) = get("a-token", &apis(PROVIDER, "apiexportendpointslices/widgets"));
    assert_eq!(slice["spec"]["export"]["name"], "widgets", "{slice}");
    let path = slice["spec"]["export"]["path"].as_str().unwrap_or_default();
    assert!(path == PROVIDER || path == p.cluster, "spec.export.path names the provider: {slice}");
    let mut last = Value::Null;
    assert!(eventually(TIMEOUT, || {
        last = get("a-token", &apis(PROVIDER, "apiexports/widgets")).1;
        last["status"]["virtualWorkspaces"][0]["url"] == expected.as_str()
    }), "status.virtualWorkspaces[0].url: {last}");
    assert_eq!(last["status"]["identityHash"], p.identity_hash.as_str(), "the hash is written once: {last}");

    // kubectl sees the kcp types.
    let admin = kubectl_at(&f.admin, PROVIDER);
    assert_eq!(admin.ok(&["get", "apiresourceschemas", "-o", "name"]), format!("apiresourceschema.apis.kcp.io/{SCHEMA}\n"));
    assert_eq!(admin.ok(&["get", "apiexport", "widgets", "-o", "jsonpath={.status.identityHash}"]), p.identity_hash);
    assert_eq!(admin.ok(&["get", "apiexportendpointslices", "-o", "name"]), "apiexportendpointslice.apis.kcp.io/widgets\n");
}

/// Step 3: what the plugin printed, and the binding's status.
#[test]
fn kubectl_kcp_bind_apiexport_binds_to_the_exports_schema_and_identity() {
    let f = fixture();
    let p = provider();
    let c = consumer();
    assert_eq!((c.bound.stdout.as_str(), c.bound.stderr.as_str()),
        ("apibinding widgets created. Waiting to successfully bind ...\nwidgets created and bound.\n", ""));
    let (code, bound) = get("a-token", &apis(CONSUMER, "apibindings/widgets"));
    assert_eq!(code, 200, "{bound}");
    assert_eq!(bound["spec"]["reference"]["export"], json!({"path": PROVIDER, "name": "widgets"}), "{bound}");
    assert_eq!(bound["status"]["phase"], "Bound", "{bound}");
    assert_eq!(bound["status"]["apiExportClusterName"], p.cluster.as_str(), "{bound}");
    let resource = json!({"group": "example.io", "resource": "widgets",
        "schema": {"name": SCHEMA, "UID": p.schema_uid, "identityHash": p.identity_hash}, "storageVersions": ["v1"]});
    assert_eq!(bound["status"]["boundResources"], json!([resource]), "{bound}");
    assert!(!binding_label(&bound).is_empty(), "label internal.apis.kcp.io/export: {bound}");
    assert_eq!(bound["metadata"]["annotations"]["kcp.io/cluster"], c.cluster.as_str(), "{bound}");

    let admin = kubectl_at(&f.admin, CONSUMER);
    assert_eq!(admin.ok(&["get", "apibinding", "widgets", "-o", "jsonpath={.status.phase} {.status.boundResources[0].schema.identityHash}"]),
        format!("Bound {}", p.identity_hash));
}

/// Step 4: kubectl 1.32 on the bound resource, in namespace `kubectl` of the consumer.
#[test]
fn kubectl_creates_lists_watches_applies_patches_and_deletes_bound_widgets() {
    let f = fixture();
    let _ = consumer();
    let admin = kubectl_at(&f.admin, CONSUMER);
    admin.ok(&["create", "namespace", "kubectl"]);
    let create = ["create", "-n", "kubectl", "-f", "-"];

    assert_eq!(admin.ok_with_stdin(&create, &widget_yaml("w1", "size: 5, color: red")), "widget.example.io/w1 created\n");
    assert_eq!(admin.ok_with_stdin(&create, &widget_yaml("w2", "color: blue")), "widget.example.io/w2 created\n");
    assert_eq!(admin.ok(&["get", "widget", "w2", "-n", "kubectl", "-o", "jsonpath={.spec.size} {.spec.color}"]), "3 blue", "the schema's default");
    assert_eq!(admin.ok(&["get", "widgets", "-n", "kubectl", "-o", "name"]), "widget.example.io/w1\nwidget.example.io/w2\n");

    // The table has the schema's printer column.
    let table = admin.ok(&["get", "widgets", "-n", "kubectl"]);
    let rows: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows.len(), 3, "{table}");
    assert_eq!(rows[0][..2], ["NAME", "SIZE"], "{table}");
    assert_eq!((&rows[1][..2], &rows[2][..2]), (&["w1", "5"][..], &["w2", "3"][..]), "{table}");

    // A watch sees a widget come and go.
    let mut watch = WatchOutput::start(&admin, &["get", "widgets", "-n", "kubectl", "--watch", "--output-watch-events"]);
    assert!(watch.wait_for(TIMEOUT, contains("w2")), "the watch lists first: {}", watch.transcript());
    admin.ok_with_stdin(&create, &widget_yaml("w-watch", "size: 8"));
    assert_eq!(admin.ok(&["delete", "widget", "w-watch", "-n", "kubectl"]), "widget.example.io \"w-watch\" deleted\n");
    let event = |kind: &'static str| move |line: &str| line.split_whitespace().take(2).eq([kind, "w-watch"]);
    assert!(watch.wait_for(TIMEOUT, event("ADDED")) && watch.wait_for(TIMEOUT, event("DELETED")), "{}", watch.transcript());
    drop(watch);

    // Client-side apply, then server-side apply.
    let apply = ["apply", "-n", "kubectl", "-f", "-"];
    assert_eq!(admin.ok_with_stdin(&apply, &widget_yaml("w3", "size: 2")), "widget.example.io/w3 created\n");
    assert_eq!(admin.ok_with_stdin(&apply, &widget_yaml("w3", "size: 2")), "widget.example.io/w3 unchanged\n");
    assert_eq!(admin.ok_with_stdin(&apply, &widget_yaml("w3", "size: 4")), "widget.example.io/w3 configured\n");
    assert_eq!(admin.ok(&["get", "widget", "w3", "-n", "kubectl", "-o", "jsonpath={.spec.size}"]), "4");
    let ssa = ["apply", "--server-side", "--field-manager", "api-exports-test", "-n", "kubectl", "-f", "-"];
    assert_eq!(admin.ok_with_stdin(&ssa, &widget_yaml("w4", "size: 6, color: teal")), "widget.example.io/w4 serverside-applied\n");
    assert_eq!(admin.ok_with_stdin(&ssa, &widget_yaml("w4", "size: 7, color: teal")), "widget.example.io/w4 serverside-applied\n");
    let w4 = admin.ok(&["get", "widget", "w4", "-n", "kubectl", "--show-managed-fields", "-o", "jsonpath={.spec.size} {.metadata.managedFields[*].manager}"]);
    assert_eq!(w4, "7 api-exports-test");

    // Patches: a merge patch on the spec, the status through its subresource only.
    assert_eq!(admin.ok(&["patch", "widget", "w1", "-n", "kubectl", "--type", "merge", "-p", r#"{"spec":{"color":"green"}}"#]), "widget.example.io/w1 patched\n");
    assert_eq!(admin.ok(&["get", "widget", "w1", "-n", "kubectl", "-o", "jsonpath={.spec.size} {.spec.color}"]), "5 green");
    admin.ok(&["patch", "widget", "w1", "-n", "kubectl", "--subresource", "status", "--type", "merge", "-p", r#"{"status":{"observedSize":5}}"#]);
    admin.ok(&["patch", "widget", "w1", "-n", "kubectl", "--type", "merge", "-p", r#"{"status":{"observedSize":9}}"#]);
    assert_eq!(admin.ok(&["get", "widget", "w1", "-n", "kubectl", "-o", "jsonpath={.status.observedSize}"]), "5", "status only through /status");

    // The schema's validation: kubectl and a raw request both get 422 naming spec.size, nothing stored.
    let refused = admin.fails_with_stdin(&create, &widget_yaml("w-bad", "size: 0"));
    assert!(refused.contains("The Widget \"w-bad\" is invalid") && refused.contains("spec.size"), "{refused}");
    let path = "/clusters/root:t-a:consumer/apis/example.io/v1/namespaces/kubectl/widgets";
    let answer = post("a-token", path, &widget("w-bad", json!({"size": 0})));
    assert_status(&answer, 422, "spec.size", "size 0");
    assert_eq!(answer.1["reason"], "Invalid", "{}", answer.1);
    assert_eq!(get("a-token", &format!("{path}/w-bad")).0, 404, "nothing stored");

    // Discovery lists the bound resource.
    let resources = admin.ok(&["api-resources", "--api-group", "example.io", "--no-headers"]);
    assert!(resources.lines().any(cells(|c| c == ["widgets", "example.io/v1", "true", "Widget"])), "{resources}");

    assert_eq!(admin.ok(&["delete", "widget", "w1", "-n", "kubectl"]), "widget.example.io \"w1\" deleted\n");
    let gone = admin.fails(&["get", "widget", "w1", "-n", "kubectl"]);
    assert!(gone.contains("widgets.example.io \"w1\" not found"), "{gone}");
    assert_eq!(admin.ok(&["get", "widgets", "-n", "kubectl", "-o", "name"]), "widget.example.io/w2\nwidget.example.io/w3\nwidget.example.io/w4\n");

    // A workspace without the binding has no widgets.
    create_workspace("a-token", "root:t-a", "unbound");
    let unbound = kubectl_at(&f.admin, "root:t-a:unbound");
    let missing = unbound.fails(&["get", "widgets"]);
    assert!(missing.contains("the server doesn't have a resource type \"widgets\""), "{missing}");
    assert_eq!(get("a-token", &widgets("root:t-a:unbound")).0, 404);
}

/// Step 5: a second export of `example.io` `widgets` (another schema, another identity); objects of one name in
/// two consumers are two objects, each under its own export's schema.
#[test]
fn two_exports_of_one_resource_keep_their_objects_apart_by_identity() {
    let p = provider();
    let c = consumer();
    create_workspace("a-token", "root:t-a", "provider2");
    let v2 = resource_schema("v2.widgets.example.io", "example.io", "widgets", "Widget", "Namespaced", json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"flavour": {"type": "string"}, "size": {"type": "integer"}}}}}));
    publish("a-token", "root:t-a:provider2", &v2, &export("widgets", &["v2.widgets.example.io"]));
    let hash2 = wait_identity_hash("a-token", "root:t-a:provider2", "widgets");
    assert!(is_identity_hash(&hash2), "{hash2}");
    assert_ne!(hash2, p.identity_hash, "two exports, two identities");

    create_workspace("a-token", "root:t-a", "consumer2");
    let (code, created) = bind("a-token", "root:t-a:consumer2", "widgets", "root:t-a:provider2", "widgets");
    assert_eq!(code, 201, "{created}");
    let bound = wait_bound("a-token", "root:t-a:consumer2", "widgets");
    assert_eq!(bound["status"]["boundResources"][0]["schema"]["name"], "v2.widgets.example.io", "{bound}");
    assert_eq!(bound["status"]["boundResources"][0]["schema"]["identityHash"], hash2.as_str(), "{bound}");
    assert_eq!(bound["status"]["apiExportClusterName"], cluster_of("root:t-a", "provider2").as_str(), "{bound}");
    let (_, first) = get("a-token", &apis(CONSUMER, "apibindings/widgets"));
    assert_ne!(binding_label(&bound), binding_label(&first), "bindings to two exports are labelled apart: {bound} / {first}");
    wait_served("a-token", "root:t-a:consumer2");

    // One name in each: each consumer's schema prunes and defaults its own object.
    let one = create_widget("a-token", CONSUMER, "same", json!({"color": "red", "flavour": "sweet"}));
    assert_eq!(one["spec"], json!({"color": "red", "size": 3}), "the first schema: no flavour, size defaulted: {one}");
    let two = create_widget("a-token", "root:t-a:consumer2", "same", json!({"flavour": "sour"}));
    assert_eq!(two["spec"], json!({"flavour": "sour"}), "the second schema: flavour kept, no default: {two}");
    assert_ne!(one["metadata"]["uid"], two["metadata"]["uid"]);
    assert_eq!(two["metadata"]["annotations"]["kcp.io/cluster"], cluster_of("root:t-a", "consumer2").as_str(), "{two}");
    create_widget("a-token", CONSUMER, "only-in-1", json!({"size": 1}));
    create_widget("a-token", "root:t-a:consumer2", "only-in-2", json!({"size": 2}));

    for http in [Http::One, Http::Two] {
        let (code, listed) = call(http, "a-token", "GET", "/clusters/root:t-a:consumer2/apis/example.io/v1/widgets", None);
        assert_eq!((code, list_names(&listed)), (200, vec!["only-in-2".to_owned(), "same".to_owned()]), "{http:?}: {listed}");
        let (code, listed) = call(http, "a-token", "GET", "/clusters/root:t-a:consumer/apis/example.io/v1/widgets", None);
        assert_eq!(code, 200, "{listed}");
        let uids: Vec<&Value> = listed["items"].as_array().into_iter().flatten().map(|i| &i["metadata"]["uid"]).collect();
        assert!(!uids.contains(&&two["metadata"]["uid"]), "{http:?}: consumer lists consumer2's widget: {listed}");
        assert!(list_names(&listed).contains(&"only-in-1".to_owned()) && !list_names(&listed).contains(&"only-in-2".to_owned()), "{http:?}: {listed}");
    }
    assert_eq!(get("a-token", &format!("{}/only-in-1", widgets("root:t-a:consumer2"))).0, 404);
    assert_eq!(get("a-token", &format!("{}/only-in-2", widgets(CONSUMER))).0, 404);
    let (_, read) = get("a-token", &format!("{}/same", widgets(CONSUMER)));
    assert_eq!((&read["metadata"]["uid"], &read["spec"]), (&one["metadata"]["uid"], &one["spec"]), "{read}");

    // Deleting one leaves the other.
    assert_eq!(delete("a-token", &format!("{}/same", widgets(CONSUMER))).0, 200);
    assert!(eventually(TIMEOUT, || get("a-token", &format!("{}/same", widgets(CONSUMER))).0 == 404));
    let (code, kept) = get("a-token", &format!("{}/same", widgets("root:t-a:consumer2")));
    assert_eq!((code, &kept["metadata"]["uid"]), (200, &two["metadata"]["uid"]), "{kept}");
    let _ = c;
}

/// Step 6: `bind` on `apiexports/<name>` in the export's workspace: refused without it (as the plugin and as a raw
/// request), across tenants even with a grant to every authenticated user, and root's exports for every tenant
/// once the system admin grants it.
#[test]
fn binding_needs_the_bind_verb_on_the_export() {
    let f = fixture();
    let _ = provider();
    create_workspace("a-token", "root:t-a", "carol-ws");
    let (code, granted) = post("a-token", &rbac("root:t-a:carol-ws", "clusterrolebindings"), &cluster_role_binding("carol-admin", "cluster-admin", "User", "carol"));
    assert_eq!(code, 201, "{granted}");
    let carol_ws = token_kubeconfig_for_url(&f.server, "carol-token", &format!("{}/clusters/root:t-a:carol-ws", f.server.url));
    assert!(eventually(TIMEOUT, || Kubectl::new(&carol_ws).run(&["get", "configmaps"]).status.success()), "carol administers carol-ws");

    // carol: no grant in the provider.
    let (plugin, _kubeconfig, _dir) = plugin_kubectl(&carol_ws);
    let refused = plugin.fails(&["kcp", "bind", "apiexport", "root:t-a:provider:widgets"]);
    assert!(refused.contains("no permission to bind to export root:t-a:provider:widgets"), "{refused}");
    let answer = bind("carol-token", "root:t-a:carol-ws", "widgets", PROVIDER, "widgets");
    assert_status(&answer, 403, "no permission to bind to export root:t-a:provider:widgets", "carol without bind");
    assert_eq!(answer.1["reason"], "Forbidden", "{}", answer.1);
    assert_eq!(get("carol-token", &apis("root:t-a:carol-ws", "apibindings/widgets")).0, 404, "nothing stored");

    // t-b's admin, from a workspace of its own.
    create_workspace("b-token", "root:t-b", "tb-consumer");
    let answer = bind("b-token", "root:t-b:tb-consumer", "widgets", PROVIDER, "widgets");
    assert_eq!((answer.0, &answer.1["kind"]), (403, &json!("Status")), "t-b binds t-a's export: {}", answer.1);
    assert_eq!(get("b-token", &apis("root:t-b:tb-consumer", "apibindings/widgets")).0, 404, "nothing stored");

    // t-a's admin grants carol `bind`: she binds. A grant to every authenticated user still keeps t-b out.
    assert_eq!(post("a-token", &rbac(PROVIDER, "clusterroles"), &bind_role("bind-widgets", "widgets")).0, 201);
    assert_eq!(post("a-token", &rbac(PROVIDER, "clusterrolebindings"), &cluster_role_binding("bind-widgets-carol", "bind-widgets", "User", "carol")).0, 201);
    let mut answer = (0, Value::Null);
    assert!(eventually(TIMEOUT, || {
        answer = bind("carol-token", "root:t-a:carol-ws", "widgets", PROVIDER, "widgets");
        answer.0 == 201
    }), "carol with bind: {answer:?}");
    wait_bound("carol-token", "root:t-a:carol-ws", "widgets");
    wait_served("carol-token", "root:t-a:carol-ws");
    create_widget("carol-token", "root:t-a:carol-ws", "carols", json!({"size": 2}));
    let (code, everyone) = post("a-token", &rbac(PROVIDER, "clusterrolebindings"), &cluster_role_binding("bind-widgets-all", "bind-widgets", "Group", "system:authenticated"));
    assert_eq!(code, 201, "{everyone}");
    std::thread::sleep(Duration::from_millis(300));
    let answer = bind("b-token", "root:t-b:tb-consumer", "widgets", PROVIDER, "widgets");
    assert_eq!(answer.0, 403, "t-b binds t-a's export granted to system:authenticated in t-a: {}", answer.1);
    assert_eq!(get("b-token", &apis("root:t-b:tb-consumer", "apibindings/widgets")).0, 404, "nothing stored");

    // An export in root (a cluster-scoped resource): nobody's until the system admin grants bind, then any tenant's.
    let gadgets = resource_schema("v1.gadgets.example.org", "example.org", "gadgets", "Gadget", "Cluster",
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"level": {"type": "integer"}}}}}));
    publish("root-token", "root", &gadgets, &export("gadgets", &["v1.gadgets.example.org"]));
    wait_identity_hash("root-token", "root", "gadgets");
    let answer = bind("b-token", "root:t-b:tb-consumer", "gadgets", "root", "gadgets");
    assert_eq!(answer.0, 403, "root's export before the grant: {}", answer.1);
    assert_eq!(get("b-token", &apis("root:t-b:tb-consumer", "apibindings/gadgets")).0, 404, "nothing stored");
    assert_eq!(post("root-token", &rbac("root", "clusterroles"), &bind_role("bind-gadgets", "gadgets")).0, 201);
    assert_eq!(post("root-token", &rbac("root", "clusterrolebindings"), &cluster_role_binding("bind-gadgets", "bind-gadgets", "Group", "system:authenticated")).0, 201);
    for (token, path) in [("b-token", "root:t-b:tb-consumer"), ("carol-token", "root:t-a:carol-ws")] {
        let mut answer = (0, Value::Null);
        assert!(eventually(TIMEOUT, || {
            answer = bind(token, path, "gadgets", "root", "gadgets");
            answer.0 == 201
        }), "{token} binds root:gadgets after the grant: {answer:?}");
        let bound = wait_bound(token, path, "gadgets");
        assert_eq!(bound["status"]["boundResources"][0]["resource"], "gadgets", "{bound}");
        let gadgets = format!("/clusters/{path}/apis/example.org/v1/gadgets");
        let mut made = (0, Value::Null);
        assert!(eventually(TIMEOUT, || {
            made = post(token, &gadgets, &json!({"apiVersion": "example.org/v1", "kind": "Gadget", "metadata": {"name": "g1"}, "spec": {"level": 1}}));
            made.0 == 201
        }), "{token} creates a gadget in {path}: {made:?}");
        let (code, listed) = get(token, &gadgets);
        assert_eq!((code, list_names(&listed)), (200, vec!["g1".to_owned()]), "each workspace its own: {listed}");
    }
}

/// Step 7: each bad input is a kube Status and stores nothing. Every case is tried; failures are listed together.
#[test]
fn bad_input_gets_a_status_and_leaves_nothing_behind() {
    let _ = fixture();
    let _ = provider();
    let (prov, cons) = ("root:t-a:bad-provider", "root:t-a:bad-consumer");
    create_workspace("a-token", "root:t-a", "bad-provider");
    create_workspace("a-token", "root:t-a", "bad-consumer");
    let mut problems: Vec<String> = Vec::new();
    let expect = |problems: &mut Vec<String>, what: &str, answer: &(u16, Value), codes: &[u16], needle: &str| {
        if !codes.contains(&answer.0) || answer.1["kind"] != "Status" || !status_message(answer).contains(needle) {
            problems.push(format!("{what}: expected a {codes:?} Status with {needle:?}, got {} {}", answer.0, answer.1));
        }
    };
    let mut stored: Vec<(String, String, u16)> = Vec::new();

    // A name that does not end in .<plural>.<group>.
    let misnamed = post("a-token", &apis(prov, "apiresourceschemas"), &widget_schema("v1.gizmos.example.io"));
    expect(&mut problems, "a misnamed schema", &misnamed, &[422], "must end in .widgets.example.io");
    let causes: Vec<&str> = misnamed.1["details"]["causes"].as_array().into_iter().flatten().filter_map(|c| c["field"].as_str()).collect();
    if !causes.contains(&"metadata.name") {
        problems.push(format!("a misnamed schema: no cause on metadata.name: {}", misnamed.1));
    }
    stored.push(("a misnamed schema".into(), apis(prov, "apiresourceschemas/v1.gizmos.example.io"), 404));

    // A good schema and its export.
    let things = resource_schema("v1.things.example.io", "example.io", "things", "Thing", "Namespaced",
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"n": {"type": "integer"}}}}}));
    publish("a-token", prov, &things, &export("things", &["v1.things.example.io"]));

    // The schema's spec is immutable, and it may not be deleted while the export lists it.
    let schema_path = apis(prov, "apiresourceschemas/v1.things.example.io");
    let changed = merge_patch("a-token", &schema_path, &json!({"spec": {"names": {"singular": "thingy"}}}));
    expect(&mut problems, "a changed schema spec", &changed, &[422], "immutable");
    let (_, read) = get("a-token", &schema_path);
    if read["spec"]["names"]["singular"] != "thing" {
        problems.push(format!("a changed schema spec: the change was stored: {read}"));
    }
    let removed = delete("a-token", &schema_path);
    if !(400..500).contains(&removed.0) || removed.1["kind"] != "Status" {
        problems.push(format!("deleting a schema an export lists: expected a 4xx Status, got {} {}", removed.0, removed.1));
    }
    std::thread::sleep(Duration::from_millis(300));
    stored.push(("the schema an export lists".into(), schema_path.clone(), 200));

    // A binding to an export that does not exist, in a workspace that exists and in one that does not.
    let missing = bind("a-token", cons, "missing", prov, "nothing");
    if !matches!(missing.0, 404 | 422) || missing.1["kind"] != "Status" {
        problems.push(format!("a binding to a missing export: expected 404 or 422, got {} {}", missing.0, missing.1));
    }
    stored.push(("a binding to a missing export".into(), apis(cons, "apibindings/missing"), 404));
    let nowhere = bind("a-token", cons, "nowhere", "root:t-a:nowhere", "widgets");
    if !(400..500).contains(&nowhere.0) || nowhere.1["kind"] != "Status" {
        problems.push(format!("a binding into a missing workspace: expected a 4xx Status, got {} {}", nowhere.0, nowhere.1));
    }
    stored.push(("a binding into a missing workspace".into(), apis(cons, "apibindings/nowhere"), 404));

    // A permission claim must say `all: true` or list a resourceSelector.
    let mut claims = export("claims-bad", &["v1.things.example.io"]);
    claims["spec"]["permissionClaims"] = json!([{"group": "", "resource": "configmaps"}]);
    expect(&mut problems, "a claim with neither all nor resourceSelector", &post("a-token", &apis(prov, "apiexports"), &claims), &[422], "");
    stored.push(("a claim with neither all nor resourceSelector".into(), apis(prov, "apiexports/claims-bad"), 404));
    let mut claims = export("claims-ok", &["v1.things.example.io"]);
    claims["spec"]["permissionClaims"] = json!([{"group": "", "resource": "configmaps", "all": true}]);
    let accepted = post("a-token", &apis(prov, "apiexports"), &claims);
    if accepted.0 != 201 {
        problems.push(format!("a claim with all: true is valid: {} {}", accepted.0, accepted.1));
    }

    // A binding's reference may not change.
    let made = bind("a-token", cons, "things", prov, "things");
    if made.0 == 201 {
        wait_bound("a-token", cons, "things");
        let path = apis(cons, "apibindings/things");
        let moved = merge_patch("a-token", &path, &json!({"spec": {"reference": {"export": {"name": "claims-ok"}}}}));
        expect(&mut problems, "a changed binding reference", &moved, &[422], "APIExport reference must not be changed");
        let (_, read) = get("a-token", &path);
        if read["spec"]["reference"]["export"] != json!({"path": prov, "name": "things"}) {
            problems.push(format!("a changed binding reference: the change was stored: {read}"));
        }
    } else {
        problems.push(format!("binding things: {} {}", made.0, made.1));
    }

    for (what, path, code) in &stored {
        let (got, body) = get("a-token", path);
        if got != *code {
            problems.push(format!("{what}: GET {path} answers {got}, expected {code}: {body}"));
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// Step 8: a local CRD may not take a bound resource; a binding may not take a local CRD's (it waits, reporting
/// `NamingConflicts`, and the CRD keeps serving); a binding removed and made again finds its objects.
#[test]
fn local_crds_and_bindings_of_one_resource_never_both_serve() {
    let _ = provider();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.io"},
        "spec": {"group": "example.io", "scope": "Namespaced", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {"local": {"type": "string"}}}}}}}]}});
    let crds = |path: &str| format!("/clusters/{path}/apis/apiextensions.k8s.io/v1/customresourcedefinitions");

    // Bound first: the CRD is refused, naming the binding.
    let bound_ws = "root:t-a:col-bound";
    create_workspace("a-token", "root:t-a", "col-bound");
    let (code, made) = bind("a-token", bound_ws, "my-widgets", PROVIDER, "widgets");
    assert_eq!(code, 201, "{made}");
    wait_bound("a-token", bound_ws, "my-widgets");
    wait_served("a-token", bound_ws);
    let kept = create_widget("a-token", bound_ws, "kept", json!({"size": 2}));
    let refused = post("a-token", &crds(bound_ws), &crd);
    assert!((400..500).contains(&refused.0) && refused.1["kind"] == "Status", "a CRD over a bound resource: {refused:?}");
    assert!(status_message(&refused).contains("my-widgets"), "the refusal names the binding: {}", refused.1);
    assert_eq!(get("a-token", &format!("{}/widgets.example.io", crds(bound_ws))).0, 404, "no CRD stored");

    // Removed and bound again: the widget is still there.
    let (code, deleted) = delete("a-token", &apis(bound_ws, "apibindings/my-widgets"));
    assert!(code == 200 || code == 202, "{deleted}");
    assert!(eventually(TIMEOUT, || get("a-token", &apis(bound_ws, "apibindings/my-widgets")).0 == 404), "the binding goes");
    let (code, made) = bind("a-token", bound_ws, "my-widgets", PROVIDER, "widgets");
    assert_eq!(code, 201, "{made}");
    wait_bound("a-token", bound_ws, "my-widgets");
    let mut read = (0, Value::Null);
    assert!(eventually(TIMEOUT, || {
        read = get("a-token", &format!("{}/kept", widgets(bound_ws)));
        read.0 == 200
    }), "the widget made before is served again: {read:?}");
    assert_eq!((&read.1["metadata"]["uid"], &read.1["spec"]), (&kept["metadata"]["uid"], &json!({"size": 2})), "{}", read.1);

    // A local CRD first: the binding waits with NamingConflicts and the CRD keeps serving.
    let local_ws = "root:t-a:col-local";
    create_workspace("a-token", "root:t-a", "col-local");
    let (code, made) = post("a-token", &crds(local_ws), &crd);
    assert_eq!(code, 201, "{made}");
    let local = format!("/clusters/{local_ws}/apis/example.io/v1/namespaces/default/widgets");
    let mut made = (0, Value::Null);
    assert!(eventually(TIMEOUT, || {
        made = post("a-token", &local, &widget("local", json!({"local": "yes"})));
        made.0 == 201
    }), "the local CRD serves: {made:?}");
    let (code, created) = bind("a-token", local_ws, "widgets", PROVIDER, "widgets");
    assert_eq!(code, 201, "{created}");
    let mut last = Value::Null;
    let conflict = |binding: &Value| {
        binding["status"]["conditions"].as_array().into_iter().flatten().any(|c| {
            c["type"] == "BindingUpToDate" && c["status"] == "False" && c["reason"] == "NamingConflicts"
        })
    };
    assert!(eventually(TIMEOUT, || {
        last = get("a-token", &apis(local_ws, "apibindings/widgets")).1;
        conflict(&last)
    }), "BindingUpToDate False NamingConflicts: {last}");
    std::thread::sleep(Duration::from_millis(500));
    let (_, again) = get("a-token", &apis(local_ws, "apibindings/widgets"));
    assert_eq!(again["status"]["phase"], "Binding", "not Bound while the CRD holds the name: {again}");
    assert!(conflict(&again), "{again}");
    let (code, read) = get("a-token", &format!("{local}/local"));
    assert_eq!((code, &read["spec"]), (200, &json!({"local": "yes"})), "the CRD still serves its object: {read}");
    let other = post("a-token", &local, &widget("local-2", json!({"local": "also", "size": 0})));
    assert_eq!(other.0, 201, "the CRD's schema applies, not the export's: {}", other.1);
}

/// Step 9: the provider's controller view: every consumer's widgets under `<vw>/clusters/*`, one consumer's under
/// `<vw>/clusters/<logical cluster>` (get, create, update, delete), the bindings to this export, a watch; refused
/// without `apiexports/content` and for a workspace that does not bind the export. A provider of its own, so the
/// consumers are exactly known.
#[test]
fn the_export_virtual_workspace_serves_every_consumers_widgets_to_the_provider() {
    let f = fixture();
    let p = provider();
    let c = consumer();
    let prov = "root:t-a:vw-provider";
    create_workspace("a-token", "root:t-a", "vw-provider");
    publish("a-token", prov, &widget_schema(SCHEMA), &export("widgets", &[SCHEMA]));
    let url = wait_virtual_workspace_url("a-token", prov, "widgets");
    assert_eq!(url, format!("{}/services/apiexport/{}/widgets", f.server.url, cluster_of("root:t-a", "vw-provider")));
    let vw = url.strip_prefix(&f.server.url).expect("on this server").to_owned();

    let mut clusters = Vec::new();
    for (n, name) in ["vw-c1", "vw-c2"].into_iter().enumerate() {
        create_workspace("a-token", "root:t-a", name);
        let path = format!("root:t-a:{name}");
        let (code, made) = bind("a-token", &path, "widgets", prov, "widgets");
        assert_eq!(code, 201, "{made}");
        wait_bound("a-token", &path, "widgets");
        wait_served("a-token", &path);
        create_widget("a-token", &path, &format!("from-{name}"), json!({"size": n + 1}));
        clusters.push(cluster_of("root:t-a", name));
    }
    create_widget("a-token", CONSUMER, "vw-probe", json!({"size": 1}));
    let expected = vec![("from-vw-c1".to_owned(), clusters[0].clone()), ("from-vw-c2".to_owned(), clusters[1].clone())];

    // Across every consumer, over both protocols; only this export's.
    let all = format!("{vw}/clusters/*/apis/example.io/v1/widgets");
    for http in [Http::One, Http::Two] {
        let (code, listed) = call(http, "a-token", "GET", &all, None);
        assert_eq!((code, names_and_clusters(&listed)), (200, expected.clone()), "{http:?}: {listed}");
        assert_eq!(listed["kind"], "WidgetList", "{listed}");
    }
    let (code, bindings) = get("a-token", &format!("{vw}/clusters/*/apis/apis.kcp.io/v1alpha1/apibindings"));
    let mut only = vec![("widgets".to_owned(), clusters[0].clone()), ("widgets".to_owned(), clusters[1].clone())];
    only.sort();
    assert_eq!((code, names_and_clusters(&bindings)), (200, only), "only the bindings to this export: {bindings}");
    let main = format!("/services/apiexport/{}/widgets/clusters/*/apis/example.io/v1/widgets", p.cluster);
    let (code, listed) = get("a-token", &main);
    assert_eq!(code, 200, "{listed}");
    let seen = names_and_clusters(&listed);
    assert!(seen.contains(&("vw-probe".to_owned(), c.cluster.clone())), "the main export's view has its consumer: {listed}");
    assert!(seen.iter().all(|(_, cluster)| !clusters.contains(cluster)), "nor vw-provider's consumers: {listed}");

    // A watch from the list's resourceVersion sees a widget made in a consumer.
    let (_, listed) = get("a-token", &all);
    let from = listed["metadata"]["resourceVersion"].as_str().unwrap_or_else(|| panic!("a list resourceVersion: {listed}")).to_owned();
    create_widget("a-token", "root:t-a:vw-c2", "late", json!({"size": 9}));
    let (code, events) = get("a-token", &format!("{all}?watch=1&resourceVersion={from}&timeoutSeconds=1"));
    let text = events.as_str().map(str::to_owned).unwrap_or_else(|| events.to_string());
    let added = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).any(|e| {
        e["type"] == "ADDED" && e["object"]["metadata"]["name"] == "late" && e["object"]["metadata"]["annotations"]["kcp.io/cluster"] == clusters[1].as_str()
    });
    assert!(code == 200 && added, "the watch saw late ADDED in vw-c2: {code} {text}");

    // One consumer: list, create, get, update, delete; the consumer sees each write.
    let one = format!("{vw}/clusters/{}/apis/example.io/v1/namespaces/default/widgets", clusters[0]);
    let (code, listed) = get("a-token", &one);
    assert_eq!((code, list_names(&listed)), (200, vec!["from-vw-c1".to_owned()]), "{listed}");
    let (code, made) = call(Http::Two, "a-token", "POST", &one, Some(&widget("by-provider", json!({"size": 7}))));
    assert_eq!(code, 201, "{made}");
    let in_consumer = format!("{}/by-provider", widgets("root:t-a:vw-c1"));
    let (code, read) = get("a-token", &in_consumer);
    assert_eq!((code, &read["spec"]), (200, &json!({"size": 7})), "{read}");
    let (code, mut object) = get("a-token", &format!("{one}/by-provider"));
    assert_eq!((code, &object["metadata"]["uid"]), (200, &made["metadata"]["uid"]), "{object}");
    object["spec"]["color"] = json!("green");
    let (code, updated) = call(Http::One, "a-token", "PUT", &format!("{one}/by-provider"), Some(&object));
    assert_eq!((code, &updated["spec"]["color"]), (200, &json!("green")), "{updated}");
    assert_eq!(get("a-token", &in_consumer).1["spec"], json!({"size": 7, "color": "green"}));
    let (code, deleted) = call(Http::Two, "a-token", "DELETE", &format!("{one}/by-provider"), None);
    assert_eq!(code, 200, "{deleted}");
    assert!(eventually(TIMEOUT, || get("a-token", &in_consumer).0 == 404), "deleted in the consumer");

    // Refused: no apiexports/content (carol of t-a, t-b's admin), and workspaces that do not bind this export.
    for http in [Http::One, Http::Two] {
        for token in ["carol-token", "b-token"] {
            let (code, body) = call(http, token, "GET", &all, None);
            assert_eq!((code, &body["kind"]), (403, &json!("Status")), "{http:?} {token}: {body}");
            let (code, body) = call(http, token, "GET", &one, None);
            assert_eq!(code, 403, "{http:?} {token} in one consumer: {body}");
        }
    }
    // The verb is checked on apiexports/content: granted get/list/watch there only, carol lists but may not create.
    let content = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "read-widgets-content"},
        "rules": [{"apiGroups": ["apis.kcp.io"], "resources": ["apiexports/content"], "resourceNames": ["widgets"], "verbs": ["get", "list", "watch"]}]});
    assert_eq!(post("a-token", &rbac(prov, "clusterroles"), &content).0, 201);
    let grant = cluster_role_binding("read-widgets-content-carol", "read-widgets-content", "User", "carol");
    assert_eq!(post("a-token", &rbac(prov, "clusterrolebindings"), &grant).0, 201);
    let mut listed = (0, Value::Null);
    assert!(eventually(TIMEOUT, || {
        listed = call(Http::Two, "carol-token", "GET", &all, None);
        listed.0 == 200
    }), "carol with list on apiexports/content: {listed:?}");
    assert_eq!(list_names(&listed.1), ["from-vw-c1", "from-vw-c2", "late"], "{}", listed.1);
    let (code, body) = post("carol-token", &one, &widget("by-carol", json!({"size": 1})));
    assert_eq!((code, &body["kind"]), (403, &json!("Status")), "carol without create on apiexports/content: {body}");
    assert_eq!(get("a-token", &format!("{}/by-carol", widgets("root:t-a:vw-c1"))).0, 404, "nothing written");

    create_workspace("a-token", "root:t-a", "vw-none");
    for cluster in [c.cluster.clone(), cluster_of("root:t-a", "vw-none")] {
        let (code, body) = get("a-token", &format!("{vw}/clusters/{cluster}/apis/example.io/v1/namespaces/default/widgets"));
        assert!(code == 403 || code == 404, "{cluster} does not bind vw-provider's export: {code} {body}");
        let (code, body) = post("a-token", &format!("{vw}/clusters/{cluster}/apis/example.io/v1/namespaces/default/widgets"), &widget("sneaky", json!({})));
        assert!(code == 403 || code == 404, "{cluster}: a create {code} {body}");
    }
    assert_eq!(get("a-token", &format!("{}/sneaky", widgets(CONSUMER))).0, 404, "nothing written into the consumer");

    // A workspace whose binding goes leaves the view (its widgets stay stored there) and comes back with the binding.
    assert_eq!(delete("a-token", &apis("root:t-a:vw-c2", "apibindings/widgets")).0, 200);
    let mut listed = (0, Value::Null);
    assert!(eventually(TIMEOUT, || {
        listed = get("a-token", &all);
        listed.0 == 200 && names_and_clusters(&listed.1).iter().all(|(_, cluster)| *cluster != clusters[1])
    }), "vw-c2 unbound, out of the view: {listed:?}");
    assert!(names_and_clusters(&listed.1).iter().any(|(_, cluster)| *cluster == clusters[0]), "vw-c1 still in it: {}", listed.1);
    let (code, made) = bind("a-token", "root:t-a:vw-c2", "widgets", prov, "widgets");
    assert_eq!(code, 201, "{made}");
    wait_bound("a-token", "root:t-a:vw-c2", "widgets");
    assert!(eventually(TIMEOUT, || {
        listed = get("a-token", &all);
        list_names(&listed.1).contains(&"late".to_owned())
    }), "bound again, vw-c2's widgets are back: {listed:?}");
}

#[test]
fn the_maximal_permission_policy_of_an_export_bounds_what_consumers_may_do() {
    let prov = "root:t-a:mpp-provider";
    let cons = "root:t-a:mpp-consumer";
    create_workspace("a-token", "root:t-a", "mpp-provider");
    create_workspace("a-token", "root:t-a", "mpp-consumer");
    let mut bounded = export("widgets", &[SCHEMA]);
    bounded["spec"]["maximalPermissionPolicy"] = json!({"local": {}});
    publish("a-token", prov, &widget_schema(SCHEMA), &bounded);
    wait_identity_hash("a-token", prov, "widgets");
    let (code, made) = bind("a-token", cons, "widgets", prov, "widgets");
    assert_eq!(code, 201, "{made}");
    wait_bound("a-token", cons, "widgets");

    // The consumer's admin may do anything in its workspace, but the provider allows nothing yet.
    let mut answer = (0, Value::Null);
    assert!(eventually(TIMEOUT, || {
        answer = get("a-token", &widgets(cons));
        answer.0 == 403
    }), "a list before the provider allows it: {answer:?}");
    assert_status(&answer, 403, "maximal permission policy", "list");
    assert_status(&post("a-token", &widgets(cons), &widget("w", json!({}))), 403, "maximal permission policy", "create");

    // The provider allows reading to everyone authenticated, prefixed: lists pass, creates stay refused.
    let reader = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "widget-readers"},
        "rules": [{"apiGroups": ["example.io"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}]});
    assert_eq!(post("a-token", &rbac(prov, "clusterroles"), &reader).0, 201);
    let grant = cluster_role_binding("widget-readers", "widget-readers", "Group", "apis.kcp.io:binding:system:authenticated");
    assert_eq!(post("a-token", &rbac(prov, "clusterrolebindings"), &grant).0, 201);
    assert!(eventually(TIMEOUT, || {
        answer = get("a-token", &widgets(cons));
        answer.0 == 200
    }), "a list once the provider allows it: {answer:?}");
    assert_status(&post("a-token", &widgets(cons), &widget("w", json!({}))), 403, "maximal permission policy", "create, still");
    // `kubectl auth can-i` agrees with the requests.
    let can = |verb: &str| {
        let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"group": "example.io", "resource": "widgets", "verb": verb, "namespace": "default"}}});
        let (code, answer) = post("a-token", &format!("/clusters/{cons}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"), &review);
        assert_eq!(code, 201, "{answer}");
        answer["status"]["allowed"].as_bool().unwrap_or(false)
    };
    assert_eq!((can("list"), can("create")), (true, false), "the reviews bounded as the requests are");

    // Without the policy, the consumer's own RBAC alone decides.
    let (code, patched) = merge_patch("a-token", &apis(prov, "apiexports/widgets"), &json!({"spec": {"maximalPermissionPolicy": null}}));
    assert_eq!(code, 200, "{patched}");
    let mut made = (0, Value::Null);
    assert!(eventually(TIMEOUT, || {
        made = post("a-token", &widgets(cons), &widget("w", json!({})));
        made.0 == 201
    }), "a create without the policy: {made:?}");
}

#[test]
fn accepted_permission_claims_reach_the_provider_and_rejected_ones_do_not() {
    let f = fixture();
    let prov = "root:t-a:claims-provider";
    create_workspace("a-token", "root:t-a", "claims-provider");
    let mut claiming = export("widgets", &[SCHEMA]);
    claiming["spec"]["permissionClaims"] = json!([{"resource": "configmaps", "all": true}]);
    publish("a-token", prov, &widget_schema(SCHEMA), &claiming);
    let url = wait_virtual_workspace_url("a-token", prov, "widgets");
    let vw = url.strip_prefix(&f.server.url).expect("on this server").to_owned();
    let label = |object: &Value| -> Vec<String> {
        object["metadata"]["labels"].as_object().into_iter().flatten().map(|(k, _)| k.clone())
            .filter(|k| k.starts_with("claimed.internal.apis.kcp.io/")).collect()
    };

    // One consumer accepts the claim with the plugin, another rejects it.
    let mut clusters = Vec::new();
    for (name, flag) in [("claims-yes", "--accept-permission-claim"), ("claims-no", "--reject-permission-claim")] {
        create_workspace("a-token", "root:t-a", name);
        let path = format!("root:t-a:{name}");
        let (plugin, _kubeconfig, _dir) = plugin_kubectl(&f.admin);
        plugin.ok(&["ws", &format!(":{path}")]);
        plugin.ok(&["kcp", "bind", "apiexport", &format!("{prov}:widgets"), flag, "configmaps.core"]);
        let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{name}")}, "data": {"a": "b"}});
        let (code, made) = post("a-token", &format!("/clusters/{path}/api/v1/namespaces/default/configmaps"), &configmap);
        assert_eq!(code, 201, "{made}");
        clusters.push(cluster_of("root:t-a", name));
    }
    let accepted = "/clusters/root:t-a:claims-yes/api/v1/namespaces/default/configmaps/cm-claims-yes";
    let mut object = Value::Null;
    assert!(eventually(TIMEOUT, || {
        object = get("a-token", accepted).1;
        label(&object).len() == 1
    }), "the accepted claim labels the configmap: {object}");
    assert!(label(&get("a-token", "/clusters/root:t-a:claims-no/api/v1/namespaces/default/configmaps/cm-claims-no").1).is_empty());

    // The provider sees the accepted workspace's configmaps only, across every workspace and in one.
    let all = format!("{vw}/clusters/*/api/v1/configmaps");
    for http in [Http::One, Http::Two] {
        let (code, listed) = call(http, "a-token", "GET", &all, None);
        assert_eq!((code, names_and_clusters(&listed)), (200, vec![("cm-claims-yes".to_owned(), clusters[0].clone())]), "{http:?}: {listed}");
    }
    let (code, one) = get("a-token", &format!("{vw}/clusters/{}/api/v1/namespaces/default/configmaps/cm-claims-yes", clusters[0]));
    assert_eq!((code, &one["data"]), (200, &json!({"a": "b"})), "{one}");
    let refused = get("a-token", &format!("{vw}/clusters/{}/api/v1/namespaces/default/configmaps/cm-claims-no", clusters[1]));
    assert_status(&refused, 403, "is not accepted", "a rejected claim");

    // Nobody forges the label; rejecting the claim takes it away and the provider's view with it.
    let (code, forged) = merge_patch("a-token", "/clusters/root:t-a:claims-no/api/v1/namespaces/default/configmaps/cm-claims-no",
        &json!({"metadata": {"labels": {label(&object)[0].clone(): "x"}}}));
    assert_eq!((code, label(&forged)), (200, Vec::<String>::new()), "{forged}");
    let (code, binding) = get("a-token", &apis("root:t-a:claims-yes", "apibindings/widgets"));
    assert_eq!(code, 200, "{binding}");
    let mut claims = binding["spec"]["permissionClaims"].clone();
    claims[0]["state"] = json!("Rejected");
    let (code, patched) = merge_patch("a-token", &apis("root:t-a:claims-yes", "apibindings/widgets"), &json!({"spec": {"permissionClaims": claims}}));
    assert_eq!(code, 200, "{patched}");
    assert!(eventually(TIMEOUT, || label(&get("a-token", accepted).1).is_empty()), "the label goes with the claim");
    let (code, listed) = get("a-token", &all);
    assert_eq!((code, list_names(&listed)), (200, Vec::<String>::new()), "{listed}");
}

/// Issue 45 (security): an acceptance wider than the export's claim (`all: true` for a claim of one named
/// configmap, as kcp's plugin writes it) grants nothing; the plugin accepts the export's own scope, and then the
/// provider reaches exactly the selected configmap through its virtual workspace: in `*` lists and watches, by name,
/// by create and by deletecollection.
#[test]
fn an_accepted_claim_never_grants_more_than_the_export_claims() {
    let f = fixture();
    let prov = "root:t-a:narrow-provider";
    create_workspace("a-token", "root:t-a", "narrow-provider");
    let mut claiming = export("widgets", &[SCHEMA]);
    claiming["spec"]["permissionClaims"] = json!([{"resource": "configmaps", "resourceSelector": [{"name": "shared", "namespace": "default"}]}]);
    publish("a-token", prov, &widget_schema(SCHEMA), &claiming);
    let url = wait_virtual_workspace_url("a-token", prov, "widgets");
    let vw = url.strip_prefix(&f.server.url).expect("on this server").to_owned();
    let configmap = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"secret": name}});

    // A hand-written binding accepting `all` (what kcp's plugin sends), and one bound by our plugin.
    create_workspace("a-token", "root:t-a", "narrow-wide");
    let mut wide = binding("widgets", prov, "widgets");
    wide["spec"]["permissionClaims"] = json!([{"resource": "configmaps", "all": true, "state": "Accepted"}]);
    assert_eq!(post("a-token", &apis("root:t-a:narrow-wide", "apibindings"), &wide).0, 201);
    create_workspace("a-token", "root:t-a", "narrow-ok");
    let (plugin, _kubeconfig, _dir) = plugin_kubectl(&f.admin);
    plugin.ok(&["ws", ":root:t-a:narrow-ok"]);
    plugin.ok(&["kcp", "bind", "apiexport", &format!("{prov}:widgets"), "--accept-permission-claim", "configmaps.core"]);
    let (code, ok) = get("a-token", &apis("root:t-a:narrow-ok", "apibindings/widgets"));
    assert_eq!((code, &ok["spec"]["permissionClaims"]), (200, &json!([{"resource": "configmaps",
        "resourceSelector": [{"name": "shared", "namespace": "default"}], "state": "Accepted"}])), "the plugin accepts the export's scope: {ok}");
    for ws in ["narrow-wide", "narrow-ok"] {
        for name in ["shared", "private"] {
            let (code, made) = post("a-token", &format!("/clusters/root:t-a:{ws}/api/v1/namespaces/default/configmaps"), &configmap(name));
            assert_eq!(code, 201, "{made}");
        }
    }
    let (wide_cluster, ok_cluster) = (cluster_of("root:t-a", "narrow-wide"), cluster_of("root:t-a", "narrow-ok"));

    // The wide acceptance is not applied, and the binding says why.
    let wide_bound = wait_bound("a-token", "root:t-a:narrow-wide", "widgets");
    let mut status = Value::Null;
    assert!(eventually(TIMEOUT, || {
        status = get("a-token", &apis("root:t-a:narrow-wide", "apibindings/widgets")).1["status"].clone();
        status["conditions"].as_array().into_iter().flatten()
            .any(|c| c["type"] == "PermissionClaimsValid" && c["status"] == "False" && c["reason"] == "PermissionClaimsMismatch")
    }), "PermissionClaimsValid False: {status} (bound: {wide_bound})");
    assert_eq!(status["appliedPermissionClaims"], json!([]), "{status}");
    let ok_bound = wait_bound("a-token", "root:t-a:narrow-ok", "widgets");
    let applied = json!([{"resource": "configmaps", "resourceSelector": [{"name": "shared", "namespace": "default"}]}]);
    let mut applied_now = Value::Null;
    assert!(eventually(TIMEOUT, || {
        applied_now = get("a-token", &apis("root:t-a:narrow-ok", "apibindings/widgets")).1["status"]["appliedPermissionClaims"].clone();
        applied_now == applied
    }), "the export's claim is applied as the export states it: {applied_now} ({ok_bound})");

    // Across every workspace, over HTTP/1.1 and HTTP/2: only the selected configmap of the workspace that accepted it.
    let all = format!("{vw}/clusters/*/api/v1/configmaps");
    for http in [Http::One, Http::Two] {
        let mut listed = Value::Null;
        assert!(eventually(TIMEOUT, || {
            listed = call(http, "a-token", "GET", &all, None).1;
            names_and_clusters(&listed) == vec![("shared".to_owned(), ok_cluster.clone())]
        }), "{http:?}: {listed}");
    }
    let in_ns = |cluster: &str, rest: &str| format!("{vw}/clusters/{cluster}/api/v1/namespaces/default/configmaps{rest}");
    // In the wide workspace nothing is reachable, not even the selected name.
    for name in ["shared", "private"] {
        let refused = get("a-token", &in_ns(&wide_cluster, &format!("/{name}")));
        assert_status(&refused, 403, "is not accepted", &format!("{name} through a mismatched acceptance"));
    }
    let refused = get("a-token", &in_ns(&wide_cluster, ""));
    assert_eq!(refused.0, 403, "a list through a mismatched acceptance: {refused:?}");
    // In the accepted workspace: the selected configmap by name and in lists, nothing else by any verb.
    let (code, one) = get("a-token", &in_ns(&ok_cluster, "/shared"));
    assert_eq!((code, &one["data"]), (200, &json!({"secret": "shared"})), "{one}");
    let refused = get("a-token", &in_ns(&ok_cluster, "/private"));
    assert_status(&refused, 403, "does not cover", "a configmap outside the selector");
    let (code, listed) = get("a-token", &in_ns(&ok_cluster, ""));
    assert_eq!((code, list_names(&listed)), (200, vec!["shared".to_owned()]), "{listed}");
    let (code, made) = post("a-token", &in_ns(&ok_cluster, ""), &configmap("sneaky"));
    assert_eq!(code, 403, "a create outside the selector: {made}");
    let (code, made) = call(Http::Two, "a-token", "DELETE", &in_ns(&ok_cluster, ""), None);
    assert_eq!(code, 200, "deletecollection: {made}");
    for (name, expected) in [("shared", 404), ("private", 200), ("sneaky", 404)] {
        let (code, _) = get("a-token", &format!("/clusters/root:t-a:narrow-ok/api/v1/namespaces/default/configmaps/{name}"));
        assert_eq!(code, expected, "{name} after the provider's deletecollection");
    }
    for name in ["shared", "private"] {
        let (code, _) = get("a-token", &format!("/clusters/root:t-a:narrow-wide/api/v1/namespaces/default/configmaps/{name}"));
        assert_eq!(code, 200, "{name} in the wide workspace is untouched");
    }
}

/// Issue 45 (3): an export named as kcp names its own (`example.kcp.io`, a DNS subdomain) is bound with the
/// plugin and by hand, gets its endpoint slice and virtual workspace, and a WorkspaceType may bind it by default.
#[test]
fn an_export_with_a_dotted_name_is_bound_and_served() {
    let f = fixture();
    let prov = "root:t-a:dotted-provider";
    create_workspace("a-token", "root:t-a", "dotted-provider");
    publish("a-token", prov, &widget_schema(SCHEMA), &export("example.kcp.io", &[SCHEMA]));
    wait_identity_hash("a-token", prov, "example.kcp.io");
    let url = wait_virtual_workspace_url("a-token", prov, "example.kcp.io");
    assert!(url.ends_with("/example.kcp.io"), "{url}");

    create_workspace("a-token", "root:t-a", "dotted-plugin");
    let (plugin, _kubeconfig, _dir) = plugin_kubectl(&f.admin);
    plugin.ok(&["ws", ":root:t-a:dotted-plugin"]);
    plugin.ok(&["kcp", "bind", "apiexport", &format!("{prov}:example.kcp.io")]);
    wait_served("a-token", "root:t-a:dotted-plugin");
    create_widget("a-token", "root:t-a:dotted-plugin", "w1", json!({}));

    create_workspace("a-token", "root:t-a", "dotted-hand");
    for http in [Http::One, Http::Two] {
        let body = binding(&format!("by-hand-{}", if http == Http::One { 1 } else { 2 }), prov, "example.kcp.io");
        let (code, made) = call(http, "a-token", "POST", &apis("root:t-a:dotted-hand", "apibindings"), Some(&body));
        assert!(code == 201, "{http:?}: {made}");
    }
    wait_bound("a-token", "root:t-a:dotted-hand", "by-hand-1");
    // A bad reference is still refused, with the rule in the message.
    let (code, refused) = bind("a-token", "root:t-a:dotted-hand", "bad", prov, "Example..io");
    assert_eq!(code, 422, "{refused}");
    assert!(status_message(&(code, refused.clone())).contains("DNS subdomain"), "{refused}");

    // The provider's controller sees both consumers' widgets through the virtual workspace.
    let vw = url.strip_prefix(&f.server.url).expect("on this server").to_owned();
    let mut listed = Value::Null;
    assert!(eventually(TIMEOUT, || {
        listed = call(Http::Two, "a-token", "GET", &format!("{vw}/clusters/*/apis/example.io/v1/widgets"), None).1;
        list_names(&listed) == ["w1"]
    }), "{listed}");

    // A type's default binding to it.
    let kind = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType", "metadata": {"name": "dotted-type"},
        "spec": {"extend": {"with": [{"name": "universal", "path": "root"}]}, "defaultAPIBindings": [{"path": prov, "export": "example.kcp.io"}]}});
    let (code, made) = post("a-token", "/clusters/root:t-a/apis/tenancy.kcp.io/v1alpha1/workspacetypes", &kind);
    assert_eq!(code, 201, "{made}");
    let body = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "dotted-typed"},
        "spec": {"type": {"name": "dotted-type", "path": "root:t-a"}}});
    let (code, made) = post("a-token", &workspaces_of("root:t-a"), &body);
    assert_eq!(code, 201, "{made}");
    wait_ready("a-token", "root:t-a", "dotted-typed");
    wait_served("a-token", "root:t-a:dotted-typed");
}

/// Issue 45 (8): deleting a subtree finishes whatever kcp kinds it holds: a provider workspace with its schema,
/// export (its identity secret and endpoint slice, and a slice made by hand), a consumer with a binding and bound
/// objects, and a whole tenant holding both.
#[test]
fn deleting_a_subtree_finishes_with_every_kcp_kind_in_it() {
    let _ = fixture();
    let tenant = json!({"apiVersion": "v1", "kind": "Tenant", "metadata": {"name": "t-gone"}});
    assert_eq!(post("root-token", "/api/v1/tenants", &tenant).0, 201);
    let export_of = |prov: &str| {
        publish("gone-token", prov, &widget_schema(SCHEMA), &export("gone-widgets", &[SCHEMA]));
        wait_identity_hash("gone-token", prov, "gone-widgets");
        wait_virtual_workspace_url("gone-token", prov, "gone-widgets");
        let slice = json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExportEndpointSlice", "metadata": {"name": "extra"},
            "spec": {"export": {"path": prov, "name": "gone-widgets"}}});
        assert_eq!(post("gone-token", &apis(prov, "apiexportendpointslices"), &slice).0, 201);
        let (code, secret) = get("gone-token", &format!("/clusters/{prov}/api/v1/namespaces/kcp-system/secrets/gone-widgets"));
        assert_eq!(code, 200, "the identity secret: {secret}");
    };
    let consume = |cons: &str, prov: &str| {
        assert_eq!(bind("gone-token", cons, "widgets", prov, "gone-widgets").0, 201);
        wait_bound("gone-token", cons, "widgets");
        wait_served("gone-token", cons);
        create_widget("gone-token", cons, "w", json!({}));
    };
    for name in ["p1", "c1", "p2", "c2"] {
        create_workspace("gone-token", "root:t-gone", name);
    }
    export_of("root:t-gone:p1");
    consume("root:t-gone:c1", "root:t-gone:p1");
    export_of("root:t-gone:p2");
    consume("root:t-gone:c2", "root:t-gone:p2");

    // A consumer alone (its binding and bound widgets), then a provider alone (its export still bound elsewhere).
    for name in ["c1", "p2"] {
        let path = format!("{}/{name}", workspaces_of("root:t-gone"));
        let (code, deleted) = call(Http::Two, "gone-token", "DELETE", &path, None);
        assert_eq!(code, 200, "{deleted}");
        let mut last = (0, Value::Null);
        assert!(eventually(TIMEOUT, || {
            last = get("gone-token", &path);
            last.0 == 404
        }), "root:t-gone:{name} never went: {last:?}");
    }
    // The whole tenant, with a provider and the consumer of the export that went.
    assert_eq!(call(Http::One, "root-token", "DELETE", "/api/v1/tenants/t-gone", None).0, 200);
    let mut last = (0, Value::Null);
    assert!(eventually(Duration::from_secs(40), || {
        last = get("root-token", "/api/v1/tenants/t-gone");
        last.0 == 404
    }), "the tenant never went: {last:?}");
    assert_eq!(get("root-token", "/clusters/root:t-gone/apis/core.kcp.io/v1alpha1/logicalclusters/cluster").0, 404);
}

#[test]
fn a_workspace_type_with_default_api_bindings_binds_its_new_workspaces() {
    let _ = provider();
    let types = "/clusters/root:t-a/apis/tenancy.kcp.io/v1alpha1/workspacetypes";
    let kind = |name: &str, export_path: &str| json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType", "metadata": {"name": name},
        "spec": {"extend": {"with": [{"name": "universal", "path": "root"}]}, "defaultAPIBindings": [{"path": export_path, "export": "widgets"}]}});

    // Adding a default binding needs bind on the export: carol has no grant in the provider of this test's export.
    create_workspace("a-token", "root:t-a", "dab-provider");
    publish("a-token", "root:t-a:dab-provider", &widget_schema(SCHEMA), &export("widgets", &[SCHEMA]));
    let grant = cluster_role_binding("carol-types", "cluster-admin", "User", "carol");
    assert_eq!(post("a-token", &rbac("root:t-a", "clusterrolebindings"), &grant).0, 201);
    let mut refused = (0, Value::Null);
    assert!(eventually(TIMEOUT, || {
        refused = post("carol-token", types, &kind("carols-type", "root:t-a:dab-provider"));
        refused.0 == 403 && status_message(&refused).contains("no permission to bind to export root:t-a:dab-provider:widgets")
    }), "carol adds a default binding without bind: {refused:?}");

    // The tenant's admin may: a workspace of the type is made with the binding, Bound, and serves widgets.
    let (code, made) = post("a-token", types, &kind("widgety", PROVIDER));
    assert_eq!(code, 201, "{made}");
    let body = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "dab-ws"},
        "spec": {"type": {"name": "widgety", "path": "root:t-a"}}});
    let (code, created) = post("a-token", &workspaces_of("root:t-a"), &body);
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["status"]["initializers"], json!(["system:apibindings"]), "kcp's initializer of default bindings: {created}");
    wait_ready("a-token", "root:t-a", "dab-ws");
    // Ready only once its bindings are: the initializer waited for them.
    let (code, bound) = get("a-token", &apis("root:t-a:dab-ws", "apibindings/widgets"));
    assert_eq!((code, &bound["status"]["phase"]), (200, &json!("Bound")), "{bound}");
    assert_eq!(bound["spec"]["reference"]["export"], json!({"path": PROVIDER, "name": "widgets"}), "{bound}");
    wait_served("a-token", "root:t-a:dab-ws");
    create_widget("a-token", "root:t-a:dab-ws", "defaulted", json!({}));
}

#[test]
fn a_claim_on_another_exports_resource_names_it_by_identity_hash() {
    let f = fixture();
    let p = provider();
    // An export of its own (gadgets) that claims the widgets of the main provider's export, by its identity.
    let prov = "root:t-a:claimer";
    create_workspace("a-token", "root:t-a", "claimer");
    let gadgets = resource_schema("v1.gadgets.example.net", "example.net", "gadgets", "Gadget", "Namespaced", json!({"type": "object"}));
    let mut claiming = export("gadgets", &["v1.gadgets.example.net"]);
    claiming["spec"]["permissionClaims"] = json!([{"group": "example.io", "resource": "widgets", "identityHash": p.identity_hash, "all": true}]);
    publish("a-token", prov, &gadgets, &claiming);
    let url = wait_virtual_workspace_url("a-token", prov, "gadgets");
    let vw = url.strip_prefix(&f.server.url).expect("on this server").to_owned();

    // A consumer binds both, accepting the claim (the plugin copies the claim's identity hash).
    let cons = "root:t-a:claimed";
    create_workspace("a-token", "root:t-a", "claimed");
    let (plugin, _kubeconfig, _dir) = plugin_kubectl(&f.admin);
    plugin.ok(&["ws", &format!(":{cons}")]);
    plugin.ok(&["kcp", "bind", "apiexport", "root:t-a:provider:widgets"]);
    plugin.ok(&["kcp", "bind", "apiexport", &format!("{prov}:gadgets"), "--accept-all-permission-claims"]);
    wait_served("a-token", cons);
    create_widget("a-token", cons, "claimed-widget", json!({"size": 4}));

    // The claimer sees that widget, and only the consumers' that accepted (not the main consumer's).
    let all = format!("{vw}/clusters/*/apis/example.io/v1/widgets");
    let mut listed = (0, Value::Null);
    assert!(eventually(TIMEOUT, || {
        listed = get("a-token", &all);
        listed.0 == 200 && list_names(&listed.1) == ["claimed-widget"]
    }), "the claimed widget through the claimer's virtual workspace: {listed:?}");
    assert_eq!(names_and_clusters(&listed.1), [("claimed-widget".to_owned(), cluster_of("root:t-a", "claimed"))]);
    let one = format!("{vw}/clusters/{}/apis/example.io/v1/namespaces/default/widgets/claimed-widget", cluster_of("root:t-a", "claimed"));
    let (code, widget) = get("a-token", &one);
    assert_eq!((code, &widget["spec"]["size"]), (200, &json!(4)), "{widget}");
}
