//! Tenant-scale benchmark: memory and disk of idle tenant spaces. Starts the release `kspaces` binary, then
//! creates tenants `t-0`, `t-1`, … over HTTPS as the system administrator (`POST /api/v1/tenants`, kube-rs,
//! `CONCURRENCY` requests in flight; each create also writes the tenant's space: 3 namespaces, Arktos'
//! `admin-role` and its binding, 15 bootstrap RBAC ClusterRoles and ClusterRoleBindings and a LogicalCluster,
//! `WRITES_PER_TENANT` durable writes in all). At each checkpoint it lets the server
//! idle for `IDLE`, then records the server's RSS (`VmRSS`) and the data dir's size, and prints a markdown
//! table with the growth per tenant. Ends with a sanity check of the tenant list and one tenant's namespaces.
//!
//! Run: `cargo bench -p kspaces-tests --bench tenants` (the harness builds `target/release/kspaces`, or set
//! `KSPACES_BIN`). `KSPACES_BENCH_TENANTS` sets the number of tenants (default 100,000); the whole run is
//! bounded by `KSPACES_BENCH_DEADLINE_SECS` (default 1,200 s) and aborts with a message when it passes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::Client;
use kspaces_tests::Server;
use serde_json::Value;

mod support;

use support::{cpu_seconds, dir_size, env_usize, mib, millis, percentile, start, status_kib, BoxError, Result};

const CONCURRENCY: usize = 48;
const IDLE: Duration = Duration::from_secs(5);
const CHECKPOINTS: [usize; 4] = [1_000, 10_000, 50_000, 100_000];
/// Attempts per tenant before the bench gives up on it (a 409 after a retry counts as created).
const ATTEMPTS: usize = 3;
/// Target: RSS growth per idle tenant.
const TARGET_KIB_PER_TENANT: f64 = 16.0;
/// The Tenant and the 21 objects of its space.
const WRITES_PER_TENANT: f64 = 22.0;

/// Memory and disk at one checkpoint.
struct Sample {
    tenants: usize,
    rss_kib: u64,
    hwm_kib: u64,
    disk_bytes: u64,
    apparent_bytes: u64,
}

/// One creation segment (between two checkpoints).
struct Segment {
    tenants: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
    server_cpu: f64,
    client_cpu: f64,
}

/// Errors seen while creating, by status/message, for the report.
#[derive(Default)]
struct Errors {
    retried: AtomicUsize,
    conflicts_on_retry: AtomicUsize,
    kinds: Mutex<std::collections::BTreeMap<String, usize>>,
}

impl Errors {
    fn record(&self, error: &kube::Error) {
        let key = match error {
            kube::Error::Api(status) => format!("{} {}: {}", status.code, status.reason, truncate(&status.message, 120)),
            other => truncate(&other.to_string(), 120),
        };
        *self.kinds.lock().unwrap_or_else(|e| e.into_inner()).entry(key).or_default() += 1;
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max { text.to_owned() } else { format!("{}…", text.chars().take(max).collect::<String>()) }
}

fn main() -> Result<()> {
    let tenants = env_usize("KSPACES_BENCH_TENANTS", 100_000)?;
    let deadline_secs = env_usize("KSPACES_BENCH_DEADLINE_SECS", 1_200)?;
    if tenants == 0 {
        return Err("KSPACES_BENCH_TENANTS must be at least 1".into());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let began = Instant::now();
    let deadline = began + Duration::from_secs(deadline_secs as u64);
    let result = runtime.block_on(run(tenants, deadline));
    println!("\ntotal bench time {:.1} s", began.elapsed().as_secs_f64());
    result
}

async fn run(tenants: usize, deadline: Instant) -> Result<()> {
    // Build (or locate) the release binary before the clock matters.
    let (server, client) = start().await?;
    tokio::time::sleep(IDLE).await;
    let mut samples = vec![sample(&server, 0)?];
    println!("started: RSS {:.1} MiB, data dir {:.1} MiB", mib(samples[0].rss_kib * 1024), mib(samples[0].disk_bytes));

    let mut checkpoints: Vec<usize> = CHECKPOINTS.iter().copied().filter(|&c| c < tenants).collect();
    checkpoints.push(tenants);
    let errors = Arc::new(Errors::default());
    let mut segments = Vec::new();
    let mut created = 0;
    let mut aborted = None;
    for &checkpoint in &checkpoints {
        let segment = match create_range(&server, &client, created, checkpoint, deadline, errors.clone()).await {
            Ok(segment) => segment,
            Err(error) => {
                aborted = Some(error.to_string());
                break;
            }
        };
        created = checkpoint;
        println!(
            "{checkpoint} tenants: segment of {} in {:.1} s ({:.0} tenants/s); idling {} s",
            segment.tenants,
            segment.elapsed.as_secs_f64(),
            segment.tenants as f64 / segment.elapsed.as_secs_f64(),
            IDLE.as_secs()
        );
        segments.push(segment);
        tokio::time::sleep(IDLE).await;
        let sample = sample(&server, checkpoint)?;
        println!("  RSS {:.1} MiB, data dir {:.1} MiB", mib(sample.rss_kib * 1024), mib(sample.disk_bytes));
        samples.push(sample);
    }

    print_tables(&samples, &mut segments, &errors);
    if let Some(reason) = aborted {
        return Err(format!("aborted after {created} tenants: {reason}").into());
    }
    sanity_check(&client, tenants).await
}

fn tenant_request(i: usize) -> Result<http::Request<Vec<u8>>> {
    let body = format!(r#"{{"apiVersion":"v1","kind":"Tenant","metadata":{{"name":"t-{i}"}}}}"#);
    Ok(http::Request::post("/api/v1/tenants").header(http::header::CONTENT_TYPE, "application/json").body(body.into_bytes())?)
}

/// Creates tenants `from..to` with `CONCURRENCY` closed loops; fails when `deadline` passes or a tenant cannot
/// be created in `ATTEMPTS` tries.
async fn create_range(server: &Server, client: &Client, from: usize, to: usize, deadline: Instant, errors: Arc<Errors>) -> Result<Segment> {
    let next = Arc::new(AtomicUsize::new(from));
    let (began, server_cpu0, client_cpu0) = (Instant::now(), cpu_seconds(server.pid())?, cpu_seconds(std::process::id())?);
    let workers: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let (client, next, errors) = (client.clone(), next.clone(), errors.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= to {
                        return Ok::<_, BoxError>(latencies);
                    }
                    if Instant::now() > deadline {
                        return Err(format!("the time limit passed while creating t-{i}").into());
                    }
                    let sent = Instant::now();
                    create_tenant(&client, i, &errors).await?;
                    latencies.push(sent.elapsed());
                }
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(to - from);
    let mut failure = None;
    for worker in workers {
        match worker.await? {
            Ok(part) => latencies.extend(part),
            Err(error) => failure = failure.or(Some(error)),
        }
    }
    if let Some(error) = failure {
        return Err(error);
    }
    let elapsed = began.elapsed();
    let wall = elapsed.as_secs_f64();
    Ok(Segment {
        tenants: to - from,
        elapsed,
        latencies,
        server_cpu: (cpu_seconds(server.pid())? - server_cpu0) / wall,
        client_cpu: (cpu_seconds(std::process::id())? - client_cpu0) / wall,
    })
}

async fn create_tenant(client: &Client, i: usize, errors: &Errors) -> Result<()> {
    for attempt in 1..=ATTEMPTS {
        match client.request_text(tenant_request(i)?).await {
            Ok(_) => return Ok(()),
            // A retry of a create that did land the first time.
            Err(kube::Error::Api(status)) if attempt > 1 && status.code == 409 => {
                errors.conflicts_on_retry.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            Err(error) => {
                errors.record(&error);
                if attempt == ATTEMPTS {
                    return Err(format!("creating tenant t-{i} failed {ATTEMPTS} times, last: {error}").into());
                }
                errors.retried.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    Ok(())
}

fn sample(server: &Server, tenants: usize) -> Result<Sample> {
    let (rss_kib, hwm_kib) = (status_kib(server.pid(), "VmRSS:")?, status_kib(server.pid(), "VmHWM:")?);
    let (disk_bytes, apparent_bytes) = dir_size(server.data_dir.path())?;
    Ok(Sample { tenants, rss_kib, hwm_kib, disk_bytes, apparent_bytes })
}

fn print_tables(samples: &[Sample], segments: &mut [Segment], errors: &Errors) {
    let base = &samples[0];
    println!("\n| tenants | RSS (VmRSS) | RSS growth per tenant (RSS_N − RSS_0) / N | marginal RSS per tenant since the previous row | peak RSS (VmHWM) | data dir (du) | data dir per tenant (du) | data dir (apparent size) | target < 16 KiB/tenant |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    let mut previous = base;
    for s in samples {
        let (per_tenant, marginal, disk_per_tenant, verdict) = if s.tenants == 0 {
            ("–".to_owned(), "–".to_owned(), "–".to_owned(), "")
        } else {
            let kib = (s.rss_kib as f64 - base.rss_kib as f64) / s.tenants as f64;
            let marginal = (s.rss_kib as f64 - previous.rss_kib as f64) / (s.tenants - previous.tenants) as f64;
            let disk = (s.disk_bytes as f64 - base.disk_bytes as f64) / s.tenants as f64 / 1024.0;
            let verdict = if kib < TARGET_KIB_PER_TENANT { "met" } else { "**not met**" };
            (format!("{kib:.2} KiB"), format!("{marginal:.2} KiB"), format!("{disk:.2} KiB"), verdict)
        };
        println!(
            "| {} | {:.1} MiB | {per_tenant} | {marginal} | {:.1} MiB | {:.1} MiB | {disk_per_tenant} | {:.1} MiB | {verdict} |",
            s.tenants,
            mib(s.rss_kib * 1024),
            mib(s.hwm_kib * 1024),
            mib(s.disk_bytes),
            mib(s.apparent_bytes)
        );
        previous = s;
    }
    println!("\n| tenants created | tenants/s | durable writes/s (× {WRITES_PER_TENANT}) | create latency p50 / p99 / max | server CPU (cores) | bench client CPU (cores) |");
    println!("|---|---:|---:|---|---:|---:|");
    let mut from = 0;
    for (segment, sample) in segments.iter_mut().zip(&samples[1..]) {
        segment.latencies.sort();
        let rate = segment.tenants as f64 / segment.elapsed.as_secs_f64();
        println!(
            "| {from} → {} | {rate:.0} | {:.0} | {:.1} / {:.1} / {:.1} ms | {:.2} | {:.2} |",
            sample.tenants,
            rate * WRITES_PER_TENANT,
            millis(percentile(&segment.latencies, 50.0)),
            millis(percentile(&segment.latencies, 99.0)),
            millis(segment.latencies.last().copied().unwrap_or_default()),
            segment.server_cpu,
            segment.client_cpu
        );
        from = sample.tenants;
    }
    let total: usize = segments.iter().map(|s| s.tenants).sum();
    let elapsed: f64 = segments.iter().map(|s| s.elapsed.as_secs_f64()).sum();
    if total > 0 {
        println!("\noverall: {total} tenants in {elapsed:.1} s of creation = {:.0} tenants/s ({CONCURRENCY} concurrent requests)", total as f64 / elapsed);
    }
    let kinds = errors.kinds.lock().unwrap_or_else(|e| e.into_inner());
    println!(
        "errors during creation: {} (retried {}, 409 on a retry {})",
        kinds.values().sum::<usize>(),
        errors.retried.load(Ordering::Relaxed),
        errors.conflicts_on_retry.load(Ordering::Relaxed)
    );
    for (kind, count) in kinds.iter() {
        println!("  {count} × {kind}");
    }
}

/// `GET /api/v1/tenants?limit=1` answers one tenant with a continue token, and a random tenant's space lists
/// its 3 namespaces through the tenant path.
async fn sanity_check(client: &Client, tenants: usize) -> Result<()> {
    let started = Instant::now();
    let list: Value = serde_json::from_str(&client.request_text(http::Request::get("/api/v1/tenants?limit=1").body(Vec::new())?).await?)?;
    let list_time = started.elapsed();
    let items = list["items"].as_array().map_or(0, Vec::len);
    let remaining = list["metadata"]["remainingItemCount"].as_u64();
    let has_continue = list["metadata"]["continue"].as_str().is_some_and(|c| !c.is_empty());
    println!("\nsanity: GET /api/v1/tenants?limit=1 → {items} item(s), continue token {has_continue}, remainingItemCount {remaining:?} ({:.1} ms)", millis(list_time));
    if items != 1 || (tenants > 1 && !has_continue) {
        return Err(format!("GET /api/v1/tenants?limit=1 answered {items} items, continue token {has_continue}").into());
    }
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos() as usize);
    let k = (seed ^ std::process::id() as usize).wrapping_mul(2_654_435_761) % tenants;
    let path = format!("/api/v1/tenants/t-{k}/namespaces");
    let started = Instant::now();
    let namespaces: Value = serde_json::from_str(&client.request_text(http::Request::get(path.as_str()).body(Vec::new())?).await?)?;
    let namespaces_time = started.elapsed();
    let mut names: Vec<&str> = namespaces["items"].as_array().into_iter().flatten().filter_map(|n| n["metadata"]["name"].as_str()).collect();
    names.sort_unstable();
    println!("sanity: GET {path} → {names:?} ({:.1} ms)", millis(namespaces_time));
    if names != ["default", "kube-public", "kube-system"] {
        return Err(format!("GET {path} listed {names:?}, expected the 3 tenant namespaces").into());
    }
    Ok(())
}
