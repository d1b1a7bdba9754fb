//! Discovery: legacy `/api`, `/apis`, group and group-version documents, and aggregated discovery
//! (`apidiscovery.k8s.io/v2`), which kubectl 1.32 asks for first.

use serde_json::{json, Value};

use crate::negotiate::parse_accept;
use crate::registry::{ResourceInfo, ResourceTable, Subresource};

/// The aggregated-discovery version the client asked for (`v2` or `v2beta1`), if it asked before any plain
/// JSON type.
pub fn aggregated_version(accept: Option<&str>) -> Option<String> {
    for media in parse_accept(accept?) {
        match (media.param("as"), media.param("g")) {
            (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io")) => match media.param("v") {
                Some(v @ ("v2" | "v2beta1")) => return Some(v.to_owned()),
                _ => continue,
            },
            (Some(_), _) => continue,
            (None, _) => return None,
        }
    }
    None
}

/// Adds `shortNames` and `categories` to a discovery entry when the resource has any.
fn add_names(entry: &mut Value, r: &ResourceInfo) {
    if !r.short_names.is_empty() {
        entry["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        entry["categories"] = json!(r.categories);
    }
}

fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") }
}

/// `/api`
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn api_group(name: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions.iter().map(|v| json!({"groupVersion": group_version(name, v), "version": v})).collect();
    json!({"name": name, "versions": versions.clone(), "preferredVersion": versions.first().cloned().unwrap_or(Value::Null)})
}

/// `/apis`
pub fn api_group_list(table: &ResourceTable) -> Value {
    let groups: Vec<Value> = table.groups().iter().filter(|(g, _)| !g.is_empty()).map(|(g, v)| api_group(g, v)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`
pub fn api_group_document(table: &ResourceTable, group: &str) -> Option<Value> {
    let (name, versions) = table.groups().into_iter().find(|(g, _)| g == group && !g.is_empty())?;
    let mut doc = api_group(&name, &versions);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

fn subresource_entries(r: &ResourceInfo) -> Vec<(String, Value, Vec<&'static str>)> {
    let own_kind = json!({"group": r.group, "version": r.version, "kind": r.kind});
    let mut entries = Vec::new();
    if r.has_subresource(Subresource::Finalize) {
        entries.push(("finalize".to_owned(), own_kind.clone(), vec!["update"]));
    }
    if r.is("", "ServiceAccount") {
        let request = json!({"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"});
        entries.push(("token".to_owned(), request, vec!["create"]));
    }
    if r.is("", "Pod") {
        for sub in crate::apis::pods::SUBRESOURCES {
            let (group, version, kind) = sub.kind;
            entries.push((sub.name.to_owned(), json!({"group": group, "version": version, "kind": kind}), sub.verbs.to_vec()));
        }
    }
    for subresource in &r.subresources {
        match subresource {
            Subresource::Status => entries.push(("status".to_owned(), own_kind.clone(), vec!["get", "patch", "update"])),
            Subresource::Approval => entries.push(("approval".to_owned(), own_kind.clone(), vec!["get", "patch", "update"])),
            Subresource::Finalize => {}
            Subresource::Scale => entries.push((
                "scale".to_owned(),
                json!({"group": "autoscaling", "version": "v1", "kind": "Scale"}),
                vec!["get", "patch", "update"],
            )),
        }
    }
    entries
}

/// `/api/v1` or `/apis/<group>/<version>`
pub fn api_resource_list(table: &ResourceTable, group: &str, version: &str) -> Option<Value> {
    let resources = table.in_group_version(group, version);
    if resources.is_empty() {
        return None;
    }
    let mut list = Vec::new();
    for r in resources {
        let mut entry = json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": r.verbs,
        });
        add_names(&mut entry, r);
        list.push(entry);
        for (name, kind, verbs) in subresource_entries(r) {
            let mut sub = json!({"name": format!("{}/{name}", r.plural), "singularName": "", "namespaced": r.namespaced, "kind": kind["kind"], "verbs": verbs});
            if kind["group"] != json!(r.group) {
                sub["group"] = kind["group"].clone();
                sub["version"] = kind["version"].clone();
            }
            list.push(sub);
        }
    }
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version(group, version), "resources": list}))
}

/// The aggregated document for `/api` (`core == true`) or `/apis`.
pub fn aggregated(table: &ResourceTable, core: bool, version: &str) -> Value {
    let mut items = Vec::new();
    for (group, versions) in table.groups() {
        if group.is_empty() != core {
            continue;
        }
        let versions: Vec<Value> = versions.iter().map(|v| {
            let resources: Vec<Value> = table.in_group_version(&group, v).into_iter().map(|r| {
                let subresources: Vec<Value> = subresource_entries(r).into_iter()
                    .map(|(name, kind, verbs)| json!({"subresource": name, "responseKind": kind, "verbs": verbs}))
                    .collect();
                let mut entry = json!({
                    "resource": r.plural,
                    "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
                    "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
                    "singularResource": r.singular,
                    "verbs": r.verbs,
                });
                add_names(&mut entry, r);
                if !subresources.is_empty() {
                    entry["subresources"] = json!(subresources);
                }
                entry
            }).collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        }).collect();
        items.push(json!({"metadata": {"name": group, "creationTimestamp": null}, "versions": versions}));
    }
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": format!("apidiscovery.k8s.io/{version}"), "metadata": {}, "items": items})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_only_when_asked_first() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(aggregated_version(Some(kubectl)).as_deref(), Some("v2"));
        assert_eq!(aggregated_version(Some("application/json")), None);
        assert_eq!(aggregated_version(None), None);
        assert_eq!(aggregated_version(Some("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json")), None);
    }
}
