"""The Python client on an API bound from another workspace: in a consumer workspace whose APIBinding `widgets`
binds kcp's APIExport of `example.io` `widgets` (the kubeconfig's server URL ends in `/clusters/<workspace>`), the
binding is read as a cluster-scoped custom object, then CustomObjectsApi creates, gets, lists, patches and deletes
widgets under the export's schema (its default, its validation).

Usage: api_exports.py --kubeconfig FILE [--namespace NS]
"""

import json

from kubernetes.client.rest import ApiException

from checks import CheckFailed, api_client, client, eventually, expect, expect_equal, run

API, NAMESPACE = api_client()
GROUP, VERSION, PLURAL, KIND = "example.io", "v1", "widgets", "Widget"
OBJECTS = client.CustomObjectsApi(API)


def widget(name, spec):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "metadata": {"name": name, "labels": {"suite": "python"}}, "spec": spec}


def binding_bound():
    found = OBJECTS.get_cluster_custom_object("apis.kcp.io", "v1alpha1", "apibindings", "widgets")
    expect_equal(found["status"]["phase"], "Bound", "the binding's phase")
    expect_equal(found["spec"]["reference"]["export"]["name"], "widgets", "the binding's export")
    resources = [(r["group"], r["resource"]) for r in found["status"].get("boundResources", [])]
    expect_equal(resources, [(GROUP, PLURAL)], "the bound resources")

    def served():
        try:
            return OBJECTS.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL) is not None
        except ApiException as error:
            if error.status == 404:
                return False
            raise

    eventually(served, "widgets to be served")


def custom_objects_api():
    created = OBJECTS.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, widget("py-one", {"size": 2, "color": "red"}))
    expect_equal(created["spec"], {"size": 2, "color": "red"}, "created spec")
    expect(created["metadata"].get("resourceVersion"), "the created widget has a resourceVersion")
    defaulted = OBJECTS.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, widget("py-two", {"color": "blue"}))
    expect_equal(defaulted["spec"], {"size": 3, "color": "blue"}, "the export's schema defaults size")

    got = OBJECTS.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, "py-one")
    expect_equal(got["metadata"]["uid"], created["metadata"]["uid"], "get returns the created object")
    listed = OBJECTS.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, label_selector="suite=python")
    expect_equal(sorted(item["metadata"]["name"] for item in listed["items"]), ["py-one", "py-two"], "list by label")
    expect_equal(listed["kind"], "WidgetList", "list kind")

    patched = OBJECTS.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, "py-one", {"spec": {"color": "green"}})
    expect_equal(patched["spec"], {"size": 2, "color": "green"}, "a dict patch is a merge patch for custom objects")

    for name in ["py-one", "py-two"]:
        OBJECTS.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
    eventually(lambda: not OBJECTS.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, label_selector="suite=python")["items"],
               "the widgets to be gone")


def schema_validation():
    try:
        OBJECTS.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, widget("py-bad", {"size": 0}))
        raise CheckFailed("a widget with size 0 was created")
    except ApiException as error:
        expect_equal(error.status, 422, "size 0: HTTP status")
        status = json.loads(error.body)
        expect_equal(status.get("reason"), "Invalid", "size 0: reason")
        expect("spec.size" in status.get("message", ""), f"size 0: message {status.get('message')!r} names spec.size")
    try:
        OBJECTS.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, "py-bad")
        raise CheckFailed("the invalid widget was stored")
    except ApiException as error:
        expect_equal(error.status, 404, "the invalid widget: HTTP status of a get")


run([("binding Bound", binding_bound), ("CustomObjectsApi", custom_objects_api), ("schema validation", schema_validation)])
