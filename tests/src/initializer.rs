//! An initializing controller written with kube-rs, as a kcp user writes one against the initializing virtual
//! workspace a `WorkspaceType` publishes (`status.virtualWorkspaces[type=initializing].url`, `<vw>` below).
//!
//! - One client whose server is `<vw>/clusters/*` runs `kube::runtime::watcher` over `core.kcp.io/v1alpha1`
//!   `logicalclusters`: every LogicalCluster, in any workspace, that is `Initializing` and still carries the
//!   entry. kube-rs keeps the path of the kubeconfig's server URL (its `BaseUri` layer joins it to every request's
//!   path), so `Api::all_with` lists and watches `<vw>/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters`.
//! - For each LogicalCluster it has not handled yet (an `Apply`/`InitApply` event), a client whose server is
//!   `<vw>/clusters/<kcp.io/cluster annotation>` (the same `kube::Config`, another `cluster_url`): optionally
//!   creates the ConfigMap `initialized` in `default`, then merge-patches the LogicalCluster's status to the list
//!   of initializers without its own entry, with `metadata.resourceVersion` as a precondition (on a 409 it reads
//!   the LogicalCluster again and retries).
//!
//! kube-rs' `Controller` and reflector `Store` are not used: they key objects by `ObjectRef` (name and namespace),
//! and every LogicalCluster is the cluster-scoped `cluster`, so the workspaces would collapse into one key. The
//! logical cluster name (`kcp.io/cluster`) is the key here, as kcp's cluster-aware informers use it.
//!
//! What it did is recorded per logical cluster ([`Record`]) for tests and benchmarks to check and time.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client, ResourceExt};
use serde_json::{json, Value};
use tokio::sync::Semaphore;

/// The name of the ConfigMap the controller creates in `default` of each workspace (with [`Options::configmap`]).
pub const CONFIGMAP: &str = "initialized";

/// The annotation naming a LogicalCluster's logical cluster.
pub const CLUSTER_ANNOTATION: &str = "kcp.io/cluster";
/// The annotation naming a LogicalCluster's workspace path.
pub const PATH_ANNOTATION: &str = "kcp.io/path";

/// How many times a status patch is tried (a 409 Conflict re-reads the LogicalCluster and tries again).
const PATCH_ATTEMPTS: usize = 5;

/// `core.kcp.io/v1alpha1` `LogicalCluster` (plural `logicalclusters`, cluster-scoped).
pub fn logical_cluster_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("core.kcp.io", "v1alpha1", "LogicalCluster"), "logicalclusters")
}

/// What the controller does.
#[derive(Clone, Debug)]
pub struct Options {
    /// Create the ConfigMap [`CONFIGMAP`] in `default` before removing the entry.
    pub configmap: bool,
    /// How many LogicalClusters are worked on at once.
    pub workers: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { configmap: true, workers: 16 }
    }
}

/// What the controller saw and did for one logical cluster. Instants are this process's clock.
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// The `kcp.io/path` annotation, e.g. `root:t-a:w1`.
    pub path: Option<String>,
    /// The first `Apply`/`InitApply` event carrying it.
    pub added: Option<Instant>,
    /// How many `Apply`/`InitApply` events carried it.
    pub applied_events: usize,
    /// When the ConfigMap's create was answered (201, or 409 when it was already there).
    pub configmap_created: Option<Instant>,
    /// When the status patch removing the entry was answered 200.
    pub patched: Option<Instant>,
    /// The first `Delete` event carrying it (it stopped matching: its entry is gone, or it left `Initializing`).
    pub deleted: Option<Instant>,
}

#[derive(Default)]
struct Shared {
    records: Mutex<HashMap<String, Record>>,
    errors: Mutex<Vec<String>>,
}

/// A running controller; aborted on drop.
pub struct Initializer {
    /// The initializer entry, `<logical cluster of the type's workspace>:<type name>`.
    pub entry: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Initializer {
    /// Starts the controller for the initializing virtual workspace at `vw` (the URL the type publishes) with the
    /// credentials of `kubeconfig` (its server URL is ignored). The entry is the URL's last segment.
    pub async fn start(kubeconfig: &Path, vw: &str, options: Options) -> Result<Initializer, Box<dyn std::error::Error + Send + Sync>> {
        let vw = vw.trim_end_matches('/').to_owned();
        let entry = vw.rsplit('/').next().filter(|e| e.contains(':')).ok_or_else(|| format!("no initializer entry at the end of {vw}"))?.to_owned();
        let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig)?;
        let base = kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default()).await?;
        let all = client_at(&base, &format!("{vw}/clusters/*"))?;
        let shared = Arc::new(Shared::default());
        let context = Arc::new(Context { base, vw, entry: entry.clone(), options: options.clone(), shared: shared.clone() });
        let task = tokio::spawn(run(all, context, Arc::new(Semaphore::new(options.workers.max(1)))));
        Ok(Initializer { entry, shared, task })
    }

    /// A copy of every record, by logical cluster name.
    pub fn records(&self) -> HashMap<String, Record> {
        self.shared.records.lock().expect("records lock").clone()
    }

    /// The record of one logical cluster.
    pub fn record(&self, cluster: &str) -> Option<Record> {
        self.shared.records.lock().expect("records lock").get(cluster).cloned()
    }

    /// What went wrong so far (failed requests, watch errors), in order.
    pub fn errors(&self) -> Vec<String> {
        self.shared.errors.lock().expect("errors lock").clone()
    }

    /// Waits until `done` holds for the records (true) or `timeout` passes (false); checks every 10 ms.
    pub async fn wait_until(&self, timeout: Duration, done: impl Fn(&HashMap<String, Record>) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if done(&self.shared.records.lock().expect("records lock")) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Initializer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A kube client whose server URL is `url`, with `base`'s credentials and TLS settings.
pub fn client_at(base: &kube::Config, url: &str) -> Result<Client, Box<dyn std::error::Error + Send + Sync>> {
    let mut config = base.clone();
    config.cluster_url = url.parse()?;
    Ok(Client::try_from(config)?)
}

struct Context {
    base: kube::Config,
    vw: String,
    entry: String,
    options: Options,
    shared: Arc<Shared>,
}

impl Context {
    fn error(&self, message: String) {
        self.shared.errors.lock().expect("errors lock").push(message);
    }

    fn update(&self, cluster: &str, change: impl FnOnce(&mut Record)) {
        change(self.shared.records.lock().expect("records lock").entry(cluster.to_owned()).or_default());
    }
}

/// The watch loop: each new LogicalCluster is handed to a task (at most `workers` of them work at once).
async fn run(all: Client, context: Arc<Context>, workers: Arc<Semaphore>) {
    let resource = logical_cluster_resource();
    let api = Api::<DynamicObject>::all_with(all, &resource);
    let mut events = watcher(api, watcher::Config::default()).default_backoff().boxed();
    while let Some(event) = events.next().await {
        let object = match event {
            Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => object,
            Ok(watcher::Event::Delete(object)) => {
                if let Some(cluster) = cluster_of(&object) {
                    context.update(&cluster, |r| {
                        r.deleted.get_or_insert_with(Instant::now);
                    });
                }
                continue;
            }
            Ok(watcher::Event::Init | watcher::Event::InitDone) => continue,
            Err(error) => {
                // `default_backoff` waits before the watcher starts again.
                context.error(format!("watch: {error}"));
                continue;
            }
        };
        let Some(cluster) = cluster_of(&object) else {
            context.error(format!("a LogicalCluster without {CLUSTER_ANNOTATION}: {:?}", object.metadata));
            continue;
        };
        let mut first = false;
        context.update(&cluster, |r| {
            r.applied_events += 1;
            if r.added.is_none() {
                r.added = Some(Instant::now());
                r.path = object.annotations().get(PATH_ANNOTATION).cloned();
                first = true;
            }
        });
        if !first {
            continue;
        }
        // The watch loop never waits for a worker: `added` is when the event arrived, and DELETED events are
        // recorded as they come.
        let (context, workers) = (context.clone(), workers.clone());
        tokio::spawn(async move {
            let Ok(permit) = workers.acquire_owned().await else { return };
            if let Err(error) = initialize(&context, &cluster, object).await {
                context.error(format!("{cluster}: {error}"));
            }
            drop(permit);
        });
    }
}

fn cluster_of(object: &DynamicObject) -> Option<String> {
    object.annotations().get(CLUSTER_ANNOTATION).cloned()
}

/// The work for one logical cluster: the ConfigMap, then the entry's removal.
async fn initialize(context: &Context, cluster: &str, mut object: DynamicObject) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let client = client_at(&context.base, &format!("{}/clusters/{cluster}", context.vw))?;
    if context.options.configmap {
        let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let configmap = ConfigMap {
            metadata: ObjectMeta { name: Some(CONFIGMAP.to_owned()), ..ObjectMeta::default() },
            data: Some(BTreeMap::from([("initializer".to_owned(), context.entry.clone())])),
            ..ConfigMap::default()
        };
        match configmaps.create(&PostParams::default(), &configmap).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => return Err(format!("creating ConfigMap {CONFIGMAP}: {error}").into()),
        }
        context.update(cluster, |r| r.configmap_created = Some(Instant::now()));
    }
    let logical_clusters = Api::<DynamicObject>::all_with(client, &logical_cluster_resource());
    for attempt in 1..=PATCH_ATTEMPTS {
        let initializers: Vec<Value> = object.data.pointer("/status/initializers").and_then(Value::as_array).cloned().unwrap_or_default();
        if !initializers.iter().any(|i| i.as_str() == Some(context.entry.as_str())) {
            return Ok(()); // already removed
        }
        let remaining: Vec<Value> = initializers.into_iter().filter(|i| i.as_str() != Some(context.entry.as_str())).collect();
        let patch = json!({
            "metadata": {"resourceVersion": object.resource_version()},
            "status": {"initializers": remaining},
        });
        match logical_clusters.patch_status(&object.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => {
                context.update(cluster, |r| r.patched = Some(Instant::now()));
                return Ok(());
            }
            Err(kube::Error::Api(status)) if status.code == 409 && attempt < PATCH_ATTEMPTS => {
                object = match logical_clusters.get_status(&object.name_any()).await {
                    Ok(fresh) => fresh,
                    // Not served any more: it no longer waits for this entry.
                    Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
                    Err(error) => return Err(format!("re-reading the LogicalCluster after a conflict: {error}").into()),
                };
            }
            Err(error) => return Err(format!("patching the LogicalCluster's status (attempt {attempt}): {error}").into()),
        }
    }
    Err(format!("the status patch conflicted {PATCH_ATTEMPTS} times").into())
}
