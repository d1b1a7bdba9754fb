//! The decoder's own rows: formats, YAML alias bounds, and how Go prints a decoded patch.

use serde_json::json;

use super::*;

#[test]
fn nested_yaml_aliases_replay_no_more_than_the_body_is_long() {
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    // 10^5 scalars from a few hundred bytes: under the default bound (a million replayed events).
    for level in 1..5 {
        let previous = format!("*a{}", level - 1);
        bomb.push_str(&format!("a{level}: &a{level} [{}]\n", vec![previous; 10].join(", ")));
    }
    let started = std::time::Instant::now();
    let refused = read(BodyFormat::Yaml, bomb.as_bytes(), Strictness::None).map(|d| d.value).err().map(|e| e.code);
    assert_eq!(refused, Some(400), "a billion laughs is refused");
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "refused after {:?}", started.elapsed());
    let fine = "base: &base {a: 1, b: 2}\nfirst: *base\nsecond: *base\n";
    let decoded = read(BodyFormat::Yaml, fine.as_bytes(), Strictness::None).map(|d| d.value).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(decoded["second"]["b"], 2, "ordinary aliases still read");
}

/// An untyped body (DeleteOptions, a review) in `content_type`: its value or the error's code.
fn untyped(content_type: Option<&str>, body: &str) -> Result<Value, u16> {
    decode(body.as_bytes(), content_type, FieldValidation::Strict, Purpose::Untyped, &mut |_| {}).map(|d| d.value).map_err(|e| e.code)
}

#[test]
fn untyped_bodies_are_read_in_their_content_type() {
    assert_eq!(untyped(None, r#"{"a": 1, "a": 2}"#), Ok(json!({"a": 2})), "nothing is checked, the last key wins");
    assert_eq!(untyped(Some("application/yaml"), "a: 1\n"), Ok(json!({"a": 1})));
    assert_eq!(untyped(Some("application/json"), "{bad"), Err(400));
    assert_eq!(untyped(Some("text/plain"), "{}"), Err(415));
}

#[test]
fn apply_bodies_warn_of_duplicates_or_refuse_them() {
    let body = b"a: 1\na: 2\n";
    let mut warnings = Vec::new();
    let decoded = decode(body, None, FieldValidation::Warn, Purpose::Apply, &mut |w| warnings.push(w)).map(|d| d.value);
    assert_eq!((decoded.ok(), warnings.as_slice()), (Some(json!({"a": 2})), &["error converting YAML to JSON: yaml: unmarshal errors:\n  line 2: key \"a\" already set in map".to_owned()][..]));
    let refused = decode(body, None, FieldValidation::Strict, Purpose::Apply, &mut |_| {}).err().map(|e| e.message);
    assert_eq!(refused.as_deref(), Some("error decoding patch: error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 2: key \"a\" already set in map"));
    let listed = decode(b"[1]", None, FieldValidation::Ignore, Purpose::Apply, &mut |_| {}).err().map(|e| e.message);
    assert_eq!(listed.as_deref(), Some("error decoding patch: the applied configuration must be an object, not [1]"));
}

#[test]
fn a_json_patch_keeps_its_own_problems_for_later() {
    let body = br#"[{"op": "add", "path": "/a", "value": 1, "extra": 2}]"#;
    let decoded = decode(body, None, FieldValidation::Warn, Purpose::Patch(PatchKind::Json), &mut |_| panic!("no warning yet")).unwrap_or_else(|e| panic!("{e}"));
    let pending: Vec<String> = decoded.pending.iter().map(Problem::to_string).collect();
    assert_eq!(pending, [r#"json patch unknown field "[0].extra""#]);
    let malformed = decode(b"{", None, FieldValidation::Warn, Purpose::Patch(PatchKind::Merge), &mut |_| {}).err().map(|e| e.code);
    assert_eq!(malformed, Some(400));
}

#[test]
fn values_print_as_go_prints_decoded_json() {
    let rows = [
        (json!({"spec": {"replicas": 2, "paused": true, "x": null}}), "map[spec:map[paused:true replicas:2 x:<nil>]]"),
        (json!({"a": [1, "b", {"c": 1.5}], "big": 1e21, "small": 0.00001, "n": -3}), "map[a:[1 b map[c:1.5]] big:1e+21 n:-3 small:1e-05]"),
    ];
    for (value, text) in rows {
        assert_eq!(go_format(&value), text);
    }
}
