//! OIDC benchmark: ConfigMap GETs/s with an OIDC ID token (from the real OpenID provider of tests/oidc, through
//! `--oidc-*`) against the same with a static token, side by side, on one server, N concurrent kube-rs requests.
//! Issue 49's target: within 10 % (verified tokens are cached per token, as kube caches them).
//!
//! Run: `cargo bench -p kspaces-tests --bench oidc` (the harness builds `target/release/kspaces`, or set
//! `KSPACES_BIN`); needs `npm ci --prefix tests/oidc`.

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kspaces_tests::oidc::Provider;
use kspaces_tests::{grant, kube_client, token_file, token_kubeconfig, Server};

mod support;

use support::{closed_loops, wait_ready, CpuClock, Result};

const PHASE: Duration = Duration::from_secs(4);
const WARM_UP: Duration = Duration::from_millis(500);
const CONCURRENCY: usize = 16;
const NAMES: usize = 10;

fn main() -> Result<()> {
    support::block_on(run())
}

async fn run() -> Result<()> {
    kspaces_tests::kspaces_binary();
    let provider = Provider::start();
    let tokens = token_file(&["static-token,static-user,1,,,acme"]);
    let server = Server::start_with(&["--token-auth-file", tokens.path().to_str().ok_or("path")?, "--default-tenant", "acme",
        "--oidc-issuer-url", &provider.issuer, "--oidc-client-id", "kspaces", "--oidc-ca-file", provider.ca(), "--oidc-username-prefix", "oidc:"]);
    let system = server.kubectl();
    for user in ["static-user", "oidc:alice"] {
        grant(&system, "acme", "default", "view", user);
    }
    for i in 0..NAMES {
        let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("get-{i}")}});
        system.ok_with_stdin(&["create", "--raw", "/api/v1/tenants/acme/namespaces/default/configmaps", "-f", "-"], &body.to_string());
    }
    let oidc_token = provider.id_token("kspaces", "alice");
    println!("| credentials | ConfigMap GETs/s, N = {CONCURRENCY} | p99 | server CPU (cores) |");
    println!("|---|---|---|---|");
    let mut rates = Vec::new();
    for (label, token) in [("static token", "static-token"), ("OIDC ID token", oidc_token.as_str())] {
        let (rate, p99, cores) = gets(&server, &token_kubeconfig(&server, token)).await?;
        println!("| {label} | {rate:.0}/s | {:.2} ms | {cores:.2} |", p99.as_secs_f64() * 1000.0);
        rates.push(rate);
    }
    let ratio = rates[1] / rates[0];
    println!("\nOIDC / static: {:.1} % (target: ≥ 90 %: {})", ratio * 100.0, if ratio >= 0.9 { "met" } else { "**not met**" });
    Ok(())
}

/// GETs/s, the 99th percentile latency and the server's cores used, with the credentials of `kubeconfig`.
async fn gets(server: &Server, kubeconfig: &Path) -> Result<(f64, Duration, f64)> {
    let client = kube_client(kubeconfig).await?;
    wait_ready(&client, Instant::now() + Duration::from_secs(10)).await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let get = move |worker: usize, i: u64| {
        let api = api.clone();
        async move {
            api.get(&format!("get-{}", (worker + i as usize) % NAMES)).await?;
            Ok(())
        }
    };
    closed_loops(CONCURRENCY, WARM_UP, get.clone()).await?;
    let clock = CpuClock::start(server.pid())?;
    let mut loops = closed_loops(CONCURRENCY, PHASE, get).await?;
    let cores = clock.cores()?;
    let rate = loops.per_second();
    loops.latencies.sort();
    Ok((rate, support::percentile(&loops.latencies, 99.0), cores.server))
}
