//! kspaces storage: a revisioned, watchable object store for system and tenant spaces.
//!
//! One [`Backend`] trait, three implementations (the in-memory reference model, sled, and etcd, over gRPC
//! code generated once and checked in, `etcd/proto`) that pass one [`conformance`] suite, and a [`Store`] that adds watch fan-out, continue
//! tokens and size limits. This crate knows nothing of HTTP, RBAC or CRDs.

pub mod backend;
pub mod clusters;
pub mod conformance;
pub mod error;
pub mod key;
pub mod memory;
pub mod revision;
pub mod sled;
pub mod snapshot;
pub mod store;
pub mod tally;
pub mod watch;

pub use clusters::{ClusterId, Clusters, Listed, Listing, Placement, Position};
pub use backend::{Backend, Conflict, Deleted, RawPage, Record, WriteOp, Written};
pub use error::{Result, StorageError};
pub use key::{ApiIdentity, GroupResource, Key, KeyLayout, KeyParts, KeyRange, ResourceKeys, SpaceName};
pub use revision::Revision;
pub use tally::{Refused, Tally, TallyChange, TallyOp, TallyRecord};
pub use store::{ListPage, ListRequest, Store, StoreConfig, DEFAULT_MAX_VALUE_BYTES};
pub use watch::{Event, EventKind, HubConfig, WatchFrom, WatchHub, WatchItem, WatchOptions, Watcher};
pub mod etcd;
