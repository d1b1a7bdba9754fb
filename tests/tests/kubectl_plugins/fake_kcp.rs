//! A small in-memory kcp for the plugin tests: the endpoints kcp's plugins call, answered from a tree of
//! workspaces, over plain HTTP on 127.0.0.1:0, behind one bearer token. It is honest about what it is: it decides
//! nothing kspaces' server will (no types, no RBAC, no admission); it answers as kcp answers the requests the
//! plugins send — discovery (`/api`, `/apis`) in a workspace, `Workspace`s in their parent (`~` in `root` being
//! the caller's home), each workspace's `LogicalCluster` `cluster` (also at the short path, no `/clusters/`, which
//! kspaces resolves to the caller's own space), `APIBinding`s and `APIExport`s — and records them. New workspaces become `Ready` and new
//! bindings `Bound` (when their export exists) after a few reads, so the plugins' waits run.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use actix_web::http::StatusCode;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use serde_json::{json, Value};

/// The bearer token the fake accepts.
pub const TOKEN: &str = "plugin-test-token";

const WORKSPACES: &str = "apis/tenancy.kcp.io/v1alpha1/workspaces";
const API_BINDINGS: &str = "apis/apis.kcp.io/v1alpha1/apibindings";
const API_EXPORTS: &str = "apis/apis.kcp.io/v1alpha1/apiexports";
const LOGICAL_CLUSTER: &str = "apis/core.kcp.io/v1alpha1/logicalclusters/cluster";

/// Reads of a new workspace before it is Ready (the first two say Initializing: the create waits once).
const READS_UNTIL_READY: u32 = 3;
/// Reads of a new binding before it is Bound.
const READS_UNTIL_BOUND: u32 = 2;

pub struct FakeKcp {
    /// `http://127.0.0.1:<port>`: the base every workspace URL starts with.
    pub url: String,
    state: Arc<Mutex<State>>,
    server: actix_web::dev::ServerHandle,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct State {
    base: String,
    /// Every workspace by path; `root` has no Workspace object.
    workspaces: BTreeMap<String, Node>,
    home: String,
    /// The workspace the short path reaches (`None`: the short path is refused, 403).
    short_path: Option<String>,
    /// (workspace, name) → binding, and the reads left before it is Bound (`None`: never, its export is unknown).
    bindings: BTreeMap<(String, String), (Value, Option<u32>)>,
    exports: BTreeMap<(String, String), Value>,
    /// `METHOD /path` of every request, and the body of every write.
    requests: Vec<(String, Option<Value>)>,
    created: u32,
}

struct Node {
    object: Option<Value>,
    forbidden: bool,
    reads_until_ready: u32,
}

impl FakeKcp {
    /// A fake with `root` only; the caller's home is `root:users:ab:cd:alice` (created with
    /// [`FakeKcp::add_workspace`] by tests that go there).
    pub fn start() -> FakeKcp {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let mut state = State {
            base: url.clone(),
            home: "root:users:ab:cd:alice".to_owned(),
            short_path: Some("root".to_owned()),
            ..State::default()
        };
        state.workspaces.insert("root".to_owned(), Node { object: None, forbidden: false, reads_until_ready: 0 });
        let state = Arc::new(Mutex::new(state));
        let (sender, receiver) = std::sync::mpsc::channel();
        let shared = state.clone();
        let thread = std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let data = web::Data::new(shared);
                let server = HttpServer::new(move || App::new().app_data(data.clone()).default_service(web::to(serve)))
                    .workers(1)
                    .disable_signals()
                    .listen(listener)
                    .expect("listen")
                    .run();
                sender.send(server.handle()).expect("hand the server over");
                let _ = server.await;
            });
        });
        let server = receiver.recv().expect("the fake server started");
        FakeKcp { url, state, server, thread: Some(thread) }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The URL of workspace `path`.
    pub fn url_of(&self, path: &str) -> String {
        format!("{}/clusters/{path}", self.url)
    }

    /// Adds a Ready workspace of type `root:<type_name>` (its parent must exist).
    pub fn add_workspace(&self, path: &str, type_name: &str) {
        let mut state = self.state();
        let (parent, name) = path.rsplit_once(':').expect("a path below root");
        assert!(state.workspaces.contains_key(parent), "{parent} exists");
        let object = state.new_workspace(parent, name, json!({"name": type_name, "path": "root"}), "Ready");
        state.workspaces.insert(path.to_owned(), Node { object: Some(object), forbidden: false, reads_until_ready: 0 });
    }

    /// Edits workspace `path`'s stored object (to mark it mounted or being deleted).
    pub fn edit_workspace(&self, path: &str, edit: impl FnOnce(&mut Value)) {
        edit(self.state().workspaces.get_mut(path).and_then(|node| node.object.as_mut()).expect("the workspace exists"));
    }

    /// Which workspace the short path reaches (`None`: none, the short path answers 403).
    pub fn set_short_path(&self, path: Option<&str>) {
        self.state().short_path = path.map(str::to_owned);
    }

    /// `path` exists but the caller may not enter it (discovery and lists there answer 403).
    pub fn forbid(&self, path: &str) {
        self.state().workspaces.get_mut(path).expect("the workspace exists").forbidden = true;
    }

    /// An APIExport `name` in workspace `path` with these permission claims.
    pub fn add_export(&self, path: &str, name: &str, claims: Value) {
        let export = json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": name},
            "spec": {"permissionClaims": claims}});
        self.state().exports.insert((path.to_owned(), name.to_owned()), export);
    }

    /// Workspace `path` as stored.
    pub fn workspace(&self, path: &str) -> Option<Value> {
        self.state().workspaces.get(path).and_then(|node| node.object.clone())
    }

    /// Binding `name` in workspace `path` as stored.
    pub fn binding(&self, path: &str, name: &str) -> Option<Value> {
        self.state().bindings.get(&(path.to_owned(), name.to_owned())).map(|(binding, _)| binding.clone())
    }

    /// Every request so far, as `METHOD /path`.
    pub fn requests(&self) -> Vec<String> {
        self.state().requests.iter().map(|(line, _)| line.clone()).collect()
    }

    /// The bodies of the `POST`s and `PUT`s so far whose path ends with `suffix`.
    pub fn bodies(&self, suffix: &str) -> Vec<Value> {
        self.state().requests.iter().filter(|(line, _)| line.ends_with(suffix)).filter_map(|(_, body)| body.clone()).collect()
    }

    /// A kubeconfig (in `dir`) whose only context points at workspace `path` with the fake's token, shaped as a
    /// user's: a cluster, a user and a context with a namespace.
    pub fn kubeconfig(&self, dir: &std::path::Path, path: &str) -> std::path::PathBuf {
        let file = dir.join("kubeconfig");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kcp\n  cluster:\n    server: {}\ncontexts:\n- name: alice\n  context:\n    cluster: kcp\n    user: alice\n    namespace: default\ncurrent-context: alice\npreferences: {{}}\nusers:\n- name: alice\n  user:\n    token: {TOKEN}\n",
            self.url_of(path)
        );
        std::fs::write(&file, text).expect("write kubeconfig");
        file
    }
}

impl Drop for FakeKcp {
    fn drop(&mut self) {
        drop(self.server.stop(false));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(request: HttpRequest, body: web::Bytes, state: web::Data<Arc<Mutex<State>>>) -> HttpResponse {
    let mut state = state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let body: Option<Value> = serde_json::from_slice(&body).ok();
    let method = request.method().as_str().to_owned();
    state.requests.push((format!("{method} {}", request.path()), body.clone()));
    let authorized = request.headers().get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"));
    let (code, answer) = if authorized {
        state.answer(&method, request.path(), body)
    } else {
        status(401, "Unauthorized", "Unauthorized")
    };
    HttpResponse::build(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .content_type("application/json")
        .body(answer.to_string())
}

/// A Kubernetes `Status`.
fn status(code: u16, reason: &str, message: &str) -> (u16, Value) {
    (code, json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}))
}

/// The LogicalCluster `cluster` of workspace `path`.
fn logical_cluster(path: &str) -> Value {
    json!({"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster",
        "metadata": {"name": "cluster", "annotations": {"kcp.io/path": path}}, "status": {"phase": "Ready"}})
}

fn forbidden(path: &str) -> (u16, Value) {
    status(403, "Forbidden", &format!("forbidden: User \"alice\" cannot get path \"{path}\""))
}

impl State {
    /// Answers one request: discovery, workspaces, bindings and exports in `/clusters/<path>/...`.
    fn answer(&mut self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        if (method, path) == ("GET", &*format!("/{LOGICAL_CLUSTER}")) {
            return match &self.short_path {
                Some(space) => (200, logical_cluster(space)),
                None => forbidden(path),
            };
        }
        let Some((cluster, rest)) = path.strip_prefix("/clusters/").map(|p| p.split_once('/').unwrap_or((p, ""))) else {
            return status(404, "NotFound", "the server could not find the requested resource");
        };
        let cluster = cluster.to_owned();
        if self.workspaces.get(&cluster).is_none_or(|node| node.forbidden) {
            // kcp answers 403 for a workspace that does not exist as for one the caller may not enter.
            return forbidden(path);
        }
        let (collection, name) = match rest.rsplit_once('/') {
            Some((collection, name)) if [WORKSPACES, API_BINDINGS, API_EXPORTS].contains(&collection) => (collection, Some(name)),
            _ => (rest, None),
        };
        match (method, collection, name) {
            ("GET", LOGICAL_CLUSTER, None) => (200, logical_cluster(&cluster)),
            ("GET", "api", None) => (200, json!({"kind": "APIVersions", "versions": ["v1"]})),
            ("GET", "apis", None) => (200, json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": "tenancy.kcp.io", "versions": [{"groupVersion": "tenancy.kcp.io/v1alpha1", "version": "v1alpha1"}]},
                {"name": "apis.kcp.io", "versions": [{"groupVersion": "apis.kcp.io/v1alpha1", "version": "v1alpha1"}]}]})),
            ("GET", WORKSPACES, None) => (200, self.list_workspaces(&cluster)),
            ("GET", WORKSPACES, Some("~")) if cluster == "root" => (200, self.home_workspace()),
            ("GET", WORKSPACES, Some(name)) => self.read_workspace(&format!("{cluster}:{name}"), name),
            ("POST", WORKSPACES, None) => self.create_workspace(&cluster, body.unwrap_or_default()),
            ("GET", API_BINDINGS, None) => {
                let items: Vec<Value> = self.bindings.iter().filter(|((ws, _), _)| *ws == cluster).map(|(_, (b, _))| b.clone()).collect();
                (200, json!({"kind": "APIBindingList", "apiVersion": "apis.kcp.io/v1alpha1", "items": items}))
            }
            ("GET", API_BINDINGS, Some(name)) => self.read_binding(&cluster, name),
            ("POST", API_BINDINGS, None) => self.create_binding(&cluster, body.unwrap_or_default()),
            ("PUT", API_BINDINGS, Some(name)) => self.replace_binding(&cluster, name, body.unwrap_or_default()),
            ("GET", API_EXPORTS, Some(name)) => match self.exports.get(&(cluster.clone(), name.to_owned())) {
                Some(export) => (200, export.clone()),
                None => status(404, "NotFound", &format!("apiexports.apis.kcp.io \"{name}\" not found")),
            },
            _ => status(404, "NotFound", "the server could not find the requested resource"),
        }
    }

    fn new_workspace(&mut self, parent: &str, name: &str, type_ref: Value, phase: &str) -> Value {
        self.created += 1;
        json!({
            "apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
            "metadata": {"name": name, "resourceVersion": self.created.to_string()},
            "spec": {"type": type_ref, "cluster": format!("fakecluster{:05}", self.created), "URL": format!("{}/clusters/{parent}:{name}", self.base)},
            "status": {"phase": phase},
        })
    }

    fn list_workspaces(&self, parent: &str) -> Value {
        let items: Vec<Value> = self
            .workspaces
            .iter()
            .filter(|(path, _)| path.rsplit_once(':').is_some_and(|(p, _)| p == parent))
            .filter_map(|(_, node)| node.object.clone())
            .collect();
        json!({"kind": "WorkspaceList", "apiVersion": "tenancy.kcp.io/v1alpha1", "metadata": {}, "items": items})
    }

    /// kcp's synthetic `~`: a Workspace whose `spec.URL` is the caller's home.
    fn home_workspace(&self) -> Value {
        let name = self.home.rsplit(':').next().unwrap_or_default();
        json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name},
            "spec": {"type": {"name": "home", "path": "root"}, "URL": format!("{}/clusters/{}", self.base, self.home)},
            "status": {"phase": "Ready"}})
    }

    /// A read counts towards readiness.
    fn read_workspace(&mut self, path: &str, name: &str) -> (u16, Value) {
        let Some(node) = self.workspaces.get_mut(path) else {
            return status(404, "NotFound", &format!("workspaces.tenancy.kcp.io \"{name}\" not found"));
        };
        let Some(object) = node.object.as_mut() else { return status(404, "NotFound", "root has no Workspace") };
        node.reads_until_ready = node.reads_until_ready.saturating_sub(1);
        object["status"]["phase"] = json!(if node.reads_until_ready == 0 { "Ready" } else { "Initializing" });
        (200, object.clone())
    }

    fn create_workspace(&mut self, parent: &str, body: Value) -> (u16, Value) {
        let name = body["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        let path = format!("{parent}:{name}");
        if self.workspaces.contains_key(&path) {
            return status(409, "AlreadyExists", &format!("workspaces.tenancy.kcp.io \"{name}\" already exists"));
        }
        // As kcp's admission: no type is the parent's default child type (universal here); a type without a
        // path is looked up and found in root.
        let mut type_ref = body["spec"]["type"].clone();
        if type_ref.is_null() {
            type_ref = json!({"name": "universal"});
        }
        if type_ref["path"].is_null() {
            type_ref["path"] = json!("root");
        }
        let object = self.new_workspace(parent, &name, type_ref, "Scheduling");
        self.workspaces.insert(path, Node { object: Some(object.clone()), forbidden: false, reads_until_ready: READS_UNTIL_READY });
        (201, object)
    }

    fn create_binding(&mut self, workspace: &str, mut body: Value) -> (u16, Value) {
        let name = body["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        let key = (workspace.to_owned(), name.clone());
        if self.bindings.contains_key(&key) {
            return status(409, "AlreadyExists", &format!("apibindings.apis.kcp.io \"{name}\" already exists"));
        }
        let export = &body["spec"]["reference"]["export"];
        let export_key = (export["path"].as_str().unwrap_or_default().to_owned(), export["name"].as_str().unwrap_or_default().to_owned());
        let reads = self.exports.contains_key(&export_key).then_some(READS_UNTIL_BOUND);
        body["status"] = json!({"phase": "Binding"});
        self.bindings.insert(key, (body.clone(), reads));
        (201, body)
    }

    fn read_binding(&mut self, workspace: &str, name: &str) -> (u16, Value) {
        let Some((binding, reads)) = self.bindings.get_mut(&(workspace.to_owned(), name.to_owned())) else {
            return status(404, "NotFound", &format!("apibindings.apis.kcp.io \"{name}\" not found"));
        };
        if let Some(left) = reads {
            *left = left.saturating_sub(1);
            if *left == 0 {
                binding["status"]["phase"] = json!("Bound");
            }
        }
        (200, binding.clone())
    }

    fn replace_binding(&mut self, workspace: &str, name: &str, body: Value) -> (u16, Value) {
        let Some((binding, _)) = self.bindings.get_mut(&(workspace.to_owned(), name.to_owned())) else {
            return status(404, "NotFound", &format!("apibindings.apis.kcp.io \"{name}\" not found"));
        };
        binding["spec"] = body["spec"].clone();
        (200, binding.clone())
    }
}
