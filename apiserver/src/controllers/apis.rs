//! The APIs controller: kcp's APIExport and APIBinding controllers in one queue.
//!
//! - An APIExport gets its identity: the namespace `kcp-system` and the secret `kcp-system/<export>` holding a
//!   random key (unless `spec.identity.secretRef` names one), `spec.identity.secretRef`, and
//!   `status.identityHash`, the hex SHA-256 of the key, written once (a later mismatch is `IdentityValid=False`).
//!   It also gets its APIExportEndpointSlice, named after it and owned by it, unless annotated
//!   `apiexports.apis.kcp.io/skip-endpointslice`.
//! - An APIBinding is moved from `Binding` to `Bound` once its export and the export's schemas exist and have an
//!   identity: `status.boundResources` names each schema (name, uid, identity hash), which the resolver serves in
//!   the binding's workspace. A resource that collides (the workspace's own CRD, a forced system CRD, another
//!   binding) is not bound: `BindingUpToDate=False` with reason `NamingConflicts` says which; a binding bound
//!   before keeps what it bound. The claims it accepts that its export makes are `status.appliedPermissionClaims`.
//! - When a binding's applied claims change (or it goes), the objects they cover are written again so that their
//!   claim labels follow (`claims.rs`).
//! - A new workspace whose type has `defaultAPIBindings` waits in `Initializing` for kcp's `system:apibindings`
//!   initializer, which is removed here once every binding in it is `Bound`.
//!
//! It learns of work from the registry's write observer (`ApisQueue`): every export and binding written, and, for
//! a binding, every write of its export, of a schema in its export's workspace, of a CRD of its workspace (or a
//! system CRD) and of another binding of its workspace (which can settle or make a conflict); at startup from the
//! priming scan of exports and bindings; and the bindings not bound yet are looked at again every `RESYNC`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use kspaces_storage::{Revision, SpaceName};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::sync::Notify;

use crate::claims::{self, Claim, Claims};
use crate::kinds::api_binding::{self, export_of};
use crate::kinds::api_export::{self, identity_hash, IDENTITY_KEY, IDENTITY_NAMESPACE};
use crate::kinds::api_export_endpoint_slice;
use crate::kinds::logical_cluster::{BOUND_RESOURCES, LOGICAL_CLUSTER_NAME};
use crate::apis::lifecycle::Lifecycle;
use crate::tenancy::types::API_BINDINGS_INITIALIZER;
use crate::registry::observe::WriteObserver;
use crate::registry::store::cluster_name;
use crate::registry::{is_deleting, now, GenericStore, Part, ResourceInfo, ResourceTable, Scope, WriteContext, SERVER_MANAGER};
use crate::resolver::Resolver;
use crate::status::{ApiError, ApiResult};
use crate::tenancy::Tree;

const GROUP: &str = api_export::GROUP;
/// How often every binding is looked at again (an export's workspace made after the binding, say).
const RESYNC: Duration = Duration::from_secs(10);
/// The annotation that opts an export out of its automatic endpoint slice.
const SKIP_ENDPOINT_SLICE: &str = "apiexports.apis.kcp.io/skip-endpointslice";

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Work {
    Export(SpaceName, String),
    Binding(SpaceName, String),
    /// The claim labels of one resource's objects in one workspace: (group, resource, identity hash).
    Relabel(SpaceName, String, String, String),
    /// A workspace held by `system:apibindings`: released once its bindings are bound.
    Release(SpaceName),
}

/// The exports and bindings to look at, fed by the registry's write observer.
#[derive(Debug, Default)]
pub struct ApisQueue {
    state: Mutex<QueueState>,
    wake: Notify,
}

#[derive(Debug, Default)]
struct QueueState {
    dirty: BTreeSet<Work>,
    /// Every binding there is (what an export, schema or CRD write may change), by (space, name).
    bindings: BTreeMap<(SpaceName, String), Known>,
    /// The claims each binding applied at its last write (a change relabels the objects they cover).
    claims: HashMap<(SpaceName, String), Vec<Claim>>,
}

/// What the queue knows of a binding at its last write.
#[derive(Debug)]
struct Known {
    /// Its export's logical cluster and name, once it was bound (`None`: not resolved yet).
    export: Option<(String, String)>,
    bound: bool,
}

impl QueueState {
    /// Marks the bindings `which` picks.
    fn mark(&mut self, which: impl Fn(&SpaceName, &Known) -> bool) {
        let picked: Vec<Work> = self.bindings.iter().filter(|((space, _), known)| which(space, known))
            .map(|((space, name), _)| Work::Binding(space.clone(), name.clone())).collect();
        self.dirty.extend(picked);
    }
}

impl ApisQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn take(&self) -> Vec<Work> {
        std::mem::take(&mut self.lock().dirty).into_iter().collect()
    }

    /// The periodic look at bindings not bound yet (an export's workspace made after them, say); bound ones are
    /// looked at when something they depend on is written.
    fn unbound_bindings(&self) {
        self.lock().mark(|_, known| !known.bound || known.export.is_none());
    }
}

impl WriteObserver for ApisQueue {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[(GROUP, "APIExport"), (GROUP, "APIBinding")]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, _revision: Revision) {
        let mut state = self.lock();
        if resource.is(GROUP, api_binding::NAME) {
            let key = (space.clone(), name.to_owned());
            let claims = object.map(Claims::of_binding).unwrap_or_default();
            let before = state.claims.get(&key).cloned().unwrap_or_default();
            if claims != before {
                let changed: BTreeSet<(String, String, String)> = claims.iter().chain(&before)
                    .map(|c| (c.group.clone(), c.resource.clone(), c.identity.clone())).collect();
                for (group, resource, identity) in changed {
                    state.dirty.insert(Work::Relabel(space.clone(), group, resource, identity));
                }
            }
            if claims.is_empty() {
                state.claims.remove(&key);
            } else {
                state.claims.insert(key.clone(), claims);
            }
            // The other bindings of the space: one that goes may free a name another waits for.
            state.mark(|other, _| other == space);
            match object {
                Some(binding) => {
                    let text = |pointer: &str| binding.pointer(pointer).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
                    let export = text("/status/apiExportClusterName").zip(text("/spec/reference/export/name"));
                    let bound = text("/status/phase").as_deref() == Some("Bound");
                    state.bindings.insert(key, Known { export, bound });
                    state.dirty.insert(Work::Binding(space.clone(), name.to_owned()));
                    if bound {
                        state.dirty.insert(Work::Release(space.clone()));
                    }
                }
                None => {
                    state.bindings.remove(&key);
                    state.dirty.remove(&Work::Binding(space.clone(), name.to_owned()));
                }
            }
        } else if resource.is("core.kcp.io", "LogicalCluster") {
            if !object.is_some_and(|lc| Lifecycle::Initializing.entries(lc).contains(&API_BINDINGS_INITIALIZER)) {
                return;
            }
            state.dirty.insert(Work::Release(space.clone()));
        } else if resource.is(GROUP, api_export::NAME) {
            if object.is_some() {
                state.dirty.insert(Work::Export(space.clone(), name.to_owned()));
            }
            // The bindings to it, and those not resolved yet.
            let cluster = cluster_name(space);
            state.mark(|_, known| known.export.as_ref().is_none_or(|(c, n)| c == cluster && n == name));
        } else if resource.is(GROUP, "APIResourceSchema") {
            let cluster = cluster_name(space);
            state.mark(|_, known| known.export.as_ref().is_none_or(|(c, _)| c == cluster));
            if state.dirty.is_empty() {
                return;
            }
        } else if resource.is("apiextensions.k8s.io", "CustomResourceDefinition") {
            // A CRD collides with the bindings of its space; root's (forced ones) with every binding.
            state.mark(|other, _| space.is_system() || other == space);
            if state.dirty.is_empty() {
                return;
            }
        } else {
            return;
        }
        drop(state);
        self.wake.notify_one();
    }
}

/// The APIs controller: what it reads and writes through.
#[derive(Clone)]
pub struct ApisController {
    pub registry: GenericStore,
    pub resources: ResourceTable,
    /// Schemas compiled, bound resources and CRDs (for conflicts).
    pub resolver: Arc<Resolver>,
    /// Export paths to logical clusters.
    pub tree: Arc<Tree>,
    /// The accepted claims (which labels the claimed objects carry).
    pub claims: Arc<Claims>,
    pub queue: Arc<ApisQueue>,
}

impl ApisController {
    /// Runs forever: the queue as soon as it has work, every binding again every `RESYNC`.
    pub async fn run(self) {
        let mut resync = tokio::time::interval(RESYNC);
        loop {
            tokio::select! {
                _ = resync.tick() => self.queue.unbound_bindings(),
                _ = self.queue.wake.notified() => {}
            }
            // Exports first: a binding waits for its export's identity.
            let mut work = self.queue.take();
            work.sort();
            for item in work {
                let done = match &item {
                    Work::Export(space, name) => self.export(space, name).await,
                    Work::Binding(space, name) => self.binding(space, name).await,
                    Work::Relabel(space, group, resource, identity) => self.relabel(space, group, resource, identity).await,
                    Work::Release(space) => self.release(space).await,
                };
                match done {
                    // A conflict or a passing failure is tried again; an object the server refuses (invalid,
                    // forbidden, gone) stays refused until it is written again, which queues it anew.
                    Err(err) if err.code >= 500 || err.code == 409 || err.code == 429 => {
                        tracing::warn!(%err, ?item, "APIs controller");
                        self.queue.lock().dirty.insert(item);
                    }
                    Err(err) => tracing::warn!(%err, ?item, "APIs controller: not retried until the object changes"),
                    Ok(()) => {}
                }
            }
        }
    }

    fn row(&self, group: &str, kind: &str) -> ApiResult<Arc<ResourceInfo>> {
        self.resources.by_kind(group, kind).cloned().ok_or_else(|| ApiError::internal(format!("no {kind} resource")))
    }

    /// Object `name`, unless it is gone or being deleted (nothing left to do for it).
    async fn live(&self, row: &ResourceInfo, scope: &Scope, name: &str) -> ApiResult<Option<Value>> {
        match self.registry.get(row, scope, name).await {
            Ok(object) if !is_deleting(&object) => Ok(Some(object)),
            Ok(_) | Err(ApiError { code: 404, .. }) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Gives an export its identity and its endpoint slice.
    pub async fn export(&self, space: &SpaceName, name: &str) -> ApiResult<()> {
        let exports = self.row(GROUP, api_export::NAME)?;
        let scope = Scope::one(space.clone(), None);
        let Some(export) = self.live(&exports, &scope, name).await? else { return Ok(()) };
        let text = |pointer: &str| export.pointer(pointer).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
        let secret_namespace = text("/spec/identity/secretRef/namespace").unwrap_or_else(|| IDENTITY_NAMESPACE.to_owned());
        // No secret named: the server's own, made on first need.
        let named = text("/spec/identity/secretRef/name");
        let secret_name = named.clone().unwrap_or_else(|| name.to_owned());
        let key = self.identity_key(space, &secret_namespace, &secret_name, named.is_none()).await?;
        let hash = key.map(|key| format!("{:x}", Sha256::digest(&key)));
        let write = WriteContext::server(SERVER_MANAGER, "");
        if named.is_none() {
            self.registry.guaranteed_update(&exports, &scope, name, Part::Main, &write, |old| {
                let mut new = old.clone();
                new["spec"]["identity"] = json!({"secretRef": {"namespace": secret_namespace, "name": secret_name}});
                Ok(new)
            }).await?;
        }
        let (identity_condition, status_hash) = match (&hash, text("/status/identityHash")) {
            (None, stored) => (condition("IdentityValid", false, "IdentityVerificationFailed",
                &format!("identity secret {secret_namespace}/{secret_name} not found or without a key")), stored),
            (Some(hash), Some(stored)) if *hash != stored => (condition("IdentityValid", false, "IdentityVerificationFailed",
                &format!("hash mismatch: identity secret hash {hash:?} must match status.identityHash {stored:?}")), Some(stored)),
            (Some(hash), _) => (condition("IdentityValid", true, "", ""), Some(hash.clone())),
        };
        let urls = condition("VirtualWorkspaceURLsReady", true, "", "");
        let status_write = WriteContext::server(SERVER_MANAGER, "status");
        self.registry.guaranteed_update(&exports, &scope, name, Part::Status, &status_write, |old| {
            let mut new = old.clone();
            if !new.get("status").is_some_and(Value::is_object) {
                new["status"] = json!({});
            }
            if let Some(hash) = &status_hash {
                new["status"]["identityHash"] = json!(hash);
            }
            set_conditions(&mut new, &[identity_condition.clone(), urls.clone()]);
            Ok(new)
        }).await?;
        if export.pointer(&format!("/metadata/annotations/{}", SKIP_ENDPOINT_SLICE.replace('/', "~1"))).is_none() {
            self.endpoint_slice(space, name, &export).await?;
        }
        Ok(())
    }

    /// The identity key in secret `namespace/name` of `space`, made (with its namespace) when `make` and missing.
    async fn identity_key(&self, space: &SpaceName, namespace: &str, name: &str, make: bool) -> ApiResult<Option<Vec<u8>>> {
        let secrets = self.row("", "Secret")?;
        let scope = Scope::one(space.clone(), Some(namespace.to_owned()));
        let secret = match self.registry.get(&secrets, &scope, name).await {
            Ok(secret) => secret,
            Err(ApiError { code: 404, .. }) if make => {
                let namespaces = self.row("", "Namespace")?;
                let write = WriteContext::server(SERVER_MANAGER, "");
                let namespace_object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
                match self.registry.create(&namespaces, &Scope::one(space.clone(), None), namespace_object, &write).await {
                    Ok(_) | Err(ApiError { code: 409, .. }) => {}
                    Err(err) => return Err(err),
                }
                let key = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>());
                let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
                    "type": "Opaque", "data": {IDENTITY_KEY: base64::engine::general_purpose::STANDARD.encode(key.as_bytes())}});
                match self.registry.create(&secrets, &scope, secret, &write).await {
                    Ok(secret) => secret,
                    Err(ApiError { code: 409, .. }) => self.registry.get(&secrets, &scope, name).await?,
                    Err(err) => return Err(err),
                }
            }
            Err(ApiError { code: 404, .. }) => return Ok(None),
            Err(err) => return Err(err),
        };
        let data = secret.pointer(&format!("/data/{IDENTITY_KEY}")).and_then(Value::as_str);
        Ok(data.and_then(|d| base64::engine::general_purpose::STANDARD.decode(d).ok()).filter(|k| !k.is_empty()))
    }

    /// The export's own endpoint slice, made once and owned by the export.
    async fn endpoint_slice(&self, space: &SpaceName, name: &str, export: &Value) -> ApiResult<()> {
        let slices = self.row(GROUP, api_export_endpoint_slice::NAME)?;
        let scope = Scope::one(space.clone(), None);
        match self.registry.get(&slices, &scope, name).await {
            Ok(_) => return Ok(()),
            Err(ApiError { code: 404, .. }) => {}
            Err(err) => return Err(err),
        }
        let uid = export.pointer("/metadata/uid").cloned().unwrap_or(Value::Null);
        let slice = json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": api_export_endpoint_slice::NAME,
            "metadata": {"name": name, "ownerReferences": [{"apiVersion": "apis.kcp.io/v1alpha1", "kind": api_export::NAME, "name": name, "uid": uid}]},
            "spec": {"export": {"path": self.tree.cluster(space).map(|n| n.path).unwrap_or_default(), "name": name}}});
        match self.registry.create(&slices, &scope, slice, &WriteContext::server(SERVER_MANAGER, "")).await {
            Ok(_) | Err(ApiError { code: 409, .. }) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// Removes `system:apibindings` from a workspace's initializers once every binding in it is `Bound`.
    pub async fn release(&self, space: &SpaceName) -> ApiResult<()> {
        let logical_clusters = self.row("core.kcp.io", "LogicalCluster")?;
        let scope = Scope::one(space.clone(), None);
        let held = |lc: &Value| Lifecycle::Initializing.entries(lc).contains(&API_BINDINGS_INITIALIZER);
        match self.registry.get(&logical_clusters, &scope, LOGICAL_CLUSTER_NAME).await {
            Ok(lc) if held(&lc) => {}
            Ok(_) | Err(ApiError { code: 404, .. }) => return Ok(()),
            Err(err) => return Err(err),
        }
        let bindings = self.row(GROUP, api_binding::NAME)?;
        let (items, _) = self.registry.list(&bindings, &scope, &Default::default()).await?;
        if items.iter().any(|b| b.pointer("/status/phase").and_then(Value::as_str) != Some("Bound")) {
            return Ok(());
        }
        let write = WriteContext::server(SERVER_MANAGER, "status");
        self.registry.guaranteed_update(&logical_clusters, &scope, LOGICAL_CLUSTER_NAME, Part::Status, &write, |old| {
            let mut new = old.clone();
            if let Some(list) = new.pointer_mut("/status/initializers").and_then(Value::as_array_mut) {
                list.retain(|i| i != API_BINDINGS_INITIALIZER);
            }
            Ok(new)
        }).await.map(drop)
    }

    /// Writes again every object of one claimed resource in `space` whose claim labels are not what the accepted
    /// claims say (the write's `ClaimLabels` rule sets them).
    pub async fn relabel(&self, space: &SpaceName, group: &str, resource: &str, identity: &str) -> ApiResult<()> {
        let row = if identity.is_empty() {
            self.resources.all().iter().find(|r| r.group == group && r.plural == resource && r.custom.is_none()).cloned()
        } else {
            self.resolver.identity_row(identity, group, resource)
        };
        let Some(row) = row else { return Ok(()) };
        let (items, _) = self.registry.reader().list(&row, &Scope::one(space.clone(), None), &Default::default()).await?;
        let write = WriteContext::server(SERVER_MANAGER, "");
        for mut item in items {
            let wanted = self.claims.labels(space, &row, &item);
            if !Claims::relabel(&mut item, &wanted) {
                continue;
            }
            let text = |pointer: &str| item.pointer(pointer).and_then(Value::as_str).map(str::to_owned);
            let Some(name) = text("/metadata/name") else { continue };
            let scope = Scope::one(space.clone(), text("/metadata/namespace").filter(|_| row.namespaced));
            match self.registry.guaranteed_update(&row, &scope, &name, Part::Main, &write, |old| Ok(old.clone())).await {
                Ok(_) | Err(ApiError { code: 404 | 409, .. }) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// Moves a binding towards `Bound` (see the module's doc).
    pub async fn binding(&self, space: &SpaceName, name: &str) -> ApiResult<()> {
        let bindings = self.row(GROUP, api_binding::NAME)?;
        let scope = Scope::one(space.clone(), None);
        let Some(binding) = self.live(&bindings, &scope, name).await? else { return Ok(()) };
        let status = self.binding_status(space, name, &binding).await?;
        self.retain(space, &status).await?;
        let write = WriteContext::server(SERVER_MANAGER, "status");
        let result = self.registry.guaranteed_update(&bindings, &scope, name, Part::Status, &write, |old| {
            let mut new = old.clone();
            let mut fresh = status.clone();
            let conditions: Vec<Value> = fresh.get("conditions").and_then(Value::as_array).cloned().unwrap_or_default();
            if let Some(map) = fresh.as_object_mut() {
                map.remove("conditions");
            }
            let mut merged = old.get("status").filter(|s| s.is_object()).cloned().unwrap_or_else(|| json!({}));
            if let (Some(merged), Some(fresh)) = (merged.as_object_mut(), fresh.as_object()) {
                for (key, value) in fresh {
                    merged.insert(key.clone(), value.clone());
                }
            }
            new["status"] = merged;
            set_conditions(&mut new, &conditions);
            Ok(new)
        }).await;
        match result {
            Ok(_) | Err(ApiError { code: 404, .. }) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// Records the resources a binding binds in its space's LogicalCluster (`status.boundResources`), before the
    /// binding says so: objects made through them are found when the space is emptied, even once the binding is
    /// gone.
    async fn retain(&self, space: &SpaceName, status: &Value) -> ApiResult<()> {
        let cluster = status.get("apiExportClusterName").and_then(Value::as_str).unwrap_or_default();
        let entries: Vec<Value> = status.get("boundResources").and_then(Value::as_array).into_iter().flatten().map(|r| {
            json!({"group": r["group"], "resource": r["resource"], "schema": r["schema"]["name"], "schemaCluster": cluster,
                "UID": r["schema"]["UID"], "identityHash": r["schema"]["identityHash"]})
        }).collect();
        if entries.is_empty() {
            return Ok(());
        }
        let logical_clusters = self.row("core.kcp.io", "LogicalCluster")?;
        let scope = Scope::one(space.clone(), None);
        let current = self.registry.get(&logical_clusters, &scope, LOGICAL_CLUSTER_NAME).await?;
        let held = |lc: &Value| lc.pointer(BOUND_RESOURCES).and_then(Value::as_array).cloned().unwrap_or_default();
        if entries.iter().all(|e| held(&current).contains(e)) {
            return Ok(());
        }
        let write = WriteContext::server(SERVER_MANAGER, "status");
        self.registry.guaranteed_update(&logical_clusters, &scope, LOGICAL_CLUSTER_NAME, Part::Status, &write, |old| {
            let mut new = old.clone();
            let mut list = held(old);
            list.extend(entries.iter().filter(|e| !held(old).contains(e)).cloned());
            if !new.get("status").is_some_and(Value::is_object) {
                new["status"] = json!({});
            }
            new["status"]["boundResources"] = json!(list);
            Ok(new)
        }).await.map(drop)
    }

    /// The status a binding should have now (its conditions without times; `set_conditions` keeps those).
    async fn binding_status(&self, space: &SpaceName, name: &str, binding: &Value) -> ApiResult<Value> {
        let bound_before = binding.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
        let old_resources: Vec<Value> = binding.pointer("/status/boundResources").and_then(Value::as_array).cloned().unwrap_or_default();
        let waiting = |reason: &str, message: String| {
            let phase = if bound_before { "Bound" } else { "Binding" };
            json!({"phase": phase, "conditions": [
                condition("APIExportValid", false, reason, &message),
                condition("Ready", false, reason, &message),
            ]})
        };
        let Some((export_space, cluster, export_name)) = export_of(&self.tree, space, binding) else {
            let path = binding.pointer("/spec/reference/export/path").and_then(Value::as_str).unwrap_or_default();
            return Ok(waiting("APIExportNotFound", format!("workspace {path} not found")));
        };
        let exports = self.row(GROUP, api_export::NAME)?;
        let export = match self.registry.get(&exports, &Scope::one(export_space.clone(), None), &export_name).await {
            Ok(export) => export,
            Err(ApiError { code: 404, .. }) => return Ok(waiting("APIExportNotFound", format!("APIExport {cluster}:{export_name} not found"))),
            Err(err) => return Err(err),
        };
        let Some(identity) = identity_hash(&export).map(str::to_owned) else {
            return Ok(waiting("APIExportNotReady", format!("APIExport {cluster}:{export_name} has no identity yet")));
        };
        let mut bound = Vec::new();
        let mut conflicts = Vec::new();
        for schema_name in api_export::schemas(&export) {
            let Some((uid, definition)) = self.resolver.schema(&export_space, &schema_name) else {
                return Ok(waiting("APIResourceSchemaNotFound", format!("APIResourceSchema {cluster}:{schema_name} not found or invalid")));
            };
            let resource = definition.names.plural.clone();
            let conflict = if let Some(crd) = self.resolver.forced_on(space, &definition.name) {
                Some(format!("the forced system CustomResourceDefinition {} serves {resource}.{} in this workspace", crd.name, definition.group))
            } else if self.resolver.local(space, &definition.name).is_some() {
                Some(format!("a CustomResourceDefinition {} exists in this workspace", definition.name))
            } else {
                match self.resolver.bound_by(space, &definition.name) {
                    Some((other, other_identity)) if other != name || other_identity != identity => {
                        Some(format!("{resource}.{} is already bound by APIBinding {other}", definition.group))
                    }
                    _ => None,
                }
            };
            let entry = json!({"group": definition.group, "resource": resource,
                "schema": {"name": schema_name, "UID": uid, "identityHash": identity},
                "storageVersions": definition.storage_version().map(|v| vec![v.name.clone()]).unwrap_or_default()});
            match conflict {
                None => bound.push(entry),
                Some(why) => {
                    conflicts.push(why);
                    // What was bound before stays bound (its objects stay reachable).
                    let same = |r: &&Value| r.get("resource") == entry.get("resource") && r.get("group") == entry.get("group");
                    if let Some(before) = old_resources.iter().find(same) {
                        bound.push(before.clone());
                    }
                }
            }
        }
        let initial = bound_before || conflicts.is_empty();
        let phase = if initial { "Bound" } else { "Binding" };
        let up_to_date = if conflicts.is_empty() {
            condition("BindingUpToDate", true, "", "")
        } else {
            condition("BindingUpToDate", false, "NamingConflicts", &format!("naming conflicts: {}", conflicts.join("; ")))
        };
        let ready = if initial && conflicts.is_empty() { condition("Ready", true, "", "") } else { condition("Ready", false, "NamingConflicts", "not every resource is bound") };
        let export_claims = export.pointer("/spec/permissionClaims").cloned().unwrap_or_else(|| json!([]));
        let binding_claims = binding.pointer("/spec/permissionClaims").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let (applied, mismatched) = claims::applied(export_claims.as_array().map(Vec::as_slice).unwrap_or_default(), binding_claims);
        let claims_valid = if mismatched.is_empty() {
            condition("PermissionClaimsValid", true, "", "")
        } else {
            condition("PermissionClaimsValid", false, "PermissionClaimsMismatch", &mismatched.join("; "))
        };
        Ok(json!({
            "phase": phase,
            "apiExportClusterName": cluster,
            "boundResources": bound,
            "exportPermissionClaims": export_claims,
            "appliedPermissionClaims": applied,
            "conditions": [
                condition("APIExportValid", true, "", ""),
                condition("InitialBindingCompleted", initial, if initial { "" } else { "NamingConflicts" }, ""),
                up_to_date,
                claims_valid,
                ready,
            ],
        }))
    }
}

/// A condition without its transition time (`set_conditions` adds it).
fn condition(kind: &str, status: bool, reason: &str, message: &str) -> Value {
    let mut condition = json!({"type": kind, "status": if status { "True" } else { "False" }});
    if !reason.is_empty() {
        condition["reason"] = json!(reason);
    }
    if !message.is_empty() {
        condition["message"] = json!(message);
    }
    condition
}

/// Sets `conditions` in `object.status.conditions`, each keeping its `lastTransitionTime` while its status holds.
fn set_conditions(object: &mut Value, conditions: &[Value]) {
    let old: Vec<Value> = object.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut merged: Vec<Value> = old.iter().filter(|c| !conditions.iter().any(|n| n.get("type") == c.get("type"))).cloned().collect();
    for fresh in conditions {
        let mut fresh = fresh.clone();
        let before = old.iter().find(|c| c.get("type") == fresh.get("type"));
        let time = match before {
            Some(before) if before.get("status") == fresh.get("status") => before.get("lastTransitionTime").cloned().unwrap_or_else(|| json!(now())),
            _ => json!(now()),
        };
        fresh["lastTransitionTime"] = time;
        merged.push(fresh);
    }
    merged.sort_by(|a, b| a.get("type").and_then(Value::as_str).cmp(&b.get("type").and_then(Value::as_str)));
    object["status"]["conditions"] = json!(merged);
}
