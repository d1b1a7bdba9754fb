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

/// On AMD processors `kspaces serve` starts itself once more with glibc's `rep movsb` threshold raised
/// (`apiserver/src/platform.rs`): the process keeps its pid and its flags, and a user's own setting wins.
#[test]
fn on_amd_the_server_runs_with_glibcs_vector_copies() {
    let amd = std::fs::read_to_string("/proc/cpuinfo")
        .expect("read /proc/cpuinfo")
        .lines()
        .find_map(|line| Some(line.strip_prefix("vendor_id")?.trim_start_matches([' ', '\t', ':']).to_owned()))
        .is_some_and(|vendor| vendor == "AuthenticAMD" || vendor == "HygonGenuine");
    let inherited = std::env::var("GLIBC_TUNABLES").ok().filter(|value| !value.is_empty());
    let server = Server::start();
    let environ = std::fs::read(format!("/proc/{}/environ", server.pid())).expect("the server's environment");
    // glibc ends each tunable it parses with a NUL in the environment block the kernel shows here: the entries after
    // `GLIBC_TUNABLES=first` that start with `glibc.` are the rest of its value.
    let mut entries = environ.split(|byte| *byte == 0).map(String::from_utf8_lossy);
    let first = entries.by_ref().find_map(|entry| entry.strip_prefix("GLIBC_TUNABLES=").map(str::to_owned));
    let tunables = first.map(|first| {
        let rest: Vec<_> = entries.take_while(|entry| entry.starts_with("glibc.")).collect();
        std::iter::once(first.into()).chain(rest).collect::<Vec<_>>().join(":")
    });
    let user_set_it = inherited.as_deref().is_some_and(|value| value.contains("glibc.cpu.x86_rep_movsb_threshold="));
    if amd && !user_set_it {
        let tunables = tunables.expect("the server started again with GLIBC_TUNABLES");
        let raised = "glibc.cpu.x86_rep_movsb_threshold=1099511627776";
        assert!(tunables.split(':').any(|entry| entry == raised), "{tunables}");
        if let Some(inherited) = &inherited {
            assert!(tunables.starts_with(&format!("{inherited}:")), "the user's tunables are kept: {tunables}");
        }
    } else {
        assert_eq!(tunables, inherited, "nothing is changed off AMD, or when the user set the threshold");
    }
    // The flags reached the second start: it serves on the port and data dir the harness gave it.
    assert!(server.kubectl().ok(&["get", "ns", "-o", "name"]).contains("namespace/default"));
}
