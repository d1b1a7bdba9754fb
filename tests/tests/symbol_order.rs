//! `apiserver/symbol-order.txt`, the functions a release build lays out first (docs/benchmarks.md, "Idle RSS"), may
//! not go stale silently. Its names carry hashes the linker matches exactly; they change when the toolchain or a
//! crate's version changes (every function of the crates whose versions, or whose dependencies' versions, moved),
//! and a function's path changes when its code moves or is renamed. CI builds no release binary, so this test checks
//! both causes from what it has: the list's header records a fingerprint of the toolchain and of the `Cargo.lock`
//! entries the server is built from, and the debug binary under test must still hold (by path, without the hash)
//! nearly every function of the workspace's crates that the list names. Either failure names the command that
//! writes the list again.

use std::path::Path;

/// What writes the list again (a release build, then a few minutes under callgrind).
const FIX: &str = "cargo build --release -p kspaces-apiserver --bin kspaces && scripts/symbol-order.sh target/release/kspaces > apiserver/symbol-order.txt";

/// The header line that carries the fingerprint, as `scripts/symbol-order.sh` writes it.
const FINGERPRINT_LINE: &str = "# fingerprint: ";

/// The share of the workspace's listed functions that may be missing from the binary: code that moved since the list
/// was written runs from wherever the linker put it, a 64 KiB fault-around each at worst.
const MAX_MISSING: f64 = 0.02;

fn list() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../apiserver/symbol-order.txt");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn listed(list: &str) -> impl Iterator<Item = &str> {
    list.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#'))
}

/// A function's name without what changes while its code does not: callgrind's recursion mark (`'2`), the
/// suffixes LLVM adds to copies it makes (`.llvm.123`, `.cold`, `.1234`), and a legacy mangled name's hash
/// (`_ZN4core3fmt5write17h0123456789abcdefE` is `core::fmt::write`).
fn path_of(name: &str) -> String {
    let name = name.split('\'').next().unwrap_or_default();
    let name = name.split(".llvm.").next().unwrap_or_default();
    let name = name.split(".cold").next().unwrap_or_default();
    let name = match name.rsplit_once('.') {
        Some((head, digits)) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => name,
    };
    let Some(mut rest) = name.strip_prefix("_ZN") else { return name.to_owned() };
    let mut parts = Vec::new();
    while let Some(digits) = rest.find(|c: char| !c.is_ascii_digit()).filter(|&at| at > 0) {
        let length: usize = rest[..digits].parse().unwrap_or(usize::MAX);
        let Some(part) = rest.get(digits..digits.saturating_add(length)) else { break };
        parts.push(part);
        rest = &rest[digits + length..];
    }
    if parts.last().is_some_and(|last| last.len() == 17 && last.starts_with('h') && last[1..].bytes().all(|b| b.is_ascii_hexdigit())) {
        parts.pop();
    }
    parts.join("::")
}

/// The defined functions of a little-endian ELF64 file's symbol table.
fn elf_functions(elf: &[u8]) -> Vec<&str> {
    let u16_at = |at: usize| elf.get(at..at + 2).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let u32_at = |at: usize| elf.get(at..at + 4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    let u64_at = |at: usize| elf.get(at..at + 8).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize);
    assert!(elf.starts_with(b"\x7fELF\x02\x01"), "the binary under test is not a little-endian ELF64 file");
    let (table, entry, count) = (u64_at(0x28), u16_at(0x3a), u16_at(0x3c));
    let section = |index: usize| table + index * entry;
    let Some(symtab) = (0..count).map(section).find(|&at| u32_at(at + 4) == 2) else {
        panic!("the binary under test has no symbol table (stripped?)");
    };
    let strings = section(u32_at(symtab + 40));
    let (names, names_end) = (u64_at(strings + 24), u64_at(strings + 24) + u64_at(strings + 32));
    let (start, size) = (u64_at(symtab + 24), u64_at(symtab + 32));
    (start..start + size).step_by(24).filter_map(|symbol| {
        let (info, defined) = (elf.get(symbol + 4).copied().unwrap_or(0), u16_at(symbol + 6) != 0);
        let name_at = names + u32_at(symbol);
        let name = elf.get(name_at..names_end)?;
        let name = &name[..name.iter().position(|&b| b == 0)?];
        (info & 0xf == 2 && defined).then(|| std::str::from_utf8(name).ok()).flatten()
    }).collect()
}

/// FNV-1a, 64 bits: a hash `scripts/symbol-order.sh` computes the same way in a few lines of Python.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

/// The manifests whose features and profiles are in the server's crates' hashes, beside `Cargo.lock`.
const MANIFESTS: [&str; 5] = ["Cargo.toml", "apiserver/Cargo.toml", "storage/Cargo.toml", "crd/Cargo.toml", "authz/Cargo.toml"];

/// What the symbols' hashes depend on: `rustc --version`; the `Cargo.lock` entry (name, version, source,
/// dependencies) of every package `kspaces-apiserver` reaches through its dependencies, itself included, sorted by
/// name and version, each line trimmed; then the manifests, as given.
fn fingerprint(rustc: &str, lock: &str, manifests: &[String]) -> String {
    let packages: Vec<(String, String, Vec<String>)> = lock.split("[[package]]").skip(1).map(|block| {
        let field = |key: &str| block.lines().find_map(|l| l.strip_prefix(key)).unwrap_or_default().trim_matches('"').to_owned();
        let dependencies = block.split("dependencies = [").nth(1).and_then(|rest| rest.split(']').next()).unwrap_or_default();
        let dependencies = dependencies.lines().map(|l| l.trim().trim_end_matches(',').trim_matches('"').to_owned()).filter(|d| !d.is_empty()).collect();
        let entry = block.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n");
        (format!("{} {}", field("name = "), field("version = ")), entry, dependencies)
    }).collect();
    let find = |wanted: &str| -> Option<usize> {
        let mut words = wanted.split_whitespace();
        let (name, version) = (words.next().unwrap_or_default(), words.next());
        packages.iter().position(|(id, _, _)| id.split_once(' ').is_some_and(|(n, v)| n == name && version.is_none_or(|version| version == v)))
    };
    let mut reached = std::collections::BTreeMap::new();
    let mut pending: Vec<usize> = find("kspaces-apiserver").into_iter().collect();
    while let Some(index) = pending.pop() {
        let (id, entry, dependencies) = &packages[index];
        if reached.insert(id.clone(), entry.clone()).is_none() {
            pending.extend(dependencies.iter().filter_map(|d| find(d)));
        }
    }
    let mut text = rustc.trim().to_owned();
    for part in reached.values().chain(manifests) {
        text.push('\n');
        text.push_str(part);
    }
    format!("{:016x}", fnv1a(&text))
}

fn rustc_version() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let output = std::process::Command::new(rustc).arg("--version").output().unwrap_or_else(|e| panic!("rustc --version: {e}"));
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

#[test]
fn the_list_was_written_with_todays_toolchain_and_crate_versions() {
    let list = list();
    let recorded = list.lines().find_map(|line| line.strip_prefix(FINGERPRINT_LINE)).map(|rest| rest.split_whitespace().next().unwrap_or_default());
    let read = |file: &str| std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let manifests: Vec<String> = MANIFESTS.iter().map(|file| read(file)).collect();
    let today = fingerprint(&rustc_version(), &read("Cargo.lock"), &manifests);
    assert_eq!(recorded, Some(today.as_str()),
        "apiserver/symbol-order.txt was written with another toolchain or other crate versions than Cargo.lock's, so \
         its hashed names may match nothing a release build links (an idle server then holds 5-6 MiB more); write it again:\n  {FIX}");
}

#[test]
fn the_workspaces_listed_functions_are_still_there() {
    let list = list();
    let ours: Vec<&str> = listed(&list).filter(|name| path_of(name).contains("kspaces_")).collect();
    assert!(ours.len() > 100, "the list names {} functions of the workspace's crates", ours.len());
    let binary = std::fs::read(kspaces_tests::kspaces_binary()).unwrap_or_else(|e| panic!("the binary under test: {e}"));
    let present: std::collections::HashSet<String> = elf_functions(&binary).into_iter().map(path_of).collect();
    let missing: Vec<String> = ours.iter().map(|name| path_of(name)).filter(|path| !present.contains(path)).collect();
    let share = missing.len() as f64 / ours.len() as f64;
    assert!(share <= MAX_MISSING,
        "{} of the {} functions of kspaces' crates apiserver/symbol-order.txt names are gone (moved or renamed), more than \
         {:.0}%: write the list again:\n  {FIX}\nGone: {missing:#?}", missing.len(), ours.len(), MAX_MISSING * 100.0);
}

#[test]
fn names_lose_only_what_changes_while_the_code_does_not() {
    let rows = [
        ("_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write"),
        ("_ZN17kspaces_apiserver6decode6decode17hfedcba9876543210E.llvm.1234", "kspaces_apiserver::decode::decode"),
        ("_ZN3foo3bar17h0123456789abcdefE'2", "foo::bar"),
        ("_RNvNtCsgEmfK2I1SDS_4core3fmt5write.9654", "_RNvNtCsgEmfK2I1SDS_4core3fmt5write"),
        ("mi_process_init'2", "mi_process_init"),
    ];
    for (name, path) in rows {
        assert_eq!(path_of(name), path, "{name}");
    }
    let lock = "[[package]]\nname = \"kspaces-apiserver\"\nversion = \"0.1.0\"\ndependencies = [\n \"a\",\n \"b 2.0.0\",\n]\n\n\
        [[package]]\nname = \"a\"\nversion = \"1.0.0\"\n\n[[package]]\nname = \"b\"\nversion = \"1.0.0\"\n\n\
        [[package]]\nname = \"b\"\nversion = \"2.0.0\"\n\n[[package]]\nname = \"unrelated\"\nversion = \"1.0.0\"\n";
    let entries = "name = \"a\"\nversion = \"1.0.0\"\nname = \"b\"\nversion = \"2.0.0\"\n\
        name = \"kspaces-apiserver\"\nversion = \"0.1.0\"\ndependencies = [\n\"a\",\n\"b 2.0.0\",\n]";
    assert_eq!(fingerprint("rustc 1", lock, &["[workspace]".to_owned()]), format!("{:016x}", fnv1a(&format!("rustc 1\n{entries}\n[workspace]"))));
}
