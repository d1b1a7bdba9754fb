//! VolumeAttachment (`storage.k8s.io/v1`, system space only): the status kube always writes (`attached`, a Go
//! field without `omitempty`), false until an attacher says otherwise.

use std::sync::Arc;

use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::{json, Value};

use super::pod_template::default_status;
use super::{Context, Kind, Rules};
use crate::registry::strategy::{Part, Strategy};
use crate::registry::ResourceInfo;

/// VolumeAttachment: its strategy.
pub const KIND: Kind = Kind::rules(|_: &Context, rules: &mut Rules| rules.strategy("storage.k8s.io", "VolumeAttachment", Arc::new(VolumeAttachmentStrategy)));

pub struct VolumeAttachmentStrategy;

fn attached(object: &mut Value) {
    default_status(object, &[("attached", json!(false))]);
}

impl Strategy for VolumeAttachmentStrategy {
    fn prepare_create(&self, _resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        attached(object);
    }

    fn prepare_update(&self, _resource: &ResourceInfo, _space: &SpaceName, _old: &Value, new: &mut Value, _part: Part) {
        attached(new);
    }
}
