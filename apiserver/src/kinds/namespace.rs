//! Namespace: kube's rules (the `kubernetes.io/metadata.name` label; a new namespace is `Active` and always
//! carries the `kubernetes` content finalizer). Content finalizers are written through `/finalize` only (the main
//! resource keeps them, as kube's namespace strategy does) and hold it Terminating while the namespace controller
//! empties it.
//!
//! Admission (kube's NamespaceLifecycle): nothing is created in a namespace that does not exist or is being
//! terminated, and `default`, `kube-system` and `kube-public` cannot be deleted by a request (in a tenant space
//! they go only with the tenant, whose controller deletes them as the server).

use std::sync::Arc;

use async_trait::async_trait;
use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Context, Kind, Rules};
use crate::registry::admission::{Admission, Attributes, Operation, Question};
use crate::registry::strategy::{Part, Strategy};
use crate::registry::{GenericStore, ResourceInfo, Scope};
use crate::status::{ApiError, ApiResult};

/// Namespace: its strategy and NamespaceLifecycle admission.
pub const KIND: Kind = Kind::rules(rules);

fn rules(context: &Context, rules: &mut Rules) {
    rules.strategy("", "Namespace", Arc::new(NamespaceStrategy));
    if let Some(namespaces) = context.resources.by_kind("", "Namespace") {
        rules.admit(Arc::new(NamespaceLifecycle { namespaces: namespaces.clone() }));
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
}

/// What NamespaceLifecycle reads of a namespace, on every create in it: whether it is being deleted, and its
/// phase. Parsed from the stored bytes into these two fields alone (serde passes over the rest, `managedFields`
/// included) instead of into a whole `Value`: that parse was half the admission's cost and about 4 % of a create's
/// server CPU (docs/benchmarks.md, "Where a create's CPU goes").
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
        let scope = Scope::one(attributes.space.clone(), None);
        let record = registry.reader().record(&self.namespaces, &scope, namespace).await?;
        let lifecycle: Lifecycle = serde_json::from_slice(&record.value)
            .map_err(|err| ApiError::internal(format!("stored namespace {namespace} could not be read: {err}")))?;
        if lifecycle.terminating() {
            return Err(ApiError::forbidden(format!(
                "{} \"{}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                attributes.resource.plural, attributes.name)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Lifecycle;

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
}
