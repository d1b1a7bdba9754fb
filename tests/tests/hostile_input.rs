//! Tenants cannot hurt each other or the server (issue 44), on one shared server: documents nested past what the
//! store can read back (through every verb, and a JSON patch doubling its depth with `copy`), JSON patches past
//! kube's operation and copy bounds, watch and list options at their integer limits, a client certificate sent
//! with a bad bearer token, `Impersonate-*` headers that are not UTF-8, and server-owned annotations. Every attack
//! is refused with a Kubernetes `Status` (never a 500 or a reset connection) and the server still answers
//! `/readyz` after it. Requests go through curl over HTTP/1.1 and HTTP/2.

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use kspaces_tests::{create_tenant, eventually, start_shared_with_tokens, Http, Server};
use serde_json::{json, Value};

/// The system administrator, t-a's `admin` (every verb in its tenant) and t-a's `carol` (kube's `admin` role in
/// `default`).
const TOKENS: [&str; 3] = ["root-token,root,u-root,\"system:masters\"", "a-token,admin,u-a,\"tenant-admins\",,t-a", "carol-token,carol,u-carol,\"\",,t-a"];
const THINGS: &str = "/clusters/root:t-a/apis/hostile.example.io/v1/namespaces/default/things";
const CONFIGMAPS: &str = "/clusters/root:t-a/api/v1/namespaces/default/configmaps";
const JSON_PATCH: &str = "application/json-patch+json";
const MERGE_PATCH: &str = "application/merge-patch+json";
const STRATEGIC_PATCH: &str = "application/strategic-merge-patch+json";
const APPLY_PATCH: &str = "application/apply-patch+yaml";

const THINGS_CRD: &str = r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "things.hostile.example.io"},
  "spec": {"group": "hostile.example.io", "scope": "Namespaced",
    "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}"#;

/// The file's one server: tenant t-a with the CRD `things.hostile.example.io` (any JSON under `spec`).
fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let server = start_shared_with_tokens(&TOKENS);
        create_tenant(&server.kubectl(), "t-a");
        kspaces_tests::grant(&server.kubectl(), "t-a", "default", "admin", "carol");
        let (code, body) = send(&server, Http::One, &Request::new("POST", "/clusters/root:t-a/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
            .token("root-token").body("application/json", THINGS_CRD));
        assert_eq!(code, 201, "{body}");
        assert!(eventually(Duration::from_secs(20), || send(&server, Http::One, &Request::new("GET", THINGS).token("a-token")).0 == 200),
            "the CRD is served");
        server
    })
}

/// One request as curl sends it.
struct Request<'a> {
    method: &'a str,
    path: String,
    token: Option<&'a str>,
    headers: Vec<Vec<u8>>,
    body: Option<(&'a str, Vec<u8>)>,
    certificate: Option<(&'a std::path::Path, &'a std::path::Path)>,
}

impl<'a> Request<'a> {
    fn new(method: &'a str, path: impl Into<String>) -> Request<'a> {
        Request { method, path: path.into(), token: None, headers: Vec::new(), body: None, certificate: None }
    }

    fn token(mut self, token: &'a str) -> Request<'a> {
        self.token = Some(token);
        self
    }

    fn header(mut self, header: &[u8]) -> Request<'a> {
        self.headers.push(header.to_vec());
        self
    }

    fn body(mut self, content_type: &'a str, body: impl Into<Vec<u8>>) -> Request<'a> {
        self.body = Some((content_type, body.into()));
        self
    }
}

/// Sends `request`; the status and the body as JSON (a non-JSON body as a string; a connection that broke, 0).
fn send(server: &Server, http: Http, request: &Request) -> (u16, Value) {
    let mut command = Command::new("curl");
    command.args(["-sk", "--path-as-is", "--max-time", "60", "-X", request.method, "-w", "\n%{http_code}"]);
    command.arg(if http == Http::One { "--http1.1" } else { "--http2" });
    if let Some(token) = request.token {
        command.args(["-H", &format!("Authorization: Bearer {token}")]);
    }
    for header in &request.headers {
        command.arg("-H").arg(OsStr::from_bytes(header));
    }
    if let Some((certificate, key)) = request.certificate {
        command.arg("--cert").arg(certificate).arg("--key").arg(key);
    }
    if let Some((content_type, _)) = &request.body {
        command.args(["-H", &format!("Content-Type: {content_type}"), "--data-binary", "@-"]);
    }
    command.arg(format!("{}{}", server.url, request.path)).stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = command.spawn().expect("run curl");
    if let Some(mut stdin) = child.stdin.take() {
        if let Some((_, body)) = &request.body {
            stdin.write_all(body).expect("write the body");
        }
    }
    let output = child.wait_with_output().expect("curl's output");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), serde_json::from_str(body).unwrap_or_else(|_| Value::String(body.to_owned())))
}

/// Sends `request` over HTTP/1.1 and HTTP/2, checks both answers are the same Status (`code`, `reason`, a message
/// containing `needle`) and that the server is still ready.
fn refused(request: &Request, code: u16, reason: &str, needle: &str) {
    for http in [Http::One, Http::Two] {
        let (got, body) = send(server(), http, request);
        let context = format!("{} {} over {http:?}", request.method, request.path);
        assert_eq!((got, body["kind"].as_str(), body["code"].as_u64()), (code, Some("Status"), Some(u64::from(code))), "{context}: {body}");
        assert_eq!(body["reason"], reason, "{context}: {body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.contains(needle), "{context}: {message:?} lacks {needle:?}");
        assert_ready(&context);
    }
}

fn assert_ready(context: &str) {
    let (code, body) = send(server(), Http::Two, &Request::new("GET", "/readyz"));
    assert_eq!(code, 200, "the server is not ready after {context}: {body}");
}

/// `{"a": {"a": ... {} ...}}`, `levels` objects deep.
fn nested(levels: usize) -> Value {
    (1..levels).fold(json!({}), |inner, _| json!({ "a": inner }))
}

fn thing(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "hostile.example.io/v1", "kind": "Thing", "metadata": {"name": name}, "spec": spec})
}

fn create_thing(name: &str, spec: Value) {
    let (code, body) = send(server(), Http::One, &Request::new("POST", THINGS).token("a-token").body("application/json", thing(name, spec).to_string()));
    assert_eq!(code, 201, "{body}");
}

// ---- Item 1 and 2: nothing deeper than the store reads back is stored, through any verb ----

#[test]
fn a_json_patch_doubling_its_depth_with_copy_is_refused_and_the_server_lives() {
    create_thing("doubling", json!({"x": {"a": {}}}));
    // Each `copy` puts the whole of `/spec/x` inside its own innermost object: 14 of them nest 2^15 levels.
    let mut operations = Vec::new();
    let mut chain = 1usize;
    for _ in 0..14 {
        operations.push(json!({"op": "copy", "from": "/spec/x", "path": format!("/spec/x{}", "/a".repeat(chain + 1))}));
        chain = 2 * chain + 1;
    }
    let patch = Value::Array(operations).to_string();
    let path = format!("{THINGS}/doubling");
    refused(&Request::new("PATCH", path.as_str()).token("a-token").body(JSON_PATCH, patch), 422, "Invalid",
        "nest deeper than the limit of 100 levels");
    let (code, stored) = send(server(), Http::One, &Request::new("GET", path).token("a-token"));
    assert_eq!((code, &stored["spec"]), (200, &json!({"x": {"a": {}}})), "the object is unchanged");
}

#[test]
fn no_verb_stores_an_object_deeper_than_the_store_reads_back() {
    create_thing("deep", json!({}));
    let path = format!("{THINGS}/deep");
    let too_deep = nested(100);
    let needle = "is invalid: spec: Invalid value: the object nests deeper than the limit of 100 levels";
    let create = thing("deeper", too_deep.clone()).to_string();
    refused(&Request::new("POST", THINGS).token("a-token").body("application/json", create), 422, "Invalid", needle);
    let update = thing("deep", too_deep.clone()).to_string();
    refused(&Request::new("PUT", path.as_str()).token("a-token").body("application/json", update), 422, "Invalid", needle);
    let merge = json!({"spec": too_deep}).to_string();
    refused(&Request::new("PATCH", path.as_str()).token("a-token").body(MERGE_PATCH, merge.clone()), 422, "Invalid", needle);
    let add = json!([{"op": "add", "path": "/spec/a", "value": nested(99)}]).to_string();
    refused(&Request::new("PATCH", path.as_str()).token("a-token").body(JSON_PATCH, add), 422, "Invalid", "the limit of 100 levels");
    let apply = thing("deep", nested(100)).to_string();
    // An apply's YAML decoder stops at 64 levels.
    refused(&Request::new("PATCH", format!("{path}?fieldManager=t")).token("a-token").body(APPLY_PATCH, apply), 400, "BadRequest", "budget breached");
    // Built-in kinds take a strategic merge patch (a ConfigMap's data are strings).
    let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "deep"}}).to_string();
    assert_eq!(send(server(), Http::One, &Request::new("POST", CONFIGMAPS).token("a-token").body("application/json", configmap)).0, 201);
    let strategic = json!({"data": nested(100)}).to_string();
    refused(&Request::new("PATCH", format!("{CONFIGMAPS}/deep")).token("a-token").body(STRATEGIC_PATCH, strategic), 400, "BadRequest",
        "cannot be handled as a ConfigMap");
    // A body past serde_json's own limit is not JSON at all.
    let body = thing("deepest", nested(200)).to_string();
    refused(&Request::new("POST", THINGS).token("a-token").body("application/json", body), 400, "BadRequest", "recursion limit exceeded");
    // At the limit, an object is stored and read back (its managedFields nest a few levels deeper than it).
    create_thing("at-the-limit", nested(90));
    let (code, list) = send(server(), Http::Two, &Request::new("GET", THINGS).token("a-token"));
    assert_eq!(code, 200, "{list}");
}

// ---- Item 3: JSON patch amplification ----

#[test]
fn json_patches_past_kubes_operation_and_copy_bounds_are_refused() {
    create_thing("amplified", json!({"blob": "x".repeat(512 * 1024)}));
    let path = format!("{THINGS}/amplified");
    let tests: Vec<Value> = (0..10_001).map(|_| json!({"op": "test", "path": "/kind", "value": "Thing"})).collect();
    refused(&Request::new("PATCH", path.as_str()).token("a-token").body(JSON_PATCH, Value::Array(tests).to_string()), 413,
        "RequestEntityTooLarge", "The allowed maximum operations in a JSON patch is 10000, got 10001");
    let copies: Vec<Value> = (0..7).map(|i| json!({"op": "copy", "from": "/spec/blob", "path": format!("/spec/c{i}")})).collect();
    refused(&Request::new("PATCH", path.as_str()).token("a-token").body(JSON_PATCH, Value::Array(copies).to_string()), 422,
        "Invalid", "exceeding the limit 3145728");
    let copies: Vec<Value> = (0..4).map(|i| json!({"op": "copy", "from": "/spec/blob", "path": format!("/spec/c{i}")})).collect();
    let (code, body) = send(server(), Http::One, &Request::new("PATCH", path).token("a-token").body(JSON_PATCH, Value::Array(copies).to_string()));
    assert_eq!(code, 200, "four copies of 512 KiB are within the bound: {}", body["message"]);
}

// ---- Item 4: watch and list options at their integer limits ----

/// The status of a request whose answer is a stream curl gives up on after `seconds` (0: nothing came).
fn status_of_stream(http: Http, path: &str, seconds: u32) -> u16 {
    let output = Command::new("curl")
        .args(["-sk", "--max-time", &seconds.to_string(), "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer a-token"])
        .arg(if http == Http::One { "--http1.1" } else { "--http2" })
        .arg(format!("{}{path}", server().url))
        .output()
        .expect("run curl");
    String::from_utf8_lossy(&output.stdout).trim().parse().unwrap_or(0)
}

#[test]
fn the_largest_timeout_seconds_and_limit_are_clamped_not_500s() {
    let huge = i64::MAX;
    for http in [Http::One, Http::Two] {
        for path in [format!("{THINGS}?watch=1&timeoutSeconds={huge}"), format!("{CONFIGMAPS}?watch=true&timeoutSeconds={huge}&limit={huge}"),
            format!("/clusters/root:t-a/api/v1/configmaps?watch=1&timeoutSeconds={huge}")] {
            assert_eq!(status_of_stream(http, &path, 2), 200, "{path} over {http:?}");
            assert_ready(&path);
        }
        for path in [format!("{THINGS}?timeoutSeconds={huge}&limit={huge}"), format!("{CONFIGMAPS}?limit={huge}&timeoutSeconds={huge}")] {
            let (code, list) = send(server(), http, &Request::new("GET", path.as_str()).token("a-token"));
            assert_eq!((code, list["kind"].as_str().is_some_and(|kind| kind.ends_with("List"))), (200, true), "{path}: {list}");
        }
    }
}

// ---- Item 5: a client certificate with a bad bearer token ----

/// t-a's `admin` as a client certificate and key (files under `dir`), from the server's kubeconfig command.
fn admin_certificate(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    use base64::Engine;
    let kubeconfig = std::fs::read_to_string(kspaces_tests::certificate_kubeconfig(server(), "t-a", "admin", &[])).expect("read the kubeconfig");
    let field = |name: &str| {
        let line = kubeconfig.lines().find_map(|line| line.trim().strip_prefix(name)).unwrap_or_else(|| panic!("{name} in {kubeconfig}"));
        base64::engine::general_purpose::STANDARD.decode(line.trim()).expect("base64")
    };
    let (certificate, key) = (dir.join("admin.crt"), dir.join("admin.key"));
    std::fs::write(&certificate, field("client-certificate-data:")).expect("write the certificate");
    std::fs::write(&key, field("client-key-data:")).expect("write the key");
    (certificate, key)
}

#[test]
fn a_client_certificate_wins_over_a_bad_bearer_token() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (certificate, key) = admin_certificate(dir.path());
    for http in [Http::One, Http::Two] {
        let mut request = Request::new("GET", CONFIGMAPS).header(b"Authorization: Bearer xyz");
        request.certificate = Some((&certificate, &key));
        let (code, list) = send(server(), http, &request);
        assert_eq!((code, &list["kind"]), (200, &json!("ConfigMapList")), "the certificate's user over {http:?}: {list}");
        let who = Request { certificate: Some((&certificate, &key)), ..Request::new("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews")
            .header(b"Authorization: Bearer xyz").body("application/json", r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#) };
        let (code, review) = send(server(), http, &who);
        assert_eq!((code, &review["status"]["userInfo"]["username"]), (201, &json!("admin")), "{review}");
    }
    refused(&Request::new("GET", CONFIGMAPS).header(b"Authorization: Bearer xyz"), 401, "Unauthorized", "Unauthorized");
}

// ---- Item 6: Impersonate-* headers that are not UTF-8 ----

#[test]
fn impersonation_headers_that_are_not_utf8_are_refused_not_ignored() {
    for header in [&b"Impersonate-User: \xff\xfe"[..], b"Impersonate-Uid: \xff\xfe", b"Impersonate-Extra-scopes: \xc3\x28"] {
        let mut request = Request::new("GET", CONFIGMAPS).token("a-token").header(header);
        if !header.starts_with(b"Impersonate-User") {
            request = request.header(b"Impersonate-User: carol");
        }
        refused(&request, 400, "BadRequest", "header is not valid UTF-8");
    }
    refused(&Request::new("GET", CONFIGMAPS).token("a-token").header(b"Impersonate-User: carol").header(b"Impersonate-Group: \xff"),
        400, "BadRequest", "impersonate-group header is not valid UTF-8");
    refused(&Request::new("GET", CONFIGMAPS).token("a-token").header(b"Impersonate-User: carol").header(b"Impersonate-Extra-%FF: x"),
        400, "BadRequest", "header is not valid UTF-8");
}

// ---- Item 7: server-owned annotations ----

const LOGICAL_CLUSTER: &str = "/clusters/root:t-a/apis/core.kcp.io/v1alpha1/logicalclusters/cluster";

fn annotations_patch(annotations: Value) -> String {
    json!({"metadata": {"annotations": annotations}}).to_string()
}

#[test]
fn server_owned_annotations_are_the_servers_on_every_kind() {
    let (code, cluster) = send(server(), Http::One, &Request::new("GET", LOGICAL_CLUSTER).token("a-token"));
    assert_eq!(code, 200, "{cluster}");
    let annotations = cluster["metadata"]["annotations"].clone();
    assert_eq!(annotations["kcp.io/path"], "root:t-a", "{cluster}");
    for (key, value) in [("kcp.io/path", "root:t-b"), ("internal.tenancy.kcp.io/type", "universal"), ("internal.tenancy.kcp.io/new", "x")] {
        refused(&Request::new("PATCH", LOGICAL_CLUSTER).token("a-token").body(MERGE_PATCH, annotations_patch(json!({key: value}))),
            403, "Forbidden", &format!("the annotation {key} is set by the system"));
    }
    // What the tenant may change still changes, and a round trip of the object as read is no change of them.
    let (code, patched) = send(server(), Http::One, &Request::new("PATCH", LOGICAL_CLUSTER).token("a-token")
        .body(MERGE_PATCH, json!({"spec": {"crdPolicy": "LocalCRDFirst"}, "metadata": {"annotations": {"mine": "yes"}}}).to_string()));
    assert_eq!((code, &patched["metadata"]["annotations"]["kcp.io/path"]), (200, &json!("root:t-a")), "{patched}");
    let mut replaced = patched.clone();
    replaced["metadata"]["annotations"] = json!({"mine": "still"});
    let (code, replaced) = send(server(), Http::Two, &Request::new("PUT", LOGICAL_CLUSTER).token("a-token").body("application/json", replaced.to_string()));
    assert_eq!(code, 200, "a PUT leaving the server's annotations out keeps them: {replaced}");
    assert_eq!(replaced["metadata"]["annotations"]["kcp.io/path"], annotations["kcp.io/path"], "{replaced}");
    assert_eq!(replaced["metadata"]["annotations"]["internal.tenancy.kcp.io/type"], annotations["internal.tenancy.kcp.io/type"]);
    let (code, same) = send(server(), Http::One, &Request::new("PUT", LOGICAL_CLUSTER).token("a-token").body("application/json", replaced.to_string()));
    assert_eq!(code, 200, "{same}");
    // kubectl apply of the object as read, twice (the second a three-way patch from its last-applied configuration).
    let url = format!("{}/clusters/root:t-a", server().url);
    let tenant = kspaces_tests::Kubectl::new(&kspaces_tests::token_kubeconfig_for_url(server(), "a-token", &url));
    let read = tenant.ok(&["get", "logicalclusters.core.kcp.io", "cluster", "-o", "json"]);
    tenant.ok_with_stdin(&["apply", "-f", "-"], &read);
    let read = tenant.ok(&["get", "logicalclusters.core.kcp.io", "cluster", "-o", "json"]);
    tenant.ok_with_stdin(&["apply", "-f", "-"], &read);
    let read = tenant.ok(&["get", "logicalclusters.core.kcp.io", "cluster", "-o", "json"]);
    let spoofed = read.replace("\"kcp.io/path\": \"root:t-a\"", "\"kcp.io/path\": \"root:t-b\"");
    assert_ne!(spoofed, read, "{read}");
    let stderr = tenant.fails_with_stdin(&["apply", "-f", "-"], &spoofed);
    assert!(stderr.contains("(Forbidden)") && stderr.contains("the annotation kcp.io/path is set by the system"), "{stderr}");
    // No kind takes a spoofed one from a tenant.
    let export = json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
        "metadata": {"name": "spoofed", "annotations": {"kcp.io/path": "root:t-b"}}, "spec": {}});
    refused(&Request::new("POST", "/clusters/root:t-a/apis/apis.kcp.io/v1alpha1/apiexports").token("a-token").body("application/json", export.to_string()),
        403, "Forbidden", "the annotation kcp.io/path is set by the system");
    let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "spoofed", "annotations": {"internal.apis.kcp.io/x": "y"}}});
    refused(&Request::new("POST", CONFIGMAPS).token("a-token").body("application/json", configmap.to_string()),
        403, "Forbidden", "the annotation internal.apis.kcp.io/x is set by the system");
    // A system user may.
    let (code, body) = send(server(), Http::One, &Request::new("POST", CONFIGMAPS).token("root-token").body("application/json", configmap.to_string()));
    assert_eq!(code, 201, "{body}");
    let (code, body) = send(server(), Http::One, &Request::new("PATCH", format!("{CONFIGMAPS}/spoofed")).token("a-token")
        .body(MERGE_PATCH, json!({"data": {"k": "v"}}).to_string()));
    assert_eq!((code, &body["metadata"]["annotations"]["internal.apis.kcp.io/x"]), (200, &json!("y")), "{body}");
}

// ---- Item 2: deleting an object the store cannot read (the corrupt case itself is a registry unit test) ----

#[test]
fn ignoring_store_read_errors_needs_its_own_verb_and_goes_alone() {
    for name in ["unsafe-a", "unsafe-b", "unsafe-c"] {
        let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
        assert_eq!(send(server(), Http::One, &Request::new("POST", CONFIGMAPS).token("a-token").body("application/json", configmap.to_string())).0, 201);
    }
    let option = "ignoreStoreReadErrorWithClusterBreakingPotential";
    refused(&Request::new("DELETE", format!("{CONFIGMAPS}/unsafe-a?{option}=true")).token("carol-token"), 403, "Forbidden",
        "cannot unsafe-delete-ignore-read-errors resource \"configmaps\"");
    refused(&Request::new("DELETE", format!("{CONFIGMAPS}/unsafe-a?{option}=true&dryRun=All")).token("root-token"), 422, "Invalid",
        &format!("dryRun: Forbidden: cannot be set together with {option}"));
    let body = json!({"kind": "DeleteOptions", "apiVersion": "v1", option: true, "gracePeriodSeconds": 5}).to_string();
    refused(&Request::new("DELETE", format!("{CONFIGMAPS}/unsafe-a")).token("root-token").body("application/json", body), 422, "Invalid",
        "gracePeriodSeconds: Forbidden");
    refused(&Request::new("DELETE", format!("{CONFIGMAPS}?{option}=true")).token("root-token"), 400, "BadRequest", "not supported when deleting a collection");
    // A system user's unsafe delete of a readable object is an ordinary delete.
    let (code, status) = send(server(), Http::Two, &Request::new("DELETE", format!("{CONFIGMAPS}/unsafe-a?{option}=true")).token("root-token"));
    assert_eq!((code, &status["status"]), (200, &json!("Success")), "{status}");
    let body = json!({"kind": "DeleteOptions", "apiVersion": "v1", option: true}).to_string();
    let (code, status) = send(server(), Http::One, &Request::new("DELETE", format!("{CONFIGMAPS}/unsafe-b")).token("root-token").body("application/json", body));
    assert_eq!((code, &status["status"]), (200, &json!("Success")), "{status}");
    assert_eq!(send(server(), Http::One, &Request::new("GET", format!("{CONFIGMAPS}/unsafe-b")).token("a-token")).0, 404);
}

/// Issue 44 (4): one HTTP/2 connection may have at most 100 streams open at once, kube-apiserver's limit: the
/// server says so in its first SETTINGS frame (read raw by `tests/python/h2_settings.py`), and 300 requests multiplexed on one connection are all answered
/// (the extra ones wait for a stream) while the server stays ready.
#[test]
fn an_http2_connection_has_at_most_kubes_100_streams() {
    let server = server();
    let port = server.url.rsplit(':').next().expect("a port");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/h2_settings.py");
    let python = std::env::var("KSPACES_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let settings = Command::new(python).arg(script).args(["127.0.0.1", port]).output().expect("run python");
    let said = String::from_utf8_lossy(&settings.stdout);
    assert!(said.lines().any(|l| l == "MAX_CONCURRENT_STREAMS=100"), "the server's SETTINGS: {said} {}", String::from_utf8_lossy(&settings.stderr));
    // Each URL with its own `-o /dev/null`: curl writes each answer to the output named before it.
    let urls: Vec<String> = (0..300).flat_map(|_| ["-o".to_owned(), "/dev/null".to_owned(), format!("{}/readyz", server.url)]).collect();
    let many = Command::new("curl")
        .args(["-sk", "--http2", "--parallel", "--parallel-max", "300", "-w", "%{http_code}\n",
            "-H", "Authorization: Bearer root-token"])
        .args(&urls)
        .output()
        .expect("run curl");
    let codes = String::from_utf8_lossy(&many.stdout);
    assert_eq!(codes.lines().filter(|code| *code == "200").count(), 300, "every multiplexed request answered: {codes}");
    assert_ready("after 300 multiplexed requests");
}
