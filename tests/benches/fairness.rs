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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use kube::Api;
use kspaces_tests::{create_tenant, kube_client, token_file, token_kubeconfig, Server};

mod support;

use support::{block_on, closed_loops, configmap, env_usize, millis, percentile, wait_ready, Result};

const GETS_PER_SECOND: u64 = 50;
const CREATES_PER_SECOND: u64 = 10;

/// What one server run measured.
struct Figures {
    mode: &'static str,
    alone: Light,
    loaded: Light,
    flood_alone: f64,
    flood_loaded: f64,
    flood_rejected: u64,
}

/// Tenant B's open loop: latencies of its GETs and creates, and its refusals.
#[derive(Default)]
struct Light {
    gets: Vec<Duration>,
    creates: Vec<Duration>,
    rejected: u64,
    failed: u64,
}

impl Light {
    fn summary(samples: &mut [Duration]) -> String {
        samples.sort();
        format!("{:.1} / {:.1}", millis(percentile(samples, 50.0)), millis(percentile(samples, 99.0)))
    }
}

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
    println!("| mode | B GET p50 / p99 alone (ms) | B GET p50 / p99 under flood (ms) | B create p50 / p99 alone (ms) | B create p50 / p99 under flood (ms) | B 429s / errors | A GET/s alone | A GET/s with B | A 429s |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for mut f in rows {
        println!("| {} | {} | {} | {} | {} | {} / {} | {:.0} | {:.0} | {} |", f.mode, Light::summary(&mut f.alone.gets), Light::summary(&mut f.loaded.gets),
            Light::summary(&mut f.alone.creates), Light::summary(&mut f.loaded.creates), f.alone.rejected + f.loaded.rejected,
            f.alone.failed + f.loaded.failed, f.flood_alone, f.flood_loaded, f.flood_rejected);
    }
    println!("\ntotal bench time {:.1} s", began.elapsed().as_secs_f64());
    Ok(())
}

async fn run(mode: &'static str, flags: &[&str], phase: Duration) -> Result<Figures> {
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
    let light = LightClient::start(token_kubeconfig(&server, "b-token"), phase);
    // Warm A's connections and the server's caches.
    flood_phase(&flood, Duration::from_secs(1)).await?;
    let alone = light.run("alone").await?;
    let (flood_alone, _) = flood_phase(&flood, phase).await?;
    let (loaded, (flood_loaded, flood_rejected)) = tokio::try_join!(light.run("loaded"), flood_phase(&flood, phase))?;
    light.stop().await?;
    drop(server);
    Ok(Figures { mode, alone, loaded, flood_alone, flood_loaded, flood_rejected })
}

/// Tenant B's client: a thread with a runtime of its own, running a phase of B's open loop when asked.
struct LightClient {
    phases: tokio::sync::mpsc::UnboundedSender<(String, tokio::sync::oneshot::Sender<Result<Light>>)>,
    thread: std::thread::JoinHandle<Result<()>>,
}

impl LightClient {
    /// Starts B's thread: its client (from `kubeconfig`), its `seed` ConfigMap, then a phase per `run`.
    fn start(kubeconfig: std::path::PathBuf, phase: Duration) -> LightClient {
        let (phases, mut asked) = tokio::sync::mpsc::unbounded_channel::<(String, tokio::sync::oneshot::Sender<Result<Light>>)>();
        let thread = std::thread::spawn(move || -> Result<()> {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(async move {
                let api: Api<ConfigMap> = Api::default_namespaced(kube_client(&kubeconfig).await?);
                api.create(&PostParams::default(), &configmap("seed".into())).await?;
                while let Some((label, answer)) = asked.recv().await {
                    drop(answer.send(light_phase(&api, &label, phase).await));
                }
                Ok(())
            })
        });
        LightClient { phases, thread }
    }

    async fn run(&self, label: &str) -> Result<Light> {
        let (answer, figures) = tokio::sync::oneshot::channel();
        self.phases.send((label.to_owned(), answer)).map_err(|_| "tenant B's client thread ended")?;
        figures.await.map_err(|_| "tenant B's client thread ended")?
    }

    async fn stop(self) -> Result<()> {
        drop(self.phases);
        tokio::task::spawn_blocking(move || self.thread.join()).await?.map_err(|_| "tenant B's client thread panicked")?
    }
}

/// How many closed loops (and connections) tenant A floods with: `FAIRNESS_FLOOD_CONNECTIONS`, 64 unless set.
fn flood_connections() -> Result<usize> {
    env_usize("FAIRNESS_FLOOD_CONNECTIONS", 64)
}

/// Tenant A: 64 closed loops of GET for `phase`; its GETs per second and how many were refused (429).
async fn flood_phase(api: &Api<ConfigMap>, phase: Duration) -> Result<(f64, u64)> {
    let rejected = Arc::new(AtomicU64::new(0));
    let loops = {
        let (api, rejected) = (api.clone(), rejected.clone());
        closed_loops(flood_connections()?, phase, move |_, _| {
            let (api, rejected) = (api.clone(), rejected.clone());
            async move {
                match api.get("seed").await {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(status)) if status.code == 429 => {
                        rejected.fetch_add(1, Ordering::Relaxed);
                        Ok(())
                    }
                    Err(err) => Err(err.into()),
                }
            }
        })
        .await?
    };
    let rejected = rejected.load(Ordering::Relaxed);
    Ok(((loops.latencies.len() as u64 - rejected) as f64 / loops.elapsed.as_secs_f64(), rejected))
}

/// Tenant B: 50 GET/s and 10 creates/s for `phase`, each request sent on schedule whatever the earlier ones do.
async fn light_phase(api: &Api<ConfigMap>, label: &str, phase: Duration) -> Result<Light> {
    let began = tokio::time::Instant::now();
    let per_second = GETS_PER_SECOND + CREATES_PER_SECOND;
    let mut ticks = tokio::time::interval(Duration::from_micros(1_000_000 / per_second));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut sent = Vec::new();
    let mut n = 0u64;
    while began.elapsed() < phase {
        ticks.tick().await;
        let api = api.clone();
        let create = n.is_multiple_of(per_second / CREATES_PER_SECOND);
        let name = format!("{label}-{n}");
        sent.push(tokio::spawn(async move {
            let started = Instant::now();
            let outcome = match create {
                true => api.create(&PostParams::default(), &configmap(name)).await.map(drop),
                false => api.get("seed").await.map(drop),
            };
            (create, started.elapsed(), outcome)
        }));
        n += 1;
    }
    let mut light = Light::default();
    for request in sent {
        let (create, latency, outcome) = request.await?;
        match outcome {
            Ok(()) if create => light.creates.push(latency),
            Ok(()) => light.gets.push(latency),
            Err(kube::Error::Api(status)) if status.code == 429 => light.rejected += 1,
            Err(_) => light.failed += 1,
        }
    }
    Ok(light)
}
