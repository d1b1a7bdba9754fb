//! The write path's CPU, in process (issues 16 and 19): writes through the whole registry (the kinds' strategies
//! and admission, managedFields, the limits, every observer) with no HTTP, over the in-memory store by default, so
//! that neither storage's commit nor HTTP is in the figure and a profile of this process shows the write path.
//!
//! Rows: a tenant user's ConfigMap create, the same user's update of one, and a tenant user's Workspace create
//! (the request's whole work: the Workspace, its logical cluster's namespaces, admin binding and LogicalCluster,
//! and the phase writes up to `Ready`).
//!
//! Run: `cargo bench -p kspaces-apiserver --bench writes` (a plain `main`, release build). `WRITES_ROUNDS` (default
//! 3) rounds of each row, interleaved; each row prints the wall time and the process's CPU time per write.
//! `WRITES_ONLY=configmaps` or `workspaces` runs those rows alone (to profile one). `WRITES_STORE=sled` runs them
//! over sled in a temporary directory (each write then waits for its commit: the CPU column is the figure).
//! `WRITES_CONCURRENCY` (default 1) Workspace creates run at once, as the server's clients send them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kspaces_apiserver::registry::{Part, Scope, WriteContext};
use kspaces_authz::UserInfo;
use kspaces_storage::sled::SledConfig;
use kspaces_storage::{SpaceName, Store, StoreConfig};
use futures::StreamExt;
use serde_json::{json, Value};

mod support;

use support::{core_with_t1, cpu};

const CONFIGMAPS: usize = 20_000;
const WORKSPACES: usize = 2_000;

fn main() {
    let rounds: usize = std::env::var("WRITES_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(3);
    let only = std::env::var("WRITES_ONLY").unwrap_or_default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    runtime.block_on(run(rounds, &only));
}

struct Timing {
    label: String,
    count: usize,
    wall: Duration,
    cpu: Duration,
}

impl Timing {
    fn print(&self) {
        let per = |d: Duration| d.as_secs_f64() * 1e6 / self.count as f64;
        println!("| {} | {} | {:.1} | {:.1} | {:.0} |", self.label, self.count, per(self.wall), per(self.cpu), self.count as f64 / self.wall.as_secs_f64());
    }
}

async fn timed<F: std::future::Future<Output = ()>>(label: String, count: usize, body: F) -> Timing {
    let (wall, used) = (Instant::now(), cpu());
    body.await;
    Timing { label, count, wall: wall.elapsed(), cpu: cpu().saturating_sub(used) }
}

async fn run(rounds: usize, only: &str) {
    let concurrency: usize = std::env::var("WRITES_CONCURRENCY").ok().and_then(|c| c.parse().ok()).unwrap_or(1);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = match std::env::var("WRITES_STORE").as_deref() {
        Ok("sled") => Store::open_sled(&SledConfig::new(dir.path().join("db")), StoreConfig::default()).unwrap_or_else(|e| panic!("{e}")),
        _ => Store::memory(StoreConfig::default()),
    };
    let core = core_with_t1(store).await;
    let row = |group: &str, kind: &str| core.resources.by_kind(group, kind).cloned().unwrap_or_else(|| panic!("no {kind}"));
    let t1 = SpaceName::new("t1").unwrap_or_else(|e| panic!("{e}"));
    let user = UserInfo { name: "admin".into(), uid: String::new(), groups: vec!["system:authenticated".into()], tenant: Some("t1".into()), cluster: None, extra: Default::default() };
    let caller = Arc::new(kspaces_apiserver::tenancy::caller(user, None));
    let write = WriteContext { caller: Some(caller), ..WriteContext::update("kubectl-create", "", false) };
    let configmaps = row("", "ConfigMap");
    let workspaces = row("tenancy.kcp.io", "Workspace");
    let in_default = Scope::one(t1.clone(), Some("default".into()));
    let in_t1 = Scope::one(t1.clone(), None);
    let configmap = |name: String, value: &str| -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "bench"}},
            "data": {"key": value, "other": "x".repeat(900)}})
    };

    println!("| write | count | wall µs per write | CPU µs per write | writes/s |");
    println!("|---|---|---|---|---|");
    for round in 0..rounds {
        if only != "workspaces" {
            timed(format!("ConfigMap create (round {})", round + 1), CONFIGMAPS, async {
                for i in 0..CONFIGMAPS {
                    core.registry.create(&configmaps, &in_default, configmap(format!("r{round}-{i}"), "a"), &write).await.unwrap_or_else(|e| panic!("{e}"));
                }
            }).await.print();
            timed(format!("ConfigMap update (round {})", round + 1), CONFIGMAPS, async {
                for i in 0..CONFIGMAPS {
                    let name = format!("r{round}-{i}");
                    core.registry.update(&configmaps, &in_default, &name, configmap(name.clone(), "b"), Part::Main, &write).await.unwrap_or_else(|e| panic!("{e}"));
                }
            }).await.print();
        }
        if only != "configmaps" {
            timed(format!("Workspace create, to Ready, {concurrency} at once (round {})", round + 1), WORKSPACES, async {
                let creates = (0..WORKSPACES).map(|i| {
                    let workspace = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": format!("w{round}-{i}")},
                        "spec": {"type": {"name": "universal", "path": "root"}}});
                    core.registry.create(&workspaces, &in_t1, workspace, &write)
                });
                let mut made = futures::stream::iter(creates).buffer_unordered(concurrency);
                while let Some(made) = made.next().await {
                    assert!(made.unwrap_or_else(|e| panic!("{e}")).get("metadata").is_some());
                }
            }).await.print();
        }
    }
}
