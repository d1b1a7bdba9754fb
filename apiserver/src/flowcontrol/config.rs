//! The FlowSchemas and PriorityLevelConfigurations compiled for classification: schemas in kube's matching order
//! (`matchingPrecedence`, then name), each with its subjects and rules and its level, and every level's seats from
//! its `nominalConcurrencyShares` share of the server's total.

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::http::header::HeaderValue;
use kspaces_authz::UserInfo;
use serde_json::Value;

use super::metrics::{FlowMetrics, SchemaMetrics};
use super::queueset::{Params, QueueSet, Queuing};
use crate::apis::request_info::RequestInfo;

/// kube's default `nominalConcurrencyShares` of a Limited level that names none.
pub const DEFAULT_SHARES: u32 = 30;
/// kube's queuing defaults.
pub const DEFAULT_QUEUES: u32 = 64;
pub const DEFAULT_HAND_SIZE: u32 = 8;
pub const DEFAULT_QUEUE_LENGTH_LIMIT: u32 = 50;
/// kube's default `matchingPrecedence`.
pub const DEFAULT_PRECEDENCE: i64 = 1000;

/// How a schema tells flows apart, besides the tenant (always part of a flow here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distinguisher {
    None,
    ByUser,
    ByNamespace,
}

/// A priority level: its UID (for the response header), whether it is exempt, and its queue set.
pub struct Level {
    pub name: String,
    pub uid: Option<HeaderValue>,
    pub exempt: bool,
    pub set: Arc<QueueSet>,
}

/// A FlowSchema, compiled.
pub struct Schema {
    pub name: String,
    pub uid: Option<HeaderValue>,
    pub precedence: i64,
    pub distinguisher: Distinguisher,
    rules: Vec<RuleSet>,
    pub level: Arc<Level>,
    pub metrics: SchemaMetrics,
}

struct RuleSet {
    subjects: Vec<Subject>,
    resources: Vec<ResourceRule>,
    non_resources: Vec<NonResourceRule>,
}

enum Subject {
    User(String),
    Group(String),
    ServiceAccount { namespace: String, name: String },
}

struct ResourceRule {
    verbs: Vec<String>,
    groups: Vec<String>,
    resources: Vec<String>,
    namespaces: Vec<String>,
    cluster_scope: bool,
}

struct NonResourceRule {
    verbs: Vec<String>,
    urls: Vec<String>,
}

/// The compiled configuration.
#[derive(Default)]
pub struct Config {
    /// In matching order.
    pub schemas: Vec<Arc<Schema>>,
    pub levels: HashMap<String, Arc<Level>>,
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value.and_then(Value::as_array).map(|items| items.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default()
}

fn text<'a>(value: &'a Value, path: &str) -> &'a str {
    value.pointer(path).and_then(Value::as_str).unwrap_or_default()
}

fn number(value: &Value, path: &str) -> Option<i64> {
    value.pointer(path).and_then(Value::as_i64)
}

fn uid(object: &Value) -> Option<HeaderValue> {
    HeaderValue::from_str(text(object, "/metadata/uid")).ok().filter(|v| !v.is_empty())
}

/// What a PriorityLevelConfiguration's spec says, before seats are shared out.
struct LevelSpec {
    exempt: bool,
    shares: u32,
    queuing: Option<Queuing>,
}

fn level_spec(object: &Value) -> LevelSpec {
    if text(object, "/spec/type") == "Exempt" {
        let shares = number(object, "/spec/exempt/nominalConcurrencyShares").unwrap_or(0);
        return LevelSpec { exempt: true, shares: u32::try_from(shares).unwrap_or(0), queuing: None };
    }
    let shares = number(object, "/spec/limited/nominalConcurrencyShares").unwrap_or(i64::from(DEFAULT_SHARES));
    let queuing = match text(object, "/spec/limited/limitResponse/type") {
        "Reject" => None,
        _ => Some(Queuing {
            queues: number(object, "/spec/limited/limitResponse/queuing/queues").and_then(|n| u32::try_from(n).ok()).unwrap_or(DEFAULT_QUEUES).max(1),
            hand_size: number(object, "/spec/limited/limitResponse/queuing/handSize").and_then(|n| u32::try_from(n).ok()).unwrap_or(DEFAULT_HAND_SIZE).max(1),
            queue_length_limit: number(object, "/spec/limited/limitResponse/queuing/queueLengthLimit")
                .and_then(|n| u32::try_from(n).ok()).unwrap_or(DEFAULT_QUEUE_LENGTH_LIMIT).max(1),
        }),
    };
    LevelSpec { exempt: false, shares: u32::try_from(shares).unwrap_or(0), queuing }
}

impl Config {
    /// Compiles the stored objects; levels of `previous` with the same name keep their queue set (with its
    /// waiting and running requests), reconfigured. Every level's seats are `ceil(total × shares / Σ shares)`, as
    /// kube shares `--max-requests-inflight` + `--max-mutating-requests-inflight` out, and at least one.
    pub fn compile<'a>(levels: impl Iterator<Item = &'a Value>, schemas: impl Iterator<Item = &'a Value>, total_seats: u32,
        previous: &Config, metrics: &FlowMetrics) -> Config {
        let specs: Vec<(&Value, LevelSpec)> = levels.map(|object| (object, level_spec(object))).collect();
        let shares: u64 = specs.iter().map(|(_, spec)| u64::from(spec.shares)).sum::<u64>().max(1);
        let mut compiled = HashMap::new();
        for (object, spec) in specs {
            let name = text(object, "/metadata/name").to_owned();
            let seats = (u64::from(total_seats) * u64::from(spec.shares)).div_ceil(shares).clamp(1, u64::from(u32::MAX)) as u32;
            let params = Params { seats, queuing: spec.queuing };
            let set = match previous.levels.get(&name) {
                Some(level) if !level.exempt && !spec.exempt => {
                    level.set.reconfigure(params);
                    level.set.clone()
                }
                _ => Arc::new(QueueSet::new(params)),
            };
            metrics.nominal_limit(&name, if spec.exempt && spec.shares == 0 { 0 } else { seats });
            let level = Level { name: name.clone(), uid: uid(object), exempt: spec.exempt, set };
            compiled.insert(name, Arc::new(level));
        }
        let mut schemas: Vec<Arc<Schema>> = schemas
            .filter_map(|object| {
                let level = compiled.get(text(object, "/spec/priorityLevelConfiguration/name"))?.clone();
                Some(Arc::new(Schema::compile(object, level, metrics)))
            })
            .collect();
        schemas.sort_by(|a, b| a.precedence.cmp(&b.precedence).then_with(|| a.name.cmp(&b.name)));
        Config { schemas, levels: compiled }
    }

    /// The first schema (in matching order) that matches the request.
    pub fn classify(&self, request: &Attributes<'_>) -> Option<&Arc<Schema>> {
        self.schemas.iter().find(|schema| schema.matches(request))
    }
}

/// What classification reads of a request.
pub struct Attributes<'a> {
    pub user: &'a UserInfo,
    pub info: &'a RequestInfo,
}

impl Schema {
    fn compile(object: &Value, level: Arc<Level>, metrics: &FlowMetrics) -> Schema {
        let name = text(object, "/metadata/name").to_owned();
        let distinguisher = match text(object, "/spec/distinguisherMethod/type") {
            "ByUser" => Distinguisher::ByUser,
            "ByNamespace" => Distinguisher::ByNamespace,
            _ => Distinguisher::None,
        };
        let rules = object.pointer("/spec/rules").and_then(Value::as_array).map(|rules| rules.iter().map(RuleSet::compile).collect()).unwrap_or_default();
        let schema_metrics = metrics.schema(&name, &level.name);
        Schema {
            uid: uid(object),
            precedence: number(object, "/spec/matchingPrecedence").unwrap_or(DEFAULT_PRECEDENCE),
            distinguisher,
            rules,
            metrics: schema_metrics,
            level,
            name,
        }
    }

    /// kube's `matchesFlowSchema`: some rule set whose subjects and rules both match.
    pub fn matches(&self, request: &Attributes<'_>) -> bool {
        self.rules.iter().any(|rules| rules.matches(request))
    }

    /// The flow's distinguisher value (the user's name, the namespace, or nothing).
    pub fn distinguish<'a>(&self, request: &Attributes<'a>) -> &'a str {
        match self.distinguisher {
            Distinguisher::None => "",
            Distinguisher::ByUser => &request.user.name,
            Distinguisher::ByNamespace => request.info.namespace.as_deref().unwrap_or_default(),
        }
    }
}

impl RuleSet {
    fn compile(rules: &Value) -> RuleSet {
        let subjects = rules.get("subjects").and_then(Value::as_array).map(|subjects| subjects.iter().filter_map(|subject| {
            Some(match text(subject, "/kind") {
                "User" => Subject::User(text(subject, "/user/name").to_owned()),
                "Group" => Subject::Group(text(subject, "/group/name").to_owned()),
                "ServiceAccount" => Subject::ServiceAccount {
                    namespace: text(subject, "/serviceAccount/namespace").to_owned(),
                    name: text(subject, "/serviceAccount/name").to_owned(),
                },
                _ => return None,
            })
        }).collect()).unwrap_or_default();
        let list = |key: &str| rules.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
        let resources = list("resourceRules").iter().map(|rule| ResourceRule {
            verbs: strings(rule.get("verbs")),
            groups: strings(rule.get("apiGroups")),
            resources: strings(rule.get("resources")),
            namespaces: strings(rule.get("namespaces")),
            cluster_scope: rule.get("clusterScope").and_then(Value::as_bool).unwrap_or(false),
        }).collect();
        let non_resources = list("nonResourceRules").iter().map(|rule| NonResourceRule {
            verbs: strings(rule.get("verbs")),
            urls: strings(rule.get("nonResourceURLs")),
        }).collect();
        RuleSet { subjects, resources, non_resources }
    }

    fn matches(&self, request: &Attributes<'_>) -> bool {
        if !self.subjects.iter().any(|subject| subject.matches(request.user)) {
            return false;
        }
        if request.info.is_resource {
            self.resources.iter().any(|rule| rule.matches(request.info))
        } else {
            self.non_resources.iter().any(|rule| rule.matches(request.info))
        }
    }
}

const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

impl Subject {
    fn matches(&self, user: &UserInfo) -> bool {
        match self {
            Subject::User(name) => name == "*" || *name == user.name,
            Subject::Group(name) => name == "*" || user.groups.iter().any(|group| group == name),
            Subject::ServiceAccount { namespace, name } => {
                let Some((ns, sa)) = user.name.strip_prefix(SERVICE_ACCOUNT_PREFIX).and_then(|rest| rest.split_once(':')) else {
                    return false;
                };
                ns == namespace && (name == "*" || name == sa)
            }
        }
    }
}

fn listed(items: &[String], wanted: &str) -> bool {
    items.iter().any(|item| item == "*" || item == wanted)
}

impl ResourceRule {
    /// kube's `matchesResourcePolicyRule`: verb, group, resource (or `resource/subresource`), and namespace (a
    /// cluster-scoped request only when `clusterScope`).
    fn matches(&self, info: &RequestInfo) -> bool {
        if !listed(&self.verbs, &info.verb) || !listed(&self.groups, &info.group) {
            return false;
        }
        let resource_matches = self.resources.iter().any(|resource| {
            resource == "*"
                || match info.subresource.as_str() {
                    "" => *resource == info.resource,
                    subresource => resource.strip_prefix(info.resource.as_str()).and_then(|rest| rest.strip_prefix('/')) == Some(subresource),
                }
        });
        if !resource_matches {
            return false;
        }
        match info.namespace.as_deref() {
            None | Some("") => self.cluster_scope,
            Some(namespace) => listed(&self.namespaces, namespace),
        }
    }
}

impl NonResourceRule {
    /// kube's `matchesNonResourcePolicyRule`: verb, and the path whole, `*`, or a `prefix/*`.
    fn matches(&self, info: &RequestInfo) -> bool {
        listed(&self.verbs, &info.verb)
            && self.urls.iter().any(|url| {
                url == "*" || *url == info.path || url.strip_suffix('*').is_some_and(|prefix| prefix.ends_with('/') && info.path.starts_with(prefix))
            })
    }
}
