//! One table for bodies and queries: what each gives, or kube's error for it.

use serde_json::json;

use super::*;

/// Where the options come from in a row.
enum Source {
    Body(Value),
    Query(&'static str),
}

/// What a row expects: options, or (code, message).
type Expected = Result<Requested, (u16, &'static str)>;

fn check(source: Source, expected: Expected) {
    let got = match &source {
        Source::Body(body) => from_body(body),
        Source::Query(query) => {
            let map: HashMap<String, String> = query.split('&').filter(|p| !p.is_empty())
                .filter_map(|p| p.split_once('=')).map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
            from_query(&map)
        }
    };
    let got = got.map_err(|e| (e.code, e.message));
    let expected = expected.map_err(|(code, message)| (code, message.to_owned()));
    let shown = match &source {
        Source::Body(body) => body.to_string(),
        Source::Query(query) => format!("?{query}"),
    };
    assert_eq!(got, expected, "{shown}");
}

fn ok(propagation: Option<Propagation>, grace: Option<i64>, dry_run: bool) -> Expected {
    Ok(Requested { options: DeleteOptions { propagation, grace_period_seconds: grace, dry_run, ..DeleteOptions::default() }, orphan_dependents: None })
}

#[test]
fn bodies_and_queries() {
    use Propagation::*;
    use Source::{Body, Query};
    let legacy = |orphan: bool, policy: Propagation| Ok(Requested {
        options: DeleteOptions { propagation: Some(policy), ..DeleteOptions::default() },
        orphan_dependents: Some(orphan),
    });
    let preconditions = Ok(Requested {
        options: DeleteOptions { precondition_uid: Some("u".into()), precondition_resource_version: Some("12".into()), ..DeleteOptions::default() },
        orphan_dependents: None,
    });
    let rows: Vec<(Source, Expected)> = vec![
        (Body(json!({})), ok(None, None, false)),
        (Body(json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"})), ok(Some(Foreground), None, false)),
        (Body(json!({"propagationPolicy": "Orphan", "gracePeriodSeconds": 0, "dryRun": ["All"]})), ok(Some(Orphan), Some(0), true)),
        (Body(json!({"gracePeriodSeconds": -5, "propagationPolicy": null})), ok(None, Some(-5), false)),
        (Body(json!({"preconditions": {"uid": "u", "resourceVersion": "12"}})), preconditions),
        (Body(json!({"orphanDependents": true})), legacy(true, Orphan)),
        (Body(json!({"orphanDependents": false})), legacy(false, Background)),
        (Query(""), ok(None, None, false)),
        (Query("propagationPolicy=Background&gracePeriodSeconds=30"), ok(Some(Background), Some(30), false)),
        (Query("dryRun=All"), ok(None, None, true)),
        (Query("orphanDependents=t"), legacy(true, Orphan)),
        // Invalid values: 422 on DeleteOptions.meta.k8s.io, as kube's ValidateDeleteOptions.
        (Body(json!({"propagationPolicy": "Sideways"})), Err((422, "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: \
            Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""))),
        (Query("propagationPolicy=orphan"), Err((422, "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: \
            Unsupported value: \"orphan\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""))),
        (Body(json!({"orphanDependents": false, "propagationPolicy": "Orphan"})), Err((422, "DeleteOptions.meta.k8s.io \"\" is invalid: \
            propagationPolicy: Invalid value: \"Orphan\": orphanDependents and deletionPropagation cannot be both set"))),
        (Body(json!({"dryRun": ["Some"]})), Err((422, "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: \
            Unsupported value: [\"Some\"]: supported values: \"All\""))),
        // Undecodable values: 400.
        (Body(json!({"gracePeriodSeconds": "ten"})), Err((400, "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64"))),
        (Body(json!({"gracePeriodSeconds": 1.5})), Err((400, "json: cannot unmarshal number 1.5 into Go struct field DeleteOptions.gracePeriodSeconds of type int64"))),
        (Body(json!({"preconditions": {"uid": 7}})), Err((400, "json: cannot unmarshal number into Go struct field DeleteOptions.preconditions.uid of type types.UID"))),
        (Body(json!({"kind": "ConfigMap"})), Err((400, "decoded object of kind ConfigMap cannot be converted to DeleteOptions"))),
        (Body(json!([1])), Err((400, "json: cannot unmarshal array into Go value of type v1.DeleteOptions"))),
        (Query("gracePeriodSeconds=soon"), Err((400, "strconv.ParseInt: parsing \"soon\": invalid syntax"))),
        (Query("gracePeriodSeconds="), Err((400, "strconv.ParseInt: parsing \"\": invalid syntax"))),
        // Query bools are apimachinery's: anything but 0 and false is true.
        (Query("orphanDependents=maybe"), legacy(true, Orphan)),
        (Query("orphanDependents=FALSE"), legacy(false, Background)),
        (Query("propagationPolicy="), Err((422, "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: \
            Unsupported value: \"\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""))),
    ];
    for (source, expected) in rows {
        check(source, expected);
    }
}
