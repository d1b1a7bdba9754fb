//! Pod: kube's pod spec defaults and checks, and graceful deletion (a pod bound to a node is deleted with a
//! grace period; `registry::deletion` holds the rules).

use std::sync::Arc;

use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::Value;

use super::pod_template::{check_pod_spec, default_pod_spec};
use super::{Context, Kind, Rules};
use crate::registry::strategy::{Part, Strategy};
use crate::registry::ResourceInfo;
use crate::status::Cause;

/// Pod: its strategy.
pub const KIND: Kind = Kind::rules(|_: &Context, rules: &mut Rules| rules.strategy("", "Pod", Arc::new(PodStrategy)));

pub struct PodStrategy;

impl Strategy for PodStrategy {
    fn prepare_create(&self, _resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        if let Some(spec) = object.get_mut("spec") {
            default_pod_spec(spec);
        }
    }

    fn prepare_update(&self, _resource: &ResourceInfo, _space: &SpaceName, _old: &Value, new: &mut Value, _part: Part) {
        if let Some(spec) = new.get_mut("spec") {
            default_pod_spec(spec);
        }
    }

    fn validate(&self, _resource: &ResourceInfo, object: &Value, _old: Option<&Value>, causes: &mut Vec<Cause>) {
        if let Some(spec) = object.get("spec") {
            check_pod_spec("spec", spec, causes);
        }
    }

    fn graceful_delete(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::builtin::builtin_resources;
    use serde_json::json;

    #[test]
    fn pod_specs_need_unique_named_containers() {
        let pods = builtin_resources().into_iter().find(|r| r.is("", "Pod")).unwrap_or_else(|| panic!("no Pod row"));
        let fields = |object: Value| {
            let mut causes = Vec::new();
            PodStrategy.validate(&pods, &object, None, &mut causes);
            causes.into_iter().map(|c| c.field).collect::<Vec<_>>()
        };
        assert_eq!(fields(json!({"spec": {"containers": []}})), ["spec.containers"]);
        let duplicate = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]}});
        assert_eq!(fields(duplicate), ["spec.containers[1].name"]);
    }
}
