//! Release builds of `kspaces` lay out the functions a server runs when it starts and serves its first requests
//! together, in the order `symbol-order.txt` lists them (`scripts/symbol-order.sh` writes it). The kernel maps a
//! binary's code 64 KiB around each page it faults in, so startup code spread over the whole `.text` kept about
//! half of it resident in an idle server (docs/benchmarks.md, "Idle RSS: the startup code laid out together").
//!
//! The ordering is an option of LLD, the linker Rust uses by default on x86_64 Linux since 1.90; with another
//! linker, or another target, nothing is asked for. Names the list holds that a build lacks are skipped quietly;
//! `tests/tests/symbol_order.rs` fails when the list is stale (its names' hashes or paths no longer today's).

use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=symbol-order.txt");
    println!("cargo::rerun-if-env-changed=KSPACES_NO_SYMBOL_ORDER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let release = var("PROFILE") == "release";
    let target = var("TARGET") == "x86_64-unknown-linux-gnu";
    // A linker chosen by the user (`-C linker=...`, `-C linker-features=-lld`) may not be LLD.
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let own_linker = flags.contains("linker") || !var("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_empty();
    if !release || !target || own_linker || !lld_by_default() || !var("KSPACES_NO_SYMBOL_ORDER").is_empty() {
        return;
    }
    let order = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("symbol-order.txt");
    println!("cargo::rustc-link-arg-bin=kspaces=-Wl,--symbol-ordering-file={}", order.display());
    println!("cargo::rustc-link-arg-bin=kspaces=-Wl,--no-warn-symbol-ordering");
}

/// Whether rustc links with its own LLD by default: 1.90 and later.
fn lld_by_default() -> bool {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let Ok(output) = Command::new(rustc).arg("--version").output() else { return false };
    let version = String::from_utf8_lossy(&output.stdout).into_owned();
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let mut numbers = version.split_whitespace().nth(1).unwrap_or_default().split('.').map(|n| n.parse::<u32>().unwrap_or(0));
    let (major, minor) = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    (major, minor) >= (1, 90)
}
