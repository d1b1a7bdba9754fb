//! Per-space limits (decisions.md, "Tenant fairness and quotas"): a system user sets, on a space's LogicalCluster
//! `cluster`, kcp's annotation `core.kcp.io/max-total-objects` and kspaces' `quota.kspaces.io/max-bytes` (stored
//! bytes). Every write reserves its growth in the space's ledger before it reaches the store
//! (`registry::limits`): a create or a client's update with no room left is refused with kube's 403 `exceeded
//! quota`, and the reservation is settled once the write is durable or known not to be. Usage is counted exactly:
//! the ledger holds what is stored plus what writes in flight have reserved, so concurrent creates can never
//! together pass a limit (kube's ResourceQuota admission instead races on the quota's status and can overshoot
//! until its controller recounts).
//!
//! Only spaces with a limit have a ledger. A new ledger is counted from one snapshot of the store (`census`),
//! and every write settled meanwhile with a newer revision is added on top, so nothing is counted twice or
//! missed; writes to that space wait for the count. The usage is shown on read in the LogicalCluster's
//! `status.quota` (`show`), never stored.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use kspaces_storage::{Revision, SpaceName};
use serde_json::{json, Value};

use crate::registry::limits::{Growth, Held, Limits, Request};
use crate::registry::observe::{RevisionMap, WriteObserver};
use crate::registry::{Reader, ResourceInfo};
use crate::status::{ApiError, ApiResult};

/// kcp's limit on the number of objects a logical cluster stores.
pub const MAX_OBJECTS: &str = "core.kcp.io/max-total-objects";
/// kspaces' limit on the bytes a space stores (each object's stored JSON).
pub const MAX_BYTES: &str = "quota.kspaces.io/max-bytes";
/// The annotations that carry limits: only system users may set or change them.
pub const LIMIT_ANNOTATIONS: [&str; 2] = [MAX_OBJECTS, MAX_BYTES];

/// How many records the census reads at a time.
const CENSUS_PAGE: usize = 1000;
/// How long a write waits for its space to be counted before it is answered 503.
const COUNT_WAIT: Duration = Duration::from_secs(30);

/// A space's limits, as its LogicalCluster's annotations set them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpaceLimits {
    pub objects: Option<u64>,
    pub bytes: Option<u64>,
}

impl SpaceLimits {
    /// The limits a LogicalCluster sets (a value that is not a count sets none; validation refuses it on write).
    pub fn of(logical_cluster: &Value) -> SpaceLimits {
        let annotation = |name: &str| logical_cluster.pointer("/metadata/annotations")?.get(name)?.as_str().and_then(parse_limit);
        SpaceLimits { objects: annotation(MAX_OBJECTS), bytes: annotation(MAX_BYTES) }
    }

    pub fn none(&self) -> bool {
        self.objects.is_none() && self.bytes.is_none()
    }
}

/// A limit's value: a decimal count (no sign, no unit, no leading zeros but `0`).
pub fn parse_limit(value: &str) -> Option<u64> {
    let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) && (value == "0" || !value.starts_with('0'));
    if digits { value.parse().ok() } else { None }
}

/// What a space stores: objects and their stored bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub objects: i64,
    pub bytes: i64,
}

impl Usage {
    fn add(&mut self, growth: Growth) {
        self.objects += growth.objects;
        self.bytes += growth.bytes;
    }
}

/// Where a space's count stands.
#[derive(Debug)]
enum Count {
    /// Not counted yet: the writes settled since the ledger was made, to add to the census' snapshot (those
    /// newer than it).
    Waiting(Vec<(Revision, Growth)>),
    Known(Usage),
}

/// One limited space's ledger.
#[derive(Debug)]
struct Ledger {
    limits: SpaceLimits,
    count: Count,
    /// What writes in flight have reserved.
    held: Growth,
}

type Shared = Arc<Mutex<Ledger>>;

/// Every limited space's ledger, kept from the LogicalClusters (a primed write observer) and from every write
/// (`Limits`).
pub struct Quotas {
    /// Itself, for the census tasks it starts.
    me: Weak<Quotas>,
    reader: Reader,
    /// Each space's limits, as the newest LogicalCluster write seen set them.
    limits: Mutex<RevisionMap<SpaceName, SpaceLimits, foldhash::fast::RandomState>>,
    ledgers: Mutex<HashMap<SpaceName, Shared, foldhash::fast::RandomState>>,
    /// Bumped whenever a census ends: writes waiting for a count look again.
    counted: tokio::sync::watch::Sender<u64>,
    /// One census at a time; each counts every space waiting when it starts.
    census: tokio::sync::Mutex<()>,
}

impl Quotas {
    pub fn new(reader: Reader) -> Arc<Quotas> {
        Arc::new_cyclic(|me| Quotas {
            me: me.clone(),
            reader,
            limits: Mutex::default(),
            ledgers: Mutex::default(),
            counted: tokio::sync::watch::channel(0).0,
            census: tokio::sync::Mutex::new(()),
        })
    }

    fn ledger(&self, space: &SpaceName) -> Option<Shared> {
        self.ledgers.lock().unwrap().get(space).cloned()
    }

    /// A space's limits and, once counted, its usage (what `status.quota` shows).
    pub fn usage(&self, space: &SpaceName) -> Option<(SpaceLimits, Option<Usage>)> {
        let ledger = self.ledger(space)?;
        let ledger = ledger.lock().unwrap();
        let usage = match &ledger.count {
            Count::Known(usage) => Some(*usage),
            Count::Waiting(_) => None,
        };
        Some((ledger.limits, usage))
    }

    /// Writes a LogicalCluster's `status.quota` (its limits and, once counted, its usage), or removes it when
    /// the space has no limits. Shown on read, never stored.
    pub fn show(&self, space: &SpaceName, logical_cluster: &mut Value) {
        let shown = self.usage(space).map(|(limits, usage)| {
            let mut hard = serde_json::Map::new();
            let mut used = serde_json::Map::new();
            if let Some(objects) = limits.objects {
                hard.insert("objects".into(), json!(objects.to_string()));
                used.extend(usage.map(|u| ("objects".into(), json!(u.objects.to_string()))));
            }
            if let Some(bytes) = limits.bytes {
                hard.insert("bytes".into(), json!(bytes.to_string()));
                used.extend(usage.map(|u| ("bytes".into(), json!(u.bytes.to_string()))));
            }
            let mut quota = json!({"hard": hard});
            if usage.is_some() {
                quota["used"] = Value::Object(used);
            }
            quota
        });
        match (shown, logical_cluster.as_object_mut()) {
            (Some(quota), Some(object)) => {
                let status = object.entry("status").or_insert_with(|| json!({}));
                if let Some(status) = status.as_object_mut() {
                    status.insert("quota".into(), quota);
                }
            }
            (None, Some(object)) => {
                if let Some(status) = object.get_mut("status").and_then(Value::as_object_mut) {
                    status.remove("quota");
                }
            }
            _ => {}
        }
    }

    /// Brings the ledgers in line with the limits now known for `space`: a space that gained limits gets a ledger
    /// (counted by a census), one that lost them loses it.
    fn follow(&self, space: &SpaceName) {
        let limits = self.limits.lock().unwrap().get(space).copied().unwrap_or_default();
        let mut ledgers = self.ledgers.lock().unwrap();
        match (limits.none(), ledgers.get(space)) {
            (true, _) => {
                ledgers.remove(space);
            }
            (false, Some(ledger)) => ledger.lock().unwrap().limits = limits,
            (false, None) => {
                let ledger = Ledger { limits, count: Count::Waiting(Vec::new()), held: Growth::default() };
                ledgers.insert(space.clone(), Arc::new(Mutex::new(ledger)));
                drop(ledgers);
                if let (Ok(runtime), Some(me)) = (tokio::runtime::Handle::try_current(), self.me.upgrade()) {
                    runtime.spawn(me.count());
                }
            }
        }
    }

    /// Counts every space waiting for a count, from one snapshot of the store; retried until it succeeds.
    async fn count(self: Arc<Self>) {
        let _one = self.census.lock().await;
        loop {
            let waiting: Vec<(SpaceName, Shared)> = self.ledgers.lock().unwrap().iter()
                .filter(|(_, ledger)| matches!(ledger.lock().unwrap().count, Count::Waiting(_)))
                .map(|(space, ledger)| (space.clone(), ledger.clone()))
                .collect();
            if waiting.is_empty() {
                return;
            }
            let mut found: HashMap<&str, Usage> = waiting.iter().map(|(space, _)| (space.as_str(), Usage::default())).collect();
            let scanned = self.reader.scan(CENSUS_PAGE, |parts, record| {
                if let Some(usage) = found.get_mut(parts.space) {
                    usage.add(Growth::created(record.value.len()));
                }
            }).await;
            match scanned {
                Ok((objects, snapshot)) => {
                    for (space, ledger) in &waiting {
                        let mut ledger = ledger.lock().unwrap();
                        if let Count::Waiting(since) = &ledger.count {
                            let mut usage = found[space.as_str()];
                            for (_, growth) in since.iter().filter(|(revision, _)| *revision > snapshot) {
                                usage.add(*growth);
                            }
                            tracing::debug!(space = %space, objects = usage.objects, bytes = usage.bytes, scanned = objects, "space counted");
                            ledger.count = Count::Known(usage);
                        }
                    }
                    self.counted.send_modify(|epoch| *epoch += 1);
                }
                Err(err) => {
                    tracing::warn!(error = %err.message, "counting spaces with limits failed; trying again in 1 s");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }
}

/// What a reservation holds: the ledger it reserved in.
struct Reserved(Shared);

#[async_trait]
impl Limits for Quotas {
    async fn reserve(&self, request: Request<'_>) -> ApiResult<Held> {
        let room = request.growth.room();
        if room == Growth::default() {
            return Ok(Held::default());
        }
        let mut counted = self.counted.subscribe();
        let deadline = tokio::time::Instant::now() + COUNT_WAIT;
        loop {
            let Some(shared) = self.ledger(request.space) else { return Ok(Held::default()) };
            {
                let mut ledger = shared.lock().unwrap();
                if let Count::Known(usage) = ledger.count {
                    if request.refusable {
                        refuse_over(&ledger.limits, usage, ledger.held, room, &request)?;
                    }
                    ledger.held.objects += room.objects;
                    ledger.held.bytes += room.bytes;
                    drop(ledger);
                    return Ok(Held { room, ledger: Some(Arc::new(Reserved(shared)) as Arc<dyn Any + Send + Sync>) });
                }
            }
            match tokio::time::timeout_at(deadline, counted.changed()).await {
                Ok(Ok(())) => continue,
                _ => return Err(ApiError::new(503, "ServiceUnavailable", format!(
                    "the usage of {} is still being counted; try again", request.space))),
            }
        }
    }

    fn settle(&self, request: &Request<'_>, held: &Held, revision: Option<Revision>) {
        if let Some(Reserved(shared)) = held.ledger.as_ref().and_then(|l| l.downcast_ref::<Reserved>()) {
            let mut ledger = shared.lock().unwrap();
            ledger.held.objects -= held.room.objects;
            ledger.held.bytes -= held.room.bytes;
        }
        let (Some(revision), Some(shared)) = (revision, self.ledger(request.space)) else { return };
        let mut ledger = shared.lock().unwrap();
        match &mut ledger.count {
            Count::Known(usage) => usage.add(request.growth),
            Count::Waiting(since) => since.push((revision, request.growth)),
        }
    }
}

/// kube's quota refusal when `room` does not fit beside what is stored and held.
fn refuse_over(limits: &SpaceLimits, usage: Usage, held: Growth, room: Growth, request: &Request<'_>) -> ApiResult<()> {
    let over = |limit: Option<u64>, used: i64, held: i64, wanted: i64| {
        limit.filter(|&limit| wanted > 0 && used + held + wanted > limit as i64).map(|limit| (used, wanted, limit))
    };
    let checks = [
        ("objects", over(limits.objects, usage.objects, held.objects, room.objects)),
        ("bytes", over(limits.bytes, usage.bytes, held.bytes, room.bytes)),
    ];
    let exceeded: Vec<(&str, (i64, i64, u64))> = checks.into_iter().filter_map(|(name, over)| Some((name, over?))).collect();
    if exceeded.is_empty() {
        return Ok(());
    }
    let list = |value: &dyn Fn(&(i64, i64, u64)) -> String| {
        exceeded.iter().map(|(name, over)| format!("{name}={}", value(over))).collect::<Vec<_>>().join(",")
    };
    // kube's quota admission message, the LogicalCluster standing for the quota object.
    let why = format!("exceeded quota: {}, requested: {}, used: {}, limited: {}",
        crate::kinds::logical_cluster::LOGICAL_CLUSTER_NAME,
        list(&|(_, wanted, _)| wanted.to_string()),
        list(&|(used, _, _)| used.to_string()),
        list(&|(_, _, limit)| limit.to_string()));
    Err(ApiError::forbidden_object(&request.resource.group, &request.resource.plural, request.name, &why))
}

impl WriteObserver for Quotas {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[("core.kcp.io", "LogicalCluster")]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, _name: &str, object: Option<&Value>, revision: Revision) {
        if !resource.is("core.kcp.io", "LogicalCluster") {
            return;
        }
        let limits = object.map(SpaceLimits::of).filter(|limits| !limits.none());
        if !self.limits.lock().unwrap().apply(space.clone(), limits, revision) {
            return;
        }
        self.follow(space);
    }

    fn holds(&self, resource: &ResourceInfo) -> Vec<(SpaceName, String)> {
        if !resource.is("core.kcp.io", "LogicalCluster") {
            return Vec::new();
        }
        let name = crate::kinds::logical_cluster::LOGICAL_CLUSTER_NAME.to_owned();
        self.limits.lock().unwrap().keys().map(|space| (space.clone(), name.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::limits::Reservation;
    use crate::registry::ResourceTable;
    use bytes::Bytes;
    use kspaces_storage::{Store, StoreConfig};

    struct Fixture {
        store: Store,
        quotas: Arc<Quotas>,
        table: ResourceTable,
    }

    fn fixture() -> Fixture {
        let store = Store::memory(StoreConfig::default());
        Fixture { quotas: Quotas::new(Reader::new(store.clone())), store, table: ResourceTable::new(crate::kinds::resources()) }
    }

    impl Fixture {
        fn row(&self, group: &str, kind: &str) -> Arc<ResourceInfo> {
            self.table.by_kind(group, kind).cloned().expect("a row")
        }

        /// Stores a ConfigMap of `size` bytes in `space` directly; returns its revision.
        async fn put(&self, space: &SpaceName, name: &str, size: usize) -> Revision {
            let keys = Reader::new(self.store.clone()).keys(&self.row("", "ConfigMap")).expect("keys");
            let key = keys.object(space, Some("default"), name).expect("key");
            self.store.create(&key, Bytes::from(vec![b'x'; size])).await.expect("store").expect("new").revision
        }

        fn limit(&self, space: &SpaceName, objects: u64, revision: u64) {
            let object = json!({"metadata": {"name": "cluster", "annotations": {MAX_OBJECTS: objects.to_string()}}});
            self.quotas.written(&self.row("core.kcp.io", "LogicalCluster"), space, "cluster", Some(&object), Revision(revision));
        }

        async fn counted(&self, space: &SpaceName) -> Usage {
            for _ in 0..1000 {
                if let Some((_, Some(usage))) = self.quotas.usage(space) {
                    return usage;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            panic!("{space} was never counted");
        }
    }

    fn space(name: &str) -> SpaceName {
        SpaceName::new(name).expect("a space name")
    }

    #[test]
    fn limits_are_plain_counts() {
        for (value, parsed) in [("0", Some(0)), ("10", Some(10)), ("18446744073709551615", Some(u64::MAX)), ("01", None), ("-1", None),
            ("", None), ("1e3", None), ("1Ki", None), (" 1", None), ("18446744073709551616", None)] {
            assert_eq!(parse_limit(value), parsed, "{value:?}");
        }
    }

    #[tokio::test]
    async fn a_count_takes_the_snapshot_and_only_newer_writes_on_top() {
        let f = fixture();
        let (a, b) = (space("a"), space("b"));
        f.put(&a, "one", 100).await;
        f.put(&b, "elsewhere", 5).await;
        f.limit(&a, 1000, 1);
        // A write durable before the census reads its snapshot, settled while the ledger waits: the census sees it
        // in the store, so its settle must not count it again.
        let configmaps = f.row("", "ConfigMap");
        let revision = f.put(&a, "two", 50).await;
        let request = Request { space: &a, resource: &configmaps, name: "two", growth: Growth::created(50), refusable: true };
        f.quotas.settle(&request, &Held::default(), Some(revision));
        assert_eq!(f.counted(&a).await, Usage { objects: 2, bytes: 150 }, "each object once, only space a's");
        // From now on every settled write counts, at once.
        let revision = f.put(&a, "three", 7).await;
        let request = Request { space: &a, resource: &configmaps, name: "three", growth: Growth::created(7), refusable: true };
        let reservation = Reservation::take(&*f.quotas, request).await.expect("room");
        reservation.commit(revision);
        assert_eq!(f.quotas.usage(&a).and_then(|(_, u)| u), Some(Usage { objects: 3, bytes: 157 }));
        // A space without limits has no ledger and costs nothing.
        assert!(f.quotas.usage(&b).is_none());
    }

    #[tokio::test]
    async fn reservations_in_flight_never_pass_the_limit_together() {
        let f = fixture();
        let a = space("a");
        f.limit(&a, 10, 1);
        f.counted(&a).await;
        let configmaps = f.row("", "ConfigMap");
        let mut held = Vec::new();
        let mut refused = Vec::new();
        for i in 0..64 {
            let request = Request { space: &a, resource: &configmaps, name: "x", growth: Growth::created(10), refusable: true };
            match Reservation::take(&*f.quotas, request).await {
                Ok(reservation) => held.push(reservation),
                Err(err) => refused.push((i, err)),
            }
        }
        assert_eq!(held.len(), 10, "ten held at once, none committed yet");
        let (_, err) = &refused[0];
        assert_eq!((err.code, err.reason), (403, "Forbidden"));
        assert_eq!(err.message, "configmaps \"x\" is forbidden: exceeded quota: cluster, requested: objects=1, used: objects=0, limited: objects=10");
        // A write that stored nothing gives its room back; a committed one keeps it.
        held.pop();
        for (i, reservation) in held.into_iter().enumerate() {
            reservation.commit(Revision(100 + i as u64));
        }
        let request = Request { space: &a, resource: &configmaps, name: "x", growth: Growth::created(10), refusable: true };
        Reservation::take(&*f.quotas, request).await.expect("the released room").commit(Revision(200));
        let request = Request { space: &a, resource: &configmaps, name: "x", growth: Growth::created(10), refusable: true };
        assert!(Reservation::take(&*f.quotas, request).await.is_err(), "full again");
        // Writes that are never refused (a deletion's mark) pass, and removals make room.
        let request = Request { space: &a, resource: &configmaps, name: "x", growth: Growth::created(10), refusable: false };
        Reservation::take(&*f.quotas, request).await.expect("not refusable").commit(Revision(201));
        assert_eq!(f.quotas.usage(&a).and_then(|(_, u)| u).map(|u| u.objects), Some(11));
        for revision in [202, 203] {
            let request = Request { space: &a, resource: &configmaps, name: "x", growth: Growth::removed(10), refusable: true };
            Reservation::take(&*f.quotas, request).await.expect("a removal").commit(Revision(revision));
        }
        let request = Request { space: &a, resource: &configmaps, name: "x", growth: Growth::created(10), refusable: true };
        assert!(Reservation::take(&*f.quotas, request).await.is_ok(), "room after two removals");
    }

    #[tokio::test]
    async fn lifting_the_limit_drops_the_ledger_and_older_news_never_wins() {
        let f = fixture();
        let a = space("a");
        let row = f.row("core.kcp.io", "LogicalCluster");
        f.limit(&a, 5, 10);
        f.counted(&a).await;
        f.limit(&a, 1, 9);
        assert_eq!(f.quotas.usage(&a).map(|(l, _)| l.objects), Some(Some(5)), "an older LogicalCluster write changes nothing");
        f.quotas.written(&row, &a, "cluster", Some(&json!({"metadata": {"name": "cluster"}})), Revision(11));
        assert!(f.quotas.usage(&a).is_none());
        let mut shown = json!({"status": {"phase": "Ready", "quota": {"hard": {"objects": "5"}}}});
        f.quotas.show(&a, &mut shown);
        assert_eq!(shown, json!({"status": {"phase": "Ready"}}));
        f.limit(&a, 3, 12);
        f.counted(&a).await;
        f.quotas.show(&a, &mut shown);
        assert_eq!(shown["status"]["quota"], json!({"hard": {"objects": "3"}, "used": {"objects": "0"}}));
    }
}
