//! Namespace: kube's rules (the `kubernetes.io/metadata.name` label; a new namespace is `Active` and always
//! carries the `kubernetes` content finalizer). Content finalizers are written through `/finalize` only (the main
//! resource keeps them, as kube's namespace strategy does) and hold it Terminating while the namespace controller
//! empties it.
//!
//! Admission (kube's NamespaceLifecycle): nothing is created in a namespace that does not exist or is being
//! terminated, and `default`, `kube-system` and `kube-public` cannot be deleted by a request (in a tenant space
//! they go only with the tenant, whose controller deletes them as the server).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use kspaces_authz::Caller;
use kspaces_storage::{Revision, SpaceName};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Context, Kind, Rules};
use crate::registry::admission::{Admission, Attributes, Operation, Question};
use crate::registry::observe::WriteObserver;
use crate::registry::strategy::{Part, Strategy};
use crate::registry::{GenericStore, ResourceInfo, Scope};
use crate::status::{ApiError, ApiResult};

/// Namespace: its strategy and NamespaceLifecycle admission.
pub const KIND: Kind = Kind::rules(rules);

fn rules(context: &Context, rules: &mut Rules) {
    rules.strategy("", "Namespace", Arc::new(NamespaceStrategy));
    if let Some(namespaces) = context.resources.by_kind("", "Namespace") {
        let known = Arc::new(Lifecycles::default());
        rules.observe(known.clone());
        rules.admit(Arc::new(NamespaceLifecycle { namespaces: namespaces.clone(), known }));
    }
}

/// The content finalizer every namespace starts with; the namespace controller lifts it.
pub const KUBERNETES_FINALIZER: &str = "kubernetes";

/// Namespaces that can never be deleted by a request (kube-apiserver's NamespaceLifecycle admission).
pub const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

pub struct NamespaceStrategy;

/// kube-apiserver labels every namespace with its own name, so selectors can pick namespaces by name.
fn label_with_name(object: &mut Value) {
    let Some(name) = object.pointer("/metadata/name").and_then(Value::as_str).map(str::to_owned) else { return };
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    let labels = metadata.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    labels["kubernetes.io/metadata.name"] = json!(name);
}

impl Strategy for NamespaceStrategy {
    /// Active, with the `kubernetes` finalizer added to any the body names.
    fn prepare_create(&self, _resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        label_with_name(object);
        let Some(map) = object.as_object_mut() else { return };
        map.insert("status".into(), json!({"phase": "Active"}));
        let spec = map.entry("spec").or_insert_with(|| json!({}));
        let Some(spec) = spec.as_object_mut() else { return };
        let mut finalizers = spec.get("finalizers").and_then(Value::as_array).cloned().unwrap_or_default();
        if !finalizers.iter().any(|f| f == KUBERNETES_FINALIZER) {
            finalizers.push(json!(KUBERNETES_FINALIZER));
        }
        spec.insert("finalizers".into(), json!(finalizers));
    }

    /// The main resource keeps the content finalizers; `/finalize` changes nothing else.
    fn prepare_update(&self, _resource: &ResourceInfo, _space: &SpaceName, old: &Value, new: &mut Value, part: Part) {
        label_with_name(new);
        if part != Part::Main || !new.is_object() {
            return;
        }
        if !new.get("spec").is_some_and(Value::is_object) {
            new["spec"] = json!({});
        }
        match old.pointer("/spec/finalizers") {
            Some(finalizers) => new["spec"]["finalizers"] = finalizers.clone(),
            None => {
                if let Some(spec) = new["spec"].as_object_mut() {
                    spec.remove("finalizers");
                }
            }
        }
    }
}

/// kube's NamespaceLifecycle admission.
pub struct NamespaceLifecycle {
    /// The Namespace resource, whose objects a create's namespace is looked up as.
    pub namespaces: Arc<ResourceInfo>,
    /// Whether the namespaces this process holds are being terminated.
    known: Arc<Lifecycles>,
}

/// Whether namespaces are being terminated: kept for the namespaces creates go to, and for every namespace being
/// terminated, as of the last write of it this process was told of (a write observer: its own writes before they
/// are answered, other replicas' through the caches' feed) or the last read of it. kube's admission reads an
/// informer's cache. This one reads the store for a namespace it does not hold, and keeps what it read unless a
/// namespace write was told meanwhile. An active namespace nobody creates in is not held, so idle tenants and
/// workspaces cost nothing here. A deleted one is dropped. Reading the store on every create was about 4 % of a
/// create's server CPU (docs/benchmarks.md, "Half the context switches"). A namespace another replica has just
/// started terminating may still admit a create here for as long as the feed takes to tell this one, as an
/// informer's lag allows in kube. The namespace controller deletes what that lets in.
#[derive(Default)]
struct Lifecycles {
    spaces: RwLock<HashMap<SpaceName, Held>>,
    /// How many namespace writes were told (changed under `spaces`' lock): a read that started before one keeps
    /// nothing, since it may be older than the write.
    writes: AtomicU64,
}

/// A space's held namespaces, by name: terminating or not, as of a revision.
type Held = HashMap<String, (bool, Revision)>;

impl Lifecycles {
    /// Whether `namespace` is being terminated, if this process holds it.
    fn terminating(&self, space: &SpaceName, namespace: &str) -> Option<bool> {
        let spaces = self.spaces.read().unwrap_or_else(|e| e.into_inner());
        spaces.get(space).and_then(|names| names.get(namespace)).map(|(terminating, _)| *terminating)
    }

    /// Where a read of the store starts, to pass to `keep`.
    fn before_read(&self) -> u64 {
        self.writes.load(Ordering::Acquire)
    }

    /// Keeps what a read that started at `before` found, unless a namespace write was told since.
    fn keep(&self, space: &SpaceName, namespace: &str, terminating: bool, revision: Revision, before: u64) {
        let mut spaces = self.spaces.write().unwrap_or_else(|e| e.into_inner());
        if self.writes.load(Ordering::Acquire) == before {
            spaces.entry(space.clone()).or_default().entry(namespace.to_owned()).or_insert((terminating, revision));
        }
    }
}

impl WriteObserver for Lifecycles {
    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        if !resource.is("", "Namespace") {
            return;
        }
        // Gone, or not readable as a namespace: not held (the store read reports the latter).
        let terminating = object.and_then(|object| Lifecycle::deserialize(object).ok()).map(|lifecycle| lifecycle.terminating());
        let mut spaces = self.spaces.write().unwrap_or_else(|e| e.into_inner());
        self.writes.fetch_add(1, Ordering::Release);
        let known = spaces.get(space).and_then(|names| names.get(name)).map(|(_, at)| *at);
        if known.is_some_and(|at| at > revision) {
            return;
        }
        match terminating {
            Some(terminating) if terminating || known.is_some() => {
                spaces.entry(space.clone()).or_default().insert(name.to_owned(), (terminating, revision));
            }
            Some(_) => {}
            None => {
                if let Some(names) = spaces.get_mut(space) {
                    names.remove(name);
                    if names.is_empty() {
                        spaces.remove(space);
                    }
                }
            }
        }
    }

    /// Writes this process did not hear of may have changed any namespace: read each again when next needed.
    fn resync(&self) {
        let mut spaces = self.spaces.write().unwrap_or_else(|e| e.into_inner());
        self.writes.fetch_add(1, Ordering::Release);
        spaces.clear();
    }
}

/// What NamespaceLifecycle reads of a namespace: whether it is being deleted, and its phase. From the store,
/// parsed from the stored bytes into these two fields alone (serde passes over the rest, `managedFields`
/// included) instead of into a whole `Value`.
#[derive(Deserialize)]
struct Lifecycle {
    metadata: Option<LifecycleMetadata>,
    status: Option<LifecycleStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LifecycleMetadata {
    /// Set (not `null`) once the namespace is being deleted.
    deletion_timestamp: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct LifecycleStatus {
    phase: Option<Value>,
}

impl Lifecycle {
    fn terminating(&self) -> bool {
        let deleting = self.metadata.as_ref().is_some_and(|metadata| metadata.deletion_timestamp.is_some());
        let phase = self.status.as_ref().and_then(|status| status.phase.as_ref()).and_then(Value::as_str);
        deleting || phase == Some("Terminating")
    }
}

#[async_trait]
impl Admission for NamespaceLifecycle {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        match operation {
            Operation::Create => resource.namespaced,
            Operation::Delete => resource.is("", "Namespace"),
            Operation::Update => false,
        }
    }

    fn refuses(&self, _registry: &GenericStore, question: &Question<'_>) -> Option<String> {
        let immortal = IMMORTAL_NAMESPACES.contains(&question.name);
        (immortal && question.verb_in(&["delete"]) && question.covers("", "namespaces"))
            .then(|| format!("namespaces \"{}\" may not be deleted", question.name))
    }

    async fn admit(&self, registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        if attributes.operation == Operation::Delete {
            if attributes.caller.is_some() && IMMORTAL_NAMESPACES.contains(&attributes.name) {
                return Err(ApiError::forbidden(format!(
                    "namespaces \"{}\" is forbidden: this namespace may not be deleted", attributes.name)));
            }
            return Ok(());
        }
        let Some(namespace) = attributes.namespace else { return Ok(()) };
        let terminating = match self.known.terminating(attributes.space, namespace) {
            Some(terminating) => terminating,
            None => {
                let before = self.known.before_read();
                let scope = Scope::one(attributes.space.clone(), None);
                let record = registry.reader().record(&self.namespaces, &scope, namespace).await?;
                let lifecycle: Lifecycle = serde_json::from_slice(&record.value)
                    .map_err(|err| ApiError::internal(format!("stored namespace {namespace} could not be read: {err}")))?;
                self.known.keep(attributes.space, namespace, lifecycle.terminating(), record.revision, before);
                lifecycle.terminating()
            }
        };
        if terminating {
            return Err(ApiError::forbidden(format!(
                "{} \"{}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                attributes.resource.plural, attributes.name)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use kspaces_storage::{Revision, SpaceName};
    use serde_json::json;

    use super::{Lifecycle, Lifecycles};
    use crate::registry::builtin::builtin_resources;
    use crate::registry::observe::WriteObserver;

    fn terminating(stored: &str) -> bool {
        serde_json::from_str::<Lifecycle>(stored).unwrap_or_else(|err| panic!("{stored}: {err}")).terminating()
    }

    #[test]
    fn a_namespace_is_terminating_once_deleted_or_in_that_phase() {
        assert!(!terminating(r#"{"metadata":{"name":"dev","managedFields":[{"manager":"m"}]},"spec":{},"status":{"phase":"Active"}}"#));
        assert!(!terminating(r#"{"metadata":{"name":"dev","deletionTimestamp":null},"status":null}"#));
        assert!(!terminating(r#"{"metadata":{"name":"dev"}}"#));
        assert!(terminating(r#"{"metadata":{"name":"dev","deletionTimestamp":"2026-11-28T10:00:00Z"},"status":{"phase":"Active"}}"#));
        assert!(terminating(r#"{"status":{"phase":"Terminating"},"metadata":{"name":"dev"}}"#));
    }

    #[test]
    fn what_admission_holds_of_a_namespace_follows_its_writes_and_never_goes_back() {
        let rows = builtin_resources();
        let row = |kind: &str| rows.iter().find(|row| row.group.is_empty() && row.kind == kind).expect("a built-in row");
        let (namespaces, configmaps) = (row("Namespace"), row("ConfigMap"));
        let (space, other) = (SpaceName::system(), SpaceName::new("acme").expect("a tenant's space"));
        let known = Lifecycles::default();
        let active = json!({"metadata": {"name": "dev"}, "status": {"phase": "Active"}});
        let deleting = json!({"metadata": {"name": "dev", "deletionTimestamp": "2026-11-28T10:00:00Z"}, "status": {"phase": "Active"}});

        known.written(namespaces, &space, "dev", Some(&active), Revision(5));
        assert_eq!(known.terminating(&space, "dev"), None, "an active namespace nobody creates in is not held");
        let before = known.before_read();
        known.keep(&space, "dev", false, Revision(5), before);
        assert_eq!(known.terminating(&space, "dev"), Some(false), "what a create read is kept");
        assert_eq!(known.terminating(&other, "dev"), None, "each space its own");

        known.written(configmaps, &space, "dev", Some(&deleting), Revision(6));
        assert_eq!(known.terminating(&space, "dev"), Some(false), "only namespaces count");
        known.written(namespaces, &space, "dev", Some(&deleting), Revision(7));
        assert_eq!(known.terminating(&space, "dev"), Some(true));
        known.written(namespaces, &space, "dev", Some(&active), Revision(6));
        assert_eq!(known.terminating(&space, "dev"), Some(true), "older news does not undo newer");

        let before = known.before_read();
        known.written(namespaces, &space, "dev", None, Revision(9));
        assert_eq!(known.terminating(&space, "dev"), None, "deleted: dropped");
        known.keep(&space, "dev", true, Revision(7), before);
        assert_eq!(known.terminating(&space, "dev"), None, "a read that started before a namespace write keeps nothing");

        known.written(namespaces, &other, "doomed", Some(&deleting), Revision(3));
        assert_eq!(known.terminating(&other, "doomed"), Some(true), "a terminating namespace is held, read or not");
        known.written(namespaces, &other, "odd", Some(&json!({"metadata": "not an object"})), Revision(13));
        assert_eq!(known.terminating(&other, "odd"), None, "unreadable: the store read reports it");
        known.resync();
        assert_eq!(known.terminating(&other, "doomed"), None, "after lost history, everything is read again");
    }
}
