//! Each kind's rules, in process, on the memory backend: the registry wired as the server wires it
//! (`server::Core`), with the system tenant and tenant `t1` made as at startup, driven through
//! `registry::testing::check`.

use std::sync::Arc;

use expect_test::expect;
use kspaces_storage::{SpaceName, Store, StoreConfig};
use serde_json::json;

use crate::config::AuthorizationMode;
use crate::registry::testing::{check, Harness, Step};
use crate::registry::{Part, Spaces};
use crate::server::Core;

/// A server's registry on a fresh memory store, with tenants `system` and `t1`.
async fn world() -> Harness {
    let core = Core::new(Store::memory(StoreConfig::default()), vec![AuthorizationMode::Rbac]);
    core.prime().await.unwrap_or_else(|e| panic!("{e}"));
    let harness = Harness { registry: core.registry.clone(), lookup: lookup(core.resolver.clone()) };
    for tenant in ["system", "t1"] {
        let made = harness.run(&Step::create("v1/tenants", "system", json!({"metadata": {"name": tenant}}))).await;
        assert!(made.starts_with("ok"), "{made}");
    }
    harness
}

fn lookup(resolver: Arc<crate::resolver::Resolver>) -> crate::registry::testing::Lookup {
    Box::new(move |space: &SpaceName, group: &str, version: &str, plural: &str| {
        resolver.lookup(&Spaces::One(space.clone()), group, version, plural)
    })
}

#[tokio::test]
async fn namespaces() {
    let rows = vec![
        ("a new namespace is labelled, Active and held by the kubernetes finalizer", Step::create("v1/namespaces", "t1", json!({"metadata": {"name": "dev"}}))
            .show(&["/metadata/labels", "/spec", "/status"])),
        ("the kubernetes finalizer joins the body's", Step::create("v1/namespaces", "t1", json!({"metadata": {"name": "ops"}, "spec": {"finalizers": ["example.com/x"]}}))
            .show(&["/spec"])),
        ("the main resource keeps the content finalizers", Step::patch("v1/namespaces", "t1", "dev", json!({"spec": {"finalizers": []}})).show(&["/spec"])),
        ("nothing is created in a namespace that does not exist", Step::create("v1/configmaps", "t1/nowhere", json!({"metadata": {"name": "a"}}))),
        ("a deleted namespace is Terminating", Step::delete("v1/namespaces", "t1", "dev").show(&["/pending/status"])),
        ("nothing new in a Terminating namespace", Step::create("v1/configmaps", "t1/dev", json!({"metadata": {"name": "a"}}))),
        ("a request cannot delete default", Step::delete("v1/namespaces", "t1", "default").by("admin", "t1", &[])),
        ("nor kube-system", Step::delete("v1/namespaces", "t1", "kube-system").by("admin", "t1", &[])),
        ("the server's tenant controller can", Step::delete("v1/namespaces", "t1", "kube-public").show(&["/pending/status"])),
    ];
    check(&world().await, rows, expect![[r#"
        a new namespace is labelled, Active and held by the kubernetes finalizer
          ok /metadata/labels={"kubernetes.io/metadata.name":"dev"} /spec={"finalizers":["kubernetes"]} /status={"phase":"Active"}
        the kubernetes finalizer joins the body's
          ok /spec={"finalizers":["example.com/x","kubernetes"]}
        the main resource keeps the content finalizers
          ok /spec={"finalizers":["kubernetes"]}
        nothing is created in a namespace that does not exist
          404 NotFound: namespaces "nowhere" not found
        a deleted namespace is Terminating
          ok /pending/status={"phase":"Terminating"}
        nothing new in a Terminating namespace
          403 Forbidden: configmaps "a" is forbidden: unable to create new content in namespace dev because it is being terminated
        a request cannot delete default
          403 Forbidden: namespaces "default" is forbidden: this namespace may not be deleted
        nor kube-system
          403 Forbidden: namespaces "kube-system" is forbidden: this namespace may not be deleted
        the server's tenant controller can
          ok /pending/status={"phase":"Terminating"}
    "#]]).await;
}

#[tokio::test]
async fn tenants_and_logical_clusters() {
    let rows = vec![
        ("a new tenant gets Arktos' defaults", Step::create("v1/tenants", "system", json!({"metadata": {"name": "t2"}, "spec": {"finalizers": ["mine"]}}))
            .show(&["/spec", "/status"])),
        ("and its space, made before the create is answered", Step::get("core.kcp.io/v1alpha1/logicalclusters", "t2", "cluster")
            .show(&["/metadata/annotations", "/spec", "/status"])),
        ("with its namespaces", Step::get("v1/namespaces", "t2", "kube-public").show(&["/status"])),
        ("\"all\" names every tenant", Step::create("v1/tenants", "system", json!({"metadata": {"name": "all"}}))),
        ("a storage cluster is 0-63", Step::create("v1/tenants", "system", json!({"metadata": {"name": "t3"}, "spec": {"storageClusterId": "64"}}))),
        ("the main resource keeps storageClusterId and finalizers", Step::patch("v1/tenants", "system", "t2",
            json!({"metadata": {"labels": {"tier": "gold"}}, "spec": {"storageClusterId": "9", "finalizers": []}})).show(&["/metadata/labels", "/spec"])),
        ("the system tenant cannot be deleted", Step::delete("v1/tenants", "system", "system").by("admin", "system", &["system:masters"])),
        ("a deleted tenant is Terminating", Step::delete("v1/tenants", "system", "t2").show(&["/pending/status"])),
        ("its users cannot create in it", Step::create("v1/configmaps", "t2/default", json!({"metadata": {"name": "a"}})).by("admin", "t2", &[])),
        ("a space's admins may choose its CRD policy", Step::patch("core.kcp.io/v1alpha1/logicalclusters", "t1", "cluster",
            json!({"spec": {"crdPolicy": "SystemCRDFirst", "owner": "me"}, "status": {"phase": "Deleting"}})).show(&["/spec", "/status"])),
        ("only one of the three", Step::patch("core.kcp.io/v1alpha1/logicalclusters", "t1", "cluster", json!({"spec": {"crdPolicy": "Sometimes"}}))),
        ("a space has exactly one LogicalCluster", Step::create("core.kcp.io/v1alpha1/logicalclusters", "t1", json!({"metadata": {"name": "other"}}))),
    ];
    check(&world().await, rows, expect![[r#"
        a new tenant gets Arktos' defaults
          ok /spec={"finalizers":["arktos"],"storageClusterId":"0"} /status={"phase":"Active"}
        and its space, made before the create is answered
          ok /metadata/annotations={"internal.tenancy.kcp.io/type":"root:organization","kcp.io/cluster":"t2","kcp.io/path":"root:t2"} /spec={"crdPolicy":"LocalCRDFirst"} /status={"phase":"Ready"}
        with its namespaces
          ok /status={"phase":"Active"}
        "all" names every tenant
          422 Invalid: Tenant "all" is invalid: metadata.name: Invalid value: "all": "all" is reserved: it names every tenant in /api/v1/tenants/all/...
        a storage cluster is 0-63
          422 Invalid: Tenant "t3" is invalid: spec.storageClusterId: Invalid value: "64": must be integer 0-63
        the main resource keeps storageClusterId and finalizers
          ok /metadata/labels={"tier":"gold"} /spec={"finalizers":["arktos"],"storageClusterId":"0"}
        the system tenant cannot be deleted
          403 Forbidden: tenants "system" is forbidden: this tenant may not be deleted
        a deleted tenant is Terminating
          ok /pending/status={"phase":"Terminating"}
        its users cannot create in it
          403 Forbidden: configmaps is forbidden: unable to create new content in tenant t2 because it is being terminated
        a space's admins may choose its CRD policy
          ok /spec={"crdPolicy":"SystemCRDFirst"} /status={"phase":"Ready"}
        only one of the three
          422 Invalid: LogicalCluster.core.kcp.io "cluster" is invalid: spec.crdPolicy: Unsupported value: "Sometimes": supported values: "NeverUseSystemCRDUnlessForced", "SystemCRDFirst", "LocalCRDFirst"
        a space has exactly one LogicalCluster
          422 Invalid: LogicalCluster.core.kcp.io "other" is invalid: metadata.name: Invalid value: "other": must be "cluster": a space has exactly one LogicalCluster
    "#]]).await;
}

fn widgets_crd(labels: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com", "labels": labels},
        "spec": {
            "group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}, "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 0, "default": 1}}},
                        "status": {"type": "object", "properties": {"observedSize": {"type": "integer"}}},
                    },
                }}},
                {"name": "v1beta1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
            ],
        },
    })
}

#[tokio::test]
async fn crds_and_custom_resources() {
    let gadgets = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "gadgets", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}]},
    });
    let rows = vec![
        ("a new CRD: defaults, the cleanup finalizer, accepted names, Established", Step::create("apiextensions.k8s.io/v1/customresourcedefinitions", "t1", widgets_crd(json!({})))
            .show(&["/metadata/finalizers", "/spec/names", "/status"])),
        ("another CRD of the group with the same kind waits for its names", Step::create("apiextensions.k8s.io/v1/customresourcedefinitions", "t1", gadgets)
            .show(&["/status/acceptedNames", "/status/conditions"])),
        ("a custom resource is pruned and defaulted; status is the subresource's", Step::create("example.com/v1/widgets", "t1/default",
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"color": "red"}, "status": {"observedSize": 3}}))
            .show(&["/apiVersion", "/metadata/generation", "/spec", "/status"])),
        ("and validated against the schema", Step::create("example.com/v1/widgets", "t1/default",
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "bad"}, "spec": {"size": -1}}))),
        ("read in another served version", Step::get("example.com/v1beta1/widgets", "t1/default", "w").show(&["/apiVersion", "/spec"])),
        ("/status does not move the generation", Step::patch("example.com/v1/widgets", "t1/default", "w", json!({"status": {"observedSize": 1}}))
            .on(Part::Status).show(&["/metadata/generation", "/status"])),
        ("a spec change does", Step::patch("example.com/v1/widgets", "t1/default", "w", json!({"spec": {"size": 4}})).show(&["/metadata/generation", "/spec"])),
        ("a forced system CRD", Step::create("apiextensions.k8s.io/v1/customresourcedefinitions", "system",
            widgets_crd(json!({"arktos.futurewei.com/crd-sharing-policy": "forced"}))).show(&["/metadata/labels"])),
        ("blocks a tenant's CRD of that name", Step::patch("apiextensions.k8s.io/v1/customresourcedefinitions", "t1", "widgets.example.com",
            json!({"metadata": {"labels": {"a": "b"}}})).by("admin", "t1", &[])),
        ("but not the server's own writes", Step::patch("apiextensions.k8s.io/v1/customresourcedefinitions", "t1", "widgets.example.com",
            json!({"metadata": {"labels": {"a": "b"}}})).show(&["/metadata/labels"])),
        ("the system space's CRD is deleted", Step::delete("apiextensions.k8s.io/v1/customresourcedefinitions", "system", "widgets.example.com")
            .show(&["/pending/metadata/finalizers"])),
        ("no new objects of a terminating CRD", Step::create("example.com/v1/widgets", "system/default",
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "late"}}))),
    ];
    check(&world().await, rows, expect![[r#"
        a new CRD: defaults, the cleanup finalizer, accepted names, Established
          ok /metadata/finalizers=["customresourcecleanup.apiextensions.k8s.io"] /spec/names={"kind":"Widget","listKind":"WidgetList","plural":"widgets","shortNames":["wd"],"singular":"widget"} /status={"acceptedNames":{"kind":"Widget","listKind":"WidgetList","plural":"widgets","shortNames":["wd"],"singular":"widget"},"conditions":[{"lastTransitionTime":"*","message":"no conflicts found","reason":"NoConflicts","status":"True","type":"NamesAccepted"},{"lastTransitionTime":"*","message":"the initial names have been accepted","reason":"InitialNamesAccepted","status":"True","type":"Established"}],"storedVersions":["v1"]}
        another CRD of the group with the same kind waits for its names
          ok /status/acceptedNames={"kind":"","plural":"gadgets"} /status/conditions=[{"lastTransitionTime":"*","message":"\"WidgetList\" is already in use","reason":"ListKindConflict","status":"False","type":"NamesAccepted"},{"lastTransitionTime":"*","message":"not all names are accepted","reason":"NotAccepted","status":"False","type":"Established"}]
        a custom resource is pruned and defaulted; status is the subresource's
          ok /apiVersion="example.com/v1" /metadata/generation=1 /spec={"size":1} /status=null
        and validated against the schema
          422 Invalid: Widget.example.com "bad" is invalid: spec.size: Invalid value: -1: spec.size in body should be greater than or equal to 0
        read in another served version
          ok /apiVersion="example.com/v1beta1" /spec={"size":1}
        /status does not move the generation
          ok /metadata/generation=1 /status={"observedSize":1}
        a spec change does
          ok /metadata/generation=2 /spec={"size":4}
        a forced system CRD
          ok /metadata/labels={"arktos.futurewei.com/crd-sharing-policy":"forced"}
        blocks a tenant's CRD of that name
          403 Forbidden: customresourcedefinitions.apiextensions.k8s.io "widgets.example.com" is forbidden: the system CRD widgets.example.com is forced on this tenant (label arktos.futurewei.com/crd-sharing-policy: forced); a tenant cannot create, change or delete a CRD of that name
        but not the server's own writes
          ok /metadata/labels={"a":"b"}
        the system space's CRD is deleted
          ok /pending/metadata/finalizers=["customresourcecleanup.apiextensions.k8s.io"]
        no new objects of a terminating CRD
          405 MethodNotAllowed: create not allowed while custom resource definition is terminating
    "#]]).await;
}

#[tokio::test]
async fn workloads_pods_services_and_secrets() {
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let broken = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "Broken_Name"}, "spec": {"replicas": -1,
        "selector": {"matchLabels": {"app": "a"}},
        "template": {"metadata": {"labels": {"app": "b"}}, "spec": {"containers": [{"name": "c"}]}}}});
    let daemons = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"}, "spec": {
        "selector": {"matchLabels": {"app": "agent"}},
        "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}});
    let rows = vec![
        ("a Deployment gets kube's defaults", Step::create("apps/v1/deployments", "t1/default", deployment).show(&["/spec"])),
        ("every problem of a broken one, metadata first", Step::create("apps/v1/deployments", "t1/default", broken)),
        ("DaemonSets belong to the system space", Step::create("apps/v1/daemonsets", "t1/default", daemons.clone()).by("admin", "t1", &[])),
        ("even when the system's admin asks", Step::create("apps/v1/daemonsets", "t1/default", daemons.clone()).by("admin", "system", &["system:masters"])),
        ("the system space may have them", Step::create("apps/v1/daemonsets", "system/default", daemons).show(&["/metadata/name"])),
        // (No token volume: its name is random; `defaults::a_new_pod_gets_what_kubes_admission_adds` checks it.)
        ("a Pod's spec is defaulted", Step::create("v1/pods", "t1/default", json!({"metadata": {"name": "p"}, "spec": {"automountServiceAccountToken": false,
            "containers": [{"name": "c", "image": "nginx:1.27"}]}}))
            .show(&["/spec"])),
        ("and checked", Step::create("v1/pods", "t1/default", json!({"metadata": {"name": "q"}, "spec": {"containers": [{"name": "c", "image": "x"}, {"name": "c", "image": "y"}]}}))),
        ("a Service", Step::create("v1/services", "t1/default", json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})).show(&["/spec"])),
        ("a Secret", Step::create("v1/secrets", "t1/default", json!({"metadata": {"name": "s"}})).show(&["/type"])),
    ];
    check(&world().await, rows, expect![[r#"
        a Deployment gets kube's defaults
          ok /spec={"progressDeadlineSeconds":600,"replicas":1,"revisionHistoryLimit":10,"selector":{"matchLabels":{"app":"web"}},"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"},"type":"RollingUpdate"},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"image":"nginx","imagePullPolicy":"Always","name":"c","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}
        every problem of a broken one, metadata first
          422 Invalid: Deployment.apps "Broken_Name" is invalid: [metadata.name: Invalid value: "Broken_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), spec.replicas: Invalid value: -1: must be greater than or equal to 0, spec.template.metadata.labels: Invalid value: {"app":"b"}: `selector` does not match template `labels`, spec.template.spec.containers[0].image: Required value]
        DaemonSets belong to the system space
          403 Forbidden: daemonsets.apps is forbidden: only the system tenant may have DaemonSets (tenant t1)
        even when the system's admin asks
          403 Forbidden: daemonsets.apps is forbidden: only the system tenant may have DaemonSets (tenant t1)
        the system space may have them
          ok /metadata/name="agent"
        a Pod's spec is defaulted
          ok /spec={"automountServiceAccountToken":false,"containers":[{"image":"nginx:1.27","imagePullPolicy":"IfNotPresent","name":"c","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority","priority":0,"restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"serviceAccountName":"default","terminationGracePeriodSeconds":30,"tolerations":[{"effect":"NoExecute","key":"node.kubernetes.io/not-ready","operator":"Exists","tolerationSeconds":300},{"effect":"NoExecute","key":"node.kubernetes.io/unreachable","operator":"Exists","tolerationSeconds":300}]}
        and checked
          422 Invalid: Pod "q" is invalid: spec.containers[1].name: Duplicate value: "c"
        a Service
          ok /spec={"clusterIP":"10.0.0.2","clusterIPs":["10.0.0.2"],"internalTrafficPolicy":"Cluster","ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack","ports":[{"port":80,"protocol":"TCP","targetPort":80}],"sessionAffinity":"None","type":"ClusterIP"}
        a Secret
          ok /type="Opaque"
    "#]]).await;
}

#[tokio::test]
async fn rbac_escalation() {
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "reader"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "alice-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]});
    let rows = vec![
        ("a user cannot create a role with rules they do not hold", Step::create("rbac.authorization.k8s.io/v1/roles", "t1/default", role.clone()).by("alice", "t1", &[])),
        ("nor bind a role they do not hold", Step::create("rbac.authorization.k8s.io/v1/rolebindings", "t1/default", binding.clone()).by("alice", "t1", &[])),
        ("the tenant's admin holds everything", Step::create("rbac.authorization.k8s.io/v1/roles", "t1/default", role).by("admin", "t1", &[]).show(&["/rules"])),
        ("and may bind it", Step::create("rbac.authorization.k8s.io/v1/rolebindings", "t1/default", binding).by("admin", "t1", &[]).show(&["/roleRef"])),
        ("roleRef never changes", Step::patch("rbac.authorization.k8s.io/v1/rolebindings", "t1/default", "alice-admin",
            json!({"roleRef": {"name": "view"}})).by("admin", "t1", &[])),
    ];
    check(&world().await, rows, expect![[r#"
        a user cannot create a role with rules they do not hold
          403 Forbidden: roles.rbac.authorization.k8s.io "reader" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
        {APIGroups:[""], Resources:["secrets"], Verbs:["get"]}
        nor bind a role they do not hold
          403 Forbidden: rolebindings.rbac.authorization.k8s.io "alice-admin" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
        {APIGroups:["*"], Resources:["*"], Verbs:["*"]}
        {NonResourceURLs:["*"], Verbs:["*"]}
        the tenant's admin holds everything
          ok /rules=[{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}]
        and may bind it
          ok /roleRef={"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"}
        roleRef never changes
          422 Invalid: RoleBinding.rbac.authorization.k8s.io "alice-admin" is invalid: roleRef: Invalid value: "": cannot change roleRef
    "#]]).await;
}

/// When it is stale (after a change to the OpenAPI extension table, a kind's definition, a row of `crate::builtin`
/// or k8s-openapi), `cargo test -p kspaces-apiserver --lib builtin_types_snapshot` rewrites it and fails once.
#[test]
fn builtin_types_snapshot_is_up_to_date() {
    use crate::fieldmanager::{SchemaView, Types};
    use crate::registry::managed_fields::{builtin_types, BUILTIN_TYPES_SNAPSHOT};
    let compiled = Types::compile(&crate::openapi::fresh_definitions(&[], &super::definitions()));
    let snapshot = Types::from_snapshot(BUILTIN_TYPES_SNAPSHOT).unwrap_or_else(|e| panic!("the snapshot parses: {e}"));
    if snapshot != compiled {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/fieldmanager/schema/builtin_types.json");
        std::fs::write(path, compiled.snapshot()).unwrap_or_else(|e| panic!("the snapshot is writable: {e}"));
        panic!("builtin_types.json was stale: it has been rewritten, rebuild and commit it");
    }
    let tenant = builtin_types().view(super::tenant::DEFINITION);
    assert!(tenant.field("spec").1, "kspaces' own kinds are there too");
}
