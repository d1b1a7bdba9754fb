//! kube-rs as a tenant's controller would use it: a client built from a tenant kubeconfig (short paths, and a
//! server URL ending in `/clusters/root:<t>`), `runtime::watcher` seeing only its own tenant, and the 403
//! Status kube-rs decodes for another tenant's space.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};
use kspaces_tests::{certificate_kubeconfig, certificate_kubeconfig_with, create_tenant, kube_client, Server};

const STEP: Duration = Duration::from_secs(10);

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn configmap(name: &str) -> ConfigMap {
    ConfigMap { metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() }, ..ConfigMap::default() }
}

#[tokio::test]
async fn a_tenant_controller_sees_only_its_own_tenant() -> TestResult {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t-a");
    create_tenant(&server.kubectl(), "t-b");
    let a = kube_client(&certificate_kubeconfig(&server, "t-a", "admin", &[])).await?;
    let b = kube_client(&certificate_kubeconfig(&server, "t-b", "admin", &[])).await?;
    let a_configmaps: Api<ConfigMap> = Api::namespaced(a.clone(), "default");
    let b_configmaps: Api<ConfigMap> = Api::namespaced(b.clone(), "default");

    let namespaces: Vec<String> = Api::<Namespace>::all(a.clone()).list(&ListParams::default()).await?.iter().map(|n| n.name_any()).collect();
    assert_eq!(namespaces, ["default", "kube-public", "kube-system"]);

    // A watcher over all of t-a's ConfigMaps, as a controller's reflector would run it.
    // Each namespace's kube-root-ca.crt (the server's, as in kube) aside.
    let mut events = watcher(Api::<ConfigMap>::all(a.clone()), watcher::Config::default()).applied_objects()
        .try_filter(|map| std::future::ready(map.name_any() != "kube-root-ca.crt")).boxed();
    b_configmaps.create(&PostParams::default(), &configmap("from-b")).await?;
    a_configmaps.create(&PostParams::default(), &configmap("from-a")).await?;
    let seen = tokio::time::timeout(STEP, events.try_next()).await??.ok_or("the watcher ended")?;
    assert_eq!(seen.name_any(), "from-a", "the first object t-a's watcher sees is t-a's own");
    // k8s-openapi's ObjectMeta has no `tenant`; the raw object carries it.
    let raw = a.request_text(http::Request::get("/api/v1/namespaces/default/configmaps/from-a").body(Vec::new())?).await?;
    assert_eq!(serde_json::from_str::<serde_json::Value>(&raw)?["metadata"]["tenant"], "t-a", "{raw}");

    let listed: BTreeSet<String> = a_configmaps.list(&ListParams::default()).await?.iter().map(|c| c.name_any())
        .filter(|name| name != "kube-root-ca.crt").collect();
    assert_eq!(listed, BTreeSet::from(["from-a".to_owned()]));
    Ok(())
}

#[tokio::test]
async fn a_workspace_server_url_reaches_the_tenant_and_other_spaces_are_forbidden() -> TestResult {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t-a");
    create_tenant(&server.kubectl(), "t-b");
    let url = format!("{}/clusters/root:t-a", server.url);
    let workspace = kube_client(&certificate_kubeconfig_with(&server, "t-a", "admin", &[], Some(&url))).await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(workspace, "default");
    configmaps.create(&PostParams::default(), &configmap("via-workspace")).await?;

    let short = kube_client(&certificate_kubeconfig(&server, "t-a", "admin", &[])).await?;
    let seen = Api::<ConfigMap>::namespaced(short, "default").get("via-workspace").await?;
    assert_eq!(seen.name_any(), "via-workspace", "the workspace URL and the short path are one space");

    // t-b's admin pointed at t-a's workspace: a 403 Status that kube-rs decodes.
    let intruder = kube_client(&certificate_kubeconfig_with(&server, "t-b", "admin", &[], Some(&url))).await?;
    match Api::<ConfigMap>::namespaced(intruder, "default").list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"), "{status:?}"),
        other => panic!("expected 403 Forbidden, got {other:?}"),
    }
    Ok(())
}
