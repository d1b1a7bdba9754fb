//! Defaulting of built-in objects, for the defaults clients read back and rely on (a subset of kube's).

use serde_json::{json, Map, Value};

fn set_default(object: &mut Map<String, Value>, field: &str, value: Value) {
    object.entry(field.to_owned()).or_insert(value);
}

fn default_pod_spec(spec: &mut Value) {
    let Some(spec) = spec.as_object_mut() else { return };
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    set_default(spec, "securityContext", json!({}));
    for list in ["containers", "initContainers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            containers.iter_mut().for_each(default_container);
        }
    }
}

fn default_container(container: &mut Value) {
    let Some(container) = container.as_object_mut() else { return };
    let image = container.get("image").and_then(Value::as_str).unwrap_or_default();
    let latest = !image.contains(':') || image.ends_with(":latest");
    let policy = if latest && !image.contains('@') { "Always" } else { "IfNotPresent" };
    set_default(container, "imagePullPolicy", json!(policy));
    set_default(container, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(container, "terminationMessagePolicy", json!("File"));
    set_default(container, "resources", json!({}));
    if let Some(ports) = container.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(port, "protocol", json!("TCP"));
        }
    }
}

fn default_template(object: &mut Value) {
    if let Some(spec) = object.pointer_mut("/spec/template/spec") {
        default_pod_spec(spec);
    }
}

/// Applies the defaults of `group`/`kind` to `object` in place.
pub fn apply(group: &str, kind: &str, object: &mut Value) {
    match (group, kind) {
        ("", "Namespace") => {
            // kube-apiserver labels every namespace with its own name, so selectors can pick namespaces by name.
            if let Some(name) = object.pointer("/metadata/name").and_then(Value::as_str).map(str::to_owned) {
                if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                    let labels = metadata.entry("labels").or_insert_with(|| json!({}));
                    if !labels.is_object() {
                        *labels = json!({});
                    }
                    labels["kubernetes.io/metadata.name"] = json!(name);
                }
            }
            if let Some(object) = object.as_object_mut() {
                let spec = object.entry("spec").or_insert_with(|| json!({}));
                if let Some(spec) = spec.as_object_mut() {
                    set_default(spec, "finalizers", json!(["kubernetes"]));
                }
                let status = object.entry("status").or_insert_with(|| json!({}));
                if let Some(status) = status.as_object_mut() {
                    set_default(status, "phase", json!("Active"));
                }
            }
        }
        ("", "Secret") => {
            if let Some(object) = object.as_object_mut() {
                set_default(object, "type", json!("Opaque"));
            }
        }
        ("", "Pod") => {
            if let Some(spec) = object.get_mut("spec") {
                default_pod_spec(spec);
            }
        }
        ("", "Service") => {
            let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else { return };
            set_default(spec, "type", json!("ClusterIP"));
            set_default(spec, "sessionAffinity", json!("None"));
            if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                    set_default(port, "protocol", json!("TCP"));
                    if let Some(number) = port.get("port").cloned() {
                        set_default(port, "targetPort", number);
                    }
                }
            }
        }
        ("apps", "Deployment") => {
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                set_default(spec, "replicas", json!(1));
                set_default(spec, "revisionHistoryLimit", json!(10));
                set_default(spec, "progressDeadlineSeconds", json!(600));
                let strategy = spec.entry("strategy").or_insert_with(|| json!({}));
                if let Some(strategy) = strategy.as_object_mut() {
                    set_default(strategy, "type", json!("RollingUpdate"));
                    if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                        let rolling = strategy.entry("rollingUpdate").or_insert_with(|| json!({}));
                        if let Some(rolling) = rolling.as_object_mut() {
                            set_default(rolling, "maxSurge", json!("25%"));
                            set_default(rolling, "maxUnavailable", json!("25%"));
                        }
                    }
                }
            }
            default_template(object);
        }
        ("apps", "ReplicaSet" | "StatefulSet" | "DaemonSet") | ("", "ReplicationController") => {
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                if kind != "DaemonSet" {
                    set_default(spec, "replicas", json!(1));
                }
            }
            default_template(object);
        }
        ("batch", "Job") => {
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                set_default(spec, "backoffLimit", json!(6));
                set_default(spec, "completions", json!(1));
                set_default(spec, "parallelism", json!(1));
            }
            default_template(object);
        }
        ("batch", "CronJob") => {
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                set_default(spec, "concurrencyPolicy", json!("Allow"));
                set_default(spec, "suspend", json!(false));
                set_default(spec, "successfulJobsHistoryLimit", json!(3));
                set_default(spec, "failedJobsHistoryLimit", json!(1));
            }
            if let Some(spec) = object.pointer_mut("/spec/jobTemplate/spec/template/spec") {
                default_pod_spec(spec);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_and_container_defaults() {
        let mut object = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}}});
        apply("apps", "Deployment", &mut object);
        assert_eq!(object["spec"]["replicas"], 1);
        let container = &object["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["imagePullPolicy"], "IfNotPresent");
        assert_eq!(container["ports"][0]["protocol"], "TCP");
        let mut empty = json!({"spec": {"strategy": {}}});
        apply("apps", "Deployment", &mut empty);
        assert_eq!(empty["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        let mut namespace = json!({"metadata": {"name": "team"}});
        apply("", "Namespace", &mut namespace);
        assert_eq!(namespace["metadata"]["labels"]["kubernetes.io/metadata.name"], "team");
        let mut explicit = json!({"spec": {"replicas": 3}});
        apply("apps", "Deployment", &mut explicit);
        assert_eq!(explicit["spec"]["replicas"], 3, "defaults never override");
    }
}
