//! CRD conversion webhooks (`spec.conversion.strategy: Webhook`) through kubectl 1.32 against a real HTTPS
//! ConversionReview server (`conversion_webhooks/review.rs`): a CRD storing v1 (`spec.host`) and serving v2
//! (`spec.hostname`); every verb in v2 converted through the webhook, one review per list; a webhook that fails
//! or answers wrongly is a 503 naming it, with nothing stored; each tenant's webhook sees its own objects only, a
//! forced system CRD converts with the platform's webhook; the Python client reads v2; bad configurations are 422
//! with kube's causes.

#[path = "conversion_webhooks/review.rs"]
mod review;

use std::time::{Duration, Instant};

use kspaces_tests::{certificate_kubeconfig, contains, Kubectl, Server, WatchOutput};
use review::{Mode, Webhook};
use serde_json::{json, Value};

const CRD: &str = "things.example.com";

fn crd(conversion: Value) -> String {
    let schema = |field: &str| json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {field: {"type": "string"}, "size": {"type": "integer"}}},
    }}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "things", "singular": "thing", "kind": "Thing", "listKind": "ThingList"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema("host")},
                {"name": "v2", "served": true, "storage": false, "schema": schema("hostname")},
            ],
            "conversion": conversion,
        },
    })
    .to_string()
}

fn webhook_conversion(url: &str, ca_bundle: &str) -> Value {
    json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": url, "caBundle": ca_bundle}, "conversionReviewVersions": ["v1"]}})
}

fn install(kubectl: &Kubectl, webhook: &Webhook) {
    kubectl.ok_with_stdin(&["create", "-f", "-"], &crd(webhook_conversion(&webhook.url(), &webhook.ca_bundle())));
    let waited = kubectl.ok(&["wait", "--for", "condition=established", &format!("crd/{CRD}"), "--timeout=10s"]);
    assert!(waited.contains("condition met"), "{waited}");
}

fn thing_v2(name: &str, hostname: &str) -> String {
    json!({"apiVersion": "example.com/v2", "kind": "Thing", "metadata": {"name": name, "namespace": "default"}, "spec": {"hostname": hostname}}).to_string()
}

fn get_json(kubectl: &Kubectl, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&kubectl.ok(&all)).expect("JSON")
}

/// A server with tenants t-a and t-b, and kubectl as the system administrator and as each tenant's admin.
fn server_with_tenants() -> (Server, Kubectl, Kubectl, Kubectl) {
    kspaces_tests::server_with_tenants(&[], ["t-a", "t-b"])
}

#[test]
fn bad_conversion_configurations_are_422_with_causes() {
    let (_server, _system, a, _b) = server_with_tenants();
    let cases = [
        (json!({"strategy": "Webhook"}), "spec.conversion.webhook: Required value"),
        (json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"]}}), "spec.conversion.webhook.clientConfig: Required value"),
        (json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://127.0.0.2:1/c"}}}), "spec.conversion.webhook.conversionReviewVersions: Required value"),
        (json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://127.0.0.2:1/c"}, "conversionReviewVersions": ["v1beta1"]}}),
            "spec.conversion.webhook.conversionReviewVersions: Invalid value"),
        (json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://127.0.0.2:1/c"}, "conversionReviewVersions": ["v1", "v1"]}}),
            "spec.conversion.webhook.conversionReviewVersions[1]: Invalid value: \"v1\": duplicate version"),
        (json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "http://127.0.0.2:1/c"}, "conversionReviewVersions": ["v1"]}}),
            "spec.conversion.webhook.clientConfig.url: Invalid value: \"http://127.0.0.2:1/c\": 'https' is the only allowed URL scheme"),
        (json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://127.0.0.2:1/c", "service": {"name": "s", "namespace": "n"}}, "conversionReviewVersions": ["v1"]}}),
            "spec.conversion.webhook.clientConfig: Required value: exactly one of url or service is required"),
        (json!({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"]}}),
            "spec.conversion.webhook: Forbidden: should not be set when strategy is not set to Webhook"),
        (json!({"strategy": "Sometimes"}), "spec.conversion.strategy: Unsupported value: \"Sometimes\""),
    ];
    for (conversion, expected) in cases {
        let text = a.fails_with_stdin(&["create", "-f", "-"], &crd(conversion.clone()));
        assert!(text.contains(&format!("The CustomResourceDefinition \"{CRD}\" is invalid")), "{conversion}: {text}");
        assert!(text.contains(expected), "{conversion}: missing {expected:?} in: {text}");
    }
    // A tenant's webhook may not call the kspaces server itself.
    let port = a.ok(&["config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"]);
    let port = port.rsplit(':').next().unwrap_or_default().trim_end_matches('/').split('/').next().unwrap_or_default().to_owned();
    let itself = format!("https://127.0.0.1:{port}/convert");
    let text = a.fails_with_stdin(&["create", "-f", "-"], &crd(webhook_conversion(&itself, "")));
    assert!(text.contains("may not call the kspaces server itself"), "{text}");
}

#[test]
fn every_verb_in_v2_goes_through_the_webhook_and_objects_are_stored_in_v1() {
    let (_server, _system, a, _b) = server_with_tenants();
    let webhook = Webhook::start();
    install(&a, &webhook);
    // Create in v2: stored in v1 (the webhook was asked for v1), answered in v2.
    let created = a.ok_with_stdin(&["create", "-f", "-", "-o", "json"], &thing_v2("one", "alpha"));
    let created: Value = serde_json::from_str(&created).expect("JSON");
    assert_eq!(created["apiVersion"], "example.com/v2", "{created}");
    assert_eq!(created["spec"], json!({"hostname": "alpha"}), "{created}");
    assert!(webhook.requests().iter().any(|r| r["desiredAPIVersion"] == "example.com/v1"), "{:?}", webhook.requests());
    // Get in v1 (the storage version: no call needed) and v2.
    let v1 = get_json(&a, &["things.v1.example.com", "one"]);
    assert_eq!(v1["apiVersion"], "example.com/v1", "{v1}");
    assert_eq!(v1["spec"], json!({"host": "alpha"}), "{v1}");
    let v2 = get_json(&a, &["things.v2.example.com", "one"]);
    assert_eq!(v2["spec"], json!({"hostname": "alpha"}), "{v2}");
    assert_eq!(v2["metadata"]["uid"], v1["metadata"]["uid"], "{v2}");
    // A list of three in v2 is one review of three objects.
    a.ok_with_stdin(&["create", "-f", "-"], &thing_v2("two", "beta"));
    a.ok_with_stdin(&["create", "-f", "-"], &thing_v2("three", "gamma"));
    let before = webhook.requests().len();
    let listed = get_json(&a, &["things.v2.example.com"]);
    let hostnames: Vec<&str> = listed["items"].as_array().expect("items").iter().map(|i| i["spec"]["hostname"].as_str().unwrap_or_default()).collect();
    assert_eq!(sorted(&hostnames), ["alpha", "beta", "gamma"], "{listed}");
    let reviews = &webhook.requests()[before..];
    assert_eq!(reviews.len(), 1, "one review per list page: {reviews:?}");
    assert_eq!(reviews[0]["objects"].as_array().map(Vec::len), Some(3), "{reviews:?}");
    let listed_v1 = get_json(&a, &["things.v1.example.com"]);
    assert!(listed_v1["items"].as_array().expect("items").iter().all(|i| i["spec"].get("host").is_some()), "{listed_v1}");
    // Table output in v2 (printer columns are computed from the converted objects).
    let table = a.ok(&["get", "things.v2.example.com"]);
    assert!(table.contains("one") && table.contains("three"), "{table}");
    // Watch in v2: events converted.
    let mut watch = WatchOutput::start(&a, &["get", "things.v2.example.com", "--watch-only", "-o", "json"]);
    std::thread::sleep(Duration::from_millis(500));
    a.ok(&["patch", "things.v2.example.com", "one", "--type", "merge", "-p", r#"{"spec":{"hostname":"patched"}}"#]);
    assert!(watch.wait_for(Duration::from_secs(10), contains("\"hostname\": \"patched\"")), "{}", watch.transcript());
    assert!(!watch.saw(contains("\"host\":")), "{}", watch.transcript());
    // Patched in v2, stored in v1.
    assert_eq!(get_json(&a, &["things.v1.example.com", "one"])["spec"], json!({"host": "patched"}));
    // Server-side apply in v2.
    let applied = json!({"apiVersion": "example.com/v2", "kind": "Thing", "metadata": {"name": "one", "namespace": "default"}, "spec": {"hostname": "applied", "size": 3}});
    a.ok_with_stdin(&["apply", "--server-side", "--force-conflicts", "-f", "-"], &applied.to_string());
    assert_eq!(get_json(&a, &["things.v1.example.com", "one"])["spec"], json!({"host": "applied", "size": 3}));
    let v2 = get_json(&a, &["things.v2.example.com", "one"]);
    assert_eq!(v2["spec"], json!({"hostname": "applied", "size": 3}), "{v2}");
    // Update (PUT) in v2 of the object read in v2.
    let mut read = v2.clone();
    read["spec"]["size"] = json!(4);
    a.ok_with_stdin(&["replace", "-f", "-"], &read.to_string());
    assert_eq!(get_json(&a, &["things.v1.example.com", "one"])["spec"], json!({"host": "applied", "size": 4}));
    // Every review carried t-a's objects and asked for a served version.
    for request in webhook.requests() {
        assert!(["example.com/v1", "example.com/v2"].contains(&request["desiredAPIVersion"].as_str().unwrap_or_default()), "{request}");
    }
    a.ok(&["delete", "things.v2.example.com", "one"]);
}

fn sorted<'a>(items: &[&'a str]) -> Vec<&'a str> {
    let mut items = items.to_vec();
    items.sort_unstable();
    items
}

#[test]
fn a_failing_or_wrong_webhook_is_a_503_naming_it_and_stores_nothing() {
    let (_server, _system, a, _b) = server_with_tenants();
    let webhook = Webhook::start();
    install(&a, &webhook);
    a.ok_with_stdin(&["create", "-f", "-"], &thing_v2("kept", "alpha"));
    let cases = [
        (Mode::Garbage, "the answer is not a ConversionReview"),
        (Mode::WrongUid, "expected response.uid="),
        (Mode::WrongCount, "returned 0 objects, expected 1"),
        (Mode::Renamed, "must have the same name"),
        (Mode::Refuse, "cannot convert today"),
    ];
    for (mode, expected) in cases {
        webhook.set_mode(mode);
        let text = a.fails(&["get", "things.v2.example.com", "kept", "-v=6"]);
        assert!(text.contains("503"), "{mode:?}: {text}");
        assert!(text.contains(&format!("conversion of {CRD} objects failed")) && text.contains(&webhook.url()), "{mode:?}: {text}");
        assert!(text.contains(expected), "{mode:?}: missing {expected:?} in {text}");
        // A create in v2 is refused before anything is stored.
        let text = a.fails_with_stdin(&["create", "-f", "-"], &thing_v2("never", "beta"));
        assert!(text.contains(expected), "{mode:?}: {text}");
        let gone = a.fails(&["get", "things.v1.example.com", "never"]);
        assert!(gone.contains("NotFound") || gone.contains("not found"), "{mode:?}: {gone}");
    }
    // The storage version needs no call.
    assert_eq!(get_json(&a, &["things.v1.example.com", "kept"])["spec"], json!({"host": "alpha"}));
    // A watch in v2 whose event cannot be converted ends with an ERROR event carrying the Status.
    let list: Value = serde_json::from_str(&a.ok(&["get", "--raw", "/apis/example.com/v1/namespaces/default/things"])).expect("JSON");
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_owned();
    assert!(!rv.is_empty(), "{list}");
    let path = format!("/apis/example.com/v2/namespaces/default/things?watch=true&resourceVersion={rv}");
    let ended = std::thread::scope(|scope| {
        let watching = scope.spawn(|| a.run(&["get", "--raw", &path, "--request-timeout=20s"]));
        std::thread::sleep(Duration::from_millis(1000));
        a.ok(&["patch", "things.v1.example.com", "kept", "--type", "merge", "-p", r#"{"spec":{"host":"changed"}}"#]);
        watching.join().expect("watch thread")
    });
    let transcript = String::from_utf8_lossy(&ended.stdout);
    assert!(transcript.contains("\"type\":\"ERROR\"") && transcript.contains("cannot convert today"), "{transcript} {}", String::from_utf8_lossy(&ended.stderr));
    // A webhook nobody listens at: 503 naming it, well within kube's 30 s bound.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let closed = format!("https://127.0.0.1:{}/convert", listener.local_addr().expect("address").port());
    drop(listener);
    let mut crd: Value = serde_json::from_str(&a.ok(&["get", "crd", CRD, "-o", "json"])).expect("JSON");
    crd["spec"]["conversion"]["webhook"]["clientConfig"]["url"] = json!(closed);
    a.ok_with_stdin(&["replace", "-f", "-"], &crd.to_string());
    let started = Instant::now();
    let mut text = String::new();
    while started.elapsed() < Duration::from_secs(10) {
        text = a.fails(&["get", "things.v2.example.com", "kept"]);
        if text.contains(&closed) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(text.contains(&closed) && text.contains("conversion webhook"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
}

#[test]
fn a_tenants_webhook_only_ever_sees_its_own_tenants_objects() {
    let (_server, system, a, b) = server_with_tenants();
    let (hook_a, hook_b) = (Webhook::start(), Webhook::start());
    install(&a, &hook_a);
    install(&b, &hook_b);
    a.ok_with_stdin(&["create", "-f", "-"], &thing_v2("of-a", "a-host"));
    b.ok_with_stdin(&["create", "-f", "-"], &thing_v2("of-b", "b-host"));
    assert_eq!(get_json(&a, &["things.v2.example.com", "of-a"])["spec"]["hostname"], "a-host");
    assert_eq!(get_json(&b, &["things.v2.example.com", "of-b"])["spec"]["hostname"], "b-host");
    get_json(&a, &["things.v2.example.com"]);
    get_json(&b, &["things.v2.example.com"]);
    // The system administrator reads each tenant's objects in its space: converted by that tenant's webhook.
    let in_a = system.ok(&["get", "--raw", "/clusters/root:t-a/apis/example.com/v2/namespaces/default/things/of-a"]);
    assert!(in_a.contains("\"hostname\":\"a-host\""), "{in_a}");
    let in_b = system.ok(&["get", "--raw", "/clusters/root:t-b/apis/example.com/v2/namespaces/default/things"]);
    assert!(in_b.contains("\"hostname\":\"b-host\"") && !in_b.contains("of-a"), "{in_b}");
    let names = |webhook: &Webhook| -> Vec<String> {
        webhook.requests().iter().flat_map(|r| r["objects"].as_array().cloned().unwrap_or_default())
            .map(|o| o["metadata"]["name"].as_str().unwrap_or_default().to_owned()).collect()
    };
    let (seen_a, seen_b) = (names(&hook_a), names(&hook_b));
    assert!(!seen_a.is_empty() && seen_a.iter().all(|n| n == "of-a"), "t-a's webhook saw {seen_a:?}");
    assert!(!seen_b.is_empty() && seen_b.iter().all(|n| n == "of-b"), "t-b's webhook saw {seen_b:?}");
}

#[test]
fn a_forced_system_crd_converts_every_tenants_objects_with_the_platforms_webhook() {
    let (_server, system, a, b) = server_with_tenants();
    let platform = Webhook::start();
    let mut forced: Value = serde_json::from_str(&crd(webhook_conversion(&platform.url(), &platform.ca_bundle()))).expect("JSON");
    forced["metadata"]["labels"] = json!({"arktos.futurewei.com/crd-sharing-policy": "Forced"});
    system.ok_with_stdin(&["create", "-f", "-"], &forced.to_string());
    let waited = system.ok(&["wait", "--for", "condition=established", &format!("crd/{CRD}"), "--timeout=10s"]);
    assert!(waited.contains("condition met"), "{waited}");
    let served = |kubectl: &Kubectl| eventually_ok(kubectl, &["get", "things.v2.example.com"]);
    assert!(served(&a) && served(&b), "the forced CRD is served to both tenants");
    a.ok_with_stdin(&["create", "-f", "-"], &thing_v2("of-a", "a-host"));
    b.ok_with_stdin(&["create", "-f", "-"], &thing_v2("of-b", "b-host"));
    assert_eq!(get_json(&a, &["things.v1.example.com", "of-a"])["spec"], json!({"host": "a-host"}));
    assert_eq!(get_json(&b, &["things.v2.example.com", "of-b"])["spec"], json!({"hostname": "b-host"}));
    let listed = get_json(&a, &["things.v2.example.com"]);
    let names: Vec<&str> = listed["items"].as_array().expect("items").iter().map(|i| i["metadata"]["name"].as_str().unwrap_or_default()).collect();
    assert_eq!(names, ["of-a"], "{listed}");
    // Each review holds one tenant's objects only, and the platform's webhook is the one called.
    for request in platform.requests() {
        let clusters: std::collections::BTreeSet<String> = request["objects"].as_array().expect("objects").iter()
            .map(|o| o["metadata"]["annotations"]["kcp.io/cluster"].as_str().unwrap_or_default().to_owned()).collect();
        assert_eq!(clusters.len(), 1, "one space per review: {request}");
    }
    let seen: Vec<String> = platform.requests().iter().flat_map(|r| r["objects"].as_array().cloned().unwrap_or_default())
        .map(|o| o["metadata"]["name"].as_str().unwrap_or_default().to_owned()).collect();
    assert!(seen.contains(&"of-a".to_owned()) && seen.contains(&"of-b".to_owned()), "{seen:?}");
}

/// Runs kubectl until it succeeds, for up to 10 s.
fn eventually_ok(kubectl: &Kubectl, args: &[&str]) -> bool {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        if kubectl.run(args).status.success() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

#[test]
fn the_python_client_reads_and_lists_v2_objects() {
    let (server, _system, a, _b) = server_with_tenants();
    let webhook = Webhook::start();
    install(&a, &webhook);
    a.ok_with_stdin(&["create", "-f", "-"], &thing_v2("py", "from-v2"));
    let python = std::env::var_os("KSPACES_PYTHON").filter(|p| !p.is_empty()).map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python"));
    let kubeconfig = certificate_kubeconfig(&server, "t-a", "admin", &[]);
    let script = r#"
import sys
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1])
api = client.CustomObjectsApi()
one = api.get_namespaced_custom_object("example.com", "v2", "default", "things", "py")
assert one["apiVersion"] == "example.com/v2", one
assert one["spec"] == {"hostname": "from-v2"}, one
listed = api.list_namespaced_custom_object("example.com", "v2", "default", "things")
assert [i["spec"] for i in listed["items"]] == [{"hostname": "from-v2"}], listed
old = api.get_namespaced_custom_object("example.com", "v1", "default", "things", "py")
assert old["spec"] == {"host": "from-v2"}, old
print("OK")
"#;
    let output = std::process::Command::new(&python).arg("-c").arg(script).arg(&kubeconfig).env("PYTHONDONTWRITEBYTECODE", "1").output()
        .unwrap_or_else(|e| panic!("could not run {}: {e} (set KSPACES_PYTHON)", python.display()));
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success() && stdout.contains("OK"), "{stdout}\n{stderr}");
}

#[test]
fn a_webhook_that_never_answers_is_a_503_after_kubes_30_seconds_not_a_hang() {
    let (_server, _system, a, _b) = server_with_tenants();
    let webhook = Webhook::start();
    install(&a, &webhook);
    a.ok_with_stdin(&["create", "-f", "-"], &thing_v2("slow", "alpha"));
    webhook.set_mode(Mode::Hang);
    let started = Instant::now();
    let text = a.fails(&["get", "things.v2.example.com", "slow", "--request-timeout=50s"]);
    let took = started.elapsed();
    assert!(text.contains("ServiceUnavailable") && text.contains(&webhook.url()) && text.contains("context deadline exceeded"), "{text}");
    assert!(took >= Duration::from_secs(29) && took < Duration::from_secs(45), "{took:?}");
}
