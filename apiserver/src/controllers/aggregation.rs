//! The ClusterRole aggregation controller: keeps the `rules` of every ClusterRole with an `aggregationRule`
//! equal to the union of the rules of the ClusterRoles its selectors match, in each space separately (as
//! kube-controller-manager's clusterrole-aggregation controller does for a cluster).
//!
//! It learns which spaces changed from the registry's write observer, so an idle server does nothing. Chains
//! (admin aggregates edit, which aggregates view) settle in a few passes: every update it makes is itself a
//! ClusterRole write that queues the space again, until nothing changes.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kspaces_authz::aggregate::aggregated_rules;
use kspaces_storage::{Revision, SpaceName};
use serde_json::Value;
use tokio::sync::Notify;

use crate::authorization::RBAC_GROUP;
use crate::registry::observe::WriteObserver;
use crate::registry::{GenericStore, Part, ResourceInfo, Scope, WriteContext};
use crate::status::{ApiError, ApiResult};

/// The manager of aggregated ClusterRoles' rules, as kube-controller-manager's aggregation controller names itself.
const AGGREGATION_MANAGER: &str = "clusterrole-aggregation-controller";

/// Spaces whose ClusterRoles changed since the controller last looked.
#[derive(Debug, Default)]
pub struct AggregationQueue {
    spaces: Mutex<BTreeSet<SpaceName>>,
    wake: Notify,
}

impl AggregationQueue {
    pub fn push(&self, space: SpaceName) {
        self.spaces.lock().unwrap_or_else(|e| e.into_inner()).insert(space);
        self.wake.notify_one();
    }

    fn take(&self) -> Vec<SpaceName> {
        std::mem::take(&mut *self.spaces.lock().unwrap_or_else(|e| e.into_inner())).into_iter().collect()
    }
}

impl WriteObserver for AggregationQueue {
    fn written(&self, resource: &ResourceInfo, space: &SpaceName, _name: &str, _object: Option<&Value>, _revision: Revision) {
        if resource.is(RBAC_GROUP, "ClusterRole") {
            self.push(space.clone());
        }
    }
}

/// The aggregation controller: what it reads and writes through.
#[derive(Clone)]
pub struct AggregationController {
    pub registry: GenericStore,
    /// The ClusterRole resource.
    pub cluster_roles: Arc<ResourceInfo>,
    pub queue: Arc<AggregationQueue>,
}

impl AggregationController {
    /// Runs forever: waits for queued spaces, then reconciles each (a short pause batches bursts of writes).
    pub async fn run(self, pause: Duration) {
        loop {
            self.queue.wake.notified().await;
            tokio::time::sleep(pause).await;
            for space in self.queue.take() {
                if let Err(err) = self.reconcile(&space).await {
                    tracing::warn!(%err, space = %space, "aggregating ClusterRoles");
                    self.queue.push(space);
                }
            }
        }
    }

    /// Brings every aggregated ClusterRole of `space` up to date.
    pub async fn reconcile(&self, space: &SpaceName) -> ApiResult<()> {
        let scope = Scope::one(space.clone(), None);
        let mut roles = Vec::new();
        self.registry.reader().visit(&self.cluster_roles, &scope, 1000, |_, role| roles.push(role)).await?;
        for role in &roles {
            let Some(rules) = aggregated_rules(role, &roles) else { continue };
            let rules = Value::Array(rules);
            if role.get("rules") == Some(&rules) {
                continue;
            }
            let name = role.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            let write = WriteContext::server(AGGREGATION_MANAGER, "");
            let update = self.registry.guaranteed_update(&self.cluster_roles, &scope, name, Part::Main, &write, |current| {
                let mut desired = current.clone();
                desired["rules"] = rules.clone();
                Ok(desired)
            }).await;
            match update {
                Ok(_) | Err(ApiError { code: 404, .. }) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }
}
