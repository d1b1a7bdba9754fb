//! Limits on what a space stores, enforced inside the write: before a write reaches the store it reserves the
//! room it needs (`Limits::reserve`), which may refuse it; once the write is durable the reservation is committed
//! with the write's revision, and a write that stored nothing releases it. The registry knows nothing of where
//! limits come from (`crate::quota` implements them from each space's LogicalCluster); it only says, for every
//! write, how much it grows the space.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use kspaces_storage::{Clusters, Conflict, Deleted, Key, Record, Revision, SpaceName, WriteOp, Written};
use serde_json::Value;

use super::ResourceInfo;
use crate::status::ApiResult;

/// How one write changes what its space stores: objects (+1 a create, −1 a removal) and stored bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Growth {
    pub objects: i64,
    pub bytes: i64,
}

impl Growth {
    /// A new object of `bytes` stored bytes.
    pub fn created(bytes: usize) -> Growth {
        Growth { objects: 1, bytes: bytes as i64 }
    }

    /// An object of `old` stored bytes replaced by one of `new`.
    pub fn replaced(old: usize, new: usize) -> Growth {
        Growth { objects: 0, bytes: new as i64 - old as i64 }
    }

    /// An object of `bytes` stored bytes removed.
    pub fn removed(bytes: usize) -> Growth {
        Growth { objects: -1, bytes: -(bytes as i64) }
    }

    /// The growth's positive parts: what a write must find room for (shrinking counts only once it is done).
    pub fn room(self) -> Growth {
        Growth { objects: self.objects.max(0), bytes: self.bytes.max(0) }
    }
}

/// One write, as limits see it.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub space: &'a SpaceName,
    /// The object's namespace (namespaced resources only).
    pub namespace: Option<&'a str>,
    pub resource: &'a ResourceInfo,
    pub name: &'a str,
    /// The object as it will be stored (`None`: removed), and as it was (`None`: created), in stored form.
    pub object: Option<&'a Value>,
    pub old: Option<&'a Value>,
    pub growth: Growth,
    /// False for writes that must never be refused whatever they grow: marking an object deleted, and the
    /// server's own updates of objects it keeps (their status). Counted all the same.
    pub refusable: bool,
}

/// The limits of every space.
#[async_trait]
pub trait Limits: Send + Sync {
    /// Room for `request`'s growth in its space, held until the reservation is committed or dropped; the
    /// `Status` a client gets when the space's limits leave no room and the write is refusable.
    async fn reserve(&self, request: Request<'_>) -> ApiResult<Held>;

    /// Performs the write `request` reserved room for. Limits this process keeps by itself write plainly; limits
    /// kept in the store beside the objects (replicas sharing etcd, `crate::quota::shared`) change the space's
    /// tally in the same transaction, and may refuse the write there.
    async fn write(&self, store: &Clusters, _request: &Request<'_>, op: WriteOp) -> ApiResult<Result<Written, Conflict>> {
        Ok(store.write(op).await?)
    }

    /// The write `request` is done: durable at `revision`, or not stored (`None`). `held` is what `reserve` held.
    fn settle(&self, request: &Request<'_>, held: &Held, revision: Option<Revision>);
}

/// What a reservation holds, as the limits' own token (`crate::quota`: the ledgers it reserved in and how much);
/// nothing for a write no limit concerns.
#[derive(Default)]
pub struct Held {
    pub ledger: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

/// No limits anywhere (the registry's own tests).
pub struct Unlimited;

#[async_trait]
impl Limits for Unlimited {
    async fn reserve(&self, _request: Request<'_>) -> ApiResult<Held> {
        Ok(Held::default())
    }

    fn settle(&self, _request: &Request<'_>, _held: &Held, _revision: Option<Revision>) {}
}

/// A reservation in flight: commit it with the write's revision once the write is durable; dropped, it releases
/// what it held (the write stored nothing).
pub struct Reservation<'a> {
    limits: &'a dyn Limits,
    request: Request<'a>,
    held: Held,
    settled: bool,
}

impl<'a> Reservation<'a> {
    pub async fn take(limits: &'a dyn Limits, request: Request<'a>) -> ApiResult<Reservation<'a>> {
        let held = limits.reserve(request).await?;
        Ok(Reservation { limits, request, held, settled: false })
    }

    /// Creates `key` (see [`Limits::write`]).
    pub async fn create(&self, store: &Clusters, key: &Key, value: Bytes) -> ApiResult<Result<Record, Conflict>> {
        let written = self.limits.write(store, &self.request, WriteOp::Create { key: key.clone(), value }).await?;
        Ok(written.map(Written::into_record))
    }

    /// Replaces `key`, at `expected` when given (see [`Limits::write`]).
    pub async fn update(&self, store: &Clusters, key: &Key, value: Bytes, expected: Option<Revision>) -> ApiResult<Result<Record, Conflict>> {
        let written = self.limits.write(store, &self.request, WriteOp::Update { key: key.clone(), value, expected }).await?;
        Ok(written.map(Written::into_record))
    }

    /// Deletes `key`, at `expected` when given (see [`Limits::write`]).
    pub async fn delete(&self, store: &Clusters, key: &Key, expected: Option<Revision>) -> ApiResult<Result<Deleted, Conflict>> {
        let written = self.limits.write(store, &self.request, WriteOp::Delete { key: key.clone(), expected }).await?;
        Ok(written.map(Written::into_deleted))
    }

    pub fn commit(mut self, revision: Revision) {
        self.settled = true;
        self.limits.settle(&self.request, &self.held, Some(revision));
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.limits.settle(&self.request, &self.held, None);
        }
    }
}
