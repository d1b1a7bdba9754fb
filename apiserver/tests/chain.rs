//! The whole server in-process, on a free port of 127.0.0.1, driven through every stage of the handler chain
//! (`apiserver/src/chain.rs`): one table of requests, each naming the stage that answers it or that it passes,
//! and what the client gets. The server is started as `main` starts it (`server::bind`'s kind of listener,
//! `server::run` with the parsed command line) and stopped through its shutdown future.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Parser;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use kspaces_apiserver::config::{Cli, Command};
use kspaces_apiserver::server::{self, Stop};
use serde_json::{json, Value};

/// One request of the table and what it must get.
struct Case {
    /// The stage that answers it (or, for a request that succeeds, the last stage it reaches).
    stage: &'static str,
    method: Method,
    path: &'static str,
    headers: &'static [(&'static str, &'static str)],
    body: Option<Value>,
    /// Who asks.
    client: Who,
    code: u16,
    /// A piece of the answer's body it must hold.
    holds: &'static str,
}

#[derive(Clone, Copy)]
enum Who {
    Admin,
    Anonymous,
    BadToken,
}

/// The server, running on its own thread in its own actix system, as `kspaces serve` runs.
struct InProcess {
    dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<Stop>>,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl InProcess {
    fn start(extra: &[&str]) -> InProcess {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let data_dir = dir.path().join("data");
        let data_dir = data_dir.to_str().unwrap_or_else(|| panic!("a temp path that is no UTF-8"));
        let mut argv = vec!["kspaces", "serve", "--data-dir", data_dir, "--bind-address", "127.0.0.1", "--secure-port", "0"];
        argv.extend_from_slice(extra);
        let Command::Serve(args) = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{e}")).command else { panic!("not serve") };
        let listener = server::bind(&args).unwrap_or_else(|e| panic!("{e}"));
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let thread = std::thread::spawn(move || {
            let shutdown = async move { stopped.await.unwrap_or(Stop::Now) };
            actix_web::rt::System::new().block_on(server::run(listener, *args, shutdown)).map_err(|e| e.to_string())
        });
        InProcess { dir, stop: Some(stop), thread: Some(thread) }
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("data").join("admin.kubeconfig")
    }

    /// Stops the server gracefully and returns what `run` returned.
    fn stop(&mut self) -> Result<(), String> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(Stop::Graceful);
        }
        self.thread.take().map_or(Ok(()), |thread| thread.join().unwrap_or_else(|_| Err("the server's thread panicked".into())))
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(Stop::Now);
        }
    }
}

/// A client of the admin kubeconfig, or of its server and CA only (anonymous, or with a bearer token).
async fn client(kubeconfig: &Path, who: Who) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).unwrap_or_else(|e| panic!("{e}"));
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    match who {
        Who::Admin => {}
        Who::Anonymous => config.auth_info = kube::config::AuthInfo::default(),
        Who::BadToken => {
            config.auth_info = kube::config::AuthInfo { token: Some("not-a-token".to_owned().into()), ..kube::config::AuthInfo::default() }
        }
    }
    kube::Client::try_from(config).unwrap_or_else(|e| panic!("{e}"))
}

async fn send(client: &kube::Client, case: &Case) -> (StatusCode, http::HeaderMap, String) {
    let mut request = Request::builder().method(case.method.clone()).uri(case.path);
    for (name, value) in case.headers {
        request = request.header(*name, *value);
    }
    let body = case.body.as_ref().map_or_else(Vec::new, |body| body.to_string().into_bytes());
    if case.body.is_some() {
        request = request.header("content-type", "application/json");
    }
    let request = request.body(kube::client::Body::from(body)).unwrap_or_else(|e| panic!("{e}"));
    let response = client.send(request).await.unwrap_or_else(|e| panic!("{} {}: {e}", case.method, case.path));
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap_or_else(|e| panic!("{e}")).to_bytes();
    (parts.status, parts.headers, String::from_utf8_lossy(&bytes).into_owned())
}

/// Waits until the server answers `/readyz` (the admin kubeconfig is written just before it serves).
async fn ready(server: &InProcess) -> kube::Client {
    for _ in 0..600 {
        if server.kubeconfig().exists() {
            let admin = client(&server.kubeconfig(), Who::Admin).await;
            let readyz = Case { stage: "health", method: Method::GET, path: "/readyz", headers: &[], body: None, client: Who::Admin, code: 200, holds: "ok" };
            if let (StatusCode::OK, _, _) = send(&admin, &readyz).await {
                return admin;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the in-process server did not become ready within 60 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stage_of_the_chain_in_process() {
    let audit_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let audit_log = audit_dir.path().join("audit.log");
    let policy = audit_dir.path().join("policy.yaml");
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n  resources: [{group: '', resources: [configmaps]}]\n- level: Metadata\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let (audit_log_arg, policy_arg) = (audit_log.to_string_lossy().into_owned(), policy.to_string_lossy().into_owned());
    let mut server = InProcess::start(&["--audit-log-path", &audit_log_arg, "--audit-policy-file", &policy_arg, "--default-tenant", "acme"]);
    let admin = ready(&server).await;
    let (anonymous, bad_token) = (client(&server.kubeconfig(), Who::Anonymous).await, client(&server.kubeconfig(), Who::BadToken).await);

    let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "through-every-stage"}, "data": {"a": "b"}});
    let api_service = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.stage.example.io"},
        "spec": {"group": "stage.example.io", "version": "v1", "groupPriorityMinimum": 100, "versionPriority": 10,
            "service": {"namespace": "default", "name": "nowhere"}, "insecureSkipTLSVerify": true}});
    let cases = [
        Case { stage: "reject_invalid_path", method: Method::GET, path: "/api/v1/namespaces/default/configmaps/a%zz", headers: &[], body: None,
            client: Who::Admin, code: 400, holds: "invalid URL escape" },
        Case { stage: "authenticate", method: Method::GET, path: "/api/v1/namespaces/default/configmaps", headers: &[], body: None,
            client: Who::BadToken, code: 401, holds: "Unauthorized" },
        Case { stage: "authenticate (anonymous, a public path)", method: Method::GET, path: "/version", headers: &[], body: None,
            client: Who::Anonymous, code: 200, holds: "gitVersion" },
        Case { stage: "authenticate (anonymous, a resource)", method: Method::GET, path: "/api/v1/namespaces", headers: &[], body: None,
            client: Who::Anonymous, code: 401, holds: "Unauthorized" },
        Case { stage: "impersonate (no such tenant)", method: Method::GET, path: "/api/v1/namespaces", headers: &[("Impersonate-User", "eve"), ("Impersonate-Group", "tenant:users")],
            body: None, client: Who::Admin, code: 404, holds: "tenants \\\"users\\\" not found" },
        Case { stage: "virtual_workspace", method: Method::GET, path: "/services/apiexport/root:nope/widgets/clusters/*/apis/example.io/v1/widgets", headers: &[],
            body: None, client: Who::Admin, code: 403, holds: "cannot list resource \\\"apiexports/content\\\"" },
        Case { stage: "home", method: Method::GET, path: "/apis/tenancy.kcp.io/v1alpha1/workspaces/~", headers: &[("Impersonate-User", "alice"), ("Impersonate-Group", "tenant:acme")],
            body: None, client: Who::Admin, code: 200, holds: "\"type\":{\"name\":\"home\"" },
        Case { stage: "the APIService the next two reach (its 503s are kube-rs' to retry: tests/tests/aggregated_apis.rs)", method: Method::POST, path: "/apis/apiregistration.k8s.io/v1/apiservices", headers: &[],
            body: Some(api_service), client: Who::Admin, code: 201, holds: "v1.stage.example.io" },
        Case { stage: "aggregated (RBAC first)", method: Method::GET, path: "/apis/stage.example.io/v1/namespaces/default/things", headers: &[("Impersonate-User", "alice"), ("Impersonate-Group", "tenant:acme")],
            body: None, client: Who::Admin, code: 403, holds: "cannot list resource" },
        Case { stage: "aggregated (anonymous)", method: Method::GET, path: "/apis/stage.example.io/v1/namespaces/default/things", headers: &[],
            body: None, client: Who::Anonymous, code: 401, holds: "Unauthorized" },
        Case { stage: "non_resource", method: Method::GET, path: "/api", headers: &[], body: None, client: Who::Admin, code: 200, holds: "\"kind\":\"APIVersions\"" },
        Case { stage: "non_resource (server-wide, a tenant user)", method: Method::GET, path: "/metrics", headers: &[("Impersonate-User", "alice"), ("Impersonate-Group", "tenant:acme")],
            body: None, client: Who::Admin, code: 403, holds: "forbidden" },
        Case { stage: "resolve_space", method: Method::POST, path: "/api/v1/tenants/all/namespaces/default/configmaps", headers: &[], body: Some(configmap.clone()),
            client: Who::Admin, code: 400, holds: "may only be used to list and watch" },
        Case { stage: "authorize", method: Method::GET, path: "/api/v1/namespaces/default/configmaps", headers: &[("Impersonate-User", "alice"), ("Impersonate-Group", "tenant:acme")],
            body: None, client: Who::Admin, code: 403, holds: "User \\\"alice\\\" cannot list resource \\\"configmaps\\\"" },
        Case { stage: "resolve_resource", method: Method::GET, path: "/apis/example.io/v1/widgets", headers: &[], body: None, client: Who::Admin, code: 404, holds: "" },
        Case { stage: "system_only (namespaced, no namespace)", method: Method::GET, path: "/api/v1/configmaps/x", headers: &[], body: None, client: Who::Admin, code: 404, holds: "" },
        Case { stage: "the handler, through every stage", method: Method::POST, path: "/api/v1/namespaces/default/configmaps", headers: &[], body: Some(configmap),
            client: Who::Admin, code: 201, holds: "\"name\":\"through-every-stage\"" },
        Case { stage: "the handler, a read", method: Method::GET, path: "/api/v1/namespaces/default/configmaps/through-every-stage", headers: &[], body: None,
            client: Who::Admin, code: 200, holds: "\"a\":\"b\"" },
    ];
    for case in &cases {
        let client = match case.client {
            Who::Admin => &admin,
            Who::Anonymous => &anonymous,
            Who::BadToken => &bad_token,
        };
        let (code, headers, body) = send(client, case).await;
        assert_eq!(code.as_u16(), case.code, "{}: {} {} answered {code}: {body}", case.stage, case.method, case.path);
        assert!(body.contains(case.holds), "{}: {} {}: {body:?} holds no {:?}", case.stage, case.method, case.path, case.holds);
        // Priority and fairness classified every request that got past authentication and reading its body.
        if case.code != 400 && case.code != 401 && !case.stage.starts_with("impersonate") {
            assert!(headers.contains_key("x-kubernetes-pf-flowschema-uid"), "{}: no priority and fairness headers: {headers:?}", case.stage);
        }
        assert!(headers.contains_key("audit-id"), "{}: no Audit-Id header", case.stage);
    }

    // The audit stage: the create's event at RequestResponse holds its request and response objects.
    let events = std::fs::read_to_string(&audit_log).unwrap_or_else(|e| panic!("{e}"));
    let create = events
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["verb"] == "create" && event["requestObject"]["metadata"]["name"] == "through-every-stage" && event["stage"] == "ResponseComplete")
        .unwrap_or_else(|| panic!("no audit event of the create in {events}"));
    assert_eq!(create["level"], "RequestResponse");
    assert_eq!(create["requestObject"]["data"]["a"], "b");
    assert_eq!(create["responseObject"]["metadata"]["name"], "through-every-stage");
    assert_eq!(create["annotations"]["authorization.k8s.io/decision"], "allow");

    // The metrics stage: the create is counted under its resource.
    let metrics = Case { stage: "metrics", method: Method::GET, path: "/metrics", headers: &[], body: None, client: Who::Admin, code: 200, holds: "" };
    let (_, _, text) = send(&admin, &metrics).await;
    assert!(text.lines().any(|line| line.starts_with("apiserver_request_total{") && line.contains("verb=\"POST\"") && line.contains("resource=\"configmaps\"") && line.contains("code=\"201\"")),
        "no apiserver_request_total of the create in /metrics");

    // The shutdown future stops the server, and `run` returns.
    assert_eq!(server.stop(), Ok(()));
}
