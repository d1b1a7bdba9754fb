//! Kubernetes RBAC rule semantics, as `k8s.io/component-helpers/auth/rbac` evaluates them: what a rule is (and
//! how it reads from and writes to JSON), and whether one rule allows one request.
//!
//! Pure data in, decisions out. `policy` builds a space's indexed, cached evaluator on top of `rule_allows`;
//! `escalation` and `aggregate` reuse `PolicyRule`. Every rule field and wildcard is table-tested below.

use std::fmt;

use serde_json::{Map, Value};

use crate::UserInfo;

/// `*` in verbs, apiGroups, resources and nonResourceURLs.
pub const ALL: &str = "*";

/// One `rules[]` entry of a Role or ClusterRole.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    /// `pods`, `deployments/scale`, `*`, `*/scale`.
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    /// `/healthz`, `/apis/*`, `*`.
    pub non_resource_urls: Vec<String>,
}

/// What a request asks to do. `Hash` so a decision cache can key on the whole request.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Attributes {
    Resource {
        verb: String,
        group: String,
        resource: String,
        subresource: String,
        /// Empty for list, watch, create and deletecollection.
        name: String,
        /// `None` for cluster-scoped resources and all-namespaces requests.
        namespace: Option<String>,
    },
    NonResource { verb: String, path: String },
}

/// The JSON field names of a rule, in the order `to_json` writes them.
const VERBS: &str = "verbs";
const API_GROUPS: &str = "apiGroups";
const RESOURCES: &str = "resources";
const RESOURCE_NAMES: &str = "resourceNames";
const NON_RESOURCE_URLS: &str = "nonResourceURLs";

impl PolicyRule {
    /// Reads a stored `rules[]` entry. A missing or `null` list is empty (Go's `omitempty`); anything that is
    /// not an object of string lists is `None`, so a malformed rule can never be read as a broader one.
    pub fn from_json(value: &Value) -> Option<PolicyRule> {
        let object = value.as_object()?;
        Some(PolicyRule {
            verbs: string_list(object, VERBS)?,
            api_groups: string_list(object, API_GROUPS)?,
            resources: string_list(object, RESOURCES)?,
            resource_names: string_list(object, RESOURCE_NAMES)?,
            non_resource_urls: string_list(object, NON_RESOURCE_URLS)?,
        })
    }

    /// The stored form: empty lists are omitted (as Kubernetes serializes them) except `verbs`, which is required.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert(VERBS.to_owned(), Value::from(self.verbs.clone()));
        for (key, list) in [
            (API_GROUPS, &self.api_groups),
            (RESOURCES, &self.resources),
            (RESOURCE_NAMES, &self.resource_names),
            (NON_RESOURCE_URLS, &self.non_resource_urls),
        ] {
            if !list.is_empty() {
                object.insert(key.to_owned(), Value::from(list.clone()));
            }
        }
        Value::Object(object)
    }
}

/// `Some(empty)` for a missing or null field, `None` if the field is not a list of strings.
fn string_list(object: &Map<String, Value>, key: &str) -> Option<Vec<String>> {
    match object.get(key) {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Array(items)) => items.iter().map(|item| item.as_str().map(str::to_owned)).collect(),
        Some(_) => None,
    }
}

/// kube-apiserver's `CompactString`, the form escalation errors list missing rules in:
/// `{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["web"], Verbs:["get" "list"]}`. Empty fields
/// are left out; lists print as Go prints a `[]string` with `%q`, so messages match kubectl users' expectations.
impl fmt::Display for PolicyRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fields = [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ];
        let parts: Vec<String> =
            fields.iter().filter(|(_, list)| !list.is_empty()).map(|(name, list)| format!("{name}:{}", go_quote_list(list))).collect();
        write!(f, "{{{}}}", parts.join(", "))
    }
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub(crate) fn go_quote_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| go_quote(item)).collect();
    format!("[{}]", quoted.join(" "))
}

/// Go's `strconv.Quote`, which kube-apiserver's messages use through `%q`: quotes and backslashes escaped,
/// control characters written as escapes, other characters (including non-ASCII) as they are.
pub(crate) fn go_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    push_go_quoted(&mut quoted, &[text]);
    quoted
}

/// Appends `parts`, joined, as one Go-quoted string: allow reasons are built in one buffer on the request path.
pub(crate) fn push_go_quoted(out: &mut String, parts: &[&str]) {
    out.push('"');
    for character in parts.iter().flat_map(|part| part.chars()) {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x80 && c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

impl Attributes {
    pub fn verb(&self) -> &str {
        match self {
            Attributes::Resource { verb, .. } | Attributes::NonResource { verb, .. } => verb,
        }
    }

    /// The namespace RoleBindings are looked up in: `None` for non-resource requests, cluster-scoped resources
    /// and all-namespaces requests (an empty namespace counts as none, as in kube's attributes).
    pub fn namespace(&self) -> Option<&str> {
        match self {
            Attributes::Resource { namespace, .. } => namespace.as_deref().filter(|ns| !ns.is_empty()),
            Attributes::NonResource { .. } => None,
        }
    }

    pub fn is_resource_request(&self) -> bool {
        matches!(self, Attributes::Resource { .. })
    }
}

fn matches(list: &[String], value: &str) -> bool {
    list.iter().any(|item| item == ALL || item == value)
}

/// True if `rule` allows `attributes`. Resource rules never match non-resource requests and vice versa.
pub fn rule_allows(rule: &PolicyRule, attributes: &Attributes) -> bool {
    match attributes {
        Attributes::Resource { verb, group, resource, subresource, name, .. } => {
            matches(&rule.verbs, verb)
                && matches(&rule.api_groups, group)
                && resource_matches(&rule.resources, resource, subresource)
                && (rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name))
        }
        Attributes::NonResource { verb, path } => {
            matches(&rule.verbs, verb) && rule.non_resource_urls.iter().any(|url| url_matches(url, path))
        }
    }
}

/// `*` matches every resource and subresource; `pods/log` matches exactly; `*/scale` matches any resource's
/// `scale` subresource. A rule for `pods` does not cover `pods/log`.
fn resource_matches(rules: &[String], resource: &str, subresource: &str) -> bool {
    rules.iter().any(|rule| {
        rule == ALL
            || (subresource.is_empty() && rule == resource)
            || (!subresource.is_empty()
                && (rule.strip_prefix(resource).and_then(|r| r.strip_prefix('/')) == Some(subresource)
                    || rule.strip_prefix("*/") == Some(subresource)))
    })
}

/// A one-word summary of the verbs and resources a list of rules names (a 64-bit Bloom filter each), so a
/// decision can pass over a role that cannot allow a request without reading its rules: a deny reads every rule
/// of every candidate binding otherwise, and on a server with thousands of spaces those are cold in the CPU's
/// caches. It may let through a role that then allows nothing (then the rules decide), never the reverse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RuleFilter {
    verbs: u64,
    resources: u64,
}

/// What a `RuleFilter` needs of a request, computed once per decision.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FilterProbe {
    verb: u64,
    /// `None` for non-resource requests (URLs are not summarized).
    resources: Option<u64>,
}

impl RuleFilter {
    pub(crate) fn of(rules: &[PolicyRule]) -> RuleFilter {
        let mut filter = RuleFilter::default();
        for rule in rules {
            filter.verbs |= rule.verbs.iter().map(|verb| if verb == ALL { u64::MAX } else { filter_bit(&[verb]) }).fold(0, |a, b| a | b);
            filter.resources |=
                rule.resources.iter().map(|resource| if resource == ALL { u64::MAX } else { filter_bit(&[resource]) }).fold(0, |a, b| a | b);
        }
        filter
    }

    pub(crate) fn may_allow(&self, probe: &FilterProbe) -> bool {
        self.verbs & probe.verb != 0 && probe.resources.is_none_or(|resources| self.resources & resources != 0)
    }
}

impl FilterProbe {
    /// A request's resource can be named by a rule as `pods`, or as `pods/log` or `*/log` for a subresource.
    pub(crate) fn of(attributes: &Attributes) -> FilterProbe {
        match attributes {
            Attributes::Resource { verb, resource, subresource, .. } => {
                let resources = if subresource.is_empty() {
                    filter_bit(&[resource])
                } else {
                    filter_bit(&[resource, "/", subresource]) | filter_bit(&["*/", subresource])
                };
                FilterProbe { verb: filter_bit(&[verb]), resources: Some(resources) }
            }
            Attributes::NonResource { verb, .. } => FilterProbe { verb: filter_bit(&[verb]), resources: None },
        }
    }
}

/// The filter bit of the concatenation of `parts` (FNV-1a: fast, and the same however the text is split).
fn filter_bit(parts: &[&str]) -> u64 {
    let hash = parts.iter().flat_map(|part| part.bytes()).fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    1 << (hash % 64)
}

/// `*` matches every path; a trailing `*` matches by prefix; otherwise the path must be equal.
fn url_matches(rule: &str, path: &str) -> bool {
    rule == ALL || rule == path || rule.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix))
}

/// `system:serviceaccount:<namespace>:<name>` is a ServiceAccount's user name.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// A binding's subject, as the authorizer matches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    User(String),
    Group(String),
    /// `namespace` is already defaulted to the RoleBinding's own namespace when the subject left it empty.
    ServiceAccount { namespace: String, name: String },
}

impl Subject {
    /// True if `user` is this subject. Subjects are resolved within the binding's own space, so a `User admin`
    /// subject in tenant t1's space names t1's admin only (the space check happens before rules are read).
    /// A ServiceAccount without a namespace matches nobody, as in kube (a ClusterRoleBinding has none to lend it).
    pub fn matches(&self, user: &UserInfo) -> bool {
        match self {
            Subject::User(name) => *name == user.name,
            Subject::Group(group) => user.in_group(group),
            Subject::ServiceAccount { namespace, name } => {
                !namespace.is_empty() && service_account_of(&user.name, namespace) == Some(name.as_str())
            }
        }
    }

    /// kube's `describeSubject`, used in allow reasons: `User "alice"`, `Group "dev"`, `ServiceAccount "bot/ci"`.
    pub fn describe(&self) -> String {
        let mut description = String::new();
        self.push_description(&mut description);
        description
    }

    pub(crate) fn push_description(&self, out: &mut String) {
        match self {
            Subject::User(name) => {
                out.push_str("User ");
                push_go_quoted(out, &[name]);
            }
            Subject::Group(name) => {
                out.push_str("Group ");
                push_go_quoted(out, &[name]);
            }
            Subject::ServiceAccount { namespace, name } => {
                out.push_str("ServiceAccount ");
                push_go_quoted(out, &[name, "/", namespace]);
            }
        }
    }
}

/// The ServiceAccount name in `user_name` if it is `system:serviceaccount:<namespace>:<name>`; compared piecewise
/// (no formatting) because it runs for every candidate binding of every decision.
fn service_account_of<'a>(user_name: &'a str, namespace: &str) -> Option<&'a str> {
    user_name.strip_prefix(SERVICE_ACCOUNT_PREFIX)?.strip_prefix(namespace)?.strip_prefix(':')
}

/// Rule and request builders for the tests of every module.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::{Attributes, PolicyRule};

    pub fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    pub fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
        PolicyRule { verbs: strings(verbs), api_groups: strings(groups), resources: strings(resources), resource_names: strings(names), non_resource_urls: vec![] }
    }

    pub fn url_rule(verbs: &[&str], urls: &[&str]) -> PolicyRule {
        PolicyRule { verbs: strings(verbs), non_resource_urls: strings(urls), ..PolicyRule::default() }
    }

    pub fn request(verb: &str, group: &str, resource: &str, subresource: &str, name: &str, namespace: Option<&str>) -> Attributes {
        Attributes::Resource {
            verb: verb.into(), group: group.into(), resource: resource.into(), subresource: subresource.into(),
            name: name.into(), namespace: namespace.map(str::to_owned),
        }
    }

    pub fn path(verb: &str, path: &str) -> Attributes {
        Attributes::NonResource { verb: verb.into(), path: path.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    /// (rule, request, allowed): every rule field and wildcard, as Kubernetes evaluates them.
    #[test]
    fn rule_table() {
        let pods_get = rule(&["get"], &[""], &["pods"], &[]);
        let cases: Vec<(PolicyRule, Attributes, bool)> = vec![
            (pods_get.clone(), request("get", "", "pods", "", "p", Some("ns")), true),
            (pods_get.clone(), request("list", "", "pods", "", "", Some("ns")), false),
            (pods_get.clone(), request("get", "apps", "pods", "", "p", Some("ns")), false),
            (pods_get.clone(), request("get", "", "secrets", "", "s", Some("ns")), false),
            (pods_get.clone(), request("get", "", "pods", "log", "p", Some("ns")), false),
            (pods_get.clone(), path("get", "/healthz"), false),
            (rule(&["*"], &[""], &["pods"], &[]), request("deletecollection", "", "pods", "", "", None), true),
            (rule(&["get"], &["*"], &["deployments"], &[]), request("get", "apps", "deployments", "", "d", Some("ns")), true),
            (rule(&["get"], &["apps"], &["*"], &[]), request("get", "apps", "deployments", "scale", "d", Some("ns")), true),
            (rule(&["get"], &["apps"], &["*"], &[]), request("get", "", "pods", "", "p", Some("ns")), false),
            (rule(&["update"], &["apps"], &["deployments/scale"], &[]), request("update", "apps", "deployments", "scale", "d", Some("ns")), true),
            (rule(&["update"], &["apps"], &["deployments/scale"], &[]), request("update", "apps", "deployments", "", "d", Some("ns")), false),
            (rule(&["update"], &["apps"], &["deployments/scale"], &[]), request("update", "apps", "replicasets", "scale", "r", Some("ns")), false),
            (rule(&["update"], &["apps"], &["*/scale"], &[]), request("update", "apps", "replicasets", "scale", "r", Some("ns")), true),
            (rule(&["update"], &["apps"], &["*/scale"], &[]), request("update", "apps", "replicasets", "status", "r", Some("ns")), false),
            (rule(&["update"], &["apps"], &["*/scale"], &[]), request("update", "apps", "replicasets", "", "r", Some("ns")), false),
            (rule(&["get"], &[""], &["configmaps"], &["one"]), request("get", "", "configmaps", "", "one", Some("ns")), true),
            (rule(&["get"], &[""], &["configmaps"], &["one"]), request("get", "", "configmaps", "", "two", Some("ns")), false),
            (rule(&["list"], &[""], &["configmaps"], &["one"]), request("list", "", "configmaps", "", "", Some("ns")), false),
            (rule(&["create"], &[""], &["configmaps"], &["one"]), request("create", "", "configmaps", "", "", Some("ns")), false),
            (url_rule(&["get"], &["/healthz"]), path("get", "/healthz"), true),
            (url_rule(&["get"], &["/healthz"]), path("get", "/healthz/ping"), false),
            (url_rule(&["get"], &["/healthz*"]), path("get", "/healthz/ping"), true),
            (url_rule(&["get"], &["/apis/*"]), path("get", "/apis/apps/v1"), true),
            (url_rule(&["get"], &["/apis/*"]), path("get", "/api/v1"), false),
            (url_rule(&["get"], &["*"]), path("get", "/anything"), true),
            (url_rule(&["get"], &["*"]), path("post", "/anything"), false),
            (url_rule(&["*"], &["*"]), request("get", "", "pods", "", "p", Some("ns")), false),
            (rule(&[], &["*"], &["*"], &[]), request("get", "", "pods", "", "p", None), false),
            (rule(&["*"], &["*"], &["*"], &[]), request("escalate", "rbac.authorization.k8s.io", "roles", "", "r", None), true),
            (rule(&["get"], &[""], &["*"], &[]), request("get", "", "pods", "log", "p", Some("ns")), true),
            (rule(&["get"], &[""], &["pods/log"], &[]), request("get", "", "pods", "log", "p", Some("ns")), true),
            (rule(&["get"], &[""], &["pods/log"], &[]), request("get", "", "pods", "", "p", Some("ns")), false),
            (rule(&["get"], &[""], &["pods/*"], &[]), request("get", "", "pods", "log", "p", Some("ns")), false),
            (rule(&["get"], &[""], &["*/log"], &[]), request("get", "", "pods", "log", "p", Some("ns")), true),
            (rule(&["get"], &[""], &["*/log"], &[]), request("get", "", "pods", "logs", "p", Some("ns")), false),
            (rule(&["get"], &["apps"], &["deployments"], &[]), request("get", "", "deployments", "", "d", Some("ns")), false),
            (rule(&["GET"], &[""], &["pods"], &[]), request("get", "", "pods", "", "p", Some("ns")), false),
            (rule(&["get"], &[""], &["configmaps"], &["*"]), request("get", "", "configmaps", "", "one", Some("ns")), false),
            (rule(&["get"], &[""], &["configmaps"], &["a", "b"]), request("get", "", "configmaps", "", "b", Some("ns")), true),
            (rule(&["update"], &[""], &["pods/status"], &["p"]), request("update", "", "pods", "status", "p", Some("ns")), true),
            (url_rule(&["get"], &["/healthz/*"]), path("get", "/healthz"), false),
            (url_rule(&["get"], &["/healthz", "/version"]), path("get", "/version"), true),
            (url_rule(&["get"], &["/healthz"]), path("get", "/healthz/"), false),
        ];
        for (rule, attributes, expected) in cases {
            assert_eq!(rule_allows(&rule, &attributes), expected, "{rule:?} vs {attributes:?}");
            if expected {
                assert!(RuleFilter::of(std::slice::from_ref(&rule)).may_allow(&FilterProbe::of(&attributes)), "filter lets {attributes:?} through");
            }
        }
    }

    #[test]
    fn rules_read_and_write_the_stored_json_shape() {
        let stored = serde_json::json!({"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"], "verbs": ["get"]});
        let parsed = PolicyRule::from_json(&stored).expect("a valid rule");
        assert_eq!(parsed, rule(&["get"], &["apps"], &["deployments"], &["web"]));
        assert_eq!(parsed.to_json(), stored);
        let urls = PolicyRule::from_json(&serde_json::json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"], "apiGroups": null}));
        assert_eq!(urls, Some(url_rule(&["get"], &["/healthz"])));
        assert_eq!(PolicyRule::default().to_json(), serde_json::json!({"verbs": []}), "verbs is never omitted");
        for malformed in [serde_json::json!("rule"), serde_json::json!({"verbs": "get"}), serde_json::json!({"verbs": ["get", 1]})] {
            assert_eq!(PolicyRule::from_json(&malformed), None, "{malformed}");
        }
    }

    #[test]
    fn rules_display_in_kube_compact_form() {
        assert_eq!(rule(&["create"], &[""], &["pods"], &[]).to_string(), r#"{APIGroups:[""], Resources:["pods"], Verbs:["create"]}"#);
        assert_eq!(
            rule(&["get", "list"], &["apps"], &["deployments"], &["web"]).to_string(),
            r#"{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["web"], Verbs:["get" "list"]}"#
        );
        assert_eq!(url_rule(&["get"], &["/healthz"]).to_string(), r#"{NonResourceURLs:["/healthz"], Verbs:["get"]}"#);
        assert_eq!(PolicyRule::default().to_string(), "{}");
    }

    #[test]
    fn quoting_follows_go() {
        assert_eq!(go_quote("plain"), r#""plain""#);
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote("line\n\t\u{1}"), r#""line\n\t\x01""#);
        assert_eq!(go_quote("ünï"), "\"ünï\"");
        assert_eq!(go_quote_list(&strings(&["g1", "system:authenticated"])), r#"["g1" "system:authenticated"]"#);
        assert_eq!(go_quote_list(&[]), "[]");
    }

    #[test]
    fn attributes_name_their_verb_and_namespace() {
        assert_eq!(request("list", "", "pods", "", "", Some("dev")).namespace(), Some("dev"));
        assert_eq!(request("list", "", "pods", "", "", Some("")).namespace(), None, "empty is no namespace");
        assert_eq!(request("list", "", "nodes", "", "", None).namespace(), None);
        assert_eq!(path("get", "/healthz").namespace(), None);
        assert_eq!(path("get", "/healthz").verb(), "get");
        assert!(request("get", "", "pods", "", "p", None).is_resource_request() && !path("get", "/").is_resource_request());
    }

    #[test]
    fn subjects_match_users_groups_and_service_accounts() {
        let user = |name: &str, groups: &[&str]| UserInfo::authenticated(name.into(), String::new(), strings(groups), None);
        let service_account = |namespace: &str, name: &str| Subject::ServiceAccount { namespace: namespace.into(), name: name.into() };
        let bot = user("system:serviceaccount:ci:bot", &["system:serviceaccounts"]);
        assert!(service_account("ci", "bot").matches(&bot));
        assert!(!service_account("ci", "bo").matches(&bot));
        assert!(!service_account("c", "i:bot").matches(&user("system:serviceaccount:ci:bot", &[])));
        assert!(!service_account("", "bot").matches(&user("system:serviceaccount::bot", &[])), "no namespace matches nobody");
        assert!(!service_account("dev", "bot").matches(&bot));
        assert!(Subject::Group("system:serviceaccounts".into()).matches(&bot));
        assert!(Subject::Group(crate::AUTHENTICATED.into()).matches(&user("alice", &[])));
        assert!(Subject::User("alice".into()).matches(&user("alice", &[])) && !Subject::User("alice".into()).matches(&user("Alice", &[])));
        assert_eq!(service_account("ci", "bot").describe(), r#"ServiceAccount "bot/ci""#);
        assert_eq!(Subject::User("alice".into()).describe(), r#"User "alice""#);
        assert_eq!(Subject::Group("dev".into()).describe(), r#"Group "dev""#);
    }

    /// Over every rule and request built from a small vocabulary (wildcards included), the filter never turns
    /// away a request a rule allows, and it does turn some away.
    #[test]
    fn the_rule_filter_never_rejects_what_a_rule_allows() {
        let verbs = ["get", "update", "*"];
        let resources = ["pods", "pods/log", "*/log", "*", "deployments/scale", "*/scale"];
        let requests: Vec<Attributes> = ["get", "update", "delete"]
            .iter()
            .flat_map(|verb| {
                [("pods", ""), ("pods", "log"), ("jobs", "log"), ("deployments", "scale"), ("nodes", "")]
                    .map(|(resource, subresource)| request(verb, "", resource, subresource, "x", Some("ns")))
                    .into_iter()
                    .chain([path(verb, "/healthz")])
            })
            .collect();
        let mut rejected = 0;
        for verb in verbs {
            for resource in resources {
                let rules = [rule(&[verb], &[""], &[resource], &[]), url_rule(&[verb], &["/healthz"])];
                let filter = RuleFilter::of(&rules);
                for attributes in &requests {
                    let allowed = rules.iter().any(|rule| rule_allows(rule, attributes));
                    let passed = filter.may_allow(&FilterProbe::of(attributes));
                    assert!(passed || !allowed, "{rules:?} allow {attributes:?} but the filter rejects it");
                    rejected += usize::from(!passed);
                }
            }
        }
        assert!(rejected > 50, "the filter prunes ({rejected} rejected)");
        assert!(!RuleFilter::of(&[]).may_allow(&FilterProbe::of(&path("get", "/"))), "no rules, nothing passes");
    }
}
