//! kcp's two workspace lifecycles, initialization and termination, in one vocabulary: the field of a
//! LogicalCluster's status that lists the pending controllers, the verb on `workspacetypes` that lets a controller
//! remove its entry, the synthetic group its virtual workspace adds, the hashed label a LogicalCluster carries per
//! entry, and the virtual workspace's URL (`/services/initializingworkspaces/<initializer>`).

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha224};

use kspaces_authz::{INITIALIZER_GROUP_PREFIX, TERMINATOR_GROUP_PREFIX};
use crate::registry::stored::at;

/// The label every LogicalCluster (and nested Workspace) carries with its phase.
pub const PHASE_LABEL: &str = "tenancy.kcp.io/phase";
/// The prefix of every virtual workspace's path.
pub const SERVICES: &str = "/services";

/// Initialization or termination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lifecycle {
    Initializing,
    Terminating,
}

impl Lifecycle {
    pub const ALL: [Lifecycle; 2] = [Lifecycle::Initializing, Lifecycle::Terminating];

    /// The virtual workspace's segment after `/services/`.
    pub fn service(self) -> &'static str {
        match self {
            Lifecycle::Initializing => "initializingworkspaces",
            Lifecycle::Terminating => "terminatingworkspaces",
        }
    }

    pub fn of_service(segment: &str) -> Option<Lifecycle> {
        Lifecycle::ALL.into_iter().find(|l| l.service() == segment)
    }

    /// `WorkspaceType.status.virtualWorkspaces[].type`.
    pub fn kind(self) -> &'static str {
        match self {
            Lifecycle::Initializing => "initializing",
            Lifecycle::Terminating => "terminating",
        }
    }

    /// The LogicalCluster status field listing the pending entries (`status.initializers`).
    pub fn field(self) -> &'static str {
        match self {
            Lifecycle::Initializing => "initializers",
            Lifecycle::Terminating => "terminators",
        }
    }

    /// One entry, as kcp's messages name it (`initializer "root:org"`).
    pub fn noun(self) -> &'static str {
        match self {
            Lifecycle::Initializing => "initializer",
            Lifecycle::Terminating => "terminator",
        }
    }

    /// The verb on `workspacetypes/<type>` that lets a controller act for the type's entry.
    pub fn verb(self) -> &'static str {
        match self {
            Lifecycle::Initializing => "initialize",
            Lifecycle::Terminating => "terminate",
        }
    }

    /// The LogicalCluster phase during which the entries are served.
    pub fn phase(self) -> &'static str {
        match self {
            Lifecycle::Initializing => "Initializing",
            Lifecycle::Terminating => "Terminating",
        }
    }

    /// The WorkspaceType spec field of the rules its controller acts by (`initializerPermissions`).
    pub fn permissions(self) -> &'static str {
        match self {
            Lifecycle::Initializing => "initializerPermissions",
            Lifecycle::Terminating => "terminatorPermissions",
        }
    }

    /// The synthetic group the virtual workspace adds for `entry` (`system:kcp:initializer:<entry>`).
    pub fn group(self, entry: &str) -> String {
        let prefix = match self {
            Lifecycle::Initializing => INITIALIZER_GROUP_PREFIX,
            Lifecycle::Terminating => TERMINATOR_GROUP_PREFIX,
        };
        format!("{prefix}{entry}")
    }

    /// The entry a synthetic group of this lifecycle names.
    pub fn entry_of_group(self, group: &str) -> Option<&str> {
        group.strip_prefix(&self.group(""))
    }

    fn label_prefix(self) -> &'static str {
        match self {
            Lifecycle::Initializing => "initializer.internal.kcp.io/",
            Lifecycle::Terminating => "terminator.internal.kcp.io/",
        }
    }

    /// kcp's label for `entry`: the prefix and as much of the entry's SHA-224 (hex) as fits a 63-character
    /// label, with the whole hash as the value.
    pub fn label(self, entry: &str) -> (String, String) {
        let hash = format!("{:x}", Sha224::digest(entry.as_bytes()));
        let prefix = self.label_prefix();
        (format!("{prefix}{}", &hash[..63 - prefix.len()]), hash)
    }

    /// The virtual workspace's path for `entry`: `/services/initializingworkspaces/<entry>`.
    pub fn path(self, entry: &str) -> String {
        format!("{SERVICES}/{}/{entry}", self.service())
    }

    /// The entries of this lifecycle still pending on `logical_cluster`.
    pub fn entries(self, logical_cluster: &Value) -> Vec<&str> {
        at(logical_cluster, &format!("/status/{}", self.field())).and_then(Value::as_array).into_iter().flatten()
            .filter_map(Value::as_str).collect()
    }
}

/// A LogicalCluster's labels as kcp's metadata reconciler keeps them: `tenancy.kcp.io/phase` from `status.phase`
/// and one hashed label per pending initializer and terminator; stale ones go. Whatever a writer sent is replaced,
/// so the labels the virtual workspaces select by cannot be forged.
pub fn label_logical_cluster(object: &mut Value) {
    let phase = at(object, "/status/phase").and_then(Value::as_str).map(str::to_owned);
    let mut wanted: Vec<(String, String)> = Vec::new();
    for lifecycle in Lifecycle::ALL {
        wanted.extend(lifecycle.entries(object).into_iter().map(|entry| lifecycle.label(entry)));
    }
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    if !metadata.get("labels").is_some_and(Value::is_object) {
        metadata.insert("labels".into(), json!({}));
    }
    let Some(labels) = metadata.get_mut("labels").and_then(Value::as_object_mut) else { return };
    labels.retain(|key, _| !Lifecycle::ALL.iter().any(|l| key.starts_with(l.label_prefix())) && key != PHASE_LABEL);
    if let Some(phase) = phase {
        labels.insert(PHASE_LABEL.into(), json!(phase));
    }
    for (key, value) in wanted {
        labels.insert(key, json!(value));
    }
    if labels.is_empty() {
        metadata.remove("labels");
    }
}

/// `WorkspaceType.status.virtualWorkspaces` for a type whose entry is `entry` (`<cluster>:<name>`): one URL per
/// lifecycle the type takes part in, under `base_url`.
pub fn virtual_workspaces(base_url: &str, entry: &str, spec: &Map<String, Value>) -> Vec<Value> {
    let takes_part = |lifecycle: Lifecycle| match lifecycle {
        Lifecycle::Initializing => spec.get("initializer").and_then(Value::as_bool) == Some(true),
        Lifecycle::Terminating => spec.get("terminator").and_then(Value::as_bool) == Some(true),
    };
    Lifecycle::ALL.into_iter().filter(|l| takes_part(*l))
        .map(|l| json!({"url": format!("{base_url}{}", l.path(entry)), "type": l.kind()}))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_kcps_hashes() {
        // kcp: sha224("root:org") in hex; the key keeps the first 35 (initializer) or 36 (terminator) characters.
        let (key, value) = Lifecycle::Initializing.label("root:org");
        assert_eq!(value.len(), 56);
        assert_eq!(key, format!("initializer.internal.kcp.io/{}", &value[..35]));
        assert_eq!(key.len(), 63);
        let (key, _) = Lifecycle::Terminating.label("root:org");
        assert_eq!(key.len(), 63);
        assert_eq!(format!("{:x}", Sha224::digest(b"")), "d14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f");
    }

    #[test]
    fn logical_cluster_labels_follow_the_status_and_cannot_be_forged() {
        let (forged, _) = Lifecycle::Initializing.label("root:other");
        let mut lc = json!({"metadata": {"labels": {"team": "a", forged.clone(): "x", PHASE_LABEL: "Ready"}},
            "status": {"phase": "Initializing", "initializers": ["root:org"], "terminators": ["t:x"]}});
        label_logical_cluster(&mut lc);
        let labels = lc["metadata"]["labels"].as_object().expect("labels");
        assert_eq!(labels[PHASE_LABEL], "Initializing");
        assert_eq!(labels["team"], "a");
        assert!(!labels.contains_key(&forged));
        assert_eq!(labels[&Lifecycle::Initializing.label("root:org").0], json!(Lifecycle::Initializing.label("root:org").1));
        assert!(labels.contains_key(&Lifecycle::Terminating.label("t:x").0));
        assert_eq!(labels.len(), 4);
    }

    #[test]
    fn groups_and_paths() {
        assert_eq!(Lifecycle::Initializing.group("root:org"), "system:kcp:initializer:root:org");
        assert_eq!(Lifecycle::Terminating.entry_of_group("system:kcp:terminator:t:x"), Some("t:x"));
        assert_eq!(Lifecycle::Initializing.entry_of_group("system:kcp:terminator:t:x"), None);
        assert_eq!(Lifecycle::Terminating.path("t:x"), "/services/terminatingworkspaces/t:x");
        let spec = json!({"initializer": true, "terminator": true});
        assert_eq!(virtual_workspaces("https://h:1", "root:org", spec.as_object().expect("an object")), [
            json!({"url": "https://h:1/services/initializingworkspaces/root:org", "type": "initializing"}),
            json!({"url": "https://h:1/services/terminatingworkspaces/root:org", "type": "terminating"})]);
    }
}
