//! Garbage collection through kubectl 1.32, as a tenant's administrator uses it (`docs/garbage-collection.md`):
//! background, foreground and orphan cascades over ConfigMaps, Secrets and custom resources, a dependent with two
//! owners, a dependent created with a missing owner, tenant isolation, a restart (the graph is rebuilt from
//! storage), and the delete options of the API (preconditions, grace periods, deletecollection, bad values).

use std::time::Duration;

use kspaces_tests::{certificate_kubeconfig, contains, create_tenant, eventually, Kubectl, Server, WatchOutput};
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(20);

/// A server with tenant `t-a` and kubectl as its administrator.
fn tenant_server() -> (Server, Kubectl) {
    let server = Server::start();
    create_tenant(&server.kubectl(), "t-a");
    let admin = Kubectl::new(&certificate_kubeconfig(&server, "t-a", "admin", &[]));
    (server, admin)
}

fn apply(kubectl: &Kubectl, yaml: &str) -> String {
    kubectl.ok_with_stdin(&["apply", "-f", "-"], yaml)
}

/// `kubectl get <what> -o json`, parsed.
fn get(kubectl: &Kubectl, what: &[&str]) -> Value {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    args.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&kubectl.ok(&args)).unwrap_or_else(|err| panic!("kubectl get {what:?}: {err}"))
}

fn uid(kubectl: &Kubectl, what: &[&str]) -> String {
    get(kubectl, what)["metadata"]["uid"].as_str().unwrap_or_default().to_owned()
}

fn exists(kubectl: &Kubectl, what: &[&str]) -> bool {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    args.extend_from_slice(&["-o", "name", "--ignore-not-found"]);
    !kubectl.ok(&args).trim().is_empty()
}

fn gone(kubectl: &Kubectl, what: &[&str]) -> bool {
    eventually(TIMEOUT, || !exists(kubectl, what))
}

/// An ownerReference to a ConfigMap, as a YAML flow mapping.
fn owned_by(name: &str, uid: &str, block: bool) -> String {
    format!("{{apiVersion: v1, kind: ConfigMap, name: {name}, uid: \"{uid}\", blockOwnerDeletion: {block}}}")
}

/// A ConfigMap (or, with `kind: Secret`, a Secret) in `default` with these owner references and finalizers.
fn object(kind: &str, name: &str, owners: &[String], finalizers: &str) -> String {
    format!("apiVersion: v1\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: default\n  finalizers: [{finalizers}]\n  ownerReferences: [{}]\n",
        owners.join(", "))
}

/// The uids the object's ownerReferences name.
fn owner_uids(kubectl: &Kubectl, what: &[&str]) -> Vec<String> {
    let object = get(kubectl, what);
    let references = object["metadata"]["ownerReferences"].as_array().cloned().unwrap_or_default();
    references.iter().filter_map(|r| r["uid"].as_str().map(str::to_owned)).collect()
}

#[test]
fn background_deletes_dependents_unless_another_owner_remains() {
    let (_server, admin) = tenant_server();
    admin.ok(&["create", "cm", "owner"]);
    admin.ok(&["create", "cm", "other-owner"]);
    let (owner, other) = (uid(&admin, &["cm", "owner"]), uid(&admin, &["cm", "other-owner"]));
    apply(&admin, &object("ConfigMap", "dep-cm", &[owned_by("owner", &owner, true)], ""));
    apply(&admin, &object("Secret", "dep-secret", &[owned_by("owner", &owner, false)], ""));
    apply(&admin, &object("ConfigMap", "two-owners", &[owned_by("owner", &owner, false), owned_by("other-owner", &other, false)], ""));
    std::thread::sleep(Duration::from_millis(500));
    assert!(exists(&admin, &["cm", "dep-cm"]) && exists(&admin, &["secret", "dep-secret"]), "live owners keep their dependents");

    let deleted = admin.ok(&["delete", "cm", "owner", "--cascade=background"]);
    assert_eq!(deleted.trim(), "configmap \"owner\" deleted");
    assert!(gone(&admin, &["cm", "dep-cm"]), "the ConfigMap dependent was not collected");
    assert!(gone(&admin, &["secret", "dep-secret"]), "the Secret dependent was not collected");
    // A dependent with another live owner stays and only loses the dangling reference.
    let dropped = eventually(TIMEOUT, || owner_uids(&admin, &["cm", "two-owners"]) == [other.clone()]);
    assert!(dropped, "{:?}", owner_uids(&admin, &["cm", "two-owners"]));

    // Its last owner goes by the default policy (Background): so does it.
    admin.ok(&["delete", "cm", "other-owner"]);
    assert!(gone(&admin, &["cm", "two-owners"]));
}

#[test]
fn a_dependent_of_a_missing_owner_is_collected() {
    let (_server, admin) = tenant_server();
    admin.ok(&["create", "cm", "real"]);
    let real = uid(&admin, &["cm", "real"]);
    apply(&admin, &object("ConfigMap", "never-owned", &[owned_by("nobody", "9e0f9c36-0000-4000-8000-000000000000", false)], ""));
    // The name exists, but with another uid: that owner is gone too.
    apply(&admin, &object("Secret", "wrong-uid", &[owned_by("real", "4a6c1c70-0000-4000-8000-000000000000", false)], ""));
    apply(&admin, &object("ConfigMap", "rightly-owned", &[owned_by("real", &real, false)], ""));
    assert!(gone(&admin, &["cm", "never-owned"]));
    assert!(gone(&admin, &["secret", "wrong-uid"]));
    assert!(exists(&admin, &["cm", "rightly-owned"]));
}

#[test]
fn foreground_keeps_the_owner_until_blocking_dependents_are_gone() {
    let (_server, admin) = tenant_server();
    admin.ok(&["create", "cm", "owner"]);
    let owner = uid(&admin, &["cm", "owner"]);
    apply(&admin, &object("ConfigMap", "blocker", &[owned_by("owner", &owner, true)], "example.com/hold"));
    apply(&admin, &object("Secret", "follower", &[owned_by("owner", &owner, false)], ""));
    let columns = "custom-columns=EVENT:.type,NAME:.object.metadata.name,FINALIZERS:.object.metadata.finalizers";
    let mut watch = WatchOutput::start(&admin, &["get", "cm", "owner", "--watch", "--output-watch-events", "-o", columns]);
    assert!(watch.wait_for(TIMEOUT, contains("ADDED")), "{}", watch.transcript());

    let deleted = admin.ok(&["delete", "cm", "owner", "--cascade=foreground", "--wait=false"]);
    assert_eq!(deleted.trim(), "configmap \"owner\" deleted");
    assert!(watch.wait_for(TIMEOUT, contains("[foregroundDeletion]")), "{}", watch.transcript());
    // Every dependent is deleted; the blocking one stays Terminating on its own finalizer, and holds the owner.
    assert!(gone(&admin, &["secret", "follower"]));
    let terminating = eventually(TIMEOUT, || get(&admin, &["cm", "blocker"])["metadata"]["deletionTimestamp"].is_string());
    assert!(terminating, "the blocking dependent was not deleted");
    std::thread::sleep(Duration::from_secs(1));
    let held = get(&admin, &["cm", "owner"]);
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    assert_eq!(held["metadata"]["finalizers"], serde_json::json!(["foregroundDeletion"]), "{held}");
    assert!(!watch.saw(contains("DELETED")), "{}", watch.transcript());

    admin.ok(&["patch", "cm", "blocker", "--type=json", "-p", r#"[{"op": "remove", "path": "/metadata/finalizers"}]"#]);
    assert!(watch.wait_for(TIMEOUT, |line| line.starts_with("DELETED") && line.contains("owner")), "{}", watch.transcript());
    assert!(!exists(&admin, &["cm", "owner"]) && !exists(&admin, &["cm", "blocker"]));
}

#[test]
fn orphan_keeps_dependents_and_strips_their_references() {
    let (_server, admin) = tenant_server();
    admin.ok(&["create", "cm", "owner"]);
    admin.ok(&["create", "cm", "keeper"]);
    let (owner, keeper) = (uid(&admin, &["cm", "owner"]), uid(&admin, &["cm", "keeper"]));
    apply(&admin, &object("ConfigMap", "child", &[owned_by("owner", &owner, true)], ""));
    apply(&admin, &object("Secret", "shared", &[owned_by("owner", &owner, true), owned_by("keeper", &keeper, false)], ""));

    // kubectl waits for the owner to be gone, which takes the collector's orphaning first.
    let deleted = admin.ok(&["delete", "cm", "owner", "--cascade=orphan"]);
    assert_eq!(deleted.trim(), "configmap \"owner\" deleted");
    assert!(!exists(&admin, &["cm", "owner"]));
    assert_eq!(owner_uids(&admin, &["cm", "child"]), Vec::<String>::new());
    assert!(get(&admin, &["cm", "child"])["metadata"].get("ownerReferences").is_none());
    assert_eq!(owner_uids(&admin, &["secret", "shared"]), [keeper]);
    std::thread::sleep(Duration::from_millis(500));
    assert!(exists(&admin, &["cm", "child"]) && exists(&admin, &["secret", "shared"]), "orphans are never collected");
}

const WIDGET_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

fn install_widgets(kubectl: &Kubectl) {
    apply(kubectl, WIDGET_CRD);
    let waited = kubectl.ok(&["wait", "--for", "condition=established", "crd/widgets.example.com", "--timeout=10s"]);
    assert!(waited.contains("condition met"), "{waited}");
}

/// A Widget in `default` with these owner references.
fn widget(name: &str, owners: &[String]) -> String {
    format!("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: default\n  ownerReferences: [{}]\nspec: {{}}\n", owners.join(", "))
}

fn owned_by_widget(name: &str, uid: &str) -> String {
    format!("{{apiVersion: example.com/v1, kind: Widget, name: {name}, uid: \"{uid}\", blockOwnerDeletion: true}}")
}

#[test]
fn custom_resources_own_and_are_owned() {
    let (_server, admin) = tenant_server();
    install_widgets(&admin);
    apply(&admin, &widget("parent", &[]));
    let parent = uid(&admin, &["widget", "parent"]);
    apply(&admin, &object("ConfigMap", "of-widget", &[owned_by_widget("parent", &parent)], ""));
    admin.ok(&["create", "cm", "holder"]);
    let holder = uid(&admin, &["cm", "holder"]);
    apply(&admin, &widget("of-configmap", &[owned_by("holder", &holder, true)]));
    std::thread::sleep(Duration::from_millis(500));
    assert!(exists(&admin, &["cm", "of-widget"]) && exists(&admin, &["widget", "of-configmap"]));

    admin.ok(&["delete", "widget", "parent"]);
    assert!(gone(&admin, &["cm", "of-widget"]), "a custom resource's ConfigMap was not collected");
    admin.ok(&["delete", "cm", "holder", "--cascade=foreground"]);
    assert!(!exists(&admin, &["widget", "of-configmap"]), "foreground returned before the Widget dependent was gone");
    assert!(!exists(&admin, &["cm", "holder"]));
}

#[test]
fn another_tenant_naming_the_same_owner_uid_is_untouched() {
    let (server, a) = tenant_server();
    create_tenant(&server.kubectl(), "t-b");
    let b = Kubectl::new(&certificate_kubeconfig(&server, "t-b", "admin", &[]));
    install_widgets(&a);
    apply(&a, &widget("w", &[]));
    let w = uid(&a, &["widget", "w"]);
    apply(&a, &object("ConfigMap", "a-child", &[owned_by_widget("w", &w)], ""));
    // t-b does not serve widgets: its collector waits on this reference and never looks into t-a.
    apply(&b, &object("ConfigMap", "b-child", &[owned_by_widget("w", &w)], ""));
    let before = get(&b, &["cm", "b-child"]);

    a.ok(&["delete", "widget", "w", "--cascade=orphan"]);
    assert_eq!(owner_uids(&a, &["cm", "a-child"]), Vec::<String>::new(), "t-a's dependent is orphaned");
    std::thread::sleep(Duration::from_secs(1));
    let after = get(&b, &["cm", "b-child"]);
    assert_eq!(after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"], "t-b's object was written: {after}");
    assert_eq!(owner_uids(&b, &["cm", "b-child"]), [w]);

    // The same with a Background cascade in t-a.
    apply(&a, &widget("w2", &[]));
    let w2 = uid(&a, &["widget", "w2"]);
    apply(&a, &object("ConfigMap", "a-child2", &[owned_by_widget("w2", &w2)], ""));
    apply(&b, &object("ConfigMap", "b-child2", &[owned_by_widget("w2", &w2)], ""));
    a.ok(&["delete", "widget", "w2"]);
    assert!(gone(&a, &["cm", "a-child2"]));
    std::thread::sleep(Duration::from_secs(1));
    assert!(exists(&b, &["cm", "b-child2"]) && exists(&b, &["cm", "b-child"]));
}

#[test]
fn after_a_restart_a_background_cascade_still_collects_older_dependents() {
    let (server, admin) = tenant_server();
    admin.ok(&["create", "cm", "owner"]);
    let owner = uid(&admin, &["cm", "owner"]);
    for n in 0..5 {
        apply(&admin, &object("ConfigMap", &format!("dep-{n}"), &[owned_by("owner", &owner, false)], ""));
    }
    apply(&admin, &object("Secret", "dep-secret", &[owned_by("owner", &owner, true)], ""));

    let restarted = Server::start_in(server.stop(), &[]);
    let admin = Kubectl::new(&certificate_kubeconfig(&restarted, "t-a", "admin", &[]));
    admin.ok(&["delete", "cm", "owner"]);
    for n in 0..5 {
        assert!(gone(&admin, &["cm", &format!("dep-{n}")]), "dep-{n} survived the cascade after a restart");
    }
    assert!(gone(&admin, &["secret", "dep-secret"]));
}

/// `kubectl delete --raw <path>` with an optional DeleteOptions body: (success, stdout + stderr).
fn delete_raw(kubectl: &Kubectl, path: &str, body: Option<&str>) -> (bool, String) {
    let output = match body {
        Some(body) => kubectl.run_with_stdin(&["delete", "--raw", path, "-f", "-"], body),
        None => kubectl.run(&["delete", "--raw", path]),
    };
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.success(), text)
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[test]
fn delete_options_preconditions_and_bad_values() {
    let (_server, admin) = tenant_server();
    admin.ok(&["create", "cm", "target"]);
    let target = get(&admin, &["cm", "target"]);
    let rv = target["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_owned();
    let uid = target["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
    let path = format!("{CMS}/target");

    let (ok, out) = delete_raw(&admin, &path, Some(r#"{"preconditions": {"uid": "not-it"}}"#));
    assert!(!ok && out.contains(&format!("Error from server (Conflict): Operation cannot be fulfilled on ConfigMap \"target\": \
        the UID in the precondition (not-it) does not match the UID in record ({uid}). The object might have been deleted and then recreated")), "{out}");
    let (ok, out) = delete_raw(&admin, &path, Some(r#"{"preconditions": {"resourceVersion": "1"}}"#));
    assert!(!ok && out.contains(&format!("Error from server (Conflict): Operation cannot be fulfilled on ConfigMap \"target\": \
        the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({rv}). The object might have been modified")), "{out}");
    let (ok, out) = delete_raw(&admin, &format!("{path}?propagationPolicy=Sideways"), None);
    assert!(!ok && out.contains("The DeleteOptions \"\" is invalid: propagationPolicy: Unsupported value: \"Sideways\": \
        supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""), "{out}");
    let (ok, out) = delete_raw(&admin, &path, Some(r#"{"orphanDependents": true, "propagationPolicy": "Orphan"}"#));
    assert!(!ok && out.contains("orphanDependents and deletionPropagation cannot be both set"), "{out}");
    let (ok, out) = delete_raw(&admin, &format!("{path}?gracePeriodSeconds=soon"), None);
    assert!(!ok && out.contains("Error from server (BadRequest)"), "{out}");

    // A dry run of a foreground delete changes nothing.
    let (ok, out) = delete_raw(&admin, &path, Some(r#"{"propagationPolicy": "Foreground", "dryRun": ["All"]}"#));
    assert!(ok, "{out}");
    assert!(get(&admin, &["cm", "target"])["metadata"].get("deletionTimestamp").is_none());
    // With matching preconditions it goes, and the answer is kube's Status naming what went.
    let body = format!(r#"{{"preconditions": {{"uid": "{uid}", "resourceVersion": "{rv}"}}}}"#);
    let (ok, out) = delete_raw(&admin, &path, Some(&body));
    assert!(ok, "{out}");
    assert!(!exists(&admin, &["cm", "target"]));
    let status: Value = serde_json::from_str(&out).unwrap_or_else(|err| panic!("{err}: {out}"));
    assert_eq!(status, serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
        "details": {"name": "target", "kind": "configmaps", "uid": uid}}));
}

/// As kube-apiserver: a delete that removes the object at once answers a `Success` Status, except for the kinds
/// whose registries return the deleted object (pods, services, ...); a delete that leaves the object waiting on
/// finalizers answers the object, with its deletion timestamp.
#[test]
fn a_delete_answers_a_status_or_the_object_as_kube_does() {
    let (_server, admin) = tenant_server();
    admin.ok(&["create", "deployment", "web", "--image=nginx"]);
    let (ok, out) = delete_raw(&admin, "/apis/apps/v1/namespaces/default/deployments/web", None);
    let status: Value = serde_json::from_str(&out).unwrap_or_else(|err| panic!("{ok} {err}: {out}"));
    assert_eq!((status["kind"].as_str(), status["status"].as_str()), (Some("Status"), Some("Success")), "{status}");
    assert_eq!((status["details"]["group"].as_str(), status["details"]["kind"].as_str()), (Some("apps"), Some("deployments")), "{status}");

    apply(&admin, UNBOUND_POD);
    let (_, out) = delete_raw(&admin, "/api/v1/namespaces/default/pods/unbound", None);
    let pod: Value = serde_json::from_str(&out).unwrap_or_else(|err| panic!("{err}: {out}"));
    assert_eq!((pod["kind"].as_str(), pod["metadata"]["name"].as_str()), (Some("Pod"), Some("unbound")), "{pod}");

    apply(&admin, &object("ConfigMap", "held", &[], "example.com/hold"));
    let (_, out) = delete_raw(&admin, &format!("{CMS}/held"), None);
    let held: Value = serde_json::from_str(&out).unwrap_or_else(|err| panic!("{err}: {out}"));
    assert!(held["kind"] == "ConfigMap" && held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    admin.ok(&["patch", "cm", "held", "--type", "merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    assert!(gone(&admin, &["cm", "held"]));
}

#[test]
fn deletecollection_honours_selectors_and_the_propagation_policy() {
    let (_server, admin) = tenant_server();
    for name in ["sel-1", "sel-2", "unlabelled"] {
        admin.ok(&["create", "cm", name]);
    }
    admin.ok(&["label", "cm", "sel-1", "sel-2", "sweep=yes"]);
    let owner = uid(&admin, &["cm", "sel-1"]);
    apply(&admin, &object("Secret", "kept", &[owned_by("sel-1", &owner, true)], ""));

    let (ok, out) = delete_raw(&admin, &format!("{CMS}?labelSelector=sweep%3Dyes&propagationPolicy=Orphan"), None);
    assert!(ok, "{out}");
    assert!(gone(&admin, &["cm", "sel-1"]) && gone(&admin, &["cm", "sel-2"]));
    assert!(exists(&admin, &["cm", "unlabelled"]));
    let orphaned = eventually(TIMEOUT, || owner_uids(&admin, &["secret", "kept"]).is_empty());
    assert!(orphaned, "the orphan policy was not applied to the collection");
    std::thread::sleep(Duration::from_millis(500));
    assert!(exists(&admin, &["secret", "kept"]));
}

const BOUND_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: bound, namespace: default}\n\
    spec: {nodeName: node-1, terminationGracePeriodSeconds: 30, containers: [{name: c, image: busybox}]}\n";
const UNBOUND_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: unbound, namespace: default}\n\
    spec: {containers: [{name: c, image: busybox}]}\n";

#[test]
fn only_pods_bound_to_a_node_are_deleted_gracefully() {
    let (_server, admin) = tenant_server();
    apply(&admin, BOUND_POD);
    apply(&admin, UNBOUND_POD);
    let pods = "/api/v1/namespaces/default/pods";
    let (ok, out) = delete_raw(&admin, &format!("{pods}/unbound?gracePeriodSeconds=30"), None);
    assert!(ok && !exists(&admin, &["pod", "unbound"]), "an unbound pod goes at once: {out}");

    // With no kubelet to finish it, a bound pod stays Terminating with its grace period.
    let (ok, out) = delete_raw(&admin, &format!("{pods}/bound"), Some(r#"{"gracePeriodSeconds": 20}"#));
    assert!(ok, "{out}");
    let pod = get(&admin, &["pod", "bound"]);
    assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 20, "{pod}");
    assert!(pod["metadata"]["deletionTimestamp"].is_string(), "{pod}");
    // A longer grace period changes nothing; a shorter one is taken; 0 deletes it (kubectl delete --force).
    delete_raw(&admin, &format!("{pods}/bound?gracePeriodSeconds=60"), None);
    assert_eq!(get(&admin, &["pod", "bound"])["metadata"]["deletionGracePeriodSeconds"], 20);
    delete_raw(&admin, &format!("{pods}/bound?gracePeriodSeconds=10"), None);
    assert_eq!(get(&admin, &["pod", "bound"])["metadata"]["deletionGracePeriodSeconds"], 10);
    let forced = admin.run(&["delete", "pod", "bound", "--grace-period=0", "--force"]);
    assert!(forced.status.success(), "{}", String::from_utf8_lossy(&forced.stderr));
    assert!(!exists(&admin, &["pod", "bound"]));
}
