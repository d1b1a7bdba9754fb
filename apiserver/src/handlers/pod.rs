//! The Pod subresources an API server answers without a kubelet, as kube-apiserver 1.32 answers them:
//! `ephemeralcontainers` (only `spec.ephemeralContainers` changes; existing ones stay as they are), `eviction`
//! (a `policy/v1` Eviction: the pod deleted, or 429 when its PodDisruptionBudget does not allow it), `binding`
//! (a `v1` Binding: `spec.nodeName` set once; also served as the create-only `bindings` resource), and `log`, `exec`, `attach`, `portforward`, whose answers for a pod
//! no node runs are kube's own (kspaces runs no kubelet).

use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::{json, Value};

use super::patch::Patch;
use super::{field_manager, read_body, Body, Ctx};
use crate::kinds::defaults::pod_spec::default_ephemeral_containers;
use crate::negotiate;
use crate::registry::{DeleteOptions, ListOptions, Part, ResourceInfo, WriteContext};
use crate::status::{ApiError, ApiResult, Cause};

pub use crate::apis::pods::SUBRESOURCES;

/// True for a pods subresource this module serves.
pub fn serves(subresource: &str) -> bool {
    SUBRESOURCES.iter().any(|s| s.name == subresource)
}

/// Answers `pods/<subresource>` (`serves` is true of it). The body of `log`, `exec`, `attach` and `portforward`
/// is never read: over HTTP/1.1 theirs is a connection upgraded to WebSocket or SPDY, whose stream does not end;
/// the chain deals with what is unread (`Unread`).
pub async fn handle(ctx: Ctx, payload: Body) -> ApiResult<HttpResponse> {
    let subresource = ctx.info.subresource.clone();
    let verb = ctx.info.verb.clone();
    let verbs = SUBRESOURCES.iter().find(|s| s.name == subresource).map_or(&[][..], |s| s.verbs);
    if !verbs.contains(&verb.as_str()) {
        return Err(ApiError::method_not_supported(&verb, &format!("pods/{subresource}")));
    }
    let connects = !matches!(subresource.as_str(), "ephemeralcontainers" | "eviction" | "binding");
    if connects || verb == "get" {
        return match subresource.as_str() {
            "ephemeralcontainers" => {
                let pod = ctx.server.registry.get(&ctx.resource, &ctx.scope, &ctx.info.name).await?;
                ctx.respond_object(200, &pod)
            }
            _ => connect(ctx).await,
        };
    }
    let body = read_body(payload).await?;
    match subresource.as_str() {
        "eviction" => evict(ctx, body).await,
        "binding" => bind(ctx, body).await,
        _ => ephemeral_containers(ctx, body).await,
    }
}

/// The request's body as JSON (a Binding, an Eviction, a Pod).
fn decode(ctx: &Ctx, body: &[u8]) -> ApiResult<Value> {
    ctx.decode_untyped(body)
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// `log`, `exec`, `attach`, `portforward`: kube checks the container, then needs the pod's node. A pod no node
/// runs has no logs yet (kube answers 204, no content) and nothing to stream from (400 "pod <name> does not have
/// a host assigned", the text kubectl and client libraries wait on); a pod bound to a node is answered as kube
/// answers for a node it does not know (kspaces runs no kubelet to reach).
async fn connect(ctx: Ctx) -> ApiResult<HttpResponse> {
    let name = ctx.info.name.clone();
    let pod = ctx.server.registry.get(&ctx.resource, &ctx.scope, &name).await?;
    let subresource = ctx.info.subresource.as_str();
    if subresource != "portforward" {
        check_container(&pod, &name, ctx.param("container").unwrap_or_default(), subresource == "log")?;
    }
    let node = text(&pod, "/spec/nodeName");
    if node.is_empty() {
        return match subresource {
            "log" => Ok(HttpResponse::NoContent().finish()),
            _ => Err(ApiError::bad_request(format!("pod {name} does not have a host assigned"))),
        };
    }
    Err(ApiError::not_found("", "nodes", node))
}

/// kube's `validateContainer` (logs) and `streamLocation`'s check (exec, attach): a named container must be the
/// pod's; without a name, the pod must have exactly one.
fn check_container(pod: &Value, name: &str, container: &str, log: bool) -> ApiResult<()> {
    let names = |pointer: &str| -> Vec<String> {
        pod.pointer(pointer).and_then(Value::as_array).into_iter().flatten()
            .filter_map(|c| c.get("name").and_then(Value::as_str)).map(str::to_owned).collect()
    };
    let (containers, init, ephemeral) = (names("/spec/containers"), names("/spec/initContainers"), names("/spec/ephemeralContainers"));
    if !container.is_empty() {
        if containers.iter().chain(&init).chain(&ephemeral).any(|c| c == container) {
            return Ok(());
        }
        return Err(ApiError::bad_request(format!("container {container} is not valid for pod {name}")));
    }
    match containers.len() {
        1 => Ok(()),
        0 => Err(ApiError::bad_request(format!("a container name must be specified for pod {name}"))),
        _ if log => {
            let all: Vec<String> = init.iter().chain(&containers).chain(&ephemeral).cloned().collect();
            Err(ApiError::bad_request(format!("a container name must be specified for pod {name}, choose one of: [{}]", all.join(" "))))
        }
        _ => {
            let mut message = format!("a container name must be specified for pod {name}, choose one of: [{}]", containers.join(" "));
            if !init.is_empty() {
                message.push_str(&format!(" or one of the init containers: [{}]", init.join(" ")));
            }
            Err(ApiError::bad_request(message))
        }
    }
}

/// kube's success answer to a Binding or an Eviction: 201 and a `Success` Status.
fn created(ctx: &Ctx) -> ApiResult<HttpResponse> {
    ctx.respond_object(201, &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}))
}

/// `POST pods/<name>/binding`: sets `spec.nodeName` (and the PodScheduled condition) of a pod no node has yet.
async fn bind(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let binding = decode(&ctx, &body)?;
    let name = ctx.info.name.clone();
    if text(&binding, "/metadata/name") != name {
        return Err(ApiError::bad_request("name in URL does not match name in Binding object"));
    }
    let target_kind = text(&binding, "/target/kind");
    let target = text(&binding, "/target/name").to_owned();
    let mut causes = Vec::new();
    if !target_kind.is_empty() && target_kind != "Node" {
        causes.push(Cause::not_supported("target.kind", target_kind, &["Node", "<empty>"]));
    }
    if target.is_empty() {
        causes.push(Cause::required("target.name"));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid("", "Binding", &name, causes));
    }
    let annotations = binding.pointer("/metadata/annotations").and_then(Value::as_object).cloned().unwrap_or_default();
    let write = field_manager::update_write(&ctx, "CreateOptions")?;
    ctx.server.registry.guaranteed_update(&ctx.resource, &ctx.scope, &name, Part::Main, &write, |current| {
        if current.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()) {
            return Err(ApiError::internal(format!("pod {name} is being deleted, cannot be assigned to a host")));
        }
        let assigned = text(current, "/spec/nodeName");
        if !assigned.is_empty() {
            return Err(ApiError::conflict("", "pods", &name, &format!("pod {name} is already assigned to node {assigned:?}")));
        }
        let mut pod = current.clone();
        pod["spec"]["nodeName"] = json!(target);
        for (key, value) in &annotations {
            pod["metadata"]["annotations"][key] = value.clone();
        }
        set_condition(&mut pod, "PodScheduled", "True");
        Ok(pod)
    }).await?;
    created(&ctx)
}

/// `POST namespaces/<ns>/bindings` (the `v1` Binding resource, create only): binds the pod the Binding's
/// `metadata.name` names, as `pods/<name>/binding` does.
pub async fn create_binding(mut ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let binding = decode(&ctx, &body)?;
    let name = text(&binding, "/metadata/name").to_owned();
    ctx.resource = ctx.server.resources.lookup("", "v1", "pods").cloned().ok_or_else(ApiError::no_route)?;
    if name.is_empty() {
        return Err(ApiError::not_found("", "pods", ""));
    }
    ctx.info.name = name;
    bind(ctx, body).await
}

/// Sets a pod condition's status, adding the condition when missing.
fn set_condition(pod: &mut Value, kind: &str, status: &str) {
    if !pod.get("status").is_some_and(Value::is_object) {
        pod["status"] = json!({});
    }
    if !pod["status"].get("conditions").is_some_and(Value::is_array) {
        pod["status"]["conditions"] = json!([]);
    }
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let Some(conditions) = pod["status"]["conditions"].as_array_mut() else { return };
    match conditions.iter_mut().find(|c| c.get("type").and_then(Value::as_str) == Some(kind)) {
        Some(condition) => condition["status"] = json!(status),
        None => conditions.push(json!({"type": kind, "status": status, "lastProbeTime": null, "lastTransitionTime": now})),
    }
}

/// `PUT`/`PATCH pods/<name>/ephemeralcontainers`: the written pod's `spec.ephemeralContainers`, nothing else; the
/// existing ones may be neither changed nor removed.
async fn ephemeral_containers(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let write = field_manager::update_write(&ctx, if ctx.info.verb == "patch" { "PatchOptions" } else { "UpdateOptions" })?;
    let change = if ctx.info.verb == "patch" {
        Change::Patch(Patch::parse(negotiate::patch_kind(ctx.content_type.as_deref())?, &body)?)
    } else {
        Change::Replace(decode(&ctx, &body)?)
    };
    let server = ctx.server.clone();
    let resource = ctx.resource.clone();
    let name = ctx.info.name.clone();
    let updated = server.registry.guaranteed_update(&resource, &ctx.scope, &name, Part::Main, &write, |current| {
        let desired = match &change {
            Change::Patch(patch) => patch.apply(|| server.openapi().definitions(), resource.definition.as_deref(), current)?,
            Change::Replace(replacement) => {
                let rv = text(replacement, "/metadata/resourceVersion");
                if !rv.is_empty() && rv != text(current, "/metadata/resourceVersion") {
                    return Err(ApiError::stale("", "pods", &name));
                }
                replacement.clone()
            }
        };
        let mut wanted = desired.pointer("/spec/ephemeralContainers").cloned().unwrap_or(Value::Null);
        default_ephemeral_containers(&mut wanted);
        let causes = ephemeral_problems(current, &wanted);
        if !causes.is_empty() {
            return Err(ApiError::invalid("", "Pod", &name, causes));
        }
        let mut pod = current.clone();
        match wanted {
            Value::Null => {
                if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.remove("ephemeralContainers");
                }
            }
            wanted => pod["spec"]["ephemeralContainers"] = wanted,
        }
        Ok(pod)
    }).await?;
    ctx.respond_object(200, &updated)
}

/// What a write of `ephemeralcontainers` brings: a patch of the pod, or a whole pod.
enum Change {
    Patch(Patch),
    Replace(Value),
}

/// kube's `ValidatePodEphemeralContainersUpdate`, in part: existing ephemeral containers stay as they are; a new
/// one has a name unique in the pod and an image.
fn ephemeral_problems(current: &Value, wanted: &Value) -> Vec<Cause> {
    let path = "spec.ephemeralContainers";
    let empty = Vec::new();
    let old = current.pointer("/spec/ephemeralContainers").and_then(Value::as_array).unwrap_or(&empty);
    let new = match wanted {
        Value::Null => &empty,
        Value::Array(items) => items,
        other => return vec![Cause::invalid(path, &other.to_string(), "must be a list")],
    };
    let name = |c: &Value| c.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let mut causes = Vec::new();
    for existing in old {
        match new.iter().find(|c| name(c) == name(existing)) {
            None => causes.push(Cause::forbidden(path, &format!("existing ephemeral containers {:?} may not be removed\n", name(existing)))),
            Some(c) if c != existing => causes.push(Cause::forbidden(path, &format!("existing ephemeral containers {:?} may not be changed\n", name(existing)))),
            Some(_) => {}
        }
    }
    let others: Vec<String> = ["/spec/containers", "/spec/initContainers"].iter()
        .flat_map(|p| current.pointer(p).and_then(Value::as_array).cloned().unwrap_or_default())
        .map(|c| name(&c)).collect();
    for (i, container) in new.iter().enumerate() {
        let own = name(container);
        if own.is_empty() {
            causes.push(Cause::required(format!("{path}[{i}].name")));
        } else if others.contains(&own) || new[..i].iter().any(|c| name(c) == own) {
            causes.push(Cause { reason: "FieldValueDuplicate", message: format!("Duplicate value: {own:?}"), field: format!("{path}[{i}].name") });
        }
        if container.get("image").and_then(Value::as_str).unwrap_or_default().is_empty() {
            causes.push(Cause::required(format!("{path}[{i}].image")));
        }
    }
    causes
}

/// The manager of a budget's status, written here for kube-controller-manager's disruption controller.
const DISRUPTION_MANAGER: &str = "kube-controller-manager";

/// The message of kube's refusals of an eviction a budget does not allow.
const VIOLATES_BUDGET: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// `POST pods/<name>/eviction`: the pod deleted, unless the one PodDisruptionBudget selecting it allows no
/// disruption. The budget's status is computed from the pods it selects (kspaces runs no disruption controller)
/// and written, as kube's controller would have it, before the decision.
async fn evict(ctx: Ctx, body: Bytes) -> ApiResult<HttpResponse> {
    let eviction = decode(&ctx, &body)?;
    let name = ctx.info.name.clone();
    if text(&eviction, "/metadata/name") != name {
        return Err(ApiError::bad_request("name in URL does not match name in Eviction object"));
    }
    let dry_run = ctx.dry_run()?;
    let mut options = DeleteOptions { dry_run, ..DeleteOptions::default() };
    if let Some(requested) = eviction.get("deleteOptions").filter(|v| v.is_object()) {
        options = super::delete::options::from_body(requested)?.options;
        options.dry_run |= dry_run;
    }
    let pod = ctx.server.registry.get(&ctx.resource, &ctx.scope, &name).await?;
    if !ignores_budgets(&pod) {
        check_budget(&ctx, &pod, dry_run).await?;
    }
    ctx.server.registry.delete_by(&ctx.resource, &ctx.scope, &name, &options, &ctx.caller, &ctx.warnings).await?;
    created(&ctx)
}

/// kube's `canIgnorePDB`: a pod being deleted, finished, or not yet running is evicted whatever its budget says.
fn ignores_budgets(pod: &Value) -> bool {
    pod.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
        || matches!(text(pod, "/status/phase"), "Succeeded" | "Failed" | "Pending")
}

/// kube's `IsPodReady`: the Ready condition is True.
fn ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions").and_then(Value::as_array).into_iter().flatten()
        .any(|c| c.get("type").and_then(Value::as_str) == Some("Ready") && c.get("status").and_then(Value::as_str) == Some("True"))
}

/// The budget selecting `pod`: none lets it go; more than one is kube's 500; one decides as kube's
/// `checkAndDecrement` does, over the status computed now.
async fn check_budget(ctx: &Ctx, pod: &Value, dry_run: bool) -> ApiResult<()> {
    let budgets = ctx.server.resources.by_kind("policy", "PodDisruptionBudget").cloned()
        .ok_or_else(|| ApiError::internal("no PodDisruptionBudget resource"))?;
    let scope = ctx.scope.clone();
    let (all, _) = ctx.server.registry.reader().list(&budgets, &scope, &ListOptions::default()).await?;
    let labels = pod.pointer("/metadata/labels").cloned().unwrap_or_else(|| json!({}));
    let matching: Vec<&Value> = all.iter().filter(|b| selects(b.pointer("/spec/selector"), &labels)).collect();
    let budget = match matching.as_slice() {
        [] => return Ok(()),
        [budget] => *budget,
        _ => return Err(ApiError::internal("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")),
    };
    let (pods, _) = ctx.server.registry.reader().list(&ctx.resource, &scope, &ListOptions::default()).await?;
    let selected: Vec<&Value> = pods.iter().filter(|p| selects(budget.pointer("/spec/selector"), p.pointer("/metadata/labels").unwrap_or(&Value::Null))).collect();
    let status = budget_status(budget, &selected);
    let budget_name = text(budget, "/metadata/name").to_owned();
    let number = |field: &str| status.get(field).and_then(Value::as_i64).unwrap_or_default();
    let (healthy, desired, allowed) = (number("currentHealthy"), number("desiredHealthy"), number("disruptionsAllowed"));
    let unhealthy_policy = text(budget, "/spec/unhealthyPodEvictionPolicy");
    let decision = if !ready(pod) && (unhealthy_policy == "AlwaysAllow" || (healthy >= desired && desired > 0)) {
        Decision::Allowed { decrement: false }
    } else if allowed == 0 {
        Decision::Refused
    } else {
        Decision::Allowed { decrement: true }
    };
    let pod_name = text(pod, "/metadata/name").to_owned();
    write_budget_status(ctx, &budgets, &budget_name, status, &decision, &pod_name, dry_run).await?;
    match decision {
        Decision::Refused => {
            let mut err = ApiError::too_many_requests(VIOLATES_BUDGET, 0);
            if let Some(details) = err.details.as_mut() {
                details.retry_after_seconds = None;
                details.causes.push(Cause { reason: "DisruptionBudget", field: String::new(),
                    message: format!("The disruption budget {budget_name} needs {desired} healthy pods and has {healthy} currently") });
            }
            Err(err)
        }
        Decision::Allowed { .. } => Ok(()),
    }
}

/// What the budget says of one eviction.
enum Decision {
    Refused,
    /// `decrement`: the eviction uses one of the disruptions allowed (a healthy pod going).
    Allowed { decrement: bool },
}

/// Writes the budget's computed status; an allowed eviction of a healthy pod uses one disruption and is noted in
/// `disruptedPods`, as kube's eviction does. A dry run writes nothing.
async fn write_budget_status(ctx: &Ctx, budgets: &ResourceInfo, name: &str, mut status: Value, decision: &Decision, pod: &str,
    dry_run: bool) -> ApiResult<()> {
    if dry_run {
        return Ok(());
    }
    if let Decision::Allowed { decrement: true } = decision {
        let allowed = status["disruptionsAllowed"].as_i64().unwrap_or_default() - 1;
        status["disruptionsAllowed"] = json!(allowed);
        status["disruptedPods"][pod] = json!(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
        if allowed == 0 {
            status["conditions"] = disruption_condition(false, status["observedGeneration"].clone());
        }
    }
    let write = WriteContext::server(DISRUPTION_MANAGER, "status");
    let update = ctx.server.registry.guaranteed_update(budgets, &ctx.scope, name, Part::Status, &write, |current| {
        let mut next = current.clone();
        let since = current.pointer("/status/conditions/0/lastTransitionTime").cloned();
        let was = current.pointer("/status/conditions/0/status").cloned();
        next["status"] = status.clone();
        // A condition keeps its transition time while its status stays.
        if let (Some(since), Some(was)) = (since, was) {
            if next.pointer("/status/conditions/0/status") == Some(&was) {
                next["status"]["conditions"][0]["lastTransitionTime"] = since;
            }
        }
        Ok(next)
    }).await;
    match update {
        Ok(_) | Err(ApiError { code: 404 | 409, .. }) => Ok(()),
        Err(err) => Err(err),
    }
}

/// The `DisruptionAllowed` condition kube's disruption controller writes.
fn disruption_condition(allowed: bool, generation: Value) -> Value {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let (status, reason) = if allowed { ("True", "SufficientPods") } else { ("False", "InsufficientPods") };
    json!([{"type": "DisruptionAllowed", "status": status, "reason": reason, "message": "", "observedGeneration": generation, "lastTransitionTime": now}])
}

/// kube's disruption controller's status of a budget over the pods it selects: `expectedPods` the selected pods,
/// `desiredHealthy` from `minAvailable` (or `expectedPods` less `maxUnavailable`; percentages rounded up as
/// kube rounds them), `currentHealthy` the Ready pods not being deleted, `disruptionsAllowed` the difference
/// (never below 0). kspaces counts the selected pods as the expected scale (kube asks their controllers).
pub fn budget_status(budget: &Value, pods: &[&Value]) -> Value {
    let expected = pods.len() as i64;
    let healthy = pods.iter().filter(|p| ready(p) && p.pointer("/metadata/deletionTimestamp").is_none_or(Value::is_null)).count() as i64;
    let scaled = |value: &Value| -> i64 {
        match value {
            Value::String(percent) => {
                let n: i64 = percent.trim_end_matches('%').parse().unwrap_or_default();
                (n * expected + 99) / 100
            }
            other => other.as_i64().unwrap_or_default(),
        }
    };
    let desired = match (budget.pointer("/spec/minAvailable"), budget.pointer("/spec/maxUnavailable")) {
        (Some(min), _) if !min.is_null() => scaled(min),
        (_, Some(max)) if !max.is_null() => (expected - scaled(max)).max(0),
        _ => 0,
    };
    let allowed = if expected <= 0 { 0 } else { (healthy - desired).max(0) };
    let generation = budget.pointer("/metadata/generation").cloned().unwrap_or(json!(1));
    json!({
        "observedGeneration": generation,
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": disruption_condition(allowed > 0, generation),
    })
}

/// A `metav1.LabelSelector` (matchLabels, matchExpressions) over `labels`; an empty or missing selector
/// selects every pod (policy/v1).
fn selects(selector: Option<&Value>, labels: &Value) -> bool {
    let label = |key: &str| labels.get(key).and_then(Value::as_str);
    let Some(selector) = selector.filter(|s| s.is_object()) else { return true };
    let by_labels = selector.get("matchLabels").and_then(Value::as_object).into_iter().flatten()
        .all(|(key, value)| label(key) == value.as_str());
    by_labels && selector.get("matchExpressions").and_then(Value::as_array).into_iter().flatten().all(|expression| {
        let key = text(expression, "/key");
        let values: Vec<&str> = expression.get("values").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        match text(expression, "/operator") {
            "In" => label(key).is_some_and(|v| values.contains(&v)),
            "NotIn" => label(key).is_none_or(|v| !values.contains(&v)),
            "Exists" => label(key).is_some(),
            "DoesNotExist" => label(key).is_none(),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(labels: Value, ready: bool) -> Value {
        json!({"metadata": {"labels": labels}, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    #[test]
    fn a_budget_counts_its_ready_pods_as_kubes_disruption_controller() {
        let (a, b, c) = (pod(json!({"app": "a"}), true), pod(json!({"app": "a"}), true), pod(json!({"app": "a"}), false));
        let pods = [&a, &b, &c];
        let min = budget_status(&json!({"metadata": {"generation": 1}, "spec": {"minAvailable": 2}}), &pods);
        assert_eq!((min["expectedPods"].clone(), min["currentHealthy"].clone(), min["desiredHealthy"].clone(), min["disruptionsAllowed"].clone()),
            (json!(3), json!(2), json!(2), json!(0)));
        let max = budget_status(&json!({"spec": {"maxUnavailable": "50%"}}), &pods);
        assert_eq!((max["desiredHealthy"].clone(), max["disruptionsAllowed"].clone()), (json!(1), json!(1)));
        assert_eq!(budget_status(&json!({"spec": {"minAvailable": 1}}), &[])["disruptionsAllowed"], json!(0));
    }

    #[test]
    fn selectors_match_labels_and_expressions() {
        let labels = json!({"app": "a", "tier": "web"});
        assert!(selects(None, &labels));
        assert!(selects(Some(&json!({"matchLabels": {"app": "a"}})), &labels));
        assert!(!selects(Some(&json!({"matchLabels": {"app": "b"}})), &labels));
        assert!(selects(Some(&json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]})), &labels));
        assert!(!selects(Some(&json!({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]})), &labels));
    }

    #[test]
    fn existing_ephemeral_containers_stay_as_they_are() {
        let current = json!({"spec": {"containers": [{"name": "app"}], "ephemeralContainers": [{"name": "debug", "image": "busybox"}]}});
        assert!(ephemeral_problems(&current, &json!([{"name": "debug", "image": "busybox"}, {"name": "d2", "image": "b"}])).is_empty());
        let removed = ephemeral_problems(&current, &json!([]));
        assert_eq!(removed[0].message, "Forbidden: existing ephemeral containers \"debug\" may not be removed\n");
        let changed = ephemeral_problems(&current, &json!([{"name": "debug", "image": "alpine"}]));
        assert_eq!(changed[0].message, "Forbidden: existing ephemeral containers \"debug\" may not be changed\n");
        assert_eq!(ephemeral_problems(&current, &json!([{"name": "debug", "image": "busybox"}, {"name": "app", "image": "b"}]))[0].reason, "FieldValueDuplicate");
    }
}
