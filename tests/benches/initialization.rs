//! Initialization through the virtual workspace: `KSPACES_BENCH_INITIALIZED` workspaces (default 1,000) of a
//! WorkspaceType with `spec.initializer: true`, each held in `Initializing` until one kube-rs controller
//! (`kspaces_tests::initializer`, the one `tests/tests/kube_rs_initializer.rs` tests) removes its entry through
//! the initializing virtual workspace the type publishes.
//!
//! Starts the release `kspaces` binary, makes tenant `t-a` and acts as its `admin` (a client certificate). The
//! controller watches `<vw>/clusters/*` and, for each LogicalCluster, creates the ConfigMap `initialized` in the
//! workspace through `<vw>/clusters/<logical cluster>` and then merge-patches the LogicalCluster's status without its
//! entry (16 workspaces at a time). The bench creates the workspaces with `CONCURRENCY` closed loops (a loop's next
//! create is sent once its previous workspace was seen `Ready`); `Ready` is seen on a watch of the Workspaces in
//! `root:t-a` (kube-rs `watcher`), not by polling. Reported: the wall time from the first create to the last
//! workspace seen `Ready` and the rate; per workspace, create sent → `Ready` seen, the controller's status PATCH
//! answered → `Ready` seen, and the steps in between.
//!
//! Run: `cargo bench -p kspaces-tests --bench initialization` (the harness builds `target/release/kspaces`, or set
//! `KSPACES_BIN`). `KSPACES_BENCH_INITIALIZED` sets the count, `KSPACES_BENCH_INIT_CONCURRENCY` the closed loops
//! (default 48); `KSPACES_BENCH_INIT_WAITING` (default 0) first parks that many workspaces of another initializer
//! type nobody serves, which stay `Initializing` through the run. The server's CPU is read while it idles 5 s
//! before the run.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use kspaces_tests::initializer::{self, Initializer, Options};
use kspaces_tests::{certificate_kubeconfig, certificate_kubeconfig_with, kube_client, kubeconfig_with_server_url};
use serde_json::{json, Value};
use tokio::sync::oneshot;

mod support;

use support::{cpu_seconds, env_usize, millis, percentile, start, BoxError, Result};

const TYPE: &str = "bench-init";
const READY_WITHIN: Duration = Duration::from_secs(60);
/// How long the server idles before the run, its CPU read.
const IDLE: Duration = Duration::from_secs(5);
const WORKSPACES: &str = "/clusters/root:t-a/apis/tenancy.kcp.io/v1alpha1/workspaces";

/// When a workspace was seen `Ready` on the watch, and its logical cluster.
#[derive(Clone)]
struct Ready {
    at: Instant,
    cluster: String,
}

/// The watch's view: the workspaces seen `Ready`, and the loops waiting for one.
#[derive(Default)]
struct Seen {
    ready: HashMap<String, Ready>,
    waiting: HashMap<String, oneshot::Sender<Ready>>,
}

fn main() -> Result<()> {
    let count = env_usize("KSPACES_BENCH_INITIALIZED", 1_000)?;
    let concurrency = env_usize("KSPACES_BENCH_INIT_CONCURRENCY", 48)?;
    let began = Instant::now();
    let result = support::block_on(run(count, concurrency));
    println!("\ntotal bench time {:.1} s", began.elapsed().as_secs_f64());
    result
}

fn request(method: &str, path: &str, body: Option<&Value>) -> Result<http::Request<Vec<u8>>> {
    let builder = http::Request::builder().method(method).uri(path);
    Ok(match body {
        Some(body) => builder.header(http::header::CONTENT_TYPE, "application/json").body(body.to_string().into_bytes())?,
        None => builder.body(Vec::new())?,
    })
}

async fn run(count: usize, concurrency: usize) -> Result<()> {
    let (server, system) = start().await?;
    system.request_text(request("POST", "/api/v1/tenants", Some(&json!({"apiVersion": "v1", "kind": "Tenant", "metadata": {"name": "t-a"}})))?).await?;
    let kubeconfig = certificate_kubeconfig(&server, "t-a", "admin", &[]);
    let admin = kube_client(&kubeconfig).await?;
    let kind = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType", "metadata": {"name": TYPE},
        "spec": {"initializer": true, "extend": {"with": [{"name": "universal", "path": "root"}]}}});
    admin.request_text(request("POST", "/clusters/root:t-a/apis/tenancy.kcp.io/v1alpha1/workspacetypes", Some(&kind))?).await?;
    let kind: Value = serde_json::from_str(&admin.request_text(request("GET", &format!("/clusters/root:t-a/apis/tenancy.kcp.io/v1alpha1/workspacetypes/{TYPE}"), None)?).await?)?;
    let vw = kind["status"]["virtualWorkspaces"].as_array().into_iter().flatten()
        .find(|v| v["type"] == "initializing").and_then(|v| v["url"].as_str())
        .ok_or_else(|| format!("no initializing virtual workspace published: {kind}"))?.to_owned();

    let waiting = env_usize("KSPACES_BENCH_INIT_WAITING", 0)?;
    if waiting > 0 {
        park(&admin, waiting, concurrency).await?;
    }
    let (idle_began, idle_cpu0) = (Instant::now(), cpu_seconds(server.pid())?);
    tokio::time::sleep(IDLE).await;
    println!("server CPU idle for {} s before the run, {waiting} workspaces waiting for another initializer: {:.2} cores",
        IDLE.as_secs(), (cpu_seconds(server.pid())? - idle_cpu0) / idle_began.elapsed().as_secs_f64());

    let options = Options::default();
    let controller = Initializer::start(&kubeconfig, &vw, options.clone()).await?;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let watch_client = kube_client(&certificate_kubeconfig_with(&server, "t-a", "admin", &[], Some(&format!("{}/clusters/root:t-a", server.url)))).await?;
    let (synced, watching) = oneshot::channel();
    let watch = tokio::spawn(watch_ready(watch_client, seen.clone(), synced));
    watching.await.map_err(|_| "the Workspace watch ended before its first list")?;
    println!("{count} workspaces of {TYPE} (held by root:t-a, entry {}), {concurrency} closed loops; the controller does {} workspaces at a time, with the ConfigMap: {}",
        controller.entry, options.workers, options.configmap);

    let next = Arc::new(AtomicUsize::new(0));
    let (began, server_cpu0, client_cpu0) = (Instant::now(), cpu_seconds(server.pid())?, cpu_seconds(std::process::id())?);
    let loops: Vec<_> = (0..concurrency.min(count))
        .map(|_| {
            let (admin, next, seen) = (admin.clone(), next.clone(), seen.clone());
            tokio::spawn(async move {
                let mut done = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        return Ok::<_, BoxError>(done);
                    }
                    let name = format!("w-{i}");
                    let (tell, ready) = oneshot::channel();
                    seen.lock().expect("seen").waiting.insert(name.clone(), tell);
                    let body = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name},
                        "spec": {"type": {"name": TYPE, "path": "root:t-a"}}});
                    let sent = Instant::now();
                    admin.request_text(request("POST", WORKSPACES, Some(&body))?).await.map_err(|e| format!("creating {name}: {e}"))?;
                    let ready = tokio::time::timeout(READY_WITHIN, ready).await
                        .map_err(|_| format!("{name} not seen Ready {} s after its create", READY_WITHIN.as_secs()))?
                        .map_err(|_| "the Workspace watch ended")?;
                    done.push((name, sent, ready));
                }
            })
        })
        .collect();
    let mut done = Vec::with_capacity(count);
    for handle in loops {
        done.extend(handle.await??);
    }
    let last_ready = done.iter().map(|(_, _, ready)| ready.at).max().ok_or("no workspace")?;
    let wall = last_ready.duration_since(began);
    let (server_cpu, client_cpu) = ((cpu_seconds(server.pid())? - server_cpu0) / wall.as_secs_f64(), (cpu_seconds(std::process::id())? - client_cpu0) / wall.as_secs_f64());
    watch.abort();

    // Per workspace: the create, the controller's steps (by its logical cluster), Ready on the watch.
    let records = controller.records();
    let (mut create_ready, mut patch_ready, mut create_added, mut added_patched, mut ready_before_patch) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), 0);
    for (name, sent, ready) in &done {
        let record = records.get(&ready.cluster).ok_or_else(|| format!("the controller has no record of {name} ({})", ready.cluster))?;
        let (added, patched) = (record.added.ok_or("not added")?, record.patched.ok_or_else(|| format!("{name} Ready without the controller's patch"))?);
        create_ready.push(ready.at.duration_since(*sent));
        create_added.push(added.saturating_duration_since(*sent));
        added_patched.push(patched.duration_since(added));
        match ready.at.checked_duration_since(patched) {
            Some(latency) => patch_ready.push(latency),
            None => {
                ready_before_patch += 1;
                patch_ready.push(Duration::ZERO);
            }
        }
    }
    println!("\nall {count} Ready in {:.2} s = {:.0} workspaces/s (first create → last Ready seen); server CPU {server_cpu:.2} cores, bench process (loops, watch, controller) {client_cpu:.2} cores",
        wall.as_secs_f64(), count as f64 / wall.as_secs_f64());
    println!("\n| per workspace ({count}) | p50 | p99 | max |\n|---|---:|---:|---:|");
    for (label, latencies) in [
        ("create sent → Ready seen on the watch", &mut create_ready),
        ("status PATCH answered → Ready seen on the watch", &mut patch_ready),
        ("create sent → the controller's ADDED event", &mut create_added),
        ("ADDED → status PATCH answered (a worker free, client, ConfigMap, PATCH)", &mut added_patched),
    ] {
        latencies.sort();
        println!("| {label} | {:.2} ms | {:.2} ms | {:.2} ms |", millis(percentile(latencies, 50.0)), millis(percentile(latencies, 99.0)), millis(latencies.last().copied().unwrap_or_default()));
    }
    println!("\nReady seen before the PATCH's answer arrived (counted as 0 above): {ready_before_patch}");

    // Sanity: every workspace went through the controller once, the watch said DELETED for each, nothing waits.
    let deleted = controller.wait_until(Duration::from_secs(10), |records| records.values().filter(|r| r.deleted.is_some()).count() >= count).await;
    let records = controller.records();
    let extra_events: usize = records.values().map(|r| r.applied_events.saturating_sub(1)).sum();
    let lister = kube_client(&kubeconfig_with_server_url(&server, &kubeconfig, &format!("{vw}/clusters/*"))).await?;
    let waiting = Api::<DynamicObject>::all_with(lister, &initializer::logical_cluster_resource()).list(&ListParams::default()).await?.items.len();
    println!("sanity: controller records {}, DELETED events {} (all within 10 s: {deleted}), extra ADDED/MODIFIED events {extra_events}, errors {:?}, LogicalClusters still listed at the virtual workspace {waiting}",
        records.len(), records.values().filter(|r| r.deleted.is_some()).count(), controller.errors());
    if records.len() != count || !controller.errors().is_empty() || waiting != 0 {
        return Err("the controller's run was not clean (see the sanity line)".into());
    }
    Ok(())
}

/// Makes `count` workspaces `p-<i>` of the type `bench-waiting`, whose initializer nobody serves, so they stay
/// `Initializing` through the run; waits until the last one is.
async fn park(admin: &Client, count: usize, concurrency: usize) -> Result<()> {
    let kind = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType", "metadata": {"name": "bench-waiting"},
        "spec": {"initializer": true, "extend": {"with": [{"name": "universal", "path": "root"}]}}});
    admin.request_text(request("POST", "/clusters/root:t-a/apis/tenancy.kcp.io/v1alpha1/workspacetypes", Some(&kind))?).await?;
    let began = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let loops: Vec<_> = (0..concurrency.min(count))
        .map(|_| {
            let (admin, next) = (admin.clone(), next.clone());
            tokio::spawn(async move {
                while let Some(i) = Some(next.fetch_add(1, Ordering::Relaxed)).filter(|i| *i < count) {
                    let body = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": format!("p-{i}")},
                        "spec": {"type": {"name": "bench-waiting", "path": "root:t-a"}}});
                    admin.request_text(request("POST", WORKSPACES, Some(&body))?).await?;
                }
                Ok::<_, BoxError>(())
            })
        })
        .collect();
    for handle in loops {
        handle.await??;
    }
    let last = format!("{WORKSPACES}/p-{}", count - 1);
    while serde_json::from_str::<Value>(&admin.request_text(request("GET", &last, None)?).await?)?["status"]["phase"] != "Initializing" {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    println!("{count} workspaces of bench-waiting made in {:.1} s; they stay Initializing", began.elapsed().as_secs_f64());
    Ok(())
}

/// Watches the Workspaces of `root:t-a`; the first time one is `Ready`, records it and tells its loop. Says
/// `synced` once the initial list is in.
async fn watch_ready(client: Client, seen: Arc<Mutex<Seen>>, synced: oneshot::Sender<()>) {
    let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("tenancy.kcp.io", "v1alpha1", "Workspace"), "workspaces");
    let mut events = watcher(Api::<DynamicObject>::all_with(client, &resource), watcher::Config::default()).default_backoff().boxed();
    let mut synced = Some(synced);
    while let Some(event) = events.next().await {
        let workspace = match event {
            Ok(watcher::Event::Apply(w) | watcher::Event::InitApply(w)) => w,
            Ok(watcher::Event::InitDone) => {
                if let Some(synced) = synced.take() {
                    let _ = synced.send(());
                }
                continue;
            }
            Ok(_) => continue,
            Err(error) => {
                eprintln!("Workspace watch: {error}");
                continue;
            }
        };
        let at = Instant::now();
        if workspace.data.pointer("/status/phase").and_then(Value::as_str) != Some("Ready") {
            continue;
        }
        let (Some(name), Some(cluster)) = (workspace.metadata.name.clone(), workspace.data.pointer("/spec/cluster").and_then(Value::as_str)) else { continue };
        let mut seen = seen.lock().expect("seen");
        if seen.ready.contains_key(&name) {
            continue;
        }
        let ready = Ready { at, cluster: cluster.to_owned() };
        seen.ready.insert(name.clone(), ready.clone());
        if let Some(tell) = seen.waiting.remove(&name) {
            let _ = tell.send(ready);
        }
    }
}
