//! A kube-rs controller inside a tenant (short paths) that works only through server-side apply, as modern
//! controllers do: it adds its finalizer with `Patch::Apply` and a field manager, reports status with an apply
//! on `/status`, and when the object is being deleted applies again without the finalizer, so the object goes.

use std::time::Duration;

use futures::TryStreamExt;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client, ResourceExt};
use kspaces_tests::{certificate_kubeconfig, create_tenant, kube_client, Kubectl, Server, WIDGET_CRD};
use serde_json::{json, Value};

const STEP: Duration = Duration::from_secs(15);
const MANAGER: &str = "widget-controller";
const FINALIZER: &str = "example.com/cleanup";

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// An applied configuration of widget `name` with `fields` (the controller states only what it owns).
fn config(name: &str, fields: Value) -> Value {
    let mut object = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}});
    if let (Some(object), Value::Object(fields)) = (object.as_object_mut(), fields) {
        object.extend(fields);
    }
    object
}

/// One reconcile: finalizer and status while the widget lives; on deletion, let it go.
async fn reconcile(widgets: &Api<DynamicObject>, widget: &DynamicObject) -> Result<(), kube::Error> {
    let name = widget.name_any();
    let params = PatchParams::apply(MANAGER);
    if widget.metadata.deletion_timestamp.is_some() {
        // Applying without the finalizer removes it: nobody else owns it.
        return widgets.patch(&name, &params, &Patch::Apply(config(&name, json!({})))).await.map(drop);
    }
    if !widget.finalizers().iter().any(|f| f == FINALIZER) {
        widgets.patch(&name, &params, &Patch::Apply(config(&name, json!({"metadata": {"name": name, "finalizers": [FINALIZER]}})))).await?;
    }
    let size = widget.data["spec"]["size"].clone();
    if widget.data["status"]["observedSize"] != size {
        widgets.patch_status(&name, &params, &Patch::Apply(config(&name, json!({"status": {"observedSize": size}})))).await?;
    }
    Ok(())
}

async fn controller(widgets: Api<DynamicObject>) {
    let events = watcher(widgets.clone(), watcher::Config::default()).applied_objects();
    let mut events = std::pin::pin!(events);
    while let Ok(Some(widget)) = events.try_next().await {
        if let Err(err) = reconcile(&widgets, &widget).await {
            eprintln!("controller: {}: {err}", widget.name_any());
        }
    }
}

/// Polls `widgets` until `done` holds for widget `name` (`None`: it is gone).
async fn until(widgets: &Api<DynamicObject>, name: &str, done: impl Fn(Option<&DynamicObject>) -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + STEP;
    while tokio::time::Instant::now() < deadline {
        match widgets.get_opt(name).await {
            Ok(found) if done(found.as_ref()) => return true,
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    false
}

/// The managedFields entry of `manager` with `operation` and `subresource` (empty: none).
fn entry<'a>(widget: &'a DynamicObject, operation: &str, subresource: Option<&str>) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry> {
    widget.managed_fields().iter().find(|e| e.manager.as_deref() == Some(MANAGER) && e.operation.as_deref() == Some(operation) && e.subresource.as_deref() == subresource)
}

#[tokio::test]
async fn a_controller_manages_finalizer_and_status_by_apply_and_lets_a_deleted_object_go() -> TestResult {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t-a");
    let kubeconfig = certificate_kubeconfig(&server, "t-a", "admin", &[]);
    let kubectl = Kubectl::new(&kubeconfig);
    kubectl.ok_with_stdin(&["apply", "-f", "-"], WIDGET_CRD);
    kubectl.ok(&["wait", "--for", "condition=established", "crd/widgets.example.com", "--timeout=10s"]);

    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
    let widgets: Api<DynamicObject> = Api::namespaced_with(kube_client(&kubeconfig).await?, "default", &resource);
    let running = tokio::spawn(controller(widgets.clone()));

    // The user creates the widget by apply too (an apply of a missing object creates it).
    widgets.patch("w", &PatchParams::apply("user"), &Patch::Apply(config("w", json!({"spec": {"size": 3}})))).await?;
    let ready = |w: Option<&DynamicObject>| w.is_some_and(|w| w.finalizers().iter().any(|f| f == FINALIZER) && w.data["status"]["observedSize"] == 3);
    assert!(until(&widgets, "w", ready).await, "the controller adds its finalizer and reports status");
    let widget = widgets.get("w").await?;
    let finalizer = entry(&widget, "Apply", None).and_then(|e| e.fields_v1.as_ref()).map(|f| f.0.clone()).unwrap_or_default();
    assert_eq!(finalizer, json!({"f:metadata": {"f:finalizers": {format!("v:\"{FINALIZER}\""): {}}}}), "{:?}", widget.managed_fields());
    let status = entry(&widget, "Apply", Some("status")).and_then(|e| e.fields_v1.as_ref()).map(|f| f.0.clone()).unwrap_or_default();
    assert_eq!(status, json!({"f:status": {"f:observedSize": {}}}), "{:?}", widget.managed_fields());

    // The user changes spec by apply; the controller follows.
    widgets.patch("w", &PatchParams::apply("user"), &Patch::Apply(config("w", json!({"spec": {"size": 5}})))).await?;
    assert!(until(&widgets, "w", |w| w.is_some_and(|w| w.data["status"]["observedSize"] == 5)).await, "status follows spec");

    widgets.delete("w", &DeleteParams::default()).await?;
    assert!(until(&widgets, "w", |w| w.is_none()).await, "once the controller drops its finalizer the widget is gone");
    running.abort();

    // kube's rules for apply requests: a field manager is required, and force is for apply only.
    let client = kube_client(&kubeconfig).await?;
    let path = "/apis/example.com/v1/namespaces/default/widgets/x";
    let body = serde_json::to_vec(&config("x", json!({"spec": {"size": 1}})))?;
    let request = http::Request::patch(path).header("content-type", "application/apply-patch+yaml").body(body)?;
    match client.request::<Value>(request).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422, "{status:?}");
            assert_eq!(status.message, "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch");
        }
        other => panic!("an apply without a field manager was accepted: {other:?}"),
    }
    let merge = http::Request::patch(format!("{path}?force=true")).header("content-type", "application/merge-patch+json").body(b"{}".to_vec())?;
    match client.request::<Value>(merge).await {
        Err(kube::Error::Api(status)) => assert!(status.code == 422 && status.message.contains("force: Forbidden: may not be specified for non-apply patch"), "{status:?}"),
        other => panic!("force on a merge patch was accepted: {other:?}"),
    }
    Ok(())
}

/// PATCHes `body` as an apply of ConfigMap `repeated` with `query`; returns the status, the `Warning` headers and the
/// body.
async fn apply_raw(client: &Client, query: &str, body: &str) -> Result<(u16, Vec<String>, String), Box<dyn std::error::Error>> {
    let path = format!("/api/v1/namespaces/default/configmaps/repeated?fieldManager=raw{query}");
    let request = http::Request::patch(path).header("content-type", "application/apply-patch+yaml");
    let response = client.send(request.body(kube::client::Body::from(body.as_bytes().to_vec()))?).await?;
    let status = response.status().as_u16();
    let warnings = response.headers().get_all("warning").iter().filter_map(|v| v.to_str().ok()).map(str::to_owned).collect();
    let body = String::from_utf8_lossy(&response.into_body().collect_bytes().await?).into_owned();
    Ok((status, warnings, body))
}

/// kubectl drops a manifest's repeated keys before it sends it, so raw requests show what the server does with
/// them: as kube reads an apply body with a strict YAML decoder, `fieldValidation` decides.
#[tokio::test]
async fn repeated_keys_in_an_apply_body_follow_field_validation() -> TestResult {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t-a");
    let client = kube_client(&certificate_kubeconfig(&server, "t-a", "admin", &[])).await?;
    let body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: repeated}\ndata:\n  a: \"1\"\n  a: \"2\"\n";
    let duplicate = r#"key \"a\" already set in map"#;

    let (status, _, answer) = apply_raw(&client, "&fieldValidation=Strict", body).await?;
    assert_eq!(status, 400, "{answer}");
    assert!(answer.contains("error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:"), "{answer}");
    assert!(answer.contains(duplicate) && answer.contains("line 6"), "{answer}");

    let (status, warnings, answer) = apply_raw(&client, "", body).await?;
    assert_eq!(status, 201, "Warn is the default: {answer}");
    assert!(warnings.iter().any(|w| w.starts_with("299 - ") && w.contains(r#"key \"a\" already set in map"#)), "{warnings:?}");
    let stored: Value = serde_json::from_str(&answer)?;
    assert_eq!(stored["data"]["a"], "2", "the last of repeated keys wins: {stored}");

    let (status, warnings, answer) = apply_raw(&client, "&fieldValidation=Ignore", body).await?;
    assert_eq!((status, warnings.len()), (200, 0), "{answer}");
    Ok(())
}
