//! `TenantCache`: every tenant's phase, in memory, for resolving paths without a storage read.
//!
//! Loaded from storage at startup and kept current by the registry's write observer (every Tenant write goes
//! through `GenericStore`). Entries carry the revision of the write they reflect, so writes observed out of
//! order never move an entry backwards; a deleted tenant leaves a tombstone for the same reason.
//! Serving one store from several kspaces processes (the etcd scale-out issue) will feed this cache from a
//! watch as well; `apply` is already idempotent and ordered by revision for that.

use std::collections::{BTreeSet, HashMap};
use std::sync::RwLock;

use kspaces_storage::{Revision, SpaceName};
use serde_json::Value;

use crate::registry::store::{is_deleting, WriteObserver};
use crate::registry::ResourceInfo;

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

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// `None`: deleted at `revision`.
    phase: Option<Phase>,
    revision: Revision,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<Box<str>, Entry>,
    terminating: BTreeSet<Box<str>>,
}

/// The phase of every tenant, by name.
#[derive(Debug, Default)]
pub struct TenantCache {
    inner: RwLock<Inner>,
}

impl TenantCache {
    /// The phase of tenant `name`, or `None` if there is no such tenant.
    pub fn phase(&self, name: &str) -> Option<Phase> {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        inner.entries.get(name).and_then(|e| e.phase)
    }

    /// Records tenant `name` as of `revision` (`None` = deleted); older news than what is known is ignored.
    pub fn apply(&self, name: &str, phase: Option<Phase>, revision: Revision) {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if inner.entries.get(name).is_some_and(|e| e.revision > revision) {
            return;
        }
        inner.entries.insert(name.into(), Entry { phase, revision });
        if phase == Some(Phase::Terminating) {
            inner.terminating.insert(name.into());
        } else {
            inner.terminating.remove(name);
        }
    }

    /// Tenants being deleted, for the tenant controller.
    pub fn terminating(&self) -> Vec<String> {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        inner.terminating.iter().map(|t| t.to_string()).collect()
    }

    /// Every tenant that exists, with its phase.
    pub fn tenants(&self) -> Vec<(String, Phase)> {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        inner.entries.iter().filter_map(|(name, e)| Some((name.to_string(), e.phase?))).collect()
    }
}

impl WriteObserver for TenantCache {
    fn written(&self, resource: &ResourceInfo, _space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        if resource.is("", "Tenant") {
            self.apply(name, object.map(Phase::of), revision);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_writes_never_win() {
        let cache = TenantCache::default();
        cache.apply("t", Some(Phase::Active), Revision(5));
        cache.apply("t", Some(Phase::Terminating), Revision(7));
        cache.apply("t", Some(Phase::Active), Revision(6));
        assert_eq!(cache.phase("t"), Some(Phase::Terminating));
        assert_eq!(cache.terminating(), ["t"]);
        cache.apply("t", None, Revision(9));
        cache.apply("t", Some(Phase::Terminating), Revision(8));
        assert_eq!(cache.phase("t"), None);
        assert!(cache.terminating().is_empty());
        cache.apply("t", Some(Phase::Active), Revision(12));
        assert_eq!(cache.phase("t"), Some(Phase::Active));
    }
}
