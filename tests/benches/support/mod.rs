//! What the benches share: starting the server, a kube client for it, readiness polling, closed-loop load,
//! /proc readings of the server process and latency arithmetic. A directory module, so cargo does not take it for a bench target.

// Each bench compiles this module and uses part of it.
#![allow(dead_code)]

use std::future::Future;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, WatchEvent};
use kube::{Client, ResourceExt};
use kspaces_tests::{kube_client, Server};

pub mod light;
pub mod watch;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, BoxError>;

/// A kube client built from the server's admin kubeconfig, as a user would build one.
pub async fn client(server: &Server) -> Result<Client> {
    Ok(kube_client(&server.kubeconfig).await?)
}

/// Runs a bench's body on the runtime every bench uses (two worker threads, as many as the machine's cores).
pub fn block_on<T>(body: impl Future<Output = Result<T>>) -> Result<T> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?.block_on(body)
}

/// Builds the release binary if it is not there, starts the server on a fresh data dir and waits until it is
/// ready; returns it with a client of its admin.
pub async fn start() -> Result<(Server, Client)> {
    kspaces_tests::kspaces_binary();
    let server = Server::start();
    let client = client(&server).await?;
    wait_ready(&client, Instant::now() + Duration::from_secs(10)).await?;
    Ok((server, client))
}

/// What one phase of closed loops did: every request's latency, in completion order per worker, and the
/// phase's wall time.
pub struct Loops {
    pub latencies: Vec<Duration>,
    pub elapsed: Duration,
}

impl Loops {
    pub fn per_second(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }
}

/// Runs `concurrency` closed loops of `request(worker, i)` (`i` counts the worker's own requests) until
/// `duration` has passed; a failed request ends the phase with its error.
pub async fn closed_loops<F, Fut>(concurrency: usize, duration: Duration, request: F) -> Result<Loops>
where
    F: Fn(usize, u64) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<()>> + Send,
{
    let began = Instant::now();
    let deadline = began + duration;
    let workers: Vec<_> = (0..concurrency)
        .map(|worker| {
            let request = request.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let sent = Instant::now();
                    request(worker, latencies.len() as u64).await?;
                    latencies.push(sent.elapsed());
                }
                Ok::<_, BoxError>(latencies)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await??);
    }
    Ok(Loops { latencies, elapsed: began.elapsed() })
}

/// Polls `GET /readyz` every millisecond until it answers 200.
pub async fn wait_ready(client: &Client, deadline: Instant) -> Result<()> {
    loop {
        let request = http::Request::get("/readyz").body(Vec::new())?;
        match client.request_text(request).await {
            Ok(_) => return Ok(()),
            Err(error) if Instant::now() > deadline => return Err(format!("/readyz never answered: {error}").into()),
            Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
        }
    }
}

/// CPU time (user + system) of a process in seconds, from `/proc/<pid>/stat` (clock ticks of 1/100 s).
pub fn cpu_seconds(pid: u32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_name = stat.rsplit_once(") ").ok_or("malformed /proc/pid/stat")?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>()? + fields[12].parse::<u64>()?;
    Ok(ticks as f64 / 100.0)
}

/// CPU use of the server and of this benchmark process over one phase, in cores (CPU seconds per second).
#[derive(Clone, Copy)]
pub struct Cores {
    pub server: f64,
    pub client: f64,
}

/// CPU-time readings taken when a phase starts; [`CpuClock::cores`] turns them into [`Cores`].
pub struct CpuClock {
    server_pid: u32,
    began: Instant,
    server: f64,
    client: f64,
}

impl CpuClock {
    /// Starts the clock for the server process `server_pid` and this one.
    pub fn start(server_pid: u32) -> Result<CpuClock> {
        Ok(CpuClock { server_pid, began: Instant::now(), server: cpu_seconds(server_pid)?, client: cpu_seconds(std::process::id())? })
    }

    pub fn cores(&self) -> Result<Cores> {
        let wall = self.began.elapsed().as_secs_f64();
        Ok(Cores {
            server: (cpu_seconds(self.server_pid)? - self.server) / wall,
            client: (cpu_seconds(std::process::id())? - self.client) / wall,
        })
    }
}

/// A `/proc/<pid>/status` field in KiB, e.g. `VmRSS:` or `VmHWM:`.
pub fn status_kib(pid: u32, field: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with(field)).ok_or_else(|| format!("no {field} in /proc/{pid}/status"))?;
    Ok(line.split_whitespace().nth(1).ok_or("malformed /proc/pid/status")?.parse()?)
}

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((p / 100.0) * (sorted.len().saturating_sub(1)) as f64).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}

pub fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// A count from the environment (`_` separators allowed), or `default` when unset.
pub fn env_usize(name: &str, default: usize) -> Result<usize> {
    match std::env::var(name) {
        Ok(value) => Ok(value.trim().replace('_', "").parse().map_err(|e| format!("{name}={value:?}: {e}"))?),
        Err(_) => Ok(default),
    }
}

/// (allocated bytes as `du` counts them, apparent bytes) of every file under `dir`.
pub fn dir_size(dir: &std::path::Path) -> Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let (mut allocated, mut apparent) = (0, 0);
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let metadata = entry.metadata()?;
        if metadata.is_dir() {
            let (a, b) = dir_size(&entry.path())?;
            allocated += a;
            apparent += b;
        } else {
            allocated += metadata.blocks() * 512;
            apparent += metadata.len();
        }
    }
    Ok((allocated, apparent))
}

pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Collects `(create index, arrival)` for every ADDED event of ConfigMaps named `w-<index>` until `count` arrived
/// (each within 30 s of the last).
pub async fn receive_added<S>(mut stream: std::pin::Pin<Box<S>>, count: usize) -> Result<Vec<(usize, Instant)>>
where
    S: futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Send,
{
    let mut arrivals = Vec::with_capacity(count);
    while arrivals.len() < count {
        let event = tokio::time::timeout(Duration::from_secs(30), stream.try_next()).await??;
        match event.ok_or("a watch ended early")? {
            // The bench's own ConfigMaps (`w-<index>`); the namespace's `kube-root-ca.crt` is not one of them.
            WatchEvent::Added(cm) => {
                if let Some(index) = cm.name_any().strip_prefix("w-") {
                    arrivals.push((index.parse()?, Instant::now()));
                }
            }
            WatchEvent::Error(status) => return Err(format!("watch error: {status:?}").into()),
            _ => {}
        }
    }
    Ok(arrivals)
}

/// A small ConfigMap named `name`.
pub fn configmap(name: String) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta { name: Some(name), ..ObjectMeta::default() },
        data: Some([("key".to_owned(), "a small value".to_owned())].into()),
        ..ConfigMap::default()
    }
}
