//! `fieldValidation` as a tenant admin sees it: kubectl 1.32's `--validate=strict|warn|false` on create,
//! apply, replace and patch, and raw requests (kube-rs' HTTP client) that check kube-apiserver's exact status
//! codes, messages and `Warning` headers for unknown and duplicate fields, in JSON and YAML bodies, every patch
//! type, the scale subresource and custom resources.

use std::path::PathBuf;

use kube::client::Body;
use kube::Client;
use kspaces_tests::{certificate_kubeconfig, create_tenant, kube_client, Kubectl, Server};
use serde_json::{json, Value};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

/// A server with tenant `t-a`; kubectl and the kubeconfig of t-a's admin.
fn tenant() -> (Server, Kubectl, PathBuf) {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t-a");
    let kubeconfig = certificate_kubeconfig(&server, "t-a", "admin", &[]);
    (server, Kubectl::new(&kubeconfig), kubeconfig)
}

/// A Deployment whose spec has an undeclared `replica` and whose container an undeclared `pullPolicy`.
fn deployment(name: &str) -> String {
    format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}}}\nspec:\n  replica: 2\n  selector: {{matchLabels: {{app: {name}}}}}\n  \
             template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers:\n      - {{name: web, image: nginx, pullPolicy: Always}}\n")
}

const UNKNOWN: [&str; 2] = [r#"unknown field "spec.replica""#, r#"unknown field "spec.template.spec.containers[0].pullPolicy""#];

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The kubectl `Warning:` lines of `text`.
fn warnings(text: &str) -> Vec<&str> {
    text.lines().filter_map(|line| line.strip_prefix("Warning: ")).collect()
}

/// The stored Deployment's spec, to see that undeclared fields are dropped.
fn spec(kubectl: &Kubectl, name: &str) -> Value {
    let text = kubectl.ok(&["get", "deploy", name, "-o", "json"]);
    serde_json::from_str::<Value>(&text).map(|d| d["spec"].clone()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn assert_dropped(kubectl: &Kubectl, name: &str) {
    let spec = spec(kubectl, name);
    assert!(spec.get("replica").is_none(), "{spec}");
    assert!(spec["template"]["spec"]["containers"][0].get("pullPolicy").is_none(), "{spec}");
}

#[test]
fn kubectl_create_follows_validate_strict_warn_and_false() {
    let (_server, kubectl, _) = tenant();
    let refused = kubectl.fails_with_stdin(&["create", "-f", "-"], &deployment("web"));
    assert_eq!(refused.trim(), format!("Error from server (BadRequest): error when creating \"STDIN\": Deployment in version \"v1\" cannot be \
        handled as a Deployment: strict decoding error: {}, {}", UNKNOWN[0], UNKNOWN[1]));
    assert!(kubectl.fails(&["get", "deploy", "web"]).contains(r#"deployments.apps "web" not found"#), "a refused object is not stored");

    let warned = kubectl.run_with_stdin(&["create", "--validate=warn", "-f", "-"], &deployment("web"));
    assert!(warned.status.success(), "{}", stderr(&warned));
    assert_eq!(warnings(&stderr(&warned)), UNKNOWN);
    assert_eq!(String::from_utf8_lossy(&warned.stdout).trim(), "deployment.apps/web created");
    assert_dropped(&kubectl, "web");

    let ignored = kubectl.run_with_stdin(&["create", "--validate=false", "-f", "-"], &deployment("quiet"));
    assert!(ignored.status.success() && ignored.stderr.is_empty(), "{}", stderr(&ignored));
    assert_dropped(&kubectl, "quiet");
}

#[test]
fn kubectl_apply_replace_and_patch_report_unknown_fields() {
    let (_server, kubectl, _) = tenant();
    let refused = kubectl.fails_with_stdin(&["apply", "-f", "-"], &deployment("web"));
    assert!(refused.contains("Error from server (BadRequest): error when creating \"STDIN\": Deployment in version \"v1\" cannot be handled"), "{refused}");
    let clean = deployment("web").replace("  replica: 2\n", "  replicas: 2\n").replace(", pullPolicy: Always", "");
    assert_eq!(kubectl.ok_with_stdin(&["apply", "-f", "-"], &clean).trim(), "deployment.apps/web created");

    // An apply of an existing object is a strategic merge patch: kube refuses it with a 422 on `patch`.
    let refused = kubectl.fails_with_stdin(&["apply", "-f", "-"], &deployment("web"));
    assert!(refused.starts_with("The request is invalid: patch: Invalid value: \"map[metadata:map[annotations:map["), "{refused}");
    assert!(refused.trim_end().ends_with(&format!("strict decoding error: {}, {}", UNKNOWN[0], UNKNOWN[1])), "{refused}");
    let warned = kubectl.run_with_stdin(&["apply", "--validate=warn", "-f", "-"], &deployment("web"));
    assert!(warned.status.success(), "{}", stderr(&warned));
    assert_eq!(warnings(&stderr(&warned)), UNKNOWN);
    assert_dropped(&kubectl, "web");

    let refused = kubectl.fails_with_stdin(&["replace", "-f", "-"], &deployment("web"));
    assert!(refused.contains("error when replacing \"STDIN\": Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error"), "{refused}");
    let warned = kubectl.run_with_stdin(&["replace", "--validate=warn", "-f", "-"], &deployment("web"));
    assert!(warned.status.success(), "{}", stderr(&warned));
    assert_eq!(warnings(&stderr(&warned)), UNKNOWN);

    // kubectl patch sends no fieldValidation: kube's default, Warn.
    let patched = kubectl.run(&["patch", "deploy", "web", "-p", r#"{"spec":{"paused":true,"pause":true}}"#]);
    assert_eq!(warnings(&stderr(&patched)), [r#"unknown field "spec.pause""#]);
    assert_eq!(String::from_utf8_lossy(&patched.stdout).trim(), "deployment.apps/web patched");
    let patched = kubectl.run(&["patch", "deploy", "web", "--type=json", "-p", r#"[{"op":"replace","path":"/spec/paused","value":false,"values":1}]"#]);
    assert_eq!(warnings(&stderr(&patched)), [r#"json patch unknown field "[0].values""#]);
    assert_eq!(spec(&kubectl, "web")["paused"], false);
}

#[test]
fn duplicate_fields_through_raw_kubectl_requests() {
    let (_server, kubectl, _) = tenant();
    let body = |name: &str| format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"a":"1","b":"2","a":"3"}}}}"#);
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), body("strict")).expect("write body");
    let path = file.path().to_string_lossy().into_owned();
    let refused = kubectl.fails(&["create", "--raw", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", "-f", &path]);
    assert_eq!(refused.trim(), r#"Error from server (BadRequest): ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data.a""#);

    std::fs::write(file.path(), body("warned")).expect("write body");
    let warned = kubectl.run(&["create", "--raw", "/api/v1/namespaces/default/configmaps", "-f", &path]);
    assert!(warned.status.success(), "{}", stderr(&warned));
    assert_eq!(warnings(&stderr(&warned)), [r#"duplicate field "data.a""#]);
    assert_eq!(kubectl.ok(&["get", "cm", "warned", "-o", "jsonpath={.data}"]), r#"{"a":"3","b":"2"}"#, "the last of duplicates wins");
}

/// One raw answer: status, `Warning` header values, body.
struct Answer {
    status: u16,
    warnings: Vec<String>,
    body: Value,
}

async fn send(client: &Client, method: &str, path: &str, content_type: &str, body: &str) -> Result<Answer, Box<dyn std::error::Error>> {
    let request = http::Request::builder().method(method).uri(path).header("content-type", content_type).body(Body::from(body.as_bytes().to_vec()))?;
    let response = client.send(request).await?;
    let status = response.status().as_u16();
    let warnings = response.headers().get_all("warning").iter().map(|v| v.to_str().unwrap_or_default().to_owned()).collect();
    let bytes = response.into_body().collect_bytes().await?;
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Ok(Answer { status, warnings, body })
}

/// `299 - "<text>"` with `\` and `"` escaped, as kube writes a warning.
fn header(text: &str) -> String {
    format!("299 - \"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A Deployment body with an undeclared field, a duplicate field and an undeclared field in a container.
fn raw_deployment(name: &str) -> String {
    format!(r#"{{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {{"name": "{name}", "oddMeta": 1}},
        "spec": {{"paused": true, "extra": 1, "paused": false, "selector": {{"matchLabels": {{"app": "a"}}}},
        "template": {{"metadata": {{"labels": {{"app": "a"}}}}, "spec": {{"containers": [{{"name": "c", "image": "i", "oddField": 1}}]}}}}}}}}"#)
}

const RAW_PROBLEMS: [&str; 4] = [r#"unknown field "metadata.oddMeta""#, r#"unknown field "spec.extra""#, r#"duplicate field "spec.paused""#,
    r#"unknown field "spec.template.spec.containers[0].oddField""#];

#[tokio::test]
async fn raw_creates_and_updates_with_each_field_validation_value() -> TestResult {
    let (_server, _, kubeconfig) = tenant();
    let client = kube_client(&kubeconfig).await?;
    let strict = send(&client, "POST", &format!("{DEPLOYMENTS}?fieldValidation=Strict"), "application/json", &raw_deployment("strict")).await?;
    assert_eq!((strict.status, &strict.body["reason"]), (400, &json!("BadRequest")), "{}", strict.body);
    assert_eq!(strict.body["message"], format!("Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: {}", RAW_PROBLEMS.join(", ")));
    assert!(strict.warnings.is_empty());

    for (query, name) in [("?fieldValidation=Warn", "warn"), ("", "default")] {
        let warned = send(&client, "POST", &format!("{DEPLOYMENTS}{query}"), "application/json", &raw_deployment(name)).await?;
        assert_eq!(warned.status, 201, "{}", warned.body);
        assert_eq!(warned.warnings, RAW_PROBLEMS.map(header), "{query}");
        assert!(warned.body["spec"].get("extra").is_none() && warned.body["metadata"].get("oddMeta").is_none(), "{}", warned.body);
        assert_eq!(warned.body["spec"]["paused"], false, "the last duplicate wins");
    }
    // Warnings come with errors too, and a quote in a field name is escaped twice (path, then header).
    let failing = raw_deployment("failing").replace(r#""paused": true,"#, r#""replicas": -1, "we\"ird": 1,"#);
    let failed = send(&client, "POST", DEPLOYMENTS, "application/json", &failing).await?;
    assert_eq!((failed.status, &failed.body["reason"]), (422, &json!("Invalid")), "{}", failed.body);
    assert_eq!(failed.warnings[..2], [header(r#"unknown field "metadata.oddMeta""#), header(r#"unknown field "spec.we\"ird""#)]);
    assert_eq!(failed.warnings[1], r#"299 - "unknown field \"spec.we\\\"ird\"""#);

    let ignored = send(&client, "POST", &format!("{DEPLOYMENTS}?fieldValidation=Ignore"), "application/json", &raw_deployment("ignored")).await?;
    assert_eq!((ignored.status, ignored.warnings.len()), (201, 0), "{}", ignored.body);

    let invalid = send(&client, "POST", &format!("{DEPLOYMENTS}?fieldValidation=strict"), "application/json", &raw_deployment("invalid")).await?;
    assert_eq!((invalid.status, &invalid.body["reason"]), (422, &json!("Invalid")));
    assert_eq!(invalid.body["message"], r#"CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn""#);

    // YAML: keys set twice are reported by line first, then the undeclared fields in key order.
    let yaml = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: yaml\n  name: yaml\nspec:\n  zeta: 1\n  selector: {matchLabels: {app: a}}\n  \
                template:\n    metadata: {labels: {app: a}}\n    spec:\n      containers: [{name: c, image: i}]\n  alpha: 2\n";
    let strict = send(&client, "POST", &format!("{DEPLOYMENTS}?fieldValidation=Strict"), "application/yaml", yaml).await?;
    assert_eq!(strict.body["message"], "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: yaml: unmarshal errors:\n  \
        line 5: key \"name\" already set in map, unknown field \"spec.alpha\", unknown field \"spec.zeta\"");
    let warned = send(&client, "POST", DEPLOYMENTS, "application/yaml", yaml).await?;
    assert_eq!(warned.warnings, [r#"line 5: key "name" already set in map"#, r#"unknown field "spec.alpha""#, r#"unknown field "spec.zeta""#].map(header));

    // PUT is checked as POST is.
    let replaced = raw_deployment("warn").replace(r#""oddMeta": 1"#, r#""resourceVersion": """#);
    let strict = send(&client, "PUT", &format!("{DEPLOYMENTS}/warn?fieldValidation=Strict"), "application/json", &replaced).await?;
    assert_eq!(strict.status, 400, "{}", strict.body);
    assert!(strict.body["message"].as_str().unwrap_or_default().ends_with(r#"unknown field "spec.extra", duplicate field "spec.paused", unknown field "spec.template.spec.containers[0].oddField""#), "{}", strict.body);
    let warned = send(&client, "PUT", &format!("{DEPLOYMENTS}/warn"), "application/json", &replaced).await?;
    assert_eq!((warned.status, warned.warnings.len()), (200, 3), "{}", warned.body);
    Ok(())
}

#[tokio::test]
async fn raw_patches_report_their_own_and_the_patched_objects_problems() -> TestResult {
    let (_server, kubectl, kubeconfig) = tenant();
    kubectl.ok_with_stdin(&["apply", "-f", "-"], &deployment("web").replace("  replica: 2\n", "").replace(", pullPolicy: Always", ""));
    let client = kube_client(&kubeconfig).await?;
    let web = format!("{DEPLOYMENTS}/web");
    let merge = r#"{"spec": {"paused": true, "paused": false, "bogus": 1}}"#;

    let strict = send(&client, "PATCH", &format!("{web}?fieldValidation=Strict"), "application/merge-patch+json", merge).await?;
    assert_eq!((strict.status, &strict.body["reason"]), (422, &json!("Invalid")), "{}", strict.body);
    let cause = &strict.body["details"]["causes"][0];
    assert_eq!((&cause["field"], &cause["reason"]), (&json!("patch"), &json!("FieldValueInvalid")));
    let message = cause["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("Invalid value: \"{\\\"apiVersion\\\":\\\"apps/v1\\\""), "the patched object is shown: {message}");
    assert!(message.ends_with(r#"": strict decoding error: duplicate field "spec.paused", unknown field "spec.bogus""#), "{message}");
    assert!(strict.body["message"].as_str().unwrap_or_default().starts_with(r#" "" is invalid: patch: Invalid value: "#), "{}", strict.body);

    let strategic = send(&client, "PATCH", &format!("{web}?fieldValidation=Strict"), "application/strategic-merge-patch+json", merge).await?;
    let message = strategic.body["details"]["causes"][0]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.starts_with(r#"Invalid value: "map[spec:map[bogus:1 paused:false]]": strict decoding error"#), "a strategic patch shows as Go prints it: {message}");

    let warned = send(&client, "PATCH", &web, "application/merge-patch+json", merge).await?;
    assert_eq!(warned.status, 200, "{}", warned.body);
    assert_eq!(warned.warnings, [r#"duplicate field "spec.paused""#, r#"unknown field "spec.bogus""#].map(header));
    assert!(warned.body["spec"].get("bogus").is_none() && warned.body["spec"]["paused"] == false, "{}", warned.body);

    let json_patch = r#"[{"op": "add", "path": "/spec/minReadySeconds", "value": 5, "extra": true}, {"op": "add", "path": "/spec/x", "path": "/spec/y", "value": 1}]"#;
    let warned = send(&client, "PATCH", &web, "application/json-patch+json", json_patch).await?;
    assert_eq!(warned.warnings, [r#"json patch unknown field "[0].extra""#, r#"json patch duplicate field "[1].path""#, r#"unknown field "spec.y""#].map(header));
    let ignored = send(&client, "PATCH", &format!("{web}?fieldValidation=Ignore"), "application/merge-patch+json", merge).await?;
    assert_eq!((ignored.status, ignored.warnings.len()), (200, 0), "{}", ignored.body);

    let scale = r#"{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"}, "spec": {"replicas": 3, "surge": 1}}"#;
    let strict = send(&client, "PUT", &format!("{web}/scale?fieldValidation=Strict"), "application/json", scale).await?;
    assert_eq!(strict.body["message"], r#"Scale in version "v1" cannot be handled as a Scale: strict decoding error: unknown field "spec.surge""#);
    let warned = send(&client, "PATCH", &format!("{web}/scale"), "application/merge-patch+json", r#"{"spec": {"replicas": 4, "surge": 1}}"#).await?;
    assert_eq!((warned.status, warned.warnings.clone()), (200, vec![header(r#"unknown field "spec.surge""#)]), "{}", warned.body);
    assert_eq!(spec(&kubectl, "web")["replicas"], 4);
    Ok(())
}

#[tokio::test]
async fn custom_resources_report_metadata_pruned_and_embedded_fields_in_kube_order() -> TestResult {
    let (_server, kubectl, kubeconfig) = tenant();
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.fv.example.com}\nspec:\n  \
               group: fv.example.com\n  scope: Namespaced\n  names: {plural: gadgets, singular: gadget, kind: Gadget}\n  versions:\n  \
               - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          \
               spec:\n            type: object\n            properties:\n              size: {type: integer}\n              \
               parts: {type: array, items: {type: object, properties: {name: {type: string}}}}\n              \
               template: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}\n";
    kubectl.ok_with_stdin(&["apply", "-f", "-"], crd);
    kubectl.ok(&["wait", "--for", "condition=established", "crd/gadgets.fv.example.com", "--timeout=10s"]);
    let client = kube_client(&kubeconfig).await?;
    let gadget = r#"{"apiVersion": "fv.example.com/v1", "kind": "Gadget", "metadata": {"name": "g", "junk": 1},
        "spec": {"size": 1, "size": 2, "zz": 1, "parts": [{"name": "p", "weight": 3}],
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t", "oops": 1}, "free": {"any": 1}}}}"#;
    let gadgets = "/apis/fv.example.com/v1/namespaces/default/gadgets";
    let problems = [r#"duplicate field "spec.size""#, r#"unknown field "metadata.junk""#, r#"unknown field "spec.parts[0].weight""#,
        r#"unknown field "spec.zz""#, r#"unknown field "spec.template.metadata.oops""#];
    let strict = send(&client, "POST", &format!("{gadgets}?fieldValidation=Strict"), "application/json", gadget).await?;
    assert_eq!(strict.status, 400, "{}", strict.body);
    assert_eq!(strict.body["message"], format!("Gadget in version \"v1\" cannot be handled as a Gadget: strict decoding error: {}", problems.join(", ")));
    let warned = send(&client, "POST", gadgets, "application/json", gadget).await?;
    assert_eq!((warned.status, warned.warnings.clone()), (201, problems.map(header).to_vec()), "{}", warned.body);
    assert_eq!(warned.body["spec"], json!({"size": 2, "parts": [{"name": "p"}], "template": {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "t"}, "free": {"any": 1}}}), "pruned as kube prunes");
    assert!(warned.body["metadata"].get("junk").is_none(), "{}", warned.body);

    let strict = send(&client, "PATCH", &format!("{gadgets}/g?fieldValidation=Strict"), "application/merge-patch+json", r#"{"spec": {"extra": 1}}"#).await?;
    assert_eq!(strict.status, 422, "{}", strict.body);
    let message = strict.body["details"]["causes"][0]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.ends_with(r#"strict decoding error: unknown field "spec.extra""#), "{message}");
    Ok(())
}
