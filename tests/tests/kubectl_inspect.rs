//! kubectl's read-only commands against the real server: get, describe, explain, discovery and the raw endpoints.

use kspaces_tests::Server;

const DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: front}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        env:
        - {name: GREETING, value: hello}
";

/// The header line of a table, split into its column names.
fn header_columns(table: &str) -> Vec<String> {
    table.lines().next().unwrap_or_default().split_whitespace().map(str::to_owned).collect()
}

/// The table row whose first column is `name`, split into cells.
fn row<'a>(table: &'a str, name: &str) -> Vec<&'a str> {
    let line = table.lines().find(|line| line.split_whitespace().next() == Some(name));
    line.unwrap_or_else(|| panic!("no row {name} in:\n{table}")).split_whitespace().collect()
}

#[test]
fn get_describe_and_explain_show_what_kubectl_users_expect() {
    let server = Server::start();
    let kubectl = server.kubectl();

    let namespaces = kubectl.ok(&["get", "ns"]);
    assert_eq!(header_columns(&namespaces), ["NAME", "STATUS", "AGE"], "{namespaces}");
    assert_eq!(row(&namespaces, "default")[1], "Active", "{namespaces}");
    assert_eq!(row(&namespaces, "kube-system")[1], "Active", "{namespaces}");

    kubectl.ok_with_stdin(&["apply", "-f", "-"], DEPLOYMENT);
    let wide = kubectl.ok(&["get", "deploy", "-o", "wide"]);
    let expected = ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"];
    assert_eq!(header_columns(&wide), expected, "{wide}");
    let web = row(&wide, "web");
    assert_eq!(web.len(), expected.len(), "{wide}");
    assert_eq!(web[1], "0/2", "READY counts ready replicas out of spec.replicas:\n{wide}");
    assert_eq!(&web[5..], ["nginx", "nginx:1.25", "app=web"], "{wide}");

    let described = kubectl.ok(&["describe", "deploy", "web"]);
    for needle in ["Name:", "web", "Namespace:", "default", "Selector:", "app=web", "tier=front", "2 desired", "Image:", "nginx:1.25", "GREETING:", "hello", "StrategyType:", "RollingUpdate"] {
        assert!(described.contains(needle), "describe lacks {needle:?}:\n{described}");
    }

    let explained = kubectl.ok(&["explain", "deployment.spec.replicas"]);
    for needle in ["KIND:", "Deployment", "VERSION:", "v1", "replicas", "<integer>", "Number of desired pods"] {
        assert!(explained.contains(needle), "explain lacks {needle:?}:\n{explained}");
    }
}

#[test]
fn discovery_commands_and_raw_endpoints_answer_like_kube() {
    let server = Server::start();
    let kubectl = server.kubectl();

    let resources = kubectl.ok(&["api-resources"]);
    let deployments = row(&resources, "deployments");
    assert_eq!(deployments, ["deployments", "deploy", "apps/v1", "true", "Deployment"], "{resources}");
    assert_eq!(row(&resources, "configmaps"), ["configmaps", "cm", "v1", "true", "ConfigMap"], "{resources}");
    assert_eq!(row(&resources, "namespaces"), ["namespaces", "ns", "v1", "false", "Namespace"], "{resources}");

    let versions = kubectl.ok(&["api-versions"]);
    let versions: Vec<&str> = versions.lines().collect();
    for version in ["v1", "apps/v1", "batch/v1", "rbac.authorization.k8s.io/v1"] {
        assert!(versions.contains(&version), "api-versions lacks {version}: {versions:?}");
    }

    let version = kubectl.ok(&["version", "-o", "json"]);
    let version: serde_json::Value = serde_json::from_str(&version).expect("version is JSON");
    let server_version = version["serverVersion"]["gitVersion"].as_str().unwrap_or_default();
    assert!(server_version.starts_with("v1.33."), "server version {server_version}");
    assert_eq!(version["serverVersion"]["major"], "1");
    assert_eq!(version["serverVersion"]["minor"], "33");

    assert_eq!(kubectl.ok(&["get", "--raw", "/healthz"]), "ok");
    let readyz = kubectl.ok(&["get", "--raw", "/readyz?verbose"]);
    assert!(readyz.contains("[+]ping ok"), "{readyz}");
    assert!(readyz.trim_end().ends_with("readyz check passed"), "{readyz}");
    let raw_version: serde_json::Value = serde_json::from_str(&kubectl.ok(&["get", "--raw", "/version"])).expect("/version is JSON");
    assert_eq!(raw_version["gitVersion"].as_str(), Some(server_version));

    let metrics = kubectl.ok(&["get", "--raw", "/metrics"]);
    let head: String = metrics.chars().take(2000).collect();
    // OpenMetrics names the counter family without its `_total`; the samples keep kube-apiserver's name.
    assert!(metrics.contains("# TYPE apiserver_request counter"), "{head}");
    assert!(metrics.lines().any(|line| line.starts_with("apiserver_request_total{")), "no samples of apiserver_request_total");
}

