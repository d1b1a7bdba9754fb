//! Custom resources vs ConfigMaps: durable creates/s and gets/s against the release `kspaces` binary, both
//! driven through kube-rs' dynamic API (so client-side costs are the same), N concurrent closed loops, in alternating rounds (the median of each kind counts). A custom
//! resource write also pays CRD resolution, pruning, defaulting and schema validation (a CEL rule included).
//! Target: custom resources at least 80% of ConfigMaps' throughput.
//!
//! Run: `cargo bench -p kspaces-tests --bench crds` (the harness builds `target/release/kspaces`, or set
//! `KSPACES_BIN`).

use std::sync::Arc;
use std::time::Duration;

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::Api;
use serde_json::json;

mod support;

use support::{block_on, closed_loops, start, Result};

const PHASE: Duration = Duration::from_secs(4);
const WARM_UP: Duration = Duration::from_millis(500);
const CONCURRENCY: usize = 32;
/// Rounds of each measurement, alternating ConfigMaps and custom resources.
const ROUNDS: usize = 3;

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations: [{rule: "self.min <= self.max", message: "min must not exceed max"}]
            properties:
              color: {type: string, enum: [red, green, blue]}
              size: {type: integer, default: 1, maximum: 100}
              min: {type: integer, default: 0}
              max: {type: integer, default: 10}
              owner: {type: string, maxLength: 64}
"#;

/// Objects of about the same size: a ConfigMap with four data keys, a Widget with four spec fields.
fn object(kind: &str, name: String) -> Result<DynamicObject> {
    let value = match kind {
        "ConfigMap" => json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"color": "red", "size": "5", "min": "1", "owner": "bench"}}),
        _ => json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": {"color": "red", "size": 5, "min": 1, "owner": "bench"}}),
    };
    Ok(serde_json::from_value(value)?)
}

/// Runs `CONCURRENCY` closed loops of `request(worker, iteration)` for `duration`; returns requests/s.
async fn drive<F, Fut>(duration: Duration, request: F) -> Result<f64>
where
    F: Fn(usize, u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send,
{
    Ok(closed_loops(CONCURRENCY, duration, request).await?.per_second())
}

async fn creates(api: &Api<DynamicObject>, kind: &'static str, round: &str) -> Result<f64> {
    let create = |phase: String| {
        let api = api.clone();
        move |worker: usize, i: u64| {
            let (api, phase) = (api.clone(), phase.clone());
            async move {
                api.create(&PostParams::default(), &object(kind, format!("{phase}-{worker}-{i}"))?).await?;
                Ok(())
            }
        }
    };
    drive(WARM_UP, create(format!("warm{round}"))).await?;
    drive(PHASE, create(format!("create{round}"))).await
}

async fn gets(api: &Api<DynamicObject>, kind: &'static str, round: &str) -> Result<f64> {
    let names: Arc<Vec<String>> = Arc::new((0..100).map(|i| format!("get-{round}-{i}")).collect());
    for name in names.iter() {
        api.create(&PostParams::default(), &object(kind, name.clone())?).await?;
    }
    let get = {
        let api = api.clone();
        move |worker: usize, i: u64| {
            let (api, names) = (api.clone(), names.clone());
            async move {
                api.get(&names[(worker * 7 + i as usize) % names.len()]).await?;
                Ok(())
            }
        }
    };
    drive(WARM_UP, get.clone()).await?;
    drive(PHASE, get).await
}

fn median(mut rates: Vec<f64>) -> f64 {
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

fn main() -> Result<()> {
    block_on(run())
}

async fn run() -> Result<()> {
    let (server, client) = start().await?;
    server.kubectl().ok_with_stdin(&["apply", "-f", "-"], CRD);
    server.kubectl().ok(&["wait", "--for", "condition=established", "crd/widgets.example.com", "--timeout=10s"]);
    let configmaps: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap")));
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(client, "default", &ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget")));
    // Alternating rounds, each kind's median: a change of load on the machine between two phases then skews
    // one round, not the verdict.
    let mut rows = Vec::new();
    for what in ["durable creates/s", "gets/s"] {
        let (mut configmap, mut custom) = (Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            let phase = format!("{}{round}", &what[..1]);
            if what == "gets/s" {
                configmap.push(gets(&configmaps, "ConfigMap", &phase).await?);
                custom.push(gets(&widgets, "Widget", &phase).await?);
            } else {
                configmap.push(creates(&configmaps, "ConfigMap", &phase).await?);
                custom.push(creates(&widgets, "Widget", &phase).await?);
            }
        }
        rows.push((what, median(configmap), median(custom)));
    }
    println!("\n| N = {CONCURRENCY} | ConfigMaps | custom resources | CR / ConfigMap | target |\n|---|---|---|---|---|");
    for (what, configmap, custom) in rows {
        let ratio = custom / configmap;
        let verdict = if ratio >= 0.8 { "met" } else { "**not met**" };
        println!("| {what} | {configmap:.0} | {custom:.0} | {:.0}% | ≥ 80%: {verdict} |", ratio * 100.0);
    }
    Ok(())
}
