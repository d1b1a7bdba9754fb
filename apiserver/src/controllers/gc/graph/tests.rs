//! The graph, driven by scripts of writes and deletes; each step lists the work it must cause.

use serde_json::json;

use super::*;

const UID: [&str; 4] = [
    "00000000-0000-4000-8000-000000000001",
    "00000000-0000-4000-8000-000000000002",
    "00000000-0000-4000-8000-000000000003",
    "00000000-0000-4000-8000-000000000004",
];

fn uid(n: usize) -> Uid {
    Uid::parse(UID[n])
}

fn space() -> SpaceName {
    SpaceName::system()
}

fn configmaps() -> ResourceKey {
    ResourceKey { group: String::new(), plural: "configmaps".into(), identity: ApiIdentity::BuiltIn }
}

/// An object `n` naming owners (uid index, blocking); `finalizer` is set with a deletion timestamp.
fn object(n: usize, owners: &[(usize, bool)], finalizer: Option<&str>) -> Observed {
    let references: Vec<Value> = owners.iter()
        .map(|(o, block)| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": format!("cm{o}"), "uid": UID[*o], "blockOwnerDeletion": block}))
        .collect();
    let mut value = json!({"metadata": {"name": format!("cm{n}"), "namespace": "default", "uid": UID[n], "ownerReferences": references}});
    if let Some(finalizer) = finalizer {
        value["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
        value["metadata"]["finalizers"] = json!([finalizer]);
    }
    Observed::of(&value, true).unwrap_or_else(|| panic!("test object {n} has no uid"))
}

/// One step: a write (`Some`) or a delete (`None`) of object `n`, and the work expected from it.
type Step = (usize, Option<Observed>, Vec<Work>);

fn dependent(n: usize) -> Work {
    Work::Dependent(space(), uid(n))
}

fn owner(n: usize) -> Work {
    Work::Owner(space(), uid(n))
}

fn check(graph: &mut Graph, steps: Vec<Step>) {
    for (step, (n, observed, expected)) in steps.into_iter().enumerate() {
        let mut got = match observed {
            Some(observed) => graph.apply(&space(), configmaps(), observed),
            None => graph.remove(&space(), &uid(n)),
        };
        got.sort();
        let mut expected = expected;
        expected.sort();
        assert_eq!(got, expected, "step {step} (object {n})");
    }
}

#[test]
fn uids_are_compact_and_exact() {
    assert_eq!(uid(0), Uid::Uuid(1 | (0x4000 << 64) | (0x8000 << 48)));
    assert_eq!(uid(0).to_string(), UID[0]);
    let lower = "aaaaaaaa-0000-4000-8000-00000000000b";
    assert!(matches!(Uid::parse(lower), Uid::Uuid(_)));
    assert_eq!(Uid::parse(&lower.to_uppercase()), Uid::Other(lower.to_uppercase().into()), "another string is another uid");
    assert_eq!(Uid::parse("made-up").to_string(), "made-up");
}

#[test]
fn dependents_are_linked_checked_and_released() {
    let mut graph = Graph::default();
    check(&mut graph, vec![
        // An owner without references is not held.
        (0, Some(object(0, &[], None)), vec![]),
        (1, Some(object(1, &[(0, false)], None)), vec![dependent(1)]),
        (2, Some(object(2, &[(0, true), (3, false)], None)), vec![dependent(2)]),
        // Rewriting the same owners causes nothing.
        (1, Some(object(1, &[(0, false)], None)), vec![]),
        // The owner goes: both dependents are checked.
        (0, None, vec![dependent(1), dependent(2)]),
        // A dependent drops a reference: nothing waits on it.
        (2, Some(object(2, &[(3, false)], None)), vec![]),
    ]);
    assert_eq!(graph.dependents(&space(), &uid(0)).len(), 1);
    assert_eq!(graph.counts(), Counts { nodes: 2, owners: 2, waiting: 0 });
    check(&mut graph, vec![(1, None, vec![]), (2, Some(object(2, &[], None)), vec![])]);
    assert_eq!(graph.counts(), Counts::default(), "a graph without dependents holds nothing");
}

#[test]
fn foreground_owners_are_told_when_blocking_dependents_let_go() {
    let mut graph = Graph::default();
    check(&mut graph, vec![
        (1, Some(object(1, &[(0, true)], None)), vec![dependent(1)]),
        (2, Some(object(2, &[(0, false)], None)), vec![dependent(2)]),
        // The owner turns to foreground deletion: it and every dependent are looked at.
        (0, Some(object(0, &[], Some("foregroundDeletion"))), vec![owner(0), dependent(1), dependent(2)]),
        (0, Some(object(0, &[], Some("foregroundDeletion"))), vec![]),
    ]);
    assert_eq!(graph.blocking(&space(), &uid(0)), vec![(uid(1), false)]);
    check(&mut graph, vec![
        // Unblocking, then dropping the reference, then deleting a dependent each tell the owner.
        (1, Some(object(1, &[(0, false)], None)), vec![owner(0)]),
        (1, Some(object(1, &[(0, true)], None)), vec![]),
        (1, None, vec![owner(0)]),
        (2, Some(object(2, &[], None)), vec![owner(0)]),
        (0, None, vec![]),
    ]);
    assert_eq!(graph.counts(), Counts::default());
}

#[test]
fn orphaning_owners_wait_and_a_dependent_in_foreground_is_known() {
    let mut graph = Graph::default();
    check(&mut graph, vec![
        (1, Some(object(1, &[(0, true)], None)), vec![dependent(1)]),
        (0, Some(object(0, &[], Some("orphan"))), vec![owner(0)]),
        (1, Some(object(1, &[(0, true)], Some("foregroundDeletion"))), vec![owner(1)]),
    ]);
    assert_eq!(graph.waiting(&space(), &uid(0)).map(|(_, w)| w), Some(Waiting::Orphan));
    assert_eq!(graph.blocking(&space(), &uid(0)), vec![(uid(1), true)]);
    assert!(graph.is_deleting_dependents(&space(), &uid(1)));
}

#[test]
fn the_startup_scan_yields_to_live_writes_and_checks_one_dependent_per_owner() {
    let mut graph = Graph::loading();
    // A live write during the scan wins over the scan's older copy.
    let _ = graph.apply(&space(), configmaps(), object(1, &[(3, false)], None));
    graph.load(&space(), configmaps(), object(1, &[(0, false)], None));
    graph.load(&space(), configmaps(), object(2, &[(0, false)], None));
    graph.load(&space(), configmaps(), object(0, &[], Some("orphan")));
    let _ = graph.remove(&space(), &uid(3));
    graph.load(&space(), configmaps(), object(3, &[(0, false)], None));
    assert!(graph.is_loading());
    let mut work = graph.finish_load();
    work.sort();
    assert_eq!(work, vec![dependent(1), dependent(2), owner(0)]);
    assert!(!graph.is_loading());
    assert_eq!(graph.node(&space(), &uid(1)).map(|n| n.owners.clone()), Some(vec![Owner { uid: uid(3), block: false }]));
}

#[test]
fn uid_sets_grow_into_hash_sets() {
    let mut set = UidSet::default();
    for n in 0..100u128 {
        set.insert(Uid::Uuid(n));
        set.insert(Uid::Uuid(n));
    }
    assert!(matches!(set, UidSet::Many(_)));
    assert_eq!(set.iter().count(), 100);
    for n in 0..100u128 {
        set.remove(&Uid::Uuid(n));
    }
    assert!(set.is_empty());
}
