//! kcp's kubectl plugins as kspaces builds them (`kubectl ws`, `kubectl create workspace`, `kubectl kcp`): the real
//! binaries, dispatched by the real kubectl 1.32 as a user runs them (`KUBECONFIG`, the plugins on `PATH`), against
//! a small in-memory kcp (`kubectl_plugins/fake_kcp.rs`) serving the endpoints they call. What each command prints
//! is kcp's text; what each leaves in the kubeconfig is read back with kube-rs' loader.

#[path = "kubectl_plugins/fake_kcp.rs"]
mod fake_kcp;

use std::path::{Path, PathBuf};

use fake_kcp::FakeKcp;
use kspaces_tests::{current_server, PluginKubectl};
use serde_json::json;

/// A fake kcp holding a tree, and kubectl with a kubeconfig pointing at one workspace of it:
///
/// ```text
/// root
/// ├── org (organization)       ├── team-a (team) ── dev
/// │                            └── team-b (team)
/// ├── provider (universal)     (exports widgets)
/// ├── secret (universal)       (the caller may not enter it)
/// └── users ── ab ── cd ── alice (home) ── sub
/// ```
struct Fixture {
    kcp: FakeKcp,
    kubectl: PluginKubectl,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

fn fixture(start: &str) -> Fixture {
    let kcp = FakeKcp::start();
    for (path, type_name) in [
        ("root:org", "organization"),
        ("root:org:team-a", "team"),
        ("root:org:team-a:dev", "universal"),
        ("root:org:team-b", "team"),
        ("root:provider", "universal"),
        ("root:secret", "universal"),
        ("root:users", "homeroot"),
        ("root:users:ab", "homebucket"),
        ("root:users:ab:cd", "homebucket"),
        ("root:users:ab:cd:alice", "home"),
        ("root:users:ab:cd:alice:sub", "universal"),
    ] {
        kcp.add_workspace(path, type_name);
    }
    kcp.forbid("root:secret");
    kcp.add_export("root:provider", "widgets", json!([{"resource": "secrets"}, {"group": "", "resource": "configmaps"}]));
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = kcp.kubeconfig(dir.path(), start);
    let kubectl = PluginKubectl::new(&kubeconfig);
    Fixture { kcp, kubectl, kubeconfig, _dir: dir }
}

impl Fixture {
    /// The server URL of the kubeconfig's current context, read as kubectl's loaders read it.
    fn server(&self) -> String {
        current_server(&self.kubeconfig)
    }

    fn text(&self) -> String {
        std::fs::read_to_string(&self.kubeconfig).expect("read kubeconfig")
    }

    /// `kubectl <args>` succeeds and prints exactly `stdout` (and nothing on stderr).
    fn prints(&self, args: &[&str], stdout: &str) {
        let printed = self.kubectl.ok(args);
        assert_eq!((printed.stdout.as_str(), printed.stderr.as_str()), (stdout, ""), "kubectl {args:?}");
    }

    /// `kubectl <args>` fails with exactly `stderr`, and leaves the kubeconfig as it was.
    fn refuses(&self, args: &[&str], stderr: &str) {
        let before = self.text();
        assert_eq!(self.kubectl.fails(args), stderr, "kubectl {args:?}");
        assert_eq!(self.text(), before, "a failed kubectl {args:?} left the kubeconfig alone");
    }
}

/// The server URL of cluster `name`.
fn cluster_server(kubeconfig: &Path, name: &str) -> Option<String> {
    let config = kube::config::Kubeconfig::read_from(kubeconfig).expect("read");
    config.clusters.iter().find(|c| c.name == name).and_then(|c| c.cluster.clone()).and_then(|c| c.server)
}

#[test]
fn ws_moves_by_absolute_and_relative_paths_and_back() {
    let f = fixture("root");
    let current = |path: &str, type_ref: &str| format!("Current workspace is '{path}' (type {type_ref}).\n");
    f.prints(&["ws", ":root:org"], &current("root:org", "root:organization"));
    assert_eq!(f.server(), f.kcp.url_of("root:org"));
    f.prints(&["ws", "team-a"], &current("root:org:team-a", "root:team"));
    f.prints(&["ws", "cd", "dev"], &current("root:org:team-a:dev", "root:universal"));
    f.prints(&["ws", ".."], &current("root:org:team-a", "root:team"));
    f.prints(&["ws", "-"], "Current workspace is 'root:org:team-a:dev'.\n");
    f.prints(&["ws", "-"], "Current workspace is 'root:org:team-a'.\n");
    f.prints(&["ws", "..:.."], &current("root", "root"));
    f.prints(&["ws", "use", "org:team-b"], &current("root:org:team-b", "root:team"));
    f.prints(&["ws", ":"], "Current workspace is 'root'.\n");
    assert_eq!(f.server(), f.kcp.url_of("root"));

    let legacy = f.kubectl.ok(&["ws", "root:org:team-a"]);
    assert_eq!(legacy.stdout, current("root:org:team-a", "root:team"));
    assert_eq!(legacy.stderr, "Note: Using 'root:' to define an absolute path is no longer supported. Instead, use ':root' to specify an absolute path.\n");

    f.prints(&["ws", "."], "Current workspace is 'root:org:team-a'.\n");
    f.prints(&["ws", "current"], "Current workspace is 'root:org:team-a'.\n");
    f.prints(&["ws", "current", "--short"], "root:org:team-a\n");
    f.prints(&["ws", ".", "--short"], "root:org:team-a\n");
    f.prints(&["ws", "use", "..", "--short"], "root:org\n");

    // `-` and `.` read the kubeconfig only: no request reaches the server.
    let requests = f.kcp.requests().len();
    f.prints(&["ws", "-"], "Current workspace is 'root:org:team-a'.\n");
    f.prints(&["ws", "."], "Current workspace is 'root:org:team-a'.\n");
    assert_eq!(f.kcp.requests().len(), requests);

    // The user's own cluster and context are as they were; the plugins' entries hold the current and the previous
    // workspace, each with the user's credentials and namespace.
    let config = kube::config::Kubeconfig::read_from(&f.kubeconfig).expect("read");
    let cluster = |name: &str| cluster_server(&f.kubeconfig, name);
    let context = |name: &str| config.contexts.iter().find(|c| c.name == name).and_then(|c| c.context.clone()).expect("context");
    assert_eq!(cluster("kcp"), Some(f.kcp.url_of("root")));
    assert_eq!(cluster("workspace.kcp.io/current"), Some(f.kcp.url_of("root:org:team-a")));
    assert_eq!(cluster("workspace.kcp.io/previous"), Some(f.kcp.url_of("root:org")));
    assert_eq!(config.current_context.as_deref(), Some("workspace.kcp.io/current"));
    for name in ["alice", "workspace.kcp.io/current", "workspace.kcp.io/previous"] {
        assert_eq!((context(name).user.as_deref(), context(name).namespace.as_deref()), (Some("alice"), Some("default")), "{name}");
    }
    assert_eq!(context("alice").cluster, "kcp");
}

#[test]
fn ws_goes_home() {
    let f = fixture("root:org");
    let home = "Current workspace is 'root:users:ab:cd:alice' (type root:home).\n";
    let printed = f.kubectl.ok(&["ws"]);
    assert_eq!(printed.stdout, home);
    assert_eq!(
        printed.stderr,
        "Note: 'kubectl ws' now matches 'cd' semantics: go to home workspace. 'kubectl ws -' to go back. 'kubectl ws .' to print current workspace.\n"
    );
    assert!(f.kcp.requests().contains(&"GET /clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/~".to_owned()));
    f.prints(&["ws", ":root:org"], "Current workspace is 'root:org' (type root:organization).\n");
    f.prints(&["ws", "~"], home);
    f.prints(&["ws", "~:sub"], "Current workspace is 'root:users:ab:cd:alice:sub' (type root:universal).\n");
    f.prints(&["ws", "-"], "Current workspace is 'root:users:ab:cd:alice'.\n");
    // A shell expands `kubectl ws ~/sub` before kubectl sees it.
    let expanded = format!("{}/sub", f.kubectl.home().display());
    f.prints(&["ws", &expanded], "Current workspace is 'root:users:ab:cd:alice:sub' (type root:universal).\n");
    f.prints(&["ws", &f.kubectl.home().display().to_string()], home);
}

#[test]
fn ws_refuses_missing_forbidden_and_invalid_targets() {
    let f = fixture("root");
    f.refuses(&["ws", "-"], "Error: no previous workspace found in kubeconfig\n");
    f.refuses(&["ws", "nope"], "Error: workspace \"root:nope\" not found\n");
    f.refuses(&["ws", ":root:org:nope"], "Error: workspace \"root:org:nope\" not found\n");
    f.refuses(&["ws", "secret"], "Error: access to workspace \"root:secret\" denied\n");
    f.refuses(&["ws", ".."], "Error: invalid workspace path: ..\n");
    f.refuses(&["ws", "..:..:.."], "Error: cannot go up from root\n");
    f.refuses(&["ws", "Org"], "Error: invalid workspace path: Org\n");
    f.refuses(&["ws", "-i"], "Error: the interactive workspace browser (-i) is not part of kspaces' kubectl-ws: use 'kubectl ws tree'\n");
    // The target was asked about where kcp asks: discovery in it, then its Workspace in the parent.
    let requests = f.kcp.requests();
    for expected in ["GET /clusters/root:secret/api", "GET /clusters/root:nope/api", "GET /clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/nope"] {
        assert!(requests.contains(&expected.to_owned()), "{expected} in {requests:?}");
    }

    let stranger = fixture("root");
    std::fs::write(&stranger.kubeconfig, stranger.text().replace(fake_kcp::TOKEN, "wrong-token")).expect("write");
    stranger.refuses(&["ws", "org"], "Error: Unauthorized\n");
}

/// A kspaces short-path URL (no `/clusters/`) reaches the caller's own space: `.` says the URL as kcp does (it
/// reads the kubeconfig only), the commands that need a path ask the server which workspace that is (its
/// LogicalCluster's `kcp.io/path`), and give kcp's answer when it will not say.
#[test]
fn ws_from_a_short_path_url() {
    let f = fixture("root");
    let text = f.text().replace(&f.kcp.url_of("root"), &f.kcp.url);
    std::fs::write(&f.kubeconfig, text).expect("write");
    f.prints(&["ws", "."], &format!("Current workspace is the URL \"{}\".\n", f.kcp.url));
    f.prints(&["ws", ".", "--short"], "");
    assert!(f.kubectl.ok(&["ws", "tree"]).stdout.starts_with(".\n└── root\n    ├── org\n"));
    f.prints(&["ws", "org"], "Current workspace is 'root:org' (type root:organization).\n");
    assert_eq!(f.server(), f.kcp.url_of("root:org"));
    f.prints(&["ws", "-"], &format!("Current workspace is the URL \"{}\".\n", f.kcp.url));

    f.kcp.set_short_path(None);
    f.prints(&["ws", "tree"], &format!("current context URL \"{}\" does not point directly to a kcp workspace\n", f.kcp.url));
    f.refuses(&["ws", "org"], &format!("Error: current URL \"{}\" does not point to a workspace\n", f.kcp.url));
    f.refuses(&["create", "workspace", "x"], &format!("Error: current URL \"{}\" does not point to a workspace\n", f.kcp.url));
    f.refuses(&["kcp", "claims", "get", "apibinding"], &format!("error: current URL \"{}\" does not point to workspace\n", f.kcp.url));
}

/// kcp's tree: deleted workspaces left out, mounted ones as `[m]` leaves, and (unlike kcp, see
/// `plugins/ws/tree.rs`) a workspace whose children the caller may not list as a leaf.
#[test]
fn ws_tree() {
    let f = fixture("root");
    f.kcp.add_workspace("root:org:mounted", "universal");
    f.kcp.edit_workspace("root:org:mounted", |ws| ws["spec"]["mount"] = json!({"ref": {"kind": "KubeCluster", "name": "edge"}}));
    f.kcp.add_workspace("root:org:leaving", "universal");
    f.kcp.edit_workspace("root:org:leaving", |ws| ws["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z"));
    f.kcp.add_workspace("root:secret:hidden", "universal");
    f.prints(&["ws", "tree"], ".
└── root
    ├── org
    │   ├── mounted [m]
    │   ├── team-a
    │   │   └── dev
    │   └── team-b
    ├── provider
    ├── secret
    └── users
        └── ab
            └── cd
                └── alice
                    └── sub

");
    f.prints(&["ws", ":root:org"], "Current workspace is 'root:org' (type root:organization).\n");
    f.prints(&["ws", "tree", "--full"], ".
└── root:org
    ├── root:org:mounted [m]
    ├── root:org:team-a
    │   └── root:org:team-a:dev
    └── root:org:team-b

");
    f.prints(&["ws", "tree", "-f"], &f.kubectl.ok(&["ws", "tree", "--full"]).stdout);

    let inside = fixture("root:secret");
    inside.refuses(&["ws", "tree"], "Error: forbidden: User \"alice\" cannot get path \"/clusters/root:secret/apis/tenancy.kcp.io/v1alpha1/workspaces\"\n");
}

#[test]
fn create_workspace_waits_until_ready() {
    let f = fixture("root:org");
    let before = f.text();
    f.prints(&["create", "workspace", "dev"], "Workspace \"dev\" (type root:universal) created. Waiting for it to be ready...
Workspace \"dev\" (type root:universal) is ready to use.
");
    assert_eq!(f.text(), before, "without --enter the kubeconfig is not touched");
    assert_eq!(
        f.kcp.bodies("/clusters/root:org/apis/tenancy.kcp.io/v1alpha1/workspaces"),
        [json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "dev"}, "spec": {}})]
    );
    assert_eq!(f.kcp.workspace("root:org:dev").expect("created")["status"]["phase"], "Ready", "the create waited for Ready");

    f.refuses(&["create", "workspace", "dev"], "Error: workspaces.tenancy.kcp.io \"dev\" already exists\n");
    f.prints(&["create", "workspace", "dev", "--ignore-existing"], "Workspace \"dev\" (type root:universal) already exists.
Workspace \"dev\" (type root:universal) is ready to use.
");
    f.prints(&["create", "workspace", "dev", "--ignore-existing", "--type", "root:universal"], "Workspace \"dev\" (type root:universal) already exists.
Workspace \"dev\" (type root:universal) is ready to use.
");
    f.refuses(&["create", "workspace", "dev", "--ignore-existing", "--type", "universal"], "Error: --ignore-existing must not be used with non-absolute type path\n");
    f.refuses(
        &["create", "workspace", "dev", "--ignore-existing", "--type", "root:team"],
        "Error: workspace \"dev\" cannot be created with type root:team, it already exists with different type root:universal\n",
    );
}

#[test]
fn create_workspace_and_enter_it() {
    let f = fixture("root:org");
    f.prints(&["create", "workspace", "squad", "--type", "Team", "--enter"], "Workspace \"squad\" (type root:team) created. Waiting for it to be ready...
Workspace \"squad\" (type root:team) is ready to use.
Current workspace is 'root:org:squad' (type root:team).
");
    assert_eq!(f.server(), f.kcp.url_of("root:org:squad"));
    let posted = f.kcp.bodies("/clusters/root:org/apis/tenancy.kcp.io/v1alpha1/workspaces");
    assert_eq!(posted[0]["spec"], json!({"type": {"name": "team"}}), "the type's name lower-cased, its path left to the server");
    f.prints(&["ws", "-"], "Current workspace is 'root:org'.\n");

    let created = f.kubectl.ok(&["create", "workspace", "guild", "--type", "root:org:guild-type", "--enter"]);
    assert!(created.stdout.ends_with("Current workspace is 'root:org:guild' (type root:org:guild-type).\n"), "{}", created.stdout);
    assert_eq!(f.kcp.bodies("/clusters/root:org/apis/tenancy.kcp.io/v1alpha1/workspaces")[1]["spec"]["type"], json!({"name": "guild-type", "path": "root:org"}));

    let deprecated = f.kubectl.ok(&["ws", "create", "old-style"]);
    assert_eq!(deprecated.stderr, "Command \"create\" is deprecated, install the 'kubectl create workspace' plugin instead\n");
    assert!(deprecated.stdout.ends_with("Workspace \"old-style\" (type root:universal) is ready to use.\n"), "{}", deprecated.stdout);
}

#[test]
fn contexts_for_workspaces() {
    let f = fixture("root:org");
    f.prints(&["create", "workspace", "dev", "--create-context", "dev"], "Workspace \"dev\" (type root:universal) created. Waiting for it to be ready...
Workspace \"dev\" (type root:universal) is ready to use.
Created context \"dev\".
");
    assert_eq!(f.server(), f.kcp.url_of("root:org"), "the current context is kept");
    assert_eq!(cluster_server(&f.kubeconfig, "dev"), Some(f.kcp.url_of("root:org:dev")), "the new context is the new workspace's");
    f.prints(&["ws", "create-context"], "Created context \"root:org\" and switched to it.\n");
    assert_eq!(f.server(), f.kcp.url_of("root:org"));
    f.refuses(&["ws", "create-context", "dev"], "Error: context \"dev\" already exists in kubeconfig, use --overwrite to update it\n");
    f.prints(&["ws", "create-context", "dev", "--overwrite"], "Updated context \"dev\" and switched to it.\n");
    let config = kube::config::Kubeconfig::read_from(&f.kubeconfig).expect("read");
    assert_eq!(config.current_context.as_deref(), Some("dev"));
    let clusters: Vec<&str> = config.clusters.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(clusters, ["kcp", "dev", "root:org"]);
    for name in clusters {
        assert_eq!(cluster_server(&f.kubeconfig, name), Some(f.kcp.url_of("root:org")), "{name}: dev was overwritten from root:org");
    }
}

#[test]
fn kcp_bind_apiexport_with_claims_waits_until_bound() {
    let f = fixture("root:org:team-a");
    f.prints(
        &["kcp", "bind", "apiexport", "root:provider:widgets", "--accept-permission-claim", "secrets.core", "--reject-permission-claim", "configmaps.core"],
        "apibinding widgets created. Waiting to successfully bind ...\nwidgets created and bound.\n",
    );
    assert_eq!(
        f.kcp.bodies("/clusters/root:org:team-a/apis/apis.kcp.io/v1alpha1/apibindings"),
        [json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "widgets"}, "spec": {
            "reference": {"export": {"path": "root:provider", "name": "widgets"}},
            "permissionClaims": [
                {"resource": "secrets", "all": true, "state": "Accepted"},
                {"resource": "configmaps", "all": true, "state": "Rejected"}]}})]
    );
    assert_eq!(f.kcp.binding("root:org:team-a", "widgets").expect("bound")["status"]["phase"], "Bound", "the bind waited for Bound");

    f.prints(&["kcp", "claims", "get", "apibinding", "widgets"], "APIBINDING   GROUP-RESOURCE   STATUS
widgets      secrets          Accepted
widgets      configmaps       Rejected
");
    f.prints(&["kcp", "claims", "accept", "widgets", "--resource", "configmaps.core"], "claim \"configmaps.core\" on APIBinding \"widgets\" is accepted\n");
    f.prints(&["kcp", "bind", "apiexport", "root:provider:widgets", "--name", "everything", "--reject-all-permission-claims"],
        "apibinding everything created. Waiting to successfully bind ...\neverything created and bound.\n");
    assert_eq!(
        f.kcp.binding("root:org:team-a", "everything").expect("created")["spec"]["permissionClaims"],
        json!([{"resource": "secrets", "all": true, "state": "Rejected"}, {"resource": "configmaps", "all": true, "state": "Rejected"}])
    );
    f.prints(&["kcp", "claims", "get", "apibinding"], "APIBINDING   GROUP-RESOURCE   STATUS
everything   secrets          Rejected
everything   configmaps       Rejected
widgets      secrets          Accepted
widgets      configmaps       Accepted
");
}

#[test]
fn kcp_refusals() {
    let f = fixture("root:org:team-a");
    let started = std::time::Instant::now();
    f.refuses(&["kcp", "bind", "apiexport", "root:provider:missing", "--timeout", "1s"], "error: could not bind missing: not Bound after 1s (phase \"Binding\")\n");
    assert!(started.elapsed() >= std::time::Duration::from_secs(1), "the bind waited --timeout");
    f.refuses(
        &["kcp", "bind", "apiexport", "widgets"],
        "error: fully qualified reference to workspace where APIExport exists is required. The format is `<logical-cluster-name>:<apiexport>` or `<full>:<path>:<to>:<apiexport>`\n",
    );
    f.refuses(&["kcp", "bind", "apiexport", "root:provider:widgets", "--accept-permission-claim", "secrets"], "error: invalid accepted permission claims: [invalid permission claim \"secrets\"]\n");
    f.refuses(&["kcp", "claims", "get", "apibinding", "nope"], "error: error finding APIBinding: apibindings.apis.kcp.io \"nope\" not found\n");
    f.refuses(
        &["kcp", "crd", "snapshot", "-f", "crd.yaml", "--prefix", "v1"],
        "error: \"kubectl kcp crd\" is not part of kspaces' kubectl-kcp, which has: bind apiexport, claims (get apibinding, accept, reject), workspace\n",
    );
    f.prints(&["kcp", "ws", "."], "Current workspace is 'root:org:team-a'.\n");
    f.prints(&["kcp", "workspace", ".."], "Current workspace is 'root:org' (type root:organization).\n");
}

/// Against the real kspaces server, over HTTPS with the admin's client certificate: its admin kubeconfig uses the
/// short path, which the plugins resolve to `root` by asking the server; `kubectl ws` then moves it into a tenant's
/// workspace, where kubectl itself works with the rewritten kubeconfig, and back. (The server does not serve
/// `Workspace` objects yet: the type is not asserted, and `tree` is not.)
#[test]
fn kspaces_tenant_workspaces() {
    let server = kspaces_tests::Server::start();
    kspaces_tests::create_tenant(&server.kubectl(), "t-a");
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::copy(&server.kubeconfig, &kubeconfig).expect("copy admin.kubeconfig");
    let kubectl = PluginKubectl::new(&kubeconfig);

    let moved = kubectl.ok(&["ws", ":root:t-a"]);
    assert_eq!((moved.stdout.as_str(), moved.stderr.as_str()), ("Current workspace is 'root:t-a' (type root:organization).\n", ""));
    assert_eq!(current_server(&kubeconfig), format!("{}/clusters/root:t-a", server.url));
    let namespaces = kspaces_tests::Kubectl::new(&kubeconfig).ok(&["get", "namespaces", "-o", "name"]);
    assert!(namespaces.contains("namespace/default"), "{namespaces}");
    assert!(!namespaces.contains("kube-node-lease"), "the tenant's namespaces, not the system's: {namespaces}");
    assert_eq!(kubectl.ok(&["ws", "-"]).stdout, format!("Current workspace is the URL \"{}\".\n", server.url));
    assert_eq!(kubectl.ok(&["ws", "t-a", "--short"]).stdout, "root:t-a\n", "relative to the short path's workspace, root");
}
