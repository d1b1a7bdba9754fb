//! ValidatingAdmissionPolicies enforced per space, through kubectl 1.32 as a tenant admin uses them: Deny and Warn
//! bindings, messages and messageExpressions, a binding narrowed by a namespace selector, matchConditions,
//! variables, failurePolicy on an expression that fails at run time, CEL that does not compile refused at write,
//! and another tenant untouched.

use kspaces_tests::{server_with_tenants, Kubectl, Server};

const POLICY: &str = "\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: names}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}]
  matchConditions:
  - {name: not-skipped, expression: \"!has(object.metadata.labels) || !('skip' in object.metadata.labels)\"}
  variables:
  - {name: keys, expression: \"has(object.data) ? size(object.data) : 0\"}
  validations:
  - {expression: \"object.metadata.name != 'forbidden'\", message: the name forbidden is taken}
  - expression: \"variables.keys < 3\"
    messageExpression: \"'a configmap holds at most 2 keys, not ' + string(variables.keys)\"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: names-deny}
spec: {policyName: names, validationActions: [Deny]}
";

const WARN: &str = "\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: labelled}
spec:
  failurePolicy: Ignore
  matchConstraints:
    resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  validations:
  - {expression: \"has(object.metadata.labels) && 'team' in object.metadata.labels\", message: every configmap names its team}
  - {expression: \"object.data.missing == 'x'\"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: labelled-warn}
spec:
  policyName: labelled
  validationActions: [Warn]
  matchResources:
    namespaceSelector: {matchLabels: {env: prod}}
";

/// kubectl's answer to a create from stdin: whether it succeeded, and what it printed on both streams.
fn create(kubectl: &Kubectl, manifest: &str) -> (bool, String) {
    let output = kubectl.run_with_stdin(&["create", "-f", "-"], manifest);
    (output.status.success(), format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)))
}

fn configmap(name: &str, namespace: &str, labels: &str, keys: usize) -> String {
    let data: Vec<String> = (0..keys).map(|i| format!("k{i}: v")).collect();
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {namespace}, labels: {{{labels}}}}}\ndata: {{{}}}\n", data.join(", "))
}

#[test]
fn a_tenants_policies_deny_and_warn_its_own_writes_only() {
    let (_server, _root, a, b) = server_with_tenants(&[], ["pa", "pb"]);
    a.ok_with_stdin(&["create", "-f", "-"], POLICY);

    // Deny: a validation's message, and a messageExpression with its reason's code.
    let (ok, said) = create(&a, &configmap("forbidden", "default", "", 1));
    assert!(!ok, "{said}");
    assert!(said.contains("ValidatingAdmissionPolicy 'names' with binding 'names-deny' denied request: the name forbidden is taken"), "{said}");
    let (ok, said) = create(&a, &configmap("big", "default", "", 3));
    assert!(!ok && said.contains("denied request: a configmap holds at most 2 keys, not 3"), "{said}");
    assert!(said.contains("Forbidden") || said.contains("forbidden"), "a Forbidden reason is kube's 403: {said}");
    // What the policy allows, and what its matchCondition leaves out.
    assert!(create(&a, &configmap("fine", "default", "", 2)).0);
    assert!(create(&a, &configmap("forbidden", "default", "skip: \"yes\"", 1)).0, "a matchCondition that does not hold skips the policy");
    // Updates are judged too.
    let refused = a.fails(&["patch", "configmap", "fine", "--type", "merge", "-p", "{\"data\":{\"k2\":\"v\",\"k3\":\"v\"}}"]);
    assert!(refused.contains("at most 2 keys, not 4"), "{refused}");
    // Another tenant is untouched, and sees none of it.
    assert!(create(&b, &configmap("forbidden", "default", "", 5)).0, "another tenant's writes are not judged by pa's policy");
    assert_eq!(b.ok(&["get", "validatingadmissionpolicies", "-o", "name"]).trim(), "");

    // Warn, narrowed to namespaces labelled env=prod; an expression that fails at run time is ignored
    // (failurePolicy Ignore).
    a.ok(&["create", "namespace", "prod"]);
    a.ok(&["label", "namespace", "prod", "env=prod"]);
    a.ok_with_stdin(&["create", "-f", "-"], WARN);
    let (ok, said) = create(&a, &configmap("unlabelled", "prod", "", 1));
    assert!(ok, "{said}");
    assert!(said.contains("Warning: Validation failed for ValidatingAdmissionPolicy 'labelled' with binding 'labelled-warn': every configmap names its team"), "{said}");
    let (ok, said) = create(&a, &configmap("unlabelled", "default", "", 1));
    assert!(ok && !said.contains("Warning"), "outside the binding's namespaces: {said}");

    // CEL that does not compile is refused when the policy is written, with the field named.
    let broken = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: broken}\nspec:\n  \
        matchConstraints: {resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]}\n  \
        validations: [{expression: \"object.metadata.name ==\"}]\n";
    let (ok, said) = create(&a, broken);
    assert!(!ok && said.contains("spec.validations[0].expression") && said.contains("compilation failed"), "{said}");
}

/// failurePolicy Fail: a validation that fails at run time refuses the write, with the expression named.
#[test]
fn an_expression_that_fails_refuses_the_write_under_failure_policy_fail() {
    let server = Server::start();
    let root = server.kubectl();
    let policy = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: strict}\nspec:\n  \
        matchConstraints: {resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]}\n  \
        validations: [{expression: \"object.data.mode == 'on'\"}]\n---\napiVersion: admissionregistration.k8s.io/v1\n\
        kind: ValidatingAdmissionPolicyBinding\nmetadata: {name: strict}\nspec: {policyName: strict, validationActions: [Deny]}\n";
    root.ok_with_stdin(&["create", "-f", "-"], policy);
    let (ok, said) = create(&root, &configmap("no-mode", "default", "", 1));
    assert!(!ok && said.contains("ValidatingAdmissionPolicy 'strict' with binding 'strict' denied request: expression 'object.data.mode == 'on'' resulted in error"), "{said}");
    assert!(create(&root, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mode-on, namespace: default}\ndata: {mode: \"on\"}\n").0);
}

/// A policy on DELETE judges the object being deleted (`oldObject`; `object` is null).
#[test]
fn a_policy_judges_deletes_by_the_old_object() {
    let server = Server::start();
    let root = server.kubectl();
    let policy = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: keep}\nspec:\n  \
        matchConstraints: {resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], operations: [DELETE], resources: [configmaps]}]}\n  \
        validations: [{expression: \"object == null && oldObject.metadata.name != 'keep'\", message: this one stays}]\n---\n\
        apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: keep}\n\
        spec: {policyName: keep, validationActions: [Deny]}\n";
    root.ok_with_stdin(&["create", "-f", "-"], policy);
    root.ok(&["create", "configmap", "keep"]);
    root.ok(&["create", "configmap", "drop"]);
    let refused = root.fails(&["delete", "configmap", "keep"]);
    assert!(refused.contains("ValidatingAdmissionPolicy 'keep' with binding 'keep' denied request: this one stays"), "{refused}");
    root.ok(&["delete", "configmap", "drop"]);
    root.ok(&["get", "configmap", "keep"]);
}

const PARAMS: &str = "\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-keys}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}]
  validations:
  - expression: \"!has(object.data) || size(object.data) <= int(params.data.max)\"
    messageExpression: \"'at most ' + params.data.max + ' keys (' + params.metadata.name + ')'\"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: max-keys-by-name}
spec:
  policyName: max-keys
  validationActions: [Deny]
  paramRef: {name: limits, namespace: policy, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector: {matchLabels: {checked: by-name}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: max-keys-by-label}
spec:
  policyName: max-keys
  validationActions: [Deny]
  paramRef: {namespace: policy, selector: {matchLabels: {role: limit}}, parameterNotFoundAction: Allow}
  matchResources:
    namespaceSelector: {matchLabels: {checked: by-label}}
";

/// `paramKind` and `paramRef`: the params are read (live) from the binding's own space, by name or by selector
/// (every param judged), and `parameterNotFoundAction` decides when there are none.
#[test]
fn policies_read_their_params_by_name_or_selector_in_their_own_space() {
    let (_server, _root, a, b) = server_with_tenants(&[], ["pa", "pb"]);
    for (namespace, label) in [("policy", ""), ("named", "by-name"), ("selected", "by-label")] {
        a.ok(&["create", "namespace", namespace]);
        if !label.is_empty() {
            a.ok(&["label", "namespace", namespace, &format!("checked={label}")]);
        }
    }
    a.ok(&["create", "configmap", "limits", "-n", "policy", "--from-literal", "max=2"]);
    a.ok_with_stdin(&["create", "-f", "-"], PARAMS);

    // By name: the params' value decides, and a change to them applies at once.
    let (ok, said) = create(&a, &configmap("three", "named", "", 3));
    assert!(!ok && said.contains("ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-by-name' denied request: at most 2 keys (limits)"), "{said}");
    assert!(create(&a, &configmap("two", "named", "", 2)).0);
    a.ok(&["patch", "configmap", "limits", "-n", "policy", "--type", "merge", "-p", "{\"data\":{\"max\":\"5\"}}"]);
    assert!(create(&a, &configmap("three", "named", "", 3)).0, "the new params apply");
    // No params, parameterNotFoundAction Deny: refused, saying why.
    a.ok(&["delete", "configmap", "limits", "-n", "policy"]);
    let (ok, said) = create(&a, &configmap("after", "named", "", 1));
    assert!(!ok && said.contains("no params found for policy binding with `Deny` parameterNotFoundAction"), "{said}");

    // By selector: none yet and Allow; then every matching param is judged, the strictest refuses.
    assert!(create(&a, &configmap("free", "selected", "", 4)).0, "no params, parameterNotFoundAction Allow");
    a.ok(&["create", "configmap", "loose", "-n", "policy", "--from-literal", "max=9"]);
    a.ok(&["create", "configmap", "strict", "-n", "policy", "--from-literal", "max=1"]);
    a.ok(&["label", "configmap", "loose", "strict", "-n", "policy", "role=limit"]);
    let (ok, said) = create(&a, &configmap("pair", "selected", "", 2));
    assert!(!ok && said.contains("at most 1 keys (strict)"), "{said}");
    assert!(create(&a, &configmap("single", "selected", "", 1)).0);

    // Another tenant's params of the same names are not pa's, and pa's policies never judge pb.
    b.ok(&["create", "namespace", "policy"]);
    b.ok(&["create", "configmap", "limits", "-n", "policy", "--from-literal", "max=100"]);
    let (ok, said) = create(&a, &configmap("after", "named", "", 1));
    assert!(!ok && said.contains("no params found"), "pb's ConfigMap is not pa's param: {said}");
    b.ok(&["create", "namespace", "named"]);
    b.ok(&["label", "namespace", "named", "checked=by-name"]);
    assert!(create(&b, &configmap("many", "named", "", 7)).0);

    // A paramKind no space serves fails under the policy's failurePolicy (Fail by default).
    let unknown = PARAMS.replace("{apiVersion: v1, kind: ConfigMap}", "{apiVersion: example.com/v1, kind: Limit}")
        .replace("name: max-keys", "name: max-unknown").replace("policyName: max-keys", "policyName: max-unknown")
        .replace("name: max-keys-by-name", "name: unknown-by-name").replace("name: max-keys-by-label", "name: unknown-by-label");
    a.ok_with_stdin(&["create", "-f", "-"], &unknown);
    let (ok, said) = create(&a, &configmap("unknown", "selected", "", 0));
    assert!(!ok && said.contains("failed to find resource referenced by paramKind"), "{said}");
}

/// What kube requires of a policy and a binding is 422 with the fields named.
#[test]
fn policies_and_bindings_missing_what_kube_requires_are_422_with_causes() {
    let server = Server::start();
    let root = server.kubectl();
    let head = "apiVersion: admissionregistration.k8s.io/v1\nkind: ";
    let cases = [
        ("ValidatingAdmissionPolicy\nmetadata: {name: bare}\nspec: {}\n",
            vec!["spec.matchConstraints: Required value", "spec.validations: Required value: validations or auditAnnotations must contain at least one item"]),
        ("ValidatingAdmissionPolicy\nmetadata: {name: no-rules}\nspec: {matchConstraints: {}, validations: [{expression: 'true'}], paramKind: {kind: ConfigMap}}\n",
            vec!["spec.matchConstraints.resourceRules: Required value", "spec.paramKind.apiVersion: Required value"]),
        ("ValidatingAdmissionPolicyBinding\nmetadata: {name: loud}\nspec: {policyName: p, validationActions: [Deny, Warn, Deny, Shout]}\n",
            vec!["spec.validationActions[2]: Duplicate value: \"Deny\"", "spec.validationActions[3]: Unsupported value: \"Shout\"",
                "must not contain both Deny and Warn"]),
        ("ValidatingAdmissionPolicyBinding\nmetadata: {name: both}\nspec: {policyName: p, validationActions: [Deny], paramRef: {name: a, selector: {}}}\n",
            vec!["spec.paramRef: Required value: one of name or selector must be set", "spec.paramRef.parameterNotFoundAction: Required value"]),
        ("ValidatingAdmissionPolicyBinding\nmetadata: {name: empty}\nspec: {}\n",
            vec!["spec.policyName: Required value", "spec.validationActions: Required value"]),
    ];
    for (manifest, expected) in cases {
        let (ok, said) = create(&root, &format!("{head}{manifest}"));
        assert!(!ok && said.contains("is invalid"), "{manifest}: {said}");
        for needle in expected {
            assert!(said.contains(needle), "{needle:?} missing for {manifest}: {said}");
        }
    }
}

/// `auditAnnotations` and the `Audit` action: the policy's annotations and the binding's violations are in the
/// request's audit event (kube's keys), and an Audit-only binding refuses nothing.
#[test]
fn audit_annotations_and_the_audit_action_are_in_the_audit_event() {
    let logs = tempfile::tempdir().expect("temp dir");
    let log = logs.path().join("audit.log");
    let (_server, _root, a, _b) = server_with_tenants(&["--audit-log-path", log.to_str().expect("utf-8")], ["pa", "pb"]);
    a.ok_with_stdin(&["create", "-f", "-"], "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: watched}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  validations: [{expression: \"!has(object.data) || size(object.data) < 2\", message: too many keys}]
  auditAnnotations: [{key: keys, valueExpression: \"string(has(object.data) ? size(object.data) : 0)\"}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: watched-audit}
spec: {policyName: watched, validationActions: [Audit]}
");
    let (ok, said) = create(&a, &configmap("watched", "default", "", 3));
    assert!(ok, "Audit alone refuses nothing: {said}");
    let mut event = serde_json::Value::Null;
    let found = kspaces_tests::eventually(std::time::Duration::from_secs(10), || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        event = text.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|e| e["verb"] == "create" && e["objectRef"]["resource"] == "configmaps" && e["responseStatus"]["code"] == 201).unwrap_or(serde_json::Value::Null);
        !event.is_null()
    });
    assert!(found, "no audit event for the create");
    assert_eq!(event["annotations"]["watched/keys"], "3", "{event}");
    let failures: serde_json::Value = serde_json::from_str(event["annotations"]["validation.policy.admission.k8s.io/validation_failure"]
        .as_str().unwrap_or_else(|| panic!("no validation_failure: {event}"))).expect("JSON");
    assert_eq!(failures, serde_json::json!([{"message": "too many keys", "policy": "watched", "binding": "watched-audit",
        "expressionIndex": 0, "validationActions": ["Audit"]}]));
}

/// CEL message construction (`Object{...}`) in a validation is evaluated as a map of its fields (the `cel` crate
/// alone panics on it, which failed every matching write with a 500).
#[test]
fn a_validation_constructing_a_message_is_evaluated_not_a_500() {
    let server = Server::start();
    let root = server.kubectl();
    root.ok_with_stdin(&["create", "-f", "-"], "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n\
        metadata: {name: built}\nspec:\n  matchConstraints: {resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], \
        resources: [configmaps]}]}\n  validations: [{expression: \"Object{name: object.metadata.name}.name != 'built'\", message: no built}]\n\
        ---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: built}\n\
        spec: {policyName: built, validationActions: [Deny]}\n");
    root.ok(&["create", "configmap", "fine"]);
    let refused = root.fails(&["create", "configmap", "built"]);
    assert!(refused.contains("denied request: no built") && !refused.contains("nternal"), "{refused}");
}

#[test]
fn kubes_cel_libraries_are_there_for_policies() {
    let server = Server::start();
    let root = server.kubectl();
    root.ok_with_stdin(&["create", "-f", "-"], "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n\
        metadata: {name: sized}\nspec:\n  matchConstraints: {resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], \
        resources: [configmaps]}]}\n  validations:\n  - {expression: \"!has(object.data) || !('size' in object.data) || \
        quantity(object.data.size).isLessThan(quantity('1Gi'))\", message: at most 1Gi}\n  - {expression: \
        \"object.metadata.name.lowerAscii() == object.metadata.name && object.metadata.name.split('-').size() <= 2\", message: bad name}\n\
        ---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: sized}\n\
        spec: {policyName: sized, validationActions: [Deny]}\n");
    root.ok(&["create", "configmap", "small-one", "--from-literal", "size=512Mi"]);
    let refused = root.fails(&["create", "configmap", "big", "--from-literal", "size=2Gi"]);
    assert!(refused.contains("denied request: at most 1Gi"), "{refused}");
    let refused = root.fails(&["create", "configmap", "one-two-three"]);
    assert!(refused.contains("denied request: bad name"), "{refused}");
}

/// The policy `name`'s status once the server has written it for `generation`.
fn checked_status(kubectl: &Kubectl, name: &str, generation: u64) -> serde_json::Value {
    let mut status = serde_json::Value::Null;
    let written = kspaces_tests::eventually(std::time::Duration::from_secs(10), || {
        let policy: serde_json::Value = serde_json::from_str(&kubectl.ok(&["get", "validatingadmissionpolicy", name, "-o", "json"])).expect("JSON");
        status = policy["status"].clone();
        status["observedGeneration"] == generation
    });
    assert!(written, "no status for generation {generation} of {name}: {status}");
    status
}

/// kube's `status.typeChecking`: a validation selecting a field the matched kind's schema does not have (a built-in
/// kind's OpenAPI definition, a CRD's schema in the policy's space) gets kube's warning, with the expression's line
/// and a caret; a policy whose fields exist, or whose rules have wildcards, gets `typeChecking: {}`; a new
/// generation is checked again.
#[test]
fn type_checking_warns_of_fields_the_matched_kinds_do_not_have() {
    let (_server, _root, a, _b) = server_with_tenants(&[], ["ta", "tb"]);
    let policy = |name: &str, rules: &str, expression: &str| format!("apiVersion: admissionregistration.k8s.io/v1\n\
        kind: ValidatingAdmissionPolicy\nmetadata: {{name: {name}}}\nspec:\n  matchConstraints:\n    resourceRules: [{rules}]\n  \
        validations:\n  - expression: {expression:?}\n    messageExpression: \"'replicas: ' + string(object.spec.replicas)\"\n");
    let deployments = "{apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments, deployments/scale]}";
    a.ok_with_stdin(&["create", "-f", "-"], &policy("typo", deployments, "object.spec.replicsa > 1"));
    let status = checked_status(&a, "typo", 1);
    assert_eq!(status["typeChecking"], serde_json::json!({"expressionWarnings": [{"fieldRef": "spec.validations[0].expression",
        "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicsa'\n | object.spec.replicsa > 1\n | ...........^\n"}]}), "{status}");

    a.ok_with_stdin(&["create", "-f", "-"], &policy("fine", deployments, "has(object.metadata.labels) && object.spec.template.spec.containers.size() > 0"));
    assert_eq!(checked_status(&a, "fine", 1)["typeChecking"], serde_json::json!({}));
    a.ok_with_stdin(&["create", "-f", "-"], &policy("wild", "{apiGroups: ['*'], apiVersions: [v1], operations: [CREATE], resources: [deployments]}",
        "object.spec.replicsa > 1"));
    assert_eq!(checked_status(&a, "wild", 1)["typeChecking"], serde_json::json!({}), "rules with wildcards are not checked");

    // A CRD of the tenant's space: its schema.
    a.ok_with_stdin(&["create", "-f", "-"], "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
        metadata: {name: paints.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  \
        names: {plural: paints, singular: paint, kind: Paint}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    \
        schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            \
        properties: {color: {type: string}, replicas: {type: integer}}\n");
    a.ok(&["wait", "--for=condition=Established", "crd/paints.example.com", "--timeout=20s"]);
    a.ok_with_stdin(&["create", "-f", "-"], &policy("paint", "{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [paints]}",
        "object.spec.color == 'red' || object.spec.colour == 'red'"));
    let status = checked_status(&a, "paint", 1);
    assert_eq!(status["typeChecking"]["expressionWarnings"][0]["warning"],
        "example.com/v1, Kind=Paint: ERROR: <input>:1:42: undefined field 'colour'\n | object.spec.color == 'red' || object.spec.colour == 'red'\n \
        | .........................................^\n", "{status}");

    // A new generation is checked again.
    a.ok(&["patch", "validatingadmissionpolicy", "typo", "--type", "json", "-p",
        "[{\"op\": \"replace\", \"path\": \"/spec/validations/0/expression\", \"value\": \"object.spec.replicas > 1\"}]"]);
    assert_eq!(checked_status(&a, "typo", 2)["typeChecking"], serde_json::json!({}));
}
