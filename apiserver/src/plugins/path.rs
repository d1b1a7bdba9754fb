//! Workspace paths and the arithmetic of `kubectl ws`: which workspace an argument names, from the current one.
//!
//! A path is kcp's `logicalcluster.Path`: `root:org:team`, names of `[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?` joined by
//! `:`. A kubeconfig reaches a workspace at `<base>/clusters/<path>`; the plugins only ever change `<path>`.

use std::fmt;

/// A valid workspace path (or a bare logical cluster name, which is a one-segment path).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspacePath(String);

impl WorkspacePath {
    /// `text` if it is a valid path.
    pub fn parse(text: &str) -> Option<WorkspacePath> {
        text.split(':').all(is_name).then(|| WorkspacePath(text.to_owned()))
    }

    /// `root`, the top of the tree.
    pub fn root() -> WorkspacePath {
        WorkspacePath("root".to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The parent path and the last name, or `None` for a one-segment path.
    pub fn split(&self) -> Option<(WorkspacePath, &str)> {
        let (parent, name) = self.0.rsplit_once(':')?;
        Some((WorkspacePath(parent.to_owned()), name))
    }

    /// The last name (`team` in `root:org:team`).
    pub fn base(&self) -> &str {
        self.0.rsplit(':').next().unwrap_or(&self.0)
    }

    /// The first name: the root of the tree this path is in (`:` goes there).
    pub fn top(&self) -> WorkspacePath {
        WorkspacePath(self.0.split(':').next().unwrap_or(&self.0).to_owned())
    }

    /// The child `name` (a valid name, e.g. from a Workspace the server returned).
    pub fn child(&self, name: &str) -> Option<WorkspacePath> {
        is_name(name).then(|| WorkspacePath(format!("{}:{name}", self.0)))
    }
}

impl fmt::Display for WorkspacePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One name of a path: `[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?`.
fn is_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match bytes {
        [] => false,
        [only] => alnum(only),
        [first, middle @ .., last] => {
            bytes.len() <= 63 && alnum(first) && alnum(last) && middle.iter().all(|b| alnum(b) || *b == b'-')
        }
    }
}

/// A server URL split around `/clusters/<path>`: `base` is everything before `/clusters/` (scheme, host and any
/// proxy prefix), as kcp's `ParseClusterURL` splits it; what follows the path is dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterUrl {
    pub base: String,
    pub path: WorkspacePath,
}

impl ClusterUrl {
    /// `None` if the URL has no `/clusters/<valid path>` in its path.
    pub fn parse(url: &str) -> Option<ClusterUrl> {
        let without_query = url.split(['?', '#']).next().unwrap_or(url);
        let path_start = match without_query.find("://") {
            Some(scheme_end) => without_query[scheme_end + 3..].find('/').map(|i| scheme_end + 3 + i)?,
            None => without_query.find('/')?,
        };
        let at = path_start + without_query[path_start..].find("/clusters/")?;
        let rest = &without_query[at + "/clusters/".len()..];
        let path = WorkspacePath::parse(rest.split('/').next().unwrap_or(rest))?;
        Some(ClusterUrl { base: without_query[..at].to_owned(), path })
    }

    /// The URL of workspace `path` on the same server.
    pub fn url_of(&self, path: &WorkspacePath) -> String {
        format!("{}/clusters/{path}", self.base)
    }
}

/// What the argument of `kubectl ws [use]` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `-`: swap with the previous workspace.
    Previous,
    /// `:`: the root of the current tree.
    Root,
    /// `.`: print the current workspace.
    Current,
    /// `~` or `~:rest`: the home workspace, then `rest` (which starts with `:` or is empty).
    Home { rest: String },
    /// An absolute (`:root:a`) or relative (`a:b`, `..`) path, not yet resolved.
    Path(String),
}

/// The argument of `kubectl ws [use]`, read as kcp reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Argument {
    pub target: Target,
    /// The argument began with `root` (kcp's old absolute form): it was made absolute, with a note.
    pub legacy_root: bool,
    /// There was no argument: `kubectl ws` goes home, with a note.
    pub defaulted_home: bool,
}

impl Argument {
    /// Reads `arg` like kcp: a shell-expanded home directory (`kubectl ws ~/x` arrives as `/home/me/x`) becomes
    /// `~`, `/` becomes `:`, a leading `root` becomes absolute, nothing means `~`.
    pub fn parse(arg: Option<&str>, home_dir: Option<&str>) -> Argument {
        let mut name = arg.unwrap_or_default().to_owned();
        if let Some(home) = home_dir.filter(|h| !h.is_empty()) {
            if let Some(rest) = name.strip_prefix(home) {
                name = format!("~{rest}");
            }
        }
        name = name.replace('/', ":");
        let legacy_root = name == "root" || name.starts_with("root:");
        if legacy_root {
            name.insert(0, ':');
        }
        let defaulted_home = name.is_empty();
        let target = match name.as_str() {
            "" | "~" => Target::Home { rest: String::new() },
            "-" => Target::Previous,
            ":" => Target::Root,
            "." => Target::Current,
            other => match other.strip_prefix('~').filter(|rest| rest.starts_with(':')) {
                Some(rest) => Target::Home { rest: rest.to_owned() },
                None => Target::Path(other.to_owned()),
            },
        };
        Argument { target, legacy_root, defaulted_home }
    }
}

/// Why a path argument names no workspace. The messages are kcp's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("cannot go up from root")]
    AboveRoot,
    #[error("invalid workspace path: {0}")]
    Invalid(String),
}

/// Resolves `name` (absolute if it starts with `:`, else relative to `current`): `.` stays, `..` goes up, the
/// result must be a valid path. `original` is the user's argument, for the error.
pub fn resolve(current: &WorkspacePath, name: &str, original: &str) -> Result<WorkspacePath, PathError> {
    let absolute = match name.strip_prefix(':') {
        Some(absolute) => absolute.to_owned(),
        None => format!("{current}:{name}"),
    };
    let mut segments: Vec<&str> = Vec::new();
    for segment in absolute.split(':') {
        match segment {
            "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Err(PathError::AboveRoot);
                }
            }
            other => segments.push(other),
        }
    }
    WorkspacePath::parse(&segments.join(":")).ok_or_else(|| PathError::Invalid(original.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{expect, Expect};

    /// One row per argument: the argument from `current` (home `root:users:ab:cd:alice`, home dir `/home/alice`)
    /// and what it reaches, `kubectl ws`'s arithmetic without the server.
    fn check(current: &str, rows: &[&str], expected: Expect) {
        let current = WorkspacePath::parse(current).expect("valid current path");
        let home = WorkspacePath::parse("root:users:ab:cd:alice").expect("valid home");
        let mut out = String::new();
        for arg in rows {
            let argument = Argument::parse((!arg.is_empty()).then_some(*arg), Some("/home/alice"));
            let notes = match (argument.legacy_root, argument.defaulted_home) {
                (true, _) => " (note: root:)",
                (_, true) => " (note: home)",
                _ => "",
            };
            let reached = match &argument.target {
                Target::Previous => "previous".to_owned(),
                Target::Root => format!("-> {}", current.top()),
                Target::Current => "print current".to_owned(),
                Target::Home { rest } => show(resolve(&current, &format!(":{home}{rest}"), arg)),
                Target::Path(name) => show(resolve(&current, name, arg)),
            };
            out.push_str(&format!("{arg:?}: {reached}{notes}\n"));
        }
        expected.assert_eq(&out);
    }

    fn show(result: Result<WorkspacePath, PathError>) -> String {
        match result {
            Ok(path) => format!("-> {path}"),
            Err(error) => format!("error: {error}"),
        }
    }

    #[test]
    fn arguments_from_a_nested_workspace() {
        let rows = [
            "team", "team:dev", "..", "..:..", "..:..:..", "..:sibling", ".", "-", ":", ":root:other", "root",
            "root:org", "~", "~:sub", "", "/home/alice", "/home/alice/sub", "./team", "a:.:b", "..:..:..:..",
            "Bad", "a::b", "~sub", ":", "::", "a-", "-a", &"x".repeat(64), "*",
        ];
        check("root:org", &rows, expect![[r#"
            "team": -> root:org:team
            "team:dev": -> root:org:team:dev
            "..": -> root
            "..:..": error: invalid workspace path: ..:..
            "..:..:..": error: cannot go up from root
            "..:sibling": -> root:sibling
            ".": print current
            "-": previous
            ":": -> root
            ":root:other": -> root:other
            "root": -> root (note: root:)
            "root:org": -> root:org (note: root:)
            "~": -> root:users:ab:cd:alice
            "~:sub": -> root:users:ab:cd:alice:sub
            "": -> root:users:ab:cd:alice (note: home)
            "/home/alice": -> root:users:ab:cd:alice
            "/home/alice/sub": -> root:users:ab:cd:alice:sub
            "./team": -> root:org:team
            "a:.:b": -> root:org:a:b
            "..:..:..:..": error: cannot go up from root
            "Bad": error: invalid workspace path: Bad
            "a::b": error: invalid workspace path: a::b
            "~sub": error: invalid workspace path: ~sub
            ":": -> root
            "::": error: invalid workspace path: ::
            "a-": error: invalid workspace path: a-
            "-a": error: invalid workspace path: -a
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx": error: invalid workspace path: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
            "*": error: invalid workspace path: *
        "#]]);
    }

    #[test]
    fn arguments_from_root_and_from_a_logical_cluster_name() {
        check("root", &["..", "a", ":", "-"], expect![[r#"
            "..": error: invalid workspace path: ..
            "a": -> root:a
            ":": -> root
            "-": previous
        "#]]);
        check("2okdry95y5lkv", &["a", ":", ".."], expect![[r#"
            "a": -> 2okdry95y5lkv:a
            ":": -> 2okdry95y5lkv
            "..": error: invalid workspace path: ..
        "#]]);
    }

    /// One row per server URL: where the base ends and which path it names.
    #[test]
    fn cluster_urls() {
        let rows = [
            "https://127.0.0.1:6443/clusters/root",
            "https://host/clusters/root:org:team/",
            "https://host/clusters/root:a/api/v1?x=1",
            "https://host/proxy/clusters/root:a",
            "http://host:80/clusters/abc123",
            "https://host:6443",
            "https://host/clusters/",
            "https://host/clusters/Root",
            "https://clusters/x",
        ];
        let mut out = String::new();
        for url in rows {
            match ClusterUrl::parse(url) {
                Some(parsed) => {
                    let child = parsed.path.child("x").expect("valid child");
                    out.push_str(&format!("{url}: base {} path {} -> {}\n", parsed.base, parsed.path, parsed.url_of(&child)));
                }
                None => out.push_str(&format!("{url}: not a workspace URL\n")),
            }
        }
        expect![[r#"
            https://127.0.0.1:6443/clusters/root: base https://127.0.0.1:6443 path root -> https://127.0.0.1:6443/clusters/root:x
            https://host/clusters/root:org:team/: base https://host path root:org:team -> https://host/clusters/root:org:team:x
            https://host/clusters/root:a/api/v1?x=1: base https://host path root:a -> https://host/clusters/root:a:x
            https://host/proxy/clusters/root:a: base https://host/proxy path root:a -> https://host/proxy/clusters/root:a:x
            http://host:80/clusters/abc123: base http://host:80 path abc123 -> http://host:80/clusters/abc123:x
            https://host:6443: not a workspace URL
            https://host/clusters/: not a workspace URL
            https://host/clusters/Root: not a workspace URL
            https://clusters/x: not a workspace URL
        "#]]
        .assert_eq(&out);
    }

    #[test]
    fn path_parts() {
        let path = WorkspacePath::parse("root:org:team").expect("valid");
        assert_eq!(path.base(), "team");
        assert_eq!(path.top(), WorkspacePath::root());
        assert_eq!(path.split().map(|(p, n)| (p.to_string(), n.to_owned())), Some(("root:org".to_owned(), "team".to_owned())));
        assert_eq!(WorkspacePath::root().split(), None);
        assert_eq!(path.child("Bad"), None);
    }
}
