//! Scale-out benchmark (issue 20): `kspaces serve --storage-backend etcd` replicas sharing one data dir and one
//! real 3-member etcd cluster on loopback (`kspaces_tests::etcd`), against one single-node sled server, on this
//! machine. Measures:
//!
//! 1. durable ConfigMap creates/s and gets/s, N = 64 closed loops spread round-robin over the replicas' kube-rs
//!    clients, with 1, 2 and 3 replicas, and with one sled server (`Server::start()`), side by side;
//! 2. cross-replica watch latency: a watch on replica B, 200 creates through replica A 5 ms apart, from sending
//!    the create to B's ADDED event (and, for comparison, a watch on A itself);
//! 3. leader failover: the replica holding Lease `kspaces-controllers` is killed (SIGKILL); the time until the
//!    Lease, polled through a survivor every 100 ms, names another live replica; with the default
//!    `--leader-elect-*` timing (15 s / 10 s / 2 s) and with a short one (4 s / 3 s / 500 ms);
//! 4. a replica restarted over a store holding many ConfigMaps (`SCALE_OUT_OBJECTS`, default 100,000): spawn →
//!    URL printed → `/readyz` 200 → first list of namespaces, and its RSS when ready and 10 s later.
//!
//! Run: `cargo bench -p kspaces-tests --bench scale_out` (the harness builds `target/release/kspaces`, or set
//! `KSPACES_BIN`; etcd 3.4 must be installed). Env: `SCALE_OUT_OBJECTS` (the fill of 4.),
//! `SCALE_OUT_FAILOVERS_DEFAULT` / `SCALE_OUT_FAILOVERS_SHORT` (rounds of 3., default 2 and 3).

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ListParams, ObjectMeta, PostParams, WatchParams};
use kube::{Api, Client};
use kspaces_tests::etcd::EtcdCluster;
use kspaces_tests::{kube_client, Replica, Server};
use serde_json::Value;

mod support;

use support::{client, closed_loops, configmap, cpu_seconds, dir_size, env_usize, mib, millis, percentile, receive_added, status_kib, wait_ready, BoxError, Result};

/// How long each throughput phase is measured, after a short warm-up that opens the connections.
const PHASE: Duration = Duration::from_secs(3);
const WARM_UP: Duration = Duration::from_millis(500);
const CONCURRENCY: usize = 64;
const GET_NAMES: usize = 100;
const WATCHED_CREATES: usize = 200;
const REPLICAS: usize = 3;
const FILL_CONCURRENCY: usize = 64;
/// How long a replica may take from spawn to `/readyz` 200 (it primes its caches from etcd first).
const READY_WITHIN: Duration = Duration::from_secs(600);

const LEASE: &str = "/clusters/system:admin/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kspaces-controllers";
const SHORT_TIMING: [&str; 6] =
    ["--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms"];

fn main() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let began = Instant::now();
    let report = runtime.block_on(run())?;
    println!("\n| setup | durable creates/s, N = {CONCURRENCY} | gets/s, N = {CONCURRENCY} | kspaces CPU (cores) | etcd CPU (cores) | bench client CPU (cores) |");
    println!("|---|---|---|---|---|---|");
    for row in &report.throughput {
        println!(
            "| {} | {:.0}/s ({}) | {:.0}/s ({}) | {:.2} / {:.2} | {} / {} | {:.2} / {:.2} |",
            row.setup,
            row.creates.per_second,
            row.creates.latency,
            row.gets.per_second,
            row.gets.latency,
            row.creates.cores.servers,
            row.gets.cores.servers,
            row.creates.cores.etcd.map_or("–".into(), |c| format!("{c:.2}")),
            row.gets.cores.etcd.map_or("–".into(), |c| format!("{c:.2}")),
            row.creates.cores.client,
            row.gets.cores.client,
        );
    }
    println!("\n(CPU columns: during the creates / during the gets.)\n\n| measurement | result |\n|---|---|");
    for (measurement, result) in &report.rows {
        println!("| {measurement} | {result} |");
    }
    println!("\ntotal bench time {:.1} s", began.elapsed().as_secs_f64());
    Ok(())
}

struct Report {
    throughput: Vec<Throughput>,
    rows: Vec<(String, String)>,
}

impl Report {
    fn row(&mut self, measurement: impl Into<String>, result: impl Into<String>) {
        let (measurement, result) = (measurement.into(), result.into());
        eprintln!("== {measurement}: {result}");
        self.rows.push((measurement, result));
    }
}

struct Throughput {
    setup: String,
    creates: Load,
    gets: Load,
}

/// One closed-loop phase: requests per second, latency percentiles and the CPU each side used.
struct Load {
    per_second: f64,
    latency: String,
    cores: Cores,
}

/// CPU use over one phase, in cores (CPU seconds per wall second).
#[derive(Clone, Copy)]
struct Cores {
    /// The kspaces processes together.
    servers: f64,
    /// The etcd members together (none for sled).
    etcd: Option<f64>,
    client: f64,
}

/// CPU-time readings of the kspaces processes, the etcd members and this process when a phase starts.
struct CpuClock {
    servers: Vec<u32>,
    etcd: Option<Vec<u32>>,
    began: Instant,
    at_start: (f64, f64, f64),
}

fn cpu_sum(pids: &[u32]) -> Result<f64> {
    pids.iter().map(|pid| cpu_seconds(*pid)).sum()
}

impl CpuClock {
    fn start(servers: Vec<u32>, etcd: Option<Vec<u32>>) -> Result<CpuClock> {
        let etcd_cpu = match &etcd {
            Some(pids) => cpu_sum(pids)?,
            None => 0.0,
        };
        let at_start = (cpu_sum(&servers)?, etcd_cpu, cpu_seconds(std::process::id())?);
        Ok(CpuClock { servers, etcd, began: Instant::now(), at_start })
    }

    fn cores(&self) -> Result<Cores> {
        let wall = self.began.elapsed().as_secs_f64();
        let etcd = match &self.etcd {
            Some(pids) => Some((cpu_sum(pids)? - self.at_start.1) / wall),
            None => None,
        };
        Ok(Cores {
            servers: (cpu_sum(&self.servers)? - self.at_start.0) / wall,
            etcd,
            client: (cpu_seconds(std::process::id())? - self.at_start.2) / wall,
        })
    }
}

/// The etcd processes of the cluster whose folder is `root` (each runs under a small `sh` guard): found by
/// their `--data-dir=<root>/member-<i>/data` argument in `/proc/<pid>/cmdline`.
fn etcd_pids(root: &std::path::Path) -> Result<Vec<u32>> {
    let wanted = format!("--data-dir={}/member-", root.display());
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        let entry = entry?;
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let is_etcd = args.first().is_some_and(|arg0| arg0.ends_with(b"etcd"));
        if is_etcd && args.iter().any(|arg| arg.starts_with(wanted.as_bytes())) {
            pids.push(pid);
        }
    }
    Ok(pids)
}

fn namespace(name: &str) -> Namespace {
    Namespace { metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() }, ..Namespace::default() }
}

/// A running replica, its admin client, and how long it took to start.
struct Member {
    replica: Replica,
    client: Client,
    /// Spawn → URL printed.
    to_url: Duration,
    /// Spawn → `/readyz` 200.
    to_ready: Duration,
}

/// The etcd cluster and the replicas sharing it (and one data dir inside the cluster's folder).
struct Cluster {
    /// Declared first, so dropped first: the replicas go before the etcd members they use.
    members: Vec<Member>,
    etcd: EtcdCluster,
    dir: PathBuf,
}

impl Cluster {
    fn start() -> Result<Cluster> {
        let began = Instant::now();
        let etcd = EtcdCluster::start(3);
        eprintln!("etcd: 3 members healthy in {:?} at {}", began.elapsed(), etcd.endpoints());
        let dir = etcd.root().join("kspaces");
        std::fs::create_dir_all(&dir)?;
        Ok(Cluster { members: Vec::new(), etcd, dir })
    }

    /// Starts one more replica (alone: each writes the shared admin.kubeconfig) with `flags` beyond the storage
    /// ones, and waits until it answers `/readyz`.
    async fn start_member(&self, flags: &[&str]) -> Result<Member> {
        let mut args: Vec<String> = ["--storage-backend", "etcd", "--etcd-servers", &self.etcd.endpoints()].map(str::to_owned).to_vec();
        args.extend(flags.iter().map(|flag| (*flag).to_owned()));
        let dir = self.dir.clone();
        let began = Instant::now();
        let replica = tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            Server::start_replica(&dir, &args)
        })
        .await?;
        let client = kube_client(&replica.kubeconfig).await?;
        wait_ready(&client, began + READY_WITHIN).await?;
        let to_ready = began.elapsed();
        eprintln!("replica pid {} on {}: URL after {:?}, ready after {to_ready:?}", replica.pid(), replica.url, replica.startup);
        Ok(Member { to_url: replica.startup, replica, client, to_ready })
    }

    fn pids(&self) -> Vec<u32> {
        self.members.iter().map(|m| m.replica.pid()).collect()
    }

    fn clock(&self) -> Result<CpuClock> {
        CpuClock::start(self.pids(), Some(etcd_pids(self.etcd.root())?))
    }

    /// The index of the replica the Lease names, once it names a live one (read through each replica in turn).
    async fn leader(&mut self, within: Duration) -> Result<usize> {
        let deadline = Instant::now() + within;
        loop {
            for reader in 0..self.members.len() {
                if !self.members[reader].replica.running() {
                    continue;
                }
                let Some(pid) = lease_holder(&self.members[reader].client).await.as_deref().and_then(holder_pid) else { continue };
                if let Some(index) = self.members.iter_mut().position(|m| m.replica.pid() == pid && m.replica.running()) {
                    return Ok(index);
                }
            }
            if Instant::now() > deadline {
                return Err(format!("no live replica held the Lease within {within:?}").into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The Lease's `spec.holderIdentity` as `client`'s replica serves it (none on any error, or after 1 s).
async fn lease_holder(client: &Client) -> Option<String> {
    let request = http::Request::get(LEASE).body(Vec::new()).ok()?;
    let lease: Value = tokio::time::timeout(Duration::from_secs(1), client.request(request)).await.ok()?.ok()?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_owned)
}

/// The pid in a holder identity `<hostname>_<pid>_<8 hex>`.
fn holder_pid(identity: &str) -> Option<u32> {
    let parts: Vec<&str> = identity.rsplitn(3, '_').collect();
    parts.get(1)?.parse().ok()
}

async fn run() -> Result<Report> {
    // Build (or locate) the release binary first, so that no start-up time includes a cargo build.
    kspaces_tests::kspaces_binary();
    let mut report = Report { throughput: Vec::new(), rows: Vec::new() };
    let objects = env_usize("SCALE_OUT_OBJECTS", 100_000)?;
    let default_rounds = env_usize("SCALE_OUT_FAILOVERS_DEFAULT", 2)?;
    let short_rounds = env_usize("SCALE_OUT_FAILOVERS_SHORT", 3)?;

    // 1. One sled server first, alone on the machine.
    {
        let server = Server::start();
        let client = client(&server).await?;
        wait_ready(&client, Instant::now() + Duration::from_secs(10)).await?;
        let apis = vec![Api::<ConfigMap>::namespaced(client, "default")];
        seed(&apis[0]).await?;
        let clock = || CpuClock::start(vec![server.pid()], None);
        let creates = creates(&apis, "sled", clock).await?;
        let gets = gets(&apis, clock).await?;
        report.throughput.push(Throughput { setup: "sled, 1 server (single node)".into(), creates, gets });
    }

    // 1. Then replicas over etcd (default leader-election timing), added one at a time.
    let mut cluster = Cluster::start()?;
    for count in 1..=REPLICAS {
        let member = cluster.start_member(&[]).await?;
        cluster.members.push(member);
        let apis: Vec<Api<ConfigMap>> = cluster.members.iter().map(|m| Api::namespaced(m.client.clone(), "default")).collect();
        if count == 1 {
            let first = &cluster.members[0];
            let rss = status_kib(first.replica.pid(), "VmRSS:")? as f64 / 1024.0;
            report.row(
                "replica start on an empty etcd: spawn → URL printed / → `/readyz` 200; RSS when ready",
                format!("{:.0} ms / {:.0} ms; {rss:.1} MiB", millis(first.to_url), millis(first.to_ready)),
            );
            seed(&apis[0]).await?;
        }
        // Every replica serves the seeded objects before the gets.
        for api in &apis {
            visible(api, &format!("get-{}", GET_NAMES - 1)).await?;
        }
        let setup = format!("etcd (3 members), {count} replica{}", if count == 1 { "" } else { "s" });
        let clock = || cluster.clock();
        let creates = creates(&apis, &format!("etcd{count}"), clock).await?;
        let gets = gets(&apis, clock).await?;
        report.throughput.push(Throughput { setup, creates, gets });
    }

    // 2. Watch latency: a watch on replica B (and one on A), creates through A.
    watch_rows(&cluster, &mut report).await?;

    // 3. Failover with the default timing, on these replicas.
    failover_rows(&mut cluster, &[], "defaults: 15 s / 10 s / 2 s", default_rounds, &mut report).await?;

    // 3. Then with the short timing, on three new replicas.
    for mut member in cluster.members.drain(..) {
        member.replica.kill();
    }
    for _ in 0..REPLICAS {
        let member = cluster.start_member(&SHORT_TIMING).await?;
        cluster.members.push(member);
    }
    failover_rows(&mut cluster, &SHORT_TIMING, "4 s / 3 s / 500 ms", short_rounds, &mut report).await?;

    // 4. Many objects in etcd, then a replica restarted over them.
    restart_rows(&mut cluster, objects, &mut report).await?;
    Ok(report)
}

/// `GET_NAMES` ConfigMaps for the gets.
async fn seed(api: &Api<ConfigMap>) -> Result<()> {
    for i in 0..GET_NAMES {
        api.create(&PostParams::default(), &configmap(format!("get-{i}"))).await?;
    }
    Ok(())
}

/// Waits until `api` serves the object `name` (a write through another replica reaches this one's caches).
async fn visible(api: &Api<ConfigMap>, name: &str) -> Result<Duration> {
    let began = Instant::now();
    loop {
        match api.get_opt(name).await? {
            Some(_) => return Ok(began.elapsed()),
            None if began.elapsed() > Duration::from_secs(30) => return Err(format!("{name} was not visible within 30 s").into()),
            None => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
}

/// Runs N = 64 closed loops of `request(worker, i)`, worker `w` on `apis[w % apis.len()]` (round robin over the
/// replicas), for a warm-up and then a measured phase.
async fn measure<F, Fut>(apis: &[Api<ConfigMap>], clock: impl Fn() -> Result<CpuClock>, request: F) -> Result<Load>
where
    F: Fn(Api<ConfigMap>, &'static str, usize, u64) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send,
{
    let apis = Arc::new(apis.to_vec());
    let looped = |phase: &'static str| {
        let (apis, request) = (apis.clone(), request.clone());
        move |worker: usize, i: u64| request(apis[worker % apis.len()].clone(), phase, worker, i)
    };
    closed_loops(CONCURRENCY, WARM_UP, looped("warm")).await?;
    let clock = clock()?;
    let mut loops = closed_loops(CONCURRENCY, PHASE, looped("measured")).await?;
    let cores = clock.cores()?;
    loops.latencies.sort();
    let latency = format!("p50 {:.1} ms, p99 {:.1} ms", millis(percentile(&loops.latencies, 50.0)), millis(percentile(&loops.latencies, 99.0)));
    Ok(Load { per_second: loops.per_second(), latency, cores })
}

async fn creates(apis: &[Api<ConfigMap>], setup: &str, clock: impl Fn() -> Result<CpuClock>) -> Result<Load> {
    let setup: Arc<str> = setup.into();
    measure(apis, clock, move |api, phase, worker, i| {
        let name = format!("{setup}-{phase}-{worker}-{i}");
        async move {
            api.create(&PostParams::default(), &configmap(name)).await?;
            Ok(())
        }
    })
    .await
}

async fn gets(apis: &[Api<ConfigMap>], clock: impl Fn() -> Result<CpuClock>) -> Result<Load> {
    measure(apis, clock, |api, _phase, worker, i| async move {
        api.get(&format!("get-{}", (worker * 7 + i as usize) % GET_NAMES)).await?;
        Ok(())
    })
    .await
}

/// 200 creates through replica A spaced 5 ms apart; one watch on replica B and one on A; latency from sending the
/// create to each watch decoding its ADDED event.
async fn watch_rows(cluster: &Cluster, report: &mut Report) -> Result<()> {
    let (a, b) = (&cluster.members[0].client, &cluster.members[1].client);
    Api::<Namespace>::all(a.clone()).create(&PostParams::default(), &namespace("bench-watch")).await?;
    let on_a: Api<ConfigMap> = Api::namespaced(a.clone(), "bench-watch");
    let on_b: Api<ConfigMap> = Api::namespaced(b.clone(), "bench-watch");
    let mut watchers = Vec::new();
    for api in [&on_b, &on_a] {
        let version = api.list(&ListParams::default().limit(1)).await?.metadata.resource_version.unwrap_or_default();
        let stream = api.watch(&WatchParams::default().disable_bookmarks().timeout(120), &version).await?;
        watchers.push(tokio::spawn(receive_added(Box::pin(stream), WATCHED_CREATES)));
    }
    let clock = cluster.clock()?;
    let (mut sent, mut acknowledged) = (Vec::with_capacity(WATCHED_CREATES), Vec::with_capacity(WATCHED_CREATES));
    for i in 0..WATCHED_CREATES {
        let began = Instant::now();
        sent.push(began);
        on_a.create(&PostParams::default(), &configmap(format!("w-{i}"))).await?;
        acknowledged.push(began.elapsed());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    acknowledged.sort();
    let mut results = Vec::new();
    for watcher in watchers {
        let mut latencies: Vec<Duration> = watcher.await??.into_iter().map(|(index, received)| received.duration_since(sent[index])).collect();
        latencies.sort();
        results.push(format!(
            "p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} events)",
            millis(percentile(&latencies, 50.0)),
            millis(percentile(&latencies, 99.0)),
            millis(latencies[latencies.len() - 1]),
            latencies.len()
        ));
    }
    let cores = clock.cores()?;
    report.row("watch latency, create through replica A → ADDED received on replica B", results[0].clone());
    report.row("watch latency, create through replica A → ADDED received on replica A (same replica)", results[1].clone());
    report.row(
        "(the creates themselves, through A: sent → answered)",
        format!("p50 {:.2} ms, p99 {:.2} ms", millis(percentile(&acknowledged, 50.0)), millis(percentile(&acknowledged, 99.0))),
    );
    report.row(
        "(CPU during the watch phase: kspaces / etcd / bench client, cores)",
        format!("{:.2} / {:.2} / {:.2}", cores.servers, cores.etcd.unwrap_or_default(), cores.client),
    );
    Ok(())
}

/// `rounds` times: kill (SIGKILL) the replica holding the Lease, poll the Lease through a survivor every 100 ms
/// until it names another live replica, then start a replacement (with `flags`).
async fn failover_rows(cluster: &mut Cluster, flags: &[&str], timing: &str, rounds: usize, report: &mut Report) -> Result<()> {
    let mut took = Vec::new();
    for round in 0..rounds {
        let old = cluster.leader(Duration::from_secs(120)).await?;
        let old_pid = cluster.members[old].replica.pid();
        let reader = (old + 1) % cluster.members.len();
        cluster.members[old].replica.kill();
        let killed = Instant::now();
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        let new_pid = loop {
            tick.tick().await;
            if let Some(pid) = lease_holder(&cluster.members[reader].client).await.as_deref().and_then(holder_pid) {
                if pid != old_pid && cluster.members.iter_mut().any(|m| m.replica.pid() == pid && m.replica.running()) {
                    break pid;
                }
            }
            if killed.elapsed() > Duration::from_secs(120) {
                return Err(format!("the Lease still named no live replica 120 s after its holder (pid {old_pid}) was killed").into());
            }
        };
        let elapsed = killed.elapsed();
        eprintln!("failover ({timing}) round {round}: Lease moved from pid {old_pid} to pid {new_pid} {elapsed:?} after the kill");
        took.push(elapsed);
        cluster.members[old] = cluster.start_member(flags).await?;
    }
    let each: Vec<String> = took.iter().map(|t| format!("{:.2}", t.as_secs_f64())).collect();
    let mean = took.iter().map(Duration::as_secs_f64).sum::<f64>() / took.len().max(1) as f64;
    report.row(
        format!("leader failover, `--leader-elect-*` {timing}: SIGKILL of the holder → Lease names another live replica ({rounds} rounds)"),
        format!("{} s (mean {mean:.2} s)", each.join(" / ")),
    );
    Ok(())
}

/// Fills etcd with `objects` ConfigMaps through the replicas (N = 64, round robin), then kills a replica that does
/// not lead and starts a new one over that store.
async fn restart_rows(cluster: &mut Cluster, objects: usize, report: &mut Report) -> Result<()> {
    Api::<Namespace>::all(cluster.members[0].client.clone()).create(&PostParams::default(), &namespace("bench-fill")).await?;
    let apis: Vec<Api<ConfigMap>> = cluster.members.iter().map(|m| Api::namespaced(m.client.clone(), "bench-fill")).collect();
    // Every replica knows the namespace before it is asked to create in it.
    for member in &cluster.members {
        let namespaces: Api<Namespace> = Api::all(member.client.clone());
        let began = Instant::now();
        while namespaces.get_opt("bench-fill").await?.is_none() {
            if began.elapsed() > Duration::from_secs(30) {
                return Err("namespace bench-fill was not visible on every replica within 30 s".into());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let clock = cluster.clock()?;
    let began = Instant::now();
    fill(&apis, objects).await?;
    let filled = began.elapsed();
    let cores = clock.cores()?;
    let (etcd_bytes, _) = dir_size(&cluster.etcd.root().join("member-0"))?;
    report.row(
        format!("fill: {objects} ConfigMaps through {REPLICAS} replicas, N = {FILL_CONCURRENCY}"),
        format!(
            "{:.1} s ({:.0}/s; CPU kspaces / etcd / bench {:.2} / {:.2} / {:.2} cores); etcd member 0's folder {:.0} MiB",
            filled.as_secs_f64(),
            objects as f64 / filled.as_secs_f64(),
            cores.servers,
            cores.etcd.unwrap_or_default(),
            cores.client,
            mib(etcd_bytes)
        ),
    );
    let rss: Vec<String> =
        cluster.pids().iter().map(|pid| Ok(format!("{:.0}", status_kib(*pid, "VmRSS:")? as f64 / 1024.0))).collect::<Result<_>>()?;
    report.row("RSS of the replicas that took the fill (VmRSS)", format!("{} MiB", rss.join(" / ")));

    let leader = cluster.leader(Duration::from_secs(60)).await?;
    let restarted = (leader + 1) % cluster.members.len();
    cluster.members[restarted].replica.kill();
    let member = cluster.start_member(&SHORT_TIMING).await?;
    let pid = member.replica.pid();
    let ready_rss = status_kib(pid, "VmRSS:")? as f64 / 1024.0;
    let began = Instant::now();
    Api::<Namespace>::all(member.client.clone()).list(&ListParams::default()).await?;
    let listed = member.to_ready + began.elapsed();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let later_rss = status_kib(pid, "VmRSS:")? as f64 / 1024.0;
    let peak = status_kib(pid, "VmHWM:")? as f64 / 1024.0;
    let in_default = Api::<ConfigMap>::namespaced(member.client.clone(), "default").list(&ListParams::default().limit(1)).await?;
    let others = in_default.metadata.remaining_item_count.unwrap_or_default() as usize + in_default.items.len() + WATCHED_CREATES;
    report.row(
        format!("replica restart over {objects} + {others} ConfigMaps in etcd: spawn → URL printed / → `/readyz` 200 / → first list of namespaces"),
        format!("{:.0} ms / {:.0} ms / {:.0} ms", millis(member.to_url), millis(member.to_ready), millis(listed)),
    );
    report.row("restarted replica's RSS: when ready / 10 s later (peak VmHWM)", format!("{ready_rss:.1} / {later_rss:.1} MiB ({peak:.1} MiB)"));
    let began = Instant::now();
    let list = Api::<ConfigMap>::namespaced(member.client.clone(), "bench-fill").list(&ListParams::default().limit(500)).await?;
    report.row(
        "restarted replica: first page (limit=500) of the filled namespace",
        format!("{:.0} ms ({} items, remainingItemCount {:?})", millis(began.elapsed()), list.items.len(), list.metadata.remaining_item_count),
    );
    cluster.members[restarted] = member;
    Ok(())
}

/// `objects` creates by `FILL_CONCURRENCY` workers, worker `w` through `apis[w % apis.len()]`; progress on stderr.
async fn fill(apis: &[Api<ConfigMap>], objects: usize) -> Result<()> {
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let began = Instant::now();
    let workers: Vec<_> = (0..FILL_CONCURRENCY)
        .map(|worker| {
            let (api, done) = (apis[worker % apis.len()].clone(), done.clone());
            tokio::spawn(async move {
                for i in (worker..objects).step_by(FILL_CONCURRENCY) {
                    api.create(&PostParams::default(), &configmap(format!("obj-{i:07}"))).await?;
                    let count = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                    if count % (objects / 10).max(1) == 0 {
                        eprintln!("fill: {count} / {objects} after {:.1} s", began.elapsed().as_secs_f64());
                    }
                }
                Ok::<_, BoxError>(())
            })
        })
        .collect();
    for worker in workers {
        worker.await??;
    }
    Ok(())
}
