//! client-go's protobuf wire format, spoken by a tenant user over HTTPS with fixtures built by k8s-pb/prost (no Go
//! toolchain here is new enough for a real client-go): Leases and Events created, read, updated (leader-election
//! style) and listed in protobuf, a protobuf watch stream frame by frame, protobuf Status errors, the JSON
//! fallback of custom resources, kubectl validating a review on its side with the protobuf `/openapi/v2`, and a list
//! too long to keep sent as it is read again, over HTTP/1.1 and HTTP/2.

use std::time::Duration;

use base64::Engine as _;
use futures::AsyncReadExt;
use http::{Method, Request, StatusCode};
use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use kube::Client;
use kspaces_tests::{certificate_kubeconfig, create_tenant, kube_client, token_file, Http, Kubectl, Server};
use prost::Message;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// What client-go's protobuf clientsets send in `Accept`.
const CLIENT_GO_ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
/// 2026-11-22T05:00:00Z.
const NOV_22: i64 = 1_795_323_600;

/// A server with tenant `t-a` and a kube-rs client as t-a's admin (short paths).
async fn tenant() -> Result<(Server, Client), Box<dyn std::error::Error>> {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t-a");
    let client = kube_client(&certificate_kubeconfig(&server, "t-a", "admin", &[])).await?;
    Ok((server, client))
}

/// `k8s\0` + `runtime.Unknown{typeMeta, raw}`, as client-go writes a protobuf body.
fn envelope(api_version: &str, kind: &str, message: &impl Message) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta { api_version: Some(api_version.into()), kind: Some(kind.into()) }),
        raw: Some(message.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown.encode_to_vec());
    body
}

/// Opens a protobuf envelope: checks the magic and the kind, decodes the message.
fn open<M: Message + Default>(body: &[u8], api_version: &str, kind: &str) -> Result<M, Box<dyn std::error::Error>> {
    let message = body.strip_prefix(b"k8s\0").ok_or_else(|| format!("no protobuf magic in {body:?}"))?;
    let unknown = Unknown::decode(message)?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    assert_eq!((type_meta.api_version.as_deref(), type_meta.kind.as_deref()), (Some(api_version), Some(kind)));
    Ok(M::decode(unknown.raw.unwrap_or_default().as_slice())?)
}

/// A response: status, Content-Type and body.
struct Answer {
    status: StatusCode,
    content_type: String,
    body: prost::bytes::Bytes,
}

/// Sends one request with these headers and reads the whole answer.
async fn send(client: &Client, method: Method, path: &str, accept: &str, body: Option<Vec<u8>>) -> Result<Answer, Box<dyn std::error::Error>> {
    let mut request = Request::builder().method(method).uri(path).header("Accept", accept);
    if body.is_some() {
        request = request.header("Content-Type", PROTOBUF);
    }
    let response = client.send(request.body(kube::client::Body::from(body.unwrap_or_default()))?).await?;
    let status = response.status();
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let body = response.into_body().collect_bytes().await?;
    Ok(Answer { status, content_type, body })
}

fn lease(name: &str, holder: &str, resource_version: Option<&str>) -> coordination::Lease {
    coordination::Lease {
        metadata: Some(meta::ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            resource_version: resource_version.map(str::to_owned),
            ..Default::default()
        }),
        spec: Some(coordination::LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(meta::MicroTime { seconds: Some(NOV_22), nanos: Some(0) }),
            renew_time: Some(meta::MicroTime { seconds: Some(NOV_22 + 10), nanos: Some(123_456_000) }),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    }
}

/// Creates Lease `name` held by `holder` with a protobuf body and answer; returns the stored Lease.
async fn create_lease(client: &Client, name: &str, holder: &str) -> Result<coordination::Lease, Box<dyn std::error::Error>> {
    let body = envelope("coordination.k8s.io/v1", "Lease", &lease(name, holder, None));
    let answer = send(client, Method::POST, LEASES, CLIENT_GO_ACCEPT, Some(body)).await?;
    assert_eq!(answer.status, StatusCode::CREATED, "{:?}", answer.body);
    assert_eq!(answer.content_type, PROTOBUF);
    open(&answer.body, "coordination.k8s.io/v1", "Lease")
}

fn resource_version(lease: &coordination::Lease) -> String {
    lease.metadata.as_ref().and_then(|m| m.resource_version.clone()).unwrap_or_default()
}

fn holder(lease: &coordination::Lease) -> Option<&str> {
    lease.spec.as_ref().and_then(|s| s.holder_identity.as_deref())
}

#[tokio::test]
async fn a_lease_is_created_read_renewed_and_listed_in_protobuf() -> TestResult {
    let (_server, client) = tenant().await?;
    let created = create_lease(&client, "leader", "node-a").await?;
    let spec = created.spec.clone().unwrap_or_default();
    assert_eq!((holder(&created), spec.lease_duration_seconds), (Some("node-a"), Some(15)));
    let renew = spec.renew_time.unwrap_or_default();
    assert_eq!((renew.seconds, renew.nanos), (Some(NOV_22 + 10), Some(123_456_000)), "MicroTime keeps microseconds");
    let metadata = created.metadata.clone().unwrap_or_default();
    assert!(metadata.uid.as_deref().is_some_and(|uid| !uid.is_empty()), "{metadata:?}");
    assert!(metadata.creation_timestamp.and_then(|t| t.seconds).is_some_and(|s| s > NOV_22 - 400 * 86_400));

    let read = send(&client, Method::GET, &format!("{LEASES}/leader"), CLIENT_GO_ACCEPT, None).await?;
    assert_eq!((read.status, read.content_type.as_str()), (StatusCode::OK, PROTOBUF));
    let read: coordination::Lease = open(&read.body, "coordination.k8s.io/v1", "Lease")?;
    assert_eq!(read, created);

    // Leader election: renew with the resourceVersion read; a second writer with the same, now stale, one loses.
    let version = resource_version(&read);
    let renewed = envelope("coordination.k8s.io/v1", "Lease", &lease("leader", "node-b", Some(&version)));
    let answer = send(&client, Method::PUT, &format!("{LEASES}/leader"), CLIENT_GO_ACCEPT, Some(renewed.clone())).await?;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let renewed_lease: coordination::Lease = open(&answer.body, "coordination.k8s.io/v1", "Lease")?;
    assert_eq!(holder(&renewed_lease), Some("node-b"));
    assert_ne!(resource_version(&renewed_lease), version);
    let stale = send(&client, Method::PUT, &format!("{LEASES}/leader"), CLIENT_GO_ACCEPT, Some(renewed)).await?;
    assert_eq!((stale.status, stale.content_type.as_str()), (StatusCode::CONFLICT, PROTOBUF));
    let status: meta::Status = open(&stale.body, "v1", "Status")?;
    assert_eq!((status.code, status.reason.as_deref()), (Some(409), Some("Conflict")));

    create_lease(&client, "other", "node-c").await?;
    let listed = send(&client, Method::GET, LEASES, CLIENT_GO_ACCEPT, None).await?;
    assert_eq!((listed.status, listed.content_type.as_str()), (StatusCode::OK, PROTOBUF));
    let list: coordination::LeaseList = open(&listed.body, "coordination.k8s.io/v1", "LeaseList")?;
    let names: Vec<_> = list.items.iter().filter_map(|l| l.metadata.as_ref()?.name.clone()).collect();
    assert_eq!(names, ["leader", "other"]);
    let list_version: u64 = list.metadata.and_then(|m| m.resource_version).unwrap_or_default().parse()?;
    assert!(list_version >= resource_version(&renewed_lease).parse::<u64>()?);
    Ok(())
}

#[tokio::test]
async fn an_event_is_created_and_read_in_protobuf() -> TestResult {
    let (_server, client) = tenant().await?;
    let event = core::Event {
        metadata: Some(meta::ObjectMeta { name: Some("web.1".into()), namespace: Some("default".into()), ..Default::default() }),
        involved_object: Some(core::ObjectReference {
            kind: Some("Pod".into()),
            namespace: Some("default".into()),
            name: Some("web".into()),
            api_version: Some("v1".into()),
            ..Default::default()
        }),
        reason: Some("Started".into()),
        message: Some("Started container web".into()),
        source: Some(core::EventSource { component: Some("kubelet".into()), host: Some("node-a".into()) }),
        first_timestamp: Some(meta::Time { seconds: Some(NOV_22), nanos: Some(0) }),
        last_timestamp: Some(meta::Time { seconds: Some(NOV_22 + 5), nanos: Some(0) }),
        count: Some(2),
        r#type: Some("Normal".into()),
        event_time: Some(meta::MicroTime { seconds: Some(NOV_22), nanos: Some(5_000) }),
        reporting_component: Some("kubelet".into()),
        reporting_instance: Some("node-a".into()),
        ..Default::default()
    };
    let path = "/api/v1/namespaces/default/events";
    let created = send(&client, Method::POST, path, CLIENT_GO_ACCEPT, Some(envelope("v1", "Event", &event))).await?;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    let read = send(&client, Method::GET, &format!("{path}/web.1"), CLIENT_GO_ACCEPT, None).await?;
    let read: core::Event = open(&read.body, "v1", "Event")?;
    assert_eq!(read.involved_object, event.involved_object);
    assert_eq!((read.reason, read.count, read.r#type), (event.reason, Some(2), event.r#type));
    assert_eq!(read.first_timestamp, event.first_timestamp);
    assert_eq!(read.last_timestamp, event.last_timestamp);
    assert_eq!(read.event_time, event.event_time);
    assert_eq!(read.source, event.source);
    // The same object in JSON, for a client that prefers it.
    let json = send(&client, Method::GET, &format!("{path}/web.1"), "application/json", None).await?;
    let json: serde_json::Value = serde_json::from_slice(&json.body)?;
    assert_eq!((json["eventTime"].as_str(), json["firstTimestamp"].as_str()), (Some("2026-11-22T05:00:00.000005Z"), Some("2026-11-22T05:00:00Z")));
    Ok(())
}

/// Reads one length-prefixed `WatchEvent` frame.
async fn next_frame(stream: &mut (impl futures::AsyncRead + Unpin)) -> Result<meta::WatchEvent, Box<dyn std::error::Error>> {
    let mut length = [0u8; 4];
    tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut length)).await??;
    let mut frame = vec![0u8; u32::from_be_bytes(length) as usize];
    stream.read_exact(&mut frame).await?;
    Ok(meta::WatchEvent::decode(frame.as_slice())?)
}

/// A watch event's type and its Lease.
fn lease_event(event: meta::WatchEvent) -> Result<(String, coordination::Lease), Box<dyn std::error::Error>> {
    let raw = event.object.and_then(|o| o.raw).unwrap_or_default();
    Ok((event.r#type.unwrap_or_default(), open(&raw, "coordination.k8s.io/v1", "Lease")?))
}

#[tokio::test]
async fn a_protobuf_watch_of_leases_sees_added_modified_and_deleted_frames() -> TestResult {
    let (_server, client) = tenant().await?;
    let listed = send(&client, Method::GET, LEASES, CLIENT_GO_ACCEPT, None).await?;
    let list: coordination::LeaseList = open(&listed.body, "coordination.k8s.io/v1", "LeaseList")?;
    let from = list.metadata.and_then(|m| m.resource_version).unwrap_or_default();
    let watch = Request::get(format!("{LEASES}?watch=true&resourceVersion={from}&timeoutSeconds=30"))
        .header("Accept", CLIENT_GO_ACCEPT)
        .body(Vec::new())?;
    let mut stream = Box::pin(client.request_stream(watch).await?);

    let created = create_lease(&client, "leader", "node-a").await?;
    let version = resource_version(&created);
    let renewed = envelope("coordination.k8s.io/v1", "Lease", &lease("leader", "node-b", Some(&version)));
    let answer = send(&client, Method::PUT, &format!("{LEASES}/leader"), CLIENT_GO_ACCEPT, Some(renewed)).await?;
    assert_eq!(answer.status, StatusCode::OK);
    let deleted = send(&client, Method::DELETE, &format!("{LEASES}/leader"), CLIENT_GO_ACCEPT, None).await?;
    assert_eq!(deleted.status, StatusCode::OK, "{:?}", deleted.body);

    let (kind, added) = lease_event(next_frame(&mut stream).await?)?;
    assert_eq!((kind.as_str(), holder(&added)), ("ADDED", Some("node-a")));
    assert_eq!(resource_version(&added), version);
    let (kind, modified) = lease_event(next_frame(&mut stream).await?)?;
    assert_eq!((kind.as_str(), holder(&modified)), ("MODIFIED", Some("node-b")));
    let (kind, gone) = lease_event(next_frame(&mut stream).await?)?;
    assert_eq!((kind.as_str(), holder(&gone)), ("DELETED", Some("node-b")));
    Ok(())
}

#[tokio::test]
async fn a_protobuf_watch_list_ends_its_initial_events_with_an_annotated_bookmark() -> TestResult {
    let (_server, client) = tenant().await?;
    create_lease(&client, "leader", "node-a").await?;
    let path = format!("{LEASES}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1");
    let answer = send(&client, Method::GET, &path, CLIENT_GO_ACCEPT, None).await?;
    assert_eq!((answer.status, answer.content_type.as_str()), (StatusCode::OK, "application/vnd.kubernetes.protobuf;stream=watch"));
    let mut stream = answer.body.as_ref();
    let (kind, added) = lease_event(next_frame(&mut stream).await?)?;
    assert_eq!((kind.as_str(), holder(&added)), ("ADDED", Some("node-a")));
    let (kind, bookmark) = lease_event(next_frame(&mut stream).await?)?;
    assert_eq!(kind, "BOOKMARK");
    let metadata = bookmark.metadata.unwrap_or_default();
    assert_eq!(metadata.annotations.get("k8s.io/initial-events-end").map(String::as_str), Some("true"));
    assert!(metadata.resource_version.unwrap_or_default().parse::<u64>()? >= resource_version(&added).parse::<u64>()?);
    // kube 1.33's list blueprint: an empty LeaseList, encoded as the stream is (protobuf), base64.
    let blueprint = metadata.annotations.get("kubernetes.io/initial-events-list-blueprint").ok_or("no blueprint")?;
    let blueprint = base64::engine::general_purpose::STANDARD.decode(blueprint)?;
    let empty: coordination::LeaseList = open(&blueprint, "coordination.k8s.io/v1", "LeaseList")?;
    assert!(empty.items.is_empty());
    Ok(())
}

#[tokio::test]
async fn errors_are_protobuf_status_objects() -> TestResult {
    let (_server, client) = tenant().await?;
    let missing = send(&client, Method::GET, &format!("{LEASES}/nope"), CLIENT_GO_ACCEPT, None).await?;
    assert_eq!((missing.status, missing.content_type.as_str()), (StatusCode::NOT_FOUND, PROTOBUF));
    let status: meta::Status = open(&missing.body, "v1", "Status")?;
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert_eq!((status.code, status.reason.as_deref()), (Some(404), Some("NotFound")));
    assert_eq!(status.message.as_deref(), Some(r#"leases.coordination.k8s.io "nope" not found"#));
    let details = status.details.unwrap_or_default();
    assert_eq!((details.name.as_deref(), details.group.as_deref(), details.kind.as_deref()),
        (Some("nope"), Some("coordination.k8s.io"), Some("leases")));

    // A body that is not protobuf: 400, still answered in protobuf.
    let garbage = send(&client, Method::POST, LEASES, CLIENT_GO_ACCEPT, Some(b"k8s\0\xff\xff".to_vec())).await?;
    assert_eq!((garbage.status, garbage.content_type.as_str()), (StatusCode::BAD_REQUEST, PROTOBUF));
    let status: meta::Status = open(&garbage.body, "v1", "Status")?;
    assert_eq!(status.reason.as_deref(), Some("BadRequest"));

    // Nothing acceptable: 406, in JSON, naming what is.
    let refused = send(&client, Method::GET, LEASES, "text/html", None).await?;
    assert_eq!((refused.status, refused.content_type.as_str()), (StatusCode::NOT_ACCEPTABLE, "application/json"));
    let status: serde_json::Value = serde_json::from_slice(&refused.body)?;
    assert_eq!(status["message"], "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf");
    Ok(())
}

const WIDGETS_CRD: &str = r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}"#;

#[tokio::test]
async fn custom_resources_fall_back_to_json_and_refuse_protobuf_only() -> TestResult {
    let (server, client) = tenant().await?;
    let kubectl = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[]));
    kubectl.ok_with_stdin(&["apply", "-f", "-"], WIDGETS_CRD);
    kubectl.ok(&["wait", "--for=condition=Established", "crd/widgets.example.com"]);
    kubectl.ok_with_stdin(&["apply", "-f", "-"], r#"{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}, "spec": {"size": 3}}"#);
    let path = "/apis/example.com/v1/namespaces/default/widgets/w";
    let answer = send(&client, Method::GET, path, CLIENT_GO_ACCEPT, None).await?;
    assert_eq!((answer.status, answer.content_type.as_str()), (StatusCode::OK, "application/json"));
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&answer.body)?["spec"]["size"], 3);
    let refused = send(&client, Method::GET, path, PROTOBUF, None).await?;
    assert_eq!(refused.status, StatusCode::NOT_ACCEPTABLE);
    // The 406 itself is a Status, in protobuf since the client accepts nothing else.
    let status: meta::Status = open(&refused.body, "v1", "Status")?;
    assert_eq!(status.reason.as_deref(), Some("NotAcceptable"));
    Ok(())
}

/// gnostic's `openapi.v2.Document`, only as far as this test reads it.
#[derive(Clone, PartialEq, Message)]
struct OpenApiDocument {
    #[prost(string, tag = "1")]
    swagger: String,
    #[prost(message, optional, tag = "9")]
    definitions: Option<OpenApiDefinitions>,
}

#[derive(Clone, PartialEq, Message)]
struct OpenApiDefinitions {
    #[prost(message, repeated, tag = "1")]
    additional_properties: Vec<OpenApiNamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
struct OpenApiNamedSchema {
    #[prost(string, tag = "1")]
    name: String,
}

#[tokio::test]
async fn kubectl_validates_a_review_on_its_side_with_the_protobuf_openapi_v2() -> TestResult {
    let (server, client) = tenant().await?;
    let accept = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
    let answer = send(&client, Method::GET, "/openapi/v2", accept, None).await?;
    assert_eq!((answer.status, answer.content_type.as_str()),
        (StatusCode::OK, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"));
    let document = OpenApiDocument::decode(answer.body.as_ref())?;
    assert_eq!(document.swagger, "2.0");
    let names: Vec<String> = document.definitions.unwrap_or_default().additional_properties.into_iter().map(|d| d.name).collect();
    assert!(names.iter().any(|n| n == "io.k8s.api.authorization.v1.SubjectAccessReview"), "{} definitions", names.len());

    // SubjectAccessReview has no PATCH, so kubectl 1.32 cannot use server-side field validation: it falls back to
    // /openapi/v2 in protobuf and validates on its side.
    let kubectl = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[]));
    let wrong = "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\nspec:\n  user: alice\n  groups: dev\n  resourceAttributes: {verb: get, resource: pods}\n";
    let refused = kubectl.fails_with_stdin(&["create", "--validate=true", "-f", "-"], wrong);
    assert!(refused.contains(r#"ValidationError(SubjectAccessReview.spec.groups): invalid type for io.k8s.api.authorization.v1.SubjectAccessReviewSpec.groups: got "string", expected "array""#), "{refused}");
    let right = wrong.replace("groups: dev", "groups: [dev]");
    let allowed = kubectl.ok_with_stdin(&["create", "--validate=true", "-f", "-", "-o", "jsonpath={.status.allowed}"], &right);
    assert_eq!(allowed, "false");
    Ok(())
}

/// `kubectl scale` through client-go reads and writes `autoscaling/v1 Scale` in protobuf.
#[tokio::test]
async fn the_scale_subresource_speaks_protobuf() -> TestResult {
    use k8s_pb::api::autoscaling::v1 as autoscaling;
    let (server, client) = tenant().await?;
    let kubectl = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[]));
    kubectl.ok(&["create", "deployment", "web", "--image=nginx", "--replicas=2"]);
    let path = "/apis/apps/v1/namespaces/default/deployments/web/scale";

    let answer = send(&client, Method::GET, path, CLIENT_GO_ACCEPT, None).await?;
    assert_eq!((answer.status, answer.content_type.as_str()), (StatusCode::OK, PROTOBUF));
    let mut scale: autoscaling::Scale = open(&answer.body, "autoscaling/v1", "Scale")?;
    assert_eq!(scale.spec.as_ref().and_then(|s| s.replicas), Some(2));
    assert_eq!(scale.status.as_ref().and_then(|s| s.selector.as_deref()), Some("app=web"));

    scale.spec = Some(autoscaling::ScaleSpec { replicas: Some(4) });
    let answer = send(&client, Method::PUT, path, CLIENT_GO_ACCEPT, Some(envelope("autoscaling/v1", "Scale", &scale))).await?;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let scaled: autoscaling::Scale = open(&answer.body, "autoscaling/v1", "Scale")?;
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(4));
    assert_eq!(kubectl.ok(&["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"]), "4");

    let answer = send(&client, Method::GET, path, "application/json", None).await?;
    assert_eq!(answer.content_type, "application/json", "JSON stays the default");
    Ok(())
}

/// A protobuf GET of `path` with curl as `token` over `http`: the status, the `Content-Length` announced and the
/// body received.
fn curl_protobuf(server: &Server, http: Http, token: &str, path: &str) -> Result<(u16, Option<usize>, Vec<u8>), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (headers, body) = (dir.path().join("headers"), dir.path().join("body"));
    let version = match http {
        Http::One => "--http1.1",
        Http::Two => "--http2",
    };
    let output = std::process::Command::new("curl")
        .args(["-sk", version, "--max-time", "60", "-H", &format!("Accept: {PROTOBUF}"), "-H", &format!("Authorization: Bearer {token}")])
        .arg("-D").arg(&headers).arg("-o").arg(&body).args(["-w", "%{http_code} %{http_version}"])
        .arg(format!("{}{path}", server.url))
        .output()?;
    let written = String::from_utf8_lossy(&output.stdout).into_owned();
    let (code, version) = written.split_once(' ').ok_or_else(|| format!("curl wrote {written:?}"))?;
    assert_eq!(version, if http == Http::One { "1.1" } else { "2" }, "curl spoke HTTP {version}");
    let headers = std::fs::read_to_string(&headers)?;
    let length = headers.lines()
        .find_map(|line| line.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("content-length")).map(|(_, value)| value.trim().to_owned()))
        .map(|value| value.parse::<usize>()).transpose()?;
    Ok((code.parse()?, length, std::fs::read(&body)?))
}

fn names(list: &core::ConfigMapList) -> Vec<String> {
    list.items.iter().map(|item| item.metadata.as_ref().and_then(|m| m.name.clone()).unwrap_or_default()).collect()
}

/// A protobuf list longer than the server keeps while it learns the list's length (1 MiB of items) is read a
/// second time at the same snapshot and sent as it is encoded: over HTTP/1.1 and HTTP/2 its `Content-Length` is
/// what arrives and it decodes into the objects a JSON list has; `limit`/`continue` and selectors hold; and lists
/// taken while the same objects keep changing size each decode whole (a second read of a newer snapshot would
/// not add up to the length announced).
#[tokio::test]
async fn a_protobuf_list_longer_than_the_server_keeps_is_sent_as_it_is_read_again() -> TestResult {
    let tokens = token_file(&["root-token,root,u-root,\"system:masters\""]);
    let server = Server::start_with(&["--token-auth-file", tokens.path().to_str().ok_or("a UTF-8 temp path")?]);
    let client = kube_client(&server.kubeconfig).await?;
    let configmap = |i: usize, size: usize| serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("big-{i:02}"), "namespace": "default", "labels": {"half": if i % 2 == 0 { "even" } else { "odd" }}},
        "data": {"k": "x".repeat(size)},
    });
    // 40 ConfigMaps of 64 KiB: about 2.6 MB of items.
    let items: Vec<_> = (0..40).map(|i| configmap(i, 64 * 1024)).collect();
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    server.kubectl().ok_with_stdin(&["create", "-f", "-"], &list.to_string());
    let json = server.kubectl().ok(&["get", "configmaps", "-n", "default", "-l", "half", "-o", "json"]);
    let json: serde_json::Value = serde_json::from_str(&json)?;
    let expected: Vec<(String, String)> = json["items"].as_array().ok_or("items")?.iter()
        .map(|item| (item["metadata"]["name"].as_str().unwrap_or_default().to_owned(), item["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_owned()))
        .collect();
    assert_eq!(expected.len(), 40);

    for http in [Http::One, Http::Two] {
        let (code, length, body) = curl_protobuf(&server, http, "root-token", "/api/v1/namespaces/default/configmaps?labelSelector=half")?;
        assert_eq!((code, length), (200, Some(body.len())), "{http:?}");
        assert!(body.len() > 2_600_000, "{http:?}: {} bytes", body.len());
        let list: core::ConfigMapList = open(&body, "v1", "ConfigMapList")?;
        let got: Vec<(String, String)> = list.items.iter().map(|item| {
            let metadata = item.metadata.clone().unwrap_or_default();
            (metadata.name.unwrap_or_default(), metadata.resource_version.unwrap_or_default())
        }).collect();
        assert_eq!(got, expected, "{http:?}");
        assert!(list.items.iter().all(|item| item.data.get("k").map(String::len) == Some(64 * 1024)), "{http:?}");
        // Pages: the first, of 25 (1.6 MB, read twice), then the rest from its continue token (1 MB, read once).
        let (code, length, body) = curl_protobuf(&server, http, "root-token", "/api/v1/namespaces/default/configmaps?labelSelector=half&limit=25")?;
        assert_eq!((code, length), (200, Some(body.len())), "{http:?}");
        let first: core::ConfigMapList = open(&body, "v1", "ConfigMapList")?;
        let metadata = first.metadata.clone().unwrap_or_default();
        // With a selector, kube counts no remaining items.
        assert_eq!((first.items.len(), metadata.remaining_item_count), (25, None), "{http:?}");
        let token = metadata.r#continue.ok_or("a continue token")?;
        let (code, _, body) = curl_protobuf(&server, http, "root-token", &format!("/api/v1/namespaces/default/configmaps?labelSelector=half&limit=25&continue={token}"))?;
        assert_eq!(code, 200, "{http:?}");
        let rest: core::ConfigMapList = open(&body, "v1", "ConfigMapList")?;
        assert_eq!([names(&first), names(&rest)].concat(), expected.iter().map(|(name, _)| name.clone()).collect::<Vec<_>>(), "{http:?}");
        // A selector: the 20 even ones.
        let (code, _, body) = curl_protobuf(&server, http, "root-token", "/api/v1/namespaces/default/configmaps?labelSelector=half%3Deven")?;
        assert_eq!(code, 200, "{http:?}");
        let even: core::ConfigMapList = open(&body, "v1", "ConfigMapList")?;
        assert_eq!(names(&even), (0..40).step_by(2).map(|i| format!("big-{i:02}")).collect::<Vec<_>>(), "{http:?}");
    }

    // The objects change size while they are listed: each list is of one snapshot, whole.
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(client.clone(), "default", &kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()));
    let writer = tokio::spawn(async move {
        let mut writes = 0;
        for round in 0..6 {
            for i in 0..40 {
                let size = if (round + i) % 2 == 0 { 32 * 1024 } else { 96 * 1024 };
                let patch = serde_json::json!({"data": {"k": "y".repeat(size)}});
                api.patch(&format!("big-{i:02}"), &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&patch)).await?;
                writes += 1;
            }
        }
        Ok::<usize, kube::Error>(writes)
    });
    let mut lists = 0;
    while !writer.is_finished() || lists < 3 {
        let answer = send(&client, Method::GET, "/api/v1/namespaces/default/configmaps?labelSelector=half", PROTOBUF, None).await?;
        assert_eq!(answer.status, StatusCode::OK);
        let list: core::ConfigMapList = open(&answer.body, "v1", "ConfigMapList")?;
        assert_eq!(list.items.len(), 40);
        lists += 1;
    }
    assert_eq!(writer.await??, 240);
    assert!(lists >= 3);
    Ok(())
}
