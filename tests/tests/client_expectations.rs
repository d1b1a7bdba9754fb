//! What real clients' own test suites expect of a cluster (issue 46): the objects every space and namespace holds
//! (`default/kubernetes` and its endpoints, the `default` ServiceAccount, `kube-root-ca.crt`), kept as kube keeps
//! them; the Pod subresources an API server answers without a kubelet (eviction with PodDisruptionBudgets,
//! binding, ephemeral containers, log/exec/attach/portforward); `componentstatuses`. One shared server, driven by
//! kubectl 1.32, curl over HTTP/1.1 and HTTP/2, and the official Python client.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{json, Value};

use kspaces_tests::{certificate_kubeconfig, curl, eventually, start_shared_with_tokens, token_kubeconfig, Http, Kubectl, Server};

const TIMEOUT: Duration = Duration::from_secs(20);

/// Static tokens: the system administrator, t-a's `admin`, and `carol` of t-a (no grants).
const TOKENS: [&str; 3] = [
    "root-token,root,u-root,\"system:masters\"",
    "a-token,admin,u-a,\"tenant-admins\",,t-a",
    "carol-token,carol,u-carol,\"\",,t-a",
];

struct Fixture {
    server: Server,
    /// t-a's admin.
    tenant: Kubectl,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let server = start_shared_with_tokens(&TOKENS);
        kspaces_tests::create_tenant(&server.kubectl(), "t-a");
        let tenant = Kubectl::new(&token_kubeconfig(&server, "a-token"));
        Fixture { server, tenant }
    })
}

/// One request with curl; the status and the body as JSON (a body that is not JSON as a string).
fn call(http: Http, token: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let text = body.map(Value::to_string);
    let (code, answer) = curl(&fixture().server, http, Some(token), method, path, text.as_deref());
    (code, serde_json::from_str(&answer).unwrap_or(Value::String(answer)))
}

/// The server's CA, as clients trust it.
fn ca_pem() -> String {
    std::fs::read_to_string(fixture().server.data_dir.path().join("pki/ca.crt")).expect("read the CA")
}

/// The port the server listens on.
fn port() -> u64 {
    fixture().server.url.rsplit(':').next().and_then(|p| p.trim_end_matches('/').parse().ok()).expect("a port in the URL")
}

/// `kubectl get sa,cm -n <namespace> -o name` as t-a's admin.
fn defaults_in(namespace: &str) -> String {
    fixture().tenant.ok(&["get", "sa,cm", "-n", namespace, "-o", "name"])
}

fn has_defaults(namespace: &str) -> bool {
    let names = defaults_in(namespace);
    names.contains("serviceaccount/default") && names.contains("configmap/kube-root-ca.crt")
}

#[test]
fn a_new_namespace_gets_its_default_account_and_root_ca_and_gets_them_back() {
    let kubectl = &fixture().tenant;
    kubectl.ok(&["create", "namespace", "ce-new"]);
    assert!(eventually(TIMEOUT, || has_defaults("ce-new")), "{}", defaults_in("ce-new"));
    let ca = kubectl.ok(&["get", "cm", "kube-root-ca.crt", "-n", "ce-new", "-o", r"jsonpath={.data.ca\.crt}"]);
    assert_eq!(ca, ca_pem(), "kube-root-ca.crt holds the CA clients trust");

    kubectl.ok(&["delete", "sa", "default", "-n", "ce-new"]);
    kubectl.ok(&["delete", "cm", "kube-root-ca.crt", "-n", "ce-new"]);
    assert!(eventually(TIMEOUT, || has_defaults("ce-new")), "deleted, they come back: {}", defaults_in("ce-new"));
    // Over HTTP/2 too, as the official clients read them.
    let (code, account) = call(Http::Two, "a-token", "GET", "/api/v1/namespaces/ce-new/serviceaccounts/default", None);
    assert_eq!((code, account["metadata"]["name"].clone()), (200, json!("default")), "{account}");
}

#[test]
fn a_terminating_namespace_does_not_get_them_back() {
    let kubectl = &fixture().tenant;
    kubectl.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: v1\nkind: Namespace\nmetadata: {name: ce-doomed}\n---\n\
        apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, namespace: ce-doomed, finalizers: [example.com/hold]}\n");
    assert!(eventually(TIMEOUT, || has_defaults("ce-doomed")), "{}", defaults_in("ce-doomed"));
    kubectl.ok(&["delete", "ns", "ce-doomed", "--wait=false"]);
    let emptied = eventually(TIMEOUT, || {
        let names = defaults_in("ce-doomed");
        !names.contains("serviceaccount/default") && !names.contains("kube-root-ca.crt")
    });
    assert!(emptied, "the namespace controller removes them: {}", defaults_in("ce-doomed"));
    std::thread::sleep(Duration::from_secs(2));
    let names = defaults_in("ce-doomed");
    assert_eq!(names.trim(), "configmap/held", "nothing comes back while the namespace terminates");
    kubectl.ok(&["patch", "cm", "held", "-n", "ce-doomed", "--type", "json", "-p", r#"[{"op":"remove","path":"/metadata/finalizers"}]"#]);
    let gone = eventually(TIMEOUT, || String::from_utf8_lossy(&kubectl.run(&["get", "ns", "ce-doomed"]).stderr).contains("not found"));
    assert!(gone, "the namespace goes once its content is gone");
}

/// Checks `default/kubernetes` (Service, Endpoints, EndpointSlice) under `prefix` (a space's URL prefix).
fn check_kubernetes_service(http: Http, token: &str, prefix: &str) {
    let path = format!("{prefix}/api/v1/namespaces/default/services/kubernetes");
    let mut service = Value::Null;
    assert!(eventually(TIMEOUT, || {
        service = call(http, token, "GET", &path, None).1;
        service["kind"] == "Service"
    }), "{path}: {service}");
    assert_eq!(service["metadata"]["labels"], json!({"component": "apiserver", "provider": "kubernetes"}), "{service}");
    assert_eq!(service["spec"]["type"], "ClusterIP", "{service}");
    assert_eq!(service["spec"]["ports"], json!([{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port()}]), "{service}");

    // The space's defaults controller writes the Service first, then its Endpoints and EndpointSlice.
    let mut slice = Value::Null;
    assert!(eventually(TIMEOUT, || {
        slice = call(http, token, "GET", &format!("{prefix}/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes"), None).1;
        slice["kind"] == "EndpointSlice"
    }), "{prefix}: {slice}");
    assert_eq!(slice["metadata"]["labels"]["kubernetes.io/service-name"], "kubernetes", "{slice}");
    assert_eq!(slice["endpoints"][0]["addresses"], json!(["127.0.0.1"]), "{slice}");
    assert_eq!(slice["ports"], json!([{"name": "https", "port": port(), "protocol": "TCP"}]), "{slice}");

    let endpoints = call(http, token, "GET", &format!("{prefix}/api/v1/namespaces/default/endpoints/kubernetes"), None).1;
    assert_eq!(endpoints["subsets"][0]["addresses"][0]["ip"], "127.0.0.1", "{endpoints}");
    assert_eq!(endpoints["subsets"][0]["ports"][0]["port"], json!(port()), "{endpoints}");
}

#[test]
fn every_space_has_the_kubernetes_service_and_its_endpoints() {
    check_kubernetes_service(Http::One, "root-token", "");
    check_kubernetes_service(Http::Two, "a-token", "/clusters/root:t-a");
    let workspaces = "/clusters/root:t-a/apis/tenancy.kcp.io/v1alpha1/workspaces";
    let (code, created) = call(Http::One, "a-token", "POST", workspaces,
        Some(&json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "ce-nested"}})));
    assert_eq!(code, 201, "{created}");
    check_kubernetes_service(Http::Two, "a-token", "/clusters/root:t-a:ce-nested");
    let kubectl = Kubectl::new(&retarget(&token_kubeconfig(&fixture().server, "a-token"), "/clusters/root:t-a:ce-nested"));
    assert!(eventually(TIMEOUT, || kubectl.ok(&["get", "sa,cm", "-n", "kube-system", "-o", "name"]).contains("configmap/kube-root-ca.crt")),
        "a nested workspace's namespaces get them too");
    // A tenant's short path reaches its own space's Service, not the system one's.
    let (code, own) = call(Http::One, "a-token", "GET", "/api/v1/namespaces/default/services/kubernetes", None);
    assert_eq!(code, 200, "{own}");
    assert_eq!(own["metadata"]["uid"], call(Http::One, "a-token", "GET", "/clusters/root:t-a/api/v1/namespaces/default/services/kubernetes", None).1["metadata"]["uid"]);
}

/// A copy of `kubeconfig` whose server URL ends in `suffix`.
fn retarget(kubeconfig: &Path, suffix: &str) -> PathBuf {
    let text = std::fs::read_to_string(kubeconfig).expect("read kubeconfig");
    let url = &fixture().server.url;
    let path = kubeconfig.with_extension(format!("{}.yaml", suffix.replace([':', '/'], "-")));
    std::fs::write(&path, text.replace(&format!("server: {url}\n"), &format!("server: {url}{suffix}\n"))).expect("write kubeconfig");
    path
}

fn pod(name: &str, node: Option<&str>) -> Value {
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "busybox"}]}});
    if let Some(node) = node {
        pod["spec"]["nodeName"] = json!(node);
    }
    pod
}

const PODS: &str = "/api/v1/namespaces/default/pods";

#[test]
fn binding_sets_the_node_once() {
    for (http, name) in [(Http::One, "ce-bind-1"), (Http::Two, "ce-bind-2")] {
        assert_eq!(call(http, "a-token", "POST", PODS, Some(&pod(name, None))).0, 201);
        let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"kind": "Node", "name": "node-1"}});
        let (code, answer) = call(http, "a-token", "POST", &format!("{PODS}/{name}/binding"), Some(&binding));
        assert_eq!((code, answer["status"].clone()), (201, json!("Success")), "{answer}");
        let bound = call(http, "a-token", "GET", &format!("{PODS}/{name}"), None).1;
        assert_eq!(bound["spec"]["nodeName"], "node-1", "{bound}");
        let (code, again) = call(http, "a-token", "POST", &format!("{PODS}/{name}/binding"), Some(&binding));
        assert_eq!(code, 409, "{again}");
        assert_eq!(again["message"], format!("Operation cannot be fulfilled on pods \"{name}\": pod {name} is already assigned to node \"node-1\""));
    }
}

#[test]
fn ephemeral_containers_are_added_never_changed_or_removed() {
    assert_eq!(call(Http::One, "a-token", "POST", PODS, Some(&pod("ce-debug", None))).0, 201);
    let path = format!("{PODS}/ce-debug/ephemeralcontainers");
    let (code, read) = call(Http::Two, "a-token", "GET", &path, None);
    assert_eq!((code, read["kind"].clone()), (200, json!("Pod")), "{read}");
    let mut with_debugger = read.clone();
    with_debugger["spec"]["ephemeralContainers"] = json!([{"name": "debugger", "image": "busybox", "stdin": true}]);
    // Anything else the body changes is not written.
    with_debugger["metadata"]["labels"] = json!({"changed": "no"});
    let (code, written) = call(Http::One, "a-token", "PUT", &path, Some(&with_debugger));
    assert_eq!(code, 200, "{written}");
    assert_eq!(written["spec"]["ephemeralContainers"][0]["name"], "debugger", "{written}");
    assert!(written["metadata"]["labels"].get("changed").is_none(), "{written}");

    let change = json!({"spec": {"ephemeralContainers": [{"name": "debugger", "image": "alpine"}]}});
    let (code, refused) = curl_patch(&path, &change);
    assert_eq!(code, 422, "{refused}");
    assert_eq!(refused["details"]["causes"][0]["message"], "Forbidden: existing ephemeral containers \"debugger\" may not be changed\n", "{refused}");
    let (code, added) = curl_patch(&path, &json!({"spec": {"ephemeralContainers": [
        {"name": "debugger", "image": "busybox", "stdin": true}, {"name": "second", "image": "busybox"}]}}));
    assert_eq!(code, 200, "{added}");
    assert_eq!(added["spec"]["ephemeralContainers"].as_array().map(Vec::len), Some(2), "{added}");
}

/// A merge patch over HTTP/2.
fn curl_patch(path: &str, patch: &Value) -> (u16, Value) {
    let output = Command::new("curl")
        .args(["-sk", "--http2", "-X", "PATCH", "-w", "\n%{http_code}", "-H", "Authorization: Bearer a-token",
            "-H", "Content-Type: application/merge-patch+json", "--data-binary", &patch.to_string()])
        .arg(format!("{}{path}", fixture().server.url)).output().expect("run curl");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or_default(), serde_json::from_str(body).unwrap_or(Value::String(body.to_owned())))
}

#[test]
fn log_exec_attach_and_portforward_of_a_pod_no_node_runs_are_kubes_answers() {
    assert_eq!(call(Http::One, "a-token", "POST", PODS, Some(&pod("ce-pending", None))).0, 201);
    for http in [Http::One, Http::Two] {
        for (method, subresource) in [("POST", "exec?command=ls&stdout=true"), ("GET", "attach?stdout=true"), ("POST", "portforward?ports=80")] {
            let (code, answer) = call(http, "a-token", method, &format!("{PODS}/ce-pending/{subresource}"), None);
            assert_eq!((code, answer["reason"].clone()), (400, json!("BadRequest")), "{subresource}: {answer}");
            assert_eq!(answer["message"], "pod ce-pending does not have a host assigned", "{subresource}");
        }
        let (code, answer) = call(http, "a-token", "GET", &format!("{PODS}/ce-pending/log"), None);
        assert_eq!((code, answer), (204, json!("")), "kube answers no content for the logs of a pod no node runs");
        let (code, answer) = call(http, "a-token", "GET", &format!("{PODS}/ce-pending/exec?container=nope&command=ls"), None);
        assert_eq!((code, answer["message"].clone()), (400, json!("container nope is not valid for pod ce-pending")), "{answer}");
    }
    let kubectl = &fixture().tenant;
    let refused = kubectl.fails(&["exec", "ce-pending", "--", "ls"]);
    assert!(refused.contains("pod ce-pending does not have a host assigned"), "{refused}");
    let (code, answer) = call(Http::One, "carol-token", "POST", &format!("{PODS}/ce-pending/exec?command=ls"), None);
    assert_eq!(code, 403, "exec is authorized as pods/exec: {answer}");
    assert!(answer["message"].as_str().unwrap_or_default().contains("cannot create resource \"pods/exec\""), "{answer}");
}

/// Marks pod `name` Running and Ready, as a kubelet would (a merge patch of its status).
fn mark_running(name: &str) {
    let status = json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
    let output = Command::new("curl")
        .args(["-sk", "-X", "PATCH", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer a-token",
            "-H", "Content-Type: application/merge-patch+json", "--data-binary", &status.to_string()])
        .arg(format!("{}{PODS}/{name}/status", fixture().server.url)).output().expect("run curl");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "200", "status of {name}");
}

/// Creates a Running, Ready pod labelled `app: <app>`.
fn running_pod(name: &str, app: &str) {
    let mut object = pod(name, None);
    object["metadata"]["labels"] = json!({"app": app});
    assert_eq!(call(Http::One, "a-token", "POST", PODS, Some(&object)).0, 201);
    mark_running(name);
}

#[test]
fn eviction_deletes_the_pod_unless_its_disruption_budget_forbids_it() {
    for name in ["ce-web-1", "ce-web-2"] {
        running_pod(name, "ce-web");
    }
    let budget = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "ce-web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "ce-web"}}}});
    let budgets = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    assert_eq!(call(Http::One, "a-token", "POST", budgets, Some(&budget)).0, 201);
    let eviction = |name: &str| json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}});

    let (code, answer) = call(Http::Two, "a-token", "POST", &format!("{PODS}/ce-web-1/eviction"), Some(&eviction("ce-web-1")));
    assert_eq!((code, answer["status"].clone()), (201, json!("Success")), "{answer}");
    assert_eq!(call(Http::One, "a-token", "GET", &format!("{PODS}/ce-web-1"), None).0, 404, "the evicted pod is gone");

    let (code, refused) = call(Http::One, "a-token", "POST", &format!("{PODS}/ce-web-2/eviction"), Some(&eviction("ce-web-2")));
    assert_eq!((code, refused["reason"].clone()), (429, json!("TooManyRequests")), "{refused}");
    assert_eq!(refused["message"], "Cannot evict pod as it would violate the pod's disruption budget.");
    assert_eq!(refused["details"]["causes"], json!([{"reason": "DisruptionBudget",
        "message": "The disruption budget ce-web needs 1 healthy pods and has 1 currently"}]), "{refused}");
    let status = call(Http::One, "a-token", "GET", &format!("{budgets}/ce-web"), None).1["status"].clone();
    assert_eq!((status["currentHealthy"].clone(), status["desiredHealthy"].clone(), status["disruptionsAllowed"].clone(), status["expectedPods"].clone()),
        (json!(1), json!(1), json!(0), json!(1)), "{status}");
    assert_eq!(call(Http::One, "a-token", "GET", &format!("{PODS}/ce-web-2"), None).0, 200, "the refused pod stays");

    // A pod no budget selects goes; carol, who may not create pods/eviction, is refused in RBAC's words.
    running_pod("ce-free", "ce-free");
    let (code, answer) = call(Http::One, "carol-token", "POST", &format!("{PODS}/ce-free/eviction"), Some(&eviction("ce-free")));
    assert_eq!(code, 403, "{answer}");
    assert!(answer["message"].as_str().unwrap_or_default().contains("cannot create resource \"pods/eviction\""), "{answer}");
    assert_eq!(call(Http::One, "a-token", "POST", &format!("{PODS}/ce-free/eviction"), Some(&eviction("ce-free"))).0, 201);
}

#[test]
fn discovery_lists_the_pod_subresources_as_kube_does() {
    let (code, list) = call(Http::One, "a-token", "GET", "/api/v1", None);
    assert_eq!(code, 200);
    let names: Vec<&str> = list["resources"].as_array().into_iter().flatten().filter_map(|r| r["name"].as_str())
        .filter(|n| n.starts_with("pods/")).collect();
    assert_eq!(names, ["pods/attach", "pods/binding", "pods/ephemeralcontainers", "pods/eviction", "pods/exec", "pods/log",
        "pods/portforward", "pods/status"]);
    let eviction = list["resources"].as_array().into_iter().flatten().find(|r| r["name"] == "pods/eviction").cloned().unwrap_or_default();
    assert_eq!(eviction, json!({"name": "pods/eviction", "singularName": "", "namespaced": true, "group": "policy", "version": "v1",
        "kind": "Eviction", "verbs": ["create"]}));
}

#[test]
fn componentstatuses_name_the_components_this_server_has() {
    let system = fixture().server.kubectl();
    let listed = system.ok(&["get", "componentstatuses"]);
    let row: Vec<&str> = listed.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(row, ["sled-0", "Healthy", "ok"], "kube's columns (NAME STATUS MESSAGE ERROR): {listed}");
    let (code, list) = call(Http::Two, "root-token", "GET", "/api/v1/componentstatuses", None);
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["kind"], "ComponentStatusList");
    assert_eq!(list["items"][0]["conditions"], json!([{"type": "Healthy", "status": "True", "message": "ok"}]), "{list}");
    let (code, one) = call(Http::One, "root-token", "GET", "/api/v1/componentstatuses/sled-0", None);
    assert_eq!((code, one["metadata"]["name"].clone()), (200, json!("sled-0")), "{one}");
    assert_eq!(call(Http::One, "root-token", "GET", "/api/v1/componentstatuses/scheduler", None).0, 404, "no scheduler runs");
}

/// The Python with the `kubernetes` client installed.
fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("KSPACES_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(python);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python")
}

#[test]
fn the_python_client_reads_the_defaults_and_evicts_through_its_typed_api() {
    let server = &fixture().server;
    let kubeconfig = certificate_kubeconfig(server, "t-a", "admin", &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/client_expectations.py");
    let ca = server.data_dir.path().join("pki/ca.crt");
    let output = Command::new(python()).arg(&script).arg("--kubeconfig").arg(&kubeconfig).arg("--ca").arg(&ca)
        .env("PYTHONDONTWRITEBYTECODE", "1").output().expect("run the Python client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let passed: Vec<&str> = stdout.lines().filter_map(|line| line.strip_prefix("PASS ")).collect();
    assert_eq!(passed, ["kubernetes service", "namespace defaults", "evictions", "pod log error"], "{stdout}");
}
