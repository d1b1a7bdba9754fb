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

    /// Groups in discovery order (core first, then by name) with their versions.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in &self.resources {
            let versions = groups.entry(r.group.clone()).or_default();
            if !versions.contains(&r.version) {
                versions.push(r.version.clone());
            }
        }
        groups.into_iter().collect()
    }

    pub fn in_group_version(&self, group: &str, version: &str) -> Vec<&Arc<ResourceInfo>> {
        self.resources.iter().filter(|r| r.group == group && r.version == version).collect()
    }
}
