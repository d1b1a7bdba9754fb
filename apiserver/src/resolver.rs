//! `Resolver`: which resource a request for `group/version/plural` in a space reaches (a built-in one, the
//! space's own CRD, or a system CRD shared in), from every space's CustomResourceDefinitions held in memory;
//! and what each space discovers (its discovery tables and OpenAPI documents).
//!
//! Primed with every CRD and LogicalCluster at startup and kept current by the registry's write observer: a
//! CRD write, a `LogicalCluster` write (the space's `spec.crdPolicy`) and a Tenant write (its labels, which
//! system CRDs' `crd.kspaces.io/applicable-tenants` selectors match, read from `TenantCache`) take effect
//! before the write is acknowledged, so `kubectl wait --for condition=established` and a switch of policy are
//! followed at once.
//!
//! Resolution (`kspaces_crd::sharing`): in a tenant space, a forced system CRD in range wins; otherwise the
//! space's policy picks its own CRD or the system one. Objects of a space's own CRD are stored under the
//! `local` identity, objects a tenant makes through a system CRD under that CRD's shared identity (derived
//! from its uid), so the losing definition's objects stay stored, untouched, until resolution flips back.
//! `docs/crd-sharing.md` is the user's view.
//!
//! APIBindings bind resources too (`docs/api-exports.md`): the resolver keeps every APIResourceSchema (compiled
//! once, as the CRD it stands for) and every binding's `status.boundResources`, and serves a bound resource in the
//! binding's space under the export's identity hash. Precedence: a forced system CRD in range, then a binding,
//! then the space's policy between its own CRDs and the system's.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use kspaces_crd::definition::{Definition, Names, Scope as CrdScope};
use kspaces_crd::sharing::{self, CrdPolicy, Source, SystemCandidate};
use kspaces_storage::{ApiIdentity, KeyParts, Revision, SpaceName};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::apis::kcp::{APIS_GROUP, BOUND_RESOURCES, LOGICAL_CLUSTER_NAME};
use crate::openapi::OpenApi;
use crate::registry::feed::Rows;
use crate::registry::observe::{RevisionMap, WriteObserver};
use crate::registry::selector::LabelSelector;
use crate::registry::{Custom, ResourceInfo, ResourceTable, Spaces, Subresource};
use crate::table::custom_columns;
use crate::tenancy::{TenantCache, Tree};


/// Every verb a custom resource serves.
const VERBS: [&str; 8] = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
/// How many spaces' OpenAPI documents (with their CRDs) are kept built.
const OPENAPI_CACHE: usize = 16;

/// One CRD of one space, compiled for serving.
#[derive(Debug)]
pub struct Served {
    pub definition: Arc<Definition>,
    /// Each served version, under the `local` identity (how the CRD's own space sees it).
    local: Vec<Arc<ResourceInfo>>,
    /// System CRDs only: the same rows under the CRD's shared identity (how tenants see it).
    shared: Vec<Arc<ResourceInfo>>,
    /// The storage version under each identity (also when it is not served), for deleting objects.
    storage: Vec<Arc<ResourceInfo>>,
    /// The parsed `crd.kspaces.io/applicable-tenants` selector; `None` applies everywhere. An unparsable
    /// selector applies nowhere.
    applicable: Option<Result<LabelSelector, ()>>,
    /// `status.acceptedNames`: the names this CRD holds in its group (see `strategy::names_and_conditions`).
    pub accepted: AcceptedNames,
    /// `NamesAccepted` is not `False`.
    names_accepted: bool,
    /// Served: `NamesAccepted` or `Established` is not `False`, as kube serves a CRD when either is true (a CRD
    /// whose conditions say nothing, e.g. written by hand into a test, is served).
    serving: bool,
}

/// The names a CRD holds in its group: `status.acceptedNames` as kube's naming controller keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AcceptedNames {
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub kind: String,
    pub list_kind: String,
}

/// A CRD's requested names checked against the names in use, as kube's naming controller checks them: a
/// requested name conflicts when it is not the one already accepted and another CRD of the group holds it.
/// Returns the names to accept (each conflicting one keeps its accepted value) and the last conflict found
/// (kube reports the last), as (reason, message).
pub fn accept_names(requested: &AcceptedNames, accepted: &AcceptedNames, used: &NamesInUse) -> (AcceptedNames, Option<(&'static str, String)>) {
    let taken = |requested: &str, accepted: &str, used: &std::collections::BTreeSet<String>| {
        (requested != accepted && used.contains(requested)).then(|| format!("{requested:?} is already in use"))
    };
    let mut names = accepted.clone();
    let mut conflict = None;
    match taken(&requested.plural, &accepted.plural, &used.resources) {
        Some(message) => conflict = Some(("PluralConflict", message)),
        None => names.plural = requested.plural.clone(),
    }
    match taken(&requested.singular, &accepted.singular, &used.resources) {
        Some(message) => conflict = Some(("SingularConflict", message)),
        None => names.singular = requested.singular.clone(),
    }
    if requested.short_names != accepted.short_names {
        let errors: Vec<String> = requested
            .short_names
            .iter()
            .filter(|name| !accepted.short_names.contains(name) && **name != accepted.plural && **name != accepted.singular)
            .filter_map(|name| taken(name, "", &used.resources))
            .collect();
        match errors.as_slice() {
            [] => names.short_names = requested.short_names.clone(),
            [one] => conflict = Some(("ShortNamesConflict", one.clone())),
            many => conflict = Some(("ShortNamesConflict", format!("[{}]", many.join(", ")))),
        }
    }
    match taken(&requested.kind, &accepted.kind, &used.kinds) {
        Some(message) => conflict = Some(("KindConflict", message)),
        None => names.kind = requested.kind.clone(),
    }
    match taken(&requested.list_kind, &accepted.list_kind, &used.kinds) {
        Some(message) => conflict = Some(("ListKindConflict", message)),
        None => names.list_kind = requested.list_kind.clone(),
    }
    (names, conflict)
}

impl AcceptedNames {
    pub fn of(names: Option<&Value>) -> AcceptedNames {
        let text = |key: &str| names.and_then(|n| n.get(key)).and_then(Value::as_str).unwrap_or_default().to_owned();
        let short_names = names
            .and_then(|n| n.get("shortNames"))
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        AcceptedNames { plural: text("plural"), singular: text("singular"), short_names, kind: text("kind"), list_kind: text("listKind") }
    }

    /// The names a definition asks for.
    pub fn requested(names: &Names) -> AcceptedNames {
        AcceptedNames {
            plural: names.plural.clone(),
            singular: names.singular.clone(),
            short_names: names.short_names.clone(),
            kind: names.kind.clone(),
            list_kind: names.list_kind.clone(),
        }
    }
}

/// The resource names (plural, singular, short names) and kinds (kind, list kind) the other CRDs of a group hold.
#[derive(Debug, Default)]
pub struct NamesInUse {
    pub resources: BTreeSet<String>,
    pub kinds: BTreeSet<String>,
}

/// Whether a CRD's condition of type `kind` is present with status `False`.
fn condition_false(crd: &Value, kind: &str) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c.get("type").and_then(Value::as_str) == Some(kind) && c.get("status").and_then(Value::as_str) == Some("False"))
}

/// An APIResourceSchema as the resolver keeps it: its uid and its definition (`None`: it does not compile).
#[derive(Debug)]
struct Schema {
    uid: String,
    definition: Option<Arc<Definition>>,
}

/// One resource an APIBinding binds, from its `status.boundResources`.
#[derive(Debug)]
struct BoundResource {
    /// `<plural>.<group>`, as CRDs are named.
    name: String,
    /// The schema: where it is (the export's space), its name and uid.
    schema_space: SpaceName,
    schema: String,
    uid: String,
    /// The export's identity hash.
    identity: String,
    /// `<uid>/<identity>`: the key of its compiled rows in `Inner::bound`.
    key: String,
}

struct Inner {
    /// CRDs by space, then by name (`<plural>.<group>`), with the tombstones of deleted ones (so a late, older
    /// write cannot bring one back). Only spaces that ever held a CRD.
    spaces: HashMap<SpaceName, RevisionMap<String, Arc<Served>>>,
    /// APIResourceSchemas by space, then by name.
    schemas: HashMap<SpaceName, RevisionMap<String, Arc<Schema>>>,
    /// What each space's APIBindings bind, by space, then by binding name.
    bindings: HashMap<SpaceName, RevisionMap<String, Arc<Vec<BoundResource>>>>,
    /// Every resource a binding ever bound in a space, as its LogicalCluster's `status.boundResources` lists them
    /// (what emptying the space deletes besides what its bindings bind now).
    retained: RevisionMap<SpaceName, Arc<Vec<BoundResource>>>,
    /// Bound resources compiled for serving, by `<schema uid>/<identity>` (one per schema and export, shared
    /// by every binding to it).
    bound: HashMap<String, Arc<Served>>,
    /// Each space's policy, as its LogicalCluster says.
    policies: RevisionMap<SpaceName, CrdPolicy>,
    /// The tenants' labels (what system CRDs' applicable ranges select).
    tenants: Arc<TenantCache>,
    /// Which tenant a space belongs to.
    tree: Arc<Tree>,
    /// The tenants that had labels at their last write (a change of labels changes which spaces system CRDs apply to).
    labelled: std::collections::HashSet<String>,
    /// Discovery tables of spaces with custom resources, rebuilt on first use after a change.
    views: HashMap<SpaceName, Arc<View>>,
    /// The same views by their custom rows (addresses of the shared rows), so that spaces resolving to the same
    /// CRDs (tenants using only system CRDs) share one view.
    shared_views: HashMap<Vec<usize>, Arc<View>>,
}

/// What one space discovers: the built-in resources plus its resolved custom resources.
#[derive(Debug)]
pub struct View {
    /// For the space's tenant users: no system-only resources.
    pub tenant: ResourceTable,
    /// For system users: every built-in resource.
    pub system: ResourceTable,
    /// The resolved custom resources alone.
    pub custom: Vec<Arc<ResourceInfo>>,
}

/// Every space's CRDs and the resolution of custom resources.
pub struct Resolver {
    builtin: ResourceTable,
    /// The view of every space without custom resources.
    builtin_view: Arc<View>,
    inner: RwLock<Inner>,
    /// OpenAPI documents of views with custom resources (spaces sharing a view share them), newest last.
    openapi: Mutex<Vec<(Arc<View>, Arc<OpenApi>)>>,
    /// The OpenAPI definitions of kspaces' own kinds, which those documents add to Kubernetes' (`with_definitions`).
    definitions: Map<String, Value>,
    /// Held by every CRD create and update from reading the names in use to the write being applied here, so
    /// two CRDs cannot claim one name at once (kube's naming controller is a single worker for that reason).
    pub naming: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolver").finish_non_exhaustive()
    }
}

/// The shared identity of a system CRD's objects in tenant spaces: stable for the CRD's life, new if it is
/// deleted and created again.
pub fn shared_identity(definition: &Definition) -> ApiIdentity {
    let digest = Sha256::digest(format!("system/{}/{}", definition.name, definition.uid).as_bytes());
    let hash: String = digest.iter().take(10).map(|b| format!("{b:02x}")).collect();
    ApiIdentity::Shared(format!("s{hash}"))
}

fn row(definition: &Arc<Definition>, index: usize, identity: &ApiIdentity) -> Arc<ResourceInfo> {
    let version = &definition.versions[index];
    let mut subresources = Vec::new();
    if version.status {
        subresources.push(Subresource::Status);
    }
    if version.scale.is_some() {
        subresources.push(Subresource::Scale);
    }
    let names = &definition.names;
    Arc::new(ResourceInfo {
        group: definition.group.clone(),
        version: version.name.clone(),
        kind: names.kind.clone(),
        plural: names.plural.clone(),
        singular: names.singular.clone(),
        short_names: names.short_names.clone(),
        categories: names.categories.clone(),
        namespaced: definition.scope == CrdScope::Namespaced,
        subresources,
        verbs: VERBS.map(String::from).to_vec(),
        definition: None,
        system_only: false,
        custom: Some(Arc::new(Custom {
            definition: definition.clone(),
            version: index,
            identity: identity.clone(),
            columns: custom_columns(&version.printer_columns).ok(),
        })),
    })
}

impl Served {
    fn new(definition: Definition, system: bool, crd: &Value) -> Served {
        let definition = Arc::new(definition);
        let shared_identity = system.then(|| shared_identity(&definition));
        let rows = |identity: &ApiIdentity| -> Vec<Arc<ResourceInfo>> {
            (0..definition.versions.len()).filter(|i| definition.versions[*i].served).map(|i| row(&definition, i, identity)).collect()
        };
        let local = rows(&ApiIdentity::Local);
        let shared = shared_identity.as_ref().map(rows).unwrap_or_default();
        let storage_index = definition.versions.iter().position(|v| v.storage);
        let storage = storage_index
            .into_iter()
            .flat_map(|i| [Some(ApiIdentity::Local), shared_identity.clone()].into_iter().flatten().map(move |id| (i, id)))
            .map(|(i, identity)| row(&definition, i, &identity))
            .collect();
        let applicable = definition.applicable_tenants.as_deref().map(|s| LabelSelector::parse(s).map_err(drop));
        let accepted = AcceptedNames::of(crd.pointer("/status/acceptedNames"));
        let names_accepted = !condition_false(crd, "NamesAccepted");
        let serving = names_accepted || !condition_false(crd, "Established");
        Served { definition, local, shared, storage, applicable, accepted, names_accepted, serving }
    }

    /// A schema's resource as one export serves it: every served version under the export's identity, in the
    /// rows of both kinds of request (a bound resource is never the space's own, never the system's).
    fn bound(definition: Arc<Definition>, identity: &ApiIdentity) -> Served {
        let rows: Vec<Arc<ResourceInfo>> =
            (0..definition.versions.len()).filter(|i| definition.versions[*i].served).map(|i| row(&definition, i, identity)).collect();
        let storage = definition.versions.iter().position(|v| v.storage).map(|i| row(&definition, i, identity)).into_iter().collect();
        let accepted = AcceptedNames::requested(&definition.names);
        Served { local: rows.clone(), shared: rows, storage, applicable: None, accepted, names_accepted: true, serving: true, definition }
    }

    fn applies(&self, labels: Option<&Value>) -> bool {
        match &self.applicable {
            None => true,
            Some(Err(())) => false,
            Some(Ok(selector)) => selector.matches(labels.unwrap_or(&Value::Null)),
        }
    }
}

impl Inner {
    /// The CRD `name` of `space` if it is served (its names are accepted or it was established).
    fn served(&self, space: &SpaceName, name: &str) -> Option<&Arc<Served>> {
        self.stored(space, name).filter(|s| s.serving)
    }

    /// The CRD `name` of `space`, served or not.
    fn stored(&self, space: &SpaceName, name: &str) -> Option<&Arc<Served>> {
        self.spaces.get(space)?.get(name)
    }

    /// The CRD serving `name` in `space`, and whether it is the system's, shared in.
    fn resolve(&self, space: &SpaceName, name: &str) -> Option<(&Arc<Served>, bool)> {
        let bound = self.bound(space, name).map(|(served, _)| (served, false));
        let local = self.served(space, name);
        if space.is_system() {
            return bound.or(local.map(|s| (s, false)));
        }
        let system = self.served(&SpaceName::system(), name);
        let candidate = system.map(|s| SystemCandidate { forced: s.definition.forced, applies: self.applies(s, space) });
        if candidate.is_some_and(|c| c.forced && c.applies) {
            return system.map(|s| (s, true));
        }
        if bound.is_some() {
            return bound;
        }
        let policy = self.policies.get(space).copied().unwrap_or_default();
        match sharing::resolve(policy, local.is_some(), candidate)? {
            Source::Local => local.map(|s| (s, false)),
            Source::System => system.map(|s| (s, true)),
        }
    }

    /// The resource `name` a binding of `space` binds (compiled), and the binding's name.
    fn bound(&self, space: &SpaceName, name: &str) -> Option<(&Arc<Served>, &str)> {
        let bindings = self.bindings.get(space)?;
        bindings.iter().find_map(|(binding, resources)| {
            resources.iter().filter(|r| r.name == name).find_map(|r| self.bound.get(&r.key)).map(|served| (served, binding.as_str()))
        })
    }

    /// Compiles the bound resources of `resources` whose schemas are known and not compiled yet.
    fn compile(&mut self, resources: &[BoundResource]) {
        for resource in resources {
            if self.bound.contains_key(&resource.key) {
                continue;
            }
            let schema = self.schemas.get(&resource.schema_space).and_then(|m| m.get(&resource.schema)).filter(|s| s.uid == resource.uid);
            let (Some(definition), Ok(identity)) = (schema.and_then(|s| s.definition.clone()), ApiIdentity::shared(resource.identity.clone())) else { continue };
            self.bound.insert(resource.key.clone(), Arc::new(Served::bound(definition, &identity)));
        }
    }

    fn applies(&self, system: &Served, space: &SpaceName) -> bool {
        self.tenants.with_labels(&self.tree.tenant_of(space), |labels| system.applies(labels))
    }

    /// Every CRD name either the space or the system space defines.
    fn names(&self, space: &SpaceName) -> BTreeSet<&str> {
        let mut names = BTreeSet::new();
        if let Some(bindings) = self.bindings.get(space) {
            names.extend(bindings.iter().flat_map(|(_, resources)| resources.iter().map(|r| r.name.as_str())));
        }
        for s in [space.clone(), SpaceName::system()] {
            if let Some(crds) = self.spaces.get(&s) {
                names.extend(crds.iter().filter(|(_, served)| served.serving).map(|(n, _)| n.as_str()));
            }
        }
        names
    }

    fn changed(&mut self, space: Option<&SpaceName>) {
        match space {
            Some(space) if !space.is_system() => {
                self.views.remove(space);
            }
            _ => self.views.clear(),
        }
        self.shared_views.clear();
    }
}

impl Resolver {
    /// A resolver over the built-in resources `builtin`, reading tenants' labels from `tenants` and spaces' tenants
    /// from `tree`.
    pub fn new(builtin: ResourceTable, tenants: Arc<TenantCache>, tree: Arc<Tree>) -> Resolver {
        let tenant = ResourceTable::shared(builtin.all().iter().filter(|r| !r.system_only).cloned().collect());
        let builtin_view = Arc::new(View { tenant, system: builtin.clone(), custom: Vec::new() });
        let inner = Inner {
            spaces: HashMap::new(),
            schemas: HashMap::new(),
            bindings: HashMap::new(),
            retained: RevisionMap::default(),
            bound: HashMap::new(),
            policies: RevisionMap::default(),
            tenants,
            tree,
            labelled: Default::default(),
            views: HashMap::new(),
            shared_views: HashMap::new(),
        };
        Resolver { builtin, builtin_view, inner: RwLock::new(inner), openapi: Mutex::new(Vec::new()), definitions: Map::new(), naming: Arc::default() }
    }

    /// Gives the OpenAPI documents of views with custom resources kspaces' own kinds' definitions.
    pub fn with_definitions(mut self, definitions: Map<String, Value>) -> Resolver {
        self.definitions = definitions;
        self
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// What a space without custom resources discovers.
    pub fn builtin_view(&self) -> &View {
        &self.builtin_view
    }

    /// The resource a request for `group/version/plural` in `spaces` reaches: a built-in one, else the custom
    /// resource resolved for the space (a request across every space resolves as the system space does).
    pub fn lookup(&self, spaces: &Spaces, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        if let Some(builtin) = self.builtin.lookup(group, version, plural) {
            return Some(builtin.clone());
        }
        let system = SpaceName::system();
        let space = match spaces {
            Spaces::One(space) => space,
            Spaces::All => &system,
        };
        let inner = self.read();
        let (served, shared) = inner.resolve(space, &format!("{plural}.{group}"))?;
        let rows = if shared { &served.shared } else { &served.local };
        rows.iter().find(|r| r.version == version).cloned()
    }

    /// The identity of the custom resource `plural`/`group` serves in `space`, whatever its version (what an access
    /// review about a bound resource needs to know).
    pub fn identity_in(&self, space: &SpaceName, group: &str, plural: &str) -> Option<ApiIdentity> {
        let inner = self.read();
        let (served, shared) = inner.resolve(space, &format!("{plural}.{group}"))?;
        let rows = if shared { &served.shared } else { &served.local };
        rows.first().and_then(|r| r.custom.as_ref()).map(|c| c.identity.clone())
    }

    /// The CRD named `name` in the system space, if it is forced on `space`'s tenant (in its range).
    pub fn forced_on(&self, space: &SpaceName, name: &str) -> Option<Arc<Definition>> {
        if space.is_system() {
            return None;
        }
        let inner = self.read();
        let system = inner.served(&SpaceName::system(), name)?;
        (system.definition.forced && inner.applies(system, space)).then(|| system.definition.clone())
    }

    /// The space's own CRD named `name`, as parsed at its last write.
    pub fn local(&self, space: &SpaceName, name: &str) -> Option<Arc<Definition>> {
        self.read().served(space, name).map(|s| s.definition.clone())
    }

    /// What `space` discovers (cached until a change).
    pub fn view(&self, space: &SpaceName) -> Arc<View> {
        if let Some(view) = self.read().views.get(space) {
            return view.clone();
        }
        let mut inner = self.write();
        if let Some(view) = inner.views.get(space) {
            return view.clone();
        }
        let mut custom = Vec::new();
        for name in inner.names(space) {
            if let Some((served, shared)) = inner.resolve(space, name) {
                // A group the built-ins serve is never shadowed in discovery by a CRD's same-named resource.
                let rows = if shared { &served.shared } else { &served.local };
                custom.extend(rows.iter().filter(|r| self.builtin.lookup(&r.group, &r.version, &r.plural).is_none()).cloned());
            }
        }
        if custom.is_empty() {
            return self.builtin_view.clone();
        }
        // The rows' addresses identify them: they live as long as the view that holds them.
        let signature: Vec<usize> = custom.iter().map(|r| Arc::as_ptr(r) as usize).collect();
        let view = match inner.shared_views.get(&signature) {
            Some(view) => view.clone(),
            None => {
                let with = |table: &ResourceTable| ResourceTable::shared(table.all().iter().chain(&custom).cloned().collect());
                let view = Arc::new(View { tenant: with(&self.builtin_view.tenant), system: with(&self.builtin), custom });
                inner.shared_views.insert(signature, view.clone());
                view
            }
        };
        if inner.views.len() > 100_000 {
            inner.views.clear();
            inner.shared_views.clear();
        }
        inner.views.insert(space.clone(), view.clone());
        view
    }

    /// The OpenAPI documents of `space`: `None` when it has no custom resources (the server's own documents
    /// serve it). Built on first use, kept for the last few views asked.
    pub fn openapi(&self, space: &SpaceName) -> Option<Arc<OpenApi>> {
        let view = self.view(space);
        if view.custom.is_empty() {
            return None;
        }
        let mut cache = self.openapi.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = cache.iter().position(|(v, _)| Arc::ptr_eq(v, &view)) {
            let entry = cache.remove(at);
            let documents = entry.1.clone();
            cache.push(entry);
            return Some(documents);
        }
        let mut resources: Vec<ResourceInfo> = view.system.all().iter().map(|r| (**r).clone()).collect();
        resources.sort_by_key(|r| r.custom.is_some());
        let mut definitions = self.definitions.clone();
        for r in &view.custom {
            if let Some(schema) = r.custom.as_ref().and_then(|c| c.version()).map(|v| v.schema.source().clone()) {
                definitions.insert(crate::openapi::definition_name(r), published_schema(schema));
            }
        }
        let documents = Arc::new(OpenApi::build_with(&resources, definitions));
        // Views replaced by a change are dropped here, not kept alive for their documents.
        cache.retain(|(v, _)| Arc::strong_count(v) > 1);
        if cache.len() >= OPENAPI_CACHE {
            cache.remove(0);
        }
        cache.push((view, documents.clone()));
        Some(documents)
    }

    /// The storage-version rows of every CRD whose objects may be stored in `space` (its own CRDs, and the
    /// system CRDs' shared identities), whatever resolution currently says: what emptying the space deletes.
    pub fn stored_in(&self, space: &SpaceName) -> Vec<Arc<ResourceInfo>> {
        let inner = self.read();
        let mut rows = Vec::new();
        let own = inner.spaces.get(space).into_iter().flat_map(|m| m.iter().map(|(_, served)| served));
        for served in own {
            rows.extend(served.storage.iter().filter(|r| r.custom.as_ref().is_some_and(|c| c.identity == ApiIdentity::Local)).cloned());
        }
        let bound = inner.bindings.get(space).into_iter().flat_map(|m| m.iter().flat_map(|(_, resources)| resources.iter()));
        let retained = inner.retained.get(space).into_iter().flat_map(|resources| resources.iter());
        let mut keys = BTreeSet::new();
        for resource in bound.chain(retained).filter(|r| keys.insert(r.key.as_str())) {
            rows.extend(inner.bound.get(&resource.key).into_iter().flat_map(|served| served.storage.iter().cloned()));
        }
        if !space.is_system() {
            let system = inner.spaces.get(&SpaceName::system()).into_iter().flat_map(|m| m.iter().map(|(_, served)| served));
            for served in system {
                rows.extend(served.storage.iter().filter(|r| r.custom.as_ref().is_some_and(|c| c.identity != ApiIdentity::Local)).cloned());
            }
        }
        rows
    }

    /// The storage-version rows of one CRD (both identities for a system CRD): what deleting it deletes.
    pub fn storage_rows(&self, space: &SpaceName, name: &str) -> Vec<Arc<ResourceInfo>> {
        self.read().stored(space, name).map(|s| s.storage.clone()).unwrap_or_default()
    }

    /// Terminating CRDs, by (space, name).
    pub fn terminating(&self) -> Vec<(SpaceName, String)> {
        let inner = self.read();
        let mut found = Vec::new();
        for (space, crds) in &inner.spaces {
            for (name, served) in crds.iter() {
                if served.definition.terminating {
                    found.push((space.clone(), name.clone()));
                }
            }
        }
        found
    }

    /// CRDs whose names are not all accepted (`NamesAccepted=False`), by (space, name): the CRD controller
    /// checks them again, as kube's naming controller does when another CRD of the group frees a name.
    pub fn unaccepted(&self) -> Vec<(SpaceName, String)> {
        let inner = self.read();
        let mut found = Vec::new();
        for (space, crds) in &inner.spaces {
            for (name, served) in crds.iter() {
                if !served.names_accepted && !served.definition.terminating {
                    found.push((space.clone(), name.clone()));
                }
            }
        }
        found
    }

    /// Whether the names of CRD `name` in `space` (one of `unaccepted`) would now be accepted differently: a
    /// name it asked for is free again.
    pub fn names_freed(&self, space: &SpaceName, name: &str) -> bool {
        let Some(served) = self.read().stored(space, name).cloned() else { return false };
        let requested = AcceptedNames::requested(&served.definition.names);
        let used = self.names_in_use(space, &served.definition.group, name);
        let (accepted, conflict) = accept_names(&requested, &served.accepted, &used);
        conflict.is_none() || accepted != served.accepted
    }

    /// The names the CRDs of `group` in `space` other than `except` hold (their accepted names).
    pub fn names_in_use(&self, space: &SpaceName, group: &str, except: &str) -> NamesInUse {
        let inner = self.read();
        let mut used = NamesInUse::default();
        let others = inner.spaces.get(space).into_iter().flat_map(|m| m.iter()).filter(|(name, _)| name.as_str() != except);
        for served in others.map(|(_, served)| served).filter(|s| s.definition.group == group) {
            let accepted = &served.accepted;
            used.resources.extend([&accepted.plural, &accepted.singular].into_iter().chain(&accepted.short_names).filter(|n| !n.is_empty()).cloned());
            used.kinds.extend([&accepted.kind, &accepted.list_kind].into_iter().filter(|n| !n.is_empty()).cloned());
        }
        used
    }

    /// The policy of `space`.
    pub fn policy(&self, space: &SpaceName) -> CrdPolicy {
        self.read().policies.get(space).copied().unwrap_or_default()
    }

    /// The APIBinding of `space` that binds resource `name` (`<plural>.<group>`), with the identity it binds.
    pub fn bound_by(&self, space: &SpaceName, name: &str) -> Option<(String, String)> {
        let inner = self.read();
        let found = inner.bindings.get(space)?.iter().find_map(|(binding, resources)| {
            resources.iter().find(|r| r.name == name).map(|r| (binding.clone(), r.identity.clone()))
        });
        found
    }

    /// The space of the export a binding of `space` binds resource `name` (`<plural>.<group>`) from, under export
    /// identity `identity` (where its schema is: an export serves its own workspace's schemas).
    pub fn provider_of(&self, space: &SpaceName, name: &str, identity: &str) -> Option<SpaceName> {
        let inner = self.read();
        let found = inner.bindings.get(space)?.iter().flat_map(|(_, resources)| resources.iter()).find(|r| r.name == name && r.identity == identity).map(|r| r.schema_space.clone());
        found
    }

    /// Whether a binding of `space` binds resource `name` (`<plural>.<group>`) under export identity `identity`.
    pub fn binds(&self, space: &SpaceName, name: &str, identity: &str) -> bool {
        self.bound_by(space, name).is_some_and(|(_, bound)| bound == identity)
    }

    /// The rows of the resources an export serves: schemas `schemas` of `space` under `identity` (what its
    /// virtual workspace serves, bound anywhere or not).
    pub fn exported(&self, space: &SpaceName, schemas: &[String], identity: &str) -> Vec<Arc<ResourceInfo>> {
        let resources: Vec<BoundResource> = {
            let inner = self.read();
            schemas.iter().filter_map(|name| {
                let schema = inner.schemas.get(space)?.get(name)?;
                let definition = schema.definition.as_ref()?;
                Some(BoundResource {
                    name: definition.name.clone(),
                    schema_space: space.clone(),
                    schema: name.clone(),
                    uid: schema.uid.clone(),
                    identity: identity.to_owned(),
                    key: format!("{}/{identity}", schema.uid),
                })
            }).collect()
        };
        let rows = |inner: &Inner| -> Option<Vec<Arc<ResourceInfo>>> {
            let compiled: Option<Vec<&Arc<Served>>> = resources.iter().map(|r| inner.bound.get(&r.key)).collect();
            compiled.map(|served| served.iter().flat_map(|s| s.local.iter().cloned()).collect())
        };
        if let Some(found) = rows(&self.read()) {
            return found;
        }
        let mut inner = self.write();
        inner.compile(&resources);
        resources.iter().filter_map(|r| inner.bound.get(&r.key)).flat_map(|served| served.local.iter().cloned()).collect()
    }

    /// The storage row of resource `group`/`plural` served under export identity `identity`, if a binding or a
    /// virtual workspace compiled it.
    pub fn identity_row(&self, identity: &str, group: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        let inner = self.read();
        let found = inner.bound.values().flat_map(|served| served.storage.iter()).find(|r| {
            r.group == group && r.plural == plural && r.custom.as_ref().is_some_and(|c| c.identity == ApiIdentity::Shared(identity.to_owned()))
        }).cloned();
        found
    }

    /// The definition of APIResourceSchema `name` of `space`, with its uid, if it compiles.
    pub fn schema(&self, space: &SpaceName, name: &str) -> Option<(String, Arc<Definition>)> {
        let inner = self.read();
        let schema = inner.schemas.get(space)?.get(name)?;
        Some((schema.uid.clone(), schema.definition.clone()?))
    }

    /// Applies one APIResourceSchema write (`None`: deleted): compiled once, and the bindings waiting for it served.
    pub fn apply_schema(&self, space: &SpaceName, name: &str, schema: Option<&Value>, revision: Revision) {
        let parsed = schema.map(|schema| Arc::new(Schema {
            uid: schema.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_owned(),
            definition: crate::apis::kcp::parse(schema).ok().map(Arc::new),
        }));
        let mut inner = self.write();
        if !inner.schemas.entry(space.clone()).or_default().apply(name.to_owned(), parsed, revision) {
            return;
        }
        let waiting: Vec<Arc<Vec<BoundResource>>> = inner.bindings.values().flat_map(|m| m.iter().map(|(_, r)| r.clone()))
            .chain(inner.retained.iter().map(|(_, r)| r.clone()))
            .filter(|resources| resources.iter().any(|r| r.schema == name && r.schema_space == *space)).collect();
        if waiting.is_empty() {
            return;
        }
        for resources in waiting {
            inner.compile(&resources);
        }
        inner.changed(None);
    }

    /// Applies one APIBinding write (`None`: deleted): what its `status.boundResources` binds.
    pub fn apply_binding(&self, space: &SpaceName, name: &str, binding: Option<&Value>, revision: Revision) {
        let resources = binding.map(|binding| {
            let cluster = binding.pointer("/status/apiExportClusterName").and_then(Value::as_str).unwrap_or_default();
            let schema_space = crate::registry::store::space_of_cluster(cluster);
            let bound = binding.pointer("/status/boundResources").and_then(Value::as_array).into_iter().flatten();
            Arc::new(bound.filter_map(|r| {
                let text = |pointer: &str| r.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_owned();
                let (uid, identity) = (text("/schema/UID"), text("/schema/identityHash"));
                Some(BoundResource {
                    name: format!("{}.{}", text("/resource"), text("/group")),
                    schema_space: schema_space.clone()?,
                    schema: text("/schema/name"),
                    key: format!("{uid}/{identity}"),
                    uid,
                    identity,
                })
            }).collect::<Vec<_>>())
        });
        let mut inner = self.write();
        let map = inner.bindings.entry(space.clone()).or_default();
        let before: Vec<String> = map.get(name).map(|r| r.iter().map(|r| r.key.clone()).collect()).unwrap_or_default();
        let after: Vec<String> = resources.as_ref().map(|r| r.iter().map(|r| r.key.clone()).collect()).unwrap_or_default();
        if !map.apply(name.to_owned(), resources.clone(), revision) {
            return;
        }
        if let Some(resources) = &resources {
            inner.compile(resources);
        }
        if before != after {
            let bound = inner.bindings.values().flat_map(|m| m.iter().flat_map(|(_, r)| r.iter()));
            let retained = inner.retained.iter().flat_map(|(_, r)| r.iter());
            let used: std::collections::HashSet<&String> = bound.chain(retained).map(|r| &r.key).collect();
            let unused: Vec<String> = inner.bound.keys().filter(|k| !used.contains(k)).cloned().collect();
            for key in unused {
                inner.bound.remove(&key);
            }
            inner.changed(Some(space));
        }
    }

    /// Applies one CRD write (`None`: deleted). A CRD that does not parse (stored by an older build) is not
    /// served.
    pub fn apply_crd(&self, space: &SpaceName, name: &str, crd: Option<&Value>, revision: Revision) {
        let parsed = crd.and_then(|crd| match Definition::parse(crd) {
            Ok(definition) => Some(Arc::new(Served::new(definition, space.is_system(), crd))),
            Err(errors) => {
                tracing::warn!(%space, name, ?errors, "stored CRD is invalid; not serving it");
                None
            }
        });
        let mut inner = self.write();
        if inner.spaces.entry(space.clone()).or_default().apply(name.to_owned(), parsed, revision) {
            inner.changed(Some(space));
        }
    }

    /// Applies one LogicalCluster write: the space's `spec.crdPolicy`.
    pub fn apply_policy(&self, space: &SpaceName, logical_cluster: Option<&Value>, revision: Revision) {
        let policy = logical_cluster
            .and_then(|lc| lc.pointer("/spec/crdPolicy"))
            .and_then(Value::as_str)
            .and_then(CrdPolicy::parse)
            .unwrap_or_default();
        let retained = logical_cluster.and_then(|lc| lc.pointer(BOUND_RESOURCES)).and_then(Value::as_array)
            .map(|list| Arc::new(list.iter().filter_map(retained_resource).collect::<Vec<_>>()));
        let mut inner = self.write();
        if let Some(resources) = &retained {
            inner.compile(resources);
        }
        inner.retained.apply(space.clone(), retained, revision);
        let unchanged = inner.policies.get(space).copied().unwrap_or_default() == policy;
        if inner.policies.apply(space.clone(), Some(policy), revision) && !unchanged {
            inner.changed(Some(space));
        }
    }
}

/// One entry of a LogicalCluster's `status.boundResources`.
fn retained_resource(entry: &Value) -> Option<BoundResource> {
    let text = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let (uid, identity) = (text("UID"), text("identityHash"));
    Some(BoundResource {
        name: format!("{}.{}", text("resource"), text("group")),
        schema_space: crate::registry::store::space_of_cluster(&text("schemaCluster"))?,
        schema: text("schema"),
        key: format!("{uid}/{identity}"),
        uid,
        identity,
    })
}

/// A CRD version's schema as OpenAPI publishes it: `apiVersion`, `kind` and `metadata` described as kube does.
fn published_schema(mut schema: Value) -> Value {
    if let Some(object) = schema.as_object_mut() {
        let properties = object.entry("properties").or_insert_with(|| Value::Object(Map::new()));
        if let Some(properties) = properties.as_object_mut() {
            properties.insert("apiVersion".into(), json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}));
            properties.insert("kind".into(), json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}));
            properties.insert("metadata".into(), json!({"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}));
        }
    }
    schema
}

/// The row the caches' feed tells observers a stored object's write under: a built-in's, or the storage row of
/// a CRD or bound API whose objects the space stores.
impl Rows for Resolver {
    fn row(&self, space: &SpaceName, parts: &KeyParts<'_>) -> Option<Arc<ResourceInfo>> {
        let identity = match parts.identity {
            "builtin" => return self.builtin.all().iter().find(|r| r.group == parts.group && r.plural == parts.resource).cloned(),
            "local" => ApiIdentity::Local,
            hash => ApiIdentity::shared(hash).ok()?,
        };
        self.stored_in(space).into_iter().find(|r| r.group == parts.group && r.plural == parts.resource && r.identity() == identity)
    }
}

impl WriteObserver for Resolver {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[("apiextensions.k8s.io", "CustomResourceDefinition"), ("core.kcp.io", "LogicalCluster"), (APIS_GROUP, "APIResourceSchema"), (APIS_GROUP, "APIBinding")]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        if resource.is("apiextensions.k8s.io", "CustomResourceDefinition") {
            self.apply_crd(space, name, object, revision);
        } else if resource.is("core.kcp.io", "LogicalCluster") {
            self.apply_policy(space, object, revision);
        } else if resource.is(APIS_GROUP, "APIResourceSchema") {
            self.apply_schema(space, name, object, revision);
        } else if resource.is(APIS_GROUP, "APIBinding") {
            self.apply_binding(space, name, object, revision);
        } else if resource.is("", "Tenant") {
            // Its labels (in `TenantCache`, told first) may change which system CRDs apply to its spaces.
            let mut inner = self.write();
            let labelled = inner.tenants.with_labels(name, |labels| labels.is_some());
            let was = if labelled { !inner.labelled.insert(name.to_owned()) } else { inner.labelled.remove(name) };
            if labelled || was {
                inner.changed(None);
            }
        }
    }

    fn holds(&self, resource: &ResourceInfo) -> Vec<(SpaceName, String)> {
        fn by_space<V>(maps: &HashMap<SpaceName, RevisionMap<String, V>>) -> Vec<(SpaceName, String)> {
            maps.iter().flat_map(|(space, names)| names.keys().map(move |name| (space.clone(), name.clone()))).collect()
        }
        let inner = self.read();
        if resource.is("apiextensions.k8s.io", "CustomResourceDefinition") {
            by_space(&inner.spaces)
        } else if resource.is(APIS_GROUP, "APIResourceSchema") {
            by_space(&inner.schemas)
        } else if resource.is(APIS_GROUP, "APIBinding") {
            by_space(&inner.bindings)
        } else if resource.is("core.kcp.io", "LogicalCluster") {
            let spaces: BTreeSet<&SpaceName> = inner.policies.keys().chain(inner.retained.keys()).collect();
            spaces.into_iter().map(|space| (space.clone(), LOGICAL_CLUSTER_NAME.to_owned())).collect()
        } else {
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::resources as builtin_resources;

    fn crd(plural: &str, uid: &str, labels: Value, annotations: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.example.com"), "uid": uid, "labels": labels, "annotations": annotations},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": plural, "kind": "Widget"},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v0", "served": false, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}},
                ],
            },
        })
    }

    fn space(name: &str) -> SpaceName {
        SpaceName::new(name).unwrap_or_else(|e| panic!("{e}"))
    }

    fn tenant_row() -> ResourceInfo {
        builtin_resources().into_iter().find(|r| r.is("", "Tenant")).unwrap_or_else(|| panic!("no Tenant row"))
    }

    fn policy(name: &str) -> Value {
        json!({"kind": "LogicalCluster", "spec": {"crdPolicy": name}})
    }

    /// Which definition serves `widgets` in `tenant`: "local", "system", or "-" for none.
    fn served(crds: &Resolver, tenant: &str) -> &'static str {
        match crds.lookup(&Spaces::One(space(tenant)), "example.com", "v1", "widgets") {
            None => "-",
            Some(r) => match r.custom.as_ref().map(|c| &c.identity) {
                Some(ApiIdentity::Local) => "local",
                Some(ApiIdentity::Shared(_)) => "system",
                _ => "builtin",
            },
        }
    }

    #[test]
    fn resolution_follows_forced_label_policy_and_applicable_range() {
        let tenants = Arc::new(TenantCache::default());
        let crds = Resolver::new(ResourceTable::new(builtin_resources()), tenants.clone(), Arc::default());
        let system = SpaceName::system();
        let mut revision = 0;
        let mut next = || {
            revision += 1;
            Revision(revision)
        };
        assert_eq!(served(&crds, "t1"), "-");
        crds.apply_crd(&system, "widgets.example.com", Some(&crd("widgets", "u1", json!({}), json!({}))), next());
        assert_eq!((served(&crds, "t1"), served(&crds, "system")), ("system", "local"));
        crds.apply_crd(&space("t1"), "widgets.example.com", Some(&crd("widgets", "u2", json!({}), json!({}))), next());
        assert_eq!(served(&crds, "t1"), "local", "LocalCRDFirst");
        crds.apply_policy(&space("t1"), Some(&policy("SystemCRDFirst")), next());
        assert_eq!(served(&crds, "t1"), "system");
        crds.apply_policy(&space("t2"), Some(&policy("NeverUseSystemCRDUnlessForced")), next());
        assert_eq!(served(&crds, "t2"), "-");
        // Only gold tenants are in range: t1 falls back to its own CRD, t2 and t3 get nothing.
        let gold = json!({"crd.kspaces.io/applicable-tenants": "tier=gold"});
        let forced = json!({"arktos.futurewei.com/crd-sharing-policy": "FORCED"});
        crds.apply_crd(&system, "widgets.example.com", Some(&crd("widgets", "u1", forced.clone(), gold)), next());
        assert_eq!((served(&crds, "t1"), served(&crds, "t2"), served(&crds, "t3")), ("local", "-", "-"));
        let gold_tenant = json!({"metadata": {"name": "t2", "labels": {"tier": "gold"}}});
        tenants.apply("t2", Some(&gold_tenant), next());
        crds.written(&tenant_row(), &system, "t2", Some(&gold_tenant), next());
        assert_eq!(served(&crds, "t2"), "system", "forced beats NeverUseSystemCRDUnlessForced");
        assert!(crds.forced_on(&space("t2"), "widgets.example.com").is_some());
        assert!(crds.forced_on(&space("t1"), "widgets.example.com").is_none());
        crds.apply_crd(&system, "widgets.example.com", Some(&crd("widgets", "u1", forced, json!({}))), next());
        assert_eq!((served(&crds, "t1"), served(&crds, "t3")), ("system", "system"));
        // An older write arriving late changes nothing; deletion leaves the tenant's own CRD.
        crds.apply_crd(&system, "widgets.example.com", None, Revision(1));
        assert_eq!(served(&crds, "t1"), "system");
        crds.apply_crd(&system, "widgets.example.com", None, next());
        assert_eq!((served(&crds, "t1"), served(&crds, "t2")), ("local", "-"));
    }

    #[test]
    fn rows_serve_only_served_versions_and_keep_a_stable_shared_identity() {
        let crds = Resolver::new(ResourceTable::new(builtin_resources()), Arc::default(), Arc::default());
        let system = SpaceName::system();
        crds.apply_crd(&system, "widgets.example.com", Some(&crd("widgets", "u1", json!({}), json!({}))), Revision(1));
        let t1 = Spaces::One(space("t1"));
        assert!(crds.lookup(&t1, "example.com", "v0", "widgets").is_none(), "served: false");
        let first = crds.lookup(&t1, "example.com", "v1", "widgets").and_then(|r| r.custom.as_ref().map(|c| c.identity.clone()));
        crds.apply_crd(&system, "widgets.example.com", Some(&crd("widgets", "u1", json!({"a": "b"}), json!({}))), Revision(2));
        let again = crds.lookup(&t1, "example.com", "v1", "widgets").and_then(|r| r.custom.as_ref().map(|c| c.identity.clone()));
        assert_eq!(first, again);
        crds.apply_crd(&system, "widgets.example.com", Some(&crd("widgets", "u9", json!({}), json!({}))), Revision(3));
        let recreated = crds.lookup(&t1, "example.com", "v1", "widgets").and_then(|r| r.custom.as_ref().map(|c| c.identity.clone()));
        assert_ne!(first, recreated, "a new uid is a new identity");
        assert_eq!(crds.stored_in(&space("t1")).len(), 1, "the system CRD's shared storage row");
        assert_eq!(crds.storage_rows(&system, "widgets.example.com").len(), 2, "local and shared");
        let view = crds.view(&space("t1"));
        assert!(view.tenant.lookup("example.com", "v1", "widgets").is_some());
        assert!(view.tenant.lookup("", "v1", "nodes").is_none() && view.system.lookup("", "v1", "nodes").is_some());
        assert!(crds.view(&space("t2")).custom.len() == 1);
        assert!(crds.openapi(&space("t1")).is_some_and(|o| o.v3_document("apis/example.com/v1").is_some()));
    }

    fn schema(uid: &str) -> Value {
        json!({"metadata": {"name": "v1.widgets.example.com", "uid": uid}, "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"type": "object"}}]}})
    }

    fn binding(cluster: &str, uid: &str, identity: &str) -> Value {
        json!({"status": {"apiExportClusterName": cluster, "boundResources": [{"group": "example.com", "resource": "widgets",
            "schema": {"name": "v1.widgets.example.com", "UID": uid, "identityHash": identity}}]}})
    }

    #[test]
    fn a_binding_serves_its_export_under_the_identity_between_forced_and_policy() {
        let crds = Resolver::new(ResourceTable::new(builtin_resources()), Arc::default(), Arc::default());
        let (provider, consumer) = (space("provider"), space("consumer"));
        let identity = |crds: &Resolver| crds.lookup(&Spaces::One(space("consumer")), "example.com", "v1", "widgets")
            .and_then(|r| r.custom.as_ref().map(|c| c.identity.clone()));
        // Primed out of order: the binding before its schema.
        crds.apply_binding(&consumer, "widgets", Some(&binding("provider", "s1", "abc123")), Revision(1));
        assert_eq!(identity(&crds), None, "its schema is not known yet");
        crds.apply_schema(&provider, "v1.widgets.example.com", Some(&schema("s1")), Revision(2));
        assert_eq!(identity(&crds), Some(ApiIdentity::Shared("abc123".into())));
        assert_eq!(crds.bound_by(&consumer, "widgets.example.com"), Some(("widgets".into(), "abc123".into())));
        assert_eq!(crds.provider_of(&consumer, "widgets.example.com", "abc123"), Some(provider.clone()), "the export's workspace");
        assert_eq!(crds.provider_of(&consumer, "widgets.example.com", "other"), None);
        assert_eq!(crds.view(&consumer).custom.len(), 1);
        assert_eq!(crds.stored_in(&consumer).len(), 1, "emptying the workspace deletes the bound objects");
        // The workspace's own CRD does not shadow the binding; a forced system CRD does.
        crds.apply_crd(&consumer, "widgets.example.com", Some(&crd("widgets", "u2", json!({}), json!({}))), Revision(3));
        assert_eq!(identity(&crds), Some(ApiIdentity::Shared("abc123".into())));
        let forced = json!({"arktos.futurewei.com/crd-sharing-policy": "FORCED"});
        crds.apply_crd(&SpaceName::system(), "widgets.example.com", Some(&crd("widgets", "u1", forced, json!({}))), Revision(4));
        assert!(matches!(identity(&crds), Some(ApiIdentity::Shared(id)) if id.starts_with('s')), "the forced system CRD's shared identity");
        crds.apply_crd(&SpaceName::system(), "widgets.example.com", None, Revision(5));
        // The export's own rows (its virtual workspace) are the bound ones.
        let exported = crds.exported(&provider, &["v1.widgets.example.com".into()], "abc123");
        assert_eq!(exported.len(), 1);
        crds.apply_binding(&consumer, "widgets", None, Revision(6));
        assert_eq!(identity(&crds), Some(ApiIdentity::Local), "unbound: the workspace's own CRD again");
    }
}
