"""The Python client on custom resources: a CRD created through ApiextensionsV1Api and waited on until it is
Established, then its objects through the DynamicClient (create, get, list, merge patch, delete) and through
CustomObjectsApi (the same, plus a strict create refused for an undeclared field).

Usage: custom_resources.py --kubeconfig FILE [--namespace NS]
"""

import json
import os
import tempfile

from kubernetes import dynamic
from kubernetes.client.rest import ApiException

from checks import CheckFailed, api_client, client, eventually, expect, expect_equal, run

API, NAMESPACE = api_client()
GROUP, VERSION, PLURAL, KIND = "py.example.com", "v1", "widgets", "Widget"
CRD_NAME = f"{PLURAL}.{GROUP}"


def crd():
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "color": {"type": "string"}}},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    }}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": PLURAL, "singular": "widget", "kind": KIND, "listKind": "WidgetList"},
            "versions": [{"name": VERSION, "served": True, "storage": True, "schema": {"openAPIV3Schema": schema},
                          "subresources": {"status": {}}}],
        },
    }


def widget(name, size, color="red"):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "metadata": {"name": name, "labels": {"suite": "python"}},
            "spec": {"size": size, "color": color}}


def established():
    extensions = client.ApiextensionsV1Api(API)
    extensions.create_custom_resource_definition(crd())

    def condition():
        found = extensions.read_custom_resource_definition(CRD_NAME)
        return any(c.type == "Established" and c.status == "True" for c in (found.status.conditions or []))

    eventually(condition, "the CRD to be Established")


def dynamic_client():
    cache = os.path.join(tempfile.mkdtemp(prefix="kspaces-discovery-"), "cache.json")
    widgets = dynamic.DynamicClient(API, cache_file=cache).resources.get(api_version=f"{GROUP}/{VERSION}", kind=KIND)
    created = widgets.create(body=widget("dyn-one", 1), namespace=NAMESPACE)
    expect_equal(created.metadata.name, "dyn-one", "created name")
    expect(created.metadata.resourceVersion, "created widget has a resourceVersion")
    widgets.create(body=widget("dyn-two", 2), namespace=NAMESPACE)

    got = widgets.get(name="dyn-one", namespace=NAMESPACE)
    expect_equal(got.spec.size, 1, "get spec.size")
    listed = widgets.get(namespace=NAMESPACE, label_selector="suite=python")
    expect_equal(sorted(item.metadata.name for item in listed.items), ["dyn-one", "dyn-two"], "list by label")
    expect_equal(listed.kind, "WidgetList", "list kind")

    patched = widgets.patch(name="dyn-one", namespace=NAMESPACE, body={"spec": {"color": "blue"}},
                            content_type="application/merge-patch+json")
    expect_equal((patched.spec.size, patched.spec.color), (1, "blue"), "merge patch keeps size, sets color")

    for name in ["dyn-one", "dyn-two"]:
        widgets.delete(name=name, namespace=NAMESPACE)
    eventually(lambda: not widgets.get(namespace=NAMESPACE).items, "the widgets to be gone")


def custom_objects_api():
    objects = client.CustomObjectsApi(API)
    created = objects.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, widget("co-one", 3))
    expect_equal(created["spec"], {"size": 3, "color": "red"}, "created spec")

    got = objects.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, "co-one")
    expect_equal(got["metadata"]["uid"], created["metadata"]["uid"], "get returns the created object")
    listed = objects.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, label_selector="suite=python")
    expect_equal([item["metadata"]["name"] for item in listed["items"]], ["co-one"], "list by label")

    patched = objects.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, "co-one", {"spec": {"size": 4}})
    expect_equal(patched["spec"], {"size": 4, "color": "red"}, "a dict patch is a merge patch for custom objects")

    try:
        objects.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, dict(widget("co-strict", 1), extra=1),
                                                field_validation="Strict")
        raise CheckFailed("a strict create with an undeclared field succeeded")
    except ApiException as error:
        expect_equal(error.status, 400, "strict create: HTTP status")
        message = json.loads(error.body).get("message", "")
        expect('strict decoding error: unknown field "extra"' in message, f"strict create message: {message}")

    objects.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, "co-one")
    eventually(lambda: not objects.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL)["items"], "co-one to be gone")
    client.ApiextensionsV1Api(API).delete_custom_resource_definition(CRD_NAME)


run([("CRD established", established), ("DynamicClient", dynamic_client), ("CustomObjectsApi", custom_objects_api)])
