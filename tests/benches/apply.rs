//! Server-side apply vs a plain update (PUT) of the same 50-field object, through the release `kspaces` binary
//! and kube-rs, N concurrent closed loops, each on its own object, each write changing one field. Two objects:
//! a ConfigMap with 50 data keys (a granular map), and a Deployment whose container has 50 environment
//! variables (a `map` list keyed by name). Target: apply at least half the update rate. Also prints latencies,
//! the server's CPU time per write, durable creates/s (whose managedFields the server now records, to set
//! beside the `api` bench) and the server's RSS after the run.
//!
//! Run: `cargo bench -p kspaces-tests --bench apply` (the harness builds `target/release/kspaces`, or set
//! `KSPACES_BIN`).

use std::time::Duration;

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::{json, Value};

mod support;

use support::{block_on, closed_loops, cpu_seconds, millis, percentile, start, status_kib, Result};

const PHASE: Duration = Duration::from_secs(4);
const WARM_UP: Duration = Duration::from_millis(500);
const CONCURRENCY: usize = 32;
const FIELDS: usize = 50;

/// The bench's two kinds of 50-field objects; `round` changes one field's value.
#[derive(Clone, Copy)]
enum Kind {
    ConfigMap,
    Deployment,
}

impl Kind {
    fn resource(self) -> ApiResource {
        match self {
            Kind::ConfigMap => ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap")),
            Kind::Deployment => ApiResource::from_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment")),
        }
    }

    fn object(self, name: &str, round: u64) -> Value {
        let value = |i: usize| if i == 0 { format!("round-{round}") } else { format!("value-{i}") };
        match self {
            Kind::ConfigMap => {
                let data: serde_json::Map<String, Value> = (0..FIELDS).map(|i| (format!("key-{i}"), json!(value(i)))).collect();
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
            }
            Kind::Deployment => {
                let env: Vec<Value> = (0..FIELDS).map(|i| json!({"name": format!("VAR_{i}"), "value": value(i)})).collect();
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
                    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                        "template": {"metadata": {"labels": {"app": name}},
                            "spec": {"containers": [{"name": "app", "image": "nginx:1.25", "env": env}]}}}})
            }
        }
    }
}

/// One measured phase: requests/s, sorted latencies, and the server's CPU milliseconds per request.
struct Phase {
    rate: f64,
    latencies: Vec<Duration>,
    cpu_ms_per_request: f64,
}

impl Phase {
    fn cell(&self) -> String {
        format!("{:.0}/s (p50 {:.2} ms, p99 {:.2} ms, {:.2} ms CPU)", self.rate, millis(percentile(&self.latencies, 50.0)),
            millis(percentile(&self.latencies, 99.0)), self.cpu_ms_per_request)
    }
}

/// Runs `CONCURRENCY` closed loops of `request(worker, iteration)` for `duration`, with the server's CPU time.
async fn drive<F, Fut>(server: u32, duration: Duration, request: F) -> Result<Phase>
where
    F: Fn(usize, u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send,
{
    let cpu = cpu_seconds(server)?;
    let mut loops = closed_loops(CONCURRENCY, duration, request).await?;
    let cpu_ms_per_request = (cpu_seconds(server)? - cpu) * 1000.0 / loops.latencies.len().max(1) as f64;
    loops.latencies.sort();
    Ok(Phase { rate: loops.per_second(), latencies: loops.latencies, cpu_ms_per_request })
}

/// Measures `write` after a warm-up; `round` offsets keep every write a change.
async fn measure<F, Fut>(server: u32, write: F) -> Result<Phase>
where
    F: Fn(usize, u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send,
{
    let warm = write.clone();
    drive(server, WARM_UP, move |worker, i| warm(worker, 1_000_000 + i)).await?;
    drive(server, PHASE, write).await
}

/// Plain updates: PUT of the whole object (no resourceVersion: unconditional; the same bytes an apply sends).
/// `tracked: false` sends `managedFields: [{}]`, which clears them and leaves the object untracked, as kube
/// does: the same write without field management, for the overhead of recording it.
async fn updates(server: u32, api: &Api<DynamicObject>, kind: Kind, tracked: bool) -> Result<Phase> {
    let api = api.clone();
    measure(server, move |worker, round| {
        let api = api.clone();
        async move {
            let name = format!("{}-{worker}", if tracked { "put" } else { "untracked" });
            let mut object = kind.object(&name, round);
            if !tracked {
                object["metadata"]["managedFields"] = json!([{}]);
            }
            let object: DynamicObject = serde_json::from_value(object)?;
            api.replace(&name, &PostParams::default(), &object).await?;
            Ok(())
        }
    })
    .await
}

/// Server-side applies of the same object by one field manager.
async fn applies(server: u32, api: &Api<DynamicObject>, kind: Kind) -> Result<Phase> {
    let api = api.clone();
    measure(server, move |worker, round| {
        let api = api.clone();
        async move {
            let name = format!("apply-{worker}");
            api.patch(&name, &PatchParams::apply("bench"), &Patch::Apply(kind.object(&name, round))).await?;
            Ok(())
        }
    })
    .await
}

/// Durable creates of fresh objects (their managedFields recorded as an `Update` by the creator).
async fn creates(server: u32, api: &Api<DynamicObject>, kind: Kind) -> Result<Phase> {
    let api = api.clone();
    measure(server, move |worker, round| {
        let api = api.clone();
        async move {
            let object: DynamicObject = serde_json::from_value(kind.object(&format!("new-{worker}-{round}"), 0))?;
            api.create(&PostParams::default(), &object).await?;
            Ok(())
        }
    })
    .await
}

async fn prepare(api: &Api<DynamicObject>, kind: Kind) -> Result<()> {
    for worker in 0..CONCURRENCY {
        let put = format!("put-{worker}");
        api.create(&PostParams::default(), &serde_json::from_value(kind.object(&put, 0))?).await?;
        let untracked = format!("untracked-{worker}");
        api.create(&PostParams::default(), &serde_json::from_value(kind.object(&untracked, 0))?).await?;
        let applied = format!("apply-{worker}");
        api.patch(&applied, &PatchParams::apply("bench"), &Patch::Apply(kind.object(&applied, 0))).await?;
    }
    Ok(())
}

fn main() -> Result<()> {
    block_on(run())
}

async fn run() -> Result<()> {
    let (server, client) = start().await?;
    let pid = server.pid();
    println!("\n| N = {CONCURRENCY}, {FIELDS}-field objects | PUT updates | server-side applies | apply / PUT | target | PUT, untracked (managedFields: [{{}}]) |\n|---|---|---|---|---|---|");
    let mut created = Vec::new();
    for (label, kind) in [("ConfigMap, 50 data keys", Kind::ConfigMap), ("Deployment, 50 env vars", Kind::Deployment)] {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &kind.resource());
        prepare(&api, kind).await?;
        let (put, apply) = (updates(pid, &api, kind, true).await?, applies(pid, &api, kind).await?);
        let untracked = updates(pid, &api, kind, false).await?;
        let ratio = apply.rate / put.rate;
        let verdict = if ratio >= 0.5 { "met" } else { "**not met**" };
        println!("| {label} | {} | {} | {:.0}% | ≥ 50%: {verdict} | {} |", put.cell(), apply.cell(), ratio * 100.0, untracked.cell());
        created.push((label, creates(pid, &api, kind).await?));
    }
    println!("\n| N = {CONCURRENCY} | durable creates (managedFields recorded) |\n|---|---|");
    for (label, phase) in created {
        println!("| {label} | {} |", phase.cell());
    }
    println!("\nserver RSS after the run: {:.1} MiB", status_kib(pid, "VmRSS:")? as f64 / 1024.0);
    Ok(())
}
