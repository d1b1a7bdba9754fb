//! API benchmark: the release `kspaces` binary over HTTPS with keep-alive, driven by N concurrent kube-rs
//! requests (kube 5 speaks HTTP/1.1, so its pool opens one kept-alive connection per concurrent request).
//! Measures durable ConfigMap creates/s, gets/s, listing 10,000 ConfigMaps, watch event latency with 100
//! watchers, idle RSS and time to `/readyz`, and prints a markdown table. Every phase is bounded in time.
//!
//! Run: `cargo bench -p kspaces-tests --bench api` (the harness builds `target/release/kspaces`, or set
//! `KSPACES_BIN`); `API_BENCH_ONLY=watch` runs the watch row alone, on a fresh server, and `API_BENCH_ONLY=creates`
//! the N = 64 creates row three times (to compare binaries, or to profile the server meanwhile);
//! `API_BENCH_ONLY=policy` the N = 64 creates row without, with a ValidatingAdmissionPolicy of three CEL
//! validations, and without again; `API_BENCH_ONLY=webhook` the N = 64 creates row without and then with one validating webhook (an HTTPS server
//! in this process answering "allowed", keeping connections alive, and counting them) on every create.
//!
//! The targets in the table are issue 19's.

use std::future::Future;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::{Api, Client};
use kspaces_tests::Server;

mod support;
// The admission webhook the tests use (`API_BENCH_ONLY=webhook`); the bench answers every review "allowed".
#[allow(dead_code)]
#[path = "../tests/admission_webhooks/webhook.rs"]
mod webhook;

use support::watch::{FanOut, Watchers};
use support::{client, closed_loops, configmap, millis, percentile, status_kib, wait_ready, BoxError, Cores, CpuClock, Result};

/// How long each throughput phase is measured, after a short warm-up that opens the connections.
const PHASE: Duration = Duration::from_secs(4);
const WARM_UP: Duration = Duration::from_millis(500);
const LIST_SIZE: usize = 10_000;
const STARTS: usize = 5;

/// One line of the result table.
struct Row {
    measurement: String,
    result: String,
    server_cpu: String,
    /// The server's CPU in cores, unrounded (`server_cpu` is for the table).
    server_cores: f64,
    client_cpu: String,
    target: &'static str,
    verdict: &'static str,
}

impl Row {
    fn new(measurement: impl Into<String>, result: impl Into<String>) -> Row {
        Row { measurement: measurement.into(), result: result.into(), server_cpu: "–".into(), server_cores: 0.0, client_cpu: "–".into(), target: "", verdict: "" }
    }

    fn cpu(mut self, cores: Cores) -> Row {
        self.server_cpu = format!("{:.2}", cores.server);
        self.server_cores = cores.server;
        self.client_cpu = format!("{:.2}", cores.client);
        self
    }

    fn target(mut self, target: &'static str, met: bool) -> Row {
        self.target = target;
        self.verdict = if met { "met" } else { "**not met**" };
        self
    }
}

fn main() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let began = Instant::now();
    let rows = runtime.block_on(run())?;
    println!("\n| measurement | result | server CPU (cores) | bench client CPU (cores) | target | verdict |\n|---|---|---|---|---|---|");
    for row in rows {
        println!("| {} | {} | {} | {} | {} | {} |", row.measurement, row.result, row.server_cpu, row.client_cpu, row.target, row.verdict);
    }
    println!("\ntotal bench time {:.1} s", began.elapsed().as_secs_f64());
    Ok(())
}

async fn run() -> Result<Vec<Row>> {
    // Build (or locate) the release binary first, so that no start-up sample includes a cargo build.
    kspaces_tests::kspaces_binary();
    let only = std::env::var("API_BENCH_ONLY").ok();
    let (only_watch, only_creates) = (only.as_deref() == Some("watch"), only.as_deref() == Some("creates"));
    let mut rows = if only.is_some() { Vec::new() } else { startup_rows().await? };
    let server = Server::start();
    let client = client(&server).await?;
    wait_ready(&client, Instant::now() + Duration::from_secs(10)).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    if only_watch {
        rows.push(watch_row(&server, &client).await?);
        return Ok(rows);
    }
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    if only.as_deref() == Some("webhook") {
        return webhook_rows(&server, &client, &api).await;
    }
    if only.as_deref() == Some("policy") {
        return policy_rows(&server, &client, &api).await;
    }
    if only_creates {
        for round in 0..3 {
            rows.push(create_row(&server, &api, 64, round).await?);
        }
        return Ok(rows);
    }
    let idle = status_kib(server.pid(), "VmRSS:")?;
    let idle_mib = idle as f64 / 1024.0;
    rows.push(Row::new("idle RSS after start (VmRSS)", format!("{idle_mib:.1} MiB")).target("≤ 20 MiB", idle_mib <= 20.0));

    for concurrency in [1, 16, 64] {
        rows.push(create_row(&server, &api, concurrency, 0).await?);
    }
    let names = seed_for_gets(&api).await?;
    for concurrency in [16, 64] {
        rows.push(get_row(&server, &api, &names, concurrency).await?);
    }
    rows.extend(list_rows(&server, &client).await?);
    rows.push(watch_row(&server, &client).await?);
    let loaded = status_kib(server.pid(), "VmRSS:")? as f64 / 1024.0;
    rows.push(Row::new(format!("RSS after the run ({} objects stored)", LIST_SIZE + 2000), format!("{loaded:.1} MiB")));
    Ok(rows)
}

/// Time from spawning the process to `/readyz` answering, on a fresh data dir (which also generates the CA
/// and certificates) and on a restart over the same, still empty, store.
async fn startup_rows() -> Result<Vec<Row>> {
    let (mut fresh, mut restart) = (Vec::new(), Vec::new());
    for _ in 0..STARTS {
        let (server, elapsed) = timed_start(Server::start).await?;
        fresh.push(elapsed);
        let dir = server.stop();
        let (_server, elapsed) = timed_start(move || Server::start_in(dir, &[])).await?;
        restart.push(elapsed);
    }
    let row = |label: &str, samples: &mut Vec<Duration>| {
        samples.sort();
        let (median, worst) = (samples[samples.len() / 2], samples[samples.len() - 1]);
        Row::new(format!("{label}: process start → /readyz 200 (median of {STARTS}, max)"), format!("{} ms, max {} ms", median.as_millis(), worst.as_millis()))
            .target("≤ 100 ms", median <= Duration::from_millis(100))
    };
    Ok(vec![row("fresh data dir", &mut fresh), row("restart, empty store", &mut restart)])
}

async fn timed_start(start: impl FnOnce() -> Server) -> Result<(Server, Duration)> {
    let began = Instant::now();
    let server = start();
    let client = client(&server).await?;
    wait_ready(&client, began + Duration::from_secs(10)).await?;
    Ok((server, began.elapsed()))
}

/// Throughput, per-request latencies and the server's CPU use (cores) of one closed-loop phase.
struct Load {
    per_second: f64,
    latencies: Vec<Duration>,
    cores: Cores,
}

impl Load {
    fn latency_summary(&mut self) -> String {
        self.latencies.sort();
        format!("p50 {:.2} ms, p99 {:.2} ms", millis(percentile(&self.latencies, 50.0)), millis(percentile(&self.latencies, 99.0)))
    }
}

/// Runs `concurrency` closed loops of `request(worker, iteration)` for `duration`, with the CPU both sides used.
async fn drive<F, Fut>(server: &Server, concurrency: usize, duration: Duration, request: F) -> Result<Load>
where
    F: Fn(usize, u64) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<()>> + Send,
{
    let clock = CpuClock::start(server.pid())?;
    let loops = closed_loops(concurrency, duration, request).await?;
    let cores = clock.cores()?;
    Ok(Load { per_second: loops.per_second(), latencies: loops.latencies, cores })
}

/// The creates of `round` (names differ from round to round).
async fn create_row(server: &Server, api: &Api<ConfigMap>, concurrency: usize, round: usize) -> Result<Row> {
    let create = |phase: &'static str| {
        let api = api.clone();
        move |worker: usize, i: u64| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &configmap(format!("{phase}{round}-{concurrency}-{worker}-{i}"))).await?;
                Ok(())
            }
        }
    };
    drive(server, concurrency, WARM_UP, create("warm")).await?;
    let mut load = drive(server, concurrency, PHASE, create("create")).await?;
    let latency = load.latency_summary();
    let row = Row::new(format!("durable ConfigMap creates/s, N = {concurrency}"), format!("{:.0}/s ({latency})", load.per_second))
        .cpu(load.cores);
    Ok(match concurrency {
        64 => row.target("≥ 12,000/s, p99 ≤ 15 ms", load.per_second >= 12_000.0 && percentile(&load.latencies, 99.0) <= Duration::from_millis(15)),
        _ => row,
    })
}

async fn seed_for_gets(api: &Api<ConfigMap>) -> Result<Vec<String>> {
    let names: Vec<String> = (0..100).map(|i| format!("get-{i}")).collect();
    for name in &names {
        api.create(&PostParams::default(), &configmap(name.clone())).await?;
    }
    Ok(names)
}

async fn get_row(server: &Server, api: &Api<ConfigMap>, names: &[String], concurrency: usize) -> Result<Row> {
    let get = {
        let (api, names) = (api.clone(), std::sync::Arc::new(names.to_vec()));
        move |worker: usize, i: u64| {
            let (api, names) = (api.clone(), names.clone());
            async move {
                api.get(&names[(worker * 7 + i as usize) % names.len()]).await?;
                Ok(())
            }
        }
    };
    drive(server, concurrency, WARM_UP, get.clone()).await?;
    let mut load = drive(server, concurrency, PHASE, get).await?;
    let latency = load.latency_summary();
    let row = Row::new(format!("ConfigMap gets/s, N = {concurrency}"), format!("{:.0}/s ({latency})", load.per_second)).cpu(load.cores);
    Ok(match concurrency {
        64 => row.target("≥ 35,000/s", load.per_second >= 35_000.0),
        _ => row,
    })
}

/// A ConfigMap with 1 KiB of data, as the list rows store.
fn configmap_kib(name: String) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta { name: Some(name), ..ObjectMeta::default() },
        data: Some([("key".to_owned(), "0123456789abcdef".repeat(64))].into()),
        ..ConfigMap::default()
    }
}

/// One list of the bench namespace answered in `accept`, its body read to the end but neither kept nor decoded:
/// the time and the bytes received. (Collecting the 15 MB into one buffer took the bench client a copy the server
/// is not concerned with.)
async fn raw_list(client: &Client, accept: &str) -> Result<(Duration, usize)> {
    let request = http::Request::get("/api/v1/namespaces/bench-list/configmaps").header("Accept", accept).body(kube::client::Body::empty())?;
    let started = Instant::now();
    let response = client.send(request).await?;
    if !response.status().is_success() {
        return Err(format!("list answered {}", response.status()).into());
    }
    let mut body = response.into_body();
    let mut received = 0;
    while let Some(frame) = body.frame().await {
        received += frame?.data_ref().map_or(0, |data| data.len());
    }
    Ok((started.elapsed(), received))
}

/// Fills a namespace with 10,000 ConfigMaps of 1 KiB, then times one unpaginated list (decoded by kube-rs, as a
/// user sees it; and its bytes only, in JSON, as a Table and in protobuf) and the kubectl-style walk of 500-item
/// pages (median of three each), and the server's RSS before, at its peak during, and after those lists.
async fn list_rows(server: &Server, client: &Client) -> Result<Vec<Row>> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = Namespace { metadata: ObjectMeta { name: Some("bench-list".into()), ..ObjectMeta::default() }, ..Namespace::default() };
    namespaces.create(&PostParams::default(), &namespace).await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "bench-list");
    // Every namespace holds the server's `kube-root-ca.crt` ConfigMap, as in kube: the list is it and 9,999 more
    // (a server from before 2026-11-29 writes none within the 3 s: the list is then 10,000 of the bench's own).
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut own = LIST_SIZE;
    while Instant::now() < deadline {
        if api.get_opt("kube-root-ca.crt").await?.is_some() {
            own = LIST_SIZE - 1;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let filled = Instant::now();
    fill(&api, own, 64, configmap_kib).await?;
    let fill_rate = own as f64 / filled.elapsed().as_secs_f64();

    tokio::time::sleep(Duration::from_millis(500)).await;
    let (mut whole, mut paged) = (Vec::new(), Vec::new());
    let mut raw: [Vec<Duration>; 3] = Default::default();
    let mut sizes = [0; 3];
    let formats = ["application/json", "application/json;as=Table;v=v1;g=meta.k8s.io", "application/vnd.kubernetes.protobuf"];
    // JSON first (streamed from the stored bytes), then Table and protobuf (built from parsed objects), each with
    // the server's RSS before and at its peak: writing 5 to clear_refs resets the peak (VmHWM) to the current RSS.
    let mut rss = Vec::new();
    let clock = CpuClock::start(server.pid())?;
    for json in [true, false] {
        std::fs::write(format!("/proc/{}/clear_refs", server.pid()), "5")?;
        let before = status_kib(server.pid(), "VmRSS:")? as f64 / 1024.0;
        for _ in 0..3 {
            if json {
                let started = Instant::now();
                let list = api.list(&ListParams::default()).await?;
                whole.push(started.elapsed());
                assert_eq!(list.items.len(), LIST_SIZE, "the unpaginated list is incomplete");
                drop(list);
                let started = Instant::now();
                let (pages, items) = walk_pages(&api, 500).await?;
                paged.push(started.elapsed());
                assert_eq!((pages, items), (LIST_SIZE / 500, LIST_SIZE), "the 500-page walk is incomplete");
            }
            for (index, accept) in formats.iter().enumerate().filter(|(index, _)| (*index == 0) == json) {
                let (elapsed, size) = raw_list(client, accept).await?;
                raw[index].push(elapsed);
                sizes[index] = size;
            }
        }
        let peak = status_kib(server.pid(), "VmHWM:")? as f64 / 1024.0;
        let after = status_kib(server.pid(), "VmRSS:")? as f64 / 1024.0;
        rss.push((before, peak, after));
    }
    let cores = clock.cores()?;
    whole.sort();
    paged.sort();
    raw.iter_mut().for_each(|samples| samples.sort());
    let mb = |bytes: usize| bytes as f64 / 1e6;
    let ((before, peak, after), (table_before, table_peak, table_after)) = (rss[0], rss[1]);
    Ok(vec![
        Row::new("(fill: 9,999 or 10,000 creates of 1 KiB ConfigMaps, N = 64)", format!("{fill_rate:.0}/s")),
        Row::new("list 10,000 ConfigMaps, one call, no limit, decoded by kube-rs (median of 3)", format!("{:.0} ms", millis(whole[1]))).cpu(cores),
        Row::new("list 10,000 ConfigMaps, one call, JSON bytes received (median of 3)", format!("{:.1} ms ({:.1} MB)", millis(raw[0][1]), mb(sizes[0])))
            .target("≤ 30 ms", raw[0][1] <= Duration::from_millis(30)),
        Row::new("list 10,000 ConfigMaps, one call, Table bytes received (median of 3)", format!("{:.1} ms ({:.1} MB)", millis(raw[1][1]), mb(sizes[1]))),
        Row::new("list 10,000 ConfigMaps, one call, protobuf bytes received (median of 3)", format!("{:.1} ms ({:.1} MB)", millis(raw[2][1]), mb(sizes[2]))),
        Row::new("list 10,000 ConfigMaps, limit=500 walk, 20 pages, decoded (median of 3)", format!("{:.0} ms", millis(paged[1]))).cpu(cores),
        Row::new("RSS before / peak during / after the 12 JSON lists", format!("{before:.1} / {peak:.1} / {after:.1} MiB"))
            .target("peak ≤ before + 10 MiB", peak <= before + 10.0),
        Row::new("RSS before / peak during / after the 6 Table and protobuf lists", format!("{table_before:.1} / {table_peak:.1} / {table_after:.1} MiB")),
    ])
}

async fn fill(api: &Api<ConfigMap>, count: usize, concurrency: usize, make: fn(String) -> ConfigMap) -> Result<()> {
    let workers: Vec<_> = (0..concurrency)
        .map(|worker| {
            let api = api.clone();
            tokio::spawn(async move {
                for i in (worker..count).step_by(concurrency) {
                    api.create(&PostParams::default(), &make(format!("item-{i:05}"))).await?;
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

async fn walk_pages(api: &Api<ConfigMap>, limit: u32) -> Result<(usize, usize)> {
    let (mut pages, mut items) = (0, 0);
    let mut params = ListParams::default().limit(limit);
    loop {
        let page = api.list(&params).await?;
        pages += 1;
        items += page.items.len();
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok((pages, items)),
        }
    }
}

/// 100 watchers on one namespace and 20 creates/s, the load (issue 19; `support::watch`).
async fn watch_row(server: &Server, client: &Client) -> Result<Row> {
    let watchers = Watchers::open(client, "bench-watch").await?;
    let clock = CpuClock::start(server.pid())?;
    let fan_out = watchers.measure().await?;
    let met = fan_out.event_p99() <= Duration::from_millis(3);
    Ok(Row::new(FanOut::measurement(), fan_out.summary()).cpu(clock.cores()?).target("event p99 ≤ 3 ms", met))
}


/// The N = 64 creates row, then the same with one validating webhook called on every ConfigMap create (in the
/// system space, where the bench's administrator writes), and again without it.
async fn webhook_rows(server: &Server, client: &Client, api: &Api<ConfigMap>) -> Result<Vec<Row>> {
    use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
    let mut rows = vec![create_row(server, api, 64, 0).await?];
    let hook = webhook::Webhook::start(webhook::Certificate::SignedByCa, |_| webhook::Reply::Allow);
    let configuration: ValidatingWebhookConfiguration = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "bench"},
        "webhooks": [{
            "name": "bench.example.com",
            "clientConfig": {"url": hook.url("/validate"), "caBundle": hook.ca_bundle()},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail",
        }],
    }))?;
    let configurations: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    configurations.create(&PostParams::default(), &configuration).await?;
    let mut with = create_row(server, api, 64, 1).await?;
    with.measurement = format!("{}, one validating webhook ({} reviews answered on {} connections)", with.measurement, hook.requests().len(), hook.connections());
    rows.push(with);
    configurations.delete("bench", &Default::default()).await?;
    rows.push(create_row(server, api, 64, 2).await?);
    Ok(rows)
}

/// The server's CPU per create of a creates row, in µs (its cores over its creates per second).
fn cpu_per_create(row: &Row) -> f64 {
    let cores = row.server_cores;
    let per_second: f64 = row.result.split('/').next().and_then(|n| n.parse().ok()).unwrap_or(f64::INFINITY);
    cores / per_second * 1e6
}

/// The N = 64 creates row without, with a ValidatingAdmissionPolicy of three CEL validations bound to every
/// ConfigMap create (in the system space, where the bench's administrator writes), and without again; each row
/// says the server's CPU per create, and the row with the policy what it added against the mean of the two without.
async fn policy_rows(server: &Server, client: &Client, api: &Api<ConfigMap>) -> Result<Vec<Row>> {
    use k8s_openapi::api::admissionregistration::v1::{ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding};
    let mut before = create_row(server, api, 64, 0).await?;
    let policy: ValidatingAdmissionPolicy = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "bench"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
            "validations": [
                {"expression": "object.metadata.name.size() < 200"},
                {"expression": "!has(object.metadata.labels) || !('forbidden' in object.metadata.labels)"},
                {"expression": "!has(object.data) || object.data.size() <= 16"},
            ],
        },
    }))?;
    let binding: ValidatingAdmissionPolicyBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "bench"}, "spec": {"policyName": "bench", "validationActions": ["Deny"]},
    }))?;
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(client.clone());
    policies.create(&PostParams::default(), &policy).await?;
    bindings.create(&PostParams::default(), &binding).await?;
    let mut with = create_row(server, api, 64, 1).await?;
    bindings.delete("bench", &Default::default()).await?;
    policies.delete("bench", &Default::default()).await?;
    let mut after = create_row(server, api, 64, 2).await?;
    let baseline = (cpu_per_create(&before) + cpu_per_create(&after)) / 2.0;
    let added = cpu_per_create(&with) - baseline;
    for row in [&mut before, &mut after] {
        row.measurement = format!("{}, no policy ({:.1} µs server CPU per create)", row.measurement, cpu_per_create(row));
    }
    with.measurement = format!("{}, a ValidatingAdmissionPolicy of three CEL validations ({:.1} µs server CPU per create)",
        with.measurement, cpu_per_create(&with));
    let mut with = with.target("policy adds ≤ 15 µs CPU per admitted create", added <= 15.0);
    with.result = format!("{} (+{added:.1} µs CPU per create)", with.result);
    Ok(vec![before, with, after])
}
