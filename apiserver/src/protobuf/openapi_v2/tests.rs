//! Tests of the gnostic protobuf form of `/openapi/v2`: the served document decodes as `openapi.v2.Document` and
//! carries what kubectl reads (kinds' schemas and group-version-kinds, operations and their parameters).

use prost::Message;
use serde_json::{json, Value};

use super::*;
use crate::openapi::OpenApi;
use crate::registry::builtin::builtin_resources;

/// The built-in document, encoded and decoded back, with its JSON form.
fn decoded() -> (Document, Value) {
    let openapi = OpenApi::build(&builtin_resources());
    let json: Value = serde_json::from_slice(&openapi.v2_json()).unwrap_or_else(|e| panic!("{e}"));
    let document = Document::decode(openapi.v2_protobuf().as_ref()).unwrap_or_else(|e| panic!("{e}"));
    (document, json)
}

fn definition<'a>(document: &'a Document, name: &str) -> &'a Schema {
    let definitions = document.definitions.as_ref().map(|d| d.additional_properties.as_slice()).unwrap_or_default();
    let named = definitions.iter().find(|named| named.name == name).unwrap_or_else(|| panic!("no definition {name}"));
    named.value.as_ref().unwrap_or_else(|| panic!("{name} is empty"))
}

fn property<'a>(schema: &'a Schema, name: &str) -> &'a Schema {
    let properties = schema.properties.as_ref().map(|p| p.additional_properties.as_slice()).unwrap_or_default();
    let named = properties.iter().find(|named| named.name == name).unwrap_or_else(|| panic!("no property {name}"));
    named.value.as_ref().unwrap_or_else(|| panic!("{name} is empty"))
}

/// A vendor extension's value, parsed from its text as kube-openapi parses the YAML.
fn extension(extensions: &[NamedAny], name: &str) -> Value {
    let named = extensions.iter().find(|e| e.name == name).unwrap_or_else(|| panic!("no extension {name}"));
    let yaml = named.value.as_ref().map(|v| v.yaml.as_str()).unwrap_or_default();
    serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("{name}: {yaml:?} is not YAML: {e}"))
}

#[test]
fn the_document_decodes_with_every_definition_and_path() {
    let (document, json) = decoded();
    assert_eq!(document.swagger, "2.0");
    assert_eq!(document.info.as_ref().map(|i| i.title.as_str()), Some("Kubernetes"));
    let definitions = document.definitions.as_ref().map_or(0, |d| d.additional_properties.len());
    assert_eq!(Some(definitions), json["definitions"].as_object().map(|d| d.len()));
    let paths = document.paths.as_ref().map_or(0, |p| p.path.len());
    assert_eq!(Some(paths), json["paths"].as_object().map(|p| p.len()));
    let security = document.security_definitions.as_ref().map(|s| s.additional_properties[0].clone());
    let bearer = security.and_then(|s| s.value).and_then(|v| v.oneof);
    assert!(matches!(bearer, Some(security_definitions_item::Oneof::ApiKeySecurity(ref key)) if key.name == "authorization"), "{bearer:?}");
}

#[test]
fn schemas_carry_types_references_and_kinds() {
    let (document, _) = decoded();
    let config_map = definition(&document, "io.k8s.api.core.v1.ConfigMap");
    assert_eq!(extension(&config_map.vendor_extension, "x-kubernetes-group-version-kind"),
        json!([{"group": "", "kind": "ConfigMap", "version": "v1"}]));
    assert_eq!(config_map.r#type.as_ref().map(|t| t.value.clone()), Some(vec!["object".to_owned()]));
    let data = property(config_map, "data");
    let values = match data.additional_properties.as_deref().and_then(|a| a.oneof.as_ref()) {
        Some(additional_properties_item::Oneof::Schema(schema)) => schema,
        other => panic!("data's additionalProperties: {other:?}"),
    };
    assert_eq!(values.r#type.as_ref().map(|t| t.value.clone()), Some(vec!["string".to_owned()]));
    let metadata = property(config_map, "metadata");
    assert_eq!(metadata.r#ref, "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    let pod_spec = definition(&document, "io.k8s.api.core.v1.PodSpec");
    let containers = property(pod_spec, "containers");
    let items = containers.items.as_ref().map(|i| i.schema.as_slice()).unwrap_or_default();
    assert_eq!(items.first().map(|s| s.r#ref.as_str()), Some("#/definitions/io.k8s.api.core.v1.Container"));
    assert_eq!(extension(&containers.vendor_extension, "x-kubernetes-patch-merge-key"), json!("name"));
}

#[test]
fn operations_carry_parameters_responses_and_actions() {
    let (document, _) = decoded();
    let paths = document.paths.as_ref().map(|p| p.path.as_slice()).unwrap_or_default();
    let item = paths.iter().find(|p| p.name == "/api/v1/namespaces/{namespace}/configmaps/{name}")
        .and_then(|p| p.value.as_ref()).unwrap_or_else(|| panic!("no configmap path"));
    let patch = item.patch.as_ref().unwrap_or_else(|| panic!("no PATCH"));
    assert_eq!(extension(&patch.vendor_extension, "x-kubernetes-action"), json!("patch"));
    let query: Vec<&QueryParameterSubSchema> = patch.parameters.iter().filter_map(|item| match &item.oneof {
        Some(parameters_item::Oneof::Parameter(Parameter { oneof: Some(parameter::Oneof::NonBodyParameter(NonBodyParameter {
            oneof: Some(non_body_parameter::Oneof::QueryParameterSubSchema(query)) })) })) => Some(query),
        _ => None,
    }).collect();
    assert!(query.iter().any(|q| q.name == "fieldValidation" && q.r#in == "query" && q.unique_items), "{query:?}");
    let body = patch.parameters.iter().find_map(|item| match &item.oneof {
        Some(parameters_item::Oneof::Parameter(Parameter { oneof: Some(parameter::Oneof::BodyParameter(body)) })) => Some(body),
        _ => None,
    });
    assert_eq!(body.map(|b| (b.r#in.as_str(), b.required)), Some(("body", true)));
    let path_parameters = item.parameters.iter().filter(|item| matches!(&item.oneof,
        Some(parameters_item::Oneof::Parameter(Parameter { oneof: Some(parameter::Oneof::NonBodyParameter(NonBodyParameter {
            oneof: Some(non_body_parameter::Oneof::PathParameterSubSchema(path)) })) })) if path.required)).count();
    assert_eq!(path_parameters, 2, "name and namespace");
    let responses = patch.responses.as_ref().map(|r| r.response_code.as_slice()).unwrap_or_default();
    let ok = responses.iter().find(|r| r.name == "200").and_then(|r| r.value.as_ref()).and_then(|v| v.oneof.as_ref());
    let schema = match ok {
        Some(response_value::Oneof::Response(Response { schema: Some(SchemaItem { oneof: Some(schema_item::Oneof::Schema(s)) }), .. })) => s,
        other => panic!("200: {other:?}"),
    };
    assert_eq!(schema.r#ref, "#/definitions/io.k8s.api.core.v1.ConfigMap");
}

#[test]
fn references_defaults_and_unknown_keys_convert_as_gnostic_does() {
    let document = document_from_json(&json!({
        "swagger": "2.0",
        "paths": {"x-note": 1, "/a": {"get": {"parameters": [{"$ref": "#/parameters/p"}],
            "responses": {"default": {"$ref": "#/responses/r"}, "x-r": true}}}},
        "definitions": {"D": {"type": ["string", "null"], "default": "x", "enum": ["x", 2], "oneOf": [{}],
            "additionalProperties": false, "items": [{"type": "integer"}, {"type": "string"}]}},
    }));
    let paths = document.paths.unwrap_or_default();
    assert_eq!(paths.vendor_extension.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["x-note"]);
    let get = paths.path[0].value.clone().and_then(|p| p.get).unwrap_or_default();
    assert!(matches!(&get.parameters[0].oneof, Some(parameters_item::Oneof::JsonReference(r)) if r.r#ref == "#/parameters/p"));
    let responses = get.responses.unwrap_or_default();
    assert_eq!(responses.response_code.len(), 1);
    assert_eq!(responses.vendor_extension[0].name, "x-r");
    let schema = document.definitions.unwrap_or_default().additional_properties[0].value.clone().unwrap_or_default();
    assert_eq!(schema.r#type.map(|t| t.value), Some(vec!["string".to_owned(), "null".to_owned()]));
    assert_eq!(schema.default.map(|d| d.yaml), Some("\"x\"\n".to_owned()));
    assert_eq!(schema.r#enum.iter().map(|e| e.yaml.as_str()).collect::<Vec<_>>(), ["\"x\"\n", "2\n"]);
    assert!(matches!(schema.additional_properties.and_then(|a| a.oneof), Some(additional_properties_item::Oneof::Boolean(false))));
    assert_eq!(schema.items.map(|i| i.schema.len()), Some(2));
}
