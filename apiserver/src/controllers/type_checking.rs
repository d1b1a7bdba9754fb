//! The ValidatingAdmissionPolicy type-checking controller, as kube-apiserver's: after each write of a policy whose
//! `status.observedGeneration` is behind its `metadata.generation`, it writes the policy's status subresource,
//! `observedGeneration` and `typeChecking` (`kinds::admission_policy::type_check`: the validations' field
//! selections checked against the schemas of the kinds the policy names, built-in kinds' OpenAPI definitions and
//! the policy's space's CRDs). It learns of work from the registry's write observer, primed with every stored
//! policy at startup, never on the request path; its own status write is behind no generation, so it settles.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kspaces_storage::{Revision, SpaceName};
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::kinds::admission_policy::matching::GROUP;
use crate::kinds::admission_policy::type_check::{self, Checked};
use crate::openapi::{builtin_definitions, Form};
use crate::registry::observe::WriteObserver;
use crate::registry::{GenericStore, Part, ResourceInfo, Scope, Spaces, WriteContext};
use crate::resolver::Resolver;
use crate::status::{ApiError, ApiResult};

const POLICY: &str = "ValidatingAdmissionPolicy";
/// The manager of the status it writes, as kube-apiserver's own controller names itself.
const MANAGER: &str = "validatingadmissionpolicy-status-controller";

/// Policies (space, name) whose status is behind their spec.
#[derive(Debug, Default)]
pub struct TypeCheckingQueue {
    policies: Mutex<BTreeSet<(SpaceName, String)>>,
    wake: Notify,
}

impl TypeCheckingQueue {
    fn push(&self, space: SpaceName, name: String) {
        self.policies.lock().unwrap_or_else(|e| e.into_inner()).insert((space, name));
        self.wake.notify_one();
    }

    fn take(&self) -> Vec<(SpaceName, String)> {
        std::mem::take(&mut *self.policies.lock().unwrap_or_else(|e| e.into_inner())).into_iter().collect()
    }
}

impl WriteObserver for TypeCheckingQueue {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[(GROUP, POLICY)]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, _revision: Revision) {
        let Some(object) = object.filter(|_| resource.is(GROUP, POLICY)) else { return };
        if !checked(object) {
            self.push(space.clone(), name.to_owned());
        }
    }
}

/// Whether `policy`'s status was written for its current generation.
fn checked(policy: &Value) -> bool {
    let generation = policy.pointer("/metadata/generation");
    generation.is_some() && policy.pointer("/status/observedGeneration") == generation
}

/// The controller: what it reads and writes through.
#[derive(Clone)]
pub struct TypeCheckingController {
    pub registry: GenericStore,
    /// The ValidatingAdmissionPolicy resource.
    pub policies: Arc<ResourceInfo>,
    pub resolver: Arc<Resolver>,
    pub queue: Arc<TypeCheckingQueue>,
}

impl TypeCheckingController {
    /// Runs forever: waits for queued policies, then writes each one's status (a short pause batches bursts).
    pub async fn run(self, pause: Duration) {
        loop {
            self.queue.wake.notified().await;
            tokio::time::sleep(pause).await;
            for (space, name) in self.queue.take() {
                if let Err(err) = self.check(&space, &name).await {
                    tracing::warn!(%err, space = %space, policy = %name, "type checking a ValidatingAdmissionPolicy");
                    self.queue.push(space, name);
                }
            }
        }
    }

    /// Writes `status.observedGeneration` and `status.typeChecking` of policy `name` of `space`.
    pub async fn check(&self, space: &SpaceName, name: &str) -> ApiResult<()> {
        let scope = Scope::one(space.clone(), None);
        let write = WriteContext::server(MANAGER, "status");
        let update = self.registry.guaranteed_update(&self.policies, &scope, name, Part::Status, &write, |current| {
            let mut new = current.clone();
            if checked(current) {
                return Ok(new);
            }
            if !new.get("status").is_some_and(Value::is_object) {
                new["status"] = json!({});
            }
            new["status"]["observedGeneration"] = current.pointer("/metadata/generation").cloned().unwrap_or(json!(1));
            new["status"]["typeChecking"] = type_check::type_checking(current, self.kinds(space, current), builtin_definitions(Form::V3));
            Ok(new)
        }).await;
        match update {
            Ok(_) | Err(ApiError { code: 404, .. }) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// The kinds `policy` names exactly, with their schemas, as `space` serves them.
    fn kinds(&self, space: &SpaceName, policy: &Value) -> Vec<Checked> {
        let spaces = Spaces::One(space.clone());
        type_check::named_resources(policy).into_iter().filter_map(|(group, version, plural)| {
            let row = self.resolver.lookup(&spaces, &group, &version, &plural)?;
            let schema = match &row.custom {
                Some(custom) => custom.version()?.schema.source().clone(),
                None => builtin_definitions(Form::V3).get(row.definition.as_deref()?)?.clone(),
            };
            Some(Checked { group, version, kind: row.kind.clone(), schema })
        }).collect()
    }
}
