//! Service: kube's defaults (`ClusterIP`, no session affinity, TCP ports whose target is their own number).

use std::sync::Arc;

use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::{json, Value};

use super::pod_template::set_default;
use super::{Context, Kind, Rules};
use crate::registry::strategy::{Part, Strategy};
use crate::registry::ResourceInfo;

/// Service: its strategy.
pub const KIND: Kind = Kind::rules(|_: &Context, rules: &mut Rules| rules.strategy("", "Service", Arc::new(ServiceStrategy)));

pub struct ServiceStrategy;

fn defaults(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else { return };
    set_default(spec, "type", json!("ClusterIP"));
    set_default(spec, "sessionAffinity", json!("None"));
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(port, "protocol", json!("TCP"));
            if let Some(number) = port.get("port").cloned() {
                set_default(port, "targetPort", number);
            }
        }
    }
}

impl Strategy for ServiceStrategy {
    fn prepare_create(&self, _resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        defaults(object);
    }

    fn prepare_update(&self, _resource: &ResourceInfo, _space: &SpaceName, _old: &Value, new: &mut Value, _part: Part) {
        defaults(new);
    }
}
