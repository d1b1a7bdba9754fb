//! What a space and its namespaces may store, enforced inside every write (`registry::limits`):
//! - per-space limits (decisions.md, "Tenant fairness and quotas"): a system user sets, on a space's LogicalCluster
//!   `cluster`, kcp's annotation `core.kcp.io/max-total-objects` and kspaces' `quota.kspaces.io/max-bytes` (stored
//!   bytes), shown in the LogicalCluster's `status.quota`;
//! - kube's `ResourceQuota` in a namespace (`resource_quota.rs`): object counts, pods' compute, claims' storage,
//!   shown in the quota's `status.hard` and `status.used`.
//!
//! Every write reserves its growth in each ledger that concerns it before it reaches the store: a create or a
//! client's update with no room left is refused with kube's 403 `exceeded quota`, and the reservation is settled
//! once the write is durable or known not to be. Usage is counted exactly: a ledger holds what is stored plus what
//! writes in flight have reserved, so concurrent creates can never together pass a limit (kube's ResourceQuota
//! admission instead races on the quota's status and can overshoot until its controller recounts).
//!
//! Only limited spaces and namespaces with quotas have ledgers. A new ledger is counted from one snapshot of the
//! store (`count`), and every write settled meanwhile with a newer revision is added on top, so nothing is counted
//! twice or missed; writes it concerns wait for the count. Usage is shown on read, never stored.
//!
//! With replicas sharing etcd, a replica's ledgers see only its own writes: a limited space's usage is then kept in
//! the store instead (`shared.rs`), and ResourceQuotas stay exact per replica.

pub mod resource_quota;
pub mod shared;

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use kspaces_storage::{Clusters, Conflict, Revision, SpaceName, WriteOp, Written};
use serde_json::{json, Value};

use crate::registry::limits::{Growth, Held, Limits, Request};
use crate::registry::observe::{RevisionMap, WriteObserver};
use crate::registry::stored::decode;
use crate::registry::{Reader, ResourceInfo};
use crate::status::{ApiError, ApiResult};
use resource_quota::{add, difference, needs_object, quantity, Amounts, QuotaSpec};
use shared::Tallies;

/// kcp's limit on the number of objects a logical cluster stores.
pub const MAX_OBJECTS: &str = "core.kcp.io/max-total-objects";
/// kspaces' limit on the bytes a space stores (each object's stored JSON).
pub const MAX_BYTES: &str = "quota.kspaces.io/max-bytes";
/// The annotations that carry limits: only system users may set or change them.
pub const LIMIT_ANNOTATIONS: [&str; 2] = [MAX_OBJECTS, MAX_BYTES];

/// How many records the census reads at a time.
const CENSUS_PAGE: usize = 1000;
/// How long a write waits for its ledgers to be counted before it is answered 503.
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

/// Where a ledger's count stands: not counted yet (the changes settled since the ledger was made, each with its
/// revision, to add to the census' snapshot those newer than it), or known.
#[derive(Debug)]
enum Count<T, C = T> {
    Waiting(Vec<(Revision, C)>),
    Known(T),
}

/// One limited space's ledger.
#[derive(Debug)]
struct Ledger {
    limits: SpaceLimits,
    count: Count<Usage, Growth>,
    /// What writes in flight have reserved.
    held: Growth,
}

type Shared = Arc<Mutex<Ledger>>;

/// One ResourceQuota's ledger.
#[derive(Debug)]
struct QuotaLedger {
    spec: QuotaSpec,
    count: Count<Amounts>,
    held: Amounts,
}

type SharedQuota = Arc<Mutex<QuotaLedger>>;

/// A namespace of a space.
type NamespaceKey = (SpaceName, String);

/// Every ledger, kept from the LogicalClusters and ResourceQuotas (a primed write observer) and from every write
/// (`Limits`).
pub struct Quotas {
    /// Itself, for the census tasks it starts.
    me: Weak<Quotas>,
    reader: Reader,
    /// Each space's limits, as the newest LogicalCluster write seen set them.
    limits: Mutex<RevisionMap<SpaceName, SpaceLimits, foldhash::fast::RandomState>>,
    ledgers: Mutex<HashMap<SpaceName, Shared, foldhash::fast::RandomState>>,
    /// Every ResourceQuota's spec, by (space, namespace, name).
    specs: Mutex<RevisionMap<(SpaceName, String, String), QuotaSpec, foldhash::fast::RandomState>>,
    /// The ledgers of each namespace's quotas.
    quotas: Mutex<HashMap<NamespaceKey, Vec<SharedQuota>, foldhash::fast::RandomState>>,
    /// Bumped whenever a census ends: writes waiting for a count look again.
    counted: tokio::sync::watch::Sender<u64>,
    /// One census at a time; each counts every ledger waiting when it starts.
    census: tokio::sync::Mutex<()>,
    /// On a store replicas share, spaces' limits are kept in tallies beside their objects instead of ledgers.
    tallies: Option<Arc<Tallies>>,
}

/// What one write reserved, in each ledger: released when it settles.
#[derive(Default)]
struct Holding {
    space: Option<(Shared, Growth)>,
    /// Each quota's ledger, the write's change in its amounts, and what of it was held.
    quotas: Vec<(SharedQuota, Amounts, Amounts)>,
}

impl Holding {
    fn release(&self) {
        if let Some((ledger, room)) = &self.space {
            let mut ledger = ledger.lock().unwrap();
            ledger.held.objects -= room.objects;
            ledger.held.bytes -= room.bytes;
        }
        for (ledger, _, room) in &self.quotas {
            add(&mut ledger.lock().unwrap().held, room, -1);
        }
    }
}

/// Why a reservation could not be taken now.
enum Blocked {
    Refused(ApiError),
    /// A ledger is not counted yet.
    Waiting,
}

impl Quotas {
    pub fn new(reader: Reader) -> Arc<Quotas> {
        Arc::new_cyclic(|me| Quotas {
            me: me.clone(),
            limits: Mutex::default(),
            ledgers: Mutex::default(),
            specs: Mutex::default(),
            quotas: Mutex::default(),
            counted: tokio::sync::watch::channel(0).0,
            census: tokio::sync::Mutex::new(()),
            tallies: reader.shared().then(|| Tallies::new(reader.clusters().clone())),
            reader,
        })
    }

    fn ledger(&self, space: &SpaceName) -> Option<Shared> {
        self.ledgers.lock().unwrap().get(space).cloned()
    }

    fn namespace_quotas(&self, space: &SpaceName, namespace: &str) -> Vec<SharedQuota> {
        let quotas = self.quotas.lock().unwrap();
        if quotas.is_empty() {
            return Vec::new();
        }
        quotas.get(&(space.clone(), namespace.to_owned())).cloned().unwrap_or_default()
    }

    /// A space's limits and, once counted, its usage (what `status.quota` shows).
    pub fn usage(&self, space: &SpaceName) -> Option<(SpaceLimits, Option<Usage>)> {
        if let Some(tallies) = &self.tallies {
            let limits = self.limits.lock().unwrap().get(space).copied()?;
            return Some(tallies.usage(space).unwrap_or((limits, None)));
        }
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

    /// A ResourceQuota's `status` (its `hard`, and its `used` once counted), computed now.
    pub fn quota_status(&self, space: &SpaceName, namespace: &str, quota: &Value) -> Value {
        let name = quota.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        let ledger = self.namespace_quotas(space, namespace).into_iter().find(|l| l.lock().unwrap().spec.name == name);
        let spec = QuotaSpec::of(quota);
        match ledger {
            Some(ledger) => {
                let ledger = ledger.lock().unwrap();
                let used = match &ledger.count {
                    Count::Known(used) if ledger.spec == spec => Some(used),
                    _ => None,
                };
                resource_quota::status(&spec, used)
            }
            None => resource_quota::status(&spec, None),
        }
    }

    fn start_census(&self) {
        if let (Ok(runtime), Some(me)) = (tokio::runtime::Handle::try_current(), self.me.upgrade()) {
            runtime.spawn(me.count());
        }
    }

    /// Brings the ledgers in line with the limits now known for `space`: a space that gained limits gets a ledger
    /// (counted by a census), one that lost them loses it.
    fn follow(&self, space: &SpaceName) {
        if self.tallies.is_some() {
            self.settle_tally(space);
            return;
        }
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
                self.start_census();
            }
        }
    }

    /// Brings the space's tally in line with the limits its LogicalCluster sets, in the background.
    fn settle_tally(&self, space: &SpaceName) {
        let (Some(tallies), Some(me)) = (&self.tallies, self.me.upgrade()) else { return };
        let name = space.clone();
        tallies.clone().settle_with(space.clone(), move || me.wanted(&name));
    }

    /// The limits this replica's LogicalClusters set for `space`, with the revision of the write that set them.
    fn wanted(&self, space: &SpaceName) -> (Option<SpaceLimits>, Revision) {
        match self.limits.lock().unwrap().state(space) {
            Some((limits, revision)) => (limits.copied().filter(|l| !l.none()), revision),
            None => (None, Revision::ZERO),
        }
    }

    /// Brings a namespace's quota ledgers in line with its ResourceQuotas: a new or changed quota gets a new
    /// ledger (counted by a census), a deleted one loses it.
    fn follow_quota(&self, space: &SpaceName, namespace: &str, name: &str) {
        let spec = self.specs.lock().unwrap().get(&(space.clone(), namespace.to_owned(), name.to_owned())).cloned();
        let key = (space.clone(), namespace.to_owned());
        let mut quotas = self.quotas.lock().unwrap();
        let list = quotas.entry(key.clone()).or_default();
        let at = list.iter().position(|l| l.lock().unwrap().spec.name == name);
        let unchanged = at.is_some_and(|at| Some(&list[at].lock().unwrap().spec) == spec.as_ref());
        if unchanged {
            return;
        }
        if let Some(at) = at {
            list.remove(at);
        }
        let counting = spec.is_some();
        if let Some(spec) = spec {
            list.push(Arc::new(Mutex::new(QuotaLedger { spec, count: Count::Waiting(Vec::new()), held: Amounts::new() })));
        }
        if list.is_empty() {
            quotas.remove(&key);
        }
        drop(quotas);
        if counting {
            self.start_census();
        }
    }

    /// Counts every ledger waiting for a count, from one snapshot of the store; retried until it succeeds.
    async fn count(self: Arc<Self>) {
        let _one = self.census.lock().await;
        loop {
            let waiting: Vec<(SpaceName, Shared)> = self.ledgers.lock().unwrap().iter()
                .filter(|(_, ledger)| matches!(ledger.lock().unwrap().count, Count::Waiting(_)))
                .map(|(space, ledger)| (space.clone(), ledger.clone()))
                .collect();
            let waiting_quotas: HashMap<(String, String), Vec<(SharedQuota, QuotaSpec)>> = self.quotas.lock().unwrap().iter()
                .filter_map(|((space, namespace), list)| {
                    let waiting: Vec<_> = list.iter().filter_map(|l| {
                        let ledger = l.lock().unwrap();
                        matches!(ledger.count, Count::Waiting(_)).then(|| (l.clone(), ledger.spec.clone()))
                    }).collect();
                    (!waiting.is_empty()).then(|| ((space.as_str().to_owned(), namespace.clone()), waiting))
                })
                .collect();
            if waiting.is_empty() && waiting_quotas.is_empty() {
                return;
            }
            let mut found: HashMap<&str, Usage> = waiting.iter().map(|(space, _)| (space.as_str(), Usage::default())).collect();
            let mut found_quotas: HashMap<usize, Amounts> = HashMap::new();
            let mut key = (String::new(), String::new());
            let scanned = self.reader.scan(CENSUS_PAGE, |parts, record| {
                if let Some(usage) = found.get_mut(parts.space) {
                    usage.add(Growth::created(record.value.len()));
                }
                let Some(namespace) = parts.namespace.filter(|_| !waiting_quotas.is_empty()) else { return };
                key.0.clear();
                key.0.push_str(parts.space);
                key.1.clear();
                key.1.push_str(namespace);
                let Some(list) = waiting_quotas.get(&key) else { return };
                let object = match needs_object(parts.group, parts.resource) {
                    true => decode(record).unwrap_or(Value::Null),
                    false => Value::Null,
                };
                for (ledger, spec) in list {
                    // What was stored before a quota existed is counted whether or not it would be admitted now.
                    let used = spec.usage(parts.group, parts.resource, &object).unwrap_or_default();
                    add(found_quotas.entry(Arc::as_ptr(ledger) as usize).or_default(), &used, 1);
                }
            }).await;
            match scanned {
                Ok((objects, snapshot)) => {
                    for (space, ledger) in &waiting {
                        let mut ledger = ledger.lock().unwrap();
                        if let Count::Waiting(since) = &ledger.count {
                            let mut usage = found[space.as_str()];
                            // The space's writes are on its storage cluster, and so is its revision in the snapshot.
                            let snapshot = self.reader.revision_in(&snapshot, space);
                            for (_, growth) in since.iter().filter(|(revision, _)| *revision > snapshot) {
                                usage.add(*growth);
                            }
                            tracing::debug!(space = %space, objects = usage.objects, bytes = usage.bytes, scanned = objects, "space counted");
                            ledger.count = Count::Known(usage);
                        }
                    }
                    for ((space, _), list) in &waiting_quotas {
                        let snapshot = SpaceName::new(space.as_str()).map(|space| self.reader.revision_in(&snapshot, &space)).unwrap_or_default();
                        for (shared, _) in list {
                            let mut ledger = shared.lock().unwrap();
                            if let Count::Waiting(since) = &ledger.count {
                                let mut used = found_quotas.remove(&(Arc::as_ptr(shared) as usize)).unwrap_or_default();
                                for (_, change) in since.iter().filter(|(revision, _)| *revision > snapshot) {
                                    add(&mut used, change, 1);
                                }
                                ledger.count = Count::Known(used);
                            }
                        }
                    }
                    self.counted.send_modify(|epoch| *epoch += 1);
                }
                Err(err) => {
                    tracing::warn!(error = %err.message, "counting spaces and namespaces with limits failed; trying again in 1 s");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    /// Tries to reserve `request`'s room in every ledger it concerns, all or none.
    fn try_reserve(&self, request: &Request<'_>, holding: &mut Holding) -> Result<(), Blocked> {
        let room = request.growth.room();
        if room != Growth::default() {
            if let Some(shared) = self.ledger(request.space) {
                let mut ledger = shared.lock().unwrap();
                let usage = match ledger.count {
                    Count::Known(usage) => usage,
                    // A write that is never refused need not wait for the count: it is settled into it.
                    Count::Waiting(_) if !request.refusable => return self.try_reserve_quotas(request, holding),
                    Count::Waiting(_) => return Err(Blocked::Waiting),
                };
                if request.refusable {
                    refuse_over(&ledger.limits, usage, ledger.held, room, request).map_err(Blocked::Refused)?;
                }
                ledger.held.objects += room.objects;
                ledger.held.bytes += room.bytes;
                drop(ledger);
                holding.space = Some((shared, room));
            }
        }
        self.try_reserve_quotas(request, holding)
    }

    /// Tries to reserve `request`'s room in its namespace's quotas.
    fn try_reserve_quotas(&self, request: &Request<'_>, holding: &mut Holding) -> Result<(), Blocked> {
        let Some(namespace) = request.namespace else { return Ok(()) };
        let (group, plural) = (request.resource.group.as_str(), request.resource.plural.as_str());
        for shared in self.namespace_quotas(request.space, namespace) {
            let mut ledger = shared.lock().unwrap();
            if !ledger.spec.concerns(group, plural) {
                continue;
            }
            let new = match request.object.map(|o| ledger.spec.usage(group, plural, o)) {
                Some(Err(missing)) if request.refusable && request.old.is_none() => {
                    return Err(Blocked::Refused(ApiError::forbidden_object(group, plural, request.name, &format!(
                        "failed quota: {}: must specify {}", ledger.spec.name, missing.join(",")))));
                }
                Some(usage) => usage.unwrap_or_default(),
                None => Amounts::new(),
            };
            let old = request.old.map(|o| ledger.spec.usage(group, plural, o).unwrap_or_default()).unwrap_or_default();
            let change = difference(&new, &old);
            let room: Amounts = change.iter().filter(|(_, a)| **a > 0).map(|(n, a)| (n.clone(), *a)).collect();
            let used = match &ledger.count {
                Count::Known(used) => used,
                // Nothing to find room for, or a write never refused: settled into the count, no need to wait.
                Count::Waiting(_) if room.is_empty() || !request.refusable => {
                    drop(ledger);
                    holding.quotas.push((shared, change, Amounts::new()));
                    continue;
                }
                Count::Waiting(_) => return Err(Blocked::Waiting),
            };
            if request.refusable {
                let exceeded: Vec<(&String, i128, i128, i128)> = room.iter().filter_map(|(name, wanted)| {
                    let hard = *ledger.spec.hard.get(name)?;
                    let now = used.get(name).copied().unwrap_or(0);
                    let held = ledger.held.get(name).copied().unwrap_or(0);
                    // `used` counts what writes in flight hold too: the amount the limit is measured against.
                    (now + held + wanted > hard).then_some((name, *wanted, now + held, hard))
                }).collect();
                if !exceeded.is_empty() {
                    let list = |pick: fn(&(&String, i128, i128, i128)) -> i128| {
                        exceeded.iter().map(|e| format!("{}={}", e.0, quantity(pick(e)))).collect::<Vec<_>>().join(",")
                    };
                    let why = format!("exceeded quota: {}, requested: {}, used: {}, limited: {}", ledger.spec.name,
                        list(|e| e.1), list(|e| e.2), list(|e| e.3));
                    return Err(Blocked::Refused(ApiError::forbidden_object(group, plural, request.name, &why)));
                }
            }
            add(&mut ledger.held, &room, 1);
            drop(ledger);
            holding.quotas.push((shared, change, room));
        }
        Ok(())
    }
}

#[async_trait]
impl Limits for Quotas {
    async fn reserve(&self, request: Request<'_>) -> ApiResult<Held> {
        if let Some(tallies) = &self.tallies {
            tallies.check(&request).await?;
        }
        let mut counted = self.counted.subscribe();
        let deadline = tokio::time::Instant::now() + COUNT_WAIT;
        loop {
            let mut holding = Holding::default();
            match self.try_reserve(&request, &mut holding) {
                Ok(()) if holding.space.is_none() && holding.quotas.is_empty() => return Ok(Held::default()),
                Ok(()) => return Ok(Held { ledger: Some(Arc::new(holding) as Arc<dyn Any + Send + Sync>) }),
                Err(Blocked::Refused(err)) => {
                    holding.release();
                    return Err(err);
                }
                Err(Blocked::Waiting) => holding.release(),
            }
            match tokio::time::timeout_at(deadline, counted.changed()).await {
                Ok(Ok(())) => continue,
                _ => return Err(ApiError::new(503, "ServiceUnavailable", format!(
                    "the usage of {} is still being counted; try again", request.space))),
            }
        }
    }

    async fn write(&self, store: &Clusters, request: &Request<'_>, op: WriteOp) -> ApiResult<Result<Written, Conflict>> {
        let Some(tallies) = &self.tallies else { return Ok(store.write(op).await?) };
        let limited = || self.limits.lock().unwrap().get(request.space).is_some();
        let settle = || self.settle_tally(request.space);
        tallies.write(request, op, &limited, &settle).await
    }

    /// Releases what the write held and, once durable, adds its change to the count, in one step per ledger:
    /// between the two no other write may see the room free and the change not yet counted.
    fn settle(&self, request: &Request<'_>, held: &Held, revision: Option<Revision>) {
        let empty = Holding::default();
        let holding = held.ledger.as_ref().and_then(|l| l.downcast_ref::<Holding>()).unwrap_or(&empty);
        let Some(revision) = revision else {
            holding.release();
            return;
        };
        let current = self.ledger(request.space);
        if let Some((reserved_in, room)) = &holding.space {
            if !current.as_ref().is_some_and(|c| Arc::ptr_eq(c, reserved_in)) {
                let mut ledger = reserved_in.lock().unwrap();
                ledger.held.objects -= room.objects;
                ledger.held.bytes -= room.bytes;
            }
        }
        if let Some(shared) = current {
            let mut ledger = shared.lock().unwrap();
            if let Some((_, room)) = holding.space.as_ref().filter(|(l, _)| Arc::ptr_eq(l, &shared)) {
                ledger.held.objects -= room.objects;
                ledger.held.bytes -= room.bytes;
            }
            match &mut ledger.count {
                Count::Known(usage) => usage.add(request.growth),
                Count::Waiting(since) => since.push((revision, request.growth)),
            }
        }
        let current = match request.namespace {
            Some(namespace) => self.namespace_quotas(request.space, namespace),
            None => Vec::new(),
        };
        // Ledgers replaced meanwhile (a quota changed) only give back what was held in them.
        for (reserved_in, _, room) in holding.quotas.iter().filter(|(l, _, _)| !current.iter().any(|c| Arc::ptr_eq(c, l))) {
            add(&mut reserved_in.lock().unwrap().held, room, -1);
        }
        let (group, plural) = (request.resource.group.as_str(), request.resource.plural.as_str());
        for shared in current {
            let mut ledger = shared.lock().unwrap();
            let reserved = holding.quotas.iter().find(|(l, _, _)| Arc::ptr_eq(l, &shared));
            if let Some((_, _, room)) = reserved {
                add(&mut ledger.held, room, -1);
            }
            if !ledger.spec.concerns(group, plural) {
                continue;
            }
            // The change reserved in this very ledger, else evaluated again (a ledger made meanwhile).
            let change = match reserved {
                Some((_, change, _)) => change.clone(),
                None => {
                    let usage = |o: Option<&Value>| o.map(|o| ledger.spec.usage(group, plural, o).unwrap_or_default()).unwrap_or_default();
                    difference(&usage(request.object), &usage(request.old))
                }
            };
            match &mut ledger.count {
                Count::Known(used) => add(used, &change, 1),
                Count::Waiting(since) => since.push((revision, change)),
            }
        }
    }
}

/// kube's quota refusal when `room` does not fit beside what is stored and held.
fn refuse_over(limits: &SpaceLimits, usage: Usage, held: Growth, room: Growth, request: &Request<'_>) -> ApiResult<()> {
    let over = |limit: Option<u64>, used: i64, held: i64, wanted: i64| {
        limit.filter(|&limit| wanted > 0 && used + held + wanted > limit as i64).map(|limit| (used + held, wanted, limit))
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
        crate::apis::kcp::LOGICAL_CLUSTER_NAME,
        list(&|(_, wanted, _)| wanted.to_string()),
        list(&|(used, _, _)| used.to_string()),
        list(&|(_, _, limit)| limit.to_string()));
    Err(ApiError::forbidden_object(&request.resource.group, &request.resource.plural, request.name, &why))
}

impl WriteObserver for Quotas {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[("core.kcp.io", "LogicalCluster"), ("", "ResourceQuota")]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        if resource.is("core.kcp.io", "LogicalCluster") {
            let limits = object.map(SpaceLimits::of).filter(|limits| !limits.none());
            let changed = {
                let mut known = self.limits.lock().unwrap();
                let before = known.get(space).copied();
                known.apply(space.clone(), limits, revision) && before != limits
            };
            // Most LogicalCluster writes (phases, other annotations) leave the limits as they were.
            if changed {
                self.follow(space);
            }
        } else if resource.is("", "ResourceQuota") {
            let namespace = object.and_then(|o| o.pointer("/metadata/namespace")).and_then(Value::as_str);
            let Some(namespace) = namespace.map(str::to_owned).or_else(|| self.namespace_of_quota(space, name)) else { return };
            let key = (space.clone(), namespace.clone(), name.to_owned());
            if self.specs.lock().unwrap().apply(key, object.map(QuotaSpec::of), revision) {
                self.follow_quota(space, &namespace, name);
            }
        }
    }

    fn deleted(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, last: &Value, revision: Revision) {
        if resource.is("", "ResourceQuota") {
            if let Some(namespace) = last.pointer("/metadata/namespace").and_then(Value::as_str) {
                let key = (space.clone(), namespace.to_owned(), name.to_owned());
                if self.specs.lock().unwrap().apply(key, None, revision) {
                    self.follow_quota(space, namespace, name);
                }
            }
            return;
        }
        self.written(resource, space, name, None, revision);
    }

    fn holds(&self, resource: &ResourceInfo) -> Vec<(SpaceName, String)> {
        if resource.is("core.kcp.io", "LogicalCluster") {
            let name = crate::apis::kcp::LOGICAL_CLUSTER_NAME.to_owned();
            return self.limits.lock().unwrap().keys().map(|space| (space.clone(), name.clone())).collect();
        }
        if resource.is("", "ResourceQuota") {
            return self.specs.lock().unwrap().keys().map(|(space, _, name)| (space.clone(), name.clone())).collect();
        }
        Vec::new()
    }
}

impl Quotas {
    /// The namespace of a quota known by name only (a removal told without the object): the one namespace of
    /// `space` holding a quota of that name, if there is exactly one.
    fn namespace_of_quota(&self, space: &SpaceName, name: &str) -> Option<String> {
        let specs = self.specs.lock().unwrap();
        let mut found = specs.keys().filter(|(s, _, n)| s == space && n == name).map(|(_, namespace, _)| namespace.clone());
        let first = found.next()?;
        found.next().is_none().then_some(first)
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

    /// A write in space `space` of an object in no namespace, growing it by `growth`.
    fn space_write<'a>(space: &'a SpaceName, resource: &'a ResourceInfo, name: &'a str, growth: Growth, refusable: bool) -> Request<'a> {
        Request { space, namespace: None, object: None, old: None, resource, name, growth, refusable }
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
        let request = space_write(&a, &configmaps, "two", Growth::created(50), true);
        f.quotas.settle(&request, &Held::default(), Some(revision));
        assert_eq!(f.counted(&a).await, Usage { objects: 2, bytes: 150 }, "each object once, only space a's");
        // From now on every settled write counts, at once.
        let revision = f.put(&a, "three", 7).await;
        let request = space_write(&a, &configmaps, "three", Growth::created(7), true);
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
            let request = space_write(&a, &configmaps, "x", Growth::created(10), true);
            match Reservation::take(&*f.quotas, request).await {
                Ok(reservation) => held.push(reservation),
                Err(err) => refused.push((i, err)),
            }
        }
        assert_eq!(held.len(), 10, "ten held at once, none committed yet");
        let (_, err) = &refused[0];
        assert_eq!((err.code, err.reason), (403, "Forbidden"));
        assert_eq!(err.message, "configmaps \"x\" is forbidden: exceeded quota: cluster, requested: objects=1, used: objects=10, limited: objects=10");
        // A write that stored nothing gives its room back; a committed one keeps it.
        held.pop();
        for (i, reservation) in held.into_iter().enumerate() {
            reservation.commit(Revision(100 + i as u64));
        }
        let request = space_write(&a, &configmaps, "x", Growth::created(10), true);
        Reservation::take(&*f.quotas, request).await.expect("the released room").commit(Revision(200));
        let request = space_write(&a, &configmaps, "x", Growth::created(10), true);
        assert!(Reservation::take(&*f.quotas, request).await.is_err(), "full again");
        // Writes that are never refused (a deletion's mark) pass, and removals make room.
        let request = space_write(&a, &configmaps, "x", Growth::created(10), false);
        Reservation::take(&*f.quotas, request).await.expect("not refusable").commit(Revision(201));
        assert_eq!(f.quotas.usage(&a).and_then(|(_, u)| u).map(|u| u.objects), Some(11));
        for revision in [202, 203] {
            let request = space_write(&a, &configmaps, "x", Growth::removed(10), true);
            Reservation::take(&*f.quotas, request).await.expect("a removal").commit(Revision(revision));
        }
        let request = space_write(&a, &configmaps, "x", Growth::created(10), true);
        assert!(Reservation::take(&*f.quotas, request).await.is_ok(), "room after two removals");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn racing_writers_commit_exactly_the_limit() {
        let f = fixture();
        let a = space("a");
        f.limit(&a, 25, 1);
        f.counted(&a).await;
        let configmaps = f.row("", "ConfigMap");
        let quotas = f.quotas.clone();
        let tasks: Vec<_> = (0..64u64).map(|task| {
            let (quotas, configmaps, a) = (quotas.clone(), configmaps.clone(), a.clone());
            tokio::spawn(async move {
                let mut stored = 0;
                for round in 0..20u64 {
                    let request = space_write(&a, &configmaps, "x", Growth::created(1), true);
                    let Ok(reservation) = Reservation::take(&*quotas, request).await else { continue };
                    tokio::task::yield_now().await;
                    if round % 3 == 0 {
                        drop(reservation); // a write that failed
                    } else {
                        reservation.commit(Revision(1000 + task * 100 + round));
                        stored += 1;
                    }
                }
                stored
            })
        }).collect();
        let mut stored = 0;
        for task in tasks {
            stored += task.await.expect("a task");
        }
        assert_eq!(stored, 25, "exactly the limit was committed");
        assert_eq!(f.quotas.usage(&a).and_then(|(_, u)| u).map(|u| u.objects), Some(25));
        let ledger = f.quotas.ledger(&a).expect("a ledger");
        assert_eq!(ledger.lock().unwrap().held, Growth::default(), "nothing left held");
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
