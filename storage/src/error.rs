//! The storage crate's errors.
//!
//! Expected outcomes of a write (the key exists, the revision moved on) are not errors: they come back in the
//! inner `Result` of a write as a [`Conflict`](crate::Conflict), the way sled's compare-and-swap returns the
//! current value. `StorageError` is for everything else: bad input, history that is gone, a backend that is down.

use crate::Revision;

/// What went wrong in the store itself or with the request's input.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StorageError {
    /// A key segment is empty, too long, or holds a character the layout reserves.
    #[error("invalid key {what} {value:?}: {reason}")]
    InvalidKey { what: &'static str, value: String, reason: &'static str },

    /// A value is larger than the store accepts (3 MiB by default, like kube-apiserver).
    #[error("value of {size} bytes is over the limit of {limit} bytes")]
    ValueTooLarge { size: usize, limit: usize },

    /// The requested revision is older than the oldest one the store still keeps.
    #[error("revision {requested} has been compacted; the oldest available is {compacted}")]
    Compacted { requested: Revision, compacted: Revision },

    /// The requested revision has not happened yet.
    #[error("revision {requested} is newer than the current revision {current}")]
    FutureRevision { requested: Revision, current: Revision },

    /// A continue token names a snapshot that has been compacted away.
    #[error("the continue token is too old: revision {requested} has been compacted (oldest is {compacted})")]
    Expired { requested: Revision, compacted: Revision },

    /// A continue token that this store did not issue, or issued for another range.
    #[error("invalid continue token: {0}")]
    InvalidContinue(String),

    /// A resourceVersion of another shape than the range needs: one revision for a range across storage
    /// clusters, which needs one per cluster, or a position naming no revision of the range's cluster.
    #[error("{0}")]
    PositionMismatch(String),

    /// A watcher did not keep up: its bounded queue filled and it was closed.
    #[error("watcher closed: it fell more than {capacity} events behind")]
    WatchOverflow { capacity: usize },

    /// The backend cannot be reached (etcd down, writer stopped).
    #[error("storage unavailable: {0}")]
    Unavailable(String),

    /// The backend failed in a way that is not the request's fault (I/O error, corrupt record).
    #[error("storage backend error: {0}")]
    Backend(String),
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;
