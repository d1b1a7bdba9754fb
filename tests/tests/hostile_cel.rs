//! A tenant's CEL rules cannot hurt other tenants (issue 44, item 6): a CRD whose `x-kubernetes-validations`
//! rules could cost past kube's static limits is refused when it is written (422, a Forbidden cause at the rule),
//! an object whose rules would cost past kube's runtime budget is refused before they run, and rules that are
//! allowed but costly run off the threads that serve requests, so another tenant's GETs and `/readyz` keep
//! answering. Requests go through curl over HTTP/1.1 and HTTP/2.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use kspaces_tests::{create_tenant, eventually, start_shared_with_tokens, Http, Server};
use serde_json::{json, Value};

/// The system administrator and the admins of tenants t-a (the attacker) and t-b.
const TOKENS: [&str; 3] = ["root-token,root,u-root,\"system:masters\"", "a-token,admin,u-a,\"tenant-admins\",,t-a", "b-token,admin,u-b,\"tenant-admins\",,t-b"];
const CRDS: &str = "/clusters/root:t-a/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const B_CONFIGMAPS: &str = "/clusters/root:t-b/api/v1/namespaces/default/configmaps";
const THREE_ALL: &str = "self.items.all(a, self.items.all(b, self.items.all(c, a + b + c >= 0)))";

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let server = start_shared_with_tokens(&TOKENS);
        create_tenant(&server.kubectl(), "t-a");
        create_tenant(&server.kubectl(), "t-b");
        server
    })
}

/// Sends a request with curl; the status and the body as JSON (a connection that broke: 0).
fn send(http: Http, method: &str, path: &str, token: &str, body: Option<&Value>) -> (u16, Value) {
    let mut command = Command::new("curl");
    command.args(["-sk", "--max-time", "120", "-X", method, "-w", "\n%{http_code}", "-H", &format!("Authorization: Bearer {token}")]);
    command.arg(if http == Http::One { "--http1.1" } else { "--http2" });
    if body.is_some() {
        command.args(["-H", "Content-Type: application/json", "--data-binary", "@-"]);
    }
    command.arg(format!("{}{path}", server().url)).stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = command.spawn().expect("run curl");
    if let (Some(mut stdin), Some(body)) = (child.stdin.take(), body) {
        stdin.write_all(body.to_string().as_bytes()).expect("write the body");
    }
    let output = child.wait_with_output().expect("curl's output");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), serde_json::from_str(body).unwrap_or_else(|_| Value::String(body.to_owned())))
}

/// A namespaced CRD `<plural>.cel.example.io` whose `spec` carries `rules` and a list `items` of `items`.
fn crd(plural: &str, list: Value, rules: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.cel.example.io")},
        "spec": {"group": "cel.example.io", "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind(plural)},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-validations": rules, "properties": {"items": list}}}}}}]}})
}

fn kind(plural: &str) -> String {
    let mut kind: String = plural.trim_end_matches('s').to_owned();
    kind[..1].make_ascii_uppercase();
    kind
}

fn ints(max_items: Option<u64>) -> Value {
    let mut list = json!({"type": "array", "items": {"type": "integer"}});
    if let Some(max) = max_items {
        list["maxItems"] = json!(max);
    }
    list
}

/// Creates a CRD in t-a as its admin and waits until it is served.
fn create_crd(crd: &Value) {
    let (code, body) = send(Http::One, "POST", CRDS, "a-token", Some(crd));
    assert_eq!(code, 201, "{body}");
    let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
    assert!(eventually(Duration::from_secs(20), || send(Http::One, "GET", &objects(plural), "a-token", None).0 == 200), "{plural} is served");
}

fn objects(plural: &str) -> String {
    format!("/clusters/root:t-a/apis/cel.example.io/v1/namespaces/default/{plural}")
}

fn object(plural: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": "cel.example.io/v1", "kind": kind(plural), "metadata": {"name": name}, "spec": spec})
}

fn assert_ready(context: &str) {
    for http in [Http::One, Http::Two] {
        let (code, body) = send(http, "GET", "/readyz", "b-token", None);
        assert_eq!(code, 200, "not ready after {context}: {body}");
    }
}

#[test]
fn a_crd_with_nested_rules_over_an_unbounded_list_is_refused() {
    let field = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule";
    for (http, plural) in [(Http::One, "unboundeds"), (Http::Two, "unboundedtwos")] {
        let (code, body) = send(http, "POST", CRDS, "a-token", Some(&crd(plural, ints(None), json!([{"rule": THREE_ALL}]))));
        assert_eq!((code, body["kind"].as_str(), body["reason"].as_str()), (422, Some("Status"), Some("Invalid")), "{http:?}: {body}");
        let causes = body["details"]["causes"].as_array().cloned().unwrap_or_default();
        let cause = causes.iter().find(|c| c["field"] == field).unwrap_or_else(|| panic!("{http:?}: no cause at {field}: {body}"));
        assert_eq!(cause["reason"], "FieldValueForbidden", "{body}");
        let message = cause["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength"),
            "{message}");
        assert!(causes.iter().any(|c| c["field"] == "spec.versions[0].schema.openAPIV3Schema"
            && c["message"].as_str().is_some_and(|m| m.contains("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget"))), "{body}");
        assert_ready("the refused CRD");
    }
}

#[test]
fn the_same_rules_over_a_bounded_list_are_accepted_and_run() {
    create_crd(&crd("boundeds", ints(Some(10)), json!([{"rule": THREE_ALL, "message": "sums must not be negative"}])));
    let (code, body) = send(Http::Two, "POST", &objects("boundeds"), "a-token", Some(&object("boundeds", "fine", json!({"items": [1, 2, 3]}))));
    assert_eq!(code, 201, "{body}");
    let (code, body) = send(Http::One, "POST", &objects("boundeds"), "a-token", Some(&object("boundeds", "negative", json!({"items": [1, -5]}))));
    assert_eq!(code, 422, "{body}");
    assert!(body["message"].as_str().is_some_and(|m| m.contains("sums must not be negative")), "{body}");
}

#[test]
fn an_object_past_the_runtime_budget_is_refused_quickly() {
    // A million pairs at most: within the static limit, past kube's per-call limit on a full list.
    create_crd(&crd("pairs", ints(Some(1000)), json!([{"rule": "self.items.all(a, self.items.all(b, a + b != -1))"}])));
    let full = object("pairs", "full", json!({"items": (0..1000).collect::<Vec<i64>>()}));
    for http in [Http::One, Http::Two] {
        let started = Instant::now();
        let (code, body) = send(http, "POST", &objects("pairs"), "a-token", Some(&full));
        assert_eq!((code, body["reason"].as_str()), (422, Some("Invalid")), "{http:?}: {body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.contains("spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: "),
            "{message}");
        // A bound that detects the rule running, not a performance target.
        assert!(started.elapsed() < Duration::from_secs(10), "{http:?}: refused after {:?}", started.elapsed());
    }
    let (code, body) = send(Http::One, "POST", &objects("pairs"), "a-token", Some(&object("pairs", "small", json!({"items": [1, 2]}))));
    assert_eq!(code, 201, "{body}");
    assert_ready("the refused object");
}

#[test]
fn costly_rules_do_not_hold_the_threads_that_serve_other_tenants() {
    // Each item's rule walks its own list's pairs; 15 such items: within every budget, about a second of CPU
    // per object.
    let inner = json!({"type": "array", "maxItems": 300, "items": {"type": "integer"},
        "x-kubernetes-validations": [{"rule": "self.all(a, self.all(b, a + b != -1))"}]});
    create_crd(&crd("heavies", json!({"type": "array", "maxItems": 15, "items": inner}), json!([{"rule": "has(self.items)"}])));
    let heavy = object("heavies", "heavy", json!({"items": vec![(0..300).collect::<Vec<i64>>(); 15]}));
    let dry_run = format!("{}?dryRun=All", objects("heavies"));
    let started = Instant::now();
    let (code, body) = send(Http::One, "POST", &dry_run, "a-token", Some(&heavy));
    assert_eq!(code, 201, "the costly object is valid: {body}");
    eprintln!("one costly object: {:?}", started.elapsed());
    // t-a keeps more costly objects coming than there are serving threads (and fewer than the seats tenants
    // share) while t-b reads.
    let until = Instant::now() + Duration::from_secs(8);
    let attackers: Vec<_> = (0..3)
        .map(|_| {
            let (heavy, dry_run) = (heavy.clone(), dry_run.clone());
            std::thread::spawn(move || {
                let mut answers = Vec::new();
                while Instant::now() < until {
                    answers.push(send(Http::One, "POST", &dry_run, "a-token", Some(&heavy)).0);
                }
                answers
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let mut waits = Vec::new();
    while Instant::now() + Duration::from_secs(1) < until {
        for http in [Http::One, Http::Two] {
            let started = Instant::now();
            let (code, body) = send(http, "GET", B_CONFIGMAPS, "b-token", None);
            assert_eq!(code, 200, "{http:?}: {body}");
            waits.push(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_ready("costly rules running");
    for attacker in attackers {
        let answers = attacker.join().expect("the attacker's thread");
        assert!(answers.iter().all(|code| *code == 201), "{answers:?}");
    }
    waits.sort();
    eprintln!("t-b's GETs: {:?} to {:?} ({} of them)", waits[0], waits[waits.len() - 1], waits.len());
    // A bound that detects a GET waiting for an object's rules (a second each), not a performance target.
    assert!(waits[waits.len() - 1] < Duration::from_secs(1), "t-b waited {:?} while t-a's rules ran", waits[waits.len() - 1]);
}

#[test]
fn a_rule_constructing_a_message_is_refused_at_the_crd_not_a_500_at_each_object() {
    let field = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule";
    for (http, plural) in [(Http::One, "constructs"), (Http::Two, "constructtwos")] {
        let rules = json!([{"rule": "self.items.all(i, Object{a: i}.a >= 0)"}]);
        let (code, body) = send(http, "POST", CRDS, "a-token", Some(&crd(plural, ints(Some(5)), rules)));
        assert_eq!((code, body["reason"].as_str()), (422, Some("Invalid")), "{http:?}: {body}");
        let causes = body["details"]["causes"].as_array().cloned().unwrap_or_default();
        let cause = causes.iter().find(|c| c["field"] == field).unwrap_or_else(|| panic!("{http:?}: no cause at {field}: {body}"));
        assert!(cause["message"].as_str().is_some_and(|m| m.contains("undeclared reference to 'Object'")), "{body}");
        assert_ready("the refused CRD");
    }
}
