//! `kspaces snapshot save | restore | inspect`: a store (or one tenant's part of it, `tenant.rs`) to a file and
//! back (docs/operations.md), and `/snapshot`, which streams a running server's store (or one tenant) to `save
//! --kubeconfig` and puts a tenant's snapshot back into the running server (`restore --tenant`). The file format is
//! `kspaces_storage::snapshot`; this module opens stores, carries the data dir's PKI and shows progress.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kspaces_storage::sled::{SledConfig, SledLoader};
use kspaces_storage::snapshot::{Header, Item, SnapshotError, SnapshotReader, SnapshotWriter, Summary, TENANT_FILE};
use kspaces_storage::{KeyLayout, ListRequest, Store, StoreConfig};

mod tenant;

pub use tenant::{clean_half_restores, RECEIVED_PREFIX};
use tenant::{restore_into_server, restore_tenant, tenant_keys, TenantKeys};

use crate::status::{ApiError, ApiResult};
use crate::config::{MigrateArgs, SnapshotCommand, SnapshotInspectArgs, SnapshotRestoreArgs, SnapshotSaveArgs, StorageBackend};

/// The files of a data dir that make a server's identity, and whether each is private (mode 0600).
const IDENTITY_FILES: [(&str, bool); 8] = [
    ("pki/ca.crt", false),
    ("pki/ca.key", true),
    ("pki/apiserver.crt", false),
    ("pki/apiserver.key", true),
    ("sa.key", true),
    ("sa.pub", false),
    ("server-url", false),
    ("admin.kubeconfig", true),
];
/// Present in a data dir while a restore builds it: `kspaces serve` refuses such a dir.
pub const RESTORE_MARKER: &str = "restore-incomplete";
/// Objects read per page while saving.
const PAGE: usize = 1000;
/// sled's page cache while saving: one pass over the store gains nothing from a cache (sled's LRU keeps a page
/// per shard whatever its capacity), and the server's 64 MiB would be most of the command's memory.
const SAVE_CACHE_BYTES: u64 = 1024 * 1024;
/// sled's page cache while restoring: 16 MiB restored 300,000 objects twice as fast as 1 MiB (docs/benchmarks.md).
const RESTORE_CACHE_BYTES: u64 = 16 * 1024 * 1024;

fn sled_config(db: PathBuf, cache_capacity: u64) -> SledConfig {
    SledConfig { cache_capacity, ..SledConfig::new(db) }
}

pub fn run(command: &SnapshotCommand) -> Result<(), String> {
    match command {
        SnapshotCommand::Save(args) => save(args),
        SnapshotCommand::Restore(args) => restore(args),
        SnapshotCommand::Inspect(args) => inspect(args),
    }
}

fn named(file: &Path) -> impl Fn(SnapshotError) -> String + '_ {
    move |err| format!("snapshot {}: {err}", file.display())
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> String + '_ {
    move |err| format!("{}: {err}", path.display())
}

/// A progress display on stderr: drawn only on a terminal, never with `--quiet`.
fn progress(quiet: bool, total: Option<u64>, verb: &str) -> ProgressBar {
    let bar = match total {
        Some(total) => ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr()),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
    };
    if quiet {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    let template = match total {
        Some(_) => "{msg} [{bar:30}] {pos}/{len} objects, {per_sec}, ETA {eta}",
        None => "{msg} {spinner} {pos} objects, {per_sec}",
    };
    bar.set_style(ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()).progress_chars("=> "));
    bar.set_message(verb.to_owned());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn rate(objects: u64, took: Duration) -> u64 {
    (objects as f64 / took.as_secs_f64().max(0.001)) as u64
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|err| format!("cannot start a runtime: {err}"))
}

async fn open_store(args: &SnapshotSaveArgs) -> Result<Store, String> {
    let layout = KeyLayout::new(&args.etcd_prefix).map_err(|err| format!("--etcd-prefix: {err}"))?;
    let config = StoreConfig { layout, bookmark_interval: None, ..StoreConfig::default() };
    match args.storage_backend {
        StorageBackend::Sled => {
            let db = args.data_dir.join("db");
            if !db.is_dir() {
                return Err(format!("{} holds no store ({} is missing)", args.data_dir.display(), db.display()));
            }
            Store::open_sled(&sled_config(db.clone(), SAVE_CACHE_BYTES), config).map_err(|err| {
                let text = err.to_string();
                if text.contains("lock") {
                    format!("{} is in use by another process (is `kspaces serve` running on it?): stop the server first ({text})", db.display())
                } else {
                    text
                }
            })
        }
        StorageBackend::Etcd => {
            if args.etcd_servers.is_empty() {
                return Err("--storage-backend etcd needs --etcd-servers".to_owned());
            }
            let etcd = kspaces_storage::etcd::EtcdConfig::new(args.etcd_servers.clone());
            Store::open_etcd(&etcd, config).await.map_err(|err| err.to_string())
        }
    }
}

/// `FILE.tmp` beside `FILE`.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

/// Makes a rename in `path`'s directory durable.
fn sync_parent(path: &Path) -> Result<(), String> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    File::open(parent).and_then(|dir| dir.sync_all()).map_err(io(parent))
}

fn save(args: &SnapshotSaveArgs) -> Result<(), String> {
    let started = Instant::now();
    let temporary = with_suffix(&args.file, ".tmp");
    let outcome = match &args.kubeconfig {
        Some(kubeconfig) => runtime()?.block_on(download(kubeconfig, args.tenant.as_deref(), &temporary, args.quiet)),
        None => runtime()?.block_on(save_to(args, &temporary)),
    };
    let summary = match outcome {
        Ok(summary) => summary,
        Err(err) => {
            let _ = std::fs::remove_file(&temporary);
            return Err(err);
        }
    };
    std::fs::rename(&temporary, &args.file).map_err(io(&args.file))?;
    sync_parent(&args.file)?;
    let took = started.elapsed();
    println!("saved {} objects ({}) and {} files at revision {} to {} in {:.1}s ({} objects/s), sha256 {}",
        summary.1.records, mib(summary.1.bytes), summary.1.files, summary.0, args.file.display(), took.as_secs_f64(),
        rate(summary.1.records, took), summary.1.checksum);
    Ok(())
}

async fn save_to(args: &SnapshotSaveArgs, temporary: &Path) -> Result<(kspaces_storage::Revision, Summary), String> {
    let store = open_store(args).await?;
    let revision = store.current_revision().await.map_err(|err| err.to_string())?;
    let tenant = match &args.tenant {
        Some(name) => Some(tenant_keys(&store, revision, name).await?.ok_or_else(|| format!("there is no tenant {name:?} in the store"))?),
        None => None,
    };
    let file = File::create(temporary).map_err(io(temporary))?;
    let header = Header { revision, revisions_kept: true };
    let mut writer = SnapshotWriter::new(BufWriter::with_capacity(1 << 20, file), header).map_err(io(temporary))?;
    match &tenant {
        // A tenant's snapshot goes into a running server, which has its own PKI.
        Some(keys) => writer.file(TENANT_FILE, keys.name.as_bytes()).map_err(io(temporary))?,
        None => {
            for (name, _) in IDENTITY_FILES {
                match std::fs::read(args.data_dir.join(name)) {
                    Ok(contents) => writer.file(name, &contents).map_err(io(temporary))?,
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                    Err(err) => return Err(io(&args.data_dir.join(name))(err)),
                }
            }
        }
    }
    let bar = progress(args.quiet, None, "saving");
    let range = store.layout().everything();
    let mut request = ListRequest { revision: Some(revision), limit: Some(PAGE), continue_token: None, skip_remaining: true };
    loop {
        let page = store.list(&range, &request).await.map_err(|err| format!("reading the store at revision {revision}: {err}"))?;
        for record in page.items.iter().filter(|r| tenant.as_ref().is_none_or(|keys| keys.holds(r.key.as_str()))) {
            writer.record(record).map_err(io(temporary))?;
            bar.inc(1);
        }
        match page.continue_token {
            Some(token) => request.continue_token = Some(token),
            None => break,
        }
    }
    bar.finish_and_clear();
    let (summary, out) = writer.finish().map_err(io(temporary))?;
    let file = out.into_inner().map_err(|err| io(temporary)(err.into_error()))?;
    file.sync_all().map_err(io(temporary))?;
    Ok((revision, summary))
}

/// Streams a running server's `/snapshot` into `temporary`, then checks the whole file.
async fn client(kubeconfig: &Path) -> Result<kube::Client, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let file = kube::config::Kubeconfig::read_from(kubeconfig).map_err(|err| format!("{}: {err}", kubeconfig.display()))?;
    let config = kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
        .await
        .map_err(|err| format!("{}: {err}", kubeconfig.display()))?;
    kube::Client::try_from(config).map_err(|err| err.to_string())
}

async fn download(kubeconfig: &Path, tenant: Option<&str>, temporary: &Path, quiet: bool) -> Result<(kspaces_storage::Revision, Summary), String> {
    use futures::AsyncReadExt;
    let client = client(kubeconfig).await?;
    let uri = match tenant {
        Some(tenant) => format!("/snapshot?tenant={tenant}"),
        None => "/snapshot".to_owned(),
    };
    let request = http::Request::get(uri).body(Vec::new()).map_err(|err| err.to_string())?;
    let mut body = client.request_stream(request).await.map_err(|err| format!("the server refused the snapshot: {err}"))?;
    let mut out = BufWriter::with_capacity(1 << 20, File::create(temporary).map_err(io(temporary))?);
    let bar = progress(quiet, None, "downloading");
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let read = body.read(&mut buffer).await.map_err(|err| format!("reading the snapshot from the server: {err}"))?;
        if read == 0 {
            break;
        }
        out.write_all(&buffer[..read]).map_err(io(temporary))?;
        bar.inc(read as u64);
    }
    bar.finish_and_clear();
    let file = out.into_inner().map_err(|err| io(temporary)(err.into_error()))?;
    file.sync_all().map_err(io(temporary))?;
    let reader = open_snapshot(temporary)?;
    let revision = reader.header().revision;
    let summary = reader.verify().map_err(|err| format!("the snapshot the server sent is incomplete or damaged: {err}"))?;
    Ok((revision, summary))
}

/// What `/snapshot` uses of the server: the registry (and the rows and caches a restored tenant is fed through),
/// and the data dir (its identity files, and where a tenant's snapshot is received).
pub struct Handles<'a> {
    pub registry: &'a crate::registry::GenericStore,
    pub rows: Arc<crate::resolver::Resolver>,
    pub table: &'a crate::registry::ResourceTable,
    pub data_dir: &'a Path,
}

/// `/snapshot`, for system users: `GET` streams the store (`?tenant=T`: one tenant's keys) to `snapshot save
/// --kubeconfig`; `POST ?tenant=T` puts a tenant's snapshot back (`snapshot restore --tenant`).
pub async fn serve(req: &actix_web::HttpRequest, body: crate::handlers::Body, server: Handles<'_>) -> ApiResult<actix_web::HttpResponse> {
    let tenant = url::form_urlencoded::parse(req.query_string().as_bytes()).find(|(name, _)| name == "tenant").map(|(_, value)| value.into_owned());
    let clusters = server.registry.reader().clusters();
    if clusters.members().len() > 1 {
        return Err(ApiError::bad_request("this server has several storage clusters; save each with `kspaces snapshot save --storage-backend etcd`"));
    }
    match *req.method() {
        actix_web::http::Method::GET => online(clusters.default_store().clone(), server.data_dir, tenant).await,
        actix_web::http::Method::POST => {
            let tenant = tenant.ok_or_else(|| ApiError::bad_request("a restore names its tenant: POST /snapshot?tenant=NAME"))?;
            restore_tenant(server, body, tenant).await
        }
        _ => Err(ApiError::method_not_supported(&req.method().as_str().to_lowercase(), "snapshot")),
    }
}

/// `GET /snapshot`: the default storage cluster's whole key range (or one tenant's keys) at one revision, with
/// the data dir's identity files (a tenant's: its name instead), streamed a page at a time (the server's memory
/// stays flat). A failure midway cuts the stream short, which the client sees as a truncated file.
async fn online(store: Store, data_dir: &Path, tenant: Option<String>) -> ApiResult<actix_web::HttpResponse> {
    let revision = store.current_revision().await?;
    let keys = match tenant {
        Some(name) => Some(
            tenant_keys(&store, revision, &name).await.map_err(ApiError::bad_request)?.ok_or_else(|| ApiError::not_found("", "tenants", &name))?,
        ),
        None => None,
    };
    let failed = |err: std::io::Error| ApiError::internal(err.to_string());
    let mut writer = SnapshotWriter::new(Vec::new(), Header { revision, revisions_kept: true }).map_err(failed)?;
    match &keys {
        Some(keys) => writer.file(TENANT_FILE, keys.name.as_bytes()).map_err(failed)?,
        None => {
            for (name, _) in IDENTITY_FILES {
                if let Ok(contents) = std::fs::read(data_dir.join(name)) {
                    writer.file(name, &contents).map_err(failed)?;
                }
            }
        }
    }
    let request = ListRequest { revision: Some(revision), limit: Some(PAGE), continue_token: None, skip_remaining: true };
    let state = Online { range: store.layout().everything(), store, keys, writer: Some(writer), request };
    let stream = futures::stream::unfold(state, |mut state| async move {
        state.writer.as_ref()?;
        let chunk = state.step().await.map_err(|err| {
            tracing::warn!(%err, "a snapshot stream stopped");
            state.writer = None;
            actix_web::error::ErrorInternalServerError(err)
        });
        Some((chunk, state))
    });
    Ok(actix_web::HttpResponse::Ok().content_type("application/octet-stream").streaming(stream))
}

/// Where an online snapshot's stream is.
struct Online {
    store: Store,
    range: kspaces_storage::KeyRange,
    /// Only these keys (one tenant's), if set.
    keys: Option<TenantKeys>,
    /// `None` once the trailer is out.
    writer: Option<SnapshotWriter<Vec<u8>>>,
    request: ListRequest,
}

impl Online {
    /// The next bytes: a page of records at a time (the header and files before the first), then the trailer.
    async fn step(&mut self) -> Result<bytes::Bytes, String> {
        let page = self.store.list(&self.range, &self.request).await.map_err(|err| err.to_string())?;
        let writer = self.writer.as_mut().ok_or("the snapshot stream ended twice")?;
        for record in page.items.iter().filter(|r| self.keys.as_ref().is_none_or(|keys| keys.holds(r.key.as_str()))) {
            writer.record(record).map_err(|err| err.to_string())?;
        }
        match page.continue_token {
            Some(token) => {
                self.request.continue_token = Some(token);
                Ok(std::mem::take(writer.output_mut()).into())
            }
            None => {
                let writer = self.writer.take().ok_or("the snapshot stream ended twice")?;
                let (_, out) = writer.finish().map_err(|err| err.to_string())?;
                Ok(out.into())
            }
        }
    }
}

fn open_snapshot(file: &Path) -> Result<SnapshotReader<BufReader<File>>, String> {
    let input = File::open(file).map_err(io(file))?;
    SnapshotReader::open(BufReader::with_capacity(1 << 20, input)).map_err(named(file))
}

fn inspect(args: &SnapshotInspectArgs) -> Result<(), String> {
    let mut reader = open_snapshot(&args.file)?;
    let header = reader.header();
    let mut spaces: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut files = Vec::new();
    let mut tenant = None;
    while let Some(item) = reader.next_item().map_err(named(&args.file))? {
        match item {
            Item::File { name, contents } if name == TENANT_FILE => tenant = Some(String::from_utf8_lossy(&contents).into_owned()),
            Item::File { name, .. } => files.push(name),
            Item::Record(record) => {
                let key = record.key.as_str();
                // `<prefix>/<group>/<resource>/<identity>/<space>/<namespace>/<name>`: the third segment from the end.
                let space = key.rsplit('/').nth(2).unwrap_or("?").to_owned();
                let entry = spaces.entry(space).or_default();
                entry.0 += 1;
                entry.1 += (key.len() + record.value.len()) as u64;
            }
        }
    }
    let summary = reader.summary();
    let mut out = std::io::stdout().lock();
    let width = spaces.keys().map(String::len).max().unwrap_or(5).max(5);
    let print = |out: &mut std::io::StdoutLock<'_>, text: String| writeln!(out, "{text}").map_err(|err| format!("stdout: {err}"));
    print(&mut out, format!("revision: {}", header.revision))?;
    print(&mut out, format!("format: version {}{}", kspaces_storage::snapshot::VERSION,
        if header.revisions_kept { ", resourceVersions kept" } else { "" }))?;
    print(&mut out, format!("tenant: {}", tenant.as_deref().unwrap_or("none (the whole store)")))?;
    print(&mut out, format!("files: {}", if files.is_empty() { "none".to_owned() } else { files.join(", ") }))?;
    print(&mut out, format!("{:<width$}  {:>10}  {:>14}", "SPACE", "OBJECTS", "BYTES"))?;
    for (space, (objects, bytes)) in &spaces {
        print(&mut out, format!("{space:<width$}  {objects:>10}  {bytes:>14}"))?;
    }
    print(&mut out, format!("total: {} objects, {} bytes in {} spaces, {} chunks", summary.records, summary.bytes, spaces.len(), summary.chunks))?;
    print(&mut out, format!("checksum: sha256 {} (verified)", summary.checksum))
}

/// The tenant a snapshot holds (`None`: a whole store's), from its first item.
fn snapshot_tenant(reader: &mut SnapshotReader<BufReader<File>>, file: &Path) -> Result<Option<String>, String> {
    match reader.next_item().map_err(named(file))? {
        Some(Item::File { name, contents }) if name == TENANT_FILE => Ok(Some(String::from_utf8_lossy(&contents).into_owned())),
        _ => Ok(None),
    }
}

fn restore(args: &SnapshotRestoreArgs) -> Result<(), String> {
    if let (Some(tenant), Some(kubeconfig)) = (&args.tenant, &args.kubeconfig) {
        return restore_into_server(&args.file, tenant, kubeconfig);
    }
    let started = Instant::now();
    // Everything is checked before anything is written.
    let checked = {
        let mut reader = open_snapshot(&args.file)?;
        if let Some(tenant) = snapshot_tenant(&mut reader, &args.file)? {
            return Err(format!("{} holds tenant {tenant} only: restore it into a running server with --tenant {tenant} --kubeconfig", args.file.display()));
        }
        reader.verify().map_err(named(&args.file))?
    };
    let target = args.data_dir.as_ref().ok_or("restore needs --data-dir, or --tenant and --kubeconfig")?;
    if target.exists() {
        let empty = std::fs::read_dir(target).map_err(io(target))?.next().is_none();
        if !empty {
            return Err(format!("{} exists and is not empty: restore into a new directory", target.display()));
        }
    }
    let partial = with_suffix(target, ".partial");
    if partial.exists() {
        if !partial.join(RESTORE_MARKER).exists() {
            return Err(format!("{} exists and was not made by a restore: move it away first", partial.display()));
        }
        std::fs::remove_dir_all(&partial).map_err(io(&partial))?;
    }
    std::fs::create_dir_all(&partial).map_err(io(&partial))?;
    let marker = partial.join(RESTORE_MARKER);
    File::create(&marker).and_then(|f| f.sync_all()).map_err(io(&marker))?;
    sync_parent(&partial)?;
    let bar = progress(args.quiet, Some(checked.records), "restoring");
    let header = match args.storage_backend {
        StorageBackend::Sled => fill(&args.file, &partial, &bar)?,
        StorageBackend::Etcd => {
            let etcd = EtcdTarget { servers: &args.etcd_servers, prefix: &args.etcd_prefix };
            runtime()?.block_on(fill_etcd(&etcd, &args.file, Some(&partial), &bar))?
        }
    };
    bar.finish_and_clear();
    std::fs::remove_file(&marker).map_err(io(&marker))?;
    File::open(&partial).and_then(|dir| dir.sync_all()).map_err(io(&partial))?;
    std::fs::rename(&partial, target).map_err(|err| format!("renaming {} to {}: {err}", partial.display(), target.display()))?;
    sync_parent(target)?;
    let took = started.elapsed();
    println!("restored {} objects ({}) and {} files at revision {} into {} in {:.1}s ({} objects/s)",
        checked.records, mib(checked.bytes), checked.files, header.revision, target.display(), took.as_secs_f64(), rate(checked.records, took));
    Ok(())
}

/// Writes the snapshot's files and store into `dir` (the second reading of the file).
fn fill(file: &Path, dir: &Path, bar: &ProgressBar) -> Result<Header, String> {
    let mut reader = open_snapshot(file)?;
    let header = reader.header();
    let loader = SledLoader::create(&sled_config(dir.join("db"), RESTORE_CACHE_BYTES)).map_err(|err| err.to_string())?;
    while let Some(item) = reader.next_item().map_err(named(file))? {
        match item {
            Item::Record(record) => {
                loader.put(&record).map_err(|err| err.to_string())?;
                bar.inc(1);
            }
            Item::File { name, contents } => write_identity_file(dir, &name, &contents)?,
        }
    }
    loader.finish(header.revision).map_err(|err| err.to_string())?;
    Ok(header)
}

/// The key a restore into etcd holds while it writes: a server refuses a store that has it. A key of the layout
/// (so every tool sees it) in a group no API serves.
pub fn restore_marker(layout: &KeyLayout) -> kspaces_storage::Result<kspaces_storage::Key> {
    let resource = kspaces_storage::GroupResource::new("kspaces.io", "restores");
    layout.resource(&resource, &kspaces_storage::ApiIdentity::BuiltIn)?.object(&kspaces_storage::SpaceName::system(), None, "incomplete")
}

/// Where a restore into etcd goes.
struct EtcdTarget<'a> {
    servers: &'a [String],
    prefix: &'a str,
}

/// Writes the snapshot's objects into an empty etcd prefix (new revisions: etcd hands them out), and its files
/// into `dir` if given. The prefix holds [`restore_marker`] until the end, and is compacted then, so a watch from a
/// resourceVersion of the old store gets 410 and its client relists.
async fn fill_etcd(target: &EtcdTarget<'_>, file: &Path, dir: Option<&Path>, bar: &ProgressBar) -> Result<Header, String> {
    use futures::StreamExt;
    if target.servers.is_empty() {
        return Err("--storage-backend etcd needs --etcd-servers".to_owned());
    }
    let layout = KeyLayout::new(target.prefix).map_err(|err| format!("--etcd-prefix: {err}"))?;
    let config = StoreConfig { layout: layout.clone(), bookmark_interval: None, ..StoreConfig::default() };
    let etcd = kspaces_storage::etcd::EtcdConfig::new(target.servers.to_vec());
    let store = Store::open_etcd(&etcd, config).await.map_err(|err| err.to_string())?;
    let failed = |err: kspaces_storage::StorageError| err.to_string();
    let marker = restore_marker(&layout).map_err(failed)?;
    let prefix = layout.prefix().to_owned();
    if store.get(&marker).await.map_err(failed)?.is_some() {
        return Err(format!("an earlier restore into {prefix}/ did not finish: remove its keys (etcdctl del --prefix '{prefix}/') and run again"));
    }
    let first = store.list(&layout.everything(), &ListRequest { limit: Some(1), skip_remaining: true, ..ListRequest::default() }).await.map_err(failed)?;
    if !first.items.is_empty() {
        return Err(format!("{prefix}/ in etcd is not empty: restore into an empty prefix"));
    }
    store.create(&marker, bytes::Bytes::from_static(b"{}")).await.map_err(failed)?.map_err(|_| "another restore started meanwhile".to_owned())?;
    let mut reader = open_snapshot(file)?;
    let header = reader.header();
    let mut writes = futures::stream::FuturesUnordered::new();
    let create = |key: kspaces_storage::Key, value| {
        let store = store.clone();
        async move {
            match store.create(&key, value).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(_)) => Err(format!("{} was written meanwhile", key.as_str())),
                Err(err) => Err(format!("writing {}: {err}", key.as_str())),
            }
        }
    };
    while let Some(item) = reader.next_item().map_err(named(file))? {
        match item {
            Item::File { name, contents } => {
                if let Some(dir) = dir {
                    write_identity_file(dir, &name, &contents)?;
                }
            }
            Item::Record(record) => {
                let key = kspaces_storage::Key::parse(&layout, record.key.as_str())
                    .map_err(|_| format!("{} is not under --etcd-prefix {prefix}: restore with the prefix it was saved with", record.key.as_str()))?;
                writes.push(create(key, record.value));
                if writes.len() >= 64 {
                    writes.next().await.transpose()?;
                }
                bar.inc(1);
            }
        }
    }
    while writes.next().await.transpose()?.is_some() {}
    store.delete(&marker, None).await.map_err(failed)?.map_err(|_| "the restore's marker went away meanwhile".to_owned())?;
    let revision = store.current_revision().await.map_err(failed)?;
    store.compact(revision).await.map_err(failed)?;
    Ok(header)
}

/// `kspaces migrate`: a stopped server's sled store saved to a file in its data dir, restored into an empty etcd
/// prefix, the file removed; the data dir keeps its PKI, so `serve --storage-backend etcd` on it is the same server.
pub fn migrate(args: &MigrateArgs) -> Result<(), String> {
    let started = Instant::now();
    let file = args.data_dir.join("migrate.ksnap");
    let save_args = SnapshotSaveArgs {
        file: file.clone(),
        data_dir: args.data_dir.clone(),
        storage_backend: StorageBackend::Sled,
        etcd_servers: Vec::new(),
        etcd_prefix: args.etcd_prefix.clone(),
        kubeconfig: None,
        tenant: None,
        quiet: args.quiet,
    };
    let temporary = with_suffix(&file, ".tmp");
    let runtime = runtime()?;
    let saved = runtime.block_on(save_to(&save_args, &temporary));
    let outcome = saved.and_then(|(_, summary)| {
        std::fs::rename(&temporary, &file).map_err(io(&file))?;
        let bar = progress(args.quiet, Some(summary.records), "writing to etcd");
        let target = EtcdTarget { servers: &args.to_etcd, prefix: &args.etcd_prefix };
        runtime.block_on(fill_etcd(&target, &file, None, &bar))?;
        bar.finish_and_clear();
        Ok(summary)
    });
    let _ = std::fs::remove_file(&temporary);
    let _ = std::fs::remove_file(&file);
    let summary = outcome?;
    println!("migrated {} objects ({}) from {} to etcd {} under {}/ in {:.1}s; serve with --storage-backend etcd --etcd-servers {}",
        summary.records, mib(summary.bytes), args.data_dir.join("db").display(), args.to_etcd.join(","), args.etcd_prefix.trim_end_matches('/'),
        started.elapsed().as_secs_f64(), args.to_etcd.join(","));
    Ok(())
}

/// Writes one of [`IDENTITY_FILES`] (any other name is refused: a snapshot never writes outside the data dir).
fn write_identity_file(dir: &Path, name: &str, contents: &[u8]) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let Some((_, private)) = IDENTITY_FILES.iter().find(|(known, _)| *known == name) else {
        return Err(format!("the snapshot holds a file {name:?}, which is not one a data dir has"));
    };
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    let mode = if *private { 0o600 } else { 0o644 };
    let mut out = std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&path).map_err(io(&path))?;
    out.write_all(contents).and_then(|()| out.sync_all()).map_err(io(&path))
}
