//! kube's `ResourceQuota` in a namespace, enforced exactly: what a quota's `spec.hard` names (object counts,
//! `count/<resource>[.<group>]`, pods' compute requests and limits, claims' storage) is evaluated for every write
//! in its namespace, as kube's quota evaluators do, and reserved in the quota's ledger beside the space's own
//! limits (`super::Quotas`). `status.hard` and `status.used` are shown on read, never stored: there is no status
//! that lags behind the objects, and no controller to recount.
//!
//! Amounts are kept in thousandths (kube's `MilliValue`, rounded up), exact for every quantity kube writes with at
//! most three decimals below the unit.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

/// Named amounts, in thousandths of the unit (an object counts 1000).
pub type Amounts = BTreeMap<String, i128>;

/// One object, in thousandths.
const ONE: i128 = 1000;

/// A Kubernetes quantity (`resource.Quantity`'s grammar: a signed decimal number, then a binary or decimal SI
/// suffix or a decimal exponent) in thousandths of its unit, rounded up as kube's `MilliValue`; `None` when it
/// is no quantity.
pub fn milli(quantity: &str) -> Option<i128> {
    let (negative, rest) = match quantity.as_bytes().first()? {
        b'-' => (true, &quantity[1..]),
        b'+' => (false, &quantity[1..]),
        _ => (false, quantity),
    };
    let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') || whole.len() + fraction.len() > 30 {
        return None;
    }
    // value = digits × 10^(exponent10) × 2^(exponent2)
    let digits: i128 = format!("{whole}{fraction}").parse().ok()?;
    let mut exponent10 = -(fraction.len() as i32) + 3; // thousandths
    let mut exponent2 = 0u32;
    match suffix {
        "" => {}
        "n" => exponent10 -= 9,
        "u" => exponent10 -= 6,
        "m" => exponent10 -= 3,
        "k" => exponent10 += 3,
        "M" => exponent10 += 6,
        "G" => exponent10 += 9,
        "T" => exponent10 += 12,
        "P" => exponent10 += 15,
        "E" => exponent10 += 18,
        "Ki" => exponent2 = 10,
        "Mi" => exponent2 = 20,
        "Gi" => exponent2 = 30,
        "Ti" => exponent2 = 40,
        "Pi" => exponent2 = 50,
        "Ei" => exponent2 = 60,
        exponent if exponent.starts_with(['e', 'E']) => exponent10 += exponent[1..].parse::<i32>().ok().filter(|e| e.abs() <= 30)?,
        _ => return None,
    }
    let mut value = digits.checked_mul(1i128.checked_shl(exponent2)?)?;
    if exponent10 >= 0 {
        value = value.checked_mul(10i128.checked_pow(exponent10 as u32)?)?;
    } else {
        let divisor = 10i128.checked_pow(exponent10.unsigned_abs())?;
        value = value / divisor + i128::from(value % divisor != 0);
    }
    Some(if negative { -value } else { value })
}

/// Thousandths back as a quantity: whole units when exact, else `<n>m`.
pub fn quantity(milli: i128) -> String {
    if milli % ONE == 0 { (milli / ONE).to_string() } else { format!("{milli}m") }
}

/// The scopes kube's pod quotas know (`spec.scopes`, or `spec.scopeSelector`'s scope names).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Scope {
    Terminating,
    NotTerminating,
    BestEffort,
    NotBestEffort,
    /// `PriorityClass` with an operator over `spec.priorityClassName`.
    PriorityClass { operator: String, values: Vec<String> },
}

/// One ResourceQuota's spec, as the ledger judges writes by it.
#[derive(Clone, Debug, PartialEq)]
pub struct QuotaSpec {
    pub name: String,
    /// `spec.hard` in thousandths.
    pub hard: Amounts,
    /// `spec.hard` as written (what `status.hard` shows).
    pub shown: Map<String, Value>,
    scopes: Vec<Scope>,
}

impl QuotaSpec {
    /// A stored ResourceQuota's spec (values that are no quantity are left out: validation refuses them).
    pub fn of(quota: &Value) -> QuotaSpec {
        let shown = quota.pointer("/spec/hard").and_then(Value::as_object).cloned().unwrap_or_default();
        let hard = shown.iter().filter_map(|(name, value)| Some((name.clone(), milli(value.as_str()?)?))).collect();
        let mut scopes: Vec<Scope> = quota.pointer("/spec/scopes").and_then(Value::as_array).into_iter().flatten()
            .filter_map(|s| scope(s.as_str()?, "Exists", Vec::new())).collect();
        for requirement in quota.pointer("/spec/scopeSelector/matchExpressions").and_then(Value::as_array).into_iter().flatten() {
            let name = requirement["scopeName"].as_str().unwrap_or_default();
            let operator = requirement["operator"].as_str().unwrap_or_default();
            let values = requirement["values"].as_array().into_iter().flatten().filter_map(|v| v.as_str().map(str::to_owned)).collect();
            scopes.extend(scope(name, operator, values));
        }
        let name = quota.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned();
        QuotaSpec { name, hard, shown, scopes }
    }

    /// The amounts of `hard` that `object` (of `group`/`plural`) uses under this quota; `Err` names the compute
    /// resources a pod must specify for this quota to admit it (kube's `must specify`).
    pub fn usage(&self, group: &str, plural: &str, object: &Value) -> Result<Amounts, Vec<String>> {
        let mut used = Amounts::new();
        let pod = group.is_empty() && plural == "pods";
        if !self.scopes.is_empty() && !(pod && self.scopes.iter().all(|s| scope_matches(s, object))) {
            return Ok(used);
        }
        let counted = count_name(group, plural);
        let live_pod = pod && !matches!(object.pointer("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed"));
        let mut missing = Vec::new();
        for name in self.hard.keys() {
            // An object count, by its `count/` name or its old one.
            let legacy_count = group.is_empty() && LEGACY_COUNTS.contains(&name.as_str()) && name == plural;
            let amount = if *name == counted || legacy_count {
                (!pod || live_pod).then_some(ONE)
            } else if pod {
                if !live_pod {
                    continue;
                }
                let (field, key) = compute_name(name);
                let Some(field) = field else { continue };
                if ["cpu", "memory"].contains(&key) && containers(object).any(|c| container_amount(c, field, key).is_none()) {
                    missing.push(name.clone());
                    continue;
                }
                pod_amount(object, field, key)
            } else if group.is_empty() && plural == "services" {
                service_amount(object, name)
            } else if group.is_empty() && plural == "persistentvolumeclaims" {
                claim_amount(object, name)
            } else {
                None
            };
            if let Some(amount) = amount.filter(|a| *a != 0) {
                used.insert(name.clone(), amount);
            }
        }
        if missing.is_empty() { Ok(used) } else { Err(missing) }
    }

    /// Whether this quota can be concerned by a write of `group`/`plural` at all (cheap).
    pub fn concerns(&self, group: &str, plural: &str) -> bool {
        let counted = count_name(group, plural);
        (group.is_empty() && needs_object(group, plural)) || self.hard.keys().any(|name| *name == counted || (group.is_empty() && name == plural))
    }
}

/// The object counts kube's quota knows by their old names.
const LEGACY_COUNTS: [&str; 7] = ["pods", "services", "secrets", "configmaps", "persistentvolumeclaims", "replicationcontrollers", "resourcequotas"];

/// `count/<plural>` (the core group) or `count/<plural>.<group>`.
fn count_name(group: &str, plural: &str) -> String {
    if group.is_empty() { format!("count/{plural}") } else { format!("count/{plural}.{group}") }
}

/// Whether a quota reads more than the object's existence for this resource (pods, services, claims).
pub fn needs_object(group: &str, plural: &str) -> bool {
    group.is_empty() && ["pods", "services", "persistentvolumeclaims"].contains(&plural)
}

fn scope(name: &str, operator: &str, values: Vec<String>) -> Option<Scope> {
    let negated = operator == "NotIn" || operator == "DoesNotExist";
    Some(match (name, negated) {
        ("Terminating", false) | ("NotTerminating", true) => Scope::Terminating,
        ("NotTerminating", false) | ("Terminating", true) => Scope::NotTerminating,
        ("BestEffort", false) | ("NotBestEffort", true) => Scope::BestEffort,
        ("NotBestEffort", false) | ("BestEffort", true) => Scope::NotBestEffort,
        ("PriorityClass", _) => Scope::PriorityClass { operator: operator.to_owned(), values },
        _ => return None,
    })
}

fn scope_matches(scope: &Scope, pod: &Value) -> bool {
    let terminating = pod.pointer("/spec/activeDeadlineSeconds").and_then(Value::as_i64).is_some_and(|s| s >= 0);
    let best_effort = containers(pod).all(|c| {
        ["requests", "limits"].iter().all(|field| ["cpu", "memory"].iter().all(|key| c.pointer(&format!("/resources/{field}/{key}")).is_none()))
    });
    match scope {
        Scope::Terminating => terminating,
        Scope::NotTerminating => !terminating,
        Scope::BestEffort => best_effort,
        Scope::NotBestEffort => !best_effort,
        Scope::PriorityClass { operator, values } => {
            let class = pod.pointer("/spec/priorityClassName").and_then(Value::as_str).filter(|c| !c.is_empty());
            match operator.as_str() {
                "In" => class.is_some_and(|c| values.iter().any(|v| v == c)),
                "NotIn" => class.is_none_or(|c| values.iter().all(|v| v != c)),
                "Exists" => class.is_some(),
                "DoesNotExist" => class.is_none(),
                _ => false,
            }
        }
    }
}

/// Which field of a container (`requests` or `limits`) and which resource a quota name stands for: `cpu` and
/// `requests.cpu` are requests, `limits.cpu` limits; `hugepages-2Mi`, extended resources likewise.
fn compute_name(name: &str) -> (Option<&'static str>, &str) {
    if let Some(key) = name.strip_prefix("requests.") {
        (Some("requests"), key)
    } else if let Some(key) = name.strip_prefix("limits.") {
        (Some("limits"), key)
    } else if ["cpu", "memory", "ephemeral-storage"].contains(&name) || name.starts_with("hugepages-") {
        (Some("requests"), name)
    } else {
        (None, name)
    }
}

fn containers(pod: &Value) -> impl Iterator<Item = &Value> {
    pod.pointer("/spec/containers").and_then(Value::as_array).into_iter().flatten()
}

/// A container's request (its limit when it names no request, as kube defaults it) or limit of `key`.
fn container_amount(container: &Value, field: &str, key: &str) -> Option<i128> {
    let read = |field: &str| container.pointer(&format!("/resources/{field}"))?.get(key)?.as_str().and_then(milli);
    match field {
        "requests" => read("requests").or_else(|| read("limits")),
        _ => read("limits"),
    }
}

/// A pod's amount as kube's `PodRequests`/`PodLimits` add it: its containers' sum, at least each init
/// container's, plus the pod's overhead.
fn pod_amount(pod: &Value, field: &str, key: &str) -> Option<i128> {
    let sum: i128 = containers(pod).filter_map(|c| container_amount(c, field, key)).sum();
    let init = pod.pointer("/spec/initContainers").and_then(Value::as_array).into_iter().flatten()
        .filter_map(|c| container_amount(c, field, key)).max().unwrap_or(0);
    let overhead = pod.pointer("/spec/overhead").and_then(|o| o.get(key)).and_then(Value::as_str).and_then(milli).unwrap_or(0);
    Some(sum.max(init) + overhead)
}

fn service_amount(service: &Value, name: &str) -> Option<i128> {
    let kind = service.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP");
    match name {
        "services.loadbalancers" => (kind == "LoadBalancer").then_some(ONE),
        "services.nodeports" if ["NodePort", "LoadBalancer"].contains(&kind) => {
            Some(service.pointer("/spec/ports").and_then(Value::as_array).map_or(0, Vec::len) as i128 * ONE)
        }
        _ => None,
    }
}

fn claim_amount(claim: &Value, name: &str) -> Option<i128> {
    let storage = || claim.pointer("/spec/resources/requests/storage").and_then(Value::as_str).and_then(milli);
    let class = claim.pointer("/spec/storageClassName").and_then(Value::as_str).unwrap_or_default();
    match name {
        "requests.storage" => storage(),
        _ => {
            let (named, what) = name.split_once(".storageclass.storage.k8s.io/")?;
            (named == class).then_some(())?;
            match what {
                "requests.storage" => storage(),
                "persistentvolumeclaims" => Some(ONE),
                _ => None,
            }
        }
    }
}

/// `a − b` for every name either has, leaving out what is unchanged.
pub fn difference(a: &Amounts, b: &Amounts) -> Amounts {
    let mut out = Amounts::new();
    for name in a.keys().chain(b.keys()) {
        let change = a.get(name).copied().unwrap_or(0) - b.get(name).copied().unwrap_or(0);
        if change != 0 {
            out.insert(name.clone(), change);
        }
    }
    out
}

pub fn add(into: &mut Amounts, amounts: &Amounts, sign: i128) {
    for (name, amount) in amounts {
        *into.entry(name.clone()).or_insert(0) += sign * amount;
    }
}

/// A quota's `status` as kube's quota controller writes it: `hard` as the spec says, `used` for each of them.
pub fn status(spec: &QuotaSpec, used: Option<&Amounts>) -> Value {
    let mut status = json!({"hard": spec.shown});
    if let Some(used) = used {
        let used: Map<String, Value> = spec.shown.keys().map(|name| (name.clone(), json!(quantity(used.get(name).copied().unwrap_or(0))))).collect();
        status["used"] = Value::Object(used);
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_in_thousandths_rounded_up_as_kube_does() {
        for (text, expected) in [
            ("1", Some(1000)), ("500m", Some(500)), ("0.5", Some(500)), ("1.5Gi", Some(1_610_612_736_000)), ("2k", Some(2_000_000)),
            ("1Ki", Some(1_024_000)), ("1e3", Some(1_000_000)), ("1n", Some(1)), ("100u", Some(1)), ("-2", Some(-2000)),
            ("+3", Some(3000)), ("0.0001", Some(1)), ("1E2", Some(100_000)), (".5", Some(500)),
            ("", None), ("m", None), ("1.2.3", None), ("1Xi", None), ("1 Gi", None), ("abc", None),
        ] {
            assert_eq!(milli(text), expected, "{text:?}");
        }
        assert_eq!(quantity(1500), "1500m");
        assert_eq!(quantity(2000), "2");
    }

    fn pod(requests_cpu: Option<&str>, limits_cpu: Option<&str>, phase: &str) -> Value {
        let mut resources = json!({});
        if let Some(cpu) = requests_cpu {
            resources["requests"] = json!({"cpu": cpu, "memory": "64Mi"});
        }
        if let Some(cpu) = limits_cpu {
            resources["limits"] = json!({"cpu": cpu, "memory": "128Mi"});
        }
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "resources": resources}, {"name": "b", "resources": resources}]},
            "status": {"phase": phase}})
    }

    #[test]
    fn pods_count_and_use_compute_while_they_run() {
        let quota = QuotaSpec::of(&json!({"metadata": {"name": "compute"}, "spec": {"hard": {
            "pods": "4", "count/pods": "4", "requests.cpu": "2", "cpu": "2", "limits.memory": "1Gi", "configmaps": "1"}}}));
        let (g, pods) = ("", "pods");
        let used = quota.usage(g, pods, &pod(Some("250m"), Some("500m"), "Running")).expect("admitted");
        assert_eq!(used, Amounts::from([("pods".into(), 1000), ("count/pods".into(), 1000), ("requests.cpu".into(), 500),
            ("cpu".into(), 500), ("limits.memory".into(), 268_435_456_000)]));
        assert_eq!(quota.usage(g, pods, &pod(Some("250m"), Some("500m"), "Succeeded")), Ok(Amounts::new()), "a finished pod uses nothing");
        assert_eq!(quota.usage(g, pods, &pod(Some("1"), None, "Pending")), Err(vec!["limits.memory".into()]), "kube's must specify");
        // A limit alone stands for the request.
        let used = quota.usage(g, pods, &pod(None, Some("1"), "Pending")).expect("admitted");
        assert_eq!(used["requests.cpu"], 2000);
        assert_eq!(quota.usage("", "configmaps", &json!({})), Ok(Amounts::from([("configmaps".into(), 1000)])));
        assert!(!quota.concerns("", "secrets"));
        assert!(quota.concerns("", "configmaps") && quota.concerns("", "pods"));
    }

    #[test]
    fn scoped_quotas_only_see_the_pods_in_their_scope() {
        let best_effort = QuotaSpec::of(&json!({"metadata": {"name": "be"}, "spec": {"hard": {"pods": "1", "configmaps": "1"}, "scopes": ["BestEffort"]}}));
        let (g, pods) = ("", "pods");
        assert_eq!(best_effort.usage(g, pods, &pod(None, None, "Running")), Ok(Amounts::from([("pods".into(), 1000)])));
        assert_eq!(best_effort.usage(g, pods, &pod(Some("1"), Some("1"), "Running")), Ok(Amounts::new()));
        assert_eq!(best_effort.usage("", "configmaps", &json!({})), Ok(Amounts::new()), "scopes match pods only");
        let gold = QuotaSpec::of(&json!({"metadata": {"name": "gold"}, "spec": {"hard": {"pods": "1"},
            "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["gold"]}]}}}));
        let mut golden = pod(None, None, "Running");
        golden["spec"]["priorityClassName"] = json!("gold");
        assert_eq!(gold.usage(g, pods, &golden).map(|u| u.len()), Ok(1));
        assert_eq!(gold.usage(g, pods, &pod(None, None, "Running")).map(|u| u.len()), Ok(0));
    }

    #[test]
    fn services_and_claims() {
        let quota = QuotaSpec::of(&json!({"metadata": {"name": "q"}, "spec": {"hard": {"services.loadbalancers": "1", "services.nodeports": "2",
            "requests.storage": "10Gi", "fast.storageclass.storage.k8s.io/requests.storage": "1Gi", "persistentvolumeclaims": "3"}}}));
        let lb = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
        assert_eq!(quota.usage("", "services", &lb), Ok(Amounts::from([("services.loadbalancers".into(), 1000), ("services.nodeports".into(), 2000)])));
        let claim = json!({"spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "512Mi"}}}});
        let used = quota.usage("", "persistentvolumeclaims", &claim).expect("admitted");
        assert_eq!(used["requests.storage"], 536_870_912_000);
        assert_eq!(used["fast.storageclass.storage.k8s.io/requests.storage"], 536_870_912_000);
        assert_eq!(used["persistentvolumeclaims"], 1000);
    }
}
