//! CRD conversion webhooks (`spec.conversion.strategy: Webhook`): one `ConversionReview`
//! (`apiextensions.k8s.io/v1`) per batch of objects, its answer checked as kube-apiserver checks it (the request's
//! `uid`, `result.status: Success`, as many objects as sent, each of the desired `apiVersion`, with the kind,
//! name, namespace and uid it had, and of its metadata only labels and annotations taken from the answer). Any
//! failure is a 503 naming the CRD and its webhook, never a half-converted answer.
//!
//! Whose webhook: the definition serving the resource in the objects' own space. A tenant's CRD converts with
//! its own webhook, resolved in its own space, and only that space's objects reach it; a system CRD shared into
//! tenants converts with the system space's webhook (the platform's). An APIExport's schema does not convert.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kspaces_crd::definition::Conversion;
use kspaces_crd::Definition;
use kspaces_storage::{ApiIdentity, SpaceName};
use serde_json::{json, Map, Value};

use crate::kinds::admission_webhook::endpoint::{Client, Endpoint, Target};
use crate::registry::{GenericStore, ResourceInfo, Spaces};
use crate::resolver::{shared_identity, Resolver};
use crate::status::{ApiError, ApiResult};

/// How long one conversion call may take: kube-apiserver's fixed bound (there is no knob for it).
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// Each CRD's (space, name) `clientConfig`, as given and parsed.
type Endpoints = HashMap<(SpaceName, String), (Value, Arc<Endpoint>)>;

/// Calls CRDs' conversion webhooks; their `clientConfig` parsed once per change.
pub struct Converter {
    client: Client,
    resolver: Arc<Resolver>,
    endpoints: Mutex<Endpoints>,
}

impl Converter {
    pub fn new(client: Client, resolver: Arc<Resolver>) -> Converter {
        Converter { client, resolver, endpoints: Mutex::default() }
    }

    /// Converts `objects` of `space` to `resource`'s version, or to the storage version (`to_storage`).
    pub async fn convert(&self, registry: &GenericStore, resource: &ResourceInfo, space: &SpaceName, objects: &mut [Value], to_storage: bool) -> ApiResult<()> {
        let (definition, identity) = self.serving(resource, space)?;
        let version = match to_storage {
            true => definition.storage_version().map(|v| v.name.clone()).unwrap_or_default(),
            false => resource.version.clone(),
        };
        let desired = format!("{}/{version}", definition.group);
        let pending: Vec<usize> = (0..objects.len()).filter(|i| objects[*i].get("apiVersion").and_then(Value::as_str) != Some(desired.as_str())).collect();
        if pending.is_empty() {
            return Ok(());
        }
        let Conversion::Webhook { client_config } = &definition.conversion else {
            for i in pending {
                objects[i]["apiVersion"] = json!(desired);
            }
            return Ok(());
        };
        let home = match &identity {
            ApiIdentity::Local => space.clone(),
            shared if *shared == shared_identity(&definition) => SpaceName::system(),
            _ => return Err(unavailable(&definition, "an APIExport's schema does not call conversion webhooks")),
        };
        let endpoint = self.endpoint(&home, &definition.name, client_config);
        let uid = uuid::Uuid::new_v4().to_string();
        let sent: Vec<&Value> = pending.iter().map(|i| &objects[*i]).collect();
        let review = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": sent},
        });
        let failed = |why: String| unavailable(&definition, &format!("conversion webhook {} failed: {why}", describe(&endpoint)));
        let body = self.client.post(registry, &endpoint, &review, TIMEOUT).await.map_err(failed)?;
        let converted = check_answer(&body, &uid, &desired, &sent).map_err(failed)?;
        for (i, object) in pending.into_iter().zip(converted) {
            objects[i] = object;
        }
        Ok(())
    }

    /// The definition serving `resource` in `space` (a list across spaces holds other spaces' objects than its
    /// own row's), and the identity it serves it under there.
    fn serving(&self, resource: &ResourceInfo, space: &SpaceName) -> ApiResult<(Arc<Definition>, ApiIdentity)> {
        let row = self.resolver.lookup(&Spaces::One(space.clone()), &resource.group, &resource.version, &resource.plural);
        let custom = row.as_ref().and_then(|r| r.custom.clone()).or_else(|| resource.custom.clone().filter(|c| c.identity != ApiIdentity::Local));
        let custom = custom.ok_or_else(|| ApiError::new(503, "ServiceUnavailable", format!("{}.{} is not served in this space", resource.plural, resource.group)))?;
        Ok((custom.definition.clone(), custom.identity.clone()))
    }

    /// The parsed `clientConfig` of CRD `name` of `space` (parsed again when it changed).
    fn endpoint(&self, space: &SpaceName, name: &str, client_config: &Value) -> Arc<Endpoint> {
        let mut endpoints = self.endpoints.lock().unwrap_or_else(|e| e.into_inner());
        let key = (space.clone(), name.to_owned());
        if let Some((config, endpoint)) = endpoints.get(&key) {
            if config == client_config {
                return endpoint.clone();
            }
        }
        let endpoint = Arc::new(Endpoint::parse(client_config, space));
        endpoints.insert(key, (client_config.clone(), endpoint.clone()));
        endpoint
    }
}

fn unavailable(definition: &Definition, why: &str) -> ApiError {
    ApiError::new(503, "ServiceUnavailable", format!("conversion of {} objects failed: {why}", definition.name))
}

/// How a message names the webhook: its URL or its service.
fn describe(endpoint: &Endpoint) -> String {
    match &endpoint.target {
        Target::Url(url) => format!("{:?}", url.as_str()),
        Target::Service { namespace, name, port, path } => format!("\"{name}.{namespace}.svc:{port}{path}\""),
        Target::Broken(why) => format!("(unusable: {why})"),
    }
}

/// The converted objects of a `ConversionReview` answer, checked against what was sent.
fn check_answer(body: &[u8], uid: &str, desired: &str, sent: &[&Value]) -> Result<Vec<Value>, String> {
    let review: Value = serde_json::from_slice(body).map_err(|e| format!("the answer is not a ConversionReview: {e}"))?;
    let response = review.get("response").filter(|r| r.is_object()).ok_or("the answer has no response")?;
    let answered = response.get("uid").and_then(Value::as_str).unwrap_or_default();
    if answered != uid {
        return Err(format!("expected response.uid={uid:?}, got {answered:?}"));
    }
    let result = response.get("result").unwrap_or(&Value::Null);
    if result.get("status").and_then(Value::as_str) != Some("Success") {
        let message = result.get("message").and_then(Value::as_str).unwrap_or("result.status is not Success");
        return Err(format!("the webhook refused: {message}"));
    }
    let converted = response.get("convertedObjects").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    if converted.len() != sent.len() {
        return Err(format!("returned {} objects, expected {}", converted.len(), sent.len()));
    }
    converted.iter().zip(sent).enumerate().map(|(i, (out, original))| checked(out, original, desired).map_err(|why| format!("converted object [{i}]: {why}"))).collect()
}

/// One converted object: of the desired version, the same kind, name, namespace and uid; its metadata the
/// original's but for labels and annotations (kube's `restoreObjectMeta`).
fn checked(out: &Value, original: &Value, desired: &str) -> Result<Value, String> {
    let Some(map) = out.as_object() else { return Err("is not an object".into()) };
    let api_version = map.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    if api_version != desired {
        return Err(format!("invalid apiVersion {api_version:?}, expected {desired:?}"));
    }
    if map.get("kind") != original.get("kind") {
        return Err(format!("must have the same kind: {} != {}", original.get("kind").unwrap_or(&Value::Null), map.get("kind").unwrap_or(&Value::Null)));
    }
    let metadata = match map.get("metadata") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(metadata)) => metadata.clone(),
        Some(_) => return Err("metadata must be an object".into()),
    };
    let before = original.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    for field in ["name", "namespace", "uid"] {
        if metadata.get(field) != before.get(field) {
            return Err(format!("must have the same {field}: {} != {}", before.get(field).unwrap_or(&Value::Null), metadata.get(field).unwrap_or(&Value::Null)));
        }
    }
    let mut restored = before;
    for field in ["labels", "annotations"] {
        match metadata.get(field) {
            None | Some(Value::Null) => {
                restored.remove(field);
            }
            Some(Value::Object(items)) if items.values().all(Value::is_string) => {
                restored.insert(field.into(), Value::Object(items.clone()));
            }
            Some(_) => return Err(format!("metadata.{field} must be a map of strings")),
        }
    }
    let mut object = map.clone();
    object.insert("metadata".into(), Value::Object(restored));
    Ok(Value::Object(object))
}
