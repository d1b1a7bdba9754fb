//! kubectl listing: chunked lists (limit/continue), label and field selectors, and -A across namespaces; lists
//! longer than the server's page, streamed from the stored bytes, over HTTP/1.1 and HTTP/2.

use std::process::Command;

use kspaces_tests::{list_names, token_file, Kubectl, Server};
use serde_json::Value;

fn namespace(kubectl: &Kubectl, name: &str) {
    kubectl.ok_with_stdin(&["apply", "-f", "-"], &format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}}}\n"));
}

/// `kubectl get cm -o name` with extra flags, as bare names; each namespace's `kube-root-ca.crt` (the server's,
/// as in kube) aside.
fn names(kubectl: &Kubectl, args: &[&str]) -> Vec<String> {
    let mut full = vec!["get", "cm", "-o", "name"];
    full.extend_from_slice(args);
    own(kubectl.ok(&full).lines().map(|line| line.trim_start_matches("configmap/").to_owned()).collect())
}

/// `names` but the namespaces' `kube-root-ca.crt`.
fn own(names: Vec<String>) -> Vec<String> {
    names.into_iter().filter(|name| name != "kube-root-ca.crt").collect()
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
    let rows: Vec<&str> = table.lines().skip(1).filter_map(|line| line.split_whitespace().next()).filter(|name| *name != "kube-root-ca.crt").collect();
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
    // 30 and the namespace's kube-root-ca.crt.
    assert_eq!(raw["metadata"]["remainingItemCount"], 2, "a limited list without selectors counts what is left: {}", raw["metadata"]);
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
    let by_namespace: Vec<&str> = by_namespace.lines().filter(|line| *line != "configmap/kube-root-ca.crt").collect();
    assert_eq!(by_namespace, ["configmap/elsewhere"]);
}

/// GETs `path` with curl as the `root` token (`--http1.1` or `--http2`); the status line and headers, and the body.
fn curl_with_headers(server: &Server, http: &str, path: &str) -> (String, Vec<u8>) {
    let output = Command::new("curl")
        .args(["-sk", http, "-D", "-", "-H", "Authorization: Bearer root-token", "--max-time", "60"])
        .arg(format!("{}{path}", server.url))
        .output()
        .expect("run curl");
    let split = output.stdout.windows(4).position(|w| w == b"\r\n\r\n").expect("headers end") + 4;
    (String::from_utf8_lossy(&output.stdout[..split]).into_owned(), output.stdout[split..].to_vec())
}

/// A list longer than the server's page (500 objects) goes out a page at a time (chunked over HTTP/1.1) and
/// carries every object exactly as a GET shows it, whatever its bytes hold; selectors, pages, Tables, the
/// namespaces-wide form and the audit log's whole-answer form see the same objects.
#[test]
fn lists_longer_than_a_page_stream_every_object_as_stored() {
    let tokens = token_file(&["root-token,root,u-root,\"system:masters\""]);
    let path = tokens.path().to_str().expect("utf-8 temp path").to_owned();
    let server = Server::start_with(&["--token-auth-file", &path]);
    let kubectl = server.kubectl();
    namespace(&kubectl, "big");
    const COUNT: usize = 1234;
    // One `List` (kubectl parses a YAML stream of a thousand documents slowly: a minute of its own CPU).
    let items: Vec<Value> = (0..COUNT)
        .map(|i| {
            let labels = match i {
                _ if i % 100 == 7 => serde_json::json!({"every": "hundredth"}),
                _ if i == COUNT - 1 => serde_json::json!({"last": "yes"}),
                _ => serde_json::json!({}),
            };
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"i": i.to_string()},
                "metadata": {"name": format!("cm-{i:04}"), "namespace": "big", "labels": labels}})
        })
        .collect();
    kubectl.ok_with_stdin(&["create", "-f", "-"], &serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string());
    // Bytes a careless splice would trip on: a field that looks like metadata, escapes, quotes, non-ASCII.
    let tricky = r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"metadata":"{\"metadata\":{\"name\":\"x\"}}","q":"a\\\"b\u00e9\u2603"},"metadata":{"name":"tricky","namespace":"big","annotations":{"a":"}{"}}}"#;
    kubectl.ok_with_stdin(&["create", "-f", "-"], tricky);
    // The namespace's own kube-root-ca.crt (the server's, as in kube) is among them.
    assert!(kspaces_tests::eventually(std::time::Duration::from_secs(10),
        || kubectl.run(&["get", "cm", "kube-root-ca.crt", "-n", "big"]).status.success()), "kube-root-ca.crt in big");
    let total = COUNT + 2;
    let expected: Vec<String> = {
        let mut names: Vec<String> = (0..COUNT).map(|i| format!("cm-{i:04}")).collect();
        names.push("tricky".to_owned());
        names.push("kube-root-ca.crt".to_owned());
        names.sort();
        names
    };

    let (headers, body) = curl_with_headers(&server, "--http1.1", "/api/v1/namespaces/big/configmaps");
    assert!(headers.starts_with("HTTP/1.1 200"), "{headers}");
    assert!(headers.to_ascii_lowercase().contains("transfer-encoding: chunked"), "a long list is streamed: {headers}");
    let list: Value = serde_json::from_slice(&body).expect("the streamed list is JSON");
    assert_eq!((list["kind"].as_str(), list["apiVersion"].as_str()), (Some("ConfigMapList"), Some("v1")));
    assert!(list["metadata"]["resourceVersion"].as_str().is_some_and(|rv| !rv.is_empty()), "{}", list["metadata"]);
    assert!(list["metadata"].get("continue").is_none(), "{}", list["metadata"]);
    assert_eq!(list_names(&list), expected);
    let (headers, body2) = curl_with_headers(&server, "--http2", "/api/v1/namespaces/big/configmaps");
    assert!(headers.starts_with("HTTP/2 200"), "{headers}");
    let list2: Value = serde_json::from_slice(&body2).expect("the streamed list is JSON over HTTP/2");
    assert_eq!(list2["items"], list["items"], "HTTP/2 carries the same list");

    // Each item is the object a GET returns, resourceVersion included.
    let items = list["items"].as_array().expect("items");
    for index in [0, 499, 500, 501, 999, total - 1] {
        let name = items[index]["metadata"]["name"].as_str().expect("name");
        let got: Value = serde_json::from_str(&kubectl.ok(&["get", "--raw", &format!("/api/v1/namespaces/big/configmaps/{name}")])).expect("GET JSON");
        assert_eq!(items[index], got, "item {index} as listed and as got");
    }
    let tricky_item = items.iter().find(|item| item["metadata"]["name"] == "tricky").expect("the tricky object");
    assert_eq!(tricky_item["data"]["metadata"], r#"{"metadata":{"name":"x"}}"#);
    assert_eq!(tricky_item["data"]["q"], "a\\\"b\u{e9}\u{2603}");
    assert_eq!(tricky_item["metadata"]["annotations"]["a"], "}{");
    let versions: Vec<u64> = items.iter().map(|item| item["metadata"]["resourceVersion"].as_str().and_then(|rv| rv.parse().ok()).expect("rv")).collect();
    let listed: u64 = list["metadata"]["resourceVersion"].as_str().and_then(|rv| rv.parse().ok()).expect("list rv");
    assert!(versions.iter().all(|rv| *rv <= listed), "no item is newer than the list's snapshot");

    // Selectors over a streamed list: labels, metadata fields, across namespaces.
    let get = |path: &str| -> Value { serde_json::from_str(&kubectl.ok(&["get", "--raw", path])).expect("list JSON") };
    let hundredths: Vec<String> = (0..COUNT).filter(|i| i % 100 == 7).map(|i| format!("cm-{i:04}")).collect();
    assert_eq!(list_names(&get("/api/v1/namespaces/big/configmaps?labelSelector=every%3Dhundredth")), hundredths);
    assert_eq!(list_names(&get("/api/v1/configmaps?labelSelector=every%3Dhundredth")), hundredths);
    assert_eq!(list_names(&get("/api/v1/namespaces/big/configmaps?labelSelector=last%3Dyes")), ["cm-1233"], "pages without a match");
    assert_eq!(list_names(&get("/api/v1/namespaces/big/configmaps?fieldSelector=metadata.name%3Dcm-1233")), ["cm-1233"]);
    assert_eq!(list_names(&get("/api/v1/namespaces/big/configmaps?fieldSelector=metadata.name!%3Dcm-0000")).len(), total - 1);
    let everywhere = get("/api/v1/configmaps");
    assert_eq!(everywhere["items"].as_array().map(|items| items.iter().filter(|i| i["metadata"]["namespace"] == "big").count()), Some(total));

    // The same objects through pages, a Table, and kubectl's own chunked walk.
    let mut paged = Vec::new();
    let mut next = "/api/v1/namespaces/big/configmaps?limit=500".to_owned();
    loop {
        let page = get(&next);
        paged.extend(page["items"].as_array().cloned().unwrap_or_default());
        match page["metadata"]["continue"].as_str().filter(|token| !token.is_empty()) {
            Some(token) => next = format!("/api/v1/namespaces/big/configmaps?limit=500&continue={token}"),
            None => break,
        }
    }
    assert_eq!(&paged, items, "pages of 500 hold the same objects");
    // Tables and metadata lists are built a page at a time: every row and item, in order, once.
    // `query`: "" (no limit: the answer is streamed a page at a time) or "?limit=5000" (one page, answered whole).
    let accepting_with = |accept: &str, query: &str| -> Value {
        let output = Command::new("curl")
            .args(["-sk", "-H", "Authorization: Bearer root-token", "-H", &format!("Accept: {accept}")])
            .arg(format!("{}/api/v1/namespaces/big/configmaps{query}", server.url))
            .output()
            .expect("run curl");
        serde_json::from_slice(&output.stdout).expect("JSON")
    };
    let accepting = |accept: &str| accepting_with(accept, "");
    let table = accepting("application/json;as=Table;v=v1;g=meta.k8s.io");
    let rows: Vec<&str> = table["rows"].as_array().expect("rows").iter().filter_map(|row| row["object"]["metadata"]["name"].as_str()).collect();
    assert_eq!(rows, expected, "a Table of every object");
    assert_eq!(table["metadata"]["resourceVersion"], list["metadata"]["resourceVersion"]);
    assert_eq!(table["columnDefinitions"].as_array().map(Vec::len), Some(3), "{}", table["columnDefinitions"]);
    assert_eq!((table["kind"].as_str(), table["apiVersion"].as_str()), (Some("Table"), Some("meta.k8s.io/v1")));
    // Without a limit the Table goes out a page of rows at a time; the rows are those of a Table answered whole.
    let table_headers = Command::new("curl")
        .args(["-sk", "--http1.1", "-D", "-", "-o", "/dev/null", "-H", "Authorization: Bearer root-token", "-H", "Accept: application/json;as=Table;v=v1;g=meta.k8s.io"])
        .arg(format!("{}/api/v1/namespaces/big/configmaps", server.url))
        .output()
        .expect("run curl");
    let table_headers = String::from_utf8_lossy(&table_headers.stdout).to_ascii_lowercase();
    assert!(table_headers.contains("transfer-encoding: chunked") && table_headers.contains("as=table"), "a long Table is streamed: {table_headers}");
    let whole = accepting_with("application/json;as=Table;v=v1;g=meta.k8s.io", "?limit=5000");
    let cells = |table: &Value| -> Vec<(Value, Value)> {
        table["rows"].as_array().into_iter().flatten().map(|row| (row["cells"][0].clone(), row["cells"][1].clone())).collect()
    };
    assert_eq!(cells(&table), cells(&whole), "the streamed Table's NAME and DATA cells, as answered whole");
    assert_eq!(table["columnDefinitions"], whole["columnDefinitions"]);
    assert_eq!(kubectl.ok(&["get", "cm", "-n", "big", "--chunk-size=0", "--no-headers"]).lines().count(), total, "kubectl reads it");
    let partial = accepting("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io");
    assert_eq!(partial["kind"], "PartialObjectMetadataList");
    assert_eq!(list_names(&partial), expected);
    let whole_partial = accepting_with("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", "?limit=5000");
    assert_eq!(partial["items"], whole_partial["items"], "the streamed metadata list, as answered whole");
    assert_eq!(partial["metadata"]["resourceVersion"], list["metadata"]["resourceVersion"]);
    assert_eq!(kubectl.ok(&["get", "cm", "-n", "big", "--no-headers"]).lines().count(), total);
    assert_eq!(names(&kubectl, &["-n", "big"]), own(expected));
}

/// With an audit policy that records answers, a list is answered whole (the log holds it) and is the same list.
#[test]
fn lists_audited_with_their_answers_are_whole() {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n  resources: [{group: '', resources: [configmaps]}]\n- level: None\n").expect("write the policy");
    let log = dir.path().join("audit.log");
    let tokens = token_file(&["root-token,root,u-root,\"system:masters\""]);
    let server = Server::start_with(&["--token-auth-file", tokens.path().to_str().expect("utf-8"), "--audit-policy-file",
        policy.to_str().expect("utf-8"), "--audit-log-path", log.to_str().expect("utf-8")]);
    let kubectl = server.kubectl();
    let items: Vec<Value> = (0..600).map(|i| serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("a-{i:03}")}})).collect();
    kubectl.ok_with_stdin(&["create", "-n", "default", "-f", "-"], &serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string());
    let (headers, body) = curl_with_headers(&server, "--http1.1", "/api/v1/namespaces/default/configmaps");
    assert!(!headers.to_ascii_lowercase().contains("transfer-encoding: chunked"), "answered whole: {headers}");
    let list: Value = serde_json::from_slice(&body).expect("list JSON");
    assert_eq!(own(list_names(&list)).len(), 600);
    let logged = kspaces_tests::eventually(std::time::Duration::from_secs(10), || {
        std::fs::read_to_string(&log).unwrap_or_default().lines().any(|line| {
            serde_json::from_str::<Value>(line).is_ok_and(|event| event["verb"] == "list" && event["stage"] == "ResponseComplete"
                && event["responseObject"]["items"] == list["items"])
        })
    });
    assert!(logged, "the audit log records the whole list");
}
