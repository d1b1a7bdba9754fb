//! kube-rs as a compatibility oracle: CRUD, conflict and not-found errors, pagination, raw watches,
//! `kube::runtime::watcher` (list-then-watch and streaming lists), bookmarks and discovery, all against
//! the real `kspaces` binary.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams, WatchEvent, WatchParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client, ResourceExt};
use kspaces_tests::{kube_client, Server};

/// Every wait on the server is bounded so that a hung stream fails the test instead of stalling it.
const STEP: Duration = Duration::from_secs(5);

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A kube client built from the admin kubeconfig the server wrote, exactly as a user would build one.
async fn client(server: &Server) -> kube::Result<Client> {
    kube_client(&server.kubeconfig).await
}

async fn configmaps(server: &Server) -> Result<Api<ConfigMap>, Box<dyn std::error::Error>> {
    Ok(Api::namespaced(client(server).await?, "default"))
}

fn configmap(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(BTreeMap::from([("suite".to_owned(), "kube-rs".to_owned())])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("value".to_owned(), value.to_owned())])),
        ..ConfigMap::default()
    }
}

fn value_of(cm: &ConfigMap) -> Option<&str> {
    cm.data.as_ref()?.get("value").map(String::as_str)
}

/// Asserts that `result` failed with a `metav1.Status` carrying `code` and `reason`, as kube decodes it.
fn assert_status<T: std::fmt::Debug>(result: Result<T, kube::Error>, code: u16, reason: &str) {
    match result {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (code, reason), "{status:?}");
        }
        other => panic!("expected a {code} {reason} Status, got {other:?}"),
    }
}

#[tokio::test]
async fn configmap_create_get_list_replace_delete_round_trip() -> TestResult {
    let server = Server::start();
    let api = configmaps(&server).await?;
    let created = api.create(&PostParams::default(), &configmap("crud", "1")).await?;
    assert!(created.metadata.uid.is_some() && created.resource_version().is_some(), "{created:?}");
    let fetched = api.get("crud").await?;
    assert_eq!((fetched.uid(), value_of(&fetched)), (created.uid(), Some("1")));
    let listed = api.list(&ListParams::default().labels("suite=kube-rs")).await?;
    assert_eq!(listed.items.iter().map(|cm| cm.name_any()).collect::<Vec<_>>(), ["crud"]);

    let mut changed = fetched.clone();
    changed.data = Some(BTreeMap::from([("value".to_owned(), "2".to_owned())]));
    let replaced = api.replace("crud", &PostParams::default(), &changed).await?;
    assert_eq!(value_of(&replaced), Some("2"));
    assert_ne!(replaced.resource_version(), fetched.resource_version());

    api.delete("crud", &DeleteParams::default()).await?;
    assert_status(api.get("crud").await, 404, "NotFound");
    assert!(api.get_opt("crud").await?.is_none());
    Ok(())
}

#[tokio::test]
async fn replace_with_a_stale_resource_version_is_409_conflict() -> TestResult {
    let server = Server::start();
    let api = configmaps(&server).await?;
    let stale = api.create(&PostParams::default(), &configmap("stale", "1")).await?;
    let mut first = stale.clone();
    first.data = Some(BTreeMap::from([("value".to_owned(), "2".to_owned())]));
    api.replace("stale", &PostParams::default(), &first).await?;

    let mut second = stale;
    second.data = Some(BTreeMap::from([("value".to_owned(), "3".to_owned())]));
    assert_status(api.replace("stale", &PostParams::default(), &second).await, 409, "Conflict");
    assert_eq!(value_of(&api.get("stale").await?), Some("2"));
    Ok(())
}

#[tokio::test]
async fn creating_the_same_name_twice_is_409_already_exists() -> TestResult {
    let server = Server::start();
    let api = configmaps(&server).await?;
    api.create(&PostParams::default(), &configmap("twice", "1")).await?;
    assert_status(api.create(&PostParams::default(), &configmap("twice", "2")).await, 409, "AlreadyExists");
    assert_eq!(value_of(&api.get("twice").await?), Some("1"));
    Ok(())
}

#[tokio::test]
async fn getting_a_missing_object_is_404_not_found() -> TestResult {
    let server = Server::start();
    let api = configmaps(&server).await?;
    assert_status(api.get("missing").await, 404, "NotFound");
    assert_status(api.delete("missing", &DeleteParams::default()).await, 404, "NotFound");
    Ok(())
}

#[tokio::test]
async fn list_with_limit_3_pages_through_10_objects_by_continue_token() -> TestResult {
    let server = Server::start();
    let api = configmaps(&server).await?;
    for i in 0..10 {
        api.create(&PostParams::default(), &configmap(&format!("page-{i:02}"), &i.to_string())).await?;
    }
    let mut params = ListParams::default().labels("suite=kube-rs").limit(3);
    let (mut page_sizes, mut names) = (Vec::new(), Vec::new());
    loop {
        let page = api.list(&params).await?;
        page_sizes.push(page.items.len());
        names.extend(page.items.iter().map(|cm| cm.name_any()));
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
        assert!(page_sizes.len() <= 10, "the continue tokens never end: {page_sizes:?}");
    }
    assert_eq!(page_sizes, [3, 3, 3, 1]);
    let expected: Vec<String> = (0..10).map(|i| format!("page-{i:02}")).collect();
    assert_eq!(names, expected, "every object exactly once, in name order");
    Ok(())
}

#[tokio::test]
async fn watch_from_a_list_resource_version_sees_added_modified_deleted_in_order() -> TestResult {
    let server = Server::start();
    let api = configmaps(&server).await?;
    let version = api.list(&ListParams::default()).await?.metadata.resource_version.unwrap_or_default();
    let stream = api.watch(&WatchParams::default().disable_bookmarks().timeout(10), &version).await?;
    let mut stream = Box::pin(stream);

    let created = api.create(&PostParams::default(), &configmap("watched", "1")).await?;
    let mut changed = created.clone();
    changed.data = Some(BTreeMap::from([("value".to_owned(), "2".to_owned())]));
    api.replace("watched", &PostParams::default(), &changed).await?;
    api.delete("watched", &DeleteParams::default()).await?;

    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = tokio::time::timeout(STEP, stream.try_next()).await?;
        match event?.ok_or("the watch ended early")? {
            // The namespace's kube-root-ca.crt, made by the server as the test starts (as in kube).
            WatchEvent::Added(cm) if cm.name_any() == "kube-root-ca.crt" => {}
            WatchEvent::Added(cm) => seen.push(("Added", cm.name_any(), value_of(&cm).map(str::to_owned))),
            WatchEvent::Modified(cm) => seen.push(("Modified", cm.name_any(), value_of(&cm).map(str::to_owned))),
            WatchEvent::Deleted(cm) => seen.push(("Deleted", cm.name_any(), value_of(&cm).map(str::to_owned))),
            WatchEvent::Bookmark(bookmark) => panic!("bookmarks were disabled, got one at {}", bookmark.metadata.resource_version),
            WatchEvent::Error(status) => panic!("watch error: {status:?}"),
        }
    }
    let two = Some("2".to_owned());
    assert_eq!(
        seen,
        [("Added", "watched".to_owned(), Some("1".to_owned())), ("Modified", "watched".to_owned(), two.clone()), ("Deleted", "watched".to_owned(), two)]
    );
    Ok(())
}

/// Runs `kube::runtime::watcher` with `config`: it must report the two objects that already exist,
/// then an object created afterwards, then the deletion of the first one.
async fn watcher_sees_initial_objects_then_live_changes(config: watcher::Config) -> TestResult {
    let server = Server::start();
    let api = configmaps(&server).await?;
    for name in ["before-a", "before-b"] {
        api.create(&PostParams::default(), &configmap(name, "1")).await?;
    }
    let mut events = Box::pin(watcher(api.clone(), config.labels("suite=kube-rs")));
    let mut initial = BTreeSet::new();
    loop {
        match tokio::time::timeout(STEP, events.try_next()).await??.ok_or("the watcher ended")? {
            watcher::Event::Init => {}
            watcher::Event::InitApply(cm) => {
                initial.insert(cm.name_any());
            }
            watcher::Event::InitDone => break,
            other => panic!("a live event before InitDone: {other:?}"),
        }
    }
    assert_eq!(initial, BTreeSet::from(["before-a".to_owned(), "before-b".to_owned()]));

    api.create(&PostParams::default(), &configmap("after", "1")).await?;
    match tokio::time::timeout(STEP, events.try_next()).await??.ok_or("the watcher ended")? {
        watcher::Event::Apply(cm) => assert_eq!(cm.name_any(), "after"),
        other => panic!("expected Apply(after), got {other:?}"),
    }
    api.delete("before-a", &DeleteParams::default()).await?;
    match tokio::time::timeout(STEP, events.try_next()).await??.ok_or("the watcher ended")? {
        watcher::Event::Delete(cm) => assert_eq!(cm.name_any(), "before-a"),
        other => panic!("expected Delete(before-a), got {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn watcher_with_the_default_list_then_watch_config_sees_initial_then_live_objects() -> TestResult {
    watcher_sees_initial_objects_then_live_changes(watcher::Config::default()).await
}

#[tokio::test]
async fn watcher_with_streaming_lists_sees_initial_then_live_objects() -> TestResult {
    watcher_sees_initial_objects_then_live_changes(watcher::Config::default().streaming_lists()).await
}

#[tokio::test]
async fn watcher_applied_objects_with_streaming_lists_yields_initial_and_new_objects() -> TestResult {
    let server = Server::start();
    let api = configmaps(&server).await?;
    api.create(&PostParams::default(), &configmap("first", "1")).await?;
    let config = watcher::Config::default().streaming_lists().labels("suite=kube-rs");
    let mut objects = Box::pin(watcher(api.clone(), config).applied_objects());
    let first = tokio::time::timeout(STEP, objects.try_next()).await??.ok_or("the watcher ended")?;
    assert_eq!(first.name_any(), "first");
    api.create(&PostParams::default(), &configmap("second", "1")).await?;
    let second = tokio::time::timeout(STEP, objects.try_next()).await??.ok_or("the watcher ended")?;
    assert_eq!(second.name_any(), "second");
    Ok(())
}

#[tokio::test]
async fn watch_with_bookmarks_parses_the_initial_events_end_bookmark() -> TestResult {
    let server = Server::start();
    let api = configmaps(&server).await?;
    api.create(&PostParams::default(), &configmap("existing", "1")).await?;
    let params = WatchParams { bookmarks: true, ..WatchParams::streaming_lists() }.timeout(10);
    let stream = Box::pin(api.watch(&params, "").await?);

    // The namespace's kube-root-ca.crt (the server's, as in kube) is among the initial events; it is left aside.
    let mut stream = stream.try_filter(|event| std::future::ready(!matches!(event, WatchEvent::Added(cm) if cm.name_any() == "kube-root-ca.crt")));
    match tokio::time::timeout(STEP, stream.try_next()).await??.ok_or("the watch ended")? {
        WatchEvent::Added(cm) => assert_eq!(cm.name_any(), "existing"),
        other => panic!("expected the initial ADDED event, got {other:?}"),
    }
    let bookmark = match tokio::time::timeout(STEP, stream.try_next()).await??.ok_or("the watch ended")? {
        WatchEvent::Bookmark(bookmark) => bookmark,
        other => panic!("expected the initial-events-end BOOKMARK, got {other:?}"),
    };
    assert_eq!(bookmark.types.kind, "ConfigMap");
    assert_eq!(bookmark.types.api_version, "v1");
    assert_eq!(bookmark.metadata.annotations.get("k8s.io/initial-events-end").map(String::as_str), Some("true"));
    let bookmark_version: u64 = bookmark.metadata.resource_version.parse()?;
    let existing_version: u64 = api.get("existing").await?.resource_version().unwrap_or_default().parse()?;
    assert!(bookmark_version >= existing_version, "bookmark {bookmark_version} is older than the object {existing_version}");

    // The watch stays open after the bookmark and carries live events.
    api.create(&PostParams::default(), &configmap("live", "1")).await?;
    loop {
        match tokio::time::timeout(STEP, stream.try_next()).await??.ok_or("the watch ended")? {
            WatchEvent::Added(cm) => break assert_eq!(cm.name_any(), "live"),
            WatchEvent::Bookmark(_) => {}
            other => panic!("expected ADDED live, got {other:?}"),
        }
    }
    Ok(())
}

#[tokio::test]
async fn discovery_finds_apps_v1_deployment_and_core_v1_configmap() -> TestResult {
    let server = Server::start();
    let discovery = kube::discovery::Discovery::new(client(&server).await?).run().await?;
    let apps = discovery.get("apps").ok_or("no apps group")?;
    let (deployment, capabilities) = apps
        .versioned_resources("v1")
        .into_iter()
        .find(|(resource, _)| resource.kind == "Deployment")
        .ok_or("apps/v1 has no Deployment")?;
    assert_eq!((deployment.plural.as_str(), deployment.api_version.as_str()), ("deployments", "apps/v1"));
    assert_eq!(capabilities.scope, kube::discovery::Scope::Namespaced);
    assert!(capabilities.supports_operation(kube::discovery::verbs::WATCH), "{capabilities:?}");
    let core = discovery.get("").ok_or("no core group")?;
    assert!(core.versioned_resources("v1").iter().any(|(resource, _)| resource.kind == "ConfigMap"));
    Ok(())
}
