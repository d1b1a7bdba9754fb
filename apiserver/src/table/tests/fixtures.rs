//! Objects as a real cluster stores them, dated relative to the tests' fixed now (2025-01-01T12:00Z).

use serde_json::{json, Value};

pub(super) fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "creationTimestamp": "2025-01-01T08:56:00Z"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "back"]}]},
            "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}, {"name": "sidecar", "image": "envoy:1.30"}]}}
        },
        "status": {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
    })
}

pub(super) fn pod_running() -> Value {
    json!({
        "metadata": {"name": "api-7d9f", "creationTimestamp": "2024-12-30T09:00:00Z"},
        "spec": {
            "nodeName": "node-a",
            "containers": [{"name": "app"}, {"name": "sidecar"}],
            "readinessGates": [{"conditionType": "gate-a"}, {"conditionType": "gate-b"}]
        },
        "status": {
            "phase": "Running",
            "podIPs": [{"ip": "10.244.1.7"}],
            "conditions": [{"type": "gate-a", "status": "True"}, {"type": "gate-b", "status": "False"}],
            "containerStatuses": [
                {"name": "app", "ready": true, "restartCount": 3, "state": {"running": {}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2025-01-01T11:55:00Z"}}},
                {"name": "sidecar", "ready": false, "restartCount": 2, "state": {"running": {}},
                 "lastState": {"terminated": {"exitCode": 137, "finishedAt": "2025-01-01T11:50:00Z"}}}
            ]
        }
    })
}

pub(super) fn pod_pending() -> Value {
    json!({
        "metadata": {"name": "api-pend", "creationTimestamp": "2025-01-01T11:59:15Z"},
        "spec": {"containers": [{"name": "app"}]},
        "status": {"phase": "Pending", "containerStatuses": [
            {"name": "app", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff"}}}
        ]}
    })
}

pub(super) fn pod_init() -> Value {
    json!({
        "metadata": {"name": "api-init", "creationTimestamp": "2025-01-01T11:50:00Z"},
        "spec": {"nodeName": "node-b", "initContainers": [{"name": "init-a"}, {"name": "init-b"}], "containers": [{"name": "app"}]},
        "status": {"phase": "Pending", "initContainerStatuses": [
            {"name": "init-a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            {"name": "init-b", "state": {"running": {}}}
        ]}
    })
}

pub(super) fn pod_terminating() -> Value {
    json!({
        "metadata": {"name": "old", "creationTimestamp": "2024-11-17T12:00:00Z", "deletionTimestamp": "2025-01-01T11:59:00Z"},
        "spec": {"containers": [{"name": "app"}]},
        "status": {"phase": "Running"}
    })
}

pub(super) fn pod_succeeded() -> Value {
    json!({
        "metadata": {"name": "batch-1", "creationTimestamp": "2022-01-02T12:00:00Z"},
        "spec": {"containers": [{"name": "app"}]},
        "status": {"phase": "Succeeded", "containerStatuses": [
            {"name": "app", "ready": false, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
        ]}
    })
}

pub(super) fn pod_sidecar() -> Value {
    json!({
        "metadata": {"name": "side", "creationTimestamp": "2025-01-01T11:59:55Z"},
        "spec": {"initContainers": [{"name": "proxy", "restartPolicy": "Always"}], "containers": [{"name": "app"}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Initialized", "status": "True"}],
            "initContainerStatuses": [{"name": "proxy", "started": true, "ready": true, "restartCount": 1,
                "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2025-01-01T11:58:00Z"}}}],
            "containerStatuses": [{"name": "app", "ready": true, "state": {"running": {}}}]
        }
    })
}

pub(super) fn services() -> Vec<Value> {
    let created = "2025-01-01T11:50:00Z";
    vec![
        json!({"metadata": {"name": "web", "creationTimestamp": created}, "spec": {"type": "ClusterIP",
            "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "selector": {"app": "web"},
            "ports": [{"port": 80, "protocol": "TCP"}, {"port": 443}]}}),
        json!({"metadata": {"name": "nodes", "creationTimestamp": created}, "spec": {"type": "NodePort",
            "clusterIPs": ["10.96.0.11"], "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}}),
        json!({"metadata": {"name": "lb", "creationTimestamp": created}, "spec": {"type": "LoadBalancer",
            "clusterIP": "10.96.0.12", "selector": {"app": "dns"}, "ports": [{"port": 53, "protocol": "UDP"}]},
            "status": {"loadBalancer": {}}}),
        json!({"metadata": {"name": "lb-ready", "creationTimestamp": created}, "spec": {"type": "LoadBalancer",
            "clusterIPs": ["10.96.0.13"], "ports": [{"port": 8080, "protocol": "TCP"}]},
            "status": {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}, {"ip": "1.2.3.4"}]}}}),
        json!({"metadata": {"name": "ext", "creationTimestamp": created}, "spec": {"type": "ExternalName",
            "externalName": "db.example.com"}}),
    ]
}

pub(super) fn secret() -> Value {
    json!({
        "apiVersion": "v1",
        "metadata": {"name": "creds", "namespace": "default", "resourceVersion": "42",
                     "labels": {"app": "web"}, "creationTimestamp": "2025-01-01T11:59:55Z"},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": "Y3J0", "tls.key": "a2V5"}
    })
}

pub(super) fn core_events() -> Vec<Value> {
    vec![
        json!({"metadata": {"name": "api-1.17a"}, "type": "Warning", "reason": "BackOff",
            "involvedObject": {"kind": "Pod", "name": "api-1", "fieldPath": "spec.containers{app}"},
            "source": {"component": "kubelet", "host": "node-a"}, "message": " Back-off pulling \n",
            "firstTimestamp": "2025-01-01T11:50:00Z", "lastTimestamp": "2025-01-01T11:58:00Z", "count": 4}),
        json!({"metadata": {"name": "api-2.17b"}, "type": "Normal", "reason": "Created",
            "involvedObject": {"kind": "Pod", "name": "api-2"}, "message": "Created",
            "eventTime": "2025-01-01T11:59:55.000000Z", "reportingController": "kubelet"}),
    ]
}

pub(super) fn events_k8s_io_events() -> Vec<Value> {
    vec![
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "api-1.17a"},
            "type": "Warning", "reason": "BackOff",
            "regarding": {"kind": "Pod", "name": "api-1", "fieldPath": "spec.containers{app}"},
            "deprecatedSource": {"component": "kubelet", "host": "node-a"}, "note": " Back-off pulling \n",
            "deprecatedFirstTimestamp": "2025-01-01T11:50:00Z", "deprecatedLastTimestamp": "2025-01-01T11:58:00Z",
            "deprecatedCount": 4}),
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "api-2.17b"},
            "type": "Normal", "reason": "Created", "regarding": {"kind": "Pod", "name": "api-2"}, "note": "Created",
            "eventTime": "2025-01-01T11:59:55.000000Z", "reportingController": "kubelet"}),
    ]
}

pub(super) fn job() -> Value {
    json!({
        "metadata": {"name": "migrate", "creationTimestamp": "2025-01-01T11:50:00Z"},
        "spec": {"completions": 3, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "abc"}},
                 "template": {"spec": {"containers": [{"name": "migrate", "image": "tools:1.0"}]}}},
        "status": {"succeeded": 3, "startTime": "2025-01-01T11:50:00Z", "completionTime": "2025-01-01T11:52:05Z",
                   "conditions": [{"type": "Complete", "status": "True"}]}
    })
}

pub(super) fn cron_job() -> Value {
    json!({
        "metadata": {"name": "nightly", "creationTimestamp": "2024-11-17T12:00:00Z"},
        "spec": {"schedule": "0 3 * * *", "suspend": false,
                 "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "backup", "image": "backup:2"}]}}}}},
        "status": {"active": [{"name": "nightly-1"}], "lastScheduleTime": "2025-01-01T03:00:00Z"}
    })
}

pub(super) fn node() -> Value {
    json!({
        "metadata": {"name": "node-a", "creationTimestamp": "2023-11-28T12:00:00Z",
                     "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "worker"}},
        "spec": {"unschedulable": true},
        "status": {
            "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}, {"type": "Hostname", "address": "node-a"}],
            "nodeInfo": {"kubeletVersion": "v1.33.1", "osImage": "Debian 12", "containerRuntimeVersion": "containerd://2.0.0"}
        }
    })
}

pub(super) fn pvc() -> Value {
    json!({
        "metadata": {"name": "data", "creationTimestamp": "2025-01-01T11:50:00Z"},
        "spec": {"volumeName": "pv-1", "storageClassName": "fast", "volumeMode": "Filesystem",
                 "resources": {"requests": {"storage": "5Gi"}}},
        "status": {"phase": "Bound", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"]}
    })
}

pub(super) fn storage_class() -> Value {
    json!({
        "metadata": {"name": "fast", "creationTimestamp": "2025-01-01T11:50:00Z",
                     "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "csi.example.com", "allowVolumeExpansion": true
    })
}

pub(super) fn role_binding() -> Value {
    json!({
        "metadata": {"name": "admin", "creationTimestamp": "2025-01-01T11:50:00Z"},
        "roleRef": {"kind": "ClusterRole", "name": "edit", "apiGroup": "rbac.authorization.k8s.io"},
        "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                     {"kind": "Group", "name": "devs"}, {"kind": "ServiceAccount", "name": "deployer", "namespace": "ci"}]
    })
}

pub(super) fn endpoints() -> Value {
    json!({
        "metadata": {"name": "web", "creationTimestamp": "2025-01-01T11:50:00Z"},
        "subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "fd00::3"}],
                     "ports": [{"port": 80}, {"port": 443}]}]
    })
}

/// One well-formed object per kind with a printer, for the garbage-mutation test.
pub(super) fn every_kind() -> Vec<(&'static str, &'static str, Value)> {
    let mut all = vec![
        ("apps", "Deployment", deployment()),
        ("", "Pod", pod_running()),
        ("", "Pod", pod_init()),
        ("", "Pod", pod_sidecar()),
        ("", "Secret", secret()),
        ("", "Node", node()),
        ("", "PersistentVolumeClaim", pvc()),
        ("", "Endpoints", endpoints()),
        ("batch", "Job", job()),
        ("batch", "CronJob", cron_job()),
        ("storage.k8s.io", "StorageClass", storage_class()),
        ("rbac.authorization.k8s.io", "RoleBinding", role_binding()),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding", role_binding()),
    ];
    all.extend(services().into_iter().map(|s| ("", "Service", s)));
    all.extend(core_events().into_iter().map(|e| ("", "Event", e)));
    all.extend(events_k8s_io_events().into_iter().map(|e| ("events.k8s.io", "Event", e)));
    all.extend(others());
    all
}

/// Kinds covered only by the garbage test and the per-kind smoke rows.
pub(super) fn others() -> Vec<(&'static str, &'static str, Value)> {
    let meta = json!({"name": "x", "creationTimestamp": "2025-01-01T11:00:00Z",
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "controller": true}]});
    vec![
        ("", "Namespace", json!({"metadata": meta, "status": {"phase": "Active"}})),
        ("", "ConfigMap", json!({"metadata": meta, "data": {"a": "b"}})),
        ("", "ServiceAccount", json!({"metadata": meta, "secrets": [{"name": "s"}]})),
        ("", "PodTemplate", json!({"metadata": meta, "template": {"metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}})),
        ("", "ReplicationController", json!({"metadata": meta, "spec": {"replicas": 2, "selector": {"a": "b"},
            "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}, "status": {"replicas": 2}})),
        ("", "PersistentVolume", json!({"metadata": meta, "spec": {"capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": "default", "name": "data"}, "storageClassName": "fast"},
            "status": {"phase": "Bound"}})),
        ("", "ResourceQuota", json!({"metadata": meta, "status": {"hard": {"limits.cpu": "2", "pods": "10",
            "requests.memory": "1Gi"}, "used": {"pods": "3", "limits.cpu": "500m"}}})),
        ("apps", "ReplicaSet", json!({"metadata": meta, "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}}},
            "status": {"replicas": 2, "readyReplicas": 1}})),
        ("apps", "StatefulSet", json!({"metadata": meta, "spec": {"replicas": 3}, "status": {"readyReplicas": 3}})),
        ("apps", "DaemonSet", json!({"metadata": meta, "spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"spec": {"nodeSelector": {"os": "linux"}}}}, "status": {"desiredNumberScheduled": 3}})),
        ("apps", "ControllerRevision", json!({"metadata": meta, "revision": 4})),
        ("policy", "PodDisruptionBudget", json!({"metadata": meta, "spec": {"minAvailable": "50%"},
            "status": {"disruptionsAllowed": 1}})),
        ("coordination.k8s.io", "Lease", json!({"metadata": meta, "spec": {"holderIdentity": "node-a"}})),
        ("discovery.k8s.io", "EndpointSlice", json!({"metadata": meta, "addressType": "IPv4",
            "ports": [{"port": 80}, {"name": "http"}, {}, {"port": 9}],
            "endpoints": [{"addresses": ["10.0.0.1", "10.0.0.2"]}]})),
        ("networking.k8s.io", "Ingress", json!({"metadata": meta, "spec": {"ingressClassName": "nginx",
            "rules": [{"host": "a.example.com"}, {}, {"host": "b.example.com"}], "tls": [{}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}})),
        ("networking.k8s.io", "IngressClass", json!({"metadata": meta, "spec": {"controller": "k8s.io/ingress-nginx",
            "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"}}})),
        ("networking.k8s.io", "NetworkPolicy", json!({"metadata": meta, "spec": {"podSelector": {}}})),
        ("scheduling.k8s.io", "PriorityClass", json!({"metadata": meta, "value": 1000, "globalDefault": false,
            "preemptionPolicy": "PreemptLowerPriority"})),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", json!({"metadata": meta, "webhooks": [{}, {}]})),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration", json!({"metadata": meta, "webhooks": []})),
    ]
}
