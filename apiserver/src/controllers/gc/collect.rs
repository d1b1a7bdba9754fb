//! One item of the collector's work, carried out through `GenericStore`: a dependent is checked against its
//! owners (kube's `attemptToDeleteItem`), an owner being deleted with `orphan` releases its dependents and an
//! owner deleted in the foreground waits for its blocking dependents (kube's `attemptToOrphan` and
//! `processDeletingDependentsItem`), then its finalizer is lifted.

use std::sync::Arc;

use futures::StreamExt;
use kspaces_storage::{ApiIdentity, SpaceName};
use serde_json::Value;

use super::classify::{self, OwnerState, Reference, Verdict};
use super::graph::{ObjectKey, ResourceKey, Uid, Waiting};
use super::queue::Work;
use super::AbsentOwner;
use super::GcController;
use crate::controllers::CONTROLLER_MANAGER;
use crate::registry::deletion::{self, DeleteOptions, Propagation, FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use crate::registry::{Part, ResourceInfo, Scope, WriteContext};
use crate::status::{ApiError, ApiResult};

/// How many dependents one pass over an orphaning owner releases (the next pass takes the rest).
const ORPHAN_BATCH: usize = 500;
/// How many of those writes are in flight at once.
const ORPHAN_CONCURRENCY: usize = 16;

/// How an item ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// Part of it is done; the rest comes in the next pass, at once.
    Again,
    /// It failed or has to wait (an owner kind the space does not serve); it comes back after a backoff.
    Retry,
}

pub async fn process(collector: &GcController, work: &Work) -> Outcome {
    let result = match work {
        Work::Dependent(space, uid) => dependent(collector, space, uid).await,
        Work::Owner(space, uid) => owner(collector, space, uid).await,
    };
    match result {
        Ok(outcome) => outcome,
        Err(err) if err.reason == WAITS => {
            tracing::debug!(%err, ?work, "garbage collector: waiting");
            Outcome::Retry
        }
        Err(err) => {
            tracing::warn!(%err, ?work, "garbage collector");
            Outcome::Retry
        }
    }
}

/// The reason of the errors that only mean "not yet" (an owner kind or a dependent's resource not served).
const WAITS: &str = "GarbageCollectorWaits";

fn waits(what: String) -> ApiError {
    ApiError::new(503, WAITS, what)
}

/// kube's `attemptToDeleteItem` for one object with ownerReferences.
async fn dependent(collector: &GcController, space: &SpaceName, uid: &Uid) -> ApiResult<Outcome> {
    let gc = &collector.state;
    let Some(node) = gc.node(space, uid) else { return Ok(Outcome::Done) };
    if node.deleting && !gc.is_deleting_dependents(space, uid) {
        // Being deleted: its own finalizers decide when it goes.
        return Ok(Outcome::Done);
    }
    let Some((row, scope, live)) = read(collector, space, uid, &node.key).await? else { return Ok(Outcome::Done) };
    if deletion::is_deleting_dependents(&live) {
        return owner(collector, space, uid).await;
    }
    let references = classify::references(&live);
    if deletion::is_deleting(&live) || references.is_empty() {
        return Ok(Outcome::Done);
    }
    let mut owners = Vec::with_capacity(references.len());
    for reference in &references {
        match owner_state(collector, space, scope.namespace.as_deref(), reference).await? {
            Some(state) => owners.push((reference.uid.clone(), state)),
            // A cluster-scoped object naming a namespaced owner: kube leaves it alone.
            None => return Ok(Outcome::Done),
        }
    }
    let (has_dependents, in_foreground) = gc.dependents_summary(space, uid);
    let finalizers = deletion::finalizers(&live);
    let resource_version = live.pointer("/metadata/resourceVersion").and_then(Value::as_str).map(str::to_owned);
    let name = &*node.key.name;
    match classify::decide(&owners, has_dependents, in_foreground, &finalizers) {
        Verdict::Keep => Ok(Outcome::Done),
        Verdict::DropReferences(uids) => {
            edit(collector, &row, &scope, name, uid, |object| classify::drop_references(object, &uids)).await.map(|_| Outcome::Done)
        }
        Verdict::DeleteForeground { unblock } => {
            let mut resource_version = resource_version;
            if unblock {
                let Some(edited) = edit(collector, &row, &scope, name, uid, classify::unblock).await? else { return Ok(Outcome::Done) };
                resource_version = edited.pointer("/metadata/resourceVersion").and_then(Value::as_str).map(str::to_owned);
            }
            delete(collector, &row, &scope, name, uid, resource_version, Propagation::Foreground).await
        }
        Verdict::Delete(policy) => delete(collector, &row, &scope, name, uid, resource_version, policy).await,
    }
}

/// An owner being deleted with a GC finalizer: orphans its dependents, or waits for its blocking dependents to go;
/// then lifts the finalizer.
async fn owner(collector: &GcController, space: &SpaceName, uid: &Uid) -> ApiResult<Outcome> {
    let gc = &collector.state;
    let Some((key, waiting)) = gc.waiting(space, uid) else { return Ok(Outcome::Done) };
    let Some((row, scope, live)) = read(collector, space, uid, &key).await? else { return Ok(Outcome::Done) };
    if !deletion::is_deleting(&live) {
        return Ok(Outcome::Done);
    }
    match waiting {
        Waiting::Orphan if deletion::has_finalizer(&live, ORPHAN_FINALIZER) => orphan(collector, space, uid, &row, &scope, &key).await,
        Waiting::Foreground if deletion::has_finalizer(&live, FOREGROUND_FINALIZER) => {
            let blocking = gc.blocking(space, uid);
            if blocking.is_empty() {
                edit(collector, &row, &scope, &key.name, uid, |o| classify::lift_finalizer(o, FOREGROUND_FINALIZER)).await?;
                return Ok(Outcome::Done);
            }
            let pending = blocking.into_iter().filter(|(_, in_foreground)| !in_foreground);
            gc.enqueue(pending.map(|(dependent, _)| Work::Dependent(space.clone(), dependent)).collect());
            Ok(Outcome::Done)
        }
        _ => Ok(Outcome::Done),
    }
}

/// Strips the owner's references from a batch of its dependents; once none is left, lifts `orphan`.
async fn orphan(collector: &GcController, space: &SpaceName, uid: &Uid, row: &ResourceInfo, scope: &Scope, key: &ObjectKey) -> ApiResult<Outcome> {
    let dependents = collector.state.dependents(space, uid);
    let more = dependents.len() > ORPHAN_BATCH;
    let owner_uid = vec![uid.to_string()];
    let owner_uid = &owner_uid;
    let released: Vec<ApiResult<()>> = futures::stream::iter(dependents.into_iter().take(ORPHAN_BATCH))
        .map(|(dependent, key)| async move {
            let row = own_rows(collector, space, &key.resource).into_iter().next()
                .ok_or_else(|| waits(format!("{} is not served in {space}", key.resource.plural)))?;
            let scope = Scope::one(space.clone(), key.namespace.as_deref().map(str::to_owned));
            let edited = edit(collector, &row, &scope, &key.name, &dependent, |object| classify::drop_references(object, owner_uid)).await?;
            if edited.is_none() {
                // Gone (or replaced) without the graph hearing of it: forget it, so the next pass moves on.
                collector.state.forget(space, &dependent);
            }
            Ok(())
        })
        .buffer_unordered(ORPHAN_CONCURRENCY)
        .collect()
        .await;
    released.into_iter().collect::<ApiResult<()>>()?;
    if more {
        return Ok(Outcome::Again);
    }
    edit(collector, row, scope, &key.name, uid, |o| classify::lift_finalizer(o, ORPHAN_FINALIZER)).await?;
    Ok(Outcome::Done)
}

/// Reads the object the graph knows as `uid` at `key`; `None` (and the graph forgets it) if it is gone or the
/// name now holds another object.
async fn read(collector: &GcController, space: &SpaceName, uid: &Uid, key: &ObjectKey) -> ApiResult<Option<(Arc<ResourceInfo>, Scope, Value)>> {
    let rows = own_rows(collector, space, &key.resource);
    let Some(first) = rows.first() else {
        return Err(waits(format!("{} is not served in {space}", key.resource.plural)));
    };
    let scope = Scope::one(space.clone(), key.namespace.as_deref().map(str::to_owned));
    let live = match collector.registry.reader().get(first, &scope, &key.name).await {
        Ok(live) => live,
        Err(ApiError { code: 404, .. }) => {
            collector.state.forget(space, uid);
            return Ok(None);
        }
        Err(err) => return Err(err),
    };
    if live.pointer("/metadata/uid").and_then(Value::as_str) != Some(&uid.to_string()) {
        collector.state.forget(space, uid);
        return Ok(None);
    }
    let api_version = live.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let row = rows.iter().find(|r| r.api_version() == api_version).unwrap_or(first).clone();
    Ok(Some((row, scope, live)))
}

/// The rows that serve a stored resource in `space` (several versions of a built-in, or a CRD's storage rows).
fn own_rows(collector: &GcController, space: &SpaceName, key: &ResourceKey) -> Vec<Arc<ResourceInfo>> {
    let matches = |r: &Arc<ResourceInfo>| r.group == key.group && r.plural == key.plural;
    match key.identity {
        ApiIdentity::BuiltIn => collector.resources.all().iter().filter(|r| matches(r)).cloned().collect(),
        _ => collector.resolver.stored_in(space).into_iter().filter(|r| matches(r) && r.identity() == key.identity).collect(),
    }
}

/// The row serving an owner kind in `space`, as the space's users see it (tenants: no system-only kinds).
fn owner_row(collector: &GcController, space: &SpaceName, group: &str, version: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
    let view = collector.resolver.view(space);
    let table = if space.is_system() { &view.system } else { &view.tenant };
    table.all().iter().find(|r| r.group == group && r.version == version && r.kind == kind).cloned()
}

/// The state of one owner; `None` when the reference is invalid for this dependent (a cluster-scoped dependent
/// naming a namespaced kind). An owner kind the space does not serve is an error that waits.
async fn owner_state(collector: &GcController, space: &SpaceName, namespace: Option<&str>, reference: &Reference) -> ApiResult<Option<OwnerState>> {
    let (group, version) = reference.group_version();
    let Some(row) = owner_row(collector, space, group, version, &reference.kind) else {
        return Err(waits(format!("{} {} is not served in {space}", reference.api_version, reference.kind)));
    };
    if row.namespaced && namespace.is_none() {
        return Ok(None);
    }
    let namespace = namespace.filter(|_| row.namespaced).map(str::to_owned);
    let absent = AbsentOwner {
        space: space.clone(),
        group: group.to_owned(),
        kind: reference.kind.clone(),
        namespace: namespace.clone(),
        name: reference.name.clone(),
        uid: reference.uid.clone(),
    };
    if collector.state.is_absent(&absent) {
        return Ok(Some(OwnerState::Dangling));
    }
    match collector.registry.reader().get(&row, &Scope::one(space.clone(), namespace), &reference.name).await {
        Ok(found) if found.pointer("/metadata/uid").and_then(Value::as_str) == Some(&reference.uid) => {
            Ok(Some(if deletion::is_deleting_dependents(&found) { OwnerState::Waiting } else { OwnerState::Solid }))
        }
        // Not found, another object by that name, or a name no object can have.
        Ok(_) | Err(ApiError { code: 404 | 400, .. }) => {
            collector.state.mark_absent(absent);
            Ok(Some(OwnerState::Dangling))
        }
        Err(err) => Err(err),
    }
}

/// Changes the object `uid` (and only it: a new object by the same name is left alone). `None` if it is gone.
async fn edit(collector: &GcController, row: &ResourceInfo, scope: &Scope, name: &str, uid: &Uid, change: impl Fn(&mut Value) -> bool) -> ApiResult<Option<Value>> {
    let expected = uid.to_string();
    let updated = collector.registry.guaranteed_update(row, scope, name, Part::Main, &WriteContext::server(CONTROLLER_MANAGER, ""), |current| {
        if current.pointer("/metadata/uid").and_then(Value::as_str) != Some(expected.as_str()) {
            return Err(ApiError::not_found(&row.group, &row.plural, name));
        }
        let mut new = current.clone();
        change(&mut new);
        Ok(new)
    }).await;
    match updated {
        Ok(object) => Ok(Some(object)),
        Err(ApiError { code: 404, .. }) => Ok(None),
        Err(err) => Err(err),
    }
}

/// Deletes the object `uid` as it was read (uid and resourceVersion preconditions): a change meanwhile means
/// deciding again.
async fn delete(collector: &GcController, row: &ResourceInfo, scope: &Scope, name: &str, uid: &Uid, resource_version: Option<String>, policy: Propagation) -> ApiResult<Outcome> {
    let options = DeleteOptions {
        precondition_uid: Some(uid.to_string()),
        precondition_resource_version: resource_version,
        propagation: Some(policy),
        ..DeleteOptions::default()
    };
    match collector.registry.delete(row, scope, name, &options, None).await {
        Ok(_) | Err(ApiError { code: 404, .. }) => Ok(Outcome::Done),
        Err(err) => Err(err),
    }
}
