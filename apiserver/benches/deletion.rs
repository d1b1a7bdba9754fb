//! A tree of workspaces deleted in process (issue 16): the workspace controller alone, with no HTTP and no client
//! beside it, so that the CPU a deletion takes per workspace can be compared between builds without the noise of
//! the end-to-end bench (`tests/benches/workspaces.rs`), and a profile of this process shows the deletion.
//!
//! A tenant user makes a tree (ten children per workspace, `DELETION_TREE` workspaces in all, default 1,110) through
//! the registry, then deletes its top; the controller runs on the server's controller threads as in the server.
//! Printed per round: the wall time until the top's GET answers 404, and the process's CPU time per workspace.
//!
//! Run: `cargo bench -p kspaces-apiserver --bench deletion` (a plain `main`, release build). `DELETION_ROUNDS`
//! (default 3) rounds, each over a new tree, over sled in a temporary directory as the server runs by default (each
//! write waits for its commit). `DELETION_STORE=memory` uses the in-memory store instead: it is the reference
//! model, not a fast one, and its scans slow down with the history each round leaves (nothing compacts it here).

use std::sync::Arc;
use std::time::{Duration, Instant};

use kspaces_apiserver::controllers::workspace::WorkspaceController;
use kspaces_apiserver::registry::{DeleteOptions, Scope, WriteContext};
use kspaces_authz::UserInfo;
use kspaces_storage::sled::SledConfig;
use kspaces_storage::{SpaceName, Store, StoreConfig};
use futures::StreamExt;
use serde_json::json;

mod support;

use support::{core_with_t1, cpu};

const FANOUT: usize = 10;

fn main() {
    let rounds: usize = std::env::var("DELETION_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(3);
    let size: usize = std::env::var("DELETION_TREE").ok().and_then(|r| r.parse().ok()).unwrap_or(1_110);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    runtime.block_on(tokio::task::LocalSet::new().run_until(run(rounds, size)));
}

async fn run(rounds: usize, size: usize) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = match std::env::var("DELETION_STORE").as_deref() {
        Ok("memory") => Store::memory(StoreConfig::default()),
        _ => Store::open_sled(&SledConfig::new(dir.path().join("db")), StoreConfig::default()).unwrap_or_else(|e| panic!("{e}")),
    };
    let core = core_with_t1(store).await;
    let row = |group: &str, kind: &str| core.resources.by_kind(group, kind).cloned().unwrap_or_else(|| panic!("no {kind}"));
    let controller = WorkspaceController {
        registry: core.registry.clone(),
        resources: core.resources.clone(),
        resolver: core.resolver.clone(),
        tree: core.tree.clone(),
        queue: core.pending_workspaces.clone(),
    };
    tokio::task::spawn_local(controller.run(Duration::from_millis(200)));

    let t1 = SpaceName::new("t1").unwrap_or_else(|e| panic!("{e}"));
    let user = UserInfo { name: "admin".into(), uid: String::new(), groups: vec!["system:authenticated".into()], tenant: Some("t1".into()), cluster: None, extra: Default::default() };
    let caller = Arc::new(kspaces_apiserver::tenancy::caller(user, None));
    let write = WriteContext { caller: Some(caller.clone()), ..WriteContext::update("kubectl-create", "", false) };
    let workspaces = row("tenancy.kcp.io", "Workspace");
    let in_t1 = Scope::one(t1.clone(), None);

    println!("| round | workspaces | made in | deleted in (DELETE → the top's GET answers 404) | CPU per workspace deleted |");
    println!("|---|---|---|---|---|");
    for round in 1..=rounds {
        let top = format!("tree-{round}");
        let began = Instant::now();
        // Level by level: each level's workspaces are made 48 at a time, in their parents' logical clusters.
        let mut level: Vec<(SpaceName, String)> = vec![(t1.clone(), top.clone())];
        // Made, and planned (made or in the next level).
        let (mut made, mut planned) = (0, 1);
        while !level.is_empty() {
            let registry = &core.registry;
            let creates = level.iter().map(|(space, name)| {
                let (workspaces, write) = (&workspaces, &write);
                let workspace = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name},
                    "spec": {"type": {"name": "universal", "path": "root"}}});
                async move { registry.create(workspaces, &Scope::one(space.clone(), None), workspace, write).await }
            });
            let mut next = Vec::new();
            let mut created = futures::stream::iter(creates).buffer_unordered(48);
            while let Some(workspace) = created.next().await {
                let workspace = workspace.unwrap_or_else(|e| panic!("{e}"));
                let cluster = workspace.pointer("/spec/cluster").and_then(|c| c.as_str()).unwrap_or_else(|| panic!("no spec.cluster: {workspace}"));
                let cluster = SpaceName::new(cluster).unwrap_or_else(|e| panic!("{e}"));
                made += 1;
                for child in 0..FANOUT {
                    if planned < size {
                        next.push((cluster.clone(), format!("w-{child}")));
                        planned += 1;
                    }
                }
            }
            drop(created);
            level = next;
        }
        let made_in = began.elapsed();

        let (began, used) = (Instant::now(), cpu());
        core.registry.delete(&workspaces, &in_t1, &top, &DeleteOptions::default(), Some(&caller)).await.unwrap_or_else(|e| panic!("{e}"));
        loop {
            match core.registry.get(&workspaces, &in_t1, &top).await {
                Err(err) if err.code == 404 => break,
                Err(err) => panic!("{err}"),
                Ok(_) => tokio::time::sleep(Duration::from_millis(1)).await,
            }
            assert!(began.elapsed() < Duration::from_secs(600), "the tree was not deleted in 10 minutes");
        }
        let (deleted_in, used) = (began.elapsed(), cpu().saturating_sub(used));
        println!("| {round} | {made} | {:.2} s | {:.2} s | {:.0} µs |", made_in.as_secs_f64(), deleted_in.as_secs_f64(),
            used.as_secs_f64() * 1e6 / made as f64);
    }
}
