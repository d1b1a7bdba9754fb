//! Authorization through kubectl, as tenants use it: RBAC inside a tenant's space (a `view` grant in one
//! namespace, `auth can-i` agreeing with what the server then does), escalation prevention, ClusterRole
//! aggregation, service-account tokens on short paths, impersonation and `--authorization-mode AlwaysAllow`.

use std::time::Duration;

use kspaces_tests::{certificate_kubeconfig, create_tenant, eventually, token_kubeconfig_for_url, Kubectl, Server};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(20);

/// A server with tenants t-a and t-b; kubectl as the system administrator and as t-a's `admin`, who has made
/// namespaces `dev` and `prod` with a config map and a secret in each.
struct Fixture {
    server: Server,
    system: Kubectl,
    admin: Kubectl,
}

fn fixture(extra: &[&str]) -> Fixture {
    let server = Server::start_with(extra);
    let system = server.kubectl();
    for tenant in ["t-a", "t-b"] {
        create_tenant(&system, tenant);
    }
    let admin = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[]));
    for namespace in ["dev", "prod"] {
        admin.ok(&["create", "namespace", namespace]);
        admin.ok(&["create", "configmap", "settings", "-n", namespace, "--from-literal=k=v"]);
        admin.ok(&["create", "secret", "generic", "password", "-n", namespace, "--from-literal=p=s"]);
    }
    Fixture { server, system, admin }
}

impl Fixture {
    /// kubectl as `user` of `tenant` (a client certificate).
    fn user(&self, tenant: &str, user: &str) -> Kubectl {
        Kubectl::new(&certificate_kubeconfig(&self.server, tenant, user, &[]))
    }
}

/// `kubectl auth can-i ...`: true for "yes" (exit 0), false for "no" (exit 1).
fn can_i(kubectl: &Kubectl, args: &[&str]) -> bool {
    let mut full = vec!["auth", "can-i"];
    full.extend_from_slice(args);
    let output = kubectl.run(&full);
    let answer = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert!(answer == "yes" || answer == "no", "kubectl auth can-i {args:?}: {answer} {}", String::from_utf8_lossy(&output.stderr));
    answer == "yes" && output.status.success()
}

/// kubectl prints a 403 as `Error from server (Forbidden): ...`, or for some commands `error: failed to create
/// <kind>: ... is forbidden: ...`.
fn forbidden(stderr: &str, context: &str) {
    assert!(stderr.contains("Error from server (Forbidden)") || stderr.contains(" is forbidden: "), "{context}: expected Forbidden, got: {stderr}");
}

#[test]
fn a_view_grant_in_one_namespace_reaches_that_namespace_only_and_can_i_agrees() {
    let f = fixture(&[]);
    let alice = f.user("t-a", "alice");
    forbidden(&alice.fails(&["get", "configmaps", "-n", "dev"]), "alice before any grant");
    assert!(!can_i(&alice, &["list", "configmaps", "-n", "dev"]));

    f.admin.ok(&["create", "rolebinding", "alice-view", "--clusterrole", "view", "--user", "alice", "-n", "dev"]);
    assert!(alice.ok(&["get", "configmaps", "-n", "dev", "-o", "name"]).contains("configmap/settings"));
    let refused = alice.fails(&["get", "configmaps", "-n", "prod"]);
    assert!(refused.contains(r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "prod""#), "{refused}");
    let refused = alice.fails(&["get", "configmaps", "-A"]);
    assert!(refused.contains(r#"User "alice" cannot list resource "configmaps" in API group "" at the cluster scope"#), "{refused}");
    forbidden(&alice.fails(&["get", "secrets", "-n", "dev"]), "view does not show secrets");
    forbidden(&alice.fails(&["create", "configmap", "mine", "-n", "dev"]), "view does not write");
    forbidden(&alice.fails(&["get", "namespaces"]), "view in dev does not list namespaces");

    // `auth can-i` answers exactly what the server then does.
    let cases: [(&[&str], &[&str]); 6] = [
        (&["list", "configmaps", "-n", "dev"], &["get", "configmaps", "-n", "dev"]),
        (&["get", "configmaps/settings", "-n", "dev"], &["get", "configmap", "settings", "-n", "dev"]),
        (&["list", "configmaps", "-n", "prod"], &["get", "configmaps", "-n", "prod"]),
        (&["list", "secrets", "-n", "dev"], &["get", "secrets", "-n", "dev"]),
        (&["list", "configmaps", "-A"], &["get", "configmaps", "-A"]),
        (&["delete", "configmaps/settings", "-n", "dev"], &["delete", "configmap", "settings", "-n", "dev"]),
    ];
    for (question, action) in cases {
        let answer = can_i(&alice, question);
        let done = alice.run(action).status.success();
        assert_eq!(answer, done, "can-i {question:?} said {answer}, but {action:?} succeeded: {done}");
    }
    let list = alice.ok(&["auth", "can-i", "--list", "-n", "dev"]);
    let line = list.lines().find(|l| l.starts_with("configmaps ")).unwrap_or_else(|| panic!("no configmaps rule: {list}"));
    assert!(line.contains("[get list watch]"), "{line}");
    assert!(!alice.ok(&["auth", "can-i", "--list", "-n", "prod"]).lines().any(|l| l.starts_with("configmaps ")));

    // The grant is t-a's: t-b's alice is another user, and t-a's admin cannot reach t-b at all.
    let other_alice = f.user("t-b", "alice");
    forbidden(&other_alice.fails(&["get", "configmaps", "-n", "dev"]), "t-b's alice");
    assert!(!can_i(&other_alice, &["list", "configmaps", "-n", "dev"]));
    // The system administrator sees everything, through the tenant's path.
    let path = "/api/v1/tenants/t-a/namespaces/prod/secrets";
    assert!(f.system.ok(&["get", "--raw", path]).contains("password"));
}

#[test]
fn users_cannot_grant_more_than_they_hold() {
    let f = fixture(&[]);
    // bob may read config maps and manage role bindings in dev, nothing more.
    f.admin.ok(&["create", "role", "binder", "-n", "dev", "--verb=get,list,watch", "--resource=configmaps"]);
    f.admin.ok(&["create", "role", "rolebinding-manager", "-n", "dev", "--verb=create,get,list,delete", "--resource=rolebindings.rbac.authorization.k8s.io,roles.rbac.authorization.k8s.io"]);
    f.admin.ok(&["create", "rolebinding", "bob-binder", "--role", "binder", "--user", "bob", "-n", "dev"]);
    f.admin.ok(&["create", "rolebinding", "bob-manager", "--role", "rolebinding-manager", "--user", "bob", "-n", "dev"]);
    let bob = f.user("t-a", "bob");

    let refused = bob.fails(&["create", "rolebinding", "carol-admin", "--clusterrole", "admin", "--user", "carol", "-n", "dev"]);
    forbidden(&refused, "binding a stronger role");
    assert!(refused.contains("is attempting to grant RBAC permissions not currently held"), "{refused}");
    let refused = bob.fails(&["create", "role", "secret-reader", "-n", "dev", "--verb=get", "--resource=secrets"]);
    assert!(refused.contains("is attempting to grant RBAC permissions not currently held"), "{refused}");
    forbidden(&bob.fails(&["create", "rolebinding", "carol-admin", "--clusterrole", "admin", "--user", "carol", "-n", "prod"]),
        "bob has no rights in prod");

    // What bob holds he may pass on, and a role he holds is one he may create.
    bob.ok(&["create", "rolebinding", "carol-binder", "--role", "binder", "--user", "carol", "-n", "dev"]);
    bob.ok(&["create", "role", "cm-reader", "-n", "dev", "--verb=get", "--resource=configmaps"]);
    let carol = f.user("t-a", "carol");
    assert!(carol.ok(&["get", "configmaps", "-n", "dev", "-o", "name"]).contains("settings"));

    // With the bind verb on a role, he may bind it even though he does not hold it.
    f.admin.ok(&["create", "clusterrole", "bind-admin", "--verb=bind", "--resource=clusterroles.rbac.authorization.k8s.io", "--resource-name=admin"]);
    f.admin.ok(&["create", "rolebinding", "bob-bind-admin", "--clusterrole", "bind-admin", "--user", "bob", "-n", "dev"]);
    bob.ok(&["create", "rolebinding", "carol-admin", "--clusterrole", "admin", "--user", "carol", "-n", "dev"]);
    assert!(carol.ok(&["get", "secrets", "-n", "dev", "-o", "name"]).contains("password"));
}

/// The rules of ClusterRole `name`, as JSON text.
fn rules(kubectl: &Kubectl, name: &str) -> String {
    let role: Value = serde_json::from_str(&kubectl.ok(&["get", "clusterrole", name, "-o", "json"])).expect("json");
    role["rules"].to_string()
}

#[test]
fn aggregated_roles_follow_labelled_cluster_roles() {
    let f = fixture(&[]);
    let view = rules(&f.admin, "view");
    assert!(view.contains("configmaps") && !view.contains("secrets"), "bootstrap view: {view}");
    assert!(rules(&f.admin, "edit").contains("secrets"), "edit aggregates write access to secrets");
    let widgets = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "widgets-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}],
    });
    f.admin.ok_with_stdin(&["create", "-f", "-"], &widgets.to_string());
    for role in ["view", "edit", "admin"] {
        let picked = eventually(TIMEOUT, || rules(&f.admin, role).contains("widgets"));
        assert!(picked, "{role} picks up widgets-view: {}", rules(&f.admin, role));
    }
    // Another tenant's view is not touched.
    let other = f.user("t-b", "admin");
    assert!(!rules(&other, "view").contains("widgets"));
    f.admin.ok(&["delete", "clusterrole", "widgets-view"]);
    let dropped = eventually(TIMEOUT, || !rules(&f.admin, "view").contains("widgets"));
    assert!(dropped, "view drops widgets once widgets-view is gone: {}", rules(&f.admin, "view"));
}

#[test]
fn service_account_tokens_authenticate_on_short_paths() {
    let f = fixture(&[]);
    f.admin.ok(&["create", "serviceaccount", "bot", "-n", "dev"]);
    f.admin.ok(&["create", "rolebinding", "bot-view", "--clusterrole", "view", "--serviceaccount", "dev:bot", "-n", "dev"]);
    let token = f.admin.ok(&["create", "token", "bot", "-n", "dev", "--duration", "1h"]);
    let token = token.trim();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");

    // The server's own URL: short paths, resolved to t-a by the token's tenant claim.
    let bot = Kubectl::new(&token_kubeconfig_for_url(&f.server, token, &f.server.url));
    assert!(bot.ok(&["get", "configmaps", "-n", "dev", "-o", "name"]).contains("settings"));
    let refused = bot.fails(&["get", "configmaps", "-n", "prod"]);
    assert!(refused.contains(r#"User "system:serviceaccount:dev:bot" cannot list resource "configmaps""#), "{refused}");
    let whoami = bot.ok(&["auth", "whoami", "-o", "json"]);
    let whoami: Value = serde_json::from_str(&whoami).expect("json");
    let info = &whoami["status"]["userInfo"];
    assert_eq!(info["username"], "system:serviceaccount:dev:bot");
    assert_eq!(info["extra"]["kspaces.io/tenant"], json!(["t-a"]));
    let groups = info["groups"].to_string();
    assert!(groups.contains("system:serviceaccounts:dev") && groups.contains("system:authenticated"), "{groups}");
    let jwks: Value = serde_json::from_str(&bot.ok(&["get", "--raw", "/openid/v1/jwks"])).expect("jwks");
    assert!(jwks["keys"].as_array().is_some_and(|k| !k.is_empty()), "{jwks}");

    // A TokenReview in t-a says who the token is; one in t-b says nothing.
    // (`create --raw`: `create -f` validates client-side with OpenAPI v2 protobuf for create-only kinds, which
    // kspaces does not serve.)
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}});
    let reviews = "/apis/authentication.k8s.io/v1/tokenreviews";
    let reviewed: Value = serde_json::from_str(&f.admin.ok_with_stdin(&["create", "--raw", reviews, "-f", "-"], &review.to_string())).expect("json");
    assert_eq!(reviewed["status"]["authenticated"], true, "{reviewed}");
    assert_eq!(reviewed["status"]["user"]["username"], "system:serviceaccount:dev:bot");
    let other = f.user("t-b", "admin");
    let reviewed: Value = serde_json::from_str(&other.ok_with_stdin(&["create", "--raw", reviews, "-f", "-"], &review.to_string())).expect("json");
    assert_eq!(reviewed["status"]["authenticated"], false, "{reviewed}");

    // Deleting the service account revokes its tokens.
    f.admin.ok(&["delete", "serviceaccount", "bot", "-n", "dev"]);
    let refused = bot.fails(&["get", "configmaps", "-n", "dev"]);
    assert!(refused.contains("Unauthorized") || refused.contains("provide credentials"), "{refused}");
}

#[test]
fn impersonation_needs_the_impersonate_verb_and_stays_in_the_tenant() {
    let f = fixture(&[]);
    f.admin.ok(&["create", "rolebinding", "alice-view", "--clusterrole", "view", "--user", "alice", "-n", "dev"]);
    let alice = f.user("t-a", "alice");
    // (`--raw`: kubectl prints discovery's 403 without its message.)
    let refused = alice.fails(&["get", "--raw", "/api/v1/namespaces/dev/configmaps", "--as", "admin"]);
    assert!(refused.contains(r#"User "alice" cannot impersonate resource "users" in API group """#), "{refused}");

    // t-a's admin holds every verb in t-a, impersonate included, and becomes t-a's alice.
    assert!(f.admin.ok(&["get", "configmaps", "-n", "dev", "--as", "alice", "-o", "name"]).contains("settings"));
    let refused = f.admin.fails(&["get", "configmaps", "-n", "prod", "--as", "alice"]);
    assert!(refused.contains(r#"User "alice" cannot list resource "configmaps""#), "{refused}");
    let whoami: Value = serde_json::from_str(&f.admin.ok(&["auth", "whoami", "--as", "alice", "-o", "json"])).expect("json");
    assert_eq!(whoami["status"]["userInfo"]["extra"]["kspaces.io/tenant"], json!(["t-a"]));
    // ... but never a user of another tenant, nor a system user.
    let refused = f.admin.fails(&["get", "configmaps", "--as", "admin", "--as-group", "tenant:t-b"]);
    assert!(refused.contains("only impersonate users of their own tenant"), "{refused}");
    let masters = f.admin.run(&["get", "--raw", "/api/v1/tenants", "--as", "admin", "--as-group", "system:masters"]);
    assert!(!masters.status.success(), "system:masters in a tenant is powerless: {}", String::from_utf8_lossy(&masters.stdout));

    // A system administrator may become a tenant's user, naming the tenant.
    let listed = f.system.ok(&["get", "configmaps", "-n", "dev", "--as", "alice", "--as-group", "tenant:t-a", "-o", "name"]);
    assert!(listed.contains("settings"), "{listed}");
    forbidden(&f.system.fails(&["get", "secrets", "-n", "dev", "--as", "alice", "--as-group", "tenant:t-a"]), "as t-a's alice");
}

#[test]
fn always_allow_lets_every_user_do_anything_inside_their_own_tenant() {
    let f = fixture(&["--authorization-mode", "AlwaysAllow"]);
    let alice = f.user("t-a", "alice");
    assert!(alice.ok(&["get", "secrets", "-n", "prod", "-o", "name"]).contains("password"));
    alice.ok(&["create", "configmap", "mine", "-n", "dev"]);
    forbidden(&alice.fails(&["get", "--raw", "/api/v1/tenants/t-b/namespaces/default/configmaps"]), "another tenant");
}
