//! The garbage collector at scale, against the release `kspaces` binary: N ConfigMaps owned by `owner-a`, N owned
//! by `owner-b` and N without owners, created through kube-rs. Then a Background cascade (time until every
//! dependent of `owner-a` is gone), a restart, and the first cascade after it (of `owner-b`, issued as soon as the
//! server answers: it includes the startup scan that rebuilds the collector's graph). With
//! `KSPACES_LOG=kspaces_apiserver::controllers::gc=info` the server also logs the scan's own time.
//!
//! Run: `cargo bench -p kspaces-tests --bench gc` (the harness builds `target/release/kspaces`, or set
//! `KSPACES_BIN`); `KSPACES_BENCH_DEPENDENTS` sets N (default 20 000).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::{stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::{Api, Client};
use kspaces_tests::Server;

mod support;

use support::{client, status_kib, wait_ready, Result};

const CONCURRENCY: usize = 32;

fn main() -> Result<()> {
    let dependents = match std::env::var("KSPACES_BENCH_DEPENDENTS") {
        Ok(value) => value.parse()?,
        Err(_) => 20_000,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(run(dependents))
}

async fn run(dependents: usize) -> Result<()> {
    kspaces_tests::kspaces_binary();
    let server = Server::start();
    let api = configmaps(&server).await?;
    let mut owners = BTreeMap::new();
    for name in ["owner-a", "owner-b"] {
        let created = api.create(&PostParams::default(), &configmap(name.to_owned(), None, None)).await?;
        owners.insert(name, created.metadata.uid.ok_or("no uid")?);
    }
    let began = Instant::now();
    create_all(&api, dependents, "a", Some(("owner-a", &owners["owner-a"]))).await?;
    create_all(&api, dependents, "b", Some(("owner-b", &owners["owner-b"]))).await?;
    create_all(&api, dependents, "plain", None).await?;
    let created = 3 * dependents;
    println!("created {created} ConfigMaps in {:.1} s ({:.0}/s)", began.elapsed().as_secs_f64(),
        created as f64 / began.elapsed().as_secs_f64());

    let live = cascade(&api, "owner-a", "a", dependents).await?;
    println!("background cascade of {dependents} dependents: {:.2} s ({:.0} deletes/s)", live.as_secs_f64(),
        dependents as f64 / live.as_secs_f64());

    let restarted = Server::start_in(server.stop(), &[]);
    let api = configmaps(&restarted).await?;
    let after = cascade(&api, "owner-b", "b", dependents).await?;
    println!("restart: first line after {} ms; first cascade of {dependents} dependents after it, scan included: {:.2} s",
        restarted.startup.as_millis(), after.as_secs_f64());
    println!("server RSS after the second cascade: {:.1} MiB", status_kib(restarted.pid(), "VmRSS:")? as f64 / 1024.0);
    let left = api.list(&ListParams::default().labels("set=plain")).await?;
    if left.items.is_empty() {
        return Err("the ConfigMaps without owners were collected".into());
    }
    Ok(())
}

async fn configmaps(server: &Server) -> Result<Api<ConfigMap>> {
    let client: Client = client(server).await?;
    wait_ready(&client, Instant::now() + Duration::from_secs(30)).await?;
    Ok(Api::namespaced(client, "default"))
}

fn configmap(name: String, set: Option<&str>, owner: Option<(&str, &str)>) -> ConfigMap {
    let owner_references = owner.map(|(name, uid)| vec![OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: name.into(),
        uid: uid.into(),
        ..OwnerReference::default()
    }]);
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name),
            labels: set.map(|set| BTreeMap::from([("set".to_owned(), set.to_owned())])),
            owner_references,
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("payload".to_owned(), "x".repeat(200))])),
        ..ConfigMap::default()
    }
}

async fn create_all(api: &Api<ConfigMap>, count: usize, set: &str, owner: Option<(&str, &str)>) -> Result<()> {
    stream::iter(0..count)
        .map(|n| {
            let object = configmap(format!("{set}-{n}"), Some(set), owner);
            async move { api.create(&PostParams::default(), &object).await.map(drop) }
        })
        .buffer_unordered(CONCURRENCY)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// Deletes `owner` (Background) and waits until no ConfigMap of `set` is left.
async fn cascade(api: &Api<ConfigMap>, owner: &str, set: &str, expected: usize) -> Result<Duration> {
    let selector = format!("set={set}");
    let before = api.list(&ListParams::default().labels(&selector)).await?.items.len();
    if before != expected {
        return Err(format!("{before} ConfigMaps in set {set}, expected {expected}").into());
    }
    let began = Instant::now();
    api.delete(owner, &DeleteParams::background()).await?;
    // Without a limit: one pass over the store per poll (a small limit with a selector pages one object at a time).
    while !api.list(&ListParams::default().labels(&selector)).await?.items.is_empty() {
        if began.elapsed() > Duration::from_secs(600) {
            return Err(format!("the dependents of {owner} were not collected in 10 minutes").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(began.elapsed())
}
