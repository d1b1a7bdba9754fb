//! kubectl delete (by name, by selector, --all) and kubectl get --watch in its three output shapes.

use std::io::{BufRead, BufReader};
use std::process::Child;
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use kspaces_tests::{eventually, Kubectl, Server};

fn configmap(kubectl: &Kubectl, namespace: &str, name: &str, labels: &str) {
    let yaml = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {namespace}, labels: {{{labels}}}}}\n");
    kubectl.ok_with_stdin(&["apply", "-f", "-"], &yaml);
}

fn names(kubectl: &Kubectl, namespace: &str) -> Vec<String> {
    let listed = kubectl.ok(&["get", "cm", "-n", namespace, "-o", "name"]);
    listed.lines().map(|line| line.trim_start_matches("configmap/").to_owned()).collect()
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
    let empty = kubectl.run(&["get", "cm", "-n", "sweep"]);
    assert!(String::from_utf8_lossy(&empty.stderr).contains("No resources found in sweep namespace."));
    assert_eq!(kubectl.ok(&["get", "cm", "bystander", "-o", "name"]).trim(), "configmap/bystander", "--all stays in its namespace");
}

/// A background `kubectl get -w`: its stdout lines arrive on a channel, read by a thread.
struct Watcher {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Watcher {
    fn start(kubectl: &Kubectl, args: &[&str]) -> Watcher {
        let mut child = kubectl.spawn(args);
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Watcher { child, lines, seen: Vec::new() }
    }

    /// Reads lines until `count` lines seen so far satisfy `wanted` (true) or `timeout` passes (false).
    fn wait_for_nth(&mut self, timeout: Duration, count: usize, wanted: impl Fn(&[&str]) -> bool) -> bool {
        let matches = |line: &String| wanted(&line.split_whitespace().collect::<Vec<_>>());
        let deadline = Instant::now() + timeout;
        let mut found = self.seen.iter().filter(|line| matches(line)).count();
        while found < count {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else { return false };
            let Ok(line) = self.lines.recv_timeout(left) else { return false };
            found += usize::from(matches(&line));
            self.seen.push(line);
        }
        true
    }

    fn wait_for(&mut self, timeout: Duration, wanted: impl Fn(&[&str]) -> bool) -> bool {
        self.wait_for_nth(timeout, 1, wanted)
    }

    /// Creates probe config maps until the watch reports one, so later events are surely watched.
    fn sync(&mut self, kubectl: &Kubectl, name_column: usize) {
        let mut attempt = 0;
        let synced = eventually(Duration::from_secs(10), || {
            attempt += 1;
            let probe = format!("probe-{attempt}");
            configmap(kubectl, "default", &probe, "");
            self.wait_for(Duration::from_millis(500), |cells| cells.get(name_column).is_some_and(|n| n.starts_with("probe-")))
        });
        assert!(synced, "the watch never reported a probe: {:?}", self.seen);
    }

    fn transcript(&self) -> String {
        self.seen.join("\n")
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const TIMEOUT: Duration = Duration::from_secs(10);

#[test]
fn get_watch_prints_the_list_then_creates_and_deletes() {
    let server = Server::start();
    let kubectl = server.kubectl();
    configmap(&kubectl, "default", "existing", "");

    let mut watch = Watcher::start(&kubectl, &["get", "cm", "-w"]);
    assert!(watch.wait_for(TIMEOUT, |cells| cells.first() == Some(&"existing")), "{}", watch.transcript());
    assert!(watch.seen[0].starts_with("NAME"), "the list comes first, with a header: {}", watch.transcript());
    configmap(&kubectl, "default", "watched", "");
    assert!(watch.wait_for(TIMEOUT, |cells| cells.first() == Some(&"watched")), "create not seen: {}", watch.transcript());
    kubectl.ok(&["delete", "cm", "watched"]);
    let deleted = watch.wait_for_nth(TIMEOUT, 2, |cells| cells.first() == Some(&"watched"));
    assert!(deleted, "the delete printed no second row: {}", watch.transcript());

    let mut watch_only = Watcher::start(&kubectl, &["get", "cm", "--watch-only"]);
    watch_only.sync(&kubectl, 0);
    assert!(!watch_only.seen.iter().any(|line| line.starts_with("existing ")), "--watch-only printed the list: {}", watch_only.transcript());
    configmap(&kubectl, "default", "later", "");
    assert!(watch_only.wait_for(TIMEOUT, |cells| cells.first() == Some(&"later")), "{}", watch_only.transcript());
    kubectl.ok(&["delete", "cm", "later"]);
    let deleted = watch_only.wait_for_nth(TIMEOUT, 2, |cells| cells.first() == Some(&"later"));
    assert!(deleted, "the delete printed no second row: {}", watch_only.transcript());
}

#[test]
fn watch_with_output_watch_events_names_each_event_type() {
    let server = Server::start();
    let kubectl = server.kubectl();
    configmap(&kubectl, "default", "existing", "");

    let mut watch = Watcher::start(&kubectl, &["get", "cm", "-w", "--output-watch-events"]);
    let event = |kind: &'static str, name: &'static str| move |cells: &[&str]| cells.first() == Some(&kind) && cells.get(1) == Some(&name);
    assert!(watch.wait_for(TIMEOUT, event("ADDED", "existing")), "the initial list comes as ADDED: {}", watch.transcript());
    assert!(watch.seen[0].starts_with("EVENT") && watch.seen[0].contains("NAME"), "{}", watch.transcript());

    configmap(&kubectl, "default", "watched", "");
    assert!(watch.wait_for(TIMEOUT, event("ADDED", "watched")), "{}", watch.transcript());
    kubectl.ok(&["label", "cm", "watched", "touched=yes"]);
    assert!(watch.wait_for(TIMEOUT, event("MODIFIED", "watched")), "{}", watch.transcript());
    kubectl.ok(&["delete", "cm", "watched"]);
    assert!(watch.wait_for(TIMEOUT, event("DELETED", "watched")), "{}", watch.transcript());
}
