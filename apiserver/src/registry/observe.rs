//! Caches fed by the store, as kube's informers feed its controllers: a `WriteObserver` is primed with every
//! stored object of the kinds it follows (`GenericStore::prime`, the one startup load), then told of every
//! durable write before the write is answered. `RevisionMap` is how a cache applies that news: an entry only
//! moves forward in revisions, and a deleted key leaves a tombstone, so a write observed late never undoes a
//! newer one (priming runs while writes already land).

use std::borrow::Borrow;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

use kspaces_storage::{Revision, SpaceName};
use serde_json::Value;

use super::ResourceInfo;

/// Told of every committed write, once it is durable: `object` is `None` when the object is gone.
pub trait WriteObserver: Send + Sync {
    /// The kinds, as (group, kind), whose every stored object this cache starts from.
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision);

    /// Told of a delete with the object's last state (the garbage collector needs its uid); by default, a
    /// `written` with no object.
    fn deleted(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, _last: &Value, revision: Revision) {
        self.written(resource, space, name, None, revision);
    }

    /// The (space, name) of every live object of `resource`'s kind (one it `follows`) this cache holds. After a
    /// re-list (`GenericStore::relist`), those the list no longer shows are told they are gone, as a reflector's
    /// replace does.
    fn holds(&self, _resource: &ResourceInfo) -> Vec<(SpaceName, String)> {
        Vec::new()
    }

    /// The store's history was lost to this process (see `registry::feed`): forget what was read from the store
    /// on demand rather than primed, since no re-list brings it up to date.
    fn resync(&self) {}
}

/// The revision a stored object was read at (`metadata.resourceVersion`, set on every read).
pub fn revision_of(object: &Value) -> Revision {
    object.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|rv| rv.parse().ok()).unwrap_or_default()
}

/// A map whose entries only move forward in revisions; a removed key is remembered as a tombstone.
/// `S` is the hasher (std's SipHash unless a cache on a hot path picks another).
#[derive(Debug)]
pub struct RevisionMap<K, V, S = RandomState> {
    entries: HashMap<K, (Option<V>, Revision), S>,
}

impl<K, V, S: Default> Default for RevisionMap<K, V, S> {
    fn default() -> RevisionMap<K, V, S> {
        RevisionMap { entries: HashMap::default() }
    }
}

impl<K: Eq + Hash, V, S: BuildHasher> RevisionMap<K, V, S> {
    /// Records `key` as of `revision` (`None`: removed). False, and nothing changes, when the map already
    /// knows a newer state of `key`.
    pub fn apply(&mut self, key: K, value: Option<V>, revision: Revision) -> bool {
        if self.entries.get(&key).is_some_and(|(_, known)| *known > revision) {
            return false;
        }
        self.entries.insert(key, (value, revision));
        true
    }

    /// The live value of `key`.
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.get(key).and_then(|(value, _)| value.as_ref())
    }

    /// The state of `key` as last told, live or removed, with its revision.
    pub fn state<Q>(&self, key: &Q) -> Option<(Option<&V>, Revision)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.get(key).map(|(value, revision)| (value.as_ref(), *revision))
    }

    /// Every live key.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.iter().map(|(key, _)| key)
    }

    /// Every live entry.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().filter_map(|(key, (value, _))| Some((key, value.as_ref()?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_news_never_wins_and_deletions_leave_tombstones() {
        let mut map: RevisionMap<&str, &str> = RevisionMap::default();
        assert!(map.apply("t", Some("active"), Revision(5)));
        assert!(map.apply("t", Some("terminating"), Revision(7)));
        assert!(!map.apply("t", Some("active"), Revision(6)), "older than what is known");
        assert_eq!(map.get("t"), Some(&"terminating"));
        assert!(map.apply("t", None, Revision(9)));
        assert!(!map.apply("t", Some("terminating"), Revision(8)), "a tombstone is newer");
        assert_eq!(map.get("t"), None);
        assert_eq!(map.iter().count(), 0);
        assert!(map.apply("t", Some("active"), Revision(12)), "made again");
        assert_eq!(map.iter().collect::<Vec<_>>(), [(&"t", &"active")]);
    }
}
