//! The README's first minutes: the server starts, prints its URL, and kubectl lists the default namespaces.

use kspaces_tests::Server;

#[test]
fn kubectl_lists_default_namespaces_and_second_start_reuses_everything() {
    let server = Server::start();
    let kubectl = server.kubectl();
    let namespaces = kubectl.ok(&["get", "ns", "-o", "name"]);
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(namespaces.contains(&format!("namespace/{ns}")), "{namespaces}");
    }
    kubectl.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep}\ndata: {a: '1'}\n");
    let ca = std::fs::read_to_string(server.data_dir.path().join("pki/ca.crt")).expect("CA written");
    // What holds a private key is readable by its owner only: the admin kubeconfig, the CA's and serving keys.
    let mode = |file: &str| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(server.data_dir.path().join(file)).unwrap_or_else(|e| panic!("{file}: {e}")).permissions().mode() & 0o777
    };
    let private: Vec<(&str, u32)> = ["admin.kubeconfig", "pki/ca.key"].into_iter().map(|f| (f, mode(f))).collect();
    assert_eq!(private, [("admin.kubeconfig", 0o600), ("pki/ca.key", 0o600)]);
    let dir = server.stop();
    let again = Server::start_in(dir, &[]);
    assert_eq!(std::fs::read_to_string(again.data_dir.path().join("pki/ca.crt")).expect("CA kept"), ca);
    assert_eq!(again.kubectl().ok(&["get", "cm", "keep", "-o", "jsonpath={.data.a}"]), "1");
}
