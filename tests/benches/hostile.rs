//! Hostile-tenant benchmark (issue 44): tenant B's latencies while tenant A, with only its own tenant's rights,
//! runs each attack the issue found, side by side with A idle. B is the fairness bench's open loop (50 GET/s and
//! 10 creates/s from a thread, runtime and connection of its own); each row is one phase with one attack running
//! for the whole phase, on a server of its own (so that no attack's aftermath is counted in the next row).
//! Reported per row: what A's requests were answered, B's GET and create p50 / p99 / max, B's 429s and failures
//! (a 5xx, a reset connection), the server's RSS growth (peak during the phase over its RSS before it) and that
//! `/readyz` answered after the attack.
//!
//! Targets (issue 44): B never gets a 5xx or a 429 caused by A's attack, B's GETs answer within 2 s, and the RSS grows
//! by less than 400 MiB under 1,000 unread HTTP/2 streams of a 3 MiB object.
//!
//! Run: `cargo bench -p kspaces-tests --bench hostile` (the harness builds `target/release/kspaces`, or set
//! `KSPACES_BIN`); `HOSTILE_PHASE_SECONDS` sets each phase's length (default 8); `HOSTILE_ONLY` (a substring of an
//! attack's name) runs that row and the idle one.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use futures::future::BoxFuture;
use futures::FutureExt;
use kube::Client;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsConnector;
use kspaces_tests::{certificate_authority_data, create_tenant, kube_client, token_file, token_kubeconfig, Server};

mod support;

use support::light::{Light, LightClient};
use support::{block_on, env_usize, millis, status_kib, wait_ready, Result};

/// What one phase of an attack needs: the server, A's client (kube-rs, HTTP/1.1), A's token for raw connections,
/// and the flag that ends the attack.
#[derive(Clone)]
struct Attacker {
    url: String,
    tls: Arc<rustls::ClientConfig>,
    client: Client,
    stop: Arc<AtomicBool>,
    answers: Arc<Mutex<BTreeMap<String, u64>>>,
}

type Attack = fn(Attacker) -> BoxFuture<'static, Result<()>>;

const THINGS: &str = "/apis/hostile.example.io/v1/namespaces/default/things";

fn attacks() -> Vec<(&'static str, Attack)> {
    vec![
        ("none (A idle)", |_| async { Ok(()) }.boxed()),
        ("JSON patch doubling depth with 14 copies (4 loops)", |a| patch_loops(a, 4, doubling_patch()).boxed()),
        ("JSON patch nesting 200 levels (4 loops)", |a| {
            let nested = (1..200).fold(json!({}), |inner, _| json!({ "a": inner }));
            patch_loops(a, 4, json!([{"op": "add", "path": "/spec/deep", "value": nested}])).boxed()
        }),
        ("JSON patch of 18 doubling copies of 512 KiB (4 loops)", |a| patch_loops(a, 4, amplifying_patch()).boxed()),
        ("JSON patch of 10,001 operations (4 loops)", |a| {
            let tests: Vec<Value> = (0..10_001).map(|_| json!({"op": "test", "path": "/kind", "value": "Thing"})).collect();
            patch_loops(a, 4, Value::Array(tests)).boxed()
        }),
        ("1,000 unread HTTP/2 GETs of a 3 MiB object (1 connection)", |a| h2_flood(a, 1, 1_000).boxed()),
        ("1,000 unread HTTP/2 GETs of a 3 MiB object (10 connections × 100)", |a| h2_flood(a, 10, 100).boxed()),
        ("60 slow POST bodies, 1 byte / 2 s (HTTP/1.1)", |a| slow_bodies(a, 60).boxed()),
        ("costly CEL rule: 3 nested all() over 100 items (4 loops)", |a| cel_loops(a, 4).boxed()),
        ("watch with timeoutSeconds=2^63-1 (16 loops)", |a| watch_loops(a, 16).boxed()),
        ("900 KiB request heads (8 loops, HTTP/1.1)", |a| large_heads(a, 8).boxed()),
    ]
}

fn main() -> Result<()> {
    let phase = Duration::from_secs(env_usize("HOSTILE_PHASE_SECONDS", 8)? as u64);
    let only = std::env::var("HOSTILE_ONLY").unwrap_or_default();
    let began = Instant::now();
    let mut rows = Vec::new();
    for (name, attack) in attacks() {
        if !only.is_empty() && !name.contains(&only) && !name.starts_with("none") {
            continue;
        }
        rows.push(block_on(run(name, attack, phase))?);
    }
    println!("\nphase {} s; B: 50 GET/s + 10 creates/s (open loop, its own connection)\n", phase.as_secs());
    println!("| A's attack | A's answers | B GET p50 / p99 / max (ms) | B create p50 / p99 / max (ms) | B 429s / failures | RSS growth (MiB) | /readyz after |");
    println!("|---|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
    println!("\ntotal bench time {:.1} s", began.elapsed().as_secs_f64());
    Ok(())
}

/// One row: a server of its own, A's attack running for B's whole phase.
async fn run(name: &'static str, attack: Attack, phase: Duration) -> Result<String> {
    kspaces_tests::kspaces_binary();
    let tokens = token_file(&["a-token,admin,u-a,\"tenant-admins\",,t-a", "b-token,admin,u-b,\"tenant-admins\",,t-b"]);
    let server = Server::start_with(&["--token-auth-file", tokens.path().to_str().ok_or("a utf-8 temp path")?]);
    let admin = kube_client(&server.kubeconfig).await?;
    wait_ready(&admin, Instant::now() + Duration::from_secs(10)).await?;
    create_tenant(&server.kubectl(), "t-a");
    create_tenant(&server.kubectl(), "t-b");
    let attacker = Attacker {
        url: server.url.clone(),
        tls: tls_config(&server)?,
        client: kube_client(&token_kubeconfig(&server, "a-token")).await?,
        stop: Arc::new(AtomicBool::new(false)),
        answers: Arc::default(),
    };
    prepare(&attacker).await?;
    let light = LightClient::start(token_kubeconfig(&server, "b-token"), phase);
    light.run("warm").await?;
    let pid = server.pid();
    let rss_before = status_kib(pid, "VmRSS:")?;
    let running = tokio::spawn(attack(attacker.clone()));
    let sampler = {
        let stop = attacker.stop.clone();
        tokio::spawn(async move {
            let mut peak = 0;
            while !stop.load(Ordering::Relaxed) {
                peak = peak.max(status_kib(pid, "VmRSS:").unwrap_or(0));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            peak
        })
    };
    let mut measured = light.run("under-attack").await?;
    attacker.stop.store(true, Ordering::Relaxed);
    let peak = sampler.await?;
    let attack_outcome = tokio::time::timeout(Duration::from_secs(30), running).await;
    light.stop().await?;
    let ready = match tokio::time::timeout(Duration::from_secs(5), wait_ready(&admin, Instant::now() + Duration::from_secs(5))).await {
        Ok(Ok(())) => "yes".to_owned(),
        Ok(Err(err)) => format!("no: {err}"),
        Err(_) => "no (5 s)".to_owned(),
    };
    let answers = match attack_outcome {
        Ok(Ok(Ok(()))) => summary(&*attacker.answers.lock().map_err(|_| "poisoned")?),
        Ok(Ok(Err(err))) => format!("attack failed: {err}"),
        Ok(Err(err)) => format!("attack panicked: {err}"),
        Err(_) => "attack did not stop within 30 s".to_owned(),
    };
    drop(server);
    Ok(format!("| {name} | {answers} | {} | {} | {} / {} | {:.0} | {ready} |", spread(&mut measured.gets), spread(&mut measured.creates),
        measured.rejected, measured.failed, peak.saturating_sub(rss_before) as f64 / 1024.0))
}

fn spread(samples: &mut [Duration]) -> String {
    let max = samples.iter().max().copied().unwrap_or_default();
    format!("{} / {:.0}", Light::summary(samples), millis(max))
}

fn summary(answers: &BTreeMap<String, u64>) -> String {
    if answers.is_empty() {
        return "-".to_owned();
    }
    answers.iter().map(|(what, count)| format!("{count}× {what}")).collect::<Vec<_>>().join(", ")
}

impl Attacker {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn count(&self, what: impl Into<String>) {
        *self.answers.lock().expect("not poisoned").entry(what.into()).or_default() += 1;
    }

    /// Counts a kube-rs answer by its code.
    fn count_answer<T>(&self, answer: kube::Result<T>) {
        match answer {
            Ok(_) => self.count("2xx"),
            Err(kube::Error::Api(status)) => self.count(status.code.to_string()),
            Err(err) => self.count(format!("error: {}", first_words(&err.to_string()))),
        }
    }

    fn authority(&self) -> Result<(String, u16)> {
        let rest = self.url.strip_prefix("https://").ok_or("an https URL")?;
        let (host, port) = rest.split_once(':').ok_or("a port in the URL")?;
        Ok((host.to_owned(), port.trim_end_matches('/').parse()?))
    }

    /// A TLS connection to the server, offering `alpn`.
    async fn connect(&self, alpn: &[u8]) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
        let (host, port) = self.authority()?;
        let mut config = (*self.tls).clone();
        config.alpn_protocols = vec![alpn.to_vec()];
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
        Ok(TlsConnector::from(Arc::new(config)).connect(ServerName::try_from(host)?, tcp).await?)
    }
}

fn first_words(text: &str) -> String {
    text.split_whitespace().take(6).collect::<Vec<_>>().join(" ")
}

/// The server's CA (from the admin kubeconfig) as a rustls client configuration.
fn tls_config(server: &Server) -> Result<Arc<rustls::ClientConfig>> {
    let pem = base64::engine::general_purpose::STANDARD.decode(certificate_authority_data(server))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        roots.add(cert?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(Arc::new(rustls::ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions()?.with_root_certificates(roots).with_no_client_auth()))
}

/// What the attacks use in tenant A: a CRD with free-form specs, one with a costly CEL rule over at most 100
/// items, a Thing, and a 3 MiB ConfigMap.
async fn prepare(a: &Attacker) -> Result<()> {
    let crd = |plural: &str, kind: &str, spec: Value| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.hostile.example.io")},
            "spec": {"group": "hostile.example.io", "scope": "Namespaced",
                "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object",
                    "properties": {"spec": spec}}}}]}})
    };
    let free = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let costly = json!({"type": "object", "properties": {"items": {"type": "array", "maxItems": 100, "items": {"type": "integer"}}},
        "x-kubernetes-validations": [{"rule": "self.items.all(a, self.items.all(b, self.items.all(c, a + b + c >= 0)))"}]});
    for body in [crd("things", "Thing", free), crd("costlies", "Costly", costly)] {
        post(a, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &body).await?;
    }
    for _ in 0..100 {
        let thing = json!({"apiVersion": "hostile.example.io/v1", "kind": "Thing", "metadata": {"name": "target"},
            "spec": {"x": {"a": {}}, "blob": "x".repeat(512 * 1024)}});
        if post(a, THINGS, &thing).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"blob": "x".repeat(3 * 1024 * 1024 - 4096)}});
    post(a, "/api/v1/namespaces/default/configmaps", &big).await?;
    Ok(())
}

async fn post(a: &Attacker, path: &str, body: &Value) -> Result<String> {
    let request = http::Request::post(path).header("content-type", "application/json").body(serde_json::to_vec(body)?)?;
    Ok(a.client.request_text(request).await?)
}

fn doubling_patch() -> Value {
    let copies: Vec<Value> = (0..14).map(|chain| json!({"op": "copy", "from": "/spec/x", "path": format!("/spec/x{}", "/a".repeat(chain + 1))})).collect();
    Value::Array(copies)
}

fn amplifying_patch() -> Value {
    let mut operations = vec![json!({"op": "copy", "from": "/spec/blob", "path": "/spec/c0"})];
    operations.extend((1..18).map(|i| json!({"op": "copy", "from": format!("/spec/c{}", i - 1), "path": format!("/spec/c{i}")})));
    Value::Array(operations)
}

/// Runs `step` in `loops` closed loops until the attack is stopped; `step` gets A, its loop's number and how many
/// steps that loop made before.
async fn in_loops<F, Fut>(a: &Attacker, loops: usize, step: F) -> Result<()>
where
    F: Fn(Attacker, usize, u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send,
{
    let workers: Vec<_> = (0..loops)
        .map(|worker| {
            let (a, step) = (a.clone(), step.clone());
            tokio::spawn(async move {
                let mut made = 0;
                while !a.stopped() {
                    step(a.clone(), worker, made).await?;
                    made += 1;
                }
                Ok::<_, support::BoxError>(())
            })
        })
        .collect();
    for worker in workers {
        worker.await??;
    }
    Ok(())
}

/// `loops` closed loops of the JSON patch `patch` on A's Thing.
async fn patch_loops(a: Attacker, loops: usize, patch: Value) -> Result<()> {
    let body = serde_json::to_vec(&patch)?;
    in_loops(&a, loops, move |a, _, _| {
        let body = body.clone();
        async move {
            let request = http::Request::patch(format!("{THINGS}/target")).header("content-type", "application/json-patch+json").body(body)?;
            let answer = a.client.request_text(request).await;
            a.count_answer(answer);
            Ok(())
        }
    })
    .await
}

/// Up to `streams` GETs of the 3 MiB ConfigMap on each of `connections` HTTP/2 connections, none of whose answers
/// is read: the client never releases flow-control capacity, so the server can send each stream's first 64 KiB only.
/// A connection takes as many as the server's `SETTINGS_MAX_CONCURRENT_STREAMS` lets it open (the client waits 2 s
/// for a slot, then stops asking).
async fn h2_flood(a: Attacker, connections: usize, streams: usize) -> Result<()> {
    let (mut held, mut senders) = (Vec::new(), Vec::new());
    for _ in 0..connections {
        let tls = a.connect(b"h2").await?;
        let (mut send, connection) = h2::client::handshake(tls).await?;
        tokio::spawn(connection);
        for _ in 0..streams {
            send = match tokio::time::timeout(Duration::from_secs(2), send.clone().ready()).await {
                Ok(ready) => ready?,
                Err(_) => break,
            };
            let request = http::Request::get(format!("{}/api/v1/namespaces/default/configmaps/big", a.url)).header("authorization", "Bearer a-token").body(())?;
            let (answer, _) = send.send_request(request, true)?;
            held.push(answer);
        }
        senders.push(send);
    }
    a.count(format!("{} streams asked", held.len()));
    while !a.stopped() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop((held, senders));
    Ok(())
}

/// `count` HTTP/1.1 POSTs of a ConfigMap whose body (of 1,000 bytes, as its Content-Length says) comes one byte every
/// 2 s; each connection answered is counted by its status line, and made again.
async fn slow_bodies(a: Attacker, count: usize) -> Result<()> {
    in_loops(&a, count, |a, _, _| async move {
        let mut tls = a.connect(b"http/1.1").await?;
        let head = "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: kspaces\r\nAuthorization: Bearer a-token\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n";
        tls.write_all(head.as_bytes()).await?;
        let mut answer = vec![0u8; 256];
        loop {
            tokio::select! {
                read = tls.read(&mut answer) => {
                    let read = read.unwrap_or(0);
                    let line = String::from_utf8_lossy(&answer[..read]).lines().next().unwrap_or("closed").to_owned();
                    a.count(if read == 0 { "closed".to_owned() } else { line });
                    return Ok(());
                }
                _ = tokio::time::sleep(Duration::from_secs(2)) => {
                    if a.stopped() { return Ok(()); }
                    if tls.write_all(b" ").await.is_err() { a.count("closed while sending"); return Ok(()); }
                }
            }
        }
    })
    .await
}

/// `loops` closed loops creating objects of 100 items against a rule of three nested `all()` over them.
async fn cel_loops(a: Attacker, loops: usize) -> Result<()> {
    in_loops(&a, loops, |a, worker, n| async move {
        let object = json!({"apiVersion": "hostile.example.io/v1", "kind": "Costly", "metadata": {"name": format!("c-{worker}-{n}")},
            "spec": {"items": (0..100).collect::<Vec<i64>>()}});
        let request = http::Request::post("/apis/hostile.example.io/v1/namespaces/default/costlies")
            .header("content-type", "application/json").body(serde_json::to_vec(&object)?)?;
        let answer = a.client.request_text(request).await;
        a.count_answer(answer);
        Ok(())
    })
    .await
}

/// `loops` closed loops of watches asking for the largest `timeoutSeconds`, each dropped after its first 100 ms.
async fn watch_loops(a: Attacker, loops: usize) -> Result<()> {
    in_loops(&a, loops, |a, _, _| async move {
        let request = http::Request::get("/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=9223372036854775807").body(Vec::new())?;
        match tokio::time::timeout(Duration::from_millis(100), a.client.send(request.map(Into::into))).await {
            Ok(Ok(answer)) => a.count(answer.status().as_u16().to_string()),
            Ok(Err(err)) => a.count(format!("error: {}", first_words(&err.to_string()))),
            Err(_) => a.count("no head within 100 ms"),
        }
        Ok(())
    })
    .await
}

/// `loops` closed loops of GETs, each on a new HTTP/1.1 connection, carrying 900 headers of 1 KiB.
async fn large_heads(a: Attacker, loops: usize) -> Result<()> {
    let padding: String = (0..900).map(|i| format!("X-Pad-{i}: {}\r\n", "p".repeat(1010))).collect();
    in_loops(&a, loops, move |a, _, _| {
        let padding = padding.clone();
        async move {
            let mut tls = a.connect(b"http/1.1").await?;
            let head = format!("GET /api/v1/namespaces/default/configmaps?limit=1 HTTP/1.1\r\nHost: kspaces\r\nAuthorization: Bearer a-token\r\n{padding}Connection: close\r\n\r\n");
            if tls.write_all(head.as_bytes()).await.is_err() {
                a.count("closed while sending");
                return Ok(());
            }
            let mut answer = vec![0u8; 256];
            let read = tls.read(&mut answer).await.unwrap_or(0);
            a.count(String::from_utf8_lossy(&answer[..read]).lines().next().unwrap_or("closed").to_owned());
            Ok(())
        }
    })
    .await
}
