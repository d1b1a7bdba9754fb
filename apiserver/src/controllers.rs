//! Background controllers that run inside the server. Each is a struct holding exactly what it reads and writes
//! through (the registry, resource rows, the caches it follows) and a `run` loop; `server.rs` makes and starts
//! them. Their writes go through `GenericStore` as the server's own (no caller), so strategies, finalizers, watch
//! events and durability hold for them as for requests.

pub mod aggregation;
pub mod apis;
pub mod compaction;
pub mod crd;
pub mod gc;
pub mod leader;
pub mod namespace;
pub mod space_defaults;
pub mod tenant;
pub mod type_checking;
pub mod workspace;

use futures::StreamExt;
use kspaces_storage::SpaceName;
use serde_json::{json, Value};

use crate::authorization::RBAC_GROUP;
use crate::registry::deletion::has_finalizers;
use crate::registry::stored;
use crate::kinds::logical_cluster::LOGICAL_CLUSTER_NAME;
use crate::registry::{is_deleting, DeleteOptions, DeleteOutcome, GenericStore, ListOptions, Part, ResourceInfo, ResourceTable, Scope, WriteContext, SERVER_MANAGER};
use crate::tenancy::space::LOGICAL_CLUSTER_FINALIZER;
use crate::resolver::Resolver;
use crate::status::{ApiError, ApiResult};

/// The threads the controllers spread their per-object work over (a pass over the workspaces of a deleted tree,
/// the Terminating namespaces): as many as the machine has cores, beside the request workers. The controllers'
/// loops run on the server's main thread, which would otherwise do all of that work on one core.
/// One per process, never shut down (servers made in one test process share it).
pub(crate) fn pool() -> &'static tokio::runtime::Handle {
    static POOL: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        tokio::runtime::Builder::new_multi_thread().worker_threads(threads).thread_name("kspaces-controllers").enable_all().build()
            .unwrap_or_else(|err| panic!("the controllers' threads cannot start: {err}"))
    }).handle()
}

/// Runs `work` on every item on the controllers' threads (`pool`), at most `limit` at once; `done` hears each
/// outcome as its task ends (a task that panicked, as its `JoinError`).
pub(crate) async fn spread<T, F, Fut>(items: impl IntoIterator<Item = T>, limit: usize, work: F,
    mut done: impl FnMut(Result<Fut::Output, tokio::task::JoinError>))
where
    F: Fn(T) -> Fut,
    Fut: std::future::Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    let mut running = tokio::task::JoinSet::new();
    for item in items {
        if running.len() >= limit {
            if let Some(joined) = running.join_next().await {
                done(joined);
            }
        }
        running.spawn_on(work(item), pool());
    }
    while let Some(joined) = running.join_next().await {
        done(joined);
    }
}

/// The manager of the namespace and tenant controllers' writes, as kube-controller-manager records its own.
pub(crate) const CONTROLLER_MANAGER: &str = "kube-controller-manager";

/// How many objects of one resource a pass deletes at most (the next pass takes the rest).
pub(crate) const BATCH: usize = 500;

/// Deletes the objects of `resources` in `scope` (one space; a namespace, or all of the space), honouring
/// finalizers: an object with finalizers only gets its deletion timestamp. True if nothing is left: nothing was
/// found, or everything found was removed outright (so the caller goes on at once, not at its next pass). Which
/// resources hold anything is asked of the store in one call; only those are listed.
/// 404 (gone meanwhile) and 409 (a Terminating namespace, emptied by its own controller) are not failures.
pub async fn delete_content<'a>(registry: &GenericStore, resources: impl Iterator<Item = &'a ResourceInfo>, scope: &Scope) -> ApiResult<bool> {
    let resources: Vec<&ResourceInfo> = resources.collect();
    let occupied = registry.reader().occupied(&resources, scope).await?;
    delete_occupied(registry, resources.into_iter().zip(occupied).filter_map(|(resource, occupied)| occupied.then_some(resource)), scope).await
}

/// `delete_content` of resources already known to hold something. A page's objects are deleted `AT_ONCE` at a time
/// (a wide workspace's children, a namespace's pods), so their writes share storage commits.
async fn delete_occupied<'a>(registry: &GenericStore, resources: impl Iterator<Item = &'a ResourceInfo>, scope: &Scope) -> ApiResult<bool> {
    const AT_ONCE: usize = 16;
    let space = scope.space()?;
    let mut empty = true;
    for resource in resources {
        let options = ListOptions { limit: Some(BATCH), ..ListOptions::default() };
        let mut pages = registry.reader().pages(resource, scope, options)?;
        let records = pages.next().await?.unwrap_or_default();
        empty &= pages.meta().is_some_and(|meta| meta.continue_token.is_none());
        let mut deletes = Vec::with_capacity(records.len());
        for record in records {
            let head = stored::head(&record)?;
            // Deleted already and held by its finalizers (a child workspace whose own subtree is going): deleting
            // it again would change nothing.
            if is_deleting(&head) && has_finalizers(&head) {
                empty = false;
                continue;
            }
            let namespace = head.pointer("/metadata/namespace").and_then(Value::as_str).filter(|_| resource.namespaced);
            let item_scope = Scope::one(space.clone(), namespace.map(str::to_owned));
            // Deleted as listed: not read again first.
            deletes.push(async move { registry.delete_listed(resource, &item_scope, record, &DeleteOptions::default()).await });
        }
        // Every delete started is waited for, even after one fails: none is dropped between its write and the
        // observers being told of it.
        let mut outcomes = futures::stream::iter(deletes).buffer_unordered(AT_ONCE);
        let mut failed = None;
        while let Some(outcome) = outcomes.next().await {
            match DeleteOutcome::gone(outcome) {
                Ok(gone) => empty &= gone,
                Err(err) => {
                    failed.get_or_insert(err);
                }
            }
        }
        if let Some(err) = failed {
            return Err(err);
        }
    }
    Ok(empty)
}

/// The order in which a space's cluster-scoped objects go (`empty_space`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    Namespaces,
    Content,
    ClusterRbac,
    LogicalCluster,
}

/// One pass over a space being deleted (a tenant's, a workspace's): deletes what is left of its content; true once
/// nothing is left. The space's LogicalCluster is `Deleting` meanwhile, unless the space holds nothing but what
/// the server made in it and it all goes in the first pass. What is in namespaces goes first; while
/// anything is, the namespaces are marked Terminating (nothing new is made in them) and are removed once nothing
/// in any of them is left (`finalize_namespaces`), in the same pass rather than by the namespace controller a hop
/// later. Namespaces found empty from the start (a new workspace's) are removed outright. Then what is not in a
/// namespace goes (workspaces in it are content: each goes only once its own subtree is gone). ClusterRoles and
/// ClusterRoleBindings go once everything else is gone, so the space's administrators keep their access while it
/// drains (e.g. to lift a finalizer that holds the deletion up), and the LogicalCluster goes last, as kcp removes
/// it. Which resources hold anything is asked once per pass, in one call. The server's
/// own objects (namespaces, RBAC, the LogicalCluster) are removed by `GenericStore::purge`, as read, side by side.
pub async fn empty_space(registry: &GenericStore, resources: &ResourceTable, resolver: &Resolver, space: &SpaceName) -> ApiResult<bool> {
    let scope = Scope::one(space.clone(), None);
    let stage = |r: &ResourceInfo| {
        if r.is("", "Namespace") {
            Stage::Namespaces
        } else if r.is(RBAC_GROUP, "ClusterRole") || r.is(RBAC_GROUP, "ClusterRoleBinding") {
            Stage::ClusterRbac
        } else if r.is("core.kcp.io", "LogicalCluster") {
            Stage::LogicalCluster
        } else {
            Stage::Content
        }
    };
    // Custom resources too, first: of the space's own CRDs, of system CRDs whichever definition serves them now,
    // and of its APIBindings (which name them, so they go after them).
    let custom = resolver.stored_in(space);
    let all: Vec<&ResourceInfo> = custom.iter().chain(resources.all().iter().filter(|r| !r.system_only)).map(|r| &**r).collect();
    let (cluster_scoped, namespaced): (Vec<&ResourceInfo>, Vec<&ResourceInfo>) = all.iter().copied().partition(|r| !r.namespaced);
    // Which resources hold anything, asked once for both kinds of resources (one trip to the store).
    let mut occupied = registry.reader().occupied(&[cluster_scoped.as_slice(), namespaced.as_slice()].concat(), &scope).await?;
    let in_namespaces = occupied.split_off(cluster_scoped.len());
    let scope_ref = &scope;
    let of = |wanted: Stage| cluster_scoped.iter().zip(&occupied).filter(move |(r, occupied)| **occupied && stage(r) == wanted).map(|(r, _)| *r);
    let purge = |stage: Stage| async move {
        let mut gone = true;
        for resource in of(stage) {
            // The LogicalCluster of a deleted space is held by the server's finalizer (it carries its
            // deletionTimestamp meanwhile): lifting it, last, removes it.
            if stage == Stage::LogicalCluster {
                let held = match registry.reader().get(resource, scope_ref, LOGICAL_CLUSTER_NAME).await {
                    Ok(logical_cluster) => stored::at(&logical_cluster, "/metadata/finalizers").and_then(Value::as_array)
                        .is_some_and(|f| f.iter().any(|f| f == LOGICAL_CLUSTER_FINALIZER)),
                    Err(ApiError { code: 404, .. }) => false,
                    Err(err) => return Err(err),
                };
                let write = WriteContext::server(SERVER_MANAGER, "");
                if held {
                    match registry.lift_finalizer(resource, scope_ref, LOGICAL_CLUSTER_NAME, &write, LOGICAL_CLUSTER_FINALIZER).await {
                        Ok(()) | Err(ApiError { code: 404, .. }) => {}
                        Err(err) => return Err(err),
                    }
                }
            }
            gone &= registry.purge(resource, scope_ref).await?;
        }
        ApiResult::Ok(gone)
    };
    let in_namespaces: Vec<&ResourceInfo> = namespaced.iter().zip(in_namespaces).filter_map(|(r, occupied)| occupied.then_some(*r)).collect();
    // A space holding only what the server made in it (a new workspace's) goes in this pass: it is `Deleting`
    // only if something holds it up.
    let only_the_servers = in_namespaces.is_empty() && of(Stage::Content).next().is_none();
    let deleting = || crate::tenancy::space::set_logical_cluster_phase(registry, resources, space, "Deleting");
    if !only_the_servers {
        deleting().await?;
    }

    let gone = async {
        let namespaces_gone = if in_namespaces.is_empty() {
            purge(Stage::Namespaces).await?
        } else {
            let marked_gone = delete_occupied(registry, of(Stage::Namespaces), &scope).await?;
            // Asked again now that they are marked: what was made in them before is found.
            let namespaced_gone = delete_content(registry, namespaced.iter().copied(), &scope).await?;
            match of(Stage::Namespaces).next() {
                Some(namespaces) if !marked_gone && namespaced_gone => finalize_namespaces(registry, namespaces, &scope).await?,
                _ => marked_gone && namespaced_gone,
            }
        };
        let content_gone = delete_occupied(registry, of(Stage::Content), &scope).await?;
        ApiResult::Ok(namespaces_gone && content_gone && purge(Stage::ClusterRbac).await? && purge(Stage::LogicalCluster).await?)
    }.await?;
    if !gone && only_the_servers {
        deleting().await?;
    }
    Ok(gone)
}

/// Removes the Terminating namespaces of a space being emptied, nothing being left in any of them: what the
/// namespace controller would do once it found each empty. True once none is left (one made meanwhile, not
/// Terminating, or one its own `metadata.finalizers` hold, is left for the next pass).
async fn finalize_namespaces(registry: &GenericStore, namespaces: &ResourceInfo, scope: &Scope) -> ApiResult<bool> {
    let options = ListOptions { limit: Some(BATCH), ..ListOptions::default() };
    let (items, meta) = registry.reader().list(namespaces, scope, &options).await?;
    let mut gone = meta.continue_token.is_none();
    for item in &items {
        let Some(name) = item.pointer("/metadata/name").and_then(Value::as_str) else { continue };
        if !is_deleting(item) {
            gone = false;
            continue;
        }
        match finalize(registry, namespaces, scope, name).await {
            Ok(()) | Err(ApiError { code: 404, .. }) => {}
            Err(err) => return Err(err),
        }
        gone &= !has_finalizers(item);
    }
    Ok(gone)
}

/// Empties the `spec.finalizers` of a namespace or tenant being deleted (its `/finalize`), which removes it.
pub async fn finalize(registry: &GenericStore, resource: &ResourceInfo, scope: &Scope, name: &str) -> ApiResult<()> {
    registry.guaranteed_update(resource, scope, name, Part::Finalize, &WriteContext::server(CONTROLLER_MANAGER, "finalize"), |old| {
        let mut new = old.clone();
        new["spec"]["finalizers"] = json!([]);
        Ok(new)
    }).await.map(drop)
}
