//! The admission plugins kube-apiserver runs on every new pod by default, after LimitRanger:
//! - **ServiceAccount**: `spec.serviceAccountName` defaults to `default`; unless the pod or its service account
//!   turns `automountServiceAccountToken` off, a projected `kube-api-access-<5>` volume (a bound token, the
//!   namespace's `kube-root-ca.crt` and the namespace) is added and mounted read-only at
//!   `/var/run/secrets/kubernetes.io/serviceaccount` in every container and init container that mounts nothing
//!   there; the service account's `imagePullSecrets` when the pod has none. A named service account that does not
//!   exist is kube's 403. Unlike kube, a missing `default` one is not refused: it is made by a controller just after
//!   its namespace (`controllers/space_defaults.rs`), and a pod created in between gets the token volume anyway.
//! - **Priority**: `spec.priority` and `spec.preemptionPolicy` from the pod's PriorityClass (system-only, read in
//!   the system space; kube's two `system-*-critical` classes are known without being stored), else from the
//!   class marked `globalDefault`, else 0 and `PreemptLowerPriority`; a class that does not exist, or a priority or
//!   policy the pod sets that differs from its class's, is kube's 403.
//! - **DefaultTolerationSeconds**: a pod that does not tolerate `node.kubernetes.io/not-ready` or `unreachable`
//!   `NoExecute` taints tolerates them for 300 s.
//!
//! These run in admission's defaults (`Admission::default`, before the kind's strategy), so mutating webhooks
//! and the pod's validation see them, as in kube.

use std::sync::Arc;

use async_trait::async_trait;
use kspaces_storage::SpaceName;
use rand::Rng;
use serde_json::{json, Map, Value};

use super::{Context, Kind, Rules};
use crate::registry::admission::{Admission, Attributes, Operation};
use crate::registry::read::ListOptions;
use crate::registry::strategy::Part;
use crate::registry::{GenericStore, ResourceInfo, ResourceTable, Scope};
use crate::status::{ApiError, ApiResult};

pub const KIND: Kind = Kind::rules(|context: &Context, rules: &mut Rules| {
    rules.admit(Arc::new(PodAdmission { resources: context.resources.clone() }));
});

/// Where kube mounts a pod's service account credentials.
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The prefix of the token volume's name.
const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";
/// The bound token's lifetime kube asks for (an hour and a bit, so a kubelet refreshes it in time).
const TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// kube's name generator's alphabet (no vowels, no confusable digits).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// kube's two priority classes every cluster has.
const SYSTEM_CLASSES: &[(&str, i64)] = &[("system-node-critical", 2_000_001_000), ("system-cluster-critical", 2_000_000_000)];
/// How long a pod tolerates a node that is not ready or unreachable.
const TOLERATION_SECONDS: i64 = 300;

struct PodAdmission {
    resources: ResourceTable,
}

#[async_trait]
impl Admission for PodAdmission {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        resource.is("", "Pod") && operation == Operation::Create
    }

    async fn admit(&self, _registry: &GenericStore, _attributes: &Attributes<'_>) -> ApiResult<()> {
        Ok(())
    }

    async fn default(&self, registry: &GenericStore, attributes: &Attributes<'_>, pod: &mut Value) -> ApiResult<()> {
        let (Some(namespace), Part::Main) = (attributes.namespace, attributes.part) else { return Ok(()) };
        let refuse = |why: String| ApiError::forbidden_object("", &attributes.resource.plural, attributes.name, &why);
        if !pod.get("spec").is_some_and(Value::is_object) {
            return Ok(());
        }
        self.service_account(registry, attributes.space, namespace, pod).await.map_err(refuse)?;
        self.priority(registry, pod).await.map_err(refuse)?;
        tolerate_unready_nodes(pod);
        Ok(())
    }
}

impl PodAdmission {
    /// kube's ServiceAccount admission (see the module's doc).
    async fn service_account(&self, registry: &GenericStore, space: &SpaceName, namespace: &str, pod: &mut Value) -> Result<(), String> {
        let mirror = pod.pointer("/metadata/annotations/kubernetes.io~1config.mirror").is_some();
        let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
        if mirror {
            return Ok(());
        }
        let name = match spec.get("serviceAccountName").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => {
                spec.insert("serviceAccountName".into(), json!("default"));
                "default".to_owned()
            }
        };
        let account = match self.resources.by_kind("", "ServiceAccount") {
            Some(row) => match registry.reader().get(row, &Scope::one(space.clone(), Some(namespace.to_owned())), &name).await {
                Ok(account) => Some(account),
                Err(err) if err.code == 404 && name == "default" => None,
                Err(err) if err.code == 404 => {
                    return Err(format!("error looking up service account {namespace}/{name}: serviceaccount \"{name}\" not found"));
                }
                Err(err) => return Err(format!("error looking up service account {namespace}/{name}: {}", err.message)),
            },
            None => None,
        };
        let automount = spec
            .get("automountServiceAccountToken")
            .and_then(Value::as_bool)
            .or_else(|| account.as_ref().and_then(|a| a.get("automountServiceAccountToken")).and_then(Value::as_bool))
            .unwrap_or(true);
        if automount {
            mount_token(spec);
        }
        let pull_secrets = account.as_ref().and_then(|a| a.get("imagePullSecrets")).and_then(Value::as_array).filter(|s| !s.is_empty());
        if let (Some(secrets), true) = (pull_secrets, spec.get("imagePullSecrets").and_then(Value::as_array).is_none_or(Vec::is_empty)) {
            spec.insert("imagePullSecrets".into(), Value::Array(secrets.clone()));
        }
        Ok(())
    }

    /// kube's Priority admission (see the module's doc).
    async fn priority(&self, registry: &GenericStore, pod: &mut Value) -> Result<(), String> {
        let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
        let class_name = spec.get("priorityClassName").and_then(Value::as_str).unwrap_or_default().to_owned();
        let row = self.resources.by_kind("scheduling.k8s.io", "PriorityClass");
        let system = Scope::one(SpaceName::system(), None);
        let (name, priority, policy) = if class_name.is_empty() {
            let classes = match row {
                Some(row) => registry.reader().list(row, &system, &ListOptions::default()).await.map_err(|e| e.message)?.0,
                None => Vec::new(),
            };
            match classes.iter().find(|class| class.get("globalDefault").and_then(Value::as_bool) == Some(true)) {
                Some(class) => (meta_name(class), class_value(class), class.get("preemptionPolicy").cloned()),
                None => (String::new(), 0, Some(json!("PreemptLowerPriority"))),
            }
        } else {
            let stored = match row {
                Some(row) => match registry.reader().get(row, &system, &class_name).await {
                    Ok(class) => Some(class),
                    Err(err) if err.code == 404 => None,
                    Err(err) => return Err(err.message),
                },
                None => None,
            };
            match (stored, SYSTEM_CLASSES.iter().find(|(name, _)| *name == class_name)) {
                (Some(class), _) => (class_name.clone(), class_value(&class), class.get("preemptionPolicy").cloned()),
                (None, Some((_, value))) => (class_name.clone(), *value, Some(json!("PreemptLowerPriority"))),
                (None, None) => return Err(format!("no PriorityClass with name {class_name} was found")),
            }
        };
        if let Some(given) = spec.get("priority").and_then(Value::as_i64).filter(|given| *given != priority) {
            return Err(format!(
                "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"));
        }
        if !name.is_empty() {
            spec.insert("priorityClassName".into(), json!(name));
        }
        spec.insert("priority".into(), json!(priority));
        if let Some(policy) = policy.filter(|p| p.is_string()) {
            if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str).filter(|given| Some(*given) != policy.as_str()) {
                return Err(format!(
                    "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {} from the given PriorityClass name",
                    policy.as_str().unwrap_or_default()));
            }
            spec.insert("preemptionPolicy".into(), policy);
        }
        Ok(())
    }
}

fn meta_name(object: &Value) -> String {
    object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn class_value(class: &Value) -> i64 {
    class.get("value").and_then(Value::as_i64).unwrap_or(0)
}

/// Mounts the service account token volume in every container and init container that mounts nothing at
/// `TOKEN_MOUNT_PATH`, adding the volume when one of them needs it and the pod has no `kube-api-access-*` volume.
fn mount_token(spec: &mut Map<String, Value>) {
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|volume| volume.get("name").and_then(Value::as_str))
        .find(|name| name.starts_with(TOKEN_VOLUME_PREFIX))
        .map(str::to_owned);
    let volume_name = existing.clone().unwrap_or_else(|| {
        let mut random = rand::rng();
        let suffix: String = (0..5).map(|_| NAME_ALPHABET[random.random_range(0..NAME_ALPHABET.len())] as char).collect();
        format!("{TOKEN_VOLUME_PREFIX}{suffix}")
    });
    let mut needed = false;
    for list in ["initContainers", "containers"] {
        for container in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut) {
            let mounts = container.entry("volumeMounts").or_insert_with(|| json!([]));
            let Some(mounts) = mounts.as_array_mut() else { continue };
            if mounts.iter().any(|mount| mount.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH)) {
                continue;
            }
            mounts.push(json!({"name": volume_name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH}));
            needed = true;
        }
    }
    if existing.is_none() && needed {
        let volume = json!({"name": volume_name, "projected": {"defaultMode": 0o644, "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ]}});
        match spec.get_mut("volumes").and_then(Value::as_array_mut) {
            Some(volumes) => volumes.push(volume),
            None => {
                spec.insert("volumes".into(), json!([volume]));
            }
        }
    }
}

/// kube's DefaultTolerationSeconds: 300 s of `not-ready` and `unreachable` `NoExecute` taints, unless the pod
/// already tolerates them (a toleration of that key, or of every key, with that effect or every effect).
fn tolerate_unready_nodes(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    let Some(tolerations) = tolerations.as_array_mut() else { return };
    for key in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
        let tolerated = tolerations.iter().any(|toleration| {
            let field = |name: &str| toleration.get(name).and_then(Value::as_str).unwrap_or_default();
            (field("key") == key || field("key").is_empty()) && (field("effect") == "NoExecute" || field("effect").is_empty())
        });
        if !tolerated {
            tolerations.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": TOLERATION_SECONDS}));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{mount_token, tolerate_unready_nodes, TOKEN_MOUNT_PATH};

    #[test]
    fn the_token_volume_is_mounted_where_nothing_is_and_added_once() {
        let mut pod = json!({"spec": {
            "containers": [{"name": "a"}, {"name": "b", "volumeMounts": [{"name": "own", "mountPath": TOKEN_MOUNT_PATH}]}],
            "initContainers": [{"name": "i"}],
        }});
        let spec = pod["spec"].as_object_mut().unwrap_or_else(|| panic!("a spec"));
        mount_token(spec);
        let volumes = pod["spec"]["volumes"].as_array().cloned().unwrap_or_default();
        assert_eq!(volumes.len(), 1);
        let name = volumes[0]["name"].as_str().unwrap_or_default().to_owned();
        assert!(name.starts_with("kube-api-access-") && name.len() == "kube-api-access-".len() + 5, "{name}");
        assert_eq!(pod["spec"]["containers"][0]["volumeMounts"], json!([{"name": name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH}]));
        assert_eq!(pod["spec"]["containers"][1]["volumeMounts"][0]["name"], "own");
        assert_eq!(pod["spec"]["initContainers"][0]["volumeMounts"][0]["name"], json!(name));
        // A pod that mounts its own credentials everywhere gets no volume.
        let mut own = json!({"spec": {"containers": [{"name": "b", "volumeMounts": [{"name": "own", "mountPath": TOKEN_MOUNT_PATH}]}]}});
        mount_token(own["spec"].as_object_mut().unwrap_or_else(|| panic!("a spec")));
        assert_eq!(own["spec"].get("volumes"), None);
    }

    #[test]
    fn unready_nodes_are_tolerated_unless_the_pod_says_otherwise() {
        let cases = [
            (json!([]), 2),
            (json!([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}]), 2),
            (json!([{"operator": "Exists"}]), 1),
            (json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoSchedule"}]), 3),
        ];
        for (given, expected) in cases {
            let mut pod = json!({"spec": {"tolerations": given.clone()}});
            tolerate_unready_nodes(&mut pod);
            assert_eq!(pod["spec"]["tolerations"].as_array().map(Vec::len), Some(expected), "{given}");
        }
    }
}
