//! Quota enforcement benchmark (issue 22): what a space's limits cost each write, in process. A write reserves its
//! growth in the space's ledger before it reaches the store and settles it once durable
//! (`registry::limits::Reservation`, implemented by `quota::Quotas`); this times that pair alone, one call at a
//! time, for a create in a limited space, in a space without limits among 10,000 limited ones, and in a limited
//! space refused because it is full. Target: ≤ 2 µs per create.
//!
//! Run: `cargo bench -p kspaces-apiserver --bench quota` (a plain `main`, release build). Each row is `SAMPLES`
//! timed calls; the table shows p50, p99 and max. A last row has 64 tasks on the runtime reserving at once in one
//! limited space, to show the cost of contention on its ledger (mean per create over all tasks).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kspaces_apiserver::quota::{Quotas, MAX_OBJECTS};
use kspaces_apiserver::registry::limits::{Growth, Request, Reservation};
use kspaces_apiserver::registry::observe::WriteObserver;
use kspaces_apiserver::registry::{Reader, ResourceTable};
use kspaces_storage::{Revision, SpaceName, Store, StoreConfig};
use serde_json::json;

const LIMITED_SPACES: usize = 10_000;
const SAMPLES: usize = 200_000;
const TARGET: Duration = Duration::from_micros(2);

fn space(index: usize) -> SpaceName {
    SpaceName::new(format!("space-{index}")).unwrap_or_else(|e| panic!("{e}"))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

/// One row; `judged`: whether the target applies (a refusal builds kube's Status message: not a create's cost).
fn row(label: &str, mut samples: Vec<Duration>, judged: bool) {
    samples.sort_unstable();
    let (p50, p99, max) = (percentile(&samples, 0.50), percentile(&samples, 0.99), samples[samples.len() - 1]);
    let verdict = match (judged, p99 <= TARGET) {
        (false, _) => "(a refusal)",
        (true, true) => "met",
        (true, false) => "**not met**",
    };
    println!("| {label} | {:.3} | {:.3} | {:.3} | {verdict} |", p50.as_secs_f64() * 1e6, p99.as_secs_f64() * 1e6, max.as_secs_f64() * 1e6);
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    runtime.block_on(run());
}

async fn run() {
    let table = ResourceTable::new(kspaces_apiserver::kinds::resources());
    let configmaps = table.by_kind("", "ConfigMap").cloned().unwrap_or_else(|| panic!("no ConfigMap row"));
    let lc_row = table.by_kind("core.kcp.io", "LogicalCluster").cloned().unwrap_or_else(|| panic!("no LogicalCluster row"));
    let store = Store::memory(StoreConfig::default());
    let quotas = Quotas::new(Reader::new(store));
    // 10,000 limited spaces, as their LogicalClusters' annotations set them (an unreachable limit: nothing is refused
    // but the full space's row).
    let started = Instant::now();
    for index in 0..LIMITED_SPACES {
        let limit = if index == 1 { "0" } else { "1000000000" };
        let object = json!({"metadata": {"name": "cluster", "annotations": {MAX_OBJECTS: limit}}});
        quotas.written(&lc_row, &space(index), "cluster", Some(&object), Revision(index as u64 + 1));
    }
    // Every ledger is counted (one census of the empty store) before timing.
    while (0..LIMITED_SPACES).any(|i| quotas.usage(&space(i)).and_then(|(_, usage)| usage).is_none()) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    println!("{LIMITED_SPACES} limited spaces set up and counted in {:.1} ms\n", started.elapsed().as_secs_f64() * 1e3);
    println!("| write | p50 (µs) | p99 (µs) | max (µs) | target ≤ 2 µs |");
    println!("|---|---:|---:|---:|---|");

    let limited = space(0);
    let full = space(1);
    let unlimited = SpaceName::new("space-unlimited").unwrap_or_else(|e| panic!("{e}"));
    let mut revision = LIMITED_SPACES as u64 + 10;
    for (label, target, expect_refusal) in [
        ("create in a limited space (reserve + commit)", &limited, false),
        ("create in a space without limits", &unlimited, false),
        ("create refused: the space is full", &full, true),
    ] {
        let mut samples = Vec::with_capacity(SAMPLES);
        for i in 0..SAMPLES {
            let name = format!("cm-{i}");
            let request = Request { space: target, namespace: Some("default"), object: None, old: None, resource: &configmaps, name: &name, growth: Growth::created(1024), refusable: true };
            revision += 1;
            let begun = Instant::now();
            match Reservation::take(&*quotas, request).await {
                Ok(reservation) => reservation.commit(Revision(revision)),
                Err(err) => {
                    black_box(err);
                }
            }
            samples.push(begun.elapsed());
        }
        if expect_refusal {
            let request = Request { space: target, namespace: Some("default"), object: None, old: None, resource: &configmaps, name: "x", growth: Growth::created(1), refusable: true };
            assert!(Reservation::take(&*quotas, request).await.is_err(), "the full space refuses");
        }
        row(label, samples, !expect_refusal);
    }

    // 64 tasks reserving at once in one limited space.
    let quotas = Arc::new(quotas);
    let configmaps = Arc::new(configmaps);
    let per_task = SAMPLES / 64;
    let begun = Instant::now();
    let tasks: Vec<_> = (0..64).map(|task| {
        let (quotas, configmaps) = (quotas.clone(), configmaps.clone());
        tokio::spawn(async move {
            let target = space(2);
            for i in 0..per_task {
                let request = Request { space: &target, namespace: Some("default"), object: None, old: None, resource: &configmaps, name: "cm", growth: Growth::created(1024), refusable: true };
                if let Ok(reservation) = Reservation::take(&**quotas, request).await {
                    reservation.commit(Revision((1 << 40) + (task * per_task + i) as u64));
                }
            }
        })
    }).collect();
    for task in tasks {
        task.await.unwrap_or_else(|e| panic!("{e}"));
    }
    let mean = begun.elapsed() / (per_task * 64) as u32;
    println!("\n64 concurrent tasks, one limited space: {:.3} µs per create (mean over {} creates on 2 worker threads)", mean.as_secs_f64() * 1e6, per_task * 64);
    let (_, usage) = quotas.usage(&space(2)).unwrap_or_else(|| panic!("a ledger"));
    assert_eq!(usage.map(|u| u.objects), Some((per_task * 64) as i64), "every create counted once");
}
