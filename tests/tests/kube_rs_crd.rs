//! An operator inside a tenant, unchanged: kube-rs with a tenant admin's kubeconfig (short paths) watches a
//! custom resource of the tenant's own CRD and reconciles each object's status, as controllers do.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};
use kspaces_tests::{certificate_kubeconfig, create_tenant, kube_client, Kubectl, Server, WIDGET_CRD};
use serde_json::json;

const STEP: Duration = Duration::from_secs(15);

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn widget(name: &str, size: i64) -> Result<DynamicObject, serde_json::Error> {
    serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": size}}))
}

/// The operator: for every Widget it sees, records `spec.size` in `status.observedSize`.
async fn operator(widgets: Api<DynamicObject>) {
    let events = watcher(widgets.clone(), watcher::Config::default()).applied_objects();
    let mut events = std::pin::pin!(events);
    while let Ok(Some(object)) = events.try_next().await {
        let size = object.data["spec"]["size"].clone();
        if object.data["status"]["observedSize"] == size {
            continue;
        }
        let status = Patch::Merge(json!({"status": {"observedSize": size}}));
        if let Err(err) = widgets.patch_status(&object.name_any(), &PatchParams::default(), &status).await {
            eprintln!("operator: patching {}: {err}", object.name_any());
        }
    }
}

/// Waits until every named widget's status reports `size`.
async fn converged(widgets: &Api<DynamicObject>, expected: &[(&str, i64)]) -> bool {
    let deadline = tokio::time::Instant::now() + STEP;
    while tokio::time::Instant::now() < deadline {
        let mut done = true;
        for (name, size) in expected {
            let observed = widgets.get(name).await.ok().map(|w| w.data["status"]["observedSize"].clone());
            done &= observed == Some(json!(size));
        }
        if done {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn an_operator_reconciles_custom_resources_inside_its_tenant() -> TestResult {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t-a");
    create_tenant(&server.kubectl(), "t-b");
    let a_config = certificate_kubeconfig(&server, "t-a", "admin", &[]);
    let a_kubectl = Kubectl::new(&a_config);
    a_kubectl.ok_with_stdin(&["apply", "-f", "-"], WIDGET_CRD);
    a_kubectl.ok(&["wait", "--for", "condition=established", "crd/widgets.example.com", "--timeout=10s"]);

    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
    let a = kube_client(&a_config).await?;
    let widgets: Api<DynamicObject> = Api::namespaced_with(a, "default", &resource);
    let running = tokio::spawn(operator(widgets.clone()));

    widgets.create(&PostParams::default(), &widget("small", 1)?).await?;
    widgets.create(&PostParams::default(), &widget("large", 9)?).await?;
    assert!(converged(&widgets, &[("small", 1), ("large", 9)]).await, "the operator records each widget's size");
    widgets.patch("small", &PatchParams::default(), &Patch::Merge(json!({"spec": {"size": 3}}))).await?;
    assert!(converged(&widgets, &[("small", 3), ("large", 9)]).await, "and follows a change");
    let small = widgets.get("small").await?;
    assert_eq!(small.metadata.generation, Some(2), "status writes do not bump the generation");

    // The same operator run by another tenant finds no such resource: t-a's CRD is t-a's alone.
    let b = kube_client(&certificate_kubeconfig(&server, "t-b", "admin", &[])).await?;
    let elsewhere: Api<DynamicObject> = Api::namespaced_with(b, "default", &resource);
    match elsewhere.list(&Default::default()).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 404, "{status:?}"),
        other => panic!("t-b listed t-a's widgets: {other:?}"),
    }
    // Its watcher starts (Init), then fails on the initial list rather than seeing t-a's widgets.
    let events: Vec<_> = tokio::time::timeout(STEP, watcher(elsewhere, watcher::Config::default()).take(2).collect()).await?;
    assert!(matches!(events.as_slice(), [Ok(watcher::Event::Init), Err(_)]), "{events:?}");
    running.abort();
    Ok(())
}
