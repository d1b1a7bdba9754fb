//! The rows of the strategic merge patch table, grouped by behaviour.

use serde_json::{json, Value};

use super::{Case, Expect, Root};

fn ok(name: &'static str, root: Root, original: Value, patch: Value, want: Value) -> Case {
    Case {
        name,
        root,
        original,
        patch,
        expect: Expect::Doc(want),
    }
}

fn err(
    name: &'static str,
    root: Root,
    original: Value,
    patch: Value,
    variant: &'static str,
) -> Case {
    Case {
        name,
        root,
        original,
        patch,
        expect: Expect::Error(variant),
    }
}

/// A Deployment whose pod template spec is `spec`.
fn pod(spec: Value) -> Value {
    json!({ "spec": { "template": { "spec": spec } } })
}

/// A Deployment with one pod-spec field set.
fn pod_field(field: &str, value: Value) -> Value {
    let mut spec = serde_json::Map::new();
    spec.insert(field.to_owned(), value);
    pod(Value::Object(spec))
}

fn containers(value: Value) -> Value {
    pod_field("containers", value)
}

use Root::{Deployment as D, MergeItem as M};

pub(super) fn rows() -> Vec<Case> {
    [
        maps(),
        kubectl(),
        merge_lists(),
        ordering(),
        retain_keys(),
        primitive_lists(),
        errors(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn maps() -> Vec<Case> {
    vec![
        ok(
            "map merge keeps untouched keys",
            D,
            json!({"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"replicas": 1}}),
            json!({"metadata": {"labels": {"tier": "fe"}}}),
            json!({"metadata": {"name": "web", "labels": {"app": "web", "tier": "fe"}}, "spec": {"replicas": 1}}),
        ),
        ok(
            "null deletes a field",
            D,
            json!({"metadata": {"name": "web", "annotations": {"a": "1", "b": "2"}}}),
            json!({"metadata": {"annotations": {"a": null}}}),
            json!({"metadata": {"name": "web", "annotations": {"b": "2"}}}),
        ),
        ok(
            "null for an absent field is dropped",
            D,
            json!({"metadata": {"name": "web"}}),
            json!({"metadata": {"annotations": {"a": null}, "labels": null}}),
            json!({"metadata": {"name": "web", "annotations": {}}}),
        ),
        ok(
            "unknown fields merge like JSON merge patch with lists replaced",
            D,
            json!({"spec": {"extra": {"a": 1, "list": [1, 2], "deep": {"x": 1}}}}),
            json!({"spec": {"extra": {"list": [3], "deep": {"y": 2}, "new": true}}}),
            json!({"spec": {"extra": {"a": 1, "list": [3], "deep": {"x": 1, "y": 2}, "new": true}}}),
        ),
        ok(
            "a scalar replaces an object and an object replaces a scalar",
            M,
            json!({"simpleMap": {"a": "1"}, "value": "v"}),
            json!({"simpleMap": "flat", "value": {"nested": "now"}}),
            json!({"simpleMap": "flat", "value": {"nested": "now"}}),
        ),
        ok(
            "$patch replace on a map keeps only the patch's fields",
            D,
            pod_field("nodeSelector", json!({"disk": "ssd", "zone": "a"})),
            pod_field("nodeSelector", json!({"$patch": "replace", "zone": "b"})),
            pod_field("nodeSelector", json!({"zone": "b"})),
        ),
        ok(
            "$patch delete on a map empties it",
            D,
            pod_field("nodeSelector", json!({"disk": "ssd"})),
            pod_field("nodeSelector", json!({"$patch": "delete"})),
            pod_field("nodeSelector", json!({})),
        ),
        ok(
            "$patch merge on a map is an explicit default merge",
            D,
            pod_field("nodeSelector", json!({"disk": "ssd"})),
            pod_field("nodeSelector", json!({"$patch": "merge", "zone": "b"})),
            pod_field("nodeSelector", json!({"disk": "ssd", "zone": "b"})),
        ),
        ok(
            "$patch replace on a map the original lacks yields the map",
            D,
            pod(json!({})),
            pod_field("nodeSelector", json!({"$patch": "replace", "zone": "b"})),
            pod_field("nodeSelector", json!({"zone": "b"})),
        ),
        ok(
            "$patch delete on a map the original lacks leaves it absent",
            D,
            pod(json!({})),
            pod_field("nodeSelector", json!({"$patch": "delete"})),
            pod(json!({})),
        ),
        ok(
            "$patch replace at the top level replaces the document",
            M,
            json!({"name": "a", "value": "1"}),
            json!({"$patch": "replace", "name": "b"}),
            json!({"name": "b"}),
        ),
        ok(
            "$patch delete at the top level empties the document",
            M,
            json!({"name": "a", "value": "1"}),
            json!({"$patch": "delete"}),
            json!({}),
        ),
        ok(
            "a field with strategy replace is replaced, not merged",
            M,
            json!({"replacingMap": {"name": "a", "value": "1"}}),
            json!({"replacingMap": {"other": "x"}}),
            json!({"replacingMap": {"other": "x"}}),
        ),
        ok(
            "keys that merely start with $ are ordinary fields",
            D,
            json!({"spec": {"extra": {"$ref": "a"}}}),
            json!({"spec": {"extra": {"$ref": "b", "$schema": "c"}}}),
            json!({"spec": {"extra": {"$ref": "b", "$schema": "c"}}}),
        ),
        ok(
            "an empty patch changes nothing",
            D,
            json!({"metadata": {"name": "web"}}),
            json!({}),
            json!({"metadata": {"name": "web"}}),
        ),
    ]
}

fn kubectl() -> Vec<Case> {
    let app = || json!({"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}, {"name": "X", "value": "x"}]});
    let sidecar = || json!({"name": "sidecar", "image": "proxy:1"});
    vec![
        ok(
            "kubectl label adds, overwrites and removes labels",
            D,
            json!({"metadata": {"name": "web", "labels": {"app": "web", "tier": "fe", "old": "y"}}}),
            json!({"metadata": {"labels": {"tier": "be", "env": "prod", "old": null}}}),
            json!({"metadata": {"name": "web", "labels": {"app": "web", "tier": "be", "env": "prod"}}}),
        ),
        ok(
            "kubectl scale sets spec.replicas",
            D,
            json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [app()]}}}}),
            json!({"spec": {"replicas": 5}}),
            json!({"spec": {"replicas": 5, "template": {"spec": {"containers": [app()]}}}}),
        ),
        ok(
            "kubectl rollout restart annotates the pod template",
            D,
            json!({"spec": {"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [app()]}}}}),
            json!({"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}}}}}),
            json!({"spec": {"template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}},
                "spec": {"containers": [app()]}}}}),
        ),
        ok(
            "kubectl apply deletes a container with $patch delete",
            D,
            containers(json!([app(), sidecar()])),
            pod(
                json!({"$setElementOrder/containers": [{"name": "app"}], "containers": [{"name": "sidecar", "$patch": "delete"}]}),
            ),
            containers(json!([app()])),
        ),
        ok(
            "kubectl apply reorders containers with $setElementOrder",
            D,
            containers(json!([app(), sidecar()])),
            pod(json!({"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}]})),
            containers(json!([sidecar(), app()])),
        ),
        ok(
            "kubectl apply removes an env var with a delete directive",
            D,
            containers(json!([app(), sidecar()])),
            pod(json!({
                "$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}],
                "containers": [{"name": "app", "$setElementOrder/env": [{"name": "A"}], "env": [{"name": "X", "$patch": "delete"}]}]})),
            containers(
                json!([{"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]}, sidecar()]),
            ),
        ),
        ok(
            "kubectl apply changes an image and adds an env var in place",
            D,
            containers(json!([app(), sidecar()])),
            pod(json!({
                "$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}],
                "containers": [{"name": "app", "image": "app:2",
                    "$setElementOrder/env": [{"name": "A"}, {"name": "B"}, {"name": "X"}],
                    "env": [{"name": "B", "value": "2"}]}]})),
            containers(json!([
                {"name": "app", "image": "app:2", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "X", "value": "x"}]},
                sidecar()])),
        ),
        ok(
            "kubectl apply adds a container at its $setElementOrder position",
            D,
            containers(json!([app(), sidecar()])),
            pod(json!({
                "$setElementOrder/containers": [{"name": "app"}, {"name": "init"}, {"name": "sidecar"}],
                "containers": [{"name": "init", "image": "busybox"}]})),
            containers(json!([app(), {"name": "init", "image": "busybox"}, sidecar()])),
        ),
        ok(
            "kubectl apply switches a volume from hostPath to emptyDir with $retainKeys",
            D,
            pod_field(
                "volumes",
                json!([{"name": "data", "hostPath": {"path": "/srv", "type": "Directory"}}, {"name": "cache", "emptyDir": {}}]),
            ),
            pod(json!({
                "$setElementOrder/volumes": [{"name": "data"}, {"name": "cache"}],
                "volumes": [{"$retainKeys": ["emptyDir", "name"], "emptyDir": {"medium": "Memory"}, "name": "data"}]})),
            pod_field(
                "volumes",
                json!([{"name": "data", "emptyDir": {"medium": "Memory"}}, {"name": "cache", "emptyDir": {}}]),
            ),
        ),
        ok(
            "kubectl apply removes a finalizer and adds another",
            D,
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"$setElementOrder/finalizers": ["a", "c"], "$deleteFromPrimitiveList/finalizers": ["b"], "finalizers": ["c"]}}),
            json!({"metadata": {"finalizers": ["a", "c"]}}),
        ),
        ok(
            "a status patch merges a condition by type",
            D,
            json!({"status": {"conditions": [{"type": "Available", "status": "False"}, {"type": "Progressing", "status": "True"}]}}),
            json!({"status": {"conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}]}}),
            json!({"status": {"conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}, {"type": "Progressing", "status": "True"}]}}),
        ),
    ]
}

fn merge_lists() -> Vec<Case> {
    vec![
        ok(
            "lists without a strategy are replaced",
            D,
            pod_field(
                "tolerations",
                json!([{"key": "a", "operator": "Exists"}, {"key": "b"}]),
            ),
            pod_field("tolerations", json!([{"key": "c", "effect": "NoSchedule"}])),
            pod_field("tolerations", json!([{"key": "c", "effect": "NoSchedule"}])),
        ),
        ok(
            "list-type map without a patch strategy is still replaced",
            D,
            pod_field("readinessGates", json!([{"conditionType": "a"}])),
            pod_field("readinessGates", json!([{"conditionType": "b"}])),
            pod_field("readinessGates", json!([{"conditionType": "b"}])),
        ),
        ok(
            "atomic string lists in containers are replaced",
            D,
            containers(json!([{"name": "app", "args": ["--a", "--b"]}])),
            containers(json!([{"name": "app", "args": ["--c"]}])),
            containers(json!([{"name": "app", "args": ["--c"]}])),
        ),
        ok(
            "containers merge by name and keep unnamed fields",
            D,
            containers(
                json!([{"name": "app", "image": "app:1", "args": ["x"]}, {"name": "side", "image": "s:1"}]),
            ),
            containers(json!([{"name": "side", "image": "s:2"}])),
            containers(
                json!([{"name": "app", "image": "app:1", "args": ["x"]}, {"name": "side", "image": "s:2"}]),
            ),
        ),
        ok(
            "null inside a merged item removes that field",
            D,
            containers(json!([{"name": "app", "image": "app:1", "args": ["x"]}])),
            containers(json!([{"name": "app", "args": null}])),
            containers(json!([{"name": "app", "image": "app:1"}])),
        ),
        ok(
            "ports merge by containerPort",
            D,
            containers(
                json!([{"name": "app", "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}]}]),
            ),
            containers(
                json!([{"name": "app", "ports": [{"containerPort": 443, "name": "https"}]}]),
            ),
            containers(
                json!([{"name": "app", "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443, "name": "https"}]}]),
            ),
        ),
        ok(
            "volumeMounts merge by mountPath",
            D,
            containers(
                json!([{"name": "app", "volumeMounts": [{"mountPath": "/data", "name": "data"}]}]),
            ),
            containers(
                json!([{"name": "app", "volumeMounts": [{"mountPath": "/data", "readOnly": true}, {"mountPath": "/tmp", "name": "tmp"}]}]),
            ),
            containers(
                json!([{"name": "app", "volumeMounts": [{"mountPath": "/data", "name": "data", "readOnly": true}, {"mountPath": "/tmp", "name": "tmp"}]}]),
            ),
        ),
        ok(
            "imagePullSecrets merge by name",
            D,
            pod_field("imagePullSecrets", json!([{"name": "a"}])),
            pod_field("imagePullSecrets", json!([{"name": "a"}, {"name": "b"}])),
            pod_field("imagePullSecrets", json!([{"name": "a"}, {"name": "b"}])),
        ),
        ok(
            "volumes merge by name",
            D,
            pod_field("volumes", json!([{"name": "a", "emptyDir": {}}])),
            pod_field("volumes", json!([{"name": "b", "emptyDir": {}}])),
            pod_field(
                "volumes",
                json!([{"name": "b", "emptyDir": {}}, {"name": "a", "emptyDir": {}}]),
            ),
        ),
        ok(
            "env merges inside the matching container only",
            D,
            containers(
                json!([{"name": "a", "env": [{"name": "X", "value": "1"}]}, {"name": "b", "env": [{"name": "X", "value": "1"}]}]),
            ),
            containers(json!([{"name": "b", "env": [{"name": "X", "value": "2"}]}])),
            containers(
                json!([{"name": "a", "env": [{"name": "X", "value": "1"}]}, {"name": "b", "env": [{"name": "X", "value": "2"}]}]),
            ),
        ),
        ok(
            "an empty patch list leaves a merged list alone",
            D,
            containers(json!([{"name": "app"}])),
            containers(json!([])),
            containers(json!([{"name": "app"}])),
        ),
        ok(
            "$patch delete removes every item with the key and ignores missing ones",
            M,
            json!({"mergingList": [{"name": "a"}, {"name": "b", "value": "1"}, {"name": "a", "value": "dup"}]}),
            json!({"mergingList": [{"name": "a", "$patch": "delete"}, {"name": "zz", "$patch": "delete"}]}),
            json!({"mergingList": [{"name": "b", "value": "1"}]}),
        ),
        ok(
            "$patch replace inside a list replaces the list with the other items",
            M,
            json!({"mergingList": [{"name": "a", "value": "1"}, {"name": "b"}]}),
            json!({"mergingList": [{"name": "c", "value": "3"}, {"$patch": "replace"}]}),
            json!({"mergingList": [{"name": "c", "value": "3"}]}),
        ),
        ok(
            "a lone $patch replace item empties the list",
            M,
            json!({"mergingList": [{"name": "a"}, {"name": "b"}]}),
            json!({"mergingList": [{"$patch": "replace"}]}),
            json!({"mergingList": []}),
        ),
        ok(
            "a merged list the original lacks is taken without directive items",
            M,
            json!({"name": "hi"}),
            json!({"mergingList": [{"name": "hello"}, {"name": "doesntexist", "$patch": "delete"}]}),
            json!({"name": "hi", "mergingList": [{"name": "hello"}]}),
        ),
        ok(
            "directives inside a new list item are applied to nothing",
            D,
            containers(json!([{"name": "app"}])),
            containers(
                json!([{"name": "new", "$setElementOrder/env": [{"name": "A"}], "env": [{"name": "A"}, {"name": "B", "$patch": "delete"}],
                "ports": [{"$patch": "replace"}, {"containerPort": 80}]}]),
            ),
            containers(
                json!([{"name": "new", "env": [{"name": "A"}], "ports": [{"containerPort": 80}]}, {"name": "app"}]),
            ),
        ),
        ok(
            "directives inside a replaced list are dropped",
            D,
            pod_field("tolerations", json!([{"key": "a"}])),
            pod_field(
                "tolerations",
                json!([{"key": "b"}, {"key": "a", "$patch": "delete"}]),
            ),
            pod_field("tolerations", json!([{"key": "b"}])),
        ),
        ok(
            "nested merge lists three levels deep",
            M,
            json!({"mergingList": [{"name": "a", "mergingList": [{"name": "x", "value": "1"}, {"name": "y"}]}]}),
            json!({"mergingList": [{"name": "a", "mergingList": [{"name": "x", "value": "2"}, {"name": "y", "$patch": "delete"}]}]}),
            json!({"mergingList": [{"name": "a", "mergingList": [{"name": "x", "value": "2"}]}]}),
        ),
        ok(
            "non-merging lists nested in merged items are replaced",
            M,
            json!({"mergingList": [{"name": "a", "nonMergingList": [{"name": "x"}, {"name": "y"}]}]}),
            json!({"mergingList": [{"name": "a", "nonMergingList": [{"name": "z"}]}]}),
            json!({"mergingList": [{"name": "a", "nonMergingList": [{"name": "z"}]}]}),
        ),
    ]
}

fn ordering() -> Vec<Case> {
    let names = |list: &[&str]| Value::Array(list.iter().map(|n| json!({"name": n})).collect());
    vec![
        ok(
            "new patch items go before server-only items",
            M,
            json!({"mergingList": names(&["a", "b"])}),
            json!({"mergingList": names(&["c"])}),
            json!({"mergingList": names(&["c", "a", "b"])}),
        ),
        ok(
            "patch items keep patch order, server-only items stay before later patch items",
            M,
            json!({"mergingList": names(&["a", "b", "c"])}),
            json!({"mergingList": names(&["c", "b"])}),
            json!({"mergingList": names(&["a", "c", "b"])}),
        ),
        ok(
            "$setElementOrder beats patch and live order",
            M,
            json!({"mergingList": names(&["1", "3", "4", "2"])}),
            json!({"$setElementOrder/mergingList": names(&["4", "2", "3", "1"])}),
            json!({"mergingList": names(&["4", "2", "3", "1"])}),
        ),
        ok(
            "server-only items stay where the live list had them",
            M,
            json!({"mergingList": names(&["1", "2", "9", "3", "4"])}),
            json!({"$setElementOrder/mergingList": names(&["2", "1", "4", "3"])}),
            json!({"mergingList": names(&["2", "1", "9", "4", "3"])}),
        ),
        ok(
            "trailing server-only items stay last",
            M,
            json!({"mergingList": names(&["1", "3", "4", "2", "9"])}),
            json!({"$setElementOrder/mergingList": names(&["4", "2", "3", "1"])}),
            json!({"mergingList": names(&["4", "2", "3", "1", "9"])}),
        ),
        ok(
            "$setElementOrder with an added item and an unordered server-only item",
            M,
            json!({"name": "hi", "mergingList": names(&["hello2"])}),
            json!({"$setElementOrder/mergingList": names(&["hello", "doesntexist"]), "mergingList": names(&["hello"])}),
            json!({"name": "hi", "mergingList": names(&["hello", "hello2"])}),
        ),
        ok(
            "$setElementOrder for a list neither side has is dropped",
            M,
            json!({"name": "a"}),
            json!({"$setElementOrder/mergingList": names(&["x"])}),
            json!({"name": "a"}),
        ),
        ok(
            "$setElementOrder on a primitive list orders it",
            M,
            json!({"mergingIntList": [1, 2, 3]}),
            json!({"$setElementOrder/mergingIntList": [3, 2, 1]}),
            json!({"mergingIntList": [3, 2, 1]}),
        ),
        // kube interleaves by live position: 9 sat before 3 in the live list, and 3 is ordered first.
        ok(
            "a server-only primitive before the first ordered value stays first",
            M,
            json!({"mergingIntList": [1, 2, 9, 3]}),
            json!({"$setElementOrder/mergingIntList": [3, 2, 1]}),
            json!({"mergingIntList": [9, 3, 2, 1]}),
        ),
    ]
}

fn retain_keys() -> Vec<Case> {
    vec![
        ok(
            "$retainKeys clears unlisted fields",
            M,
            json!({"name": "a", "value": "1", "other": "x"}),
            json!({"$retainKeys": ["name", "value"], "value": "2"}),
            json!({"name": "a", "value": "2"}),
        ),
        ok(
            "$retainKeys allows null for unlisted fields",
            M,
            json!({"name": "a", "other": "x"}),
            json!({"$retainKeys": ["name"], "other": null}),
            json!({"name": "a"}),
        ),
        ok(
            "$retainKeys with an empty list clears everything",
            M,
            json!({"name": "a", "other": "x"}),
            json!({"$retainKeys": []}),
            json!({}),
        ),
        err(
            "$retainKeys must list every field the patch sets",
            M,
            json!({"name": "a"}),
            json!({"$retainKeys": ["name"], "value": "2"}),
            "InvalidDirective",
        ),
        err(
            "$retainKeys must be a list",
            M,
            json!({"name": "a"}),
            json!({"$retainKeys": "name"}),
            "InvalidDirective",
        ),
        err(
            "$retainKeys must list strings",
            M,
            json!({"name": "a"}),
            json!({"$retainKeys": [1]}),
            "InvalidDirective",
        ),
    ]
}

fn primitive_lists() -> Vec<Case> {
    vec![
        ok(
            "primitive merge lists become a union",
            D,
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["b", "c"]}}),
            json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
        ),
        ok(
            "a new finalizer goes before existing ones",
            D,
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"finalizers": ["z"]}}),
            json!({"metadata": {"finalizers": ["z", "a"]}}),
        ),
        ok(
            "primitive merge lists drop duplicates",
            M,
            json!({"mergingIntList": [1, 2, 2]}),
            json!({"mergingIntList": [2, 3, 3]}),
            json!({"mergingIntList": [1, 2, 3]}),
        ),
        ok(
            "$deleteFromPrimitiveList removes values",
            D,
            json!({"metadata": {"finalizers": ["a", "b", "c", "b"]}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zz"]}}),
            json!({"metadata": {"finalizers": ["a", "c"]}}),
        ),
        ok(
            "$deleteFromPrimitiveList works on lists without a merge strategy",
            M,
            json!({"nonMergingIntList": [1, 2, 3]}),
            json!({"$deleteFromPrimitiveList/nonMergingIntList": [2]}),
            json!({"nonMergingIntList": [1, 3]}),
        ),
        ok(
            "$deleteFromPrimitiveList on an absent list adds nothing",
            M,
            json!({"name": "a"}),
            json!({"$deleteFromPrimitiveList/mergingIntList": [3]}),
            json!({"name": "a"}),
        ),
        ok(
            "$deleteFromPrimitiveList runs after the list merge",
            M,
            json!({"mergingIntList": [1]}),
            json!({"mergingIntList": [2], "$deleteFromPrimitiveList/mergingIntList": [2]}),
            json!({"mergingIntList": [1]}),
        ),
        ok(
            "non-merging primitive lists are replaced",
            M,
            json!({"nonMergingIntList": [1, 2]}),
            json!({"nonMergingIntList": [3]}),
            json!({"nonMergingIntList": [3]}),
        ),
    ]
}

fn errors() -> Vec<Case> {
    vec![
        err(
            "a non-object patch is rejected",
            M,
            json!({}),
            json!([{"op": "add"}]),
            "PatchNotAnObject",
        ),
        err(
            "a non-object original is rejected",
            M,
            json!([1]),
            json!({}),
            "OriginalNotAnObject",
        ),
        err(
            "an unknown $patch value on a map is rejected",
            D,
            pod_field("nodeSelector", json!({})),
            pod_field("nodeSelector", json!({"$patch": "squash"})),
            "UnknownPatchDirective",
        ),
        err(
            "a non-string $patch value is rejected",
            M,
            json!({}),
            json!({"$patch": true}),
            "UnknownPatchDirective",
        ),
        err(
            "$patch merge inside a list is rejected",
            M,
            json!({"mergingList": [{"name": "a"}]}),
            json!({"mergingList": [{"$patch": "merge"}]}),
            "UnknownPatchDirective",
        ),
        err(
            "an unknown $patch value in a new value is rejected",
            M,
            json!({}),
            json!({"simpleMap": {"$patch": "squash"}}),
            "UnknownPatchDirective",
        ),
        err(
            "a merged list item without its merge key is rejected",
            D,
            containers(json!([{"name": "app"}])),
            containers(json!([{"image": "x"}])),
            "MissingMergeKey",
        ),
        err(
            "a delete directive without the merge key is rejected",
            D,
            containers(json!([{"name": "app"}])),
            containers(json!([{"$patch": "delete", "image": "x"}])),
            "MissingMergeKey",
        ),
        err(
            "a live item without the merge key cannot be merged",
            M,
            json!({"mergingList": [{"value": "1"}]}),
            json!({"mergingList": [{"name": "a"}]}),
            "MissingMergeKey",
        ),
        err(
            "a list of objects with merge strategy but no merge key is rejected",
            M,
            json!({"keylessMergingList": [{"name": "a"}]}),
            json!({"keylessMergingList": [{"name": "b"}]}),
            "NoMergeKeyInSchema",
        ),
        err(
            "a primitive in a list of objects is rejected",
            D,
            containers(json!([{"name": "app"}])),
            containers(json!(["app"])),
            "UnsupportedListElements",
        ),
        err(
            "lists of lists are rejected",
            M,
            json!({"mergingIntList": [1]}),
            json!({"mergingIntList": [[2]]}),
            "UnsupportedListElements",
        ),
        err(
            "mixed primitive types are rejected",
            M,
            json!({"mergingIntList": [1]}),
            json!({"mergingIntList": ["2"]}),
            "UnsupportedListElements",
        ),
        err(
            "$setElementOrder must be a list",
            M,
            json!({"mergingList": []}),
            json!({"$setElementOrder/mergingList": {"name": "a"}}),
            "InvalidDirective",
        ),
        err(
            "$setElementOrder must name the patch's items in order",
            M,
            json!({"mergingList": [{"name": "a"}, {"name": "b"}]}),
            json!({"$setElementOrder/mergingList": [{"name": "a"}, {"name": "b"}], "mergingList": [{"name": "b"}, {"name": "a"}]}),
            "InvalidDirective",
        ),
        err(
            "$setElementOrder must include every patch item",
            M,
            json!({"mergingList": [{"name": "a"}]}),
            json!({"$setElementOrder/mergingList": [{"name": "a"}], "mergingList": [{"name": "c"}]}),
            "InvalidDirective",
        ),
        err(
            "$setElementOrder items need the merge key",
            M,
            json!({"mergingList": [{"name": "a"}]}),
            json!({"$setElementOrder/mergingList": [{"value": "a"}]}),
            "MissingMergeKey",
        ),
        err(
            "a directive key without /field is rejected",
            M,
            json!({"mergingIntList": [1]}),
            json!({"$setElementOrder": [1]}),
            "InvalidDirective",
        ),
        err(
            "a misspelt list directive prefix is rejected",
            M,
            json!({"mergingIntList": [1]}),
            json!({"$deleteFromPrimitiveListX/mergingIntList": [1]}),
            "InvalidDirective",
        ),
        err(
            "$deleteFromPrimitiveList must be a list",
            D,
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}),
            "InvalidDirective",
        ),
        err(
            "$deleteFromPrimitiveList may not list objects",
            D,
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [{"a": 1}]}}),
            "InvalidDirective",
        ),
        err(
            "a dangling $ref in the schema is a schema error",
            M,
            json!({"broken": {"a": 1}}),
            json!({"broken": {"b": 1}}),
            "Schema",
        ),
    ]
}
