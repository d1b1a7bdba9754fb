//! OpenAPI v2 and v3 documents, generated from the resource table, k8s-openapi's schemas and our extension table.
//!
//! Clients depend on these documents: kubectl finds server-side field validation through the PATCH
//! operation's `fieldValidation` parameter in `/openapi/v3`, client-side apply computes strategic merge
//! patches from the `x-kubernetes-patch-*` extensions, and `kubectl explain` prints the schemas.
//! Nothing here is copied from upstream spec files: schemas come from k8s-openapi's `schemars` feature,
//! paths from `paths.rs`, extensions from `extensions.rs`.

mod documents;
mod extensions;
mod model;
mod parameters;
mod paths;
mod refs;
mod schemas;
mod swagger;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::{json, Map, Value};

use crate::registry::ResourceInfo;
use documents::Document;
pub(crate) use model::definition_name;
pub(crate) use schemas::builtin_definitions;
use model::Model;

/// The Kubernetes version whose API the documents describe (k8s-openapi feature `v1_33`).
const KUBERNETES_VERSION: &str = "v1.33.0";

/// Which document form a schema or reference is written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// Swagger 2.0: `#/definitions/`, `description` beside `$ref`.
    V2,
    /// OpenAPI 3.0: `#/components/schemas/`, `$ref` siblings moved into `allOf`.
    V3,
}

impl Form {
    pub(crate) fn ref_prefix(self) -> &'static str {
        match self {
            Form::V2 => "#/definitions/",
            Form::V3 => "#/components/schemas/",
        }
    }
}

/// Every OpenAPI document the server serves for one resource table.
///
/// Building is free: the model (definitions and paths), the v3 documents and the v2 document are each
/// computed on first use behind a `OnceLock`, because producing all of them takes tens of milliseconds
/// and server startup must not wait for a client that may never ask. Call [`OpenApi::warm`] from a
/// background thread to pay that cost before the first request.
#[derive(Debug)]
pub struct OpenApi {
    resources: Vec<ResourceInfo>,
    extra_definitions: Map<String, Value>,
    model: OnceLock<Model>,
    /// Keyed by the `/openapi/v3/` path: `api`, `api/v1`, `apis`, `apis/apps`, `apis/apps/v1`, ...
    documents: OnceLock<BTreeMap<String, Document>>,
    v2: OnceLock<Bytes>,
    /// The v2 document as gnostic protobuf, built on first request (kubectl asks only to validate on its side).
    v2_protobuf: OnceLock<Bytes>,
}

impl OpenApi {
    /// Documents for `resources`, whose definitions are all built-in (k8s-openapi) types.
    pub fn build(resources: &[ResourceInfo]) -> OpenApi {
        OpenApi::build_with(resources, Map::new())
    }

    /// Documents for `resources`, with `extra_definitions` (OpenAPI 3.0 form, refs to
    /// `#/components/schemas/`), e.g. CRD schemas keyed by their definition names
    /// (`com.example.stable.v1.CronTab`; see `ResourceInfo::definition`).
    /// A resource whose definition is nowhere gets an open object schema so its GVK is still published.
    /// Only resources whose definition is a built-in type offer strategic merge patch.
    pub fn build_with(
        resources: &[ResourceInfo],
        extra_definitions: Map<String, Value>,
    ) -> OpenApi {
        OpenApi {
            resources: resources.to_vec(),
            extra_definitions,
            model: OnceLock::new(),
            documents: OnceLock::new(),
            v2: OnceLock::new(),
            v2_protobuf: OnceLock::new(),
        }
    }

    /// Computes every document now (e.g. on a background thread right after startup).
    pub fn warm(&self) {
        let _ = self.v3_documents();
        let _ = self.v2_json();
    }

    /// The Swagger 2.0 document served at `/openapi/v2`.
    pub fn v2_json(&self) -> Bytes {
        let v2 = self.v2.get_or_init(|| {
            let definitions =
                model::all_definitions(&self.resources, &self.extra_definitions, Form::V2);
            documents::v2_document(self.model(), &definitions)
        });
        v2.clone()
    }

    /// The Swagger 2.0 document as gnostic's `openapi.v2.Document` protobuf, which kubectl and client-go read
    /// from `/openapi/v2` (client-side validation, `kubectl explain` on old servers).
    pub fn v2_protobuf(&self) -> Bytes {
        let v2 = self.v2_protobuf.get_or_init(|| {
            let json: Value = serde_json::from_slice(&self.v2_json()).unwrap_or(Value::Null);
            let document = crate::protobuf::openapi_v2::document_from_json(&json);
            Bytes::from(prost::Message::encode_to_vec(&document))
        });
        v2.clone()
    }

    /// A strong validator of a document's bytes (`ETag`).
    pub fn etag(bytes: &[u8]) -> String {
        format!("\"{}\"", content_hash(bytes))
    }

    /// The `/openapi/v3` index: every document path with its hash-pinned URL.
    pub fn v3_index(&self) -> Value {
        let paths: Map<String, Value> = self
            .v3_documents()
            .iter()
            .map(|(path, doc)| {
                (
                    path.clone(),
                    json!({ "serverRelativeURL": format!("/openapi/v3/{path}?hash={}", doc.hash) }),
                )
            })
            .collect();
        json!({ "paths": paths })
    }

    /// The OpenAPI 3.0 document at `/openapi/v3/<path>` (`api/v1`, `apis/apps/v1`, ...) and its hash.
    pub fn v3_document(&self, path: &str) -> Option<(Bytes, String)> {
        let doc = self.v3_documents().get(path.trim_matches('/'))?;
        Some((doc.body.clone(), doc.hash.clone()))
    }

    /// Every definition in OpenAPI 3.0 form (refs `#/components/schemas/<name>`), extensions included.
    pub fn definitions(&self) -> &Map<String, Value> {
        &self.model().definitions
    }

    fn model(&self) -> &Model {
        self.model
            .get_or_init(|| Model::build(&self.resources, &self.extra_definitions))
    }

    fn v3_documents(&self) -> &BTreeMap<String, Document> {
        self.documents
            .get_or_init(|| documents::v3_documents(self.model()))
    }
}

/// The v3 definitions exactly as [`OpenApi::definitions`] serves them for `resources` and `extra_definitions`,
/// generated afresh and owned by the caller: what the built-in types snapshot server-side apply reads is made
/// from (`kinds::tests::builtin_types_snapshot_is_up_to_date`), and what the fuzz targets check bodies against.
pub(crate) fn fresh_definitions(resources: &[ResourceInfo], extra_definitions: &Map<String, Value>) -> Map<String, Value> {
    model::with_extensions(schemas::generate(Form::V3), resources, extra_definitions, Form::V3)
}

/// FNV-1a (128 bit) of a document, as 32 upper-case hex digits: stable across builds and Rust releases.
fn content_hash(bytes: &[u8]) -> String {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013b;
    let hash = bytes.iter().fold(OFFSET, |hash, byte| {
        (hash ^ u128::from(*byte)).wrapping_mul(PRIME)
    });
    format!("{hash:032X}")
}
