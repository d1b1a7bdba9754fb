//! API Priority and Fairness, as kube-apiserver's `apf_controller.go` and `priority-and-fairness.go` filter do it,
//! with the tenant always part of a flow: a request is classified by the first FlowSchema (in matching order) whose
//! subjects and rules match it; its schema's priority level either exempts it or gives it one of the level's
//! seats, waiting first in its flow's queue when none is free (`queueset`). A full queue, a level that rejects,
//! or a wait past the limit is 429 `TooManyRequests` with `Retry-After`. The flow is the schema, the tenant of the
//! request (the top of its workspace path, or the caller's own tenant), and the schema's distinguisher: one tenant
//! flooding gets its share of the level while the others wait only for the next free seat. The seat is held until
//! the response starts: a watch or a streamed list gives it back once its stream is set up.
//!
//! The configuration is the stored `flowcontrol.apiserver.k8s.io/v1` objects of the system space, followed as
//! every cache is (a primed `WriteObserver`): an edited level or a new schema changes the next request's fate.
//! `docs/fairness.md` is the user's view.

pub mod bootstrap;
pub mod config;
pub mod metrics;
pub mod queueset;

use std::borrow::Cow;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex, RwLock};
use std::time::{Duration, Instant};

use actix_web::http::header::{HeaderMap, HeaderName};
use kspaces_authz::{Caller, UserInfo};
use kspaces_storage::{Revision, SpaceName};
use serde_json::Value;

use crate::apis::request_info::{RequestInfo, SpacePath};
use crate::registry::observe::{RevisionMap, WriteObserver};
use crate::registry::{GenericStore, ResourceInfo, ResourceTable, Scope, WriteContext, SERVER_MANAGER};
use crate::status::{ApiError, ApiResult};
use crate::tenancy::{self, Tree};
use config::{Attributes, Config, Schema};
use metrics::FlowMetrics;
use queueset::{Rejection, Seat};

pub const GROUP: &str = "flowcontrol.apiserver.k8s.io";
pub const GROUP_VERSION: &str = "flowcontrol.apiserver.k8s.io/v1";
pub const FLOW_SCHEMA: &str = "FlowSchema";
pub const PRIORITY_LEVEL: &str = "PriorityLevelConfiguration";

/// kube's response headers naming the schema and the level of a classified request.
pub const FLOW_SCHEMA_UID: HeaderName = HeaderName::from_static("x-kubernetes-pf-flowschema-uid");
pub const PRIORITY_LEVEL_UID: HeaderName = HeaderName::from_static("x-kubernetes-pf-prioritylevel-uid");

/// kube's answer to a request it will not queue or has queued too long.
pub const TOO_MANY_REQUESTS: &str = "Too many requests, please try again later.";

/// How the server shares its seats out.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// `--enable-priority-and-fairness`: without it nothing is classified or queued.
    pub enabled: bool,
    /// `--max-requests-inflight` + `--max-mutating-requests-inflight`, shared among the levels.
    pub total_seats: u32,
    /// How long a request may wait in its queue (kube: a quarter of its 60 s request timeout).
    pub wait_limit: Duration,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { enabled: true, total_seats: 60, wait_limit: Duration::from_secs(15) }
    }
}

#[derive(Default)]
struct Objects {
    levels: RevisionMap<String, Value>,
    schemas: RevisionMap<String, Value>,
}

/// The dispatcher: the compiled configuration and the levels' queues.
pub struct FlowControl {
    settings: RwLock<Settings>,
    objects: Mutex<Objects>,
    config: RwLock<Arc<Config>>,
    metrics: FlowMetrics,
}

impl Default for FlowControl {
    fn default() -> FlowControl {
        FlowControl {
            settings: RwLock::new(Settings::default()),
            objects: Mutex::default(),
            config: RwLock::default(),
            metrics: FlowMetrics::default(),
        }
    }
}

/// The identity of a request with no credentials (`/healthz`, `/version` and the like).
static ANONYMOUS: LazyLock<UserInfo> = LazyLock::new(|| UserInfo {
    name: "system:anonymous".into(),
    uid: String::new(),
    groups: vec!["system:unauthenticated".into()],
    tenant: None,
    cluster: None,
    extra: Default::default(),
});

/// A request's classification: its schema and level (their UIDs are the response headers).
pub struct Classified {
    schema: Arc<Schema>,
}

impl Classified {
    /// Sets `X-Kubernetes-PF-FlowSchema-UID` and `X-Kubernetes-PF-PriorityLevel-UID`.
    pub fn set_headers(&self, headers: &mut HeaderMap) {
        if let Some(uid) = &self.schema.uid {
            headers.insert(FLOW_SCHEMA_UID, uid.clone());
        }
        if let Some(uid) = &self.schema.level.uid {
            headers.insert(PRIORITY_LEVEL_UID, uid.clone());
        }
    }
}

/// A request allowed to run: its seat (none at an exempt level), given back when dropped.
pub struct Admitted {
    _seat: Option<Seat>,
    schema: Arc<Schema>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.schema.metrics.executing_requests.dec();
        self.schema.metrics.executing_seats.dec();
    }
}

impl FlowControl {
    /// Takes the server's seat total and wait limit (`kspaces serve`'s flags).
    pub fn configure(&self, settings: Settings) {
        *self.settings.write().unwrap_or_else(|p| p.into_inner()) = settings;
        self.recompile();
    }

    /// The families to register with the server's metrics.
    pub fn metrics(&self) -> &FlowMetrics {
        &self.metrics
    }

    fn recompile(&self) {
        let settings = *self.settings.read().unwrap_or_else(|p| p.into_inner());
        let objects = self.objects.lock().unwrap_or_else(|p| p.into_inner());
        let previous = self.current();
        let config = Config::compile(objects.levels.iter().map(|(_, v)| v), objects.schemas.iter().map(|(_, v)| v), settings.total_seats,
            &previous, &self.metrics);
        *self.config.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(config);
    }

    fn current(&self) -> Arc<Config> {
        self.config.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether PriorityLevelConfiguration `name` is stored.
    pub fn has_level(&self, name: &str) -> bool {
        self.objects.lock().unwrap_or_else(|p| p.into_inner()).levels.get(name).is_some()
    }

    /// The names of the stored objects of `kind`, for the bootstrap (which makes those missing).
    pub fn stored(&self, kind: &str) -> Vec<String> {
        let objects = self.objects.lock().unwrap_or_else(|p| p.into_inner());
        let map = if kind == FLOW_SCHEMA { &objects.schemas } else { &objects.levels };
        map.keys().cloned().collect()
    }

    /// Makes the bootstrap objects that are not stored (kube's mandatory and suggested ones), all at once (one
    /// group commit on a fresh store); one made meanwhile by another replica is left as it is.
    pub async fn bootstrap(&self, registry: &GenericStore, resources: &ResourceTable) -> ApiResult<()> {
        let system = Scope::one(SpaceName::system(), None);
        let write = WriteContext::server(SERVER_MANAGER, "");
        let mut missing = Vec::new();
        for (kind, objects) in [(PRIORITY_LEVEL, bootstrap::priority_levels()), (FLOW_SCHEMA, bootstrap::flow_schemas())] {
            let row = resources.by_kind(GROUP, kind).cloned().ok_or_else(|| ApiError::internal(format!("no {kind} resource")))?;
            let stored = self.stored(kind);
            for object in objects {
                let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
                if !stored.iter().any(|known| known == name) {
                    missing.push((row.clone(), object));
                }
            }
        }
        let creates = missing.into_iter().map(|(row, object)| {
            let (system, write) = (&system, &write);
            async move { registry.create(&row, system, object, write).await }
        });
        for created in futures::future::join_all(creates).await {
            match created {
                Ok(_) | Err(ApiError { code: 409, .. }) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// The first schema that matches the request (`None` only when no stored schema does, the mandatory
    /// `catch-all` having been deleted: the request then runs unlimited, as it would with the feature off).
    pub fn classify(&self, caller: Option<&Caller>, info: &RequestInfo) -> Option<Classified> {
        if !self.settings.read().unwrap_or_else(|p| p.into_inner()).enabled {
            return None;
        }
        let user = caller.map_or(&*ANONYMOUS, |c| &c.user);
        let config = self.current();
        let schema = config.classify(&Attributes { user, info })?.clone();
        Some(Classified { schema })
    }

    /// A seat for a classified request of `tenant`, or 429.
    pub async fn admit(&self, classified: &Classified, caller: Option<&Caller>, tenant: &str, info: &RequestInfo) -> Result<Admitted, ApiError> {
        let schema = &classified.schema;
        let seat = match schema.level.exempt {
            true => {
                schema.metrics.waited(0.0, Ok(()));
                None
            }
            false => {
                let user = caller.map_or(&*ANONYMOUS, |c| &c.user);
                let flow = flow(&schema.name, tenant, schema.distinguish(&Attributes { user, info }));
                let wait_limit = self.settings.read().unwrap_or_else(|p| p.into_inner()).wait_limit;
                let began = Instant::now();
                schema.metrics.inqueue.inc();
                let seat = schema.level.set.acquire(flow, wait_limit).await;
                schema.metrics.inqueue.dec();
                schema.metrics.waited(began.elapsed().as_secs_f64(), seat.as_ref().map(drop).map_err(|r| *r));
                Some(seat.map_err(|rejection| rejected(schema, rejection))?)
            }
        };
        schema.metrics.executing_requests.inc();
        schema.metrics.executing_seats.inc();
        Ok(Admitted { _seat: seat, schema: schema.clone() })
    }
}

fn rejected(schema: &Schema, rejection: Rejection) -> ApiError {
    tracing::debug!(flow_schema = %schema.name, priority_level = %schema.level.name, reason = rejection.reason(), "request rejected");
    ApiError::too_many_requests(TOO_MANY_REQUESTS, 1)
}

/// The flow of a request: its schema, tenant and distinguisher, hashed (deterministically: the same flow is
/// always dealt the same queues).
fn flow(schema: &str, tenant: &str, distinguisher: &str) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    schema.hash(&mut hasher);
    tenant.hash(&mut hasher);
    distinguisher.hash(&mut hasher);
    hasher.finish()
}

/// The tenant a request is charged to: a tenant user's own (the only one it may reach; a refused attempt at
/// another is charged to it too), a system user's the one at the top of the path it names.
pub fn tenant_of<'a>(caller: Option<&'a Caller>, path: &'a SpacePath, tree: &Tree) -> Cow<'a, str> {
    let Some(caller) = caller else { return Cow::Borrowed("") };
    if !caller.system {
        return Cow::Borrowed(caller.tenant.as_deref().unwrap_or_default());
    }
    match path {
        SpacePath::Short => Cow::Borrowed(tenancy::SYSTEM),
        SpacePath::Tenant(t) if t == tenancy::ALL => Cow::Borrowed(tenancy::SYSTEM),
        SpacePath::Tenant(t) => Cow::Borrowed(t.as_str()),
        SpacePath::Workspace(w) if w == tenancy::ROOT || w == "*" || w.starts_with("system:") => Cow::Borrowed(tenancy::SYSTEM),
        SpacePath::Workspace(w) => match w.strip_prefix("root:") {
            Some(rest) => Cow::Borrowed(rest.split(':').next().unwrap_or_default()),
            None => match SpaceName::new(w).ok().and_then(|cluster| tree.cluster(&cluster)) {
                Some(node) => Cow::Owned(node.tenant),
                None => Cow::Borrowed(w),
            },
        },
    }
}

impl WriteObserver for FlowControl {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[(GROUP, FLOW_SCHEMA), (GROUP, PRIORITY_LEVEL)]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        if resource.group != GROUP || !space.is_system() {
            return;
        }
        let changed = {
            let mut objects = self.objects.lock().unwrap_or_else(|p| p.into_inner());
            match resource.kind.as_str() {
                FLOW_SCHEMA => objects.schemas.apply(name.to_owned(), object.cloned(), revision),
                PRIORITY_LEVEL => objects.levels.apply(name.to_owned(), object.cloned(), revision),
                _ => false,
            }
        };
        if changed {
            self.recompile();
        }
    }

    fn holds(&self, resource: &ResourceInfo) -> Vec<(SpaceName, String)> {
        if resource.group != GROUP {
            return Vec::new();
        }
        self.stored(&resource.kind).into_iter().map(|name| (SpaceName::system(), name)).collect()
    }
}

#[cfg(test)]
mod tests;
