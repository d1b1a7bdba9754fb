//! The defaults of the storage kinds without rules of their own: PersistentVolumes and their claims (a volume
//! mode, a reclaim policy, the `Pending` phase a new one starts in), StorageClasses and CSIDrivers.

use serde_json::{json, Value};

use super::groups::spec_mut;
use super::pod_spec::default_volume_plugins;
use super::Write;
use crate::kinds::pod_template::set_default;

/// PersistentVolume: reclaimed by `Retain`, a `Filesystem`; its plugins' defaults; a new one is `Pending` since
/// now (kube's strategy resets a new volume's status and stamps the phase's transition).
pub(crate) fn persistent_volume(object: &mut Value, write: Write) {
    if let Some(spec) = spec_mut(object) {
        set_default(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
        set_default(spec, "volumeMode", json!("Filesystem"));
        default_volume_plugins(spec);
    }
    let status = match write {
        Write::Create => Some(json!({"phase": "Pending", "lastPhaseTransitionTime": crate::registry::now()})),
        Write::Update => None,
    };
    pending(object, status);
}

/// PersistentVolumeClaim: a `Filesystem`; a new claim's status is just `Pending`.
pub(crate) fn persistent_volume_claim(object: &mut Value, write: Write) {
    default_claim(object);
    let status = (write == Write::Create).then(|| json!({"phase": "Pending"}));
    pending(object, status);
}

/// A claim's spec defaults (a PersistentVolumeClaim's own, and a StatefulSet's claim templates').
pub(crate) fn default_claim(claim: &mut Value) {
    if let Some(spec) = spec_mut(claim) {
        set_default(spec, "volumeMode", json!("Filesystem"));
    }
}

/// Replaces the status with `new` when given, then gives a status without a phase the `Pending` one (kube's
/// defaulting of volumes' and claims' phases).
pub(crate) fn pending(object: &mut Value, new: Option<Value>) {
    let Some(object) = object.as_object_mut() else { return };
    if let Some(new) = new {
        object.insert("status".into(), new);
    }
    let status = object.entry("status").or_insert_with(|| json!({}));
    if status.is_null() {
        *status = json!({});
    }
    if let Some(status) = status.as_object_mut() {
        if status.get("phase").and_then(Value::as_str).is_none_or(str::is_empty) {
            status.insert("phase".into(), json!("Pending"));
        }
    }
}

/// StorageClass: reclaimed by `Delete`, bound `Immediate`ly.
pub(crate) fn storage_class(object: &mut Value, _: Write) {
    if let Some(object) = object.as_object_mut() {
        set_default(object, "reclaimPolicy", json!("Delete"));
        set_default(object, "volumeBindingMode", json!("Immediate"));
    }
}

/// CSIDriver: attached, no pod info, no capacity tracking, fsGroup for ReadWriteOnce volumes with an fsType,
/// persistent volumes only, no republishing, no SELinux mount (kube 1.32's default-on gates included).
pub(crate) fn csi_driver(object: &mut Value, _: Write) {
    let Some(spec) = spec_mut(object) else { return };
    let defaults: [(&str, Value); 6] = [
        ("attachRequired", json!(true)),
        ("podInfoOnMount", json!(false)),
        ("storageCapacity", json!(false)),
        ("fsGroupPolicy", json!("ReadWriteOnceWithFSType")),
        ("requiresRepublish", json!(false)),
        ("seLinuxMount", json!(false)),
    ];
    for (field, value) in defaults {
        set_default(spec, field, value);
    }
    if spec.get("volumeLifecycleModes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
    }
}

