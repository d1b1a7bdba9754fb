"""The Python client's CoreV1Api on ConfigMaps: create, read, list by label, replace, a strategic merge
patch from a dict, delete; a watch from a list's resourceVersion; and 409s as ApiException with the Status
body's reason.

Usage: core_v1.py --kubeconfig FILE [--namespace NS]
"""

import json
import queue
import threading

from kubernetes import watch
from kubernetes.client.rest import ApiException

from checks import CheckFailed, api_client, client, eventually, expect, expect_equal, run

API, NAMESPACE = api_client()
CORE = client.CoreV1Api(API)


def configmap(name, data, labels=None, resource_version=None):
    metadata = client.V1ObjectMeta(name=name, labels=labels or {"suite": "python"}, resource_version=resource_version)
    return client.V1ConfigMap(metadata=metadata, data=data)


def status_of(error):
    """The decoded `metav1.Status` of an ApiException."""
    return json.loads(error.body)


def expect_api_error(call, status, reason, what):
    try:
        call()
    except ApiException as error:
        expect_equal(error.status, status, f"{what}: HTTP status")
        body = status_of(error)
        expect_equal(body.get("kind"), "Status", f"{what}: body kind")
        expect_equal(body.get("reason"), reason, f"{what}: Status reason")
        expect_equal(body.get("code"), status, f"{what}: Status code")
        return body
    raise CheckFailed(f"{what}: expected ApiException {status} {reason}, the call succeeded")


def crud():
    created = CORE.create_namespaced_config_map(NAMESPACE, configmap("py-one", {"a": "1"}))
    expect_equal(created.metadata.name, "py-one", "created name")
    expect(created.metadata.uid and created.metadata.resource_version, "created object has a uid and a resourceVersion")
    CORE.create_namespaced_config_map(NAMESPACE, configmap("py-two", {"b": "2"}, labels={"suite": "other"}))

    read = CORE.read_namespaced_config_map("py-one", NAMESPACE)
    expect_equal(read.data, {"a": "1"}, "read data")
    expect_equal(read.metadata.creation_timestamp is not None, True, "read creationTimestamp is parsed")

    listed = CORE.list_namespaced_config_map(NAMESPACE, label_selector="suite=python")
    expect_equal([item.metadata.name for item in listed.items], ["py-one"], "list by label")
    expect(listed.metadata.resource_version, "the list has a resourceVersion")

    read.data = {"a": "replaced"}
    replaced = CORE.replace_namespaced_config_map("py-one", NAMESPACE, read)
    expect_equal(replaced.data, {"a": "replaced"}, "replaced data")
    expect(replaced.metadata.resource_version != read.metadata.resource_version, "replace moves the resourceVersion")

    # A dict body is sent as a strategic merge patch: the map is merged, not replaced.
    patched = CORE.patch_namespaced_config_map("py-one", NAMESPACE, {"data": {"c": "3"}, "metadata": {"labels": {"patched": "yes"}}})
    expect_equal(patched.data, {"a": "replaced", "c": "3"}, "strategic merge patch merges data")
    expect_equal(patched.metadata.labels, {"suite": "python", "patched": "yes"}, "strategic merge patch merges labels")

    deleted = CORE.delete_namespaced_config_map("py-one", NAMESPACE)
    # This client version returns the body of a delete as a plain dict (its declared type is `object`).
    expect_equal(deleted.get("status"), "Success", "delete answers a Success Status")
    expect_equal(deleted.get("details", {}).get("name"), "py-one", "the Status names the deleted object")
    expect_api_error(lambda: CORE.read_namespaced_config_map("py-one", NAMESPACE), 404, "NotFound", "read after delete")
    CORE.delete_namespaced_config_map("py-two", NAMESPACE)


def watch_from_list():
    listed = CORE.list_namespaced_config_map(NAMESPACE, label_selector="suite=watched")
    events = queue.Queue()
    watcher = watch.Watch()

    def stream():
        try:
            for event in watcher.stream(CORE.list_namespaced_config_map, NAMESPACE, label_selector="suite=watched",
                                        resource_version=listed.metadata.resource_version, timeout_seconds=20):
                events.put((event["type"], event["object"].metadata.name, event["object"].data))
                if event["type"] == "DELETED":
                    watcher.stop()
        except Exception as error:  # reported through the queue to the step
            events.put(("ERROR", repr(error), None))

    thread = threading.Thread(target=stream, daemon=True)
    thread.start()
    CORE.create_namespaced_config_map(NAMESPACE, configmap("py-watched", {"v": "1"}, labels={"suite": "watched"}))
    CORE.patch_namespaced_config_map("py-watched", NAMESPACE, {"data": {"v": "2"}})
    CORE.delete_namespaced_config_map("py-watched", NAMESPACE)
    seen = []
    while len(seen) < 3:
        try:
            seen.append(events.get(timeout=10))
        except queue.Empty:
            raise CheckFailed(f"the watch saw only {seen}") from None
    expect_equal(seen, [("ADDED", "py-watched", {"v": "1"}), ("MODIFIED", "py-watched", {"v": "2"}),
                        ("DELETED", "py-watched", {"v": "2"})], "watch events")
    thread.join(timeout=10)


def conflicts():
    CORE.create_namespaced_config_map(NAMESPACE, configmap("py-conflict", {"a": "1"}))
    body = expect_api_error(lambda: CORE.create_namespaced_config_map(NAMESPACE, configmap("py-conflict", {"a": "1"})),
                            409, "AlreadyExists", "create twice")
    expect_equal(body.get("message"), 'configmaps "py-conflict" already exists', "AlreadyExists message")
    current = CORE.read_namespaced_config_map("py-conflict", NAMESPACE)
    stale = current.metadata.resource_version
    current.data = {"a": "2"}
    CORE.replace_namespaced_config_map("py-conflict", NAMESPACE, current)
    stale_replace = configmap("py-conflict", {"a": "3"}, resource_version=stale)
    body = expect_api_error(lambda: CORE.replace_namespaced_config_map("py-conflict", NAMESPACE, stale_replace),
                            409, "Conflict", "replace with a stale resourceVersion")
    expect("the object has been modified" in body.get("message", ""), f"Conflict message: {body.get('message')}")
    eventually(lambda: CORE.read_namespaced_config_map("py-conflict", NAMESPACE).data == {"a": "2"}, "the stale replace stored nothing")
    CORE.delete_namespaced_config_map("py-conflict", NAMESPACE)


run([("configmap crud", crud), ("watch from a list's resourceVersion", watch_from_list), ("409 conflicts", conflicts)])
