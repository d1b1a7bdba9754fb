//! The annotations only the server writes, on every kind: the one list of them, and the rule that keeps them the
//! server's. A caller that is not a system user may not set one on create nor change one on update (403, as kcp
//! answers); an update that leaves one out keeps the stored value (a `kubectl replace` of a hand-written object).
//! The server's own writes (no caller: bootstrap, controllers) and system users write them freely.
//!
//! Two server-owned annotations are instead overwritten whatever a client sends, so that an object copied from
//! another workspace can be created: `kcp.io/cluster` (the store sets it, `registry::store::CLUSTER_ANNOTATION`)
//! and a Workspace's `experimental.tenancy.kcp.io/owner` (its strategy, `workspace::OWNER_ANNOTATION`). A space's
//! limits (`quota::LIMIT_ANNOTATIONS`) are the system users' on LogicalClusters (`logical_cluster::LimitsAdmission`).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{Context, Kind, Rules};
use crate::registry::admission::{Admission, Attributes, Operation};
use crate::registry::stored::at;
use crate::registry::{GenericStore, Part, ResourceInfo};
use crate::status::{ApiError, ApiResult};
use crate::apis::kcp::TYPE_ANNOTATION;

pub use crate::apis::kcp::PATH_ANNOTATION;

/// The server-owned annotation keys, named whole.
pub const SERVER_OWNED: [&str; 2] = [PATH_ANNOTATION, TYPE_ANNOTATION];

/// The server-owned annotation prefixes: kcp's internal annotations.
pub const SERVER_OWNED_PREFIXES: [&str; 2] = ["internal.tenancy.kcp.io/", "internal.apis.kcp.io/"];

/// Whether `key` is an annotation only the server writes (through this rule).
pub fn is_server_owned(key: &str) -> bool {
    SERVER_OWNED.contains(&key) || SERVER_OWNED_PREFIXES.iter().any(|prefix| key.starts_with(prefix))
}

/// Every kind: the rule below.
pub const KIND: Kind = Kind::rules(|_: &Context, rules: &mut Rules| {
    rules.admit(Arc::new(ServerAnnotations));
});

/// Refuses a caller's change of a server-owned annotation; keeps those an update leaves out.
pub struct ServerAnnotations;

#[async_trait]
impl Admission for ServerAnnotations {
    fn handles(&self, _resource: &ResourceInfo, operation: Operation) -> bool {
        matches!(operation, Operation::Create | Operation::Update)
    }

    async fn admit(&self, _registry: &GenericStore, _attributes: &Attributes<'_>) -> ApiResult<()> {
        Ok(())
    }

    async fn default(&self, _registry: &GenericStore, attributes: &Attributes<'_>, object: &mut Value) -> ApiResult<()> {
        let Some(caller) = attributes.caller else { return Ok(()) };
        if caller.system || attributes.part != Part::Main {
            return Ok(());
        }
        let old = attributes.old.and_then(|old| at(old, "/metadata/annotations")).and_then(Value::as_object);
        let given = at(object, "/metadata/annotations").and_then(Value::as_object);
        if let Some(key) = given.into_iter().flatten().find(|(key, value)| is_server_owned(key) && old.and_then(|old| old.get(*key)) != Some(*value)).map(|(key, _)| key) {
            let resource = attributes.resource;
            return Err(ApiError::forbidden_object(&resource.group, &resource.plural, attributes.name,
                &format!("the annotation {key} is set by the system and cannot be set or changed by user \"{}\"", caller.user.name)));
        }
        let kept: Vec<(String, Value)> = old.into_iter().flatten()
            .filter(|(key, _)| is_server_owned(key) && given.is_none_or(|given| !given.contains_key(*key)))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        if kept.is_empty() || !object.get("metadata").is_some_and(Value::is_object) {
            return Ok(());
        }
        let metadata = &mut object["metadata"];
        if !metadata.get("annotations").is_some_and(Value::is_object) {
            metadata["annotations"] = json!({});
        }
        for (key, value) in kept {
            metadata["annotations"][key] = value;
        }
        Ok(())
    }
}
