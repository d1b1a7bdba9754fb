//! RBAC decision latency at kspaces' target scale: 10,000 spaces, each with Kubernetes' bootstrap ClusterRoles
//! and ClusterRoleBindings plus 20 Roles and 20 RoleBindings of its own, one `SpacePolicy` per space as the
//! server holds them. Every call is timed on its own (`Instant`) into an HDR histogram, for allow and deny
//! decisions, with the decision cache cold (every request distinct) and warm (a working set repeated). A last
//! scenario puts thousands of bindings in one namespace, where casbin's role manager scans its domain's nodes.
//!
//! Every answer is checked against the answer the generator intended, so the numbers are for correct decisions.
//! Run with `cargo bench -p kspaces-authz --bench decisions`.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use kspaces_authz::bootstrap::bootstrap_objects;
use kspaces_authz::policy::SpacePolicy;
use kspaces_authz::rbac::Attributes;
use kspaces_authz::UserInfo;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

const SPACES: usize = 10_000;
const ROLES_PER_SPACE: usize = 20;
const BINDINGS_PER_SPACE: usize = 20;
const NAMESPACES: usize = 5;
const USERS: usize = 10;
const TEAMS: usize = 5;
const REQUESTS: usize = 200_000;
/// Distinct requests in the warm working set (spread over all spaces).
const WARM_SET: usize = 5_000;
const LARGE_SPACE_BINDINGS: usize = 5_000;
const LARGE_SPACE_REQUESTS: usize = 50_000;
const DEFAULT_CLUSTER_ROLES: [&str; 3] = ["view", "edit", "admin"];

/// One timed call: which space, who, what, and the answer it must get.
struct Request {
    space: usize,
    user: UserInfo,
    attributes: Attributes,
    allowed: bool,
}

fn main() {
    let bootstrap = bootstrap_objects(false);
    let rss_before = rss_kib();
    let started = Instant::now();
    let policies: Vec<SpacePolicy> = (0..SPACES).map(|space| build_space(&bootstrap, space)).collect();
    let build = started.elapsed();
    let rss_after = rss_kib();
    let skipped: usize = policies.iter().map(SpacePolicy::skipped).sum();
    assert_eq!(skipped, 0, "every generated object is readable");

    let mut rng = StdRng::seed_from_u64(0x6b73_7061_6365);
    let mut unique = 0_u64;
    let mut rows = Vec::new();
    let cold_allow: Vec<Request> = (0..REQUESTS).map(|_| allow_request(&mut rng, &mut unique)).collect();
    rows.push(measure("allow, cache cold (distinct requests)", &policies, &cold_allow));
    let cold_deny: Vec<Request> = (0..REQUESTS).map(|_| deny_request(&mut rng, &mut unique)).collect();
    rows.push(measure("deny, cache cold (distinct requests)", &policies, &cold_deny));
    let warm_allow = repeated(&policies, (0..WARM_SET).map(|_| allow_request(&mut rng, &mut unique)).collect(), &mut rng);
    rows.push(measure("allow, cache warm (repeats)", &policies, &warm_allow));
    let warm_deny = repeated(&policies, (0..WARM_SET).map(|_| deny_request(&mut rng, &mut unique)).collect(), &mut rng);
    rows.push(measure("deny, cache warm (repeats)", &policies, &warm_deny));

    let large_started = Instant::now();
    let large = vec![build_large_space(&bootstrap)];
    let large_build = large_started.elapsed();
    let large_allow: Vec<Request> = (0..LARGE_SPACE_REQUESTS).map(|_| large_request(&mut rng, &mut unique, true)).collect();
    rows.push(measure(&format!("allow, 1 space × {LARGE_SPACE_BINDINGS} bindings in one namespace, cold"), &large, &large_allow));
    let large_deny: Vec<Request> = (0..LARGE_SPACE_REQUESTS).map(|_| large_request(&mut rng, &mut unique, false)).collect();
    rows.push(measure(&format!("deny, 1 space × {LARGE_SPACE_BINDINGS} bindings in one namespace, cold"), &large, &large_deny));

    print_report(build, rss_before, rss_after, large_build, &rows);
}

/// A space as the server would read it: the shared bootstrap objects followed by the space's own.
fn build_space(bootstrap: &[Value], space: usize) -> SpacePolicy {
    let own = space_objects(space);
    SpacePolicy::new(bootstrap.iter().chain(own.iter()))
}

fn namespace(index: usize) -> String {
    format!("ns-{}", index % NAMESPACES)
}

/// 20 Roles (three rules each: a resource and its status, a CRD group's writes, one named deployment) and 20
/// RoleBindings: most bind their own Role, every fourth binds `view`, `edit` or `admin`; each names one user and
/// one team, every seventh also a ServiceAccount.
fn space_objects(space: usize) -> Vec<Value> {
    let mut objects = Vec::with_capacity(ROLES_PER_SPACE + BINDINGS_PER_SPACE);
    for role in 0..ROLES_PER_SPACE {
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": format!("role-{role}"), "namespace": namespace(role)},
            "rules": [
                {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": [format!("res-{role}"), format!("res-{role}/status")]},
                {"verbs": ["create", "update", "patch", "delete"], "apiGroups": ["example.com"], "resources": [format!("widgets-{role}")]},
                {"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": [format!("web-{space}")]},
            ],
        }));
    }
    for binding in 0..BINDINGS_PER_SPACE {
        let role_ref = match cluster_role_of(binding) {
            Some(cluster_role) => json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role}),
            None => json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": format!("role-{binding}")}),
        };
        let mut subjects = vec![
            json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": format!("user-{}", binding % USERS)}),
            json!({"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": format!("team-{}", binding % TEAMS)}),
        ];
        if binding % 7 == 0 {
            subjects.push(json!({"kind": "ServiceAccount", "name": format!("bot-{binding}")}));
        }
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": format!("binding-{binding}"), "namespace": namespace(binding)},
            "roleRef": role_ref, "subjects": subjects,
        }));
    }
    objects
}

fn cluster_role_of(binding: usize) -> Option<&'static str> {
    (binding % 4 == 3).then(|| DEFAULT_CLUSTER_ROLES[binding % DEFAULT_CLUSTER_ROLES.len()])
}

fn user(index: usize) -> UserInfo {
    UserInfo::authenticated(format!("user-{index}"), String::new(), vec![format!("team-{}", index % TEAMS)], Some("t".into()))
}

fn resource(verb: &str, group: &str, resource: &str, name: String, namespace: String) -> Attributes {
    let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
    Attributes::Resource {
        verb: verb.into(), group: group.into(), resource: resource.into(), subresource: subresource.into(),
        name, namespace: Some(namespace),
    }
}

fn fresh_name(unique: &mut u64) -> String {
    *unique += 1;
    format!("obj-{unique}")
}

/// A request one binding of a random space grants to its user (a unique object name keeps it uncached).
fn allow_request(rng: &mut StdRng, unique: &mut u64) -> Request {
    let space = rng.random_range(0..SPACES);
    let binding = rng.random_range(0..BINDINGS_PER_SPACE);
    let what = if cluster_role_of(binding).is_some() { "pods".to_owned() } else { format!("res-{binding}/status") };
    let attributes = resource("get", "", &what, fresh_name(unique), namespace(binding));
    Request { space, user: user(binding % USERS), attributes, allowed: true }
}

/// A request nothing grants, in the namespace where the user holds the most bindings, so every candidate
/// binding's every rule is tried (the slowest kind of answer).
fn deny_request(rng: &mut StdRng, unique: &mut u64) -> Request {
    let space = rng.random_range(0..SPACES);
    let index = rng.random_range(0..USERS);
    let attributes = resource("update", "", "nodes", fresh_name(unique), namespace(index));
    Request { space, user: user(index), attributes, allowed: false }
}

/// `REQUESTS` draws from `working_set`, after one pass that fills the caches.
fn repeated(policies: &[SpacePolicy], working_set: Vec<Request>, rng: &mut StdRng) -> Vec<Request> {
    for request in &working_set {
        policies[request.space].decide(&request.user, &request.attributes);
    }
    (0..REQUESTS)
        .map(|_| {
            let request = &working_set[rng.random_range(0..working_set.len())];
            Request { space: request.space, user: request.user.clone(), attributes: request.attributes.clone(), allowed: request.allowed }
        })
        .collect()
}

/// One namespace holding `LARGE_SPACE_BINDINGS` Roles and RoleBindings, one per user.
fn build_large_space(bootstrap: &[Value]) -> SpacePolicy {
    let mut objects: Vec<Value> = bootstrap.to_vec();
    for index in 0..LARGE_SPACE_BINDINGS {
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": format!("role-{index}"), "namespace": "big"},
            "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": [format!("res-{index}")]}],
        }));
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": format!("binding-{index}"), "namespace": "big"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": format!("role-{index}")},
            "subjects": [{"kind": "User", "name": format!("big-user-{index}")}, {"kind": "Group", "name": format!("big-team-{}", index % 50)}],
        }));
    }
    SpacePolicy::new(&objects)
}

fn large_request(rng: &mut StdRng, unique: &mut u64, allowed: bool) -> Request {
    let index = rng.random_range(0..LARGE_SPACE_BINDINGS);
    let user = UserInfo::authenticated(format!("big-user-{index}"), String::new(), vec![format!("big-team-{}", index % 50)], None);
    let verb = if allowed { "get" } else { "delete" };
    Request { space: 0, user, attributes: resource(verb, "", &format!("res-{index}"), fresh_name(unique), "big".into()), allowed }
}

struct Row {
    scenario: String,
    histogram: Histogram<u64>,
}

/// Times every decision of `requests` on its own and checks its answer.
fn measure(scenario: &str, policies: &[SpacePolicy], requests: &[Request]) -> Row {
    let mut histogram = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds");
    let mut wrong = 0_usize;
    for request in requests {
        let started = Instant::now();
        let decision = policies[request.space].decide(&request.user, &request.attributes);
        let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        histogram.saturating_record(nanos.max(1));
        wrong += usize::from(decision.allowed != request.allowed);
    }
    assert_eq!(wrong, 0, "{scenario}: decisions differ from what the generator intended");
    Row { scenario: scenario.to_owned(), histogram }
}

fn micros(nanos: u64) -> String {
    format!("{:.2}", nanos as f64 / 1000.0)
}

fn print_report(build: Duration, rss_before: Option<u64>, rss_after: Option<u64>, large_build: Duration, rows: &[Row]) {
    let mib = |kib: Option<u64>| kib.map_or("?".to_owned(), |kib| format!("{:.0} MiB", kib as f64 / 1024.0));
    println!("## RBAC decisions ({} cores)\n", std::thread::available_parallelism().map_or(0, usize::from));
    println!(
        "Built {SPACES} spaces ({} objects each: bootstrap + {ROLES_PER_SPACE} Roles + {BINDINGS_PER_SPACE} RoleBindings) in {:.2} s ({:.1} µs per space).",
        bootstrap_objects(false).len() + ROLES_PER_SPACE + BINDINGS_PER_SPACE,
        build.as_secs_f64(),
        build.as_secs_f64() * 1e6 / SPACES as f64,
    );
    println!("RSS (VmRSS) before {}, after {}.", mib(rss_before), mib(rss_after));
    println!("Large space ({LARGE_SPACE_BINDINGS} Roles + {LARGE_SPACE_BINDINGS} RoleBindings in one namespace) built in {:.2} s.\n", large_build.as_secs_f64());
    println!("| scenario | requests | p50 µs | p99 µs | max µs |");
    println!("|---|---:|---:|---:|---:|");
    for row in rows {
        let h = &row.histogram;
        println!("| {} | {} | {} | {} | {} |", row.scenario, h.len(), micros(h.value_at_quantile(0.5)), micros(h.value_at_quantile(0.99)), micros(h.max()));
    }
}

/// This process's resident set from /proc (Linux); `None` elsewhere.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
