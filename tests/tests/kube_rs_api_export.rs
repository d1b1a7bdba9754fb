//! kcp's APIExport virtual workspace driven by kube-rs, as a multi-workspace controller uses it: the system admin
//! exports `example.io` `widgets` from `root` and grants `bind` on it to every authenticated user; three workspaces
//! in two tenants (`root:t-a:c1`, `root:t-a:c2`, `root:t-b:c3`) bind it; one kube-rs client whose kubeconfig's server
//! is the endpoint slice's URL + `/clusters/*` lists and watches the widgets of all three (`Api::<DynamicObject>::all`),
//! and a client on `<url>/clusters/<logical cluster>` writes a status and a label the consumer's kubectl then sees.

use std::collections::BTreeSet;
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client, ResourceExt};
use kspaces_tests::initializer::logical_cluster_resource;
use kspaces_tests::{certificate_kubeconfig, certificate_kubeconfig_with, create_tenant, kube_client, kubeconfig_with_server_url, Kubectl, Server};
use serde_json::{json, Value};

/// Every wait on the server is bounded.
const TIMEOUT: Duration = Duration::from_secs(30);
const SCHEMA: &str = "v1.widgets.example.io";

type Error = Box<dyn std::error::Error + Send + Sync>;
type TestResult = Result<(), Error>;

fn kcp_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("apis.kcp.io", "v1alpha1", kind), plural)
}

fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.io", "v1", "Widget"), "widgets")
}

fn workspace_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("tenancy.kcp.io", "v1alpha1", "Workspace"), "workspaces")
}

fn object(resource: &ApiResource, name: &str, data: Value) -> DynamicObject {
    let mut object = DynamicObject::new(name, resource);
    object.data = data;
    object
}

/// Calls `probe` until it returns `Some` (which is returned), at most [`TIMEOUT`]; `what` names the wait.
async fn until<T, F, Fut>(what: &str, mut probe: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = probe().await {
            return Ok(value);
        }
        if Instant::now() > deadline {
            return Err(format!("timed out after {TIMEOUT:?} waiting for {what}").into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A consumer workspace, its admin's kubeconfig (server URL: the workspace) and client.
struct Consumer {
    path: String,
    cluster: String,
    kubeconfig: PathBuf,
    client: Client,
}

/// `tenant`'s admin creates `root:<tenant>:<name>`, binds `root:widgets` there and creates widget `w-<name>`.
async fn consumer(server: &Server, tenant: &str, name: &str, size: u64) -> Result<Consumer, Error> {
    let parent = format!("{}/clusters/root:{tenant}", server.url);
    let tenant_admin = kube_client(&certificate_kubeconfig_with(server, tenant, "admin", &[], Some(&parent))).await?;
    let workspaces: Api<DynamicObject> = Api::all_with(tenant_admin, &workspace_resource());
    workspaces.create(&PostParams::default(), &object(&workspace_resource(), name, json!({"spec": {"type": {"name": "universal", "path": "root"}}}))).await?;
    let cluster = until(&format!("root:{tenant}:{name} to be Ready"), || {
        let workspaces = workspaces.clone();
        async move {
            let ws = workspaces.get(name).await.ok()?;
            (ws.data["status"]["phase"] == "Ready").then(|| ws.data["spec"]["cluster"].as_str().map(str::to_owned)).flatten()
        }
    })
    .await?;

    let path = format!("root:{tenant}:{name}");
    let kubeconfig = certificate_kubeconfig_with(server, tenant, "admin", &[], Some(&format!("{}/clusters/{path}", server.url)));
    let client = kube_client(&kubeconfig).await?;
    let bindings: Api<DynamicObject> = Api::all_with(client.clone(), &kcp_resource("APIBinding", "apibindings"));
    let binding = object(&kcp_resource("APIBinding", "apibindings"), "widgets", json!({"spec": {"reference": {"export": {"path": "root", "name": "widgets"}}}}));
    // The grant in root may take a moment to apply: a refusal is retried, and the last one reported.
    let refusal = std::sync::Mutex::new(String::new());
    until(&format!("{path} to create its APIBinding"), || {
        let (bindings, binding, refusal) = (bindings.clone(), binding.clone(), &refusal);
        async move {
            match bindings.create(&PostParams::default(), &binding).await {
                Ok(created) => Some(created),
                Err(error) => {
                    *refusal.lock().expect("not poisoned") = error.to_string();
                    None
                }
            }
        }
    })
    .await
    .map_err(|e| format!("{e}: {}", refusal.lock().expect("not poisoned")))?;
    let bound = until(&format!("{path}'s APIBinding to be Bound"), || {
        let bindings = bindings.clone();
        async move { bindings.get("widgets").await.ok().filter(|b| b.data["status"]["phase"] == "Bound") }
    })
    .await?;
    assert_eq!(bound.data["status"]["boundResources"][0]["schema"]["name"], SCHEMA, "{path}: {:?}", bound.data);

    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &widget_resource());
    let widget = object(&widget_resource(), &format!("w-{name}"), json!({"spec": {"size": size}}));
    until(&format!("{path} to serve widgets"), || {
        let (widgets, widget) = (widgets.clone(), widget.clone());
        async move { widgets.create(&PostParams::default(), &widget).await.ok() }
    })
    .await?;
    Ok(Consumer { path, cluster, kubeconfig, client })
}

/// Reads `events` until an object satisfies `wanted`; returns it.
async fn next_matching(
    events: &mut (impl futures::Stream<Item = Result<DynamicObject, watcher::Error>> + Unpin),
    what: &str,
    wanted: impl Fn(&DynamicObject) -> bool,
) -> Result<DynamicObject, Error> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let left = deadline.checked_duration_since(Instant::now()).ok_or_else(|| format!("the watch never showed {what}"))?;
        let next = tokio::time::timeout(left, events.try_next()).await.map_err(|_| format!("the watch never showed {what}"))??;
        let object = next.ok_or_else(|| format!("the watch ended before {what}"))?;
        if wanted(&object) {
            return Ok(object);
        }
    }
}

fn cluster_of(object: &DynamicObject) -> String {
    object.annotations().get("kcp.io/cluster").cloned().unwrap_or_default()
}

#[tokio::test]
async fn a_kube_rs_controller_lists_watches_and_writes_widgets_of_three_workspaces_in_two_tenants() -> TestResult {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t-a");
    create_tenant(&server.kubectl(), "t-b");

    // The system admin exports widgets from root and lets every authenticated user bind them.
    let system = kube_client(&kubeconfig_with_server_url(&server, &server.kubeconfig, &format!("{}/clusters/root", server.url))).await?;
    let schemas: Api<DynamicObject> = Api::all_with(system.clone(), &kcp_resource("APIResourceSchema", "apiresourceschemas"));
    let schema = json!({"spec": {"group": "example.io", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
            "schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 1, "default": 3}}},
                "status": {"type": "object", "properties": {"observedSize": {"type": "integer"}}}}}}]}});
    schemas.create(&PostParams::default(), &object(&kcp_resource("APIResourceSchema", "apiresourceschemas"), SCHEMA, schema)).await?;
    let exports: Api<DynamicObject> = Api::all_with(system.clone(), &kcp_resource("APIExport", "apiexports"));
    exports.create(&PostParams::default(), &object(&kcp_resource("APIExport", "apiexports"), "widgets", json!({"spec": {"latestResourceSchemas": [SCHEMA]}}))).await?;
    let role: ClusterRole = serde_json::from_value(json!({"metadata": {"name": "bind-widgets"},
        "rules": [{"apiGroups": ["apis.kcp.io"], "resources": ["apiexports"], "resourceNames": ["widgets"], "verbs": ["bind"]}]}))?;
    Api::<ClusterRole>::all(system.clone()).create(&PostParams::default(), &role).await?;
    let grant: ClusterRoleBinding = serde_json::from_value(json!({"metadata": {"name": "bind-widgets"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "bind-widgets"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}]}))?;
    Api::<ClusterRoleBinding>::all(system.clone()).create(&PostParams::default(), &grant).await?;

    // The URL the endpoint slice publishes: /services/apiexport/<root's logical cluster>/widgets.
    let slices: Api<DynamicObject> = Api::all_with(system.clone(), &kcp_resource("APIExportEndpointSlice", "apiexportendpointslices"));
    let url = until("the endpoint slice's URL", || {
        let slices = slices.clone();
        async move { slices.get("widgets").await.ok()?.data["status"]["endpoints"][0]["url"].as_str().map(str::to_owned) }
    })
    .await?;
    let root = Api::<DynamicObject>::all_with(system.clone(), &logical_cluster_resource()).get("cluster").await?;
    assert_eq!(url, format!("{}/services/apiexport/{}/widgets", server.url, cluster_of(&root)), "{:?}", root.metadata);

    // Three consumers in two tenants.
    let consumers = [consumer(&server, "t-a", "c1", 1).await?, consumer(&server, "t-a", "c2", 2).await?, consumer(&server, "t-b", "c3", 3).await?];
    let clusters: BTreeSet<&str> = consumers.iter().map(|c| c.cluster.as_str()).collect();
    assert_eq!(clusters.len(), 3, "three logical clusters");

    // The controller's client: the kubeconfig's server is <url>/clusters/*.
    let controller = kube_client(&kubeconfig_with_server_url(&server, &server.kubeconfig, &format!("{url}/clusters/*"))).await?;
    let all: Api<DynamicObject> = Api::all_with(controller, &widget_resource());
    let listed = all.list(&ListParams::default()).await?;
    let mut seen: Vec<(String, String, Value)> =
        listed.items.iter().map(|w| (w.name_any(), cluster_of(w), w.data["spec"]["size"].clone())).collect();
    seen.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let expected: Vec<(String, String, Value)> =
        consumers.iter().zip(1..).map(|(c, size)| (format!("w-{}", c.path.rsplit(':').next().unwrap_or_default()), c.cluster.clone(), json!(size))).collect();
    assert_eq!(seen, expected, "every consumer's widget, annotated with its logical cluster");

    // A watcher across all three: the initial three, then a widget made in t-b's workspace.
    let mut events = watcher(all.clone(), watcher::Config::default()).applied_objects().boxed();
    let mut initial = BTreeSet::new();
    while initial.len() < 3 {
        let object = next_matching(&mut events, "the three widgets", |_| true).await?;
        initial.insert((object.name_any(), cluster_of(&object)));
    }
    assert_eq!(initial, expected.iter().map(|(n, c, _)| (n.clone(), c.clone())).collect());
    let c3: Api<DynamicObject> = Api::namespaced_with(consumers[2].client.clone(), "default", &widget_resource());
    c3.create(&PostParams::default(), &object(&widget_resource(), "late", json!({"spec": {}}))).await?;
    let late = next_matching(&mut events, "late in c3", |w| w.name_any() == "late").await?;
    assert_eq!((cluster_of(&late), &late.data["spec"]["size"]), (consumers[2].cluster.clone(), &json!(3)), "defaulted by the schema: {:?}", late.data);

    // The controller writes c1's widget through <url>/clusters/<c1's logical cluster>: its status and a label.
    let one_url = format!("{url}/clusters/{}", consumers[0].cluster);
    let one: Api<DynamicObject> =
        Api::namespaced_with(kube_client(&kubeconfig_with_server_url(&server, &server.kubeconfig, &one_url)).await?, "default", &widget_resource());
    let only: Vec<String> = one.list(&ListParams::default()).await?.iter().map(|w| w.name_any()).collect();
    assert_eq!(only, ["w-c1"], "one consumer's widgets only");
    let patched = one.patch_status("w-c1", &PatchParams::default(), &Patch::Merge(json!({"status": {"observedSize": 1}}))).await?;
    assert_eq!(patched.data["status"]["observedSize"], 1, "{:?}", patched.data);
    let labelled = one.patch("w-c1", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"reconciled-by": "kube-rs"}}}))).await?;
    assert_eq!(labelled.labels().get("reconciled-by").map(String::as_str), Some("kube-rs"));
    let written = next_matching(&mut events, "w-c1 reconciled", |w| {
        w.name_any() == "w-c1" && w.data["status"]["observedSize"] == 1 && w.labels().get("reconciled-by").is_some()
    })
    .await?;
    assert_eq!(cluster_of(&written), consumers[0].cluster);

    // The consumer's own kubectl sees what the controller wrote; the other consumers are untouched.
    let kubectl = Kubectl::new(&consumers[0].kubeconfig);
    assert_eq!(kubectl.ok(&["get", "widget", "w-c1", "-o", "jsonpath={.status.observedSize} {.metadata.labels.reconciled-by}"]), "1 kube-rs");
    for other in &consumers[1..] {
        let widgets: Api<DynamicObject> = Api::namespaced_with(other.client.clone(), "default", &widget_resource());
        for widget in widgets.list(&ListParams::default()).await? {
            assert!(widget.data.get("status").is_none_or(|s| s.get("observedSize").is_none()), "{}: {:?}", other.path, widget.data);
        }
    }

    // A tenant's admin has no `apiexports/content` on root's export: kube's 403.
    let intruder = kube_client(&kubeconfig_with_server_url(&server, &certificate_kubeconfig(&server, "t-a", "admin", &[]), &format!("{url}/clusters/*"))).await?;
    match Api::<DynamicObject>::all_with(intruder, &widget_resource()).list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"), "{status:?}"),
        other => panic!("t-a's admin listed root's export's virtual workspace: expected 403 Forbidden, got {other:?}"),
    }
    Ok(())
}
