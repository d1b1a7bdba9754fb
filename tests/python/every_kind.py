"""Every built-in kind kspaces serves, through the Python client's typed API: create, read, list, a watch that
reads the object back, and a patch, each answer deserialized into the client's models (which refuse objects
without the fields kube always writes, e.g. a ReplicaSet's `status.replicas`). One row per kind: a kind added to
the server gets a row here. Then what kube writes on create (pods `Pending` with their QoS class), field selectors
read as kube reads them, and error bodies byte for byte as kube-apiserver writes them.

Runs as the system administrator (DaemonSets live in the system space only).

Usage: every_kind.py --kubeconfig FILE [--namespace NS]
"""

import base64
import json
import subprocess

from kubernetes import watch
from kubernetes.client.rest import ApiException

from checks import CheckFailed, api_client, client, expect, expect_equal, run

API, NAMESPACE = api_client()
NS = "py-every-kind"

TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}
SELECTOR = {"matchLabels": {"app": "x"}}
RULES = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
SUBJECTS = [{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"}]
ROLE_REF = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}


def POD_DEFAULTS(at):
    """What kube writes into TEMPLATE's pod spec, found at `at`."""
    return {f"{at}.{path}": value for path, value in {
        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler",
        "containers.0.imagePullPolicy": "IfNotPresent", "containers.0.terminationMessagePath": "/dev/termination-log",
        "containers.0.terminationMessagePolicy": "File"}.items()}


def certificate_request():
    """A PEM certificate request (openssl, as a user makes one), base64 as `spec.request` holds it."""
    key = subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout"], check=True, capture_output=True).stdout
    pem = subprocess.run(["openssl", "req", "-new", "-key", "/dev/stdin", "-subj", "/CN=py"], input=key, check=True, capture_output=True).stdout
    return base64.b64encode(pem).decode()


# (API class, the method suffix after create_/read_/list_/patch_, namespaced, API version, kind, the body's other
# fields[, the defaults kube 1.32 writes: dotted path in the API's field names -> value]). `read_<suffix>` gives the
# typed model back; lists and watches deserialize every item; the defaults are compared on the object read and on
# the one a patch answers (kube defaults every write), each through the typed model.
ROWS = [
    ("CoreV1Api", "config_map", True, "v1", "ConfigMap", {"data": {"a": "1"}}),
    ("CoreV1Api", "secret", True, "v1", "Secret", {"stringData": {"a": "1"}}, {"type": "Opaque"}),
    ("CoreV1Api", "service_account", True, "v1", "ServiceAccount", {}),
    ("CoreV1Api", "event", True, "v1", "Event", {"involvedObject": {"kind": "Pod", "name": "p"}, "reason": "R", "message": "m"}),
    ("CoreV1Api", "limit_range", True, "v1", "LimitRange", {"spec": {"limits": [{"type": "PersistentVolumeClaim", "max": {"storage": "10Gi"}}]}}),
    ("CoreV1Api", "resource_quota", True, "v1", "ResourceQuota", {"spec": {"hard": {"pods": "100"}}}),
    ("CoreV1Api", "service", True, "v1", "Service", {"spec": {"ports": [{"port": 80}], "selector": {"app": "x"}}},
     {"spec.type": "ClusterIP", "spec.sessionAffinity": "None", "spec.ports.0.protocol": "TCP", "spec.ports.0.targetPort": 80}),
    ("CoreV1Api", "endpoints", True, "v1", "Endpoints", {"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]},
     {"subsets.0.ports.0.protocol": "TCP"}),
    ("CoreV1Api", "pod", True, "v1", "Pod", {"spec": TEMPLATE["spec"]}, POD_DEFAULTS("spec")),
    ("CoreV1Api", "pod_template", True, "v1", "PodTemplate", {"template": TEMPLATE}, POD_DEFAULTS("template.spec")),
    ("CoreV1Api", "replication_controller", True, "v1", "ReplicationController", {"spec": {"selector": {"app": "x"}, "template": TEMPLATE}},
     {"spec.replicas": 1, **POD_DEFAULTS("spec.template.spec")}),
    ("CoreV1Api", "persistent_volume_claim", True, "v1", "PersistentVolumeClaim",
     {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}, {"spec.volumeMode": "Filesystem", "status.phase": "Pending"}),
    ("CoreV1Api", "persistent_volume", False, "v1", "PersistentVolume",
     {"spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/x"}}},
     {"spec.persistentVolumeReclaimPolicy": "Retain", "spec.volumeMode": "Filesystem", "spec.hostPath.type": "", "status.phase": "Pending"}),
    ("CoreV1Api", "namespace", False, "v1", "Namespace", {}, {"spec.finalizers": ["kubernetes"], "status.phase": "Active"}),
    ("CoreV1Api", "node", False, "v1", "Node", {}),
    ("AppsV1Api", "deployment", True, "apps/v1", "Deployment", {"spec": {"selector": SELECTOR, "template": TEMPLATE}},
     {"spec.replicas": 1, "spec.strategy.type": "RollingUpdate", "spec.strategy.rollingUpdate.maxSurge": "25%", "spec.revisionHistoryLimit": 10,
      "spec.progressDeadlineSeconds": 600, **POD_DEFAULTS("spec.template.spec")}),
    ("AppsV1Api", "replica_set", True, "apps/v1", "ReplicaSet", {"spec": {"selector": SELECTOR, "template": TEMPLATE}}, {"spec.replicas": 1}),
    ("AppsV1Api", "stateful_set", True, "apps/v1", "StatefulSet", {"spec": {"selector": SELECTOR, "template": TEMPLATE, "serviceName": "s"}},
     {"spec.podManagementPolicy": "OrderedReady", "spec.updateStrategy.type": "RollingUpdate", "spec.updateStrategy.rollingUpdate.partition": 0,
      "spec.persistentVolumeClaimRetentionPolicy.whenDeleted": "Retain", "spec.revisionHistoryLimit": 10}),
    ("AppsV1Api", "daemon_set", True, "apps/v1", "DaemonSet", {"spec": {"selector": SELECTOR, "template": TEMPLATE}},
     {"spec.updateStrategy.type": "RollingUpdate", "spec.updateStrategy.rollingUpdate.maxUnavailable": 1, "spec.revisionHistoryLimit": 10}),
    ("AppsV1Api", "controller_revision", True, "apps/v1", "ControllerRevision", {"revision": 1, "data": {"a": 1}}),
    ("AutoscalingV2Api", "horizontal_pod_autoscaler", True, "autoscaling/v2", "HorizontalPodAutoscaler",
     {"spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 3}},
     {"spec.minReplicas": 1, "spec.metrics.0.resource.target.averageUtilization": 80}),
    ("AutoscalingV1Api", "horizontal_pod_autoscaler", True, "autoscaling/v1", "HorizontalPodAutoscaler",
     {"spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 3,
               "targetCPUUtilizationPercentage": 50}}),
    ("BatchV1Api", "job", True, "batch/v1", "Job",
     {"spec": {"template": {"spec": {"containers": TEMPLATE["spec"]["containers"], "restartPolicy": "Never"}}}},
     {"spec.completions": 1, "spec.parallelism": 1, "spec.backoffLimit": 6, "spec.completionMode": "NonIndexed", "spec.suspend": False,
      "spec.manualSelector": False, "spec.podReplacementPolicy": "TerminatingOrFailed"}),
    ("BatchV1Api", "cron_job", True, "batch/v1", "CronJob", {"spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {
        "template": {"spec": {"containers": TEMPLATE["spec"]["containers"], "restartPolicy": "Never"}}}}}},
     {"spec.concurrencyPolicy": "Allow", "spec.suspend": False, "spec.successfulJobsHistoryLimit": 3, "spec.failedJobsHistoryLimit": 1}),
    ("CertificatesV1Api", "certificate_signing_request", False, "certificates.k8s.io/v1", "CertificateSigningRequest",
     {"spec": {"request": certificate_request(), "signerName": "example.com/signer", "usages": ["client auth"]}}),
    ("CoordinationV1Api", "lease", True, "coordination.k8s.io/v1", "Lease", {"spec": {"holderIdentity": "me"}}),
    ("EventsV1Api", "event", True, "events.k8s.io/v1", "Event",
     {"eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "c", "reportingInstance": "i", "action": "A", "reason": "R",
      "regarding": {"kind": "Pod", "name": "p"}, "type": "Normal"}),
    ("DiscoveryV1Api", "endpoint_slice", True, "discovery.k8s.io/v1", "EndpointSlice", {"addressType": "IPv4", "endpoints": []}),
    ("NetworkingV1Api", "ingress", True, "networking.k8s.io/v1", "Ingress",
     {"spec": {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}}}}),
    ("NetworkingV1Api", "ingress_class", False, "networking.k8s.io/v1", "IngressClass", {"spec": {"controller": "example.com/c"}}),
    ("NetworkingV1Api", "network_policy", True, "networking.k8s.io/v1", "NetworkPolicy", {"spec": {"podSelector": {}}}, {"spec.policyTypes": ["Ingress"]}),
    ("NetworkingV1Api", "ip_address", False, "networking.k8s.io/v1", "IPAddress",
     {"spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "kubernetes"}}}),
    ("NetworkingV1Api", "service_cidr", False, "networking.k8s.io/v1", "ServiceCIDR", {"spec": {"cidrs": ["10.100.0.0/16"]}}),
    ("PolicyV1Api", "pod_disruption_budget", True, "policy/v1", "PodDisruptionBudget", {"spec": {"minAvailable": 1, "selector": SELECTOR}}),
    ("StorageV1Api", "storage_class", False, "storage.k8s.io/v1", "StorageClass", {"provisioner": "example.com/p"},
     {"reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}),
    ("StorageV1Api", "csi_driver", False, "storage.k8s.io/v1", "CSIDriver", {"spec": {}},
     {"spec.attachRequired": True, "spec.podInfoOnMount": False, "spec.fsGroupPolicy": "ReadWriteOnceWithFSType", "spec.volumeLifecycleModes": ["Persistent"]}),
    ("StorageV1Api", "csi_node", False, "storage.k8s.io/v1", "CSINode", {"spec": {"drivers": []}}),
    ("StorageV1Api", "volume_attachment", False, "storage.k8s.io/v1", "VolumeAttachment",
     {"spec": {"attacher": "example.com/a", "nodeName": "n", "source": {"persistentVolumeName": "pv"}}}),
    ("StorageV1Api", "csi_storage_capacity", True, "storage.k8s.io/v1", "CSIStorageCapacity", {"storageClassName": "sc"}),
    ("SchedulingV1Api", "priority_class", False, "scheduling.k8s.io/v1", "PriorityClass", {"value": 1000}, {"preemptionPolicy": "PreemptLowerPriority"}),
    ("NodeV1Api", "runtime_class", False, "node.k8s.io/v1", "RuntimeClass", {"handler": "runc"}),
    ("AdmissionregistrationV1Api", "validating_webhook_configuration", False, "admissionregistration.k8s.io/v1",
     "ValidatingWebhookConfiguration", {"webhooks": []}),
    ("AdmissionregistrationV1Api", "mutating_webhook_configuration", False, "admissionregistration.k8s.io/v1",
     "MutatingWebhookConfiguration", {"webhooks": []}),
    ("AdmissionregistrationV1Api", "validating_admission_policy", False, "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy",
     {"spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                                       "resources": ["configmaps"]}]},
               "validations": [{"expression": "object.metadata.name != 'forbidden'"}]}},
     {"spec.failurePolicy": "Fail", "spec.matchConstraints.matchPolicy": "Equivalent", "spec.matchConstraints.resourceRules.0.scope": "*"}),
    ("AdmissionregistrationV1Api", "validating_admission_policy_binding", False, "admissionregistration.k8s.io/v1",
     "ValidatingAdmissionPolicyBinding", {"spec": {"policyName": "py-validating-admission-policy", "validationActions": ["Deny"]}}),
    ("AdmissionregistrationV1beta1Api", "mutating_admission_policy", False, "admissionregistration.k8s.io/v1beta1", "MutatingAdmissionPolicy",
     {"spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                                       "resources": ["configmaps"]}]},
               "matchConditions": [{"name": "never", "expression": "false"}],
               "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: 'add', path: '/data/py', value: 'y'}]"}}]}},
     {"spec.failurePolicy": "Fail", "spec.reinvocationPolicy": "Never", "spec.matchConstraints.matchPolicy": "Equivalent"}),
    ("AdmissionregistrationV1beta1Api", "mutating_admission_policy_binding", False, "admissionregistration.k8s.io/v1beta1",
     "MutatingAdmissionPolicyBinding", {"spec": {"policyName": "py-mutating-admission-policy"}}),
    ("ApiregistrationV1Api", "api_service", False, "apiregistration.k8s.io/v1", "APIService",
     {"spec": {"group": "py.example.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 10,
               "service": {"namespace": "default", "name": "py"}}}),
    ("RbacAuthorizationV1Api", "role", True, "rbac.authorization.k8s.io/v1", "Role", {"rules": RULES}),
    ("RbacAuthorizationV1Api", "role_binding", True, "rbac.authorization.k8s.io/v1", "RoleBinding", {"subjects": SUBJECTS, "roleRef": ROLE_REF}),
    ("RbacAuthorizationV1Api", "cluster_role", False, "rbac.authorization.k8s.io/v1", "ClusterRole", {"rules": RULES}),
    ("RbacAuthorizationV1Api", "cluster_role_binding", False, "rbac.authorization.k8s.io/v1", "ClusterRoleBinding",
     {"subjects": SUBJECTS, "roleRef": ROLE_REF}),
    ("FlowcontrolApiserverV1Api", "priority_level_configuration", False, "flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration",
     {"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "limitResponse": {"type": "Reject"}}}}),
    ("FlowcontrolApiserverV1Api", "flow_schema", False, "flowcontrol.apiserver.k8s.io/v1", "FlowSchema",
     {"spec": {"priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 9000}}),
]


def field_at(model, path):
    """The value at the dotted `path` (the API's field names; a number indexes a list) of a typed model, as the client
    serializes it; None when missing."""
    value = API.sanitize_for_serialization(model)
    for step in path.split("."):
        if isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        elif isinstance(value, dict):
            value = value.get(step)
        else:
            return None
    return value


def name_of(suffix):
    """The row's object name (an IPAddress is named by its address, an APIService by its version and group)."""
    named = {"ip_address": "10.96.1.1", "api_service": "v1beta1.py.example.io"}
    return named.get(suffix, "py-" + suffix.replace("_", "-"))


def namespace():
    core = client.CoreV1Api(API)
    try:
        core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    except ApiException as error:
        if error.status != 409:
            raise


def every_kind():
    for api_class, suffix, namespaced, api_version, kind, fields, *defaulted in ROWS:
        api = getattr(client, api_class)(API)
        # Two versions of one kind are two rows: each its own object.
        version = api_version.rsplit("/", 1)[-1]
        name, row = f"{name_of(suffix)}-{version}" if kind == "HorizontalPodAutoscaler" else name_of(suffix), f"{suffix}-{version}"
        body = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "labels": {"row": row}}, **fields}
        where = (NS,) if namespaced else ()
        kinds = "namespaced_" if namespaced else ""
        what = f"{kind} ({api_version})"
        try:
            created = getattr(api, f"create_{kinds}{suffix}")(*where, body)
            expect_equal(created.metadata.name, name, f"{what}: created")
            read = getattr(api, f"read_{kinds}{suffix}")(name, *where)
            expect_equal(read.metadata.uid, created.metadata.uid, f"{what}: read")
            listing = getattr(api, f"list_{kinds}{suffix}")(*where, label_selector=f"row={row}")
            expect_equal([i.metadata.name for i in listing.items], [name], f"{what}: list")
            seen = []
            stream = watch.Watch()
            for event in stream.stream(getattr(api, f"list_{kinds}{suffix}"), *where, label_selector=f"row={row}",
                                       resource_version="0", timeout_seconds=5):
                seen.append((event["type"], event["object"].metadata.name))
                stream.stop()
            expect_equal(seen, [("ADDED", name)], f"{what}: watch")
            patched = getattr(api, f"patch_{kinds}{suffix}")(name, *where, {"metadata": {"annotations": {"patched": "yes"}}})
            expect_equal(patched.metadata.annotations.get("patched"), "yes", f"{what}: patch")
            for model, when in ((read, "read"), (patched, "patched")):
                for path, value in (defaulted[0] if defaulted else {}).items():
                    expect_equal(field_at(model, path), value, f"{what}: {path} as kube defaults it ({when})")
        except (ValueError, TypeError) as error:
            raise CheckFailed(f"{what}: the client's model refused the answer: {error}") from error
        except ApiException as error:
            raise CheckFailed(f"{what}: API error {error.status}: {error.body}") from error


def status_as_kube_writes_it():
    """What kube writes on create: workloads' required status counts, pods Pending with their QoS class."""
    apps = client.AppsV1Api(API)
    expect_equal(apps.read_namespaced_replica_set(name_of("replica_set"), NS).status.replicas, 0, "ReplicaSet status.replicas")
    sts = apps.read_namespaced_stateful_set(name_of("stateful_set"), NS).status
    expect_equal((sts.replicas, sts.available_replicas), (0, 0), "StatefulSet status")
    ds = apps.read_namespaced_daemon_set(name_of("daemon_set"), NS).status
    expect_equal((ds.current_number_scheduled, ds.number_misscheduled, ds.desired_number_scheduled, ds.number_ready), (0, 0, 0, 0),
                 "DaemonSet status")
    core = client.CoreV1Api(API)
    expect_equal(core.read_namespaced_replication_controller(name_of("replication_controller"), NS).status.replicas, 0, "RC status.replicas")
    pdb = client.PolicyV1Api(API).read_namespaced_pod_disruption_budget(name_of("pod_disruption_budget"), NS).status
    expect_equal((pdb.current_healthy, pdb.desired_healthy, pdb.disruptions_allowed, pdb.expected_pods), (0, 0, 0, 0), "PDB status")
    pod = core.read_namespaced_pod(name_of("pod"), NS)
    expect_equal((pod.status.phase, pod.status.qos_class), ("Pending", "BestEffort"), "Pod status")
    limits = {"cpu": "500m", "memory": "64Mi"}
    guaranteed = core.create_namespaced_pod(NS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "py-guaranteed"}, "spec": {
        "containers": [{"name": "c", "image": "nginx:1.27", "resources": {"limits": limits}}]}})
    expect_equal(guaranteed.status.qos_class, "Guaranteed", "limits alone make a Guaranteed pod")
    expect_equal(guaranteed.spec.containers[0].resources.requests, limits, "requests default to limits")
    burstable = core.create_namespaced_pod(NS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "py-burstable"}, "spec": {
        "containers": [{"name": "c", "image": "nginx:1.27", "resources": {"requests": {"cpu": "100m"}}}]}})
    expect_equal(burstable.status.qos_class, "Burstable", "a request without limits")
    # A status write that leaves a required count out gets it back as 0, as Go's decoding would.
    rs = apps.patch_namespaced_replica_set_status(name_of("replica_set"), NS, {"status": {"readyReplicas": 0, "replicas": None}})
    expect_equal(rs.status.replicas, 0, "status.replicas after a status patch")


def autoscaling_in_two_versions():
    """One HPA, two views: v1's CPU target is v2's CPU metric, and the other way round; v2's defaults."""
    v1 = client.AutoscalingV1Api(API)
    v2 = client.AutoscalingV2Api(API)
    made_v1 = name_of("horizontal_pod_autoscaler") + "-v1"
    seen = v2.read_namespaced_horizontal_pod_autoscaler(made_v1, NS)
    expect_equal((seen.spec.min_replicas, seen.spec.metrics[0].resource.name, seen.spec.metrics[0].resource.target.average_utilization),
                 (1, "cpu", 50), "a v1 HPA through v2")
    made_v2 = name_of("horizontal_pod_autoscaler") + "-v2"
    back = v1.read_namespaced_horizontal_pod_autoscaler(made_v2, NS)
    expect_equal((back.spec.target_cpu_utilization_percentage, back.status.current_replicas, back.status.desired_replicas), (80, 0, 0),
                 "a v2 HPA without metrics through v1: kube's 80% CPU default")


def field_selectors():
    """Each kind's field labels as kube reads them; an absent field compares as its zero value."""
    core = client.CoreV1Api(API)
    pods = lambda selector: sorted(p.metadata.name for p in core.list_namespaced_pod(NS, field_selector=selector).items)
    everyone = ["py-burstable", "py-guaranteed", name_of("pod")]
    expect_equal(pods("status.phase=Pending"), everyone, "status.phase=Pending")
    expect_equal(pods("spec.hostNetwork=false"), everyone, "an absent spec.hostNetwork is false")
    expect_equal(pods("spec.nodeName="), everyone, "an absent spec.nodeName is empty")
    expect_equal(pods("spec.restartPolicy=Always,spec.schedulerName=default-scheduler"), everyone, "defaulted fields")
    expect_equal(pods("spec.serviceAccountName=nobody"), [], "spec.serviceAccountName")
    expect_equal(pods("metadata.name=py-guaranteed"), ["py-guaranteed"], "metadata.name")
    rcs = core.list_namespaced_replication_controller(NS, field_selector="status.replicas=0").items
    expect_equal([r.metadata.name for r in rcs], [name_of("replication_controller")], "RC status.replicas")
    jobs = client.BatchV1Api(API).list_namespaced_job(NS, field_selector="status.successful=0").items
    expect_equal([j.metadata.name for j in jobs], [name_of("job")], "Job status.successful reads status.succeeded")
    events = core.list_namespaced_event(NS, field_selector="involvedObject.kind=Pod,involvedObject.name=p,reason=R").items
    expect_equal([e.metadata.name for e in events], [name_of("event")], "Event involvedObject.*")
    nodes = core.list_node(field_selector="spec.unschedulable=false").items
    expect(name_of("node") in [n.metadata.name for n in nodes], "an absent spec.unschedulable is false")
    try:
        core.list_namespaced_config_map(NS, field_selector="status.phase=x")
    except ApiException as error:
        expect_equal(error.status, 400, "an unsupported field label")
        expect_equal(json.loads(error.body)["message"], "field label not supported: status.phase", "its message")
    else:
        raise CheckFailed("a ConfigMap field selector on status.phase was accepted")


def services_as_kube_allocates_them():
    """Cluster IPs from --service-cluster-ip-range (kube's 10.0.0.0/24), node ports from 30000-32767, each once."""
    core = client.CoreV1Api(API)
    plain = core.read_namespaced_service(name_of("service"), NS).spec
    expect(plain.cluster_ip.startswith("10.0.0.") and plain.cluster_ips == [plain.cluster_ip], f"a cluster IP: {plain}")
    expect_equal((plain.ip_families, plain.ip_family_policy, plain.internal_traffic_policy, plain.session_affinity),
                 (["IPv4"], "SingleStack", "Cluster", "None"), "a Service's defaults")
    node_port = core.create_namespaced_service(NS, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "py-nodeport"},
        "spec": {"type": "NodePort", "ports": [{"port": 80}]}}).spec
    expect(node_port.cluster_ip != plain.cluster_ip, "another address")
    expect(30000 <= node_port.ports[0].node_port <= 32767, f"a node port: {node_port.ports[0]}")
    expect_equal(node_port.external_traffic_policy, "Cluster", "externalTrafficPolicy")
    headless = core.create_namespaced_service(NS, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "py-headless"},
        "spec": {"clusterIP": "None", "ports": [{"port": 80}]}}).spec
    expect_equal((headless.cluster_ip, headless.cluster_ips), ("None", ["None"]), "a headless Service")
    for what, spec, field, words in [
        ("a taken address", {"clusterIP": plain.cluster_ip, "ports": [{"port": 80}]}, "spec.clusterIPs", "provided IP is already allocated"),
        ("an address outside the range", {"clusterIP": "10.9.9.9", "ports": [{"port": 80}]}, "spec.clusterIPs",
         "The range of valid IPs is 10.0.0.0/24"),
        ("a taken node port", {"type": "NodePort", "ports": [{"port": 80, "nodePort": node_port.ports[0].node_port}]},
         "spec.ports[0].nodePort", "provided port is already allocated"),
    ]:
        try:
            core.create_namespaced_service(NS, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "py-refused"}, "spec": spec})
        except ApiException as error:
            body = json.loads(error.body)
            expect_equal(error.status, 422, what)
            causes = body.get("details", {}).get("causes", [])
            expect(any(c.get("field") == field and words in c.get("message", "") for c in causes), f"{what}: {body}")
        else:
            raise CheckFailed(f"{what} was accepted")
    # An update that leaves the address out keeps it (kubectl apply of a manifest without one).
    replaced = core.replace_namespaced_service("py-nodeport", NS, {"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "py-nodeport", "resourceVersion": core.read_namespaced_service("py-nodeport", NS).metadata.resource_version},
        "spec": {"type": "NodePort", "ports": [{"port": 80}]}}).spec
    expect_equal((replaced.cluster_ip, replaced.ports[0].node_port), (node_port.cluster_ip, node_port.ports[0].node_port), "kept on update")


def errors_byte_for_byte():
    """A Status body in Go's field order, empty fields left out, with kube's trailing newline."""
    core = client.CoreV1Api(API)
    try:
        core.read_namespaced_config_map("py-missing", NS)
    except ApiException as error:
        wanted = ('{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                  '"message":"configmaps \\"py-missing\\" not found","reason":"NotFound",'
                  '"details":{"name":"py-missing","kind":"configmaps"},"code":404}\n')
        expect_equal(error.body if isinstance(error.body, str) else error.body.decode(), wanted, "a 404 body")
    else:
        raise CheckFailed("a missing configmap was found")
    try:
        core.create_namespaced_config_map(NS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}})
    except ApiException as error:
        body = error.body if isinstance(error.body, str) else error.body.decode()
        expect(body.startswith('{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'), f"field order: {body}")
        expect('"reason":"Invalid","details":{"name":"Bad_Name","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid","message":'
               in body, f"details and causes in Go's order: {body}")
        expect(body.endswith('}],"code":422}\n') or body.endswith('},"code":422}\n'), f"code last, then a newline: {body}")
    else:
        raise CheckFailed("an invalid name was accepted")


run([
    ("namespace", namespace),
    ("every kind through its typed API", every_kind),
    ("status as kube writes it", status_as_kube_writes_it),
    ("autoscaling in two versions", autoscaling_in_two_versions),
    ("field selectors as kube reads them", field_selectors),
    ("services as kube allocates them", services_as_kube_allocates_them),
    ("error bodies byte for byte", errors_byte_for_byte),
])
