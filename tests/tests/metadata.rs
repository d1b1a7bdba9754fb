//! Metadata-only clients (`Accept: …;as=PartialObjectMetadata(List);g=meta.k8s.io;v=v1`), as a tenant user:
//! kube-rs `list_metadata`, `get_metadata` and `metadata_watcher` on ConfigMaps and on a custom resource, and the
//! raw shapes of the answers in JSON and protobuf.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{Stream, StreamExt, TryStreamExt};
use http::Request;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, ObjectMeta, PartialObjectMeta, PostParams};
#[allow(deprecated)]
use kube::runtime::metadata_watcher;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use kspaces_tests::{certificate_kubeconfig, create_tenant, kube_client, Kubectl, Server};
use prost::Message;
use serde_json::{json, Value};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const STEP: Duration = Duration::from_secs(10);
const METADATA_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// A server with tenant `t-a`, t-a's admin as kube-rs and kubectl (short paths).
async fn tenant() -> Result<(Server, Client, Kubectl), Box<dyn std::error::Error>> {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t-a");
    let path = certificate_kubeconfig(&server, "t-a", "admin", &[]);
    let client = kube_client(&path).await?;
    Ok((server, client, Kubectl::new(&path)))
}

fn configmap(name: &str, team: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta { name: Some(name.to_owned()), labels: Some(BTreeMap::from([("team".to_owned(), team.to_owned())])), ..ObjectMeta::default() },
        data: Some(BTreeMap::from([("secret-ish".to_owned(), "payload".to_owned())])),
        ..ConfigMap::default()
    }
}

const CRONTABS_CRD: &str = r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "crontabs.stable.example.com"},
  "spec": {"group": "stable.example.com", "scope": "Namespaced", "names": {"plural": "crontabs", "kind": "CronTab"},
    "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object",
      "properties": {"spec": {"type": "object", "properties": {"cronSpec": {"type": "string"}}}}}}}]}}"#;

/// Installs the CronTab CRD in t-a and returns a dynamic API for its objects in `default`.
fn crontabs(client: &Client, kubectl: &Kubectl) -> Api<DynamicObject> {
    kubectl.ok_with_stdin(&["apply", "-f", "-"], CRONTABS_CRD);
    kubectl.ok(&["wait", "--for=condition=Established", "crd/crontabs.stable.example.com"]);
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("stable.example.com", "v1", "CronTab"));
    Api::namespaced_with(client.clone(), "default", &resource)
}

fn crontab(name: &str) -> Result<DynamicObject, serde_json::Error> {
    serde_json::from_value(json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": name, "labels": {"team": "a"}}, "spec": {"cronSpec": "* * * * */5"}}))
}

#[tokio::test]
async fn kube_rs_reads_configmap_metadata() -> TestResult {
    let (_server, client, _) = tenant().await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &configmap("one", "a")).await?;
    api.create(&PostParams::default(), &configmap("two", "b")).await?;

    let listed = api.list_metadata(&ListParams::default().labels("team=a")).await?;
    assert_eq!(listed.items.iter().map(|m| m.name_any()).collect::<Vec<_>>(), ["one"]);
    let version: u64 = listed.metadata.resource_version.unwrap_or_default().parse()?;
    assert!(version > 0);
    let one = api.get_metadata("two").await?;
    assert_eq!(one.metadata.labels.clone().unwrap_or_default().get("team").map(String::as_str), Some("b"));
    let types = one.types.ok_or("no kind and apiVersion")?;
    assert_eq!((types.api_version.as_str(), types.kind.as_str()), ("meta.k8s.io/v1", "PartialObjectMetadata"));
    assert!(one.metadata.uid.is_some() && one.metadata.resource_version.is_some(), "{:?}", one.metadata);
    Ok(())
}

/// Checks that a metadata watch stream sees `existing`, then a live create and delete of `live`.
async fn sees_initial_and_live<K>(events: impl Stream<Item = Result<watcher::Event<PartialObjectMeta<K>>, watcher::Error>>, existing: &str,
    create: impl std::future::Future<Output = Result<(), Box<dyn std::error::Error>>>,
    delete: impl std::future::Future<Output = Result<(), Box<dyn std::error::Error>>>) -> TestResult
where
    K: kube::Resource + std::fmt::Debug,
{
    let mut events = Box::pin(events);
    let mut initial = Vec::new();
    loop {
        match tokio::time::timeout(STEP, events.try_next()).await??.ok_or("the watcher ended")? {
            watcher::Event::Init => {}
            watcher::Event::InitApply(object) => initial.push(object.name_any()),
            watcher::Event::InitDone => break,
            other => panic!("expected the initial objects, got {other:?}"),
        }
    }
    assert_eq!(initial, [existing]);
    create.await?;
    match tokio::time::timeout(STEP, events.try_next()).await??.ok_or("the watcher ended")? {
        watcher::Event::Apply(object) => assert_eq!(object.name_any(), "live"),
        other => panic!("expected Apply(live), got {other:?}"),
    }
    delete.await?;
    match tokio::time::timeout(STEP, events.try_next()).await??.ok_or("the watcher ended")? {
        watcher::Event::Delete(object) => assert_eq!(object.name_any(), "live"),
        other => panic!("expected Delete(live), got {other:?}"),
    }
    Ok(())
}

/// kube-rs 5 deprecates `metadata_watcher` in favour of `watcher` over `Api<PartialObjectMeta<K>>`; both are
/// checked, each with list-then-watch and with streaming lists (a watch-list in metadata form).
#[allow(deprecated)]
#[tokio::test]
async fn kube_rs_metadata_watchers_follow_configmaps_with_list_then_watch_and_with_streaming_lists() -> TestResult {
    let (_server, client, _) = tenant().await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &configmap("existing", "a")).await?;
    let partial: Api<PartialObjectMeta<ConfigMap>> = Api::namespaced(client, "default");
    for config in [watcher::Config::default(), watcher::Config::default().streaming_lists()] {
        let config = config.labels("team=a");
        for modern in [false, true] {
            let events = if modern {
                watcher(partial.clone(), config.clone()).boxed()
            } else {
                metadata_watcher(api.clone(), config.clone()).boxed()
            };
            let (creator, deleter) = (api.clone(), api.clone());
            sees_initial_and_live(events, "existing",
                async move { creator.create(&PostParams::default(), &configmap("live", "a")).await.map(drop).map_err(Into::into) },
                async move { deleter.delete("live", &DeleteParams::default()).await.map(drop).map_err(Into::into) },
            ).await?;
        }
    }
    Ok(())
}

#[tokio::test]
async fn kube_rs_reads_and_watches_custom_resource_metadata() -> TestResult {
    let (_server, client, kubectl) = tenant().await?;
    let api = crontabs(&client, &kubectl);
    api.create(&PostParams::default(), &crontab("existing")?).await?;
    let listed = api.list_metadata(&ListParams::default()).await?;
    assert_eq!(listed.items.iter().map(|m| m.name_any()).collect::<Vec<_>>(), ["existing"]);
    let one = api.get_metadata("existing").await?;
    assert_eq!(one.metadata.labels.unwrap_or_default().get("team").map(String::as_str), Some("a"));
    for config in [watcher::Config::default(), watcher::Config::default().streaming_lists()] {
        let (creator, deleter) = (api.clone(), api.clone());
        #[allow(deprecated)]
        let events = metadata_watcher(api.clone(), config);
        sees_initial_and_live(events, "existing",
            async move { creator.create(&PostParams::default(), &crontab("live")?).await.map(drop).map_err(Into::into) },
            async move { deleter.delete("live", &DeleteParams::default()).await.map(drop).map_err(Into::into) },
        ).await?;
    }
    Ok(())
}

/// GET `path` with `accept`; the status and the body as JSON.
async fn get_json(client: &Client, path: &str, accept: &str) -> Result<(u16, Value), Box<dyn std::error::Error>> {
    let request = Request::get(path).header("Accept", accept).body(kube::client::Body::empty())?;
    let response = client.send(request).await?;
    let status = response.status().as_u16();
    Ok((status, serde_json::from_slice(&response.into_body().collect_bytes().await?)?))
}

#[tokio::test]
async fn metadata_answers_have_the_meta_k8s_io_shapes() -> TestResult {
    let (_server, client, kubectl) = tenant().await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    configmaps.create(&PostParams::default(), &configmap("one", "a")).await?;
    let crontabs = crontabs(&client, &kubectl);
    crontabs.create(&PostParams::default(), &crontab("c")?).await?;

    for (path, dropped) in [("/api/v1/namespaces/default/configmaps", "data"), ("/apis/stable.example.com/v1/namespaces/default/crontabs", "spec")] {
        let (status, list) = get_json(&client, path, METADATA_LIST).await?;
        assert_eq!(status, 200, "{list}");
        assert_eq!((list["kind"].as_str(), list["apiVersion"].as_str()), (Some("PartialObjectMetadataList"), Some("meta.k8s.io/v1")));
        assert!(list["metadata"]["resourceVersion"].is_string(), "{list}");
        // The namespace's kube-root-ca.crt aside (the server's, as in kube).
        let items: Vec<&Value> = list["items"].as_array().ok_or("no items")?.iter()
            .filter(|item| item["metadata"]["name"] != "kube-root-ca.crt").collect();
        assert_eq!(items.len(), 1, "{list}");
        assert_eq!((items[0]["kind"].as_str(), items[0]["apiVersion"].as_str()), (Some("PartialObjectMetadata"), Some("meta.k8s.io/v1")));
        assert!(items[0]["metadata"]["uid"].is_string(), "{list}");
        assert!(items[0].get(dropped).is_none() && items[0].as_object().is_some_and(|o| o.len() == 3), "{list}");

        let beta = get_json(&client, path, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1").await?.1;
        assert_eq!(beta["apiVersion"], "meta.k8s.io/v1beta1");
        // A single-object form asked of a list: 406, as kube says it.
        let (status, refused) = get_json(&client, path, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1").await?;
        assert_eq!(status, 406, "{refused}");
        assert!(refused["message"].as_str().is_some_and(|m| m.starts_with("you requested PartialObjectMetadata, but the requested object is a list")), "{refused}");
    }
    let (_, one) = get_json(&client, "/apis/stable.example.com/v1/namespaces/default/crontabs/c", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1").await?;
    assert_eq!(one["kind"], "PartialObjectMetadata");
    assert_eq!(one["metadata"]["name"], "c");
    assert!(one.get("spec").is_none(), "{one}");
    Ok(())
}

#[tokio::test]
async fn a_custom_resource_has_a_protobuf_metadata_form() -> TestResult {
    let (_server, client, kubectl) = tenant().await?;
    let crontabs = crontabs(&client, &kubectl);
    crontabs.create(&PostParams::default(), &crontab("c")?).await?;
    let accept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    let request = Request::get("/apis/stable.example.com/v1/namespaces/default/crontabs").header("Accept", accept).body(kube::client::Body::empty())?;
    let response = client.send(request).await?;
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    assert_eq!(content_type, "application/vnd.kubernetes.protobuf");
    let body = response.into_body().collect_bytes().await?;
    let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(body.strip_prefix(b"k8s\0").ok_or("no magic")?)?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    assert_eq!((type_meta.api_version.as_deref(), type_meta.kind.as_deref()), (Some("meta.k8s.io/v1"), Some("PartialObjectMetadataList")));
    let list = k8s_pb::apimachinery::pkg::apis::meta::v1::PartialObjectMetadataList::decode(unknown.raw.unwrap_or_default().as_slice())?;
    let names: Vec<_> = list.items.iter().filter_map(|i| i.metadata.as_ref()?.name.clone()).collect();
    assert_eq!(names, ["c"]);
    Ok(())
}

#[tokio::test]
async fn a_metadata_watch_list_sends_partial_objects_and_an_annotated_bookmark() -> TestResult {
    let (_server, client, _) = tenant().await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &configmap("one", "a")).await?;
    let path = "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1";
    let request = Request::get(path).header("Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1").body(Vec::new())?;
    let text = client.request_text(request).await?;
    let events: Vec<Value> = text.lines().map(serde_json::from_str).collect::<Result<Vec<Value>, _>>()?.into_iter()
        .filter(|event| event["object"]["metadata"]["name"] != "kube-root-ca.crt").collect();
    assert_eq!(events.len(), 2, "the namespace's kube-root-ca.crt aside: {text}");
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(events[0]["object"]["metadata"]["name"], "one");
    assert!(events[0]["object"].get("data").is_none(), "{text}");
    assert_eq!(events[1]["type"], "BOOKMARK");
    assert_eq!(events[1]["object"]["kind"], "PartialObjectMetadata");
    let annotations = &events[1]["object"]["metadata"]["annotations"];
    assert_eq!(annotations["k8s.io/initial-events-end"], "true");
    // kube 1.33's blueprint: an empty PartialObjectMetadataList in JSON, base64.
    let blueprint = annotations["kubernetes.io/initial-events-list-blueprint"].as_str().ok_or("no blueprint")?;
    use base64::Engine as _;
    let blueprint: Value = serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(blueprint)?)?;
    assert_eq!(blueprint["kind"], "PartialObjectMetadataList");

    // Watch-list parameters kube refuses, with its words.
    let refused = Request::get("/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true").body(Vec::new())?;
    match client.request_text(refused).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
            assert_eq!(status.message, "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan");
        }
        other => panic!("expected 422, got {other:?}"),
    }
    Ok(())
}
