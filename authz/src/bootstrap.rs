//! The ClusterRoles and ClusterRoleBindings every space starts with: Kubernetes' bootstrap RBAC policy (its
//! `bootstrappolicy` package) restricted to what a space serves, so kubectl users find the roles they know
//! (`cluster-admin`, `admin`, `edit`, `view`) and discovery, health and self-review work for everyone.
//!
//! Lists are in the order kube-apiserver stores them (its rule builder sorts them), so a space's defaults diff
//! cleanly against a real cluster's. `admin`, `edit` and `view` carry their `aggregationRule` and rules already
//! aggregated, so a new space is correct before the aggregation controller first runs (and it finds nothing to do).

use serde_json::{json, Value};

use crate::aggregate::aggregated_rules;
use crate::{AUTHENTICATED, MASTERS};

pub const RBAC_API_VERSION: &str = "rbac.authorization.k8s.io/v1";
/// Marks objects as Kubernetes' defaults (label).
pub const BOOTSTRAPPING_LABEL: &str = "kubernetes.io/bootstrapping";
pub const BOOTSTRAPPING_VALUE: &str = "rbac-defaults";
/// Tells kube-apiserver it may reconcile the object on upgrade (annotation).
pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";
pub const AGGREGATE_TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
pub const AGGREGATE_TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
pub const AGGREGATE_TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
pub const SERVICE_ACCOUNTS: &str = "system:serviceaccounts";

/// (apiGroup, resources, verbs): one rule of a default role.
type RuleSpec = (&'static str, &'static [&'static str], &'static [&'static str]);

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// `view`: reading a namespace's ordinary objects. No secrets (reading one can mean acting as its owner).
const AGGREGATE_TO_VIEW_RULES: &[RuleSpec] = &[
    ("", &["configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods",
        "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "services/status"], READ),
    ("", &["bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
        "replicationcontrollers/status", "resourcequotas", "resourcequotas/status"], READ),
    ("", &["namespaces"], READ),
    ("discovery.k8s.io", &["endpointslices"], READ),
    ("apps", &["controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
        "deployments/status", "replicasets", "replicasets/scale", "replicasets/status", "statefulsets",
        "statefulsets/scale", "statefulsets/status"], READ),
    ("autoscaling", &["horizontalpodautoscalers", "horizontalpodautoscalers/status"], READ),
    ("batch", &["cronjobs", "cronjobs/status", "jobs", "jobs/status"], READ),
    ("extensions", &["daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
        "ingresses", "ingresses/status", "networkpolicies", "replicasets", "replicasets/scale", "replicasets/status",
        "replicationcontrollers/scale"], READ),
    ("policy", &["poddisruptionbudgets", "poddisruptionbudgets/status"], READ),
    ("networking.k8s.io", &["ingresses", "ingresses/status", "networkpolicies"], READ),
];

/// `edit`: changing a namespace's ordinary objects, secrets included, and acting through pods.
const AGGREGATE_TO_EDIT_RULES: &[RuleSpec] = &[
    ("", &["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"], READ),
    ("", &["serviceaccounts"], &["impersonate"]),
    ("", &["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"], WRITE),
    ("", &["pods/eviction"], &["create"]),
    ("", &["configmaps", "events", "persistentvolumeclaims", "replicationcontrollers", "replicationcontrollers/scale",
        "secrets", "serviceaccounts", "services", "services/proxy"], WRITE),
    ("", &["serviceaccounts/token"], &["create"]),
    ("apps", &["daemonsets", "deployments", "deployments/rollback", "deployments/scale", "replicasets",
        "replicasets/scale", "statefulsets", "statefulsets/scale"], WRITE),
    ("autoscaling", &["horizontalpodautoscalers"], WRITE),
    ("batch", &["cronjobs", "jobs"], WRITE),
    ("extensions", &["daemonsets", "deployments", "deployments/rollback", "deployments/scale", "ingresses",
        "networkpolicies", "replicasets", "replicasets/scale", "replicationcontrollers/scale"], WRITE),
    ("policy", &["poddisruptionbudgets"], WRITE),
    ("networking.k8s.io", &["ingresses", "networkpolicies"], WRITE),
    ("coordination.k8s.io", &["leases"], READ_WRITE),
];

/// `admin`: `edit` plus granting rights within the namespace.
const AGGREGATE_TO_ADMIN_RULES: &[RuleSpec] = &[
    ("authorization.k8s.io", &["localsubjectaccessreviews"], &["create"]),
    ("rbac.authorization.k8s.io", &["rolebindings", "roles"], READ_WRITE),
];

const BASIC_USER_RULES: &[RuleSpec] = &[
    ("authorization.k8s.io", &["selfsubjectaccessreviews", "selfsubjectrulesreviews"], &["create"]),
    ("authentication.k8s.io", &["selfsubjectreviews"], &["create"]),
];

const DISCOVERY_URLS: &[&str] =
    &["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"];
const PUBLIC_INFO_URLS: &[&str] = &["/healthz", "/livez", "/readyz", "/version", "/version/"];
const ISSUER_DISCOVERY_URLS: &[&str] =
    &["/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/"];

/// The default ClusterRoles, then the default ClusterRoleBindings, as stored JSON. `cluster-admin` is bound to
/// `system:masters` only in the system space: in a tenant's space nobody is all-powerful by group membership.
pub fn bootstrap_objects(system_space: bool) -> Vec<Value> {
    let mut objects = cluster_roles();
    aggregate_defaults(&mut objects);
    objects.extend(cluster_role_bindings(system_space));
    objects
}

fn cluster_roles() -> Vec<Value> {
    vec![
        cluster_role("cluster-admin", &[], vec![
            json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
            url_rule(&["*"], &["*"]),
        ]),
        aggregating_role("admin", AGGREGATE_TO_ADMIN, &[]),
        aggregating_role("edit", AGGREGATE_TO_EDIT, &[AGGREGATE_TO_ADMIN]),
        aggregating_role("view", AGGREGATE_TO_VIEW, &[AGGREGATE_TO_EDIT]),
        cluster_role("system:aggregate-to-admin", &[AGGREGATE_TO_ADMIN], rules(AGGREGATE_TO_ADMIN_RULES)),
        cluster_role("system:aggregate-to-edit", &[AGGREGATE_TO_EDIT], rules(AGGREGATE_TO_EDIT_RULES)),
        cluster_role("system:aggregate-to-view", &[AGGREGATE_TO_VIEW], rules(AGGREGATE_TO_VIEW_RULES)),
        cluster_role("system:basic-user", &[], rules(BASIC_USER_RULES)),
        cluster_role("system:discovery", &[], vec![url_rule(&["get"], DISCOVERY_URLS)]),
        cluster_role("system:public-info-viewer", &[], vec![url_rule(&["get"], PUBLIC_INFO_URLS)]),
        cluster_role("system:service-account-issuer-discovery", &[], vec![url_rule(&["get"], ISSUER_DISCOVERY_URLS)]),
    ]
}

fn cluster_role_bindings(system_space: bool) -> Vec<Value> {
    let mut bindings = vec![
        cluster_role_binding("system:basic-user", &[AUTHENTICATED]),
        cluster_role_binding("system:discovery", &[AUTHENTICATED]),
        cluster_role_binding("system:public-info-viewer", &[AUTHENTICATED, UNAUTHENTICATED]),
        cluster_role_binding("system:service-account-issuer-discovery", &[SERVICE_ACCOUNTS]),
    ];
    if system_space {
        bindings.insert(0, cluster_role_binding("cluster-admin", &[MASTERS]));
    }
    bindings
}

/// Fills `view`, then `edit` (which takes `view`'s), then `admin` (which takes `edit`'s), as the aggregation
/// controller would settle them.
fn aggregate_defaults(roles: &mut [Value]) {
    for name in ["view", "edit", "admin"] {
        let Some(index) = roles.iter().position(|role| role.pointer("/metadata/name").and_then(Value::as_str) == Some(name)) else {
            continue;
        };
        if let Some(rules) = aggregated_rules(&roles[index], roles) {
            roles[index]["rules"] = Value::Array(rules);
        }
    }
}

fn metadata(name: &str, extra_labels: &[&str]) -> Value {
    let mut labels = json!({ BOOTSTRAPPING_LABEL: BOOTSTRAPPING_VALUE });
    for label in extra_labels {
        labels[*label] = json!("true");
    }
    json!({"name": name, "labels": labels, "annotations": { AUTOUPDATE_ANNOTATION: "true" }})
}

fn cluster_role(name: &str, extra_labels: &[&str], rules: Vec<Value>) -> Value {
    json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": metadata(name, extra_labels), "rules": rules})
}

/// A ClusterRole made of the roles labelled `selected_label`; its rules are filled by `aggregate_defaults`.
fn aggregating_role(name: &str, selected_label: &str, extra_labels: &[&str]) -> Value {
    let mut role = cluster_role(name, extra_labels, Vec::new());
    role["aggregationRule"] = json!({"clusterRoleSelectors": [{"matchLabels": { selected_label: "true" }}]});
    role
}

fn cluster_role_binding(role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> =
        groups.iter().map(|group| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group})).collect();
    json!({
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRoleBinding",
        "metadata": metadata(role, &[]),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

fn rules(specs: &[RuleSpec]) -> Vec<Value> {
    specs.iter().map(|(group, resources, verbs)| json!({"verbs": verbs, "apiGroups": [group], "resources": resources})).collect()
}

fn url_rule(verbs: &[&str], urls: &[&str]) -> Value {
    json!({"verbs": verbs, "nonResourceURLs": urls})
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::escalation::uncovered;
    use crate::policy::{RoleRef, SpacePolicy};
    use crate::rbac::Attributes;
    use crate::UserInfo;

    fn names(objects: &[Value], kind: &str) -> Vec<String> {
        objects
            .iter()
            .filter(|object| object["kind"] == kind)
            .map(|object| object["metadata"]["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo::authenticated(name.into(), String::new(), groups.iter().map(|g| g.to_string()).collect(), None)
    }

    fn anonymous() -> UserInfo {
        UserInfo { name: "system:anonymous".into(), uid: String::new(), groups: vec![UNAUTHENTICATED.into()], tenant: None, cluster: None, extra: Default::default() }
    }

    fn request(verb: &str, group: &str, resource: &str, namespace: Option<&str>) -> Attributes {
        Attributes::Resource {
            verb: verb.into(), group: group.into(), resource: resource.into(), subresource: String::new(),
            name: String::new(), namespace: namespace.map(str::to_owned),
        }
    }

    fn path(path: &str) -> Attributes {
        Attributes::NonResource { verb: "get".into(), path: path.into() }
    }

    /// A tenant space's defaults plus RoleBindings in `dev` giving viewer, editor and admin the default roles.
    fn tenant_policy() -> SpacePolicy {
        let mut objects = bootstrap_objects(false);
        for role in ["view", "edit", "admin"] {
            objects.push(json!({
                "apiVersion": RBAC_API_VERSION, "kind": "RoleBinding", "metadata": {"name": role, "namespace": "dev"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"kind": "User", "name": format!("{role}er")}],
            }));
        }
        SpacePolicy::new(&objects)
    }

    #[test]
    fn every_space_gets_kube_s_default_roles_and_bindings() {
        let tenant = bootstrap_objects(false);
        assert_eq!(names(&tenant, "ClusterRole"), [
            "cluster-admin", "admin", "edit", "view", "system:aggregate-to-admin", "system:aggregate-to-edit",
            "system:aggregate-to-view", "system:basic-user", "system:discovery", "system:public-info-viewer",
            "system:service-account-issuer-discovery",
        ]);
        assert_eq!(names(&tenant, "ClusterRoleBinding"), [
            "system:basic-user", "system:discovery", "system:public-info-viewer", "system:service-account-issuer-discovery",
        ]);
        assert_eq!(names(&bootstrap_objects(true), "ClusterRoleBinding")[0], "cluster-admin");
        assert_eq!(bootstrap_objects(true).len(), tenant.len() + 1);
        for object in &tenant {
            assert_eq!(object["apiVersion"], RBAC_API_VERSION);
            assert_eq!(object["metadata"]["labels"][BOOTSTRAPPING_LABEL], BOOTSTRAPPING_VALUE, "{object}");
            assert_eq!(object["metadata"]["annotations"][AUTOUPDATE_ANNOTATION], "true", "{object}");
        }
        assert_eq!(SpacePolicy::new(&tenant).skipped(), 0);
    }

    #[test]
    fn default_roles_grant_what_kube_s_do() {
        let policy = tenant_policy();
        let allowed = |name: &str, attributes: Attributes| policy.decide(&user(name, &[]), &attributes).allowed;
        assert!(allowed("viewer", request("list", "", "pods", Some("dev"))));
        assert!(allowed("viewer", request("get", "apps", "deployments", Some("dev"))));
        assert!(!allowed("viewer", request("get", "", "secrets", Some("dev"))), "view does not read secrets");
        assert!(!allowed("viewer", request("create", "apps", "deployments", Some("dev"))));
        assert!(allowed("editer", request("create", "apps", "deployments", Some("dev"))));
        assert!(allowed("editer", request("get", "", "secrets", Some("dev"))));
        assert!(allowed("editer", request("list", "", "pods", Some("dev"))), "edit includes view");
        assert!(!allowed("editer", request("create", "rbac.authorization.k8s.io", "rolebindings", Some("dev"))));
        assert!(allowed("adminer", request("create", "rbac.authorization.k8s.io", "rolebindings", Some("dev"))));
        assert!(allowed("adminer", request("create", "authorization.k8s.io", "localsubjectaccessreviews", Some("dev"))));
        assert!(allowed("adminer", request("delete", "apps", "statefulsets", Some("dev"))), "admin includes edit");
        assert!(!allowed("adminer", request("create", "rbac.authorization.k8s.io", "rolebindings", Some("prod"))));
        assert!(!allowed("adminer", request("list", "", "nodes", None)));
    }

    #[test]
    fn admin_covers_edit_which_covers_view() {
        let policy = tenant_policy();
        let rules = |name: &str| policy.role_rules(&RoleRef::ClusterRole(name.into())).expect("a default role");
        assert!(uncovered(&rules("edit"), &rules("view")).is_empty());
        assert!(uncovered(&rules("admin"), &rules("edit")).is_empty());
        assert!(uncovered(&rules("cluster-admin"), &rules("admin")).is_empty());
        assert!(!uncovered(&rules("view"), &rules("edit")).is_empty());
    }

    #[test]
    fn default_aggregations_are_already_settled() {
        let objects = bootstrap_objects(false);
        let cluster_roles: Vec<Value> = objects.iter().filter(|object| object["kind"] == "ClusterRole").cloned().collect();
        let mut aggregating = 0;
        for role in &cluster_roles {
            if let Some(rules) = aggregated_rules(role, &cluster_roles) {
                assert_eq!(Some(&Value::Array(rules)), role.get("rules"), "{}", role["metadata"]["name"]);
                aggregating += 1;
            }
        }
        assert_eq!(aggregating, 3);
    }

    #[test]
    fn everyone_may_discover_and_review_themselves() {
        let policy = tenant_policy();
        let someone = user("someone", &[]);
        assert_eq!(policy.decide(&someone, &path("/apis/apps/v1")).reason,
            r#"RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated""#);
        assert!(policy.decide(&someone, &path("/version/")).allowed);
        assert!(policy.decide(&someone, &request("create", "authorization.k8s.io", "selfsubjectrulesreviews", None)).allowed);
        assert!(policy.decide(&someone, &request("create", "authentication.k8s.io", "selfsubjectreviews", None)).allowed);
        assert!(!policy.decide(&someone, &path("/metrics")).allowed);
        assert!(!policy.decide(&someone, &path("/openid/v1/jwks")).allowed);
        assert!(policy.decide(&user("system:serviceaccount:dev:app", &[SERVICE_ACCOUNTS]), &path("/openid/v1/jwks/")).allowed);
        assert!(policy.decide(&anonymous(), &path("/readyz")).allowed);
        assert!(!policy.decide(&anonymous(), &path("/api")).allowed);
    }

    #[test]
    fn only_the_system_space_makes_masters_all_powerful() {
        let master = user("root", &[MASTERS]);
        let delete_nodes = request("delete", "", "nodes", None);
        assert!(SpacePolicy::new(&bootstrap_objects(true)).decide(&master, &delete_nodes).allowed);
        assert!(SpacePolicy::new(&bootstrap_objects(true)).decide(&master, &path("/metrics")).allowed);
        assert!(!SpacePolicy::new(&bootstrap_objects(false)).decide(&master, &delete_nodes).allowed);
    }
}
