//! The one helper of the registry's table tests (the store's own, and each kind's in `crate::kinds::tests`): a
//! table of writes and reads run in order against a `GenericStore` on the memory backend, each outcome written as
//! one line (the object with its volatile fields masked, or the error's code, reason and message), the whole
//! compared with an `expect_test` snapshot. `UPDATE_EXPECT=1 cargo test` rewrites the snapshots.

use std::sync::Arc;

use expect_test::Expect;
use kspaces_authz::{Caller, UserInfo};
use kspaces_storage::SpaceName;
use serde_json::{json, Value};

use super::{DeleteOptions, DeleteOutcome, GenericStore, Part, ResourceInfo, Scope, WriteContext};
use crate::status::{ApiError, ApiResult};

/// Finds the resource a step names (`group/version/plural`, or `version/plural` for the core group) in a space.
pub type Lookup = Box<dyn Fn(&SpaceName, &str, &str, &str) -> Option<Arc<ResourceInfo>> + Send + Sync>;

/// What one row does.
pub enum Verb {
    Create(Value),
    /// A PUT of the whole object (of `part`).
    Update(Value, Part),
    /// A JSON merge patch, through the read-modify-write loop.
    Patch(Value, Part),
    Delete,
    Get,
}

/// One row: a verb on a resource at a place, by a caller (`None`: the server itself), maybe a dry run.
pub struct Step {
    pub verb: Verb,
    /// `group/version/plural`, or `version/plural` for the core group.
    pub resource: &'static str,
    /// `space`, or `space/namespace`.
    pub at: &'static str,
    /// The object's name (creates take theirs from the body).
    pub name: &'static str,
    pub caller: Option<Arc<Caller>>,
    pub dry_run: bool,
    /// The parts of the outcome shown (JSON pointers); all of it when empty.
    pub show: &'static [&'static str],
}

impl Step {
    fn new(verb: Verb, resource: &'static str, at: &'static str, name: &'static str) -> Step {
        Step { verb, resource, at, name, caller: None, dry_run: false, show: &[] }
    }

    pub fn create(resource: &'static str, at: &'static str, body: Value) -> Step {
        Step::new(Verb::Create(body), resource, at, "")
    }

    pub fn update(resource: &'static str, at: &'static str, name: &'static str, body: Value) -> Step {
        Step::new(Verb::Update(body, Part::Main), resource, at, name)
    }

    pub fn patch(resource: &'static str, at: &'static str, name: &'static str, patch: Value) -> Step {
        Step::new(Verb::Patch(patch, Part::Main), resource, at, name)
    }

    pub fn delete(resource: &'static str, at: &'static str, name: &'static str) -> Step {
        Step::new(Verb::Delete, resource, at, name)
    }

    pub fn get(resource: &'static str, at: &'static str, name: &'static str) -> Step {
        Step::new(Verb::Get, resource, at, name)
    }

    /// The same step on a subresource (`status`, `finalize`).
    pub fn on(mut self, part: Part) -> Step {
        self.verb = match self.verb {
            Verb::Update(body, _) => Verb::Update(body, part),
            Verb::Patch(patch, _) => Verb::Patch(patch, part),
            other => other,
        };
        self
    }

    /// The same step made by user `name` of `tenant` in `groups` (a system user when `tenant` is `system`).
    pub fn by(mut self, name: &str, tenant: &str, groups: &[&str]) -> Step {
        let user = UserInfo::authenticated(name.into(), String::new(), groups.iter().map(|g| g.to_string()).collect(), Some(tenant.into()));
        self.caller = Some(Arc::new(Caller { user, tenant: Some(tenant.into()), system: tenant == "system" }));
        self
    }

    pub fn dry_run(mut self) -> Step {
        self.dry_run = true;
        self
    }

    /// Shows only these parts of the outcome (JSON pointers).
    pub fn show(mut self, pointers: &'static [&'static str]) -> Step {
        self.show = pointers;
        self
    }
}

/// A registry under test, and how its steps find their resources.
pub struct Harness {
    pub registry: GenericStore,
    pub lookup: Lookup,
}

impl Harness {
    /// Runs one step; its outcome as one line.
    pub async fn run(&self, step: &Step) -> String {
        match self.outcome(step).await {
            Ok(object) if step.show.is_empty() => format!("ok {}", masked(object)),
            Ok(object) => {
                let object = masked(object);
                let shown: Vec<String> = step.show.iter().map(|pointer| format!("{pointer}={}", object.pointer(pointer).unwrap_or(&Value::Null))).collect();
                format!("ok {}", shown.join(" "))
            }
            Err(err) => format!("{} {}: {}", err.code, err.reason, err.message),
        }
    }

    async fn outcome(&self, step: &Step) -> ApiResult<Value> {
        let (space, namespace) = match step.at.split_once('/') {
            Some((space, namespace)) => (space, Some(namespace.to_owned())),
            None => (step.at, None),
        };
        let space = SpaceName::new(space).map_err(|e| ApiError::bad_request(e.to_string()))?;
        let mut parts: Vec<&str> = step.resource.split('/').collect();
        if parts.len() == 2 {
            parts.insert(0, "");
        }
        let [group, version, plural] = parts[..] else { return Err(ApiError::bad_request("resource: group/version/plural")) };
        let resource = (self.lookup)(&space, group, version, plural).ok_or_else(ApiError::no_route)?;
        let scope = Scope::one(space, namespace.filter(|_| resource.namespaced));
        let mut write = WriteContext::update("test", "", step.dry_run);
        if let Some(caller) = &step.caller {
            write = write.by(caller.clone());
        }
        let registry = &self.registry;
        match &step.verb {
            Verb::Create(body) => registry.create(&resource, &scope, body.clone(), &write).await,
            Verb::Update(body, part) => {
                let write = WriteContext { subresource: subresource(*part).into(), ..write };
                registry.update(&resource, &scope, step.name, body.clone(), *part, &write).await
            }
            Verb::Patch(patch, part) => {
                let write = WriteContext { subresource: subresource(*part).into(), ..write };
                registry.guaranteed_update(&resource, &scope, step.name, *part, &write, |current| {
                    let mut patched = current.clone();
                    json_patch::merge(&mut patched, patch);
                    Ok(patched)
                }).await
            }
            Verb::Delete => {
                let options = DeleteOptions { dry_run: step.dry_run, ..DeleteOptions::default() };
                match registry.delete(&resource, &scope, step.name, &options, step.caller.as_deref()).await? {
                    DeleteOutcome::Deleted(object) => Ok(json!({"deleted": masked(object)})),
                    DeleteOutcome::Pending(object) => Ok(json!({"pending": masked(object)})),
                }
            }
            Verb::Get => registry.get(&resource, &scope, step.name).await,
        }
    }
}

fn subresource(part: Part) -> &'static str {
    match part {
        Part::Main => "",
        Part::Status => "status",
        Part::Finalize => "finalize",
        Part::Approval => "approval",
    }
}

/// The object with what changes from run to run masked (uid, timestamps; revisions are the memory store's, the
/// same every run), managedFields in short.
fn masked(mut object: Value) -> Value {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in ["uid", "creationTimestamp", "deletionTimestamp"] {
            if metadata.contains_key(field) {
                metadata.insert(field.into(), json!("*"));
            }
        }
        // Each managedFields entry as `manager operation[ subresource]` (the field sets are the field manager's tests').
        if let Some(entries) = metadata.get_mut("managedFields").and_then(Value::as_array_mut) {
            for entry in entries.iter_mut() {
                let text = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
                let summary = format!("{} {} {}", text("manager"), text("operation"), text("subresource"));
                *entry = json!(summary.trim_end());
            }
        }
    }
    for conditions in object.pointer_mut("/status/conditions").and_then(Value::as_array_mut).into_iter() {
        conditions.iter_mut().filter_map(Value::as_object_mut).for_each(|condition| {
            condition.insert("lastTransitionTime".into(), json!("*"));
        });
    }
    object
}

/// Runs `rows` in order against `harness` and compares every outcome with `expect`.
pub async fn check(harness: &Harness, rows: Vec<(&str, Step)>, expect: Expect) {
    let mut report = String::new();
    for (what, step) in rows {
        report.push_str(&format!("{what}\n  {}\n", harness.run(&step).await));
    }
    expect.assert_eq(&report);
}
