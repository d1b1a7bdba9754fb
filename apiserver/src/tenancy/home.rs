//! Home workspaces (seed 001): `~` is the caller's home, `<prefix>(:<bucket>)+:<user>`, made on first access
//! for members of the home-creator groups. Buckets are derived from the user name as the seed's kcp derived them
//! (the SHA-1 of the name, one big-endian 32-bit word per level, `size` letters per bucket), so that a bucket
//! holds a bounded number of sub-buckets or homes. A tenant user's home lives in its own tenant: the prefix's
//! leading `root` is read as `root:<tenant>`.

use sha1::{Digest, Sha1};

use super::tree::ROOT;
use kspaces_authz::Caller;

/// The (bucket name length, bucket levels) pairs of the seed's table of valid configurations: at most ~1000
/// sub-buckets per bucket, and a handful of users per bucket at the bottom.
pub const VALID: [(usize, usize); 3] = [(1, 3), (1, 4), (2, 2)];

/// `--enable-home-workspaces` and the `--home-workspaces-*` flags, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HomeConfig {
    pub enabled: bool,
    /// The prefix's segments after `root`.
    pub prefix: Vec<String>,
    pub levels: usize,
    pub size: usize,
    pub creator_groups: Vec<String>,
}

impl HomeConfig {
    /// Checks the flags; an invalid configuration is refused with the seed's table in the message.
    pub fn new(enabled: bool, prefix: &str, levels: usize, size: usize, creator_groups: Vec<String>) -> Result<HomeConfig, String> {
        let segments: Vec<&str> = prefix.split(':').collect();
        if segments.first() != Some(&ROOT) || segments.len() < 2 || !segments.iter().all(|s| crate::registry::validate::is_dns_label(s)) {
            return Err(format!("--home-workspaces-root-prefix {prefix:?}: must be a workspace path below root, e.g. root:users"));
        }
        if !VALID.contains(&(size, levels)) {
            let valid: Vec<String> = VALID.iter().map(|(s, l)| format!("size {s} with {l} levels")).collect();
            return Err(format!(
                "--home-workspaces-bucket-size {size} with --home-workspaces-bucket-levels {levels} is not a valid configuration: it \
                 would put too many users or sub-buckets in a bucket; valid configurations are {}", valid.join(", ")));
        }
        Ok(HomeConfig { enabled, prefix: segments[1..].iter().map(|s| s.to_string()).collect(), levels, size, creator_groups })
    }

    /// Whether `caller` gets a home.
    pub fn may_have_home(&self, caller: &Caller) -> bool {
        self.enabled && self.creator_groups.iter().any(|g| caller.user.in_group(g))
    }

    /// The names from the caller's tenant workspace (root for system users) down to its home: the prefix, the
    /// buckets, the home; `None` when the user name leaves no valid workspace name.
    pub fn home_names(&self, user: &str) -> Option<Vec<String>> {
        let name = sanitize(user);
        if name.is_empty() {
            return None;
        }
        let mut names = self.prefix.clone();
        names.extend(buckets(user, self.levels, self.size));
        names.push(name);
        Some(names)
    }
}

impl Default for HomeConfig {
    fn default() -> HomeConfig {
        HomeConfig { enabled: true, prefix: vec!["users".into()], levels: 2, size: 2, creator_groups: vec!["system:authenticated".into()] }
    }
}

/// The bucket names of `user`: for each level, `size` letters from one big-endian word of the name's SHA-1.
pub fn buckets(user: &str, levels: usize, size: usize) -> Vec<String> {
    let digest = Sha1::digest(user.as_bytes());
    (0..levels)
        .map(|level| {
            let word = digest.get(level..level + 4).map_or(0, |bytes| u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]));
            let mut value = word;
            (0..size)
                .map(|_| {
                    let letter = (b'a' + (value % 26) as u8) as char;
                    value /= 26;
                    letter
                })
                .collect()
        })
        .collect()
}

/// A user name as a workspace name: characters outside `[a-z0-9-]` become `-`, then leading characters up to `9`
/// (digits, `-`, ...) and trailing `-` are trimmed.
pub fn sanitize(user: &str) -> String {
    let replaced: String = user.chars().map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' { c } else { '-' }).collect();
    replaced.trim_start_matches(|c: char| c <= '9').trim_end_matches('-').chars().take(63).collect::<String>().trim_end_matches('-').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn homes_are_bucketed_as_the_seed_describes() {
        let config = HomeConfig::default();
        assert_eq!(config.home_names("kcp-admin"), Some(vec!["users".into(), "zu".into(), "yc".into(), "kcp-admin".into()]),
            "the vector kcp#1583 shows");
        assert_eq!(buckets("adam", 2, 2).len(), 2);
        assert!(buckets("adam", 2, 2).iter().all(|b| b.len() == 2 && b.chars().all(|c| c.is_ascii_lowercase())));
        assert_eq!(sanitize("Alice@Example.com"), "lice--xample-com");
        assert_eq!(sanitize("system:serviceaccount:default:bot"), "system-serviceaccount-default-bot");
        assert_eq!(sanitize("42"), "");
        assert_eq!(config.home_names("42"), None);
    }

    #[test]
    fn configurations_outside_the_seeds_table_are_refused() {
        for (size, levels) in VALID {
            assert!(HomeConfig::new(true, "root:users", levels, size, vec![]).is_ok());
        }
        for (size, levels) in [(1, 1), (1, 2), (2, 1), (2, 3), (3, 1), (3, 2), (1, 5)] {
            let refused = HomeConfig::new(true, "root:users", levels, size, vec![]).err().unwrap_or_default();
            assert!(refused.contains("not a valid configuration") && refused.contains("size 2 with 2 levels"), "{refused}");
        }
        assert!(HomeConfig::new(true, "users", 2, 2, vec![]).is_err());
        assert!(HomeConfig::new(true, "root:Users", 2, 2, vec![]).is_err());
    }
}
