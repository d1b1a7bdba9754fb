//! The registry's read side: objects as they are stored (`metadata.resourceVersion` set from the record),
//! looked up, listed with selectors and pages, visited space by space, and watched. Caches, controllers and the
//! authorizer read through it; `GenericStore` adds the writes and the request's view on top.

use std::sync::Arc;

use kspaces_storage::{Key, KeyParts, KeyRange, ListRequest, Record, ResourceKeys, Revision, SpaceName, Store, WatchFrom, WatchOptions, Watcher};
use serde_json::{json, Value};

use super::selector::{FieldSelector, LabelSelector};
use super::{ResourceInfo, Scope, Spaces};
use crate::status::{ApiError, ApiResult};

/// A filter of objects beyond selectors, which a client cannot ask for: a virtual workspace's (the workspaces that
/// still bind an export). Applied where selectors are, so pages fill and watches drop what it refuses.
#[derive(Clone)]
pub struct ObjectFilter(pub Arc<dyn Fn(&Value) -> bool + Send + Sync>);

impl std::fmt::Debug for ObjectFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ObjectFilter")
    }
}

/// Options of a list.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// Only the objects this lets through (no client sets it).
    pub only: Option<ObjectFilter>,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    /// `resourceVersion` with `resourceVersionMatch=Exact` (or a continue token's own).
    pub exact_revision: Option<Revision>,
}

impl ListOptions {
    /// Whether `object` passes the selectors and the filter.
    pub fn matches(&self, object: &Value) -> bool {
        self.labels.matches(object) && self.fields.matches(object) && self.only.as_ref().is_none_or(|only| (only.0)(object))
    }

    /// Whether nothing filters (every stored object of the range is listed).
    pub fn unfiltered(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty() && self.only.is_none()
    }
}

/// The list's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListMeta {
    pub resource_version: Revision,
    pub continue_token: Option<String>,
    pub remaining: Option<u64>,
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

/// Reads objects of any resource from the store.
#[derive(Clone)]
pub struct Reader {
    store: Store,
}

impl Reader {
    pub fn new(store: Store) -> Reader {
        Reader { store }
    }

    pub(super) fn store(&self) -> &Store {
        &self.store
    }

    pub fn keys(&self, resource: &ResourceInfo) -> ApiResult<ResourceKeys> {
        Ok(self.store.layout().resource(&resource.group_resource(), &resource.identity())?)
    }

    pub(super) fn key(&self, resource: &ResourceInfo, scope: &Scope, name: &str) -> ApiResult<Key> {
        let namespace = if resource.namespaced { scope.namespace.as_deref() } else { None };
        if resource.namespaced && namespace.is_none() {
            return Err(ApiError::bad_request("a namespace is required for namespaced resources"));
        }
        Ok(self.keys(resource)?.object(scope.space()?, namespace, name)?)
    }

    /// The stored object, or kube's 404.
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
                if scope.holds(&object) && options.matches(&object) {
                    items.push(object);
                }
            }
            let filled = options.limit.is_some_and(|limit| items.len() >= limit);
            let unfiltered = options.unfiltered() && scope.namespace_filter().is_none();
            if page.continue_token.is_none() || filled || unfiltered {
                let remaining = page.remaining.filter(|_| unfiltered);
                let meta = ListMeta { resource_version: page.revision, continue_token: page.continue_token, remaining };
                return Ok((items, meta));
            }
            request = ListRequest { revision: None, limit: options.limit.map(|l| l - items.len()), continue_token: page.continue_token };
        }
    }

    /// Visits every object of `resource` in `scope` with the space it lives in, reading `page` objects at a time
    /// (one snapshot for all pages). Returns the snapshot's revision.
    pub async fn visit(&self, resource: &ResourceInfo, scope: &Scope, page: usize, mut visit: impl FnMut(&SpaceName, Value)) -> ApiResult<Revision> {
        let range = self.range(resource, scope)?;
        let layout = self.store.layout().clone();
        let mut revision = None;
        let mut request = ListRequest { limit: Some(page), ..ListRequest::default() };
        loop {
            let listed = self.store.list(&range, &request).await?;
            revision.get_or_insert(listed.revision);
            for record in &listed.items {
                let space = record.key.parts(&layout).ok().and_then(|parts| SpaceName::new(parts.space).ok());
                let (Some(space), Ok(object)) = (space, decode(record)) else {
                    tracing::warn!(key = %record.key, "skipping a stored object that cannot be read");
                    continue;
                };
                if scope.holds(&object) {
                    visit(&space, object);
                }
            }
            match listed.continue_token {
                Some(token) => request = ListRequest { limit: Some(page), continue_token: Some(token), revision: None },
                None => return Ok(revision.unwrap_or_default()),
            }
        }
    }

    /// Up to `limit` objects of `resource` in `scope`, each with the space it lives in.
    pub async fn first(&self, resource: &ResourceInfo, scope: &Scope, limit: usize) -> ApiResult<Vec<(SpaceName, Value)>> {
        let range = self.range(resource, scope)?;
        let layout = self.store.layout();
        let listed = self.store.list(&range, &ListRequest { limit: Some(limit), ..ListRequest::default() }).await?;
        let mut found = Vec::with_capacity(listed.items.len());
        for record in &listed.items {
            let object = decode(record)?;
            let space = record.key.parts(layout).ok().and_then(|parts| SpaceName::new(parts.space).ok());
            if let Some(space) = space.filter(|_| scope.holds(&object)) {
                found.push((space, object));
            }
        }
        Ok(found)
    }

    /// Reads every stored record of every resource, `page` at a time, with its key's parts, undecoded (the
    /// garbage collector's startup scan decodes only the few it needs).
    pub async fn scan(&self, page: usize, mut visit: impl FnMut(KeyParts<'_>, &Record)) -> ApiResult<usize> {
        let layout = self.store.layout().clone();
        let range = layout.everything();
        let mut request = ListRequest { limit: Some(page), ..ListRequest::default() };
        let mut scanned = 0;
        loop {
            let listed = self.store.list(&range, &request).await?;
            scanned += listed.items.len();
            for record in &listed.items {
                if let Ok(parts) = record.key.parts(&layout) {
                    visit(parts, record);
                }
            }
            match listed.continue_token {
                Some(token) => request = ListRequest { limit: Some(page), continue_token: Some(token), revision: None },
                None => return Ok(scanned),
            }
            tokio::task::yield_now().await;
        }
    }

    /// Watches `resource` in `scope` from after `from` (selectors are the caller's to apply). The outer error is
    /// the request's (a scope no key can have), the inner the store's (`from` compacted away: kube's 410).
    pub async fn watch(&self, resource: &ResourceInfo, scope: &Scope, from: Revision) -> ApiResult<Result<Watcher, ApiError>> {
        let range = self.range(resource, scope)?;
        Ok(self.store.watch(&range, WatchFrom::After(from), WatchOptions { bookmarks: true }).await.map_err(ApiError::from))
    }

    /// The store's newest revision.
    pub async fn current_revision(&self) -> ApiResult<Revision> {
        Ok(self.store.current_revision().await?)
    }
}
