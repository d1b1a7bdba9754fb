//! What the benches share: a kube client for the running server, readiness polling, /proc readings of the
//! server process and latency arithmetic. A directory module, so cargo does not take it for a bench target.

// Each bench compiles this module and uses part of it.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use kspaces_tests::Server;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, BoxError>;

/// A kube client built from the server's admin kubeconfig, as a user would build one.
pub async fn client(server: &Server) -> Result<Client> {
    let kubeconfig = Kubeconfig::read_from(&server.kubeconfig)?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
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
