//! The layering invariants ARCHITECTURE.md lists, checked on the source (as rust-analyzer's tidy tests check
//! its own): a forbidden import fails this test with the file, the line and the rule it breaks.
//!
//! - the registry knows nothing above it: `registry/` names no kind, no cache, no server, no HTTP stage;
//! - no service locator: only the request path (`api_server.rs`, `server.rs`, `chain.rs`, `routes.rs`,
//!   `handlers/`) names `ApiServer`; what it holds, the kinds and the controllers get narrow handles instead;
//! - the kinds are rules, not wiring: `kinds/` names no server, handler or controller (its tests may wire one);
//! - the kubectl plugins are clients: `plugins/` and `bin/` name nothing of the server, only its HTTP API;
//! - the lower crates stay below: `storage`, `authz` and `crd` know no HTTP, TLS or command line, and `authz`
//!   and `crd` do no IO;
//! - one decoder for every request body: the request path reads bodies only through `decode::decode`;
//! - errors are plain data: `status.rs` names no actix type and no format (rendering is `negotiate/respond.rs`'s);
//! - the vocabulary (`apis/`) names nothing above the registry's parsers;
//! - the top-level modules import each other in no loop but the entry point's own (chain, handlers, routes,
//!   server), grouped `use crate::{...}` imports read too;
//! - ARCHITECTURE.md names every top-level module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One rule: which files it covers, what they may not mention, and why.
struct Rule {
    covers: fn(&str) -> bool,
    forbidden: &'static [&'static str],
    why: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        covers: |file| file.starts_with("registry/") && !file.ends_with("tests.rs") && !file.contains("/tests/"),
        forbidden: &[
            "crate::kinds", "crate::resolver", "crate::tenancy", "crate::server", "crate::api_server", "crate::controllers",
            "crate::authorization", "crate::handlers", "crate::chain", "crate::filters", "crate::routes", "ApiServer",
            "crate::table", "crate::openapi", "crate::negotiate", "crate::apis", "actix",
        ],
        why: "the registry knows nothing above it: kinds come in as strategies, admission plugins and observers",
    },
    Rule {
        covers: |file| file == "status.rs",
        forbidden: &["actix", "crate::negotiate", "crate::protobuf", "HttpResponse"],
        why: "errors are plain data; how a Status goes out over HTTP is content negotiation's (negotiate/respond.rs)",
    },
    Rule {
        covers: |file| file == "apis.rs" || file.starts_with("apis/"),
        forbidden: &[
            "crate::kinds", "crate::resolver", "crate::tenancy", "crate::server", "crate::controllers", "crate::claims",
            "crate::quota", "crate::authorization", "crate::handlers", "crate::chain", "crate::filters", "crate::routes",
            "crate::flowcontrol", "crate::virtual_workspace", "crate::discovery", "crate::negotiate", "crate::table",
            "crate::openapi", "ApiServer", "actix",
        ],
        why: "the vocabulary is below everything that speaks it: names, hashes and parsers, no rules and no state",
    },
    Rule {
        covers: |file| !matches!(file, "api_server.rs" | "server.rs" | "chain.rs" | "routes.rs") && !file.starts_with("handlers"),
        forbidden: &["ApiServer"],
        why: "only the request path holds the server; everything it holds gets the narrow handles it uses",
    },
    Rule {
        covers: |file| file.starts_with("kinds") && !file.ends_with("tests.rs"),
        forbidden: &["crate::server", "crate::api_server", "crate::handlers", "crate::chain", "crate::controllers", "crate::routes"],
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
        covers: |file| file == "handlers.rs" || file.starts_with("handlers/") || file == "chain.rs" || file == "routes.rs",
        forbidden: &["body_format", "decode::read", "Strictness", "serde_saphyr::from", "protobuf::decode_request"],
        why: "one decoder for every request body: handlers call `decode::decode` (through `Ctx::decode`), never a format's reader",
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

/// Each path a grouped import names, as the path it stands for: `use crate::{a, b::{c, d}}` gives `crate::a`,
/// `crate::b` (the first segment is what the rules and the module graph read), with the line it starts on.
fn grouped_imports(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let code: String = text.lines().map(|line| format!("{}\n", code(line))).collect();
    let mut rest = code.as_str();
    let mut offset = 0;
    while let Some(at) = rest.find("crate::{") {
        let start = at + "crate::{".len();
        let (mut depth, mut end, mut item_start) = (1, start, start);
        let mut items = Vec::new();
        for (i, c) in rest[start..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 1 => {
                    items.push(&rest[item_start..start + i]);
                    end = start + i;
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 1 => {
                    items.push(&rest[item_start..start + i]);
                    item_start = start + i + 1;
                }
                _ => {}
            }
        }
        let line = code[..offset + at].lines().count().max(1);
        for item in items {
            let first = item.trim().split("::").next().unwrap_or_default().trim();
            if !first.is_empty() && first != "self" {
                found.push((line, format!("crate::{first}")));
            }
        }
        offset += end;
        rest = &code[offset..];
    }
    found
}

/// A file's code without its trailing unit tests (`#[cfg(test)] mod tests { ... }`, which may wire anything).
fn without_tests(text: &str) -> &str {
    text.find("#[cfg(test)]\nmod tests {").map_or(text, |at| &text[..at])
}

#[test]
fn layers_import_only_downwards() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut broken = Vec::new();
    for (file, path) in sources(&src) {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let grouped = grouped_imports(&text);
        for rule in RULES.iter().filter(|rule| (rule.covers)(&file)) {
            for (number, line) in text.lines().enumerate() {
                if let Some(name) = rule.forbidden.iter().find(|name| code(line).contains(*name)) {
                    broken.push(format!("apiserver/src/{file}:{}: `{name}`: {}", number + 1, rule.why));
                }
            }
            for (number, path) in &grouped {
                if let Some(name) = rule.forbidden.iter().find(|name| path.starts_with(*name)) {
                    broken.push(format!("apiserver/src/{file}:{number}: `{name}` (grouped import): {}", rule.why));
                }
            }
        }
    }
    assert!(broken.is_empty(), "layering broken:\n{}", broken.join("\n"));
}

/// The top-level modules of `apiserver/src` (a file or a directory), and for each the top-level modules its code
/// outside unit tests names, with a file that names it.
fn module_graph() -> BTreeMap<String, BTreeMap<String, String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let top = |file: &str| file.split('/').next().unwrap_or_default().trim_end_matches(".rs").to_owned();
    let files = sources(&src);
    let modules: BTreeSet<String> = files.iter().map(|(file, _)| top(file)).filter(|m| !matches!(m.as_str(), "lib" | "main" | "bin")).collect();
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = modules.iter().map(|m| (m.clone(), BTreeMap::new())).collect();
    for (file, path) in &files {
        let from = top(file);
        if !modules.contains(&from) || file.ends_with("tests.rs") || file.contains("/tests/") {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let text = without_tests(&text);
        let mut named: Vec<String> = grouped_imports(text).into_iter().map(|(_, path)| path).collect();
        for line in text.lines() {
            let mut rest = code(line);
            while let Some(at) = rest.find("crate::") {
                rest = &rest[at + "crate::".len()..];
                let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                named.push(format!("crate::{name}"));
            }
        }
        for path in named {
            let to = path.trim_start_matches("crate::").to_owned();
            if to != from && modules.contains(&to) {
                graph.entry(from.clone()).or_default().entry(to).or_insert_with(|| file.clone());
            }
        }
    }
    graph
}

/// The modules `start` reaches through `graph`, itself included.
fn reachable(graph: &BTreeMap<String, BTreeMap<String, String>>, start: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::from([start.to_owned()]);
    let mut pending = vec![start.to_owned()];
    while let Some(module) = pending.pop() {
        for next in graph.get(&module).into_iter().flat_map(|edges| edges.keys()) {
            if seen.insert(next.clone()) {
                pending.push(next.clone());
            }
        }
    }
    seen
}

#[test]
fn top_level_modules_import_in_no_loop_but_the_entry_points() {
    let graph = module_graph();
    let entry = ["chain", "handlers", "routes", "server"];
    let reach: BTreeMap<&String, BTreeSet<String>> = graph.keys().map(|m| (m, reachable(&graph, m))).collect();
    let mut loops = BTreeSet::new();
    for (module, reached) in &reach {
        let looped: BTreeSet<String> = reached.iter().filter(|other| reach.get(other).is_some_and(|back| back.contains(*module))).cloned().collect();
        if looped.len() > 1 && !looped.iter().all(|m| entry.contains(&m.as_str())) {
            loops.insert(looped.into_iter().collect::<Vec<_>>());
        }
    }
    let described: Vec<String> = loops.iter().map(|members| {
        let edges: Vec<String> = members.iter().flat_map(|from| graph[from].iter().filter(|(to, _)| members.contains(to))
            .map(move |(to, file)| format!("{from} -> {to} ({file})"))).collect();
        format!("{members:?}: {}", edges.join(", "))
    }).collect();
    assert!(loops.is_empty(), "import loops between top-level modules (only chain, handlers, routes and server may import each other both ways):\n{}", described.join("\n"));
}

#[test]
fn architecture_names_every_top_level_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap_or_else(|e| panic!("ARCHITECTURE.md: {e}"));
    let missing: Vec<String> = module_graph().into_keys().filter(|m| !["`", ".rs", "/"].iter().any(|end| architecture.contains(&format!("`{m}{end}")))).collect();
    assert!(missing.is_empty(), "ARCHITECTURE.md does not name these modules of apiserver/src (as `name`, `name.rs` or `name/`): {missing:?}");
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
    let grouped = grouped_imports("use crate::{kinds, registry::{a, b}, self};\n// crate::{nothing}\nuse crate::{\n    tenancy::Tree,\n};\n");
    assert_eq!(grouped, [(1, "crate::kinds".to_owned()), (1, "crate::registry".to_owned()), (3, "crate::tenancy".to_owned())]);
    let graph = module_graph();
    assert!(graph["chain"].contains_key("handlers") && graph["kinds"].contains_key("registry"), "the module graph reads imports");
    assert!(dependencies("storage").iter().any(|d| d == "sled"), "the manifest reader finds dependencies");
}
