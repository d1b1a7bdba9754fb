//! ResourceQuota: kube's quota in a namespace, enforced exactly by `crate::quota` inside every write. Its
//! `status` (`hard` as the spec says, `used` as counted now) is computed when read and never stored, so it never
//! lags behind the objects; `spec.hard` values must be non-negative quantities, as kube validates them.

use std::sync::Arc;

use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::Value;

use super::{Context, Kind, Rules};
use crate::quota::resource_quota::milli;
use crate::quota::Quotas;
use crate::registry::store::{space_of_cluster, CLUSTER_ANNOTATION};
use crate::registry::strategy::{Part, Strategy, View};
use crate::registry::ResourceInfo;
use crate::status::Cause;

/// ResourceQuota: its strategy.
pub const KIND: Kind = Kind::rules(|context: &Context, rules: &mut Rules| {
    rules.strategy("", "ResourceQuota", Arc::new(ResourceQuotaStrategy { quotas: context.quotas.clone() }));
});

pub struct ResourceQuotaStrategy {
    quotas: Arc<Quotas>,
}

fn forget_status(object: &mut Value) {
    if let Some(object) = object.as_object_mut() {
        object.remove("status");
    }
}

impl View for ResourceQuotaStrategy {
    fn to_request(&self, _resource: &ResourceInfo, object: &mut Value) {
        let cluster = object.pointer("/metadata/annotations").and_then(|a| a.get(CLUSTER_ANNOTATION)).and_then(Value::as_str);
        let namespace = object.pointer("/metadata/namespace").and_then(Value::as_str);
        if let (Some(space), Some(namespace)) = (cluster.and_then(space_of_cluster), namespace) {
            let status = self.quotas.quota_status(&space, namespace, object);
            object["status"] = status;
        }
    }
}

impl Strategy for ResourceQuotaStrategy {
    fn view(&self) -> Option<&dyn View> {
        Some(self)
    }

    fn prepare_create(&self, _resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        forget_status(object);
    }

    fn prepare_update(&self, _resource: &ResourceInfo, _space: &SpaceName, _old: &Value, new: &mut Value, _part: Part) {
        forget_status(new);
    }

    fn validate(&self, _resource: &ResourceInfo, object: &Value, _old: Option<&Value>, causes: &mut Vec<Cause>) {
        let hard = object.pointer("/spec/hard").and_then(Value::as_object).into_iter().flatten();
        for (name, value) in hard {
            let field = format!("spec.hard[{name}]");
            match value.as_str().map(|v| (v, milli(v))) {
                Some((_, Some(amount))) if amount >= 0 => {}
                Some((text, Some(_))) => causes.push(Cause::invalid(field, text, "must be greater than or equal to 0")),
                _ => causes.push(Cause::invalid(field, value.as_str().unwrap_or(&value.to_string()),
                    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")),
            }
        }
    }
}
