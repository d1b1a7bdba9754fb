//! The layering invariants ARCHITECTURE.md lists, checked on the source (as rust-analyzer's tidy tests check
//! its own): a forbidden import fails this test with the file, the line and the rule it breaks.
//!
//! - the registry knows nothing above it: `registry/` names no kind, no cache, no server, no HTTP stage;
//! - no service locator: only the request path (`server.rs`, `chain.rs`, `routes.rs`, `handlers/`) names
//!   `ApiServer`; what it holds, the kinds and the controllers get narrow handles instead;
//! - the kinds are rules, not wiring: `kinds/` names no server, handler or controller (its tests may wire one);
//! - the kubectl plugins are clients: `plugins/` and `bin/` name nothing of the server, only its HTTP API;
//! - the lower crates stay below: `storage`, `authz` and `crd` know no HTTP, TLS or command line, and `authz`
//!   and `crd` do no IO.

use std::path::{Path, PathBuf};

/// One rule: which files it covers, what they may not mention, and why.
struct Rule {
    covers: fn(&str) -> bool,
    forbidden: &'static [&'static str],
    why: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        covers: |file| file.starts_with("registry/"),
        forbidden: &[
            "crate::kinds", "crate::resolver", "crate::tenancy", "crate::server", "crate::controllers",
            "crate::authorization", "crate::handlers", "crate::chain", "crate::filters", "crate::routes", "ApiServer",
        ],
        why: "the registry knows nothing above it: kinds come in as strategies, admission plugins and observers",
    },
    Rule {
        covers: |file| !matches!(file, "server.rs" | "chain.rs" | "routes.rs") && !file.starts_with("handlers"),
        forbidden: &["ApiServer"],
        why: "only the request path holds the server; everything it holds gets the narrow handles it uses",
    },
    Rule {
        covers: |file| file.starts_with("kinds") && !file.ends_with("tests.rs"),
        forbidden: &["crate::server", "crate::handlers", "crate::chain", "crate::controllers", "crate::routes"],
        why: "a kind is its rules: strategies and admission get what they read, never the wiring",
    },
    Rule {
        covers: |file| file.starts_with("plugins") || file.starts_with("bin/"),
        forbidden: &[
            "crate::registry", "crate::server", "crate::handlers", "crate::chain", "crate::filters", "crate::routes",
            "crate::kinds", "crate::controllers", "crate::tenancy", "crate::resolver", "crate::authorization",
            "crate::status", "kspaces_storage", "kspaces_authz", "kspaces_crd", "actix",
        ],
        why: "the kubectl plugins are clients: they speak HTTP to a server, they share none of its code",
    },
    Rule {
        covers: |file| file.starts_with("controllers"),
        forbidden: &["crate::handlers", "crate::chain", "crate::routes"],
        why: "controllers write through the registry, not through the HTTP layer",
    },
];

/// Every `.rs` file under `dir`, as a path relative to it with `/` separators.
fn sources(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap_or_else(|e| panic!("{}: {e}", current.display())) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(dir).unwrap_or(&path).to_string_lossy().replace('\\', "/");
                found.push((relative, path));
            }
        }
    }
    found.sort();
    found
}

/// The code of a line: what precedes a `//` comment.
fn code(line: &str) -> &str {
    line.split("//").next().unwrap_or_default()
}

#[test]
fn layers_import_only_downwards() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut broken = Vec::new();
    for (file, path) in sources(&src) {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        for rule in RULES.iter().filter(|rule| (rule.covers)(&file)) {
            for (number, line) in text.lines().enumerate() {
                if let Some(name) = rule.forbidden.iter().find(|name| code(line).contains(*name)) {
                    broken.push(format!("apiserver/src/{file}:{}: `{name}`: {}", number + 1, rule.why));
                }
            }
        }
    }
    assert!(broken.is_empty(), "layering broken:\n{}", broken.join("\n"));
}

/// The `[dependencies]` of a crate's manifest, by name.
fn dependencies(krate: &str) -> Vec<String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(krate).join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let section = text.split("[dependencies]").nth(1).unwrap_or_default();
    let section = section.split("\n[").next().unwrap_or_default();
    section
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.split(['=', '.']).next().map(|name| name.trim().to_owned()))
        .collect()
}

#[test]
fn lower_crates_know_no_http_and_pure_crates_do_no_io() {
    let http = ["actix-web", "actix-tls", "rustls", "clap", "hyper", "kspaces-apiserver"];
    let io = ["tokio", "sled", "etcd-client", "kspaces-storage", "futures"];
    for (krate, forbidden) in [("storage", &http[..]), ("authz", &[&http[..], &io[..]].concat()[..]), ("crd", &[&http[..], &io[..]].concat()[..])] {
        let found: Vec<String> = dependencies(krate).into_iter().filter(|d| forbidden.contains(&d.as_str())).collect();
        assert!(found.is_empty(), "{krate} depends on {found:?}");
    }
}

#[test]
fn the_rules_see_the_sources() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files: Vec<String> = sources(&src).into_iter().map(|(file, _)| file).collect();
    for expected in ["registry/store.rs", "server.rs", "kinds/tenant.rs", "controllers/gc.rs"] {
        assert!(files.iter().any(|f| f == expected), "{expected} not found among {} files", files.len());
    }
    assert!((RULES[0].covers)("registry/store.rs") && !(RULES[0].covers)("kinds/crd.rs"));
    assert!(dependencies("storage").iter().any(|d| d == "sled"), "the manifest reader finds dependencies");
}
