//! Workspace tree benchmark: the per-request cost of resolving a workspace path (`root:t-3:w-1:w-4:w-1:w-5`) or a
//! logical cluster name with 100,000 workspaces at depth 5, as `tenancy::resolve` does for every `/clusters/<path>`
//! request, and the memory the tree takes per workspace.
//!
//! Run: `cargo bench -p kspaces-apiserver --bench workspace_tree` (a plain `main`, release build). The tree is
//! `tenancy::Tree` fed as its write observer is: `TENANTS` tenants under root, each with `FANOUT` workspaces, each
//! with `FANOUT` more, down to depth 5 (`TENANTS` × `FANOUT`⁴ = 100,000 workspaces at depth 5, 111,110 in all), each
//! nested workspace with a kcp-style 16-character logical cluster name. Each kind of call is timed one at a time
//! over `SAMPLES` calls cycling through every target in a shuffled order (so lookups do not all hit one warm
//! entry); the table shows p50, p99 and max. Target: a depth-5 path resolves in ≤ 2 µs p99.

use std::hint::black_box;
use std::time::{Duration, Instant};

use kspaces_apiserver::kinds::workspace::base36;
use kspaces_apiserver::tenancy::tree::Edge;
use kspaces_apiserver::tenancy::Tree;
use kspaces_storage::{Revision, SpaceName};

/// The server's allocator (`src/main.rs`), so the figures are the server's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TENANTS: usize = 10;
const FANOUT: usize = 10;
const DEPTH: usize = 5;
const SAMPLES: usize = 1_000_000;
const TARGET: Duration = Duration::from_micros(2);

/// One workspace of the tree: its path and its logical cluster.
struct Workspace {
    path: String,
    cluster: SpaceName,
}

fn space(name: &str) -> SpaceName {
    SpaceName::new(name).unwrap_or_else(|e| panic!("{e}"))
}

/// A deterministic kcp-style logical cluster name (16 base-36 characters) for the `n`th workspace.
fn cluster_name(n: usize) -> String {
    let mixed = (n as u128 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
    format!("{:0>16}", base36(&mixed.to_be_bytes())).chars().rev().take(16).collect()
}

/// Builds the tree level by level; returns it with every workspace, by depth (index 0: the tenants).
fn build() -> (Tree, Vec<Vec<Workspace>>) {
    let tree = Tree::default();
    let mut revision = 0;
    let mut levels: Vec<Vec<Workspace>> = Vec::new();
    let tenants = (0..TENANTS).map(|t| Workspace { path: format!("root:t-{t}"), cluster: space(&format!("t-{t}")) }).collect::<Vec<_>>();
    for tenant in &tenants {
        revision += 1;
        let name = tenant.cluster.as_str();
        let edge = Edge { cluster: tenant.cluster.clone(), kind: "root:organization".into(), phase: "Ready".into(), deleting: false };
        tree.apply(&SpaceName::system(), name, Some(edge), Revision(revision));
    }
    levels.push(tenants);
    let mut made = 0;
    for _ in 1..DEPTH {
        let mut next = Vec::new();
        for parent in levels.last().into_iter().flatten() {
            for k in 0..FANOUT {
                made += 1;
                revision += 1;
                let name = format!("w-{k}");
                let cluster = space(&cluster_name(made));
                let edge = Edge { cluster: cluster.clone(), kind: "root:universal".into(), phase: "Ready".into(), deleting: false };
                tree.apply(&parent.cluster, &name, Some(edge), Revision(revision));
                next.push(Workspace { path: format!("{}:{name}", parent.path), cluster });
            }
        }
        levels.push(next);
    }
    (tree, levels)
}

/// A fixed pseudo-random permutation of `0..n` (xorshift), so consecutive calls touch unrelated entries.
fn shuffled(n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    for i in (1..n).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        order.swap(i, (state % (i as u64 + 1)) as usize);
    }
    order
}

/// Times `SAMPLES` calls of `call(target)` cycling through `targets`; returns the sorted latencies.
fn measure<T>(targets: &[T], mut call: impl FnMut(&T) -> bool) -> Vec<Duration> {
    let mut latencies = Vec::with_capacity(SAMPLES);
    let mut answered = 0usize;
    for i in 0..SAMPLES {
        let target = &targets[i % targets.len()];
        let began = Instant::now();
        let found = black_box(call(black_box(target)));
        latencies.push(began.elapsed());
        answered += usize::from(found);
    }
    black_box(answered);
    latencies.sort();
    latencies
}

fn at(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p / 100.0) as usize).min(sorted.len() - 1)]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// `VmRSS` of this process in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or_default();
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or_default()
}

/// Checks the answers once, untimed, so the timed loops measure the right thing.
fn check(tree: &Tree, levels: &[Vec<Workspace>]) {
    for workspace in levels.iter().flatten().step_by(997) {
        let node = tree.resolve(&workspace.path).unwrap_or_else(|| panic!("{} resolves", workspace.path));
        assert_eq!(node.cluster, workspace.cluster, "{}", workspace.path);
        let back = tree.cluster(&workspace.cluster).unwrap_or_else(|| panic!("{} is known", workspace.cluster));
        assert_eq!(back.path, workspace.path);
        assert_eq!(tree.tenant_of(&workspace.cluster), node.tenant);
        assert!(workspace.path.starts_with(&format!("root:{}", node.tenant)));
    }
    assert_eq!(tree.len(), levels.iter().map(Vec::len).sum::<usize>());
}

fn main() {
    let rss_before = rss_kib();
    let began = Instant::now();
    let (tree, levels) = build();
    let build_time = began.elapsed();
    let total: usize = levels.iter().map(Vec::len).sum();
    // The bench's own lists of paths and clusters, measured apart so the tree's share can be told.
    let targets_kib = levels.iter().flatten().map(|w| (w.path.capacity() + w.cluster.as_str().len() + 64) as u64).sum::<u64>() / 1024;
    let rss_after = rss_kib();
    check(&tree, &levels);
    let deepest = &levels[DEPTH - 1];
    println!(
        "built {total} workspaces ({} at depth {DEPTH}) in {:.2} s; RSS {:.1} → {:.1} MiB, about {:.0} bytes per workspace \
         for the tree (less the bench's own ~{} KiB of paths)",
        deepest.len(),
        build_time.as_secs_f64(),
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        (rss_after.saturating_sub(rss_before).saturating_sub(targets_kib)) as f64 * 1024.0 / total as f64,
        targets_kib,
    );

    let order = shuffled(deepest.len());
    let paths: Vec<&str> = order.iter().map(|&i| deepest[i].path.as_str()).collect();
    let clusters: Vec<&SpaceName> = order.iter().map(|&i| &deepest[i].cluster).collect();
    let shallow: Vec<&str> = shuffled(levels[2].len()).iter().map(|&i| levels[2][i].path.as_str()).collect();
    let tenants: Vec<&str> = levels[0].iter().map(|w| w.path.as_str()).collect();
    let missing: Vec<String> = paths.iter().take(4096).map(|p| format!("{p}x")).collect();

    println!("\n| call ({total} workspaces) | p50 | p99 | max | target |\n|---|---:|---:|---:|---|");
    let rows: Vec<(&str, Vec<Duration>, bool)> = vec![
        ("`resolve` depth-5 path (`root:t-3:w-1:w-4:w-1:w-5`)", measure(&paths, |p| tree.resolve(p).is_some()), true),
        ("`resolve` depth-3 path", measure(&shallow, |p| tree.resolve(p).is_some()), false),
        ("`resolve` depth-1 path (a tenant, `root:t-3`)", measure(&tenants, |p| tree.resolve(p).is_some()), false),
        ("`resolve` unknown depth-5 path (404)", measure(&missing, |p| tree.resolve(p).is_some()), false),
        ("`cluster` of a depth-5 logical cluster (`/clusters/<name>`)", measure(&clusters, |c| tree.cluster(c).is_some()), false),
        ("`tenant_of` a depth-5 logical cluster (every request)", measure(&clusters, |c| !tree.tenant_of(c).is_empty()), false),
    ];
    for (label, latencies, targeted) in rows {
        let p99 = at(&latencies, 99.0);
        let verdict = match (targeted, p99 <= TARGET) {
            (false, _) => "",
            (true, true) => "p99 ≤ 2 µs: met",
            (true, false) => "p99 ≤ 2 µs: **not met**",
        };
        println!(
            "| {label} | {:.2} µs | {:.2} µs | {:.1} µs | {verdict} |",
            micros(at(&latencies, 50.0)),
            micros(p99),
            micros(latencies[latencies.len() - 1]),
        );
    }
    println!("\n{SAMPLES} calls per row; total bench time {:.1} s", began.elapsed().as_secs_f64());
}
