//! Storage clusters (Arktos' `spec.storageClusterId`): several stores, each an etcd cluster with revisions of
//! its own, behind one interface. A key is stored on the cluster its space is placed on ([`Placement`]); a range
//! inside one space is read and watched on that cluster alone, so everything a space does (optimistic
//! concurrency, lists, continue tokens, watches) keeps that cluster's revisions. A range across spaces (one
//! resource in every space, or everything) is merged from every cluster: its snapshot is one revision per cluster,
//! a [`Position`], which is what a client gets as the list's `resourceVersion` and resumes a watch from.
//!
//! With one cluster (the default) nothing changes: every range is that store's, and every position is one
//! revision.

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use base64::Engine;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::backend::{Conflict, Deleted, Record, WriteOp, Written};
use crate::error::{Result, StorageError};
use crate::key::{Key, KeyLayout, KeyRange, SpaceName};
use crate::tally::{Refused, Tally, TallyChange, TallyOp, TallyRecord};
use crate::store::{ListRequest, Store};
use crate::watch::{WatchFrom, WatchOptions, Watcher};
use crate::Revision;

/// A storage cluster's id: 0 is the default cluster (the system space is always there), 1-63 the others, as
/// Arktos numbers them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ClusterId(u8);

impl ClusterId {
    pub const DEFAULT: ClusterId = ClusterId(0);
    /// The highest id Arktos allows.
    pub const MAX: u8 = 63;

    pub fn new(id: u8) -> Option<ClusterId> {
        (id <= Self::MAX).then_some(ClusterId(id))
    }

    pub fn get(self) -> u8 {
        self.0
    }
}

impl fmt::Display for ClusterId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Says which storage cluster holds a space.
pub trait Placement: Send + Sync {
    /// The cluster of `space`; `None` while it is not known (a tenant this process has not heard of yet), and
    /// then nothing of that space is read or written.
    fn cluster_of(&self, space: &str) -> Option<ClusterId>;
}

/// Where a list was read or a watch stands. A range on one cluster has one revision (`One`, written as the
/// number, as kube writes it); a range across several clusters has one revision per cluster (`Each`, written
/// `0:120,3:45`: cluster `0` at revision 120, cluster `3` at 45), in cluster order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Position {
    One(Revision),
    Each(Vec<(ClusterId, Revision)>),
}

impl Default for Position {
    fn default() -> Self {
        Position::One(Revision::ZERO)
    }
}

impl Position {
    /// The revision this position gives a range on `cluster`: a `One` position's revision (the range decides
    /// the cluster), or an `Each` position's entry for it.
    pub fn on(&self, cluster: ClusterId) -> Option<Revision> {
        match self {
            Position::One(revision) => Some(*revision),
            Position::Each(each) => each.iter().find(|(id, _)| *id == cluster).map(|(_, revision)| *revision),
        }
    }

    /// The revision of a `One` position.
    pub fn single(&self) -> Option<Revision> {
        match self {
            Position::One(revision) => Some(*revision),
            Position::Each(_) => None,
        }
    }

    /// True if every revision of `other` is at or below this position's for the same cluster (a position
    /// of another shape is never covered).
    pub fn covers(&self, other: &Position) -> bool {
        match (self, other) {
            (Position::One(a), Position::One(b)) => a >= b,
            (Position::Each(_), Position::Each(theirs)) => theirs.iter().all(|(id, b)| self.on(*id).is_some_and(|a| a >= *b)),
            _ => false,
        }
    }

    /// Moves `cluster`'s revision forward to `revision` (never backwards).
    pub(crate) fn advance(&mut self, cluster: ClusterId, revision: Revision) {
        match self {
            Position::One(current) => *current = (*current).max(revision),
            Position::Each(each) => {
                if let Some((_, current)) = each.iter_mut().find(|(id, _)| *id == cluster) {
                    *current = (*current).max(revision);
                }
            }
        }
    }

    fn each(mut each: Vec<(ClusterId, Revision)>) -> Position {
        each.sort_unstable_by_key(|(id, _)| *id);
        Position::Each(each)
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::One(revision) => write!(f, "{revision}"),
            Position::Each(each) => {
                for (i, (id, revision)) in each.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{id}:{revision}")?;
                }
                Ok(())
            }
        }
    }
}

/// Why a text is not a position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadPosition;

impl FromStr for Position {
    type Err = BadPosition;

    /// A number, or `<cluster>:<revision>` pairs joined by `,` (each cluster once, 0-63).
    fn from_str(text: &str) -> std::result::Result<Position, BadPosition> {
        let number = |text: &str| -> std::result::Result<u64, BadPosition> {
            if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                return Err(BadPosition);
            }
            text.parse().map_err(|_| BadPosition)
        };
        if !text.contains(':') {
            return Ok(Position::One(Revision(number(text)?)));
        }
        let mut each = Vec::new();
        for pair in text.split(',') {
            let (id, revision) = pair.split_once(':').ok_or(BadPosition)?;
            let id = ClusterId::new(u8::try_from(number(id)?).map_err(|_| BadPosition)?).ok_or(BadPosition)?;
            if each.iter().any(|(seen, _)| *seen == id) {
                return Err(BadPosition);
            }
            each.push((id, Revision(number(revision)?)));
        }
        Ok(Position::each(each))
    }
}

/// What to list from [`Clusters::list`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// Read at this position (`None`: the latest). Ignored when `continue_token` is set.
    pub at: Option<Position>,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    /// Do not count the keys past a limited page.
    pub skip_remaining: bool,
}

/// One page of [`Clusters::list`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    pub items: Vec<Record>,
    /// The snapshot every page of this list is read at.
    pub position: Position,
    pub continue_token: Option<String>,
    pub remaining: Option<u64>,
}

/// A merged list's continue token: the position of its snapshot and the key to go on from, relative to the
/// range (as a single store's token is, so it can never reach outside the range it is used with).
#[derive(Serialize, Deserialize)]
struct MergedToken {
    v: u8,
    at: Vec<(u8, u64)>,
    start: String,
}

const MERGED_TOKEN_VERSION: u8 = 2;

/// The stores of every storage cluster, and where each space is placed. Cheap to clone.
#[derive(Clone)]
pub struct Clusters {
    inner: Arc<Inner>,
}

struct Inner {
    /// Sorted by id; the first is the default cluster.
    members: Vec<(ClusterId, Store)>,
    placement: OnceLock<Arc<dyn Placement>>,
}

impl Clusters {
    /// One store: the default cluster, and nothing else.
    pub fn single(store: Store) -> Clusters {
        Clusters::new(store, Vec::new())
    }

    /// The default cluster's store and the other clusters' (their ids 1-63, each once). Until a placement is
    /// given ([`Clusters::place_with`]), only the default cluster is written.
    pub fn new(default: Store, mut others: Vec<(ClusterId, Store)>) -> Clusters {
        others.retain(|(id, _)| *id != ClusterId::DEFAULT);
        others.sort_by_key(|(id, _)| *id);
        others.dedup_by_key(|(id, _)| *id);
        let mut members = vec![(ClusterId::DEFAULT, default)];
        members.extend(others);
        Clusters { inner: Arc::new(Inner { members, placement: OnceLock::new() }) }
    }

    /// Says where spaces are placed; set once (later calls are ignored).
    pub fn place_with(&self, placement: Arc<dyn Placement>) {
        let _ = self.inner.placement.set(placement);
    }

    /// Every cluster's id and store, the default first.
    pub fn members(&self) -> &[(ClusterId, Store)] {
        &self.inner.members
    }

    /// The ids of the configured clusters.
    pub fn ids(&self) -> impl Iterator<Item = ClusterId> + '_ {
        self.inner.members.iter().map(|(id, _)| *id)
    }

    /// The default cluster's store.
    pub fn default_store(&self) -> &Store {
        &self.inner.members[0].1
    }

    pub fn layout(&self) -> &KeyLayout {
        self.default_store().layout()
    }

    /// True if more than one cluster is configured.
    pub fn placed(&self) -> bool {
        self.inner.members.len() > 1
    }

    /// True if other processes may write any of the stores too (see [`crate::Backend::shared`]).
    pub fn shared(&self) -> bool {
        self.inner.members.iter().any(|(_, store)| store.shared())
    }

    /// The cluster `space` is placed on.
    pub fn cluster_of(&self, space: &str) -> Result<ClusterId> {
        if !self.placed() || space == "system" || space.starts_with("system:") {
            return Ok(ClusterId::DEFAULT);
        }
        let placement = self.inner.placement.get().ok_or_else(|| StorageError::Unavailable("storage clusters are not placed yet".into()))?;
        let id = placement.cluster_of(space).ok_or_else(|| {
            StorageError::Unavailable(format!("the storage cluster of space {space:?} is not known to this server yet"))
        })?;
        self.member(id).map(|_| id)
    }

    fn member(&self, id: ClusterId) -> Result<&Store> {
        self.inner.members.iter().find(|(member, _)| *member == id).map(|(_, store)| store).ok_or_else(|| {
            StorageError::Unavailable(format!("storage cluster {id} is not configured on this server (--storage-cluster)"))
        })
    }

    /// The store of the cluster `space` is placed on.
    fn store_of_space(&self, space: &str) -> Result<&Store> {
        self.member(self.cluster_of(space)?)
    }

    /// The store that holds `key`.
    pub fn store_of(&self, key: &Key) -> Result<&Store> {
        if !self.placed() {
            return Ok(self.default_store());
        }
        self.store_of_space(key.parts(self.layout())?.space)
    }

    /// The cluster a range is read on, or `None` for a range across spaces of several clusters.
    fn cluster_of_range(&self, range: &KeyRange) -> Result<Option<ClusterId>> {
        if !self.placed() {
            return Ok(Some(ClusterId::DEFAULT));
        }
        range.space(self.layout()).map(|space| self.cluster_of(space)).transpose()
    }

    pub async fn get(&self, key: &Key) -> Result<Option<Record>> {
        self.store_of(key)?.get(key).await
    }

    pub async fn create(&self, key: &Key, value: Bytes) -> Result<std::result::Result<Record, Conflict>> {
        self.store_of(key)?.create(key, value).await
    }

    pub async fn update(&self, key: &Key, value: Bytes, expected: Option<Revision>) -> Result<std::result::Result<Record, Conflict>> {
        self.store_of(key)?.update(key, value, expected).await
    }

    pub async fn delete(&self, key: &Key, expected: Option<Revision>) -> Result<std::result::Result<Deleted, Conflict>> {
        self.store_of(key)?.delete(key, expected).await
    }

    /// Performs one write (a create, update or delete) on the cluster of its key.
    pub async fn write(&self, op: WriteOp) -> Result<std::result::Result<Written, Conflict>> {
        self.store_of(op.key())?.write(op).await
    }

    /// Performs `op` if `space`'s tally is as `tally` expects (see [`crate::tally`]), on the cluster of its key (the
    /// space's: a key names its space).
    pub async fn write_tallied(&self, op: WriteOp, space: &SpaceName, tally: Tally) -> Result<std::result::Result<Written, Refused>> {
        self.store_of(op.key())?.write_tallied(op, space, tally).await
    }

    /// `space`'s tally, if it has one.
    pub async fn tally(&self, space: &SpaceName) -> Result<Option<TallyRecord>> {
        self.store_of_space(space.as_str())?.tally(space).await
    }

    /// Changes `space`'s tally alone: the revision of the change, or the tally as it is now.
    pub async fn change_tally(&self, space: &SpaceName, op: TallyOp) -> Result<std::result::Result<Revision, Option<TallyRecord>>> {
        self.store_of_space(space.as_str())?.change_tally(space, op).await
    }

    /// Every change of any space's tally from now on, one feed per cluster that keeps tallies.
    pub fn tally_changes(&self) -> Vec<tokio::sync::broadcast::Receiver<TallyChange>> {
        self.inner.members.iter().filter_map(|(_, store)| store.tally_changes()).collect()
    }

    /// The store of the cluster `space` is placed on.
    pub fn store_for(&self, space: &SpaceName) -> Result<&Store> {
        self.store_of_space(space.as_str())
    }

    /// For each range, whether it holds any object now: one call per cluster concerned.
    pub async fn occupied(&self, ranges: &[KeyRange]) -> Result<Vec<bool>> {
        if !self.placed() {
            return self.default_store().occupied(ranges).await;
        }
        let clusters = ranges.iter().map(|range| self.cluster_of_range(range)).collect::<Result<Vec<_>>>()?;
        let mut occupied = vec![false; ranges.len()];
        for (id, store) in self.members() {
            let mine: Vec<usize> = (0..ranges.len()).filter(|i| clusters[*i].is_none_or(|cluster| cluster == *id)).collect();
            if mine.is_empty() {
                continue;
            }
            let asked: Vec<KeyRange> = mine.iter().map(|i| ranges[*i].clone()).collect();
            for (i, found) in mine.into_iter().zip(store.occupied(&asked).await?) {
                occupied[i] |= found;
            }
        }
        Ok(occupied)
    }

    /// Where `range` stands now: its cluster's revision, or every cluster's for a range across them.
    pub async fn current(&self, range: &KeyRange) -> Result<Position> {
        match self.cluster_of_range(range)? {
            Some(id) => Ok(Position::One(self.member(id)?.current_revision().await?)),
            None => {
                let revisions = futures::future::try_join_all(self.members().iter().map(|(_, store)| store.current_revision())).await?;
                Ok(Position::each(self.ids().zip(revisions).collect()))
            }
        }
    }

    /// One page of `range`. On one cluster this is that store's list; across clusters, every cluster's page at
    /// the list's position, merged in key order.
    pub async fn list(&self, range: &KeyRange, listing: &Listing) -> Result<Listed> {
        let Some(id) = self.cluster_of_range(range)? else { return self.list_merged(range, listing).await };
        let revision = match (&listing.at, &listing.continue_token) {
            (Some(at), None) => Some(at.on(id).ok_or_else(|| mismatch(at, "names no revision of this range's storage cluster"))?),
            _ => None,
        };
        let request = ListRequest { revision, limit: listing.limit, continue_token: listing.continue_token.clone(), skip_remaining: listing.skip_remaining };
        let page = self.member(id)?.list(range, &request).await?;
        Ok(Listed { items: page.items, position: Position::One(page.revision), continue_token: page.continue_token, remaining: page.remaining })
    }

    async fn list_merged(&self, range: &KeyRange, listing: &Listing) -> Result<Listed> {
        let (at, start) = match &listing.continue_token {
            Some(token) => {
                let (at, start) = decode_merged_token(token)?;
                (Some(at), Some(format!("{}{}", range.start(), start)))
            }
            None => (listing.at.clone(), None),
        };
        let revisions: Vec<Option<Revision>> = match &at {
            None => vec![None; self.members().len()],
            Some(at) => self.every_revision(at)?.into_iter().map(Some).collect(),
        };
        let limit = listing.limit.filter(|limit| *limit > 0);
        let count = !listing.skip_remaining;
        let reads = self.members().iter().zip(&revisions).map(|((_, store), at)| store.list_raw(range, start.as_deref(), *at, limit, count));
        let pages = futures::future::try_join_all(reads).await.map_err(|err| match err {
            StorageError::Compacted { requested, compacted } if listing.continue_token.is_some() => StorageError::Expired { requested, compacted },
            StorageError::FutureRevision { .. } if listing.continue_token.is_some() => {
                StorageError::InvalidContinue("names a revision newer than the store's".to_owned())
            }
            other => other,
        })?;
        let position = Position::each(self.ids().zip(pages.iter().map(|page| page.revision)).collect());
        let more_anywhere = pages.iter().any(|page| page.more);
        let counts: Option<Vec<u64>> = pages.iter().map(|page| page.remaining.or((!page.more).then_some(0))).collect();
        let mut items: Vec<(usize, Record)> = pages.into_iter().enumerate().flat_map(|(i, page)| page.items.into_iter().map(move |record| (i, record))).collect();
        items.sort_by(|a, b| a.1.key.cmp(&b.1.key));
        let total = items.len();
        let taken = limit.map_or(total, |limit| limit.min(total));
        let left: Vec<(usize, Record)> = items.split_off(taken);
        let more = !left.is_empty() || more_anywhere;
        let continue_token = match items.last() {
            Some((_, last)) if more => Some(encode_merged_token(&position, range, &last.key)),
            _ => None,
        };
        let remaining = match (more, count, counts) {
            (true, true, Some(counts)) => Some(counts.iter().sum::<u64>() + left.len() as u64),
            _ => None,
        };
        Ok(Listed { items: items.into_iter().map(|(_, record)| record).collect(), position, continue_token, remaining })
    }

    /// Each cluster's revision in `position`, in member order, for a list or watch across every cluster: a
    /// position that names one revision, or leaves a cluster out, cannot say where that list or watch stands.
    fn every_revision(&self, position: &Position) -> Result<Vec<Revision>> {
        let each = matches!(position, Position::Each(_));
        self.ids()
            .map(|id| position.on(id).filter(|_| each))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| mismatch(position, "does not name a revision of every storage cluster; a list across storage clusters gives one"))
    }

    /// Watches `range` after `from`: on its cluster, or on every cluster merged for a range across them (then
    /// `from` must name every cluster's revision).
    pub async fn watch(&self, range: &KeyRange, from: &Position, options: WatchOptions) -> Result<Watcher> {
        match self.cluster_of_range(range)? {
            Some(id) => {
                let revision = from.on(id).ok_or_else(|| mismatch(from, "names no revision of this range's storage cluster"))?;
                self.member(id)?.watch(range, WatchFrom::After(revision), options).await
            }
            None => {
                let revisions = self.every_revision(from)?;
                let mut watchers = Vec::with_capacity(revisions.len());
                for ((id, store), revision) in self.members().iter().zip(&revisions) {
                    watchers.push((*id, store.watch(range, WatchFrom::After(*revision), options).await?));
                }
                Ok(Watcher::merged(watchers, Position::each(self.ids().zip(revisions).collect())))
            }
        }
    }
}

impl From<Store> for Clusters {
    fn from(store: Store) -> Clusters {
        Clusters::single(store)
    }
}

fn mismatch(position: &Position, why: &str) -> StorageError {
    StorageError::PositionMismatch(format!("resourceVersion {position} {why}"))
}

fn encode_merged_token(position: &Position, range: &KeyRange, last: &Key) -> String {
    let at = match position {
        Position::One(revision) => vec![(0, revision.0)],
        Position::Each(each) => each.iter().map(|(id, revision)| (id.get(), revision.0)).collect(),
    };
    let mut start = last.as_str()[range.start().len()..].to_owned();
    start.push('\0');
    let json = serde_json::to_vec(&MergedToken { v: MERGED_TOKEN_VERSION, at, start }).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

fn decode_merged_token(token: &str) -> Result<(Position, String)> {
    let invalid = |why: &str| StorageError::InvalidContinue(why.to_owned());
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| invalid("not base64"))?;
    let token: MergedToken = serde_json::from_slice(&raw).map_err(|_| invalid("not a continue token of a list across storage clusters"))?;
    if token.v != MERGED_TOKEN_VERSION || token.start.is_empty() || token.at.is_empty() {
        return Err(invalid("unknown version or empty position"));
    }
    let each = token.at.into_iter().map(|(id, revision)| ClusterId::new(id).map(|id| (id, Revision(revision)))).collect::<Option<Vec<_>>>()
        .ok_or_else(|| invalid("names a storage cluster id above 63"))?;
    Ok((Position::each(each), token.start))
}

#[cfg(test)]
mod tests;
