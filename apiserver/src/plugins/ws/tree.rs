//! `kubectl ws tree [-f]`: the workspaces below the current one, drawn as kcp draws them (xlab/treeprint's
//! `├──`/`└──`/`│` under a `.` line, then a blank line).

use std::future::Future;
use std::pin::Pin;

use crate::plugins::client::KcpClient;
use crate::plugins::path::{ClusterUrl, WorkspacePath};
use crate::plugins::{failed, ConnectionArgs, Io, PluginError, PluginResult, Session};

/// A workspace and the ones below it, labelled as they are printed.
#[derive(Debug, PartialEq)]
pub struct Node {
    pub label: String,
    pub children: Vec<Node>,
}

pub async fn print(connection: &ConnectionArgs, full: bool, io: &mut Io<'_>) -> PluginResult {
    let session = Session::open(connection)?;
    let current = match session.workspace_or(|server| format!("current context URL {server:?} does not point directly to a kcp workspace")).await {
        Ok(current) => current,
        // Not an error for kcp's tree: it says so and succeeds.
        Err(PluginError::Failed(message)) => {
            writeln!(io.out, "{message}")?;
            return Ok(());
        }
        Err(error) => return Err(error),
    };
    let label = if full { current.path.to_string() } else { current.path.base().to_owned() };
    let client = session.client().await?;
    let root = Node { children: children(&client, current.path.clone(), label.clone(), full, true).await?, label };
    // kcp prints the tree with Println: a blank line follows it.
    writeln!(io.out, "{}", render(&root))?;
    Ok(())
}

/// The workspaces in `parent` (a 404 on the list: none), recursively; deleted ones are skipped, mounted ones are
/// leaves marked `[m]`. Below the current workspace, one whose workspaces the caller may not list (403) is a leaf:
/// kcp's plugin fails the whole tree there, which kcp counts as a bug (kcp#3834, fixed only for deleting
/// workspaces); the current workspace itself must be listable.
fn children<'a>(
    client: &'a KcpClient,
    parent: WorkspacePath,
    parent_label: String,
    full: bool,
    top: bool,
) -> Pin<Box<dyn Future<Output = PluginResult<Vec<Node>>> + 'a>> {
    Box::pin(async move {
        let workspaces = match client.workspaces(&parent).await {
            Ok(workspaces) => workspaces,
            Err(error) if error.is_not_found() || (error.is_forbidden() && !top) => return Ok(Vec::new()),
            Err(error) => return Err(error.into()),
        };
        let mut nodes = Vec::new();
        for workspace in workspaces.into_iter().filter(|w| w.metadata.deletion_timestamp.is_none()) {
            let name = &workspace.metadata.name;
            let label = if full { format!("{parent_label}:{name}") } else { name.clone() };
            if workspace.spec.mount.is_some() {
                nodes.push(Node { label: format!("{label} [m]"), children: Vec::new() });
                continue;
            }
            let Some(url) = ClusterUrl::parse(&workspace.spec.url) else {
                return failed(format!("current config context URL {:?} does not point to workspace", workspace.spec.url));
            };
            nodes.push(Node { children: children(client, url.path, label.clone(), full, false).await?, label });
        }
        Ok(nodes)
    })
}

/// The tree under a `.` line: each node after its ancestors' rails (`│   ` while an ancestor has siblings to
/// come, four spaces once it was the last), `├── ` before a node with siblings to come, `└── ` before the last.
pub fn render(root: &Node) -> String {
    let mut out = String::from(".\n");
    draw(&mut out, std::slice::from_ref(root), &mut Vec::new());
    out
}

fn draw(out: &mut String, nodes: &[Node], rails: &mut Vec<bool>) {
    for (i, node) in nodes.iter().enumerate() {
        let last = i + 1 == nodes.len();
        for more_below in rails.iter() {
            out.push_str(if *more_below { "│   " } else { "    " });
        }
        out.push_str(if last { "└── " } else { "├── " });
        out.push_str(&node.label);
        out.push('\n');
        rails.push(!last);
        draw(out, &node.children, rails);
        rails.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(label: &str, children: Vec<Node>) -> Node {
        Node { label: label.to_owned(), children }
    }

    #[test]
    fn drawn_as_kcp_draws_it() {
        let tree = node("root", vec![
            node("org", vec![node("team-a", vec![node("dev", vec![])]), node("team-b", vec![])]),
            node("mounted [m]", vec![]),
            node("users", vec![node("ab", vec![node("alice", vec![])])]),
        ]);
        expect_test::expect![[r#"
            .
            └── root
                ├── org
                │   ├── team-a
                │   │   └── dev
                │   └── team-b
                ├── mounted [m]
                └── users
                    └── ab
                        └── alice
        "#]]
        .assert_eq(&render(&tree));
        assert_eq!(render(&node("leaf", vec![])), ".\n└── leaf\n");
    }
}
