//! Admission: the rules that may refuse a write after its body is decoded and the object it replaces is read,
//! one ordered list run by `GenericStore` inside the write (as kube-apiserver's admission chain runs inside its
//! store's create, update and delete), so a rule always judges the object actually being replaced.
//!
//! Plugins live beside the kind they guard (`crate::kinds`); their order is the table in `kinds.rs`.

mod metrics;
mod reinvocation;

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::Value;

use super::{GenericStore, Part, ResourceInfo};
use crate::status::ApiResult;
pub use metrics::{AdmissionMetrics, WebhookOutcome};
pub use reinvocation::Reinvocation;

/// What a write does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

/// When a rule runs: before the kind's strategy completes the object (kube's mutating admission: is there a place
/// for the object at all), or after it is completed and validated (kube's validating admission: the object as it
/// will be stored, in the request's form).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AdmissionPhase {
    #[default]
    Mutating,
    Validating,
}

/// One write, as admission sees it.
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a> {
    pub operation: Operation,
    pub resource: &'a ResourceInfo,
    pub space: &'a SpaceName,
    /// The object's namespace (namespaced resources only).
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    /// The object written (create, update): as the client sent it in the mutating phase, as completed by the
    /// kind's strategy in the validating phase.
    pub object: Option<&'a Value>,
    /// The object the write replaces or deletes (update, delete), in the request's form.
    pub old: Option<&'a Value>,
    pub part: Part,
    /// Who asks; `None` for the server's own writes (bootstrap, controllers), which requests' rules do not bind.
    pub caller: Option<&'a Caller>,
    pub dry_run: bool,
    /// Where warnings for the response go (admission webhooks' answers); `None` where a write has none.
    pub warnings: Option<&'a super::write::Warnings>,
}

/// A request an access review asks about, without an object (`kubectl auth can-i`): `*` for any verb, group,
/// resource or name.
#[derive(Clone, Copy, Debug)]
pub struct Question<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    /// The plural, or `*`.
    pub resource: &'a str,
    /// Empty for none.
    pub name: &'a str,
    pub space: &'a SpaceName,
}

impl Question<'_> {
    /// Whether the question covers `group`/`resource` (exactly, or by `*`).
    pub fn covers(&self, group: &str, resource: &str) -> bool {
        (self.group == "*" || self.group == group) && (self.resource == "*" || self.resource == resource)
    }

    /// Whether the question covers one of `verbs`.
    pub fn verb_in(&self, verbs: &[&str]) -> bool {
        self.verb == "*" || verbs.contains(&self.verb)
    }
}

/// One admission rule.
#[async_trait]
pub trait Admission: Send + Sync {
    /// Whether the rule looks at this write at all (cheap; most writes concern no rule).
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool;

    /// When the rule runs.
    fn phase(&self) -> AdmissionPhase {
        AdmissionPhase::Mutating
    }

    /// Refuses the write with the `Status` a client gets, or lets it through. `registry` is for the reads a
    /// rule needs (a namespace's phase).
    async fn admit(&self, registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()>;

    /// A mutating rule's defaults for the object a create or update writes, before the kind's strategy completes
    /// and validates it (kube's LimitRanger setting containers' resources): `object` is the object as the request
    /// sent it, `attributes.object` is `None`. Runs after every rule's `admit` of the mutating phase, for the rules
    /// of that phase that handle the write.
    async fn default(&self, _registry: &GenericStore, _attributes: &Attributes<'_>, _object: &mut Value) -> ApiResult<()> {
        Ok(())
    }

    /// `default` in one round of kube's reinvocation: the first round runs every rule, the second (only when a rule
    /// asked for it, `Reinvocation`) the rules that take part in reinvocation. Built-in rules only run in the first.
    async fn default_round(&self, registry: &GenericStore, attributes: &Attributes<'_>, object: &mut Value, round: &Reinvocation) -> ApiResult<()> {
        if round.second() {
            return Ok(());
        }
        self.default(registry, attributes, object).await
    }

    /// A mutating rule's change to the completed object of a create or update, as kube's mutating admission
    /// changes objects: metadata no manager owns (after the kind's strategy, validation and managedFields); most
    /// rules only admit. Runs when `handles`.
    fn mutate(&self, _resource: &ResourceInfo, _space: &SpaceName, _object: &mut Value) {}

    /// Why this rule would refuse every request `question` covers whatever its object, if it would (an access
    /// review's answer must agree with the request). Rules of state (a Terminating namespace) say nothing, as
    /// kube's lifecycle admission says nothing to reviews.
    fn refuses(&self, _registry: &GenericStore, _question: &Question<'_>) -> Option<String> {
        None
    }
}

/// The admission rules, in order: the first refusal is the answer.
#[derive(Clone, Default)]
pub struct AdmissionChain {
    plugins: Vec<Arc<dyn Admission>>,
    metrics: Arc<AdmissionMetrics>,
}

impl AdmissionChain {
    pub fn new(plugins: Vec<Arc<dyn Admission>>) -> AdmissionChain {
        AdmissionChain { plugins, metrics: Arc::default() }
    }

    /// kube's admission metrics: each step's, and each webhook call's (recorded by the webhook plugins).
    pub fn metrics(&self) -> &AdmissionMetrics {
        &self.metrics
    }

    /// The first rule's refusal of `question`, if one refuses it.
    pub fn refusal(&self, registry: &GenericStore, question: &Question<'_>) -> Option<String> {
        self.plugins.iter().find_map(|plugin| plugin.refuses(registry, question))
    }

    /// Lets every mutating rule that handles the write change its completed object, in order.
    pub fn mutate(&self, resource: &ResourceInfo, space: &SpaceName, operation: Operation, object: &mut Value) {
        let runs = |p: &&Arc<dyn Admission>| p.phase() == AdmissionPhase::Mutating && p.handles(resource, operation);
        for plugin in self.plugins.iter().filter(runs) {
            plugin.mutate(resource, space, object);
        }
    }

    /// Lets every mutating rule that handles the write set its defaults on the object written, in order; then, as
    /// kube-apiserver does, runs the rules once more when one of them changed the object after a rule that asked to
    /// be reinvoked ran (mutating policies and webhooks with `reinvocationPolicy: IfNeeded`).
    pub async fn default(&self, registry: &GenericStore, attributes: &Attributes<'_>, object: &mut Value) -> ApiResult<()> {
        let started = Instant::now();
        let round = Reinvocation::default();
        let mut outcome = self.default_round(registry, attributes, object, &round).await;
        if outcome.is_ok() && round.wanted() {
            round.begin_second();
            outcome = self.default_round(registry, attributes, object, &round).await;
        }
        self.metrics.step(false, attributes.operation, outcome.is_err(), started.elapsed());
        outcome
    }

    async fn default_round(&self, registry: &GenericStore, attributes: &Attributes<'_>, object: &mut Value, round: &Reinvocation) -> ApiResult<()> {
        let runs = |p: &&Arc<dyn Admission>| p.phase() == AdmissionPhase::Mutating && p.handles(attributes.resource, attributes.operation);
        for plugin in self.plugins.iter().filter(runs) {
            plugin.default_round(registry, attributes, object, round).await?;
        }
        Ok(())
    }

    /// Runs every rule of `phase` that handles the write, in order.
    pub async fn admit(&self, registry: &GenericStore, phase: AdmissionPhase, attributes: &Attributes<'_>) -> ApiResult<()> {
        let runs = |p: &&Arc<dyn Admission>| p.phase() == phase && p.handles(attributes.resource, attributes.operation);
        let started = Instant::now();
        let mut outcome = Ok(());
        for plugin in self.plugins.iter().filter(runs) {
            outcome = plugin.admit(registry, attributes).await;
            if outcome.is_err() {
                break;
            }
        }
        self.metrics.step(phase == AdmissionPhase::Validating, attributes.operation, outcome.is_err(), started.elapsed());
        outcome
    }
}
