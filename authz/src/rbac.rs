//! Kubernetes RBAC rule semantics, as `k8s.io/component-helpers/auth/rbac` evaluates them: which rules a user
//! holds in a space (from its bindings) and whether one of them covers a request.
//!
//! Pure data in, decisions out. Not wired into the server yet: the authorization issue puts a casbin-backed,
//! per-space, cached evaluator on top of these semantics. Every rule field and wildcard is table-tested below.

use crate::UserInfo;

/// `*` in verbs, apiGroups, resources and nonResourceURLs.
pub const ALL: &str = "*";

/// One `rules[]` entry of a Role or ClusterRole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    /// `pods`, `deployments/scale`, `*`, `*/scale`.
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    /// `/healthz`, `/apis/*`, `*`.
    pub non_resource_urls: Vec<String>,
}

/// What a request asks to do.
#[derive(Clone, Debug, PartialEq, Eq)]
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

/// `*` matches every path; a trailing `*` matches by prefix; otherwise the path must be equal.
fn url_matches(rule: &str, path: &str) -> bool {
    rule == ALL || rule == path || rule.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix))
}

/// A binding's subject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    User(String),
    Group(String),
    ServiceAccount { namespace: String, name: String },
}

impl Subject {
    /// True if `user` is this subject. Subjects are resolved within the binding's own space, so a `User admin`
    /// subject in tenant t1's space names t1's admin only (the space check happens before rules are read).
    pub fn matches(&self, user: &UserInfo) -> bool {
        match self {
            Subject::User(name) => *name == user.name,
            Subject::Group(group) => user.in_group(group),
            Subject::ServiceAccount { namespace, name } => user.name == format!("system:serviceaccount:{namespace}:{name}"),
        }
    }
}

/// A RoleBinding (`namespace: Some`) or ClusterRoleBinding (`None`) with the rules of the role it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub namespace: Option<String>,
    pub subjects: Vec<Subject>,
    pub rules: Vec<PolicyRule>,
}

impl Grant {
    /// A RoleBinding grants only inside its namespace; a ClusterRoleBinding everywhere in its space.
    fn applies_to(&self, attributes: &Attributes) -> bool {
        match (&self.namespace, attributes) {
            (None, _) => true,
            (Some(bound), Attributes::Resource { namespace: Some(requested), .. }) => bound == requested,
            (Some(_), _) => false,
        }
    }
}

/// True if one of `grants` (the bindings of the request's space) allows `user` to do `attributes`.
pub fn allows(grants: &[Grant], user: &UserInfo, attributes: &Attributes) -> bool {
    grants.iter().any(|grant| {
        grant.applies_to(attributes)
            && grant.subjects.iter().any(|subject| subject.matches(user))
            && grant.rules.iter().any(|rule| rule_allows(rule, attributes))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
        PolicyRule { verbs: strings(verbs), api_groups: strings(groups), resources: strings(resources), resource_names: strings(names), non_resource_urls: vec![] }
    }

    fn url_rule(verbs: &[&str], urls: &[&str]) -> PolicyRule {
        PolicyRule { verbs: strings(verbs), non_resource_urls: strings(urls), ..PolicyRule::default() }
    }

    fn request(verb: &str, group: &str, resource: &str, subresource: &str, name: &str, namespace: Option<&str>) -> Attributes {
        Attributes::Resource {
            verb: verb.into(), group: group.into(), resource: resource.into(), subresource: subresource.into(),
            name: name.into(), namespace: namespace.map(str::to_owned),
        }
    }

    fn path(verb: &str, path: &str) -> Attributes {
        Attributes::NonResource { verb: verb.into(), path: path.into() }
    }

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
        ];
        for (rule, attributes, expected) in cases {
            assert_eq!(rule_allows(&rule, &attributes), expected, "{rule:?} vs {attributes:?}");
        }
    }

    #[test]
    fn bindings_grant_within_their_namespace_to_their_subjects() {
        let view = vec![rule(&["get", "list", "watch"], &[""], &["configmaps"], &[])];
        let grants = vec![
            Grant { namespace: Some("dev".into()), subjects: vec![Subject::User("alice".into())], rules: view.clone() },
            Grant { namespace: None, subjects: vec![Subject::Group("auditors".into())], rules: view.clone() },
            Grant { namespace: Some("ci".into()), subjects: vec![Subject::ServiceAccount { namespace: "ci".into(), name: "bot".into() }], rules: view },
        ];
        let user = |name: &str, groups: &[&str]| UserInfo::authenticated(name.into(), String::new(), strings(groups), Some("t1".into()));
        let list = |namespace: Option<&str>| request("list", "", "configmaps", "", "", namespace);
        let alice = user("alice", &[]);
        assert!(allows(&grants, &alice, &list(Some("dev"))));
        assert!(!allows(&grants, &alice, &list(Some("prod"))));
        assert!(!allows(&grants, &alice, &list(None)), "a RoleBinding never grants all-namespaces access");
        let auditor = user("bob", &["auditors"]);
        assert!(allows(&grants, &auditor, &list(Some("prod"))) && allows(&grants, &auditor, &list(None)));
        assert!(!allows(&grants, &auditor, &request("delete", "", "configmaps", "", "x", Some("prod"))));
        let bot = user("system:serviceaccount:ci:bot", &["system:serviceaccounts"]);
        assert!(allows(&grants, &bot, &list(Some("ci"))));
        assert!(!allows(&grants, &user("system:serviceaccount:dev:bot", &[]), &list(Some("ci"))));
        assert!(!allows(&grants, &user("carol", &[]), &list(Some("dev"))));
    }
}
