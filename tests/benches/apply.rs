//! Server-side apply vs a plain update (PUT) of the same 50-field object, through the release `kspaces` binary
//! and kube-rs, N concurrent closed loops, each on its own object, each write changing one field. Two objects:
//! a ConfigMap with 50 data keys (a granular map), and a Deployment whose container has 50 environment
//! variables (a `map` list keyed by name). Target: apply at least half the update rate. Also prints durable
//! creates/s of the ConfigMap (whose managedFields the server now records), to set beside the `api` bench.
//!
//! Run: `cargo bench -p kspaces-tests --bench apply` (the harness builds `target/release/kspaces`, or set
//! `KSPACES_BIN`).

use std::time::{Duration, Instant};

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::Api;
use kspaces_tests::Server;
use serde_json::{json, Value};

mod support;

use support::{client, wait_ready, BoxError, Result};

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

/// Runs `CONCURRENCY` closed loops of `request(worker, iteration)` for `duration`; returns requests/s.
async fn drive<F, Fut>(duration: Duration, request: F) -> Result<f64>
where
    F: Fn(usize, u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send,
{
    let began = Instant::now();
    let deadline = began + duration;
    let workers: Vec<_> = (0..CONCURRENCY)
        .map(|worker| {
            let request = request.clone();
            tokio::spawn(async move {
                let mut done = 0u64;
                while Instant::now() < deadline {
                    request(worker, done).await?;
                    done += 1;
                }
                Ok::<_, BoxError>(done)
            })
        })
        .collect();
    let mut total = 0;
    for worker in workers {
        total += worker.await??;
    }
    Ok(total as f64 / began.elapsed().as_secs_f64())
}

/// Measures `write` after a warm-up; `round` offsets keep every write a change.
async fn measure<F, Fut>(write: F) -> Result<f64>
where
    F: Fn(usize, u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send,
{
    let warm = write.clone();
    drive(WARM_UP, move |worker, i| warm(worker, 1_000_000 + i)).await?;
    drive(PHASE, write).await
}

/// Plain updates: PUT of the whole object (no resourceVersion: unconditional, as `kubectl replace --force`
/// would not be; the same bytes an apply sends).
async fn updates(api: &Api<DynamicObject>, kind: Kind) -> Result<f64> {
    let api = api.clone();
    measure(move |worker, round| {
        let api = api.clone();
        async move {
            let name = format!("put-{worker}");
            let object: DynamicObject = serde_json::from_value(kind.object(&name, round))?;
            api.replace(&name, &PostParams::default(), &object).await?;
            Ok(())
        }
    })
    .await
}

/// Server-side applies of the same object by one field manager.
async fn applies(api: &Api<DynamicObject>, kind: Kind) -> Result<f64> {
    let api = api.clone();
    measure(move |worker, round| {
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
async fn creates(api: &Api<DynamicObject>, kind: Kind) -> Result<f64> {
    let api = api.clone();
    measure(move |worker, round| {
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
        let applied = format!("apply-{worker}");
        api.patch(&applied, &PatchParams::apply("bench"), &Patch::Apply(kind.object(&applied, 0))).await?;
    }
    Ok(())
}

fn main() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(run())
}

async fn run() -> Result<()> {
    kspaces_tests::kspaces_binary();
    let server = Server::start();
    let client = client(&server).await?;
    wait_ready(&client, Instant::now() + Duration::from_secs(10)).await?;
    println!("\n| N = {CONCURRENCY}, {FIELDS}-field objects | PUT updates/s | server-side applies/s | apply / PUT | target |\n|---|---|---|---|---|");
    let mut created = Vec::new();
    for (label, kind) in [("ConfigMap, 50 data keys", Kind::ConfigMap), ("Deployment, 50 env vars", Kind::Deployment)] {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &kind.resource());
        prepare(&api, kind).await?;
        let (put, apply) = (updates(&api, kind).await?, applies(&api, kind).await?);
        let ratio = apply / put;
        let verdict = if ratio >= 0.5 { "met" } else { "**not met**" };
        println!("| {label} | {put:.0} | {apply:.0} | {:.0}% | ≥ 50%: {verdict} |", ratio * 100.0);
        created.push((label, creates(&api, kind).await?));
    }
    println!("\n| N = {CONCURRENCY} | durable creates/s (managedFields recorded) |\n|---|---|");
    for (label, rate) in created {
        println!("| {label} | {rate:.0} |");
    }
    Ok(())
}
