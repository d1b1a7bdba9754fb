//! Priority and fairness benchmark: what the dispatch stage adds to every request when nothing waits — the
//! classification over kube's bootstrap FlowSchemas, the tenant, and taking and giving back a seat (or, for
//! `system:masters`, the exempt level) — as `chain::admit` runs them.
//!
//! Run: `cargo bench -p kspaces-apiserver --bench flowcontrol` (a plain `main`, release build). Each kind is timed
//! over `ITERATIONS` requests per run, `RUNS` runs interleaved; the table shows the median run's mean ns/request
//! (and the fastest and slowest run).

use std::hint::black_box;
use std::time::Instant;

use kspaces_apiserver::apis::request_info;
use kspaces_apiserver::flowcontrol::{self, bootstrap, FlowControl, Settings, FLOW_SCHEMA, GROUP, PRIORITY_LEVEL};
use kspaces_apiserver::registry::observe::WriteObserver;
use kspaces_apiserver::tenancy::Tree;
use kspaces_authz::{Caller, UserInfo};
use kspaces_storage::{Revision, SpaceName};

const ITERATIONS: usize = 200_000;
const RUNS: usize = 9;

fn caller(name: &str, groups: &[&str], tenant: &str) -> Caller {
    let user = UserInfo::authenticated(name.into(), String::new(), groups.iter().map(|g| g.to_string()).collect(), Some(tenant.into()));
    Caller { user, tenant: Some(tenant.into()), system: tenant == "system" }
}

fn main() {
    let flowcontrol = FlowControl::default();
    flowcontrol.configure(Settings::default());
    let rows = kspaces_apiserver::kinds::resources();
    let row = |kind: &str| rows.iter().find(|r| r.group == GROUP && r.kind == kind).cloned().expect("a flowcontrol row");
    let mut revision = 0;
    for (kind, objects) in [(PRIORITY_LEVEL, bootstrap::priority_levels()), (FLOW_SCHEMA, bootstrap::flow_schemas())] {
        for mut object in objects {
            revision += 1;
            let name = object["metadata"]["name"].as_str().unwrap_or_default().to_owned();
            object["metadata"]["uid"] = serde_json::json!(format!("uid-{revision}"));
            flowcontrol.written(&row(kind), &SpaceName::system(), &name, Some(&object), Revision(revision));
        }
    }
    let tree = Tree::default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let kinds = [
        ("tenant user, `GET .../configmaps/x` (global-default: the 12th schema tried)", caller("alice", &[], "t-a"),
            request_info::parse("GET", "/api/v1/namespaces/default/configmaps/x", "")),
        ("service account (service-accounts: the 11th)",
            caller("system:serviceaccount:default:builder", &["system:serviceaccounts"], "t-a"),
            request_info::parse("POST", "/api/v1/namespaces/default/configmaps", "")),
        ("system:masters (exempt: the first)", caller("admin", &["system:masters"], "system"),
            request_info::parse("GET", "/clusters/root:t-a/api/v1/namespaces/default/configmaps", "")),
    ];
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
    for _ in 0..RUNS {
        for (i, (_, caller, info)) in kinds.iter().enumerate() {
            let began = Instant::now();
            runtime.block_on(async {
                for _ in 0..ITERATIONS {
                    let classified = flowcontrol.classify(Some(caller), info).expect("classified");
                    let tenant = flowcontrol::tenant_of(Some(caller), &info.space, &tree);
                    let admitted = flowcontrol.admit(&classified, Some(caller), &tenant, info).await;
                    black_box(admitted.is_ok());
                }
            });
            samples[i].push(began.elapsed().as_nanos() as f64 / ITERATIONS as f64);
        }
    }
    println!("| request | classify + tenant + seat, ns/request (median of {RUNS}; min–max) |\n|---|---|");
    for ((label, _, _), mut runs) in kinds.iter().zip(samples) {
        runs.sort_by(f64::total_cmp);
        println!("| {label} | {:.0} ({:.0}–{:.0}) |", runs[RUNS / 2], runs[0], runs[RUNS - 1]);
    }
}
