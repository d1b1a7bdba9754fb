//! Tables for the delete plan: GC finalizers and their defaults, graceful deletion of pods, preconditions.

use super::*;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// One row: the finalizers an object has, the policy asked, the finalizers it should end with (`None`: unchanged).
type FinalizerRow = (&'static [&'static str], Option<Propagation>, Option<&'static [&'static str]>);

#[test]
fn gc_finalizers_follow_the_policy_then_the_object() {
    use Propagation::*;
    let rows: [FinalizerRow; 12] = [
        (&[], None, None),
        (&[], Some(Background), None),
        (&[], Some(Orphan), Some(&["orphan"])),
        (&[], Some(Foreground), Some(&["foregroundDeletion"])),
        (&["x.io/keep"], Some(Foreground), Some(&["x.io/keep", "foregroundDeletion"])),
        // Without a policy the object's own GC finalizer stays in charge.
        (&["orphan"], None, None),
        (&["foregroundDeletion", "x.io/keep"], None, None),
        // An explicit policy replaces it.
        (&["orphan", "x.io/keep"], Some(Background), Some(&["x.io/keep"])),
        (&["orphan"], Some(Foreground), Some(&["foregroundDeletion"])),
        (&["foregroundDeletion"], Some(Orphan), Some(&["orphan"])),
        (&["foregroundDeletion"], Some(Foreground), None),
        // Both (refused on write, but stored before validation existed): the first listed wins.
        (&["orphan", "foregroundDeletion"], None, Some(&["orphan"])),
    ];
    for (current, policy, wanted) in rows {
        let got = gc_finalizers(&strings(current), policy);
        assert_eq!(got, wanted.map(strings), "{current:?} with {policy:?}");
    }
}

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2025-06-01T12:00:00Z").map(|t| t.with_timezone(&Utc)).unwrap_or_default()
}

fn check(rules: Rules, object: Value, options: DeleteOptions, expected: Option<Value>) {
    let got = plan(rules, &object, &options, now());
    let expected = match expected {
        None => Plan::DeleteNow,
        Some(v) if v == json!("pending") => Plan::AlreadyPending,
        Some(v) => Plan::Mark(v),
    };
    assert_eq!(got, expected, "{object} with {options:?}");
}

fn with_policy(policy: Propagation) -> DeleteOptions {
    DeleteOptions { propagation: Some(policy), ..DeleteOptions::default() }
}

fn with_grace(seconds: i64) -> DeleteOptions {
    DeleteOptions { grace_period_seconds: Some(seconds), ..DeleteOptions::default() }
}

const PLAIN: Rules = Rules { graceful: false, spec_finalizers: false };
const POD: Rules = Rules { graceful: true, spec_finalizers: false };
const NAMESPACE: Rules = Rules { graceful: false, spec_finalizers: true };

#[test]
fn objects_without_finalizers_go_at_once_unless_a_policy_keeps_them() {
    let cm = json!({"metadata": {"name": "cm", "generation": 0}});
    check(PLAIN, cm.clone(), DeleteOptions::default(), None);
    check(PLAIN, cm.clone(), with_policy(Propagation::Background), None);
    check(PLAIN, cm.clone(), with_grace(30), None);
    check(PLAIN, cm.clone(), with_policy(Propagation::Foreground), Some(json!({"metadata": {"name": "cm", "generation": 0,
        "finalizers": ["foregroundDeletion"], "deletionTimestamp": "2025-06-01T12:00:00Z", "deletionGracePeriodSeconds": 0}})));
    check(PLAIN, cm, with_policy(Propagation::Orphan), Some(json!({"metadata": {"name": "cm", "generation": 0,
        "finalizers": ["orphan"], "deletionTimestamp": "2025-06-01T12:00:00Z", "deletionGracePeriodSeconds": 0}})));
    // A Background delete of an object holding only the orphan finalizer removes it and the object.
    check(PLAIN, json!({"metadata": {"finalizers": ["orphan"]}}), with_policy(Propagation::Background), None);
}

#[test]
fn marking_bumps_the_generation_once_and_keeps_an_earlier_timestamp() {
    let fresh = json!({"metadata": {"generation": 3, "finalizers": ["x.io/f"]}, "spec": {}});
    check(PLAIN, fresh, DeleteOptions::default(), Some(json!({"metadata": {"generation": 4, "finalizers": ["x.io/f"],
        "deletionTimestamp": "2025-06-01T12:00:00Z", "deletionGracePeriodSeconds": 0}, "spec": {}})));
    let deleting = json!({"metadata": {"generation": 4, "finalizers": ["x.io/f"], "deletionTimestamp": "2025-06-01T11:00:00Z",
        "deletionGracePeriodSeconds": 0}});
    check(PLAIN, deleting.clone(), DeleteOptions::default(), Some(deleting.clone()));
    // A repeated delete may still switch the GC finalizer.
    let mut foreground = deleting;
    foreground["metadata"]["finalizers"] = json!(["x.io/f", "foregroundDeletion"]);
    check(PLAIN, json!({"metadata": {"generation": 4, "finalizers": ["x.io/f"], "deletionTimestamp": "2025-06-01T11:00:00Z",
        "deletionGracePeriodSeconds": 0}}), with_policy(Propagation::Foreground), Some(foreground));
}

#[test]
fn only_bound_running_pods_are_deleted_gracefully() {
    let bound = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 30}});
    let marked = |at: &str, period: i64| json!({"metadata": {"name": "p", "deletionTimestamp": at, "deletionGracePeriodSeconds": period},
        "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 30}});
    check(POD, bound.clone(), DeleteOptions::default(), Some(marked("2025-06-01T12:00:30Z", 30)));
    check(POD, bound.clone(), with_grace(5), Some(marked("2025-06-01T12:00:05Z", 5)));
    check(POD, bound.clone(), with_grace(-3), Some(marked("2025-06-01T12:00:01Z", 1)));
    check(POD, bound, with_grace(0), None);
    check(POD, json!({"metadata": {}, "spec": {"terminationGracePeriodSeconds": 30}}), DeleteOptions::default(), None);
    check(POD, json!({"metadata": {}, "spec": {"nodeName": "n1"}, "status": {"phase": "Succeeded"}}), with_grace(10), None);
    // An unbound pod with a finalizer is marked with a zero grace period.
    check(POD, json!({"metadata": {"finalizers": ["x.io/f"]}, "spec": {}}), DeleteOptions::default(),
        Some(json!({"metadata": {"finalizers": ["x.io/f"], "deletionTimestamp": "2025-06-01T12:00:00Z", "deletionGracePeriodSeconds": 0}, "spec": {}})));
}

#[test]
fn a_graceful_deletion_can_only_be_shortened() {
    let terminating = json!({"metadata": {"deletionTimestamp": "2025-06-01T12:00:20Z", "deletionGracePeriodSeconds": 30},
        "spec": {"nodeName": "n1"}});
    check(POD, terminating.clone(), DeleteOptions::default(), Some(json!("pending")));
    check(POD, terminating.clone(), with_grace(60), Some(json!("pending")));
    check(POD, terminating.clone(), with_grace(15), Some(json!({"metadata": {"deletionTimestamp": "2025-06-01T12:00:05Z",
        "deletionGracePeriodSeconds": 15}, "spec": {"nodeName": "n1"}})));
    // Shortened into the past: now, with the shortest graceful period.
    check(POD, terminating.clone(), with_grace(2), Some(json!({"metadata": {"deletionTimestamp": "2025-06-01T12:00:00Z",
        "deletionGracePeriodSeconds": 1}, "spec": {"nodeName": "n1"}})));
    check(POD, terminating, with_grace(0), None);
}

#[test]
fn namespaces_turn_terminating_while_spec_finalizers_are_pending() {
    let active = json!({"metadata": {"name": "ns"}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
    check(NAMESPACE, active, DeleteOptions::default(), Some(json!({"metadata": {"name": "ns", "deletionTimestamp": "2025-06-01T12:00:00Z",
        "deletionGracePeriodSeconds": 0}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Terminating"}})));
    check(NAMESPACE, json!({"metadata": {"name": "ns"}, "spec": {"finalizers": []}}), DeleteOptions::default(), None);
}

#[test]
fn preconditions_fail_with_kube_messages() {
    let object = json!({"metadata": {"name": "x", "uid": "u1"}});
    let uid = |u: &str| DeleteOptions { precondition_uid: Some(u.to_owned()), ..DeleteOptions::default() };
    let rv = |r: &str| DeleteOptions { precondition_resource_version: Some(r.to_owned()), ..DeleteOptions::default() };
    let rows = [
        (uid("u1"), None),
        (rv("7"), None),
        (uid("u2"), Some("Operation cannot be fulfilled on ConfigMap \"x\": the UID in the precondition (u2) does not match the UID in record (u1). The object might have been deleted and then recreated")),
        (rv("6"), Some("Operation cannot be fulfilled on ConfigMap \"x\": the ResourceVersion in the precondition (6) does not match the ResourceVersion in record (7). The object might have been modified")),
    ];
    for (options, expected) in rows {
        let got = check_preconditions("", "ConfigMap", &object, "7", &options).err().map(|e| (e.code, e.message));
        assert_eq!(got, expected.map(|m| (409, m.to_owned())), "{options:?}");
    }
    let apps = check_preconditions("apps", "Deployment", &object, "7", &uid("u2")).err().map(|e| e.message).unwrap_or_default();
    assert!(apps.starts_with("Operation cannot be fulfilled on Deployment.apps \"x\""), "{apps}");
}
