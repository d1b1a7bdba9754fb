//! `/metrics`: kube-apiserver's series, whose label values stay within a bounded set whatever paths are asked for
//! (a flood of unknown paths, anonymous or authenticated, over HTTP/1.1 and HTTP/2, adds no series), and which only
//! system users may read: a tenant admin, whose role allows every non-resource URL of their space, gets 403 on
//! `/metrics` and `/debug/*`.

use kspaces_tests::{certificate_kubeconfig, create_tenant, curl, curl_each, token_file, Http, Kubectl, Server};

/// A server with tenant t-a; tokens for a system administrator (`root`) and t-a's admin (`admin`).
fn server() -> (Server, tempfile::NamedTempFile) {
    let tokens = token_file(&["root-token,root,u-root,\"system:masters\"", "a-token,admin,u-a,\"tenant-admins\",,t-a"]);
    let path = tokens.path().to_str().expect("utf-8 temp path").to_owned();
    let server = Server::start_with(&["--token-auth-file", &path]);
    create_tenant(&server.kubectl(), "t-a");
    (server, tokens)
}

fn metrics(server: &Server) -> String {
    let (code, body) = curl(server, Http::One, Some("root-token"), "GET", "/metrics", None);
    assert_eq!(code, 200, "{body}");
    body
}

/// 1000 made-up paths of every shape: unknown roots, groups, versions, resources, subresources and verbs.
fn flood_paths(round: &str) -> Vec<String> {
    (0..1000)
        .map(|i| match i % 5 {
            0 => format!("/flood-{round}-{i}"),
            1 => format!("/apis/flood{round}{i}.example.com/v{i}/things{i}"),
            2 => format!("/api/v1/namespaces/default/flood{round}{i}"),
            3 => format!("/api/v1/namespaces/default/configmaps/x/flood{round}{i}"),
            _ => format!("/apis/apps/v1/tenants/flood{round}{i}/deployments"),
        })
        .collect()
}

#[test]
fn a_flood_of_unknown_paths_adds_no_series() {
    let (server, _tokens) = server();
    let before = metrics(&server);
    let mut sizes = vec![before.len()];
    for (round, http, token) in [("anon", Http::One, None), ("tenant", Http::Two, Some("a-token")), ("root", Http::One, Some("root-token"))] {
        let codes = curl_each(&server, http, token, &flood_paths(round));
        assert_eq!(codes.len(), 1000, "curl answered every request");
        assert!(codes.iter().all(|code| matches!(code, 400..=499)), "{round}: every made-up path is refused: {codes:?}");
        sizes.push(metrics(&server).len());
    }
    let after = metrics(&server);
    println!("/metrics size: {} bytes before, {sizes:?} after each flood of 1000 paths (anonymous, tenant admin, system admin)", before.len());
    // The floods' own series are a handful (one per verb, code and scope); 3000 distinct paths must not show.
    assert!(after.len() < before.len() + 40_000, "/metrics grew from {} to {} bytes", before.len(), after.len());
    for round in ["anon", "tenant", "root"] {
        assert!(!after.contains(&format!("flood{round}")) && !after.contains(&format!("flood-{round}")), "a flood path is a label value:\n{after}");
    }
    // The series that matter are still there, with kube-apiserver's names and labels.
    assert!(after.contains("# TYPE apiserver_request counter"), "{after}");
    assert!(after.contains(r#"apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="",scope="",subresource="",verb="GET",version=""}"#), "{after}");
    assert!(after.contains(r#"apiserver_request_total{code="401",component="apiserver""#), "{after}");
    assert!(after.contains(r#"le="45.0""#), "kube's 23 duration buckets: {after}");
}

#[test]
fn requests_to_served_resources_are_counted_by_resource() {
    let (server, _tokens) = server();
    let kubectl = server.kubectl();
    kubectl.ok(&["create", "configmap", "counted", "--from-literal=a=b"]);
    kubectl.ok(&["get", "configmaps"]);
    let text = metrics(&server);
    assert!(text.lines().any(|l| l.starts_with("apiserver_request_total{code=\"201\"") && l.contains("resource=\"configmaps\"")
        && l.contains("verb=\"POST\"") && l.contains("scope=\"resource\"")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("apiserver_request_total{code=\"200\"") && l.contains("resource=\"configmaps\"")
        && l.contains("verb=\"LIST\"") && l.contains("scope=\"namespace\"")), "{text}");
    assert!(text.contains("apiserver_request_duration_seconds_bucket{"), "{text}");
    // One process on sled runs the controllers without an election, and says so as client-go's elector would.
    assert!(text.lines().any(|l| l == r#"leader_election_master_status{name="kspaces-controllers"} 1"#), "{text}");
}

#[test]
fn only_system_users_read_server_wide_endpoints() {
    let (server, _tokens) = server();
    let tenant_admin = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[]));
    // The tenant admin's admin-role allows every non-resource URL of their space...
    assert!(tenant_admin.ok(&["get", "--raw", "/version"]).contains("gitVersion"));
    // ...but /metrics and /debug/* show the whole server.
    for path in ["/metrics", "/debug/pprof/", "/metrics/slis"] {
        let stderr = tenant_admin.fails(&["get", "--raw", path]);
        assert!(stderr.contains(&format!("Error from server (Forbidden): forbidden: User \"admin\" cannot get path \"{path}\"")), "{path}: {stderr}");
        for http in [Http::One, Http::Two] {
            let (code, body) = curl(&server, http, Some("a-token"), "GET", path, None);
            assert_eq!(code, 403, "{path} over {http:?}: {body}");
            assert!(body.contains("\"reason\":\"Forbidden\""), "{body}");
        }
        let (code, _) = curl(&server, Http::One, None, "GET", path, None);
        assert_eq!(code, 401, "{path} anonymously");
    }
    let can_i = tenant_admin.run(&["auth", "can-i", "get", "/metrics"]);
    assert!(String::from_utf8_lossy(&can_i.stdout).starts_with("no"), "{can_i:?}");
    // System users read it; /debug/* is not served (404 after authorization).
    assert!(server.kubectl().ok(&["get", "--raw", "/metrics"]).contains("apiserver_request_total"));
    let (code, _) = curl(&server, Http::Two, Some("root-token"), "GET", "/debug/pprof/", None);
    assert_eq!(code, 404);
}
