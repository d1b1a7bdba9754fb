//! Serializing the model into the served documents, borrowing from it instead of cloning schemas.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::model::Model;
use super::{refs, swagger, Form, KUBERNETES_VERSION};

/// One served OpenAPI 3.0 document and the hash clients cache it under (`?hash=`, `ETag`).
#[derive(Clone, Debug)]
pub(crate) struct Document {
    pub(crate) body: Bytes,
    pub(crate) hash: String,
}

#[derive(Serialize)]
struct Info {
    title: &'static str,
    version: &'static str,
}

const INFO: Info = Info {
    title: "Kubernetes",
    version: KUBERNETES_VERSION,
};

#[derive(Serialize)]
struct V3Document<'a> {
    openapi: &'static str,
    info: Info,
    paths: &'a Map<String, Value>,
    components: Components<'a>,
    security: Value,
}

#[derive(Serialize)]
struct Components<'a> {
    schemas: BTreeMap<&'a str, &'a Value>,
    #[serde(rename = "securitySchemes")]
    security_schemes: Value,
}

#[derive(Serialize)]
struct V2Document<'a> {
    swagger: &'static str,
    info: Info,
    paths: Map<String, Value>,
    definitions: &'a Map<String, Value>,
    #[serde(rename = "securityDefinitions")]
    security_definitions: Value,
    security: Value,
}

/// Every OpenAPI 3.0 document, each with exactly the definitions its paths reach.
pub(crate) fn v3_documents(model: &Model) -> BTreeMap<String, Document> {
    let mut documents = BTreeMap::new();
    for (key, paths) in &model.documents {
        let reachable = refs::reachable_from_map(paths, &model.definitions, Form::V3.ref_prefix());
        let schemas = reachable
            .iter()
            .filter_map(|name| model.definitions.get_key_value(name.as_str()))
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        let document = V3Document {
            openapi: "3.0.0",
            info: INFO,
            paths,
            components: Components {
                schemas,
                security_schemes: security_schemes(),
            },
            security: json!([{ "BearerToken": [] }]),
        };
        let body = Bytes::from(serde_json::to_vec(&document).unwrap_or_default());
        let hash = super::content_hash(&body);
        documents.insert(key.clone(), Document { body, hash });
    }
    documents
}

/// The Swagger 2.0 document: every path of every document and every definition (in v2 form).
pub(crate) fn v2_document(model: &Model, definitions: &Map<String, Value>) -> Bytes {
    let paths = model
        .documents
        .values()
        .flat_map(|paths| paths.iter())
        .map(|(path, item)| (path.clone(), swagger::path_item_to_v2(item)))
        .collect();
    let document = V2Document {
        swagger: "2.0",
        info: INFO,
        paths,
        definitions,
        security_definitions: security_schemes(),
        security: json!([{ "BearerToken": [] }]),
    };
    Bytes::from(serde_json::to_vec(&document).unwrap_or_default())
}

fn security_schemes() -> Value {
    json!({ "BearerToken": { "type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header" } })
}
