//! kube's defaults of a pod spec wherever one appears (Pods and every pod template): the spec's policies, each
//! container's (pull policy from the image's tag, termination message, ports' protocol, probes and lifecycle
//! handlers), and each volume's (an `emptyDir` when it names no source, file modes, projected token lifetimes, the
//! legacy plugins' parameters). Plain map lookups on the JSON value: nothing is decoded into types.

use serde_json::{json, Map, Value};

use crate::kinds::pod_template::set_default;

/// The file mode kube gives secret, configMap, downwardAPI and projected volumes (0644).
const DEFAULT_MODE: i64 = 0o644;

/// kube's `SetDefaults_PodSpec` and the defaults of everything a pod spec holds.
pub(crate) fn default_pod_spec(spec: &mut Value) {
    let Some(spec) = spec.as_object_mut() else { return };
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    set_default(spec, "securityContext", json!({}));
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for container in objects_mut(spec, list) {
            default_container(container);
        }
    }
    for volume in objects_mut(spec, "volumes") {
        default_volume(volume);
    }
}

/// The defaults of a list of ephemeral containers (the `ephemeralcontainers` subresource compares a write's with
/// the stored, defaulted ones, as kube compares the decoded body).
pub(crate) fn default_ephemeral_containers(containers: &mut Value) {
    containers.as_array_mut().into_iter().flatten().filter_map(Value::as_object_mut).for_each(default_container);
}

/// The objects of the list `field` of `map` (none when it is missing or not a list).
pub(crate) fn objects_mut<'a>(map: &'a mut Map<String, Value>, field: &str) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    map.get_mut(field).and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut)
}

/// The object at `field` of `map`, if it is one.
pub(crate) fn object_mut<'a>(map: &'a mut Map<String, Value>, field: &str) -> Option<&'a mut Map<String, Value>> {
    map.get_mut(field).and_then(Value::as_object_mut)
}

/// kube's `SetDefaults_Container` (and its ephemeral twin): what each container gets.
fn default_container(container: &mut Map<String, Value>) {
    let image = container.get("image").and_then(Value::as_str).unwrap_or_default();
    let policy = if pulls_latest(image) { "Always" } else { "IfNotPresent" };
    set_default(container, "imagePullPolicy", json!(policy));
    set_default(container, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(container, "terminationMessagePolicy", json!("File"));
    set_default(container, "resources", json!({}));
    for port in objects_mut(container, "ports") {
        set_default(port, "protocol", json!("TCP"));
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = object_mut(container, probe) {
            default_probe(probe);
        }
    }
    if let Some(lifecycle) = object_mut(container, "lifecycle") {
        for handler in ["postStart", "preStop"] {
            if let Some(get) = object_mut(lifecycle, handler).and_then(|h| object_mut(h, "httpGet")) {
                default_http_get(get);
            }
        }
    }
    for variable in objects_mut(container, "env") {
        if let Some(field_ref) = object_mut(variable, "valueFrom").and_then(|from| object_mut(from, "fieldRef")) {
            set_default(field_ref, "apiVersion", json!("v1"));
        }
    }
}

/// Whether kube's image parser finds the tag `latest`: written so, or neither a tag nor a digest (a colon before
/// the last `/` is a registry's port, not a tag).
fn pulls_latest(image: &str) -> bool {
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    let last_segment = name.rsplit('/').next().unwrap_or(name);
    match last_segment.rsplit_once(':') {
        Some((_, tag)) => tag == "latest",
        None => digest.is_none(),
    }
}

/// kube's `SetDefaults_Probe` (a zero counts as unset) and its handlers' defaults.
fn default_probe(probe: &mut Map<String, Value>) {
    for (field, value) in [("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1), ("failureThreshold", 3)] {
        if probe.get(field).and_then(Value::as_i64).unwrap_or(0) == 0 {
            probe.insert(field.into(), json!(value));
        }
    }
    if let Some(get) = object_mut(probe, "httpGet") {
        default_http_get(get);
    }
    if let Some(grpc) = object_mut(probe, "grpc") {
        set_default(grpc, "service", json!(""));
    }
}

/// kube's `SetDefaults_HTTPGetAction`: an empty path is `/`, an empty scheme `HTTP`.
fn default_http_get(get: &mut Map<String, Value>) {
    for (field, value) in [("path", "/"), ("scheme", "HTTP")] {
        if get.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
            get.insert(field.into(), json!(value));
        }
    }
}

/// kube's `SetDefaults_Volume` (no source is an `emptyDir`) and its sources' defaults.
fn default_volume(volume: &mut Map<String, Value>) {
    if volume.keys().all(|key| key == "name") {
        volume.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(source) = object_mut(volume, source) {
            set_default(source, "defaultMode", json!(DEFAULT_MODE));
            default_field_refs(source);
        }
    }
    if let Some(projected) = object_mut(volume, "projected") {
        for source in objects_mut(projected, "sources") {
            if let Some(token) = object_mut(source, "serviceAccountToken") {
                set_default(token, "expirationSeconds", json!(3600));
            }
            if let Some(downward) = object_mut(source, "downwardAPI") {
                default_field_refs(downward);
            }
        }
    }
    if let Some(spec) = object_mut(volume, "ephemeral")
        .and_then(|e| object_mut(e, "volumeClaimTemplate")).and_then(|t| object_mut(t, "spec"))
    {
        set_default(spec, "volumeMode", json!("Filesystem"));
    }
    default_volume_plugins(volume);
}

/// A downward API's items' `fieldRef.apiVersion` (kube's `SetDefaults_ObjectFieldSelector`).
fn default_field_refs(source: &mut Map<String, Value>) {
    for item in objects_mut(source, "items") {
        if let Some(field_ref) = object_mut(item, "fieldRef") {
            set_default(field_ref, "apiVersion", json!("v1"));
        }
    }
}

/// The defaults of the volume plugins a Pod's volume and a PersistentVolume's spec share (`hostPath`'s type, the
/// parameters of the legacy in-tree plugins).
pub(crate) fn default_volume_plugins(source: &mut Map<String, Value>) {
    let plugins: [(&str, &[(&str, Value)]); 5] = [
        ("hostPath", &[("type", json!(""))]),
        ("iscsi", &[("iscsiInterface", json!("default"))]),
        ("rbd", &[("pool", json!("rbd")), ("user", json!("admin")), ("keyring", json!("/etc/ceph/keyring"))]),
        ("azureDisk", &[("cachingMode", json!("ReadWrite")), ("fsType", json!("ext4")), ("readOnly", json!(false)), ("kind", json!("Shared"))]),
        ("scaleIO", &[("storageMode", json!("ThinProvisioned")), ("fsType", json!("xfs"))]),
    ];
    for (plugin, defaults) in plugins {
        if let Some(plugin) = object_mut(source, plugin) {
            for (field, value) in defaults {
                set_default(plugin, field, value.clone());
            }
        }
    }
}

/// kube's `SetDefaults_Pod`, what a Pod gets that a template does not: service links on, and with the host's
/// network each container port's `hostPort` is its `containerPort`.
pub(crate) fn default_pod_only(spec: &mut Value) {
    let Some(spec) = spec.as_object_mut() else { return };
    set_default(spec, "enableServiceLinks", json!(true));
    if spec.get("hostNetwork").and_then(Value::as_bool) != Some(true) {
        return;
    }
    for list in ["containers", "initContainers"] {
        for port in objects_mut(spec, list).flat_map(|container| objects_mut(container, "ports")) {
            let unset = port.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0;
            if let (true, Some(number)) = (unset, port.get("containerPort").cloned()) {
                port.insert("hostPort".into(), number);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pull_policy_follows_the_tag_as_kube_parses_it() {
        for (image, latest) in [
            ("nginx", true), ("nginx:latest", true), ("nginx:1.27", false), ("localhost:5000/nginx", true),
            ("localhost:5000/nginx:1.0", false), ("nginx@sha256:abc", false), ("nginx:latest@sha256:abc", true),
        ] {
            assert_eq!(pulls_latest(image), latest, "{image}");
        }
    }

    #[test]
    fn probes_volumes_and_env_are_defaulted() {
        let mut spec = json!({"containers": [{"name": "c", "image": "x:1",
            "livenessProbe": {"httpGet": {"port": 80}, "periodSeconds": 0},
            "env": [{"name": "n", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}],
            "volumes": [{"name": "scratch"}, {"name": "s", "secret": {"secretName": "s"}}]});
        default_pod_spec(&mut spec);
        let probe = &spec["containers"][0]["livenessProbe"];
        assert_eq!(probe, &json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "periodSeconds": 10,
            "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3}));
        assert_eq!(spec["containers"][0]["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        assert_eq!(spec["volumes"][0]["emptyDir"], json!({}));
        assert_eq!(spec["volumes"][1]["secret"]["defaultMode"], 420);
    }
}
