//! Tallies: one bookkeeping value per space, kept by a store that several processes share (etcd) and changed in
//! the same transaction as a write in that space. The API server keeps a limited space's usage there, so that
//! replicas writing into one space together never pass its limits (`apiserver/src/quota/shared.rs`).
//!
//! Every write made with a tally expectation is refused, and nothing is stored, when the space's tally is not as
//! the writer expected: a writer that knows of no tally expects [`Tally::Absent`], so a tally made by another
//! process stops its writes until it has read it. A store one process owns (memory, sled) keeps no tallies: that
//! process sees every write by itself.

use bytes::Bytes;

use crate::backend::Conflict;
use crate::error::StorageError;
use crate::Revision;

/// What a write expects of its space's tally, and what it leaves there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tally {
    /// The space has no tally, and the write leaves it so.
    Absent,
    /// The space's tally was last written at `revision`; the write replaces it with `value`.
    Replace { revision: Revision, value: Bytes },
}

/// A change of a space's tally alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TallyOp {
    /// Made, if the space has none.
    Create(Bytes),
    /// Replaced, if still at `revision`.
    Replace { revision: Revision, value: Bytes },
    /// Removed, if still at `revision`.
    Delete { revision: Revision },
}

/// A space's tally as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TallyRecord {
    pub value: Bytes,
    /// The revision of the write that last changed it.
    pub revision: Revision,
    /// The revision of the write that made it.
    pub create_revision: Revision,
}

/// A tally changed by any process, as a store that keeps tallies tells it, in revision order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TallyChange {
    pub space: String,
    /// The tally now (`None`: removed).
    pub record: Option<TallyRecord>,
    /// The revision of the change.
    pub revision: Revision,
}

/// Why a write made with a tally expectation did not happen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The object's own precondition failed (the tally was as expected).
    Conflict(Conflict),
    /// The space's tally is not as expected: here it is now (`None`: there is none).
    Tally(Option<TallyRecord>),
}

/// The error of a tally operation on a store that keeps none.
pub(crate) fn not_kept() -> StorageError {
    StorageError::Backend("this store keeps no tallies: one process owns it".to_owned())
}
