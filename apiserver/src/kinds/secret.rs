//! Secret: `type` defaults to `Opaque`, as in kube.

use std::sync::Arc;

use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::{json, Value};

use super::pod_template::set_default;
use super::{Context, Kind, Rules};
use crate::registry::strategy::{Part, Strategy};
use crate::registry::ResourceInfo;

/// Secret: its strategy.
pub const KIND: Kind = Kind::rules(|_: &Context, rules: &mut Rules| rules.strategy("", "Secret", Arc::new(SecretStrategy)));

pub struct SecretStrategy;

fn defaults(object: &mut Value) {
    if let Some(object) = object.as_object_mut() {
        set_default(object, "type", json!("Opaque"));
    }
}

impl Strategy for SecretStrategy {
    fn prepare_create(&self, _resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        defaults(object);
    }

    fn prepare_update(&self, _resource: &ResourceInfo, _space: &SpaceName, _old: &Value, new: &mut Value, _part: Part) {
        defaults(new);
    }
}
