//! The generic store: every verb's semantics for every resource, over `kspaces_storage::Store`, independent
//! of HTTP. Objects are JSON values; `metadata.resourceVersion` is never stored, it is the record's revision.

use bytes::Bytes;
use chrono::{SecondsFormat, Utc};
use kspaces_storage::{Conflict, Key, KeyRange, ListRequest, Record, ResourceKeys, Revision, SpaceName, Store};
use serde_json::{json, Value};
use std::sync::Arc;

use super::deletion::{self, Plan};
use super::selector::{FieldSelector, LabelSelector};
use super::managed::{self, WriteContext};
use super::{defaults, validate, ResourceInfo, Subresource};
use crate::fieldmanager::Operation;
use crate::status::{ApiError, ApiResult, Cause};
use crate::{crds, tenancy};

/// The spaces a request covers: one, or every space (system users' lists and watches).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spaces {
    One(SpaceName),
    All,
}

/// Where an object lives: its space and, for namespaced resources, its namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    pub spaces: Spaces,
    pub namespace: Option<String>,
}

impl Scope {
    pub fn one(space: SpaceName, namespace: Option<String>) -> Scope {
        Scope { spaces: Spaces::One(space), namespace }
    }

    /// The one space of a request about a single object.
    pub fn space(&self) -> ApiResult<&SpaceName> {
        match &self.spaces {
            Spaces::One(space) => Ok(space),
            Spaces::All => Err(ApiError::bad_request("tenant \"all\" may only be used to list and watch")),
        }
    }

    /// A cross-space range covers every namespace: a namespace is then a filter on the objects read.
    pub fn namespace_filter(&self) -> Option<&str> {
        match (&self.spaces, &self.namespace) {
            (Spaces::All, Some(namespace)) => Some(namespace),
            _ => None,
        }
    }

    /// True if `object` is in this scope (its range may be wider, see `namespace_filter`).
    pub fn holds(&self, object: &Value) -> bool {
        self.namespace_filter().is_none_or(|namespace| meta_str(object, "namespace") == Some(namespace))
    }
}

/// Which part of an object a write changes: the main resource, `/status`, or `/finalize` (namespaces' and
/// tenants' `spec.finalizers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Main,
    Status,
    Finalize,
}

impl Part {
    pub fn of_subresource(subresource: &str) -> Part {
        match subresource {
            "status" => Part::Status,
            "finalize" => Part::Finalize,
            _ => Part::Main,
        }
    }
}

/// Told of every committed write, once it is durable: `object` is `None` when the object is gone.
pub trait WriteObserver: Send + Sync {
    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision);

    /// Told of a delete with the object's last state (the garbage collector needs its uid); by default, a
    /// `written` with no object.
    fn deleted(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, _last: &Value, revision: Revision) {
        self.written(resource, space, name, None, revision);
    }
}

/// Options of a list.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    /// `resourceVersion` with `resourceVersionMatch=Exact` (or a continue token's own).
    pub exact_revision: Option<Revision>,
}

/// The list's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListMeta {
    pub resource_version: Revision,
    pub continue_token: Option<String>,
    pub remaining: Option<u64>,
}

pub use super::deletion::DeleteOptions;

/// What a delete did.
pub enum DeleteOutcome {
    /// Gone from storage.
    Deleted(Value),
    /// Marked for deletion; finalizers are pending.
    Pending(Value),
}

pub fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Parses stored bytes and sets `metadata.resourceVersion` from the record.
pub fn decode(record: &Record) -> ApiResult<Value> {
    let mut object: Value = serde_json::from_slice(&record.value)
        .map_err(|err| ApiError::internal(format!("stored object {} is not JSON: {err}", record.key)))?;
    set_resource_version(&mut object, record.revision);
    Ok(object)
}

pub fn set_resource_version(object: &mut Value, revision: Revision) {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.insert("resourceVersion".into(), json!(revision.to_string()));
    }
}

fn encode(object: &Value) -> Bytes {
    let mut object = object.clone();
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("resourceVersion");
        metadata.remove("selfLink");
    }
    Bytes::from(serde_json::to_vec(&object).unwrap_or_default())
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

fn has_finalizers(object: &Value) -> bool {
    object.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
}

pub use super::deletion::is_deleting;

const GENERATE_NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn generated_name(prefix: &str) -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    let suffix: String = (0..5).map(|_| GENERATE_NAME_ALPHABET[rng.random_range(0..GENERATE_NAME_ALPHABET.len())] as char).collect();
    let keep = prefix.len().min(253 - 5);
    format!("{}{suffix}", &prefix[..keep])
}

/// The stored object an update replaces: where it is, what it was, and at which revision.
struct Stored<'a> {
    space: &'a SpaceName,
    key: &'a Key,
    name: &'a str,
    object: &'a Value,
    revision: Revision,
}

/// Serves every resource of the table over one store.
#[derive(Clone)]
pub struct GenericStore {
    store: Store,
    observers: Vec<Arc<dyn WriteObserver>>,
    /// The CRDs a CRD's names are checked against (`crds::strategy`).
    crds: Option<Arc<crds::Crds>>,
}

impl GenericStore {
    pub fn new(store: Store, observers: Vec<Arc<dyn WriteObserver>>, crds: Option<Arc<crds::Crds>>) -> GenericStore {
        GenericStore { store, observers, crds }
    }

    /// For a CRD write: the naming lock, held until the write is applied to `Crds` (see `Crds::naming`).
    async fn naming(&self, resource: &ResourceInfo) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        match &self.crds {
            Some(crds) if crds::strategy::is_crd(resource) => Some(crds.naming.lock().await),
            _ => None,
        }
    }

    fn notify(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        for observer in &self.observers {
            observer.written(resource, space, name, object, revision);
        }
    }

    fn notify_deleted(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, last: &Value, revision: Revision) {
        for observer in &self.observers {
            observer.deleted(resource, space, name, last, revision);
        }
    }

    pub fn storage(&self) -> &Store {
        &self.store
    }

    pub fn keys(&self, resource: &ResourceInfo) -> ApiResult<ResourceKeys> {
        Ok(self.store.layout().resource(&resource.group_resource(), &resource.identity())?)
    }

    fn key(&self, resource: &ResourceInfo, scope: &Scope, name: &str) -> ApiResult<Key> {
        let namespace = if resource.namespaced { scope.namespace.as_deref() } else { None };
        if resource.namespaced && namespace.is_none() {
            return Err(ApiError::bad_request("a namespace is required for namespaced resources"));
        }
        Ok(self.keys(resource)?.object(scope.space()?, namespace, name)?)
    }

    pub async fn get(&self, resource: &ResourceInfo, scope: &Scope, name: &str) -> ApiResult<Value> {
        let key = self.key(resource, scope, name)?;
        match self.store.get(&key).await? {
            Some(record) => decode(&record),
            None => Err(ApiError::not_found(&resource.group, &resource.plural, name)),
        }
    }

    /// The key range a list or watch of `resource` in `scope` covers.
    pub fn range(&self, resource: &ResourceInfo, scope: &Scope) -> ApiResult<KeyRange> {
        let keys = self.keys(resource)?;
        let Spaces::One(space) = &scope.spaces else { return Ok(keys.all_spaces()) };
        Ok(match (&scope.namespace, resource.namespaced) {
            (Some(namespace), true) => keys.namespace(space, Some(namespace))?,
            (_, false) => keys.namespace(space, None)?,
            (None, true) => keys.space(space),
        })
    }

    /// Lists objects; selectors filter pages until `limit` matches are found or the range ends.
    pub async fn list(&self, resource: &ResourceInfo, scope: &Scope, options: &ListOptions) -> ApiResult<(Vec<Value>, ListMeta)> {
        let range = self.range(resource, scope)?;
        let mut request = ListRequest { revision: options.exact_revision, limit: options.limit, continue_token: options.continue_token.clone() };
        let mut items = Vec::new();
        loop {
            let page = self.store.list(&range, &request).await?;
            for record in &page.items {
                let object = decode(record)?;
                if scope.holds(&object) && options.labels.matches(&object) && options.fields.matches(&object) {
                    items.push(object);
                }
            }
            let filled = options.limit.is_some_and(|limit| items.len() >= limit);
            let unfiltered = options.labels.is_empty() && options.fields.is_empty() && scope.namespace_filter().is_none();
            if page.continue_token.is_none() || filled || unfiltered {
                let remaining = page.remaining.filter(|_| unfiltered);
                let meta = ListMeta { resource_version: page.revision, continue_token: page.continue_token, remaining };
                return Ok((items, meta));
            }
            request = ListRequest { revision: None, limit: options.limit.map(|l| l - items.len()), continue_token: page.continue_token };
        }
    }

    /// Visits every object in `scope`, reading `page` objects at a time (one snapshot for all pages).
    pub async fn for_each(&self, resource: &ResourceInfo, scope: &Scope, page: usize, mut visit: impl FnMut(&Value)) -> ApiResult<()> {
        let mut options = ListOptions { limit: Some(page), ..ListOptions::default() };
        loop {
            let (items, meta) = self.list(resource, scope, &options).await?;
            items.iter().for_each(&mut visit);
            match meta.continue_token {
                Some(token) => options.continue_token = Some(token),
                None => return Ok(()),
            }
        }
    }

    /// Checks that the namespace of a namespaced create exists and is not terminating.
    async fn check_namespace(&self, resource: &ResourceInfo, scope: &Scope, namespaces: &ResourceInfo, name: &str) -> ApiResult<()> {
        let Some(namespace) = scope.namespace.as_deref().filter(|_| resource.namespaced) else { return Ok(()) };
        let key = self.keys(namespaces)?.object(scope.space()?, None, namespace)?;
        let Some(record) = self.store.get(&key).await? else {
            return Err(ApiError::not_found("", "namespaces", namespace));
        };
        let object = decode(&record)?;
        if is_deleting(&object) || object.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating") {
            return Err(ApiError::forbidden(format!(
                "{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                resource.plural)));
        }
        Ok(())
    }

    /// Validates and completes a new object: kind, namespace, name, uid, timestamps, defaults.
    fn prepare_create(&self, resource: &ResourceInfo, scope: &Scope, object: &mut Value, write: &WriteContext) -> ApiResult<()> {
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
        set_tenant(resource, scope, metadata)?;
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
        defaults::apply(&resource.group, &resource.kind, object);
        tenancy::strategy::prepare_create(resource, object);
        crds::strategy::prepare_create(self.crds.as_deref(), scope.space().ok(), resource, object);
        crds::strategy::prepare_custom_create(resource, object);
        validate_object(resource, object, None)?;
        managed::record(resource, write, None, object);
        Ok(())
    }

    /// Creates an object (the write's manager records an `Update` entry, unless it is an apply that did).
    pub async fn create(&self, resource: &ResourceInfo, scope: &Scope, object: Value, namespaces: &ResourceInfo, write: &WriteContext) -> ApiResult<Value> {
        let display_name = meta_str(&object, "name").filter(|n| !n.is_empty()).or_else(|| meta_str(&object, "generateName")).unwrap_or_default().to_owned();
        self.check_namespace(resource, scope, namespaces, &display_name).await?;
        let _naming = self.naming(resource).await;
        let generated = meta_str(&object, "name").is_none_or(str::is_empty);
        for _attempt in 0..3 {
            let mut candidate = object.clone();
            self.prepare_create(resource, scope, &mut candidate, write)?;
            let name = meta_str(&candidate, "name").unwrap_or_default().to_owned();
            let key = self.key(resource, scope, &name)?;
            if write.dry_run {
                return match self.store.get(&key).await? {
                    Some(_) => Err(ApiError::already_exists(&resource.group, &resource.plural, &name)),
                    None => Ok(candidate),
                };
            }
            match self.store.create(&key, encode(&candidate)).await? {
                Ok(record) => {
                    set_resource_version(&mut candidate, record.revision);
                    self.notify(resource, scope.space()?, &name, Some(&candidate), record.revision);
                    return Ok(candidate);
                }
                Err(_) if generated => continue,
                Err(_) => return Err(ApiError::already_exists(&resource.group, &resource.plural, &name)),
            }
        }
        Err(ApiError::new(409, "AlreadyExists", "failed to generate a unique name; try again"))
    }

    /// Replaces an object (PUT), the main resource or its status. Returns the stored object.
    pub async fn update(&self, resource: &ResourceInfo, scope: &Scope, name: &str, object: Value, part: Part, write: &WriteContext) -> ApiResult<Value> {
        check_type_meta(resource, &object)?;
        if meta_str(&object, "name").is_some_and(|n| n != name) {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})", meta_str(&object, "name").unwrap_or_default())));
        }
        let expected = match object.pointer("/metadata/resourceVersion").and_then(Value::as_str) {
            Some("") | None => None,
            Some(rv) => Some(rv.parse::<Revision>().map_err(|_| {
                ApiError::invalid(&resource.group, &resource.kind, name, vec![Cause::invalid("metadata.resourceVersion", rv, "must be a valid resource version")])
            })?),
        };
        let key = self.key(resource, scope, name)?;
        let _naming = self.naming(resource).await;
        let current = self.store.get(&key).await?.ok_or_else(|| ApiError::not_found(&resource.group, &resource.plural, name))?;
        if expected.is_some_and(|rv| rv != current.revision) {
            return Err(ApiError::stale(&resource.group, &resource.plural, name));
        }
        let old = decode(&current)?;
        let new = self.prepare_update(resource, scope, &old, object, part, write)?;
        self.commit_update(resource, Stored { space: scope.space()?, key: &key, name, object: &old, revision: current.revision }, new, write.dry_run).await
    }

    /// Read-modify-write with retries on conflict: `change` maps the current object to the desired one.
    /// (An apply's `change` records the applier's managedFields itself; see `WriteContext::operation`.)
    pub async fn guaranteed_update<F>(&self, resource: &ResourceInfo, scope: &Scope, name: &str, part: Part, write: &WriteContext, change: F) -> ApiResult<Value>
    where
        F: Fn(&Value) -> ApiResult<Value>,
    {
        let key = self.key(resource, scope, name)?;
        let _naming = self.naming(resource).await;
        for _attempt in 0..16 {
            let current = self.store.get(&key).await?.ok_or_else(|| ApiError::not_found(&resource.group, &resource.plural, name))?;
            let old = decode(&current)?;
            let desired = match resource.custom {
                // The change sees the object in the request's version.
                Some(_) => {
                    let mut requested = old.clone();
                    crds::strategy::convert(resource, &mut requested);
                    change(&requested)?
                }
                None => change(&old)?,
            };
            if let Some(rv) = desired.pointer("/metadata/resourceVersion").and_then(Value::as_str) {
                if !rv.is_empty() && rv != current.revision.to_string() {
                    return Err(ApiError::stale(&resource.group, &resource.plural, name));
                }
            }
            if meta_str(&desired, "name").is_some_and(|n| n != name) {
                return Err(ApiError::bad_request("the name of the object cannot be changed"));
            }
            check_type_meta(resource, &desired)?;
            let new = self.prepare_update(resource, scope, &old, desired, part, write)?;
            match self.commit_update(resource, Stored { space: scope.space()?, key: &key, name, object: &old, revision: current.revision }, new, write.dry_run).await {
                Err(err) if err.reason == "Conflict" => continue,
                other => return other,
            }
        }
        Err(ApiError::stale(&resource.group, &resource.plural, name))
    }

    fn prepare_update(&self, resource: &ResourceInfo, scope: &Scope, old: &Value, new: Value, part: Part, write: &WriteContext) -> ApiResult<Value> {
        let applied = (write.operation == Operation::Apply).then(|| new.pointer("/metadata/managedFields").cloned());
        let mut new = take_part(resource, old, new, part);
        keep_server_metadata(resource, scope, old, &mut new)?;
        defaults::apply(&resource.group, &resource.kind, &mut new);
        tenancy::strategy::prepare_update(resource, old, &mut new, part);
        crds::strategy::prepare_update(self.crds.as_deref(), scope.space().ok(), resource, &mut new, part);
        let spec_changed = match resource.custom {
            Some(_) => crds::strategy::custom_spec_changed(resource, old, &new),
            None => old.get("spec") != new.get("spec") && new.get("spec").is_some(),
        };
        if part == Part::Main && spec_changed {
            let generation = old.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0) + 1;
            metadata_mut(&mut new)?.insert("generation".into(), json!(generation));
        }
        validate_object(resource, &mut new, Some(old))?;
        match applied {
            Some(entries) => set_managed_fields(&mut new, entries)?,
            None => managed::record(resource, write, Some(old), &mut new),
        }
        Ok(new)
    }

    async fn commit_update(&self, resource: &ResourceInfo, stored: Stored<'_>, mut new: Value, dry_run: bool) -> ApiResult<Value> {
        let Stored { space, key, name, object: old, revision } = stored;
        let finished = deletion::may_remove_when_finalized(&new) && !has_finalizers(&new) && !spec_finalizers_pending(resource, &new);
        if dry_run {
            set_resource_version(&mut new, revision);
            return Ok(new);
        }
        if finished {
            return match self.store.delete(key, Some(revision)).await? {
                Ok(deleted) => {
                    set_resource_version(&mut new, deleted.revision);
                    self.notify_deleted(resource, space, name, &new, deleted.revision);
                    Ok(new)
                }
                Err(conflict) => Err(conflict_error(resource, name, conflict)),
            };
        }
        let unchanged = same_ignoring_resource_version(old, &new);
        if unchanged {
            set_resource_version(&mut new, revision);
            return Ok(new);
        }
        match self.store.update(key, encode(&new), Some(revision)).await? {
            Ok(record) => {
                set_resource_version(&mut new, record.revision);
                self.notify(resource, space, name, Some(&new), record.revision);
                Ok(new)
            }
            Err(conflict) => Err(conflict_error(resource, name, conflict)),
        }
    }

    /// Deletes an object as kube-apiserver does (`deletion::plan`): at once, or by marking it (deletion
    /// timestamp, the garbage collector's finalizers, a bound pod's grace period) while finalizers or a grace
    /// period are pending.
    pub async fn delete(&self, resource: &ResourceInfo, scope: &Scope, name: &str, options: &DeleteOptions) -> ApiResult<DeleteOutcome> {
        let key = self.key(resource, scope, name)?;
        let strategy = deletion::Strategy { graceful: resource.is("", "Pod"), spec_finalizers: has_spec_finalizers(resource) };
        for _attempt in 0..16 {
            let current = self.store.get(&key).await?.ok_or_else(|| ApiError::not_found(&resource.group, &resource.plural, name))?;
            let object = decode(&current)?;
            deletion::check_preconditions(&resource.group, &resource.kind, &object, &current.revision.to_string(), options)?;
            if is_deleting(&object) && spec_finalizers_pending(resource, &object) {
                // kube-apiserver (namespaces) and Arktos (tenants) answer a repeated delete with 409.
                let kind = resource.kind.to_ascii_lowercase();
                return Err(ApiError::conflict(&resource.group, &resource.plural, name, &format!(
                    "The system is ensuring all content is removed from this {kind}.  Upon completion, this {kind} \
                     will automatically be purged by the system.")));
            }
            let stored = Stored { space: scope.space()?, key: &key, name, object: &object, revision: current.revision };
            let outcome = match deletion::plan(strategy, &object, options, Utc::now()) {
                Plan::AlreadyPending => return Ok(DeleteOutcome::Pending(object)),
                Plan::Mark(marked) => self.mark_deleted(resource, stored, marked, options.dry_run).await?,
                Plan::DeleteNow => self.remove(resource, stored, options.dry_run).await?,
            };
            if let Some(outcome) = outcome {
                return Ok(outcome);
            }
        }
        Err(ApiError::stale(&resource.group, &resource.plural, name))
    }

    /// Stores an object marked for deletion; `None` if it changed meanwhile (the delete starts over).
    async fn mark_deleted(&self, resource: &ResourceInfo, stored: Stored<'_>, mut marked: Value, dry_run: bool) -> ApiResult<Option<DeleteOutcome>> {
        if dry_run || same_ignoring_resource_version(stored.object, &marked) {
            set_resource_version(&mut marked, stored.revision);
            return Ok(Some(DeleteOutcome::Pending(marked)));
        }
        match self.store.update(stored.key, encode(&marked), Some(stored.revision)).await? {
            Ok(record) => {
                set_resource_version(&mut marked, record.revision);
                self.notify(resource, stored.space, stored.name, Some(&marked), record.revision);
                Ok(Some(DeleteOutcome::Pending(marked)))
            }
            Err(Conflict::NotFound) => Err(ApiError::not_found(&resource.group, &resource.plural, stored.name)),
            Err(_) => Ok(None),
        }
    }

    /// Removes an object from storage; `None` if it changed meanwhile (the delete starts over).
    async fn remove(&self, resource: &ResourceInfo, stored: Stored<'_>, dry_run: bool) -> ApiResult<Option<DeleteOutcome>> {
        let mut object = stored.object.clone();
        if dry_run {
            return Ok(Some(DeleteOutcome::Deleted(object)));
        }
        match self.store.delete(stored.key, Some(stored.revision)).await? {
            Ok(deleted) => {
                set_resource_version(&mut object, deleted.revision);
                self.notify_deleted(resource, stored.space, stored.name, &object, deleted.revision);
                Ok(Some(DeleteOutcome::Deleted(object)))
            }
            Err(Conflict::NotFound) => Err(ApiError::not_found(&resource.group, &resource.plural, stored.name)),
            Err(_) => Ok(None),
        }
    }
}

/// The object a write of `part` leaves: `/finalize` changes only `spec.finalizers`, `/status` only `status`,
/// and the main resource everything but `status` (for resources with a status subresource).
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

/// Keeps what clients may not change through an update: identity, timestamps, generation, name, namespace,
/// tenant; and refuses new finalizers on an object being deleted.
fn keep_server_metadata(resource: &ResourceInfo, scope: &Scope, old: &Value, new: &mut Value) -> ApiResult<()> {
    let metadata = metadata_mut(new)?;
    for field in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"] {
        match old.pointer(&format!("/metadata/{field}")) {
            Some(value) => metadata.insert(field.into(), value.clone()),
            None => metadata.remove(field),
        };
    }
    metadata.insert("name".into(), old.pointer("/metadata/name").cloned().unwrap_or(Value::Null));
    match (&scope.namespace, resource.namespaced) {
        (Some(namespace), true) => {
            metadata.insert("namespace".into(), json!(namespace));
        }
        _ => {
            metadata.remove("namespace");
        }
    }
    metadata.remove("selfLink");
    set_tenant(resource, scope, metadata)?;
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

/// Namespaces and tenants hold their content's finalizers in `spec.finalizers` (`kubernetes`, `arktos`).
fn has_spec_finalizers(resource: &ResourceInfo) -> bool {
    resource.is("", "Namespace") || resource.is("", "Tenant")
}

/// True while a namespace or tenant has content finalizers left: it stays until its content is gone.
fn spec_finalizers_pending(resource: &ResourceInfo, object: &Value) -> bool {
    has_spec_finalizers(resource) && object.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
}

/// Sets `metadata.tenant` to the tenant of the object's space (Arktos); a body naming another tenant is 400.
/// System-only (non-tenanted) objects carry no tenant.
fn set_tenant(resource: &ResourceInfo, scope: &Scope, metadata: &mut serde_json::Map<String, Value>) -> ApiResult<()> {
    if resource.system_only {
        metadata.remove("tenant");
        return Ok(());
    }
    let tenant = tenancy::tenant_of(scope.space()?);
    match metadata.get("tenant") {
        Some(Value::String(given)) if !given.is_empty() && given != tenant => Err(ApiError::bad_request(format!(
            "the tenant of the provided object ({given}) does not match the tenant sent on the request ({tenant})"))),
        Some(Value::String(_) | Value::Null) | None => {
            metadata.insert("tenant".into(), json!(tenant));
            Ok(())
        }
        Some(other) => Err(ApiError::bad_request(format!("metadata.tenant must be a string, not {other}"))),
    }
}

fn conflict_error(resource: &ResourceInfo, name: &str, conflict: Conflict) -> ApiError {
    match conflict {
        Conflict::NotFound => ApiError::not_found(&resource.group, &resource.plural, name),
        Conflict::AlreadyExists(_) => ApiError::already_exists(&resource.group, &resource.plural, name),
        Conflict::RevisionMismatch(_) => ApiError::stale(&resource.group, &resource.plural, name),
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

/// Fills in `kind`/`apiVersion` and runs metadata and typed validation (for custom resources: pruning,
/// defaulting and validation against the CRD's schema; `old` is the stored object an update replaces).
fn validate_object(resource: &ResourceInfo, object: &mut Value, old: Option<&Value>) -> ApiResult<()> {
    if let Some(map) = object.as_object_mut() {
        map.insert("kind".into(), json!(resource.kind));
        map.insert("apiVersion".into(), json!(resource.api_version()));
    }
    validate::owners::check(resource, object)?;
    validate::check_typed(resource, object)?;
    let mut causes = Vec::new();
    crds::strategy::check_custom(resource, object, old, &mut causes);
    crds::strategy::check(resource, object, old, &mut causes);
    validate::check_metadata(resource, object, &mut causes);
    validate::check_spec(resource, object, &mut causes);
    tenancy::strategy::check(resource, object, &mut causes);
    if !causes.is_empty() {
        let name = meta_str(object, "name").unwrap_or_default();
        return Err(ApiError::invalid(&resource.group, &resource.kind, name, causes));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_resource_version_differences_count_as_unchanged() {
        let a = json!({"kind": "ConfigMap", "metadata": {"name": "x", "resourceVersion": "1"}, "data": {"k": "v"}});
        let same = json!({"kind": "ConfigMap", "metadata": {"name": "x", "resourceVersion": "9"}, "data": {"k": "v"}});
        let no_rv = json!({"kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": "v"}});
        let labelled = json!({"kind": "ConfigMap", "metadata": {"name": "x", "labels": {"a": "b"}}, "data": {"k": "v"}});
        let changed = json!({"kind": "ConfigMap", "metadata": {"name": "x", "resourceVersion": "1"}, "data": {"k": "w"}});
        let extra = json!({"kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": "v"}, "immutable": true});
        assert!(same_ignoring_resource_version(&a, &same));
        assert!(same_ignoring_resource_version(&a, &no_rv));
        assert!(!same_ignoring_resource_version(&a, &labelled));
        assert!(!same_ignoring_resource_version(&a, &changed));
        assert!(!same_ignoring_resource_version(&no_rv, &extra));
        assert!(!same_ignoring_resource_version(&extra, &no_rv));
    }
}
