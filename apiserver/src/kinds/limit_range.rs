//! LimitRange and kube's LimitRanger admission (`plugin/pkg/admission/limitranger`).
//! - A LimitRange's `Container` items are defaulted as kube's API defaults them: a missing `default` from `max`,
//!   then a missing `defaultRequest` from `default`, else from `min`. Its quantities are validated as kube does
//!   (`ValidateLimitRange`: min ≤ defaultRequest ≤ default ≤ max, ratios ≥ 1, no defaults for `Pod` items, a
//!   `PersistentVolumeClaim` item names a storage min or max, a resource that cannot be overcommitted has equal
//!   default limit and request).
//! - A new pod's containers get the namespace's LimitRanges' defaults for what they do not set, noted in the
//!   `kubernetes.io/limit-ranger` annotation. The pod is then checked against every item's `min`, `max` and
//!   `maxLimitRequestRatio`, per container and summed per pod, and a claim's storage request against its item's. A
//!   refusal is kube's 403 with its text (`maximum cpu usage per Container is 500m, but limit is 1`).
//! - This runs before the write's quotas, so the defaults count in a namespace's ResourceQuota.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use kspaces_storage::SpaceName;
use serde_json::{json, Map, Value};

use super::{Context, Kind, Rules};
use crate::quota::resource_quota::milli;
use crate::registry::admission::{Admission, Attributes, Operation};
use crate::registry::read::ListOptions;
use crate::registry::strategy::{Part, Strategy};
use crate::registry::{GenericStore, ResourceInfo, ResourceTable, Scope};
use crate::status::{ApiError, ApiResult, Cause};

/// LimitRange: its strategy, and the LimitRanger admission plugin.
pub const KIND: Kind = Kind::rules(|context: &Context, rules: &mut Rules| {
    rules.strategy("", "LimitRange", Arc::new(LimitRangeStrategy));
    rules.admit(Arc::new(LimitRanger { resources: context.resources.clone() }));
});

/// kube's annotation naming what LimitRanger set on a pod.
pub const ANNOTATION: &str = "kubernetes.io/limit-ranger";

const QUANTITY: &str = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

pub struct LimitRangeStrategy;

impl Strategy for LimitRangeStrategy {
    fn prepare_create(&self, _resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&kspaces_authz::Caller>, object: &mut Value) {
        default_items(object);
    }

    fn prepare_update(&self, _resource: &ResourceInfo, _space: &SpaceName, _old: &Value, new: &mut Value, _part: Part) {
        default_items(new);
    }

    fn validate(&self, _resource: &ResourceInfo, object: &Value, _old: Option<&Value>, causes: &mut Vec<Cause>) {
        validate_items(object, causes);
    }
}

/// kube's `SetDefaults_LimitRangeItem` for every `Container` item.
fn default_items(object: &mut Value) {
    let Some(items) = object.pointer_mut("/spec/limits").and_then(Value::as_array_mut) else { return };
    for item in items.iter_mut().filter(|item| item.get("type").and_then(Value::as_str) == Some("Container")) {
        let Some(item) = item.as_object_mut() else { continue };
        let list = |item: &Map<String, Value>, field: &str| item.get(field).and_then(Value::as_object).cloned().unwrap_or_default();
        let (max, min) = (list(item, "max"), list(item, "min"));
        let mut default = list(item, "default");
        let mut default_request = list(item, "defaultRequest");
        // A value that is no quantity is not copied: validation reports it once, where it was written (kube
        // refuses it before defaulting, when the body is decoded).
        let quantity = |value: &Value| value.as_str().and_then(milli).is_some();
        for (key, value) in max.iter().filter(|(_, value)| quantity(value)) {
            default.entry(key.clone()).or_insert_with(|| value.clone());
        }
        for (key, value) in default.iter().chain(&min).filter(|(_, value)| quantity(value)) {
            default_request.entry(key.clone()).or_insert_with(|| value.clone());
        }
        for (field, list) in [("default", default), ("defaultRequest", default_request)] {
            if !list.is_empty() {
                item.insert(field.into(), Value::Object(list));
            }
        }
    }
}

/// A named list of quantities of an item (`max`, `min`, ...) of type `kind`, in thousandths; bad quantities and
/// resource names are causes.
fn quantities(item: &Value, kind: &str, field: &str, path: &str, causes: &mut Vec<Cause>) -> Amounts {
    let mut found = BTreeMap::new();
    for (key, value) in item.get(field).and_then(Value::as_object).into_iter().flatten() {
        causes.extend(resource_name_errors(kind, key).into_iter().map(|why| Cause::invalid(format!("{path}.{field}[{key}]"), key, &why)));
        match value.as_str().and_then(|text| milli(text).map(|amount| (amount, text))) {
            Some((amount, text)) => drop(found.insert(key.clone(), (amount, text.to_owned()))),
            None => causes.push(Cause::invalid(format!("{path}.{field}[{key}]"), value.as_str().unwrap_or(&value.to_string()), QUANTITY)),
        }
    }
    found
}

/// kube's `ValidateLimitRange`.
fn validate_items(object: &Value, causes: &mut Vec<Cause>) {
    let mut types = Vec::new();
    for (i, item) in object.pointer("/spec/limits").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let path = format!("spec.limits[{i}]");
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
        if kind.is_empty() {
            causes.push(Cause::required(format!("{path}.type")));
        } else if types.contains(&kind) {
            causes.push(Cause { reason: "FieldValueDuplicate", message: format!("Duplicate value: {kind:?}"), field: format!("{path}.type") });
        }
        types.push(kind);
        let max = quantities(item, kind, "max", &path, causes);
        let min = quantities(item, kind, "min", &path, causes);
        let default = quantities(item, kind, "default", &path, causes);
        let default_request = quantities(item, kind, "defaultRequest", &path, causes);
        let ratio = quantities(item, kind, "maxLimitRequestRatio", &path, causes);
        if kind == "Pod" {
            for field in ["default", "defaultRequest"].into_iter().filter(|f| item.get(*f).and_then(Value::as_object).is_some_and(|m| !m.is_empty())) {
                causes.push(Cause::forbidden(format!("{path}.{field}"), "may not be specified when `type` is 'Pod'"));
            }
        }
        if kind == "PersistentVolumeClaim" && !min.contains_key("storage") && !max.contains_key("storage") {
            causes.push(Cause {
                message: "Required value: either minimum or maximum storage value is required, but neither was provided".into(),
                ..Cause::required(format!("{path}.limits"))
            });
        }
        let keys: std::collections::BTreeSet<&String> = max.keys().chain(min.keys()).chain(default.keys()).chain(default_request.keys()).chain(ratio.keys()).collect();
        for key in keys {
            let (min, max, default, request, ratio) = (min.get(key), max.get(key), default.get(key), default_request.get(key), ratio.get(key));
            let mut invalid = |field: &str, (_, value): &(i128, String), why: String| causes.push(Cause::invalid(format!("{path}.{field}[{key}]"), value, &why));
            // kube's order: each pair must not be the wrong way round; the cause names `field`'s value.
            let pairs = [
                (min, "min", max, "max", "min", min),
                (min, "min", request, "default request", "defaultRequest", request),
                (request, "default request", max, "max", "defaultRequest", request),
                (request, "default request", default, "default limit", "defaultRequest", request),
                (min, "min", default, "default", "default", default),
                (default, "default", max, "max", "default", default),
            ];
            for (lesser, lesser_name, greater, greater_name, field, blamed) in pairs {
                if let (Some(lesser), Some(greater), Some(blamed)) = (lesser, greater, blamed) {
                    if lesser.0 > greater.0 {
                        invalid(field, blamed, format!("{lesser_name} value {} is greater than {greater_name} value {}", lesser.1, greater.1));
                    }
                }
            }
            // Resources that cannot be overcommitted (extended resources such as GPUs, hugepages): a default limit
            // and a default request must be equal.
            if let (Some(default), Some(request)) = (default, request) {
                if !overcommit_allowed(key) && default.0 != request.0 {
                    invalid("defaultRequest", request, format!("default value {} must equal to defaultRequest value {} in {key}", default.1, request.1));
                }
            }
            if let Some(ratio) = ratio {
                if ratio.0 < 1000 {
                    invalid("maxLimitRequestRatio", ratio, format!("ratio {} is less than 1", ratio.1));
                } else if let (Some(min), Some(max)) = (min, max) {
                    let bound = max.0 as f64 / min.0 as f64;
                    if min.0 > 0 && ratio.0 as f64 / 1000.0 > bound {
                        invalid("maxLimitRequestRatio", ratio, format!("ratio {} is greater than max/min = {bound:.6}", ratio.1));
                    }
                }
            }
        }
    }
}

/// kube's `validateLimitRangeResourceName`, in its words: a qualified name; without a domain, one of kube's
/// standard resources; for a `Container` or `Pod` item, a container's resource (cpu, memory, ephemeral-storage,
/// hugepages) or, with a domain, a native or extended resource.
fn resource_name_errors(kind: &str, name: &str) -> Vec<String> {
    let mut errors = crate::registry::validate::qualified_name_errors(name);
    let bare = !name.contains('/');
    if errors.is_empty() && bare && !STANDARD_RESOURCES.contains(&name) && !name.starts_with("hugepages-") && !name.starts_with("requests.hugepages-") {
        errors.push("must be a standard resource type or fully qualified".to_owned());
    }
    if kind == "Container" || kind == "Pod" {
        if bare && !["cpu", "memory", "ephemeral-storage"].contains(&name) && !name.starts_with("hugepages-") {
            errors.push("must be a standard resource for containers".to_owned());
        } else if !bare && !prefixed_native(name) && !extended_resource(name) {
            errors.push("doesn't follow extended resource name standard".to_owned());
        }
    }
    errors
}

/// kube's `standardResources`.
const STANDARD_RESOURCES: [&str; 20] = ["cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services", "replicationcontrollers", "secrets",
    "configmaps", "persistentvolumeclaims", "storage", "requests.storage", "services.nodeports", "services.loadbalancers"];

/// A resource of a `kubernetes.io` domain (kube's `IsPrefixedNativeResource`).
fn prefixed_native(name: &str) -> bool {
    name.contains("kubernetes.io/")
}

/// kube's `IsExtendedResourceName`: with a domain other than kubernetes.io's, and a qualified name once quota's
/// `requests.` is put before it.
fn extended_resource(name: &str) -> bool {
    name.contains('/') && !prefixed_native(name) && !name.starts_with("requests.")
        && crate::registry::validate::qualified_name_errors(&format!("requests.{name}")).is_empty()
}

/// kube's `IsOvercommitAllowed`: native resources (no domain, or a `kubernetes.io` one) other than hugepages.
fn overcommit_allowed(name: &str) -> bool {
    (!name.contains('/') || prefixed_native(name)) && !name.starts_with("hugepages-")
}

/// kube's LimitRanger: the namespace's LimitRanges' defaults on a new pod's containers, then their limits on the
/// pod and on a claim's storage.
pub struct LimitRanger {
    pub resources: ResourceTable,
}

#[async_trait]
impl Admission for LimitRanger {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        // kube leaves pod updates alone (containers cannot change), and checks claims on every write.
        (resource.is("", "Pod") && operation == Operation::Create)
            || (resource.is("", "PersistentVolumeClaim") && operation != Operation::Delete)
    }

    async fn admit(&self, _registry: &GenericStore, _attributes: &Attributes<'_>) -> ApiResult<()> {
        Ok(())
    }

    async fn default(&self, registry: &GenericStore, attributes: &Attributes<'_>, object: &mut Value) -> ApiResult<()> {
        let (Some(namespace), Part::Main) = (attributes.namespace, attributes.part) else { return Ok(()) };
        let Some(row) = self.resources.by_kind("", "LimitRange") else { return Ok(()) };
        let scope = Scope::one(attributes.space.clone(), Some(namespace.to_owned()));
        let (ranges, _) = registry.reader().list(row, &scope, &ListOptions::default()).await?;
        if ranges.is_empty() {
            return Ok(());
        }
        let items: Vec<&Value> = ranges.iter().flat_map(|range| range.pointer("/spec/limits").and_then(Value::as_array).into_iter().flatten()).collect();
        let mut refusals = Vec::new();
        if attributes.resource.is("", "Pod") {
            set_container_defaults(object, &items);
            check_pod(object, &items, &mut refusals);
        } else {
            check_claim(object, &items, &mut refusals);
        }
        match refusals.len() {
            0 => Ok(()),
            1 => Err(ApiError::forbidden_object("", &attributes.resource.plural, attributes.name, &refusals[0])),
            _ => Err(ApiError::forbidden_object("", &attributes.resource.plural, attributes.name, &format!("[{}]", refusals.join(", ")))),
        }
    }
}

/// The pod's containers and init containers, with what kube calls them in the annotation.
fn containers_mut(pod: &mut Value) -> impl Iterator<Item = (&'static str, &mut Value)> {
    let spec = pod.get_mut("spec").and_then(Value::as_object_mut);
    let (mut containers, mut init) = (None, None);
    if let Some(spec) = spec {
        for (field, list) in spec.iter_mut() {
            match field.as_str() {
                "containers" => containers = list.as_array_mut(),
                "initContainers" => init = list.as_array_mut(),
                _ => {}
            }
        }
    }
    containers.into_iter().flatten().map(|c| ("container", c)).chain(init.into_iter().flatten().map(|c| ("init container", c)))
}

/// kube's `mergePodResourceRequirements`: each container's missing limits and requests from the `Container`
/// items' `default` and `defaultRequest`.
fn set_container_defaults(pod: &mut Value, items: &[&Value]) {
    let (mut limits, mut requests) = (Map::new(), Map::new());
    for item in items.iter().filter(|item| item.get("type").and_then(Value::as_str) == Some("Container")) {
        for (field, into) in [("default", &mut limits), ("defaultRequest", &mut requests)] {
            for (key, value) in item.get(field).and_then(Value::as_object).into_iter().flatten() {
                into.insert(key.clone(), value.clone());
            }
        }
    }
    if limits.is_empty() && requests.is_empty() {
        return;
    }
    let mut notes = Vec::new();
    for (what, container) in containers_mut(pod) {
        let name = container.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
        let Some(container) = container.as_object_mut() else { continue };
        let resources = container.entry("resources").or_insert_with(|| json!({}));
        if !resources.is_object() {
            continue; // validation reports it
        }
        let mut set = |field: &str, defaults: &Map<String, Value>| -> Vec<String> {
            let list = resources.as_object_mut().map(|r| r.entry(field).or_insert_with(|| json!({})));
            let Some(list) = list.and_then(Value::as_object_mut) else { return Vec::new() };
            let mut set: Vec<String> = Vec::new();
            for (key, value) in defaults {
                if !list.contains_key(key) {
                    list.insert(key.clone(), value.clone());
                    set.push(key.clone());
                }
            }
            set.sort();
            set
        };
        let (set_limits, set_requests) = (set("limits", &limits), set("requests", &requests));
        if let Some(resources) = resources.as_object_mut() {
            resources.retain(|_, list| list.as_object().is_none_or(|l| !l.is_empty()));
        }
        if !set_requests.is_empty() {
            notes.push(format!("{} request for {what} {name}", set_requests.join(", ")));
        }
        if !set_limits.is_empty() {
            notes.push(format!("{} limit for {what} {name}", set_limits.join(", ")));
        }
    }
    if notes.is_empty() {
        return;
    }
    if let Some(metadata) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
        if let Some(annotations) = annotations.as_object_mut() {
            annotations.insert(ANNOTATION.into(), json!(format!("LimitRanger plugin set: {}", notes.join("; "))));
        }
    }
}

/// A resource list (a container's or a pod's requests or limits, an item's `max`...): each amount, in thousandths,
/// and its text.
type Amounts = BTreeMap<String, (i128, String)>;

/// The quantities of the resource list at `pointer` in `object` (the ones that parse; validation reports the
/// others).
fn amounts_at(object: &Value, pointer: &str) -> Amounts {
    object.pointer(pointer).and_then(Value::as_object).into_iter().flatten()
        .filter_map(|(key, value)| {
            let text = value.as_str()?;
            Some((key.clone(), (milli(text)?, text.to_owned())))
        })
        .collect()
}

fn container_amounts(container: &Value, field: &str) -> Amounts {
    amounts_at(container, &format!("/resources/{field}"))
}

/// A container's requests as kube sees them after its API defaults: a limit with no request is also the request.
fn container_requests(container: &Value) -> Amounts {
    let mut requests = container_amounts(container, "requests");
    for (key, limit) in container_amounts(container, "limits") {
        requests.entry(key).or_insert(limit);
    }
    requests
}

/// kube's `PodRequests`/`PodLimits`: the containers' sum, at least each init container's.
fn pod_amounts(pod: &Value, of: impl Fn(&Value) -> Amounts) -> Amounts {
    let list = |field: &str| pod.pointer(&format!("/spec/{field}")).and_then(Value::as_array).cloned().unwrap_or_default();
    let mut sum: BTreeMap<String, i128> = BTreeMap::new();
    for container in list("containers") {
        for (key, (amount, _)) in of(&container) {
            *sum.entry(key).or_default() += amount;
        }
    }
    for container in list("initContainers") {
        for (key, (amount, _)) in of(&container) {
            let total = sum.entry(key).or_default();
            *total = (*total).max(amount);
        }
    }
    // kube's sum keeps the format of what it adds: binary (`Mi`) for memory written so, decimal otherwise.
    let binary = |key: &str| list("containers").iter().chain(&list("initContainers"))
        .flat_map(|c| ["requests", "limits"].map(|f| c.pointer(&format!("/resources/{f}/{key}")).and_then(Value::as_str).map(str::to_owned)))
        .flatten()
        .next()
        .is_some_and(|text| text.ends_with('i'));
    sum.into_iter().map(|(key, amount)| {
        let text = format_milli(amount, binary(&key));
        (key, (amount, text))
    }).collect()
}

/// A quantity kube computed, written as its `Quantity.String()` writes it: the largest suffix that keeps it whole
/// (binary `Ki`..`Ei`, or decimal `k`..`E`), else milli-units.
fn format_milli(amount: i128, binary: bool) -> String {
    if amount % 1000 != 0 {
        return format!("{amount}m");
    }
    let value = amount / 1000;
    let (base, suffixes): (i128, [&str; 6]) = if binary { (1024, ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]) } else { (1000, ["k", "M", "G", "T", "P", "E"]) };
    let mut best = (value, "");
    let mut unit = 1i128;
    for suffix in suffixes {
        unit *= base;
        if value != 0 && value % unit == 0 {
            best = (value / unit, suffix);
        }
    }
    format!("{}{}", best.0, best.1)
}

fn check_pod(pod: &Value, items: &[&Value], refusals: &mut Vec<String>) {
    let list = |field: &str| pod.pointer(&format!("/spec/{field}")).and_then(Value::as_array).cloned().unwrap_or_default();
    for item in items {
        match item.get("type").and_then(Value::as_str) {
            Some("Container") => {
                for container in list("containers").iter().chain(&list("initContainers")) {
                    constraints(item, "Container", &container_requests(container), &container_amounts(container, "limits"), refusals);
                }
            }
            Some("Pod") => {
                let requests = pod_amounts(pod, container_requests);
                let limits = pod_amounts(pod, |c| container_amounts(c, "limits"));
                constraints(item, "Pod", &requests, &limits, refusals);
            }
            _ => {}
        }
    }
}

/// An item's `min`, `max` and `maxLimitRequestRatio` against `requests` and `limits`, with kube's texts.
fn constraints(item: &Value, kind: &str, requests: &Amounts, limits: &Amounts, refusals: &mut Vec<String>) {
    let enforced = |field: &str| amounts_at(item, &format!("/{field}"));
    for (key, (min, text)) in enforced("min") {
        match (requests.get(&key), limits.get(&key)) {
            (None, _) => refusals.push(format!("minimum {key} usage per {kind} is {text}.  No request is specified")),
            (Some(request), _) if request.0 < min => refusals.push(format!("minimum {key} usage per {kind} is {text}, but request is {}", request.1)),
            (_, Some(limit)) if limit.0 < min => refusals.push(format!("minimum {key} usage per {kind} is {text}, but limit is {}", limit.1)),
            _ => {}
        }
    }
    for (key, (max, text)) in enforced("max") {
        match (requests.get(&key), limits.get(&key)) {
            (_, None) => refusals.push(format!("maximum {key} usage per {kind} is {text}.  No limit is specified")),
            (_, Some(limit)) if limit.0 > max => refusals.push(format!("maximum {key} usage per {kind} is {text}, but limit is {}", limit.1)),
            (Some(request), _) if request.0 > max => refusals.push(format!("maximum {key} usage per {kind} is {text}, but request is {}", request.1)),
            _ => {}
        }
    }
    for (key, (ratio, text)) in enforced("maxLimitRequestRatio") {
        match (requests.get(&key).filter(|r| r.0 != 0), limits.get(&key).filter(|l| l.0 != 0)) {
            (None, _) => refusals.push(format!("{key} max limit to request ratio per {kind} is {text}, but no request is specified or request is 0")),
            (_, None) => refusals.push(format!("{key} max limit to request ratio per {kind} is {text}, but no limit is specified or limit is 0")),
            (Some(request), Some(limit)) => {
                let observed = limit.0 as f64 / request.0 as f64;
                if observed * 1000.0 > ratio as f64 {
                    refusals.push(format!("{key} max limit to request ratio per {kind} is {text}, but provided ratio is {observed:.6}"));
                }
            }
        }
    }
}

/// kube's `PersistentVolumeClaimValidateLimitFunc`: a claim's storage request against its items' min and max.
fn check_claim(claim: &Value, items: &[&Value], refusals: &mut Vec<String>) {
    let requests = amounts_at(claim, "/spec/resources/requests");
    for item in items.iter().filter(|item| item.get("type").and_then(Value::as_str) == Some("PersistentVolumeClaim")) {
        for (key, (min, text)) in amounts_at(item, "/min") {
            match requests.get(&key) {
                None => refusals.push(format!("minimum {key} usage per PersistentVolumeClaim is {text}.  No request is specified")),
                Some(request) if request.0 < min => refusals.push(format!("minimum {key} usage per PersistentVolumeClaim is {text}, but request is {}", request.1)),
                _ => {}
            }
        }
        for (key, (max, text)) in amounts_at(item, "/max") {
            match requests.get(&key) {
                None => refusals.push(format!("maximum {key} usage per PersistentVolumeClaim is {text}.  No request is specified")),
                Some(request) if request.0 > max => refusals.push(format!("maximum {key} usage per PersistentVolumeClaim is {text}, but request is {}", request.1)),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests;
