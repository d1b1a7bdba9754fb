//! A Swagger 2.0 JSON document → gnostic's `openapi.v2.Document`, following gnostic's `ParseDocument`: `$ref`
//! objects become `JsonReference`s, a parameter becomes the body or the header/formData/query/path sub-schema its
//! `in` names, `x-*` keys become vendor extensions, and any JSON value (defaults, enum members, extensions) is
//! carried as YAML text, here its JSON form (JSON is YAML). Keys Swagger 2.0 does not define (`oneOf`) have no
//! field in the messages and are dropped, as gnostic cannot represent them either.

use serde_json::{Map, Value};

use super::*;

static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

/// The object's fields (anything else reads as an empty object).
fn fields(value: &Value) -> &Map<String, Value> {
    value.as_object().unwrap_or(&EMPTY)
}

fn string(object: &Map<String, Value>, key: &str) -> String {
    object.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn boolean(object: &Map<String, Value>, key: &str) -> bool {
    object.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn number(object: &Map<String, Value>, key: &str) -> f64 {
    object.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn integer(object: &Map<String, Value>, key: &str) -> i64 {
    object.get(key).and_then(Value::as_i64).unwrap_or(0)
}

fn strings(object: &Map<String, Value>, key: &str) -> Vec<String> {
    let items = object.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    items.iter().filter_map(Value::as_str).map(str::to_owned).collect()
}

/// A JSON value as gnostic's `Any`: its YAML text (here JSON, which YAML parsers read).
fn any_of(value: &Value) -> Any {
    Any { value: None, yaml: format!("{value}\n") }
}

fn any(object: &Map<String, Value>, key: &str) -> Option<Any> {
    object.get(key).map(any_of)
}

fn anys(object: &Map<String, Value>, key: &str) -> Vec<Any> {
    let items = object.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    items.iter().map(any_of).collect()
}

/// The `x-*` keys of an object, in order.
fn extensions(object: &Map<String, Value>) -> Vec<NamedAny> {
    object
        .iter()
        .filter(|(key, _)| key.starts_with("x-"))
        .map(|(name, value)| NamedAny { name: name.clone(), value: Some(any_of(value)) })
        .collect()
}

/// The value at `key` converted by `convert`, when present.
fn nested<T>(object: &Map<String, Value>, key: &str, convert: impl Fn(&Value) -> T) -> Option<T> {
    object.get(key).map(convert)
}

/// Converts the whole document.
pub fn document_from_json(document: &Value) -> Document {
    let o = fields(document);
    Document {
        swagger: string(o, "swagger"),
        info: nested(o, "info", info),
        host: string(o, "host"),
        base_path: string(o, "basePath"),
        schemes: strings(o, "schemes"),
        consumes: strings(o, "consumes"),
        produces: strings(o, "produces"),
        paths: nested(o, "paths", paths),
        definitions: nested(o, "definitions", |v| Definitions { additional_properties: named_schemas(v) }),
        parameters: nested(o, "parameters", |v| ParameterDefinitions {
            additional_properties: fields(v)
                .iter()
                .map(|(name, value)| NamedParameter { name: name.clone(), value: Some(parameter(value)) })
                .collect(),
        }),
        responses: nested(o, "responses", |v| ResponseDefinitions {
            additional_properties: fields(v)
                .iter()
                .map(|(name, value)| NamedResponse { name: name.clone(), value: Some(response(value)) })
                .collect(),
        }),
        security: security_requirements(o),
        security_definitions: nested(o, "securityDefinitions", security_definitions),
        tags: o.get("tags").and_then(Value::as_array).map(|tags| tags.iter().map(tag).collect()).unwrap_or_default(),
        external_docs: nested(o, "externalDocs", external_docs),
        vendor_extension: extensions(o),
    }
}

fn info(value: &Value) -> Info {
    let o = fields(value);
    Info {
        title: string(o, "title"),
        version: string(o, "version"),
        description: string(o, "description"),
        terms_of_service: string(o, "termsOfService"),
        contact: nested(o, "contact", |v| {
            let c = fields(v);
            Contact { name: string(c, "name"), url: string(c, "url"), email: string(c, "email"), vendor_extension: extensions(c) }
        }),
        license: nested(o, "license", |v| {
            let l = fields(v);
            License { name: string(l, "name"), url: string(l, "url"), vendor_extension: extensions(l) }
        }),
        vendor_extension: extensions(o),
    }
}

fn external_docs(value: &Value) -> ExternalDocs {
    let o = fields(value);
    ExternalDocs { description: string(o, "description"), url: string(o, "url"), vendor_extension: extensions(o) }
}

fn tag(value: &Value) -> Tag {
    let o = fields(value);
    Tag {
        name: string(o, "name"),
        description: string(o, "description"),
        external_docs: nested(o, "externalDocs", external_docs),
        vendor_extension: extensions(o),
    }
}

fn security_requirements(object: &Map<String, Value>) -> Vec<SecurityRequirement> {
    let items = object.get("security").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    items
        .iter()
        .map(|requirement| SecurityRequirement {
            additional_properties: fields(requirement)
                .keys()
                .map(|name| NamedStringArray {
                    name: name.clone(),
                    value: Some(StringArray { value: strings(fields(requirement), name) }),
                })
                .collect(),
        })
        .collect()
}

fn security_definitions(value: &Value) -> SecurityDefinitions {
    let item = |value: &Value| {
        let o = fields(value);
        let oneof = match o.get("type").and_then(Value::as_str) {
            Some("basic") => Some(security_definitions_item::Oneof::BasicAuthenticationSecurity(BasicAuthenticationSecurity {
                r#type: string(o, "type"),
                description: string(o, "description"),
                vendor_extension: extensions(o),
            })),
            Some("apiKey") => Some(security_definitions_item::Oneof::ApiKeySecurity(ApiKeySecurity {
                r#type: string(o, "type"),
                name: string(o, "name"),
                r#in: string(o, "in"),
                description: string(o, "description"),
                vendor_extension: extensions(o),
            })),
            _ => None,
        };
        SecurityDefinitionsItem { oneof }
    };
    SecurityDefinitions {
        additional_properties: fields(value)
            .iter()
            .map(|(name, value)| NamedSecurityDefinitionsItem { name: name.clone(), value: Some(item(value)) })
            .collect(),
    }
}

fn paths(value: &Value) -> Paths {
    let o = fields(value);
    Paths {
        vendor_extension: extensions(o),
        path: o
            .iter()
            .filter(|(key, _)| key.starts_with('/'))
            .map(|(name, item)| NamedPathItem { name: name.clone(), value: Some(path_item(item)) })
            .collect(),
    }
}

fn path_item(value: &Value) -> PathItem {
    let o = fields(value);
    PathItem {
        r#ref: string(o, "$ref"),
        get: nested(o, "get", operation),
        put: nested(o, "put", operation),
        post: nested(o, "post", operation),
        delete: nested(o, "delete", operation),
        options: nested(o, "options", operation),
        head: nested(o, "head", operation),
        patch: nested(o, "patch", operation),
        parameters: parameters(o),
        vendor_extension: extensions(o),
    }
}

fn operation(value: &Value) -> Operation {
    let o = fields(value);
    Operation {
        tags: strings(o, "tags"),
        summary: string(o, "summary"),
        description: string(o, "description"),
        external_docs: nested(o, "externalDocs", external_docs),
        operation_id: string(o, "operationId"),
        produces: strings(o, "produces"),
        consumes: strings(o, "consumes"),
        parameters: parameters(o),
        responses: nested(o, "responses", responses),
        schemes: strings(o, "schemes"),
        deprecated: boolean(o, "deprecated"),
        security: security_requirements(o),
        vendor_extension: extensions(o),
    }
}

/// A `parameters` list: references, or parameters.
fn parameters(object: &Map<String, Value>) -> Vec<ParametersItem> {
    let items = object.get("parameters").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    items
        .iter()
        .map(|item| {
            let oneof = match reference(item) {
                Some(reference) => parameters_item::Oneof::JsonReference(reference),
                None => parameters_item::Oneof::Parameter(parameter(item)),
            };
            ParametersItem { oneof: Some(oneof) }
        })
        .collect()
}

/// `{"$ref": ...}` as a `JsonReference`.
fn reference(value: &Value) -> Option<JsonReference> {
    let o = fields(value);
    o.get("$ref").and_then(Value::as_str).map(|r| JsonReference { r#ref: r.to_owned(), description: string(o, "description") })
}

fn parameter(value: &Value) -> Parameter {
    let o = fields(value);
    let location = string(o, "in");
    let oneof = if location == "body" {
        parameter::Oneof::BodyParameter(BodyParameter {
            description: string(o, "description"),
            name: string(o, "name"),
            r#in: location,
            required: boolean(o, "required"),
            schema: nested(o, "schema", schema),
            vendor_extension: extensions(o),
        })
    } else {
        parameter::Oneof::NonBodyParameter(non_body_parameter(o, location))
    };
    Parameter { oneof: Some(oneof) }
}

/// A header, formData, query or path parameter (gnostic leaves an unknown `in` without a sub-schema).
fn non_body_parameter(o: &Map<String, Value>, location: String) -> NonBodyParameter {
    use non_body_parameter::Oneof;
    // The sub-schemas share their fields (numbered differently); formData and query add allowEmptyValue.
    macro_rules! sub_schema {
        ($type:ident $(, $extra:ident : $value:expr)*) => {
            $type {
                required: boolean(o, "required"),
                r#in: location,
                description: string(o, "description"),
                name: string(o, "name"),
                r#type: string(o, "type"),
                format: string(o, "format"),
                items: nested(o, "items", primitives_items),
                collection_format: string(o, "collectionFormat"),
                default: any(o, "default"),
                maximum: number(o, "maximum"),
                exclusive_maximum: boolean(o, "exclusiveMaximum"),
                minimum: number(o, "minimum"),
                exclusive_minimum: boolean(o, "exclusiveMinimum"),
                max_length: integer(o, "maxLength"),
                min_length: integer(o, "minLength"),
                pattern: string(o, "pattern"),
                max_items: integer(o, "maxItems"),
                min_items: integer(o, "minItems"),
                unique_items: boolean(o, "uniqueItems"),
                r#enum: anys(o, "enum"),
                multiple_of: number(o, "multipleOf"),
                vendor_extension: extensions(o),
                $($extra: $value,)*
            }
        };
    }
    let oneof = match location.as_str() {
        "header" => Some(Oneof::HeaderParameterSubSchema(sub_schema!(HeaderParameterSubSchema))),
        "formData" => Some(Oneof::FormDataParameterSubSchema(sub_schema!(FormDataParameterSubSchema,
            allow_empty_value: boolean(o, "allowEmptyValue")))),
        "query" => Some(Oneof::QueryParameterSubSchema(sub_schema!(QueryParameterSubSchema,
            allow_empty_value: boolean(o, "allowEmptyValue")))),
        "path" => Some(Oneof::PathParameterSubSchema(sub_schema!(PathParameterSubSchema))),
        _ => None,
    };
    NonBodyParameter { oneof }
}

fn primitives_items(value: &Value) -> PrimitivesItems {
    let o = fields(value);
    PrimitivesItems {
        r#type: string(o, "type"),
        format: string(o, "format"),
        items: nested(o, "items", |v| Box::new(primitives_items(v))),
        collection_format: string(o, "collectionFormat"),
        default: any(o, "default"),
        maximum: number(o, "maximum"),
        exclusive_maximum: boolean(o, "exclusiveMaximum"),
        minimum: number(o, "minimum"),
        exclusive_minimum: boolean(o, "exclusiveMinimum"),
        max_length: integer(o, "maxLength"),
        min_length: integer(o, "minLength"),
        pattern: string(o, "pattern"),
        max_items: integer(o, "maxItems"),
        min_items: integer(o, "minItems"),
        unique_items: boolean(o, "uniqueItems"),
        r#enum: anys(o, "enum"),
        multiple_of: number(o, "multipleOf"),
        vendor_extension: extensions(o),
    }
}

fn responses(value: &Value) -> Responses {
    let o = fields(value);
    Responses {
        response_code: o
            .iter()
            .filter(|(key, _)| !key.starts_with("x-"))
            .map(|(code, value)| {
                let oneof = match reference(value) {
                    Some(reference) => response_value::Oneof::JsonReference(reference),
                    None => response_value::Oneof::Response(response(value)),
                };
                NamedResponseValue { name: code.clone(), value: Some(ResponseValue { oneof: Some(oneof) }) }
            })
            .collect(),
        vendor_extension: extensions(o),
    }
}

fn response(value: &Value) -> Response {
    let o = fields(value);
    Response {
        description: string(o, "description"),
        schema: nested(o, "schema", |v| {
            let oneof = match fields(v).get("type").and_then(Value::as_str) {
                Some("file") => schema_item::Oneof::FileSchema(file_schema(v)),
                _ => schema_item::Oneof::Schema(schema(v)),
            };
            SchemaItem { oneof: Some(oneof) }
        }),
        headers: nested(o, "headers", |v| Headers {
            additional_properties: fields(v)
                .iter()
                .map(|(name, value)| NamedHeader { name: name.clone(), value: Some(header(value)) })
                .collect(),
        }),
        examples: nested(o, "examples", |v| Examples {
            additional_properties: fields(v)
                .iter()
                .map(|(name, value)| NamedAny { name: name.clone(), value: Some(any_of(value)) })
                .collect(),
        }),
        vendor_extension: extensions(o),
    }
}

fn header(value: &Value) -> Header {
    let o = fields(value);
    Header {
        r#type: string(o, "type"),
        format: string(o, "format"),
        items: nested(o, "items", primitives_items),
        collection_format: string(o, "collectionFormat"),
        default: any(o, "default"),
        maximum: number(o, "maximum"),
        exclusive_maximum: boolean(o, "exclusiveMaximum"),
        minimum: number(o, "minimum"),
        exclusive_minimum: boolean(o, "exclusiveMinimum"),
        max_length: integer(o, "maxLength"),
        min_length: integer(o, "minLength"),
        pattern: string(o, "pattern"),
        max_items: integer(o, "maxItems"),
        min_items: integer(o, "minItems"),
        unique_items: boolean(o, "uniqueItems"),
        r#enum: anys(o, "enum"),
        multiple_of: number(o, "multipleOf"),
        description: string(o, "description"),
        vendor_extension: extensions(o),
    }
}

fn file_schema(value: &Value) -> FileSchema {
    let o = fields(value);
    FileSchema {
        format: string(o, "format"),
        title: string(o, "title"),
        description: string(o, "description"),
        default: any(o, "default"),
        required: strings(o, "required"),
        r#type: string(o, "type"),
        read_only: boolean(o, "readOnly"),
        external_docs: nested(o, "externalDocs", external_docs),
        example: any(o, "example"),
        vendor_extension: extensions(o),
    }
}

/// An object of schemas (`definitions`, `properties`) as named schemas, in order.
fn named_schemas(value: &Value) -> Vec<NamedSchema> {
    fields(value).iter().map(|(name, value)| NamedSchema { name: name.clone(), value: Some(schema(value)) }).collect()
}

fn schema(value: &Value) -> Schema {
    let o = fields(value);
    Schema {
        r#ref: string(o, "$ref"),
        format: string(o, "format"),
        title: string(o, "title"),
        description: string(o, "description"),
        default: any(o, "default"),
        multiple_of: number(o, "multipleOf"),
        maximum: number(o, "maximum"),
        exclusive_maximum: boolean(o, "exclusiveMaximum"),
        minimum: number(o, "minimum"),
        exclusive_minimum: boolean(o, "exclusiveMinimum"),
        max_length: integer(o, "maxLength"),
        min_length: integer(o, "minLength"),
        pattern: string(o, "pattern"),
        max_items: integer(o, "maxItems"),
        min_items: integer(o, "minItems"),
        unique_items: boolean(o, "uniqueItems"),
        max_properties: integer(o, "maxProperties"),
        min_properties: integer(o, "minProperties"),
        required: strings(o, "required"),
        r#enum: anys(o, "enum"),
        additional_properties: o.get("additionalProperties").and_then(additional_properties).map(Box::new),
        r#type: o.get("type").map(|t| TypeItem {
            value: match t {
                Value::Array(types) => types.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
                other => other.as_str().map(str::to_owned).into_iter().collect(),
            },
        }),
        items: o.get("items").map(|items| ItemsItem {
            schema: match items {
                Value::Array(schemas) => schemas.iter().map(schema).collect(),
                single => vec![schema(single)],
            },
        }),
        all_of: o.get("allOf").and_then(Value::as_array).map(|all| all.iter().map(schema).collect()).unwrap_or_default(),
        properties: nested(o, "properties", |v| Properties { additional_properties: named_schemas(v) }),
        discriminator: string(o, "discriminator"),
        read_only: boolean(o, "readOnly"),
        xml: nested(o, "xml", |v| {
            let x = fields(v);
            Xml {
                name: string(x, "name"),
                namespace: string(x, "namespace"),
                prefix: string(x, "prefix"),
                attribute: boolean(x, "attribute"),
                wrapped: boolean(x, "wrapped"),
                vendor_extension: extensions(x),
            }
        }),
        external_docs: nested(o, "externalDocs", external_docs),
        example: any(o, "example"),
        vendor_extension: extensions(o),
    }
}

/// `additionalProperties`: a schema or a boolean.
fn additional_properties(value: &Value) -> Option<AdditionalPropertiesItem> {
    let oneof = match value {
        Value::Bool(allowed) => additional_properties_item::Oneof::Boolean(*allowed),
        Value::Object(_) => additional_properties_item::Oneof::Schema(schema(value)),
        _ => return None,
    };
    Some(AdditionalPropertiesItem { oneof: Some(oneof) })
}
