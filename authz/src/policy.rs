//! One space's RBAC, indexed for kube-apiserver's RBAC authorizer decisions: `SpacePolicy`.
//!
//! A space (one tenant's isolated world) has its own Roles, ClusterRoles, RoleBindings and ClusterRoleBindings.
//! The server builds a `SpacePolicy` from them, shares it behind an `Arc`, and builds a new one whenever one of
//! them changes, so a policy is immutable except for its decision cache (invalidation is by replacement).
//!
//! Who is bound to what is held by casbin's RBAC-with-domains role manager (`casbin::DefaultRoleManager`): one
//! policy is one partition, a RoleBinding's namespace is a domain and `CLUSTER_DOMAIN` holds the
//! ClusterRoleBindings. Each subject is a node (`user:alice`, `group:dev`; a ServiceAccount is the user
//! `system:serviceaccount:<ns>:<name>`) linked to the bindings naming it (`binding:<index>`). `rules_for` (reviews,
//! escalation checks) asks casbin for the bindings of the requester's name and groups in two domains.
//!
//! `decide` runs on every request, and there casbin's `get_roles` is too slow: it finds the subject's node by a
//! linear scan of the domain's nodes (a string compare each) and allocates a set and a `Vec<String>` per call.
//! Measured with `benches/decisions.rs` (10,000 spaces, 2 cores, all else equal), reading casbin on the request
//! path gave a cold-cache p99 of ~22 µs against ~10 µs, and ~100 µs against ~3 µs (p50) once one namespace held
//! 5,000 bindings. So the same loop that feeds casbin also fills a flat index (`BindingIndex`: domain → subject
//! name → links to bindings) that `decide` reads with one hash lookup per name or group and no allocation; a
//! test checks both give the same bindings for every subject. Each link carries its role's rules and a
//! `RuleFilter`, so a role that cannot allow the request is passed over without reading its rules.
//!
//! Rules are not casbin policies. A Kubernetes rule is a product of lists (verbs × apiGroups × resources ×
//! resourceNames), with `*` and `*/subresource` wildcards and trailing-`*` URL prefixes; casbin's `p` tuples
//! would need one line per combination (a single `admin` ClusterRole is hundreds) and its `Enforcer::enforce`
//! scans every policy line evaluating a rhai matcher (~2.7 µs each: a deny over 20k lines takes 54 ms). So each
//! role's rules are parsed once into `PolicyRule`s shared by every binding of that role (`Arc`), and the
//! candidate bindings' rules are matched natively with `rbac::rule_allows`, in kube's order: ClusterRoleBindings
//! first, then the RoleBindings of the request's namespace, each group by name; the first allowing rule wins.
//!
//! Identical rule lists are shared between all policies of the process (`RuleSets`): every space carries the
//! same bootstrap roles, so they are parsed into one copy that stays in the CPU's caches, instead of 10,000
//! copies scattered over the heap (measured: a third less memory, and a cold deny's p99 halved).

use std::borrow::Cow;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

use casbin::{DefaultRoleManager, RoleManager};
use serde_json::Value;

use crate::rbac::{
    push_go_quoted, rule_allows, Attributes, FilterProbe, PolicyRule, RuleFilter, Subject, SERVICE_ACCOUNT_PREFIX,
};
use crate::UserInfo;

/// The casbin domain of ClusterRoleBindings. `*` is no valid namespace name, so it never meets a RoleBinding's.
pub const CLUSTER_DOMAIN: &str = "*";
/// Decisions a policy remembers before it forgets them all (see `DecisionCache`).
pub const DEFAULT_CACHE_CAPACITY: usize = 4096;
/// The API group (before `/version`) whose objects a policy reads.
const RBAC_API_GROUP_PREFIX: &str = "rbac.authorization.k8s.io/";
/// Subject → binding is one hop; casbin's hierarchy limit only bounds `has_link`, which is not used.
const LINK_DEPTH: usize = 1;
const BINDING_KEY_PREFIX: &str = "binding:";

/// An authorizer's answer. `reason` is kube's allow reason (`RBAC: allowed by ...`), empty on deny.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

impl Decision {
    fn deny() -> Decision {
        Decision { allowed: false, reason: String::new() }
    }
}

/// A binding's `roleRef`, resolved: a RoleBinding's Role lives in the binding's namespace.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RoleRef {
    Role { namespace: String, name: String },
    ClusterRole(String),
}

impl RoleRef {
    fn kind_and_name(&self) -> (&'static str, &str) {
        match self {
            RoleRef::Role { name, .. } => ("Role", name),
            RoleRef::ClusterRole(name) => ("ClusterRole", name),
        }
    }
}

/// A RoleBinding (`namespace: Some`) or ClusterRoleBinding, with its role's rules resolved at build time.
#[derive(Debug)]
struct Binding {
    name: String,
    namespace: Option<String>,
    role_ref: RoleRef,
    subjects: Vec<Subject>,
    /// `None` if the role does not exist: the binding grants nothing, as in kube.
    rules: Option<Arc<[PolicyRule]>>,
}

impl Binding {
    /// `RBAC: allowed by ` and kube's `clusterRoleBindingDescriber` / `roleBindingDescriber`, in one buffer.
    fn allow_reason(&self, subject: &Subject) -> String {
        let (role_kind, role_name) = self.role_ref.kind_and_name();
        let mut reason = String::with_capacity(96 + self.name.len() + role_name.len());
        match &self.namespace {
            None => {
                reason.push_str("RBAC: allowed by ClusterRoleBinding ");
                push_go_quoted(&mut reason, &[&self.name]);
            }
            Some(namespace) => {
                reason.push_str("RBAC: allowed by RoleBinding ");
                push_go_quoted(&mut reason, &[&self.name, "/", namespace]);
            }
        }
        reason.push_str(" of ");
        reason.push_str(role_kind);
        reason.push(' ');
        push_go_quoted(&mut reason, &[role_name]);
        reason.push_str(" to ");
        subject.push_description(&mut reason);
        reason
    }

    /// The first subject that is `user`, as kube's `appliesTo` picks it for the reason.
    fn subject_for(&self, user: &UserInfo) -> Option<&Subject> {
        self.subjects.iter().find(|subject| subject.matches(user))
    }

    fn domain(&self) -> &str {
        self.namespace.as_deref().unwrap_or(CLUSTER_DOMAIN)
    }
}

/// One space's RBAC: roles compiled once, bindings indexed by subject per namespace, decisions cached.
pub struct SpacePolicy {
    roles: HashMap<(String, String), Arc<[PolicyRule]>>,
    cluster_roles: HashMap<String, Arc<[PolicyRule]>>,
    /// ClusterRoleBindings by name, then RoleBindings by (namespace, name): index order is evaluation order.
    bindings: Vec<Binding>,
    /// Subject → bindings per domain, for `rules_for`.
    links: DefaultRoleManager,
    /// The same links, for `decide`.
    index: BindingIndex,
    skipped: usize,
    cache: DecisionCache,
}

impl SpacePolicy {
    /// Builds from the space's Roles, ClusterRoles, RoleBindings and ClusterRoleBindings as stored (JSON with
    /// apiVersion `rbac.authorization.k8s.io/v1`). Objects of other kinds and malformed entries are skipped and
    /// counted (`skipped`), never guessed at: a half-read role could grant more than it says.
    pub fn new<'a>(objects: impl IntoIterator<Item = &'a Value>) -> SpacePolicy {
        SpacePolicy::with_cache_capacity(objects, DEFAULT_CACHE_CAPACITY)
    }

    /// As `new`, remembering at most `capacity` decisions (0 turns the cache off).
    pub fn with_cache_capacity<'a>(objects: impl IntoIterator<Item = &'a Value>, capacity: usize) -> SpacePolicy {
        let mut read = ReadObjects::default();
        for object in objects {
            read.add(object);
        }
        let ReadObjects { roles, cluster_roles, mut bindings, skipped } = read;
        bindings.sort_by(|a, b| (a.namespace.is_some(), &a.namespace, &a.name).cmp(&(b.namespace.is_some(), &b.namespace, &b.name)));
        let bindings: Vec<Binding> = bindings
            .into_iter()
            .map(|read| {
                let rules = match &read.role_ref {
                    RoleRef::Role { namespace, name } => roles.get(&(namespace.clone(), name.clone())).cloned(),
                    RoleRef::ClusterRole(name) => cluster_roles.get(name).cloned(),
                };
                Binding { name: read.name, namespace: read.namespace, role_ref: read.role_ref, subjects: read.subjects, rules }
            })
            .collect();
        let (links, index) = link_subjects(&bindings);
        SpacePolicy { roles, cluster_roles, bindings, links, index, skipped, cache: DecisionCache::new(capacity) }
    }

    /// How many objects were not read (other kinds, or malformed).
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// How many decisions are cached (for tests and metrics).
    pub fn cache_len(&self) -> usize {
        self.cache.len()
    }

    /// kube's RBAC authorizer decision for `user` in this space. `system:masters` is not special here.
    pub fn decide(&self, user: &UserInfo, attributes: &Attributes) -> Decision {
        let key = self.cache.key(cache_key(user, attributes));
        if let Some(decision) = self.cache.get(&key) {
            return decision;
        }
        let decision = self.evaluate(user, attributes);
        self.cache.insert(key, decision.clone());
        decision
    }

    fn evaluate(&self, user: &UserInfo, attributes: &Attributes) -> Decision {
        let namespace = attributes.namespace().and_then(|namespace| self.index.namespaces.get(namespace));
        let probe = FilterProbe::of(attributes);
        let mut candidates = Vec::with_capacity(16);
        for domain in std::iter::once(&self.index.cluster).chain(namespace) {
            domain.candidates(user, &mut candidates);
            let allows = |link: &&Link| link.filter.may_allow(&probe) && link.rules.iter().any(|rule| rule_allows(rule, attributes));
            if let Some(link) = candidates.iter().copied().find(allows) {
                let binding = &self.bindings[link.binding];
                return Decision { allowed: true, reason: binding.allow_reason(&binding.subjects[link.subject]) };
            }
        }
        Decision::deny()
    }

    /// Every rule `user` holds for `namespace`: the ClusterRoleBindings' first, then (if `Some`) the
    /// RoleBindings of that namespace. Backs SelfSubjectRulesReview and escalation checks; duplicates are kept.
    pub fn rules_for(&self, user: &UserInfo, namespace: Option<&str>) -> Vec<PolicyRule> {
        let namespace = namespace.filter(|ns| !ns.is_empty());
        self.candidates(user, namespace)
            .into_iter()
            .map(|index| &self.bindings[index])
            .filter(|binding| binding.subject_for(user).is_some())
            .filter_map(|binding| binding.rules.as_deref())
            .flat_map(|rules| rules.iter().cloned())
            .collect()
    }

    /// The rules of a role, or `None` if it does not exist.
    pub fn role_rules(&self, role: &RoleRef) -> Option<Vec<PolicyRule>> {
        let rules = match role {
            RoleRef::Role { namespace, name } => self.roles.get(&(namespace.clone(), name.clone())),
            RoleRef::ClusterRole(name) => self.cluster_roles.get(name),
        };
        rules.map(|rules| rules.to_vec())
    }

    /// Indexes (so: evaluation order) of the bindings naming `user`'s name or one of its groups, in the cluster
    /// domain and the namespace's, as casbin has them. Subjects are matched again by the caller.
    fn candidates(&self, user: &UserInfo, namespace: Option<&str>) -> Vec<usize> {
        let keys: Vec<String> =
            std::iter::once(user_key(&user.name)).chain(user.groups.iter().map(|group| group_key(group))).collect();
        let mut found = Vec::new();
        for domain in std::iter::once(CLUSTER_DOMAIN).chain(namespace) {
            for key in &keys {
                found.extend(self.links.get_roles(key, Some(domain)).iter().filter_map(|node| binding_index(node)));
            }
        }
        found.sort_unstable();
        found.dedup();
        found
    }
}

impl fmt::Debug for SpacePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpacePolicy")
            .field("roles", &self.roles.len())
            .field("cluster_roles", &self.cluster_roles.len())
            .field("bindings", &self.bindings.len())
            .field("skipped", &self.skipped)
            .field("cached_decisions", &self.cache_len())
            .finish()
    }
}

fn user_key(name: &str) -> String {
    format!("user:{name}")
}

fn group_key(name: &str) -> String {
    format!("group:{name}")
}

fn binding_key(index: usize) -> String {
    format!("{BINDING_KEY_PREFIX}{index}")
}

fn binding_index(node: &str) -> Option<usize> {
    node.strip_prefix(BINDING_KEY_PREFIX)?.parse().ok()
}

/// How a subject is linked: by user name (ServiceAccounts by theirs) or group name. `None` for a ServiceAccount
/// without a namespace, which matches nobody.
enum SubjectKey<'a> {
    User(Cow<'a, str>),
    Group(&'a str),
}

impl SubjectKey<'_> {
    fn of(subject: &Subject) -> Option<SubjectKey<'_>> {
        match subject {
            Subject::User(name) => Some(SubjectKey::User(Cow::Borrowed(name))),
            Subject::Group(name) => Some(SubjectKey::Group(name)),
            Subject::ServiceAccount { namespace, .. } if namespace.is_empty() => None,
            Subject::ServiceAccount { namespace, name } => {
                Some(SubjectKey::User(Cow::Owned(format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"))))
            }
        }
    }

    /// The casbin node name.
    fn node(&self) -> String {
        match self {
            SubjectKey::User(name) => user_key(name),
            SubjectKey::Group(name) => group_key(name),
        }
    }
}

/// Links every subject of every binding whose role exists to the binding, in casbin and in the index at once.
fn link_subjects(bindings: &[Binding]) -> (DefaultRoleManager, BindingIndex) {
    let mut links = DefaultRoleManager::new(LINK_DEPTH);
    let mut index = BindingIndex::default();
    for (position, binding) in bindings.iter().enumerate() {
        let Some(rules) = &binding.rules else { continue };
        let filter = RuleFilter::of(rules);
        let node = binding_key(position);
        for (subject, key) in binding.subjects.iter().enumerate().filter_map(|(i, subject)| Some((i, SubjectKey::of(subject)?))) {
            links.add_link(&key.node(), &node, Some(binding.domain()));
            index.add(binding.namespace.as_deref(), &key, Link { binding: position, subject, rules: rules.clone(), filter });
        }
    }
    (links, index)
}

/// Binding indexes by subject name, per domain: what casbin's role manager holds, laid out for one hash lookup
/// per name or group and no allocation on the request path. Each link also records which subject of the binding
/// it came from and the binding's rules, so a decision reads nothing else of a binding until it allows.
#[derive(Default)]
struct BindingIndex {
    cluster: DomainIndex,
    namespaces: HashMap<String, DomainIndex>,
}

#[derive(Default)]
struct DomainIndex {
    users: HashMap<String, Vec<Link>>,
    groups: HashMap<String, Vec<Link>>,
}

/// A subject's link to a binding.
#[derive(Clone)]
struct Link {
    /// Position in `SpacePolicy::bindings`: the evaluation order.
    binding: usize,
    /// Position in the binding's subjects: kube's reason names the first subject that matches.
    subject: usize,
    rules: Arc<[PolicyRule]>,
    /// Passes over `rules` when they cannot allow a request.
    filter: RuleFilter,
}

impl BindingIndex {
    fn add(&mut self, namespace: Option<&str>, key: &SubjectKey<'_>, link: Link) {
        let domain = match namespace {
            None => &mut self.cluster,
            Some(namespace) => self.namespaces.entry(namespace.to_owned()).or_default(),
        };
        let (names, name) = match key {
            SubjectKey::User(name) => (&mut domain.users, name.as_ref()),
            SubjectKey::Group(name) => (&mut domain.groups, *name),
        };
        let links = names.entry(name.to_owned()).or_default();
        if links.last().is_none_or(|last| last.binding != link.binding) {
            links.push(link);
        }
    }
}

impl DomainIndex {
    /// Fills `found` with the links of `user` and its groups: one per binding (its first matching subject), in
    /// evaluation order.
    fn candidates<'a>(&'a self, user: &UserInfo, found: &mut Vec<&'a Link>) {
        found.clear();
        found.extend(self.users.get(user.name.as_str()).into_iter().flatten());
        for group in &user.groups {
            found.extend(self.groups.get(group.as_str()).into_iter().flatten());
        }
        found.sort_unstable_by_key(|link| (link.binding, link.subject));
        found.dedup_by_key(|link| link.binding);
    }
}

/// A binding as read, before its role is resolved.
struct ReadBinding {
    name: String,
    namespace: Option<String>,
    role_ref: RoleRef,
    subjects: Vec<Subject>,
}

/// The objects of a space, sorted by kind while reading.
#[derive(Default)]
struct ReadObjects {
    roles: HashMap<(String, String), Arc<[PolicyRule]>>,
    cluster_roles: HashMap<String, Arc<[PolicyRule]>>,
    bindings: Vec<ReadBinding>,
    skipped: usize,
}

impl ReadObjects {
    fn add(&mut self, object: &Value) {
        if self.try_add(object).is_none() {
            self.skipped += 1;
        }
    }

    /// `None` if `object` is not an RBAC object this policy can read.
    fn try_add(&mut self, object: &Value) -> Option<()> {
        if !object.get("apiVersion")?.as_str()?.starts_with(RBAC_API_GROUP_PREFIX) {
            return None;
        }
        let name = non_empty(object.pointer("/metadata/name"))?.to_owned();
        let namespace = non_empty(object.pointer("/metadata/namespace")).map(str::to_owned);
        match (object.get("kind")?.as_str()?, namespace) {
            ("Role", Some(namespace)) => {
                self.roles.insert((namespace, name), read_rules(object)?);
            }
            ("ClusterRole", _) => {
                self.cluster_roles.insert(name, read_rules(object)?);
            }
            ("RoleBinding", Some(namespace)) => {
                let role_ref = read_role_ref(object, Some(&namespace))?;
                let subjects = read_subjects(object, &namespace)?;
                self.bindings.push(ReadBinding { name, namespace: Some(namespace), role_ref, subjects });
            }
            ("ClusterRoleBinding", _) => {
                let role_ref = read_role_ref(object, None)?;
                let subjects = read_subjects(object, "")?;
                self.bindings.push(ReadBinding { name, namespace: None, role_ref, subjects });
            }
            _ => return None,
        }
        Some(())
    }
}

fn non_empty(value: Option<&Value>) -> Option<&str> {
    value?.as_str().filter(|text| !text.is_empty())
}

/// A role's `rules` (missing or null: none); `None` if any rule is malformed.
fn read_rules(role: &Value) -> Option<Arc<[PolicyRule]>> {
    match role.get("rules") {
        None | Some(Value::Null) => Some(shared_rules(Vec::new())),
        Some(Value::Array(rules)) => rules.iter().map(PolicyRule::from_json).collect::<Option<Vec<_>>>().map(shared_rules),
        Some(_) => None,
    }
}

/// `roleRef`; a ClusterRoleBinding may only name a ClusterRole (kube's validation), a RoleBinding either kind.
fn read_role_ref(binding: &Value, namespace: Option<&str>) -> Option<RoleRef> {
    let role_ref = binding.get("roleRef")?;
    let name = non_empty(role_ref.get("name"))?.to_owned();
    match (role_ref.get("kind")?.as_str()?, namespace) {
        ("ClusterRole", _) => Some(RoleRef::ClusterRole(name)),
        ("Role", Some(namespace)) => Some(RoleRef::Role { namespace: namespace.to_owned(), name }),
        _ => None,
    }
}

/// `subjects` (missing or null: none). A ServiceAccount without a namespace gets the binding's (`""` for a
/// ClusterRoleBinding: it then matches nobody); subjects of unknown kinds are dropped (they match nobody in kube).
fn read_subjects(binding: &Value, binding_namespace: &str) -> Option<Vec<Subject>> {
    let subjects = match binding.get("subjects") {
        None | Some(Value::Null) => return Some(Vec::new()),
        Some(subjects) => subjects.as_array()?,
    };
    let mut read = Vec::with_capacity(subjects.len());
    for subject in subjects {
        let name = non_empty(subject.get("name"))?.to_owned();
        match subject.get("kind")?.as_str()? {
            "User" => read.push(Subject::User(name)),
            "Group" => read.push(Subject::Group(name)),
            "ServiceAccount" => {
                let namespace = non_empty(subject.get("namespace")).unwrap_or(binding_namespace).to_owned();
                read.push(Subject::ServiceAccount { namespace, name });
            }
            _ => {}
        }
    }
    Some(read)
}

/// Every policy's rule lists, so identical lists (the bootstrap roles of every space, a chart's roles installed
/// by many tenants) share one allocation. Entries are weak: a list is freed with the last policy using it, and
/// dead entries are swept once they could make up half the table.
struct RuleSets {
    hasher: RandomState,
    sets: HashMap<u64, Vec<Weak<[PolicyRule]>>>,
    entries: usize,
    sweep_at: usize,
    min_sweep: usize,
}

static RULE_SETS: LazyLock<Mutex<RuleSets>> = LazyLock::new(|| Mutex::new(RuleSets::new(1024)));

/// The process's shared copy of `rules`.
fn shared_rules(rules: Vec<PolicyRule>) -> Arc<[PolicyRule]> {
    RULE_SETS.lock().unwrap_or_else(PoisonError::into_inner).intern(rules)
}

impl RuleSets {
    fn new(min_sweep: usize) -> RuleSets {
        RuleSets { hasher: RandomState::new(), sets: HashMap::new(), entries: 0, sweep_at: min_sweep, min_sweep }
    }

    fn intern(&mut self, rules: Vec<PolicyRule>) -> Arc<[PolicyRule]> {
        let bucket = self.sets.entry(self.hasher.hash_one(&rules)).or_default();
        if let Some(shared) = bucket.iter().filter_map(Weak::upgrade).find(|shared| **shared == *rules) {
            return shared;
        }
        let shared: Arc<[PolicyRule]> = Arc::from(rules);
        bucket.push(Arc::downgrade(&shared));
        self.entries += 1;
        if self.entries >= self.sweep_at {
            self.sweep();
        }
        shared
    }

    /// Drops the entries of lists no policy holds any more.
    fn sweep(&mut self) {
        self.sets.retain(|_, bucket| {
            bucket.retain(|set| set.strong_count() > 0);
            !bucket.is_empty()
        });
        self.entries = self.sets.values().map(Vec::len).sum();
        self.sweep_at = (self.entries * 2).max(self.min_sweep);
    }
}

/// A bounded map from a whole request (user name, groups, attributes) to its decision. The key is the request
/// encoded canonically (every field length-prefixed, so distinct requests never encode alike) and compared in
/// full by the map, so two requests can never share an answer by a hash collision; one allocation per entry.
/// When full it is emptied rather than evicting one by one: simpler, and a policy lives only until its space's
/// RBAC next changes.
struct DecisionCache {
    capacity: usize,
    hasher: RandomState,
    decisions: Mutex<HashMap<CacheKey, Decision>>,
}

/// An encoded request and its hash, computed once: growing the map then rehashes from the bucket array alone
/// instead of reading every stored key (which, with thousands of spaces, are cold in the CPU's caches).
#[derive(PartialEq, Eq)]
struct CacheKey {
    hash: u64,
    request: Box<[u8]>,
}

impl Hash for CacheKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl DecisionCache {
    fn new(capacity: usize) -> DecisionCache {
        DecisionCache { capacity, hasher: RandomState::new(), decisions: Mutex::new(HashMap::new()) }
    }

    fn key(&self, request: Vec<u8>) -> CacheKey {
        CacheKey { hash: self.hasher.hash_one(&request), request: request.into_boxed_slice() }
    }

    fn get(&self, key: &CacheKey) -> Option<Decision> {
        self.decisions.lock().unwrap_or_else(PoisonError::into_inner).get(key).cloned()
    }

    fn insert(&self, key: CacheKey, decision: Decision) {
        if self.capacity == 0 {
            return;
        }
        let mut decisions = self.decisions.lock().unwrap_or_else(PoisonError::into_inner);
        if decisions.len() >= self.capacity {
            decisions.clear();
        }
        decisions.insert(key, decision);
    }

    fn len(&self) -> usize {
        self.decisions.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// The cache key of a request: everything a decision depends on, each field length-prefixed.
fn cache_key(user: &UserInfo, attributes: &Attributes) -> Vec<u8> {
    let fields: [&str; 6] = match attributes {
        Attributes::Resource { verb, group, resource, subresource, name, namespace } => {
            [verb, group, resource, subresource, name, namespace.as_deref().unwrap_or_default()]
        }
        Attributes::NonResource { verb, path } => [verb, path, "", "", "", ""],
    };
    let strings = std::iter::once(user.name.as_str()).chain(user.groups.iter().map(String::as_str)).chain(fields);
    let length = 2 + 4 + strings.clone().map(|field| 4 + field.len()).sum::<usize>();
    let mut key = Vec::with_capacity(length);
    let kind = match attributes {
        Attributes::Resource { namespace: Some(_), .. } => 0,
        Attributes::Resource { namespace: None, .. } => 1,
        Attributes::NonResource { .. } => 2,
    };
    key.push(kind);
    key.extend_from_slice(&u32::try_from(user.groups.len()).unwrap_or(u32::MAX).to_le_bytes());
    for field in strings {
        key.extend_from_slice(&u32::try_from(field.len()).unwrap_or(u32::MAX).to_le_bytes());
        key.extend_from_slice(field.as_bytes());
    }
    key
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::rbac::fixtures::path;

    fn role(namespace: &str, name: &str, rules: Value) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name, "namespace": namespace}, "rules": rules})
    }

    fn cluster_role(name: &str, rules: Value) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
    }

    /// A RoleBinding (`namespace: Some`) or ClusterRoleBinding of `role` ("Role/x" or "ClusterRole/x").
    fn binding(namespace: Option<&str>, name: &str, role: &str, subjects: Value) -> Value {
        let (role_kind, role_name) = role.split_once('/').expect("Kind/name");
        let kind = if namespace.is_some() { "RoleBinding" } else { "ClusterRoleBinding" };
        let mut metadata = json!({"name": name});
        if let Some(namespace) = namespace {
            metadata["namespace"] = json!(namespace);
        }
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": metadata,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
            "subjects": subjects,
        })
    }

    fn user_subject(name: &str) -> Value {
        json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name})
    }

    fn group_subject(name: &str) -> Value {
        json!({"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": name})
    }

    fn service_account_subject(namespace: &str, name: &str) -> Value {
        json!({"kind": "ServiceAccount", "namespace": namespace, "name": name})
    }

    /// One space with every binding shape: RoleBindings of Roles and ClusterRoles, ClusterRoleBindings, group
    /// and ServiceAccount subjects, bindings of missing roles.
    fn objects() -> Vec<Value> {
        vec![
            role("dev", "pod-reader", json!([{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]}])),
            role("dev", "web-editor", json!([
                {"verbs": ["update", "patch"], "apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"]},
                {"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments/scale"]},
            ])),
            role("prod", "pod-reader", json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}])),
            cluster_role("view", json!([
                {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]},
                {"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]},
            ])),
            cluster_role("node-reader", json!([
                {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["nodes"]},
                {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/metrics*"]},
            ])),
            cluster_role("everything", json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}])),
            cluster_role("scaler", json!([{"verbs": ["update"], "apiGroups": ["apps"], "resources": ["*/scale"]}])),
            binding(Some("dev"), "read-pods", "Role/pod-reader", json!([user_subject("alice")])),
            binding(Some("dev"), "view-alice", "ClusterRole/view", json!([user_subject("alice")])),
            binding(Some("dev"), "alice-nodes", "ClusterRole/node-reader", json!([user_subject("alice")])),
            binding(Some("dev"), "edit-web", "Role/web-editor", json!([group_subject("web-team")])),
            binding(Some("dev"), "ghost", "Role/missing", json!([user_subject("alice")])),
            binding(Some("dev"), "ci-bot-reads-dev", "Role/pod-reader", json!([service_account_subject("ci", "bot")])),
            binding(Some("ci"), "bot-view", "ClusterRole/view", json!([{"kind": "ServiceAccount", "name": "bot"}])),
            binding(Some("ci"), "prod-role-from-ci", "Role/web-editor", json!([user_subject("alice")])),
            binding(None, "nodes", "ClusterRole/node-reader", json!([group_subject("ops")])),
            binding(None, "root", "ClusterRole/everything", json!([group_subject("admins"), user_subject("root")])),
            binding(Some("dev"), "root-local", "ClusterRole/everything", json!([user_subject("root")])),
            binding(None, "scalers", "ClusterRole/scaler", json!([user_subject("scaler")])),
            binding(None, "sa-without-namespace", "ClusterRole/everything", json!([{"kind": "ServiceAccount", "name": "bot"}])),
            binding(None, "missing", "ClusterRole/nope", json!([group_subject(crate::AUTHENTICATED)])),
        ]
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo::authenticated(name.into(), String::new(), groups.iter().map(|g| g.to_string()).collect(), Some("t1".into()))
    }

    fn request(verb: &str, group: &str, resource: &str, name: &str, namespace: Option<&str>) -> Attributes {
        let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
        Attributes::Resource {
            verb: verb.into(), group: group.into(), resource: resource.into(), subresource: subresource.into(),
            name: name.into(), namespace: namespace.map(str::to_owned),
        }
    }

    /// (user, request, the allow reason or None for deny): kube's RBAC authorizer over `objects()`.
    #[test]
    fn decisions_table() {
        let policy = SpacePolicy::new(&objects());
        let alice = user("alice", &[]);
        let bob = user("bob", &["web-team"]);
        let ops = user("olga", &["ops"]);
        let root = user("root", &["admins"]);
        let bot = user("system:serviceaccount:ci:bot", &["system:serviceaccounts", "system:serviceaccounts:ci"]);
        let cases: Vec<(UserInfo, Attributes, Option<&str>)> = vec![
            (alice.clone(), request("get", "", "pods", "p", Some("dev")), Some(r#"RBAC: allowed by RoleBinding "read-pods/dev" of Role "pod-reader" to User "alice""#)),
            (alice.clone(), request("list", "", "pods", "", Some("dev")), Some(r#"RBAC: allowed by RoleBinding "read-pods/dev" of Role "pod-reader" to User "alice""#)),
            (alice.clone(), request("delete", "", "pods", "p", Some("dev")), None),
            (alice.clone(), request("get", "", "pods", "p", Some("prod")), None),
            (alice.clone(), request("list", "", "pods", "", None), None),
            (alice.clone(), request("list", "", "pods", "", Some("")), None),
            (alice.clone(), request("get", "", "configmaps", "c", Some("dev")), Some(r#"RBAC: allowed by RoleBinding "view-alice/dev" of ClusterRole "view" to User "alice""#)),
            (alice.clone(), request("get", "", "pods/log", "p", Some("dev")), Some(r#"RBAC: allowed by RoleBinding "view-alice/dev" of ClusterRole "view" to User "alice""#)),
            (alice.clone(), request("get", "", "pods/exec", "p", Some("dev")), None),
            (alice.clone(), request("get", "", "configmaps", "c", Some("prod")), None),
            (alice.clone(), request("get", "", "nodes", "n", None), None),
            (alice.clone(), path("get", "/healthz"), None),
            (alice.clone(), request("get", "apps", "deployments/scale", "web", Some("ci")), None),
            (bob.clone(), request("update", "apps", "deployments", "web", Some("dev")), Some(r#"RBAC: allowed by RoleBinding "edit-web/dev" of Role "web-editor" to Group "web-team""#)),
            (bob.clone(), request("update", "apps", "deployments", "api", Some("dev")), None),
            (bob.clone(), request("create", "apps", "deployments", "", Some("dev")), None),
            (bob.clone(), request("update", "", "deployments", "web", Some("dev")), None),
            (bob.clone(), request("get", "apps", "deployments/scale", "api", Some("dev")), Some(r#"RBAC: allowed by RoleBinding "edit-web/dev" of Role "web-editor" to Group "web-team""#)),
            (bob.clone(), request("get", "apps", "deployments", "api", Some("dev")), None),
            (user("bob", &[]), request("update", "apps", "deployments", "web", Some("dev")), None),
            (ops.clone(), request("list", "", "nodes", "", None), Some(r#"RBAC: allowed by ClusterRoleBinding "nodes" of ClusterRole "node-reader" to Group "ops""#)),
            (ops.clone(), request("get", "", "nodes", "n", Some("dev")), Some(r#"RBAC: allowed by ClusterRoleBinding "nodes" of ClusterRole "node-reader" to Group "ops""#)),
            (ops.clone(), path("get", "/healthz"), Some(r#"RBAC: allowed by ClusterRoleBinding "nodes" of ClusterRole "node-reader" to Group "ops""#)),
            (ops.clone(), path("get", "/metrics/slis"), Some(r#"RBAC: allowed by ClusterRoleBinding "nodes" of ClusterRole "node-reader" to Group "ops""#)),
            (ops.clone(), path("post", "/healthz"), None),
            (ops.clone(), path("get", "/version"), None),
            (ops.clone(), request("delete", "", "nodes", "n", None), None),
            (root.clone(), request("delete", "", "secrets", "s", Some("prod")), Some(r#"RBAC: allowed by ClusterRoleBinding "root" of ClusterRole "everything" to Group "admins""#)),
            (user("root", &[]), request("get", "", "pods", "p", Some("dev")), Some(r#"RBAC: allowed by ClusterRoleBinding "root" of ClusterRole "everything" to User "root""#)),
            (root.clone(), request("escalate", "rbac.authorization.k8s.io", "clusterroles", "x", None), Some(r#"RBAC: allowed by ClusterRoleBinding "root" of ClusterRole "everything" to Group "admins""#)),
            (root.clone(), path("get", "/healthz"), None),
            (user("scaler", &[]), request("update", "apps", "replicasets/scale", "r", Some("prod")), Some(r#"RBAC: allowed by ClusterRoleBinding "scalers" of ClusterRole "scaler" to User "scaler""#)),
            (user("scaler", &[]), request("update", "apps", "replicasets", "r", Some("prod")), None),
            (user("scaler", &[]), request("update", "", "replicationcontrollers/scale", "r", Some("prod")), None),
            (bot.clone(), request("list", "", "configmaps", "", Some("ci")), Some(r#"RBAC: allowed by RoleBinding "bot-view/ci" of ClusterRole "view" to ServiceAccount "bot/ci""#)),
            (bot.clone(), request("watch", "", "pods", "", Some("dev")), Some(r#"RBAC: allowed by RoleBinding "ci-bot-reads-dev/dev" of Role "pod-reader" to ServiceAccount "bot/ci""#)),
            (bot.clone(), request("get", "", "configmaps", "c", Some("dev")), None),
            (bot.clone(), request("get", "", "secrets", "s", Some("dev")), None),
            (user("system:serviceaccount:dev:bot", &[]), request("list", "", "configmaps", "", Some("ci")), None),
            (user("carol", &[]), request("get", "", "pods", "p", Some("dev")), None),
            (user("carol", &[]), path("get", "/healthz"), None),
        ];
        for (user, attributes, expected) in cases {
            let decision = policy.decide(&user, &attributes);
            let expected = match expected {
                Some(reason) => Decision { allowed: true, reason: reason.to_owned() },
                None => Decision::deny(),
            };
            assert_eq!(decision, expected, "{} {attributes:?}", user.name);
        }
    }

    #[test]
    fn unreadable_objects_are_skipped_and_counted() {
        let mut everything = objects();
        let readable = everything.len();
        everything.extend([
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "dev"}}),
            json!({"apiVersion": "example.com/v1", "kind": "ClusterRole", "metadata": {"name": "fake"}, "rules": []}),
            json!("not an object"),
            role("", "no-namespace", json!([])),
            role("dev", "bad-rule", json!([{"verbs": "get"}])),
            cluster_role("bad-rules", json!({"verbs": ["get"]})),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "no-ref", "namespace": "dev"}}),
            binding(None, "cluster-binds-role", "Role/pod-reader", json!([user_subject("carol")])),
            binding(Some("dev"), "odd-kind", "Group/x", json!([user_subject("carol")])),
            binding(Some("dev"), "nameless-subject", "Role/pod-reader", json!([{"kind": "User"}])),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {}}),
        ]);
        let policy = SpacePolicy::new(&everything);
        assert_eq!(policy.skipped(), everything.len() - readable);
        assert_eq!(SpacePolicy::new(&objects()).skipped(), 0);
        assert!(!policy.decide(&user("carol", &[]), &request("get", "", "pods", "p", Some("dev"))).allowed);
        assert_eq!(policy.role_rules(&RoleRef::Role { namespace: "dev".into(), name: "bad-rule".into() }), None);
    }

    #[test]
    fn subjects_of_unknown_kinds_match_nobody_but_keep_the_binding() {
        let objects = [
            role("dev", "reader", json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}])),
            binding(Some("dev"), "mixed", "Role/reader", json!([{"kind": "Robot", "name": "carol"}, user_subject("dave")])),
        ];
        let policy = SpacePolicy::new(&objects);
        assert_eq!(policy.skipped(), 0);
        assert!(!policy.decide(&user("carol", &[]), &request("get", "", "pods", "p", Some("dev"))).allowed);
        assert!(policy.decide(&user("dave", &[]), &request("get", "", "pods", "p", Some("dev"))).allowed);
    }

    #[test]
    fn rules_for_lists_cluster_rules_first_then_the_namespace_s() {
        let policy = SpacePolicy::new(&objects());
        let rules = |user: &UserInfo, namespace: Option<&str>| -> Vec<String> {
            policy.rules_for(user, namespace).iter().map(ToString::to_string).collect()
        };
        let alice = user("alice", &["ops"]);
        assert_eq!(rules(&alice, Some("dev")), [
            r#"{APIGroups:[""], Resources:["nodes"], Verbs:["get" "list"]}"#,
            r#"{NonResourceURLs:["/healthz" "/metrics*"], Verbs:["get"]}"#,
            r#"{APIGroups:[""], Resources:["nodes"], Verbs:["get" "list"]}"#,
            r#"{NonResourceURLs:["/healthz" "/metrics*"], Verbs:["get"]}"#,
            r#"{APIGroups:[""], Resources:["pods"], Verbs:["get" "list" "watch"]}"#,
            r#"{APIGroups:[""], Resources:["configmaps"], Verbs:["get" "list"]}"#,
            r#"{APIGroups:[""], Resources:["pods/log"], Verbs:["get"]}"#,
        ], "nodes (cluster), then dev's alice-nodes, read-pods, view-alice by name; ghost's role is missing");
        assert_eq!(rules(&alice, None).len(), 2);
        assert_eq!(rules(&alice, Some("")).len(), 2, "an empty namespace is none");
        assert!(rules(&user("carol", &[]), Some("dev")).is_empty());
    }

    #[test]
    fn role_rules_resolve_roles_in_their_namespace_and_cluster_roles() {
        let policy = SpacePolicy::new(&objects());
        let pod_reader = policy.role_rules(&RoleRef::Role { namespace: "prod".into(), name: "pod-reader".into() }).expect("exists");
        assert_eq!(pod_reader.iter().map(ToString::to_string).collect::<Vec<_>>(), [r#"{APIGroups:[""], Resources:["pods"], Verbs:["get"]}"#]);
        assert_eq!(policy.role_rules(&RoleRef::Role { namespace: "prod".into(), name: "web-editor".into() }), None);
        assert_eq!(policy.role_rules(&RoleRef::ClusterRole("view".into())).map(|rules| rules.len()), Some(2));
        assert_eq!(policy.role_rules(&RoleRef::ClusterRole("nope".into())), None);
        assert_eq!(policy.role_rules(&RoleRef::ClusterRole("pod-reader".into())), None);
    }

    #[test]
    fn decisions_are_cached_per_whole_request_and_replaced_with_the_policy() {
        let mut changed = objects();
        let policy = SpacePolicy::new(&changed);
        let alice = user("alice", &[]);
        let get = request("get", "", "pods", "p", Some("dev"));
        let first = policy.decide(&alice, &get);
        assert_eq!(policy.cache_len(), 1);
        assert_eq!(policy.decide(&alice, &get), first);
        assert_eq!(policy.cache_len(), 1, "a repeat is served from the cache");
        let bob = user("bob", &["web-team"]);
        let update = request("update", "apps", "deployments", "web", Some("dev"));
        assert!(policy.decide(&bob, &update).allowed);
        assert!(!policy.decide(&user("bob", &[]), &update).allowed, "groups are part of the key");
        assert_eq!(policy.cache_len(), 3);

        let delete = request("delete", "", "pods", "p", Some("dev"));
        assert!(!policy.decide(&alice, &delete).allowed);
        changed.push(role("dev", "pod-deleter", json!([{"verbs": ["delete"], "apiGroups": [""], "resources": ["pods"]}])));
        changed.push(binding(Some("dev"), "delete-pods", "Role/pod-deleter", json!([user_subject("alice")])));
        let replaced = SpacePolicy::new(&changed);
        assert!(replaced.decide(&alice, &delete).allowed, "a new policy answers from the new objects");
        assert!(!policy.decide(&alice, &delete).allowed, "the old one keeps its answers until it is dropped");
    }

    #[test]
    fn a_full_cache_starts_over_and_a_zero_capacity_caches_nothing() {
        let policy = SpacePolicy::with_cache_capacity(&objects(), 2);
        let alice = user("alice", &[]);
        for name in ["a", "b"] {
            policy.decide(&alice, &request("get", "", "pods", name, Some("dev")));
        }
        assert_eq!(policy.cache_len(), 2);
        assert!(policy.decide(&alice, &request("get", "", "pods", "c", Some("dev"))).allowed);
        assert_eq!(policy.cache_len(), 1);
        let uncached = SpacePolicy::with_cache_capacity(&objects(), 0);
        assert!(uncached.decide(&alice, &request("get", "", "pods", "c", Some("dev"))).allowed);
        assert_eq!(uncached.cache_len(), 0);
    }

    /// Requests differing anywhere, even only in where a field boundary falls, have different keys.
    #[test]
    fn cache_keys_tell_every_request_apart() {
        let get = |name: &str, namespace: Option<&str>| request("get", "", "pods", name, namespace);
        let keys = [
            cache_key(&user("alice", &[]), &get("p", Some("dev"))),
            cache_key(&user("alice", &["dev"]), &get("p", Some("dev"))),
            cache_key(&user("alice", &["de", "v"]), &get("p", Some("dev"))),
            cache_key(&user("alic", &["e"]), &get("p", Some("dev"))),
            cache_key(&user("mallory", &[]), &get("p", Some("dev"))),
            cache_key(&user("alice", &[]), &get("p", Some(""))),
            cache_key(&user("alice", &[]), &get("p", None)),
            cache_key(&user("alice", &[]), &get("pd", Some("ev"))),
            cache_key(&user("alice", &[]), &request("get", "", "pods/log", "p", Some("dev"))),
            cache_key(&user("alice", &[]), &path("get", "/healthz")),
            cache_key(&user("alice", &[]), &path("get", "/healthz/")),
        ];
        let distinct: std::collections::HashSet<&Vec<u8>> = keys.iter().collect();
        assert_eq!(distinct.len(), keys.len());
        assert_eq!(cache_key(&user("alice", &[]), &get("p", Some("dev"))), keys[0], "and the same request, the same key");
    }

    #[test]
    fn policies_are_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<SpacePolicy>();
        let policy = Arc::new(SpacePolicy::new(&objects()));
        let allowed: usize = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4)
                .map(|worker| {
                    let policy = policy.clone();
                    scope.spawn(move || {
                        (0..50).filter(|i| policy.decide(&user("alice", &[]), &request("get", "", "pods", &format!("p{}", (worker + i) % 7), Some("dev"))).allowed).count()
                    })
                })
                .collect();
            workers.into_iter().map(|worker| worker.join().expect("no panic")).sum()
        });
        assert_eq!(allowed, 200);
        assert_eq!(policy.cache_len(), 7);
    }

    /// The index `decide` reads holds exactly casbin's links: same bindings, same order, for every subject.
    #[test]
    fn the_decision_index_agrees_with_casbin() {
        let policy = SpacePolicy::new(&objects());
        let users = [
            user("alice", &["ops"]), user("bob", &["web-team"]), user("root", &["admins"]), user("scaler", &[]),
            user("system:serviceaccount:ci:bot", &["system:serviceaccounts"]), user("system:serviceaccount:dev:bot", &[]),
            user("nobody", &["nothing"]),
        ];
        let mut checked = 0;
        for user in &users {
            for namespace in [None, Some("dev"), Some("ci"), Some("prod"), Some("elsewhere")] {
                let mut indexed = Vec::new();
                let domains = std::iter::once(&policy.index.cluster).chain(namespace.and_then(|ns| policy.index.namespaces.get(ns)));
                for domain in domains {
                    let mut found = Vec::new();
                    domain.candidates(user, &mut found);
                    for link in found {
                        let binding = &policy.bindings[link.binding];
                        assert_eq!(binding.subject_for(user), Some(&binding.subjects[link.subject]), "first matching subject");
                        assert!(binding.rules.as_ref().is_some_and(|rules| Arc::ptr_eq(rules, &link.rules)));
                        indexed.push(link.binding);
                    }
                }
                assert_eq!(indexed, policy.candidates(user, namespace), "{} in {namespace:?}", user.name);
                checked += indexed.len();
            }
        }
        assert!(checked > 20, "the fixture links many bindings ({checked})");
    }

    #[test]
    fn identical_rule_lists_are_shared_between_policies() {
        let unique = json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["shared-between-policies-test"]}]);
        let objects = [cluster_role("one", unique.clone()), cluster_role("two", unique), role("dev", "empty", json!([]))];
        let (first, second) = (SpacePolicy::new(&objects), SpacePolicy::new(&objects));
        assert!(Arc::ptr_eq(&first.cluster_roles["one"], &second.cluster_roles["one"]));
        assert!(Arc::ptr_eq(&first.cluster_roles["one"], &first.cluster_roles["two"]));
        assert!(!Arc::ptr_eq(&first.cluster_roles["one"], &first.roles[&("dev".to_owned(), "empty".to_owned())]));
    }

    #[test]
    fn rule_lists_no_policy_holds_are_swept() {
        let mut sets = RuleSets::new(4);
        let list = |resource: &str| vec![PolicyRule { verbs: vec!["get".into()], resources: vec![resource.into()], ..PolicyRule::default() }];
        let kept = sets.intern(list("kept"));
        for resource in ["a", "b", "c"] {
            drop(sets.intern(list(resource)));
        }
        assert_eq!(sets.entries, 2, "the fourth entry swept a and b; c was still held while being returned");
        assert_eq!(sets.sweep_at, 4);
        assert!(Arc::ptr_eq(&kept, &sets.intern(list("kept"))));
        assert_eq!(sets.entries, 2, "a held list is found, not added");
        let again = sets.intern(list("a"));
        assert_eq!((sets.entries, again.len()), (3, 1), "a swept list is made anew");
    }
}
