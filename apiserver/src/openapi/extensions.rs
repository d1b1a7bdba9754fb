//! The `x-kubernetes-*` extensions k8s-openapi's schemas lack, keyed by (definition, field).
//!
//! The values come from the `patchStrategy`/`patchMergeKey` struct tags and the `+listType`, `+listMapKey`,
//! `+mapType` and `+structType` markers of k8s.io/api v1.33. Strategic merge patch, `kubectl apply` and
//! server-side apply read them; a wrong row silently changes how lists merge, so every row is a fact
//! about upstream, not a preference.

use serde_json::{json, Map, Value};

use super::Form;

/// How a list field is treated by `x-kubernetes-list-type`.
#[derive(Clone, Copy)]
enum ListType {
    Unset,
    Atomic,
    Set,
    Map(&'static [&'static str]),
}

/// Extensions of one field of one definition.
struct FieldRule {
    /// Definition name without `io.k8s.api.` (or `io.k8s.apimachinery.pkg.apis.` for `meta.v1`).
    definition: &'static str,
    field: &'static str,
    patch_strategy: Option<&'static str>,
    patch_merge_key: Option<&'static str>,
    list_type: ListType,
    /// `x-kubernetes-map-type` for map-valued fields such as `PodSpec.nodeSelector`.
    map_type: Option<&'static str>,
}

const fn rule(definition: &'static str, field: &'static str) -> FieldRule {
    FieldRule {
        definition,
        field,
        patch_strategy: None,
        patch_merge_key: None,
        list_type: ListType::Unset,
        map_type: None,
    }
}

/// `patchStrategy:"merge" patchMergeKey:"<key>"`, `+listType=map +listMapKey=<key>`: the common keyed list.
const fn merge_map(
    definition: &'static str,
    field: &'static str,
    key: &'static str,
    map_keys: &'static [&'static str],
) -> FieldRule {
    FieldRule {
        patch_strategy: Some("merge"),
        patch_merge_key: Some(key),
        list_type: ListType::Map(map_keys),
        ..rule(definition, field)
    }
}

/// `+listType=atomic`: the list is replaced as a whole.
const fn atomic(definition: &'static str, field: &'static str) -> FieldRule {
    FieldRule {
        list_type: ListType::Atomic,
        ..rule(definition, field)
    }
}

/// The `conditions` list of a status: merged by `type`.
const fn conditions(definition: &'static str) -> FieldRule {
    merge_map(definition, "conditions", "type", &["type"])
}

const NAME: &[&str] = &["name"];

/// Field-level rules. Lists not named here carry no extension upstream either (as far as this table knows).
const FIELD_RULES: &[FieldRule] = &[
    // meta/v1
    FieldRule {
        patch_strategy: Some("merge"),
        list_type: ListType::Set,
        ..rule("meta.v1.ObjectMeta", "finalizers")
    },
    merge_map("meta.v1.ObjectMeta", "ownerReferences", "uid", &["uid"]),
    atomic("meta.v1.ObjectMeta", "managedFields"),
    atomic("meta.v1.LabelSelector", "matchExpressions"),
    atomic("meta.v1.LabelSelectorRequirement", "values"),
    atomic("meta.v1.StatusDetails", "causes"),
    // core/v1 PodSpec
    FieldRule {
        patch_strategy: Some("merge,retainKeys"),
        ..merge_map("core.v1.PodSpec", "volumes", "name", NAME)
    },
    merge_map("core.v1.PodSpec", "initContainers", "name", NAME),
    merge_map("core.v1.PodSpec", "containers", "name", NAME),
    merge_map("core.v1.PodSpec", "ephemeralContainers", "name", NAME),
    merge_map("core.v1.PodSpec", "imagePullSecrets", "name", NAME),
    merge_map("core.v1.PodSpec", "hostAliases", "ip", &["ip"]),
    atomic("core.v1.PodSpec", "tolerations"),
    merge_map(
        "core.v1.PodSpec",
        "topologySpreadConstraints",
        "topologyKey",
        &["topologyKey", "whenUnsatisfiable"],
    ),
    atomic("core.v1.PodSpec", "readinessGates"),
    FieldRule {
        patch_strategy: Some("merge,retainKeys"),
        ..merge_map("core.v1.PodSpec", "resourceClaims", "name", NAME)
    },
    merge_map("core.v1.PodSpec", "schedulingGates", "name", NAME),
    FieldRule {
        map_type: Some("atomic"),
        ..rule("core.v1.PodSpec", "nodeSelector")
    },
    atomic("core.v1.PodSecurityContext", "supplementalGroups"),
    atomic("core.v1.PodSecurityContext", "sysctls"),
    atomic("core.v1.PodDNSConfig", "nameservers"),
    atomic("core.v1.PodDNSConfig", "searches"),
    atomic("core.v1.PodDNSConfig", "options"),
    atomic("core.v1.HostAlias", "hostnames"),
    // core/v1 Container and EphemeralContainer (same tags upstream)
    merge_map(
        "core.v1.Container",
        "ports",
        "containerPort",
        &["containerPort", "protocol"],
    ),
    merge_map("core.v1.Container", "env", "name", NAME),
    atomic("core.v1.Container", "envFrom"),
    merge_map(
        "core.v1.Container",
        "volumeMounts",
        "mountPath",
        &["mountPath"],
    ),
    merge_map(
        "core.v1.Container",
        "volumeDevices",
        "devicePath",
        &["devicePath"],
    ),
    atomic("core.v1.Container", "resizePolicy"),
    atomic("core.v1.Container", "command"),
    atomic("core.v1.Container", "args"),
    merge_map(
        "core.v1.EphemeralContainer",
        "ports",
        "containerPort",
        &["containerPort", "protocol"],
    ),
    merge_map("core.v1.EphemeralContainer", "env", "name", NAME),
    atomic("core.v1.EphemeralContainer", "envFrom"),
    merge_map(
        "core.v1.EphemeralContainer",
        "volumeMounts",
        "mountPath",
        &["mountPath"],
    ),
    merge_map(
        "core.v1.EphemeralContainer",
        "volumeDevices",
        "devicePath",
        &["devicePath"],
    ),
    atomic("core.v1.EphemeralContainer", "resizePolicy"),
    atomic("core.v1.EphemeralContainer", "command"),
    atomic("core.v1.EphemeralContainer", "args"),
    FieldRule {
        list_type: ListType::Map(NAME),
        ..rule("core.v1.ResourceRequirements", "claims")
    },
    atomic("core.v1.Capabilities", "add"),
    atomic("core.v1.Capabilities", "drop"),
    atomic("core.v1.ExecAction", "command"),
    // core/v1 volumes and scheduling
    atomic("core.v1.ConfigMapVolumeSource", "items"),
    atomic("core.v1.SecretVolumeSource", "items"),
    atomic("core.v1.ProjectedVolumeSource", "sources"),
    atomic("core.v1.DownwardAPIVolumeSource", "items"),
    atomic("core.v1.NodeSelector", "nodeSelectorTerms"),
    atomic("core.v1.NodeSelectorTerm", "matchExpressions"),
    atomic("core.v1.NodeSelectorTerm", "matchFields"),
    atomic("core.v1.NodeSelectorRequirement", "values"),
    atomic(
        "core.v1.NodeAffinity",
        "preferredDuringSchedulingIgnoredDuringExecution",
    ),
    atomic(
        "core.v1.PodAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
    ),
    atomic(
        "core.v1.PodAffinity",
        "preferredDuringSchedulingIgnoredDuringExecution",
    ),
    atomic(
        "core.v1.PodAntiAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
    ),
    atomic(
        "core.v1.PodAntiAffinity",
        "preferredDuringSchedulingIgnoredDuringExecution",
    ),
    atomic("core.v1.PodAffinityTerm", "namespaces"),
    atomic("core.v1.PodAffinityTerm", "matchLabelKeys"),
    atomic("core.v1.PodAffinityTerm", "mismatchLabelKeys"),
    atomic("core.v1.TopologySpreadConstraint", "matchLabelKeys"),
    // core/v1 statuses
    conditions("core.v1.PodStatus"),
    merge_map("core.v1.PodStatus", "podIPs", "ip", &["ip"]),
    FieldRule {
        patch_strategy: Some("merge"),
        patch_merge_key: Some("ip"),
        ..atomic("core.v1.PodStatus", "hostIPs")
    },
    atomic("core.v1.PodStatus", "initContainerStatuses"),
    atomic("core.v1.PodStatus", "containerStatuses"),
    atomic("core.v1.PodStatus", "ephemeralContainerStatuses"),
    FieldRule {
        patch_strategy: Some("merge,retainKeys"),
        ..merge_map("core.v1.PodStatus", "resourceClaimStatuses", "name", NAME)
    },
    conditions("core.v1.NodeStatus"),
    merge_map("core.v1.NodeStatus", "addresses", "type", &["type"]),
    atomic("core.v1.NodeStatus", "images"),
    atomic("core.v1.NodeStatus", "volumesInUse"),
    atomic("core.v1.NodeStatus", "volumesAttached"),
    FieldRule {
        patch_strategy: Some("merge"),
        list_type: ListType::Set,
        ..rule("core.v1.NodeSpec", "podCIDRs")
    },
    atomic("core.v1.NodeSpec", "taints"),
    conditions("core.v1.NamespaceStatus"),
    atomic("core.v1.NamespaceSpec", "finalizers"),
    conditions("core.v1.PersistentVolumeClaimStatus"),
    atomic("core.v1.PersistentVolumeClaimStatus", "accessModes"),
    atomic("core.v1.PersistentVolumeClaimSpec", "accessModes"),
    atomic("core.v1.PersistentVolumeSpec", "accessModes"),
    atomic("core.v1.PersistentVolumeSpec", "mountOptions"),
    conditions("core.v1.ReplicationControllerStatus"),
    // core/v1 services, endpoints, accounts, quotas
    merge_map(
        "core.v1.ServiceSpec",
        "ports",
        "port",
        &["port", "protocol"],
    ),
    atomic("core.v1.ServiceSpec", "clusterIPs"),
    atomic("core.v1.ServiceSpec", "externalIPs"),
    atomic("core.v1.ServiceSpec", "loadBalancerSourceRanges"),
    atomic("core.v1.ServiceSpec", "ipFamilies"),
    conditions("core.v1.ServiceStatus"),
    atomic("core.v1.LoadBalancerStatus", "ingress"),
    atomic("core.v1.LoadBalancerIngress", "ports"),
    atomic("core.v1.Endpoints", "subsets"),
    atomic("core.v1.EndpointSubset", "addresses"),
    atomic("core.v1.EndpointSubset", "notReadyAddresses"),
    atomic("core.v1.EndpointSubset", "ports"),
    merge_map("core.v1.ServiceAccount", "secrets", "name", NAME),
    atomic("core.v1.ServiceAccount", "imagePullSecrets"),
    atomic("core.v1.ResourceQuotaSpec", "scopes"),
    atomic("core.v1.ScopeSelector", "matchExpressions"),
    atomic("core.v1.LimitRangeSpec", "limits"),
    // apps/v1
    FieldRule {
        patch_strategy: Some("retainKeys"),
        ..rule("apps.v1.DeploymentSpec", "strategy")
    },
    conditions("apps.v1.DeploymentStatus"),
    conditions("apps.v1.ReplicaSetStatus"),
    conditions("apps.v1.StatefulSetStatus"),
    conditions("apps.v1.DaemonSetStatus"),
    atomic("apps.v1.StatefulSetSpec", "volumeClaimTemplates"),
    // batch/v1: job conditions merge by type but are an atomic list for server-side apply.
    FieldRule {
        patch_strategy: Some("merge"),
        patch_merge_key: Some("type"),
        ..atomic("batch.v1.JobStatus", "conditions")
    },
    atomic("batch.v1.CronJobStatus", "active"),
    // policy/v1
    conditions("policy.v1.PodDisruptionBudgetStatus"),
    // networking/v1
    atomic("networking.v1.IngressSpec", "rules"),
    atomic("networking.v1.IngressSpec", "tls"),
    atomic("networking.v1.IngressTLS", "hosts"),
    atomic("networking.v1.HTTPIngressRuleValue", "paths"),
    atomic("networking.v1.IngressLoadBalancerStatus", "ingress"),
    atomic("networking.v1.NetworkPolicySpec", "ingress"),
    atomic("networking.v1.NetworkPolicySpec", "egress"),
    atomic("networking.v1.NetworkPolicySpec", "policyTypes"),
    atomic("networking.v1.NetworkPolicyIngressRule", "ports"),
    atomic("networking.v1.NetworkPolicyIngressRule", "from"),
    atomic("networking.v1.NetworkPolicyEgressRule", "ports"),
    atomic("networking.v1.NetworkPolicyEgressRule", "to"),
    // discovery/v1
    atomic("discovery.v1.EndpointSlice", "endpoints"),
    atomic("discovery.v1.EndpointSlice", "ports"),
    FieldRule {
        list_type: ListType::Set,
        ..rule("discovery.v1.Endpoint", "addresses")
    },
    // rbac/v1
    atomic("rbac.v1.Role", "rules"),
    atomic("rbac.v1.ClusterRole", "rules"),
    atomic("rbac.v1.RoleBinding", "subjects"),
    atomic("rbac.v1.ClusterRoleBinding", "subjects"),
    atomic("rbac.v1.PolicyRule", "verbs"),
    atomic("rbac.v1.PolicyRule", "apiGroups"),
    atomic("rbac.v1.PolicyRule", "resources"),
    atomic("rbac.v1.PolicyRule", "resourceNames"),
    atomic("rbac.v1.PolicyRule", "nonResourceURLs"),
    atomic("rbac.v1.AggregationRule", "clusterRoleSelectors"),
    // storage/v1
    atomic("storage.v1.StorageClass", "mountOptions"),
    atomic("storage.v1.StorageClass", "allowedTopologies"),
];

/// Definitions marked `+structType=atomic` (`x-kubernetes-map-type: atomic`): replaced as a whole by apply.
const ATOMIC_STRUCTS: &[&str] = &[
    "meta.v1.LabelSelector",
    "core.v1.ObjectReference",
    "core.v1.LocalObjectReference",
    "core.v1.TypedLocalObjectReference",
    "core.v1.ConfigMapKeySelector",
    "core.v1.SecretKeySelector",
    "core.v1.ObjectFieldSelector",
    "core.v1.ResourceFieldSelector",
    "core.v1.NodeSelector",
    "core.v1.NodeSelectorTerm",
    "core.v1.TopologySelectorTerm",
    "core.v1.SecretReference",
];

/// `+default` markers of upstream fields that are keys of `map` lists: server-side apply identifies an item that
/// omits such a key by its default (`ports: [{containerPort: 80}]` is the item `containerPort=80,protocol=TCP`).
const KEY_DEFAULTS: &[(&str, &str, &str)] = &[
    ("core.v1.ContainerPort", "protocol", "TCP"),
    ("core.v1.ServicePort", "protocol", "TCP"),
];

/// The full definition name of a table key.
fn full_name(short: &str) -> String {
    if short.starts_with("meta.v1.") {
        format!("io.k8s.apimachinery.pkg.apis.{short}")
    } else {
        format!("io.k8s.api.{short}")
    }
}

/// Adds every table row to `definitions`; rows whose definition or field is absent are skipped.
pub(crate) fn apply(definitions: &mut Map<String, Value>, form: Form) {
    for rule in FIELD_RULES {
        let property = definitions
            .get_mut(&full_name(rule.definition))
            .and_then(|schema| schema.get_mut("properties"))
            .and_then(|properties| properties.get_mut(rule.field))
            .and_then(Value::as_object_mut);
        if let Some(property) = property {
            if form == Form::V3 {
                wrap_ref_in_all_of(property);
            }
            rule.write(property);
        }
    }
    for (definition, field, default) in KEY_DEFAULTS {
        let property = definitions
            .get_mut(&full_name(definition))
            .and_then(|schema| schema.get_mut("properties"))
            .and_then(|properties| properties.get_mut(*field))
            .and_then(Value::as_object_mut);
        if let Some(property) = property {
            property.insert("default".into(), json!(default));
        }
    }
    for name in ATOMIC_STRUCTS {
        if let Some(schema) = definitions
            .get_mut(&full_name(name))
            .and_then(Value::as_object_mut)
        {
            schema.insert("x-kubernetes-map-type".into(), json!("atomic"));
        }
    }
}

/// OpenAPI 3.0 ignores siblings of `$ref`, so a bare reference that gains extensions moves into `allOf`.
fn wrap_ref_in_all_of(property: &mut Map<String, Value>) {
    if let Some(reference) = property.remove("$ref") {
        property.insert("allOf".into(), json!([{ "$ref": reference }]));
    }
}

impl FieldRule {
    fn write(&self, property: &mut Map<String, Value>) {
        if let Some(strategy) = self.patch_strategy {
            property.insert("x-kubernetes-patch-strategy".into(), json!(strategy));
        }
        if let Some(key) = self.patch_merge_key {
            property.insert("x-kubernetes-patch-merge-key".into(), json!(key));
        }
        if let Some(map_type) = self.map_type {
            property.insert("x-kubernetes-map-type".into(), json!(map_type));
        }
        let list_type = match self.list_type {
            ListType::Unset => return,
            ListType::Atomic => "atomic",
            ListType::Set => "set",
            ListType::Map(keys) => {
                property.insert("x-kubernetes-list-map-keys".into(), json!(keys));
                "map"
            }
        };
        property.insert("x-kubernetes-list-type".into(), json!(list_type));
    }
}

/// Every (definition, field) the table names, for the test that checks no row refers to a missing field.
#[cfg(test)]
pub(crate) fn table_keys() -> Vec<(String, &'static str)> {
    FIELD_RULES
        .iter()
        .map(|rule| (full_name(rule.definition), rule.field))
        .collect()
}
