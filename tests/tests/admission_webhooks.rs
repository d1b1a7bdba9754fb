//! Admission webhooks per space, through kubectl 1.32 and curl against real HTTPS webhooks (`webhook.rs`):
//! configurations served and validated in every space; validating and mutating webhooks called as kube calls
//! them (rules, selectors, JSONPatch answers, failure policies, timeouts, dry runs, answers that are not valid);
//! tenants isolated from each other's webhooks; the system space's webhooks narrowed by
//! `admission.kspaces.io/applicable-tenants`; where tenants' webhooks may call.

#[path = "admission_webhooks/webhook.rs"]
mod webhook;

use std::time::{Duration, Instant};

use kspaces_tests::{certificate_kubeconfig, kubeconfig_with_server_url, Kubectl, Server};
use serde_json::{json, Value};
use webhook::{Certificate, Reply, Webhook};

/// A server with tenants t-a and t-b, and kubectl as the system administrator and as each tenant's admin.
fn server_with_tenants(flags: &[&str]) -> (Server, Kubectl, Kubectl, Kubectl) {
    kspaces_tests::server_with_tenants(flags, ["t-a", "t-b"])
}

/// One webhook of a configuration: `url`, `ca_bundle`, on ConfigMap creates and updates, with `extra` fields.
fn hook(name: &str, url: &str, ca_bundle: &str, extra: Value) -> Value {
    let mut hook = json!({
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca_bundle},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Some(hook), Some(extra)) = (hook.as_object_mut(), extra.as_object()) {
        hook.extend(extra.clone());
    }
    hook
}

fn configuration(kind: &str, name: &str, webhooks: Vec<Value>) -> String {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "webhooks": webhooks}).to_string()
}

fn validating(kubectl: &Kubectl, name: &str, webhooks: Vec<Value>) {
    kubectl.ok_with_stdin(&["create", "-f", "-"], &configuration("ValidatingWebhookConfiguration", name, webhooks));
}

fn configmap(name: &str, labels: Value) -> String {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default", "labels": labels}}).to_string()
}

/// A URL nothing listens at.
fn closed_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    drop(listener);
    format!("https://127.0.0.1:{port}/validate")
}

fn names_of(requests: &[Value]) -> Vec<String> {
    requests.iter().map(|r| r["name"].as_str().unwrap_or_default().to_owned()).collect()
}

#[test]
fn invalid_configurations_are_422_with_kubes_field_causes() {
    let (server, _system, a, _b) = server_with_tenants(&[]);
    let bad = vec![
        hook("plain.example.com", "http://127.0.0.1:1/x", "", json!({})),
        hook("query.example.com", "https://127.0.0.1:1/x?a=b", "", json!({"timeoutSeconds": 31})),
        hook("rules.example.com", "https://127.0.0.1:1/x", "", json!({
            "sideEffects": "Some", "admissionReviewVersions": ["v1beta1"], "failurePolicy": "Maybe",
            "rules": [{"operations": ["CREATE", "*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["*/*", "pods"]}],
        })),
        json!({"name": "nowhere.example.com", "clientConfig": {}, "sideEffects": "None", "admissionReviewVersions": ["v1"]}),
    ];
    let body = configuration("ValidatingWebhookConfiguration", "bad", bad);
    let text = a.fails_with_stdin(&["create", "-f", "-"], &body);
    assert!(text.contains("The ValidatingWebhookConfiguration \"bad\" is invalid"), "{text}");
    for expected in [
        "webhooks[0].clientConfig.url: Invalid value: \"http://127.0.0.1:1/x\": 'https' is the only allowed URL scheme",
        "webhooks[1].clientConfig.url: Invalid value: \"https://127.0.0.1:1/x?a=b\": query parameters are not permitted in the URL",
        "webhooks[1].timeoutSeconds: Invalid value: \"31\": the timeout value must be between 1 and 30 seconds",
        "webhooks[2].sideEffects: Unsupported value: \"Some\"",
        "webhooks[2].failurePolicy: Unsupported value: \"Maybe\"",
        "webhooks[2].admissionReviewVersions",
        "webhooks[2].rules[0].operations: Invalid value",
        "if '*/*' is present, must not specify other resources",
        "webhooks[3].clientConfig: Required value: exactly one of url or service is required",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in: {text}");
    }
    drop(server);
}

#[test]
fn configurations_are_defaulted_and_private_to_their_tenant() {
    let (_server, system, a, b) = server_with_tenants(&[]);
    validating(&a, "mine", vec![hook("mine.example.com", "https://127.0.0.1:1/x", "", json!({}))]);
    let stored: Value = serde_json::from_str(&a.ok(&["get", "validatingwebhookconfiguration", "mine", "-o", "json"])).expect("JSON");
    let defaulted = &stored["webhooks"][0];
    assert_eq!(defaulted["failurePolicy"], "Fail", "{stored}");
    assert_eq!(defaulted["matchPolicy"], "Equivalent", "{stored}");
    assert_eq!(defaulted["timeoutSeconds"], 10, "{stored}");
    assert_eq!(defaulted["namespaceSelector"], json!({}), "{stored}");
    assert_eq!(defaulted["objectSelector"], json!({}), "{stored}");
    assert_eq!(defaulted["rules"][0]["scope"], "*", "{stored}");
    // t-b neither sees nor reaches it, by any path.
    assert!(b.ok(&["get", "validatingwebhookconfigurations", "-o", "name"]).trim().is_empty());
    let out = b.fails(&["get", "validatingwebhookconfiguration", "mine"]);
    assert!(out.contains("NotFound") || out.contains("not found"), "{out}");
    let out = b.fails(&["get", "--raw", "/clusters/root:t-a/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"]);
    assert!(out.contains("Forbidden") || out.contains("forbidden"), "{out}");
    let out = b.fails(&["delete", "--raw", "/clusters/root:t-a/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/mine"]);
    assert!(out.contains("Forbidden") || out.contains("forbidden"), "{out}");
    // The system administrator sees it in t-a's space only.
    let listed = system.ok(&["get", "--raw", "/clusters/root:t-a/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"]);
    assert!(listed.contains("\"mine\""), "{listed}");
    assert!(!system.ok(&["get", "validatingwebhookconfigurations", "-o", "name"]).contains("mine"));
}

#[test]
fn a_validating_webhook_denies_labelled_configmaps_with_its_message() {
    let (_server, _system, a, _b) = server_with_tenants(&[]);
    let webhook = Webhook::start(Certificate::SignedByCa, |_| Reply::Deny("labelled configmaps are not welcome here"));
    let selector = json!({"objectSelector": {"matchLabels": {"deny": "yes"}}});
    validating(&a, "deny", vec![hook("deny.example.com", &webhook.url("/validate"), &webhook.ca_bundle(), selector)]);
    a.ok(&["create", "configmap", "plain"]);
    let out = a.fails_with_stdin(&["create", "-f", "-"], &configmap("labelled", json!({"deny": "yes"})));
    assert!(out.contains("admission webhook \"deny.example.com\" denied the request: labelled configmaps are not welcome here"), "{out}");
    assert!(out.contains("Forbidden"), "the webhook's reason: {out}");
    let requests = webhook.requests();
    assert_eq!(names_of(&requests), ["labelled"], "only the selected object reaches the webhook");
    let request = &requests[0];
    assert_eq!(request["operation"], "CREATE", "{request}");
    assert_eq!(request["kind"], json!({"group": "", "version": "v1", "kind": "ConfigMap"}), "{request}");
    assert_eq!(request["resource"], json!({"group": "", "version": "v1", "resource": "configmaps"}), "{request}");
    assert_eq!(request["namespace"], "default", "{request}");
    assert_eq!(request["userInfo"]["username"], "admin", "{request}");
    assert_eq!(request["object"]["metadata"]["labels"]["deny"], "yes", "{request}");
    assert_eq!(request["dryRun"], false, "{request}");
    assert!(a.run(&["get", "configmap", "labelled"]).status.code() != Some(0), "a denied object is not stored");
}

#[test]
fn a_mutating_webhook_adds_a_label_by_json_patch() {
    let (_server, _system, a, _b) = server_with_tenants(&[]);
    let webhook = Webhook::start(Certificate::SignedByCa, |_| Reply::Patch(json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}])));
    let body = configuration("MutatingWebhookConfiguration", "label", vec![hook("label.example.com", &webhook.url("/mutate"), &webhook.ca_bundle(), json!({}))]);
    a.ok_with_stdin(&["create", "-f", "-"], &body);
    let created = a.ok(&["create", "configmap", "patched", "-o", "json"]);
    let created: Value = serde_json::from_str(&created).expect("JSON");
    assert_eq!(created["metadata"]["labels"]["mutated"], "yes", "{created}");
    let stored = a.ok(&["get", "configmap", "patched", "-o", "jsonpath={.metadata.labels.mutated}"]);
    assert_eq!(stored, "yes");
}

#[test]
fn failure_policies_decide_when_the_webhook_is_down_or_hangs() {
    let (_server, _system, a, _b) = server_with_tenants(&[]);
    let hanging = Webhook::start(Certificate::SignedByCa, |_| Reply::Hang);
    let closed = closed_url();
    let only = |name: &str| json!({"objectSelector": {"matchLabels": {"case": name}}});
    let mut fail_down = only("fail-down");
    fail_down["failurePolicy"] = json!("Fail");
    let mut ignore_down = only("ignore-down");
    ignore_down["failurePolicy"] = json!("Ignore");
    let mut fail_hang = only("fail-hang");
    fail_hang["failurePolicy"] = json!("Fail");
    fail_hang["timeoutSeconds"] = json!(1);
    let mut ignore_hang = only("ignore-hang");
    ignore_hang["failurePolicy"] = json!("Ignore");
    ignore_hang["timeoutSeconds"] = json!(1);
    validating(&a, "policies", vec![
        hook("fail-down.example.com", &closed, "", fail_down),
        hook("ignore-down.example.com", &closed, "", ignore_down),
        hook("fail-hang.example.com", &hanging.url("/v"), &hanging.ca_bundle(), fail_hang),
        hook("ignore-hang.example.com", &hanging.url("/v"), &hanging.ca_bundle(), ignore_hang),
    ]);
    let out = a.fails_with_stdin(&["create", "-f", "-"], &configmap("c1", json!({"case": "fail-down"})));
    assert!(out.contains("Internal error occurred: failed calling webhook \"fail-down.example.com\": failed to call webhook: Post"), "{out}");
    assert!(out.contains("connect"), "{out}");
    a.ok_with_stdin(&["create", "-f", "-"], &configmap("c2", json!({"case": "ignore-down"})));
    let started = Instant::now();
    let out = a.fails_with_stdin(&["create", "-f", "-"], &configmap("c3", json!({"case": "fail-hang"})));
    assert!(out.contains("failed calling webhook \"fail-hang.example.com\"") && out.contains("context deadline exceeded"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(8), "a hanging webhook held the request {:?}", started.elapsed());
    let started = Instant::now();
    a.ok_with_stdin(&["create", "-f", "-"], &configmap("c4", json!({"case": "ignore-hang"})));
    assert!(started.elapsed() < Duration::from_secs(8), "a hanging webhook held the request {:?}", started.elapsed());
}

#[test]
fn answers_that_are_not_valid_reviews_are_a_clear_status() {
    let (_server, _system, a, _b) = server_with_tenants(&[]);
    let garbage = Webhook::start(Certificate::SignedByCa, |_| Reply::Raw("this is not JSON"));
    let wrong = Webhook::start(Certificate::SignedByCa, |_| Reply::WrongUid);
    let only = |name: &str| json!({"objectSelector": {"matchLabels": {"case": name}}});
    validating(&a, "broken", vec![
        hook("garbage.example.com", &garbage.url("/v"), &garbage.ca_bundle(), only("garbage")),
        hook("wrong-uid.example.com", &wrong.url("/v"), &wrong.ca_bundle(), only("wrong")),
    ]);
    let out = a.fails_with_stdin(&["create", "-f", "-"], &configmap("g", json!({"case": "garbage"})));
    assert!(out.contains("failed calling webhook \"garbage.example.com\": received invalid webhook response"), "{out}");
    let out = a.fails_with_stdin(&["create", "-f", "-"], &configmap("w", json!({"case": "wrong"})));
    assert!(out.contains("failed calling webhook \"wrong-uid.example.com\": received invalid webhook response: expected response.uid="), "{out}");
    assert!(out.contains("got \\\"not-the-request\\\"") || out.contains("got \"not-the-request\""), "{out}");
}

#[test]
fn a_self_signed_ca_certificate_is_accepted_as_the_servers_when_in_the_bundle() {
    let (_server, _system, a, _b) = server_with_tenants(&[]);
    let kopf_like = Webhook::start(Certificate::SelfSignedCa, |_| Reply::Deny("seen over TLS"));
    validating(&a, "kopf", vec![hook("kopf.example.com", &kopf_like.url("/v"), &kopf_like.ca_bundle(), json!({}))]);
    let out = a.fails(&["create", "configmap", "x"]);
    assert!(out.contains("admission webhook \"kopf.example.com\" denied the request: seen over TLS"), "{out}");
    // A bundle that does not hold it: the handshake fails (under failurePolicy Fail).
    a.ok(&["delete", "validatingwebhookconfiguration", "kopf"]);
    let other = Webhook::start(Certificate::SelfSignedCa, |_| Reply::Allow);
    validating(&a, "mismatch", vec![hook("mismatch.example.com", &kopf_like.url("/v"), &other.ca_bundle(), json!({"objectSelector": {"matchLabels": {"m": "1"}}}))]);
    let out = a.fails_with_stdin(&["create", "-f", "-"], &configmap("m", json!({"m": "1"})));
    assert!(out.contains("failed calling webhook \"mismatch.example.com\"") && out.contains("tls"), "{out}");
}

#[test]
fn a_dry_run_reaches_the_webhook_marked_as_one() {
    let (_server, _system, a, _b) = server_with_tenants(&[]);
    let webhook = Webhook::start(Certificate::SignedByCa, |request| {
        if request["dryRun"] == true { Reply::Deny("dry run seen") } else { Reply::Allow }
    });
    validating(&a, "dry", vec![hook("dry.example.com", &webhook.url("/v"), &webhook.ca_bundle(), json!({}))]);
    let out = a.fails(&["create", "configmap", "d", "--dry-run=server"]);
    assert!(out.contains("dry run seen"), "{out}");
    let requests = webhook.requests();
    assert_eq!(requests[0]["options"]["dryRun"], json!(["All"]), "{:?}", requests);
    a.ok(&["create", "configmap", "d"]);
}

#[test]
fn a_tenants_webhook_never_sees_another_tenants_requests() {
    let (_server, _system, a, b) = server_with_tenants(&[]);
    let webhook_a = Webhook::start(Certificate::SignedByCa, |_| Reply::Allow);
    let webhook_b = Webhook::start(Certificate::SignedByCa, |_| Reply::Allow);
    validating(&a, "log", vec![hook("log.example.com", &webhook_a.url("/v"), &webhook_a.ca_bundle(), json!({}))]);
    validating(&b, "log", vec![hook("log.example.com", &webhook_b.url("/v"), &webhook_b.ca_bundle(), json!({}))]);
    a.ok(&["create", "configmap", "from-a"]);
    b.ok(&["create", "configmap", "from-b"]);
    assert_eq!(names_of(&webhook_a.requests()), ["from-a"]);
    assert_eq!(names_of(&webhook_b.requests()), ["from-b"]);
}

#[test]
fn system_webhooks_apply_to_every_tenant_or_those_their_annotation_selects() {
    let (_server, system, a, b) = server_with_tenants(&[]);
    system.ok(&["label", "tenant", "t-a", "webhooks=on"]);
    let everywhere = Webhook::start(Certificate::SignedByCa, |_| Reply::Allow);
    let selected = Webhook::start(Certificate::SignedByCa, |_| Reply::Allow);
    validating(&system, "everywhere", vec![hook("everywhere.example.com", &everywhere.url("/v"), &everywhere.ca_bundle(), json!({}))]);
    let mut narrowed: Value = serde_json::from_str(&configuration("ValidatingWebhookConfiguration", "narrowed",
        vec![hook("narrowed.example.com", &selected.url("/v"), &selected.ca_bundle(), json!({}))])).expect("JSON");
    narrowed["metadata"]["annotations"] = json!({"admission.kspaces.io/applicable-tenants": "webhooks=on"});
    system.ok_with_stdin(&["create", "-f", "-"], &narrowed.to_string());
    a.ok(&["create", "configmap", "in-a"]);
    b.ok(&["create", "configmap", "in-b"]);
    let mut seen = names_of(&everywhere.requests());
    seen.sort();
    assert_eq!(seen, ["in-a", "in-b"]);
    assert_eq!(names_of(&selected.requests()), ["in-a"]);
    // A selector that does not parse is refused.
    narrowed["metadata"]["name"] = json!("unparsable");
    narrowed["metadata"]["annotations"] = json!({"admission.kspaces.io/applicable-tenants": "a in (("});
    let out = system.fails_with_stdin(&["create", "-f", "-"], &narrowed.to_string());
    assert!(out.contains("is invalid") && out.contains("applicable-tenants"), "{out}");
}

#[test]
fn tenants_webhooks_call_only_allowed_addresses_and_never_the_server() {
    let (server, _system, a, _b) = server_with_tenants(&["--tenant-webhook-allowed-cidrs", "10.0.0.0/8"]);
    let out = a.fails_with_stdin(&["create", "-f", "-"], &configuration("ValidatingWebhookConfiguration", "outside",
        vec![hook("outside.example.com", "https://127.0.0.1:9443/v", "", json!({}))]));
    assert!(out.contains("webhooks[0].clientConfig.url") && out.contains("--tenant-webhook-allowed-cidrs"), "{out}");
    // A name resolving outside the ranges: the call fails under the failure policy.
    let webhook = Webhook::start(Certificate::SignedByCa, |_| Reply::Allow);
    let by_name = format!("https://localhost:{}/v", webhook.port);
    validating(&a, "by-name", vec![hook("by-name.example.com", &by_name, &webhook.ca_bundle(), json!({}))]);
    let out = a.fails(&["create", "configmap", "x"]);
    assert!(out.contains("failed calling webhook \"by-name.example.com\"") && out.contains("not one webhooks of this space may call"), "{out}");
    assert!(webhook.requests().is_empty());
    // The server itself, by its own address.
    let own = format!("{}/apis", server.url);
    let out = a.fails_with_stdin(&["create", "-f", "-"], &configuration("ValidatingWebhookConfiguration", "self",
        vec![hook("self.example.com", &own, "", json!({}))]));
    assert!(out.contains("may not call the kspaces server itself"), "{out}");
}

#[test]
fn a_service_webhook_is_reached_through_the_spaces_endpoint_slices() {
    let (_server, _system, a, _b) = server_with_tenants(&[]);
    let webhook = Webhook::start(Certificate::SignedByCa, |_| Reply::Deny("reached through the service"));
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hook", "namespace": "default"},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": webhook.port}]}});
    a.ok_with_stdin(&["create", "-f", "-"], &service.to_string());
    let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "hook-1", "namespace": "default", "labels": {"kubernetes.io/service-name": "hook"}},
        "addressType": "IPv4", "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": webhook.port, "protocol": "TCP"}]});
    a.ok_with_stdin(&["create", "-f", "-"], &slice.to_string());
    let mut by_service = hook("service.example.com", "", &webhook.ca_bundle(), json!({}));
    by_service["clientConfig"] = json!({"service": {"namespace": "default", "name": "hook", "path": "/v"}, "caBundle": webhook.ca_bundle()});
    validating(&a, "service", vec![by_service]);
    let out = a.fails(&["create", "configmap", "s"]);
    assert!(out.contains("admission webhook \"service.example.com\" denied the request: reached through the service"), "{out}");
    assert_eq!(names_of(&webhook.requests()), ["s"]);
}

#[test]
fn namespace_selectors_and_operations_choose_what_a_webhook_sees() {
    let (_server, _system, a, _b) = server_with_tenants(&[]);
    let webhook = Webhook::start(Certificate::SignedByCa, |_| Reply::Allow);
    a.ok(&["create", "namespace", "ns-a"]);
    a.ok(&["label", "namespace", "ns-a", "team=a"]);
    a.ok(&["create", "namespace", "ns-b"]);
    let mut every = hook("every.example.com", &webhook.url("/v"), &webhook.ca_bundle(), json!({"namespaceSelector": {"matchLabels": {"team": "a"}}}));
    every["rules"][0]["operations"] = json!(["*"]);
    validating(&a, "every", vec![every]);
    a.ok(&["create", "configmap", "x", "-n", "ns-a"]);
    a.ok(&["create", "configmap", "x", "-n", "ns-b"]);
    a.ok(&["label", "configmap", "x", "-n", "ns-a", "changed=yes"]);
    a.ok(&["delete", "configmap", "x", "-n", "ns-a"]);
    a.ok(&["delete", "configmap", "x", "-n", "ns-b"]);
    let requests = webhook.requests();
    let seen: Vec<(String, String)> = requests.iter().map(|r| (r["operation"].as_str().unwrap_or_default().to_owned(), r["namespace"].as_str().unwrap_or_default().to_owned())).collect();
    let expected: Vec<(String, String)> = [("CREATE", "ns-a"), ("UPDATE", "ns-a"), ("DELETE", "ns-a")].iter().map(|(o, n)| (o.to_string(), n.to_string())).collect();
    assert_eq!(seen, expected, "{requests:?}");
    assert_eq!(requests[1]["oldObject"]["metadata"]["labels"], Value::Null, "{:?}", requests[1]);
    assert_eq!(requests[1]["object"]["metadata"]["labels"]["changed"], "yes", "{:?}", requests[1]);
    assert_eq!(requests[2]["object"], Value::Null, "{:?}", requests[2]);
    assert_eq!(requests[2]["oldObject"]["metadata"]["name"], "x", "{:?}", requests[2]);
    assert_eq!(requests[2]["options"]["kind"], "DeleteOptions", "{:?}", requests[2]);
}

#[test]
fn configurations_are_called_after_a_restart() {
    let (server, _system, a, _b) = server_with_tenants(&[]);
    let webhook = Webhook::start(Certificate::SignedByCa, |_| Reply::Deny("still here"));
    validating(&a, "kept", vec![hook("kept.example.com", &webhook.url("/v"), &webhook.ca_bundle(), json!({}))]);
    let data_dir = server.stop();
    let server = Server::start_in(data_dir, &[]);
    let a = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[]));
    let out = a.fails(&["create", "configmap", "after"]);
    assert!(out.contains("admission webhook \"kept.example.com\" denied the request: still here"), "{out}");
}

#[test]
fn a_webhooks_warnings_reach_kubectl() {
    let (_server, _system, a, _b) = server_with_tenants(&[]);
    let webhook = Webhook::start(Certificate::SignedByCa, |_| Reply::Warn("this configmap is deprecated by policy"));
    validating(&a, "warn", vec![hook("warn.example.com", &webhook.url("/v"), &webhook.ca_bundle(), json!({}))]);
    let out = a.run(&["create", "configmap", "warned"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Warning: this configmap is deprecated by policy"), "{stderr}");
}

#[test]
fn a_nested_workspaces_configuration_applies_there_only() {
    let (server, _system, a, _b) = server_with_tenants(&[]);
    let admin = certificate_kubeconfig(&server, "t-a", "admin", &[]);
    let at = |path: &str| Kubectl::new(&kubeconfig_with_server_url(&server, &admin, &format!("{}/clusters/{path}", server.url)));
    let workspace = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "ws"},
        "spec": {"type": {"name": "universal", "path": "root"}}});
    let parent = at("root:t-a");
    parent.ok_with_stdin(&["create", "-f", "-"], &workspace.to_string());
    parent.ok(&["wait", "--for=jsonpath={.status.phase}=Ready", "workspace/ws", "--timeout=20s"]);
    let nested = at("root:t-a:ws");
    let webhook = Webhook::start(Certificate::SignedByCa, |_| Reply::Deny("not in this workspace"));
    validating(&nested, "nested", vec![hook("nested.example.com", &webhook.url("/v"), &webhook.ca_bundle(), json!({}))]);
    let out = nested.fails(&["create", "configmap", "in-ws"]);
    assert!(out.contains("admission webhook \"nested.example.com\" denied the request: not in this workspace"), "{out}");
    a.ok(&["create", "configmap", "in-tenant"]);
    assert_eq!(names_of(&webhook.requests()), ["in-ws"]);
    assert!(a.ok(&["get", "validatingwebhookconfigurations", "-o", "name"]).trim().is_empty(), "the tenant's own space holds none");
}

#[test]
fn a_mutating_webhook_if_needed_is_called_again_after_a_later_change() {
    let (_server, _system, a, _b) = server_with_tenants(&[]);
    let first = Webhook::start(Certificate::SignedByCa, |_| Reply::Allow);
    let never = Webhook::start(Certificate::SignedByCa, |_| Reply::Allow);
    let later = Webhook::start(Certificate::SignedByCa, |_| Reply::Patch(json!([{"op": "add", "path": "/metadata/labels", "value": {"later": "yes"}}])));
    let mutating = |name: &str, webhook: &Webhook, policy: &str| {
        let body = configuration("MutatingWebhookConfiguration", name,
            vec![hook(&format!("{name}.example.com"), &webhook.url("/m"), &webhook.ca_bundle(), json!({"reinvocationPolicy": policy}))]);
        a.ok_with_stdin(&["create", "-f", "-"], &body);
    };
    mutating("a-first", &first, "IfNeeded");
    mutating("b-never", &never, "Never");
    mutating("c-later", &later, "Never");
    a.ok(&["create", "configmap", "r"]);
    let requests = first.requests();
    assert_eq!(requests.len(), 2, "IfNeeded: called again after c-later's change: {requests:?}");
    assert_eq!(requests[0]["object"]["metadata"]["labels"], Value::Null, "{requests:?}");
    assert_eq!(requests[1]["object"]["metadata"]["labels"]["later"], "yes", "{requests:?}");
    assert_eq!(never.requests().len(), 1, "Never: called once");
    assert_eq!(later.requests().len(), 1, "the webhook that changed the object is not called again");
}

#[test]
fn match_conditions_decide_in_cel_whether_a_webhook_is_called() {
    let (_server, _system, a, _b) = server_with_tenants(&[]);
    let webhook = Webhook::start(Certificate::SignedByCa, |_| Reply::Deny("no"));
    let conditions = json!({"matchConditions": [
        {"name": "not-skipped", "expression": "!has(object.metadata.labels) || !('skip' in object.metadata.labels)"},
        {"name": "admins-only", "expression": "request.userInfo.username == 'admin'"}]});
    validating(&a, "conditional", vec![hook("conditional.example.com", &webhook.url("/validate"), &webhook.ca_bundle(), conditions)]);
    a.ok_with_stdin(&["create", "-f", "-"], &configmap("skipped", json!({"skip": "yes"})));
    let out = a.fails_with_stdin(&["create", "-f", "-"], &configmap("judged", json!({"other": "yes"})));
    assert!(out.contains("admission webhook \"conditional.example.com\" denied the request: no"), "{out}");
    assert_eq!(names_of(&webhook.requests()), ["judged"], "a write whose conditions do not hold never reaches the webhook");
    // CEL that does not compile is refused at write, with the field named.
    let broken = json!({"matchConditions": [{"name": "broken", "expression": "object.metadata.name =="}]});
    let body = configuration("ValidatingWebhookConfiguration", "broken", vec![hook("broken.example.com", &webhook.url("/validate"), &webhook.ca_bundle(), broken)]);
    let out = a.fails_with_stdin(&["create", "-f", "-"], &body);
    assert!(out.contains("webhooks[0].matchConditions[0].expression") && out.contains("compilation failed"), "{out}");
}

/// kill -9 of the server while a validating webhook holds a create and an update: after a restart the create left
/// nothing and the update changed nothing (admission runs before anything is written), and what was stored before
/// is all there.
#[test]
fn a_server_killed_while_a_webhook_hangs_wrote_nothing_of_those_requests() {
    let (server, _system, a, _b) = server_with_tenants(&[]);
    a.ok(&["create", "configmap", "before", "-n", "default", "--from-literal", "k=v"]);
    a.ok(&["create", "configmap", "edited", "-n", "default", "--from-literal", "k=old"]);
    let version = a.ok(&["get", "configmap", "edited", "-n", "default", "-o", "jsonpath={.metadata.resourceVersion}"]);
    let hanging = Webhook::start(Certificate::SignedByCa, |_| Reply::Hang);
    validating(&a, "hang", vec![hook("hang.example.com", &hanging.url("/v"), &hanging.ca_bundle(), json!({"timeoutSeconds": 30}))]);
    let mut create = a.spawn(&["create", "configmap", "during", "-n", "default", "--from-literal", "k=v"]);
    let mut update = a.spawn(&["label", "configmap", "edited", "-n", "default", "changed=yes"]);
    let both_held = kspaces_tests::eventually(Duration::from_secs(20), || {
        let names = names_of(&hanging.requests());
        names.iter().any(|n| n == "during") && names.iter().any(|n| n == "edited")
    });
    assert!(both_held, "the webhook holds both writes: {:?}", names_of(&hanging.requests()));
    let data_dir = server.stop();
    let _ = (create.wait(), update.wait());

    let server = Server::start_in(data_dir, &[]);
    let a = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[]));
    assert!(a.fails(&["get", "configmap", "during", "-n", "default"]).contains("NotFound"), "the held create left nothing");
    let edited: Value = serde_json::from_str(&a.ok(&["get", "configmap", "edited", "-n", "default", "-o", "json"])).expect("json");
    assert_eq!(edited["metadata"]["labels"]["changed"], Value::Null, "the held update changed nothing: {edited}");
    assert_eq!(edited["metadata"]["resourceVersion"], json!(version), "{edited}");
    assert_eq!(a.ok(&["get", "configmap", "before", "-n", "default", "-o", "jsonpath={.data.k}"]), "v");
}

/// kcp's API provider webhooks: a ValidatingWebhookConfiguration in the workspace of an APIExport is called for
/// the exported resources in the workspaces that bind it, and for nothing else of theirs.
#[test]
fn an_api_providers_webhook_judges_its_resources_where_they_are_bound_and_nothing_else() {
    let (server, _system, a, _b) = server_with_tenants(&[]);
    let config = certificate_kubeconfig(&server, "t-a", "admin", &[]);
    let at = |path: &str| Kubectl::new(&kubeconfig_with_server_url(&server, &config, &format!("{}/clusters/{path}", server.url)));
    for name in ["provider", "consumer"] {
        let workspace = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name}});
        a.ok_with_stdin(&["create", "--raw", "/clusters/root:t-a/apis/tenancy.kcp.io/v1alpha1/workspaces", "-f", "-"], &workspace.to_string());
        assert!(kspaces_tests::eventually(Duration::from_secs(30), || {
            let answer = a.run(&["get", "--raw", &format!("/clusters/root:t-a/apis/tenancy.kcp.io/v1alpha1/workspaces/{name}")]);
            String::from_utf8_lossy(&answer.stdout).contains("\"phase\":\"Ready\"")
        }), "workspace {name} is not Ready");
    }
    let (provider, consumer) = (at("root:t-a:provider"), at("root:t-a:consumer"));
    provider.ok_with_stdin(&["apply", "-f", "-"], kspaces_tests::WIDGETS_EXPORT);
    let binding = json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "widgets"},
        "spec": {"reference": {"export": {"path": "root:t-a:provider", "name": "widgets"}}}});
    assert!(kspaces_tests::eventually(Duration::from_secs(30), || {
        consumer.run_with_stdin(&["apply", "-f", "-"], &binding.to_string()).status.success()
            && consumer.run(&["get", "widgets"]).status.success()
    }), "the consumer never served widgets");

    // The provider's webhook names widgets and configmaps: only widgets are the provider's in the consumer.
    let webhook = Webhook::start(Certificate::SignedByCa, |request| {
        match request["name"].as_str().unwrap_or_default() {
            name if name.starts_with("bad") => Reply::Deny("the provider says no"),
            _ => Reply::Allow,
        }
    });
    let mut judged = hook("provider.example.io", &webhook.url("/v"), &webhook.ca_bundle(), json!({}));
    judged["rules"] = json!([{"operations": ["CREATE", "UPDATE"], "apiGroups": ["example.io", ""], "apiVersions": ["*"],
        "resources": ["widgets", "configmaps"]}]);
    validating(&provider, "provider", vec![judged]);
    let widget = |name: &str| format!("apiVersion: example.io/v1\nkind: Widget\nmetadata: {{name: {name}, namespace: default}}\nspec: {{size: 2}}\n");
    let refused = consumer.fails_with_stdin(&["create", "-f", "-"], &widget("bad-widget"));
    assert!(refused.contains("admission webhook \"provider.example.io\" denied the request: the provider says no"), "{refused}");
    consumer.ok_with_stdin(&["create", "-f", "-"], &widget("good-widget"));
    consumer.ok(&["create", "configmap", "bad-config", "-n", "default"]);
    let seen = names_of(&webhook.requests());
    assert!(seen.contains(&"good-widget".to_owned()) && seen.contains(&"bad-widget".to_owned()), "{seen:?}");
    assert!(!seen.contains(&"bad-config".to_owned()), "the consumer's own ConfigMaps are not the provider's: {seen:?}");
    // Writes in another workspace that does not bind the export never reach it.
    a.ok(&["create", "configmap", "bad-elsewhere", "-n", "default"]);
    assert!(!names_of(&webhook.requests()).contains(&"bad-elsewhere".to_owned()));
}

/// kube's admission metrics: each webhook call (duration, requests, rejections) and each admission step.
#[test]
fn webhook_calls_and_admission_steps_are_in_kubes_metrics() {
    let (_server, system, a, _b) = server_with_tenants(&[]);
    let webhook = Webhook::start(Certificate::SignedByCa, |request| match request["name"].as_str() {
        Some("refused") => Reply::Deny("not this one"),
        _ => Reply::Allow,
    });
    validating(&a, "metered", vec![hook("metered.example.com", &webhook.url("/v"), &webhook.ca_bundle(), json!({}))]);
    a.ok(&["create", "configmap", "allowed", "-n", "default"]);
    assert!(a.fails(&["create", "configmap", "refused", "-n", "default"]).contains("not this one"));
    let metrics = system.ok(&["get", "--raw", "/metrics"]);
    let line = |prefix: &str| metrics.lines().find(|l| l.starts_with(prefix)).map(str::to_owned);
    let requests = "apiserver_admission_webhook_request_total{code=\"200\",name=\"metered.example.com\",operation=\"CREATE\"";
    assert_eq!(line(&format!("{requests},rejected=\"false\",type=\"validating\"}}")).as_deref().and_then(|l| l.rsplit(' ').next()), Some("1"), "{metrics}");
    assert_eq!(line(&format!("{requests},rejected=\"true\",type=\"validating\"}}")).as_deref().and_then(|l| l.rsplit(' ').next()), Some("1"), "{metrics}");
    let rejection = "apiserver_admission_webhook_rejection_count_total{error_type=\"no_error\",name=\"metered.example.com\",operation=\"CREATE\",rejection_code=\"403\",type=\"validating\"}";
    assert!(line(rejection).is_some(), "{metrics}");
    assert!(line("apiserver_admission_webhook_admission_duration_seconds_count{name=\"metered.example.com\",operation=\"CREATE\",rejected=\"true\",type=\"validating\"}").is_some(), "{metrics}");
    assert!(line("apiserver_admission_step_admission_duration_seconds_count{operation=\"CREATE\",rejected=\"true\",type=\"validate\"}").is_some(), "{metrics}");
    assert!(line("apiserver_admission_step_admission_duration_seconds_count{operation=\"CREATE\",rejected=\"false\",type=\"admit\"}").is_some(), "{metrics}");
}

/// The audit annotations of an admission webhook's answer are in the request's audit event, as
/// `<webhook name>/<key>`.
#[test]
fn a_webhooks_audit_annotations_are_in_the_audit_event() {
    let logs = tempfile::tempdir().expect("temp dir");
    let log = logs.path().join("audit.log");
    let (_server, _system, a, _b) = server_with_tenants(&["--audit-log-path", log.to_str().expect("utf-8")]);
    let webhook = Webhook::start(Certificate::SignedByCa, |_| Reply::Annotate("checked-by", "the audit team"));
    validating(&a, "annotating", vec![hook("annotating.example.com", &webhook.url("/v"), &webhook.ca_bundle(), json!({}))]);
    a.ok(&["create", "configmap", "annotated", "-n", "default"]);
    let mut event = Value::Null;
    let found = kspaces_tests::eventually(Duration::from_secs(10), || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        event = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["verb"] == "create" && e["objectRef"]["resource"] == "configmaps" && e["responseStatus"]["code"] == 201).unwrap_or(Value::Null);
        !event.is_null()
    });
    assert!(found, "no audit event for the create");
    assert_eq!(event["annotations"]["annotating.example.com/checked-by"], "the audit team", "{event}");
    assert_eq!(event["annotations"]["kspaces.io/tenant"], "t-a", "{event}");
}

#[test]
fn calls_to_one_webhook_reuse_its_connections() {
    let (_server, _system, a, _b) = server_with_tenants(&[]);
    let webhook = Webhook::start(Certificate::SignedByCa, |_| Reply::Allow);
    validating(&a, "keep", vec![hook("keep.example.com", &webhook.url("/validate"), &webhook.ca_bundle(), json!({}))]);
    let creates = 12;
    for i in 0..creates {
        a.ok(&["create", "configmap", &format!("kept-{i}")]);
    }
    assert_eq!(webhook.requests().len(), creates, "every create reviewed");
    let connections = webhook.connections();
    assert!(connections <= 2, "{creates} sequential creates took {connections} connections to the webhook");
}

#[test]
fn a_new_ca_bundle_is_never_served_by_a_connection_verified_with_the_old_one() {
    let (_server, _system, a, _b) = server_with_tenants(&[]);
    let webhook = Webhook::start(Certificate::SignedByCa, |_| Reply::Allow);
    let stranger = Webhook::start(Certificate::SignedByCa, |_| Reply::Allow);
    validating(&a, "trust", vec![hook("trust.example.com", &webhook.url("/validate"), &webhook.ca_bundle(), json!({}))]);
    let bundle = |bundle: &str| {
        let patch = json!([{"op": "replace", "path": "/webhooks/0/clientConfig/caBundle", "value": bundle}]).to_string();
        a.ok(&["patch", "validatingwebhookconfiguration", "trust", "--type=json", "-p", &patch]);
    };
    a.ok(&["create", "configmap", "trusted"]);
    assert_eq!(webhook.connections(), 1);
    // A bundle that does not trust the webhook's certificate: the connection verified with the old one is idle
    // and open, and must not serve the call.
    bundle(&stranger.ca_bundle());
    let out = a.fails(&["create", "configmap", "untrusted"]);
    assert!(out.contains("failed calling webhook \"trust.example.com\"") && out.contains("certificate"), "{out}");
    assert_eq!(webhook.requests().len(), 1, "the webhook saw no review under the bundle that does not trust it");
    // The webhook changes its certificate to another CA's, and the configuration follows.
    let renewed = webhook.new_certificate();
    bundle(&renewed);
    a.ok(&["create", "configmap", "renewed"]);
    assert_eq!(names_of(&webhook.requests()), ["trusted", "renewed"]);
}

#[test]
fn a_webhook_closing_idle_connections_fails_no_call() {
    let (_server, _system, a, _b) = server_with_tenants(&[]);
    let webhook = Webhook::start(Certificate::SignedByCa, |_| Reply::Allow);
    webhook.close_idle_after(Duration::from_millis(20));
    validating(&a, "short", vec![hook("short.example.com", &webhook.url("/validate"), &webhook.ca_bundle(), json!({}))]);
    for i in 0..6 {
        a.ok(&["create", "configmap", &format!("short-{i}")]);
        if i % 2 == 1 {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    assert_eq!(webhook.requests().len(), 6);
    assert!(webhook.connections() >= 2, "the webhook closed its idle connections: {}", webhook.connections());
}

/// A delete's validating webhooks and policies, as a create's: their warnings are the response's `Warning` headers
/// (for one object and for a collection), their audit annotations in the delete's audit event.
#[test]
fn a_deletes_warnings_and_audit_annotations_reach_the_client_and_the_audit_event() {
    let logs = tempfile::tempdir().expect("temp dir");
    let log = logs.path().join("audit.log");
    let (_server, _system, a, _b) = server_with_tenants(&["--audit-log-path", log.to_str().expect("utf-8")]);
    let warning = Webhook::start(Certificate::SignedByCa, |_| Reply::Warn("deleting configmaps is discouraged"));
    let annotating = Webhook::start(Certificate::SignedByCa, |_| Reply::Annotate("deleted-by", "the audit team"));
    let on_delete = json!({"rules": [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]});
    validating(&a, "on-delete", vec![hook("warning.example.com", &warning.url("/v"), &warning.ca_bundle(), on_delete.clone()),
        hook("annotating.example.com", &annotating.url("/v"), &annotating.ca_bundle(), on_delete)]);
    a.ok_with_stdin(&["create", "-f", "-"], "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n\
        metadata: {name: kept}\nspec:\n  matchConstraints:\n    resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], \
        operations: [DELETE], resources: [configmaps]}]\n  validations:\n  - {expression: \"false\", message: keep configmaps}\n\
        ---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: kept-warn}\n\
        spec: {policyName: kept, validationActions: [Warn]}\n");
    for name in ["one", "batch-1", "batch-2"] {
        a.ok_with_stdin(&["create", "-f", "-"], &configmap(name, json!({"batch": name.starts_with("batch").to_string()})));
    }
    let policy_warning = "Warning: Validation failed for ValidatingAdmissionPolicy 'kept' with binding 'kept-warn': keep configmaps";
    let out = a.run(&["delete", "configmap", "one", "-n", "default"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("Warning: deleting configmaps is discouraged") && stderr.contains(policy_warning), "{stderr}");
    let out = a.run(&["delete", "--raw", "/api/v1/namespaces/default/configmaps?labelSelector=batch%3Dtrue"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("Warning: deleting configmaps is discouraged") && stderr.contains(policy_warning), "a collection: {stderr}");
    assert_eq!(names_of(&warning.requests()), ["one", "batch-1", "batch-2"]);
    let mut event = Value::Null;
    let found = kspaces_tests::eventually(Duration::from_secs(10), || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        event = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["verb"] == "delete" && e["objectRef"]["name"] == "one" && e["stage"] == "ResponseComplete").unwrap_or(Value::Null);
        !event.is_null()
    });
    assert!(found, "no audit event for the delete");
    assert_eq!(event["annotations"]["annotating.example.com/deleted-by"], "the audit team", "{event}");
}
