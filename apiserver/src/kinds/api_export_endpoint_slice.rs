//! APIExportEndpointSlice (kcp's `apis.kcp.io/v1alpha1`, cluster-scoped): where a controller reaches an
//! export's virtual workspace. The APIs controller makes one per export, named after it and owned by it; users may
//! make more (for an export elsewhere, by `spec.export.path`). One server is one shard, so `status.endpoints` has
//! one URL, computed from the server's address and the tree when the object is read.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::api_export::{check_export_reference, virtual_workspace_url, GROUP};
use super::workspace::BaseUrl;
use super::{kcp_row, kind_schema, Context, Kind, Rules};
use crate::registry::strategy::{Strategy, View};
use crate::registry::store::cluster_name;
use crate::registry::ResourceInfo;
use crate::status::Cause;
use crate::tenancy::Tree;

/// `apis.kcp.io/v1alpha1 APIExportEndpointSlice`: its row, definition and strategy.
pub const KIND: Kind = Kind { rows, definitions, rules };

pub const NAME: &str = "APIExportEndpointSlice";
const DEFINITION: &str = "io.kcp.apis.v1alpha1.APIExportEndpointSlice";

fn rows() -> Vec<ResourceInfo> {
    vec![kcp_row(GROUP, NAME, "apiexportendpointslices", DEFINITION, true)]
}

fn definitions() -> Map<String, Value> {
    let mut definitions = Map::new();
    definitions.insert(DEFINITION.into(), kind_schema(
        "APIExportEndpointSlice is a sink for the endpoints of an APIExport's virtual workspace.",
        json!({"type": "object", "required": ["export"], "properties": {
            "export": {"type": "object", "required": ["name"], "properties": {
                "path": {"type": "string", "description": "The workspace of the export; empty: this one."},
                "name": {"type": "string", "description": "The export's name."}}},
            "partition": {"type": "string", "description": "A Partition selecting shards (one server: ignored)."},
        }}),
        json!({"type": "object", "properties": {
            "endpoints": {"type": "array", "items": {"type": "object", "properties": {"url": {"type": "string"}}}},
            "conditions": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
        }}),
    ));
    definitions
}

fn rules(context: &Context, rules: &mut Rules) {
    rules.strategy(GROUP, NAME, Arc::new(SliceStrategy { base_url: context.base_url.clone(), tree: context.tree.clone() }));
}

pub struct SliceStrategy {
    base_url: Arc<BaseUrl>,
    tree: Arc<Tree>,
}

impl Strategy for SliceStrategy {
    fn view(&self) -> Option<&dyn View> {
        Some(self)
    }

    fn validate(&self, _resource: &ResourceInfo, object: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
        check_export_reference(object, old, "spec.export", "spec.export", causes);
    }
}

impl View for SliceStrategy {
    fn to_request(&self, _resource: &ResourceInfo, object: &mut Value) {
        let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_owned();
        let (own, path, name) = (text("/metadata/annotations/kcp.io~1cluster"), text("/spec/export/path"), text("/spec/export/name"));
        let cluster = if path.is_empty() { Some(own) } else { self.tree.resolve(&path).map(|node| cluster_name(&node.cluster).to_owned()) };
        let Some(cluster) = cluster.filter(|c| !c.is_empty() && !name.is_empty()) else { return };
        if !object.get("status").is_some_and(Value::is_object) {
            object["status"] = json!({});
        }
        object["status"]["endpoints"] = json!([{"url": virtual_workspace_url(&self.base_url.get(), &cluster, &name)}]);
    }
}
