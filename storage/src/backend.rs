//! The backend trait every store implements, and the values that cross it.
//!
//! A backend keeps revisioned key/value history and feeds every committed change, in revision order, to the
//! [`WatchHub`](crate::watch::WatchHub) it was opened with. Continue tokens, size limits and watch fan-out are
//! the [`Store`](crate::Store)'s business, so each backend stays small.

use async_trait::async_trait;
use bytes::Bytes;

use crate::error::Result;
use crate::key::{Key, KeyRange, SpaceName};
use crate::tally::{not_kept, Refused, Tally, TallyChange, TallyOp, TallyRecord};
use crate::watch::Event;
use crate::Revision;

/// One stored object at one revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub key: Key,
    pub value: Bytes,
    /// The revision of the write that produced this value (etcd's `mod_revision`).
    pub revision: Revision,
    /// The revision of the write that created the key (etcd's `create_revision`).
    pub create_revision: Revision,
}

/// Why a write did not happen. The current record comes back so callers need not read it again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Conflict {
    /// Create found the key already there.
    AlreadyExists(Record),
    /// Update or delete found no such key.
    NotFound,
    /// Update or delete expected another revision.
    RevisionMismatch(Record),
}

/// What a delete removed, and the revision of the delete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deleted {
    /// The object as it was just before the delete.
    pub prev: Record,
    pub revision: Revision,
}

/// A write to perform; `expected` is the revision the key must have now (`None`: any, but it must exist).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteOp {
    Create { key: Key, value: Bytes },
    Update { key: Key, value: Bytes, expected: Option<Revision> },
    Delete { key: Key, expected: Option<Revision> },
}

impl WriteOp {
    /// The key the write is for.
    pub fn key(&self) -> &Key {
        match self {
            WriteOp::Create { key, .. } | WriteOp::Update { key, .. } | WriteOp::Delete { key, .. } => key,
        }
    }
}

/// The result of a [`WriteOp`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Written {
    Put(Record),
    Deleted(Deleted),
}

impl Written {
    /// The revision of the write.
    pub fn revision(&self) -> Revision {
        match self {
            Written::Put(record) => record.revision,
            Written::Deleted(deleted) => deleted.revision,
        }
    }

    /// The record a put stored, or the one a delete removed.
    pub fn into_record(self) -> Record {
        match self {
            Written::Put(record) => record,
            Written::Deleted(deleted) => deleted.prev,
        }
    }

    /// What a delete removed (a put read as one that removed what it stored).
    pub fn into_deleted(self) -> Deleted {
        match self {
            Written::Deleted(deleted) => deleted,
            Written::Put(record) => Deleted { revision: record.revision, prev: record },
        }
    }
}

/// One page of a list, as a backend returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawPage {
    pub items: Vec<Record>,
    /// The snapshot the page was read at.
    pub revision: Revision,
    /// True if the range has more keys after the last item, at the same snapshot.
    pub more: bool,
    /// How many keys remain after this page, where the backend knows it cheaply (etcd does).
    pub remaining: Option<u64>,
}

/// A revisioned, watchable key/value store. Every method is safe to call concurrently.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// The latest durable value of `key`.
    async fn get(&self, key: &Key) -> Result<Option<Record>>;

    /// Keys of `range` from `start` (inclusive; within the range) at revision `at` (latest durable if `None`),
    /// at most `limit` of them. `Compacted` if `at` is older than the compacted revision. Past `limit`, the
    /// live keys left are counted into `remaining` only if `count_remaining` (a backend may give up counting).
    async fn list(&self, range: &KeyRange, start: Option<&str>, at: Option<Revision>, limit: Option<usize>, count_remaining: bool)
        -> Result<RawPage>;

    /// For each range, whether it holds any live key now. A default of one limited list per range; a backend
    /// that can answer many in one call (sled: one trip to the blocking pool) does.
    async fn occupied(&self, ranges: &[KeyRange]) -> Result<Vec<bool>> {
        let mut occupied = Vec::with_capacity(ranges.len());
        for range in ranges {
            occupied.push(!self.list(range, None, None, Some(1), false).await?.items.is_empty());
        }
        Ok(occupied)
    }

    /// Performs one write atomically with its revision; acknowledged only once durable.
    async fn write(&self, op: WriteOp) -> Result<std::result::Result<Written, Conflict>>;

    /// Performs `op` only if `space`'s tally is as `tally` expects, and replaces the tally in the same
    /// transaction (see [`crate::tally`]). A store that keeps no tallies performs `op` alone when `tally` is
    /// `Absent`, and fails for anything else.
    async fn write_tallied(&self, op: WriteOp, _space: &SpaceName, tally: Tally) -> Result<std::result::Result<Written, Refused>> {
        match tally {
            Tally::Absent => Ok(self.write(op).await?.map_err(Refused::Conflict)),
            Tally::Replace { .. } => Err(not_kept()),
        }
    }

    /// `space`'s tally, if it has one.
    async fn tally(&self, _space: &SpaceName) -> Result<Option<TallyRecord>> {
        Ok(None)
    }

    /// Changes `space`'s tally alone: the revision of the change, or the tally as it is now when it was not as
    /// `op` expects.
    async fn change_tally(&self, _space: &SpaceName, _op: TallyOp) -> Result<std::result::Result<Revision, Option<TallyRecord>>> {
        Err(not_kept())
    }

    /// Every change of any space's tally from now on, whoever makes it (`None`: this store keeps no tallies).
    fn tally_changes(&self) -> Option<tokio::sync::broadcast::Receiver<TallyChange>> {
        None
    }

    /// The revision of the latest durable write.
    async fn current_revision(&self) -> Result<Revision>;

    /// Drops history up to `revision`: lists at older revisions and watches from older revisions then fail
    /// with `Compacted`. Compacting to an already compacted revision is a no-op.
    async fn compact(&self, revision: Revision) -> Result<()>;

    /// The revision history was last compacted to (`Revision::ZERO` if never).
    async fn compacted_revision(&self) -> Result<Revision>;

    /// The events of `range` with `after < revision <= through`, in order; `Compacted` if `after` is older
    /// than what the backend keeps. Used to replay history older than the hub's in-memory window.
    async fn history(&self, range: &KeyRange, after: Revision, through: Revision) -> Result<Vec<Event>>;

    /// Makes the hub's current revision catch up with the backend's, returning only once the hub has been
    /// told (etcd: a marker write seen through the ordered event feed). Backends that publish synchronously
    /// have nothing to do.
    async fn request_progress(&self) -> Result<()> {
        Ok(())
    }

    /// True if other processes may write this store too (etcd, shared by replicas): what this process caches
    /// must then follow the store's watch, not only its own writes. sled is opened by one process at a time.
    fn shared(&self) -> bool {
        false
    }
}
