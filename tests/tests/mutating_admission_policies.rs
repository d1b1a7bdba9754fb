//! MutatingAdmissionPolicies (`admissionregistration.k8s.io/v1beta1`) per space, through kubectl 1.32:
//! ApplyConfiguration and JSONPatch mutations on creates and updates, params and matchConditions, failurePolicy
//! Fail and Ignore, a tenant's policies isolated from another's, the system space's policies everywhere or where
//! their applicable-tenants annotation selects, dry run, validating policies judging the mutated object, and
//! invalid policies or mutations refused with 422, mutating webhooks called after the policies.

#[path = "admission_webhooks/webhook.rs"]
#[allow(dead_code)]
mod webhook;

use kspaces_tests::{server_with_tenants, Kubectl, Server};
use webhook::{Certificate, Reply, Webhook};

const API: &str = "admissionregistration.k8s.io/v1beta1";

/// A policy `name` on ConfigMaps (or `resource`) with `spec` (YAML flow lines, indented two spaces) and its binding
/// `name` (with `binding` lines in its spec).
fn policy(name: &str, resource: &str, spec: &str, binding: &str) -> String {
    format!("apiVersion: {API}\nkind: MutatingAdmissionPolicy\nmetadata: {{name: {name}}}\nspec:\n  matchConstraints:\n    \
        resourceRules: [{{apiGroups: [\"\", apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [{resource}]}}]\n{spec}\
        ---\napiVersion: {API}\nkind: MutatingAdmissionPolicyBinding\nmetadata: {{name: {name}}}\nspec:\n  policyName: {name}\n{binding}")
}

/// kubectl's answer to a create from stdin: whether it succeeded, and what it printed on both streams.
fn create(kubectl: &Kubectl, manifest: &str) -> (bool, String) {
    let output = kubectl.run_with_stdin(&["create", "-f", "-"], manifest);
    (output.status.success(), format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)))
}

fn json(kubectl: &Kubectl, args: &[&str]) -> serde_json::Value {
    let mut args = args.to_vec();
    args.extend(["-o", "json"]);
    serde_json::from_str(&kubectl.ok(&args)).expect("kubectl prints JSON")
}

const LABEL_APPLIED: &str = "  mutations:\n  - patchType: ApplyConfiguration\n    \
    applyConfiguration: {expression: \"Object{metadata: Object.metadata{labels: {'applied': 'yes'}}}\"}\n";

#[test]
fn apply_configurations_and_json_patches_mutate_creates_and_updates() {
    let (_server, _root, a, _b) = server_with_tenants(&[], ["pa", "pb"]);
    // ApplyConfiguration on Deployments: replicas set, and the `containers` list merged by name (the
    // container keeps its image), as server-side apply merges.
    a.ok_with_stdin(&["create", "-f", "-"], &policy("deployments", "deployments", "  mutations:\n  - patchType: ApplyConfiguration\n    \
        applyConfiguration:\n      expression: >-\n        Object{spec: Object.spec{replicas: 3, template: Object.spec.template{spec: \
        Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: 'nginx', imagePullPolicy: 'Never'}]}}}}\n", ""));
    a.ok(&["create", "deployment", "web", "--image=nginx:1.27"]);
    let deployment = json(&a, &["get", "deployment", "web"]);
    assert_eq!(deployment["spec"]["replicas"], 3, "{deployment}");
    let containers = &deployment["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers.as_array().map(Vec::len), Some(1), "{containers}");
    assert_eq!(containers[0]["image"], "nginx:1.27");
    assert_eq!(containers[0]["imagePullPolicy"], "Never");
    // An update is mutated too.
    a.ok(&["patch", "deployment", "web", "--type", "merge", "-p", "{\"spec\":{\"replicas\":1}}"]);
    assert_eq!(json(&a, &["get", "deployment", "web"])["spec"]["replicas"], 3);

    // JSONPatch on ConfigMaps: a list of JSONPatch built in CEL, from the object's own data.
    a.ok_with_stdin(&["create", "-f", "-"], &policy("patched", "configmaps", "  mutations:\n  - patchType: JSONPatch\n    \
        jsonPatch:\n      expression: >-\n        [JSONPatch{op: 'add', path: '/data/count', value: string(has(object.data) ? size(object.data) : 0)}]\n", ""));
    a.ok(&["create", "configmap", "counted", "--from-literal", "a=1", "--from-literal", "b=2"]);
    assert_eq!(json(&a, &["get", "configmap", "counted"])["data"]["count"], "2");
    a.ok(&["patch", "configmap", "counted", "--type", "merge", "-p", "{\"data\":{\"c\":\"3\",\"count\":\"x\"}}"]);
    assert_eq!(json(&a, &["get", "configmap", "counted"])["data"]["count"], "4", "the patch runs on the updated object (a, b, c, count)");
}

#[test]
fn params_and_match_conditions_decide_what_a_policy_writes() {
    let (_server, _root, a, _b) = server_with_tenants(&[], ["pa", "pb"]);
    a.ok(&["create", "namespace", "policy"]);
    a.ok(&["create", "configmap", "defaults", "-n", "policy", "--from-literal", "team=blue"]);
    let spec = "  paramKind: {apiVersion: v1, kind: ConfigMap}\n  \
        matchConditions: [{name: unowned, expression: \"!has(object.metadata.labels) || !('team' in object.metadata.labels)\"}]\n  \
        variables: [{name: team, expression: \"params.data.team\"}]\n  \
        mutations:\n  - patchType: ApplyConfiguration\n    \
        applyConfiguration: {expression: \"Object{metadata: Object.metadata{labels: {'team': variables.team}}}\"}\n";
    let binding = "  paramRef: {name: defaults, namespace: policy, parameterNotFoundAction: Deny}\n";
    a.ok_with_stdin(&["create", "-f", "-"], &policy("team", "configmaps", spec, binding));
    a.ok(&["create", "configmap", "plain"]);
    assert_eq!(json(&a, &["get", "configmap", "plain"])["metadata"]["labels"]["team"], "blue");
    // The condition: a ConfigMap that names its team keeps it.
    a.ok_with_stdin(&["create", "-f", "-"], "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: owned, labels: {team: red}}\n");
    assert_eq!(json(&a, &["get", "configmap", "owned"])["metadata"]["labels"]["team"], "red");
    // The params are read live; without them, parameterNotFoundAction Deny refuses.
    a.ok(&["patch", "configmap", "defaults", "-n", "policy", "--type", "merge", "-p", "{\"data\":{\"team\":\"green\"}}"]);
    a.ok(&["create", "configmap", "later"]);
    assert_eq!(json(&a, &["get", "configmap", "later"])["metadata"]["labels"]["team"], "green");
    a.ok(&["delete", "configmap", "defaults", "-n", "policy"]);
    let refused = a.fails(&["create", "configmap", "orphan"]);
    assert!(refused.contains("policy 'team' with binding 'team' denied request") && refused.contains("no params found"), "{refused}");
}

#[test]
fn a_mutation_that_fails_follows_the_failure_policy() {
    let server = Server::start();
    let root = server.kubectl();
    let failing = |name: &str, failure: &str| policy(name, "configmaps", &format!("  failurePolicy: {failure}\n  \
        matchConditions: [{{name: mine, expression: \"object.metadata.name.startsWith('{name}')\"}}]\n  \
        mutations:\n  - patchType: ApplyConfiguration\n    \
        applyConfiguration: {{expression: \"Object{{data: {{'copy': object.data.missing}}}}\"}}\n"), "");
    root.ok_with_stdin(&["create", "-f", "-"], &failing("strict", "Fail"));
    root.ok_with_stdin(&["create", "-f", "-"], &failing("lenient", "Ignore"));
    let refused = root.fails(&["create", "configmap", "strict-one", "--from-literal", "k=v"]);
    assert!(refused.contains("policy 'strict' with binding 'strict' denied request: expression") && refused.contains("resulted in error"), "{refused}");
    root.ok(&["create", "configmap", "lenient-one", "--from-literal", "k=v"]);
    let stored = json(&root, &["get", "configmap", "lenient-one"]);
    assert_eq!(stored["data"], serde_json::json!({"k": "v"}), "Ignore admits the object unchanged: {stored}");
}

#[test]
fn policies_apply_in_their_own_tenant_and_the_system_spaces_where_selected() {
    let (_server, system, a, b) = server_with_tenants(&[], ["pa", "pb"]);
    a.ok_with_stdin(&["create", "-f", "-"], &policy("mine", "configmaps", LABEL_APPLIED, ""));
    a.ok(&["create", "configmap", "in-a"]);
    b.ok(&["create", "configmap", "in-b"]);
    assert_eq!(json(&a, &["get", "configmap", "in-a"])["metadata"]["labels"]["applied"], "yes");
    assert!(json(&b, &["get", "configmap", "in-b"])["metadata"]["labels"].is_null(), "pa's policy never touches pb's objects");
    assert_eq!(b.ok(&["get", "mutatingadmissionpolicies", "-o", "name"]).trim(), "", "nor is it pb's to see");

    // The system space's: everywhere, or where its binding's applicable-tenants selector matches.
    system.ok(&["label", "tenant", "pa", "mutations=on"]);
    let everywhere = "  mutations:\n  - patchType: JSONPatch\n    \
        jsonPatch: {expression: \"[JSONPatch{op: 'add', path: '/data', value: {'root': 'everywhere'}}]\"}\n";
    system.ok_with_stdin(&["create", "-f", "-"], &policy("root-everywhere", "configmaps", everywhere, ""));
    let selected = policy("root-selected", "configmaps", "  mutations:\n  - patchType: ApplyConfiguration\n    \
        applyConfiguration: {expression: \"Object{metadata: Object.metadata{annotations: {'root': 'selected'}}}\"}\n", "")
        .replace("kind: MutatingAdmissionPolicyBinding\nmetadata: {name: root-selected}",
            "kind: MutatingAdmissionPolicyBinding\nmetadata:\n  name: root-selected\n  annotations: {admission.kspaces.io/applicable-tenants: mutations=on}");
    system.ok_with_stdin(&["create", "-f", "-"], &selected);
    a.ok(&["create", "configmap", "second-a"]);
    b.ok(&["create", "configmap", "second-b"]);
    let in_a = json(&a, &["get", "configmap", "second-a"]);
    let in_b = json(&b, &["get", "configmap", "second-b"]);
    assert_eq!(in_a["data"]["root"], "everywhere", "{in_a}");
    assert_eq!(in_b["data"]["root"], "everywhere", "{in_b}");
    assert_eq!(in_a["metadata"]["annotations"]["root"], "selected", "{in_a}");
    assert!(in_b["metadata"]["annotations"]["root"].is_null(), "pb is not selected: {in_b}");
    assert_eq!(in_a["metadata"]["labels"]["applied"], "yes", "pa's own policy runs as well");
}

#[test]
fn a_dry_run_is_mutated_and_stores_nothing() {
    let server = Server::start();
    let root = server.kubectl();
    root.ok_with_stdin(&["create", "-f", "-"], &policy("labels", "configmaps", LABEL_APPLIED, ""));
    let answered: serde_json::Value = serde_json::from_str(&root.ok(&["create", "configmap", "dry", "--dry-run=server", "-o", "json"])).expect("JSON");
    assert_eq!(answered["metadata"]["labels"]["applied"], "yes", "{answered}");
    let missing = root.fails(&["get", "configmap", "dry"]);
    assert!(missing.contains("NotFound") || missing.contains("not found"), "{missing}");
}

#[test]
fn validating_policies_judge_the_mutated_object() {
    let server = Server::start();
    let root = server.kubectl();
    root.ok_with_stdin(&["create", "-f", "-"], "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: labelled}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  validations: [{expression: \"has(object.metadata.labels) && 'applied' in object.metadata.labels\", message: every configmap is labelled}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: labelled}
spec: {policyName: labelled, validationActions: [Deny]}
");
    let refused = root.fails(&["create", "configmap", "before"]);
    assert!(refused.contains("every configmap is labelled"), "{refused}");
    root.ok_with_stdin(&["create", "-f", "-"], &policy("labels", "configmaps", LABEL_APPLIED, ""));
    root.ok(&["create", "configmap", "after"]);
    assert_eq!(json(&root, &["get", "configmap", "after"])["metadata"]["labels"]["applied"], "yes");
}

#[test]
fn invalid_policies_and_mutations_are_422_with_causes() {
    let server = Server::start();
    let root = server.kubectl();
    assert!(root.ok(&["api-resources", "--api-group", "admissionregistration.k8s.io"]).contains("mutatingadmissionpolicies"));
    let head = format!("apiVersion: {API}\nkind: ");
    let rules = "matchConstraints: {resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]}";
    let cases = [
        ("MutatingAdmissionPolicy\nmetadata: {name: bare}\nspec: {}\n".to_owned(),
            vec!["spec.matchConstraints: Required value", "spec.mutations: Required value"]),
        (format!("MutatingAdmissionPolicy\nmetadata: {{name: kinds}}\nspec:\n  {rules}\n  reinvocationPolicy: Sometimes\n  mutations:\n  \
            - {{patchType: Merge}}\n  - {{patchType: JSONPatch, jsonPatch: {{expression: \"[JSONPatch{{op: \"}}}}\n  \
            - {{patchType: ApplyConfiguration, applyConfiguration: {{expression: \"{{'data': {{}}}}\"}}}}\n  - {{}}\n"),
            vec!["spec.mutations[0].patchType: Unsupported value: \"Merge\"", "spec.mutations[1].jsonPatch.expression: Invalid value",
                "compilation failed", "spec.mutations[2].applyConfiguration.expression: Invalid value", "must be an Object construction",
                "spec.mutations[3].patchType: Required value", "spec.reinvocationPolicy: Unsupported value: \"Sometimes\""]),
        ("MutatingAdmissionPolicyBinding\nmetadata: {name: empty}\nspec: {paramRef: {name: a}}\n".to_owned(),
            vec!["spec.policyName: Required value", "spec.paramRef.parameterNotFoundAction: Required value"]),
    ];
    for (manifest, expected) in cases {
        let (ok, said) = create(&root, &format!("{head}{manifest}"));
        assert!(!ok && said.contains("is invalid"), "{manifest}: {said}");
        for needle in expected {
            assert!(said.contains(needle), "{needle:?} missing for {manifest}: {said}");
        }
    }
    // A mutation that makes the object invalid: the kind's own validation refuses it (422), never a 500.
    root.ok_with_stdin(&["create", "-f", "-"], &policy("bad-labels", "configmaps", "  mutations:\n  - patchType: ApplyConfiguration\n    \
        applyConfiguration: {expression: \"Object{metadata: Object.metadata{labels: {'not a key!': 'x'}}}\"}\n", ""));
    let refused = root.fails(&["create", "configmap", "victim"]);
    assert!(refused.contains("is invalid") && refused.contains("metadata.labels"), "{refused}");
    root.ok(&["delete", "mutatingadmissionpolicybinding", "bad-labels"]);
    root.ok_with_stdin(&["create", "-f", "-"], &policy("bad-data", "configmaps", "  mutations:\n  - patchType: JSONPatch\n    \
        jsonPatch: {expression: \"[JSONPatch{op: 'add', path: '/data', value: {'n': 1}}]\"}\n", ""));
    let refused = root.fails(&["create", "configmap", "victim"]);
    assert!(refused.contains("cannot be handled as a ConfigMap") && refused.contains("data.n"), "{refused}");
    assert!(!refused.contains("Internal"), "{refused}");
    root.fails(&["get", "configmap", "victim"]);
}

/// `reinvocationPolicy: IfNeeded`: a policy that ran before a later one changed the object runs again (bindings
/// run by name); with `Never` it does not.
#[test]
fn a_policy_asking_to_be_reinvoked_runs_again_after_a_later_change() {
    let server = Server::start();
    let root = server.kubectl();
    let observer = |name: &str, reinvocation: &str| policy(name, "configmaps", &format!("  reinvocationPolicy: {reinvocation}\n  \
        mutations:\n  - patchType: ApplyConfiguration\n    applyConfiguration:\n      expression: >-\n        \
        Object{{metadata: Object.metadata{{labels: {{'{name}': has(object.metadata.labels) && 'late' in object.metadata.labels ? 'late' : 'early'}}}}}}\n"), "");
    root.ok_with_stdin(&["create", "-f", "-"], &observer("a-asks", "IfNeeded"));
    root.ok_with_stdin(&["create", "-f", "-"], &observer("b-never", "Never"));
    root.ok_with_stdin(&["create", "-f", "-"], &policy("c-late", "configmaps", "  mutations:\n  - patchType: JSONPatch\n    \
        jsonPatch: {expression: \"[JSONPatch{op: 'add', path: '/metadata/labels/late', value: 'yes'}]\"}\n", ""));
    root.ok(&["create", "configmap", "observed"]);
    let labels = json(&root, &["get", "configmap", "observed"])["metadata"]["labels"].clone();
    assert_eq!(labels, serde_json::json!({"a-asks": "late", "b-never": "early", "late": "yes"}), "{labels}");
}

/// kube's reinvocation across plugins: a policy with `IfNeeded` runs again after a mutating webhook changed the
/// object, and a webhook with `IfNeeded` that ran after the first round's last change is called again when that
/// reinvoked policy changes the object; a webhook with `Never` is called once.
#[test]
fn policies_and_webhooks_asking_to_be_reinvoked_run_again_after_each_others_changes() {
    let server = Server::start();
    let root = server.kubectl();
    root.ok_with_stdin(&["create", "-f", "-"], &policy("observer", "configmaps", "  reinvocationPolicy: IfNeeded\n  \
        mutations:\n  - patchType: ApplyConfiguration\n    applyConfiguration:\n      expression: >-\n        \
        Object{metadata: Object.metadata{labels: {'policy': has(object.metadata.labels) && 'hooked' in object.metadata.labels ? 'late' : 'early'}}}\n", ""));
    let hooking = Webhook::start(Certificate::SignedByCa, |_| Reply::Patch(serde_json::json!([
        {"op": "add", "path": "/metadata/labels/hooked", "value": "yes"}])));
    let watching = Webhook::start(Certificate::SignedByCa, |_| Reply::Allow);
    let mutating = |name: &str, hook: &Webhook, reinvocation: &str| serde_json::json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration", "metadata": {"name": name}, "webhooks": [{"name": format!("{name}.example.com"),
            "clientConfig": {"url": hook.url("/m"), "caBundle": hook.ca_bundle()}, "reinvocationPolicy": reinvocation,
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}).to_string();
    root.ok_with_stdin(&["create", "-f", "-"], &mutating("a-hooking", &hooking, "Never"));
    root.ok_with_stdin(&["create", "-f", "-"], &mutating("b-watching", &watching, "IfNeeded"));
    root.ok(&["create", "configmap", "reinvoked"]);
    let labels = json(&root, &["get", "configmap", "reinvoked"])["metadata"]["labels"].clone();
    assert_eq!(labels, serde_json::json!({"policy": "late", "hooked": "yes"}), "the policy ran again after the webhook's change");
    assert_eq!(hooking.requests().len(), 1, "Never: called once");
    let watched = watching.requests();
    assert_eq!(watched.len(), 2, "called again after the reinvoked policy's change: {watched:?}");
    assert_eq!(watched[0]["object"]["metadata"]["labels"]["policy"], "early", "{watched:?}");
    assert_eq!(watched[1]["object"]["metadata"]["labels"]["policy"], "late", "{watched:?}");
}

/// kube's order: mutating policies, then mutating webhooks (which see the policies' changes and may change the
/// object again), then validation.
#[test]
fn mutating_webhooks_are_called_after_the_mutating_policies() {
    let server = Server::start();
    let root = server.kubectl();
    root.ok_with_stdin(&["create", "-f", "-"], &policy("labels", "configmaps", LABEL_APPLIED, ""));
    let hook = Webhook::start(Certificate::SignedByCa, |_| Reply::Patch(serde_json::json!([
        {"op": "add", "path": "/metadata/annotations", "value": {"webhook": "after"}}])));
    let configuration = serde_json::json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "after"}, "webhooks": [{"name": "after.example.com",
            "clientConfig": {"url": hook.url("/m"), "caBundle": hook.ca_bundle()},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"]}]});
    root.ok_with_stdin(&["create", "-f", "-"], &configuration.to_string());
    root.ok(&["create", "configmap", "ordered"]);
    let seen = hook.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["object"]["metadata"]["labels"]["applied"], "yes", "the webhook sees the policy's change: {}", seen[0]);
    let stored = json(&root, &["get", "configmap", "ordered"]);
    assert_eq!(stored["metadata"]["labels"]["applied"], "yes", "{stored}");
    assert_eq!(stored["metadata"]["annotations"]["webhook"], "after", "{stored}");
}
