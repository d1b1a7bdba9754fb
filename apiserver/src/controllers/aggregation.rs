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
use crate::registry::store::{Part, WriteObserver};
use crate::registry::{ResourceInfo, Scope, WriteContext};

/// The manager of aggregated ClusterRoles' rules, as kube-controller-manager's aggregation controller names itself.
const AGGREGATION_MANAGER: &str = "clusterrole-aggregation-controller";
use crate::state::ApiServer;
use crate::status::{ApiError, ApiResult};

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

/// Runs forever: waits for queued spaces, then reconciles each (a short pause batches bursts of writes).
pub async fn run(server: Arc<ApiServer>, pause: Duration) {
    loop {
        server.aggregation.wake.notified().await;
        tokio::time::sleep(pause).await;
        for space in server.aggregation.take() {
            if let Err(err) = reconcile(&server, &space).await {
                tracing::warn!(%err, space = %space, "aggregating ClusterRoles");
                server.aggregation.push(space);
            }
        }
    }
}

/// Brings every aggregated ClusterRole of `space` up to date.
pub async fn reconcile(server: &ApiServer, space: &SpaceName) -> ApiResult<()> {
    let Some(resource) = server.resources.by_kind(RBAC_GROUP, "ClusterRole").cloned() else { return Ok(()) };
    let scope = Scope::one(space.clone(), None);
    let mut roles = Vec::new();
    server.registry.for_each(&resource, &scope, 1000, |role| roles.push(role.clone())).await?;
    for role in &roles {
        let Some(rules) = aggregated_rules(role, &roles) else { continue };
        let rules = Value::Array(rules);
        if role.get("rules") == Some(&rules) {
            continue;
        }
        let name = role.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        let update = server.registry.guaranteed_update(&resource, &scope, name, Part::Main, &WriteContext::server(AGGREGATION_MANAGER, ""), |current| {
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
