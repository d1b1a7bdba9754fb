//! Space limits exact across replicas sharing one etcd. Each replica's ledgers (`crate::quota`) only see the writes
//! made through it, so a limited space's usage is kept in the store instead: its **tally** (`kspaces_storage::tally`),
//! one small value per limited space, changed in the same etcd transaction as every write in that space.
//!
//! - **Every write** in a space names the tally it expects. A replica that knows of none expects none; once a tally
//!   exists, such a write is refused by etcd and stores nothing, and the replica learns the tally from the refusal
//!   and writes again with it. So no write, from any replica, slips past a tally.
//! - **A write in a limited space** is checked against the tally's usage and stores its object and the tally's new
//!   usage together, at the tally's revision: a tally changed meanwhile by another replica refuses it, and it is
//!   checked again against the new usage. One replica's writes in a space take turns (no conflicts among
//!   themselves); replicas' writes conflict only with each other's.
//! - **Making a tally.** When a LogicalCluster gains limits, every replica (each follows the store's writes) tries to
//!   make the tally; one does, at revision R, with its usage unknown. From R on every write in the space changes the
//!   tally (the rule above), adding its growth; the store read as of R counts the objects before. Their sum is
//!   exact, and any replica can compute it: the one that made the tally counts it, another after `COUNTER_GRACE`
//!   if it is still not counted (its maker may have died). Until then, writes that need room wait (at most 30 s,
//!   then 503), as in a single process.
//! - Every replica follows the tallies from the store's feed, so each shows the usage others' writes made.
//! - Limits changed or lifted are written into the tally, or it is removed, in the order of the LogicalCluster's
//!   writes (the tally records the revision of the write whose limits it holds).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kspaces_storage::{
    Clusters, Conflict, ListRequest, Refused, Revision, SpaceName, StorageError, Tally, TallyChange, TallyOp, TallyRecord, WriteOp, Written,
};
use serde::{Deserialize, Serialize};

use super::{refuse_over, SpaceLimits, Usage, COUNT_WAIT};
use crate::registry::limits::{Growth, Request};
use crate::status::{ApiError, ApiResult};

/// How often a write waiting for a count reads the tally again.
const POLL: Duration = Duration::from_millis(50);
/// How long a replica leaves a tally another made to that replica's count before counting it itself (the maker may
/// be gone).
const COUNTER_GRACE: Duration = Duration::from_secs(2);
/// Records a count reads at a time.
const COUNT_PAGE: usize = 1000;

/// A tally as stored (JSON).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TallyValue {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_objects: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// The revision of the LogicalCluster write whose limits these are.
    pub limits_revision: u64,
    /// Once counted, what the space stores; before, what writes since the tally was made have added.
    pub objects: i64,
    pub bytes: i64,
    pub counted: bool,
}

impl TallyValue {
    fn limits(&self) -> SpaceLimits {
        SpaceLimits { objects: self.max_objects, bytes: self.max_bytes }
    }

    fn usage(&self) -> Usage {
        Usage { objects: self.objects, bytes: self.bytes }
    }

    /// The same usage under `limits`, set by the LogicalCluster write at `revision`.
    fn limited(self, limits: SpaceLimits, revision: Revision) -> TallyValue {
        TallyValue { max_objects: limits.objects, max_bytes: limits.bytes, limits_revision: revision.0, ..self }
    }

    fn grown(&self, growth: Growth) -> TallyValue {
        TallyValue { objects: self.objects + growth.objects, bytes: self.bytes + growth.bytes, ..self.clone() }
    }

    fn encode(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }

    fn decode(bytes: &[u8]) -> Option<TallyValue> {
        serde_json::from_slice(bytes).ok()
    }
}

/// What this replica last knew of a space's tally.
#[derive(Clone, Debug)]
struct Known {
    revision: Revision,
    /// `None`: a tally this replica cannot read (it removes it and makes it again).
    value: Option<TallyValue>,
}

/// A space with a tally, as this replica last read or wrote it.
struct Space {
    /// This replica's writes in the space take turns.
    turn: Arc<tokio::sync::Mutex<()>>,
    tally: Mutex<Known>,
}

/// What this replica knows of every limited space's tally, and the writes that keep them.
pub struct Tallies {
    clusters: Clusters,
    spaces: Mutex<HashMap<SpaceName, Arc<Space>, foldhash::fast::RandomState>>,
    /// Spaces whose tally is being brought in line with their limits here; `true`: look again once done.
    settling: Mutex<HashMap<SpaceName, bool, foldhash::fast::RandomState>>,
}

impl Tallies {
    /// Tallies on `clusters`, followed from the store's feed of their changes (so every replica shows the usage
    /// others' writes made).
    pub fn new(clusters: Clusters) -> Arc<Tallies> {
        let feeds = clusters.tally_changes();
        let tallies = Arc::new(Tallies { clusters, spaces: Mutex::default(), settling: Mutex::default() });
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            for feed in feeds {
                runtime.spawn(follow(Arc::downgrade(&tallies), feed));
            }
        }
        tallies
    }

    fn space(&self, space: &SpaceName) -> Option<Arc<Space>> {
        let spaces = self.spaces.lock().unwrap();
        if spaces.is_empty() {
            return None;
        }
        spaces.get(space).cloned()
    }

    /// Remembers a tally read from the store (`None`: the space has none). Never goes back to an older one.
    fn remember(&self, space: &SpaceName, record: Option<&TallyRecord>) {
        let mut spaces = self.spaces.lock().unwrap();
        match (record, spaces.get(space)) {
            (Some(record), Some(entry)) => {
                let mut known = entry.tally.lock().unwrap();
                if known.revision <= record.revision {
                    *known = Known { revision: record.revision, value: TallyValue::decode(&record.value) };
                }
            }
            (Some(record), None) => {
                let known = Known { revision: record.revision, value: TallyValue::decode(&record.value) };
                spaces.insert(space.clone(), Arc::new(Space { turn: Arc::default(), tally: Mutex::new(known) }));
            }
            (None, _) => {
                spaces.remove(space);
            }
        }
    }

    /// A change the store's feed told.
    fn heard(&self, change: TallyChange) {
        let Ok(space) = SpaceName::new(change.space) else { return };
        match &change.record {
            Some(record) => self.remember(&space, Some(record)),
            None => {
                let mut spaces = self.spaces.lock().unwrap();
                if spaces.get(&space).is_some_and(|entry| entry.tally.lock().unwrap().revision <= change.revision) {
                    spaces.remove(&space);
                }
            }
        }
    }

    /// The space's limits and, once counted, its usage, as this replica last knew its tally.
    pub fn usage(&self, space: &SpaceName) -> Option<(SpaceLimits, Option<Usage>)> {
        let entry = self.space(space)?;
        let value = entry.tally.lock().unwrap().value.clone()?;
        Some((value.limits(), value.counted.then(|| value.usage())))
    }

    /// Refuses a write its space's tally has no room for (a dry run is judged by this; a real write again in the
    /// store). What this replica knows may be stale: before refusing, the tally is read again.
    pub async fn check(&self, request: &Request<'_>) -> ApiResult<()> {
        let room = request.growth.room();
        if !request.refusable || room == Growth::default() {
            return Ok(());
        }
        let judge = |tallies: &Tallies| match tallies.usage(request.space) {
            Some((limits, Some(usage))) => refuse_over(&limits, usage, Growth::default(), room, request),
            _ => Ok(()),
        };
        if judge(self).is_ok() {
            return Ok(());
        }
        let now = self.clusters.tally(request.space).await?;
        self.remember(request.space, now.as_ref());
        judge(self)
    }

    /// Performs `op` with the space's tally as this replica knows it, learning it again from each refusal.
    /// `limited`: this replica's LogicalClusters say the space has limits (its tally may not be made yet);
    /// `settle`: start bringing the space's tally in line here (a write waits for its count).
    pub async fn write(&self, request: &Request<'_>, op: WriteOp, limited: &(dyn Fn() -> bool + Send + Sync), settle: &(dyn Fn() + Send + Sync))
        -> ApiResult<Result<Written, Conflict>> {
        let space = request.space;
        let room = request.growth.room();
        let must_fit = request.refusable && room != Growth::default();
        let deadline = tokio::time::Instant::now() + COUNT_WAIT;
        let mut turn = None;
        let mut fresh = false;
        loop {
            let entry = self.space(space);
            if let (None, Some(entry)) = (&turn, &entry) {
                turn = Some(entry.turn.clone().lock_owned().await);
            }
            let known = entry.as_ref().map(|e| e.tally.lock().unwrap().clone());
            let (tally, grown) = match known {
                Some(Known { revision, value: Some(value) }) if value.counted || !must_fit => {
                    if value.counted && request.refusable {
                        if let Err(refused) = refuse_over(&value.limits(), value.usage(), Growth::default(), room, request) {
                            // What this replica knew may be stale (another freed room): refused only by a fresh read.
                            if fresh {
                                return Err(refused);
                            }
                            fresh = true;
                            let now = self.clusters.tally(space).await?;
                            self.remember(space, now.as_ref());
                            continue;
                        }
                    }
                    let grown = value.grown(request.growth);
                    (Tally::Replace { revision, value: grown.encode() }, Some(grown))
                }
                None if !(must_fit && limited()) => (Tally::Absent, None),
                // Not counted yet (or not readable, or not made yet though the space has limits): wait for it.
                _ => {
                    settle();
                    if tokio::time::Instant::now() + POLL > deadline {
                        return Err(ApiError::new(503, "ServiceUnavailable", format!("the usage of {space} is still being counted; try again")));
                    }
                    tokio::time::sleep(POLL).await;
                    let now = self.clusters.tally(space).await?;
                    self.remember(space, now.as_ref());
                    fresh = true;
                    continue;
                }
            };
            match self.clusters.write_tallied(op.clone(), space, tally).await? {
                Ok(written) => {
                    if let (Some(value), Some(entry)) = (grown, &entry) {
                        *entry.tally.lock().unwrap() = Known { revision: written.revision(), value: Some(value) };
                    }
                    return Ok(Ok(written));
                }
                Err(Refused::Conflict(conflict)) => return Ok(Err(conflict)),
                Err(Refused::Tally(now)) => {
                    self.remember(space, now.as_ref());
                    fresh = true;
                    if tokio::time::Instant::now() > deadline {
                        return Err(ApiError::new(503, "ServiceUnavailable", format!("writes in {space} conflict too often; try again")));
                    }
                }
            }
        }
    }

    /// Brings the space's tally in line with its limits, in the background: made (and counted), changed, counted,
    /// or removed. `wanted` gives the limits this replica's LogicalClusters set, with the revision of the write.
    pub fn settle_with(self: Arc<Self>, space: SpaceName, wanted: impl Fn() -> (Option<SpaceLimits>, Revision) + Send + Sync + 'static) {
        {
            let mut settling = self.settling.lock().unwrap();
            if let Some(again) = settling.get_mut(&space) {
                *again = true;
                return;
            }
            settling.insert(space.clone(), false);
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        runtime.spawn(async move {
            loop {
                let (limits, revision) = wanted();
                if let Err(err) = self.bring_in_line(&space, limits, revision).await {
                    tracing::warn!(%space, error = %err.message, "the space's usage tally could not be brought in line; trying again in 1 s");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                let mut settling = self.settling.lock().unwrap();
                if settling.get(&space).copied().unwrap_or(false) {
                    settling.insert(space.clone(), false);
                    continue;
                }
                settling.remove(&space);
                return;
            }
        });
    }

    async fn bring_in_line(&self, space: &SpaceName, limits: Option<SpaceLimits>, revision: Revision) -> ApiResult<()> {
        // The count as of a tally's making, kept while writes change the tally under it (they add on top).
        let mut counted_at: Option<(Revision, Usage)> = None;
        // Whether this run made the tally: if not, the replica that did counts it; this one only after a while.
        let (mut made, mut waited) = (false, false);
        loop {
            let record = self.clusters.tally(space).await?;
            self.remember(space, record.as_ref());
            let value = record.as_ref().map(|r| TallyValue::decode(&r.value));
            let change = match (&record, value, limits) {
                (None, _, None) => return Ok(()),
                (None, _, Some(limits)) => TallyOp::Create(TallyValue::default().limited(limits, revision).encode()),
                // Unreadable: made again.
                (Some(record), Some(None), _) => TallyOp::Delete { revision: record.revision },
                (Some(record), Some(Some(value)), _) if value.limits_revision < revision.0 && Some(value.limits()) != limits => match limits {
                    None => TallyOp::Delete { revision: record.revision },
                    Some(limits) => TallyOp::Replace { revision: record.revision, value: value.limited(limits, revision).encode() },
                },
                (Some(_), Some(Some(value)), _) if !value.counted && !made && !waited => {
                    waited = true;
                    tokio::time::sleep(COUNTER_GRACE).await;
                    continue;
                }
                (Some(record), Some(Some(value)), _) if !value.counted => {
                    let before = match counted_at {
                        Some((at, before)) if at == record.create_revision => before,
                        _ => match self.count(space, record.create_revision).await {
                            Ok(before) => before,
                            // The store no longer reads as of the tally's making: made again.
                            Err(StorageError::Compacted { .. }) => {
                                self.clusters.change_tally(space, TallyOp::Delete { revision: record.revision }).await?.ok();
                                continue;
                            }
                            Err(err) => return Err(err.into()),
                        },
                    };
                    counted_at = Some((record.create_revision, before));
                    let counted = TallyValue { objects: value.objects + before.objects, bytes: value.bytes + before.bytes, counted: true, ..value };
                    TallyOp::Replace { revision: record.revision, value: counted.encode() }
                }
                (Some(_), _, _) => return Ok(()),
            };
            let making = matches!(change, TallyOp::Create(_));
            match self.clusters.change_tally(space, change).await? {
                Ok(_) => made |= making,
                Err(now) => self.remember(space, now.as_ref()),
            }
        }
    }

    /// What `space` stored as of `at`, read from the store page by page.
    async fn count(&self, space: &SpaceName, at: Revision) -> Result<Usage, StorageError> {
        let store = self.clusters.store_for(space)?;
        let layout = store.layout();
        let range = layout.everything();
        let mut request = ListRequest { revision: Some(at), limit: Some(COUNT_PAGE), continue_token: None, skip_remaining: true };
        let mut usage = Usage::default();
        loop {
            let page = store.list(&range, &request).await?;
            for record in &page.items {
                if record.key.parts(layout).is_ok_and(|parts| parts.space == space.as_str()) {
                    usage.add(Growth::created(record.value.len()));
                }
            }
            match page.continue_token {
                Some(token) => request = ListRequest { revision: None, limit: Some(COUNT_PAGE), continue_token: Some(token), skip_remaining: true },
                None => return Ok(usage),
            }
        }
    }
}

/// Follows one storage cluster's tally changes while the tallies live.
async fn follow(tallies: std::sync::Weak<Tallies>, mut feed: tokio::sync::broadcast::Receiver<TallyChange>) {
    loop {
        match feed.recv().await {
            Ok(change) => match tallies.upgrade() {
                Some(tallies) => tallies.heard(change),
                None => return,
            },
            // Missed changes only leave a tally shown stale: the next write or refusal reads it again.
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kspaces_storage::{Store, StoreConfig};

    fn record(value: &TallyValue, revision: u64) -> TallyRecord {
        TallyRecord { value: value.encode(), revision: Revision(revision), create_revision: Revision(1) }
    }

    #[tokio::test]
    async fn what_a_replica_knows_of_a_tally_only_moves_forward() {
        let tallies = Tallies::new(Clusters::single(Store::memory(StoreConfig::default())));
        let space = SpaceName::new("t1").expect("a space");
        let counted = TallyValue { max_objects: Some(10), limits_revision: 3, objects: 7, bytes: 700, counted: true, ..TallyValue::default() };
        assert_eq!(TallyValue::decode(&counted.encode()), Some(counted.clone()), "round trip");
        assert_eq!(TallyValue::decode(b"{not json"), None);

        tallies.remember(&space, Some(&record(&counted, 5)));
        assert_eq!(tallies.usage(&space), Some((SpaceLimits { objects: Some(10), bytes: None }, Some(Usage { objects: 7, bytes: 700 }))));
        // Older news (a feed running behind this replica's own write) changes nothing, a removal included.
        let older = TallyValue { objects: 3, ..counted.clone() };
        tallies.heard(TallyChange { space: "t1".into(), record: Some(record(&older, 4)), revision: Revision(4) });
        tallies.heard(TallyChange { space: "t1".into(), record: None, revision: Revision(4) });
        assert_eq!(tallies.usage(&space).and_then(|(_, used)| used).map(|u| u.objects), Some(7));
        // Newer news wins; a tally not counted yet shows its limits only.
        let uncounted = TallyValue { counted: false, ..counted.clone() };
        tallies.heard(TallyChange { space: "t1".into(), record: Some(record(&uncounted, 8)), revision: Revision(8) });
        assert_eq!(tallies.usage(&space), Some((SpaceLimits { objects: Some(10), bytes: None }, None)));
        tallies.heard(TallyChange { space: "t1".into(), record: None, revision: Revision(9) });
        assert_eq!(tallies.usage(&space), None, "removed");
    }
}
