//! GET of a realistic Deployment in protobuf (what client-go asks for) vs JSON, against the release `kspaces`
//! binary: N concurrent closed loops of raw GETs that differ only in `Accept`, so the client does the same work
//! (it reads the body and does not decode it). Reports requests/s, latency percentiles, body size and the server's
//! CPU time per request.
//!
//! Run: `cargo bench -p kspaces-tests --bench protobuf` (the harness builds `target/release/kspaces`, or set
//! `KSPACES_BIN`).

use std::sync::Arc;
use std::time::Duration;

use http::Request;
use kube::Client;
use kspaces_tests::Server;
use serde_json::json;

mod support;

use support::{block_on, closed_loops, cpu_seconds, millis, percentile, start, Loops, Result};

const PHASE: Duration = Duration::from_secs(4);
const WARM_UP: Duration = Duration::from_millis(500);
const CONCURRENCY: usize = 32;
const NAMES: usize = 50;
const ROUNDS: usize = 3;
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

/// A Deployment as a Helm chart would ship one: labels, annotations, two containers with probes, resources,
/// env, volumes, affinity and tolerations (about 3 KiB of JSON).
fn deployment(name: &str) -> serde_json::Value {
    let container = |name: &str, image: &str, port: i32| json!({
        "name": name, "image": image, "imagePullPolicy": "IfNotPresent",
        "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
        "env": [{"name": "MODE", "value": "production"}, {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 10, "periodSeconds": 10},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/app", "readOnly": true}],
        "securityContext": {"runAsNonRoot": true, "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}},
    });
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": name,
            "app.kubernetes.io/version": "1.27.3", "app.kubernetes.io/managed-by": "Helm"},
            "annotations": {"meta.helm.sh/release-name": name, "meta.helm.sh/release-namespace": "default"}},
        "spec": {
            "replicas": 3, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": name}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": name}},
                "spec": {
                    "containers": [container("web", "nginx:1.27.3", 8080), container("sidecar", "envoyproxy/envoy:v1.31", 9901)],
                    "volumes": [{"name": "config", "configMap": {"name": "web-config", "defaultMode": 420}}],
                    "serviceAccountName": "web", "terminationGracePeriodSeconds": 30,
                    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100,
                        "podAffinityTerm": {"labelSelector": {"matchLabels": {"app.kubernetes.io/name": "web"}},
                            "topologyKey": "kubernetes.io/hostname"}}]}},
                    "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
                },
            },
        },
    })
}

/// One format's figures.
struct Figures {
    requests_per_second: f64,
    p50: Duration,
    p99: Duration,
    body_bytes: usize,
    server_cpu_micros_per_request: f64,
}

/// `CONCURRENCY` closed loops of GETs of the Deployments asking for `accept`; the body is read, not decoded.
async fn drive(client: &Client, accept: &'static str, duration: Duration) -> Result<Loops> {
    let client = client.clone();
    closed_loops(CONCURRENCY, duration, move |worker, n| {
        let client = client.clone();
        async move {
            let name = (worker + 7 * n as usize) % NAMES;
            let request = Request::get(format!("{DEPLOYMENTS}/web-{name}")).header("Accept", accept).body(kube::client::Body::empty())?;
            let response = client.send(request).await?;
            if !response.status().is_success() {
                return Err(format!("GET answered {}", response.status()).into());
            }
            response.into_body().collect_bytes().await?;
            Ok(())
        }
    })
    .await
}

async fn measure(server: &Server, client: &Client, accept: &'static str) -> Result<Figures> {
    let probe = Request::get(format!("{DEPLOYMENTS}/web-0")).header("Accept", accept).body(kube::client::Body::empty())?;
    let body_bytes = client.send(probe).await?.into_body().collect_bytes().await?.len();
    drive(client, accept, WARM_UP).await?;
    let cpu_before = cpu_seconds(server.pid())?;
    let Loops { mut latencies, elapsed } = drive(client, accept, PHASE).await?;
    let cpu = cpu_seconds(server.pid())? - cpu_before;
    latencies.sort();
    let count = latencies.len() as f64;
    Ok(Figures {
        requests_per_second: count / elapsed.as_secs_f64(),
        p50: percentile(&latencies, 50.0),
        p99: percentile(&latencies, 99.0),
        body_bytes,
        server_cpu_micros_per_request: cpu * 1e6 / count,
    })
}

fn main() -> Result<()> {
    block_on(run())
}

async fn run() -> Result<()> {
    let (server, client) = start().await?;
    let create = Arc::new(client.clone());
    for i in 0..NAMES {
        let body = serde_json::to_vec(&deployment(&format!("web-{i}")))?;
        let request = Request::post(DEPLOYMENTS).header("Content-Type", "application/json").body(body)?;
        create.request_text(request).await?;
    }
    // Alternating rounds, so that a change in the (shared) machine's load does not favour one format.
    println!("\n| GET Deployment, N = {CONCURRENCY} | requests/s | p50 ms | p99 ms | body bytes | server CPU µs/request |\n|---|---|---|---|---|---|");
    let (mut json_total, mut protobuf_total) = (0.0, 0.0);
    for round in 1..=ROUNDS {
        let json = measure(&server, &client, "application/json").await?;
        let protobuf = measure(&server, &client, "application/vnd.kubernetes.protobuf, application/json").await?;
        for (format, figures) in [("JSON", &json), ("protobuf", &protobuf)] {
            println!("| {format} (round {round}) | {:.0} | {:.2} | {:.2} | {} | {:.0} |", figures.requests_per_second,
                millis(figures.p50), millis(figures.p99), figures.body_bytes, figures.server_cpu_micros_per_request);
        }
        (json_total, protobuf_total) = (json_total + json.requests_per_second, protobuf_total + protobuf.requests_per_second);
    }
    println!("\nprotobuf / JSON throughput over {ROUNDS} rounds: {:.0}%", protobuf_total / json_total * 100.0);
    Ok(())
}
