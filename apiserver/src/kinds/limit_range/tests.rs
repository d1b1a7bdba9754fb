//! LimitRange's defaults and validation, and LimitRanger's container defaults and limits, with kube's texts.

use serde_json::json;

use super::*;

#[test]
fn container_items_default_as_kube_defaults_them() {
    let mut range = json!({"spec": {"limits": [
        {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}},
        {"type": "Pod", "max": {"cpu": "4"}},
    ]}});
    default_items(&mut range);
    assert_eq!(range["spec"]["limits"][0], json!({"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"},
        "default": {"cpu": "2"}, "defaultRequest": {"cpu": "2", "memory": "64Mi"}}));
    assert_eq!(range["spec"]["limits"][1], json!({"type": "Pod", "max": {"cpu": "4"}}), "only Container items get defaults");
    let mut bad = json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "lots", "memory": "1Gi"}}]}});
    default_items(&mut bad);
    assert_eq!(bad["spec"]["limits"][0]["default"], json!({"memory": "1Gi"}), "what is no quantity is not copied, so it is reported once");
}

#[test]
fn a_limit_range_is_validated_as_kube_validates_it() {
    let mut causes = Vec::new();
    validate_items(&json!({"spec": {"limits": [
        {"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}, "maxLimitRequestRatio": {"memory": "500m"}, "default": {"memory": "lots"}},
        {"type": "Pod", "default": {"cpu": "1"}},
        {"type": "Pod"},
        {"type": "PersistentVolumeClaim", "max": {"cpu": "1"}},
    ]}}), &mut causes);
    let got: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
    assert_eq!(got, [
        "spec.limits[0].default[memory]: Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        "spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value 1",
        "spec.limits[0].maxLimitRequestRatio[memory]: Invalid value: \"500m\": ratio 500m is less than 1",
        "spec.limits[1].default: Forbidden: may not be specified when `type` is 'Pod'",
        "spec.limits[2].type: Duplicate value: \"Pod\"",
        "spec.limits[3].limits: Required value: either minimum or maximum storage value is required, but neither was provided",
    ]);
    let mut causes = Vec::new();
    validate_items(&json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "1500m"}, "default": {"cpu": "1"}, "defaultRequest": {"cpu": "2"}}]}}), &mut causes);
    let got: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
    assert_eq!(got, [
        "spec.limits[0].defaultRequest[cpu]: Invalid value: \"2\": default request value 2 is greater than max value 1500m",
        "spec.limits[0].defaultRequest[cpu]: Invalid value: \"2\": default request value 2 is greater than default limit value 1",
    ]);
    let mut causes = Vec::new();
    validate_items(&json!({"spec": {"limits": [{"type": "Container",
        "default": {"example.com/gpu": "2", "hugepages-2Mi": "4Mi", "cpu": "1"},
        "defaultRequest": {"example.com/gpu": "1", "hugepages-2Mi": "4Mi", "cpu": "500m"}}]}}), &mut causes);
    let got: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
    assert_eq!(got, ["spec.limits[0].defaultRequest[example.com/gpu]: Invalid value: \"1\": default value 2 must equal to defaultRequest value 1 in example.com/gpu"],
        "cpu may be overcommitted; equal hugepages are fine");
}

#[test]
fn a_limit_ranges_resource_names_are_checked_as_kube_checks_them() {
    let mut causes = Vec::new();
    validate_items(&json!({"spec": {"limits": [
        {"type": "Container", "max": {"pods": "1", "foo": "1", "example.com/gpu": "1", "example.com/Bad_": "1", "kubernetes.io/x": "1", "hugepages-2Mi": "1Mi"}},
        {"type": "PersistentVolumeClaim", "max": {"storage": "1Gi", "example.com/disk": "1", "disk": "1", "pods": "1"}},
    ]}}), &mut causes);
    let got: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
    assert_eq!(got.len(), 6, "{got:#?}");
    assert!(got[0].starts_with("spec.limits[0].max[example.com/Bad_]: Invalid value: \"example.com/Bad_\": name part must consist of"), "{got:#?}");
    assert_eq!(got[1..], [
        "spec.limits[0].max[example.com/Bad_]: Invalid value: \"example.com/Bad_\": doesn't follow extended resource name standard",
        "spec.limits[0].max[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified",
        "spec.limits[0].max[foo]: Invalid value: \"foo\": must be a standard resource for containers",
        "spec.limits[0].max[pods]: Invalid value: \"pods\": must be a standard resource for containers",
        "spec.limits[1].max[disk]: Invalid value: \"disk\": must be a standard resource type or fully qualified",
    ]);
}

fn pod(containers: serde_json::Value) -> Value {
    json!({"metadata": {"name": "p"}, "spec": {"containers": containers}})
}

#[test]
fn a_pod_gets_the_container_defaults_it_lacks_and_an_annotation_says_which() {
    let item = json!({"type": "Container", "default": {"cpu": "500m", "memory": "128Mi"}, "defaultRequest": {"cpu": "100m", "memory": "64Mi"}});
    let mut p = pod(json!([
        {"name": "web", "resources": {"limits": {"cpu": "1"}}},
        {"name": "side"},
    ]));
    set_container_defaults(&mut p, &[&item]);
    assert_eq!(p["spec"]["containers"][0]["resources"], json!({"limits": {"cpu": "1", "memory": "128Mi"}, "requests": {"cpu": "100m", "memory": "64Mi"}}));
    assert_eq!(p["spec"]["containers"][1]["resources"], json!({"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "100m", "memory": "64Mi"}}));
    assert_eq!(p["metadata"]["annotations"][ANNOTATION],
        "LimitRanger plugin set: cpu, memory request for container web; memory limit for container web; cpu, memory request for container side; cpu, memory limit for container side");
}

#[test]
fn a_pod_past_an_items_limits_is_refused_with_kubes_texts() {
    let container = json!({"type": "Container", "max": {"cpu": "500m"}, "min": {"memory": "100Mi"}, "maxLimitRequestRatio": {"cpu": "2"}});
    let per_pod = json!({"type": "Pod", "max": {"memory": "1Gi"}});
    let p = pod(json!([
        {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "50Mi"}, "limits": {"cpu": "1", "memory": "800Mi"}}},
        {"name": "b", "resources": {"requests": {"cpu": "250m", "memory": "200Mi"}, "limits": {"cpu": "500m", "memory": "300Mi"}}},
    ]));
    let mut refusals = Vec::new();
    check_pod(&p, &[&container, &per_pod], &mut refusals);
    assert_eq!(refusals, [
        "minimum memory usage per Container is 100Mi, but request is 50Mi",
        "maximum cpu usage per Container is 500m, but limit is 1",
        "cpu max limit to request ratio per Container is 2, but provided ratio is 10.000000",
        "maximum memory usage per Pod is 1Gi, but limit is 1100Mi",
    ]);
}

#[test]
fn a_claims_storage_request_is_held_to_its_items_min_and_max() {
    let item = json!({"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}});
    let claim = |size: &str| json!({"spec": {"resources": {"requests": {"storage": size}}}});
    let mut refusals = Vec::new();
    check_claim(&claim("5Gi"), &[&item], &mut refusals);
    check_claim(&claim("20Gi"), &[&item], &mut refusals);
    check_claim(&claim("500Mi"), &[&item], &mut refusals);
    assert_eq!(refusals, [
        "maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi",
        "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi",
    ]);
}

#[test]
fn sums_are_written_as_kube_writes_computed_quantities() {
    assert_eq!(format_milli(1_153_433_600_000, true), "1100Mi");
    assert_eq!(format_milli(2_147_483_648_000, true), "2Gi");
    assert_eq!(format_milli(1500, false), "1500m");
    assert_eq!(format_milli(2_000_000, false), "2k");
    assert_eq!(format_milli(0, false), "0");
}
