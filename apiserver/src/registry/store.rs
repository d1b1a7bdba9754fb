//! The generic store: every verb's semantics for every resource, over `kspaces_storage::Store`, independent of
//! HTTP and of any one kind. A kind's own rules come from its `Strategy` (the `Strategies` table), the rules that
//! may refuse a write from the `AdmissionChain`; both run inside the write, against the object it replaces.
//! Objects are JSON values; `metadata.resourceVersion` is never stored, it is the record's revision.
//!
//! A write goes: admission → the kind's write guard → prepare (generic metadata, then the strategy's) →
//! validate (generic checks, then the strategy's) → managedFields → the metadata no manager owns (`kcp.io/cluster`,
//! mutating admission's changes) → the stored form → the store → the write observers → (creates) the strategy's
//! `after_create`. Reads go through `Reader`, then the request's form.

#[cfg(test)]
mod tests;

use chrono::Utc;
use kspaces_authz::Caller;
use kspaces_storage::{Clusters, Conflict, Key, Position, Record, Revision, SpaceName, Watcher};
use serde_json::{json, Value};
use std::sync::Arc;

use super::admission::{AdmissionChain, AdmissionPhase, Attributes, Operation, Question};
use super::deletion::{self, Plan};
use super::depth;
use super::limits::{Growth, Limits, Request, Reservation};
use super::managed_fields;
use super::observe::{revision_of, WriteObserver};
use super::read::{ListMeta, ListOptions, Pages, Reader, PAGE, PARSED_AT_ONCE};
use super::stored::{decode, encode, set_resource_version};
use super::strategy::{Part, Strategies, Strategy};
use super::write::Warnings;
use super::{now, validate, ResourceInfo, ResourceTable, Scope, Spaces, Subresource, WriteContext};
use crate::fieldmanager::Operation as FieldOperation;
use crate::status::{ApiError, ApiResult, Cause};

pub use super::deletion::{is_deleting, DeleteOptions};

/// Which tenant owns a space: the value of the `metadata.tenant` every tenanted object carries (Arktos).
pub trait SpaceTenants: Send + Sync {
    fn tenant_of(&self, space: &SpaceName) -> String;
}

/// The annotation every object carries: the logical cluster it lives in (kcp's; `root` for the system space).
pub const CLUSTER_ANNOTATION: &str = "kcp.io/cluster";

/// The logical cluster name of a space, as `kcp.io/cluster` gives it.
pub fn cluster_name(space: &SpaceName) -> &str {
    if space.is_system() { "root" } else { space.as_str() }
}

/// The space a logical cluster name (as `cluster_name` gives it) stands for; `None` for no valid name.
pub fn space_of_cluster(cluster: &str) -> Option<SpaceName> {
    if cluster == "root" { Some(SpaceName::system()) } else { SpaceName::new(cluster).ok() }
}

/// What a delete did.
#[derive(Debug)]
pub enum DeleteOutcome {
    /// Gone from storage.
    Deleted(Value),
    /// Marked for deletion; finalizers are pending.
    Pending(Value),
}

impl DeleteOutcome {
    /// Whether the server's own delete of an object in a space being emptied leaves it gone: removed, or gone
    /// meanwhile (404). Not when it is only marked, or is a Terminating namespace its own controller empties
    /// (409). Any other error stays one.
    pub fn gone(outcome: ApiResult<DeleteOutcome>) -> ApiResult<bool> {
        match outcome {
            Ok(DeleteOutcome::Deleted(_)) | Err(ApiError { code: 404, .. }) => Ok(true),
            Ok(DeleteOutcome::Pending(_)) | Err(ApiError { code: 409, .. }) => Ok(false),
            Err(err) => Err(err),
        }
    }
}

/// What the store is made of besides the storage: the kinds' rules and whom to tell of writes.
pub struct Wiring {
    pub strategies: Strategies,
    pub admission: AdmissionChain,
    /// Told of every durable write, in this order.
    pub observers: Vec<Arc<dyn WriteObserver>>,
    pub tenants: Arc<dyn SpaceTenants>,
    /// What each space may store (every write reserves its growth first).
    pub limits: Arc<dyn Limits>,
}

struct Inner {
    reader: Reader,
    wiring: Wiring,
}

/// Serves every resource of the table over one store.
#[derive(Clone)]
pub struct GenericStore {
    inner: Arc<Inner>,
}

fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object.get("metadata")?.get(field)?.as_str()
}

fn metadata_mut(object: &mut Value) -> ApiResult<&mut serde_json::Map<String, Value>> {
    let object = object.as_object_mut().ok_or_else(|| ApiError::bad_request("the object must be a JSON object"))?;
    let metadata = object.entry("metadata").or_insert_with(|| json!({}));
    if metadata.is_null() {
        *metadata = json!({});
    }
    metadata.as_object_mut().ok_or_else(|| ApiError::bad_request("metadata must be an object"))
}

/// Puts an apply's entries on the object a subresource write keeps (which starts from the stored object).
fn set_managed_fields(object: &mut Value, entries: Option<Value>) -> ApiResult<()> {
    let metadata = metadata_mut(object)?;
    match entries {
        Some(entries) => metadata.insert("managedFields".into(), entries),
        None => metadata.remove("managedFields"),
    };
    Ok(())
}

/// The namespace of a stored object of `row` (namespaced resources only).
fn namespace_of<'a>(row: &ResourceInfo, object: &'a Value) -> Option<&'a str> {
    meta_str(object, "namespace").filter(|_| row.namespaced)
}

const GENERATE_NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn generated_name(prefix: &str) -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    let suffix: String = (0..5).map(|_| GENERATE_NAME_ALPHABET[rng.random_range(0..GENERATE_NAME_ALPHABET.len())] as char).collect();
    let keep = prefix.len().min(253 - 5);
    format!("{}{suffix}", &prefix[..keep])
}

/// The object a write finds: its key (of the stored row, for a view), its revision, as stored, and as the
/// request sees it.
struct Current {
    key: Key,
    /// The stored row, when the request's resource is a view.
    row: Option<Arc<ResourceInfo>>,
    revision: Revision,
    /// Its stored bytes' length.
    size: usize,
    stored: Value,
    /// As the request sees it, when that differs from `stored` (a kind with a `View`).
    view: Option<Value>,
}

impl Current {
    /// The object as the request sees it.
    fn view(&self) -> &Value {
        self.view.as_ref().unwrap_or(&self.stored)
    }

    fn into_view(self) -> Value {
        self.view.unwrap_or(self.stored)
    }
}

/// The stored object an update replaces: where it is, what it was, and at which revision.
struct Stored<'a> {
    space: &'a SpaceName,
    key: &'a Key,
    name: &'a str,
    object: &'a Value,
    revision: Revision,
    /// Its stored bytes' length.
    size: usize,
}

impl GenericStore {
    pub fn new(store: impl Into<Clusters>, wiring: Wiring) -> GenericStore {
        GenericStore { inner: Arc::new(Inner { reader: Reader::new(store), wiring }) }
    }

    /// Objects as they are stored, for caches and controllers.
    pub fn reader(&self) -> &Reader {
        &self.inner.reader
    }

    fn limits(&self) -> &dyn Limits {
        &*self.inner.wiring.limits
    }

    fn store(&self) -> &Clusters {
        self.inner.reader.clusters()
    }

    /// The revision a client's `resourceVersion` gives an object of `scope`'s space: the number, or, from an
    /// object a watch across storage clusters delivered, the entry of the space's cluster.
    fn revision_of_space(&self, position: &Position, scope: &Scope) -> Option<Revision> {
        let cluster = self.store().cluster_of(scope.space().ok()?.as_str()).ok()?;
        position.on(cluster)
    }

    /// The rules of `resource`'s kind.
    pub fn strategy(&self, resource: &ResourceInfo) -> &dyn Strategy {
        self.inner.wiring.strategies.of(resource)
    }

    /// The tenant that owns `space` (the `metadata.tenant` of its objects).
    pub fn tenant_of(&self, space: &SpaceName) -> String {
        self.inner.wiring.tenants.tenant_of(space)
    }

    /// Turns a stored object into the form a request for `resource` sees (custom resources: its version; a view:
    /// its own kind).
    pub fn to_request(&self, resource: &ResourceInfo, object: &mut Value) {
        if let Some(view) = self.strategy(resource).view() {
            view.to_request(resource, object);
        }
    }

    /// Whether showing `resource`'s objects in another version takes a call outside (CRD conversion webhooks).
    pub fn converts(&self, resource: &ResourceInfo) -> bool {
        self.strategy(resource).converts(resource)
    }

    /// Shows `objects` (after `to_request`) in the request's version when that takes a conversion call: one call
    /// per space they live in (a list across spaces groups them by `kcp.io/cluster`).
    pub async fn convert_shown(&self, resource: &ResourceInfo, spaces: &Spaces, objects: &mut [Value]) -> ApiResult<()> {
        if objects.is_empty() || !self.converts(resource) {
            return Ok(());
        }
        let strategy = self.strategy(resource);
        if let Spaces::One(space) = spaces {
            return strategy.convert(self, resource, space, objects, false).await;
        }
        let mut by_space: Vec<(SpaceName, Vec<usize>)> = Vec::new();
        for (i, object) in objects.iter().enumerate() {
            let cluster = object.pointer("/metadata/annotations").and_then(|a| a.get(CLUSTER_ANNOTATION)).and_then(Value::as_str);
            let space = cluster.and_then(space_of_cluster).ok_or_else(|| ApiError::internal("an object to convert does not name its space"))?;
            match by_space.iter_mut().find(|(s, _)| *s == space) {
                Some((_, indices)) => indices.push(i),
                None => by_space.push((space, vec![i])),
            }
        }
        for (space, indices) in by_space {
            let mut batch: Vec<Value> = indices.iter().map(|i| std::mem::take(&mut objects[*i])).collect();
            let converted = strategy.convert(self, resource, &space, &mut batch, false).await;
            for (i, object) in indices.into_iter().zip(batch) {
                objects[i] = object;
            }
            converted?;
        }
        Ok(())
    }

    /// A stored object (a write's answer) in the request's form, converted when that takes a call.
    async fn shown_one(&self, resource: &ResourceInfo, spaces: &Spaces, mut object: Value) -> ApiResult<Value> {
        self.to_request(resource, &mut object);
        self.convert_shown(resource, spaces, std::slice::from_mut(&mut object)).await?;
        Ok(object)
    }

    /// A validated object in the request's version turned into the storage version, when that takes a call.
    async fn convert_to_storage(&self, resource: &ResourceInfo, space: &SpaceName, object: &mut Value) -> ApiResult<()> {
        if !self.converts(resource) {
            return Ok(());
        }
        self.strategy(resource).convert(self, resource, space, std::slice::from_mut(object), true).await
    }

    /// `read_current` for a write that works on the request's form: its view converted when that takes a call.
    async fn read_current_shown(&self, resource: &ResourceInfo, scope: &Scope, name: &str) -> ApiResult<Current> {
        let mut current = self.read_current(resource, scope, name).await?;
        if let Some(view) = current.view.as_mut() {
            self.convert_shown(resource, &scope.spaces, std::slice::from_mut(view)).await?;
        }
        Ok(current)
    }

    /// Whether requests for `resource` see its stored objects unchanged (its kind has no `View`).
    fn shows_stored(&self, resource: &ResourceInfo) -> bool {
        self.strategy(resource).view().is_none()
    }

    /// Whether `resource` is, in `spaces`, a view of another resource's stored objects.
    pub fn is_view(&self, resource: &ResourceInfo, spaces: &Spaces) -> bool {
        self.stored_row(resource, spaces).is_some()
    }

    /// Whether a request for `resource` sees this stored object at all (see `Strategy::visible`).
    pub fn visible(&self, resource: &ResourceInfo, stored: &Value) -> bool {
        self.strategy(resource).view().is_none_or(|view| view.visible(resource, stored))
    }

    /// The row whose keys hold `resource`'s objects in `spaces`: its own, unless its strategy makes it a view.
    fn stored_row(&self, resource: &ResourceInfo, spaces: &Spaces) -> Option<Arc<ResourceInfo>> {
        match spaces {
            Spaces::One(space) => self.strategy(resource).view()?.stored_as(resource, space),
            Spaces::All => None,
        }
    }

    /// Reports a missing object as the request's resource (a view's stored row has another name).
    fn as_requested(resource: &ResourceInfo, name: &str, err: ApiError) -> ApiError {
        match err.code {
            404 => ApiError::not_found(&resource.group, &resource.plural, name),
            _ => err,
        }
    }

    pub(super) fn notify(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        for observer in &self.inner.wiring.observers {
            observer.written(resource, space, name, object, revision);
        }
    }

    pub(super) fn notify_deleted(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, last: &Value, revision: Revision) {
        for observer in &self.inner.wiring.observers {
            observer.deleted(resource, space, name, last, revision);
        }
    }

    /// Feeds `observers` every stored object of the kinds they follow (in `table`), one paged list per kind.
    pub async fn prime(&self, observers: &[Arc<dyn WriteObserver>], table: &ResourceTable) -> ApiResult<()> {
        self.list_into(observers, table, false).await
    }

    /// As `prime`, for caches that already hold objects: what they hold (`WriteObserver::holds`) that a list no
    /// longer shows is told deleted, as of the list's revision.
    pub async fn relist(&self, observers: &[Arc<dyn WriteObserver>], table: &ResourceTable) -> ApiResult<()> {
        self.list_into(observers, table, true).await
    }

    async fn list_into(&self, observers: &[Arc<dyn WriteObserver>], table: &ResourceTable, replace: bool) -> ApiResult<()> {
        let mut kinds: Vec<(&str, &str)> = observers.iter().flat_map(|o| o.follows().iter().copied()).collect();
        kinds.sort_unstable();
        kinds.dedup();
        for (group, kind) in kinds {
            let Some(resource) = table.by_kind(group, kind).cloned() else { continue };
            let followers: Vec<&Arc<dyn WriteObserver>> = observers.iter().filter(|o| o.follows().contains(&(group, kind))).collect();
            let mut listed = std::collections::HashSet::new();
            let revision = self.reader().visit(&resource, &Scope::everywhere(), 1000, |space, object| {
                let name = meta_str(&object, "name").unwrap_or_default();
                for follower in &followers {
                    follower.written(&resource, space, name, Some(&object), revision_of(&object));
                }
                if replace {
                    listed.insert((space.clone(), name.to_owned()));
                }
            }).await?;
            if replace {
                for follower in &followers {
                    for (space, name) in follower.holds(&resource).into_iter().filter(|held| !listed.contains(held)) {
                        follower.written(&resource, &space, &name, None, self.reader().revision_in(&revision, &space));
                    }
                }
            }
        }
        Ok(())
    }

    /// Tells every observer the store's history was lost to this process (`WriteObserver::resync`).
    pub(super) fn resync_observers(&self) {
        for observer in &self.inner.wiring.observers {
            observer.resync();
        }
    }

    /// One object, as the request's version shows it.
    pub async fn get(&self, resource: &ResourceInfo, scope: &Scope, name: &str) -> ApiResult<Value> {
        let stored = self.stored_row(resource, &scope.spaces);
        let row = stored.as_deref().unwrap_or(resource);
        let mut object = self.reader().get(row, scope, name).await.map_err(|err| Self::as_requested(resource, name, err))?;
        if !self.visible(resource, &object) {
            return Err(ApiError::not_found(&resource.group, &resource.plural, name));
        }
        self.to_request(resource, &mut object);
        self.convert_shown(resource, &scope.spaces, std::slice::from_mut(&mut object)).await?;
        Ok(object)
    }

    /// Lists objects (see `Reader::list`), as the request's version shows them.
    pub async fn list(&self, resource: &ResourceInfo, scope: &Scope, options: &ListOptions) -> ApiResult<(Vec<Value>, ListMeta)> {
        let mut items = Vec::new();
        let meta = self.list_pages(resource, scope, options, |page| items.extend(page)).await?;
        Ok((items, meta))
    }

    /// Lists objects a page at a time (see `Pages`), as the request's version shows them, handing them to `visit`
    /// `PARSED_AT_ONCE` at a time (an answer built that way never holds more objects parsed); returns the list's
    /// metadata.
    pub async fn list_pages(&self, resource: &ResourceInfo, scope: &Scope, options: &ListOptions, mut visit: impl FnMut(Vec<Value>)) -> ApiResult<ListMeta> {
        let mut pages = self.pages(resource, scope, options)?;
        let converts = self.converts(resource);
        while let Some(page) = pages.next().await? {
            if converts {
                // One conversion call per page (per space in it), as kube-apiserver makes one per list.
                let mut items = self.shown(resource, &page)?;
                self.convert_shown(resource, &scope.spaces, &mut items).await?;
                visit(items);
                continue;
            }
            for records in page.chunks(PARSED_AT_ONCE) {
                visit(self.shown(resource, records)?);
            }
        }
        pages.into_meta()
    }

    /// The list of `resource` in `scope`, its stored records a page at a time (see `Pages`); `shown` gives each
    /// page as the request sees it.
    pub fn pages(&self, resource: &ResourceInfo, scope: &Scope, options: &ListOptions) -> ApiResult<Pages> {
        let stored = self.stored_row(resource, &scope.spaces);
        self.reader().pages(stored.as_deref().unwrap_or(resource), scope, options.clone())
    }

    /// A page of `pages`' records as a request for `resource` sees them: the visible ones, in the request's form.
    pub fn shown(&self, resource: &ResourceInfo, page: &[Record]) -> ApiResult<Vec<Value>> {
        let mut items = Vec::with_capacity(page.len());
        for record in page {
            let mut item = decode(record)?;
            if self.visible(resource, &item) {
                self.to_request(resource, &mut item);
                items.push(item);
            }
        }
        Ok(items)
    }

    /// One object's stored record when a request for `resource` sees stored objects unchanged (its kind has no
    /// `View`): an answer may then send its bytes (`stored::write_as_read`). `None` otherwise.
    pub async fn get_as_stored(&self, resource: &ResourceInfo, scope: &Scope, name: &str) -> ApiResult<Option<Record>> {
        if !self.shows_stored(resource) {
            return Ok(None);
        }
        self.reader().record(resource, scope, name).await.map(Some)
    }

    /// The list as stored, page by page, when a request for `resource` sees stored objects unchanged (its kind
    /// has no `View`): an answer may then send the stored bytes (`stored::write_as_read`). `None` otherwise.
    pub fn pages_as_stored(&self, resource: &ResourceInfo, scope: &Scope, options: &ListOptions) -> ApiResult<Option<Pages>> {
        if !self.shows_stored(resource) {
            return Ok(None);
        }
        self.reader().pages(resource, scope, options.clone()).map(Some)
    }

    /// Watches `resource` in `scope` from after `from`; events carry stored objects (see `to_request`).
    pub async fn watch(&self, resource: &ResourceInfo, scope: &Scope, from: &Position) -> ApiResult<Result<Watcher, ApiError>> {
        let stored = self.stored_row(resource, &scope.spaces);
        self.reader().watch(stored.as_deref().unwrap_or(resource), scope, from).await
    }

    /// kube's admission metrics (`/metrics`).
    pub fn admission_metrics(&self) -> &crate::registry::admission::AdmissionMetrics {
        self.inner.wiring.admission.metrics()
    }

    /// Why admission would refuse every request `question` covers, if it would (access reviews).
    pub fn refusal(&self, question: &Question<'_>) -> Option<String> {
        self.inner.wiring.admission.refusal(self, question)
    }

    /// Runs the admission chain's rules of `phase` on one write.
    async fn admit(&self, phase: AdmissionPhase, attributes: Attributes<'_>) -> ApiResult<()> {
        self.inner.wiring.admission.admit(self, phase, &attributes).await
    }

    /// Completes and checks a new object: kind, namespace, tenant, cluster, name, uid, timestamps; then the kind's
    /// preparation, the checks and managedFields. The object stays in the request's form.
    fn prepare_create(&self, resource: &ResourceInfo, scope: &Scope, object: &mut Value, write: &WriteContext) -> ApiResult<()> {
        let space = scope.space()?;
        check_type_meta(resource, object)?;
        let metadata = metadata_mut(object)?;
        if metadata.get("resourceVersion").is_some_and(|rv| !rv.is_null() && rv != "") {
            return Err(ApiError::bad_request("resourceVersion should not be set on objects to be created"));
        }
        match (resource.namespaced, metadata.get("namespace").and_then(Value::as_str), &scope.namespace) {
            (true, Some(body), Some(url)) if body != url => {
                return Err(ApiError::bad_request("the namespace of the provided object does not match the namespace sent on the request"));
            }
            (true, _, Some(url)) => {
                metadata.insert("namespace".into(), json!(url));
            }
            (false, _, _) => {
                metadata.remove("namespace");
            }
            _ => {}
        }
        self.set_tenant(resource, space, metadata)?;
        let name = metadata.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
        if name.is_empty() {
            match metadata.get("generateName").and_then(Value::as_str) {
                Some(prefix) if !prefix.is_empty() => {
                    metadata.insert("name".into(), json!(generated_name(prefix)));
                }
                _ => {
                    return Err(ApiError::invalid(&resource.group, &resource.kind, "",
                        vec![Cause { reason: "FieldValueRequired", message: "Required value: name or generateName is required".into(), field: "metadata.name".into() }]));
                }
            }
        }
        metadata.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        metadata.insert("creationTimestamp".into(), json!(now()));
        metadata.remove("deletionTimestamp");
        metadata.remove("deletionGracePeriodSeconds");
        metadata.remove("selfLink");
        let has_spec = object.get("spec").is_some() || resource.custom.is_some();
        if has_spec {
            metadata_mut(object)?.insert("generation".into(), json!(1));
        }
        if resource.has_subresource(Subresource::Status) {
            if let Some(object) = object.as_object_mut() {
                object.insert("status".into(), json!({}));
            }
        }
        let strategy = self.strategy(resource);
        fill_type_meta(resource, object);
        strategy.prepare_create(resource, space, write.caller.as_deref(), object);
        check(strategy, resource, object, None)?;
        managed_fields::record(resource, write, None, object);
        // After managedFields: the server's annotation and mutating admission's metadata are no manager's fields
        // (as kcp's storage and admission set them).
        set_cluster(space, metadata_mut(object)?, None);
        self.inner.wiring.admission.mutate(resource, space, Operation::Create, object);
        Ok(())
    }

    /// Creates an object (the write's manager records an `Update` entry, unless it is an apply that did).
    pub async fn create(&self, resource: &ResourceInfo, scope: &Scope, object: Value, write: &WriteContext) -> ApiResult<Value> {
        let space = scope.space()?;
        let strategy = self.strategy(resource);
        let shown_name = meta_str(&object, "name").filter(|n| !n.is_empty()).or_else(|| meta_str(&object, "generateName")).unwrap_or_default().to_owned();
        let base = Attributes {
            operation: Operation::Create,
            resource,
            space,
            namespace: scope.namespace.as_deref().filter(|_| resource.namespaced),
            name: &shown_name,
            object: None,
            old: None,
            part: Part::Main,
            caller: write.caller.as_deref(),
            dry_run: write.dry_run,
            warnings: Some(&write.warnings),
        };
        self.admit(AdmissionPhase::Mutating, Attributes { object: Some(&object), ..base }).await?;
        let mut object = object;
        self.inner.wiring.admission.default(self, &base, &mut object).await?;
        let generated = meta_str(&object, "name").is_none_or(str::is_empty);
        let created = {
            let _guard = strategy.begin_write(resource).await;
            let mut created = None;
            for _attempt in 0..3 {
                let mut candidate = object.clone();
                self.prepare_create(resource, scope, &mut candidate, write)?;
                strategy.validate_costly(resource, space, &candidate, None).await?;
                self.admit(AdmissionPhase::Validating, Attributes { object: Some(&candidate), ..base }).await?;
                match self.store_new(resource, scope, candidate, write).await? {
                    Some(stored) => {
                        created = Some(stored);
                        break;
                    }
                    None if generated => continue,
                    None => return Err(ApiError::already_exists(&resource.group, &resource.plural, meta_str(&object, "name").unwrap_or_default())),
                }
            }
            created.ok_or_else(|| ApiError::new(409, "AlreadyExists", "failed to generate a unique name; try again"))?
        };
        if !write.dry_run {
            strategy.after_create(self, space, &created).await?;
        }
        self.shown_one(resource, &scope.spaces, created).await
    }

    /// Stores a completed new object in its stored form; `None` when its name is taken. Returns the stored
    /// object (a dry run: what would be).
    async fn store_new(&self, resource: &ResourceInfo, scope: &Scope, mut object: Value, write: &WriteContext) -> ApiResult<Option<Value>> {
        let space = scope.space()?;
        let stored_row = self.stored_row(resource, &scope.spaces);
        let row = stored_row.as_deref().unwrap_or(resource);
        self.convert_to_storage(resource, space, &mut object).await?;
        self.strategy(resource).to_storage(resource, space, &mut object, None);
        let name = meta_str(&object, "name").unwrap_or_default().to_owned();
        let key = self.inner.reader.key(row, scope, &name)?;
        depth::check_stored(&resource.group, &resource.kind, &name, &object)?;
        let bytes = encode(&object);
        let request = Request { space, namespace: namespace_of(row, &object), resource, name: &name, object: Some(&object), old: None,
            growth: Growth::created(bytes.len()), refusable: true };
        let reservation = Reservation::take(self.limits(), request).await?;
        if write.dry_run {
            drop(reservation);
            return match self.store().get(&key).await? {
                Some(_) => Err(ApiError::already_exists(&resource.group, &resource.plural, &name)),
                None => Ok(Some(object)),
            };
        }
        match reservation.create(self.store(), &key, bytes).await? {
            Ok(record) => {
                reservation.commit(record.revision);
                set_resource_version(&mut object, record.revision);
                self.notify(row, space, &name, Some(&object), record.revision);
                Ok(Some(object))
            }
            Err(_) => Ok(None),
        }
    }

    /// Replaces an object (PUT), the main resource or a subresource. Returns the stored object.
    pub async fn update(&self, resource: &ResourceInfo, scope: &Scope, name: &str, object: Value, part: Part, write: &WriteContext) -> ApiResult<Value> {
        check_type_meta(resource, &object)?;
        check_namespace(resource, scope, &object)?;
        if meta_str(&object, "name").is_some_and(|n| n != name) {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})", meta_str(&object, "name").unwrap_or_default())));
        }
        let expected = match object.pointer("/metadata/resourceVersion").and_then(Value::as_str) {
            Some("") | None => None,
            Some(rv) => Some(rv.parse::<Position>().map_err(|_| {
                ApiError::invalid(&resource.group, &resource.kind, name, vec![Cause::invalid("metadata.resourceVersion", rv, "must be a valid resource version")])
            })?),
        };
        let strategy = self.strategy(resource);
        let _guard = strategy.begin_write(resource).await;
        let current = self.read_current_shown(resource, scope, name).await?;
        if expected.is_some_and(|rv| self.revision_of_space(&rv, scope) != Some(current.revision)) {
            return Err(ApiError::stale(&resource.group, &resource.plural, name));
        }
        let updated = self.replace(resource, scope, &current, object, part, write).await?;
        self.shown_one(resource, &scope.spaces, updated).await
    }

    /// Read-modify-write with retries on conflict: `change` maps the current object (in the request's form) to
    /// the desired one. (An apply's `change` records the applier's managedFields itself; see `WriteContext`.)
    pub async fn guaranteed_update<F>(&self, resource: &ResourceInfo, scope: &Scope, name: &str, part: Part, write: &WriteContext, change: F) -> ApiResult<Value>
    where
        F: Fn(&Value) -> ApiResult<Value>,
    {
        let strategy = self.strategy(resource);
        let _guard = strategy.begin_write(resource).await;
        for _attempt in 0..16 {
            let current = self.read_current_shown(resource, scope, name).await?;
            let desired = change(current.view())?;
            // The server's own status write that changes nothing is done before any of the work an update does
            // (a controller's pass over what it already set: phases, conditions), unless the kind computes its
            // status from elsewhere at every write (a CRD's names, written again once they are free).
            if write.caller.is_none() && part == Part::Status && desired == *current.view() && !strategy.status_from_elsewhere() {
                return Ok(current.into_view());
            }
            if let Some(rv) = desired.pointer("/metadata/resourceVersion").and_then(Value::as_str) {
                let position = rv.parse::<Position>().ok();
                if !rv.is_empty() && position.and_then(|position| self.revision_of_space(&position, scope)) != Some(current.revision) {
                    return Err(ApiError::stale(&resource.group, &resource.plural, name));
                }
            }
            if meta_str(&desired, "name").is_some_and(|n| n != name) {
                return Err(ApiError::bad_request("the name of the object cannot be changed"));
            }
            check_type_meta(resource, &desired)?;
            check_namespace(resource, scope, &desired)?;
            match self.replace(resource, scope, &current, desired, part, write).await {
                Err(err) if err.reason == "Conflict" => continue,
                Ok(updated) => return self.shown_one(resource, &scope.spaces, updated).await,
                Err(err) => return Err(err),
            }
        }
        Err(ApiError::stale(&resource.group, &resource.plural, name))
    }

    /// The server's own lift of `finalizer` from an object being deleted. When it is the last thing holding the
    /// object (no other finalizer, no grace period, no `spec.finalizers`), the object is removed at once, as the
    /// update emptying its finalizers would remove it, without that update's work (admission, managedFields) on an
    /// object about to go; otherwise the finalizer is lifted by an update.
    pub async fn lift_finalizer(&self, resource: &ResourceInfo, scope: &Scope, name: &str, write: &WriteContext, finalizer: &str) -> ApiResult<()> {
        let current = self.read_current(resource, scope, name).await?;
        let row = current.row.as_deref().unwrap_or(resource);
        let only = current.stored.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| f.len() == 1 && f[0] == finalizer);
        if only && deletion::may_remove_when_finalized(&current.stored) && !spec_finalizers_pending(row, &current.stored) {
            let stored = Stored { space: scope.space()?, key: &current.key, name, object: &current.stored, revision: current.revision, size: current.size };
            if self.remove(row, stored, write.dry_run).await?.is_some() {
                return Ok(());
            }
        }
        self.guaranteed_update(resource, scope, name, Part::Main, write, |current| {
            let mut new = current.clone();
            if let Some(finalizers) = new.pointer_mut("/metadata/finalizers").and_then(Value::as_array_mut) {
                finalizers.retain(|f| f != finalizer);
            }
            Ok(new)
        }).await.map(drop)
    }

    /// The object `name` as stored now: its key, revision, stored form and the request's view of it.
    async fn read_current(&self, resource: &ResourceInfo, scope: &Scope, name: &str) -> ApiResult<Current> {
        let stored_row = self.stored_row(resource, &scope.spaces);
        let row = stored_row.as_deref().unwrap_or(resource);
        let key = self.inner.reader.key(row, scope, name)?;
        let record = self.store().get(&key).await?.ok_or_else(|| ApiError::not_found(&resource.group, &resource.plural, name))?;
        let mut current = self.current_of(resource, Record { key, ..record })?;
        current.row = stored_row;
        Ok(current)
    }

    /// `read_current`, or the record of an object whose stored bytes cannot be decoded (with its stored row).
    async fn read_current_or_unreadable(&self, resource: &ResourceInfo, scope: &Scope, name: &str) -> ApiResult<Result<Current, (Record, Option<Arc<ResourceInfo>>)>> {
        let stored_row = self.stored_row(resource, &scope.spaces);
        let row = stored_row.as_deref().unwrap_or(resource);
        let key = self.inner.reader.key(row, scope, name)?;
        let record = self.store().get(&key).await?.ok_or_else(|| ApiError::not_found(&resource.group, &resource.plural, name))?;
        if decode(&record).is_err() {
            return Ok(Err((Record { key, ..record }, stored_row)));
        }
        let mut current = self.current_of(resource, Record { key, ..record })?;
        current.row = stored_row;
        Ok(Ok(current))
    }

    /// kube's unsafe delete of a corrupt object: its key is removed outright, without admission, finalizers or
    /// grace period (nothing of it can be read to judge them), at the revision it was read at. Watchers and caches
    /// are told of the deletion with the object's name alone.
    async fn remove_unreadable(&self, resource: &ResourceInfo, scope: &Scope, name: &str, unreadable: (Record, Option<Arc<ResourceInfo>>)) -> ApiResult<DeleteOutcome> {
        let (record, stored_row) = unreadable;
        let row = stored_row.as_deref().unwrap_or(resource);
        let space = scope.space()?;
        let mut object = json!({"apiVersion": resource.api_version(), "kind": resource.kind, "metadata": {"name": name}});
        if let Some(namespace) = scope.namespace.as_deref().filter(|_| row.namespaced) {
            object["metadata"]["namespace"] = json!(namespace);
        }
        let request = Request { space, namespace: namespace_of(row, &object), resource: row, name, object: None, old: Some(&object),
            growth: Growth::removed(record.value.len()), refusable: false };
        let reservation = Reservation::take(self.limits(), request).await?;
        match reservation.delete(self.store(), &record.key, Some(record.revision)).await? {
            Ok(deleted) => {
                reservation.commit(deleted.revision);
                set_resource_version(&mut object, deleted.revision);
                self.notify_deleted(row, space, name, &object, deleted.revision);
                Ok(DeleteOutcome::Deleted(object))
            }
            Err(Conflict::NotFound) => Err(ApiError::not_found(&resource.group, &resource.plural, name)),
            Err(_) => Err(ApiError::stale(&resource.group, &resource.plural, name)),
        }
    }

    /// The object a write finds, from its record (of `resource` itself, not of a view's stored row).
    fn current_of(&self, resource: &ResourceInfo, record: Record) -> ApiResult<Current> {
        let stored = decode(&record)?;
        let view = (!self.shows_stored(resource)).then(|| {
            let mut view = stored.clone();
            self.to_request(resource, &mut view);
            view
        });
        Ok(Current { size: record.value.len(), key: record.key, row: None, revision: record.revision, stored, view })
    }

    /// Admits, prepares, checks and commits one update of `current` to `desired`.
    async fn replace(&self, resource: &ResourceInfo, scope: &Scope, current: &Current, desired: Value, part: Part, write: &WriteContext) -> ApiResult<Value> {
        let space = scope.space()?;
        let name = meta_str(&current.stored, "name").unwrap_or_default().to_owned();
        let base = Attributes {
            operation: Operation::Update,
            resource,
            space,
            namespace: scope.namespace.as_deref().filter(|_| resource.namespaced),
            name: &name,
            object: None,
            old: Some(current.view()),
            part,
            caller: write.caller.as_deref(),
            dry_run: write.dry_run,
            warnings: Some(&write.warnings),
        };
        self.admit(AdmissionPhase::Mutating, Attributes { object: Some(&desired), ..base }).await?;
        let mut desired = desired;
        self.inner.wiring.admission.default(self, &base, &mut desired).await?;
        let new = self.prepare_update(resource, scope, current.view(), desired, part, write)?;
        self.strategy(resource).validate_costly(resource, space, &new, Some(current.view())).await?;
        self.admit(AdmissionPhase::Validating, Attributes { object: Some(&new), ..base }).await?;
        let mut new = new;
        self.convert_to_storage(resource, space, &mut new).await?;
        self.strategy(resource).to_storage(resource, space, &mut new, Some(&current.stored));
        let row = current.row.as_deref().unwrap_or(resource);
        let stored = Stored { space, key: &current.key, name: &name, object: &current.stored, revision: current.revision, size: current.size };
        // The server's own writes of objects it keeps (status, finalizers) are counted, never refused.
        self.commit_update(row, stored, new, write.dry_run, write.caller.is_some()).await
    }

    /// The object an update stores, in the request's form: the part it may change, the metadata the server
    /// keeps, the kind's preparation, generation, the checks and managedFields. `old` is in the request's form.
    fn prepare_update(&self, resource: &ResourceInfo, scope: &Scope, old: &Value, new: Value, part: Part, write: &WriteContext) -> ApiResult<Value> {
        let space = scope.space()?;
        let strategy = self.strategy(resource);
        let applied = (write.operation == FieldOperation::Apply).then(|| new.pointer("/metadata/managedFields").cloned());
        let mut new = take_part(resource, old, new, part);
        self.keep_server_metadata(resource, scope, old, &mut new)?;
        fill_type_meta(resource, &mut new);
        strategy.prepare_update(resource, space, old, &mut new, part);
        if part == Part::Main && strategy.generation_changed(resource, old, &new) {
            let generation = old.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0) + 1;
            metadata_mut(&mut new)?.insert("generation".into(), json!(generation));
        }
        check(strategy, resource, &new, Some(old))?;
        match applied {
            Some(entries) => set_managed_fields(&mut new, entries)?,
            None => managed_fields::record(resource, write, Some(old), &mut new),
        }
        if part != Part::Finalize {
            self.inner.wiring.admission.mutate(resource, space, Operation::Update, &mut new);
        }
        Ok(new)
    }

    /// Commits `new` (stored form) over `stored`, as the stored row `row`.
    async fn commit_update(&self, row: &ResourceInfo, stored: Stored<'_>, mut new: Value, dry_run: bool, refusable: bool) -> ApiResult<Value> {
        let Stored { space, key, name, object: old, revision, size } = stored;
        let finished = deletion::may_remove_when_finalized(&new) && !deletion::has_finalizers(&new) && !spec_finalizers_pending(row, &new);
        if finished {
            if dry_run {
                set_resource_version(&mut new, revision);
                return Ok(new);
            }
            let request = Request { space, namespace: namespace_of(row, old), resource: row, name, object: None, old: Some(old),
                growth: Growth::removed(size), refusable: false };
            let reservation = Reservation::take(self.limits(), request).await?;
            return match reservation.delete(self.store(), key, Some(revision)).await? {
                Ok(deleted) => {
                    reservation.commit(deleted.revision);
                    set_resource_version(&mut new, deleted.revision);
                    self.notify_deleted(row, space, name, &new, deleted.revision);
                    Ok(new)
                }
                Err(conflict) => Err(conflict_error(row, name, conflict)),
            };
        }
        if same_ignoring_resource_version(old, &new) {
            set_resource_version(&mut new, revision);
            return Ok(new);
        }
        depth::check_stored(&row.group, &row.kind, name, &new)?;
        let bytes = encode(&new);
        let request = Request { space, namespace: namespace_of(row, old), resource: row, name, object: Some(&new), old: Some(old),
            growth: Growth::replaced(size, bytes.len()), refusable };
        let reservation = Reservation::take(self.limits(), request).await?;
        if dry_run {
            drop(reservation);
            set_resource_version(&mut new, revision);
            return Ok(new);
        }
        match reservation.update(self.store(), key, bytes, Some(revision)).await? {
            Ok(record) => {
                reservation.commit(record.revision);
                set_resource_version(&mut new, record.revision);
                self.notify(row, space, name, Some(&new), record.revision);
                Ok(new)
            }
            Err(conflict) => Err(conflict_error(row, name, conflict)),
        }
    }

    /// Deletes an object as kube-apiserver does (`deletion::plan`): at once, or by marking it (deletion
    /// timestamp, the garbage collector's finalizers, a bound pod's grace period) while finalizers or a grace
    /// period are pending. `caller` is `None` for the server's own deletes. A view's objects are deleted by the
    /// rules of the kind they are stored as.
    pub async fn delete(&self, resource: &ResourceInfo, scope: &Scope, name: &str, options: &DeleteOptions, caller: Option<&Caller>) -> ApiResult<DeleteOutcome> {
        self.delete_from(resource, scope, name, None, options, caller, None).await
    }

    /// `delete` for a request by `caller`: admission's warnings and audit annotations (validating webhooks' and
    /// policies' answers) go to `warnings`, as a create's do.
    pub async fn delete_by(&self, resource: &ResourceInfo, scope: &Scope, name: &str, options: &DeleteOptions, caller: &Caller,
        warnings: &Warnings) -> ApiResult<DeleteOutcome> {
        self.delete_from(resource, scope, name, None, options, Some(caller), Some(warnings)).await
    }

    /// `delete` of an object the caller has just listed (`record`, read through `Reader::pages` in `scope`): the
    /// first attempt starts from it instead of reading the object again; a later one (it changed since) reads.
    pub async fn delete_listed(&self, resource: &ResourceInfo, scope: &Scope, record: Record, options: &DeleteOptions) -> ApiResult<DeleteOutcome> {
        let current = self.current_of(resource, record)?;
        let name = meta_str(&current.stored, "name").unwrap_or_default().to_owned();
        // A view's records are its stored row's: its first attempt reads by name, as `delete` does.
        let listed = self.stored_row(resource, &scope.spaces).is_none().then_some(current);
        self.delete_from(resource, scope, &name, listed, options, None, None).await
    }

    #[allow(clippy::too_many_arguments)]
    async fn delete_from(&self, resource: &ResourceInfo, scope: &Scope, name: &str, mut listed: Option<Current>, options: &DeleteOptions,
        caller: Option<&Caller>, warnings: Option<&Warnings>) -> ApiResult<DeleteOutcome> {
        for _attempt in 0..16 {
            let current = match listed.take() {
                Some(current) => current,
                None if options.ignore_store_read_error => match self.read_current_or_unreadable(resource, scope, name).await? {
                    Ok(current) => current,
                    Err(unreadable) => return self.remove_unreadable(resource, scope, name, unreadable).await,
                },
                None => self.read_current(resource, scope, name).await?,
            };
            let row = current.row.as_deref().unwrap_or(resource);
            let rules = deletion::Rules {
                graceful: self.strategy(row).graceful_delete(),
                spec_finalizers: row.has_subresource(Subresource::Finalize),
            };
            let object = &current.stored;
            deletion::check_preconditions(&resource.group, &resource.kind, object, &current.revision.to_string(), options)?;
            let stored = Stored { space: scope.space()?, key: &current.key, name, object, revision: current.revision, size: current.size };
            self.admit(AdmissionPhase::Mutating, Attributes {
                operation: Operation::Delete,
                resource,
                space: stored.space,
                namespace: scope.namespace.as_deref().filter(|_| resource.namespaced),
                name,
                object: None,
                old: Some(current.view()),
                part: Part::Main,
                caller,
                dry_run: options.dry_run,
                warnings,
            }).await?;
            if is_deleting(object) && spec_finalizers_pending(row, object) {
                // kube-apiserver (namespaces) and Arktos (tenants) answer a repeated delete with 409.
                let kind = row.kind.to_ascii_lowercase();
                return Err(ApiError::conflict(&resource.group, &resource.plural, name, &format!(
                    "The system is ensuring all content is removed from this {kind}.  Upon completion, this {kind} \
                     will automatically be purged by the system.")));
            }
            let outcome = match deletion::plan(rules, object, options, Utc::now()) {
                Plan::AlreadyPending => Some(DeleteOutcome::Pending(object.clone())),
                Plan::Mark(marked) => self.mark_deleted(row, stored, marked, options.dry_run).await?,
                Plan::DeleteNow => self.remove(row, stored, options.dry_run).await?,
            };
            if let Some(outcome) = outcome {
                // A delete is done whatever its answer shows: a conversion that fails leaves the stored form.
                let shown = |object: Value| async {
                    let stored = object.clone();
                    self.shown_one(resource, &scope.spaces, object).await.unwrap_or(stored)
                };
                return Ok(match outcome {
                    DeleteOutcome::Deleted(object) => DeleteOutcome::Deleted(shown(object).await),
                    DeleteOutcome::Pending(object) => DeleteOutcome::Pending(shown(object).await),
                });
            }
        }
        Err(ApiError::stale(&resource.group, &resource.plural, name))
    }

    /// The server's own removal of what is left of a space being deleted (`controllers::empty_space`): a page of
    /// `resource`'s objects in `scope`, each removed at the revision it was read at, side by side (sled commits
    /// them together). No admission and no read again per object, as `delete` makes: the caller removes only
    /// objects no admission plugin guards (namespaces, RBAC, the LogicalCluster), and a namespace only once
    /// nothing is left in it, so its `spec.finalizers` are not waited for. An object with `metadata.finalizers`
    /// is only marked, by `delete` (as is every object of a view, whose records are its stored row's). True once
    /// nothing is left; an object changed since the read is left for the caller's next pass.
    pub async fn purge(&self, resource: &ResourceInfo, scope: &Scope) -> ApiResult<bool> {
        let space = scope.space()?;
        let view = self.stored_row(resource, &scope.spaces).is_some();
        let options = ListOptions { limit: Some(PAGE), ..ListOptions::default() };
        let mut pages = self.reader().pages(resource, scope, options)?;
        let records = pages.next().await?.unwrap_or_default();
        let mut gone = pages.meta().is_some_and(|meta| meta.continue_token.is_none());
        let mut removals = Vec::with_capacity(records.len());
        for record in &records {
            let object = decode(record)?;
            let Some(name) = meta_str(&object, "name").map(str::to_owned) else { continue };
            if view || deletion::has_finalizers(&object) {
                if is_deleting(&object) {
                    gone = false;
                    continue;
                }
                let item_scope = Scope::one(space.clone(), namespace_of(resource, &object).map(str::to_owned));
                gone &= DeleteOutcome::gone(self.delete(resource, &item_scope, &name, &DeleteOptions::default(), None).await)?;
                continue;
            }
            removals.push(async move {
                let stored = Stored { space, key: &record.key, name: &name, object: &object, revision: record.revision, size: record.value.len() };
                match self.remove(resource, stored, false).await {
                    Ok(Some(_)) | Err(ApiError { code: 404, .. }) => Ok(true),
                    Ok(None) => Ok(false),
                    Err(err) => Err(err),
                }
            });
        }
        for removed in futures::future::join_all(removals).await {
            gone &= removed?;
        }
        Ok(gone)
    }

    /// Stores an object marked for deletion; `None` if it changed meanwhile (the delete starts over).
    async fn mark_deleted(&self, row: &ResourceInfo, stored: Stored<'_>, mut marked: Value, dry_run: bool) -> ApiResult<Option<DeleteOutcome>> {
        if dry_run || same_ignoring_resource_version(stored.object, &marked) {
            set_resource_version(&mut marked, stored.revision);
            return Ok(Some(DeleteOutcome::Pending(marked)));
        }
        let bytes = encode(&marked);
        let request = Request { space: stored.space, namespace: namespace_of(row, stored.object), resource: row, name: stored.name, object: Some(&marked),
            old: Some(stored.object), growth: Growth::replaced(stored.size, bytes.len()), refusable: false };
        let reservation = Reservation::take(self.limits(), request).await?;
        match reservation.update(self.store(), stored.key, bytes, Some(stored.revision)).await? {
            Ok(record) => {
                reservation.commit(record.revision);
                set_resource_version(&mut marked, record.revision);
                self.notify(row, stored.space, stored.name, Some(&marked), record.revision);
                Ok(Some(DeleteOutcome::Pending(marked)))
            }
            Err(Conflict::NotFound) => Err(ApiError::not_found(&row.group, &row.plural, stored.name)),
            Err(_) => Ok(None),
        }
    }

    /// Removes an object from storage; `None` if it changed meanwhile (the delete starts over).
    async fn remove(&self, row: &ResourceInfo, stored: Stored<'_>, dry_run: bool) -> ApiResult<Option<DeleteOutcome>> {
        let mut object = stored.object.clone();
        if dry_run {
            return Ok(Some(DeleteOutcome::Deleted(object)));
        }
        let request = Request { space: stored.space, namespace: namespace_of(row, stored.object), resource: row, name: stored.name, object: None,
            old: Some(stored.object), growth: Growth::removed(stored.size), refusable: false };
        let reservation = Reservation::take(self.limits(), request).await?;
        match reservation.delete(self.store(), stored.key, Some(stored.revision)).await? {
            Ok(deleted) => {
                reservation.commit(deleted.revision);
                set_resource_version(&mut object, deleted.revision);
                self.notify_deleted(row, stored.space, stored.name, &object, deleted.revision);
                Ok(Some(DeleteOutcome::Deleted(object)))
            }
            Err(Conflict::NotFound) => Err(ApiError::not_found(&row.group, &row.plural, stored.name)),
            Err(_) => Ok(None),
        }
    }

    /// Keeps what clients may not change through an update: identity, timestamps, generation, name, namespace,
    /// tenant; and refuses new finalizers on an object being deleted.
    fn keep_server_metadata(&self, resource: &ResourceInfo, scope: &Scope, old: &Value, new: &mut Value) -> ApiResult<()> {
        let metadata = metadata_mut(new)?;
        for field in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"] {
            match old.get("metadata").and_then(|m| m.get(field)) {
                Some(value) => metadata.insert(field.into(), value.clone()),
                None => metadata.remove(field),
            };
        }
        metadata.insert("name".into(), old.get("metadata").and_then(|m| m.get("name")).cloned().unwrap_or(Value::Null));
        match (&scope.namespace, resource.namespaced) {
            (Some(namespace), true) => {
                metadata.insert("namespace".into(), json!(namespace));
            }
            _ => {
                metadata.remove("namespace");
            }
        }
        metadata.remove("selfLink");
        self.set_tenant(resource, scope.space()?, metadata)?;
        set_cluster(scope.space()?, metadata, Some(old));
        if is_deleting(old) {
            let old_finalizers: Vec<&Value> = old.pointer("/metadata/finalizers").and_then(Value::as_array).map(|f| f.iter().collect()).unwrap_or_default();
            let new_finalizers = new.pointer("/metadata/finalizers").and_then(Value::as_array).cloned().unwrap_or_default();
            if let Some(added) = new_finalizers.iter().find(|f| !old_finalizers.contains(f)) {
                return Err(ApiError::forbidden(format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {added}")));
            }
        }
        Ok(())
    }

    /// Sets `metadata.tenant` to the tenant of the object's space (Arktos); a body naming another tenant is 400.
    /// System-only (non-tenanted) objects carry no tenant.
    fn set_tenant(&self, resource: &ResourceInfo, space: &SpaceName, metadata: &mut serde_json::Map<String, Value>) -> ApiResult<()> {
        if resource.system_only {
            metadata.remove("tenant");
            return Ok(());
        }
        let tenant = self.inner.wiring.tenants.tenant_of(space);
        match metadata.get("tenant") {
            Some(Value::String(given)) if !given.is_empty() && *given != tenant => Err(ApiError::bad_request(format!(
                "the tenant of the provided object ({given}) does not match the tenant sent on the request ({tenant})"))),
            Some(Value::String(_) | Value::Null) | None => {
                metadata.insert("tenant".into(), json!(tenant));
                Ok(())
            }
            Some(other) => Err(ApiError::bad_request(format!("metadata.tenant must be a string, not {other}"))),
        }
    }
}

/// Sets `kcp.io/cluster`: the logical cluster the object lives in, as it was when the object was made (objects
/// older than the annotation get it at their next write).
fn set_cluster(space: &SpaceName, metadata: &mut serde_json::Map<String, Value>, old: Option<&Value>) {
    let kept = old.and_then(|old| old.pointer("/metadata/annotations")).and_then(|a| a.get(CLUSTER_ANNOTATION)).cloned();
    let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        return; // validation reports it
    }
    annotations[CLUSTER_ANNOTATION] = kept.unwrap_or_else(|| json!(cluster_name(space)));
}

/// The object a write of `part` leaves: `/finalize` changes only `spec.finalizers`, `/status` only `status`,
/// `/approval` only `status.conditions`, and the main resource everything but `status` (for resources with a status
/// subresource).
fn take_part(resource: &ResourceInfo, old: &Value, mut new: Value, part: Part) -> Value {
    match part {
        Part::Finalize => {
            let finalizers = new.pointer("/spec/finalizers").cloned().unwrap_or_else(|| json!([]));
            let mut merged = old.clone();
            if !merged.get("spec").is_some_and(Value::is_object) {
                merged["spec"] = json!({});
            }
            merged["spec"]["finalizers"] = finalizers;
            merged
        }
        Part::Status => {
            // A read-modify-write of the status (the server's, kubectl's) leaves the rest as it was: then the new
            // object is kept as it is, rather than the old one copied.
            if same_except_status(old, &new) {
                if let Some(object) = new.as_object_mut().filter(|o| o.get("status").is_some_and(Value::is_null)) {
                    object.remove("status");
                }
                return new;
            }
            let mut merged = old.clone();
            match (new.get_mut("status").map(Value::take), merged.as_object_mut()) {
                (Some(status), Some(object)) if !status.is_null() => {
                    object.insert("status".into(), status);
                }
                (_, Some(object)) => {
                    object.remove("status");
                }
                _ => {}
            }
            merged
        }
        Part::Approval => {
            let conditions = new.pointer("/status/conditions").cloned().unwrap_or_else(|| json!([]));
            let mut merged = old.clone();
            if !merged.get("status").is_some_and(Value::is_object) {
                merged["status"] = json!({});
            }
            merged["status"]["conditions"] = conditions;
            merged
        }
        Part::Main if resource.has_subresource(Subresource::Status) => {
            match (old.get("status"), new.as_object_mut()) {
                (Some(status), Some(object)) => {
                    object.insert("status".into(), status.clone());
                }
                (None, Some(object)) => {
                    object.remove("status");
                }
                _ => {}
            }
            new
        }
        Part::Main => new,
    }
}

/// True if two objects are equal but for their `status` (both objects: JSON objects).
fn same_except_status(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return false };
    let others = |map: &serde_json::Map<String, Value>| map.len() - usize::from(map.contains_key("status"));
    others(a) == others(b) && a.iter().filter(|(k, _)| *k != "status").all(|(k, v)| b.get(k) == Some(v))
}

/// True if two objects differ at most in `metadata.resourceVersion` (an update that changes nothing).
fn same_ignoring_resource_version(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return a == b };
    let metadata_equal = match (a.get("metadata").and_then(Value::as_object), b.get("metadata").and_then(Value::as_object)) {
        (Some(ma), Some(mb)) => {
            let fields = |m: &'_ serde_json::Map<String, Value>| m.iter().filter(|(k, _)| *k != "resourceVersion").count();
            fields(ma) == fields(mb) && ma.iter().filter(|(k, _)| *k != "resourceVersion").all(|(k, v)| mb.get(k) == Some(v))
        }
        (ma, mb) => ma == mb,
    };
    metadata_equal && a.len() == b.len() && a.iter().filter(|(k, _)| *k != "metadata").all(|(k, v)| b.get(k) == Some(v))
}

/// True while a namespace or tenant (a resource with `/finalize`) has content finalizers left in
/// `spec.finalizers`: it stays until its content is gone.
fn spec_finalizers_pending(resource: &ResourceInfo, object: &Value) -> bool {
    resource.has_subresource(Subresource::Finalize) && object.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
}

fn conflict_error(resource: &ResourceInfo, name: &str, conflict: Conflict) -> ApiError {
    match conflict {
        Conflict::NotFound => ApiError::not_found(&resource.group, &resource.plural, name),
        Conflict::AlreadyExists(_) => ApiError::already_exists(&resource.group, &resource.plural, name),
        Conflict::RevisionMismatch(_) => ApiError::stale(&resource.group, &resource.plural, name),
    }
}

/// kube's `EnsureObjectNamespaceMatchesRequestNamespace` on an update or patch: the object's `metadata.namespace`,
/// when set, must be the URL's for a namespaced resource (400); an unset one is the URL's, and a cluster-scoped
/// resource's is dropped.
fn check_namespace(resource: &ResourceInfo, scope: &Scope, object: &Value) -> ApiResult<()> {
    let given = object.pointer("/metadata/namespace").and_then(Value::as_str).filter(|ns| !ns.is_empty());
    match (given, scope.namespace.as_deref()) {
        (Some(given), Some(url)) if resource.namespaced && given != url => {
            Err(ApiError::bad_request("the namespace of the provided object does not match the namespace sent on the request"))
        }
        _ => Ok(()),
    }
}

/// `kind` and `apiVersion`, when given, must be the resource's; they are filled in when missing.
fn check_type_meta(resource: &ResourceInfo, object: &Value) -> ApiResult<()> {
    let Some(map) = object.as_object() else {
        return Err(ApiError::bad_request("the body must be a JSON or YAML object"));
    };
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or(&resource.kind);
    let api_version = map.get("apiVersion").and_then(Value::as_str).map(str::to_owned).unwrap_or_else(|| resource.api_version());
    if kind != resource.kind || api_version != resource.api_version() {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({}) or kind {kind} is not {}",
            resource.api_version(), resource.kind)));
    }
    Ok(())
}

/// Sets `kind` and `apiVersion` to the request's.
fn fill_type_meta(resource: &ResourceInfo, object: &mut Value) {
    if let Some(map) = object.as_object_mut() {
        map.insert("kind".into(), json!(resource.kind));
        map.insert("apiVersion".into(), json!(resource.api_version()));
    }
}

/// The generic checks (ownerReferences, the kind's typed shape, metadata) and the kind's own: every field
/// problem in one 422, metadata's first (as kube's validation functions report them).
fn check(strategy: &dyn Strategy, resource: &ResourceInfo, object: &Value, old: Option<&Value>) -> ApiResult<()> {
    validate::owners::check(resource, object)?;
    validate::check_typed(resource, object)?;
    let mut causes = Vec::new();
    validate::check_metadata(resource, object, &mut causes);
    strategy.validate(resource, object, old, &mut causes);
    if !causes.is_empty() {
        let name = meta_str(object, "name").unwrap_or_default();
        return Err(ApiError::invalid(&resource.group, &resource.kind, name, causes));
    }
    Ok(())
}
