//! The fairness bench's two tenants (issue 22), shared by the fairness bench (against kspaces) and the floor bench
//! (against a server that does nothing else): tenant A floods with closed loops of GETs, tenant B runs an open loop
//! of 50 GET/s and 10 creates/s from a thread, runtime and connection of its own.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use kube::Api;
use kspaces_tests::kube_client;

use super::{closed_loops, configmap, env_usize, millis, percentile, Result};

pub const GETS_PER_SECOND: u64 = 50;
pub const CREATES_PER_SECOND: u64 = 10;

/// The table's header (its first column names the server's mode); [`Phases::row`] prints a line of it.
pub const TABLE_HEADER: &str = "| mode | B GET p50 / p99 alone (ms) | B GET p50 / p99 under flood (ms) | B create p50 / p99 alone (ms) | B create p50 / p99 under flood (ms) | B 429s / errors | A GET/s alone | A GET/s with B | A 429s |\n|---|---|---|---|---|---|---|---|---|";

/// What the phases measured on one server: B alone and under the flood, A's GETs per second alone and beside B,
/// and A's refusals.
pub struct Phases {
    pub alone: Light,
    pub loaded: Light,
    pub flood_alone: f64,
    pub flood_loaded: f64,
    pub flood_rejected: u64,
}

impl Phases {
    /// Warms A's connections, then: B alone, A alone, both at once. `flood` is A's API (its `seed` ConfigMap
    /// already created), `light` the kubeconfig B's client is built from.
    pub async fn run(flood: &Api<ConfigMap>, light: PathBuf, phase: Duration) -> Result<Phases> {
        let light = LightClient::start(light, phase);
        flood_phase(flood, Duration::from_secs(1)).await?;
        let alone = light.run("alone").await?;
        let (flood_alone, _) = flood_phase(flood, phase).await?;
        let (loaded, (flood_loaded, flood_rejected)) = tokio::try_join!(light.run("loaded"), flood_phase(flood, phase))?;
        light.stop().await?;
        Ok(Phases { alone, loaded, flood_alone, flood_loaded, flood_rejected })
    }

    /// A line of [`TABLE_HEADER`]'s table.
    pub fn row(mut self, mode: &str) -> String {
        format!("| {} | {} | {} | {} | {} | {} / {} | {:.0} | {:.0} | {} |", mode, Light::summary(&mut self.alone.gets), Light::summary(&mut self.loaded.gets),
            Light::summary(&mut self.alone.creates), Light::summary(&mut self.loaded.creates), self.alone.rejected + self.loaded.rejected,
            self.alone.failed + self.loaded.failed, self.flood_alone, self.flood_loaded, self.flood_rejected)
    }
}

/// Tenant B's open loop: latencies of its GETs and creates, and its refusals.
#[derive(Default)]
pub struct Light {
    pub gets: Vec<Duration>,
    pub creates: Vec<Duration>,
    pub rejected: u64,
    pub failed: u64,
}

impl Light {
    pub fn summary(samples: &mut [Duration]) -> String {
        samples.sort();
        format!("{:.1} / {:.1}", millis(percentile(samples, 50.0)), millis(percentile(samples, 99.0)))
    }
}

/// Tenant B's client: a thread with a runtime of its own, running a phase of B's open loop when asked.
pub struct LightClient {
    phases: tokio::sync::mpsc::UnboundedSender<(String, tokio::sync::oneshot::Sender<Result<Light>>)>,
    thread: std::thread::JoinHandle<Result<()>>,
}

impl LightClient {
    /// Starts B's thread: its client (from `kubeconfig`), its `seed` ConfigMap, then a phase per `run`.
    pub fn start(kubeconfig: PathBuf, phase: Duration) -> LightClient {
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

    pub async fn run(&self, label: &str) -> Result<Light> {
        let (answer, figures) = tokio::sync::oneshot::channel();
        self.phases.send((label.to_owned(), answer)).map_err(|_| "tenant B's client thread ended")?;
        figures.await.map_err(|_| "tenant B's client thread ended")?
    }

    pub async fn stop(self) -> Result<()> {
        drop(self.phases);
        tokio::task::spawn_blocking(move || self.thread.join()).await?.map_err(|_| "tenant B's client thread panicked")?
    }
}

/// How many closed loops (and connections) tenant A floods with: `FAIRNESS_FLOOD_CONNECTIONS`, 64 unless set.
pub fn flood_connections() -> Result<usize> {
    env_usize("FAIRNESS_FLOOD_CONNECTIONS", 64)
}

/// Tenant A: 64 closed loops of GET for `phase`; its GETs per second and how many were refused (429).
pub async fn flood_phase(api: &Api<ConfigMap>, phase: Duration) -> Result<(f64, u64)> {
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
