//! Workspace benchmark: how fast nested workspaces are made, what an empty one costs in memory, and how fast a tree
//! of them is deleted while the API keeps answering. Starts the release `kspaces` binary, makes tenants `t-0` (for
//! the flat workspaces), `t-1` (for the tree) and `t-2` (holding the unrelated ConfigMap the deletion probe reads),
//! and acts as each tenant's `admin` (a client certificate, judged by the tenant's RBAC), as a tenant's users do.
//!
//! 1. Flat: `w-0`, `w-1`, … under `root:t-0` (`POST /clusters/root:t-0/apis/tenancy.kcp.io/v1alpha1/workspaces`,
//!    `CONCURRENCY` closed loops). A workspace counts once it is `Ready`: the create, then GETs of it until
//!    `status.phase` is `Ready` (none is needed when the create's answer already says so). At each checkpoint the
//!    server idles for `IDLE`, then its RSS (`VmRSS`, `/proc`) and data dir are read.
//! 2. Tree: a workspace `tree` under `root:t-1`, then level by level `FANOUT` children per workspace (children
//!    spread round-robin over the level above) until the tree holds `KSPACES_BENCH_TREE` workspaces.
//! 3. Deletion: `DELETE` of `tree`, timed until a GET of it answers 404, while `PROBES` loops GET the ConfigMap in
//!    `t-2` (each pausing `PROBE_PAUSE` between GETs), from `BASELINE` before the delete until the tree is gone.
//!
//! Run: `cargo bench -p kspaces-tests --bench workspaces` (the harness builds `target/release/kspaces`, or set
//! `KSPACES_BIN`). `KSPACES_BENCH_WORKSPACES` sets the flat count (default 100,000), `KSPACES_BENCH_TREE` the tree's
//! (default 10,000; 0 skips the tree and its deletion); `KSPACES_BENCH_DEADLINE_SECS` (default 1,800) bounds the run.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Client;
use kspaces_tests::{certificate_kubeconfig, kube_client, Server};
use serde_json::Value;

mod support;

use support::{cpu_seconds, dir_size, env_usize, mib, millis, percentile, start, status_kib, BoxError, Result};

const CONCURRENCY: usize = 48;
const IDLE: Duration = Duration::from_secs(5);
const CHECKPOINTS: [usize; 4] = [1_000, 10_000, 50_000, 100_000];
const FANOUT: usize = 10;
/// Attempts per create before the bench gives up (a 409 after a retry counts as created).
const ATTEMPTS: usize = 3;
/// How long one workspace may take to become `Ready` after its create was answered.
const READY_WITHIN: Duration = Duration::from_secs(30);
const PROBES: usize = 2;
const PROBE_PAUSE: Duration = Duration::from_millis(1);
const BASELINE: Duration = Duration::from_secs(5);
const TARGET_PER_SECOND: f64 = 1_000.0;
const TARGET_KIB: f64 = 16.0;
const WORKSPACES_API: &str = "apis/tenancy.kcp.io/v1alpha1/workspaces";

/// A workspace to make: the path of its parent and its name there.
struct Workspace {
    parent: String,
    name: String,
}

impl Workspace {
    fn path(&self) -> String {
        format!("{}:{}", self.parent, self.name)
    }

    fn url(&self) -> String {
        format!("/clusters/{}/{WORKSPACES_API}/{}", self.parent, self.name)
    }
}

/// Memory and disk at one checkpoint.
struct Sample {
    workspaces: usize,
    rss_kib: u64,
    hwm_kib: u64,
    disk_bytes: u64,
}

/// One run of creates (a segment of the flat workspaces, or a level of the tree).
struct Segment {
    workspaces: usize,
    elapsed: Duration,
    /// Create sent → seen `Ready`, per workspace.
    latencies: Vec<Duration>,
    server_cpu: f64,
    client_cpu: f64,
}

impl Segment {
    fn per_second(&self) -> f64 {
        self.workspaces as f64 / self.elapsed.as_secs_f64()
    }

    fn latency_summary(&mut self) -> String {
        self.latencies.sort();
        let at = |p| millis(percentile(&self.latencies, p));
        format!("{:.1} / {:.1} / {:.1} ms", at(50.0), at(99.0), millis(self.latencies.last().copied().unwrap_or_default()))
    }
}

/// What the creates met on the way: retries, and how `Ready` was seen.
#[derive(Default)]
struct Counters {
    retried: AtomicUsize,
    ready_in_answer: AtomicUsize,
    ready_gets: AtomicUsize,
}

fn main() -> Result<()> {
    let flat = env_usize("KSPACES_BENCH_WORKSPACES", 100_000)?;
    let tree = env_usize("KSPACES_BENCH_TREE", 10_000)?;
    let deadline_secs = env_usize("KSPACES_BENCH_DEADLINE_SECS", 1_800)?;
    let began = Instant::now();
    let deadline = began + Duration::from_secs(deadline_secs as u64);
    let result = support::block_on(run(flat, tree, deadline));
    println!("\ntotal bench time {:.1} s", began.elapsed().as_secs_f64());
    result
}

async fn run(flat: usize, tree: usize, deadline: Instant) -> Result<()> {
    let (server, admin) = start().await?;
    for tenant in ["t-0", "t-1", "t-2"] {
        let body = format!(r#"{{"apiVersion":"v1","kind":"Tenant","metadata":{{"name":"{tenant}"}}}}"#);
        admin.request_text(post("/api/v1/tenants", body)?).await?;
    }
    let (flat_client, tree_client, probe_client) = (tenant_admin(&server, "t-0").await?, tenant_admin(&server, "t-1").await?, tenant_admin(&server, "t-2").await?);
    let probe = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe"},"data":{"key":"a small value"}}"#;
    probe_client.request_text(post("/api/v1/namespaces/default/configmaps", probe.to_owned())?).await?;
    tokio::time::sleep(IDLE).await;
    let base = sample(&server, 0)?;
    println!("3 tenants made: RSS {:.1} MiB, data dir {:.1} MiB", mib(base.rss_kib * 1024), mib(base.disk_bytes));

    let counters = Arc::new(Counters::default());
    if flat > 0 {
        create_flat(&server, &flat_client, flat, base, deadline, &counters).await?;
    }
    if tree > 0 {
        let top = create_tree(&server, &tree_client, tree, deadline, &counters).await?;
        delete_tree(&server, &tree_client, &probe_client, &top, tree, deadline).await?;
    }
    println!(
        "\ncreates retried: {}; Ready already in the create's answer: {}; GETs until Ready: {}",
        counters.retried.load(Ordering::Relaxed),
        counters.ready_in_answer.load(Ordering::Relaxed),
        counters.ready_gets.load(Ordering::Relaxed)
    );
    Ok(())
}

/// A client of tenant `tenant`'s `admin` user (a client certificate the server's CA signed).
async fn tenant_admin(server: &Server, tenant: &str) -> Result<Client> {
    Ok(kube_client(&certificate_kubeconfig(server, tenant, "admin", &[])).await?)
}

fn post(path: &str, body: String) -> Result<http::Request<Vec<u8>>> {
    Ok(http::Request::post(path).header(http::header::CONTENT_TYPE, "application/json").body(body.into_bytes())?)
}

fn get(path: &str) -> Result<http::Request<Vec<u8>>> {
    Ok(http::Request::get(path).body(Vec::new())?)
}

fn is_ready(answer: &str) -> bool {
    serde_json::from_str::<Value>(answer).is_ok_and(|w| w.pointer("/status/phase").and_then(Value::as_str) == Some("Ready"))
}

/// Creates one workspace (retrying twice) and waits until it is `Ready`.
async fn create_ready(client: &Client, workspace: &Workspace, counters: &Counters) -> Result<()> {
    let body = format!(
        r#"{{"apiVersion":"tenancy.kcp.io/v1alpha1","kind":"Workspace","metadata":{{"name":"{}"}},"spec":{{"type":{{"name":"universal","path":"root"}}}}}}"#,
        workspace.name
    );
    let collection = format!("/clusters/{}/{WORKSPACES_API}", workspace.parent);
    for attempt in 1..=ATTEMPTS {
        match client.request_text(post(&collection, body.clone())?).await {
            Ok(answer) if is_ready(&answer) => {
                counters.ready_in_answer.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            Ok(_) => break,
            Err(kube::Error::Api(status)) if attempt > 1 && status.code == 409 => break,
            Err(error) if attempt == ATTEMPTS => return Err(format!("creating {} failed {ATTEMPTS} times, last: {error}", workspace.path()).into()),
            Err(_) => {
                counters.retried.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    wait_ready(client, workspace, counters).await
}

/// GETs the workspace until it is `Ready` (the first GET at once, then every 2 ms).
async fn wait_ready(client: &Client, workspace: &Workspace, counters: &Counters) -> Result<()> {
    let limit = Instant::now() + READY_WITHIN;
    loop {
        counters.ready_gets.fetch_add(1, Ordering::Relaxed);
        if is_ready(&client.request_text(get(&workspace.url())?).await?) {
            return Ok(());
        }
        if Instant::now() > limit {
            return Err(format!("{} was not Ready {} s after its create", workspace.path(), READY_WITHIN.as_secs()).into());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Makes every workspace of `workspaces` with `CONCURRENCY` closed loops; fails when `deadline` passes.
async fn create_all(server: &Server, client: &Client, workspaces: Arc<Vec<Workspace>>, deadline: Instant, counters: &Arc<Counters>) -> Result<Segment> {
    let next = Arc::new(AtomicUsize::new(0));
    let (began, server_cpu0, client_cpu0) = (Instant::now(), cpu_seconds(server.pid())?, cpu_seconds(std::process::id())?);
    let workers: Vec<_> = (0..CONCURRENCY.min(workspaces.len()))
        .map(|_| {
            let (client, next, workspaces, counters) = (client.clone(), next.clone(), workspaces.clone(), counters.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while let Some(workspace) = workspaces.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if Instant::now() > deadline {
                        return Err(format!("the time limit passed while creating {}", workspace.path()).into());
                    }
                    let sent = Instant::now();
                    create_ready(&client, workspace, &counters).await?;
                    latencies.push(sent.elapsed());
                }
                Ok::<_, BoxError>(latencies)
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(workspaces.len());
    for worker in workers {
        latencies.extend(worker.await??);
    }
    let elapsed = began.elapsed();
    let wall = elapsed.as_secs_f64();
    Ok(Segment {
        workspaces: workspaces.len(),
        elapsed,
        latencies,
        server_cpu: (cpu_seconds(server.pid())? - server_cpu0) / wall,
        client_cpu: (cpu_seconds(std::process::id())? - client_cpu0) / wall,
    })
}

fn sample(server: &Server, workspaces: usize) -> Result<Sample> {
    let (rss_kib, hwm_kib) = (status_kib(server.pid(), "VmRSS:")?, status_kib(server.pid(), "VmHWM:")?);
    let (disk_bytes, _) = dir_size(server.data_dir.path())?;
    Ok(Sample { workspaces, rss_kib, hwm_kib, disk_bytes })
}

/// The flat workspaces under `root:t-0`, in segments ending at the checkpoints, with memory and disk at each.
async fn create_flat(server: &Server, client: &Client, count: usize, base: Sample, deadline: Instant, counters: &Arc<Counters>) -> Result<()> {
    let mut checkpoints: Vec<usize> = CHECKPOINTS.iter().copied().filter(|&c| c < count).collect();
    checkpoints.push(count);
    let (mut samples, mut segments, mut made) = (vec![base], Vec::new(), 0);
    for checkpoint in checkpoints {
        let batch = (made..checkpoint).map(|i| Workspace { parent: "root:t-0".into(), name: format!("w-{i}") }).collect();
        let segment = create_all(server, client, Arc::new(batch), deadline, counters).await?;
        println!("{checkpoint} flat workspaces: {} in {:.1} s ({:.0}/s); idling {} s", segment.workspaces, segment.elapsed.as_secs_f64(), segment.per_second(), IDLE.as_secs());
        segments.push(segment);
        tokio::time::sleep(IDLE).await;
        samples.push(sample(server, checkpoint)?);
        made = checkpoint;
    }
    print_memory(&samples);
    print_rates(&samples, &mut segments);
    let started = Instant::now();
    let page: Value = serde_json::from_str(&client.request_text(get(&format!("/clusters/root:t-0/{WORKSPACES_API}?limit=1"))?).await?)?;
    let items = page["items"].as_array().map_or(0, Vec::len);
    println!("sanity: GET /clusters/root:t-0/{WORKSPACES_API}?limit=1 → {items} item(s) ({:.1} ms)", millis(started.elapsed()));
    Ok(())
}

fn print_memory(samples: &[Sample]) {
    let base = &samples[0];
    println!("\n| workspaces | RSS (VmRSS) | RSS growth per workspace (RSS_N − RSS_0) / N | marginal RSS per workspace since the previous row | peak RSS (VmHWM) | data dir (du) | data dir per workspace | target ≤ 16 KiB/workspace |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---|");
    let mut previous = base;
    for s in samples {
        let cells = if s.workspaces == 0 {
            ["–".to_owned(), "–".to_owned(), "–".to_owned(), String::new()]
        } else {
            let kib = (s.rss_kib as f64 - base.rss_kib as f64) / s.workspaces as f64;
            let marginal = (s.rss_kib as f64 - previous.rss_kib as f64) / (s.workspaces - previous.workspaces) as f64;
            let disk = (s.disk_bytes as f64 - base.disk_bytes as f64) / s.workspaces as f64 / 1024.0;
            let verdict = if kib <= TARGET_KIB { "met" } else { "**not met**" };
            [format!("{kib:.2} KiB"), format!("{marginal:.2} KiB"), format!("{disk:.2} KiB"), verdict.to_owned()]
        };
        let [per, marginal, disk, verdict] = cells;
        println!(
            "| {} | {:.1} MiB | {per} | {marginal} | {:.1} MiB | {:.1} MiB | {disk} | {verdict} |",
            s.workspaces,
            mib(s.rss_kib * 1024),
            mib(s.hwm_kib * 1024),
            mib(s.disk_bytes)
        );
        previous = s;
    }
}

fn print_rates(samples: &[Sample], segments: &mut [Segment]) {
    println!("\n| flat workspaces created | workspaces/s (to Ready) | create → Ready p50 / p99 / max | server CPU (cores) | bench client CPU (cores) | target ≥ 1,000/s |");
    println!("|---|---:|---|---:|---:|---|");
    let mut from = 0;
    for (segment, sample) in segments.iter_mut().zip(&samples[1..]) {
        let rate = segment.per_second();
        let verdict = if rate >= TARGET_PER_SECOND { "met" } else { "**not met**" };
        let latency = segment.latency_summary();
        println!("| {from} → {} | {rate:.0} | {latency} | {:.2} | {:.2} | {verdict} |", sample.workspaces, segment.server_cpu, segment.client_cpu);
        from = sample.workspaces;
    }
    let total: usize = segments.iter().map(|s| s.workspaces).sum();
    let elapsed: f64 = segments.iter().map(|s| s.elapsed.as_secs_f64()).sum();
    println!("\nflat overall: {total} workspaces in {elapsed:.1} s = {:.0}/s ({CONCURRENCY} concurrent creates)", total as f64 / elapsed);
}

/// The tree's levels: `tree` under `root:t-1`, then up to `FANOUT` children per workspace of the level above
/// (spread round-robin) until `total` workspaces.
fn tree_levels(total: usize) -> Vec<Vec<Workspace>> {
    let mut levels = vec![vec![Workspace { parent: "root:t-1".into(), name: "tree".into() }]];
    let mut made = 1;
    while made < total {
        let parents: Vec<String> = levels.last().into_iter().flatten().map(Workspace::path).collect();
        let size = (parents.len() * FANOUT).min(total - made);
        levels.push((0..size).map(|j| Workspace { parent: parents[j % parents.len()].clone(), name: format!("w-{}", j / parents.len()) }).collect());
        made += size;
    }
    levels
}

/// Makes the tree level by level; returns its top.
async fn create_tree(server: &Server, client: &Client, total: usize, deadline: Instant, counters: &Arc<Counters>) -> Result<Workspace> {
    let levels = tree_levels(total);
    let rss_before = status_kib(server.pid(), "VmRSS:")?;
    println!("\n| tree level (depth below root) | workspaces | workspaces/s (to Ready) | create → Ready p50 / p99 / max | server CPU (cores) |\n|---|---:|---:|---|---:|");
    let (mut made, mut elapsed) = (0, Duration::ZERO);
    for (depth, level) in levels.into_iter().enumerate() {
        let mut segment = create_all(server, client, Arc::new(level), deadline, counters).await?;
        made += segment.workspaces;
        elapsed += segment.elapsed;
        let latency = segment.latency_summary();
        println!("| {} | {} | {:.0} | {latency} | {:.2} |", depth + 2, segment.workspaces, segment.per_second(), segment.server_cpu);
    }
    let rate = made as f64 / elapsed.as_secs_f64();
    let verdict = if rate >= TARGET_PER_SECOND { "met" } else { "**not met**" };
    println!("\ntree overall: {made} workspaces in {:.1} s = {rate:.0}/s (target ≥ 1,000/s: {verdict})", elapsed.as_secs_f64());
    tokio::time::sleep(IDLE).await;
    let rss_after = status_kib(server.pid(), "VmRSS:")?;
    println!("RSS {:.1} → {:.1} MiB over the tree ({:.2} KiB per workspace)", rss_before as f64 / 1024.0, rss_after as f64 / 1024.0,
        (rss_after as f64 - rss_before as f64) / made as f64);
    Ok(Workspace { parent: "root:t-1".into(), name: "tree".into() })
}

/// One probe GET: when it was sent and how long it took.
type Probe = (Instant, Duration);

/// `PROBES` loops GETting the unrelated ConfigMap until `stop`.
fn spawn_probes(client: &Client, stop: &Arc<AtomicBool>) -> Vec<tokio::task::JoinHandle<Result<Vec<Probe>>>> {
    (0..PROBES)
        .map(|_| {
            let (client, stop) = (client.clone(), stop.clone());
            tokio::spawn(async move {
                let mut probes = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let sent = Instant::now();
                    client.request_text(get("/api/v1/namespaces/default/configmaps/probe")?).await?;
                    probes.push((sent, sent.elapsed()));
                    tokio::time::sleep(PROBE_PAUSE).await;
                }
                Ok(probes)
            })
        })
        .collect()
}

/// Deletes the tree's top and times it until it is gone, with the probe's GET latencies before and during.
async fn delete_tree(server: &Server, client: &Client, probe_client: &Client, top: &Workspace, count: usize, deadline: Instant) -> Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    let probes = spawn_probes(probe_client, &stop);
    tokio::time::sleep(BASELINE).await;
    let (began, cpu0) = (Instant::now(), cpu_seconds(server.pid())?);
    client.request_text(http::Request::delete(top.url()).body(Vec::new())?).await?;
    let mut reported = began;
    let gone = loop {
        match client.request_text(get(&top.url())?).await {
            Err(kube::Error::Api(status)) if status.code == 404 => break Instant::now(),
            Err(error) => return Err(error.into()),
            Ok(_) if Instant::now() > deadline => return Err(format!("{} still exists {:.0} s after its delete", top.path(), began.elapsed().as_secs_f64()).into()),
            Ok(_) => {}
        }
        if reported.elapsed() >= Duration::from_secs(10) {
            reported = Instant::now();
            println!("  deleting: {:.0} s", began.elapsed().as_secs_f64());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let elapsed = gone.duration_since(began);
    let server_cpu = (cpu_seconds(server.pid())? - cpu0) / elapsed.as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    for probe in probes {
        all.extend(probe.await??);
    }
    let mut before: Vec<Duration> = all.iter().filter(|(sent, _)| *sent < began).map(|(_, latency)| *latency).collect();
    let mut during: Vec<Duration> = all.iter().filter(|(sent, _)| *sent >= began && *sent < gone).map(|(_, latency)| *latency).collect();
    println!("\ntree of {count} workspaces deleted in {:.2} s (DELETE of {} → its GET answers 404); server CPU {server_cpu:.2} cores", elapsed.as_secs_f64(), top.path());
    println!("\n| GET of an unrelated ConfigMap ({PROBES} loops, {} ms pause) | GETs | GETs/s | p50 | p99 | max |\n|---|---:|---:|---:|---:|---:|", PROBE_PAUSE.as_millis());
    for (label, latencies, wall) in [("before the delete", &mut before, BASELINE), ("during the deletion", &mut during, elapsed)] {
        latencies.sort();
        println!(
            "| {label} | {} | {:.0} | {:.2} ms | {:.2} ms | {:.2} ms |",
            latencies.len(),
            latencies.len() as f64 / wall.as_secs_f64(),
            millis(percentile(latencies, 50.0)),
            millis(percentile(latencies, 99.0)),
            millis(latencies.last().copied().unwrap_or_default())
        );
    }
    let leaf = format!("/clusters/{}:w-0:w-0/api/v1/namespaces", top.path());
    let answer = match client.request_text(get(&leaf)?).await {
        Ok(_) => "200 (still there)".to_owned(),
        Err(kube::Error::Api(status)) => format!("{} {}", status.code, status.reason),
        Err(error) => error.to_string(),
    };
    println!("sanity: GET {leaf} → {answer}");
    Ok(())
}
