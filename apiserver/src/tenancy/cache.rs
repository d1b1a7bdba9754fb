//! `TenantCache`: every tenant's phase and labels, in memory, for resolving paths and system CRDs' applicable
//! range without a storage read. Primed with every Tenant at startup and told of every Tenant write by the
//! registry (`WriteObserver`); a `RevisionMap`, so news observed out of order never moves a tenant backwards.

use std::collections::BTreeSet;
use std::sync::RwLock;

use kspaces_storage::{ClusterId, Revision, SpaceName};
use serde_json::Value;

use crate::registry::observe::{RevisionMap, WriteObserver};
use crate::registry::{is_deleting, ResourceInfo};

/// A tenant's lifecycle phase (`status.phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Active,
    Terminating,
}

impl Phase {
    /// The phase of a stored Tenant: Terminating once it has a deletion timestamp.
    pub fn of(object: &Value) -> Phase {
        if is_deleting(object) || object.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating") {
            Phase::Terminating
        } else {
            Phase::Active
        }
    }
}

/// A Tenant's `spec.storageClusterId`, if it names one (an integer 0-63 as a string).
pub fn storage_cluster_id(object: &Value) -> Option<ClusterId> {
    object.pointer("/spec/storageClusterId").and_then(Value::as_str).and_then(|id| id.parse::<u8>().ok()).and_then(ClusterId::new)
}

/// A stored Tenant's storage cluster (validated when it was created; `0` when absent).
fn storage_cluster(object: &Value) -> ClusterId {
    storage_cluster_id(object).unwrap_or(ClusterId::DEFAULT)
}

/// What the cache keeps of one tenant.
#[derive(Debug)]
struct Tenant {
    phase: Phase,
    /// `spec.storageClusterId`: where the tenant's spaces are stored.
    cluster: ClusterId,
    /// `{"metadata": {"labels": ...}}` when the tenant has labels (what `LabelSelector::matches` reads).
    labels: Option<Value>,
}

#[derive(Debug, Default)]
struct Inner {
    tenants: RevisionMap<Box<str>, Tenant>,
    terminating: BTreeSet<Box<str>>,
}

/// The phase and labels of every tenant, by name.
#[derive(Debug, Default)]
pub struct TenantCache {
    inner: RwLock<Inner>,
}

impl TenantCache {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The phase of tenant `name`, or `None` if there is no such tenant.
    pub fn phase(&self, name: &str) -> Option<Phase> {
        self.read().tenants.get(name).map(|t| t.phase)
    }

    /// The storage cluster of tenant `name`'s spaces, or `None` if there is no such tenant.
    pub fn storage_cluster(&self, name: &str) -> Option<ClusterId> {
        self.read().tenants.get(name).map(|t| t.cluster)
    }

    /// Calls `f` with tenant `name`'s labels, as an object with `metadata.labels` (`None`: no labels, or no
    /// such tenant).
    pub fn with_labels<R>(&self, name: &str, f: impl FnOnce(Option<&Value>) -> R) -> R {
        f(self.read().tenants.get(name).and_then(|t| t.labels.as_ref()))
    }

    /// Records tenant `name` as of `revision` from its stored object (`None` = deleted); older news than what
    /// is known is ignored.
    pub fn apply(&self, name: &str, object: Option<&Value>, revision: Revision) {
        let tenant = object.map(|object| Tenant {
            phase: Phase::of(object),
            cluster: storage_cluster(object),
            labels: object
                .pointer("/metadata/labels")
                .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
                .map(|labels| serde_json::json!({"metadata": {"labels": labels}})),
        });
        let terminating = tenant.as_ref().is_some_and(|t| t.phase == Phase::Terminating);
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if !inner.tenants.apply(name.into(), tenant, revision) {
            return;
        }
        if terminating {
            inner.terminating.insert(name.into());
        } else {
            inner.terminating.remove(name);
        }
    }

    /// Tenants being deleted, for the tenant controller.
    pub fn terminating(&self) -> Vec<String> {
        self.read().terminating.iter().map(|t| t.to_string()).collect()
    }

    /// Every tenant that exists, with its phase.
    pub fn tenants(&self) -> Vec<(String, Phase)> {
        self.read().tenants.iter().map(|(name, t)| (name.to_string(), t.phase)).collect()
    }
}

impl WriteObserver for TenantCache {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[("", "Tenant")]
    }

    fn holds(&self, resource: &ResourceInfo) -> Vec<(SpaceName, String)> {
        match resource.is("", "Tenant") {
            true => self.read().tenants.keys().map(|name| (SpaceName::system(), name.to_string())).collect(),
            false => Vec::new(),
        }
    }

    fn written(&self, resource: &ResourceInfo, _space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        if resource.is("", "Tenant") {
            self.apply(name, object, revision);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn older_writes_never_win() {
        let cache = TenantCache::default();
        let active = json!({"metadata": {"labels": {"tier": "gold"}}});
        let terminating = json!({"metadata": {"deletionTimestamp": "2025-01-01T00:00:00Z"}});
        cache.apply("t", Some(&active), Revision(5));
        cache.apply("t", Some(&terminating), Revision(7));
        cache.apply("t", Some(&active), Revision(6));
        assert_eq!(cache.phase("t"), Some(Phase::Terminating));
        assert_eq!(cache.terminating(), ["t"]);
        assert!(cache.with_labels("t", |labels| labels.is_none()), "the newest write has no labels");
        cache.apply("t", None, Revision(9));
        cache.apply("t", Some(&terminating), Revision(8));
        assert_eq!(cache.phase("t"), None);
        assert!(cache.terminating().is_empty());
        cache.apply("t", Some(&active), Revision(12));
        assert_eq!(cache.phase("t"), Some(Phase::Active));
        assert_eq!(cache.with_labels("t", |labels| labels.cloned()), Some(json!({"metadata": {"labels": {"tier": "gold"}}})));
    }
}
