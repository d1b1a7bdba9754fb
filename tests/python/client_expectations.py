"""What the Python client's own tests expect of a cluster, as a tenant admin: the `default/kubernetes` Service,
a new namespace's `default` ServiceAccount and `kube-root-ca.crt`, an eviction (CoreV1Api's
`create_namespaced_pod_eviction`) allowed and then refused by a PodDisruptionBudget, and the error
`read_namespaced_pod_log` gets.

Usage: client_expectations.py --kubeconfig FILE --ca FILE
"""

import json
import sys

from kubernetes.client.rest import ApiException

from checks import CheckFailed, api_client, client, eventually, expect, expect_equal, run

CA = open(sys.argv.pop(sys.argv.index("--ca") + 1)).read()
sys.argv.remove("--ca")
API, _ = api_client()
CORE = client.CoreV1Api(API)
POLICY = client.PolicyV1Api(API)
NAMESPACE = "py-expect"


def kubernetes_service():
    service = CORE.read_namespaced_service("kubernetes", "default")
    expect_equal(service.metadata.labels, {"component": "apiserver", "provider": "kubernetes"}, "labels")
    expect_equal(service.spec.type, "ClusterIP", "type")
    expect_equal([(p.name, p.port, p.protocol) for p in service.spec.ports], [("https", 443, "TCP")], "ports")


def namespace_defaults():
    CORE.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
    maps = eventually(lambda: [m for m in CORE.list_namespaced_config_map(NAMESPACE).items if m.metadata.name == "kube-root-ca.crt"],
                      "kube-root-ca.crt in the new namespace")
    expect_equal(maps[0].data, {"ca.crt": CA}, "kube-root-ca.crt data")
    eventually(lambda: [a for a in CORE.list_namespaced_service_account(NAMESPACE).items if a.metadata.name == "default"],
               "the default ServiceAccount")


def pod(name):
    metadata = client.V1ObjectMeta(name=name, labels={"app": "guarded"})
    spec = client.V1PodSpec(containers=[client.V1Container(name="app", image="busybox")])
    CORE.create_namespaced_pod(NAMESPACE, client.V1Pod(metadata=metadata, spec=spec))
    running = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    CORE.patch_namespaced_pod_status(name, NAMESPACE, running)


def eviction(name):
    return client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=NAMESPACE))


def evictions():
    pod("guarded-1")
    pod("guarded-2")
    budget = client.V1PodDisruptionBudget(metadata=client.V1ObjectMeta(name="guard"),
        spec=client.V1PodDisruptionBudgetSpec(min_available=1, selector=client.V1LabelSelector(match_labels={"app": "guarded"})))
    POLICY.create_namespaced_pod_disruption_budget(NAMESPACE, budget)
    CORE.create_namespaced_pod_eviction("guarded-1", NAMESPACE, eviction("guarded-1"))
    try:
        CORE.create_namespaced_pod_eviction("guarded-2", NAMESPACE, eviction("guarded-2"))
    except ApiException as error:
        expect_equal(error.status, 429, "the refused eviction's status")
        status = json.loads(error.body)
        expect_equal(status["message"], "Cannot evict pod as it would violate the pod's disruption budget.", "message")
        expect_equal(status["details"]["causes"][0]["reason"], "DisruptionBudget", "cause")
    else:
        raise CheckFailed("the second eviction was allowed")
    status = POLICY.read_namespaced_pod_disruption_budget("guard", NAMESPACE).status
    expect_equal((status.current_healthy, status.desired_healthy, status.disruptions_allowed, status.expected_pods), (1, 1, 0, 1), "budget status")


def pod_log():
    try:
        CORE.read_namespaced_pod_log("guarded-2", NAMESPACE, container="nope")
    except ApiException as error:
        expect_equal(error.status, 400, "status")
        expect_equal(json.loads(error.body)["message"], "container nope is not valid for pod guarded-2", "message")
    else:
        raise CheckFailed("a log of a container the pod lacks was answered")


run([("kubernetes service", kubernetes_service), ("namespace defaults", namespace_defaults), ("evictions", evictions),
     ("pod log error", pod_log)])
