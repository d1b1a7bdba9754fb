//! kcp's initializing virtual workspace driven by a kube-rs controller (`kspaces_tests::initializer`): the URL the
//! WorkspaceType publishes, a watcher across every workspace through `<vw>/clusters/*`, a client per workspace
//! through `<vw>/clusters/<logical cluster>` writing content and removing the entry, and the workspaces Ready.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kube::api::{DynamicObject, ListParams};
use kube::{Api, Client};
use kspaces_tests::initializer::{self, Initializer, Options, CONFIGMAP};
use kspaces_tests::{certificate_kubeconfig, create_tenant, kube_client, kubeconfig_with_server_url, Server};
use serde_json::{json, Value};

/// Every wait on the server is bounded.
const TIMEOUT: Duration = Duration::from_secs(30);
const TYPE: &str = "kube-rs-init";
const WORKSPACES: [&str; 3] = ["init-1", "init-2", "init-3"];

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

fn request(method: &str, path: &str, body: Option<&Value>) -> Result<http::Request<Vec<u8>>, http::Error> {
    let builder = http::Request::builder().method(method).uri(path);
    match body {
        Some(body) => builder.header(http::header::CONTENT_TYPE, "application/json").body(body.to_string().into_bytes()),
        None => builder.body(Vec::new()),
    }
}

async fn get(client: &Client, path: &str) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
    Ok(serde_json::from_str(&client.request_text(request("GET", path, None)?).await?)?)
}

async fn post(client: &Client, path: &str, body: &Value) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
    Ok(serde_json::from_str(&client.request_text(request("POST", path, Some(body))?).await?)?)
}

/// Polls the Workspace `root:t-a:<name>` until `status.phase` is `Ready`; returns it.
async fn wait_ready(admin: &Client, name: &str) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let workspace = get(admin, &format!("/clusters/root:t-a/apis/tenancy.kcp.io/v1alpha1/workspaces/{name}")).await?;
        if workspace["status"]["phase"] == "Ready" {
            return Ok(workspace);
        }
        if Instant::now() > deadline {
            return Err(format!("{name} not Ready after {TIMEOUT:?}: {workspace}").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_kube_rs_controller_initializes_workspaces_through_the_virtual_workspace() -> TestResult {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t-a");
    create_tenant(&server.kubectl(), "t-b");
    let admin_kubeconfig = certificate_kubeconfig(&server, "t-a", "admin", &[]);
    let admin = kube_client(&admin_kubeconfig).await?;

    // The type, held by t-a's workspace; the URL is the one it publishes.
    let kind = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType", "metadata": {"name": TYPE},
        "spec": {"initializer": true, "extend": {"with": [{"name": "universal", "path": "root"}]}}});
    post(&admin, "/clusters/root:t-a/apis/tenancy.kcp.io/v1alpha1/workspacetypes", &kind).await?;
    let kind = get(&admin, &format!("/clusters/root:t-a/apis/tenancy.kcp.io/v1alpha1/workspacetypes/{TYPE}")).await?;
    let vw = kind["status"]["virtualWorkspaces"].as_array().into_iter().flatten()
        .find(|v| v["type"] == "initializing").and_then(|v| v["url"].as_str())
        .ok_or_else(|| format!("no initializing virtual workspace published: {kind}"))?.to_owned();
    assert!(vw.starts_with(&server.url), "{vw} is on this server ({})", server.url);

    // kube-rs keeps the path of the kubeconfig's server URL: a list through `<vw>/clusters/*` reaches the virtual
    // workspace (nothing waits yet). Another tenant's admin is refused there with kube's Status.
    let all_url = format!("{vw}/clusters/*");
    let lister = kube_client(&kubeconfig_with_server_url(&server, &admin_kubeconfig, &all_url)).await?;
    let logical_clusters = Api::<DynamicObject>::all_with(lister, &initializer::logical_cluster_resource());
    assert!(logical_clusters.list(&ListParams::default()).await?.items.is_empty(), "nothing waits before any workspace is made");
    let intruder = kube_client(&kubeconfig_with_server_url(&server, &certificate_kubeconfig(&server, "t-b", "admin", &[]), &all_url)).await?;
    match Api::<DynamicObject>::all_with(intruder, &initializer::logical_cluster_resource()).list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"), "{status:?}"),
        other => panic!("t-b's admin listed t-a's virtual workspace: expected 403 Forbidden, got {other:?}"),
    }

    let controller = Initializer::start(&admin_kubeconfig, &vw, Options::default()).await?;
    assert_eq!(controller.entry, format!("t-a:{TYPE}"));

    let mut clusters = Vec::new();
    for name in WORKSPACES {
        let body = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name},
            "spec": {"type": {"name": TYPE, "path": "root:t-a"}}});
        let created = post(&admin, "/clusters/root:t-a/apis/tenancy.kcp.io/v1alpha1/workspaces", &body).await?;
        assert_ne!(created["status"]["phase"], "Ready", "{name} cannot be Ready before its initializer ran: {created}");
    }
    for name in WORKSPACES {
        let ready = wait_ready(&admin, name).await?;
        let cluster = ready["spec"]["cluster"].as_str().ok_or_else(|| format!("{name} has no spec.cluster: {ready}"))?.to_owned();
        assert!(ready["status"].get("initializers").is_none_or(|i| i == &json!([])), "{name}: {ready}");
        clusters.push((name, cluster));
    }

    // The controller did the work for each, through the virtual workspace: the ConfigMap is in the workspace, the
    // status patch was answered, and the watch said DELETED once the LogicalCluster stopped waiting for the entry.
    for (name, _) in &clusters {
        let configmap = get(&admin, &format!("/clusters/root:t-a:{name}/api/v1/namespaces/default/configmaps/{CONFIGMAP}")).await?;
        assert_eq!(configmap["data"]["initializer"], json!(controller.entry), "{name}: {configmap}");
        let logical_cluster = get(&admin, &format!("/clusters/root:t-a:{name}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster")).await?;
        assert_eq!(logical_cluster["status"]["phase"], "Ready", "{name}: {logical_cluster}");
        assert!(logical_cluster["status"].get("initializers").is_none_or(|i| i == &json!([])), "{name}: {logical_cluster}");
    }
    let all_deleted = controller
        .wait_until(TIMEOUT, |records| clusters.iter().all(|(_, cluster)| records.get(cluster).is_some_and(|r| r.deleted.is_some())))
        .await;
    let records = controller.records();
    assert!(all_deleted, "a DELETED event for every workspace: {records:#?}; errors: {:?}", controller.errors());
    for (name, cluster) in &clusters {
        let record = &records[cluster];
        assert_eq!(record.path.as_deref(), Some(format!("root:t-a:{name}").as_str()), "{record:?}");
        let (added, patched, deleted) = (record.added.ok_or("added")?, record.patched.ok_or("patched")?, record.deleted.ok_or("deleted")?);
        assert!(record.configmap_created.is_some_and(|made| added <= made && made <= patched), "{name}: ConfigMap before the patch: {record:?}");
        // The DELETED event may come before the PATCH's answer (the server sends both on the same write).
        assert!(added <= patched && added <= deleted, "{name}: added before patched and deleted: {record:?}");
        assert_eq!(record.applied_events, 1, "{name}: one ADDED, no modification while it waited: {record:?}");
    }
    let handled: BTreeSet<&String> = records.keys().collect();
    assert_eq!(handled, clusters.iter().map(|(_, c)| c).collect(), "the controller saw exactly the three workspaces");
    assert!(controller.errors().is_empty(), "{:?}", controller.errors());

    // Nothing waits any more; a Ready workspace's content is closed to the initializer.
    assert!(logical_clusters.list(&ListParams::default()).await?.items.is_empty(), "the list empties");
    let one = kube_client(&kubeconfig_with_server_url(&server, &admin_kubeconfig, &format!("{vw}/clusters/{}", clusters[0].1))).await?;
    match one.request_text(request("GET", &format!("/api/v1/namespaces/default/configmaps/{CONFIGMAP}"), None)?).await {
        Err(kube::Error::Api(status)) => assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"), "{status:?}"),
        other => panic!("a Ready workspace's content through the virtual workspace: expected 403 Forbidden, got {other:?}"),
    }
    Ok(())
}
