//! kube's defaulting (its `SetDefaults_*` functions and `+default` markers) for the built-in kinds whose only rule
//! is defaulting: one row per kind, each a function over the JSON value (a few map lookups; never a typed round
//! trip). Kinds with rules of their own call their defaults from their own strategy; the pod spec's defaults,
//! which every pod template shares, are `pod_spec`'s. docs/defaults.md lists what each kind gets.

pub(crate) mod groups;
pub(crate) mod pod_spec;
pub(crate) mod storage;
pub(crate) mod workloads;

use std::sync::Arc;

use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::Value;

use super::{Context, Kind, Rules};
use crate::registry::strategy::{Part, Strategy};
use crate::registry::ResourceInfo;

/// Whether defaults are applied to a new object or to an update's (kube defaults every decoded body; some kinds
/// also reset their status on create).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Write {
    Create,
    Update,
}

/// One kind's defaults.
type Defaults = fn(&mut Value, Write);

/// The kinds whose only rule is kube's defaulting, by group and kind.
const DEFAULTED: &[(&str, &str, Defaults)] = &[
    ("", "PodTemplate", groups::pod_template),
    ("", "Endpoints", groups::endpoints),
    ("", "PersistentVolume", storage::persistent_volume),
    ("", "PersistentVolumeClaim", storage::persistent_volume_claim),
    ("storage.k8s.io", "StorageClass", storage::storage_class),
    ("storage.k8s.io", "CSIDriver", storage::csi_driver),
    ("scheduling.k8s.io", "PriorityClass", groups::priority_class),
    ("networking.k8s.io", "NetworkPolicy", groups::network_policy),
    ("networking.k8s.io", "IngressClass", groups::ingress_class),
    ("discovery.k8s.io", "EndpointSlice", groups::endpoint_slice),
    ("rbac.authorization.k8s.io", "RoleBinding", groups::role_binding),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding", groups::role_binding),
];

/// The defaulted kinds: one strategy each.
pub const KIND: Kind = Kind::rules(|_: &Context, rules: &mut Rules| {
    for (group, kind, defaults) in DEFAULTED {
        rules.strategy(group, kind, Arc::new(Defaulted(*defaults)));
    }
});

/// The strategy of a kind whose only rule is defaulting.
struct Defaulted(Defaults);

impl Strategy for Defaulted {
    fn prepare_create(&self, _resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        (self.0)(object, Write::Create);
    }

    fn prepare_update(&self, _resource: &ResourceInfo, _space: &SpaceName, _old: &Value, new: &mut Value, _part: Part) {
        (self.0)(new, Write::Update);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::builtin::builtin_resources;

    #[test]
    fn every_defaulted_kind_is_served() {
        let served = builtin_resources();
        for (group, kind, _) in DEFAULTED {
            assert!(served.iter().any(|r| r.is(group, kind)), "{group}/{kind} has no row");
        }
    }
}
