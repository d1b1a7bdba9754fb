//! Tenancy benchmark: the per-request cost of working out who is calling and which space a request reaches,
//! with 10,000 tenants (one token user per tenant) — `request_info::parse`, the token lookup (with the
//! `UserInfo` clone that `chain::authenticate` makes) and `tenancy::resolve`, as `chain.rs` runs them.
//!
//! Run: `cargo bench -p kspaces-apiserver --bench tenancy` (a plain `main`, release build). Each path kind is
//! timed over `ITERATIONS` requests per run, `RUNS` runs interleaved across kinds; the table shows the median
//! run's mean ns/request (and the fastest and slowest run). Requests cycle through 4,096 pre-built
//! (token, path) pairs spread over the 10,000 tenants, so the hash-map lookups do not all hit one entry.

use std::hint::black_box;
use std::time::{Duration, Instant};

use kspaces_apiserver::filters::authenticate::TokenFile;
use kspaces_apiserver::apis::request_info::{self, SpacePath};
use kspaces_apiserver::registry::Spaces;
use kspaces_apiserver::tenancy::{caller, resolve, Request, TenantCache, Tree};
use kspaces_storage::Revision;

const TENANTS: usize = 10_000;
const ITERATIONS: usize = 200_000;
const RUNS: usize = 9;
const PAIRS: usize = 4096;
/// Target for the whole per-request path (parse + token lookup + resolve).
const TARGET_NS: f64 = 5_000.0;

/// One kind of request: a path shape and what `resolve` must answer for it.
#[derive(Clone, Copy)]
enum Kind {
    Short,
    Full,
    Workspace,
    Denied,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::Short, Kind::Full, Kind::Workspace, Kind::Denied];

    fn label(self) -> &'static str {
        match self {
            Kind::Short => "short path `GET /api/v1/namespaces/default/configmaps/x`",
            Kind::Full => "full path `GET /api/v1/tenants/t-42/namespaces/default/configmaps`",
            Kind::Workspace => "workspace path `GET /clusters/root:t-42/apis/apps/v1/namespaces/default/deployments`",
            Kind::Denied => "denied cross-tenant `GET /api/v1/tenants/t-43/namespaces/default/configmaps` (403)",
        }
    }

    /// The path a caller of tenant `tenant` sends (the denied kind names the next tenant).
    fn path(self, tenant: usize) -> String {
        match self {
            Kind::Short => "/api/v1/namespaces/default/configmaps/x".to_owned(),
            Kind::Full => format!("/api/v1/tenants/t-{tenant}/namespaces/default/configmaps"),
            Kind::Workspace => format!("/clusters/root:t-{tenant}/apis/apps/v1/namespaces/default/deployments"),
            Kind::Denied => format!("/api/v1/tenants/t-{}/namespaces/default/configmaps", (tenant + 1) % TENANTS),
        }
    }
}

/// (token, path, tenant) triples: the caller of tenant `i` uses token `tok-i`.
fn pairs(kind: Kind) -> Vec<(String, String, usize)> {
    (0..PAIRS)
        .map(|k| {
            let tenant = (k * 7919 + 42) % TENANTS;
            (format!("tok-{tenant}"), kind.path(tenant), tenant)
        })
        .collect()
}

/// The token CSV: one `admin` user per tenant, the tenant in the column after an empty one.
fn token_csv() -> String {
    (0..TENANTS).map(|i| format!("tok-{i},admin,uid-{i},\"\",,t-{i}\n")).collect()
}

fn tenant_cache() -> TenantCache {
    let cache = TenantCache::default();
    let active = serde_json::json!({"status": {"phase": "Active"}});
    cache.apply("system", Some(&active), Revision(1));
    for i in 0..TENANTS {
        cache.apply(&format!("t-{i}"), Some(&active), Revision(i as u64 + 2));
    }
    cache
}

/// The whole per-request path, as `chain::handle`/`serve` run it: returns the HTTP status (200 or the error's).
#[inline(never)]
fn per_request(tokens: &TokenFile, cache: &TenantCache, tree: &Tree, token: &str, path: &str) -> (u16, Option<Spaces>) {
    let info = request_info::parse("GET", path, "");
    let Some(user) = tokens.authenticate(token).cloned() else { return (401, None) };
    let caller = caller(user, None);
    let request = Request { caller: &caller, verb: &info.verb, resource: &info.resource, path: &info.space };
    match resolve(&request, cache, tree) {
        Ok(spaces) => (200, Some(spaces)),
        Err(err) => (err.code, None),
    }
}

/// Checks each kind once, untimed, so the timed loops measure the right thing.
fn check(tokens: &TokenFile, cache: &TenantCache, tree: &Tree) {
    for kind in Kind::ALL {
        for (token, path, tenant) in pairs(kind).iter().take(64) {
            let (status, spaces) = per_request(tokens, cache, tree, token, path);
            let expected_space = format!("t-{tenant}");
            match kind {
                Kind::Denied => assert_eq!(status, 403, "{path} with {token}"),
                _ => match spaces {
                    Some(Spaces::One(space)) => assert_eq!(space.as_str(), expected_space, "{path} with {token}"),
                    other => panic!("{path} with {token}: status {status}, spaces {other:?}"),
                },
            }
        }
    }
    let info = request_info::parse("GET", "/clusters/root:t-42/apis/apps/v1/namespaces/default/deployments", "");
    assert_eq!((info.space, info.resource.as_str(), info.verb.as_str()), (SpacePath::Workspace("root:t-42".into()), "deployments", "list"));
}

/// Mean ns per call of `body(i)` over `ITERATIONS` calls.
fn time_run(mut body: impl FnMut(usize)) -> f64 {
    let started = Instant::now();
    for i in 0..ITERATIONS {
        body(black_box(i));
    }
    started.elapsed().as_nanos() as f64 / ITERATIONS as f64
}

/// Median, fastest and slowest of the runs' means.
fn summary(mut runs: Vec<f64>) -> (f64, f64, f64) {
    runs.sort_by(f64::total_cmp);
    (runs[runs.len() / 2], runs[0], runs[runs.len() - 1])
}

fn main() {
    let began = Instant::now();
    let csv = token_csv();
    let parsed = Instant::now();
    let tokens = TokenFile::parse(&csv).expect("the token CSV parses");
    let parse_time = parsed.elapsed();
    let cache = tenant_cache();
    // `root:t-i` paths are tenants' and resolve through the tenant cache; the tree is asked only for deeper
    // paths (`workspace_tree.rs` measures those).
    let tree = Tree::default();
    check(&tokens, &cache, &tree);

    // Whole path, per kind; runs interleaved so background load spreads over every kind.
    let inputs: Vec<Vec<(String, String, usize)>> = Kind::ALL.iter().map(|kind| pairs(*kind)).collect();
    let mut whole: Vec<Vec<f64>> = vec![Vec::new(); Kind::ALL.len()];
    for _ in 0..RUNS {
        for (k, pairs) in inputs.iter().enumerate() {
            whole[k].push(time_run(|i| {
                let (token, path, _) = &pairs[i % PAIRS];
                black_box(per_request(&tokens, &cache, &tree, black_box(token), black_box(path)));
            }));
        }
    }

    // Stage breakdown on the full path.
    let full = &inputs[1];
    let mut stages: Vec<(&str, Vec<f64>)> = vec![
        ("`request_info::parse` alone (full path)", Vec::new()),
        ("token lookup alone (`TokenFile::authenticate`, no clone)", Vec::new()),
        ("token lookup + `UserInfo` clone (what `chain::authenticate` does)", Vec::new()),
        ("`tenancy::resolve` alone (full path, parsed beforehand)", Vec::new()),
    ];
    let parsed_full: Vec<_> = full.iter().map(|(_, path, _)| request_info::parse("GET", path, "")).collect();
    let callers: Vec<_> = full.iter().map(|(token, _, _)| caller(tokens.authenticate(token).cloned().expect("known token"), None)).collect();
    for _ in 0..RUNS {
        stages[0].1.push(time_run(|i| {
            black_box(request_info::parse("GET", black_box(&full[i % PAIRS].1), ""));
        }));
        stages[1].1.push(time_run(|i| {
            black_box(tokens.authenticate(black_box(&full[i % PAIRS].0)));
        }));
        stages[2].1.push(time_run(|i| {
            black_box(tokens.authenticate(black_box(&full[i % PAIRS].0)).cloned());
        }));
        stages[3].1.push(time_run(|i| {
            let (info, caller) = (&parsed_full[i % PAIRS], &callers[i % PAIRS]);
            let request = Request { caller, verb: &info.verb, resource: &info.resource, path: &info.space };
            black_box(resolve(black_box(&request), &cache, &tree).is_ok());
        }));
    }

    println!("\n{TENANTS} tenants, {TENANTS} token users; {RUNS} runs × {ITERATIONS} requests per row; ns/request\n");
    println!("| request | median ns | fastest run | slowest run | target < 5 µs |\n|---|---:|---:|---:|---|");
    for (kind, runs) in Kind::ALL.iter().zip(whole) {
        let (median, low, high) = summary(runs);
        let verdict = if median < TARGET_NS { "met" } else { "**not met**" };
        println!("| parse + token + resolve: {} | {median:.0} | {low:.0} | {high:.0} | {verdict} |", kind.label());
    }
    for (label, runs) in stages {
        let (median, low, high) = summary(runs);
        println!("| stage: {label} | {median:.0} | {low:.0} | {high:.0} | |");
    }
    println!("\n`TokenFile::parse` of the {TENANTS}-line CSV: {:.1} ms", millis(parse_time));
    println!("total bench time {:.1} s", began.elapsed().as_secs_f64());
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
