//! CRD resolution benchmark: the per-request cost of `Resolver::lookup` (which definition serves a group/resource in
//! a space) with 10,000 tenants and 100 system CRDs: a quarter forced, a quarter bounded by an
//! applicable-tenants selector, a third of the tenants labelled into that range, every tenth tenant with its own
//! CRDs of the same names, and the three policies spread over the tenants.
//!
//! Run: `cargo bench -p kspaces-apiserver --bench crd_resolution` (a plain `main`, release build). Each kind of
//! request is timed one call at a time over `SAMPLES` calls cycling through pre-built (tenant, resource) pairs;
//! the table shows p50, p99 and max. Target: under 5 µs per request.

use std::hint::black_box;
use std::time::{Duration, Instant};

use std::sync::Arc;

use kspaces_apiserver::registry::observe::WriteObserver;
use kspaces_apiserver::resolver::Resolver;
use kspaces_apiserver::tenancy::TenantCache;
use kspaces_apiserver::registry::builtin::builtin_resources;
use kspaces_apiserver::registry::{ResourceTable, Spaces};
use kspaces_storage::{Revision, SpaceName};
use serde_json::{json, Value};

const TENANTS: usize = 10_000;
const SYSTEM_CRDS: usize = 100;
const SAMPLES: usize = 400_000;
const TARGET: Duration = Duration::from_micros(5);

fn crd(index: usize, uid: &str) -> Value {
    let mut labels = json!({});
    let mut annotations = json!({});
    match index % 4 {
        0 => labels["arktos.futurewei.com/crd-sharing-policy"] = json!("forced"),
        1 => annotations["crd.kspaces.io/applicable-tenants"] = json!("tier in (gold,platinum)"),
        _ => {}
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("things{index}.example.com"), "uid": uid, "labels": labels, "annotations": annotations},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": format!("things{index}"), "kind": format!("Thing{index}")},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}],
        },
    })
}

fn space(tenant: usize) -> SpaceName {
    SpaceName::new(format!("tenant-{tenant}")).unwrap_or_else(|e| panic!("{e}"))
}

fn build() -> Resolver {
    let tenants = Arc::new(TenantCache::default());
    let table = ResourceTable::new(builtin_resources());
    let tenant_row = table.by_kind("", "Tenant").cloned().unwrap_or_else(|| panic!("no Tenant row"));
    let crds = Resolver::new(table, tenants.clone(), Arc::default());
    let mut revision = 0;
    let mut next = || {
        revision += 1;
        Revision(revision)
    };
    for i in 0..SYSTEM_CRDS {
        crds.apply_crd(&SpaceName::system(), &format!("things{i}.example.com"), Some(&crd(i, &format!("system-{i}"))), next());
    }
    let policies = ["LocalCRDFirst", "SystemCRDFirst", "NeverUseSystemCRDUnlessForced"];
    for t in 0..TENANTS {
        let name = format!("tenant-{t}");
        if t % 3 == 0 {
            let tenant = json!({"metadata": {"name": name, "labels": {"tier": "gold"}}});
            let revision = next();
            tenants.apply(&name, Some(&tenant), revision);
            crds.written(&tenant_row, &SpaceName::system(), &name, Some(&tenant), revision);
        }
        crds.apply_policy(&space(t), Some(&json!({"spec": {"crdPolicy": policies[t % 3]}})), next());
        if t % 10 == 0 {
            for i in 0..SYSTEM_CRDS / 10 {
                crds.apply_crd(&space(t), &format!("things{i}.example.com"), Some(&crd(i + 2, &format!("{t}-{i}"))), next());
            }
        }
    }
    crds
}

/// Times `SAMPLES` lookups of `(tenant, group, plural)` cycling through `requests`; returns sorted latencies and
/// how many were served.
fn measure(crds: &Resolver, requests: &[(Spaces, &str, String)]) -> (Vec<Duration>, usize) {
    let mut latencies = Vec::with_capacity(SAMPLES);
    let mut served = 0;
    for i in 0..SAMPLES {
        let (spaces, group, plural) = &requests[i % requests.len()];
        let began = Instant::now();
        let found = black_box(crds.lookup(black_box(spaces), group, "v1", plural));
        latencies.push(began.elapsed());
        served += usize::from(found.is_some());
    }
    latencies.sort();
    (latencies, served)
}

fn at(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p / 100.0) as usize).min(sorted.len() - 1)]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let began = Instant::now();
    let crds = build();
    println!("built {TENANTS} tenants and {SYSTEM_CRDS} system CRDs in {:.1} s", began.elapsed().as_secs_f64());
    let pairs = 4096;
    let builtin: Vec<_> = (0..pairs).map(|i| (Spaces::One(space(i * 7 % TENANTS)), "", "configmaps".to_owned())).collect();
    let custom: Vec<_> = (0..pairs).map(|i| (Spaces::One(space(i * 7 % TENANTS)), "example.com", format!("things{}", i % SYSTEM_CRDS))).collect();
    let own: Vec<_> = (0..pairs).map(|i| (Spaces::One(space((i * 10) % TENANTS)), "example.com", format!("things{}", i % 10))).collect();
    let unknown: Vec<_> = (0..pairs).map(|i| (Spaces::One(space(i * 7 % TENANTS)), "example.com", format!("nothing{}", i % 50))).collect();
    println!("\n| request | served | p50 | p99 | max | target |\n|---|---|---|---|---|---|");
    for (label, requests) in [
        ("built-in resource (`configmaps`)", &builtin),
        ("custom resource, any tenant, every system CRD", &custom),
        ("custom resource, tenants with their own CRDs", &own),
        ("unknown resource (404)", &unknown),
    ] {
        let (latencies, served) = measure(&crds, requests);
        let p99 = at(&latencies, 99.0);
        let verdict = if p99 < TARGET { "met" } else { "**not met**" };
        println!(
            "| {label} | {:.0}% | {:.2} µs | {:.2} µs | {:.1} µs | p99 < 5 µs: {verdict} |",
            served as f64 * 100.0 / SAMPLES as f64,
            micros(at(&latencies, 50.0)),
            micros(p99),
            micros(latencies[latencies.len() - 1]),
        );
    }
}
