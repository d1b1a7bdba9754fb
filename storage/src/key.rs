//! The only place storage keys are built. `docs/storage-keys.md` is this module's table.
//!
//! Every object key has exactly six segments after the configurable prefix (default `/registry`):
//!
//! ```text
//! <prefix>/<group>/<resource>/<identity>/<space>/<namespace>/<name>
//! ```
//!
//! * `group` is the API group, `core` for the legacy group.
//! * `identity` separates same-named APIs that come from different definitions: `builtin`, `local` (a CRD of the
//!   object's own space), or an identity hash (a shared or exported API).
//! * `namespace` is `_` for cluster-scoped objects; `_` is not a DNS label, so no namespace can look like it.
//!
//! Every range ends in `/`, so space `t1` never matches `t10`, and fixed depth means a namespace never looks
//! like a name.

use std::fmt;

use crate::error::{Result, StorageError};

/// The namespace segment of cluster-scoped objects.
pub const CLUSTER_SCOPED: &str = "_";
/// The group segment of the legacy (`""`) API group.
pub const CORE_GROUP: &str = "core";
/// The longest segment accepted (a DNS subdomain is at most 253 bytes; leave room for path-segment names).
pub const MAX_SEGMENT_BYTES: usize = 512;

/// Checks one key segment: non-empty, bounded, no `/`, no control characters or whitespace, not `.`/`..`.
fn check_segment(what: &'static str, value: &str) -> Result<()> {
    let invalid = |reason| StorageError::InvalidKey { what, value: value.to_owned(), reason };
    if value.is_empty() {
        return Err(invalid("must not be empty"));
    }
    if value.len() > MAX_SEGMENT_BYTES {
        return Err(invalid("must be at most 512 bytes"));
    }
    if value == "." || value == ".." {
        return Err(invalid("must not be '.' or '..'"));
    }
    if value.chars().any(|c| c == '/' || c.is_control() || c.is_whitespace()) {
        return Err(invalid("must not contain '/', whitespace or control characters"));
    }
    Ok(())
}

/// The name of a space (a tenant space, the system space, or a workspace's logical cluster).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SpaceName(String);

impl SpaceName {
    /// The system space: tenant `system`, workspace `root`.
    pub fn system() -> SpaceName {
        SpaceName("system".to_owned())
    }

    pub fn new(name: impl Into<String>) -> Result<SpaceName> {
        let name = name.into();
        check_segment("space", &name)?;
        if name == CLUSTER_SCOPED {
            return Err(StorageError::InvalidKey { what: "space", value: name, reason: "'_' is reserved" });
        }
        Ok(SpaceName(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_system(&self) -> bool {
        self.0 == "system"
    }
}

impl fmt::Display for SpaceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which definition an API comes from; separates objects of same-named APIs (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ApiIdentity {
    /// A type compiled into the server.
    BuiltIn,
    /// A CustomResourceDefinition of the object's own space.
    Local,
    /// A shared or exported API, named by its identity hash (lowercase letters and digits).
    Shared(String),
}

impl ApiIdentity {
    pub fn shared(hash: impl Into<String>) -> Result<ApiIdentity> {
        let hash = hash.into();
        let ok = !hash.is_empty()
            && hash.len() <= 128
            && hash.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && hash != "builtin"
            && hash != "local";
        if !ok {
            return Err(StorageError::InvalidKey {
                what: "identity",
                value: hash,
                reason: "must be 1-128 lowercase letters or digits, other than 'builtin' and 'local'",
            });
        }
        Ok(ApiIdentity::Shared(hash))
    }

    fn segment(&self) -> &str {
        match self {
            ApiIdentity::BuiltIn => "builtin",
            ApiIdentity::Local => "local",
            ApiIdentity::Shared(hash) => hash,
        }
    }
}

/// A group and resource (`apps`, `deployments`); `group` is `""` for the legacy group.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    pub fn new(group: impl Into<String>, resource: impl Into<String>) -> GroupResource {
        GroupResource { group: group.into(), resource: resource.into() }
    }
}

/// Builds keys under one prefix. Cheap to clone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyLayout {
    prefix: String,
}

impl Default for KeyLayout {
    fn default() -> Self {
        KeyLayout { prefix: "/registry".to_owned() }
    }
}

impl KeyLayout {
    /// A layout under `prefix`, which must start with `/`; a trailing `/` is dropped (`/registry/` = `/registry`).
    pub fn new(prefix: &str) -> Result<KeyLayout> {
        let trimmed = prefix.trim_end_matches('/');
        let invalid = |reason| StorageError::InvalidKey { what: "prefix", value: prefix.to_owned(), reason };
        if !trimmed.starts_with('/') {
            return Err(invalid("must start with '/' and name at least one segment"));
        }
        for segment in trimmed[1..].split('/') {
            check_segment("prefix", segment).map_err(|_| invalid("has an empty or invalid segment"))?;
        }
        Ok(KeyLayout { prefix: trimmed.to_owned() })
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Everything this layout stores.
    pub fn everything(&self) -> KeyRange {
        KeyRange::from_prefix(format!("{}/", self.prefix))
    }

    /// The keys of one resource (one identity) across all spaces.
    pub fn resource(&self, gr: &GroupResource, identity: &ApiIdentity) -> Result<ResourceKeys> {
        let group = if gr.group.is_empty() { CORE_GROUP } else { gr.group.as_str() };
        check_segment("group", group)?;
        check_segment("resource", &gr.resource)?;
        if !gr.group.is_empty() && gr.group == CORE_GROUP {
            return Err(StorageError::InvalidKey {
                what: "group",
                value: gr.group.clone(),
                reason: "'core' is the legacy group's segment; use \"\"",
            });
        }
        let base = format!("{}/{}/{}/{}/", self.prefix, group, gr.resource, identity.segment());
        Ok(ResourceKeys { base })
    }
}

/// The key space of one resource with one identity; builds object keys and ranges inside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceKeys {
    /// `<prefix>/<group>/<resource>/<identity>/`
    base: String,
}

impl ResourceKeys {
    /// All spaces' objects of this resource (cross-tenant lists, controllers watching every space).
    pub fn all_spaces(&self) -> KeyRange {
        KeyRange::from_prefix(self.base.clone())
    }

    /// All objects of this resource in one space (every namespace, or the cluster-scoped ones).
    pub fn space(&self, space: &SpaceName) -> KeyRange {
        KeyRange::from_prefix(format!("{}{}/", self.base, space))
    }

    /// The objects in one namespace of one space; `None` means the cluster-scoped objects.
    pub fn namespace(&self, space: &SpaceName, namespace: Option<&str>) -> Result<KeyRange> {
        let ns = namespace_segment(namespace)?;
        Ok(KeyRange::from_prefix(format!("{}{}/{}/", self.base, space, ns)))
    }

    /// The key of one object; `namespace` is `None` for cluster-scoped objects.
    pub fn object(&self, space: &SpaceName, namespace: Option<&str>, name: &str) -> Result<Key> {
        let ns = namespace_segment(namespace)?;
        check_segment("name", name)?;
        Ok(Key(format!("{}{}/{}/{}", self.base, space, ns, name)))
    }
}

fn namespace_segment(namespace: Option<&str>) -> Result<&str> {
    match namespace {
        None => Ok(CLUSTER_SCOPED),
        Some(ns) => {
            check_segment("namespace", ns)?;
            if ns == CLUSTER_SCOPED {
                return Err(StorageError::InvalidKey {
                    what: "namespace",
                    value: ns.to_owned(),
                    reason: "'_' marks cluster-scoped objects",
                });
            }
            Ok(ns)
        }
    }
}

/// The full key of one object. Built only by [`ResourceKeys::object`], or parsed back with [`Key::parse`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key(String);

/// The parts of an object key, as parsed back from storage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyParts<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub identity: &'a str,
    pub space: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

impl Key {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Accepts a key read back from a backend; it must have this layout's shape.
    pub fn parse(layout: &KeyLayout, raw: &str) -> Result<Key> {
        let key = Key(raw.to_owned());
        key.parts(layout)?;
        Ok(key)
    }

    /// A key read back from this store's own backend, which only ever holds keys built here.
    pub(crate) fn from_stored(raw: &str) -> Key {
        Key(raw.to_owned())
    }

    /// Splits the key into its segments (the group is `""` for the legacy group).
    pub fn parts(&self, layout: &KeyLayout) -> Result<KeyParts<'_>> {
        let bad = |reason| StorageError::InvalidKey { what: "key", value: self.0.clone(), reason };
        let rest = self
            .0
            .strip_prefix(layout.prefix())
            .and_then(|rest| rest.strip_prefix('/'))
            .ok_or_else(|| bad("is not under the layout's prefix"))?;
        let segments: Vec<&str> = rest.split('/').collect();
        let [group, resource, identity, space, namespace, name] = segments[..] else {
            return Err(bad("must have six segments after the prefix"));
        };
        for segment in &segments {
            check_segment("key", segment).map_err(|_| bad("has an invalid segment"))?;
        }
        Ok(KeyParts {
            group: if group == CORE_GROUP { "" } else { group },
            resource,
            identity,
            space,
            namespace: if namespace == CLUSTER_SCOPED { None } else { Some(namespace) },
            name,
        })
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A contiguous range of keys: every key that starts with `prefix`, which always ends in `/`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KeyRange {
    prefix: String,
}

impl KeyRange {
    fn from_prefix(prefix: String) -> KeyRange {
        debug_assert!(prefix.ends_with('/'));
        KeyRange { prefix }
    }

    /// The inclusive start of the range.
    pub fn start(&self) -> &str {
        &self.prefix
    }

    /// The exclusive end of the range: the prefix with its final `/` replaced by the next byte, `0`.
    pub fn end(&self) -> String {
        let mut end = self.prefix[..self.prefix.len() - 1].to_owned();
        end.push('0');
        end
    }

    pub fn contains(&self, key: &str) -> bool {
        key.starts_with(&self.prefix)
    }

    /// True if every key of `other` is also in `self`.
    pub fn covers(&self, other: &KeyRange) -> bool {
        other.prefix.starts_with(&self.prefix)
    }

    /// The one space every key of the range is in, if the range is inside one space (`None` for a range across
    /// spaces: one resource everywhere, or everything).
    pub fn space(&self, layout: &KeyLayout) -> Option<&str> {
        let rest = self.prefix.strip_prefix(layout.prefix())?.strip_prefix('/')?;
        // `<group>/<resource>/<identity>/<space>/...`: the range names a space once it has four segments.
        let mut segments = rest.split('/');
        let space = segments.nth(3)?;
        segments.next()?;
        (!space.is_empty()).then_some(space)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods() -> ResourceKeys {
        KeyLayout::default().resource(&GroupResource::new("", "pods"), &ApiIdentity::BuiltIn).expect("valid")
    }

    fn space(name: &str) -> SpaceName {
        SpaceName::new(name).expect("valid space")
    }

    #[test]
    fn object_keys_have_seven_fixed_segments() {
        let key = pods().object(&space("t1"), Some("default"), "web").expect("valid");
        assert_eq!(key.as_str(), "/registry/core/pods/builtin/t1/default/web");
        let roles = KeyLayout::default()
            .resource(&GroupResource::new("rbac.authorization.k8s.io", "clusterroles"), &ApiIdentity::BuiltIn)
            .expect("valid");
        let key = roles.object(&SpaceName::system(), None, "system:basic-user").expect("valid");
        assert_eq!(key.as_str(), "/registry/rbac.authorization.k8s.io/clusterroles/builtin/system/_/system:basic-user");
        let parts = key.parts(&KeyLayout::default()).expect("parses");
        assert_eq!(parts.namespace, None);
        assert_eq!(parts.name, "system:basic-user");
    }

    #[test]
    fn space_t1_never_matches_t10() {
        let t1 = pods().space(&space("t1"));
        let in_t10 = pods().object(&space("t10"), Some("default"), "web").expect("valid");
        assert!(!t1.contains(in_t10.as_str()));
        assert!(in_t10.as_str() >= pods().space(&space("t10")).start());
        assert!(in_t10.as_str() >= t1.end().as_str(), "t10's keys sort after t1's range");
    }

    #[test]
    fn ranges_nest_resource_space_namespace() {
        let all = pods().all_spaces();
        let t1 = pods().space(&space("t1"));
        let ns = pods().namespace(&space("t1"), Some("default")).expect("valid");
        assert!(all.covers(&t1) && t1.covers(&ns) && !ns.covers(&t1));
        assert_eq!(ns.end(), "/registry/core/pods/builtin/t1/default0");
    }

    #[test]
    fn identities_separate_same_named_apis() {
        let gr = GroupResource::new("example.com", "widgets");
        let local = KeyLayout::default().resource(&gr, &ApiIdentity::Local).expect("valid");
        let shared = KeyLayout::default().resource(&gr, &ApiIdentity::shared("abc123").expect("ok")).expect("valid");
        let a = local.object(&space("t1"), None, "w").expect("valid");
        assert!(!shared.all_spaces().contains(a.as_str()));
        assert!(ApiIdentity::shared("local").is_err());
        assert!(ApiIdentity::shared("ABC").is_err());
    }

    #[test]
    fn invalid_segments_are_typed_errors() {
        let t1 = space("t1");
        for bad in ["", ".", "..", "a/b", "a b", "a\0b", "_"] {
            assert!(
                matches!(pods().object(&t1, Some(bad), "x"), Err(StorageError::InvalidKey { .. })),
                "namespace {bad:?} must be rejected"
            );
        }
        for bad in ["", "a/b", "..", "tab\t"] {
            assert!(pods().object(&t1, None, bad).is_err(), "name {bad:?} must be rejected");
        }
        assert!(SpaceName::new("_").is_err());
        assert!(pods().object(&t1, None, &"n".repeat(513)).is_err());
        assert!(KeyLayout::new("registry").is_err());
        assert!(KeyLayout::new("/").is_err());
        assert_eq!(KeyLayout::new("/kspaces/").expect("valid").prefix(), "/kspaces");
        let core_named = KeyLayout::default().resource(&GroupResource::new("core", "x"), &ApiIdentity::BuiltIn);
        assert!(core_named.is_err());
    }

    #[test]
    fn parse_rejects_foreign_shapes() {
        let layout = KeyLayout::default();
        assert!(Key::parse(&layout, "/registry/core/pods/builtin/t1/default/web").is_ok());
        assert!(Key::parse(&layout, "/registry/core/pods/builtin/t1/web").is_err());
        assert!(Key::parse(&layout, "/other/core/pods/builtin/t1/default/web").is_err());
        assert!(Key::parse(&layout, "/registry/core/pods/builtin/t1/default/web/x").is_err());
    }
}
