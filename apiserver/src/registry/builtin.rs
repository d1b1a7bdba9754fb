//! The built-in resource table: Kubernetes v1.33's discovery data for every built-in kind kspaces serves
//! (kspaces' own kinds bring their rows themselves, in `crate::kinds`).

use super::{ResourceInfo, Subresource};

/// Every verb the generic registry serves, in the sorted order kube-apiserver's discovery uses.
const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// Namespaces cannot be deleted as a collection (kube-apiserver omits `deletecollection`).
const NO_COLLECTION_DELETE: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

const NONE: &[Subresource] = &[];
const STATUS: &[Subresource] = &[Subresource::Status];
const STATUS_FINALIZE: &[Subresource] = &[Subresource::Status, Subresource::Finalize];
const STATUS_SCALE: &[Subresource] = &[Subresource::Status, Subresource::Scale];
const STATUS_APPROVAL: &[Subresource] = &[Subresource::Status, Subresource::Approval];

/// One row of the table, in `kubectl api-resources -o wide` order of columns.
struct Row {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    short_names: &'static [&'static str],
    /// True when the kind belongs to the `all` category (`kubectl get all`).
    in_all: bool,
    namespaced: bool,
    verbs: &'static [&'static str],
    subresources: &'static [Subresource],
    /// Go package path segment of the definition: `core.v1` gives `io.k8s.api.core.v1.<Kind>`.
    package: &'static str,
    /// Only in the system space, only for system users (see `ResourceInfo::system_only`).
    system_only: bool,
}

const fn row(
    (group, version, package): (&'static str, &'static str, &'static str),
    plural: &'static str,
    kind: &'static str,
    short_names: &'static [&'static str],
    in_all: bool,
    namespaced: bool,
    subresources: &'static [Subresource],
) -> Row {
    Row {
        group,
        version,
        plural,
        kind,
        short_names,
        in_all,
        namespaced,
        verbs: ALL_VERBS,
        subresources,
        package,
        system_only: false,
    }
}

/// A resource of the system space only (Arktos' non-tenanted resources).
const fn system(row: Row) -> Row {
    Row { system_only: true, ..row }
}

/// `componentstatuses` are read-only.
const READ_ONLY: &[&str] = &["get", "list"];
/// Reviews are created, answered and never stored.
const CREATE_ONLY: &[&str] = &["create"];

const CORE: (&str, &str, &str) = ("", "v1", "core.v1");
const APPS: (&str, &str, &str) = ("apps", "v1", "apps.v1");
const BATCH: (&str, &str, &str) = ("batch", "v1", "batch.v1");
/// `autoscaling/v2`, the stored form of HorizontalPodAutoscalers (`kinds/horizontal_pod_autoscaler.rs` adds `v1`).
const AUTOSCALING: (&str, &str, &str) = ("autoscaling", "v2", "autoscaling.v2");
const CERTIFICATES: (&str, &str, &str) = ("certificates.k8s.io", "v1", "certificates.v1");
const COORDINATION: (&str, &str, &str) = ("coordination.k8s.io", "v1", "coordination.v1");
const EVENTS: (&str, &str, &str) = ("events.k8s.io", "v1", "events.v1");
const DISCOVERY: (&str, &str, &str) = ("discovery.k8s.io", "v1", "discovery.v1");
const NETWORKING: (&str, &str, &str) = ("networking.k8s.io", "v1", "networking.v1");
const POLICY: (&str, &str, &str) = ("policy", "v1", "policy.v1");
const STORAGE: (&str, &str, &str) = ("storage.k8s.io", "v1", "storage.v1");
const SCHEDULING: (&str, &str, &str) = ("scheduling.k8s.io", "v1", "scheduling.v1");
const RBAC: (&str, &str, &str) = ("rbac.authorization.k8s.io", "v1", "rbac.v1");
const NODE: (&str, &str, &str) = ("node.k8s.io", "v1", "node.v1");
const AUTHENTICATION: (&str, &str, &str) = ("authentication.k8s.io", "v1", "authentication.v1");
const AUTHORIZATION: (&str, &str, &str) = ("authorization.k8s.io", "v1", "authorization.v1");
const ADMISSION: (&str, &str, &str) = ("admissionregistration.k8s.io", "v1", "admissionregistration.v1");
/// A full definition prefix (the CRD type is not under `io.k8s.api`).
const APIEXTENSIONS: (&str, &str, &str) = ("apiextensions.k8s.io", "v1", "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1");

/// The table itself. Subresources other than `status`, `scale` and `finalize` are not listed: `serviceaccounts/token`
/// and the pods' subresources a server answers without a kubelet (`handlers/pod.rs`: log, exec, eviction, ...) are
/// served by their own handlers and listed by discovery from there; `pods/proxy` and the like are not served.
const ROWS: &[Row] = &[
    Row {
        verbs: NO_COLLECTION_DELETE,
        ..row(
            CORE,
            "namespaces",
            "Namespace",
            &["ns"],
            false,
            false,
            STATUS_FINALIZE,
        )
    },
    row(CORE, "configmaps", "ConfigMap", &["cm"], false, true, NONE),
    row(CORE, "secrets", "Secret", &[], false, true, NONE),
    row(
        CORE,
        "serviceaccounts",
        "ServiceAccount",
        &["sa"],
        false,
        true,
        NONE,
    ),
    row(CORE, "events", "Event", &["ev"], false, true, NONE),
    row(
        CORE,
        "limitranges",
        "LimitRange",
        &["limits"],
        false,
        true,
        NONE,
    ),
    row(
        CORE,
        "resourcequotas",
        "ResourceQuota",
        &["quota"],
        false,
        true,
        STATUS,
    ),
    row(CORE, "services", "Service", &["svc"], true, true, STATUS),
    row(CORE, "endpoints", "Endpoints", &["ep"], false, true, NONE),
    row(CORE, "pods", "Pod", &["po"], true, true, STATUS),
    row(CORE, "podtemplates", "PodTemplate", &[], false, true, NONE),
    row(
        CORE,
        "replicationcontrollers",
        "ReplicationController",
        &["rc"],
        true,
        true,
        STATUS_SCALE,
    ),
    row(
        CORE,
        "persistentvolumes",
        "PersistentVolume",
        &["pv"],
        false,
        false,
        STATUS,
    ),
    row(
        CORE,
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        &["pvc"],
        false,
        true,
        STATUS,
    ),
    system(row(CORE, "nodes", "Node", &["no"], false, false, STATUS)),
    system(Row { verbs: READ_ONLY, ..row(CORE, "componentstatuses", "ComponentStatus", &["cs"], false, false, NONE) }),
    row(
        APPS,
        "deployments",
        "Deployment",
        &["deploy"],
        true,
        true,
        STATUS_SCALE,
    ),
    row(
        APPS,
        "replicasets",
        "ReplicaSet",
        &["rs"],
        true,
        true,
        STATUS_SCALE,
    ),
    row(
        APPS,
        "statefulsets",
        "StatefulSet",
        &["sts"],
        true,
        true,
        STATUS_SCALE,
    ),
    row(APPS, "daemonsets", "DaemonSet", &["ds"], true, true, STATUS),
    row(
        APPS,
        "controllerrevisions",
        "ControllerRevision",
        &[],
        false,
        true,
        NONE,
    ),
    row(BATCH, "jobs", "Job", &[], true, true, STATUS),
    row(AUTOSCALING, "horizontalpodautoscalers", "HorizontalPodAutoscaler", &["hpa"], true, true, STATUS),
    row(CERTIFICATES, "certificatesigningrequests", "CertificateSigningRequest", &["csr"], false, false, STATUS_APPROVAL),
    row(BATCH, "cronjobs", "CronJob", &["cj"], true, true, STATUS),
    row(COORDINATION, "leases", "Lease", &[], false, true, NONE),
    row(EVENTS, "events", "Event", &["ev"], false, true, NONE),
    row(
        DISCOVERY,
        "endpointslices",
        "EndpointSlice",
        &[],
        false,
        true,
        NONE,
    ),
    row(
        NETWORKING,
        "ingresses",
        "Ingress",
        &["ing"],
        false,
        true,
        STATUS,
    ),
    row(
        NETWORKING,
        "ingressclasses",
        "IngressClass",
        &[],
        false,
        false,
        NONE,
    ),
    row(
        NETWORKING,
        "networkpolicies",
        "NetworkPolicy",
        &["netpol"],
        false,
        true,
        NONE,
    ),
    row(
        POLICY,
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        &["pdb"],
        false,
        true,
        STATUS,
    ),
    row(
        STORAGE,
        "storageclasses",
        "StorageClass",
        &["sc"],
        false,
        false,
        NONE,
    ),
    system(row(SCHEDULING, "priorityclasses", "PriorityClass", &["pc"], false, false, NONE)),
    system(row(NODE, "runtimeclasses", "RuntimeClass", &[], false, false, NONE)),
    system(row(STORAGE, "csidrivers", "CSIDriver", &[], false, false, NONE)),
    system(row(STORAGE, "csinodes", "CSINode", &[], false, false, NONE)),
    system(row(STORAGE, "volumeattachments", "VolumeAttachment", &[], false, false, STATUS)),
    system(row(STORAGE, "csistoragecapacities", "CSIStorageCapacity", &[], false, true, NONE)),
    row(ADMISSION, "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", &[], false, false, NONE),
    row(ADMISSION, "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", &[], false, false, NONE),
    Row { verbs: CREATE_ONLY, ..row(AUTHENTICATION, "selfsubjectreviews", "SelfSubjectReview", &[], false, false, NONE) },
    Row { verbs: CREATE_ONLY, ..row(AUTHENTICATION, "tokenreviews", "TokenReview", &[], false, false, NONE) },
    Row { verbs: CREATE_ONLY, ..row(AUTHORIZATION, "localsubjectaccessreviews", "LocalSubjectAccessReview", &[], false, true, NONE) },
    Row { verbs: CREATE_ONLY, ..row(AUTHORIZATION, "selfsubjectaccessreviews", "SelfSubjectAccessReview", &[], false, false, NONE) },
    Row { verbs: CREATE_ONLY, ..row(AUTHORIZATION, "selfsubjectrulesreviews", "SelfSubjectRulesReview", &[], false, false, NONE) },
    Row { verbs: CREATE_ONLY, ..row(AUTHORIZATION, "subjectaccessreviews", "SubjectAccessReview", &[], false, false, NONE) },
    // Each space's own CRDs (the system space's are shared with tenants, see `resolver.rs`).
    row(APIEXTENSIONS, "customresourcedefinitions", "CustomResourceDefinition", &["crd", "crds"], false, false, STATUS),
    row(RBAC, "roles", "Role", &[], false, true, NONE),
    row(RBAC, "rolebindings", "RoleBinding", &[], false, true, NONE),
    row(RBAC, "clusterroles", "ClusterRole", &[], false, false, NONE),
    row(
        RBAC,
        "clusterrolebindings",
        "ClusterRoleBinding",
        &[],
        false,
        false,
        NONE,
    ),
];

/// Every built-in resource kspaces serves, with exactly the discovery data of Kubernetes v1.33.
pub fn builtin_resources() -> Vec<ResourceInfo> {
    ROWS.iter().map(Row::to_resource_info).collect()
}

impl Row {
    fn to_resource_info(&self) -> ResourceInfo {
        let strings = |items: &[&str]| {
            items
                .iter()
                .map(|item| item.to_string())
                .collect::<Vec<_>>()
        };
        ResourceInfo {
            group: self.group.to_string(),
            version: self.version.to_string(),
            kind: self.kind.to_string(),
            plural: self.plural.to_string(),
            singular: self.kind.to_ascii_lowercase(),
            short_names: strings(self.short_names),
            categories: if self.in_all {
                vec!["all".to_string()]
            } else {
                Vec::new()
            },
            namespaced: self.namespaced,
            subresources: self.subresources.to_vec(),
            verbs: strings(self.verbs),
            definition: Some(match self.package.strip_prefix("io.") {
                Some(_) => format!("{}.{}", self.package, self.kind),
                None => format!("io.k8s.api.{}.{}", self.package, self.kind),
            }),
            system_only: self.system_only,
            custom: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(group: &str, plural: &str) -> ResourceInfo {
        let found = builtin_resources()
            .into_iter()
            .find(|r| r.group == group && r.plural == plural);
        found.unwrap_or_else(|| panic!("{group}/{plural} missing from the builtin table"))
    }

    /// One line of `kubectl api-resources -o wide` against a v1.33 cluster, plus subresources and definition.
    fn check(group: &str, plural: &str, expected: &str) {
        let r = find(group, plural);
        let actual = format!(
            "{} {} {} {} [{}] [{}] {} [{}] {}",
            r.plural,
            r.short_names.join(","),
            r.api_version(),
            r.namespaced,
            r.verbs.join(" "),
            r.categories.join(","),
            r.kind,
            r.subresources
                .iter()
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(","),
            r.definition.as_deref().unwrap_or("-"),
        );
        assert_eq!(actual, expected);
    }

    const ALL: &str = "create delete deletecollection get list patch update watch";

    #[test]
    fn rows_match_kubectl_api_resources() {
        check("apps", "deployments", &format!(
            "deployments deploy apps/v1 true [{ALL}] [all] Deployment [Status,Scale] io.k8s.api.apps.v1.Deployment"));
        check("", "namespaces", "namespaces ns v1 false [create delete get list patch update watch] [] Namespace [Status,Finalize] io.k8s.api.core.v1.Namespace");
        check(
            "",
            "configmaps",
            &format!("configmaps cm v1 true [{ALL}] [] ConfigMap [] io.k8s.api.core.v1.ConfigMap"),
        );
        check(
            "",
            "pods",
            &format!("pods po v1 true [{ALL}] [all] Pod [Status] io.k8s.api.core.v1.Pod"),
        );
        check(
            "",
            "services",
            &format!(
                "services svc v1 true [{ALL}] [all] Service [Status] io.k8s.api.core.v1.Service"
            ),
        );
        check(
            "",
            "nodes",
            &format!("nodes no v1 false [{ALL}] [] Node [Status] io.k8s.api.core.v1.Node"),
        );
        check("batch", "cronjobs", &format!("cronjobs cj batch/v1 true [{ALL}] [all] CronJob [Status] io.k8s.api.batch.v1.CronJob"));
        check(
            "events.k8s.io",
            "events",
            &format!(
                "events ev events.k8s.io/v1 true [{ALL}] [] Event [] io.k8s.api.events.v1.Event"
            ),
        );
        check("rbac.authorization.k8s.io", "clusterrolebindings", &format!(
            "clusterrolebindings  rbac.authorization.k8s.io/v1 false [{ALL}] [] ClusterRoleBinding [] io.k8s.api.rbac.v1.ClusterRoleBinding"));
        check("networking.k8s.io", "networkpolicies", &format!(
            "networkpolicies netpol networking.k8s.io/v1 true [{ALL}] [] NetworkPolicy [] io.k8s.api.networking.v1.NetworkPolicy"));
    }

    #[test]
    fn table_has_every_requested_resource_once_with_singular_names() {
        let resources = builtin_resources();
        assert_eq!(resources.len(), 52);
        let mut keys: Vec<_> = resources
            .iter()
            .map(|r| (r.group.clone(), r.plural.clone()))
            .collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), resources.len());
        assert_eq!(
            find("policy", "poddisruptionbudgets").singular,
            "poddisruptionbudget"
        );
        assert_eq!(find("", "endpoints").singular, "endpoints");
    }

    #[test]
    fn system_only_resources_are_arktos_non_tenanted_ones() {
        let mut system_only: Vec<_> = builtin_resources().into_iter().filter(|r| r.system_only).map(|r| r.plural).collect();
        system_only.sort();
        assert_eq!(system_only, ["componentstatuses", "csidrivers", "csinodes", "csistoragecapacities", "nodes",
            "priorityclasses", "runtimeclasses", "volumeattachments"]);
    }

    #[test]
    fn all_category_is_exactly_kubectl_get_all() {
        let mut in_all: Vec<_> = builtin_resources()
            .into_iter()
            .filter(|r| r.categories.iter().any(|c| c == "all"))
            .map(|r| r.plural)
            .collect();
        in_all.sort();
        let expected = [
            "cronjobs",
            "daemonsets",
            "deployments",
            "horizontalpodautoscalers",
            "jobs",
            "pods",
            "replicasets",
            "replicationcontrollers",
            "services",
            "statefulsets",
        ];
        assert_eq!(in_all, expected);
    }
}
