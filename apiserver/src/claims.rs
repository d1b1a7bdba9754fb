//! Permission claims (kcp's): an APIExport claims access to other resources in its consumers' workspaces
//! (`spec.permissionClaims`: a group and resource, an identity hash for another export's resource, and `all` or a
//! `resourceSelector` of names and namespaces); each APIBinding accepts or rejects each claim, and the APIs
//! controller lists the accepted ones the export makes in `status.appliedPermissionClaims`.
//!
//! As in kcp, a claimed object carries the label `claimed.internal.apis.kcp.io/<Base62(Sha224("<export cluster>:
//! <export>"))>`, set by the server on every write in a workspace that accepted the claim (`ClaimLabels`, a
//! mutating admission rule, so nobody else sets or removes it) and on the objects already there when a claim is
//! accepted or dropped (the APIs controller writes them again). The export's virtual workspace selects claimed
//! objects by that label across every workspace, and checks the accepted claim in a single one.
//!
//! `Claims` is the cache: every binding's applied claims by workspace, fed by the registry's write observer.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use kspaces_storage::{ApiIdentity, Revision, SpaceName};
use serde_json::{json, Value};
use sha2::{Digest, Sha224};

use crate::apis::kcp::{base62, export_hash};
use crate::registry::admission::{Admission, Attributes, Operation};
use crate::registry::observe::{RevisionMap, WriteObserver};
use crate::registry::{GenericStore, ResourceInfo};
use crate::status::ApiResult;
use crate::registry::stored::at;

/// The prefix of the label a claimed object carries, one per export.
pub const CLAIMED_LABEL_PREFIX: &str = "claimed.internal.apis.kcp.io/";

/// One claim a binding accepted, of a resource in the binding's workspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    pub group: String,
    pub resource: String,
    /// The identity hash of the claimed resource's export; empty for a built-in resource.
    pub identity: String,
    pub all: bool,
    /// `(name, namespace)` pairs; an empty part matches any.
    pub selector: Vec<(String, String)>,
    /// The export that claims it: its logical cluster and name.
    pub export: (String, String),
}

impl Claim {
    fn parse(claim: &Value, export: &(String, String)) -> Claim {
        let text = |key: &str| claim.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let selector = claim.get("resourceSelector").and_then(Value::as_array).into_iter().flatten().map(|s| {
            let part = |key: &str| s.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
            (part("name"), part("namespace"))
        }).collect();
        Claim {
            group: text("group"),
            resource: text("resource"),
            identity: text("identityHash"),
            all: claim.get("all").and_then(Value::as_bool).unwrap_or(false),
            selector,
            export: export.clone(),
        }
    }

    /// The label key of the export's claims.
    pub fn label(&self) -> String {
        label_key(&self.export.0, &self.export.1)
    }

    /// The label's value: kcp's hash of the claim.
    pub fn value(&self) -> String {
        let claim = json!({"group": self.group, "resource": self.resource, "identityHash": self.identity});
        base62(&Sha224::digest(claim.to_string().as_bytes()))
    }

    /// Whether the claim covers the object named `name` in `namespace` (empty: cluster-scoped).
    pub fn covers(&self, name: &str, namespace: &str) -> bool {
        self.all || self.selector.iter().any(|(n, ns)| (n.is_empty() || n == name) && (ns.is_empty() || ns == namespace))
    }

    /// Whether the claim is of `resource` (a row of the resource table or a bound resource).
    pub fn is_of(&self, resource: &ResourceInfo) -> bool {
        self.group == resource.group && self.resource == resource.plural && self.identity == identity_of(resource)
    }
}

/// Which of an export's claims (`spec.permissionClaims`) a binding's claims (`spec.permissionClaims`, each with a
/// `state`) apply, and the acceptances that do not match the export's claim.
///
/// An acceptance applies a claim only when it names the same resource (group, resource, identity hash) with the same
/// scope (`all`, or the same `resourceSelector` entries in any order). What is applied is the export's claim as
/// the export states it, so a binding never widens what the export asked for; an acceptance of another scope is
/// not applied, and reported.
pub fn applied(export_claims: &[Value], binding_claims: &[Value]) -> (Vec<Value>, Vec<String>) {
    let accepted = || binding_claims.iter().filter(|c| c.get("state").and_then(Value::as_str) == Some("Accepted"));
    let mut applied = Vec::new();
    let mut mismatched = Vec::new();
    for acceptance in accepted() {
        let Some(claimed) = export_claims.iter().find(|e| same_resource(e, acceptance)) else { continue };
        if same_scope(claimed, acceptance) {
            if !applied.contains(claimed) {
                applied.push(claimed.clone());
            }
        } else {
            mismatched.push(format!("the accepted claim on {} does not match the scope the APIExport claims", group_resource(acceptance)));
        }
    }
    (applied, mismatched)
}

/// Whether two claims name the same resource: group (empty for core), resource and identity hash.
pub fn same_resource(a: &Value, b: &Value) -> bool {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    ["group", "resource", "identityHash"].iter().all(|key| text(a, key) == text(b, key))
}

/// Whether two claims have the same scope: both `all`, or the same `resourceSelector` entries.
fn same_scope(a: &Value, b: &Value) -> bool {
    let nowhere = (String::new(), String::new());
    let (a, b) = (Claim::parse(a, &nowhere), Claim::parse(b, &nowhere));
    let sorted = |claim: &Claim| {
        let mut selector = claim.selector.clone();
        selector.sort();
        selector.dedup();
        selector
    };
    a.all == b.all && sorted(&a) == sorted(&b)
}

/// `resource.group` (`resource` for the core group), as kcp names a claim.
fn group_resource(claim: &Value) -> String {
    let text = |key: &str| claim.get(key).and_then(Value::as_str).unwrap_or_default();
    if text("group").is_empty() { text("resource").to_owned() } else { format!("{}.{}", text("resource"), text("group")) }
}

/// The label key of export `name` of logical cluster `cluster`'s claims.
pub fn label_key(cluster: &str, name: &str) -> String {
    format!("{CLAIMED_LABEL_PREFIX}{}", export_hash(cluster, name))
}

/// The identity a claim names a resource by: an export's hash, or nothing for a built-in resource.
fn identity_of(resource: &ResourceInfo) -> &str {
    match resource.custom.as_ref().map(|c| &c.identity) {
        Some(ApiIdentity::Shared(hash)) => hash,
        _ => "",
    }
}

/// One workspace's bindings' accepted claims, by binding.
type Bindings = RevisionMap<String, Arc<Vec<Claim>>>;

/// Every binding's accepted claims, by workspace then binding.
#[derive(Debug, Default)]
pub struct Claims {
    spaces: RwLock<HashMap<SpaceName, Bindings>>,
    /// Whether any binding ever applied a claim (writes skip the lookup until one does).
    any: AtomicBool,
}

impl Claims {
    /// The claims of `space`'s bindings on `resource`.
    pub fn on(&self, space: &SpaceName, resource: &ResourceInfo) -> Vec<Claim> {
        if !self.any.load(Ordering::Relaxed) {
            return Vec::new();
        }
        let spaces = self.spaces.read().unwrap_or_else(|e| e.into_inner());
        let Some(bindings) = spaces.get(space) else { return Vec::new() };
        bindings.iter().flat_map(|(_, claims)| claims.iter()).filter(|c| c.is_of(resource)).cloned().collect()
    }

    /// The claim export `cluster:name` has on `resource` in `space`, if a binding there accepted it.
    pub fn accepted(&self, space: &SpaceName, export: (&str, &str), resource: &ResourceInfo) -> Option<Claim> {
        self.on(space, resource).into_iter().find(|c| c.export.0 == export.0 && c.export.1 == export.1)
    }

    /// The claim labels `object` of `resource` in `space` should carry.
    pub fn labels(&self, space: &SpaceName, resource: &ResourceInfo, object: &Value) -> BTreeMap<String, String> {
        let claims = self.on(space, resource);
        if claims.is_empty() {
            return BTreeMap::new();
        }
        let text = |pointer: &str| at(object, pointer).and_then(Value::as_str).unwrap_or_default();
        let (name, namespace) = (text("/metadata/name"), text("/metadata/namespace"));
        claims.iter().filter(|c| c.covers(name, namespace)).map(|c| (c.label(), c.value())).collect()
    }

    /// Sets `object`'s claim labels to `wanted`; true if that changed them.
    pub fn relabel(object: &mut Value, wanted: &BTreeMap<String, String>) -> bool {
        let has: BTreeMap<String, String> = at(object, "/metadata/labels").and_then(Value::as_object).into_iter().flatten()
            .filter(|(k, _)| k.starts_with(CLAIMED_LABEL_PREFIX))
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect();
        if has == *wanted {
            return false;
        }
        let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return false };
        let labels = metadata.entry("labels").or_insert_with(|| json!({}));
        if !labels.is_object() {
            *labels = json!({});
        }
        if let Some(labels) = labels.as_object_mut() {
            labels.retain(|k, _| !k.starts_with(CLAIMED_LABEL_PREFIX));
            for (k, v) in wanted {
                labels.insert(k.clone(), json!(v));
            }
            if labels.is_empty() {
                metadata.remove("labels");
            }
        }
        true
    }

    /// The accepted claims one binding applies.
    pub fn of_binding(binding: &Value) -> Vec<Claim> {
        let cluster = at(binding, "/status/apiExportClusterName").and_then(Value::as_str).unwrap_or_default();
        let name = at(binding, "/spec/reference/export/name").and_then(Value::as_str).unwrap_or_default();
        let export = (cluster.to_owned(), name.to_owned());
        if cluster.is_empty() || name.is_empty() {
            return Vec::new();
        }
        at(binding, "/status/appliedPermissionClaims").and_then(Value::as_array).into_iter().flatten()
            .map(|claim| Claim::parse(claim, &export)).collect()
    }
}

impl WriteObserver for Claims {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[("apis.kcp.io", "APIBinding")]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        if !resource.is("apis.kcp.io", "APIBinding") {
            return;
        }
        let claims = object.map(Claims::of_binding).filter(|c| !c.is_empty()).map(Arc::new);
        if claims.is_some() {
            self.any.store(true, Ordering::Relaxed);
        }
        let mut spaces = self.spaces.write().unwrap_or_else(|e| e.into_inner());
        spaces.entry(space.clone()).or_default().apply(name.to_owned(), claims, revision);
    }

    fn holds(&self, resource: &ResourceInfo) -> Vec<(SpaceName, String)> {
        if !resource.is("apis.kcp.io", "APIBinding") {
            return Vec::new();
        }
        let spaces = self.spaces.read().unwrap_or_else(|e| e.into_inner());
        spaces.iter().flat_map(|(space, bindings)| bindings.keys().map(move |name| (space.clone(), name.clone()))).collect()
    }
}

/// Keeps claim labels true on every write: those of the claims accepted in the object's workspace that cover it,
/// and no other (whatever the writer sent).
pub struct ClaimLabels {
    pub claims: Arc<Claims>,
}

#[async_trait]
impl Admission for ClaimLabels {
    fn handles(&self, _resource: &ResourceInfo, operation: Operation) -> bool {
        matches!(operation, Operation::Create | Operation::Update)
    }

    fn mutate(&self, resource: &ResourceInfo, space: &SpaceName, object: &mut Value) {
        let wanted = self.claims.labels(space, resource, object);
        let labelled = at(object, "/metadata/labels").and_then(Value::as_object).is_some_and(|l| l.keys().any(|k| k.starts_with(CLAIMED_LABEL_PREFIX)));
        if !wanted.is_empty() || labelled {
            Claims::relabel(object, &wanted);
        }
    }

    async fn admit(&self, _registry: &GenericStore, _attributes: &Attributes<'_>) -> ApiResult<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configmaps() -> ResourceInfo {
        crate::kinds::resources().into_iter().find(|r| r.is("", "ConfigMap")).unwrap_or_else(|| panic!("no ConfigMap row"))
    }

    fn binding(claims: Value) -> Value {
        json!({"spec": {"reference": {"export": {"path": "root:p", "name": "widgets"}}},
            "status": {"apiExportClusterName": "p1", "appliedPermissionClaims": claims}})
    }

    #[test]
    fn accepted_claims_label_what_they_cover_and_only_that() {
        let claims = Claims::default();
        let (space, row) = (SpaceName::new("c1").unwrap_or_else(|e| panic!("{e}")), configmaps());
        let mut object = json!({"metadata": {"name": "a", "namespace": "default", "labels": {"claimed.internal.apis.kcp.io/forged": "x"}}});
        let rule = ClaimLabels { claims: Arc::new(Claims::default()) };
        rule.mutate(&row, &space, &mut object);
        assert_eq!(object.pointer("/metadata/labels"), None, "a forged claim label is dropped");
        claims.written(&crate::kinds::resources().into_iter().find(|r| r.is("apis.kcp.io", "APIBinding")).unwrap_or_else(|| panic!("row")),
            &space, "widgets", Some(&binding(json!([{"resource": "configmaps", "resourceSelector": [{"name": "a"}]}]))), Revision(1));
        let labels = claims.labels(&space, &row, &object);
        assert_eq!(labels.keys().collect::<Vec<_>>(), [&label_key("p1", "widgets")]);
        assert!(claims.labels(&space, &row, &json!({"metadata": {"name": "b", "namespace": "default"}})).is_empty(), "not selected");
        assert!(claims.accepted(&space, ("p1", "widgets"), &row).is_some());
        assert!(claims.accepted(&space, ("p1", "gadgets"), &row).is_none());
        assert!(Claims::relabel(&mut object, &labels));
        assert!(!Claims::relabel(&mut object, &labels), "already true");
    }

    #[test]
    fn an_acceptance_applies_exactly_the_export_claim() {
        let one = json!({"resource": "configmaps", "resourceSelector": [{"name": "a", "namespace": "ns"}]});
        let export = [one.clone(), json!({"group": "apps", "resource": "deployments", "all": true})];
        let accept = |claim: &Value| {
            let mut claim = claim.clone();
            claim["state"] = json!("Accepted");
            claim
        };
        // A wider acceptance (`all`, as kcp's plugin sends) of a selected claim applies nothing.
        let wide = accept(&json!({"resource": "configmaps", "all": true}));
        let (applied, mismatched) = super::applied(&export, &[wide]);
        assert!(applied.is_empty());
        assert_eq!(mismatched, ["the accepted claim on configmaps does not match the scope the APIExport claims"]);
        // Another selector, or a narrower one, neither.
        let other = accept(&json!({"resource": "configmaps", "resourceSelector": [{"name": "b", "namespace": "ns"}]}));
        assert!(super::applied(&export, &[other]).0.is_empty());
        // The same scope applies the export's claim; a rejected or unknown claim applies nothing.
        let same = accept(&json!({"resource": "configmaps", "resourceSelector": [{"namespace": "ns", "name": "a"}]}));
        let rejected = json!({"group": "apps", "resource": "deployments", "all": true, "state": "Rejected"});
        let unknown = accept(&json!({"resource": "secrets", "all": true}));
        let (applied, mismatched) = super::applied(&export, &[same, rejected, unknown]);
        assert_eq!(applied, [one]);
        assert!(mismatched.is_empty());
        let deployments = accept(&json!({"group": "apps", "resource": "deployments", "all": true}));
        assert_eq!(super::applied(&export, &[deployments]).0, [export[1].clone()]);
    }
}
