//! Malformed requests get kube-apiserver 1.32's answer (code, reason and message), never a 500: percent-encoded
//! paths, query parameters that do not parse (selectors, integers, resourceVersions), values kube's option
//! validation refuses, a body in another namespace than its URL, and a namespaced Role naming non-resource URLs.
//! Driven by kubectl and by curl over HTTP/1.1 and HTTP/2.

use kspaces_tests::{curl, token_file, Http, Server};
use serde_json::Value;

fn server() -> (Server, tempfile::NamedTempFile) {
    let tokens = token_file(&["root-token,root,u-root,\"system:masters\""]);
    let path = tokens.path().to_str().expect("utf-8 temp path").to_owned();
    (Server::start_with(&["--token-auth-file", &path]), tokens)
}

/// (code, reason, message) of a request's answer, checked to be the same over HTTP/1.1 and HTTP/2.
fn answer(server: &Server, method: &str, path: &str, body: Option<&str>) -> (u16, String, String) {
    let mut answers = Vec::new();
    for http in [Http::One, Http::Two] {
        let (code, text) = curl(server, http, Some("root-token"), method, path, body);
        let status: Value = serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.clone()));
        let field = |name: &str| status[name].as_str().unwrap_or_default().to_owned();
        answers.push((code, field("reason"), field("message")));
    }
    assert_eq!(answers[0], answers[1], "{method} {path}: HTTP/1.1 and HTTP/2 agree");
    answers.remove(0)
}

fn bad_request(message: &str) -> (u16, String, String) {
    (400, "BadRequest".to_owned(), message.to_owned())
}

#[test]
fn percent_encoded_paths_are_decoded_as_kube_decodes_them() {
    let (server, _tokens) = server();
    server.kubectl().ok(&["create", "configmap", "a", "--from-literal=k=v"]);
    let (code, _, _) = answer(&server, "GET", "/api/v1/namespaces/d%65fault", None);
    assert_eq!(code, 200);
    let (code, text) = curl(&server, Http::Two, Some("root-token"), "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Adiscovery", None);
    assert!(code == 200 && text.contains("\"name\":\"system:discovery\""), "{code} {text}");
    assert_eq!(answer(&server, "GET", "/api/v1/namespaces/default/configmaps/%61", None).0, 200);
    // An encoded `/` separates segments as a literal one does: `a%2Fb` is the (unserved) subresource b of a.
    assert_eq!(answer(&server, "GET", "/api/v1/namespaces/default/configmaps/a%2Fb", None),
        (404, "NotFound".to_owned(), "the server could not find the requested resource".to_owned()));
    assert_eq!(answer(&server, "GET", "/api/v1/namespaces/default/configmaps/%zz", None), bad_request("invalid URL escape \"%zz\""));
}

#[test]
fn query_parameters_that_do_not_parse_are_kube_apiservers_400s() {
    let (server, _tokens) = server();
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let invalid_rv = |rv: &str| bad_request(&format!(
        "invalid resource version: resourceVersion: Invalid value: \"{rv}\": strconv.ParseUint: parsing \"{rv}\": invalid syntax"));
    let rows = [
        (format!("{configmaps}?labelSelector=a!%3D%3Db"), bad_request("unable to parse requirement: found '=', expected: identifier")),
        (format!("{configmaps}?watch=1&labelSelector=a,"), bad_request("found '', expected: identifier after ','")),
        (format!("{configmaps}?watch=1&timeoutSeconds=soon"), bad_request("strconv.ParseInt: parsing \"soon\": invalid syntax")),
        (format!("{configmaps}?limit=ten"), bad_request("strconv.ParseInt: parsing \"ten\": invalid syntax")),
        (format!("{configmaps}?resourceVersion=abc"), invalid_rv("abc")),
        (format!("{configmaps}?watch=true&resourceVersion=-1"), invalid_rv("-1")),
        (format!("{configmaps}/x?resourceVersion=abc"), invalid_rv("abc")),
        (format!("{configmaps}?fieldSelector=a%3Db%3Dc"), bad_request("invalid field selector: unescaped character in value: 61")),
        (format!("{configmaps}?fieldSelector=spec.x%3Dy"), bad_request("field label not supported: spec.x")),
        (format!("{configmaps}?continue=abc&resourceVersion=5"), bad_request("specifying resource version is not allowed when using continue")),
    ];
    for (path, expected) in rows {
        assert_eq!(answer(&server, "GET", &path, None), expected, "GET {path}");
    }
    // kubectl shows the server's message.
    let kubectl = server.kubectl();
    let stderr = kubectl.fails(&["get", "configmaps", "-l", "a!==b"]);
    assert!(stderr.contains("Error from server (BadRequest): ") && stderr.contains(": unable to parse requirement: found '=', expected: identifier"), "{stderr}");
    let long = "x".repeat(64);
    let stderr = kubectl.fails(&["get", "configmaps", "-w", "-l", &format!("a={long}")]);
    assert!(stderr.contains(&format!("unable to parse requirement: values[0][a]: Invalid value: \"{long}\": must be no more than 63 characters")), "{stderr}");
}

#[test]
fn option_values_kube_refuses_are_refused_with_its_causes() {
    let (server, _tokens) = server();
    let kubectl = server.kubectl();
    kubectl.ok(&["create", "configmap", "x", "--from-literal=k=v"]);
    let x = "/api/v1/namespaces/default/configmaps/x";
    assert_eq!(answer(&server, "DELETE", &format!("{x}?gracePeriodSeconds=later"), None), bad_request("strconv.ParseInt: parsing \"later\": invalid syntax"));
    assert_eq!(answer(&server, "DELETE", &format!("{x}?propagationPolicy=Sideways"), None), (422, "Invalid".to_owned(),
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"".to_owned()));
    assert_eq!(answer(&server, "DELETE", "/api/v1/namespaces/default/configmaps?propagationPolicy=Sideways&labelSelector=a,", None),
        bad_request("found '', expected: identifier after ','"), "deletecollection reads its list options first");
    assert_eq!(answer(&server, "GET", "/api/v1/namespaces/default/configmaps?resourceVersionMatch=Exact", None), (422, "Invalid".to_owned(),
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided".to_owned()));
    // A precondition from the query, as kube reads one.
    assert_eq!(answer(&server, "DELETE", &format!("{x}?uid=not-its-uid"), None).0, 409);
    // Nothing was deleted by the refused requests.
    kubectl.ok(&["get", "configmap", "x"]);
}

#[test]
fn a_body_in_another_namespace_is_refused_on_update_and_patch() {
    let (server, _tokens) = server();
    let kubectl = server.kubectl();
    kubectl.ok(&["create", "namespace", "other"]);
    kubectl.ok(&["create", "configmap", "x", "--from-literal=k=v"]);
    let message = "the namespace of the provided object does not match the namespace sent on the request";
    let stderr = kubectl.fails(&["patch", "configmap", "x", "--type", "merge", "-p", r#"{"metadata":{"namespace":"other"},"data":{"k":"w"}}"#]);
    assert!(stderr.contains(&format!("Error from server (BadRequest): {message}")), "{stderr}");
    let moved = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"other"},"data":{"k":"w"}}"#;
    assert_eq!(answer(&server, "PUT", "/api/v1/namespaces/default/configmaps/x", Some(moved)), bad_request(message));
    let json_patch = r#"[{"op":"replace","path":"/metadata/namespace","value":"other"}]"#;
    let stderr = kubectl.fails(&["patch", "configmap", "x", "--type", "json", "-p", json_patch]);
    assert!(stderr.contains(message), "{stderr}");
    assert!(kubectl.ok(&["get", "configmap", "x", "-o", "jsonpath={.data.k}"]) == "v", "unchanged");
    assert!(kubectl.fails(&["get", "configmap", "x", "-n", "other"]).contains("NotFound"));
    // The same namespace, or none, is fine.
    kubectl.ok(&["patch", "configmap", "x", "--type", "merge", "-p", r#"{"metadata":{"namespace":"default"},"data":{"k":"w"}}"#]);
}

#[test]
fn a_namespaced_role_may_not_name_non_resource_urls() {
    let (server, _tokens) = server();
    let role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: urls}\nrules:\n- nonResourceURLs: [/healthz]\n  verbs: [get]\n";
    let stderr = server.kubectl().fails_with_stdin(&["apply", "-f", "-"], role);
    assert!(stderr.contains(r#"The Role "urls" is invalid: rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs"#), "{stderr}");
    let cluster_role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: urls}\nrules:\n- nonResourceURLs: [/healthz]\n  verbs: [get]\n";
    server.kubectl().ok_with_stdin(&["apply", "-f", "-"], cluster_role);
}

/// An answer given before the body is read (401 for a bad token, 404 for no route, 413 for a body over the limit)
/// reaches the client over HTTP/2 as over HTTP/1.1: the server reads the rest of the body first, so the stream is
/// not reset under the answer (curl reported "Stream error in the HTTP/2 framing layer" for about half of them).
#[test]
fn early_answers_to_a_request_with_a_body_reach_the_client_over_both_protocols() {
    let (server, _tokens) = server();
    let small = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(small.path(), r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#).expect("write the body");
    let big = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(big.path(), vec![b' '; 4 * 1024 * 1024]).expect("write the body");
    let post = |http: &str, token: &str, path: &str, body: &tempfile::NamedTempFile| {
        let output = std::process::Command::new("curl")
            .args(["-sk", "--max-time", "30", http, "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST"])
            .args(["-H", &format!("Authorization: Bearer {token}"), "-H", "Content-Type: application/json"])
            .arg("--data-binary").arg(format!("@{}", body.path().display()))
            .arg(format!("{}{path}", server.url)).output().expect("curl");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let configmaps = "/api/v1/namespaces/default/configmaps";
    for http in ["--http1.1", "--http2"] {
        for round in 0..10 {
            let answers = [post(http, "nope", configmaps, &small), post(http, "root-token", "/apis/nothing.example/v1/things", &small),
                post(http, "root-token", configmaps, &big), post(http, "nope", configmaps, &big)];
            assert_eq!(answers, ["401", "404", "413", "401"], "{http}, round {round}");
        }
    }
}
