//! kube-apiserver 1.32's defaulting, kind by kind: a minimal object of each built-in kind is created with curl and
//! read back, and the defaulted fields are compared with what kube writes for the same body (from its
//! `SetDefaults_*` functions and `+default` markers). Updates and patches are defaulted again: a field a patch
//! removes comes back. One shared server; the system administrator writes in the system space, where every kind
//! (DaemonSets, PriorityClasses, CSIDrivers, webhook configurations) may be written.

use std::sync::OnceLock;

use serde_json::{json, Value};

use kspaces_tests::{curl, start_shared_with_tokens, Http, Server};

const TOKEN: &str = "root-token";

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| start_shared_with_tokens(&["root-token,root,u-root,\"system:masters\""]))
}

/// One request; the status and the body as JSON.
fn call(method: &str, path: &str, body: Option<&Value>, content_type: Option<&str>) -> (u16, Value) {
    let text = body.map(Value::to_string);
    let (code, answer) = match content_type {
        None => curl(server(), Http::One, Some(TOKEN), method, path, text.as_deref()),
        Some(kind) => patch(path, kind, text.as_deref().unwrap_or("{}")),
    };
    (code, serde_json::from_str(&answer).unwrap_or(Value::String(answer)))
}

/// A PATCH with `content_type` (the harness' curl sends JSON bodies as `application/json`).
fn patch(path: &str, content_type: &str, body: &str) -> (u16, String) {
    let output = std::process::Command::new("curl")
        .args(["-sk", "--http1.1", "--max-time", "60", "-X", "PATCH", "-w", "\n%{http_code}"])
        .args(["-H", &format!("Authorization: Bearer {TOKEN}"), "-H", &format!("Content-Type: {content_type}")])
        .args(["--data-binary", body, &format!("{}{path}", server().url)])
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// Creates `body` in `collection` and reads it back.
fn created(collection: &str, body: Value) -> Value {
    let name = body["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let (code, answer) = call("POST", collection, Some(&body), None);
    assert_eq!(code, 201, "create in {collection}: {answer}");
    let (code, read) = call("GET", &format!("{collection}/{name}"), None, None);
    assert_eq!(code, 200, "read {collection}/{name}: {read}");
    read
}

/// Each `(pointer, value)` of `expected` is what `object` holds there; every difference is reported at once.
fn check(what: &str, object: &Value, expected: &[(&str, Value)]) {
    let wrong: Vec<String> = expected.iter()
        .filter(|(pointer, value)| object.pointer(pointer) != Some(value))
        .map(|(pointer, value)| format!("  {pointer}: kube writes {value}, read back {}", object.pointer(pointer).unwrap_or(&Value::Null)))
        .collect();
    assert!(wrong.is_empty(), "{what}:\n{}\nobject: {object}", wrong.join("\n"));
}

fn meta(name: &str) -> Value {
    json!({"name": name})
}

const NS: &str = "/api/v1/namespaces/default";
const APPS: &str = "/apis/apps/v1/namespaces/default";
const BATCH: &str = "/apis/batch/v1/namespaces/default";

/// A container with a port, a probe and a field reference; what kube makes of it.
fn container() -> (Value, Value) {
    let given = json!({"name": "c", "image": "nginx", "ports": [{"containerPort": 80}], "livenessProbe": {"httpGet": {"port": 80}},
        "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]});
    let defaulted = json!({"name": "c", "image": "nginx", "imagePullPolicy": "Always", "ports": [{"containerPort": 80, "protocol": "TCP"}],
        "livenessProbe": {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10,
            "successThreshold": 1, "failureThreshold": 3},
        "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name", "apiVersion": "v1"}}}],
        "resources": {}, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"});
    (given, defaulted)
}

/// A pod template and the spec kube makes of it.
fn template(labels: Value) -> (Value, Value) {
    let (given, defaulted) = container();
    let template = json!({"metadata": {"labels": labels}, "spec": {"containers": [given], "volumes": [{"name": "scratch"}]}});
    let spec = json!({"containers": [defaulted], "volumes": [{"name": "scratch", "emptyDir": {}}], "restartPolicy": "Always",
        "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler", "securityContext": {}});
    (template, spec)
}

#[test]
fn pods_and_pod_templates_get_kubes_pod_spec_defaults() {
    let (given, defaulted) = container();
    let volumes = json!([{"name": "scratch"}, {"name": "cm", "configMap": {"name": "x"}},
        {"name": "tok", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}, {"name": "h", "hostPath": {"path": "/x"}}]);
    let pod = created(&format!("{NS}/pods"), json!({"metadata": meta("d-pod"), "spec": {"containers": [given], "volumes": volumes}}));
    // The service account's token volume, named at random (`a_new_pod_gets_what_kubes_admission_adds`).
    let token = pod.pointer("/spec/volumes/4").cloned().unwrap_or_default();
    let mut defaulted = defaulted;
    defaulted["volumeMounts"] = json!([{"name": token["name"], "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]);
    check("a Pod", &pod, &[
        ("/spec/containers/0", defaulted),
        ("/spec/volumes", json!([{"name": "scratch", "emptyDir": {}}, {"name": "cm", "configMap": {"name": "x", "defaultMode": 420}},
            {"name": "tok", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}]}},
            {"name": "h", "hostPath": {"path": "/x", "type": ""}}, token])),
        ("/spec/enableServiceLinks", json!(true)),
        ("/spec/restartPolicy", json!("Always")),
        ("/spec/dnsPolicy", json!("ClusterFirst")),
        ("/spec/securityContext", json!({})),
    ]);
    let host = created(&format!("{NS}/pods"), json!({"metadata": meta("d-host"), "spec": {"hostNetwork": true,
        "containers": [{"name": "c", "image": "localhost:5000/web", "ports": [{"containerPort": 8080}]}]}}));
    check("a Pod on the host's network", &host, &[
        ("/spec/containers/0/ports/0", json!({"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"})),
        ("/spec/containers/0/imagePullPolicy", json!("Always")),
    ]);
    let debugger = json!({"spec": {"ephemeralContainers": [{"name": "debugger", "image": "busybox:1.36"}]}});
    let ephemeral = format!("{NS}/pods/d-pod/ephemeralcontainers");
    let (code, debugged) = call("PATCH", &ephemeral, Some(&debugger), Some("application/strategic-merge-patch+json"));
    assert_eq!(code, 200, "{debugged}");
    check("an ephemeral container", &debugged, &[("/spec/ephemeralContainers/0", json!({"name": "debugger", "image": "busybox:1.36",
        "imagePullPolicy": "IfNotPresent", "resources": {}, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}))]);
    let (code, again) = call("PATCH", &ephemeral, Some(&debugger), Some("application/strategic-merge-patch+json"));
    assert_eq!(code, 200, "the same container written again is no change: {again}");
    let (template, spec) = template(json!({"app": "t"}));
    let pod_template = created(&format!("{NS}/podtemplates"), json!({"metadata": meta("d-template"), "template": template}));
    check("a PodTemplate", &pod_template, &[("/template/spec", spec)]);
}

/// kube-apiserver's default admission plugins on a new pod: ServiceAccount, Priority and
/// DefaultTolerationSeconds, as `kubectl get pod -o yaml` shows them on kube.
#[test]
fn a_new_pod_gets_what_kubes_admission_adds() {
    let pod = created(&format!("{NS}/pods"), json!({"metadata": meta("adm-pod"), "spec": {
        "containers": [{"name": "c", "image": "nginx"}], "initContainers": [{"name": "i", "image": "busybox"}]}}));
    let volume = pod.pointer("/spec/volumes/0").cloned().unwrap_or_default();
    let name = volume["name"].as_str().unwrap_or_default().to_owned();
    assert!(name.starts_with("kube-api-access-") && name.len() == 21, "the token volume: {pod}");
    let mount = json!([{"name": name, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]);
    check("a Pod after admission", &pod, &[
        ("/spec/serviceAccountName", json!("default")),
        ("/spec/volumes/0/projected", json!({"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]})),
        ("/spec/containers/0/volumeMounts", mount.clone()),
        ("/spec/initContainers/0/volumeMounts", mount),
        ("/spec/priority", json!(0)),
        ("/spec/preemptionPolicy", json!("PreemptLowerPriority")),
        ("/spec/tolerations", json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}])),
    ]);
    // A service account that mounts no token: none is mounted, its pull secrets are the pod's.
    created(&format!("{NS}/serviceaccounts"), json!({"metadata": meta("adm-quiet"), "automountServiceAccountToken": false,
        "imagePullSecrets": [{"name": "registry"}]}));
    let quiet = created(&format!("{NS}/pods"), json!({"metadata": meta("adm-quiet"), "spec": {"serviceAccountName": "adm-quiet",
        "containers": [{"name": "c", "image": "nginx"}]}}));
    check("a Pod of a service account that mounts no token", &quiet, &[
        ("/spec/imagePullSecrets", json!([{"name": "registry"}])),
    ]);
    assert_eq!(quiet.pointer("/spec/volumes"), None, "{quiet}");
    assert_eq!(quiet.pointer("/spec/containers/0/volumeMounts"), None, "{quiet}");
    // A priority class, the system ones, and kube's refusals.
    created("/apis/scheduling.k8s.io/v1/priorityclasses", json!({"metadata": meta("adm-high"), "value": 1000, "preemptionPolicy": "Never"}));
    let high = created(&format!("{NS}/pods"), json!({"metadata": meta("adm-high"), "spec": {"priorityClassName": "adm-high",
        "containers": [{"name": "c", "image": "nginx"}]}}));
    check("a Pod of a PriorityClass", &high, &[("/spec/priority", json!(1000)), ("/spec/preemptionPolicy", json!("Never"))]);
    let critical = created(&format!("{NS}/pods"), json!({"metadata": meta("adm-critical"), "spec": {"priorityClassName": "system-cluster-critical",
        "containers": [{"name": "c", "image": "nginx"}]}}));
    check("a Pod of system-cluster-critical", &critical, &[("/spec/priority", json!(2_000_000_000))]);
    let refusals = [
        (json!({"serviceAccountName": "nobody"}), "pods \"adm-refused\" is forbidden: error looking up service account default/nobody: serviceaccount \"nobody\" not found"),
        (json!({"priorityClassName": "nothing"}), "pods \"adm-refused\" is forbidden: no PriorityClass with name nothing was found"),
        (json!({"priorityClassName": "adm-high", "priority": 5}),
            "pods \"adm-refused\" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name"),
    ];
    for (spec, message) in refusals {
        let mut spec = spec;
        spec["containers"] = json!([{"name": "c", "image": "nginx"}]);
        let (code, answer) = call("POST", &format!("{NS}/pods"), Some(&json!({"metadata": meta("adm-refused"), "spec": spec})), None);
        assert_eq!((code, answer["reason"].as_str(), answer["message"].as_str()), (403, Some("Forbidden"), Some(message)), "{answer}");
    }
}

#[test]
fn workloads_get_kubes_spec_defaults() {
    let (template, pod_spec) = template(json!({"app": "w"}));
    let selector = json!({"matchLabels": {"app": "w"}});
    let claim = json!({"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    let set = created(&format!("{APPS}/statefulsets"), json!({"metadata": meta("d-sts"),
        "spec": {"selector": selector, "serviceName": "s", "template": template, "volumeClaimTemplates": [claim]}}));
    check("a StatefulSet", &set, &[
        ("/spec/podManagementPolicy", json!("OrderedReady")),
        ("/spec/updateStrategy", json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})),
        ("/spec/persistentVolumeClaimRetentionPolicy", json!({"whenDeleted": "Retain", "whenScaled": "Retain"})),
        ("/spec/replicas", json!(1)),
        ("/spec/revisionHistoryLimit", json!(10)),
        ("/spec/volumeClaimTemplates/0", json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"},
            "status": {"phase": "Pending"}})),
        ("/spec/template/spec", pod_spec.clone()),
    ]);
    let daemons = created(&format!("{APPS}/daemonsets"), json!({"metadata": meta("d-ds"), "spec": {"selector": selector, "template": template}}));
    check("a DaemonSet", &daemons, &[
        ("/spec/updateStrategy", json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})),
        ("/spec/revisionHistoryLimit", json!(10)),
        ("/spec/template/spec", pod_spec.clone()),
    ]);
    let replicas = created(&format!("{APPS}/replicasets"), json!({"metadata": meta("d-rs"), "spec": {"selector": selector, "template": template}}));
    check("a ReplicaSet", &replicas, &[("/spec/replicas", json!(1)), ("/spec/template/spec", pod_spec.clone())]);
    let controller = created(&format!("{NS}/replicationcontrollers"), json!({"metadata": meta("d-rc"), "spec": {"template": template}}));
    check("a ReplicationController without a selector", &controller, &[
        ("/spec/selector", json!({"app": "w"})),
        ("/metadata/labels", json!({"app": "w"})),
        ("/spec/replicas", json!(1)),
        ("/spec/template/spec", pod_spec),
    ]);
}

#[test]
fn jobs_and_cron_jobs_get_kubes_spec_defaults() {
    let pod = json!({"metadata": {"labels": {"run": "j"}}, "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}});
    let job = created(&format!("{BATCH}/jobs"), json!({"metadata": meta("d-job"), "spec": {"template": pod}}));
    check("a Job", &job, &[
        ("/spec/completions", json!(1)),
        ("/spec/parallelism", json!(1)),
        ("/spec/backoffLimit", json!(6)),
        ("/spec/completionMode", json!("NonIndexed")),
        ("/spec/suspend", json!(false)),
        ("/spec/manualSelector", json!(false)),
        ("/spec/podReplacementPolicy", json!("TerminatingOrFailed")),
        ("/metadata/labels", json!({"run": "j"})),
        ("/spec/template/spec/containers/0/imagePullPolicy", json!("IfNotPresent")),
    ]);
    let failing = json!({"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]});
    let parallel = created(&format!("{BATCH}/jobs"), json!({"metadata": meta("d-job-2"),
        "spec": {"parallelism": 2, "completionMode": "Indexed", "completions": 4, "backoffLimitPerIndex": 1, "podFailurePolicy": failing, "template": pod}}));
    check("a Job with a failure policy and a per-index limit", &parallel, &[
        ("/spec/parallelism", json!(2)),
        ("/spec/backoffLimit", json!(2147483647)),
        ("/spec/podReplacementPolicy", json!("Failed")),
        ("/spec/podFailurePolicy/rules/0/onPodConditions/0", json!({"type": "DisruptionTarget", "status": "True"})),
    ]);
    let cron = created(&format!("{BATCH}/cronjobs"), json!({"metadata": meta("d-cron"),
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": pod}}}}));
    check("a CronJob", &cron, &[
        ("/spec/concurrencyPolicy", json!("Allow")),
        ("/spec/suspend", json!(false)),
        ("/spec/successfulJobsHistoryLimit", json!(3)),
        ("/spec/failedJobsHistoryLimit", json!(1)),
        ("/spec/jobTemplate/spec/template/spec/terminationGracePeriodSeconds", json!(30)),
    ]);
    assert_eq!(cron.pointer("/spec/jobTemplate/spec/backoffLimit"), None, "a Job template's spec is not a Job's: {cron}");
}

#[test]
fn services_and_autoscalers_get_kubes_defaults() {
    let service = created(&format!("{NS}/services"), json!({"metadata": meta("d-svc"),
        "spec": {"sessionAffinity": "ClientIP", "ports": [{"port": 80, "targetPort": 0}]}}));
    check("a Service with ClientIP affinity", &service, &[
        ("/spec/sessionAffinityConfig", json!({"clientIP": {"timeoutSeconds": 10800}})),
        ("/spec/ports/0/targetPort", json!(80)),
        ("/spec/ports/0/protocol", json!("TCP")),
    ]);
    let target = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"});
    let hpa = created("/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers", json!({"metadata": meta("d-hpa"),
        "spec": {"scaleTargetRef": target, "maxReplicas": 3, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}));
    check("an HPA with a behavior", &hpa, &[("/spec/behavior", json!({
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]},
        "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]},
    }))]);
}

#[test]
fn storage_kinds_get_kubes_defaults() {
    let claim = created(&format!("{NS}/persistentvolumeclaims"), json!({"metadata": meta("d-pvc"),
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}));
    check("a PersistentVolumeClaim", &claim, &[("/spec/volumeMode", json!("Filesystem")), ("/status", json!({"phase": "Pending"}))]);
    let volume = created("/api/v1/persistentvolumes", json!({"metadata": meta("d-pv"),
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/d"}}}));
    check("a PersistentVolume", &volume, &[
        ("/spec/persistentVolumeReclaimPolicy", json!("Retain")),
        ("/spec/volumeMode", json!("Filesystem")),
        ("/spec/hostPath", json!({"path": "/tmp/d", "type": ""})),
        ("/status/phase", json!("Pending")),
    ]);
    assert!(volume.pointer("/status/lastPhaseTransitionTime").and_then(Value::as_str).is_some_and(|t| t.ends_with('Z')), "{volume}");
    let class = created("/apis/storage.k8s.io/v1/storageclasses", json!({"metadata": meta("d-sc"), "provisioner": "example.com/p"}));
    check("a StorageClass", &class, &[("/reclaimPolicy", json!("Delete")), ("/volumeBindingMode", json!("Immediate"))]);
    let driver = created("/apis/storage.k8s.io/v1/csidrivers", json!({"metadata": meta("d.example.com"), "spec": {}}));
    check("a CSIDriver", &driver, &[("/spec", json!({"attachRequired": true, "podInfoOnMount": false, "storageCapacity": false,
        "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"], "requiresRepublish": false, "seLinuxMount": false}))]);
}

#[test]
fn network_rbac_scheduling_and_admission_kinds_get_kubes_defaults() {
    let policy = created("/apis/networking.k8s.io/v1/namespaces/default/networkpolicies", json!({"metadata": meta("d-np"),
        "spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}}));
    check("a NetworkPolicy with egress rules", &policy, &[("/spec", json!({"podSelector": {},
        "egress": [{"ports": [{"port": 53, "protocol": "TCP"}]}], "policyTypes": ["Ingress", "Egress"]}))]);
    let class = created("/apis/networking.k8s.io/v1/ingressclasses", json!({"metadata": meta("d-ic"),
        "spec": {"controller": "example.com/c", "parameters": {"apiGroup": "example.com", "kind": "K", "name": "n"}}}));
    check("an IngressClass", &class, &[("/spec/parameters/scope", json!("Cluster"))]);
    let slice = created("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", json!({"metadata": meta("d-eps"),
        "addressType": "IPv4", "endpoints": [], "ports": [{"port": 80}]}));
    check("an EndpointSlice", &slice, &[("/ports", json!([{"name": "", "port": 80, "protocol": "TCP"}]))]);
    let endpoints = created(&format!("{NS}/endpoints"), json!({"metadata": meta("d-ep"),
        "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]}));
    check("Endpoints", &endpoints, &[("/subsets/0/ports/0/protocol", json!("TCP"))]);
    let binding = created("/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", json!({"metadata": meta("d-rb"),
        "roleRef": {"kind": "ClusterRole", "name": "view"}, "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "s", "namespace": "default"}]}));
    check("a RoleBinding", &binding, &[
        ("/roleRef/apiGroup", json!("rbac.authorization.k8s.io")),
        ("/subjects/0/apiGroup", json!("rbac.authorization.k8s.io")),
        ("/subjects/1", json!({"kind": "ServiceAccount", "name": "s", "namespace": "default"})),
    ]);
    let priority = created("/apis/scheduling.k8s.io/v1/priorityclasses", json!({"metadata": meta("d-pc"), "value": 10}));
    check("a PriorityClass", &priority, &[("/preemptionPolicy", json!("PreemptLowerPriority"))]);
    let webhook = |name: &str| json!({"name": name, "clientConfig": {"service": {"namespace": "default", "name": "s"}},
        "rules": [{"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets"]}],
        "sideEffects": "None", "admissionReviewVersions": ["v1"]});
    let defaulted = |name: &str| json!({"name": name, "clientConfig": {"service": {"namespace": "default", "name": "s", "port": 443}},
        "rules": [{"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets"], "scope": "*"}],
        "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail", "matchPolicy": "Equivalent",
        "namespaceSelector": {}, "objectSelector": {}, "timeoutSeconds": 10});
    let validating = created("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        json!({"metadata": meta("d-vwc"), "webhooks": [webhook("v.example.com")]}));
    check("a ValidatingWebhookConfiguration", &validating, &[("/webhooks/0", defaulted("v.example.com"))]);
    let mutating = created("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
        json!({"metadata": meta("d-mwc"), "webhooks": [webhook("m.example.com")]}));
    let mut expected = defaulted("m.example.com");
    expected["reinvocationPolicy"] = json!("Never");
    check("a MutatingWebhookConfiguration", &mutating, &[("/webhooks/0", expected)]);
}

#[test]
fn updates_and_patches_are_defaulted_again() {
    let (template, _) = template(json!({"app": "u"}));
    let deployment = format!("{APPS}/deployments/d-update");
    created(&format!("{APPS}/deployments"), json!({"metadata": meta("d-update"), "spec": {"selector": {"matchLabels": {"app": "u"}}, "template": template}}));
    let (code, patched) = call("PATCH", &deployment, Some(&json!({"spec": {"revisionHistoryLimit": null, "strategy": null}})),
        Some("application/merge-patch+json"));
    assert_eq!(code, 200, "{patched}");
    check("a Deployment whose defaults a merge patch removed", &patched, &[
        ("/spec/revisionHistoryLimit", json!(10)),
        ("/spec/strategy", json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}})),
    ]);
    let class = "/apis/storage.k8s.io/v1/storageclasses/d-sc-update";
    created("/apis/storage.k8s.io/v1/storageclasses", json!({"metadata": meta("d-sc-update"), "provisioner": "example.com/p"}));
    let (code, patched) = call("PATCH", class, Some(&json!([{"op": "remove", "path": "/volumeBindingMode"}])), Some("application/json-patch+json"));
    assert_eq!(code, 200, "{patched}");
    check("a StorageClass whose binding mode a JSON patch removed", &patched, &[("/volumeBindingMode", json!("Immediate"))]);
    let policy = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies/d-np-update";
    let mut body = created("/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
        json!({"metadata": meta("d-np-update"), "spec": {"podSelector": {}}}));
    check("a NetworkPolicy", &body, &[("/spec/policyTypes", json!(["Ingress"]))]);
    if let Some(spec) = body["spec"].as_object_mut() {
        spec.remove("policyTypes");
        spec.insert("egress".into(), json!([{"ports": [{"port": 53}]}]));
    }
    let (code, replaced) = call("PUT", policy, Some(&body), None);
    assert_eq!(code, 200, "{replaced}");
    check("a NetworkPolicy replaced without policyTypes", &replaced, &[
        ("/spec/policyTypes", json!(["Ingress", "Egress"])),
        ("/spec/egress/0/ports/0/protocol", json!("TCP")),
    ]);
}
