//! kubectl listing: chunked lists (limit/continue), label and field selectors, and -A across namespaces.

use kspaces_tests::{Kubectl, Server};

fn namespace(kubectl: &Kubectl, name: &str) {
    kubectl.ok_with_stdin(&["apply", "-f", "-"], &format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}}}\n"));
}

/// `kubectl get cm -o name` with extra flags, as bare names.
fn names(kubectl: &Kubectl, args: &[&str]) -> Vec<String> {
    let mut full = vec!["get", "cm", "-o", "name"];
    full.extend_from_slice(args);
    kubectl.ok(&full).lines().map(|line| line.trim_start_matches("configmap/").to_owned()).collect()
}

#[test]
fn chunked_list_pages_through_every_item() {
    let server = Server::start();
    let kubectl = server.kubectl();
    namespace(&kubectl, "paged");
    let manifests: String = (1..=30)
        .map(|i| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: page-{i:02}, namespace: paged}}\ndata: {{i: '{i}'}}\n---\n"))
        .collect();
    kubectl.ok_with_stdin(&["apply", "-f", "-"], &manifests);

    let output = kubectl.run(&["get", "cm", "-n", "paged", "--chunk-size=7", "-v=6"]);
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let rows: Vec<&str> = table.lines().skip(1).filter_map(|line| line.split_whitespace().next()).collect();
    let expected: Vec<String> = (1..=30).map(|i| format!("page-{i:02}")).collect();
    assert_eq!(rows, expected, "{table}");
    assert_eq!(table.lines().filter(|line| line.starts_with("NAME")).count(), 1, "one header for all chunks:\n{table}");

    let log = String::from_utf8_lossy(&output.stderr);
    let gets: Vec<&str> = log.lines().filter(|line| line.contains("GET ") && line.contains("/namespaces/paged/configmaps")).collect();
    assert_eq!(gets.len(), 5, "30 items in chunks of 7 take 5 requests:\n{}", gets.join("\n"));
    assert!(gets.iter().all(|line| line.contains("limit=7")), "{}", gets.join("\n"));
    assert!(!gets[0].contains("continue="), "{}", gets[0]);
    assert!(gets[1..].iter().all(|line| line.contains("continue=")), "{}", gets.join("\n"));

    assert_eq!(names(&kubectl, &["-n", "paged", "--chunk-size=4"]), expected);
    let raw = kubectl.ok(&["get", "--raw", "/api/v1/namespaces/paged/configmaps?limit=29"]);
    let raw: serde_json::Value = serde_json::from_str(&raw).expect("list JSON");
    assert_eq!(raw["items"].as_array().map(Vec::len), Some(29));
    assert!(raw["metadata"]["continue"].as_str().is_some_and(|token| !token.is_empty()), "{}", raw["metadata"]);
    assert_eq!(raw["metadata"]["remainingItemCount"], 1, "a limited list without selectors counts what is left: {}", raw["metadata"]);
}

#[test]
fn label_and_field_selectors_and_all_namespaces() {
    let server = Server::start();
    let kubectl = server.kubectl();
    namespace(&kubectl, "sel");
    namespace(&kubectl, "other");
    let objects = [
        ("prod-web", "sel", "{env: prod, tier: web}"),
        ("prod-db", "sel", "{env: prod, tier: db}"),
        ("dev-web", "sel", "{env: dev, tier: web}"),
        ("test-only", "sel", "{env: test}"),
        ("bare", "sel", "{}"),
        ("elsewhere", "other", "{env: prod, tier: web}"),
    ];
    for (name, ns, labels) in objects {
        let yaml = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {ns}, labels: {labels}}}\n");
        kubectl.ok_with_stdin(&["apply", "-f", "-"], &yaml);
    }

    let select = |selector: &str| names(&kubectl, &["-n", "sel", "-l", selector]);
    assert_eq!(select("env=prod"), ["prod-db", "prod-web"]);
    assert_eq!(select("env==prod,tier=web"), ["prod-web"]);
    assert_eq!(select("env!=prod"), ["bare", "dev-web", "test-only"], "!= matches objects without the label");
    assert_eq!(select("env in (dev,test)"), ["dev-web", "test-only"]);
    assert_eq!(select("env notin (prod,dev)"), ["bare", "test-only"], "notin matches objects without the label");
    assert_eq!(select("tier"), ["dev-web", "prod-db", "prod-web"]);
    assert_eq!(select("!tier"), ["bare", "test-only"]);
    assert_eq!(select("env=prod,!tier"), Vec::<String>::new());
    let bad = kubectl.fails(&["get", "cm", "-n", "sel", "-l", "env in prod"]);
    assert!(bad.contains("unable to parse requirement") || bad.contains("parenthes"), "{bad}");

    assert_eq!(names(&kubectl, &["-n", "sel", "--field-selector", "metadata.name=dev-web"]), ["dev-web"]);
    assert_eq!(names(&kubectl, &["-n", "sel", "--field-selector", "metadata.name!=bare", "-l", "env=prod"]), ["prod-db", "prod-web"]);
    let unsupported = kubectl.fails(&["get", "cm", "-n", "sel", "--field-selector", "data.x=1"]);
    assert!(unsupported.contains("field label not supported: data.x"), "{unsupported}");

    let everywhere = kubectl.ok(&["get", "cm", "-A", "-l", "env=prod,tier=web"]);
    let header: Vec<&str> = everywhere.lines().next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(header, ["NAMESPACE", "NAME", "DATA", "AGE"], "{everywhere}");
    let rows: Vec<Vec<&str>> = everywhere.lines().skip(1).map(|line| line.split_whitespace().take(2).collect()).collect();
    assert_eq!(rows, [vec!["other", "elsewhere"], vec!["sel", "prod-web"]], "{everywhere}");
    let columns = kubectl.ok(&["get", "cm", "-n", "sel", "-l", "tier=web", "-L", "env", "--show-labels"]);
    let header: Vec<&str> = columns.lines().next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(header, ["NAME", "DATA", "AGE", "ENV", "LABELS"], "{columns}");
    let dev: Vec<&str> = columns.lines().find(|line| line.starts_with("dev-web")).unwrap_or_default().split_whitespace().collect();
    assert_eq!(dev.get(3..), Some(&["dev", "env=dev,tier=web"][..]), "{columns}");
    let sorted = kubectl.ok(&["get", "cm", "-n", "sel", "-l", "env", "--sort-by=.metadata.labels.env", "-o", "name"]);
    assert_eq!(sorted.lines().next(), Some("configmap/dev-web"), "{sorted}");
    assert_eq!(sorted.lines().last(), Some("configmap/test-only"), "{sorted}");

    let by_namespace = kubectl.ok(&["get", "cm", "-A", "--field-selector", "metadata.namespace=other", "-o", "name"]);
    assert_eq!(by_namespace.trim(), "configmap/elsewhere");
}
