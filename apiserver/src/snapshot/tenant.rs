//! One tenant in a snapshot (docs/operations.md): which keys a tenant owns (`save --tenant`), and putting a
//! tenant's snapshot back into a running server (`restore --tenant`, `POST /snapshot?tenant=T`), all or nothing
//! across kill -9, its caches told without a restart.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use kspaces_storage::snapshot::{Item, SnapshotError, SnapshotReader, TENANT_FILE};
use kspaces_storage::{ApiIdentity, GroupResource, Key, KeyLayout, ListRequest, Revision, SpaceName, StorageError, Store};

use super::{client, io, mib, named, open_snapshot, rate, runtime, snapshot_tenant, PAGE};
use crate::registry::feed::Feed;
use crate::status::{ApiError, ApiResult};

/// What one tenant owns in a store: its Tenant (in the system space) and every space of its workspace tree (its
/// own, and its nested workspaces' logical clusters, bound objects included: they are stored in the space they are
/// bound into).
pub struct TenantKeys {
    pub name: String,
    pub tenant: Key,
    pub spaces: BTreeSet<String>,
}

impl TenantKeys {
    pub fn holds(&self, key: &str) -> bool {
        key == self.tenant.as_str() || space_segment(key).is_some_and(|space| self.spaces.contains(space))
    }
}

/// `<prefix>/<group>/<resource>/<identity>/<space>/<namespace>/<name>`: the third segment from the end.
fn space_segment(key: &str) -> Option<&str> {
    key.rsplit('/').nth(2)
}

fn tenant_key(layout: &KeyLayout, tenant: &str) -> kspaces_storage::Result<Key> {
    layout.resource(&GroupResource::new("", "tenants"), &ApiIdentity::BuiltIn)?.object(&SpaceName::system(), None, tenant)
}

/// The key a tenant's restore into a running server holds while it writes (see [`restore_tenant`]): in a group
/// no API serves, in the system space. Its value lists the spaces being written.
fn tenant_restore_marker(layout: &KeyLayout, tenant: &str) -> kspaces_storage::Result<Key> {
    tenant_restores(layout)?.object(&SpaceName::system(), None, tenant)
}

fn tenant_restores(layout: &KeyLayout) -> kspaces_storage::Result<kspaces_storage::ResourceKeys> {
    layout.resource(&GroupResource::new("kspaces.io", "tenantrestores"), &ApiIdentity::BuiltIn)
}

/// Tenant `tenant`'s keys at `revision` (`None`: no such tenant): its Tenant, and the spaces of its workspace tree,
/// followed from its own space through the Workspaces each space holds.
pub async fn tenant_keys(store: &Store, revision: Revision, tenant: &str) -> Result<Option<TenantKeys>, String> {
    let layout = store.layout();
    let failed = |err: StorageError| format!("reading the store at revision {revision}: {err}");
    let own = SpaceName::new(tenant).map_err(|_| format!("{tenant:?} is not a tenant name"))?;
    if own.is_system() || tenant == crate::tenancy::HOME_ROOT {
        return Err(format!("{tenant:?} is not a tenant: save the whole store instead"));
    }
    let key = tenant_key(layout, tenant).map_err(failed)?;
    let tenants = layout.resource(&GroupResource::new("", "tenants"), &ApiIdentity::BuiltIn).map_err(failed)?;
    let tenants = tenants.namespace(&SpaceName::system(), None).map_err(failed)?;
    let mut found = false;
    each_page(store, &tenants, revision, |record| found |= record.key == key).await.map_err(failed)?;
    if !found {
        return Ok(None);
    }
    let workspaces = layout.resource(&GroupResource::new("tenancy.kcp.io", "workspaces"), &ApiIdentity::BuiltIn).map_err(failed)?;
    let mut spaces = BTreeSet::new();
    let mut next = vec![own];
    while let Some(space) = next.pop() {
        if !spaces.insert(space.as_str().to_owned()) {
            continue;
        }
        let mut children = Vec::new();
        each_page(store, &workspaces.space(&space), revision, |record| {
            let cluster = serde_json::from_slice::<serde_json::Value>(&record.value).ok()
                .and_then(|ws| ws.pointer("/spec/cluster").and_then(serde_json::Value::as_str).and_then(|c| SpaceName::new(c).ok()));
            children.extend(cluster.filter(|c| !c.is_system()));
        }).await.map_err(failed)?;
        next.extend(children);
    }
    Ok(Some(TenantKeys { name: tenant.to_owned(), tenant: key, spaces }))
}

/// Calls `f` with every record of `range` at `revision`, a page at a time.
async fn each_page(store: &Store, range: &kspaces_storage::KeyRange, revision: Revision, mut f: impl FnMut(&kspaces_storage::Record))
    -> kspaces_storage::Result<()> {
    let mut request = ListRequest { revision: Some(revision), limit: Some(PAGE), continue_token: None, skip_remaining: true };
    loop {
        let page = store.list(range, &request).await?;
        page.items.iter().for_each(&mut f);
        match page.continue_token {
            Some(token) => request.continue_token = Some(token),
            None => return Ok(()),
        }
    }
}

/// `snapshot restore FILE --tenant T --kubeconfig K`: checks the file (every checksum, and that it holds tenant
/// `T`), then sends it to the running server's `POST /snapshot?tenant=T`, which puts the tenant back.
pub(super) fn restore_into_server(file: &Path, tenant: &str, kubeconfig: &Path) -> Result<(), String> {
    let started = Instant::now();
    let checked = {
        let mut reader = open_snapshot(file)?;
        match snapshot_tenant(&mut reader, file)? {
            Some(held) if held == tenant => {}
            Some(held) => return Err(format!("{} holds tenant {held}, not {tenant}: a tenant is restored under its own name", file.display())),
            None => return Err(format!("{} holds a whole store, not one tenant: save one with `snapshot save --tenant`", file.display())),
        }
        reader.verify().map_err(named(file))?
    };
    let body = std::fs::read(file).map_err(io(file))?;
    runtime()?.block_on(async {
        let client = client(kubeconfig).await?;
        let request = http::Request::post(format!("/snapshot?tenant={tenant}"))
            .header(http::header::CONTENT_TYPE, "application/octet-stream")
            .body(body)
            .map_err(|err| err.to_string())?;
        client.request_text(request).await.map_err(|err| format!("the server refused the restore of tenant {tenant}: {err}"))
    })?;
    let took = started.elapsed();
    println!("restored tenant {tenant}: {} objects ({}) in {:.1}s ({} objects/s)", checked.records, mib(checked.bytes), took.as_secs_f64(),
        rate(checked.records, took));
    Ok(())
}

/// One tenant restore at a time in this process.
static TENANT_RESTORES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
/// The files of the data dir a tenant's snapshot is received into (removed at start: a kill -9 leaves them).
pub const RECEIVED_PREFIX: &str = "tenant-restore-";
/// Names the files bodies are received into.
static RECEIVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Creates written at once while a tenant is restored.
const IN_FLIGHT: usize = 64;

/// `POST /snapshot?tenant=T`: receives a tenant's snapshot into a file of the data dir, then restores it (see
/// [`put_back`]) in a task of its own, which a client that goes away does not stop halfway.
pub(super) async fn restore_tenant(server: super::Handles<'_>, body: crate::handlers::Body, tenant: String) -> ApiResult<actix_web::HttpResponse> {
    SpaceName::new(&tenant).map_err(|_| ApiError::bad_request(format!("{tenant:?} is not a tenant name")))?;
    let n = RECEIVED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = server.data_dir.join(format!("{RECEIVED_PREFIX}{}-{n}.ksnap", std::process::id()));
    let received = async {
        let mut out = BufWriter::new(File::create(&file).map_err(|err| ApiError::internal(format!("{}: {err}", file.display())))?);
        crate::handlers::body_to_file(body, &mut out).await?;
        out.flush().map_err(|err| ApiError::internal(format!("{}: {err}", file.display())))
    };
    if let Err(err) = received.await {
        let _ = std::fs::remove_file(&file);
        return Err(err);
    }
    let feed = Feed {
        store: server.registry.reader().clusters().default_store().clone(),
        registry: server.registry.clone(),
        rows: server.rows.clone(),
        primed: Vec::new(),
        table: server.table.clone(),
    };
    let task = {
        let file = file.clone();
        actix_web::rt::spawn(async move {
            let outcome = put_back(&feed, &file, &tenant).await;
            let _ = std::fs::remove_file(&file);
            outcome.map(|restored| (tenant, restored))
        })
    };
    let (tenant, restored) = task.await.map_err(|err| ApiError::internal(format!("the restore stopped: {err}")))??;
    let status = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
        "message": format!("tenant {tenant} restored: {restored} objects"),
        "details": {"name": tenant, "kind": "tenants"},
    });
    Ok(actix_web::HttpResponse::Ok().content_type("application/json").body(status.to_string()))
}

/// Reads `file`'s records, after its tenant file, in order.
fn each_record(file: &Path, mut f: impl FnMut(kspaces_storage::Record) -> ApiResult<()>) -> ApiResult<()> {
    let damaged = |err: SnapshotError| ApiError::bad_request(format!("the snapshot is incomplete or damaged: {err}"));
    let input = File::open(file).map_err(|err| ApiError::internal(format!("{}: {err}", file.display())))?;
    let mut reader = SnapshotReader::open(BufReader::with_capacity(1 << 20, input)).map_err(damaged)?;
    while let Some(item) = reader.next_item().map_err(damaged)? {
        if let Item::Record(record) = item {
            f(record)?;
        }
    }
    Ok(())
}

/// Puts tenant `tenant` back from the snapshot in `file`; the number of objects written.
///
/// Nothing is written until the whole file is checked (every checksum, its tenant, every key a key of that tenant
/// and free in the store). Then a marker key naming the tenant's spaces is created, every object but the Tenant is
/// created, the Tenant last, and the marker deleted. Until the Tenant is there the tenant does not exist for any
/// request (its spaces resolve through it); a restore that stops before it (a conflict, a kill -9 of the server) is
/// undone: here, or at the server's next start ([`clean_half_restores`]) from what the marker names. Only once
/// all is written are the caches told (see the order below), through the same path as another replica's writes
/// (`registry::feed`).
async fn put_back(feed: &Feed, file: &Path, tenant: &str) -> ApiResult<u64> {
    let _one = TENANT_RESTORES.lock().await;
    let store = &feed.store;
    let layout = store.layout().clone();
    let internal = |err: StorageError| ApiError::internal(err.to_string());
    check_file(file, tenant)?;
    clean_restore(store, tenant).await.map_err(internal)?;
    let tenant_key = tenant_key(&layout, tenant).map_err(internal)?;
    let spaces = check_keys(store, file, tenant, &tenant_key).await?;
    let marker = tenant_restore_marker(&layout, tenant).map_err(internal)?;
    let value = serde_json::json!({"tenant": tenant, "spaces": spaces}).to_string();
    if store.create(&marker, bytes::Bytes::from(value)).await?.is_err() {
        return Err(ApiError::conflict("", "tenants", tenant, "another restore of this tenant is under way"));
    }
    let mut created = Vec::new();
    let written = match write_all(store, file, &tenant_key, &mut created).await {
        Ok(written) => written,
        Err(err) => {
            // Undone: every key this restore made (not the one made meanwhile that stopped it), then the marker.
            if let Err(undo) = undo(store, created, &marker).await {
                tracing::error!(err = %undo.message, tenant, "undoing a tenant restore failed; the server's next start finishes it");
            }
            return Err(err);
        }
    };
    store.delete(&marker, None).await?.map_err(|_| ApiError::internal("the restore's marker went away meanwhile"))?;
    tell_caches(feed, file, &tenant_key).await?;
    Ok(written)
}

/// The whole file checked: every checksum, and that it holds tenant `tenant`.
fn check_file(file: &Path, tenant: &str) -> ApiResult<()> {
    let damaged = |err: SnapshotError| ApiError::bad_request(format!("the snapshot is incomplete or damaged: {err}"));
    let input = File::open(file).map_err(|err| ApiError::internal(format!("{}: {err}", file.display())))?;
    let mut reader = SnapshotReader::open(BufReader::with_capacity(1 << 20, input)).map_err(damaged)?;
    match reader.next_item().map_err(damaged)? {
        Some(Item::File { name, contents }) if name == TENANT_FILE && contents.as_ref() == tenant.as_bytes() => {}
        Some(Item::File { name, contents }) if name == TENANT_FILE => {
            return Err(ApiError::bad_request(format!("the snapshot holds tenant {}, not {tenant}", String::from_utf8_lossy(&contents))));
        }
        _ => return Err(ApiError::bad_request("the snapshot holds a whole store, not one tenant (`kspaces snapshot save --tenant`)")),
    }
    reader.verify().map_err(damaged)?;
    Ok(())
}

/// Every key of the file: one of this layout, the tenant's (its Tenant, or outside the system space), and free
/// in the store (409 if the Tenant or any key exists). The spaces the keys are in.
async fn check_keys(store: &Store, file: &Path, tenant: &str, tenant_key: &Key) -> ApiResult<Vec<String>> {
    let layout = store.layout();
    if store.get(tenant_key).await?.is_some() {
        return Err(ApiError::already_exists("", "tenants", tenant));
    }
    let mut keys = Vec::new();
    let mut spaces = BTreeSet::new();
    each_record(file, |record| {
        let key = Key::parse(layout, record.key.as_str())
            .map_err(|_| ApiError::bad_request(format!("{} is not a key of this server's layout ({}/)", record.key.as_str(), layout.prefix())))?;
        if &key != tenant_key {
            let space = space_segment(key.as_str()).unwrap_or_default();
            if space == SpaceName::system().as_str() {
                return Err(ApiError::bad_request(format!("{} is in the system space, not one of tenant {tenant}'s", key.as_str())));
            }
            spaces.insert(space.to_owned());
        }
        keys.push(key);
        Ok(())
    })?;
    if !keys.contains(tenant_key) {
        return Err(ApiError::bad_request(format!("the snapshot has no Tenant {tenant}")));
    }
    for key in &keys {
        if store.get(key).await?.is_some() {
            let mut refused = ApiError::already_exists("", "tenants", tenant);
            refused.message = format!("tenant {tenant} cannot be restored: {} exists", key.as_str());
            return Err(refused);
        }
    }
    Ok(spaces.into_iter().collect())
}

/// Tells the caches of what a restore wrote. First the built-in kinds but APIBindings (CRDs, exports and their
/// identities, workspaces, RBAC: what serving the tenant needs); then, in one step with no wait between, the
/// Tenant and its APIBindings (a binding judged before its tenant's path resolves would be marked invalid a
/// moment); then the objects of custom and bound kinds, which are served from the store already and feed only
/// controllers' caches.
async fn tell_caches(feed: &Feed, file: &Path, tenant_key: &Key) -> ApiResult<()> {
    let store = &feed.store;
    let bindings = format!("{}/apis.kcp.io/apibindings/", store.layout().prefix());
    let rank = |key: &str| {
        if key.starts_with(&bindings) {
            1
        } else if key.rsplit('/').nth(3) == Some("builtin") {
            0
        } else {
            2
        }
    };
    let ranked = |wanted: u8| -> ApiResult<Vec<Key>> {
        let mut keys = Vec::new();
        each_record(file, |record| {
            if &record.key != tenant_key && rank(record.key.as_str()) == wanted {
                keys.push(record.key);
            }
            Ok(())
        })?;
        Ok(keys)
    };
    for key in ranked(0)? {
        tell(feed, &key).await?;
    }
    let mut together = Vec::new();
    for key in std::iter::once(tenant_key.clone()).chain(ranked(1)?) {
        if let Some(record) = store.get(&key).await? {
            together.push(kspaces_storage::Event::new(kspaces_storage::EventKind::Added, key, record.value, None, record.revision));
        }
    }
    for event in &together {
        feed.deliver(event, store);
    }
    for key in ranked(2)? {
        tell(feed, &key).await?;
    }
    Ok(())
}

/// Tells the caches of `key` as the store holds it now.
async fn tell(feed: &Feed, key: &Key) -> ApiResult<()> {
    if let Some(record) = feed.store.get(key).await? {
        let event = kspaces_storage::Event::new(kspaces_storage::EventKind::Added, key.clone(), record.value, None, record.revision);
        feed.deliver(&event, &feed.store);
    }
    Ok(())
}

/// Creates every object of the snapshot, the Tenant last; how many. `created` gets each key created.
async fn write_all(store: &Store, file: &Path, tenant_key: &Key, created: &mut Vec<Key>) -> ApiResult<u64> {
    use futures::StreamExt;
    let create = |key: Key, value: bytes::Bytes| {
        let store = store.clone();
        async move {
            match store.create(&key, value).await {
                Ok(Ok(_)) => Ok(key),
                Ok(Err(_)) => Err(ApiError::conflict("", "tenants", "", &format!("{} was created meanwhile", key.as_str()))),
                Err(err) => Err(ApiError::from(err)),
            }
        }
    };
    let mut tenant = None;
    let mut written = 0;
    let input = File::open(file).map_err(|err| ApiError::internal(format!("{}: {err}", file.display())))?;
    let mut reader = SnapshotReader::open(BufReader::with_capacity(1 << 20, input)).map_err(|err| ApiError::internal(err.to_string()))?;
    let mut writes = futures::stream::FuturesUnordered::new();
    let mut failed = None;
    loop {
        // The file is read a chunk at a time (it is checked already).
        let item = match reader.next_item() {
            Ok(Some(item)) => item,
            Ok(None) => break,
            Err(err) => {
                failed = Some(ApiError::internal(err.to_string()));
                break;
            }
        };
        let Item::Record(record) = item else { continue };
        if &record.key == tenant_key {
            tenant = Some(record);
            continue;
        }
        writes.push(create(record.key, record.value));
        written += 1;
        if writes.len() >= IN_FLIGHT {
            match writes.next().await {
                Some(Ok(key)) => created.push(key),
                Some(Err(err)) => {
                    failed = Some(err);
                    break;
                }
                None => {}
            }
        }
    }
    // Every write sent is waited for, so that an undo comes after all of them.
    while let Some(outcome) = writes.next().await {
        match outcome {
            Ok(key) => created.push(key),
            Err(err) => {
                failed.get_or_insert(err);
            }
        }
    }
    if let Some(err) = failed {
        return Err(err);
    }
    let tenant = tenant.ok_or_else(|| ApiError::internal("the snapshot's Tenant went missing"))?;
    created.push(create(tenant.key, tenant.value).await?);
    Ok(written + 1)
}
/// Deletes the keys a failed restore created, then `marker`.
async fn undo(store: &Store, created: Vec<Key>, marker: &Key) -> ApiResult<()> {
    for key in created {
        store.delete(&key, None).await?.ok();
    }
    store.delete(marker, None).await?.ok();
    Ok(())
}

/// Finishes what a tenant restore stopped by a kill -9 left (run before the caches are primed): if its marker is
/// there and its Tenant is not, the restore never got to make the tenant visible, and every key of the spaces the
/// marker names is deleted; then the marker.
pub async fn clean_half_restores(store: &Store) -> kspaces_storage::Result<()> {
    let range = tenant_restores(store.layout())?.namespace(&SpaceName::system(), None)?;
    let listed = store.list(&range, &ListRequest { revision: None, limit: None, continue_token: None, skip_remaining: true }).await?;
    for record in listed.items {
        let Ok(parts) = record.key.parts(store.layout()) else { continue };
        let tenant = parts.name.to_owned();
        tracing::warn!(tenant, "finishing a tenant restore that was stopped: undoing it unless its Tenant was made");
        clean_restore(store, &tenant).await?;
    }
    Ok(())
}

/// [`clean_half_restores`] for one tenant.
async fn clean_restore(store: &Store, tenant: &str) -> kspaces_storage::Result<()> {
    let layout = store.layout().clone();
    let marker = tenant_restore_marker(&layout, tenant)?;
    let Some(record) = store.get(&marker).await? else { return Ok(()) };
    if store.get(&tenant_key(&layout, tenant)?).await?.is_none() {
        let named: serde_json::Value = serde_json::from_slice(&record.value).unwrap_or_default();
        let spaces: BTreeSet<String> =
            named["spaces"].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_owned)).filter(|s| s != "system").collect();
        let revision = store.current_revision().await?;
        let mut doomed = Vec::new();
        each_page(store, &layout.everything(), revision, |record| {
            if space_segment(record.key.as_str()).is_some_and(|space| spaces.contains(space)) {
                doomed.push(record.key.clone());
            }
        }).await?;
        for key in doomed {
            let _ = store.delete(&key, None).await?;
        }
    }
    let _ = store.delete(&marker, None).await?;
    Ok(())
}
