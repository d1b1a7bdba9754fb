//! Turning OpenAPI 3.0 path items into Swagger 2.0 ones, so paths are written once (in `paths.rs`).

use serde_json::{json, Map, Value};

use super::refs::rewrite_prefix;

/// Converts one OpenAPI 3.0 path item (refs to `#/components/schemas/`) into Swagger 2.0 form.
pub(crate) fn path_item_to_v2(item: &Value) -> Value {
    let mut converted = Map::new();
    if let Some(item) = item.as_object() {
        for (key, value) in item {
            let value = match key.as_str() {
                "parameters" => convert_parameters(value),
                _ => operation_to_v2(value),
            };
            converted.insert(key.clone(), value);
        }
    }
    let mut converted = Value::Object(converted);
    rewrite_prefix(&mut converted, "#/components/schemas/", "#/definitions/");
    converted
}

/// Swagger 2.0 puts `type` on the parameter itself instead of in a `schema`.
fn convert_parameters(parameters: &Value) -> Value {
    let converted = parameters
        .as_array()
        .into_iter()
        .flatten()
        .map(|parameter| {
            let mut parameter = parameter.as_object().cloned().unwrap_or_default();
            if let Some(Value::Object(schema)) = parameter.remove("schema") {
                parameter.extend(schema);
            }
            Value::Object(parameter)
        });
    Value::Array(converted.collect())
}

fn operation_to_v2(operation: &Value) -> Value {
    let Some(operation) = operation.as_object() else {
        return operation.clone();
    };
    let mut converted = Map::new();
    let mut parameters = operation
        .get("parameters")
        .map(convert_parameters)
        .unwrap_or_else(|| json!([]));
    for (key, value) in operation {
        match key.as_str() {
            "parameters" => {}
            "requestBody" => {
                let (body, consumes) = request_body_to_v2(value);
                if let Some(list) = parameters.as_array_mut() {
                    list.push(body);
                }
                converted.insert("consumes".into(), consumes);
            }
            "responses" => {
                let (responses, produces) = responses_to_v2(value);
                converted.insert("responses".into(), responses);
                converted.insert("produces".into(), produces);
            }
            _ => {
                converted.insert(key.clone(), value.clone());
            }
        }
    }
    if parameters.as_array().is_some_and(|list| !list.is_empty()) {
        converted.insert("parameters".into(), parameters);
    }
    converted
        .entry("schemes")
        .or_insert_with(|| json!(["https"]));
    Value::Object(converted)
}

/// The request body becomes an `in: body` parameter; its media types become `consumes`.
fn request_body_to_v2(body: &Value) -> (Value, Value) {
    let content = body.get("content").and_then(Value::as_object);
    let consumes: Vec<&String> = content.map(|c| c.keys().collect()).unwrap_or_default();
    let schema = content
        .and_then(|c| c.values().next())
        .and_then(|media| media.get("schema"))
        .cloned();
    let mut parameter = json!({ "name": "body", "in": "body", "required": body.get("required").cloned().unwrap_or(json!(false)) });
    if let Some(schema) = schema {
        parameter["schema"] = schema;
    }
    (parameter, json!(consumes))
}

/// Responses keep one schema each; their media types become `produces`.
fn responses_to_v2(responses: &Value) -> (Value, Value) {
    let mut converted = Map::new();
    let mut produces: Vec<String> = Vec::new();
    for (code, response) in responses.as_object().into_iter().flatten() {
        let mut v2 =
            json!({ "description": response.get("description").cloned().unwrap_or(json!("")) });
        let content = response.get("content").and_then(Value::as_object);
        for media_type in content.into_iter().flat_map(|c| c.keys()) {
            if !produces.contains(media_type) {
                produces.push(media_type.clone());
            }
        }
        if let Some(schema) = content
            .and_then(|c| c.values().next())
            .and_then(|media| media.get("schema"))
        {
            v2["schema"] = schema.clone();
        }
        converted.insert(code.clone(), v2);
    }
    (Value::Object(converted), json!(produces))
}
