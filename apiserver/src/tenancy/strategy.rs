//! Create/update rules and validation of the tenancy kinds (kube's "strategies").
//!
//! Tenant (Arktos' `pkg/registry/core/tenant/strategy.go`): `spec.storageClusterId` defaults to "0" and must be
//! an integer 0-63 given as a string; `spec.finalizers` starts as `[arktos]` and, with `storageClusterId`, cannot
//! be changed through the main resource (only through `/finalize`); `status.phase` is Active until the tenant
//! has a deletion timestamp, then Terminating. LogicalCluster: only `spec.crdPolicy` is writable by users.

use serde_json::{json, Value};

use super::schemas::CRD_POLICIES;
use super::ALL;
use crate::registry::store::Part;
use crate::registry::ResourceInfo;
use crate::status::Cause;

/// The finalizer a tenant keeps until its space is empty (Arktos' `FinalizerArktos`).
pub const TENANT_FINALIZER: &str = "arktos";
/// The name of the one LogicalCluster in every space.
pub const LOGICAL_CLUSTER_NAME: &str = "cluster";

fn is_tenant(resource: &ResourceInfo) -> bool {
    resource.is("", "Tenant")
}

fn is_logical_cluster(resource: &ResourceInfo) -> bool {
    resource.is("core.kcp.io", "LogicalCluster")
}

/// Completes a new object of a tenancy kind.
pub fn prepare_create(resource: &ResourceInfo, object: &mut Value) {
    if is_logical_cluster(resource) {
        object["status"] = json!({"phase": "Ready"});
    }
    if !is_tenant(resource) {
        return;
    }
    let Some(map) = object.as_object_mut() else { return };
    let spec = map.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        return; // validation reports it
    }
    if spec.get("storageClusterId").is_none_or(|id| id.is_null() || id == "") {
        spec["storageClusterId"] = json!("0");
    }
    spec["finalizers"] = json!([TENANT_FINALIZER]);
    map.insert("status".into(), json!({"phase": "Active"}));
}

/// Applies the update rules of a tenancy kind to `new` (the main resource; status writes keep their own
/// rules in the generic store).
pub fn prepare_update(resource: &ResourceInfo, old: &Value, new: &mut Value, part: Part) {
    if part != Part::Main || !new.is_object() {
        return;
    }
    if is_tenant(resource) {
        if !new.get("spec").is_some_and(Value::is_object) {
            new["spec"] = json!({});
        }
        for field in ["storageClusterId", "finalizers"] {
            match old.pointer(&format!("/spec/{field}")) {
                Some(value) => new["spec"][field] = value.clone(),
                None => {
                    if let Some(spec) = new["spec"].as_object_mut() {
                        spec.remove(field);
                    }
                }
            }
        }
    } else if is_logical_cluster(resource) {
        let policy = new.pointer("/spec/crdPolicy").cloned();
        let mut spec = old.get("spec").cloned().unwrap_or_else(|| json!({}));
        match policy {
            Some(policy) if spec.is_object() => spec["crdPolicy"] = policy,
            _ => {
                if let Some(spec) = spec.as_object_mut() {
                    spec.remove("crdPolicy");
                }
            }
        }
        new["spec"] = spec;
    }
}

/// Validates a tenancy object; appends field causes.
pub fn check(resource: &ResourceInfo, object: &Value, causes: &mut Vec<Cause>) {
    if is_tenant(resource) {
        check_tenant(object, causes);
    } else if is_logical_cluster(resource) {
        check_logical_cluster(object, causes);
    }
}

fn check_tenant(object: &Value, causes: &mut Vec<Cause>) {
    if object.pointer("/metadata/name").and_then(Value::as_str) == Some(ALL) {
        causes.push(Cause::invalid("metadata.name", ALL, "\"all\" is reserved: it names every tenant in /api/v1/tenants/all/..."));
    }
    if let Some(spec) = object.get("spec").filter(|spec| !spec.is_object()) {
        causes.push(Cause::invalid("spec", &spec.to_string(), "must be an object"));
        return;
    }
    match object.pointer("/spec/storageClusterId") {
        Some(Value::String(id)) if id.parse::<u8>().is_ok_and(|n| n <= 63) && !id.starts_with('+') => {}
        Some(Value::String(id)) => causes.push(Cause::invalid("spec.storageClusterId", id, "must be integer 0-63")),
        Some(other) => causes.push(Cause::invalid("spec.storageClusterId", &other.to_string(), "must be a string holding an integer 0-63")),
        None => causes.push(Cause { message: "Required value: must specify storage cluster id".into(), ..Cause::required("spec.storageClusterId") }),
    }
    let deleting = object.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
    let expected = if deleting { "Terminating" } else { "Active" };
    match object.pointer("/status/phase").and_then(Value::as_str) {
        Some(phase) if phase == expected => {}
        Some(phase) => causes.push(Cause::invalid("status.phase", phase,
            &format!("must be {expected} (Terminating exactly when the tenant is being deleted)"))),
        None => {}
    }
}

fn check_logical_cluster(object: &Value, causes: &mut Vec<Cause>) {
    if let Some(name) = object.pointer("/metadata/name").and_then(Value::as_str).filter(|n| *n != LOGICAL_CLUSTER_NAME) {
        causes.push(Cause::invalid("metadata.name", name, "must be \"cluster\": a space has exactly one LogicalCluster"));
    }
    match object.pointer("/spec/crdPolicy") {
        None | Some(Value::Null) => {}
        Some(Value::String(policy)) if CRD_POLICIES.contains(&policy.as_str()) => {}
        Some(policy) => causes.push(Cause::not_supported("spec.crdPolicy", policy.as_str().unwrap_or(&policy.to_string()), &CRD_POLICIES)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenancy::schemas::resources;

    fn tenant() -> ResourceInfo {
        resources().into_iter().find(|r| r.kind == "Tenant").unwrap_or_else(|| panic!("no Tenant row"))
    }

    fn logical_cluster() -> ResourceInfo {
        resources().into_iter().find(|r| r.kind == "LogicalCluster").unwrap_or_else(|| panic!("no LogicalCluster row"))
    }

    fn causes(resource: &ResourceInfo, object: &Value) -> Vec<String> {
        let mut causes = Vec::new();
        check(resource, object, &mut causes);
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn new_tenants_get_arktos_defaults() {
        let mut object = json!({"metadata": {"name": "t1"}, "spec": {"finalizers": ["mine"]}, "status": {"phase": "Terminating"}});
        prepare_create(&tenant(), &mut object);
        assert_eq!(object["spec"], json!({"storageClusterId": "0", "finalizers": ["arktos"]}));
        assert_eq!(object["status"], json!({"phase": "Active"}));
        assert!(causes(&tenant(), &object).is_empty());
    }

    #[test]
    fn tenant_validation() {
        let bad = json!({"metadata": {"name": "all"}, "spec": {"storageClusterId": "64"}});
        let found = causes(&tenant(), &bad);
        assert!(found.iter().any(|c| c.starts_with("metadata.name")), "{found:?}");
        assert!(found.iter().any(|c| c.contains("must be integer 0-63")), "{found:?}");
        let inconsistent = json!({"metadata": {"name": "t"}, "spec": {"storageClusterId": "3"}, "status": {"phase": "Terminating"}});
        assert_eq!(causes(&tenant(), &inconsistent).len(), 1);
        let mut not_an_object = json!({"metadata": {"name": "t"}, "spec": "nope"});
        prepare_create(&tenant(), &mut not_an_object);
        assert_eq!(causes(&tenant(), &not_an_object), ["spec: Invalid value: \"\\\"nope\\\"\": must be an object"]);
    }

    #[test]
    fn main_resource_updates_keep_storage_cluster_and_finalizers() {
        let old = json!({"spec": {"storageClusterId": "0", "finalizers": ["arktos"]}});
        let mut new = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"storageClusterId": "9"}});
        prepare_update(&tenant(), &old, &mut new, Part::Main);
        assert_eq!(new["spec"], old["spec"]);
    }

    #[test]
    fn only_crd_policy_is_writable_on_logical_clusters() {
        let old = json!({"spec": {"crdPolicy": "LocalCRDFirst", "owner": {"name": "x"}}, "status": {"phase": "Ready"}});
        let mut new = json!({"metadata": {"name": "cluster"}, "spec": {"crdPolicy": "SystemCRDFirst"}});
        prepare_update(&logical_cluster(), &old, &mut new, Part::Main);
        assert_eq!(new["spec"], json!({"crdPolicy": "SystemCRDFirst", "owner": {"name": "x"}}));
        let wrong = json!({"metadata": {"name": "cluster"}, "spec": {"crdPolicy": "Sometimes"}});
        let found = causes(&logical_cluster(), &wrong);
        assert!(found.len() == 1 && found[0].contains("SystemCRDFirst"), "{found:?}");
    }
}
