//! Storage benchmark: durable create rate, get rate, large lists and watch fan-out latency, for sled and etcd.
//!
//! Run with `cargo bench -p kspaces-storage --bench storage` (etcd must be on the PATH). etcd is started here as a child process in a temporary directory, like the test harness does.
//! Iteration counts are fixed and small so the whole run stays well under three minutes on two cores; the
//! output is a markdown table for `docs/benchmarks.md`.

#[path = "../tests/support/etcd.rs"]
mod etcd_support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use kspaces_storage::key::ResourceKeys;
use kspaces_storage::sled::SledConfig;
use kspaces_storage::{
    ApiIdentity, GroupResource, Key, ListRequest, SpaceName, Store, StoreConfig, WatchFrom, WatchItem,
    WatchOptions,
};

const SINGLE_WRITER_CREATES: usize = 300;
const CONCURRENT_WRITERS: usize = 64;
const CREATES_PER_WRITER: usize = 50;
const GETS: usize = 3000;
const LIST_OBJECTS: usize = 10_000;
const LIST_PAGE: usize = 500;
const WATCHERS: usize = 1000;
const WATCHED_WRITES: usize = 100;

/// One measured row: a name and a value per backend column.
struct Row {
    metric: &'static str,
    values: Vec<String>,
}

/// A ConfigMap-sized (~1 KiB) JSON object.
fn configmap(name: &str) -> Bytes {
    let data = "x".repeat(900);
    Bytes::from(format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"default"}},"data":{{"payload":"{data}"}}}}"#
    ))
}

fn configmaps(store: &Store) -> ResourceKeys {
    store.layout().resource(&GroupResource::new("", "configmaps"), &ApiIdentity::BuiltIn).expect("valid resource")
}

fn key(store: &Store, space: &str, name: &str) -> Key {
    let space = SpaceName::new(space).expect("valid space");
    configmaps(store).object(&space, Some("default"), name).expect("valid key")
}

fn per_second(count: usize, elapsed: Duration) -> String {
    format!("{:.0}/s", count as f64 / elapsed.as_secs_f64())
}

fn millis(elapsed: Duration) -> String {
    format!("{:.1} ms", elapsed.as_secs_f64() * 1000.0)
}

async fn creates(store: &Store, space: &str, writers: usize, per_writer: usize) -> Duration {
    let started = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|writer| {
            let store = store.clone();
            let space = space.to_owned();
            tokio::spawn(async move {
                for i in 0..per_writer {
                    let name = format!("w{writer}-{i}");
                    let k = key(&store, &space, &name);
                    store.create(&k, configmap(&name)).await.expect("no error").expect("created");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("writer task");
    }
    started.elapsed()
}

async fn gets(store: &Store, space: &str) -> Duration {
    let started = Instant::now();
    for i in 0..GETS {
        let k = key(store, space, &format!("w{}-{}", i % CONCURRENT_WRITERS, i % CREATES_PER_WRITER));
        store.get(&k).await.expect("get").expect("present");
    }
    started.elapsed()
}

async fn lists(store: &Store) -> (Duration, Duration) {
    let per_writer = LIST_OBJECTS / CONCURRENT_WRITERS + 1;
    creates(store, "list", CONCURRENT_WRITERS, per_writer).await;
    let range = configmaps(store).space(&SpaceName::new("list").expect("valid"));
    let started = Instant::now();
    let all = store.list(&range, &ListRequest::default()).await.expect("list");
    let one_call = started.elapsed();
    assert!(all.items.len() >= LIST_OBJECTS);
    let started = Instant::now();
    let mut request = ListRequest { limit: Some(LIST_PAGE), ..ListRequest::default() };
    let mut seen = 0;
    loop {
        let page = store.list(&range, &request).await.expect("list page");
        seen += page.items.len();
        match page.continue_token {
            Some(token) => request.continue_token = Some(token),
            None => break,
        }
    }
    assert_eq!(seen, all.items.len());
    (one_call, started.elapsed())
}

/// Latency from the write call to each of `WATCHERS` watchers receiving the event: (p50, p99, max).
/// Write `i` records its start (nanoseconds since `base`) in slot `i`, so watchers read it without a lock.
async fn watch_latency(store: &Store) -> (Duration, Duration, Duration) {
    let range = configmaps(store).space(&SpaceName::new("watch").expect("valid"));
    let base = Instant::now();
    let started_at: Arc<Vec<AtomicU64>> = Arc::new((0..WATCHED_WRITES).map(|_| AtomicU64::new(0)).collect());
    let mut tasks = Vec::new();
    for _ in 0..WATCHERS {
        let mut watcher = store.watch(&range, WatchFrom::Now, WatchOptions::default()).await.expect("watch");
        let started_at = started_at.clone();
        tasks.push(tokio::spawn(async move {
            let mut histogram = Histogram::<u64>::new(3).expect("histogram");
            for _ in 0..WATCHED_WRITES {
                let Some(Ok(WatchItem::Event(event))) = watcher.next().await else { panic!("watch ended") };
                let received = base.elapsed().as_nanos() as u64;
                let index: usize = event.key.as_str().rsplit('e').next().and_then(|i| i.parse().ok()).expect("index");
                let start = started_at[index].load(Ordering::Acquire);
                histogram.record(received.saturating_sub(start) / 1_000).expect("record");
            }
            histogram
        }));
    }
    for i in 0..WATCHED_WRITES {
        let name = format!("e{i}");
        let k = key(store, "watch", &name);
        started_at[i].store(base.elapsed().as_nanos() as u64, Ordering::Release);
        store.create(&k, configmap(&name)).await.expect("no error").expect("created");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut all = Histogram::<u64>::new(3).expect("histogram");
    for task in tasks {
        all.add(task.await.expect("watcher task")).expect("merge");
    }
    let micros = |q: f64| Duration::from_micros(all.value_at_quantile(q));
    (micros(0.5), micros(0.99), Duration::from_micros(all.max()))
}

/// Every store measurement, in table order.
async fn measure(store: &Store) -> Vec<String> {
    let one = creates(store, "one", 1, SINGLE_WRITER_CREATES).await;
    let many = creates(store, "many", CONCURRENT_WRITERS, CREATES_PER_WRITER).await;
    let got = gets(store, "many").await;
    let (one_call, paged) = lists(store).await;
    let (p50, p99, max) = watch_latency(store).await;
    vec![
        per_second(SINGLE_WRITER_CREATES, one),
        per_second(CONCURRENT_WRITERS * CREATES_PER_WRITER, many),
        per_second(GETS, got),
        millis(one_call),
        millis(paged),
        millis(p50),
        millis(p99),
        millis(max),
    ]
}

const METRICS: [&str; 8] = [
    "durable creates, 1 writer",
    "durable creates, 64 writers",
    "gets, 1 reader",
    "list 10,000 objects, one call",
    "list 10,000 objects, pages of 500",
    "watch latency p50, 1,000 watchers",
    "watch latency p99, 1,000 watchers",
    "watch latency max, 1,000 watchers",
];

fn bench_config() -> StoreConfig {
    StoreConfig { bookmark_interval: None, ..StoreConfig::default() }
}

async fn sled_column() -> Vec<String> {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open_sled(&SledConfig::new(dir.path().join("db")), bench_config()).expect("open sled");
    measure(&store).await
}

async fn etcd_columns() -> (Vec<String>, Vec<Row>) {
    let server = etcd_support::EtcdServer::start();
    let config = StoreConfig { layout: kspaces_storage::KeyLayout::new("/kspaces-bench").expect("valid"), ..bench_config() };
    let store = Store::open_etcd(&server.config(), config).await.expect("open etcd");
    let column = measure(&store).await;
    let raw = vec![
        Row { metric: "raw etcd-client puts, 1 writer", values: vec!["".into(), raw_puts(&server, 1, SINGLE_WRITER_CREATES).await] },
        Row {
            metric: "raw etcd-client puts, 64 writers",
            values: vec!["".into(), raw_puts(&server, CONCURRENT_WRITERS, CREATES_PER_WRITER).await],
        },
    ];
    (column, raw)
}

async fn raw_puts(server: &etcd_support::EtcdServer, writers: usize, per_writer: usize) -> String {
    use kspaces_storage::etcd::proto::etcdserverpb::PutRequest;
    let client = kspaces_storage::etcd::kv_client(&server.config()).expect("connect");
    let started = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|writer| {
            let mut kv = client.clone();
            tokio::spawn(async move {
                for i in 0..per_writer {
                    let name = format!("raw{writers}-{writer}-{i}");
                    let put = PutRequest { key: format!("/raw-bench/{name}").into(), value: configmap(&name).to_vec(), ..PutRequest::default() };
                    kv.put(put).await.expect("put");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("raw writer");
    }
    per_second(writers * per_writer, started.elapsed())
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    runtime.block_on(async {
        let total = Instant::now();
        let sled = sled_column().await;
        let (etcd, raw) = etcd_columns().await;
        let mut rows: Vec<Row> = METRICS
            .iter()
            .zip(sled.into_iter().zip(etcd))
            .map(|(metric, (sled, etcd))| Row { metric, values: vec![sled, etcd] })
            .collect();
        rows.extend(raw);
        println!("| metric | sled | etcd (single member) |");
        println!("|---|---:|---:|");
        for row in rows {
            println!("| {} | {} |", row.metric, row.values.join(" | "));
        }
        println!();
        println!("total bench time: {:.1} s", total.elapsed().as_secs_f64());
    });
}
