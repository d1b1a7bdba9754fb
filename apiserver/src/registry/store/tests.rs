//! The generic store on the memory backend, with no kind's rules (`Strategies::default()`): metadata the server
//! sets and keeps, conflicts, subresources, deletion with finalizers, dry runs, and admission judging the object
//! a write actually replaces.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use expect_test::expect;
use kspaces_storage::{Revision, SpaceName, Store, StoreConfig};
use serde_json::{json, Value};

use crate::registry::admission::{Admission, AdmissionChain, Attributes, Operation};
use crate::registry::builtin::builtin_resources;
use crate::registry::observe::WriteObserver;
use crate::registry::strategy::Strategies;
use crate::registry::testing::{check, Harness, Step};
use crate::registry::{DeleteOptions, DeleteOutcome, GenericStore, Part, ResourceInfo, ResourceTable, Scope, SpaceTenants, Wiring, WriteContext};
use crate::status::{ApiError, ApiResult};

/// Every space is its own tenant.
struct Flat;

impl SpaceTenants for Flat {
    fn tenant_of(&self, space: &SpaceName) -> String {
        space.as_str().to_owned()
    }
}

/// Refuses any write of an object labelled `refuse`, saying which revision of the object it replaces.
struct RefuseLabelled;

#[async_trait]
impl Admission for RefuseLabelled {
    fn handles(&self, _resource: &ResourceInfo, operation: Operation) -> bool {
        operation != Operation::Delete
    }

    async fn admit(&self, _registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        let refused = attributes.object.and_then(|o| o.pointer("/metadata/labels/refuse")).is_some();
        let old = attributes.old.and_then(|o| o.pointer("/metadata/resourceVersion")).and_then(Value::as_str).unwrap_or("none");
        match refused {
            true => Err(ApiError::forbidden(format!("refused {:?} replacing revision {old}", attributes.operation))),
            false => Ok(()),
        }
    }
}

/// Remembers every write it is told of.
#[derive(Default)]
struct Log(Mutex<Vec<String>>);

impl WriteObserver for Log {
    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        let what = if object.is_some() { "written" } else { "gone" };
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(format!("{revision} {what} {} {space}/{name}", resource.plural));
    }
}

fn harness(log: Arc<Log>) -> Harness {
    let table = ResourceTable::new(builtin_resources());
    let registry = GenericStore::new(Store::memory(StoreConfig::default()), Wiring {
        strategies: Strategies::default(),
        admission: AdmissionChain::new(vec![Arc::new(RefuseLabelled)]),
        observers: vec![log],
        tenants: Arc::new(Flat),
        limits: Arc::new(crate::registry::limits::Unlimited),
    });
    Harness { registry, lookup: Box::new(move |_, group, version, plural| table.lookup(group, version, plural).cloned()) }
}

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

#[tokio::test]
async fn writes_keep_what_the_server_owns() {
    let rows = vec![
        ("a create fills in the metadata the server owns", Step::create("v1/configmaps", "t1/default", config_map("a"))),
        ("the same name again", Step::create("v1/configmaps", "t1/default", config_map("a"))),
        ("a resourceVersion on a create", Step::create("v1/configmaps", "t1/default", json!({"metadata": {"name": "b", "resourceVersion": "3"}}))),
        ("a namespace other than the URL's", Step::create("v1/configmaps", "t1/default", json!({"metadata": {"name": "b", "namespace": "other"}}))),
        ("a tenant other than the space's", Step::create("v1/configmaps", "t1/default", json!({"metadata": {"name": "b", "tenant": "t2"}}))),
        ("no name and no generateName", Step::create("v1/configmaps", "t1/default", json!({"metadata": {}}))),
        ("another kind in the body", Step::create("v1/configmaps", "t1/default", json!({"kind": "Secret", "metadata": {"name": "b"}}))),
        ("an update with an old resourceVersion", Step::update("v1/configmaps", "t1/default", "a", json!({"metadata": {"name": "a", "resourceVersion": "0"}}))),
        ("an update keeps uid, name, namespace and tenant", Step::update("v1/configmaps", "t1/default", "a",
            json!({"metadata": {"name": "a", "uid": "mine", "tenant": "t1", "labels": {"x": "y"}}, "data": {"k": "w"}}))),
        ("an update that changes nothing keeps the revision", Step::update("v1/configmaps", "t1/default", "a",
            json!({"metadata": {"name": "a", "labels": {"x": "y"}}, "data": {"k": "w"}}))),
        ("a dry-run create stores nothing", Step::create("v1/configmaps", "t1/default", config_map("dry")).dry_run()),
        ("so it is not there", Step::get("v1/configmaps", "t1/default", "dry")),
        ("the same name in another space is another object", Step::create("v1/configmaps", "t2/default", config_map("a"))),
    ];
    check(&harness(Arc::default()), rows, expect![[r#"
        a create fills in the metadata the server owns
          ok {"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","managedFields":["test Update"],"name":"a","namespace":"default","resourceVersion":"1","tenant":"t1","uid":"*"}}
        the same name again
          409 AlreadyExists: configmaps "a" already exists
        a resourceVersion on a create
          400 BadRequest: resourceVersion should not be set on objects to be created
        a namespace other than the URL's
          400 BadRequest: the namespace of the provided object does not match the namespace sent on the request
        a tenant other than the space's
          400 BadRequest: the tenant of the provided object (t2) does not match the tenant sent on the request (t1)
        no name and no generateName
          422 Invalid: ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required
        another kind in the body
          400 BadRequest: the API version in the data (v1) does not match the expected API version (v1) or kind Secret is not ConfigMap
        an update with an old resourceVersion
          409 Conflict: Operation cannot be fulfilled on configmaps "a": the object has been modified; please apply your changes to the latest version and try again
        an update keeps uid, name, namespace and tenant
          ok {"apiVersion":"v1","data":{"k":"w"},"kind":"ConfigMap","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","labels":{"x":"y"},"managedFields":["test Update"],"name":"a","namespace":"default","resourceVersion":"2","tenant":"t1","uid":"*"}}
        an update that changes nothing keeps the revision
          ok {"apiVersion":"v1","data":{"k":"w"},"kind":"ConfigMap","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","labels":{"x":"y"},"managedFields":["test Update"],"name":"a","namespace":"default","resourceVersion":"2","tenant":"t1","uid":"*"}}
        a dry-run create stores nothing
          ok {"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","managedFields":["test Update"],"name":"dry","namespace":"default","tenant":"t1","uid":"*"}}
        so it is not there
          404 NotFound: configmaps "dry" not found
        the same name in another space is another object
          ok {"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"annotations":{"kcp.io/cluster":"t2"},"creationTimestamp":"*","managedFields":["test Update"],"name":"a","namespace":"default","resourceVersion":"3","tenant":"t2","uid":"*"}}
    "#]]).await;
}

#[tokio::test]
async fn generation_status_and_finalizers() {
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1}, "status": {"replicas": 9}});
    let rows = vec![
        ("a resource with /status starts with an empty status", Step::create("apps/v1/deployments", "t1/default", deployment)),
        ("the main resource cannot write status; a spec change moves the generation", Step::patch("apps/v1/deployments", "t1/default", "web",
            json!({"spec": {"replicas": 2}, "status": {"replicas": 5}}))),
        ("a label change does not", Step::patch("apps/v1/deployments", "t1/default", "web", json!({"metadata": {"labels": {"a": "b"}}}))),
        ("/status writes only status", Step::patch("apps/v1/deployments", "t1/default", "web", json!({"spec": {"replicas": 7}, "status": {"replicas": 2}}))
            .on(Part::Status)),
        ("an object with finalizers", Step::create("v1/configmaps", "t1/default", json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}))),
        ("is marked, not removed", Step::delete("v1/configmaps", "t1/default", "held")),
        ("no new finalizer once it is being deleted", Step::patch("v1/configmaps", "t1/default", "held",
            json!({"metadata": {"finalizers": ["example.com/hold", "example.com/other"]}}))),
        ("lifting the last finalizer removes it", Step::patch("v1/configmaps", "t1/default", "held", json!({"metadata": {"finalizers": null}}))),
        ("gone", Step::get("v1/configmaps", "t1/default", "held")),
        ("a namespace with content finalizers", Step::create("v1/namespaces", "t1", json!({"metadata": {"name": "dev"}, "spec": {"finalizers": ["kubernetes"]}}))),
        ("is Terminating until they are lifted", Step::delete("v1/namespaces", "t1", "dev")),
        ("a second delete is kube's 409", Step::delete("v1/namespaces", "t1", "dev")),
        ("lifting them through /finalize removes the namespace", Step::update("v1/namespaces", "t1", "dev", json!({"metadata": {"name": "dev"}, "spec": {"finalizers": []}}))
            .on(Part::Finalize)),
        ("gone", Step::get("v1/namespaces", "t1", "dev")),
    ];
    check(&harness(Arc::default()), rows, expect![[r#"
        a resource with /status starts with an empty status
          ok {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","generation":1,"managedFields":["test Update"],"name":"web","namespace":"default","resourceVersion":"1","tenant":"t1","uid":"*"},"spec":{"replicas":1},"status":{}}
        the main resource cannot write status; a spec change moves the generation
          ok {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","generation":2,"managedFields":["test Update"],"name":"web","namespace":"default","resourceVersion":"2","tenant":"t1","uid":"*"},"spec":{"replicas":2},"status":{}}
        a label change does not
          ok {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","generation":2,"labels":{"a":"b"},"managedFields":["test Update"],"name":"web","namespace":"default","resourceVersion":"3","tenant":"t1","uid":"*"},"spec":{"replicas":2},"status":{}}
        /status writes only status
          ok {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","generation":2,"labels":{"a":"b"},"managedFields":["test Update","test Update status"],"name":"web","namespace":"default","resourceVersion":"4","tenant":"t1","uid":"*"},"spec":{"replicas":2},"status":{"replicas":2}}
        an object with finalizers
          ok {"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","finalizers":["example.com/hold"],"managedFields":["test Update"],"name":"held","namespace":"default","resourceVersion":"5","tenant":"t1","uid":"*"}}
        is marked, not removed
          ok {"pending":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","deletionGracePeriodSeconds":0,"deletionTimestamp":"*","finalizers":["example.com/hold"],"managedFields":["test Update"],"name":"held","namespace":"default","resourceVersion":"6","tenant":"t1","uid":"*"}}}
        no new finalizer once it is being deleted
          403 Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers "example.com/other"
        lifting the last finalizer removes it
          ok {"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","deletionGracePeriodSeconds":0,"deletionTimestamp":"*","name":"held","namespace":"default","resourceVersion":"7","tenant":"t1","uid":"*"}}
        gone
          404 NotFound: configmaps "held" not found
        a namespace with content finalizers
          ok {"apiVersion":"v1","kind":"Namespace","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","generation":1,"managedFields":["test Update"],"name":"dev","resourceVersion":"8","tenant":"t1","uid":"*"},"spec":{"finalizers":["kubernetes"]},"status":{}}
        is Terminating until they are lifted
          ok {"pending":{"apiVersion":"v1","kind":"Namespace","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","deletionGracePeriodSeconds":0,"deletionTimestamp":"*","generation":2,"managedFields":["test Update"],"name":"dev","resourceVersion":"9","tenant":"t1","uid":"*"},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Terminating"}}}
        a second delete is kube's 409
          409 Conflict: Operation cannot be fulfilled on namespaces "dev": The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.
        lifting them through /finalize removes the namespace
          ok {"apiVersion":"v1","kind":"Namespace","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","deletionGracePeriodSeconds":0,"deletionTimestamp":"*","generation":2,"managedFields":["test Update finalize"],"name":"dev","resourceVersion":"10","tenant":"t1","uid":"*"},"spec":{"finalizers":[]},"status":{"phase":"Terminating"}}
        gone
          404 NotFound: namespaces "dev" not found
    "#]]).await;
}

#[tokio::test]
async fn admission_judges_the_object_actually_replaced() {
    let rows = vec![
        ("created", Step::create("v1/configmaps", "t1/default", config_map("a"))),
        ("changed by someone else", Step::patch("v1/configmaps", "t1/default", "a", json!({"data": {"k": "w"}}))),
        ("a PUT without a resourceVersion is judged against the revision it replaces", Step::update("v1/configmaps", "t1/default", "a",
            json!({"metadata": {"name": "a", "labels": {"refuse": "yes"}}}))),
        ("a patch too", Step::patch("v1/configmaps", "t1/default", "a", json!({"metadata": {"labels": {"refuse": "yes"}}}))),
        ("a create has nothing to replace", Step::create("v1/configmaps", "t1/default", json!({"metadata": {"name": "b", "labels": {"refuse": "yes"}}}))),
        ("nothing was written", Step::get("v1/configmaps", "t1/default", "a")),
    ];
    check(&harness(Arc::default()), rows, expect![[r#"
        created
          ok {"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","managedFields":["test Update"],"name":"a","namespace":"default","resourceVersion":"1","tenant":"t1","uid":"*"}}
        changed by someone else
          ok {"apiVersion":"v1","data":{"k":"w"},"kind":"ConfigMap","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","managedFields":["test Update"],"name":"a","namespace":"default","resourceVersion":"2","tenant":"t1","uid":"*"}}
        a PUT without a resourceVersion is judged against the revision it replaces
          403 Forbidden: refused Update replacing revision 2
        a patch too
          403 Forbidden: refused Update replacing revision 2
        a create has nothing to replace
          403 Forbidden: refused Create replacing revision none
        nothing was written
          ok {"apiVersion":"v1","data":{"k":"w"},"kind":"ConfigMap","metadata":{"annotations":{"kcp.io/cluster":"t1"},"creationTimestamp":"*","managedFields":["test Update"],"name":"a","namespace":"default","resourceVersion":"2","tenant":"t1","uid":"*"}}
    "#]]).await;
}

#[tokio::test]
async fn observers_hear_of_durable_writes_only() {
    let log = Arc::new(Log::default());
    let harness = harness(log.clone());
    for step in [
        Step::create("v1/configmaps", "t1/default", config_map("a")),
        Step::create("v1/configmaps", "t1/default", config_map("dry")).dry_run(),
        Step::update("v1/configmaps", "t1/default", "a", config_map("a")),
        Step::patch("v1/configmaps", "t1/default", "a", json!({"data": {"k": "x"}})),
        Step::delete("v1/configmaps", "t1/default", "a"),
    ] {
        harness.run(&step).await;
    }
    let heard = log.0.lock().unwrap_or_else(|e| e.into_inner()).join("\n");
    expect![[r#"
        1 written configmaps t1/a
        2 written configmaps t1/a
        3 gone configmaps t1/a"#]].assert_eq(&heard);
}

#[test]
fn a_status_write_takes_the_status_and_nothing_else() {
    let table = ResourceTable::new(builtin_resources());
    let namespaces = table.by_kind("", "Namespace").cloned().expect("namespaces");
    let old = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
    let status = |object: &Value, status: Value| {
        let mut object = object.clone();
        object["status"] = status;
        object
    };
    // The rest as it was (a read-modify-write): the new object as sent.
    let terminating = status(&old, json!({"phase": "Terminating"}));
    assert_eq!(super::take_part(&namespaces, &old, terminating.clone(), Part::Status), terminating);
    // The rest changed too: only the status is taken.
    let mut relabelled = status(&old, json!({"phase": "Terminating"}));
    relabelled["metadata"]["labels"]["x"] = json!("2");
    assert_eq!(super::take_part(&namespaces, &old, relabelled, Part::Status), terminating);
    // A null or missing status removes it, either way.
    let mut without = old.clone();
    without.as_object_mut().map(|o| o.remove("status"));
    assert_eq!(super::take_part(&namespaces, &old, status(&old, Value::Null), Part::Status), without);
    assert_eq!(super::take_part(&namespaces, &old, without.clone(), Part::Status), without);
    let mut relabelled_without = without.clone();
    relabelled_without["metadata"]["labels"]["x"] = json!("2");
    assert_eq!(super::take_part(&namespaces, &old, relabelled_without, Part::Status), without);
}

/// The server's own removals while a space is deleted: `purge` removes what nothing holds as it was read (a
/// namespace's `spec.finalizers` are the caller's to judge) and only marks what `metadata.finalizers` hold;
/// `delete_listed` of a record changed since is judged against the object as it is now; `lift_finalizer` removes
/// an object whose last finalizer it lifts, and only lifts one of several. Observers hear of every removal.
#[tokio::test]
async fn the_servers_own_removals_keep_what_holds_an_object() {
    let log = Arc::new(Log::default());
    let harness = harness(log.clone());
    let registry = &harness.registry;
    let table = ResourceTable::new(builtin_resources());
    let namespaces = table.by_kind("", "Namespace").cloned().unwrap_or_else(|| panic!("no Namespace row"));
    let config_maps = table.by_kind("", "ConfigMap").cloned().unwrap_or_else(|| panic!("no ConfigMap row"));
    let t1 = SpaceName::new("t1").unwrap_or_else(|err| panic!("{err}"));
    let space = Scope::one(t1.clone(), None);
    let in_default = Scope::one(t1.clone(), Some("default".to_owned()));
    for step in [
        Step::create("v1/namespaces", "t1", json!({"metadata": {"name": "empty"}, "spec": {"finalizers": ["kubernetes"]}})),
        Step::create("v1/namespaces", "t1", json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})),
        Step::create("v1/configmaps", "t1/default", config_map("listed")),
        Step::create("v1/configmaps", "t1/default", json!({"metadata": {"name": "one", "finalizers": ["example.com/a"]}})),
        Step::create("v1/configmaps", "t1/default", json!({"metadata": {"name": "two", "finalizers": ["example.com/a", "example.com/b"]}})),
    ] {
        harness.run(&step).await;
    }
    let gone = |ok: ApiResult<bool>| ok.unwrap_or_else(|err| panic!("{err:?}"));
    assert!(!gone(registry.purge(&namespaces, &space).await), "a namespace its finalizers hold is left");
    assert!(!gone(registry.purge(&namespaces, &space).await), "and stays, marked");
    let held = registry.reader().get(&namespaces, &space, "held").await.unwrap_or_else(|err| panic!("{err:?}"));
    assert!(held.pointer("/metadata/deletionTimestamp").is_some(), "marked: {held}");
    assert_eq!(registry.reader().get(&namespaces, &space, "empty").await.map_err(|e| e.code).err(), Some(404));

    let record = registry.reader().record(&config_maps, &in_default, "listed").await.unwrap_or_else(|err| panic!("{err:?}"));
    harness.run(&Step::patch("v1/configmaps", "t1/default", "listed", json!({"metadata": {"finalizers": ["example.com/late"]}}))).await;
    let outcome = registry.delete_listed(&config_maps, &in_default, record, &DeleteOptions::default()).await;
    assert!(matches!(outcome, Ok(DeleteOutcome::Pending(_))), "the finalizer added since the list holds it");

    harness.run(&Step::delete("v1/configmaps", "t1/default", "one")).await;
    harness.run(&Step::delete("v1/configmaps", "t1/default", "two")).await;
    let write = WriteContext::server("test", "");
    for name in ["one", "two"] {
        registry.lift_finalizer(&config_maps, &in_default, name, &write, "example.com/a").await.unwrap_or_else(|err| panic!("{err:?}"));
    }
    assert_eq!(registry.reader().get(&config_maps, &in_default, "one").await.map_err(|e| e.code).err(), Some(404));
    let two = registry.reader().get(&config_maps, &in_default, "two").await.unwrap_or_else(|err| panic!("{err:?}"));
    assert_eq!(two.pointer("/metadata/finalizers"), Some(&json!(["example.com/b"])));

    let heard = log.0.lock().unwrap_or_else(|e| e.into_inner()).iter().filter(|l| l.contains("gone")).cloned().collect::<Vec<_>>().join("\n");
    expect![[r#"
        7 gone namespaces t1/empty
        12 gone configmaps t1/one"#]].assert_eq(&heard);
}

/// An object whose stored bytes cannot be decoded (nested past what serde_json reads, or not JSON): a delete
/// answers 500 until it asks to ignore store read errors, which removes the key outright and says so to observers.
#[tokio::test]
async fn an_unreadable_object_is_deleted_only_when_read_errors_are_ignored() {
    let log = Arc::new(Log::default());
    let harness = harness(log.clone());
    let registry = &harness.registry;
    let table = ResourceTable::new(builtin_resources());
    let config_maps = table.by_kind("", "ConfigMap").cloned().unwrap_or_else(|| panic!("no ConfigMap row"));
    let in_default = Scope::one(SpaceName::new("t1").unwrap_or_else(|err| panic!("{err}")), Some("default".to_owned()));
    let too_deep = format!("{{\"metadata\":{{\"name\":\"deep\"}},\"data\":{}{}}}", "[".repeat(200), "]".repeat(200));
    for (name, bytes) in [("deep", too_deep.into_bytes()), ("garbage", b"{\"metadata\":{\"name\":\"garbage\"},".to_vec())] {
        harness.run(&Step::create("v1/configmaps", "t1/default", config_map(name))).await;
        let record = registry.reader().record(&config_maps, &in_default, name).await.unwrap_or_else(|err| panic!("{err:?}"));
        let written = registry.store().update(&record.key, bytes.into(), Some(record.revision)).await;
        assert!(matches!(written, Ok(Ok(_))), "{written:?}");
        let plain = registry.delete(&config_maps, &in_default, name, &DeleteOptions::default(), None).await;
        assert_eq!(plain.map_err(|e| e.code).err(), Some(500), "{name}: a plain delete cannot read it");
        let ignoring = DeleteOptions { ignore_store_read_error: true, ..DeleteOptions::default() };
        match registry.delete(&config_maps, &in_default, name, &ignoring, None).await {
            Ok(DeleteOutcome::Deleted(object)) => assert_eq!(object["metadata"]["name"], name),
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(registry.reader().record(&config_maps, &in_default, name).await.map_err(|e| e.code).err(), Some(404));
        let gone = registry.delete(&config_maps, &in_default, name, &ignoring, None).await;
        assert_eq!(gone.map_err(|e| e.code).err(), Some(404));
    }
    // A readable object goes through the ordinary delete (its finalizers hold it).
    harness.run(&Step::create("v1/configmaps", "t1/default", json!({"metadata": {"name": "held", "finalizers": ["example.com/a"]}}))).await;
    let ignoring = DeleteOptions { ignore_store_read_error: true, ..DeleteOptions::default() };
    let held = registry.delete(&config_maps, &in_default, "held", &ignoring, None).await;
    assert!(matches!(held, Ok(DeleteOutcome::Pending(_))), "{held:?}");
    let heard = log.0.lock().unwrap_or_else(|e| e.into_inner()).iter().filter(|l| l.contains("gone")).count();
    assert_eq!(heard, 2, "observers hear of both removals");
}
