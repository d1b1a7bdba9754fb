//! The kubeconfig edits of kcp's plugins, on the user's file and nothing else of it.
//!
//! Switching workspaces never edits the user's own clusters or contexts. Like kcp, the plugins keep two entries of
//! their own: the cluster and context `workspace.kcp.io/current` (a copy of the current context and its cluster,
//! with the cluster's `server` pointing at the new workspace) and `workspace.kcp.io/previous` (what was current
//! before, for `kubectl ws -`), and set `current-context` to `workspace.kcp.io/current`. Every other entry, key and
//! value is written back as it was read (the document is an order-preserving [`Yaml`] tree).

use std::path::{Path, PathBuf};

use super::yaml::{self, Yaml};

/// The context and cluster `kubectl ws` switches to.
pub const CURRENT: &str = "workspace.kcp.io/current";
/// The context and cluster `kubectl ws -` swaps back to.
pub const PREVIOUS: &str = "workspace.kcp.io/previous";

/// Why the kubeconfig could not be read, understood or changed. The messages of the entries' absence are kcp's.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("cannot read kubeconfig {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot parse kubeconfig {}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("cannot write kubeconfig {}: {message}", path.display())]
    Write { path: PathBuf, message: String },
    #[error("kubeconfig {}: {what} is not a list of named entries", path.display())]
    Shape { path: PathBuf, what: &'static str },
    #[error("current {0:?} context not found")]
    ContextNotFound(String),
    #[error("cluster {0:?} not found in kubeconfig")]
    ClusterNotFound(String),
    #[error("no previous workspace found in kubeconfig")]
    NoPrevious,
    #[error("context {0:?} already exists in kubeconfig, use --overwrite to update it")]
    ContextExists(String),
}

/// A kubeconfig file as read, edited in memory, written back by [`KubeconfigFile::save`].
#[derive(Clone, Debug)]
pub struct KubeconfigFile {
    path: PathBuf,
    doc: Yaml,
}

/// The two lists of named entries the plugins edit.
#[derive(Clone, Copy)]
enum List {
    Clusters,
    Contexts,
}

impl List {
    fn key(self) -> &'static str {
        match self {
            List::Clusters => "clusters",
            List::Contexts => "contexts",
        }
    }
    fn inner(self) -> &'static str {
        match self {
            List::Clusters => "cluster",
            List::Contexts => "context",
        }
    }
}

impl KubeconfigFile {
    pub fn load(path: &Path) -> Result<KubeconfigFile, KubeconfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| KubeconfigError::Read { path: path.to_owned(), source })?;
        KubeconfigFile::from_text(path, &text)
    }

    /// A kubeconfig read from `text` that [`KubeconfigFile::save`] writes to `path`.
    pub fn from_text(path: &Path, text: &str) -> Result<KubeconfigFile, KubeconfigError> {
        let doc = yaml::parse(text).map_err(|message| KubeconfigError::Parse { path: path.to_owned(), message })?;
        if !matches!(doc, Yaml::Map(_) | Yaml::Null) {
            return Err(KubeconfigError::Parse { path: path.to_owned(), message: "not a mapping".to_owned() });
        }
        Ok(KubeconfigFile { path: path.to_owned(), doc })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The document as it would be written.
    pub fn to_text(&self) -> Result<String, KubeconfigError> {
        yaml::write(&self.doc).map_err(|message| KubeconfigError::Write { path: self.path.clone(), message })
    }

    /// Writes the file in place (its permissions, owner and any symlink to it are kept).
    pub fn save(&self) -> Result<(), KubeconfigError> {
        let text = self.to_text()?;
        std::fs::write(&self.path, text).map_err(|e| KubeconfigError::Write { path: self.path.clone(), message: e.to_string() })
    }

    /// `current-context`.
    pub fn current_context(&self) -> Option<&str> {
        self.doc.get_str("current-context").filter(|name| !name.is_empty())
    }

    /// The body (`context: {...}`) of context `name`.
    pub fn context(&self, name: &str) -> Option<&Yaml> {
        self.entry(List::Contexts, name)
    }

    /// The body (`cluster: {...}`) of cluster `name`.
    pub fn cluster(&self, name: &str) -> Option<&Yaml> {
        self.entry(List::Clusters, name)
    }

    /// The server URL of context `name`'s cluster.
    pub fn server_of(&self, context: &str) -> Result<&str, KubeconfigError> {
        let (_, cluster) = self.context_and_cluster(context)?;
        Ok(cluster.get_str("server").unwrap_or_default())
    }

    /// Context `name` and its cluster, with kcp's messages when either is missing.
    fn context_and_cluster(&self, name: &str) -> Result<(&Yaml, &Yaml), KubeconfigError> {
        let context = self.context(name).ok_or_else(|| KubeconfigError::ContextNotFound(name.to_owned()))?;
        let cluster_name = context.get_str("cluster").unwrap_or_default();
        let cluster = self.cluster(cluster_name).ok_or_else(|| KubeconfigError::ClusterNotFound(cluster_name.to_owned()))?;
        Ok((context, cluster))
    }

    /// Switches to `server` from context `from` (kcp's `commitConfig`): `workspace.kcp.io/current` becomes a copy
    /// of `from` and its cluster with `server` changed, `workspace.kcp.io/previous` becomes `from` (its cluster
    /// saved as the cluster `workspace.kcp.io/previous` when it was the plugin's own current one), and
    /// `current-context` becomes `workspace.kcp.io/current`.
    pub fn switch_to(&mut self, from: &str, server: &str) -> Result<(), KubeconfigError> {
        let (context, cluster) = self.context_and_cluster(from)?;
        let (mut previous_context, old_cluster) = (context.clone(), cluster.clone());
        let mut new_cluster = old_cluster.clone();
        new_cluster.set("server", Yaml::str(server));
        let mut new_context = previous_context.clone();
        new_context.set("cluster", Yaml::str(CURRENT));
        let from_plugin_cluster = previous_context.get_str("cluster") == Some(CURRENT);
        self.put(List::Clusters, CURRENT, new_cluster)?;
        self.put(List::Contexts, CURRENT, new_context)?;
        if from_plugin_cluster {
            previous_context.set("cluster", Yaml::str(PREVIOUS));
            self.put(List::Clusters, PREVIOUS, old_cluster)?;
        }
        self.put(List::Contexts, PREVIOUS, previous_context)?;
        self.doc.set("current-context", Yaml::str(CURRENT));
        Ok(())
    }

    /// Swaps the current context with `workspace.kcp.io/previous` (kcp's `swapContexts`), the plugin's own clusters
    /// following their contexts; returns the new current server URL.
    pub fn swap_with_previous(&mut self, from: &str) -> Result<String, KubeconfigError> {
        let mut previous = self.context(PREVIOUS).cloned().ok_or(KubeconfigError::NoPrevious)?;
        let mut current = self.context(from).cloned().ok_or_else(|| KubeconfigError::ContextNotFound(from.to_owned()))?;
        let mut clusters = Vec::new();
        if current.get_str("cluster") == Some(CURRENT) {
            let cluster = self.cluster(CURRENT).cloned().ok_or_else(|| KubeconfigError::ClusterNotFound(CURRENT.to_owned()))?;
            current.set("cluster", Yaml::str(PREVIOUS));
            clusters.push((PREVIOUS, cluster));
        }
        if previous.get_str("cluster") == Some(PREVIOUS) {
            let cluster = self.cluster(PREVIOUS).cloned().ok_or_else(|| KubeconfigError::ClusterNotFound(PREVIOUS.to_owned()))?;
            previous.set("cluster", Yaml::str(CURRENT));
            clusters.push((CURRENT, cluster));
        }
        for (name, cluster) in clusters {
            self.put(List::Clusters, name, cluster)?;
        }
        self.put(List::Contexts, CURRENT, previous)?;
        self.put(List::Contexts, PREVIOUS, current)?;
        self.doc.set("current-context", Yaml::str(CURRENT));
        self.server_of(CURRENT).map(str::to_owned)
    }

    /// Context `name` (kcp's `create-context`): a copy of context `from` and of its cluster (with `server` if
    /// given), both named `name`; `current-context` becomes `name` unless `keep_current`. Returns whether a
    /// context `name` existed before (refused unless `overwrite`).
    pub fn create_context(
        &mut self,
        from: &str,
        name: &str,
        server: Option<&str>,
        overwrite: bool,
        keep_current: bool,
    ) -> Result<bool, KubeconfigError> {
        let (context, cluster) = self.context_and_cluster(from)?;
        let (mut new_context, mut new_cluster) = (context.clone(), cluster.clone());
        let existed = self.context(name).is_some();
        if existed && !overwrite {
            return Err(KubeconfigError::ContextExists(name.to_owned()));
        }
        if let Some(server) = server {
            new_cluster.set("server", Yaml::str(server));
        }
        new_context.set("cluster", Yaml::str(name));
        self.put(List::Clusters, name, new_cluster)?;
        self.put(List::Contexts, name, new_context)?;
        if !keep_current {
            self.doc.set("current-context", Yaml::str(name));
        }
        Ok(existed)
    }

    fn entry(&self, list: List, name: &str) -> Option<&Yaml> {
        let Some(Yaml::Seq(items)) = self.doc.get(list.key()) else { return None };
        items.iter().find(|item| item.get_str("name") == Some(name)).and_then(|item| item.get(list.inner()))
    }

    /// Sets entry `name` of `list` to `body`: in place if it exists, else appended (`name` first, as kubectl
    /// writes entries).
    fn put(&mut self, list: List, name: &str, body: Yaml) -> Result<(), KubeconfigError> {
        let shape = || KubeconfigError::Shape { path: self.path.clone(), what: list.key() };
        let items = self.doc.seq_mut(list.key()).ok_or_else(shape)?;
        match items.iter_mut().find(|item| item.get_str("name") == Some(name)) {
            Some(item) => {
                item.set(list.inner(), body);
            }
            None => items.push(Yaml::Map(vec![("name".to_owned(), Yaml::str(name)), (list.inner().to_owned(), body)])),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{expect, Expect};

    /// A user's kubeconfig: two clusters and contexts, a user with an exec plugin, preferences and extensions, keys
    /// in an order kubectl would not write, values that must stay strings.
    const USER_KUBECONFIG: &str = r#"apiVersion: v1
kind: Config
current-context: admin
preferences: {colors: true}
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJrVENDQVRlZ0F3SUJBZ0lVZm9vYmFyYmF6cXV4MTIzNDU2Nzg5MAo=
    server: https://127.0.0.1:6443/clusters/root:org
    extensions:
    - name: example.com/meta
      extension: {port: "8443", enabled: "true", retries: 3}
  name: kspaces
- name: other
  cluster: {server: https://other.example.com:443, insecure-skip-tls-verify: true}
users:
- name: admin
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: kspaces-login, args: ["--tenant", "t-a"], env: null}
contexts:
- name: admin
  context: {cluster: kspaces, user: admin, namespace: "0600"}
- name: elsewhere
  context: {cluster: other, user: admin}
"#;

    enum Step {
        SwitchTo(&'static str),
        SwapWithPrevious,
        CreateContext { name: &'static str, server: Option<&'static str>, overwrite: bool, keep_current: bool },
    }

    /// Applies `steps` in turn (each from the file's current context), then shows each step's outcome and a line
    /// diff of the final file against the original: what changed, and that nothing else did.
    fn check(steps: &[Step], expected: Expect) {
        let path = Path::new("/tmp/kubeconfig");
        let mut file = KubeconfigFile::from_text(path, USER_KUBECONFIG).expect("parse");
        let original = file.to_text().expect("write");
        let mut out = String::new();
        for step in steps {
            let from = file.current_context().unwrap_or_default().to_owned();
            let outcome = match step {
                Step::SwitchTo(server) => file.switch_to(&from, server).map(|()| format!("switched to {server}")),
                Step::SwapWithPrevious => file.swap_with_previous(&from).map(|server| format!("swapped to {server}")),
                Step::CreateContext { name, server, overwrite, keep_current } => file
                    .create_context(&from, name, *server, *overwrite, *keep_current)
                    .map(|existed| format!("context {name} (existed: {existed})")),
            };
            out.push_str(&format!("{}\n", outcome.unwrap_or_else(|e| format!("error: {e}"))));
        }
        let edited = file.to_text().expect("write");
        let reread = KubeconfigFile::from_text(path, &edited).expect("the edited file parses");
        assert_eq!(reread.doc, file.doc, "what was written reads back the same");
        let created: Vec<&str> = steps.iter().filter_map(|s| if let Step::CreateContext { name, .. } = s { Some(*name) } else { None }).collect();
        assert_users_entries_untouched(&yaml::parse(USER_KUBECONFIG).expect("parse"), &file.doc, &created);
        out.push_str(&line_diff(&original, &edited));
        expected.assert_eq(&out);
    }

    /// A line diff (longest common subsequence): `-` lines of `before` that are gone, `+` lines of `after` that
    /// are new, nothing for the lines both keep.
    fn line_diff(before: &str, after: &str) -> String {
        let (a, b): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
        let mut common = vec![vec![0usize; b.len() + 1]; a.len() + 1];
        for i in (0..a.len()).rev() {
            for j in (0..b.len()).rev() {
                common[i][j] = if a[i] == b[j] { common[i + 1][j + 1] + 1 } else { common[i + 1][j].max(common[i][j + 1]) };
            }
        }
        let (mut i, mut j, mut out) = (0, 0, String::new());
        while i < a.len() || j < b.len() {
            if i < a.len() && j < b.len() && a[i] == b[j] {
                (i, j) = (i + 1, j + 1);
            } else if j < b.len() && (i == a.len() || common[i][j + 1] >= common[i + 1][j]) {
                out.push_str(&format!("+ {}\n", b[j]));
                j += 1;
            } else {
                out.push_str(&format!("- {}\n", a[i]));
                i += 1;
            }
        }
        out
    }

    /// Every top-level key but `current-context`, `clusters` and `contexts` is as it was, and so is every cluster
    /// and context that is not one the plugins name (`workspace.kcp.io/*` or a created context).
    fn assert_users_entries_untouched(before: &Yaml, after: &Yaml, created: &[&str]) {
        let Yaml::Map(entries) = before else { panic!("a mapping") };
        for (key, value) in entries {
            match key.as_str() {
                "current-context" => {}
                "clusters" | "contexts" => {
                    let Some(Yaml::Seq(items)) = after.get(key) else { panic!("{key} is still a list") };
                    let Yaml::Seq(originals) = value else { panic!("{key} was a list") };
                    for original in originals {
                        let name = original.get_str("name").unwrap_or_default();
                        if name.starts_with("workspace.kcp.io/") || created.contains(&name) {
                            continue;
                        }
                        assert!(items.contains(original), "{key} entry {name} changed");
                    }
                }
                _ => assert_eq!(after.get(key), Some(value), "{key} changed"),
            }
        }
    }

    #[test]
    fn the_original_reads_and_writes_back_unchanged() {
        check(&[], expect![""]);
        let file = KubeconfigFile::from_text(Path::new("k"), USER_KUBECONFIG).expect("parse");
        let original = yaml::parse(USER_KUBECONFIG).expect("parse");
        assert_eq!(yaml::parse(&file.to_text().expect("write")).expect("reparse"), original);
    }

    #[test]
    fn switching_adds_the_plugins_entries_and_edits_nothing_else() {
        check(&[Step::SwitchTo("https://127.0.0.1:6443/clusters/root:org:team")], expect![[r#"
            switched to https://127.0.0.1:6443/clusters/root:org:team
            + current-context: workspace.kcp.io/current
            - current-context: admin
            + - name: workspace.kcp.io/current
            +   cluster:
            +     certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJrVENDQVRlZ0F3SUJBZ0lVZm9vYmFyYmF6cXV4MTIzNDU2Nzg5MAo=
            +     server: https://127.0.0.1:6443/clusters/root:org:team
            +     extensions:
            +     - name: example.com/meta
            +       extension:
            +         port: "8443"
            +         enabled: "true"
            +         retries: 3
            + - name: workspace.kcp.io/current
            +   context:
            +     cluster: workspace.kcp.io/current
            +     user: admin
            +     namespace: "0600"
            + - name: workspace.kcp.io/previous
            +   context:
            +     cluster: kspaces
            +     user: admin
            +     namespace: "0600"
        "#]]);
    }

    #[test]
    fn switching_twice_keeps_the_previous_workspace_in_its_own_cluster() {
        check(
            &[Step::SwitchTo("https://127.0.0.1:6443/clusters/root:a"), Step::SwitchTo("https://127.0.0.1:6443/clusters/root:b")],
            expect![[r#"
                switched to https://127.0.0.1:6443/clusters/root:a
                switched to https://127.0.0.1:6443/clusters/root:b
                + current-context: workspace.kcp.io/current
                - current-context: admin
                + - name: workspace.kcp.io/current
                +   cluster:
                +     certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJrVENDQVRlZ0F3SUJBZ0lVZm9vYmFyYmF6cXV4MTIzNDU2Nzg5MAo=
                +     server: https://127.0.0.1:6443/clusters/root:b
                +     extensions:
                +     - name: example.com/meta
                +       extension:
                +         port: "8443"
                +         enabled: "true"
                +         retries: 3
                + - name: workspace.kcp.io/previous
                +   cluster:
                +     certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJrVENDQVRlZ0F3SUJBZ0lVZm9vYmFyYmF6cXV4MTIzNDU2Nzg5MAo=
                +     server: https://127.0.0.1:6443/clusters/root:a
                +     extensions:
                +     - name: example.com/meta
                +       extension:
                +         port: "8443"
                +         enabled: "true"
                +         retries: 3
                + - name: workspace.kcp.io/current
                +   context:
                +     cluster: workspace.kcp.io/current
                +     user: admin
                +     namespace: "0600"
                + - name: workspace.kcp.io/previous
                +   context:
                +     cluster: workspace.kcp.io/previous
                +     user: admin
                +     namespace: "0600"
            "#]],
        );
    }

    /// `-` twice is where one started; `-` before any switch is kcp's error.
    #[test]
    fn swapping_with_the_previous_workspace() {
        check(
            &[
                Step::SwapWithPrevious,
                Step::SwitchTo("https://127.0.0.1:6443/clusters/root:a"),
                Step::SwitchTo("https://127.0.0.1:6443/clusters/root:b"),
                Step::SwapWithPrevious,
                Step::SwapWithPrevious,
            ],
            expect![[r#"
                error: no previous workspace found in kubeconfig
                switched to https://127.0.0.1:6443/clusters/root:a
                switched to https://127.0.0.1:6443/clusters/root:b
                swapped to https://127.0.0.1:6443/clusters/root:a
                swapped to https://127.0.0.1:6443/clusters/root:b
                + current-context: workspace.kcp.io/current
                - current-context: admin
                + - name: workspace.kcp.io/current
                +   cluster:
                +     certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJrVENDQVRlZ0F3SUJBZ0lVZm9vYmFyYmF6cXV4MTIzNDU2Nzg5MAo=
                +     server: https://127.0.0.1:6443/clusters/root:b
                +     extensions:
                +     - name: example.com/meta
                +       extension:
                +         port: "8443"
                +         enabled: "true"
                +         retries: 3
                + - name: workspace.kcp.io/previous
                +   cluster:
                +     certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJrVENDQVRlZ0F3SUJBZ0lVZm9vYmFyYmF6cXV4MTIzNDU2Nzg5MAo=
                +     server: https://127.0.0.1:6443/clusters/root:a
                +     extensions:
                +     - name: example.com/meta
                +       extension:
                +         port: "8443"
                +         enabled: "true"
                +         retries: 3
                + - name: workspace.kcp.io/current
                +   context:
                +     cluster: workspace.kcp.io/current
                +     user: admin
                +     namespace: "0600"
                + - name: workspace.kcp.io/previous
                +   context:
                +     cluster: workspace.kcp.io/previous
                +     user: admin
                +     namespace: "0600"
            "#]],
        );
    }

    /// After one switch, `-` goes back to the user's own context: `workspace.kcp.io/current` is then a copy of it
    /// on the user's own cluster, which is untouched.
    #[test]
    fn swapping_back_to_the_users_own_context() {
        check(&[Step::SwitchTo("https://127.0.0.1:6443/clusters/root:a"), Step::SwapWithPrevious], expect![[r#"
            switched to https://127.0.0.1:6443/clusters/root:a
            swapped to https://127.0.0.1:6443/clusters/root:org
            + current-context: workspace.kcp.io/current
            - current-context: admin
            + - name: workspace.kcp.io/current
            +   cluster:
            +     certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJrVENDQVRlZ0F3SUJBZ0lVZm9vYmFyYmF6cXV4MTIzNDU2Nzg5MAo=
            +     server: https://127.0.0.1:6443/clusters/root:a
            +     extensions:
            +     - name: example.com/meta
            +       extension:
            +         port: "8443"
            +         enabled: "true"
            +         retries: 3
            + - name: workspace.kcp.io/previous
            +   cluster:
            +     certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJrVENDQVRlZ0F3SUJBZ0lVZm9vYmFyYmF6cXV4MTIzNDU2Nzg5MAo=
            +     server: https://127.0.0.1:6443/clusters/root:a
            +     extensions:
            +     - name: example.com/meta
            +       extension:
            +         port: "8443"
            +         enabled: "true"
            +         retries: 3
            + - name: workspace.kcp.io/current
            +   context:
            +     cluster: kspaces
            +     user: admin
            +     namespace: "0600"
            + - name: workspace.kcp.io/previous
            +   context:
            +     cluster: workspace.kcp.io/previous
            +     user: admin
            +     namespace: "0600"
        "#]]);
    }

    #[test]
    fn creating_contexts() {
        check(
            &[
                Step::CreateContext { name: "root:org", server: None, overwrite: false, keep_current: true },
                Step::CreateContext { name: "root:org", server: None, overwrite: false, keep_current: true },
                Step::CreateContext { name: "dev", server: Some("https://127.0.0.1:6443/clusters/root:org:dev"), overwrite: true, keep_current: false },
            ],
            expect![[r#"
                context root:org (existed: false)
                error: context "root:org" already exists in kubeconfig, use --overwrite to update it
                context dev (existed: false)
                + current-context: dev
                - current-context: admin
                + - name: root:org
                +   cluster:
                +     certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJrVENDQVRlZ0F3SUJBZ0lVZm9vYmFyYmF6cXV4MTIzNDU2Nzg5MAo=
                +     server: https://127.0.0.1:6443/clusters/root:org
                +     extensions:
                +     - name: example.com/meta
                +       extension:
                +         port: "8443"
                +         enabled: "true"
                +         retries: 3
                + - name: dev
                +   cluster:
                +     certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJrVENDQVRlZ0F3SUJBZ0lVZm9vYmFyYmF6cXV4MTIzNDU2Nzg5MAo=
                +     server: https://127.0.0.1:6443/clusters/root:org:dev
                +     extensions:
                +     - name: example.com/meta
                +       extension:
                +         port: "8443"
                +         enabled: "true"
                +         retries: 3
                + - name: root:org
                +   context:
                +     cluster: root:org
                +     user: admin
                +     namespace: "0600"
                + - name: dev
                +   context:
                +     cluster: dev
                +     user: admin
                +     namespace: "0600"
            "#]],
        );
    }

    #[test]
    fn missing_entries_are_kcps_errors() {
        let mut file = KubeconfigFile::from_text(Path::new("k"), "contexts:\n- name: a\n  context: {cluster: gone}\nclusters: 3\n").expect("parse");
        assert_eq!(file.switch_to("nope", "x").map_err(|e| e.to_string()), Err("current \"nope\" context not found".to_owned()));
        assert_eq!(file.switch_to("a", "x").map_err(|e| e.to_string()), Err("cluster \"gone\" not found in kubeconfig".to_owned()));
        let mut bad = KubeconfigFile::from_text(Path::new("k"), "contexts:\n- name: a\n  context: {cluster: c}\nclusters:\n- name: c\n  cluster: {server: s}\ncurrent-context: a\n").expect("parse");
        bad.doc.set("clusters", Yaml::str("not a list"));
        assert!(matches!(bad.switch_to("a", "x"), Err(KubeconfigError::ClusterNotFound(_))));
        assert!(KubeconfigFile::from_text(Path::new("k"), "- a\n- b\n").is_err());
        assert!(KubeconfigFile::from_text(Path::new("k"), "a: [\n").is_err());
    }
}
