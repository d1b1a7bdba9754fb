//! `ResourceTable`: the served resources, indexed for routing and discovery.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::ResourceInfo;

/// Every served resource, looked up by (group, version, plural) or (group, kind).
#[derive(Clone, Debug, Default)]
pub struct ResourceTable {
    resources: Vec<Arc<ResourceInfo>>,
    by_path: HashMap<(String, String, String), Arc<ResourceInfo>>,
}

impl ResourceTable {
    pub fn new(resources: Vec<ResourceInfo>) -> ResourceTable {
        ResourceTable::shared(resources.into_iter().map(Arc::new).collect())
    }

    /// A table of rows other tables hold too.
    pub fn shared(resources: Vec<Arc<ResourceInfo>>) -> ResourceTable {
        let by_path = resources
            .iter()
            .map(|r| ((r.group.clone(), r.version.clone(), r.plural.clone()), r.clone()))
            .collect();
        ResourceTable { resources, by_path }
    }

    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceInfo>> {
        self.by_path.get(&(group.to_owned(), version.to_owned(), plural.to_owned()))
    }

    pub fn by_kind(&self, group: &str, kind: &str) -> Option<&Arc<ResourceInfo>> {
        self.resources.iter().find(|r| r.group == group && r.kind == kind)
    }

    pub fn all(&self) -> &[Arc<ResourceInfo>] {
        &self.resources
    }

    /// Groups in discovery order (core first, then by name) with their versions, the preferred first: by kube's
    /// version priority (`CompareKubeAwareVersionStrings`), as kube-apiserver orders a group served by several
    /// definitions (`apis.kcp.io`: `v1alpha2` for exports and bindings, `v1alpha1` for the rest).
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in &self.resources {
            let versions = groups.entry(r.group.clone()).or_default();
            if !versions.contains(&r.version) {
                versions.push(r.version.clone());
            }
        }
        for versions in groups.values_mut() {
            versions.sort_by_key(|v| version_priority(v));
        }
        groups.into_iter().collect()
    }

    pub fn in_group_version(&self, group: &str, version: &str) -> Vec<&Arc<ResourceInfo>> {
        self.resources.iter().filter(|r| r.group == group && r.version == version).collect()
    }
}

/// A sort key putting versions in kube's priority order: `v<major>[alpha|beta<minor>]` first, GA before beta
/// before alpha, then the higher major and minor; any other name after them, alphabetically.
fn version_priority(version: &str) -> (u8, u8, std::cmp::Reverse<u64>, std::cmp::Reverse<u64>, String) {
    let parsed = version.strip_prefix('v').and_then(|rest| {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        let (stability, minor) = match &rest[digits..] {
            "" => (0, 0),
            tail => {
                let (stability, number) = tail.strip_prefix("beta").map(|n| (1, n)).or_else(|| tail.strip_prefix("alpha").map(|n| (2, n)))?;
                let minor: u64 = number.bytes().all(|b| b.is_ascii_digit()).then(|| number.parse().ok()).flatten()?;
                (stability, minor)
            }
        };
        Some((stability, major, minor))
    });
    match parsed {
        Some((stability, major, minor)) => (0, stability, std::cmp::Reverse(major), std::cmp::Reverse(minor), String::new()),
        None => (1, 0, std::cmp::Reverse(0), std::cmp::Reverse(0), version.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions_sort_as_kube_orders_them() {
        let mut versions = ["v1alpha1", "foo", "v1", "v2beta1", "v1alpha2", "v11alpha2", "v2", "v1beta2", "bar"].map(str::to_owned);
        versions.sort_by_key(|v| super::version_priority(v));
        assert_eq!(versions, ["v2", "v1", "v2beta1", "v1beta2", "v11alpha2", "v1alpha2", "v1alpha1", "bar", "foo"]);
    }
}
