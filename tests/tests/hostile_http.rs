//! Tenants cannot hurt each other through HTTP itself (issue 44, items 5 and 8): request bodies sent a byte at a
//! time hold no seat other tenants wait for and end at `--request-timeout` with kube's 504, and request heads are
//! read up to kube's 1 MiB (over HTTP/1.1 and HTTP/2), past which the answer is 431 with a Kubernetes `Status`.
//! Requests are raw bytes from `tests/python/` (curl and the usual clients stop at their own limits first) and
//! curl; the server answers `/readyz` after each attack.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

use kspaces_tests::{create_tenant, curl, grant, token_file, Http, Server};
use serde_json::Value;

/// The system administrator, and the `admin` of `default` in tenants t-a and t-b.
const TOKENS: [&str; 3] = ["root-token,root,u-root,\"system:masters\"", "a-token,alice,u-a,\"\",,t-a", "b-token,bob,u-b,\"\",,t-b"];
/// The test's `--request-timeout`, short so that a slow body reaches it soon.
const REQUEST_TIMEOUT: &str = "6s";
const REQUEST_TIMEOUT_SECONDS: f64 = 6.0;

/// The file's one server: tenants t-a and t-b, each with an admin of its `default` namespace.
fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let (_, tokens) = token_file(&TOKENS).keep().expect("keep the token file");
        let server = Server::start_with(&["--token-auth-file", tokens.to_str().expect("utf-8 temp path"), "--request-timeout", REQUEST_TIMEOUT]);
        server.stop_when_tests_end(&[&tokens]);
        for (tenant, user) in [("t-a", "alice"), ("t-b", "bob")] {
            create_tenant(&server.kubectl(), tenant);
            grant(&server.kubectl(), tenant, "default", "admin", user);
        }
        server
    })
}

fn port() -> &'static str {
    server().url.rsplit(':').next().expect("a port")
}

fn python(script: &str) -> Command {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python").join(script);
    let mut command = Command::new(std::env::var("KSPACES_PYTHON").unwrap_or_else(|_| "python3".to_owned()));
    command.arg(path);
    command
}

fn assert_ready(context: &str) {
    let (code, body) = curl(server(), Http::Two, None, "GET", "/readyz", None);
    assert_eq!(code, 200, "the server is not ready after {context}: {body}");
}

/// `GET /readyz` with `count` headers of `size` bytes each, over raw HTTP/1.1 (`h1`) or HTTP/2 (`h2`): the status
/// (0 when there was none) and the body.
fn large_head(protocol: &str, count: usize, size: usize) -> (u16, String) {
    let output = python("raw_head.py").args(["127.0.0.1", port(), protocol, &count.to_string(), &size.to_string()]).output().expect("run python");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (status, body) = text.split_once('\n').unwrap_or((&text, ""));
    let status = status.trim().parse().unwrap_or_else(|_| panic!("raw_head.py: {text} {}", String::from_utf8_lossy(&output.stderr)));
    (status, body.trim().to_owned())
}

/// Issue 44 (8): heads up to kube's 1 MiB are read whatever their number of headers, over HTTP/1.1 and HTTP/2 (which
/// advertises the limit in its SETTINGS).
#[test]
fn request_heads_up_to_a_mebibyte_are_read() {
    for protocol in ["h1", "h2"] {
        for (count, size) in [(200, 4_600), (16_000, 1)] {
            let answer = large_head(protocol, count, size);
            assert_eq!(answer, (200, "ok".to_owned()), "{count} headers of {size} bytes over {protocol}");
            assert_ready(&format!("{count} headers over {protocol}"));
        }
    }
    let settings = python("h2_settings.py").args(["127.0.0.1", port()]).output().expect("run python");
    let said = String::from_utf8_lossy(&settings.stdout);
    assert!(said.lines().any(|l| l == "MAX_HEADER_LIST_SIZE=1048896"), "the server's SETTINGS: {said}");
}

/// Issue 44 (8): past 1 MiB (or 16,384 headers) a head is answered 431 with a Kubernetes `Status` over HTTP/1.1,
/// and 431 (or, far past it, GOAWAY: h2's guard against header floods) over HTTP/2; the server stays ready.
#[test]
fn request_heads_past_a_mebibyte_are_431_with_a_status() {
    for (count, size) in [(440, 4_600), (17_000, 1)] {
        let (code, body) = large_head("h1", count, size);
        let status: Value = serde_json::from_str(&body).unwrap_or_else(|_| panic!("a Status body for {count} headers: {body:?}"));
        assert_eq!((code, status["kind"].as_str(), status["code"].as_u64()), (431, Some("Status"), Some(431)), "{status}");
        assert_eq!(status["reason"], "RequestHeaderFieldsTooLarge", "{status}");
        assert!(status["message"].as_str().unwrap_or_default().contains("1048576 bytes"), "{status}");
        assert_ready(&format!("{count} headers over HTTP/1.1"));
    }
    assert_eq!(large_head("h2", 240, 4_600).0, 431, "1.1 MB of headers over HTTP/2");
    assert_ready("1.1 MB of headers over HTTP/2");
    let (code, body) = large_head("h2", 440, 4_600);
    assert_eq!(code, 0, "2 MB of headers over HTTP/2 end the connection: {body}");
    assert_ready("2 MB of headers over HTTP/2");
}

/// Issue 44 (5): tenant t-a's 60 POSTs sending their bodies a byte a second hold no seat of the priority level
/// tenant users share: tenant t-b's requests are answered meanwhile (not queued into a 429). Each slow body ends
/// at `--request-timeout` with kube's 504 `Timeout` Status, and the server is ready after.
#[test]
fn slow_bodies_hold_no_seat_and_end_at_the_request_timeout() {
    let server = server();
    let path = "/api/v1/namespaces/default/configmaps";
    let mut slow = python("slow_bodies.py")
        .args(["127.0.0.1", port(), "a-token", path, "60", &(REQUEST_TIMEOUT_SECONDS * 3.0).to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("run python");
    let mut lines = BufReader::new(slow.stdout.take().expect("python's stdout")).lines();
    assert_eq!(lines.next().and_then(Result::ok).as_deref(), Some("open"), "the slow requests are sent");
    let opened = Instant::now();
    for n in 0..10 {
        let (code, body) = curl(server, Http::One, Some("b-token"), "GET", path, None);
        assert_eq!(code, 200, "t-b's GET {n} while t-a's bodies are open: {body}");
    }
    let others_done = opened.elapsed().as_secs_f64();
    let answers: Vec<Value> = lines.map_while(Result::ok).map(|line| serde_json::from_str(&line).expect("a JSON line")).collect();
    assert!(slow.wait().expect("python ends").success());
    assert_eq!(answers.len(), 60, "{answers:?}");
    for answer in &answers {
        assert_eq!((answer["code"].as_u64(), answer["reason"].as_str()), (Some(504), Some("Timeout")), "{answer}");
        assert_eq!(answer["message"], "Timeout: request did not complete within the allotted timeout", "{answer}");
        let after = answer["after"].as_f64().unwrap_or_default();
        assert!(after >= others_done, "t-b was answered ({others_done:.1} s) while this body was still open: {answer}");
        assert!(after < REQUEST_TIMEOUT_SECONDS * 2.0, "the answer comes at the request timeout: {answer}");
    }
    assert_ready("60 slow bodies");
}

/// Issue 44 (5) over HTTP/2: a body past the deadline is answered 504 with the `Status` too, before the stream is
/// reset. (curl 7.88 reports an empty reply instead: it gives up on the reset while it still uploads.)
#[test]
fn a_slow_body_over_http2_is_answered_504() {
    let output = python("slow_h2_body.py").args(["127.0.0.1", port(), "a-token", "/api/v1/namespaces/default/configmaps"]).output().expect("run python");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (code, body) = text.split_once('\n').unwrap_or((&text, ""));
    assert_eq!(code, "504", "{text} {}", String::from_utf8_lossy(&output.stderr));
    let status: Value = serde_json::from_str(body.trim()).unwrap_or_else(|_| panic!("a Status body: {body:?}"));
    assert_eq!((status["reason"].as_str(), status["code"].as_u64()), (Some("Timeout"), Some(504)), "{status}");
    assert_ready("a slow body over HTTP/2");
}
