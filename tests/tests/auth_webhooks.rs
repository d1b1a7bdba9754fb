//! The platform's token webhook (`--authentication-token-webhook-config-file`, TokenReview) and authorization
//! webhook (`--authorization-mode RBAC,Webhook`, SubjectAccessReview), against a real HTTPS hook (`hook.rs`)
//! through kubectl 1.32 and curl: who a webhook user is, what the reviews carry, the caches, a hook that is down
//! or answers garbage, tenants kept apart whatever the hook allows, and files that are not kubeconfigs.

#[path = "auth_webhooks/hook.rs"]
mod hook;

use std::time::Duration;

use hook::{Hook, Mode};
use kspaces_tests::{create_tenant, curl, eventually, grant, refused_start, token_file, token_kubeconfig, Http, Kubectl, Server};
use serde_json::{json, Value};

/// The TokenReviews the hook got for `token`.
fn reviews_of(hook: &Hook, token: &str) -> usize {
    hook.log().iter().filter(|entry| entry["spec"]["token"] == token).count()
}

#[test]
fn token_webhook_users_are_who_the_webhook_says_and_failures_are_401() {
    let hook = Hook::start(|spec| match spec["token"].as_str() {
        Some("jane-token") => json!({"authenticated": true, "user": {"username": "jane", "uid": "u-1", "groups": ["dev"],
            "extra": {"kspaces.io/tenant": ["t-a"], "example.com/scope": ["read", "write"]}}}),
        _ => json!({"authenticated": false, "error": "unknown token"}),
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let config = hook.kubeconfig(dir.path(), "authn", Some("hook-secret"));
    let tokens = token_file(&["static-token,sam,2,\"\",,t-a"]);
    let audit = dir.path().join("audit.log");
    let server = Server::start_with(&["--authentication-token-webhook-config-file", config.to_str().expect("utf-8"),
        "--token-auth-file", tokens.path().to_str().expect("utf-8"), "--audit-log-path", audit.to_str().expect("utf-8")]);
    create_tenant(&server.kubectl(), "t-a");

    let jane = Kubectl::new(&token_kubeconfig(&server, "jane-token"));
    let whoami: Value = serde_json::from_str(&jane.ok(&["auth", "whoami", "-o", "json"])).expect("whoami prints JSON");
    let user = &whoami["status"]["userInfo"];
    assert_eq!(user["username"], "jane", "{whoami}");
    assert_eq!(user["uid"], "u-1", "{whoami}");
    assert_eq!(user["groups"], json!(["dev", "system:authenticated"]), "{whoami}");
    assert_eq!(user["extra"], json!({"kspaces.io/tenant": ["t-a"], "example.com/scope": ["read", "write"]}), "{whoami}");
    let table = jane.ok(&["auth", "whoami"]);
    assert!(table.contains("jane") && table.contains("example.com/scope"), "kubectl's table shows the extra: {table}");
    // Jane is t-a's: her short paths reach t-a's space (RBAC there refuses her: she has no binding).
    let refused = jane.fails(&["get", "configmaps", "-n", "default"]);
    assert!(refused.contains("User \"jane\" cannot list resource \"configmaps\""), "{refused}");

    // The audit log names her as kube's does, extra included.
    let logged = std::fs::read_to_string(&audit).expect("audit log");
    let event: Value = logged.lines().filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["user"]["username"] == "jane").expect("an audit event of jane's");
    assert_eq!(event["user"]["extra"]["example.com/scope"], json!(["read", "write"]), "{event}");

    let log = hook.log();
    let first = log.iter().find(|entry| entry["spec"]["token"] == "jane-token").expect("the hook was asked about jane's token");
    assert_eq!(first["authorization"], "Bearer hook-secret", "the kubeconfig's token is sent: {first}");
    assert!(first["spec"]["audiences"].is_array(), "{first}");
    assert_eq!(reviews_of(&hook, "jane-token"), 1, "later requests within the TTL are answered from the cache: {log:?}");

    let (code, body) = curl(&server, Http::One, Some("who-knows"), "GET", "/api", None);
    assert_eq!(code, 401, "{body}");
    assert_eq!(reviews_of(&hook, "who-knows"), 1);
    // The static token is the token file's: the hook is asked only about tokens no other authenticator accepts.
    let sam = Kubectl::new(&token_kubeconfig(&server, "static-token"));
    assert!(sam.ok(&["auth", "whoami"]).contains("sam"));
    assert_eq!(reviews_of(&hook, "static-token"), 0);

    hook.set_mode(Mode::Down);
    let (code, body) = curl(&server, Http::One, Some("down-token"), "GET", "/api", None);
    assert_eq!(code, 401, "a hook that is down authenticates nobody: {body}");
    assert!(sam.ok(&["auth", "whoami"]).contains("sam"), "other credentials keep working");
    assert!(server.kubectl().ok(&["get", "namespaces"]).contains("default"));
    hook.set_mode(Mode::Garbage);
    let (code, body) = curl(&server, Http::One, Some("garbage-token"), "GET", "/api", None);
    assert_eq!(code, 401, "an answer that is not a TokenReview authenticates nobody: {body}");
    assert_eq!(reviews_of(&hook, "garbage-token"), 1);
    // Failures are not remembered: the hook back up is asked again.
    hook.set_mode(Mode::Answer);
    let (code, body) = curl(&server, Http::One, Some("garbage-token"), "GET", "/api", None);
    assert_eq!((code, reviews_of(&hook, "garbage-token")), (401, 2), "{body}");
}

/// The SubjectAccessReviews the hook got from `user`, for `resource`.
fn asked(hook: &Hook, user: &str, resource: &str) -> Vec<Value> {
    hook.log().into_iter().map(|entry| entry["spec"].clone())
        .filter(|spec| spec["user"] == user && spec["resourceAttributes"]["resource"] == resource).collect()
}

#[test]
fn authorization_webhook_is_asked_after_rbac_and_never_crosses_tenants() {
    let hook = Hook::start(|spec| {
        let resource = spec["resourceAttributes"]["resource"].as_str().unwrap_or_default();
        match spec["user"].as_str().unwrap_or_default() {
            "alice" if resource == "configmaps" => json!({"allowed": true, "reason": "alice may read configmaps"}),
            "bob" => json!({"allowed": false, "denied": true, "reason": "bob is on leave"}),
            "carol" => json!({"allowed": true}),
            _ => json!({"allowed": false}),
        }
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let config = hook.kubeconfig(dir.path(), "authz", None);
    let tokens = token_file(&["alice-token,alice,10,\"\",,t-a", "bob-token,bob,11,\"\",,t-a", "carol-token,carol,12,\"\",,t-b"]);
    let server = Server::start_with(&["--authorization-mode", "RBAC,Webhook", "--authorization-webhook-config-file", config.to_str().expect("utf-8"),
        "--token-auth-file", tokens.path().to_str().expect("utf-8")]);
    let system = server.kubectl();
    create_tenant(&system, "t-a");
    create_tenant(&system, "t-b");

    // RBAC gives alice nothing; the webhook allows her configmaps.
    let alice = Kubectl::new(&token_kubeconfig(&server, "alice-token"));
    alice.ok(&["create", "configmap", "from-alice", "-n", "default"]);
    assert!(alice.ok(&["get", "configmaps", "-n", "default"]).contains("from-alice"));
    let reviews = asked(&hook, "alice", "configmaps");
    let list = reviews.iter().find(|spec| spec["resourceAttributes"]["verb"] == "list").expect("the list was asked about");
    assert_eq!(list["resourceAttributes"], json!({"namespace": "default", "verb": "list", "version": "v1", "resource": "configmaps"}), "{list}");
    assert_eq!(list["uid"], "10", "{list}");
    assert_eq!(list["extra"]["kspaces.io/tenant"], json!(["t-a"]), "the review names the tenant: {list}");
    assert_eq!(list["extra"]["kspaces.io/space"], json!(["root:t-a"]), "and the workspace: {list}");
    assert!(list["groups"].as_array().is_some_and(|g| g.contains(&json!("system:authenticated"))), "{list}");
    assert!(hook.log().iter().all(|entry| entry["clientCertificate"] == true), "the kubeconfig's client certificate is presented");
    // Allowed within the TTL: the second identical request is not sent.
    let before = asked(&hook, "alice", "configmaps").len();
    alice.ok(&["get", "configmaps", "-n", "default"]);
    assert_eq!(asked(&hook, "alice", "configmaps").len(), before, "answered from the cache");
    // No opinion from the webhook, nothing from RBAC: 403.
    let refused = alice.fails(&["get", "secrets", "-n", "default"]);
    assert!(refused.contains("Forbidden") && refused.contains("cannot list resource \"secrets\""), "{refused}");
    // What RBAC allows is not asked about.
    grant(&system, "t-a", "default", "view", "alice");
    alice.ok(&["get", "pods", "-n", "default"]);
    assert!(asked(&hook, "alice", "pods").is_empty(), "{:?}", hook.log());

    // A definite no, with the webhook's reason.
    let bob = Kubectl::new(&token_kubeconfig(&server, "bob-token"));
    let refused = bob.fails(&["get", "configmaps", "-n", "default"]);
    assert!(refused.contains("bob is on leave"), "{refused}");
    // kubectl auth can-i agrees: access reviews ask the webhook as requests do.
    assert_eq!(alice.ok(&["auth", "can-i", "delete", "configmaps", "-n", "default"]).trim(), "yes");
    let answer = bob.run(&["auth", "can-i", "delete", "configmaps", "-n", "default"]);
    assert_eq!(String::from_utf8_lossy(&answer.stdout), "no - bob is on leave\n", "kubectl prints the webhook's reason");

    // Carol (t-b), whom the webhook allows everything, still cannot reach t-a: tenancy refuses her first.
    let carol = Kubectl::new(&token_kubeconfig(&server, "carol-token"));
    carol.ok(&["get", "configmaps", "-n", "default"]);
    for path in ["/api/v1/tenants/t-a/namespaces/default/configmaps", "/clusters/root:t-a/api/v1/namespaces/default/configmaps",
        "/api/v1/tenants/t-a/namespaces/default/configmaps/from-alice"] {
        let (code, body) = curl(&server, Http::One, Some("carol-token"), "GET", path, None);
        assert!(code == 403 || code == 404, "GET {path} as carol: {code} {body}");
        assert!(!body.contains("\"kind\":\"ConfigMap"), "{body}");
    }
    let (code, body) = curl(&server, Http::One, Some("carol-token"), "DELETE", "/api/v1/tenants/t-a/namespaces/default/configmaps/from-alice", None);
    assert!(code == 403 || code == 404, "{code} {body}");
    let carols = asked(&hook, "carol", "configmaps");
    assert!(!carols.is_empty() && carols.iter().all(|spec| spec["extra"]["kspaces.io/tenant"] == json!(["t-b"])
        && spec["extra"]["kspaces.io/space"] == json!(["root:t-b"])), "the webhook was only ever asked about t-b: {:?}", hook.log());
    assert!(alice.ok(&["get", "configmaps", "-n", "default"]).contains("from-alice"), "t-a's configmap is still there");

    // A hook that is down or answers garbage: 403 with the failure, never 500; RBAC's allows keep working.
    hook.set_mode(Mode::Down);
    let refused = alice.fails(&["get", "configmaps", "-n", "kube-system"]);
    assert!(refused.contains("Forbidden") && refused.contains("authorization webhook"), "{refused}");
    hook.set_mode(Mode::Garbage);
    let refused = alice.fails(&["get", "configmaps", "-n", "kube-public"]);
    assert!(refused.contains("Forbidden") && refused.contains("not a SubjectAccessReview"), "{refused}");
    assert!(system.ok(&["get", "namespaces"]).contains("default"));
}

#[test]
fn webhook_files_that_are_not_kubeconfigs_stop_the_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("missing.kubeconfig");
    let missing = missing.to_str().expect("utf-8");
    let not_kubeconfig = dir.path().join("tokens.csv");
    std::fs::write(&not_kubeconfig, "token,user,uid\n").expect("write");
    let not_kubeconfig = not_kubeconfig.to_str().expect("utf-8");
    let data = |name: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(&path).expect("data dir");
        path
    };
    let stderr = refused_start(&data("a"), &["--authentication-token-webhook-config-file", missing]);
    assert!(stderr.contains("--authentication-token-webhook-config-file") && stderr.contains("missing.kubeconfig"), "{stderr}");
    let stderr = refused_start(&data("b"), &["--authentication-token-webhook-config-file", not_kubeconfig]);
    assert!(stderr.contains("not a kubeconfig"), "{stderr}");
    let stderr = refused_start(&data("c"), &["--authorization-mode", "RBAC,Webhook", "--authorization-webhook-config-file", not_kubeconfig]);
    assert!(stderr.contains("--authorization-webhook-config-file") && stderr.contains("not a kubeconfig"), "{stderr}");
    let stderr = refused_start(&data("d"), &["--authorization-mode", "RBAC,Webhook"]);
    assert!(stderr.contains("needs --authorization-webhook-config-file"), "{stderr}");
    let stderr = refused_start(&data("e"), &["--authentication-token-webhook-version", "v1beta1"]);
    assert!(stderr.contains("only v1 is supported"), "{stderr}");
}

#[test]
fn webhook_answers_are_asked_again_once_their_ttl_has_passed() {
    let hook = Hook::start(|spec| match spec.get("token") {
        Some(_) => json!({"authenticated": true, "user": {"username": "jane", "extra": {"kspaces.io/tenant": ["t-a"]}}}),
        None => json!({"allowed": false, "reason": "not today"}),
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let authn = hook.kubeconfig(dir.path(), "authn", Some("hook-secret"));
    let authz = hook.kubeconfig(dir.path(), "authz", Some("hook-secret"));
    let server = Server::start_with(&["--authentication-token-webhook-config-file", authn.to_str().expect("utf-8"),
        "--authentication-token-webhook-cache-ttl", "3s", "--authorization-mode", "RBAC,Webhook",
        "--authorization-webhook-config-file", authz.to_str().expect("utf-8"), "--authorization-webhook-cache-unauthorized-ttl", "3s"]);
    create_tenant(&server.kubectl(), "t-a");
    let list = || curl(&server, Http::One, Some("jane-token"), "GET", "/api/v1/namespaces/default/secrets", None);
    let secrets = || asked(&hook, "jane", "secrets").len();
    let (code, body) = list();
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("not today"), "{body}");
    list();
    assert_eq!((reviews_of(&hook, "jane-token"), secrets()), (1, 1), "within the TTLs, from the caches");
    std::thread::sleep(Duration::from_millis(3300));
    assert_eq!(list().0, 403);
    assert_eq!((reviews_of(&hook, "jane-token"), secrets()), (2, 2), "past them, asked again");
}

#[test]
fn a_webhook_user_naming_no_tenant_gets_the_default_one_and_reserved_tenants_are_refused() {
    let hook = Hook::start(|spec| match spec["token"].as_str() {
        Some("ted-token") => json!({"authenticated": true, "user": {"username": "ted"}}),
        Some("users-token") => json!({"authenticated": true, "user": {"username": "mallory", "extra": {"kspaces.io/tenant": ["users"]}}}),
        _ => json!({"authenticated": false}),
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let config = hook.kubeconfig(dir.path(), "authn", None);
    let server = Server::start_with(&["--authentication-token-webhook-config-file", config.to_str().expect("utf-8"), "--default-tenant", "t-d"]);
    let ted = Kubectl::new(&token_kubeconfig(&server, "ted-token"));
    let whoami: Value = serde_json::from_str(&ted.ok(&["auth", "whoami", "-o", "json"])).expect("whoami prints JSON");
    assert_eq!(whoami["status"]["userInfo"]["extra"], json!({"kspaces.io/tenant": ["t-d"]}), "{whoami}");
    assert!(hook.log().iter().all(|entry| entry["authorization"].is_null() && entry["clientCertificate"] == true));
    let (code, body) = curl(&server, Http::One, Some("users-token"), "GET", "/api", None);
    assert_eq!(code, 401, "a reserved tenant is refused as for every credential: {body}");
}

#[test]
fn an_exports_maximal_permission_policy_is_its_workspaces_rbac_only() {
    let hook = Hook::start(|_| json!({"allowed": true, "reason": "the hook allows everything"}));
    let dir = tempfile::tempdir().expect("temp dir");
    let config = hook.kubeconfig(dir.path(), "authz", None);
    let tokens = token_file(&["dana-token,dana,20,\"\",,t-a"]);
    let server = Server::start_with(&["--authorization-mode", "RBAC,Webhook", "--authorization-webhook-config-file", config.to_str().expect("utf-8"),
        "--token-auth-file", tokens.path().to_str().expect("utf-8")]);
    create_tenant(&server.kubectl(), "t-a");
    let call = |method: &str, path: &str, body: Option<Value>| {
        let (code, text) = curl(&server, Http::One, Some("dana-token"), method, path, body.map(|b| b.to_string()).as_deref());
        (code, serde_json::from_str::<Value>(&text).unwrap_or(Value::Null))
    };
    let wait = |path: &str, ready: &dyn Fn(&Value) -> bool| {
        let mut last = Value::Null;
        assert!(eventually(Duration::from_secs(20), || {
            last = call("GET", path, None).1;
            ready(&last)
        }), "{path}: {last}");
    };
    for name in ["mpp-provider", "mpp-consumer"] {
        let workspace = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name},
            "spec": {"type": {"name": "universal", "path": "root"}}});
        assert_eq!(call("POST", "/clusters/root:t-a/apis/tenancy.kcp.io/v1alpha1/workspaces", Some(workspace)).0, 201);
        wait(&format!("/clusters/root:t-a/apis/tenancy.kcp.io/v1alpha1/workspaces/{name}"), &|w| w["status"]["phase"] == "Ready");
    }
    let apis = |path: &str, rest: &str| format!("/clusters/root:t-a:{path}/apis/apis.kcp.io/v1alpha1/{rest}");
    let schema = json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema", "metadata": {"name": "v1.widgets.example.io"},
        "spec": {"group": "example.io", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"type": "object"}}]}});
    let export = json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": "widgets"},
        "spec": {"latestResourceSchemas": ["v1.widgets.example.io"], "maximalPermissionPolicy": {"local": {}}}});
    assert_eq!(call("POST", &apis("mpp-provider", "apiresourceschemas"), Some(schema)).0, 201);
    assert_eq!(call("POST", &apis("mpp-provider", "apiexports"), Some(export)).0, 201);
    wait(&apis("mpp-provider", "apiexports/widgets"), &|e| e["status"]["identityHash"].as_str().is_some_and(|h| !h.is_empty()));
    let binding = json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "widgets"},
        "spec": {"reference": {"export": {"path": "root:t-a:mpp-provider", "name": "widgets"}}}});
    assert_eq!(call("POST", &apis("mpp-consumer", "apibindings"), Some(binding)).0, 201);
    wait(&apis("mpp-consumer", "apibindings/widgets"), &|b| b["status"]["phase"] == "Bound");

    // The provider's RBAC grants the prefixed caller nothing: refused, whatever the webhook would have said.
    let widgets = "/clusters/root:t-a:mpp-consumer/apis/example.io/v1/namespaces/default/widgets";
    let mut answer = (0, Value::Null);
    assert!(eventually(Duration::from_secs(20), || {
        answer = call("GET", widgets, None);
        answer.0 != 404
    }), "{answer:?}");
    assert_eq!(answer.0, 403, "{answer:?}");
    assert!(answer.1["message"].as_str().unwrap_or_default().contains("maximal permission policy"), "{answer:?}");
    assert!(hook.log().iter().all(|entry| !entry["spec"]["user"].as_str().unwrap_or_default().starts_with("apis.kcp.io:binding:")),
        "the webhook is never asked about the prefixed caller: {:?}", hook.log());
}
