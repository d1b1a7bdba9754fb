//! Admission webhooks, per space: `ValidatingWebhookConfiguration` and `MutatingWebhookConfiguration` in every
//! space (kube's defaults and validation), and the two admission plugins that call them as kube-apiserver's
//! webhook admission does: mutating webhooks one after the other on the object as the request sent it, their
//! JSONPatch answers applied; validating webhooks together, after the built-in admission, on the final object.
//! A configuration applies to requests in its space; the system space's apply to every space its
//! `admission.kspaces.io/applicable-tenants` selector matches. `docs/admission-webhooks.md`.

pub mod config;
pub mod endpoint;
pub mod hooks;
pub mod reach;
pub mod review;

use std::sync::Arc;

use async_trait::async_trait;
use kspaces_storage::{ApiIdentity, SpaceName};
use serde_json::Value;

use super::defaults::{groups, Write};
use super::{admission_policy, Context, Kind, Rules};
use crate::registry::admission::{Admission, AdmissionPhase, Attributes, Operation, Reinvocation, WebhookOutcome};
use crate::registry::strategy::{Part, Strategy};
use crate::registry::{GenericStore, ResourceInfo, Scope};
use crate::status::{ApiError, ApiResult};
use endpoint::Client;
use hooks::{Hook, Hooks, GROUP, MUTATING, VALIDATING};
use reach::Reach;

/// The two configuration kinds' strategies, the plugins that call their webhooks, and the cache they read.
pub const KIND: Kind = Kind::rules(rules);

fn rules(context: &Context, rules: &mut Rules) {
    let hooks = Arc::new(Hooks::new(context.tree.clone(), context.tenants.clone()));
    let reach = context.webhook_reach.clone();
    rules.strategy(GROUP, MUTATING, Arc::new(ConfigurationStrategy { mutating: true, reach: reach.clone() }));
    rules.strategy(GROUP, VALIDATING, Arc::new(ConfigurationStrategy { mutating: false, reach }));
    rules.observe(hooks.clone());
    let caller = Arc::new(Caller {
        hooks,
        resolver: context.resolver.clone(),
        client: Client::new(context),
        namespaces: context.resources.by_kind("", "Namespace").cloned(),
    });
    rules.admit(Arc::new(MutatingWebhooks(caller.clone())));
    rules.admit(Arc::new(ValidatingWebhooks(caller)));
}

/// A configuration kind: kube's defaults, and its validation (`config::validate`; where a tenant's webhook may
/// call, `reach`).
struct ConfigurationStrategy {
    mutating: bool,
    reach: Arc<Reach>,
}

#[async_trait]
impl Strategy for ConfigurationStrategy {
    fn prepare_create(&self, _: &ResourceInfo, _: &SpaceName, _: Option<&kspaces_authz::Caller>, object: &mut Value) {
        self.defaults(object, Write::Create);
    }

    fn prepare_update(&self, _: &ResourceInfo, _: &SpaceName, _: &Value, new: &mut Value, _: Part) {
        self.defaults(new, Write::Update);
    }

    fn validate(&self, _: &ResourceInfo, object: &Value, _: Option<&Value>, causes: &mut Vec<crate::status::Cause>) {
        config::validate(object, self.mutating, causes);
    }

    async fn validate_costly(&self, resource: &ResourceInfo, space: &SpaceName, object: &Value, _: Option<&Value>) -> ApiResult<()> {
        let causes = self.reach.check_configuration(space, object);
        if causes.is_empty() {
            return Ok(());
        }
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        Err(ApiError::invalid(&resource.group, &resource.kind, name, causes))
    }
}

impl ConfigurationStrategy {
    fn defaults(&self, object: &mut Value, write: Write) {
        if self.mutating {
            groups::mutating_webhooks(object, write);
        } else {
            groups::validating_webhooks(object, write);
        }
    }
}

/// What both plugins share: the configurations, the client that calls them, and the namespaces' row.
struct Caller {
    hooks: Arc<Hooks>,
    /// Where bound resources come from (an API provider's webhooks apply to them).
    resolver: Arc<crate::resolver::Resolver>,
    client: Client,
    namespaces: Option<Arc<ResourceInfo>>,
}

/// Why a webhook call did not allow the write: the webhook refused it, or the call failed (with the refusal its
/// `failurePolicy` makes, none under Ignore).
enum Called {
    Denied(ApiError),
    Failed(Option<ApiError>),
}

/// Whether webhooks are called for writes of `resource` at all: never for the configurations themselves (as
/// kube, so a broken webhook can always be removed). Checked after `Hooks::any`, so that a server without any
/// configuration runs neither plugin.
fn concerns(resource: &ResourceInfo) -> bool {
    !(resource.group == GROUP && resource.kind.ends_with("WebhookConfiguration"))
}

/// kube's mutating webhook admission, at the end of the mutating phase.
struct MutatingWebhooks(Arc<Caller>);

#[async_trait]
impl Admission for MutatingWebhooks {
    fn handles(&self, resource: &ResourceInfo, _: Operation) -> bool {
        self.0.hooks.any() && concerns(resource)
    }

    /// A delete has no validating phase in the registry: both kinds of webhooks are called here.
    async fn admit(&self, registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        if attributes.operation != Operation::Delete || attributes.caller.is_none() {
            return Ok(());
        }
        for hook in self.0.hooks.of(attributes.space, self.0.provider(attributes).as_ref(), true) {
            self.0.call_one(registry, &hook, attributes, None).await?;
        }
        self.0.validate(registry, attributes, None).await
    }

    /// kube's reinvocation (`Reinvocation`): a webhook with `reinvocationPolicy: IfNeeded` that ran before a later
    /// webhook or mutating policy changed the object is called once more, in order, in the second round.
    async fn default_round(&self, registry: &GenericStore, attributes: &Attributes<'_>, object: &mut Value, round: &Reinvocation) -> ApiResult<()> {
        if attributes.caller.is_none() {
            return Ok(());
        }
        let hooks = self.0.hooks.of(attributes.space, self.0.provider(attributes).as_ref(), true);
        round.start(REINVOCATION, object);
        for hook in &hooks {
            let id = Arc::as_ptr(hook) as usize;
            if !round.runs(REINVOCATION, id) {
                continue;
            }
            if let Some(changed) = self.0.mutate_once(registry, hook, attributes, object).await? {
                round.ran(REINVOCATION, id, changed, hook.reinvoke);
            }
        }
        round.finish(REINVOCATION, object);
        Ok(())
    }
}

/// The webhooks' name in a write's `Reinvocation`.
const REINVOCATION: &str = "MutatingAdmissionWebhook";

/// kube's validating webhook admission, last in the validating phase, on the final object.
struct ValidatingWebhooks(Arc<Caller>);

#[async_trait]
impl Admission for ValidatingWebhooks {
    fn handles(&self, resource: &ResourceInfo, _: Operation) -> bool {
        self.0.hooks.any() && concerns(resource)
    }

    fn phase(&self) -> AdmissionPhase {
        AdmissionPhase::Validating
    }

    async fn admit(&self, registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        if attributes.caller.is_none() {
            return Ok(());
        }
        self.0.validate(registry, attributes, attributes.object).await
    }
}

impl Caller {
    /// The workspace of the APIExport the written resource is bound from, when it is a bound resource.
    fn provider(&self, attributes: &Attributes<'_>) -> Option<SpaceName> {
        let custom = attributes.resource.custom.as_ref()?;
        let ApiIdentity::Shared(identity) = &custom.identity else { return None };
        let name = format!("{}.{}", attributes.resource.plural, attributes.resource.group);
        self.resolver.provider_of(attributes.space, &name, identity)
    }

    /// Calls mutating webhook `hook` on `object` and applies its patch: `None` when the write does not meet it,
    /// else whether the object changed.
    async fn mutate_once(&self, registry: &GenericStore, hook: &Hook, attributes: &Attributes<'_>, object: &mut Value) -> ApiResult<Option<bool>> {
        if !self.meets(registry, hook, attributes, Some(object)).await? {
            return Ok(None);
        }
        let Some(patch) = self.call_one(registry, hook, attributes, Some(object)).await? else { return Ok(Some(false)) };
        let mut patched = object.clone();
        match json_patch::patch(&mut patched, &patch) {
            Ok(()) => {
                let changed = patched != *object;
                *object = patched;
                Ok(Some(changed))
            }
            Err(error) => self.failed(hook, format!("the patch could not be applied: {error}")).map(|()| Some(false)),
        }
    }

    /// Calls every validating webhook the write meets, together; the first refusal in order is the answer.
    async fn validate(&self, registry: &GenericStore, attributes: &Attributes<'_>, object: Option<&Value>) -> ApiResult<()> {
        let hooks = self.hooks.of(attributes.space, self.provider(attributes).as_ref(), false);
        if hooks.is_empty() {
            return Ok(());
        }
        let calls = hooks.iter().map(|hook| self.call_one(registry, hook, attributes, object));
        for answer in futures::future::join_all(calls).await {
            answer?;
        }
        Ok(())
    }

    /// Calls `hook` if the write meets it: its refusal, or the patch it answered (mutating webhooks).
    async fn call_one(&self, registry: &GenericStore, hook: &Hook, attributes: &Attributes<'_>, object: Option<&Value>) -> ApiResult<Option<json_patch::Patch>> {
        if !self.meets(registry, hook, attributes, object).await? {
            return Ok(None);
        }
        if attributes.dry_run && !hook.dry_run_safe {
            return Err(ApiError::bad_request(format!("admission webhook {:?} does not support dry run", hook.name)));
        }
        let started = std::time::Instant::now();
        let called = self.call_and_judge(registry, hook, attributes, object).await;
        let outcome = match &called {
            Ok(_) => WebhookOutcome::Allowed,
            Err(Called::Denied(error)) => WebhookOutcome::Denied(error.code),
            Err(Called::Failed(error)) => WebhookOutcome::Failed { rejected: error.is_some() },
        };
        registry.admission_metrics().webhook(&hook.name, hook.mutating, attributes.operation, &outcome, started.elapsed());
        match called {
            Ok(patch) => Ok(patch),
            Err(Called::Denied(error)) => Err(error),
            Err(Called::Failed(error)) => error.map_or(Ok(None), Err),
        }
    }

    /// One call of `hook`, judged: its patch, its refusal, or a failure (with the refusal its failure policy makes).
    async fn call_and_judge(&self, registry: &GenericStore, hook: &Hook, attributes: &Attributes<'_>, object: Option<&Value>)
        -> Result<Option<json_patch::Patch>, Called> {
        let uid = uuid::Uuid::new_v4().to_string();
        let review = review::request(&uid, attributes, object);
        let answer = match self.client.post(registry, &hook.endpoint, &review, hook.timeout).await {
            Ok(body) => review::answer(&body, &uid, hook.mutating),
            Err(why) => Err(why),
        };
        if let (Ok(answer), Some(sink)) = (&answer, attributes.warnings) {
            for warning in &answer.warnings {
                sink.add(warning.clone());
            }
            for (key, value) in &answer.audit_annotations {
                sink.annotate(format!("{}/{key}", hook.name), value.clone());
            }
        }
        match answer {
            Ok(answer) if !answer.allowed => Err(Called::Denied(review::denied(&hook.name, &answer.status))),
            Ok(answer) => Ok(answer.patch),
            Err(why) => Err(Called::Failed(self.failed(hook, why).err())),
        }
    }

    /// A call that failed: nothing under `failurePolicy: Ignore`, else kube's 500.
    fn failed(&self, hook: &Hook, why: String) -> ApiResult<()> {
        if hook.ignore_failures {
            tracing::info!(webhook = %hook.name, "failed calling webhook, failing open: {why}");
            return Ok(());
        }
        Err(ApiError::internal(format!("failed calling webhook {:?}: {why}", hook.name)))
    }

    /// Whether the write meets `hook`: its rules, its object selector (the new or the old object's labels) and
    /// its namespace selector (the namespace's labels).
    async fn meets(&self, registry: &GenericStore, hook: &Hook, attributes: &Attributes<'_>, object: Option<&Value>) -> ApiResult<bool> {
        if !self.selected(registry, hook, attributes, object).await? {
            return Ok(false);
        }
        if hook.conditions.is_empty() {
            return Ok(true);
        }
        // kube's matchConditions: CEL over the same variables as admission policies (no `params`).
        let with_object = Attributes { object, ..*attributes };
        let request = admission_policy::request_of(&with_object);
        let held = admission_policy::context(&with_object, &request, None, &Value::Null, &[]).and_then(|context| admission_policy::conditions_hold(&hook.conditions, &context));
        match held {
            Ok(held) => Ok(held),
            Err(why) => self.failed(hook, why).map(|()| false),
        }
    }

    /// Whether the write meets `hook`'s rules and selectors.
    async fn selected(&self, registry: &GenericStore, hook: &Hook, attributes: &Attributes<'_>, object: Option<&Value>) -> ApiResult<bool> {
        let operation = review::operation(attributes.operation);
        let subresource = review::subresource(attributes.part).unwrap_or_default();
        if !hook.rules.iter().any(|rule| rule.matches(operation, attributes.resource, subresource)) {
            return Ok(false);
        }
        let labels = |o: Option<&Value>| o.and_then(|o| o.pointer("/metadata/labels")).cloned();
        if !hook.object_selector.is_empty() {
            let new = object.is_some_and(|_| hook.object_selector.matches(labels(object).as_ref()));
            let old = attributes.old.is_some() && hook.object_selector.matches(labels(attributes.old).as_ref());
            if !new && !old {
                return Ok(false);
            }
        }
        if hook.namespace_selector.is_empty() {
            return Ok(true);
        }
        if attributes.resource.group.is_empty() && attributes.resource.kind == "Namespace" {
            return Ok(hook.namespace_selector.matches(labels(object.or(attributes.old)).as_ref()));
        }
        let (Some(namespace), Some(namespaces)) = (attributes.namespace, &self.namespaces) else { return Ok(true) };
        let scope = Scope::one(attributes.space.clone(), None);
        let stored = match registry.reader().record(namespaces, &scope, namespace).await {
            Ok(record) => serde_json::from_slice::<Value>(&record.value).ok(),
            Err(error) if error.code == 404 => None,
            Err(error) => return Err(error),
        };
        Ok(hook.namespace_selector.matches(labels(stored.as_ref()).as_ref()))
    }
}
