//! Fairness benchmark (issue 22): tenant A floods with 64 closed loops of ConfigMap GETs (kube-rs, 64 kept-alive
//! HTTP/1.1 connections) while tenant B runs an open loop of 50 GET/s and 10 creates/s. B is another client, as it
//! would be on another machine: its own thread, runtime and connection, so that its latencies are the server's and
//! not the time its requests waited behind A's 64 loops in one client process. Reported: B's latencies
//! alone and under the flood, A's throughput (alone and under B's load), and the 429s each got, with API Priority
//! and Fairness on and, for the "before" figures, off (`--enable-priority-and-fairness=false`). Every phase is
//! bounded in time.
//!
//! Run: `cargo bench -p kspaces-tests --bench fairness` (the harness builds `target/release/kspaces`, or set
//! `KSPACES_BIN`); `FAIRNESS_PHASE_SECONDS` sets each phase's length (default 8); `FAIRNESS_FLAGS` (space
//! separated `kspaces serve` flags, e.g. `--max-requests-inflight=10 --max-mutating-requests-inflight=5`) adds a
//! third run with the dispatcher on and those flags; `FAIRNESS_FLOOD_CONNECTIONS` sets A's closed loops (default 64).

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use kube::Api;
use kspaces_tests::{create_tenant, kube_client, token_file, token_kubeconfig, Server};

mod support;

use support::light::{flood_connections, Phases, CREATES_PER_SECOND, GETS_PER_SECOND, TABLE_HEADER};
use support::{block_on, configmap, env_usize, wait_ready, Result};

fn main() -> Result<()> {
    let phase = Duration::from_secs(env_usize("FAIRNESS_PHASE_SECONDS", 8)? as u64);
    let began = Instant::now();
    let mut rows = Vec::new();
    // 40 + 20 seats, not the default 400 + 200: at 64 connections the flood then queues (global-default: 5 seats).
    let on = ["--max-requests-inflight", "40", "--max-mutating-requests-inflight", "20"];
    for (mode, flags) in [("APF on (40 + 20 seats)", &on[..]), ("APF off", &["--enable-priority-and-fairness=false"][..])] {
        rows.push(block_on(run(mode, flags, phase))?);
    }
    let extra = std::env::var("FAIRNESS_FLAGS").unwrap_or_default();
    if !extra.trim().is_empty() {
        let flags: Vec<&str> = extra.split_whitespace().collect();
        let mode: &'static str = Box::leak(format!("APF on, {extra}").into_boxed_str());
        rows.push(block_on(run(mode, &flags, phase))?);
    }
    println!("\nphase {} s; B: {GETS_PER_SECOND} GET/s + {CREATES_PER_SECOND} creates/s (open loop); A: {} closed loops of GET\n", phase.as_secs(), flood_connections()?);
    println!("{TABLE_HEADER}");
    for (mode, phases) in rows {
        println!("{}", phases.row(mode));
    }
    println!("\ntotal bench time {:.1} s", began.elapsed().as_secs_f64());
    Ok(())
}

/// One server with `flags`: the phases of `support::light`.
async fn run(mode: &'static str, flags: &[&str], phase: Duration) -> Result<(&'static str, Phases)> {
    kspaces_tests::kspaces_binary();
    let tokens = token_file(&["a-token,admin,u-a,\"tenant-admins\",,t-a", "b-token,admin,u-b,\"tenant-admins\",,t-b"]);
    let mut args = vec!["--token-auth-file", tokens.path().to_str().ok_or("a utf-8 temp path")?];
    args.extend_from_slice(flags);
    let server = Server::start_with(&args);
    let admin = kube_client(&server.kubeconfig).await?;
    wait_ready(&admin, Instant::now() + Duration::from_secs(10)).await?;
    create_tenant(&server.kubectl(), "t-a");
    create_tenant(&server.kubectl(), "t-b");
    let flood: Api<ConfigMap> = Api::default_namespaced(kube_client(&token_kubeconfig(&server, "a-token")).await?);
    flood.create(&PostParams::default(), &configmap("seed".into())).await?;
    let phases = Phases::run(&flood, token_kubeconfig(&server, "b-token"), phase).await?;
    drop(server);
    Ok((mode, phases))
}

