//! PodDisruptionBudget (`policy/v1`): the status kube always writes (`disruptionsAllowed`, `currentHealthy`,
//! `desiredHealthy`, `expectedPods`: Go fields without `omitempty`), zero until something counts the pods.

use std::sync::Arc;

use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::Value;

use super::pod_template::zero_status;
use super::{Context, Kind, Rules};
use crate::registry::strategy::{Part, Strategy};
use crate::registry::ResourceInfo;

/// PodDisruptionBudget: its strategy.
pub const KIND: Kind = Kind::rules(|_: &Context, rules: &mut Rules| rules.strategy("policy", "PodDisruptionBudget", Arc::new(PdbStrategy)));

/// The status fields kube always writes.
const REQUIRED_STATUS: [&str; 4] = ["disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"];

pub struct PdbStrategy;

impl Strategy for PdbStrategy {
    fn prepare_create(&self, _resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        zero_status(object, &REQUIRED_STATUS);
    }

    fn prepare_update(&self, _resource: &ResourceInfo, _space: &SpaceName, _old: &Value, new: &mut Value, _part: Part) {
        zero_status(new, &REQUIRED_STATUS);
    }
}
