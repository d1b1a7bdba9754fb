//! Built-in kinds added by one row of `apiserver/src/builtin.rs`, as kube-apiserver 1.33 serves them:
//! `networking.k8s.io/v1` IPAddress and ServiceCIDR (system space only) through kubectl 1.32 (create, get by short
//! name, list, the table kube prints) and in protobuf, and the create-only core `v1` `bindings` resource.

use http::{Method, Request, StatusCode};
use k8s_pb::api::networking::v1 as networking;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use kube::Client;
use kspaces_tests::{certificate_kubeconfig, create_tenant, kube_client, Kubectl, Server};
use prost::Message;
use serde_json::{json, Value};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

const IP_ADDRESSES: &str = "\
apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {name: 10.96.0.10}
spec:
  parentRef: {group: \"\", resource: services, namespace: default, name: kubernetes}
---
apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {name: 10.96.0.11}
spec:
  parentRef: {group: gateway.networking.k8s.io, resource: Gateways, namespace: web, name: edge}
";

/// The cells of each line of kubectl's table output.
fn table(output: &str) -> Vec<Vec<String>> {
    output.lines().map(|line| line.split_whitespace().map(str::to_owned).collect()).collect()
}

/// A response: status, Content-Type and body.
struct Answer {
    status: StatusCode,
    content_type: String,
    body: prost::bytes::Bytes,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))
    }
}

async fn send(client: &Client, method: Method, path: &str, accept: &str, body: Option<Value>) -> Result<Answer, Box<dyn std::error::Error>> {
    let mut request = Request::builder().method(method).uri(path).header("Accept", accept);
    if body.is_some() {
        request = request.header("Content-Type", "application/json");
    }
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let response = client.send(request.body(kube::client::Body::from(bytes))?).await?;
    let status = response.status();
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let body = response.into_body().collect_bytes().await?;
    Ok(Answer { status, content_type, body })
}

#[test]
fn ip_addresses_and_service_cidrs_are_created_listed_and_printed_as_kube_prints_them() {
    let server = Server::start();
    let kubectl = server.kubectl();
    kubectl.ok_with_stdin(&["create", "-f", "-"], IP_ADDRESSES);
    assert_eq!(
        table(&kubectl.ok(&["get", "ipaddresses"])),
        [
            vec!["NAME", "PARENTREF"],
            vec!["10.96.0.10", "services/default/kubernetes"],
            vec!["10.96.0.11", "gateways.gateway.networking.k8s.io/web/edge"],
        ]
    );
    assert_eq!(kubectl.ok(&["get", "ip", "10.96.0.10", "-o", "jsonpath={.kind} {.spec.parentRef.name}"]), "IPAddress kubernetes");
    // Its name is the address, written as kube writes it.
    for (name, why) in [("not-an-ip", "must be a valid IP address"), ("2001:db8:0::1", "must be in canonical form (\"2001:db8::1\")")] {
        let refused = kubectl.fails_with_stdin(&["create", "-f", "-"], &IP_ADDRESSES.replace("10.96.0.10", name));
        assert!(refused.contains(why) && refused.contains("is invalid"), "{refused}");
    }
    let resources = kubectl.ok(&["api-resources", "--api-group=networking.k8s.io", "-o", "wide"]);
    let row = table(&resources).into_iter().find(|cells| cells[0] == "ipaddresses").unwrap_or_else(|| panic!("{resources}"));
    assert_eq!(row[..5], ["ipaddresses", "ip", "networking.k8s.io/v1", "false", "IPAddress"], "{resources}");

    kubectl.ok_with_stdin(
        &["create", "-f", "-"],
        "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: extra}\nspec: {cidrs: [10.100.0.0/16, \"2001:db8::/64\"]}\n",
    );
    // Server-side apply knows its fields (managedFields name `spec.cidrs`).
    kubectl.ok_with_stdin(
        &["apply", "--server-side", "--field-manager=me", "-f", "-"],
        "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: applied}\nspec: {cidrs: [10.200.0.0/16]}\n",
    );
    let applied = kubectl.ok(&["get", "servicecidr", "applied", "-o", "json", "--show-managed-fields"]);
    assert!(applied.contains("\"f:cidrs\"") && applied.contains("\"manager\": \"me\""), "{applied}");
    let cidrs = table(&kubectl.ok(&["get", "servicecidrs"]));
    assert_eq!(cidrs[0], ["NAME", "CIDRS", "AGE"]);
    assert_eq!(cidrs[1][..2], ["applied", "10.200.0.0/16"]);
    assert_eq!(cidrs[2][..2], ["extra", "10.100.0.0/16,2001:db8::/64"]);

    // Like the other objects describing the cluster's own network and nodes, they are the system space's.
    create_tenant(&kubectl, "t-a");
    let tenant = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[]));
    let refused = tenant.fails(&["get", "ipaddresses"]);
    assert!(refused.contains("the server doesn't have a resource type \"ipaddresses\""), "{refused}");
}

#[tokio::test]
async fn an_ip_address_is_read_in_protobuf() -> TestResult {
    let server = Server::start();
    server.kubectl().ok_with_stdin(&["create", "-f", "-"], IP_ADDRESSES);
    let client = kube_client(&server.kubeconfig).await?;
    let path = "/apis/networking.k8s.io/v1/ipaddresses/10.96.0.10";
    let answer = send(&client, Method::GET, path, PROTOBUF, None).await?;
    assert_eq!((answer.status, answer.content_type.as_str()), (StatusCode::OK, PROTOBUF), "{:?}", answer.body);
    let unknown = Unknown::decode(answer.body.strip_prefix(b"k8s\0").ok_or("no protobuf magic")?)?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    assert_eq!((type_meta.api_version.as_deref(), type_meta.kind.as_deref()), (Some("networking.k8s.io/v1"), Some("IPAddress")));
    let address = networking::IPAddress::decode(unknown.raw.unwrap_or_default().as_slice())?;
    let parent = address.spec.and_then(|spec| spec.parent_ref).ok_or("no parentRef")?;
    assert_eq!(
        (parent.group.as_deref(), parent.resource.as_deref(), parent.namespace.as_deref(), parent.name.as_deref()),
        (Some(""), Some("services"), Some("default"), Some("kubernetes"))
    );
    let metadata = address.metadata.ok_or("no metadata")?;
    let json = send(&client, Method::GET, path, "application/json", None).await?.json();
    assert_eq!(metadata.name.as_deref(), Some("10.96.0.10"));
    assert_eq!(metadata.uid.as_deref(), json["metadata"]["uid"].as_str());
    assert_eq!(metadata.resource_version.as_deref(), json["metadata"]["resourceVersion"].as_str());

    let list = send(&client, Method::GET, "/apis/networking.k8s.io/v1/ipaddresses", PROTOBUF, None).await?;
    let unknown = Unknown::decode(list.body.strip_prefix(b"k8s\0").ok_or("no protobuf magic")?)?;
    let list = networking::IPAddressList::decode(unknown.raw.unwrap_or_default().as_slice())?;
    let names: Vec<_> = list.items.iter().filter_map(|item| item.metadata.as_ref()?.name.clone()).collect();
    assert_eq!(names, ["10.96.0.10", "10.96.0.11"]);
    Ok(())
}

#[tokio::test]
async fn a_binding_posted_to_bindings_assigns_its_pod_to_the_node() -> TestResult {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t-a");
    let kubeconfig = certificate_kubeconfig(&server, "t-a", "admin", &[]);
    Kubectl::new(&kubeconfig).ok(&["run", "p", "--image=nginx:1.27"]);
    let client = kube_client(&kubeconfig).await?;

    let discovery = send(&client, Method::GET, "/api/v1", "application/json", None).await?.json();
    let bindings = discovery["resources"].as_array().into_iter().flatten().find(|r| r["name"] == "bindings").cloned();
    let bindings = bindings.ok_or_else(|| format!("no bindings in {discovery}"))?;
    assert_eq!((&bindings["kind"], &bindings["namespaced"], &bindings["verbs"]), (&json!("Binding"), &json!(true), &json!(["create"])));

    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}});
    let path = "/api/v1/namespaces/default/bindings";
    let created = send(&client, Method::POST, path, "application/json", Some(binding.clone())).await?;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    assert_eq!(created.json()["status"], "Success");
    let pod = send(&client, Method::GET, "/api/v1/namespaces/default/pods/p", "application/json", None).await?.json();
    assert_eq!(pod["spec"]["nodeName"], "node-1");

    let again = send(&client, Method::POST, path, "application/json", Some(binding)).await?;
    assert_eq!(again.status, StatusCode::CONFLICT, "{:?}", again.body);
    let missing = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "nope"}, "target": {"name": "node-1"}});
    assert_eq!(send(&client, Method::POST, path, "application/json", Some(missing)).await?.status, StatusCode::NOT_FOUND);
    let listed = send(&client, Method::GET, path, "application/json", None).await?;
    assert_eq!(listed.status, StatusCode::METHOD_NOT_ALLOWED, "{:?}", listed.body);
    assert_eq!(listed.json()["reason"], "MethodNotAllowed");
    Ok(())
}

const POLICY: &str = "\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-forbidden-names}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  validations: [{expression: \"object.metadata.name != 'forbidden'\"}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-forbidden-names}
spec: {policyName: no-forbidden-names, validationActions: [Deny]}
";

/// `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicies and their bindings are each space's own, with
/// kube's defaults; `apiregistration.k8s.io/v1` APIServices are the system space's.
#[test]
fn admission_policies_are_each_spaces_own_and_api_services_the_systems() {
    let server = Server::start();
    let kubectl = server.kubectl();
    create_tenant(&kubectl, "t-a");
    create_tenant(&kubectl, "t-b");
    let (a, b) = (Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[])), Kubectl::new(&certificate_kubeconfig(&server, "t-b", "admin", &[])));
    a.ok_with_stdin(&["create", "-f", "-"], POLICY);
    let read = a.ok(&["get", "validatingadmissionpolicy", "no-forbidden-names", "-o",
        "jsonpath={.spec.failurePolicy} {.spec.matchConstraints.matchPolicy} {.spec.matchConstraints.resourceRules[0].scope}"]);
    assert_eq!(read, "Fail Equivalent *");
    assert_eq!(a.ok(&["get", "validatingadmissionpolicybindings", "-o", "name"]).trim(),
        "validatingadmissionpolicybinding.admissionregistration.k8s.io/no-forbidden-names");
    assert_eq!(b.ok(&["get", "validatingadmissionpolicies", "-o", "name"]).trim(), "", "another tenant sees none");
    let service = "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1beta1.metrics.example.io}\n\
        spec: {group: metrics.example.io, version: v1beta1, groupPriorityMinimum: 100, versionPriority: 10, service: {namespace: default, name: m}}\n";
    kubectl.ok_with_stdin(&["create", "-f", "-"], service);
    assert_eq!(kubectl.ok(&["get", "apiservices", "-o", "name"]).trim(), "apiservice.apiregistration.k8s.io/v1beta1.metrics.example.io");
    let refused = a.fails(&["get", "apiservices"]);
    assert!(refused.contains("the server doesn't have a resource type \"apiservices\""), "{refused}");
}
