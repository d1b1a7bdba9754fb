//! The audit event (`audit.k8s.io/v1` Event): field names and omissions as kube-apiserver writes them.

use std::borrow::Cow;
use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use kspaces_authz::UserInfo;
use serde::Serialize;
use serde_json::Value;

use super::policy::{ANONYMOUS, UNAUTHENTICATED};
use super::{AuditOutcome, AuditRequest, Level, Stage};

/// The annotation naming the tenant whose space the request reached.
pub(crate) const TENANT_ANNOTATION: &str = "kspaces.io/tenant";
const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// One line of the audit log. Borrowed from the request where possible: events are built on the request path.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Event<'a> {
    kind: &'static str,
    api_version: &'static str,
    level: Level,
    #[serde(rename = "auditID")]
    audit_id: &'a str,
    stage: Stage,
    #[serde(rename = "requestURI")]
    request_uri: &'a str,
    verb: Cow<'a, str>,
    user: User<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    impersonated_user: Option<User<'a>>,
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    source_ips: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_agent: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    object_ref: Option<ObjectRef<'a>>,
    response_status: ResponseStatus<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_object: Option<Value>,
    request_received_timestamp: String,
    stage_timestamp: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<&'a str, &'a str>,
}

/// `authentication.k8s.io/v1` UserInfo; `extra` is what a token webhook said (none for other identities).
#[derive(Debug, Serialize)]
struct User<'a> {
    username: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    uid: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    groups: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<&'a std::collections::BTreeMap<String, Vec<String>>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ObjectRef<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    resource: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    namespace: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    api_group: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    api_version: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    subresource: &'a str,
}

/// The bounded fields of the response's `meta/v1` Status, in Status field order.
#[derive(Debug, Serialize)]
struct ResponseStatus<'a> {
    metadata: Empty,
    #[serde(skip_serializing_if = "str::is_empty")]
    status: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    message: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<&'a Value>,
    code: u16,
}

/// Serializes as `{}`, like the empty ListMeta kube-apiserver writes.
#[derive(Debug, Serialize)]
struct Empty {}

/// What the event needs to know beyond the request and its outcome.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EventOptions {
    pub level: Level,
    pub stage: Stage,
    pub omit_managed_fields: bool,
    pub stage_time: DateTime<Utc>,
}

impl<'a> Event<'a> {
    pub(crate) fn new(options: EventOptions, request: &AuditRequest<'a>, outcome: &AuditOutcome<'a>) -> Event<'a> {
        let EventOptions { level, stage, omit_managed_fields, stage_time } = options;
        let (user, impersonated_user) = match request.impersonator {
            Some(impersonator) => (User::of(Some(impersonator)), Some(User::of(request.user))),
            None => (User::of(request.user), None),
        };
        let with_body = |wanted: Level, body: Option<&[u8]>| match level >= wanted {
            true => body_object(body, omit_managed_fields),
            false => None,
        };
        Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level,
            audit_id: request.audit_id,
            stage,
            request_uri: request.request_uri,
            verb: verb(request),
            user,
            impersonated_user,
            source_ips: request.source_ip.into_iter().collect(),
            user_agent: request.user_agent.filter(|agent| !agent.is_empty()),
            object_ref: request.is_resource.then(|| ObjectRef::of(request)),
            response_status: ResponseStatus::of(outcome),
            request_object: with_body(Level::Request, outcome.request_body),
            response_object: with_body(Level::RequestResponse, outcome.response_body),
            request_received_timestamp: micro_time(request.received),
            stage_timestamp: micro_time(stage_time),
            annotations: annotations(request, outcome),
        }
    }
}

impl<'a> User<'a> {
    fn of(user: Option<&'a UserInfo>) -> User<'a> {
        match user {
            Some(user) => User { username: &user.name, uid: &user.uid, groups: user.groups.iter().map(String::as_str).collect(),
                extra: Some(&user.extra).filter(|extra| !extra.is_empty()) },
            None => User { username: ANONYMOUS, uid: "", groups: vec![UNAUTHENTICATED], extra: None },
        }
    }
}

impl<'a> ObjectRef<'a> {
    fn of(request: &AuditRequest<'a>) -> ObjectRef<'a> {
        ObjectRef {
            resource: request.resource,
            namespace: request.namespace.unwrap_or(""),
            name: request.name,
            api_group: request.api_group,
            api_version: request.api_version,
            subresource: request.subresource,
        }
    }
}

impl<'a> ResponseStatus<'a> {
    /// kube-apiserver copies status, message, reason and details from a Status response; other responses give
    /// only the code. A failure without a Status body still says `Failure`.
    fn of(outcome: &AuditOutcome<'a>) -> ResponseStatus<'a> {
        let field = |name: &str| outcome.status.and_then(|status| status.get(name)).and_then(Value::as_str).unwrap_or("");
        let status = match field("status") {
            "" if outcome.code >= 400 => "Failure",
            status => status,
        };
        ResponseStatus {
            metadata: Empty {},
            status,
            message: field("message"),
            reason: field("reason"),
            details: outcome.status.and_then(|status| status.get("details")),
            code: outcome.code,
        }
    }
}

/// Kubernetes verbs pass through; a non-resource request's verb is its lower-case HTTP method.
fn verb<'a>(request: &AuditRequest<'a>) -> Cow<'a, str> {
    match !request.is_resource && request.verb.bytes().any(|b| b.is_ascii_uppercase()) {
        true => Cow::Owned(request.verb.to_ascii_lowercase()),
        false => Cow::Borrowed(request.verb),
    }
}

fn annotations<'a>(request: &AuditRequest<'a>, outcome: &AuditOutcome<'a>) -> BTreeMap<&'a str, &'a str> {
    let decision = outcome.decision.map(|allowed| if allowed { "allow" } else { "forbid" });
    let admission = outcome.admission.iter().map(|(key, value)| (key.as_str(), Some(value.as_str())));
    [(DECISION_ANNOTATION, decision), (REASON_ANNOTATION, Some(outcome.reason)), (TENANT_ANNOTATION, request.tenant)]
        .into_iter()
        .chain(admission)
        .filter_map(|(key, value)| value.filter(|v| !v.is_empty()).map(|v| (key, v)))
        .collect()
}

/// A body worth logging: anything that parses as JSON (objects, patches), minus managed fields if asked.
fn body_object(body: Option<&[u8]>, omit_managed_fields: bool) -> Option<Value> {
    let body = body?;
    // Protobuf bodies (client-go's) are logged as the JSON object they carry, as kube-apiserver logs them.
    let mut value: Value = if crate::protobuf::is_protobuf_body(body) {
        crate::protobuf::decode_request(body).ok()?
    } else {
        serde_json::from_slice(body).ok()?
    };
    if omit_managed_fields {
        strip_managed_fields(&mut value);
    }
    Some(value)
}

/// Removes `metadata.managedFields` from an object, or from every item of a list.
fn strip_managed_fields(value: &mut Value) {
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    if let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(strip_managed_fields);
    }
}

/// `meta/v1` MicroTime: RFC 3339 in UTC with exactly six fractional digits.
fn micro_time(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Micros, true)
}

#[cfg(test)]
pub(crate) mod tests {
    use chrono::TimeZone;
    use serde_json::json;

    use super::*;

    const RECEIVED_MICROS: i64 = 1_795_341_600_123_456;

    fn alice() -> UserInfo {
        UserInfo { name: "alice".to_owned(), uid: "u-1".to_owned(), groups: vec!["dev".to_owned(), "system:authenticated".to_owned()], tenant: Some("t1".to_owned()), cluster: None, extra: Default::default() }
    }

    /// A GET of pod `default/web` in tenant t1 (the writer's tests in `audit.rs` use it too).
    pub(crate) fn pod_get(user: Option<&UserInfo>) -> AuditRequest<'_> {
        AuditRequest {
            audit_id: "6a5f3a9e-0000-4000-8000-000000000001",
            user,
            tenant: Some("t1"),
            verb: "get",
            is_resource: true,
            api_version: "v1",
            resource: "pods",
            namespace: Some("default"),
            name: "web",
            path: "/api/v1/namespaces/default/pods/web",
            request_uri: "/api/v1/namespaces/default/pods/web?pretty=true",
            source_ip: Some("10.0.0.7"),
            user_agent: Some("kubectl/v1.31.0"),
            received: Utc.timestamp_micros(RECEIVED_MICROS).single().expect("valid time"),
            ..AuditRequest::default()
        }
    }

    /// Builds the event as the writer would and returns it as JSON.
    fn check(level: Level, stage: Stage, request: &AuditRequest<'_>, outcome: &AuditOutcome<'_>) -> Value {
        let stage_time = Utc.timestamp_micros(RECEIVED_MICROS + 2_500).single().expect("valid time");
        let options = EventOptions { level, stage, omit_managed_fields: true, stage_time };
        let line = serde_json::to_string(&Event::new(options, request, outcome)).expect("serializable");
        serde_json::from_str(&line).expect("one JSON object")
    }

    #[test]
    fn resource_request_at_metadata() {
        let user = alice();
        let outcome = AuditOutcome { code: 200, decision: Some(true), reason: "RBAC: allowed by RoleBinding \"dev\"", ..AuditOutcome::default() };
        let event = check(Level::Metadata, Stage::ResponseComplete, &pod_get(Some(&user)), &outcome);
        assert_eq!(event, json!({
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": "Metadata",
            "auditID": "6a5f3a9e-0000-4000-8000-000000000001",
            "stage": "ResponseComplete",
            "requestURI": "/api/v1/namespaces/default/pods/web?pretty=true",
            "verb": "get",
            "user": {"username": "alice", "uid": "u-1", "groups": ["dev", "system:authenticated"]},
            "sourceIPs": ["10.0.0.7"],
            "userAgent": "kubectl/v1.31.0",
            "objectRef": {"resource": "pods", "namespace": "default", "name": "web", "apiVersion": "v1"},
            "responseStatus": {"metadata": {}, "code": 200},
            "requestReceivedTimestamp": "2026-11-22T10:00:00.123456Z",
            "stageTimestamp": "2026-11-22T10:00:00.125956Z",
            "annotations": {
                "authorization.k8s.io/decision": "allow",
                "authorization.k8s.io/reason": "RBAC: allowed by RoleBinding \"dev\"",
                "kspaces.io/tenant": "t1",
            },
        }));
    }

    #[test]
    fn fields_come_out_in_kubernetes_order() {
        let user = alice();
        let request = pod_get(Some(&user));
        let outcome = AuditOutcome { code: 200, ..AuditOutcome::default() };
        let options = EventOptions { level: Level::Metadata, stage: Stage::ResponseComplete, omit_managed_fields: false, stage_time: request.received };
        let line = serde_json::to_string(&Event::new(options, &request, &outcome)).expect("serializable");
        let keys = ["\"kind\"", "\"apiVersion\"", "\"level\"", "\"auditID\"", "\"stage\"", "\"requestURI\"", "\"verb\"", "\"user\"",
            "\"sourceIPs\"", "\"userAgent\"", "\"objectRef\"", "\"responseStatus\"", "\"requestReceivedTimestamp\"", "\"stageTimestamp\""];
        let positions: Vec<usize> = keys.iter().map(|key| line.find(key).expect(key)).collect();
        assert!(positions.windows(2).all(|pair| pair[0] < pair[1]), "{line}");
    }

    #[test]
    fn forbidden_request() {
        let user = alice();
        let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "pods \"web\" is forbidden: User \"alice\" cannot delete resource \"pods\"", "reason": "Forbidden",
            "details": {"name": "web", "kind": "pods"}, "code": 403});
        let outcome = AuditOutcome { code: 403, decision: Some(false), reason: "", status: Some(&status), ..AuditOutcome::default() };
        let request = AuditRequest { verb: "delete", ..pod_get(Some(&user)) };
        let event = check(Level::Metadata, Stage::ResponseComplete, &request, &outcome);
        assert_eq!(event["responseStatus"], json!({"metadata": {}, "status": "Failure",
            "message": "pods \"web\" is forbidden: User \"alice\" cannot delete resource \"pods\"", "reason": "Forbidden",
            "details": {"name": "web", "kind": "pods"}, "code": 403}));
        assert_eq!(event["annotations"], json!({"authorization.k8s.io/decision": "forbid", "kspaces.io/tenant": "t1"}));
        assert_eq!(event["verb"], "delete");
    }

    #[test]
    fn failure_without_a_status_body_still_says_failure() {
        let outcome = AuditOutcome { code: 500, ..AuditOutcome::default() };
        let event = check(Level::Metadata, Stage::ResponseComplete, &pod_get(None), &outcome);
        assert_eq!(event["responseStatus"], json!({"metadata": {}, "status": "Failure", "code": 500}));
    }

    #[test]
    fn anonymous_non_resource_request() {
        let request = AuditRequest {
            audit_id: "id-2",
            verb: "GET",
            path: "/healthz",
            request_uri: "/healthz?verbose",
            received: Utc.timestamp_micros(RECEIVED_MICROS).single().expect("valid time"),
            ..AuditRequest::default()
        };
        let event = check(Level::Metadata, Stage::ResponseComplete, &request, &AuditOutcome { code: 200, ..AuditOutcome::default() });
        assert_eq!(event, json!({
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": "Metadata",
            "auditID": "id-2",
            "stage": "ResponseComplete",
            "requestURI": "/healthz?verbose",
            "verb": "get",
            "user": {"username": "system:anonymous", "groups": ["system:unauthenticated"]},
            "responseStatus": {"metadata": {}, "code": 200},
            "requestReceivedTimestamp": "2026-11-22T10:00:00.123456Z",
            "stageTimestamp": "2026-11-22T10:00:00.125956Z",
        }));
    }

    #[test]
    fn impersonated_request_logs_both_identities() {
        let admin = UserInfo { name: "admin".to_owned(), uid: String::new(), groups: vec!["system:masters".to_owned()], tenant: None, cluster: None, extra: Default::default() };
        let target = alice();
        let request = AuditRequest { impersonator: Some(&admin), ..pod_get(Some(&target)) };
        let event = check(Level::Metadata, Stage::ResponseComplete, &request, &AuditOutcome { code: 200, ..AuditOutcome::default() });
        assert_eq!(event["user"], json!({"username": "admin", "groups": ["system:masters"]}));
        assert_eq!(event["impersonatedUser"], json!({"username": "alice", "uid": "u-1", "groups": ["dev", "system:authenticated"]}));
    }

    #[test]
    fn bodies_follow_the_level() {
        let user = alice();
        let request = AuditRequest { verb: "create", name: "", ..pod_get(Some(&user)) };
        let sent = br#"{"kind":"Pod","metadata":{"name":"web","managedFields":[{"manager":"kubectl"}]}}"#;
        let stored = br#"{"kind":"Pod","metadata":{"name":"web","uid":"x","managedFields":[{"manager":"kubectl"}]}}"#;
        let outcome = AuditOutcome { code: 201, request_body: Some(sent), response_body: Some(stored), ..AuditOutcome::default() };
        let metadata = check(Level::Metadata, Stage::ResponseComplete, &request, &outcome);
        assert!(metadata.get("requestObject").is_none() && metadata.get("responseObject").is_none());
        let request_level = check(Level::Request, Stage::ResponseComplete, &request, &outcome);
        assert_eq!(request_level["requestObject"], json!({"kind": "Pod", "metadata": {"name": "web"}}));
        assert!(request_level.get("responseObject").is_none());
        let full = check(Level::RequestResponse, Stage::ResponseComplete, &request, &outcome);
        assert_eq!(full["requestObject"], json!({"kind": "Pod", "metadata": {"name": "web"}}));
        assert_eq!(full["responseObject"], json!({"kind": "Pod", "metadata": {"name": "web", "uid": "x"}}));
    }

    #[test]
    fn protobuf_bodies_are_logged_as_the_json_they_carry() {
        let user = alice();
        let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "leader"}});
        let encoded = crate::protobuf::encode_object(&lease).unwrap_or_default();
        let outcome = AuditOutcome { code: 201, request_body: Some(&encoded), response_body: Some(&encoded), ..AuditOutcome::default() };
        let event = check(Level::RequestResponse, Stage::ResponseComplete, &pod_get(Some(&user)), &outcome);
        assert_eq!((&event["requestObject"], &event["responseObject"]), (&lease, &lease));
    }

    #[test]
    fn bodies_that_are_not_json_are_left_out() {
        let user = alice();
        let outcome = AuditOutcome { code: 200, request_body: Some(b"kind: Pod\n"), response_body: Some(b"\x0a\x03k8s"), ..AuditOutcome::default() };
        let event = check(Level::RequestResponse, Stage::ResponseComplete, &pod_get(Some(&user)), &outcome);
        assert!(event.get("requestObject").is_none() && event.get("responseObject").is_none(), "{event}");
    }

    #[test]
    fn managed_fields_are_stripped_from_list_items() {
        let mut list = json!({"kind": "PodList", "metadata": {}, "items": [{"metadata": {"name": "a", "managedFields": []}}]});
        strip_managed_fields(&mut list);
        assert_eq!(list["items"][0], json!({"metadata": {"name": "a"}}));
    }

    #[test]
    fn watches_are_logged_when_the_stream_starts() {
        let user = alice();
        let request = AuditRequest { verb: "watch", name: "", watch: true, ..pod_get(Some(&user)) };
        let event = check(Level::Metadata, Stage::ResponseStarted, &request, &AuditOutcome { code: 200, ..AuditOutcome::default() });
        assert_eq!(event["stage"], "ResponseStarted");
        assert_eq!(event["objectRef"], json!({"resource": "pods", "namespace": "default", "apiVersion": "v1"}));
    }
}
