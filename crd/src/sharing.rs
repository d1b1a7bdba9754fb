//! Which definition serves a group/resource in a space when the system space and the space itself both may
//! define it: forced system CRDs first, then the space's `LogicalCluster.spec.crdPolicy`.

/// `spec.crdPolicy` of a space's `LogicalCluster`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CrdPolicy {
    /// The space's own CRD, else the system one (the default).
    #[default]
    LocalCrdFirst,
    /// The system CRD when it applies to the tenant, else the space's own.
    SystemCrdFirst,
    /// Only the space's own CRDs, unless a system CRD is forced.
    NeverUseSystemCrdUnlessForced,
}

impl CrdPolicy {
    /// Every policy's name, as written in `spec.crdPolicy`.
    pub const NAMES: [&'static str; 3] = ["NeverUseSystemCRDUnlessForced", "SystemCRDFirst", "LocalCRDFirst"];

    pub fn parse(name: &str) -> Option<CrdPolicy> {
        match name {
            "LocalCRDFirst" => Some(CrdPolicy::LocalCrdFirst),
            "SystemCRDFirst" => Some(CrdPolicy::SystemCrdFirst),
            "NeverUseSystemCRDUnlessForced" => Some(CrdPolicy::NeverUseSystemCrdUnlessForced),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CrdPolicy::LocalCrdFirst => "LocalCRDFirst",
            CrdPolicy::SystemCrdFirst => "SystemCRDFirst",
            CrdPolicy::NeverUseSystemCrdUnlessForced => "NeverUseSystemCRDUnlessForced",
        }
    }
}

/// The system CRD of the same name, as the tenant sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SystemCandidate {
    /// Labelled forced.
    pub forced: bool,
    /// The tenant is in the CRD's applicable range.
    pub applies: bool,
}

/// Which definition wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The space's own CRD.
    Local,
    /// The system space's CRD, shared into the space.
    System,
}

/// Resolves one group/resource for a tenant space. A system CRD out of range never counts, forced or not.
pub fn resolve(policy: CrdPolicy, local: bool, system: Option<SystemCandidate>) -> Option<Source> {
    let system = system.filter(|s| s.applies);
    if system.is_some_and(|s| s.forced) {
        return Some(Source::System);
    }
    let local = local.then_some(Source::Local);
    let system = system.map(|_| Source::System);
    match policy {
        CrdPolicy::LocalCrdFirst => local.or(system),
        CrdPolicy::SystemCrdFirst => system.or(local),
        CrdPolicy::NeverUseSystemCrdUnlessForced => local,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CrdPolicy::*;
    use Source::*;

    #[test]
    fn resolution_table() {
        let forced = Some(SystemCandidate { forced: true, applies: true });
        let forced_elsewhere = Some(SystemCandidate { forced: true, applies: false });
        let shared = Some(SystemCandidate { forced: false, applies: true });
        let out_of_range = Some(SystemCandidate { forced: false, applies: false });
        let table = [
            // policy, local CRD, system CRD, winner
            (LocalCrdFirst, true, forced, Some(System)),
            (SystemCrdFirst, true, forced, Some(System)),
            (NeverUseSystemCrdUnlessForced, true, forced, Some(System)),
            (NeverUseSystemCrdUnlessForced, false, forced, Some(System)),
            (LocalCrdFirst, true, forced_elsewhere, Some(Local)),
            (NeverUseSystemCrdUnlessForced, false, forced_elsewhere, None),
            (LocalCrdFirst, true, shared, Some(Local)),
            (LocalCrdFirst, false, shared, Some(System)),
            (SystemCrdFirst, true, shared, Some(System)),
            (SystemCrdFirst, true, out_of_range, Some(Local)),
            (SystemCrdFirst, false, out_of_range, None),
            (NeverUseSystemCrdUnlessForced, true, shared, Some(Local)),
            (NeverUseSystemCrdUnlessForced, false, shared, None),
            (LocalCrdFirst, false, None, None),
            (SystemCrdFirst, true, None, Some(Local)),
        ];
        for (policy, local, system, expected) in table {
            assert_eq!(resolve(policy, local, system), expected, "{policy:?} local={local} system={system:?}");
        }
    }

    #[test]
    fn names_round_trip() {
        for name in CrdPolicy::NAMES {
            assert_eq!(CrdPolicy::parse(name).map(CrdPolicy::name), Some(name));
        }
        assert_eq!(CrdPolicy::parse("localcrdfirst"), None);
        assert_eq!(CrdPolicy::default().name(), "LocalCRDFirst");
    }
}
