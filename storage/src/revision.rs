//! `Revision`: the one store-wide counter behind every `resourceVersion`.
//!
//! Like etcd's revision, every write gets the next value, atomically with the write. Revisions are encoded
//! big-endian wherever they are part of a key, so byte order is revision order.

use std::fmt;
use std::str::FromStr;

/// A store-wide revision. `Revision(0)` means "before any write".
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Revision(pub u64);

impl Revision {
    pub const ZERO: Revision = Revision(0);

    /// The revision after this one.
    pub fn next(self) -> Revision {
        Revision(self.0 + 1)
    }

    /// Big-endian bytes, so that lexicographic order of keys is numeric order of revisions.
    pub fn to_be_bytes(self) -> [u8; 8] {
        self.0.to_be_bytes()
    }

    /// Reads a big-endian revision; `None` unless exactly eight bytes are given.
    pub fn from_be_slice(bytes: &[u8]) -> Option<Revision> {
        let array: [u8; 8] = bytes.try_into().ok()?;
        Some(Revision(u64::from_be_bytes(array)))
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// `resourceVersion` strings are decimal revisions; anything else is a client error.
impl FromStr for Revision {
    type Err = std::num::ParseIntError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse::<u64>().map(Revision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_order_is_revision_order() {
        let revisions = [0u64, 1, 255, 256, 65_535, 1 << 40, u64::MAX];
        for pair in revisions.windows(2) {
            assert!(Revision(pair[0]).to_be_bytes() < Revision(pair[1]).to_be_bytes());
        }
        assert_eq!(Revision::from_be_slice(&Revision(77).to_be_bytes()), Some(Revision(77)));
        assert_eq!(Revision::from_be_slice(&[1, 2, 3]), None);
    }

    #[test]
    fn parses_decimal_resource_versions_only() {
        assert_eq!("42".parse::<Revision>().ok(), Some(Revision(42)));
        assert!("".parse::<Revision>().is_err());
        assert!("-1".parse::<Revision>().is_err());
        assert!("abc".parse::<Revision>().is_err());
    }
}
