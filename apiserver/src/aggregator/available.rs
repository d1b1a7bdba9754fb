//! The `Available` condition of every APIService, as kube-aggregator's availability controller keeps it: `Local`
//! ones are always available; one with a `service` is when the Service has a ready endpoint and its server
//! answers `GET /apis/<group>/<version>` with a 2xx `APIResourceList` within 5 s (reasons `ServiceNotFound`,
//! `MissingEndpoints`, `FailedDiscoveryCheck` otherwise). The answer is also what discovery shows of the
//! group-version. Every replica asks (each serves discovery from its own answers); only the one running the
//! controllers writes the condition, and only when it changes.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use serde_json::{json, Value};

use super::{proxy, Aggregator};
use crate::kinds::api_service::ApiService;
use crate::registry::{Part, ResourceInfo, Scope, WriteContext};
use crate::status::ApiError;

/// How long a server has to answer the check.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// The manager of the condition's writes, as kube-aggregator names its controller.
const MANAGER: &str = "kube-apiserver";

/// What the checker reads and writes through.
pub struct Availability {
    pub aggregator: Arc<Aggregator>,
    /// The APIService resource.
    pub api_services: Arc<ResourceInfo>,
    /// 1 while this replica runs the controllers (and so writes the conditions).
    pub leading: Gauge,
}

impl Availability {
    /// Checks every APIService every `every`, and at once when one is written.
    pub async fn run(self, every: Duration) {
        loop {
            for api in self.aggregator.apis.all() {
                self.check(&api).await;
            }
            let changed = self.aggregator.apis.changed();
            let _ = tokio::time::timeout(every, changed).await;
        }
    }

    async fn check(&self, api: &ApiService) {
        let (available, reason, message) = match &api.service {
            None => (true, "Local", "Local APIServices are always available".to_owned()),
            Some(_) => match self.aggregator.address(api).await {
                Err(why) => (false, if why.contains("not present") { "ServiceNotFound" } else { "MissingEndpoints" }, why),
                Ok(address) => match proxy::discover(&address, api, ANSWER_WITHIN).await {
                    Ok(list) => {
                        self.aggregator.apis.discovered(&api.name, Some(list));
                        (true, "Passed", "all checks passed".to_owned())
                    }
                    Err(why) => (false, "FailedDiscoveryCheck", format!("failing or missing response from https://{address}/apis/{}/{}: {why}", api.group, api.version)),
                },
            },
        };
        if !available {
            self.aggregator.apis.discovered(&api.name, None);
        }
        let stored = (api.available, api.reason.as_str(), api.message.as_str());
        if self.leading.get() == 1 && stored != (available, reason, message.as_str()) {
            if let Err(err) = self.write(api, available, reason, &message).await {
                tracing::warn!(%err, apiservice = %api.name, "writing an APIService's Available condition");
            }
        }
    }

    /// Writes the condition when it differs from the stored one.
    async fn write(&self, api: &ApiService, available: bool, reason: &str, message: &str) -> Result<(), ApiError> {
        let status = if available { "True" } else { "False" };
        let scope = Scope::one(kspaces_storage::SpaceName::system(), None);
        let write = WriteContext::server(MANAGER, "status");
        let result = self.aggregator.registry.guaranteed_update(&self.api_services, &scope, &api.name, Part::Status, &write, |old| {
            let conditions = old.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
            let current = conditions.iter().find(|c| c.get("type") == Some(&json!("Available")));
            let same = |key: &str, value: &str| current.and_then(|c| c.get(key)).and_then(Value::as_str) == Some(value);
            if same("status", status) && same("reason", reason) && same("message", message) {
                return Ok(old.clone());
            }
            let since = match current.filter(|_| same("status", status)).and_then(|c| c.get("lastTransitionTime")) {
                Some(time) => time.clone(),
                None => json!(chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()),
            };
            let condition = json!({"type": "Available", "status": status, "lastTransitionTime": since, "reason": reason, "message": message});
            let mut conditions: Vec<Value> = conditions.into_iter().filter(|c| c.get("type") != Some(&json!("Available"))).collect();
            conditions.push(condition);
            let mut new = old.clone();
            new["status"] = json!({"conditions": conditions});
            Ok(new)
        }).await;
        match result {
            Ok(_) | Err(ApiError { code: 404, .. }) => Ok(()),
            Err(err) => Err(err),
        }
    }
}
