//! The registry's read side: objects as they are stored (`metadata.resourceVersion` set from the record),
//! looked up, listed with selectors and pages, visited space by space, and watched. Caches, controllers and the
//! authorizer read through it; `GenericStore` adds the writes and the request's view on top.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;

use kspaces_storage::{Clusters, Key, KeyParts, KeyRange, Listing, Position, Record, ResourceKeys, Revision, SpaceName, WatchOptions, Watcher};
use serde_json::Value;

use super::selector::{FieldSelector, LabelSelector};
use super::stored;
pub use super::stored::{decode, set_resource_version};
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
    pub exact_revision: Option<Position>,
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

    /// Whether the filters read nothing but `metadata` (labels, name, namespace): a stored object's head is then
    /// enough to judge it.
    fn reads_metadata_only(&self) -> bool {
        self.only.is_none() && self.fields.reads_metadata_only()
    }
}

/// How many objects a list reads from the store at a time when the client set no `limit`: what a streamed
/// answer holds in memory at once.
pub const PAGE: usize = 500;

/// How many of a page's records an answer that transforms them (Tables, metadata lists, protobuf) parses at once:
/// the page itself stays as stored bytes. With whole pages parsed at once, a Table of 10,000 1-KiB ConfigMaps
/// raised the peak RSS by 16 MiB (docs/benchmarks.md).
pub const PARSED_AT_ONCE: usize = 50;

/// A list read from one snapshot a page at a time, filtered as `Reader::list` filters: what `list` collects,
/// and what a streamed answer sends as it reads. Records come as stored (`stored::write_as_read` gives the form
/// a request sees when nothing transforms it).
pub struct Pages {
    store: Clusters,
    range: KeyRange,
    scope: Scope,
    options: ListOptions,
    /// The next read, until the list is complete.
    next: Option<Listing>,
    found: usize,
    revision: Option<Position>,
    meta: Option<ListMeta>,
}

impl Pages {
    /// The next page's records that pass the scope and the options, `None` once the list is complete.
    pub async fn next(&mut self) -> ApiResult<Option<Vec<Record>>> {
        let Some(request) = self.next.take() else { return Ok(None) };
        let page = self.store.list(&self.range, &request).await?;
        self.revision = Some(page.position.clone());
        let unfiltered = self.options.unfiltered() && self.scope.namespace_filter().is_none();
        let mut items = Vec::with_capacity(page.items.len());
        for record in page.items {
            if unfiltered || self.admits(&record)? {
                items.push(record);
            }
        }
        self.found += items.len();
        let filled = self.options.limit.is_some_and(|limit| self.found >= limit);
        if page.continue_token.is_none() || filled {
            let remaining = page.remaining.filter(|_| unfiltered);
            self.meta = Some(ListMeta { resource_version: page.position, continue_token: page.continue_token, remaining });
        } else {
            self.next = Some(self.request(None, page.continue_token));
        }
        Ok(Some(items))
    }

    /// The read of the next page: what is left of the client's `limit`, else a page. Without a client's `limit`
    /// the list has no `continue` to report, so nothing is counted past a page.
    fn request(&self, at: Option<Position>, continue_token: Option<String>) -> Listing {
        let limit = self.options.limit.map_or(PAGE, |limit| limit - self.found);
        Listing { at, limit: Some(limit), continue_token, skip_remaining: self.options.limit.is_none() }
    }

    /// Whether `record` passes the scope and the options, parsing no more of it than they read.
    fn admits(&self, record: &Record) -> ApiResult<bool> {
        let object = if self.options.reads_metadata_only() { stored::head(record)? } else { decode(record)? };
        Ok(self.scope.holds(&object) && self.options.matches(&object))
    }

    /// The snapshot the list is read at, once a page is read.
    pub fn revision(&self) -> Option<&Position> {
        self.revision.as_ref()
    }

    /// Whether a `limit` bounds the list (its `continue` is then known only at its last page).
    pub fn limited(&self) -> bool {
        self.options.limit.is_some()
    }

    /// The list's metadata, once `next` has returned its last page.
    pub fn meta(&self) -> Option<&ListMeta> {
        self.meta.as_ref()
    }

    /// The metadata of the list `next` has read to its end.
    pub fn into_meta(self) -> ApiResult<ListMeta> {
        self.meta.ok_or_else(|| ApiError::internal("a list read to its end has no metadata"))
    }
}

/// The list's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListMeta {
    /// One revision, or one per storage cluster for a list across them.
    pub resource_version: Position,
    pub continue_token: Option<String>,
    pub remaining: Option<u64>,
}

/// Reads objects of any resource from the store (every storage cluster's).
#[derive(Clone)]
pub struct Reader {
    store: Clusters,
    answering: Arc<Answering>,
}

impl Reader {
    pub fn new(store: impl Into<Clusters>) -> Reader {
        Reader { store: store.into(), answering: Arc::default() }
    }

    /// The stores of every storage cluster.
    pub fn clusters(&self) -> &Clusters {
        &self.store
    }

    /// The revision `position` (a list's across spaces) gives objects of `space`: its storage cluster's.
    pub fn revision_in(&self, position: &Position, space: &SpaceName) -> Revision {
        self.store.cluster_of(space.as_str()).ok().and_then(|cluster| position.on(cluster)).unwrap_or_default()
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
        decode(&self.record(resource, scope, name).await?)
    }

    /// The stored record of an object, undecoded, or kube's 404.
    pub async fn record(&self, resource: &ResourceInfo, scope: &Scope, name: &str) -> ApiResult<Record> {
        let key = self.key(resource, scope, name)?;
        let record = self.store.get(&key).await?.ok_or_else(|| ApiError::not_found(&resource.group, &resource.plural, name))?;
        Ok(self.answering.share(record))
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

    /// For each of `resources`, whether it has any object in `scope` now: one storage call for all of them.
    pub async fn occupied(&self, resources: &[&ResourceInfo], scope: &Scope) -> ApiResult<Vec<bool>> {
        let ranges = resources.iter().map(|resource| self.range(resource, scope)).collect::<ApiResult<Vec<_>>>()?;
        Ok(self.store.occupied(&ranges).await?)
    }

    /// Lists objects; selectors filter pages until `limit` matches are found or the range ends.
    pub async fn list(&self, resource: &ResourceInfo, scope: &Scope, options: &ListOptions) -> ApiResult<(Vec<Value>, ListMeta)> {
        let mut pages = self.pages(resource, scope, options.clone())?;
        let mut items = Vec::new();
        while let Some(page) = pages.next().await? {
            items.reserve(page.len());
            for record in &page {
                items.push(decode(record)?);
            }
        }
        Ok((items, pages.into_meta()?))
    }

    /// The list of `resource` in `scope`, to be read a page at a time (see `Pages`).
    pub fn pages(&self, resource: &ResourceInfo, scope: &Scope, options: ListOptions) -> ApiResult<Pages> {
        let range = self.range(resource, scope)?;
        let (revision, token) = (options.exact_revision.clone(), options.continue_token.clone());
        let mut pages = Pages { store: self.store.clone(), range, scope: scope.clone(), options, next: None, found: 0, revision: None, meta: None };
        pages.next = Some(pages.request(revision, token));
        Ok(pages)
    }

    /// Visits every object of `resource` in `scope` with the space it lives in, reading `page` objects at a time
    /// (one snapshot for all pages). Returns the snapshot's position.
    pub async fn visit(&self, resource: &ResourceInfo, scope: &Scope, page: usize, mut visit: impl FnMut(&SpaceName, Value)) -> ApiResult<Position> {
        let range = self.range(resource, scope)?;
        let layout = self.store.layout().clone();
        let mut revision = None;
        let mut request = Listing { limit: Some(page), skip_remaining: true, ..Listing::default() };
        loop {
            let listed = self.store.list(&range, &request).await?;
            revision.get_or_insert(listed.position);
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
                Some(token) => request = Listing { limit: Some(page), continue_token: Some(token), at: None, skip_remaining: true },
                None => return Ok(revision.unwrap_or_default()),
            }
        }
    }

    /// Up to `limit` objects of `resource` in `scope`, each with the space it lives in.
    pub async fn first(&self, resource: &ResourceInfo, scope: &Scope, limit: usize) -> ApiResult<Vec<(SpaceName, Value)>> {
        let range = self.range(resource, scope)?;
        let layout = self.store.layout();
        let listed = self.store.list(&range, &Listing { limit: Some(limit), skip_remaining: true, ..Listing::default() }).await?;
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
    /// garbage collector's startup scan decodes only the few it needs; a space's usage counts bytes). Returns how
    /// many were read and the position of the one snapshot they were read from.
    pub async fn scan(&self, page: usize, mut visit: impl FnMut(KeyParts<'_>, &Record)) -> ApiResult<(usize, Position)> {
        let layout = self.store.layout().clone();
        let range = layout.everything();
        let mut request = Listing { limit: Some(page), skip_remaining: true, ..Listing::default() };
        let mut scanned = 0;
        let mut revision = None;
        loop {
            let listed = self.store.list(&range, &request).await?;
            revision.get_or_insert(listed.position);
            scanned += listed.items.len();
            for record in &listed.items {
                if let Ok(parts) = record.key.parts(&layout) {
                    visit(parts, record);
                }
            }
            match listed.continue_token {
                Some(token) => request = Listing { limit: Some(page), continue_token: Some(token), at: None, skip_remaining: true },
                None => return Ok((scanned, revision.unwrap_or_default())),
            }
            tokio::task::yield_now().await;
        }
    }

    /// Watches `resource` in `scope` from after `from` (selectors are the caller's to apply). The outer error is
    /// the request's (a scope no key can have), the inner the store's (`from` compacted away, or a position of
    /// the wrong shape: kube's 410).
    pub async fn watch(&self, resource: &ResourceInfo, scope: &Scope, from: &Position) -> ApiResult<Result<Watcher, ApiError>> {
        let range = self.range(resource, scope)?;
        Ok(self.store.watch(&range, from, WatchOptions { bookmarks: true }).await.map_err(ApiError::from))
    }

    /// Where the list or watch of `resource` in `scope` would stand now.
    pub async fn current(&self, resource: &ResourceInfo, scope: &Scope) -> ApiResult<Position> {
        Ok(self.store.current(&self.range(resource, scope)?).await?)
    }

    /// True if other processes write the store too (replicas on one etcd).
    pub fn shared(&self) -> bool {
        self.store.shared()
    }

    /// Where the whole store stands now (every storage cluster's revision).
    pub async fn current_position(&self) -> ApiResult<Position> {
        Ok(self.store.current(&self.store.layout().everything()).await?)
    }
}

/// From what size a read value is shared with the answers that still hold the same version of it.
const SHARED_FROM: usize = 64 * 1024;

/// Large values that answers still hold, by key: a read of the same version gets the buffer they hold rather than
/// a copy of its own (the store gives each read a fresh one). A thousand slow readers of one 3 MiB object then cost
/// 3 MiB, not 3 GiB: their answers wait on flow control holding one buffer, as kube's do holding its watch cache's
/// object. An entry lives while an answer holds its value.
#[derive(Default)]
struct Answering(Mutex<HashMap<String, (Revision, Weak<Bytes>)>>);

/// What a shared value's readers hold: the one buffer, as the owner of each reader's `Bytes`.
struct Held(Arc<Bytes>);

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Answering {
    fn share(&self, mut record: Record) -> Record {
        if record.value.len() < SHARED_FROM {
            return record;
        }
        let Ok(mut held) = self.0.lock() else { return record };
        let live = held.get(record.key.as_str()).filter(|(revision, _)| *revision == record.revision).and_then(|(_, value)| value.upgrade());
        let value = live.unwrap_or_else(|| {
            let value = Arc::new(std::mem::take(&mut record.value));
            if held.len() >= 64 {
                held.retain(|_, (_, value)| value.strong_count() > 0);
            }
            held.insert(record.key.as_str().to_owned(), (record.revision, Arc::downgrade(&value)));
            value
        });
        record.value = Bytes::from_owner(Held(value));
        record
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use kspaces_storage::{ApiIdentity, GroupResource, KeyLayout, Record, Revision, SpaceName};

    use super::{Answering, SHARED_FROM};

    fn record(name: &str, revision: u64, len: usize) -> Record {
        let keys = KeyLayout::default().resource(&GroupResource::new("", "configmaps"), &ApiIdentity::BuiltIn).unwrap_or_else(|e| panic!("{e}"));
        let key = keys.object(&SpaceName::new("t").unwrap_or_else(|e| panic!("{e}")), Some("ns"), name).unwrap_or_else(|e| panic!("{e}"));
        Record { key, value: Bytes::from(vec![b'x'; len]), revision: Revision(revision), create_revision: Revision(1) }
    }

    #[test]
    fn reads_of_a_large_version_share_the_buffer_an_answer_still_holds() {
        let answering = Answering::default();
        let first = answering.share(record("a", 5, SHARED_FROM));
        let second = answering.share(record("a", 5, SHARED_FROM));
        assert_eq!(first.value.as_ptr(), second.value.as_ptr(), "the second read holds the first's buffer");
        let newer = answering.share(record("a", 6, SHARED_FROM));
        assert_ne!(newer.value.as_ptr(), first.value.as_ptr(), "another version is not shared");
        let small = answering.share(record("b", 5, 10));
        assert_eq!(small.value.len(), 10, "a small value is left alone");
        drop((first, second, newer));
        let again = answering.share(record("a", 6, SHARED_FROM));
        assert_eq!(again.value, Bytes::from(vec![b'x'; SHARED_FROM]), "once no answer holds it, a read keeps its own");
    }
}
