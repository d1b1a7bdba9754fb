//! What the server changes about the process before it starts, for the machine it runs on.
//!
//! One thing today: on AMD processors, glibc's `memcpy` copies with `rep movsb` from about 2 KiB up to about the
//! L2 cache's size, and there `rep movsb` runs 15–20 times slower when the destination lies 1–31 bytes past the
//! source modulo 4 KiB (on this project's machine: 2–3 GB/s against 35–45 GB/s; docs/benchmarks.md, run 14). Every
//! large answer meets that case twice: actix copies each body chunk behind the chunk's size line, and rustls copies
//! each record's plaintext behind the record's 5-byte header, both into buffers aligned as the source is. The
//! slowdown is known (AMD's fast short `rep movsb`, reported since Zen 3) and later glibc releases were reported to
//! avoid it; glibc 2.36 (Debian 12, this machine's) has it. glibc reads its `x86_rep_movsb_threshold` tunable only
//! from the environment a process starts with, so the server starts itself again once with it set, unless the
//! user's `GLIBC_TUNABLES` already names it.

use std::ffi::{OsStr, OsString};

/// The tunable, set above any copy's size: glibc then copies with vector loads and stores instead.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu", target_arch = "x86_64")), allow(dead_code))]
const TUNABLE: &str = "glibc.cpu.x86_rep_movsb_threshold=1099511627776";

/// Replaces the process by the same command with the tunable set, when it is needed and not set yet. Returns only
/// if it is not needed, or if the exec failed (the server then runs as it is, and the failure is logged).
pub fn exec_with_vector_copies() {
    #[cfg(all(target_os = "linux", target_env = "gnu", target_arch = "x86_64"))]
    {
        use std::os::unix::process::CommandExt;

        let Some(tunables) = tunables_to_set(&cpu_vendor(), std::env::var_os("GLIBC_TUNABLES").as_deref()) else {
            return;
        };
        let mut args = std::env::args_os();
        let mut command = std::process::Command::new("/proc/self/exe");
        if let Some(arg0) = args.next() {
            command.arg0(arg0);
        }
        let error = command.args(args).env("GLIBC_TUNABLES", tunables).exec();
        tracing::warn!(%error, "could not start again with glibc's vector copies; large answers copy slower");
    }
}

/// The `GLIBC_TUNABLES` value to start again with, or `None` when the processor is not AMD's (Hygon's are Zen
/// too) or the user's value already sets the threshold (that is also what ends the second start).
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu", target_arch = "x86_64")), allow(dead_code))]
fn tunables_to_set(vendor: &[u8; 12], current: Option<&OsStr>) -> Option<OsString> {
    if vendor != b"AuthenticAMD" && vendor != b"HygonGenuine" {
        return None;
    }
    let (name, _) = TUNABLE.split_once('=').expect("the tunable has a value");
    let names = |value: &OsStr| value.to_string_lossy().split(':').any(|entry| entry.split('=').next() == Some(name));
    match current.filter(|current| !current.is_empty()) {
        Some(current) if names(current) => None,
        Some(current) => {
            let mut value = current.to_owned();
            value.push(":");
            value.push(TUNABLE);
            Some(value)
        }
        None => Some(TUNABLE.into()),
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu", target_arch = "x86_64"))]
fn cpu_vendor() -> [u8; 12] {
    let leaf = std::arch::x86_64::__cpuid(0);
    let mut vendor = [0; 12];
    vendor[..4].copy_from_slice(&leaf.ebx.to_le_bytes());
    vendor[4..8].copy_from_slice(&leaf.edx.to_le_bytes());
    vendor[8..].copy_from_slice(&leaf.ecx.to_le_bytes());
    vendor
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_amd_and_hygon_start_again() {
        assert_eq!(tunables_to_set(b"GenuineIntel", None), None);
        assert_eq!(tunables_to_set(b"AuthenticAMD", None), Some(TUNABLE.into()));
        assert_eq!(tunables_to_set(b"HygonGenuine", None), Some(TUNABLE.into()));
    }

    #[test]
    fn the_users_tunables_are_kept_and_their_threshold_wins() {
        let amd = b"AuthenticAMD";
        let set = |current: &str| tunables_to_set(amd, Some(OsStr::new(current)));
        assert_eq!(set(""), Some(TUNABLE.into()));
        assert_eq!(set("glibc.malloc.check=3"), Some(format!("glibc.malloc.check=3:{TUNABLE}").into()));
        assert_eq!(set("glibc.cpu.x86_rep_movsb_threshold=4096"), None);
        assert_eq!(set("glibc.malloc.check=3:glibc.cpu.x86_rep_movsb_threshold=4096"), None);
        // A longer name that starts with the same words is another tunable.
        let longer = "glibc.cpu.x86_rep_movsb_threshold_x=1";
        assert_eq!(set(longer), Some(format!("{longer}:{TUNABLE}").into()));
        // What this module sets is found again after the second start: it never starts a third time.
        assert_eq!(set(TUNABLE), None);
    }
}
