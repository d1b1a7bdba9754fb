"""Hostile and unusual input through the Python client, answered as kube-apiserver 1.32 answers it:
percent-encoded names (the client escapes `:` in a path), malformed label selectors on list and
deletecollection, a body whose namespace is not the URL's on replace and patch, and a namespaced Role that
names non-resource URLs.

Usage: hardening.py --kubeconfig FILE [--namespace NS]
"""

import json

from kubernetes.client.rest import ApiException

from checks import CheckFailed, api_client, client, expect, expect_equal, run

API, NAMESPACE = api_client()
CORE = client.CoreV1Api(API)
RBAC = client.RbacAuthorizationV1Api(API)


def api_error(call, status, reason, what):
    """Runs `call`, which must fail with `status`/`reason`; returns the Status body."""
    try:
        call()
    except ApiException as error:
        body = json.loads(error.body)
        expect_equal((error.status, body.get("kind"), body.get("reason"), body.get("code")),
                     (status, "Status", reason, status), f"{what}: status")
        return body
    raise CheckFailed(f"{what}: expected {status} {reason}, the call succeeded")


def percent_encoded_names():
    # The client sends /apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Adiscovery.
    role = RBAC.read_cluster_role("system:discovery")
    expect_equal(role.metadata.name, "system:discovery", "the ClusterRole read by its escaped name")
    rule = client.V1PolicyRule(api_groups=[""], resources=["configmaps"], verbs=["get"])
    RBAC.create_namespaced_role(NAMESPACE, client.V1Role(metadata=client.V1ObjectMeta(name="team:reader"), rules=[rule]))
    read = RBAC.read_namespaced_role("team:reader", NAMESPACE)
    expect_equal(read.rules[0].resources, ["configmaps"], "a Role named with ':' read back")
    RBAC.delete_namespaced_role("team:reader", NAMESPACE)
    api_error(lambda: RBAC.read_namespaced_role("team:reader", NAMESPACE), 404, "NotFound", "the deleted Role")


def malformed_label_selectors():
    long_value = "x" * 64
    rows = [
        ("a!==b", "unable to parse requirement: found '=', expected: identifier"),
        ("a,", "found '', expected: identifier after ','"),
        (f"a={long_value}", f'unable to parse requirement: values[0][a]: Invalid value: "{long_value}": must be no more than 63 characters'),
    ]
    for selector, message in rows:
        body = api_error(lambda: CORE.list_namespaced_config_map(NAMESPACE, label_selector=selector), 400, "BadRequest", f"list -l {selector}")
        expect_equal(body.get("message"), message, f"list -l {selector}: message")
        body = api_error(lambda: CORE.delete_collection_namespaced_config_map(NAMESPACE, label_selector=selector), 400, "BadRequest",
                         f"deletecollection -l {selector}")
        expect_equal(body.get("message"), message, f"deletecollection -l {selector}: message")


def namespace_mismatch():
    CORE.create_namespaced_config_map(NAMESPACE, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-ns"), data={"a": "1"}))
    message = "the namespace of the provided object does not match the namespace sent on the request"
    moved = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-ns", namespace="kube-public"), data={"a": "2"})
    body = api_error(lambda: CORE.replace_namespaced_config_map("py-ns", NAMESPACE, moved), 400, "BadRequest", "replace into another namespace")
    expect_equal(body.get("message"), message, "replace: message")
    body = api_error(lambda: CORE.patch_namespaced_config_map("py-ns", NAMESPACE, {"metadata": {"namespace": "kube-public"}}),
                     400, "BadRequest", "patch into another namespace")
    expect_equal(body.get("message"), message, "patch: message")
    expect_equal(CORE.read_namespaced_config_map("py-ns", NAMESPACE).data, {"a": "1"}, "the ConfigMap is unchanged")
    CORE.delete_namespaced_config_map("py-ns", NAMESPACE)


def namespaced_role_with_non_resource_urls():
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "urls"},
            "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]}
    body = api_error(lambda: RBAC.create_namespaced_role(NAMESPACE, role), 422, "Invalid", "a Role with nonResourceURLs")
    causes = body.get("details", {}).get("causes", [])
    expect_equal([(c.get("reason"), c.get("field"), c.get("message")) for c in causes], [(
        "FieldValueInvalid", "rules[0].nonResourceURLs",
        'Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs')], "the causes")
    expect(body.get("message", "").startswith('Role.rbac.authorization.k8s.io "urls" is invalid: '), f"message: {body.get('message')}")


run([
    ("percent-encoded names", percent_encoded_names),
    ("malformed label selectors", malformed_label_selectors),
    ("namespace mismatch", namespace_mismatch),
    ("namespaced Role with nonResourceURLs", namespaced_role_with_non_resource_urls),
])
