//! The floor under targets kspaces is measured against, on the machine the bench runs on: the API bench's watch
//! row (issue 19: 100 watchers, 20 creates/s, p99 ≤ 3 ms) and its creates and GETs at N = 64, and the fairness
//! bench's two tenants (issue 22: B's p99 under A's flood within 2× of B's p99 alone), run with the same clients
//! and load against a floor server instead of kspaces.
//!
//! The floor server is this binary started again with `--floor-server DIR`, so that server and clients are
//! separate processes on the same cores, as with kspaces. It has what no API server can skip: HTTPS through the
//! same stack (actix-web, rustls, one HTTP worker per core), JSON in and out, a create answered only once its
//! bytes are on disk (appended to a file and `fdatasync`ed by one commit thread, writes that arrive together
//! sharing a sync), and a create's event encoded once and written to every watcher. It has nothing else: no
//! store to look things up in, no authentication, authorization, tenancy, admission, validation or flow control.
//! A GET answers the same ConfigMap every time. Its objects carry what kspaces adds to each (a managedFields entry,
//! the logical cluster annotation, the tenant), so that the clients decode answers of the same size. What kspaces
//! measures above the floor is kspaces' own; what the floor itself misses, this machine misses.
//!
//! Run: `cargo bench -p kspaces-tests --bench floor`; `FLOOR_BENCH_ONLY=watch`, `=throughput` (the API bench's
//! creates and GETs at N = 64) or `=fairness` runs one part;
//! `FAIRNESS_PHASE_SECONDS` and `FAIRNESS_FLOOD_CONNECTIONS` as in the fairness bench; `FLOOR_SYNC=0` leaves out
//! the `fdatasync` (creates are then answered once written to the page cache: not durable, for comparison only).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use bytes::Bytes;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use kube::Api;
use kspaces_tests::kube_client;
use serde_json::Value;
use tokio::sync::{broadcast, oneshot};

mod support;

use support::light::{flood_connections, Phases, CREATES_PER_SECOND, GETS_PER_SECOND, TABLE_HEADER};
use support::watch::{FanOut, Watchers};
use support::{block_on, closed_loops, configmap, env_usize, millis, percentile, wait_ready, Cores, CpuClock, Result};

/// The argument that makes this binary the floor server.
const SERVE: &str = "--floor-server";
/// The kubeconfig the floor server writes into its directory once it listens.
const KUBECONFIG: &str = "floor.kubeconfig";

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some(SERVE) {
        let dir = PathBuf::from(args.next().ok_or("usage: floor --floor-server DIR")?);
        return serve(&dir);
    }
    let only = std::env::var("FLOOR_BENCH_ONLY").unwrap_or_default();
    let began = Instant::now();
    if only.is_empty() || only == "watch" {
        let floor = FloorProcess::start()?;
        let (fan_out, cores) = block_on(watch(&floor))?;
        println!("\n| measurement | result | server CPU (cores) | bench client CPU (cores) |\n|---|---|---|---|");
        println!("| {} (floor server) | {} | {:.2} | {:.2} |", FanOut::measurement(), fan_out.summary(), cores.server, cores.client);
    }
    if only.is_empty() || only == "throughput" {
        let floor = FloorProcess::start()?;
        let rows = block_on(throughput(&floor))?;
        println!("\n| measurement (floor server) | result | server CPU (cores) | bench client CPU (cores) |\n|---|---|---|---|");
        for row in rows {
            println!("{row}");
        }
    }
    if only.is_empty() || only == "fairness" {
        let floor = FloorProcess::start()?;
        let phase = Duration::from_secs(env_usize("FAIRNESS_PHASE_SECONDS", 8)? as u64);
        let phases = block_on(fairness(&floor, phase))?;
        println!("\nphase {} s; B: {GETS_PER_SECOND} GET/s + {CREATES_PER_SECOND} creates/s (open loop); A: {} closed loops of GET\n", phase.as_secs(), flood_connections()?);
        println!("{TABLE_HEADER}");
        println!("{}", phases.row("floor server"));
    }
    println!("\ntotal bench time {:.1} s", began.elapsed().as_secs_f64());
    Ok(())
}

/// The watch row against the floor: its figures and the CPU each side used.
async fn watch(floor: &FloorProcess) -> Result<(FanOut, Cores)> {
    let client = kube_client(&floor.kubeconfig).await?;
    wait_ready(&client, Instant::now() + Duration::from_secs(10)).await?;
    let watchers = Watchers::open(&client, "bench-watch").await?;
    let clock = CpuClock::start(floor.pid())?;
    let fan_out = watchers.measure().await?;
    Ok((fan_out, clock.cores()?))
}

/// The API bench's create and GET rows at N = 64 against the floor (0.5 s to warm up, then 4 s), as table lines.
async fn throughput(floor: &FloorProcess) -> Result<Vec<String>> {
    const CONCURRENCY: usize = 64;
    let client = kube_client(&floor.kubeconfig).await?;
    wait_ready(&client, Instant::now() + Duration::from_secs(10)).await?;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &configmap("seed".into())).await?;
    let mut rows = Vec::new();
    for creates in [true, false] {
        let request = |phase: &'static str| {
            let api = api.clone();
            move |worker: usize, i: u64| {
                let api = api.clone();
                async move {
                    match creates {
                        true => api.create(&PostParams::default(), &configmap(format!("{phase}-{worker}-{i}"))).await.map(drop)?,
                        false => api.get("seed").await.map(drop)?,
                    }
                    Ok(())
                }
            }
        };
        closed_loops(CONCURRENCY, Duration::from_millis(500), request("warm")).await?;
        let clock = CpuClock::start(floor.pid())?;
        let mut loops = closed_loops(CONCURRENCY, Duration::from_secs(4), request("measured")).await?;
        let cores = clock.cores()?;
        loops.latencies.sort();
        let what = if creates { "durable ConfigMap creates/s" } else { "ConfigMap gets/s" };
        rows.push(format!("| {what}, N = {CONCURRENCY} | {:.0}/s (p50 {:.2} ms, p99 {:.2} ms) | {:.2} | {:.2} |", loops.per_second(),
            millis(percentile(&loops.latencies, 50.0)), millis(percentile(&loops.latencies, 99.0)), cores.server, cores.client));
    }
    Ok(rows)
}

/// The fairness phases against the floor: A and B are two clients of one kubeconfig (the floor knows no tenants).
async fn fairness(floor: &FloorProcess, phase: Duration) -> Result<Phases> {
    let client = kube_client(&floor.kubeconfig).await?;
    wait_ready(&client, Instant::now() + Duration::from_secs(10)).await?;
    let flood: Api<ConfigMap> = Api::default_namespaced(client);
    flood.create(&PostParams::default(), &configmap("seed".into())).await?;
    Phases::run(&flood, floor.kubeconfig.clone(), phase).await
}

/// The floor server as a child process, killed when dropped.
struct FloorProcess {
    child: Child,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl FloorProcess {
    fn start() -> Result<FloorProcess> {
        let dir = tempfile::tempdir()?;
        let child = Command::new(std::env::current_exe()?).arg(SERVE).arg(dir.path()).spawn()?;
        let mut floor = FloorProcess { child, kubeconfig: dir.path().join(KUBECONFIG), _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !floor.kubeconfig.exists() {
            if let Some(status) = floor.child.try_wait()? {
                return Err(format!("the floor server exited: {status}").into());
            }
            if Instant::now() > deadline {
                return Err("the floor server wrote no kubeconfig in 10 s".into());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(floor)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for FloorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The floor server's shared state: the commit thread's queue, the watch feed, the next resourceVersion and the
/// one ConfigMap every GET answers.
struct Floor {
    commits: mpsc::Sender<Commit>,
    events: broadcast::Sender<Event>,
    revision: AtomicU64,
    seed: Bytes,
}

/// A create for the commit thread: its bytes, its watch event if it has one, and whom to tell once it is on disk.
struct Commit {
    bytes: Bytes,
    event: Option<Event>,
    done: oneshot::Sender<()>,
}

/// A ConfigMap's ADDED event, encoded once, and its namespace.
#[derive(Clone)]
struct Event {
    namespace: Arc<str>,
    line: Bytes,
}

/// Runs the floor server in `dir` until killed.
fn serve(dir: &Path) -> Result<()> {
    let key = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()])?;
    let certificate = key.cert.der().clone();
    let private = rustls::pki_types::PrivateKeyDer::Pkcs8(key.signing_key.serialize_der().into());
    let mut tls = rustls::ServerConfig::builder().with_no_client_auth().with_single_cert(vec![certificate], private)?;
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];

    let (events, _) = broadcast::channel(4096);
    let (commits, queue) = mpsc::channel();
    let log = preallocated_log(&dir.join("log"))?;
    let feed = events.clone();
    std::thread::Builder::new().name("floor-commit".into()).spawn(move || commit_thread(log, queue, feed))?;
    let mut seed = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "seed", "namespace": "default"},
        "data": {"key": "a small value"},
    });
    as_stored(&mut seed, 1).ok_or("the seed has no metadata")?;
    let floor = web::Data::new(Floor { commits, events, revision: AtomicU64::new(1), seed: serde_json::to_vec(&seed)?.into() });

    actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(move || {
            App::new()
                .app_data(floor.clone())
                .route("/readyz", web::get().to(|| async { HttpResponse::Ok().body("ok") }))
                .route("/api/v1/namespaces", web::post().to(create))
                .route("/api/v1/namespaces/{namespace}/configmaps", web::post().to(create))
                .route("/api/v1/namespaces/{namespace}/configmaps", web::get().to(list_or_watch))
                .route("/api/v1/namespaces/{namespace}/configmaps/{name}", web::get().to(get))
        })
        .workers(std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get))
        .tcp_nodelay(true)
        .bind_rustls_0_23(("127.0.0.1", 0), tls)?;
        let port = server.addrs().first().map(|address| address.port()).ok_or("the floor server bound no address")?;
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: floor\n  cluster:\n    server: https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\n\
             users:\n- name: floor\n  user:\n    token: floor\ncontexts:\n- name: floor\n  context:\n    cluster: floor\n    user: floor\ncurrent-context: floor\n"
        );
        // Written whole under another name, then renamed: the bench starts when the file exists.
        std::fs::write(dir.join("kubeconfig.partial"), kubeconfig)?;
        std::fs::rename(dir.join("kubeconfig.partial"), dir.join(KUBECONFIG))?;
        server.run().await?;
        Ok(())
    })
}

/// The log's length, written with zeros and synced before the server starts. Writes then land in blocks the file
/// already has, so `fdatasync` flushes only them, as with sled's preallocated segments; appending to a file would
/// also make every sync commit the file system's journal (the new length).
const LOG_BYTES: u64 = 32 << 20;

fn preallocated_log(path: &Path) -> std::io::Result<File> {
    let mut log = File::create(path)?;
    let zeros = vec![0; 1 << 20];
    for _ in 0..LOG_BYTES >> 20 {
        log.write_all(&zeros)?;
    }
    log.sync_all()?;
    Ok(log)
}

/// Takes the creates that are waiting, writes them into the log (from its start again when it is full), syncs
/// once, answers them, then publishes their events (answers first, as kspaces' sled commit does).
fn commit_thread(log: File, queue: mpsc::Receiver<Commit>, feed: broadcast::Sender<Event>) {
    use std::os::unix::fs::FileExt;
    let sync = std::env::var("FLOOR_SYNC").map_or(true, |value| value != "0");
    let mut offset = 0;
    while let Ok(first) = queue.recv() {
        let batch: Vec<Commit> = std::iter::once(first).chain(queue.try_iter()).collect();
        let written = batch.iter().try_for_each(|commit| {
            if offset + commit.bytes.len() as u64 > LOG_BYTES {
                offset = 0;
            }
            log.write_all_at(&commit.bytes, offset)?;
            offset += commit.bytes.len() as u64;
            Ok(())
        });
        let written = written.and_then(|()| if sync { log.sync_data() } else { Ok(()) });
        if let Err(err) = written {
            eprintln!("floor server: the log could not be written: {err}");
            return;
        }
        let mut events = Vec::with_capacity(batch.len());
        for commit in batch {
            let _ = commit.done.send(());
            events.extend(commit.event);
        }
        for event in events {
            // No receivers (no watch open) is not an error.
            let _ = feed.send(event);
        }
    }
}

/// POST of a namespace or a ConfigMap: the object given back with the metadata a server sets, once on disk.
async fn create(floor: web::Data<Floor>, request: HttpRequest, body: web::Bytes) -> HttpResponse {
    let Ok(mut object) = serde_json::from_slice::<Value>(&body) else {
        return status(400, "BadRequest", "the body is not a JSON object");
    };
    let namespace = request.match_info().get("namespace").map(str::to_owned);
    let revision = floor.revision.fetch_add(1, Ordering::Relaxed) + 1;
    if let (Some(namespace), Some(metadata)) = (&namespace, object.get_mut("metadata").and_then(Value::as_object_mut)) {
        metadata.insert("namespace".into(), namespace.as_str().into());
    }
    if as_stored(&mut object, revision).is_none() {
        return status(422, "Invalid", "metadata is required");
    }
    let Ok(bytes) = serde_json::to_vec(&object) else {
        return status(500, "InternalError", "the object could not be encoded");
    };
    let bytes = Bytes::from(bytes);
    let event = namespace.map(|namespace| {
        let line = [&b"{\"type\":\"ADDED\",\"object\":"[..], &bytes, b"}\n"].concat();
        Event { namespace: namespace.into(), line: line.into() }
    });
    let (done, committed) = oneshot::channel();
    if floor.commits.send(Commit { bytes: bytes.clone(), event, done }).is_err() || committed.await.is_err() {
        return status(500, "InternalError", "the commit thread has stopped");
    }
    HttpResponse::Created().content_type("application/json").body(bytes)
}

/// Sets the metadata a server sets on a create, and what kspaces adds to every object it answers, so that clients
/// decode objects of the same size: the writer's managedFields entry (here for the top-level `data` keys, which are
/// all the benches' objects have), the logical cluster annotation and the tenant. `None` without `metadata`.
fn as_stored(object: &mut Value, revision: u64) -> Option<()> {
    let mut data = serde_json::Map::from_iter([(".".to_owned(), serde_json::json!({}))]);
    data.extend(object.get("data").and_then(Value::as_object).into_iter().flatten().map(|(key, _)| (format!("f:{key}"), serde_json::json!({}))));
    let managed = serde_json::json!([{"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": data},
        "manager": "kube-rs", "operation": "Update", "time": "2026-11-28T00:00:00Z"}]);
    let metadata = object.get_mut("metadata").and_then(Value::as_object_mut)?;
    metadata.insert("uid".into(), format!("00000000-0000-0000-0000-{revision:012}").into());
    metadata.insert("resourceVersion".into(), revision.to_string().into());
    metadata.insert("creationTimestamp".into(), "2026-11-28T00:00:00Z".into());
    metadata.insert("managedFields".into(), managed);
    metadata.insert("annotations".into(), serde_json::json!({"kcp.io/cluster": "root"}));
    metadata.insert("tenant".into(), "system".into());
    Some(())
}

/// GET of one ConfigMap: always the seed.
async fn get(floor: web::Data<Floor>) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(floor.seed.clone())
}

/// GET of the collection: an empty list at the current resourceVersion, or with `watch=true` (or `1`) every later
/// create's event in this namespace, a line each.
async fn list_or_watch(floor: web::Data<Floor>, request: HttpRequest) -> HttpResponse {
    let watch = request.query_string().split('&').any(|pair| pair == "watch=true" || pair == "watch=1");
    if !watch {
        let revision = floor.revision.load(Ordering::Relaxed);
        let list = format!("{{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":\"{revision}\"}},\"items\":[]}}");
        return HttpResponse::Ok().content_type("application/json").body(list);
    }
    let namespace: Arc<str> = request.match_info().get("namespace").unwrap_or_default().into();
    let events = floor.events.subscribe();
    let stream = futures::stream::unfold((events, namespace), |(mut events, namespace)| async move {
        loop {
            match events.recv().await {
                Ok(event) if event.namespace == namespace => return Some((Ok::<_, actix_web::Error>(event.line), (events, namespace))),
                Ok(_) => continue,
                // A watcher that fell behind by the feed's length loses its watch, and its client sees it end.
                Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    HttpResponse::Ok().content_type("application/json").streaming(stream)
}

/// A Kubernetes `Status` answer.
fn status(code: u16, reason: &str, message: &str) -> HttpResponse {
    let body = serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason, "message": message});
    HttpResponse::build(actix_web::http::StatusCode::from_u16(code).unwrap_or(actix_web::http::StatusCode::INTERNAL_SERVER_ERROR))
        .content_type("application/json")
        .body(body.to_string())
}
