//! Tests of protobuf request decoding: fixtures encoded with k8s-pb the way client-go does, and hostile bodies.

use super::to_json::go_duration;
use super::{ProtobufError, decode_request, is_protobuf};
use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::authentication::v1 as authentication;
use k8s_pb::api::authorization::v1 as authorization;
use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{RawExtension, TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// 2026-11-22T05:00:00Z.
const NOV_22: i64 = 1_795_323_600;

/// Wraps `message` in the `k8s\0` + `runtime.Unknown` envelope, as client-go does.
fn envelope(api_version: &str, kind: &str, message: &impl Message) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(message.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown.encode_to_vec());
    body
}

/// Decodes the enveloped `message` and compares it with `expected`.
fn check(api_version: &str, kind: &str, message: &impl Message, expected: Value) {
    let decoded = decode_request(&envelope(api_version, kind, message));
    assert_eq!(decoded, Ok(expected));
}

/// ObjectMeta as Go protobuf writes it: every non-pointer field present, zero or not.
fn go_meta(name: &str, namespace: &str) -> meta::ObjectMeta {
    meta::ObjectMeta {
        name: Some(name.into()),
        generate_name: Some(String::new()),
        namespace: Some(namespace.into()),
        self_link: Some(String::new()),
        uid: Some(String::new()),
        resource_version: Some(String::new()),
        generation: Some(0),
        creation_timestamp: Some(meta::Time::default()),
        ..Default::default()
    }
}

fn strings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

#[test]
fn config_map_with_data_and_binary_data() {
    let config_map = core::ConfigMap {
        metadata: Some(go_meta("settings", "default")),
        data: strings(&[("mode", "fast"), ("empty", "")]),
        binary_data: BTreeMap::from([("blob".to_string(), vec![0, 1, 2, 255])]),
        immutable: None,
    };
    let expected = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "default"},
        "data": {"mode": "fast", "empty": ""},
        "binaryData": {"blob": "AAEC/w=="},
    });
    check("v1", "ConfigMap", &config_map, expected);
}

#[test]
fn secret_bytes_are_base64_and_pointer_false_is_kept() {
    let secret = core::Secret {
        metadata: Some(go_meta("creds", "")),
        data: BTreeMap::from([
            ("password".to_string(), b"hunter2".to_vec()),
            ("none".to_string(), vec![]),
        ]),
        r#type: Some("Opaque".into()),
        immutable: Some(false),
        ..Default::default()
    };
    let expected = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "creds"},
        "data": {"password": "aHVudGVyMg==", "none": ""},
        "type": "Opaque",
        "immutable": false,
    });
    check("v1", "Secret", &secret, expected);
}

fn nginx_container() -> core::Container {
    let config_map_ref = core::ConfigMapEnvSource {
        local_object_reference: Some(core::LocalObjectReference {
            name: Some("settings".into()),
        }),
        optional: None,
    };
    core::Container {
        name: Some("nginx".into()),
        image: Some("nginx:1.27".into()),
        image_pull_policy: Some(String::new()),
        ports: vec![core::ContainerPort {
            container_port: Some(80),
            host_port: Some(0),
            protocol: Some("TCP".into()),
            ..Default::default()
        }],
        env_from: vec![core::EnvFromSource {
            config_map_ref: Some(config_map_ref),
            ..Default::default()
        }],
        resources: Some(core::ResourceRequirements {
            limits: BTreeMap::from([(
                "cpu".to_string(),
                Quantity {
                    string: Some("500m".into()),
                },
            )]),
            ..Default::default()
        }),
        stdin: Some(false),
        ..Default::default()
    }
}

#[test]
fn deployment_with_int_or_string_quantity_and_inline_reference() {
    let rolling_update = apps::RollingUpdateDeployment {
        max_surge: Some(IntOrString {
            r#type: Some(1),
            int_val: Some(0),
            str_val: Some("25%".into()),
        }),
        max_unavailable: Some(IntOrString {
            r#type: Some(0),
            int_val: Some(0),
            str_val: Some(String::new()),
        }),
    };
    let deployment = apps::Deployment {
        metadata: Some(go_meta("web", "default")),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(0),
            selector: Some(meta::LabelSelector {
                match_labels: strings(&[("app", "web")]),
                ..Default::default()
            }),
            template: Some(core::PodTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    labels: strings(&[("app", "web")]),
                    ..go_meta("", "")
                }),
                spec: Some(core::PodSpec {
                    containers: vec![nginx_container()],
                    ..Default::default()
                }),
            }),
            strategy: Some(apps::DeploymentStrategy {
                r#type: None,
                rolling_update: Some(rolling_update),
            }),
            min_ready_seconds: Some(0),
            paused: Some(false),
            ..Default::default()
        }),
        status: Some(apps::DeploymentStatus::default()),
    };
    let container = json!({
        "name": "nginx", "image": "nginx:1.27",
        "ports": [{"containerPort": 80, "protocol": "TCP"}],
        "envFrom": [{"configMapRef": {"name": "settings"}}],
        "resources": {"limits": {"cpu": "500m"}},
    });
    let expected = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container]}},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
        },
        "status": {},
    });
    check("apps/v1", "Deployment", &deployment, expected);
}

#[test]
fn lease_micro_time_has_six_fractional_digits() {
    let lease = coordination::Lease {
        metadata: Some(go_meta("leader", "kube-system")),
        spec: Some(coordination::LeaseSpec {
            holder_identity: Some("node-a".into()),
            lease_duration_seconds: Some(15),
            renew_time: Some(meta::MicroTime {
                seconds: Some(NOV_22),
                nanos: Some(123_456_789),
            }),
            acquire_time: Some(meta::MicroTime {
                seconds: Some(NOV_22),
                nanos: Some(0),
            }),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    };
    let expected = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "leader", "namespace": "kube-system"},
        "spec": {
            "holderIdentity": "node-a", "leaseDurationSeconds": 15, "leaseTransitions": 0,
            "acquireTime": "2026-11-22T05:00:00.000000Z",
            "renewTime": "2026-11-22T05:00:00.123456Z",
        },
    });
    check("coordination.k8s.io/v1", "Lease", &lease, expected);
}

#[test]
fn event_time_and_nested_kind_and_api_version() {
    let event = core::Event {
        metadata: Some(go_meta("web.1", "default")),
        involved_object: Some(core::ObjectReference {
            kind: Some("Pod".into()),
            api_version: Some("v1".into()),
            name: Some("web".into()),
            ..Default::default()
        }),
        reason: Some("Started".into()),
        first_timestamp: Some(meta::Time {
            seconds: Some(NOV_22),
            nanos: Some(0),
        }),
        last_timestamp: Some(meta::Time::default()),
        count: Some(1),
        ..Default::default()
    };
    let expected = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web.1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "apiVersion": "v1", "name": "web"},
        "reason": "Started",
        "firstTimestamp": "2026-11-22T05:00:00Z",
        "count": 1,
    });
    check("v1", "Event", &event, expected);
}

#[test]
fn self_subject_access_review() {
    let review = authorization::SelfSubjectAccessReview {
        metadata: Some(go_meta("", "")),
        spec: Some(authorization::SelfSubjectAccessReviewSpec {
            resource_attributes: Some(authorization::ResourceAttributes {
                namespace: Some("default".into()),
                verb: Some("create".into()),
                resource: Some("pods".into()),
                group: Some(String::new()),
                ..Default::default()
            }),
            non_resource_attributes: None,
        }),
        status: Some(authorization::SubjectAccessReviewStatus {
            allowed: Some(false),
            ..Default::default()
        }),
    };
    let expected = json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "metadata": {},
        "spec": {"resourceAttributes": {"namespace": "default", "verb": "create", "resource": "pods"}},
        "status": {"allowed": false},
    });
    check(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        &review,
        expected,
    );
}

#[test]
fn token_request_with_expiration_and_bound_object() {
    let request = authentication::TokenRequest {
        metadata: Some(go_meta("default", "default")),
        spec: Some(authentication::TokenRequestSpec {
            audiences: vec!["https://kubernetes.default.svc".into()],
            expiration_seconds: Some(3600),
            bound_object_ref: Some(authentication::BoundObjectReference {
                kind: Some("Pod".into()),
                api_version: Some("v1".into()),
                name: Some("web".into()),
                u_id: Some("0a1b".into()),
            }),
        }),
        status: None,
    };
    let expected = json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "metadata": {"name": "default", "namespace": "default"},
        "spec": {
            "audiences": ["https://kubernetes.default.svc"],
            "expirationSeconds": 3600,
            "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web", "uid": "0a1b"},
        },
    });
    check(
        "authentication.k8s.io/v1",
        "TokenRequest",
        &request,
        expected,
    );
}

#[test]
fn delete_options_under_any_group_version() {
    let options = meta::DeleteOptions {
        grace_period_seconds: Some(0),
        propagation_policy: Some("Foreground".into()),
        ..Default::default()
    };
    let expected = json!({
        "apiVersion": "apps/v1", "kind": "DeleteOptions",
        "gracePeriodSeconds": 0, "propagationPolicy": "Foreground",
    });
    check("apps/v1", "DeleteOptions", &options, expected);
}

#[test]
fn raw_extension_is_embedded_json() {
    let revision = apps::ControllerRevision {
        metadata: Some(go_meta("web-1", "default")),
        data: Some(RawExtension {
            raw: Some(br#"{"spec":{"x":1}}"#.to_vec()),
        }),
        revision: Some(1),
    };
    let expected = json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": "web-1", "namespace": "default"},
        "data": {"spec": {"x": 1}}, "revision": 1,
    });
    check("apps/v1", "ControllerRevision", &revision, expected);
}

#[test]
fn go_durations() {
    let cases = [
        (0, "0s"),
        (999, "999ns"),
        (1_500, "1.5µs"),
        (300_000_000, "300ms"),
        (1_500_000_000, "1.5s"),
    ];
    let more = [
        (3_600_000_000_000, "1h0m0s"),
        (-90_000_000_000, "-1m30s"),
        (3_661_000_000_001, "1h1m1.000000001s"),
    ];
    for (nanoseconds, expected) in cases.into_iter().chain(more) {
        assert_eq!(go_duration(nanoseconds), expected, "{nanoseconds}ns");
    }
}

#[test]
fn content_type_detection() {
    assert!(is_protobuf("application/vnd.kubernetes.protobuf"));
    assert!(is_protobuf(
        "application/vnd.kubernetes.protobuf; charset=utf-8"
    ));
    assert!(!is_protobuf("application/json"));
    assert!(is_protobuf(
        " Application/Vnd.Kubernetes.Protobuf ;stream=watch"
    ));
    assert!(!is_protobuf("application/vnd.kubernetes.protobuffer"));
}

#[test]
fn hostile_envelopes_are_errors() {
    assert_eq!(decode_request(b""), Err(ProtobufError::MissingMagic));
    assert_eq!(decode_request(b"k8s"), Err(ProtobufError::MissingMagic));
    assert_eq!(
        decode_request(b"{\"kind\":\"Pod\"}"),
        Err(ProtobufError::MissingMagic)
    );
    assert!(matches!(
        decode_request(b"k8s\0\xff\xff\xff"),
        Err(ProtobufError::Envelope(_))
    ));
    assert_eq!(
        decode_request(b"k8s\0"),
        Err(ProtobufError::MissingTypeMeta)
    );
}

#[test]
fn unknown_kinds_are_named_in_the_error() {
    let error = decode_request(&envelope(
        "example.com/v1",
        "Widget",
        &meta::Status::default(),
    ));
    let expected = ProtobufError::UnsupportedKind {
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
    };
    assert_eq!(error, Err(expected.clone()));
    assert!(
        expected.to_string().contains("example.com/v1") && expected.to_string().contains("Widget")
    );
}

#[test]
fn garbage_messages_are_errors() {
    let mut unknown =
        Unknown::decode(&envelope("v1", "Pod", &core::Pod::default())[4..]).expect("own envelope");
    unknown.raw = Some(vec![0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]);
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown.encode_to_vec());
    assert!(
        matches!(decode_request(&body), Err(ProtobufError::Message { kind, .. }) if kind == "Pod")
    );
    unknown.content_encoding = Some("gzip".into());
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown.encode_to_vec());
    assert_eq!(
        decode_request(&body),
        Err(ProtobufError::UnsupportedContentEncoding("gzip".into()))
    );
}

#[test]
fn invalid_embedded_values_are_errors() {
    let revision = apps::ControllerRevision {
        data: Some(RawExtension {
            raw: Some(b"{not json".to_vec()),
        }),
        ..Default::default()
    };
    let decoded = decode_request(&envelope("apps/v1", "ControllerRevision", &revision));
    assert!(matches!(decoded, Err(ProtobufError::EmbeddedJson(_))));
    let meta = meta::ObjectMeta {
        creation_timestamp: Some(meta::Time {
            seconds: Some(i64::MAX),
            nanos: Some(-1),
        }),
        ..Default::default()
    };
    let decoded = decode_request(&envelope(
        "v1",
        "Namespace",
        &core::Namespace {
            metadata: Some(meta),
            ..Default::default()
        },
    ));
    assert!(matches!(decoded, Err(ProtobufError::Message { .. })));
}

#[test]
fn every_truncation_and_bit_flip_of_a_real_body_is_handled() {
    let body = envelope(
        "apps/v1",
        "Deployment",
        &apps::Deployment {
            metadata: Some(go_meta("web", "default")),
            spec: Some(apps::DeploymentSpec {
                template: Some(core::PodTemplateSpec {
                    metadata: None,
                    spec: Some(core::PodSpec {
                        containers: vec![nginx_container()],
                        ..Default::default()
                    }),
                }),
                ..Default::default()
            }),
            status: None,
        },
    );
    let mut decoded_ok = 0;
    for length in 0..body.len() {
        decoded_ok += usize::from(decode_request(&body[..length]).is_ok());
    }
    for index in 0..body.len() {
        let mut flipped = body.clone();
        flipped[index] ^= 0x5a;
        decoded_ok += usize::from(decode_request(&flipped).is_ok());
    }
    assert!(decode_request(&body).is_ok());
    assert!(
        decoded_ok < 2 * body.len(),
        "some mutations must be rejected"
    );
}

#[test]
fn a_list_encoded_an_item_at_a_time_is_the_list_encoded_whole() {
    let items = vec![
        serde_json::json!({"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "5", "labels": {"k": "v"}}, "data": {"x": "1"}}),
        serde_json::json!({"metadata": {"name": "b", "namespace": "ns", "resourceVersion": "6"}, "binaryData": {"y": "AAE="}}),
    ];
    // Enough items to fill several of the encoder's 256 KiB chunks.
    let many: Vec<serde_json::Value> = (0..700)
        .map(|i| serde_json::json!({"metadata": {"name": format!("cm-{i}"), "namespace": "ns", "resourceVersion": "9"}, "data": {"k": "x".repeat(1000)}}))
        .collect();
    for (metadata, items) in [
        (serde_json::json!({"resourceVersion": "7", "continue": "abc", "remainingItemCount": 3}), items.clone()),
        (serde_json::json!({"resourceVersion": "7"}), Vec::new()),
        (serde_json::json!({"resourceVersion": "9"}), many),
    ] {
        let whole = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": metadata, "items": items});
        let mut encoder = super::ListEncoder::new("v1", "ConfigMap", "ConfigMapList").unwrap_or_else(|e| panic!("{e}"));
        for item in &items {
            encoder.push(item).unwrap_or_else(|e| panic!("{e}"));
        }
        let Ok(super::Finished::Whole(encoded)) = encoder.finish(metadata.clone()) else { panic!("a list kept whole") };
        assert_eq!(encoded.len, encoded.concat().len());
        assert_eq!(Ok(encoded.concat()), super::encode_object(&whole));
        // Kept up to a chunk, longer lists are measured: their head, then the items written again, then the tail,
        // make the same bytes.
        let mut measuring = super::ListEncoder::new("v1", "ConfigMap", "ConfigMapList").unwrap_or_else(|e| panic!("{e}")).keeping(1);
        for item in &items {
            measuring.push(item).unwrap_or_else(|e| panic!("{e}"));
        }
        let writer = measuring.items();
        match measuring.finish(metadata.clone()) {
            Ok(super::Finished::Whole(kept)) => {
                assert!(kept.len < 300 * 1024, "a list shorter than a chunk is kept whole");
                assert_eq!(Ok(kept.concat()), super::encode_object(&whole));
            }
            Ok(super::Finished::Measured { mut head, len }) => {
                for item in &items {
                    writer.write(item, &mut head).unwrap_or_else(|e| panic!("{e}"));
                }
                head.extend_from_slice(super::ENVELOPE_TAIL);
                assert_eq!(head.len(), len);
                assert_eq!(Ok(head), super::encode_object(&whole));
            }
            Err(err) => panic!("{err}"),
        }
    }
    assert!(matches!(super::ListEncoder::new("example.com/v1", "Widget", "WidgetList"), Err(super::EncodeError::NoProtobufForm { .. })));
}
