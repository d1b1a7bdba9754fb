//! Table tests: each renders the Table the way kubectl would (`-o wide`, headers upper-cased,
//! null cells as `<none>`) and compares the text with an expected snapshot through `check`.
//! Empty cells render as `""` so a snapshot shows them; cells are compared after splitting
//! lines on runs of two or more spaces, so snapshots need only rough alignment.

mod fixtures;
mod garbage;
mod units;

use chrono::{DateTime, TimeZone, Utc};
use serde_json::{json, Value};

use super::{build_table, custom_columns, IncludeObject};
use crate::registry::resource::ResourceInfo;

/// The fixed "now" every test renders ages against.
fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 1, 1, 12, 0, 0).single().unwrap_or_default()
}

/// A resource row with just the identity the table builder looks at.
fn resource(group: &str, version: &str, kind: &str) -> ResourceInfo {
    ResourceInfo {
        group: group.to_string(),
        version: version.to_string(),
        kind: kind.to_string(),
        plural: format!("{}s", kind.to_lowercase()),
        singular: kind.to_lowercase(),
        short_names: Vec::new(),
        categories: Vec::new(),
        namespaced: true,
        subresources: Vec::new(),
        verbs: Vec::new(),
        definition: None,
        system_only: false,
            custom: None,
    }
}

/// Renders a Table as `kubectl get -o wide` prints it: columns padded to width, three spaces apart.
fn render(table: &Value) -> String {
    let headers: Vec<String> = table["columnDefinitions"]
        .as_array()
        .map(|columns| columns.iter().map(|c| c["name"].as_str().unwrap_or("?").to_uppercase()).collect())
        .unwrap_or_default();
    let mut lines = vec![headers];
    for row in table["rows"].as_array().into_iter().flatten() {
        let cells = row["cells"].as_array().into_iter().flatten().map(|cell| match cell {
            Value::Null => "<none>".to_string(),
            Value::String(text) if text.is_empty() => "\"\"".to_string(),
            Value::String(text) => text.clone(),
            other => other.to_string(),
        });
        lines.push(cells.collect());
    }
    let columns = lines.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| lines.iter().filter_map(|line| line.get(i)).map(|cell| cell.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for line in lines {
        let padded: Vec<String> = line.iter().enumerate().map(|(i, cell)| format!("{cell:<width$}", width = widths[i])).collect();
        out.push_str(padded.join("   ").trim_end());
        out.push('\n');
    }
    out
}

/// Builds the table for `objects` of `(group, kind)` and compares its rendering with `expected`
/// (leading blank line and common indentation stripped).
#[track_caller]
fn check(group: &str, kind: &str, objects: &[Value], expected: &str) {
    let table = build_table(&resource(group, "v1", kind), objects, json!({}), IncludeObject::Metadata, now());
    assert_rendered(&table, expected);
}

#[track_caller]
fn assert_rendered(table: &Value, expected: &str) {
    let actual = render(table);
    assert_eq!(cells_of(&actual), cells_of(expected), "\n--- actual ---\n{actual}--- expected ---\n{expected}");
}

/// The snapshot's cells: non-blank lines split on runs of two or more spaces.
fn cells_of(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let mut cells = Vec::new();
            let mut current = String::new();
            let mut spaces = 0;
            for c in line.trim().chars() {
                if c == ' ' {
                    spaces += 1;
                    continue;
                }
                if spaces >= 2 {
                    cells.push(std::mem::take(&mut current));
                } else if spaces == 1 {
                    current.push(' ');
                }
                spaces = 0;
                current.push(c);
            }
            cells.push(current);
            cells
        })
        .collect()
}

#[test]
fn deployment_with_status() {
    check("apps", "Deployment", &[fixtures::deployment()], r#"
        NAME   READY   UP-TO-DATE   AVAILABLE   AGE    CONTAINERS      IMAGES                  SELECTOR
        web    2/3     3            2           3h4m   nginx,sidecar   nginx:1.27,envoy:1.30   app=web,tier in (back,front)
    "#);
}

#[test]
fn pod_ready_status_and_restarts_with_last_restart_age() {
    check("", "Pod", &[fixtures::pod_running(), fixtures::pod_pending(), fixtures::pod_init()], r#"
        NAME        READY   STATUS             RESTARTS     AGE   IP           NODE     NOMINATED NODE   READINESS GATES
        api-7d9f    1/2     Running            5 (5m ago)   2d3h  10.244.1.7   node-a   <none>           1/2
        api-pend    0/1     ImagePullBackOff   0            45s   <none>       <none>   <none>           <none>
        api-init    0/1     Init:1/2           0            10m   <none>       node-b   <none>           <none>
    "#);
}

#[test]
fn pod_terminating_completed_and_sidecar() {
    check("", "Pod", &[fixtures::pod_terminating(), fixtures::pod_succeeded(), fixtures::pod_sidecar()], "
        NAME      READY   STATUS        RESTARTS     AGE   IP       NODE     NOMINATED NODE   READINESS GATES
        old       0/1     Terminating   0            45d   <none>   <none>   <none>           <none>
        batch-1   0/1     Completed     0            3y    <none>   <none>   <none>           <none>
        side      2/2     Running       1 (2m ago)   5s    <none>   <none>   <none>           <none>
    ");
    let table = build_table(&resource("", "v1", "Pod"), &[fixtures::pod_succeeded()], json!({}), IncludeObject::None, now());
    assert_eq!(table["rows"][0]["conditions"][0]["reason"], json!("Succeeded"));
    assert_eq!(table["rows"][0]["object"], Value::Null);
}

#[test]
fn service_types_and_ports() {
    check("", "Service", &fixtures::services(), "
        NAME       TYPE           CLUSTER-IP    EXTERNAL-IP             PORT(S)                  AGE   SELECTOR
        web        ClusterIP      10.96.0.10    <none>                  80/TCP,443/TCP           10m   app=web
        nodes      NodePort       10.96.0.11    <none>                  80:30080/TCP             10m   <none>
        lb         LoadBalancer   10.96.0.12    <pending>               53/UDP                   10m   app=dns
        lb-ready   LoadBalancer   10.96.0.13    1.2.3.4,lb.example.com  8080/TCP                 10m   <none>
        ext        ExternalName   <none>        db.example.com          <none>                   10m   <none>
    ");
}

#[test]
fn secret_configmap_and_service_account() {
    check("", "Secret", &[fixtures::secret()], "
        NAME    TYPE                DATA   AGE
        creds   kubernetes.io/tls   2      5s
    ");
    check("", "ConfigMap", &[json!({"metadata": {"name": "cfg", "creationTimestamp": "2025-01-01T11:50:00Z"}, "data": {"a": "1"}, "binaryData": {"b": "AA=="}})], "
        NAME   DATA   AGE
        cfg    2      10m
    ");
    check("", "ServiceAccount", &[json!({"metadata": {"name": "default"}, "secrets": [{"name": "t"}]})], "
        NAME      SECRETS   AGE
        default   1         <unknown>
    ");
}

#[test]
fn namespace_active_and_terminating() {
    let namespaces = [
        json!({"metadata": {"name": "default", "creationTimestamp": "2024-12-29T09:00:00Z"}, "status": {"phase": "Active"}}),
        json!({"metadata": {"name": "going", "creationTimestamp": "2025-01-01T08:56:00Z", "deletionTimestamp": "2025-01-01T11:59:00Z"}, "status": {"phase": "Terminating"}}),
    ];
    check("", "Namespace", &namespaces, "
        NAME      STATUS        AGE
        default   Active        3d3h
        going     Terminating   3h4m
    ");
}

#[test]
fn custom_resource_columns() {
    let columns = [
        json!({"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}),
        json!({"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}),
        json!({"name": "First Port", "type": "integer", "jsonPath": ".spec.ports[0].port", "priority": 1}),
        json!({"name": "Selector", "type": "string", "jsonPath": ".spec.selector"}),
        json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}),
    ];
    let columns = custom_columns(&columns).unwrap_or_else(|error| panic!("columns should parse: {error}"));
    let objects = [
        json!({"metadata": {"name": "db", "creationTimestamp": "2025-01-01T11:55:00Z"},
               "spec": {"replicas": 3.0, "ports": [{"port": 5432}], "selector": {"app": "db"}},
               "status": {"conditions": [{"type": "Synced", "status": "True"}, {"type": "Ready", "status": "False"}]}}),
        json!({"metadata": {"name": "bare"}, "spec": {"replicas": "three"}}),
    ];
    let table = super::custom::build_table(&columns, &objects, json!({"resourceVersion": "7"}), IncludeObject::Metadata, now());
    assert_rendered(&table, r#"
        NAME   REPLICAS   READY    FIRST PORT   SELECTOR       AGE
        db     3          False    5432         {"app":"db"}   5m
        bare   <none>     <none>   <none>       <none>         <none>
    "#);
    assert_eq!(table["metadata"], json!({"resourceVersion": "7"}));
    assert_eq!(table["columnDefinitions"][3]["priority"], json!(1));
    assert_eq!(
        table["columnDefinitions"][1]["description"],
        json!("Custom resource definition column (in JSONPath format): .spec.replicas")
    );
}

#[test]
fn custom_resource_without_columns_gets_age_only() {
    let columns = custom_columns(&[]).unwrap_or_else(|error| panic!("default columns should parse: {error}"));
    let table = super::custom::build_table(&columns, &[fixtures::secret()], json!({}), IncludeObject::None, now());
    assert_rendered(&table, "
        NAME    AGE
        creds   5s
    ");
    assert_eq!(table["columnDefinitions"][1]["type"], json!("date"));
}

#[test]
fn kinds_without_printer_use_default_convertor() {
    let role = json!({"metadata": {"name": "reader", "creationTimestamp": "2024-06-01T10:20:30Z"}, "rules": []});
    check("rbac.authorization.k8s.io", "Role", &[role.clone(), json!({"metadata": {"name": "new"}})], "
        NAME     CREATED AT
        reader   2024-06-01T10:20:30Z
        new      0001-01-01T00:00:00Z
    ");
    check("", "LimitRange", std::slice::from_ref(&role), "
        NAME     CREATED AT
        reader   2024-06-01T10:20:30Z
    ");
    check("example.com", "Widget", &[role], "
        NAME     CREATED AT
        reader   2024-06-01T10:20:30Z
    ");
}

#[test]
fn events_core_and_events_k8s_io() {
    let expected = r#"
        LAST SEEN   TYPE      REASON    OBJECT       SUBOBJECT               SOURCE             MESSAGE            FIRST SEEN   COUNT   NAME
        2m          Warning   BackOff   pod/api-1    spec.containers{app}    kubelet, node-a    Back-off pulling   10m          4       api-1.17a
        5s          Normal    Created   pod/api-2    ""                      kubelet            Created            5s           1       api-2.17b
    "#;
    check("", "Event", &fixtures::core_events(), expected);
    check("events.k8s.io", "Event", &fixtures::events_k8s_io_events(), expected);
}

#[test]
fn workloads_batch_and_cluster_kinds() {
    check("batch", "Job", &[fixtures::job()], "
        NAME      STATUS     COMPLETIONS   DURATION   AGE   CONTAINERS   IMAGES        SELECTOR
        migrate   Complete   3/3           2m5s       10m   migrate      tools:1.0     batch.kubernetes.io/controller-uid=abc
    ");
    check("batch", "CronJob", &[fixtures::cron_job()], "
        NAME      SCHEDULE      TIMEZONE   SUSPEND   ACTIVE   LAST SCHEDULE   AGE   CONTAINERS   IMAGES      SELECTOR
        nightly   0 3 * * *     <none>     False     1        9h              45d   backup       backup:2    <none>
    ");
    check("", "Node", &[fixtures::node()], "
        NAME     STATUS                     ROLES                  AGE    VERSION   INTERNAL-IP   EXTERNAL-IP   OS-IMAGE      KERNEL-VERSION   CONTAINER-RUNTIME
        node-a   Ready,SchedulingDisabled   control-plane,worker   400d   v1.33.1   10.0.0.5      <none>        Debian 12     <unknown>        containerd://2.0.0
    ");
    check("", "PersistentVolumeClaim", &[fixtures::pvc()], "
        NAME   STATUS   VOLUME   CAPACITY   ACCESS MODES   STORAGECLASS   VOLUMEATTRIBUTESCLASS   AGE   VOLUMEMODE
        data   Bound    pv-1     10Gi       RWO,RWX        fast           <unset>                 10m   Filesystem
    ");
    check("storage.k8s.io", "StorageClass", &[fixtures::storage_class()], "
        NAME             PROVISIONER        RECLAIMPOLICY   VOLUMEBINDINGMODE   ALLOWVOLUMEEXPANSION   AGE
        fast (default)   csi.example.com    Delete          Immediate           true                   10m
    ");
    check("rbac.authorization.k8s.io", "RoleBinding", &[fixtures::role_binding()], "
        NAME    ROLE               AGE   USERS         GROUPS   SERVICEACCOUNTS
        admin   ClusterRole/edit   10m   alice, bob    devs     ci/deployer
    ");
    check("", "Endpoints", &[fixtures::endpoints()], "
        NAME   ENDPOINTS                                     AGE
        web    10.0.0.1:80,10.0.0.2:80,[fd00::3]:80 + 3 more...   10m
    ");
}

#[test]
fn include_object_modes() {
    let secret = fixtures::secret();
    let info = resource("", "v1", "Secret");
    let metadata = build_table(&info, std::slice::from_ref(&secret), json!(null), IncludeObject::Metadata, now());
    assert_eq!(metadata["kind"], json!("Table"));
    assert_eq!(metadata["apiVersion"], json!("meta.k8s.io/v1"));
    assert_eq!(metadata["metadata"], json!({}));
    assert_eq!(
        metadata["rows"][0]["object"],
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": secret["metadata"].clone()})
    );
    let full = build_table(&info, std::slice::from_ref(&secret), super::object_table_metadata(&secret), IncludeObject::Object, now());
    assert_eq!(full["rows"][0]["object"]["data"], secret["data"]);
    assert_eq!(full["rows"][0]["object"]["kind"], json!("Secret"));
    assert_eq!(full["rows"][0]["object"]["apiVersion"], json!("v1"));
    assert_eq!(full["metadata"], json!({"resourceVersion": "42"}));
    assert_eq!(
        full["columnDefinitions"][0],
        json!({"name": "Name", "type": "string", "format": "name", "description": super::columns::NAME_DESCRIPTION, "priority": 0})
    );
    assert_eq!(IncludeObject::from_query(""), Ok(IncludeObject::Metadata));
    assert_eq!(IncludeObject::from_query("None"), Ok(IncludeObject::None));
    assert!(IncludeObject::from_query("object").is_err());
}

#[test]
fn remaining_kinds_one_row_each() {
    let mut actual = String::new();
    for (group, kind, object) in fixtures::others() {
        let table = build_table(&resource(group, "v1", kind), &[object], json!({}), IncludeObject::Metadata, now());
        actual.push_str(&format!("{kind}\n{}", render(&table)));
    }
    let expected = r#"
        Namespace
        NAME   STATUS   AGE
        x      Active   60m
        ConfigMap
        NAME   DATA   AGE
        x      1      60m
        ServiceAccount
        NAME   SECRETS   AGE
        x      1         60m
        PodTemplate
        NAME   CONTAINERS   IMAGES   POD LABELS
        x      c            i        a=b
        ReplicationController
        NAME   DESIRED   CURRENT   READY   AGE   CONTAINERS   IMAGES   SELECTOR
        x      2         2         0       60m   c            i        a=b
        PersistentVolume
        NAME   CAPACITY   ACCESS MODES   RECLAIM POLICY   STATUS   CLAIM          STORAGECLASS   VOLUMEATTRIBUTESCLASS   REASON   AGE   VOLUMEMODE
        x      1Gi        RWO            Retain           Bound    default/data   fast           <unset>                 ""       60m   <unset>
        ResourceQuota
        NAME   REQUEST                              LIMIT                AGE
        x      pods: 3/10, requests.memory: 0/1Gi   limits.cpu: 500m/2   60m
        ReplicaSet
        NAME   DESIRED   CURRENT   READY   AGE   CONTAINERS   IMAGES   SELECTOR
        x      2         2         1       60m   ""           ""       a=b
        StatefulSet
        NAME   READY   AGE   CONTAINERS   IMAGES
        x      3/3     60m   ""           ""
        DaemonSet
        NAME   DESIRED   CURRENT   READY   UP-TO-DATE   AVAILABLE   NODE SELECTOR   AGE   CONTAINERS   IMAGES   SELECTOR
        x      3         0         0       0            0           os=linux        60m   ""           ""       a=b
        ControllerRevision
        NAME   CONTROLLER            REVISION   AGE
        x      statefulset.apps/db   4          60m
        PodDisruptionBudget
        NAME   MIN AVAILABLE   MAX UNAVAILABLE   ALLOWED DISRUPTIONS   AGE
        x      50%             N/A               1                     60m
        Lease
        NAME   HOLDER   AGE
        x      node-a   60m
        EndpointSlice
        NAME   ADDRESSTYPE   PORTS                   ENDPOINTS           AGE
        x      IPv4          80,http,* + 1 more...   10.0.0.1,10.0.0.2   60m
        Ingress
        NAME   CLASS   HOSTS                         ADDRESS   PORTS     AGE
        x      nginx   a.example.com,b.example.com   1.2.3.4   80, 443   60m
        IngressClass
        NAME   CONTROLLER             PARAMETERS                                      AGE
        x      k8s.io/ingress-nginx   IngressParameters.k8s.example.com/external-lb   60m
        NetworkPolicy
        NAME   POD-SELECTOR   AGE
        x      <none>         60m
        PriorityClass
        NAME   VALUE   GLOBAL-DEFAULT   AGE   PREEMPTIONPOLICY
        x      1000    false            60m   PreemptLowerPriority
        ValidatingWebhookConfiguration
        NAME   WEBHOOKS   AGE
        x      2          60m
        MutatingWebhookConfiguration
        NAME   WEBHOOKS   AGE
        x      0          60m
    "#;
    assert_eq!(cells_of(&actual), cells_of(expected), "\n--- actual ---\n{actual}");
}
