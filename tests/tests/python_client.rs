//! The official Python `kubernetes` client as a tenant admin: the scripts in `tests/python/` run against the
//! real binary with the kubeconfig `certificate_kubeconfig` writes, and this test asserts on their exit status
//! and on every step they report.
//!
//! The interpreter is `$KSPACES_PYTHON` (set by `scripts/test-all.sh`, which creates the venv), else the repo's
//! `.venv/bin/python`; without either the test fails and says how to create the venv.

use std::path::{Path, PathBuf};
use std::process::Command;

use kspaces_tests::{certificate_kubeconfig, create_tenant, Server};

/// The repository root (this crate lives in `tests/`).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The Python with the `kubernetes` client installed.
fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("KSPACES_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(python);
    }
    let venv = repo_root().join(".venv/bin/python");
    assert!(venv.exists(), "the Python client's venv is missing: run scripts/test-all.sh, or create it with \
        `python3 -m venv .venv && .venv/bin/pip install kubernetes==37.0.2` in the repository root (or set KSPACES_PYTHON)");
    venv
}

/// Runs `tests/python/<script>` as t-a's admin; returns its stdout after asserting that it passed.
fn run_script(script: &str) -> String {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t-a");
    let kubeconfig = certificate_kubeconfig(&server, "t-a", "admin", &[]);
    run_script_as(script, &server, &kubeconfig)
}

/// Runs `tests/python/<script>` with `kubeconfig`'s user against `server`.
fn run_script_as(script: &str, _server: &Server, kubeconfig: &Path) -> String {
    let output = Command::new(python())
        .arg(repo_root().join("tests/python").join(script))
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| panic!("could not run {}: {e}", python().display()));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{script} failed ({}):\n{stdout}\n{stderr}", output.status);
    stdout
}

/// Asserts that `stdout` reports exactly `steps` as passed, in order, and nothing failed.
fn assert_passed(stdout: &str, steps: &[&str]) {
    let passed: Vec<&str> = stdout.lines().filter_map(|line| line.strip_prefix("PASS ")).collect();
    assert_eq!(passed, steps, "{stdout}");
    assert!(!stdout.contains("FAIL "), "{stdout}");
    assert!(stdout.contains(&format!("{} passed, 0 failed", steps.len())), "{stdout}");
}

#[test]
fn core_v1_configmaps_watch_and_conflicts() {
    let stdout = run_script("core_v1.py");
    assert_passed(&stdout, &["configmap crud", "watch from a list's resourceVersion", "409 conflicts"]);
}

#[test]
fn custom_resources_through_the_dynamic_client_and_custom_objects_api() {
    let stdout = run_script("custom_resources.py");
    assert_passed(&stdout, &["CRD established", "DynamicClient", "CustomObjectsApi"]);
}

#[test]
fn percent_encoded_names_malformed_selectors_and_mismatched_namespaces() {
    let stdout = run_script("hardening.py");
    assert_passed(&stdout, &["percent-encoded names", "malformed label selectors", "namespace mismatch", "namespaced Role with nonResourceURLs"]);
}

/// Issue 46: every built-in kind round-trips through the client's typed models (create, read, list, watch,
/// patch), with the status fields kube always writes, kube's field labels, and error bodies byte for byte. As the
/// system administrator: DaemonSets live in the system space.
#[test]
fn every_built_in_kind_through_the_typed_models() {
    let server = Server::start();
    let stdout = run_script_as("every_kind.py", &server, &server.kubeconfig);
    assert_passed(&stdout, &["namespace", "every kind through its typed API", "status as kube writes it",
        "autoscaling in two versions", "field selectors as kube reads them", "services as kube allocates them", "error bodies byte for byte"]);
}

#[test]
fn a_failing_step_fails_the_script_with_its_name() {
    // The scripts' own failure path: a kubeconfig naming a tenant that does not exist gets a 404 on the first
    // request, which the script must report as a failed step and a non-zero exit.
    let server = Server::start();
    let kubeconfig = certificate_kubeconfig(&server, "t-missing", "admin", &[]);
    let output = Command::new(python())
        .arg(repo_root().join("tests/python/core_v1.py"))
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| panic!("could not run {}: {e}", python().display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert_eq!(stdout.trim(), r#"FAIL configmap crud: API error 404 NotFound: tenants "t-missing" not found"#);
}

/// `tests/python/api_exports.py` in a consumer workspace: t-a's admin makes `root:t-a:provider` (an
/// APIResourceSchema and the APIExport `widgets`) and `root:t-a:consumer` (an APIBinding to it, waited on until
/// Bound) with kubectl, and the script runs with a kubeconfig whose server URL ends in `/clusters/root:t-a:consumer`.
#[test]
fn api_exports_a_bound_resource_through_custom_objects_api() {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t-a");
    let at = |path: &str| kspaces_tests::certificate_kubeconfig_with(&server, "t-a", "admin", &[], Some(&format!("{}/clusters/{path}", server.url)));
    let tenant = kspaces_tests::Kubectl::new(&at("root:t-a"));
    for name in ["provider", "consumer"] {
        let workspace = format!("apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec: {{type: {{name: universal, path: root}}}}\n");
        tenant.ok_with_stdin(&["create", "-f", "-"], &workspace);
        tenant.ok(&["wait", "--for=jsonpath={.status.phase}=Ready", &format!("workspace/{name}"), "--timeout=30s"]);
    }
    let provider = kspaces_tests::Kubectl::new(&at("root:t-a:provider"));
    provider.ok_with_stdin(&["apply", "-f", "-"], kspaces_tests::WIDGETS_EXPORT);

    let consumer_kubeconfig = at("root:t-a:consumer");
    let consumer = kspaces_tests::Kubectl::new(&consumer_kubeconfig);
    consumer.ok_with_stdin(&["create", "-f", "-"], "apiVersion: apis.kcp.io/v1alpha1\nkind: APIBinding\nmetadata: {name: widgets}\n\
        spec: {reference: {export: {path: \"root:t-a:provider\", name: widgets}}}\n");
    consumer.ok(&["wait", "--for=jsonpath={.status.phase}=Bound", "apibinding/widgets", "--timeout=30s"]);

    let output = Command::new(python())
        .arg(repo_root().join("tests/python/api_exports.py"))
        .arg("--kubeconfig")
        .arg(&consumer_kubeconfig)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| panic!("could not run {}: {e}", python().display()));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "api_exports.py failed ({}):\n{stdout}\n{}", output.status, String::from_utf8_lossy(&output.stderr));
    assert_passed(&stdout, &["binding Bound", "CustomObjectsApi", "schema validation"]);
}
