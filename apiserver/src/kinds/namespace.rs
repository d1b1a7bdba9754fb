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
use serde_json::{json, Value};

use super::{Context, Kind, Rules};
use crate::registry::admission::{Admission, Attributes, Operation, Question};
use crate::registry::strategy::{Part, Strategy};
use crate::registry::{is_deleting, GenericStore, ResourceInfo, Scope};
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
        let object = registry.reader().get(&self.namespaces, &scope, namespace).await?;
        if is_deleting(&object) || object.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating") {
            return Err(ApiError::forbidden(format!(
                "{} \"{}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                attributes.resource.plural, attributes.name)));
        }
        Ok(())
    }
}
