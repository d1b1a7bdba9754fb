//! kubectl's generator commands (`create configmap|namespace|deployment|secret`), which send protobuf bodies.

use kspaces_tests::{Kubectl, Server};

fn get(kubectl: &Kubectl, args: &[&str], path: &str) -> String {
    let jsonpath = format!("jsonpath={path}");
    let mut full = vec!["get"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["-o", &jsonpath]);
    kubectl.ok(&full)
}

#[test]
fn create_configmap_and_secret_from_literals() {
    let server = Server::start();
    let kubectl = server.kubectl();

    let created = kubectl.ok(&["create", "configmap", "demo", "--from-literal=a=1", "--from-literal=greeting=hello world"]);
    assert_eq!(created.trim(), "configmap/demo created");
    let data: serde_json::Value = serde_json::from_str(&get(&kubectl, &["cm", "demo"], "{.data}")).expect("data JSON");
    assert_eq!(data, serde_json::json!({"a": "1", "greeting": "hello world"}));
    let duplicate = kubectl.fails(&["create", "configmap", "demo", "--from-literal=a=2"]);
    assert!(duplicate.contains("failed to create configmap: configmaps \"demo\" already exists"), "{duplicate}");
    assert_eq!(get(&kubectl, &["cm", "demo"], "{.data.a}"), "1");

    let secret = kubectl.ok(&["create", "secret", "generic", "s", "--from-literal=k=v", "--from-literal=password=s3cr3t!"]);
    assert_eq!(secret.trim(), "secret/s created");
    assert_eq!(get(&kubectl, &["secret", "s"], "{.type}"), "Opaque");
    assert_eq!(get(&kubectl, &["secret", "s"], "{.data.k}"), "dg==", "secret data is base64 of the literal");
    assert_eq!(get(&kubectl, &["secret", "s"], "{.data.password}"), "czNjcjN0IQ==");

    let dry = kubectl.ok(&["create", "configmap", "ghost", "--from-literal=a=1", "--dry-run=server", "-o", "jsonpath={.data.a}"]);
    assert_eq!(dry, "1");
    assert!(kubectl.fails(&["get", "cm", "ghost"]).contains("configmaps \"ghost\" not found"), "a server dry run stores nothing");
}

#[test]
fn create_namespace_and_deployment() {
    let server = Server::start();
    let kubectl = server.kubectl();

    assert_eq!(kubectl.ok(&["create", "namespace", "team-a"]).trim(), "namespace/team-a created");
    assert_eq!(get(&kubectl, &["ns", "team-a"], "{.status.phase}"), "Active");

    let created = kubectl.ok(&["create", "deployment", "web", "--image=nginx", "-n", "team-a"]);
    assert_eq!(created.trim(), "deployment.apps/web created");
    let deployment = kubectl.ok(&["get", "deploy", "web", "-n", "team-a", "-o", "json"]);
    let deployment: serde_json::Value = serde_json::from_str(&deployment).expect("deployment JSON");
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert_eq!(deployment["spec"]["selector"]["matchLabels"], serde_json::json!({"app": "web"}));
    assert_eq!(deployment["metadata"]["labels"], serde_json::json!({"app": "web"}));
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["name"], "nginx");
    assert_eq!(container["image"], "nginx");
    assert_eq!(container["imagePullPolicy"], "Always", "defaulted for the implicit :latest tag");

    kubectl.ok(&["create", "deployment", "api", "--image=busybox:1.36", "--replicas=3", "--port=8080", "-n", "team-a"]);
    assert_eq!(get(&kubectl, &["deploy", "api", "-n", "team-a"], "{.spec.replicas}"), "3");
    assert_eq!(get(&kubectl, &["deploy", "api", "-n", "team-a"], "{.spec.template.spec.containers[0].ports[0].containerPort}"), "8080");
    let wide = kubectl.ok(&["get", "deploy", "-n", "team-a", "-o", "wide"]);
    assert!(wide.lines().any(|line| line.starts_with("api ") && line.contains("busybox:1.36") && line.contains("app=api")), "{wide}");
    // Checked last: kube defaults the empty `strategy: {}` kubectl sends, and labels every namespace with its name.
    assert_eq!(deployment["spec"]["strategy"]["type"], "RollingUpdate", "the empty strategy is defaulted");
    assert_eq!(get(&kubectl, &["ns", "team-a"], "{.metadata.labels.kubernetes\\.io/metadata\\.name}"), "team-a");
}
