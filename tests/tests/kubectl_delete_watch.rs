//! kubectl delete (by name, by selector, --all) and kubectl get --watch in its three output shapes.

use std::time::Duration;

use kspaces_tests::{cells, eventually, Kubectl, Server, WatchOutput};

fn configmap(kubectl: &Kubectl, namespace: &str, name: &str, labels: &str) {
    let yaml = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {namespace}, labels: {{{labels}}}}}\n");
    kubectl.ok_with_stdin(&["apply", "-f", "-"], &yaml);
}

/// The ConfigMaps of `namespace` but its `kube-root-ca.crt` (the server's, kept in every namespace as in kube).
fn names(kubectl: &Kubectl, namespace: &str) -> Vec<String> {
    let listed = kubectl.ok(&["get", "cm", "-n", namespace, "-o", "name"]);
    listed.lines().map(|line| line.trim_start_matches("configmap/").to_owned()).filter(|name| name != "kube-root-ca.crt").collect()
}

#[test]
fn delete_by_name_by_selector_and_all() {
    let server = Server::start();
    let kubectl = server.kubectl();
    kubectl.ok_with_stdin(&["apply", "-f", "-"], "apiVersion: v1\nkind: Namespace\nmetadata: {name: sweep}\n");
    for (name, labels) in [("one", "tier: a"), ("two", "tier: b"), ("three", "tier: b"), ("four", "tier: c"), ("five", "")] {
        configmap(&kubectl, "sweep", name, labels);
    }

    assert_eq!(kubectl.ok(&["delete", "cm", "one", "-n", "sweep"]).trim(), "configmap \"one\" deleted");
    assert_eq!(names(&kubectl, "sweep"), ["five", "four", "three", "two"]);
    let again = kubectl.fails(&["delete", "cm", "one", "-n", "sweep"]);
    assert!(again.contains("Error from server (NotFound): configmaps \"one\" not found"), "{again}");
    assert_eq!(kubectl.ok(&["delete", "cm", "one", "-n", "sweep", "--ignore-not-found"]), "");

    let by_label = kubectl.ok(&["delete", "cm", "-n", "sweep", "-l", "tier=b"]);
    assert!(by_label.contains("configmap \"two\" deleted") && by_label.contains("configmap \"three\" deleted"), "{by_label}");
    assert_eq!(names(&kubectl, "sweep"), ["five", "four"]);

    configmap(&kubectl, "default", "bystander", "");
    let all = kubectl.ok(&["delete", "cm", "--all", "-n", "sweep"]);
    assert!(all.contains("configmap \"four\" deleted") && all.contains("configmap \"five\" deleted"), "{all}");
    assert!(names(&kubectl, "sweep").is_empty());
    // `--all` took kube-root-ca.crt too; the server makes it again, as kube's root-ca-cert-publisher does.
    let republished = eventually(TIMEOUT, || kubectl.ok(&["get", "cm", "-n", "sweep", "-o", "name"]).trim() == "configmap/kube-root-ca.crt");
    assert!(republished, "{}", kubectl.ok(&["get", "cm", "-n", "sweep", "-o", "name"]));
    assert_eq!(kubectl.ok(&["get", "cm", "bystander", "-o", "name"]).trim(), "configmap/bystander", "--all stays in its namespace");
}

/// Creates probe config maps until `watch` reports one in its `name_column`, so later events are surely watched.
fn sync(watch: &mut WatchOutput, kubectl: &Kubectl, name_column: usize) {
    let mut attempt = 0;
    let synced = eventually(Duration::from_secs(10), || {
        attempt += 1;
        let probe = format!("probe-{attempt}");
        configmap(kubectl, "default", &probe, "");
        watch.wait_for(Duration::from_millis(500), cells(|cells| cells.get(name_column).is_some_and(|n| n.starts_with("probe-"))))
    });
    assert!(synced, "the watch never reported a probe: {}", watch.transcript());
}

const TIMEOUT: Duration = Duration::from_secs(10);

#[test]
fn get_watch_prints_the_list_then_creates_and_deletes() {
    let server = Server::start();
    let kubectl = server.kubectl();
    configmap(&kubectl, "default", "existing", "");

    let mut watch = WatchOutput::start(&kubectl, &["get", "cm", "-w"]);
    assert!(watch.wait_for(TIMEOUT, cells(|cells| cells.first() == Some(&"existing"))), "{}", watch.transcript());
    assert!(watch.lines()[0].starts_with("NAME"), "the list comes first, with a header: {}", watch.transcript());
    configmap(&kubectl, "default", "watched", "");
    assert!(watch.wait_for(TIMEOUT, cells(|cells| cells.first() == Some(&"watched"))), "create not seen: {}", watch.transcript());
    kubectl.ok(&["delete", "cm", "watched"]);
    let deleted = watch.wait_for_nth(TIMEOUT, 2, cells(|cells| cells.first() == Some(&"watched")));
    assert!(deleted, "the delete printed no second row: {}", watch.transcript());

    let mut watch_only = WatchOutput::start(&kubectl, &["get", "cm", "--watch-only"]);
    sync(&mut watch_only, &kubectl, 0);
    assert!(!watch_only.saw(|line| line.starts_with("existing ")), "--watch-only printed the list: {}", watch_only.transcript());
    configmap(&kubectl, "default", "later", "");
    assert!(watch_only.wait_for(TIMEOUT, cells(|cells| cells.first() == Some(&"later"))), "{}", watch_only.transcript());
    kubectl.ok(&["delete", "cm", "later"]);
    let deleted = watch_only.wait_for_nth(TIMEOUT, 2, cells(|cells| cells.first() == Some(&"later")));
    assert!(deleted, "the delete printed no second row: {}", watch_only.transcript());
}

#[test]
fn watch_with_output_watch_events_names_each_event_type() {
    let server = Server::start();
    let kubectl = server.kubectl();
    configmap(&kubectl, "default", "existing", "");

    let mut watch = WatchOutput::start(&kubectl, &["get", "cm", "-w", "--output-watch-events"]);
    let event = |kind: &'static str, name: &'static str| cells(move |cells| cells.first() == Some(&kind) && cells.get(1) == Some(&name));
    assert!(watch.wait_for(TIMEOUT, event("ADDED", "existing")), "the initial list comes as ADDED: {}", watch.transcript());
    assert!(watch.lines()[0].starts_with("EVENT") && watch.lines()[0].contains("NAME"), "{}", watch.transcript());

    configmap(&kubectl, "default", "watched", "");
    assert!(watch.wait_for(TIMEOUT, event("ADDED", "watched")), "{}", watch.transcript());
    kubectl.ok(&["label", "cm", "watched", "touched=yes"]);
    assert!(watch.wait_for(TIMEOUT, event("MODIFIED", "watched")), "{}", watch.transcript());
    kubectl.ok(&["delete", "cm", "watched"]);
    assert!(watch.wait_for(TIMEOUT, event("DELETED", "watched")), "{}", watch.transcript());
}
