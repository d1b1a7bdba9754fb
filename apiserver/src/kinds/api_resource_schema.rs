//! APIResourceSchema (kcp's `apis.kcp.io/v1alpha1`, cluster-scoped): one version set of one resource, as a
//! provider defines it once to export it. Its name is `<prefix>.<plural>.<group>`, its spec a CRD's spec with each
//! version's `schema` the OpenAPI schema itself, and the spec never changes once written (a new schema is a new
//! object). Bound in a consumer workspace, it is served by the CRD machinery: `as_crd` turns it into the
//! CustomResourceDefinition the resolver compiles, so validation, defaults, printer columns and subresources
//! are the CRDs' own.
//!
//! Admission: a schema an APIExport of its workspace lists cannot be deleted.

use std::sync::Arc;

use async_trait::async_trait;
use kspaces_crd::definition;
use serde_json::{json, Map, Value};

use super::api_export::{self, GROUP};
use super::{kcp_row, kind_schema, Context, Kind, Rules};
use crate::registry::admission::{Admission, Attributes, Operation};
use crate::registry::strategy::Strategy;
use crate::registry::{GenericStore, ListOptions, ResourceInfo, Scope};
use crate::status::{ApiError, ApiResult, Cause};

/// `apis.kcp.io/v1alpha1 APIResourceSchema`: its row, definition and rules.
pub const KIND: Kind = Kind { rows, definitions, rules };

pub const NAME: &str = "APIResourceSchema";
pub const PLURAL: &str = "apiresourceschemas";
const DEFINITION: &str = "io.kcp.apis.v1alpha1.APIResourceSchema";

fn rows() -> Vec<ResourceInfo> {
    vec![kcp_row(GROUP, NAME, PLURAL, DEFINITION, false)]
}

fn definitions() -> Map<String, Value> {
    let mut definitions = Map::new();
    definitions.insert(DEFINITION.into(), kind_schema(
        "APIResourceSchema describes a resource, identified by (group, version, resource, schema). Its spec is immutable.",
        json!({"type": "object", "description": "APIResourceSchemaSpec: a CRD's spec, each version's schema the OpenAPI v3 schema itself.",
            "required": ["group", "names", "scope", "versions"], "properties": {
            "group": {"type": "string", "description": "The API group of the resource."},
            "names": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "description": "The resource and kind names, as a CRD's."},
            "scope": {"type": "string", "description": "Cluster or Namespaced."},
            "nameValidation": {"type": "string", "description": "DNS1123Subdomain (default) or PathSegmentName."},
            "conversion": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "versions": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "description": "One version: name, served, storage, schema, subresources, additionalPrinterColumns."}},
        }}),
        json!({"type": "object"}),
    ));
    definitions
}

fn rules(context: &Context, rules: &mut Rules) {
    rules.strategy(GROUP, NAME, Arc::new(SchemaStrategy));
    if let Some(exports) = context.resources.by_kind(GROUP, api_export::NAME) {
        rules.admit(Arc::new(SchemaInUse { exports: exports.clone() }));
    }
}

pub use crate::apis::kcp::{as_crd, parse};

/// kcp's pattern of the prefix in front of `.<plural>.<group>`.
fn is_prefix(prefix: &str) -> bool {
    let bytes = prefix.as_bytes();
    !bytes.is_empty()
        && bytes[0].is_ascii_lowercase()
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.last().is_some_and(|b| *b != b'-')
}

/// kcp's pattern of a version name.
fn is_version(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('v') else { return false };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || rest.starts_with('0') {
        return false;
    }
    let rest = &rest[digits..];
    if rest.is_empty() {
        return true;
    }
    let letters = rest.bytes().take_while(u8::is_ascii_lowercase).count();
    let tail = &rest[letters..];
    letters > 0 && !tail.is_empty() && !tail.starts_with('0') && tail.bytes().all(|b| b.is_ascii_digit())
}

pub struct SchemaStrategy;

impl Strategy for SchemaStrategy {
    fn validate(&self, _resource: &ResourceInfo, object: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
        check(object, old, causes);
    }
}

fn check(object: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
    if let Some(old) = old {
        if old.get("spec") != object.get("spec") {
            causes.push(Cause { reason: "FieldValueInvalid", message: "Invalid value: \"is immutable\"".into(), field: "spec".into() });
        }
        return;
    }
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
    let (name, plural, group) = (text("/metadata/name"), text("/spec/names/plural"), text("/spec/group"));
    let suffix = format!(".{plural}.{}", if group.is_empty() { "core" } else { group });
    match name.strip_suffix(&suffix) {
        None => causes.push(Cause::invalid("metadata.name", name, &format!("must end in {suffix}"))),
        Some(prefix) if !is_prefix(prefix) => causes.push(Cause::invalid("metadata.name", name,
            &format!("must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ in front of {suffix}"))),
        Some(_) => {}
    }
    let versions = object.pointer("/spec/versions").and_then(Value::as_array);
    for (index, version) in versions.into_iter().flatten().enumerate() {
        let version_name = version.get("name").and_then(Value::as_str).unwrap_or_default();
        if !version_name.is_empty() && !is_version(version_name) {
            causes.push(Cause::invalid(format!("spec.versions[{index}].name"), version_name, "must match ^v[1-9][0-9]*([a-z]+[1-9][0-9]*)?$"));
        }
    }
    if versions.is_some_and(|v| v.len() > 1) && object.pointer("/spec/conversion").is_none_or(Value::is_null) {
        causes.push(Cause::required("spec.conversion"));
    }
    match parse(object) {
        Err(problems) => causes.extend(problems),
        Ok(_) => causes.extend(definition::cost_errors(&as_crd(object), None).into_iter().map(|error| {
            let mut cause = Cause::from(error);
            cause.field = cause.field.replace(".schema.openAPIV3Schema", ".schema");
            cause
        })),
    }
}

/// A schema an APIExport of its workspace lists in `spec.latestResourceSchemas` cannot be deleted (but by the
/// server emptying a deleted space).
pub struct SchemaInUse {
    exports: Arc<ResourceInfo>,
}

#[async_trait]
impl Admission for SchemaInUse {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        resource.is(GROUP, NAME) && operation == Operation::Delete
    }

    async fn admit(&self, registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        // The server's own deletes (a deleted workspace's content) take the schemas with their exports.
        if attributes.caller.is_none() {
            return Ok(());
        }
        let scope = Scope::one(attributes.space.clone(), None);
        let (items, _) = registry.list(&self.exports, &scope, &ListOptions::default()).await?;
        let user = items.iter().find(|export| api_export::schemas(export).iter().any(|s| s == attributes.name));
        match user {
            Some(export) => Err(ApiError::forbidden_object(GROUP, PLURAL, attributes.name, &format!(
                "APIResourceSchema is in use by APIExport {:?}; remove it from the export's spec.latestResourceSchemas first",
                export.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default()))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(name: &str) -> Value {
        json!({"metadata": {"name": name, "uid": "u1"}, "spec": {"group": "example.io", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"type": "object"},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]}]}})
    }

    fn causes(object: &Value, old: Option<&Value>) -> Vec<String> {
        let mut causes = Vec::new();
        check(object, old, &mut causes);
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn names_versions_and_immutability_are_checked_as_kcp_checks_them() {
        assert_eq!(causes(&schema("v1.widgets.example.io"), None), Vec::<String>::new());
        assert_eq!(causes(&schema("widgets.example.io"), None), ["metadata.name: Invalid value: \"widgets.example.io\": must end in .widgets.example.io"]);
        assert_eq!(causes(&schema("V1.widgets.example.io"), None).len(), 1);
        let mut bad = schema("v1.widgets.example.io");
        bad["spec"]["versions"][0]["name"] = json!("1");
        bad["spec"]["versions"][0]["schema"] = json!({"type": "object", "properties": {"a": {"type": "nonsense"}}});
        let found = causes(&bad, None);
        assert!(found.iter().any(|c| c.starts_with("spec.versions[0].name")), "{found:?}");
        assert!(found.iter().any(|c| c.starts_with("spec.versions[0].schema.properties[a].type")), "{found:?}");
        let mut changed = schema("v1.widgets.example.io");
        changed["spec"]["scope"] = json!("Cluster");
        assert_eq!(causes(&changed, Some(&schema("v1.widgets.example.io"))), ["spec: Invalid value: \"is immutable\""]);
        for (version, ok) in [("v1", true), ("v10beta2", true), ("v1alpha1", true), ("v0", false), ("v1alpha", false), ("v1alpha0", false), ("1", false)] {
            assert_eq!(is_version(version), ok, "{version}");
        }
    }

    #[test]
    fn a_schema_is_a_crd_with_its_versions_schemas_wrapped() {
        let crd = as_crd(&schema("v1.widgets.example.io"));
        assert_eq!(crd.pointer("/metadata/name"), Some(&json!("widgets.example.io")));
        assert_eq!(crd.pointer("/spec/versions/0/schema/openAPIV3Schema"), Some(&json!({"type": "object"})));
        let parsed = parse(&schema("v1.widgets.example.io")).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!((parsed.names.list_kind.as_str(), parsed.uid.as_str(), parsed.versions[0].printer_columns.len()), ("WidgetList", "u1", 1));
    }
}
