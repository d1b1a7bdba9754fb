//! Tests of protobuf response encoding: realistic objects of many kinds go JSON → protobuf → JSON unchanged, the
//! bytes are real k8s-pb messages, and watch frames read back frame by frame.

use super::{decode_request, encode_object, has_protobuf_form, read_watch_frames, watch_frame, EncodeError};
use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use serde_json::{json, Value};

/// Encodes `object` and decodes it back: the result must equal the input.
fn check(object: Value) {
    let encoded = encode_object(&object).unwrap_or_else(|error| panic!("{error}"));
    let decoded = decode_request(&encoded).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(decoded, object, "round trip of {}", object["kind"]);
}

/// Metadata using every ObjectMeta field kube fills in; cluster-scoped objects pass an empty namespace.
fn meta(name: &str, namespace: &str) -> Value {
    let mut meta = json!({
        "name": name, "namespace": namespace, "uid": "6f1c3a52-7d0e-4a47-9a8a-1f6b0d3e2c11",
        "resourceVersion": "4711", "generation": 3, "creationTimestamp": "2026-11-22T05:00:00Z",
        "labels": {"app": "web", "tier": "frontend"},
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"a\":1}\n", "empty": ""},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9", "uid": "0a1b",
            "controller": true, "blockOwnerDeletion": true}],
        "finalizers": ["example.com/cleanup"],
        "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
            "time": "2026-11-22T05:00:01Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}],
    });
    if namespace.is_empty() {
        meta.as_object_mut().map(|meta| meta.remove("namespace"));
    }
    meta
}

fn container() -> Value {
    json!({
        "name": "web", "image": "nginx:1.27", "command": ["nginx"], "args": ["-g", "daemon off;"],
        "workingDir": "/srv",
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": [
            {"name": "MODE", "value": "fast"},
            {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
            {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password", "optional": false}}},
        ],
        "envFrom": [{"prefix": "CFG_", "configMapRef": {"name": "settings"}}],
        "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "0", "memory": "64Mi"}},
        "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": true}],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
            "initialDelaySeconds": 5, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
            "failureThreshold": 3},
        "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 5},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": true},
    })
}

fn pod_spec() -> Value {
    json!({
        "containers": [container()],
        "initContainers": [{"name": "init", "image": "busybox", "command": ["sh", "-c", "true"]}],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "cfg", "configMap": {"name": "settings", "defaultMode": 420, "items": [{"key": "a", "path": "a"}]}},
            {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
            {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}]}},
        ],
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "web", "nodeSelector": {"kubernetes.io/os": "linux"},
        "securityContext": {"fsGroup": 2000, "seccompProfile": {"type": "RuntimeDefault"}},
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100,
            "podAffinityTerm": {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
                "topologyKey": "kubernetes.io/hostname"}}]}},
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300}],
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}],
        "schedulerName": "default-scheduler", "priority": 0, "enableServiceLinks": true,
        "preemptionPolicy": "PreemptLowerPriority",
    })
}

#[test]
fn pods_with_status_round_trip() {
    check(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": meta("web-7d4b9-x2k", "default"), "spec": pod_spec(),
        "status": {
            "phase": "Running", "hostIP": "10.0.0.7", "hostIPs": [{"ip": "10.0.0.7"}], "podIP": "10.244.1.5",
            "podIPs": [{"ip": "10.244.1.5"}], "startTime": "2026-11-22T05:00:02Z", "qosClass": "Burstable",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-22T05:00:09Z"}],
            "containerStatuses": [{"name": "web", "ready": true, "restartCount": 0, "image": "nginx:1.27",
                "imageID": "docker.io/library/nginx@sha256:0123", "containerID": "containerd://abc", "started": true,
                "state": {"running": {"startedAt": "2026-11-22T05:00:05Z"}},
                "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                    "startedAt": "2026-11-22T04:00:00Z", "finishedAt": "2026-11-22T04:59:00Z"}}}],
        },
    }));
}

#[test]
fn workloads_round_trip() {
    let template = json!({"metadata": {"labels": {"app": "web"}}, "spec": pod_spec()});
    check(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("web", "default"),
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}}, "template": template,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600},
        "status": {"observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
            "availableReplicas": 2, "conditions": [{"type": "Available", "status": "True",
            "lastUpdateTime": "2026-11-22T05:00:09Z", "lastTransitionTime": "2026-11-22T05:00:09Z",
            "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."}]},
    }));
    check(json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta("db", "default"),
        "spec": {"replicas": 3, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": template, "podManagementPolicy": "Parallel",
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "10Gi"}}, "storageClassName": "fast"}}],
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Delete"},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}},
    }));
    check(json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta("backup", "default"),
        "spec": {"schedule": "0 4 * * *", "timeZone": "Etc/UTC", "concurrencyPolicy": "Forbid", "suspend": false,
            "jobTemplate": {"spec": {"backoffLimit": 4, "completions": 1, "parallelism": 1,
                "template": {"spec": {"containers": [{"name": "b", "image": "backup:1"}], "restartPolicy": "OnFailure"}}}},
            "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1},
        "status": {"lastScheduleTime": "2026-11-22T04:00:00Z"},
    }));
    check(json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": meta("web-1", "default"),
        "data": {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}, "revision": 1,
    }));
}

#[test]
fn coordination_and_events_round_trip() {
    check(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta("leader", "kube-system"),
        "spec": {"holderIdentity": "node-a_1234", "leaseDurationSeconds": 15, "leaseTransitions": 0,
            "acquireTime": "2026-11-22T05:00:00.000000Z", "renewTime": "2026-11-22T05:00:12.345678Z"},
    }));
    check(json!({
        "apiVersion": "v1", "kind": "Event", "metadata": meta("web.17a", "default"),
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "1", "apiVersion": "v1",
            "resourceVersion": "4711", "fieldPath": "spec.containers{web}"},
        "reason": "Pulled", "message": "Successfully pulled image", "source": {"component": "kubelet", "host": "node-a"},
        "firstTimestamp": "2026-11-22T05:00:00Z", "lastTimestamp": "2026-11-22T05:00:03Z", "count": 2,
        "type": "Normal", "eventTime": "2026-11-22T05:00:00.123456Z", "reportingComponent": "kubelet",
        "reportingInstance": "node-a",
    }));
    check(json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta("web.17b", "default"),
        "eventTime": "2026-11-22T05:00:00.000001Z", "reportingController": "example.com/ctl",
        "reportingInstance": "ctl-0", "action": "Scaled", "reason": "ScalingReplicaSet", "type": "Normal",
        "regarding": {"kind": "Deployment", "name": "web", "namespace": "default"}, "note": "scaled up to 2",
        "series": {"count": 3, "lastObservedTime": "2026-11-22T05:01:00.000000Z"},
    }));
}

#[test]
fn core_objects_round_trip() {
    check(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("settings", "default"),
        "data": {"mode": "fast", "empty": ""}, "binaryData": {"blob": "AAEC/w=="}, "immutable": false,
    }));
    check(json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": meta("creds", "default"),
        "data": {"password": "aHVudGVyMg=="}, "type": "kubernetes.io/basic-auth",
    }));
    check(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": meta("web", "default"),
        "spec": {"type": "NodePort", "selector": {"app": "web"}, "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None",
            "externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster",
            "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": "http", "nodePort": 30080}]},
        "status": {"loadBalancer": {}},
    }));
    check(json!({
        "apiVersion": "v1", "kind": "Node", "metadata": meta("node-a", ""),
        "spec": {"podCIDR": "10.244.1.0/24", "taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]},
        "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}, "allocatable": {"cpu": "3800m"},
            "addresses": [{"type": "InternalIP", "address": "10.0.0.7"}],
            "nodeInfo": {"machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "6.8",
                "osImage": "Debian", "containerRuntimeVersion": "containerd://2.0", "kubeletVersion": "v1.33.4",
                "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"},
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}},
    }));
    check(json!({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta("pv-1", ""),
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/mnt", "type": ""},
            "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem",
            "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "data"}},
        "status": {"phase": "Bound"},
    }));
    check(json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": meta("team-a", ""),
        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"},
    }));
}

#[test]
fn networking_policy_and_rbac_round_trip() {
    check(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta("web", "default"),
        "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["example.com"], "secretName": "tls"}],
            "rules": [{"host": "example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]},
    }));
    check(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta("deny", "default"),
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8",
            "except": ["10.1.0.0/16"]}}], "ports": [{"protocol": "TCP", "port": 443, "endPort": 8443}]}]},
    }));
    check(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta("view", ""),
        "rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "watch"]},
            {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}],
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate-to-view": "true"}}]},
    }));
    check(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta("view", "default"),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
            {"kind": "ServiceAccount", "name": "web", "namespace": "default"}],
    }));
    check(json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta("web", "default"),
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}, "unhealthyPodEvictionPolicy": "AlwaysAllow"},
        "status": {"currentHealthy": 0, "desiredHealthy": 1, "disruptionsAllowed": 0, "expectedPods": 2},
    }));
    check(json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta("web", "default"),
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 1,
            "maxReplicas": 10, "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300, "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}},
    }));
}

#[test]
fn reviews_certificates_and_webhooks_round_trip() {
    check(json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {},
        "spec": {"user": "alice", "groups": ["dev"], "extra": {"scopes": ["a", "b"], "none": []}, "uid": "1",
            "resourceAttributes": {"namespace": "default", "verb": "get", "resource": "pods"}},
        "status": {"allowed": true, "reason": "RBAC: allowed by RoleBinding"},
    }));
    check(json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": meta("web", "default"),
        "spec": {"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": 3600,
            "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web", "uid": "1"}},
        "status": {"token": "eyJ", "expirationTimestamp": "2026-11-22T06:00:00Z"},
    }));
    check(json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": meta("csr", ""),
        "spec": {"request": "LS0tLS1CRUdJTg==", "signerName": "kubernetes.io/kube-apiserver-client",
            "usages": ["client auth"], "expirationSeconds": 86400, "extra": {"k": ["v"]}},
    }));
    check(json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": meta("check", ""),
        "webhooks": [{"name": "check.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "failurePolicy": "Fail", "timeoutSeconds": 10, "matchPolicy": "Equivalent",
            "clientConfig": {"service": {"namespace": "default", "name": "hook", "path": "/check", "port": 443},
                "caBundle": "Y2E="},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "*"}],
            "matchConditions": [{"name": "not-system", "expression": "!request.userInfo.username.startsWith('system:')"}]}],
    }));
}

#[test]
fn custom_resource_definitions_round_trip() {
    let schema = json!({
        "type": "object", "description": "a CronTab", "required": ["spec"],
        "x-kubernetes-preserve-unknown-fields": false,
        "properties": {
            "spec": {"type": "object", "properties": {
                "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$", "default": "* * * * *"},
                "replicas": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 10, "default": 1},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "additionalProperties": true, "x-kubernetes-preserve-unknown-fields": true},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
                    "items": {"type": "object", "required": ["port"], "properties": {"port": {"type": "integer"}}}},
                "size": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            },
            "x-kubernetes-validations": [{"rule": "self.replicas <= 5 || self.mode == 'fast'", "message": "too many",
                "reason": "FieldValueForbidden", "fieldPath": ".replicas"}]},
        },
    });
    check(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": meta("crontabs.stable.example.com", ""),
        "spec": {"group": "stable.example.com", "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList",
                "shortNames": ["ct"], "categories": ["all"]},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas"}},
                "additionalPrinterColumns": [{"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"}]}],
            "conversion": {"strategy": "None"}},
        "status": {"acceptedNames": {"plural": "crontabs", "kind": "CronTab"}, "storedVersions": ["v1"],
            "conditions": [{"type": "Established", "status": "True", "lastTransitionTime": "2026-11-22T05:00:00Z",
                "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}]},
    }));
}

#[test]
fn lists_status_and_metadata_kinds_round_trip() {
    check(json!({
        "apiVersion": "v1", "kind": "ConfigMapList",
        "metadata": {"resourceVersion": "4711", "continue": "eyJ2", "remainingItemCount": 0},
        "items": [{"metadata": meta("a", "default"), "data": {"k": "v"}}, {"metadata": {"name": "b"}}],
    }));
    check(json!({"apiVersion": "coordination.k8s.io/v1", "kind": "LeaseList", "metadata": {"resourceVersion": "9"}}));
    check(json!({
        "apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
        "message": "Deployment.apps \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        "reason": "Invalid", "code": 422,
        "details": {"name": "web", "group": "apps", "kind": "Deployment", "retryAfterSeconds": 1,
            "causes": [{"reason": "FieldValueInvalid", "message": "Invalid value: -1", "field": "spec.replicas"}]},
    }));
    check(json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": meta("web", "default")}));
    // In protobuf, as in Go, list items carry no apiVersion and kind (TypeMeta has no protobuf field).
    check(json!({
        "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList", "metadata": {"resourceVersion": "7"},
        "items": [{"metadata": meta("web", "default")}],
    }));
}

#[test]
fn v1beta1_metadata_lists_use_their_own_field_numbers() {
    let list = json!({
        "apiVersion": "meta.k8s.io/v1beta1", "kind": "PartialObjectMetadataList", "metadata": {"resourceVersion": "7"},
        "items": [{"metadata": {"name": "web"}}],
    });
    check(list.clone());
    let encoded = encode_object(&list).unwrap_or_else(|error| panic!("{error}"));
    let unknown = Unknown::decode(&encoded[4..]).unwrap_or_else(|error| panic!("{error}"));
    let raw = unknown.raw.unwrap_or_default();
    // items is field 1 (tag 0x0a) in meta.k8s.io/v1beta1, metadata field 2 (tag 0x12); v1 has them the other way.
    assert_eq!(raw.first(), Some(&0x0a), "items are written first, as field 1");
    let decoded = k8s_pb::apimachinery::pkg::apis::meta::v1beta1::PartialObjectMetadataList::decode(raw.as_slice());
    assert_eq!(decoded.map(|list| list.items.len()).ok(), Some(1));
}

#[test]
fn the_bytes_are_the_k8s_pb_message_in_its_envelope() {
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "leader", "namespace": "kube-system"},
        "spec": {"holderIdentity": "node-a", "leaseDurationSeconds": 15, "renewTime": "2026-11-22T05:00:12.345678Z"},
    });
    let encoded = encode_object(&lease).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(&encoded[..4], b"k8s\0");
    let unknown = Unknown::decode(&encoded[4..]).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(&encoded[4..], unknown.encode_to_vec().as_slice(), "the envelope is written as prost writes Unknown");
    let type_meta = unknown.type_meta.unwrap_or_default();
    assert_eq!((type_meta.api_version.as_deref(), type_meta.kind.as_deref()), (Some("coordination.k8s.io/v1"), Some("Lease")));
    assert_eq!((unknown.content_encoding.as_deref(), unknown.content_type.as_deref()), (Some(""), Some("")));
    let decoded = coordination::Lease::decode(unknown.raw.unwrap_or_default().as_slice()).unwrap_or_else(|error| panic!("{error}"));
    let spec = decoded.spec.unwrap_or_default();
    assert_eq!(spec.holder_identity.as_deref(), Some("node-a"));
    assert_eq!(spec.lease_duration_seconds, Some(15));
    let renew = spec.renew_time.unwrap_or_default();
    assert_eq!((renew.seconds, renew.nanos), (Some(1_795_323_612), Some(345_678_000)));
    assert_eq!(spec.lease_transitions, None, "an absent pointer field stays unset");
}

#[test]
fn kinds_without_a_message_and_ill_typed_fields_are_errors() {
    let custom = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "a"}});
    assert_eq!(
        encode_object(&custom),
        Err(EncodeError::NoProtobufForm { api_version: "stable.example.com/v1".into(), kind: "CronTab".into() })
    );
    let cases = [
        (json!({"spec": {"replicas": "three"}}), "spec.replicas: expected an integer, found a string"),
        (json!({"spec": {"replicas": 4_294_967_296_i64}}), "spec.replicas: 4294967296 does not fit in a 32-bit integer"),
        (json!({"metadata": {"labels": {"a": 1}}}), "metadata.labels.a: expected a string, found a number"),
        (json!({"metadata": {"creationTimestamp": "yesterday"}}), "metadata.creationTimestamp: invalid RFC 3339 time"),
        (json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"ports": [{"containerPort": []}]}]}}}}),
            "spec.template.spec.containers.[1].ports.[0].containerPort: expected an integer, found an array"),
    ];
    for (mut object, expected) in cases {
        object["apiVersion"] = json!("apps/v1");
        object["kind"] = json!("Deployment");
        match encode_object(&object) {
            Err(EncodeError::Field { kind, failure }) => {
                assert_eq!(kind, "Deployment");
                assert!(failure.starts_with(expected), "{failure} should start with {expected}");
            }
            other => panic!("{object}: {other:?}"),
        }
    }
}

#[test]
fn durations_parse_as_go_writes_them() {
    let cases = [("0s", 0), ("0", 0), ("1h0m0s", 3_600_000_000_000), ("1.5s", 1_500_000_000), ("300ms", 300_000_000),
        ("2µs", 2_000), ("2us", 2_000), ("-1m30s", -90_000_000_000), ("15ns", 15)];
    for (text, nanoseconds) in cases {
        assert_eq!(super::from_json::parse_go_duration(text), Some(nanoseconds), "{text}");
        assert_eq!(super::from_json::parse_go_duration(&super::to_json::go_duration(nanoseconds)), Some(nanoseconds));
    }
    for bad in ["", "1", "1x", "h", "1..5s", "-"] {
        assert_eq!(super::from_json::parse_go_duration(bad), None, "{bad}");
    }
}

#[test]
fn watch_frames_read_back_frame_by_frame() {
    let lease = |holder: &str| json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "leader", "resourceVersion": "5"}, "spec": {"holderIdentity": holder}});
    let events = [("ADDED", lease("a")), ("MODIFIED", lease("b")), ("DELETED", lease("b"))];
    let mut stream = Vec::new();
    for (kind, object) in &events {
        let frame = watch_frame(kind, encode_object(object).unwrap_or_else(|error| panic!("{error}")));
        let length = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
        assert_eq!(length + 4, frame.len(), "the prefix is the big-endian length of the rest");
        stream.extend_from_slice(&frame);
    }
    let read = read_watch_frames(&stream).unwrap_or_else(|| panic!("frames decode"));
    assert_eq!(read.len(), 3);
    for ((kind, object), (read_kind, embedded)) in events.iter().zip(read) {
        assert_eq!(&read_kind, kind);
        assert_eq!(decode_request(&embedded).as_ref(), Ok(object), "the embedded object is enveloped protobuf");
    }
    assert_eq!(read_watch_frames(&stream[..stream.len() - 1]), None, "a cut frame is detected");
}

#[test]
fn every_served_built_in_kind_and_its_list_have_a_protobuf_form() {
    // kspaces' own kinds are the exceptions.
    let own = ["Tenant", "LogicalCluster"];
    for resource in crate::registry::builtin::builtin_resources() {
        if own.contains(&resource.kind.as_str()) {
            continue;
        }
        let api_version = resource.api_version();
        assert!(has_protobuf_form(&api_version, &resource.kind), "{api_version} {}", resource.kind);
        let listable = resource.verbs.is_empty() || resource.verbs.iter().any(|verb| verb == "list");
        if listable {
            assert!(has_protobuf_form(&api_version, &resource.list_kind()), "{api_version} {}", resource.list_kind());
        }
    }
}
