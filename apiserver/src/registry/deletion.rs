//! What a delete does to an object, as kube-apiserver decides it (pure): preconditions, the garbage collector's
//! `orphan` and `foregroundDeletion` finalizers chosen from the propagation policy, and graceful deletion (only
//! pods bound to a node have a grace period). `GenericStore::delete` carries the plan out.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::{json, Value};

use crate::status::{ApiError, ApiResult};
use crate::registry::stored::at;

/// The finalizer that makes the garbage collector strip the owner's references from its dependents first.
pub const ORPHAN_FINALIZER: &str = "orphan";
/// The finalizer that makes the garbage collector delete the owner's blocking dependents first.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// `propagationPolicy`: what happens to an object's dependents when it is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Propagation {
    /// Dependents lose their reference to the owner and stay.
    Orphan,
    /// The owner goes at once; the garbage collector deletes the dependents afterwards.
    Background,
    /// The owner stays (with `foregroundDeletion`) until its blocking dependents are gone.
    Foreground,
}

impl Propagation {
    pub fn parse(value: &str) -> Option<Propagation> {
        match value {
            "Orphan" => Some(Propagation::Orphan),
            "Background" => Some(Propagation::Background),
            "Foreground" => Some(Propagation::Foreground),
            _ => None,
        }
    }
}

/// Delete options, parsed and validated (the legacy `orphanDependents` is folded into `propagation`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    pub precondition_uid: Option<String>,
    /// Compared as a string, as kube-apiserver does.
    pub precondition_resource_version: Option<String>,
    /// `None`: the object's own GC finalizer decides, else Background (kube 1.33's default for every resource).
    pub propagation: Option<Propagation>,
    pub grace_period_seconds: Option<i64>,
    pub dry_run: bool,
    /// kube's `ignoreStoreReadErrorWithClusterBreakingPotential`: an object whose stored bytes cannot be read is
    /// removed outright (no admission, finalizers or grace period). The handler has checked the caller may.
    pub ignore_store_read_error: bool,
}

/// How a resource's objects are deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    /// Pods: a bound pod is deleted gracefully (its kubelet finishes the delete).
    pub graceful: bool,
    /// Namespaces and tenants: `spec.finalizers` hold them Terminating while their content is removed.
    pub spec_finalizers: bool,
}

/// What a delete does.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// Remove the object from storage now.
    DeleteNow,
    /// Store this object (deletion timestamp, grace period, finalizers); it stays until its finalizers are lifted
    /// or its grace period is over.
    Mark(Value),
    /// A graceful deletion is already under way with a grace period no longer than the one asked: nothing changes.
    AlreadyPending,
}

/// The 409 kube-apiserver answers when a precondition does not hold (checked before anything is written).
pub fn check_preconditions(group: &str, kind: &str, object: &Value, resource_version: &str, options: &DeleteOptions) -> ApiResult<()> {
    let name = text(object, "/metadata/name").unwrap_or_default();
    if let Some(uid) = &options.precondition_uid {
        let actual = text(object, "/metadata/uid").unwrap_or_default();
        if uid != actual {
            return Err(ApiError::conflict(group, kind, name, &format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({actual}). The object might have been deleted and then recreated")));
        }
    }
    if let Some(rv) = &options.precondition_resource_version {
        if rv != resource_version {
            return Err(ApiError::conflict(group, kind, name, &format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({resource_version}). The object might have been modified")));
        }
    }
    Ok(())
}

/// Decides what deleting `object` does (kube's `BeforeDelete`, `deletionFinalizersForGarbageCollection` and
/// `markAsDeleting`, in that order).
pub fn plan(rules: Rules, object: &Value, options: &DeleteOptions, now: DateTime<Utc>) -> Plan {
    let mut marked = object.clone();
    let graceful = match rules.graceful {
        true => match graceful_deletion(&mut marked, options.grace_period_seconds.map(|g| if g < 0 { 1 } else { g }), now) {
            Graceful::AlreadyPending => return Plan::AlreadyPending,
            Graceful::Period(period) => Some(period),
            Graceful::No => None,
        },
        false => None,
    };
    let current = finalizers(object);
    let wanted = gc_finalizers(&current, options.propagation);
    if let Some(wanted) = &wanted {
        marked["metadata"]["finalizers"] = json!(wanted);
    }
    let pending_finalizers = !wanted.as_ref().unwrap_or(&current).is_empty()
        || (rules.spec_finalizers && spec_finalizers_pending(object));
    match graceful {
        None if pending_finalizers => {
            mark_as_deleting(&mut marked, now);
            if rules.spec_finalizers {
                set_terminating(&mut marked);
            }
            Plan::Mark(marked)
        }
        None => Plan::DeleteNow,
        Some(period) if pending_finalizers || period > 0 => Plan::Mark(marked),
        Some(_) => Plan::DeleteNow,
    }
}

/// The finalizers an object should carry once deleted with `propagation`; `None` when its set does not change.
/// Without a policy, an `orphan` or `foregroundDeletion` finalizer the object already has decides (the first one
/// listed), else Background.
pub fn gc_finalizers(current: &[String], propagation: Option<Propagation>) -> Option<Vec<String>> {
    let policy = propagation.unwrap_or_else(|| policy_of_finalizers(current));
    let mut wanted: Vec<String> = current.iter().filter(|f| !is_gc_finalizer(f)).cloned().collect();
    match policy {
        Propagation::Orphan => wanted.push(ORPHAN_FINALIZER.to_owned()),
        Propagation::Foreground => wanted.push(FOREGROUND_FINALIZER.to_owned()),
        Propagation::Background => {}
    }
    let same = wanted.len() == current.len() && wanted.iter().all(|f| current.contains(f)) && current.iter().all(|f| wanted.contains(f));
    (!same).then_some(wanted)
}

/// The policy an object's own finalizers ask for (the first GC finalizer listed), else Background.
pub fn policy_of_finalizers(finalizers: &[String]) -> Propagation {
    finalizers.iter().find_map(|f| match f.as_str() {
        ORPHAN_FINALIZER => Some(Propagation::Orphan),
        FOREGROUND_FINALIZER => Some(Propagation::Foreground),
        _ => None,
    }).unwrap_or(Propagation::Background)
}

fn is_gc_finalizer(finalizer: &str) -> bool {
    finalizer == ORPHAN_FINALIZER || finalizer == FOREGROUND_FINALIZER
}

/// `metadata.finalizers` as strings (anything else is ignored).
pub fn finalizers(object: &Value) -> Vec<String> {
    at(object, "/metadata/finalizers").and_then(Value::as_array)
        .map(|f| f.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// True if the object lists any finalizer (`metadata.finalizers`).
pub fn has_finalizers(object: &Value) -> bool {
    at(object, "/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
}

/// True if the object lists `finalizer`.
pub fn has_finalizer(object: &Value, finalizer: &str) -> bool {
    at(object, "/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| f.iter().any(|v| v == finalizer))
}

/// True once an object has a deletion timestamp.
pub fn is_deleting(object: &Value) -> bool {
    at(object, "/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
}

/// True while the object waits, deleting, for the garbage collector to delete its blocking dependents.
pub fn is_deleting_dependents(object: &Value) -> bool {
    is_deleting(object) && has_finalizer(object, FOREGROUND_FINALIZER)
}

/// True if the store may remove an object whose last finalizer is gone: it is being deleted and not in a graceful
/// deletion (a pod with a grace period is removed by its kubelet, as kube's `ShouldDeleteDuringUpdate` says).
pub fn may_remove_when_finalized(object: &Value) -> bool {
    is_deleting(object) && at(object, "/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0) == 0
}

fn spec_finalizers_pending(object: &Value) -> bool {
    at(object, "/spec/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
}

fn text<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    at(object, pointer).and_then(Value::as_str)
}

fn timestamp(at: DateTime<Utc>) -> Value {
    json!(at.to_rfc3339_opts(SecondsFormat::Secs, true))
}

fn parse_timestamp(object: &Value) -> Option<DateTime<Utc>> {
    let text = text(object, "/metadata/deletionTimestamp")?;
    DateTime::parse_from_rfc3339(text).ok().map(|t| t.with_timezone(&Utc))
}

fn bump_generation(object: &mut Value) {
    if let Some(generation) = at(object, "/metadata/generation").and_then(Value::as_i64).filter(|g| *g > 0) {
        object["metadata"]["generation"] = json!(generation + 1);
    }
}

/// kube's `markAsDeleting`: a deletion timestamp (now, unless an earlier one is set) and a zero grace period; the
/// generation moves on the first mark.
fn mark_as_deleting(object: &mut Value, now: DateTime<Utc>) {
    if !is_deleting(object) {
        bump_generation(object);
    }
    if parse_timestamp(object).is_none_or(|at| at > now) {
        object["metadata"]["deletionTimestamp"] = timestamp(now);
    }
    object["metadata"]["deletionGracePeriodSeconds"] = json!(0);
}

fn set_terminating(object: &mut Value) {
    if !object.get("status").is_some_and(Value::is_object) {
        object["status"] = json!({});
    }
    object["status"]["phase"] = json!("Terminating");
}

/// The outcome of the graceful step for a pod.
enum Graceful {
    /// Not graceful: the generic rules apply.
    No,
    /// A graceful deletion with this period was recorded in the object.
    Period(i64),
    AlreadyPending,
}

/// kube's `BeforeDelete` with the pod strategy's `CheckGracefulDelete`: a pod bound to a node gets its grace period
/// (the request's, else `spec.terminationGracePeriodSeconds`); an unbound or finished pod gets 0. A pod already in
/// graceful deletion can only have its grace period shortened.
fn graceful_deletion(pod: &mut Value, requested: Option<i64>, now: DateTime<Utc>) -> Graceful {
    if is_deleting(pod) {
        let current = at(pod, "/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0);
        if current == 0 {
            return Graceful::No;
        }
        let Some(mut period) = requested.filter(|p| *p < current) else { return Graceful::AlreadyPending };
        let started = parse_timestamp(pod).unwrap_or(now) - Duration::seconds(current);
        let mut at = started + Duration::seconds(period);
        if at < now {
            at = now;
            if period != 0 {
                period = 1;
            }
        }
        pod["metadata"]["deletionTimestamp"] = timestamp(at);
        pod["metadata"]["deletionGracePeriodSeconds"] = json!(period);
        return Graceful::Period(period);
    }
    let bound = text(pod, "/spec/nodeName").is_some_and(|n| !n.is_empty());
    let finished = matches!(text(pod, "/status/phase"), Some("Failed" | "Succeeded"));
    let default = at(pod, "/spec/terminationGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0);
    let period = match requested.unwrap_or(default) {
        _ if !bound || finished => 0,
        negative if negative < 0 => 1,
        period => period,
    };
    pod["metadata"]["deletionTimestamp"] = timestamp(now + Duration::seconds(period));
    pod["metadata"]["deletionGracePeriodSeconds"] = json!(period);
    bump_generation(pod);
    Graceful::Period(period)
}

#[cfg(test)]
mod tests;
