//! Unit tables for the pieces: durations, JSONPath, label selectors.

use chrono::TimeDelta;
use serde_json::{json, Value};

use super::super::read::{format_label_selector, format_labels};
use super::super::{human_duration, JsonPath};

#[test]
fn human_duration_matches_apimachinery() {
    let cases: [(i64, &str); 22] = [
        (-5, "<invalid>"),
        (-2, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (5, "5s"),
        (119, "119s"),
        (120, "2m"),
        (200, "3m20s"),
        (599, "9m59s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 4 * 60, "3h4m"),
        (8 * 3600, "8h"),
        (47 * 3600 + 59 * 60, "47h"),
        (48 * 3600, "2d"),
        (51 * 3600, "2d3h"),
        (8 * 86400, "8d"),
        (45 * 86400, "45d"),
        (729 * 86400, "729d"),
        (3 * 365 * 86400 + 2 * 86400, "3y2d"),
        (9 * 365 * 86400, "9y"),
    ];
    for (seconds, expected) in cases {
        assert_eq!(human_duration(TimeDelta::seconds(seconds)), expected, "for {seconds}s");
    }
    assert_eq!(human_duration(TimeDelta::milliseconds(-1_500)), "0s");
    assert_eq!(human_duration(TimeDelta::milliseconds(-2_000)), "<invalid>");
}

fn find(path: &str, document: &Value) -> Vec<Value> {
    match JsonPath::parse(path) {
        Ok(parsed) => parsed.find(document).into_iter().cloned().collect(),
        Err(error) => panic!("{path} should parse: {error}"),
    }
}

#[test]
fn jsonpath_subset() {
    let document = json!({
        "metadata": {"name": "x", "labels": {"app.kubernetes.io/name": "web"}},
        "spec": {"replicas": 3, "ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]},
        "status": {"conditions": [
            {"type": "Synced", "status": "True", "observed": 2},
            {"type": "Ready", "status": "False", "observed": 5}
        ]}
    });
    let cases: Vec<(&str, Value)> = vec![
        (".spec.replicas", json!([3])),
        ("{.spec.replicas}", json!([3])),
        ("$.metadata.name", json!(["x"])),
        (".spec.ports[0].port", json!([80])),
        (".spec.ports[-1].name", json!(["https"])),
        (".spec.ports[7].name", json!([])),
        (".spec.ports[*].port", json!([80, 443])),
        (".spec.ports.port", json!([])),
        (".spec['replicas']", json!([3])),
        (".metadata.labels.app\\.kubernetes\\.io/name", json!(["web"])),
        (".metadata.labels['app.kubernetes.io/name']", json!(["web"])),
        (".status.conditions[?(@.type==\"Ready\")].status", json!(["False"])),
        (".status.conditions[?(@.type == 'Synced')].status", json!(["True"])),
        (".status.conditions[?(@.type!=\"Ready\")].type", json!(["Synced"])),
        (".status.conditions[?(@.observed>3)].type", json!(["Ready"])),
        (".status.conditions[?(@.observed<=2)].type", json!(["Synced"])),
        (".status.conditions[?(@.missing)].type", json!([])),
        (".status.conditions[?(@.observed)].type", json!(["Synced", "Ready"])),
        (".missing.deeper", json!([])),
    ];
    for (path, expected) in cases {
        assert_eq!(Value::Array(find(path, &document)), expected, "for {path}");
    }
}

#[test]
fn label_formats() {
    assert_eq!(format_labels(Some(&json!({"b": "2", "a": "1"}))), "a=1,b=2");
    assert_eq!(format_labels(Some(&json!({}))), "<none>");
    assert_eq!(format_labels(None), "<none>");
    let cases: Vec<(Value, &str)> = vec![
        (json!(null), "<none>"),
        (json!({}), "<none>"),
        (json!({"matchLabels": {"app": "web"}}), "app=web"),
        (
            json!({"matchLabels": {"z": "1"}, "matchExpressions": [
                {"key": "env", "operator": "NotIn", "values": ["prod", "dev"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "tier", "operator": "Exists"}]}),
            "!canary,env notin (dev,prod),tier,z=1",
        ),
        (json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}), "<error>"),
        (json!({"matchLabels": {"a": 1}}), "<error>"),
        (json!("app=web"), "<error>"),
    ];
    for (selector, expected) in cases {
        assert_eq!(format_label_selector(Some(&selector)), expected, "for {selector}");
    }
}
