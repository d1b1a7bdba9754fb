//! What the collector decides about one dependent (pure): its owner references, the state of each owner
//! (solid, dangling, waiting for its dependents' deletion), and the verdict kube's garbage collector reaches
//! from them; plus the edits it makes to objects (drop references, unblock them, lift a finalizer).

use serde_json::Value;

use crate::registry::deletion::{self, Propagation};

/// One entry of `metadata.ownerReferences` (entries without a uid are skipped: validation refuses them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub block: bool,
}

impl Reference {
    /// `(group, version)` of the reference's apiVersion (`v1` is the core group).
    pub fn group_version(&self) -> (&str, &str) {
        self.api_version.split_once('/').unwrap_or(("", &self.api_version))
    }
}

/// The owner references of an object.
pub fn references(object: &Value) -> Vec<Reference> {
    let Some(list) = object.pointer("/metadata/ownerReferences").and_then(Value::as_array) else { return Vec::new() };
    list.iter().filter_map(|entry| {
        let text = |field: &str| entry.get(field).and_then(Value::as_str).unwrap_or_default().to_owned();
        let uid = text("uid");
        (!uid.is_empty()).then(|| Reference {
            api_version: text("apiVersion"),
            kind: text("kind"),
            name: text("name"),
            uid,
            block: entry.get("blockOwnerDeletion") == Some(&Value::Bool(true)),
        })
    }).collect()
}

/// An owner as the collector finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerState {
    /// It exists with the referenced uid and is not being deleted in the foreground.
    Solid,
    /// Nothing with that name and uid exists in the dependent's space (and namespace, for a namespaced kind).
    Dangling,
    /// It is being deleted in the foreground, waiting for its dependents to go.
    Waiting,
}

/// What the collector does with a dependent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every owner is solid: nothing.
    Keep,
    /// A solid owner remains: drop the references to these uids (dangling owners, and owners waiting for their
    /// dependents, which would otherwise wait for ever).
    DropReferences(Vec<String>),
    /// No solid owner, an owner waits in the foreground and the dependent has dependents of its own: delete it in
    /// the foreground too (after making its references non-blocking, when one of its own dependents is also
    /// deleting in the foreground: a possible cycle).
    DeleteForeground { unblock: bool },
    /// No solid owner: delete it with the policy its own finalizers ask for (else Background).
    Delete(Propagation),
}

/// kube's `attemptToDeleteItem` decision, from the state of each owner (by uid).
pub fn decide(owners: &[(String, OwnerState)], has_dependents: bool, dependent_in_foreground: bool, finalizers: &[String]) -> Verdict {
    let with = |state: OwnerState| owners.iter().filter(move |(_, s)| *s == state).map(|(uid, _)| uid.clone());
    let solid = with(OwnerState::Solid).count();
    let unwanted: Vec<String> = with(OwnerState::Dangling).chain(with(OwnerState::Waiting)).collect();
    let waiting = with(OwnerState::Waiting).count();
    match () {
        _ if solid > 0 && unwanted.is_empty() => Verdict::Keep,
        _ if solid > 0 => Verdict::DropReferences(unwanted),
        _ if waiting > 0 && has_dependents => Verdict::DeleteForeground { unblock: dependent_in_foreground },
        _ => Verdict::Delete(deletion::policy_of_finalizers(finalizers)),
    }
}

/// Drops the references to `uids`; true if any was there.
pub fn drop_references(object: &mut Value, uids: &[String]) -> bool {
    let Some(list) = object.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut) else { return false };
    let before = list.len();
    list.retain(|r| !r.get("uid").and_then(Value::as_str).is_some_and(|uid| uids.iter().any(|u| u == uid)));
    let changed = list.len() != before;
    if list.is_empty() {
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("ownerReferences");
        }
    }
    changed
}

/// Makes every blocking reference non-blocking; true if one was.
pub fn unblock(object: &mut Value) -> bool {
    let Some(list) = object.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut) else { return false };
    let mut changed = false;
    for reference in list.iter_mut().filter(|r| r.get("blockOwnerDeletion") == Some(&Value::Bool(true))) {
        reference["blockOwnerDeletion"] = Value::Bool(false);
        changed = true;
    }
    changed
}

/// Lifts one finalizer; true if it was there.
pub fn lift_finalizer(object: &mut Value, finalizer: &str) -> bool {
    let Some(list) = object.pointer_mut("/metadata/finalizers").and_then(Value::as_array_mut) else { return false };
    let before = list.len();
    list.retain(|f| f != finalizer);
    list.len() != before
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use OwnerState::*;

    fn check(owners: &[(&str, OwnerState)], has_dependents: bool, in_foreground: bool, finalizers: &[&str], expected: Verdict) {
        let owners: Vec<(String, OwnerState)> = owners.iter().map(|(u, s)| ((*u).to_owned(), *s)).collect();
        let finalizers: Vec<String> = finalizers.iter().map(|f| (*f).to_owned()).collect();
        assert_eq!(decide(&owners, has_dependents, in_foreground, &finalizers), expected, "{owners:?} {has_dependents} {finalizers:?}");
    }

    #[test]
    fn verdicts() {
        check(&[("a", Solid)], false, false, &[], Verdict::Keep);
        check(&[("a", Solid), ("b", Solid)], true, false, &[], Verdict::Keep);
        // A second live owner keeps the dependent; only the dangling reference goes.
        check(&[("a", Solid), ("b", Dangling)], false, false, &[], Verdict::DropReferences(vec!["b".into()]));
        check(&[("a", Waiting), ("b", Solid), ("c", Dangling)], false, false, &[], Verdict::DropReferences(vec!["c".into(), "a".into()]));
        check(&[("a", Dangling)], false, false, &[], Verdict::Delete(Propagation::Background));
        check(&[("a", Dangling), ("b", Dangling)], true, false, &[], Verdict::Delete(Propagation::Background));
        // Its own finalizers choose the policy.
        check(&[("a", Dangling)], true, false, &["orphan"], Verdict::Delete(Propagation::Orphan));
        check(&[("a", Dangling)], false, false, &["x.io/f", "foregroundDeletion"], Verdict::Delete(Propagation::Foreground));
        // An owner deleting in the foreground: its dependents go, in the foreground if they own things.
        check(&[("a", Waiting)], false, false, &[], Verdict::Delete(Propagation::Background));
        check(&[("a", Waiting)], true, false, &[], Verdict::DeleteForeground { unblock: false });
        check(&[("a", Waiting), ("b", Dangling)], true, true, &[], Verdict::DeleteForeground { unblock: true });
    }

    #[test]
    fn references_and_edits() {
        let mut object = json!({"metadata": {"finalizers": ["orphan", "x.io/f"], "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "u1", "blockOwnerDeletion": true},
            {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "u2"},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "no-uid"},
        ]}});
        let found = references(&object);
        assert_eq!(found.len(), 2);
        assert_eq!((found[0].group_version(), found[0].block), (("", "v1"), true));
        assert_eq!((found[1].group_version(), found[1].block), (("example.com", "v1"), false));
        assert!(unblock(&mut object));
        assert!(!unblock(&mut object));
        assert_eq!(object.pointer("/metadata/ownerReferences/0/blockOwnerDeletion"), Some(&json!(false)));
        assert!(lift_finalizer(&mut object, "orphan"));
        assert!(!lift_finalizer(&mut object, "orphan"));
        assert_eq!(object.pointer("/metadata/finalizers"), Some(&json!(["x.io/f"])));
        assert!(drop_references(&mut object, &["u1".into()]));
        assert!(!drop_references(&mut object, &["u1".into()]));
        assert!(drop_references(&mut object, &["u2".into(), "u9".into()]));
        assert_eq!(references(&object), vec![]);
        assert!(object.pointer("/metadata/ownerReferences").is_some(), "the entry without a uid stays");
        let mut single = json!({"metadata": {"ownerReferences": [{"uid": "u"}]}});
        assert!(drop_references(&mut single, &["u".into()]));
        assert_eq!(single, json!({"metadata": {}}));
    }
}
