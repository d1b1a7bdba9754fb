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

/// A group-version another server serves (an APIService's), as discovery shows it.
#[derive(Clone, Debug)]
pub struct Remote {
    pub group: String,
    pub version: String,
    pub group_priority: i64,
    pub version_priority: i64,
    /// The `APIResourceList` its server last answered; `None` while it answers none.
    pub resources: Option<Value>,
}

/// The groups of `table`, then those only `remote` serves (by `groupPriorityMinimum`, highest first), each with its
/// versions (a remote one after the group's own, by `versionPriority`).
fn groups(table: &ResourceTable, remote: &[Remote]) -> Vec<(String, Vec<String>)> {
    let mut groups = table.groups();
    let mut remote: Vec<&Remote> = remote.iter().collect();
    remote.sort_by(|a, b| b.group_priority.cmp(&a.group_priority).then(a.group.cmp(&b.group)).then(b.version_priority.cmp(&a.version_priority)));
    for r in remote {
        match groups.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) if versions.contains(&r.version) => {}
            Some((_, versions)) => versions.push(r.version.clone()),
            None => groups.push((r.group.clone(), vec![r.version.clone()])),
        }
    }
    groups
}

/// `/apis`
pub fn api_group_list(table: &ResourceTable, remote: &[Remote]) -> Value {
    let groups: Vec<Value> = groups(table, remote).iter().filter(|(g, _)| !g.is_empty()).map(|(g, v)| api_group(g, v)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`
pub fn api_group_document(table: &ResourceTable, remote: &[Remote], group: &str) -> Option<Value> {
    let (name, versions) = groups(table, remote).into_iter().find(|(g, _)| g == group && !g.is_empty())?;
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

/// The aggregated document for `/api` (`core == true`) or `/apis`; a remote group-version shows what its server
/// last answered (`Stale` and no resources while it answers none).
pub fn aggregated(table: &ResourceTable, remote: &[Remote], core: bool, version: &str) -> Value {
    let mut items = Vec::new();
    for (group, versions) in groups(table, remote) {
        if group.is_empty() != core {
            continue;
        }
        let versions: Vec<Value> = versions.iter().map(|v| {
            if let Some(remote) = remote.iter().find(|r| r.group == group && r.version == *v).filter(|_| table.in_group_version(&group, v).is_empty()) {
                return remote_version(remote);
            }
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

/// A remote group-version's aggregated entry, from its `APIResourceList` (`name/sub` entries as subresources).
fn remote_version(remote: &Remote) -> Value {
    let Some(list) = &remote.resources else {
        return json!({"version": remote.version, "resources": [], "freshness": "Stale"});
    };
    let listed = list.get("resources").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let text = |entry: &Value, key: &str, or: &str| entry.get(key).and_then(Value::as_str).filter(|t| !t.is_empty()).unwrap_or(or).to_owned();
    let kind_of = |entry: &Value| json!({"group": text(entry, "group", &remote.group), "version": text(entry, "version", &remote.version), "kind": text(entry, "kind", "")});
    let mut resources = Vec::new();
    for entry in listed.iter().filter(|e| !text(e, "name", "").contains('/')) {
        let name = text(entry, "name", "");
        let subresources: Vec<Value> = listed.iter().filter_map(|sub| {
            let full = text(sub, "name", "");
            let (parent, subresource) = full.split_once('/')?;
            (parent == name).then(|| json!({"subresource": subresource, "responseKind": kind_of(sub), "verbs": sub.get("verbs").cloned().unwrap_or(json!([]))}))
        }).collect();
        let namespaced = entry.get("namespaced").and_then(Value::as_bool).unwrap_or(false);
        let mut item = json!({
            "resource": name,
            "responseKind": kind_of(entry),
            "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "singularResource": text(entry, "singularName", ""),
            "verbs": entry.get("verbs").cloned().unwrap_or(json!([])),
        });
        for key in ["shortNames", "categories"] {
            if let Some(names) = entry.get(key).filter(|n| n.as_array().is_some_and(|n| !n.is_empty())) {
                item[key] = names.clone();
            }
        }
        if !subresources.is_empty() {
            item["subresources"] = json!(subresources);
        }
        resources.push(item);
    }
    json!({"version": remote.version, "resources": resources, "freshness": "Current"})
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

    #[test]
    fn a_remote_group_version_is_discovered_as_its_server_lists_it() {
        let table = ResourceTable::new(crate::registry::builtin::builtin_resources());
        let list = json!({"kind": "APIResourceList", "groupVersion": "metrics.k8s.io/v1beta1", "resources": [
            {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]},
            {"name": "pods/status", "namespaced": true, "kind": "PodMetrics", "verbs": ["get"]},
            {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"], "shortNames": ["nm"]}]});
        let remote = [Remote { group: "metrics.k8s.io".into(), version: "v1beta1".into(), group_priority: 100, version_priority: 100, resources: Some(list) },
            Remote { group: "down.example.com".into(), version: "v1".into(), group_priority: 200, version_priority: 1, resources: None }];
        let names: Vec<Value> = api_group_list(&table, &remote)["groups"].as_array().unwrap().iter().map(|g| g["name"].clone()).collect();
        assert_eq!(&names[names.len() - 2..], [json!("down.example.com"), json!("metrics.k8s.io")]);
        assert_eq!(api_group_document(&table, &remote, "metrics.k8s.io").unwrap()["preferredVersion"]["groupVersion"], "metrics.k8s.io/v1beta1");
        let document = aggregated(&table, &remote, false, "v2");
        let item = |name: &str| document["items"].as_array().unwrap().iter().find(|i| i["metadata"]["name"] == name).unwrap().clone();
        let metrics = &item("metrics.k8s.io")["versions"][0];
        assert_eq!(metrics["freshness"], "Current");
        assert_eq!(metrics["resources"][0]["resource"], "pods");
        assert_eq!(metrics["resources"][0]["scope"], "Namespaced");
        assert_eq!(metrics["resources"][0]["subresources"][0]["subresource"], "status");
        assert_eq!(metrics["resources"][1]["shortNames"], json!(["nm"]));
        assert_eq!(item("down.example.com")["versions"][0]["freshness"], "Stale");
    }
}
