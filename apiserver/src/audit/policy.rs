//! The audit policy (`audit.k8s.io/v1` Policy): which requests the audit log records, and how much of each.
//!
//! Rule semantics follow kube-apiserver's policy checker: rules are tried in order and the first match decides;
//! every selector a rule sets must match; a rule with `resources` or `namespaces` matches only resource
//! requests, one with `nonResourceURLs` only non-resource requests; a request no rule matches is not logged.

use std::path::Path;

use serde::de::IgnoredAny;
use serde::Deserialize;

use super::{AuditError, AuditRequest, Level, Stage};

/// The identity kube-apiserver gives requests without credentials.
pub(crate) const ANONYMOUS: &str = "system:anonymous";
/// The group of requests without credentials.
pub(crate) const UNAUTHENTICATED: &str = "system:unauthenticated";

/// A validated audit policy.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    api_version: String,
    kind: String,
    #[serde(default)]
    metadata: IgnoredAny,
    /// Rules in the order they are tried.
    pub rules: Vec<Rule>,
    /// Stages no event is written for, whatever rule matched.
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    /// Strip `metadata.managedFields` from logged request and response objects (a rule may override it).
    #[serde(default)]
    pub omit_managed_fields: bool,
}

/// One policy rule. An empty selector list matches everything.
///
/// Unknown fields are rejected rather than ignored: a misspelled selector would otherwise silently widen the
/// rule, and for an audit log that can mean writing request bodies (secrets) nobody asked for.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    pub level: Level,
    #[serde(default)]
    pub users: Vec<String>,
    #[serde(default)]
    pub user_groups: Vec<String>,
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    /// `""` matches requests outside any namespace (cluster-scoped resources, and lists across namespaces).
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Exact paths, or prefixes written with a trailing `*`.
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    #[serde(default)]
    pub omit_managed_fields: Option<bool>,
}

/// Resources of one API group a rule selects.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GroupResources {
    /// The API group; `""` is the core group.
    #[serde(default)]
    pub group: String,
    /// `pods`, `pods/log`, `pods/*` (pods and all its subresources), `*/status`, or `*`. Empty selects all.
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// The result of evaluating a policy for one request: the rule that matched, if any.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Decision<'p> {
    policy: &'p Policy,
    rule: Option<&'p Rule>,
}

impl Decision<'_> {
    pub(crate) fn level(&self) -> Level {
        self.rule.map_or(Level::None, |rule| rule.level)
    }

    /// The policy's and the matching rule's omitted stages together, as kube-apiserver combines them.
    pub(crate) fn omits(&self, stage: Stage) -> bool {
        self.policy.omit_stages.contains(&stage) || self.rule.is_some_and(|rule| rule.omit_stages.contains(&stage))
    }

    pub(crate) fn omit_managed_fields(&self) -> bool {
        self.rule.and_then(|rule| rule.omit_managed_fields).unwrap_or(self.policy.omit_managed_fields)
    }
}

impl Policy {
    /// Used when `--audit-log-path` is given without `--audit-policy-file`: every request at `Metadata`.
    /// (kube-apiserver logs nothing without a policy; we log metadata so the path flag alone is useful.)
    pub fn metadata_for_everything() -> Policy {
        Policy {
            api_version: "audit.k8s.io/v1".to_owned(),
            kind: "Policy".to_owned(),
            metadata: IgnoredAny,
            rules: vec![Rule { level: Level::Metadata, ..Rule::default() }],
            omit_stages: Vec::new(),
            omit_managed_fields: false,
        }
    }

    /// Reads and validates a policy file (YAML or JSON).
    pub fn load(path: &Path) -> Result<Policy, AuditError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| AuditError::ReadPolicy { path: path.to_owned(), source })?;
        Policy::parse(&text).map_err(|message| AuditError::InvalidPolicy { path: path.to_owned(), message })
    }

    /// Parses and validates a policy; the error names the offending field.
    pub fn parse(text: &str) -> Result<Policy, String> {
        let value: serde_json::Value = if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|err| format!("not valid JSON: {err}"))?
        } else {
            serde_saphyr::from_str(text).map_err(|err| format!("not valid YAML: {err}"))?
        };
        let policy: Policy = serde_path_to_error::deserialize(value).map_err(|err| err.to_string())?;
        policy.validate()?;
        Ok(policy)
    }

    fn validate(&self) -> Result<(), String> {
        if !matches!(self.api_version.as_str(), "audit.k8s.io/v1" | "audit.k8s.io/v1beta1") {
            return Err(format!("apiVersion: expected audit.k8s.io/v1 or audit.k8s.io/v1beta1, got {:?}", self.api_version));
        }
        if self.kind != "Policy" {
            return Err(format!("kind: expected Policy, got {:?}", self.kind));
        }
        if self.rules.is_empty() {
            return Err("rules: a policy needs at least one rule".to_owned());
        }
        self.rules.iter().enumerate().try_for_each(|(index, rule)| rule.validate().map_err(|why| format!("rules[{index}].{why}")))
    }

    /// Finds the first rule matching a request.
    pub(crate) fn evaluate(&self, request: &AuditRequest<'_>) -> Decision<'_> {
        Decision { policy: self, rule: self.rules.iter().find(|rule| rule.matches(request)) }
    }
}

impl Rule {
    fn validate(&self) -> Result<(), String> {
        let selects_resources = !self.resources.is_empty() || !self.namespaces.is_empty();
        if selects_resources && !self.non_resource_urls.is_empty() {
            return Err("nonResourceURLs: a rule cannot select both resources (or namespaces) and non-resource URLs".to_owned());
        }
        for url in &self.non_resource_urls {
            let head = url.strip_suffix('*').unwrap_or(url);
            if url != "*" && !url.starts_with('/') {
                return Err(format!("nonResourceURLs: {url:?} must begin with '/'"));
            }
            if head.contains('*') {
                return Err(format!("nonResourceURLs: {url:?} may only have '*' as its last character"));
            }
        }
        for (index, group) in self.resources.iter().enumerate() {
            if !group.resource_names.is_empty() && group.resources.is_empty() {
                return Err(format!("resources[{index}].resourceNames: naming objects needs at least one resource"));
            }
        }
        Ok(())
    }

    fn matches(&self, request: &AuditRequest<'_>) -> bool {
        if !self.users.is_empty() && !self.users.iter().any(|u| u == subject_name(request)) {
            return false;
        }
        if !self.user_groups.is_empty() && !subject_in_any(request, &self.user_groups) {
            return false;
        }
        if !self.verbs.is_empty() && !self.verbs.iter().any(|v| v == request.verb) {
            return false;
        }
        if !self.resources.is_empty() || !self.namespaces.is_empty() {
            return self.matches_resource(request);
        }
        if !self.non_resource_urls.is_empty() {
            return !request.is_resource && self.non_resource_urls.iter().any(|url| url_matches(url, request.path));
        }
        true
    }

    fn matches_resource(&self, request: &AuditRequest<'_>) -> bool {
        if !request.is_resource {
            return false;
        }
        let namespace = request.namespace.unwrap_or("");
        if !self.namespaces.is_empty() && !self.namespaces.iter().any(|n| n == namespace) {
            return false;
        }
        self.resources.is_empty() || self.resources.iter().any(|group| group.matches(request))
    }
}

impl GroupResources {
    fn matches(&self, request: &AuditRequest<'_>) -> bool {
        if self.group != request.api_group {
            return false;
        }
        if !self.resource_names.is_empty() && !self.resource_names.iter().any(|n| n == request.name) {
            return false;
        }
        self.resources.is_empty() || self.resources.iter().any(|pattern| resource_matches(pattern, request.resource, request.subresource))
    }
}

/// `*` matches everything; `pods/*` matches pods and every pods subresource; `*/status` matches the status
/// subresource of anything; otherwise `resource` or `resource/subresource` exactly.
fn resource_matches(pattern: &str, resource: &str, subresource: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    if let Some(wanted) = pattern.strip_prefix("*/") {
        return !subresource.is_empty() && wanted == subresource;
    }
    if let Some(wanted) = pattern.strip_suffix("/*") {
        return wanted == resource;
    }
    match pattern.split_once('/') {
        Some((wanted_resource, wanted_subresource)) => wanted_resource == resource && wanted_subresource == subresource,
        None => subresource.is_empty() && pattern == resource,
    }
}

fn url_matches(pattern: &str, path: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => pattern == path,
    }
}

// The policy judges the authenticated caller, so an impersonator is judged as themselves (kube-apiserver
// evaluates the policy before impersonation takes effect). Anonymous requests are `system:anonymous` in
// `system:unauthenticated`.

fn subject_name<'r>(request: &AuditRequest<'r>) -> &'r str {
    request.impersonator.or(request.user).map_or(ANONYMOUS, |user| user.name.as_str())
}

fn subject_in_any(request: &AuditRequest<'_>, wanted: &[String]) -> bool {
    match request.impersonator.or(request.user) {
        Some(user) => user.groups.iter().any(|group| wanted.contains(group)),
        None => wanted.iter().any(|group| group == UNAUTHENTICATED),
    }
}

#[cfg(test)]
mod tests {
    use kspaces_authz::UserInfo;

    use super::*;

    const KUBE_EXAMPLE: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
metadata:
  name: example
omitStages:
  - "RequestReceived"
omitManagedFields: true
rules:
  - level: RequestResponse
    resources:
    - group: ""
      resources: ["pods"]
  - level: Metadata
    resources:
    - group: ""
      resources: ["pods/log", "pods/status"]
  - level: None
    resources:
    - group: ""
      resources: ["configmaps"]
      resourceNames: ["controller-leader"]
  - level: None
    users: ["system:kube-proxy"]
    verbs: ["watch"]
    resources:
    - group: ""
      resources: ["endpoints", "services"]
  - level: None
    userGroups: ["system:authenticated"]
    nonResourceURLs:
    - "/api*"
    - "/version"
  - level: Request
    resources:
    - group: ""
      resources: ["configmaps"]
    namespaces: ["kube-system"]
  - level: Metadata
    resources:
    - group: ""
      resources: ["secrets", "configmaps"]
  - level: Request
    resources:
    - group: ""
    - group: "extensions"
  - level: Metadata
    omitStages:
      - "ResponseStarted"
    omitManagedFields: false
"#;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo { name: name.to_owned(), uid: String::new(), groups: groups.iter().map(|g| (*g).to_owned()).collect(), tenant: None, cluster: None, extra: Default::default() }
    }

    /// A resource request: `verb group/resource[/subresource] [namespace] [name]`.
    fn resource<'a>(verb: &'a str, group: &'a str, resource: &'a str, subresource: &'a str, namespace: Option<&'a str>, name: &'a str) -> AuditRequest<'a> {
        AuditRequest { verb, is_resource: true, api_group: group, api_version: "v1", resource, subresource, namespace, name, ..AuditRequest::default() }
    }

    fn non_resource(path: &str) -> AuditRequest<'_> {
        AuditRequest { verb: "get", path, request_uri: path, ..AuditRequest::default() }
    }

    fn as_user<'a>(user: &'a UserInfo, request: AuditRequest<'a>) -> AuditRequest<'a> {
        AuditRequest { user: Some(user), ..request }
    }

    fn level(policy: &Policy, request: &AuditRequest<'_>) -> Level {
        policy.evaluate(request).level()
    }

    #[test]
    fn parses_the_kubernetes_documentation_example() {
        let policy = Policy::parse(KUBE_EXAMPLE).expect("valid policy");
        assert_eq!(policy.rules.len(), 9);
        assert_eq!(policy.omit_stages, vec![Stage::RequestReceived]);
        assert!(policy.omit_managed_fields);
        assert_eq!(policy.rules[2].resources[0].resource_names, vec!["controller-leader"]);
        assert_eq!(policy.rules[3].users, vec!["system:kube-proxy"]);
        assert_eq!(policy.rules[3].verbs, vec!["watch"]);
        assert_eq!(policy.rules[4].user_groups, vec!["system:authenticated"]);
        assert_eq!(policy.rules[4].non_resource_urls, vec!["/api*", "/version"]);
        assert_eq!(policy.rules[5].namespaces, vec!["kube-system"]);
        assert_eq!(policy.rules[7].resources[1].group, "extensions");
        assert_eq!(policy.rules[8].omit_stages, vec![Stage::ResponseStarted]);
        assert_eq!(policy.rules[8].omit_managed_fields, Some(false));
        assert_eq!(policy.rules[0].omit_managed_fields, None);
    }

    #[test]
    fn parses_json_and_v1beta1() {
        let json = r#"{"apiVersion":"audit.k8s.io/v1beta1","kind":"Policy","rules":[
            {"level":"Request","verbs":["create"],"nonResourceURLs":["/healthz*"]}]}"#;
        let policy = Policy::parse(json).expect("valid policy");
        assert_eq!(policy.rules[0].level, Level::Request);
        assert_eq!(policy.rules[0].non_resource_urls, vec!["/healthz*"]);
    }

    #[test]
    fn rejects_malformed_policies_naming_the_field() {
        let cases = [
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n", "rules[0].level"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: metadata\n", "rules[0].level"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- verbs: [get]\n", "level"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  resource: [pods]\n", "unknown field `resource`"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Sometimes]\nrules:\n- level: None\n", "omitStages[0]"),
            ("apiVersion: v1\nkind: Policy\nrules:\n- level: None\n", "apiVersion"),
            ("apiVersion: audit.k8s.io/v1\nkind: ConfigMap\nrules:\n- level: None\n", "kind"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n", "at least one rule"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [/a*b]\n", "last character"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [healthz]\n", "begin with '/'"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  namespaces: [a]\n  nonResourceURLs: [/x]\n", "both"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  resources: [{group: '', resourceNames: [x]}]\n", "resources[0].resourceNames"),
            ("{\"apiVersion\": ", "not valid JSON"),
            ("rules: [\n", "not valid YAML"),
        ];
        for (text, expected) in cases {
            let err = Policy::parse(text).expect_err(text);
            assert!(err.contains(expected), "{text:?}: {err:?} should mention {expected:?}");
        }
    }

    #[test]
    fn load_reports_the_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("policy.yaml");
        std::fs::write(&path, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n").expect("write");
        let err = Policy::load(&path).expect_err("bad level").to_string();
        assert!(err.contains("policy.yaml") && err.contains("Loud"), "{err}");
        let missing = Policy::load(&dir.path().join("absent.yaml")).expect_err("missing file");
        assert!(matches!(missing, AuditError::ReadPolicy { .. }), "{missing:?}");
    }

    #[test]
    fn kubernetes_example_levels() {
        let policy = Policy::parse(KUBE_EXAMPLE).expect("valid policy");
        let proxy = &user("system:kube-proxy", &["system:authenticated"]);
        let alice = &user("alice", &["system:authenticated"]);
        let table = [
            (resource("get", "", "pods", "", Some("a"), "p"), Level::RequestResponse),
            (resource("get", "", "pods", "log", Some("a"), "p"), Level::Metadata),
            (resource("get", "", "pods", "exec", Some("a"), "p"), Level::Request),
            (resource("update", "", "configmaps", "", Some("kube-system"), "controller-leader"), Level::None),
            (resource("update", "", "configmaps", "", Some("kube-system"), "other"), Level::Request),
            (resource("update", "", "configmaps", "", Some("default"), "other"), Level::Metadata),
            (as_user(proxy, resource("watch", "", "endpoints", "", None, "")), Level::None),
            (as_user(proxy, resource("list", "", "endpoints", "", None, "")), Level::Request),
            (as_user(alice, resource("watch", "", "endpoints", "", None, "")), Level::Request),
            (as_user(alice, non_resource("/apis/apps")), Level::None),
            (as_user(alice, non_resource("/version")), Level::None),
            (as_user(alice, non_resource("/version/extra")), Level::Metadata),
            (non_resource("/api"), Level::Metadata),
            (resource("create", "extensions", "ingresses", "", Some("a"), ""), Level::Request),
            (resource("create", "apps", "deployments", "", Some("a"), ""), Level::Metadata),
        ];
        for (index, (request, expected)) in table.iter().enumerate() {
            assert_eq!(level(&policy, request), *expected, "row {index}: {request:?}");
        }
    }

    #[test]
    fn resource_globs() {
        let table = [
            ("*", "pods", "", true),
            ("*", "pods", "log", true),
            ("pods", "pods", "", true),
            ("pods", "pods", "log", false),
            ("pods/log", "pods", "log", true),
            ("pods/log", "pods", "", false),
            ("pods/*", "pods", "", true),
            ("pods/*", "pods", "status", true),
            ("pods/*", "services", "status", false),
            ("*/status", "deployments", "status", true),
            ("*/status", "deployments", "", false),
            ("*/status", "deployments", "scale", false),
        ];
        for (pattern, resource, subresource, expected) in table {
            assert_eq!(resource_matches(pattern, resource, subresource), expected, "{pattern} vs {resource}/{subresource}");
        }
    }

    #[test]
    fn namespace_selectors() {
        let policy = Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Request\n  namespaces: [\"\"]\n- level: Metadata\n  namespaces: [a]\n").expect("valid");
        assert_eq!(level(&policy, &resource("get", "", "nodes", "", None, "n")), Level::Request);
        assert_eq!(level(&policy, &resource("list", "", "pods", "", Some(""), "")), Level::Request);
        assert_eq!(level(&policy, &resource("get", "", "pods", "", Some("a"), "p")), Level::Metadata);
        assert_eq!(level(&policy, &resource("get", "", "pods", "", Some("b"), "p")), Level::None);
        assert_eq!(level(&policy, &non_resource("/healthz")), Level::None, "namespace rules never match non-resource requests");
    }

    #[test]
    fn first_match_wins_and_no_match_is_none() {
        let policy = Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  verbs: [get]\n- level: RequestResponse\n  verbs: [get, list]\n").expect("valid");
        assert_eq!(level(&policy, &resource("get", "", "pods", "", Some("a"), "p")), Level::Metadata);
        assert_eq!(level(&policy, &resource("list", "", "pods", "", Some("a"), "")), Level::RequestResponse);
        assert_eq!(level(&policy, &resource("delete", "", "pods", "", Some("a"), "p")), Level::None);
    }

    #[test]
    fn non_resource_rules_never_match_resources() {
        let policy = Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Request\n  nonResourceURLs: ['*']\n").expect("valid");
        assert_eq!(level(&policy, &non_resource("/metrics")), Level::Request);
        assert_eq!(level(&policy, &resource("get", "", "pods", "", Some("a"), "p")), Level::None);
    }

    #[test]
    fn impersonators_and_anonymous_callers_are_judged_as_themselves() {
        let policy = Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n  users: [admin]\n- level: Request\n  users: [system:anonymous]\n- level: Metadata\n").expect("valid");
        let admin = user("admin", &[]);
        let bob = user("bob", &[]);
        let impersonated = AuditRequest { user: Some(&bob), impersonator: Some(&admin), ..non_resource("/version") };
        assert_eq!(level(&policy, &impersonated), Level::RequestResponse);
        assert_eq!(level(&policy, &AuditRequest { user: Some(&bob), ..non_resource("/version") }), Level::Metadata);
        assert_eq!(level(&policy, &non_resource("/version")), Level::Request);
    }

    #[test]
    fn omitted_stages_and_managed_fields_combine_policy_and_rule() {
        let policy = Policy::parse(KUBE_EXAMPLE).expect("valid policy");
        let pods = policy.evaluate(&resource("get", "", "pods", "", Some("a"), "p"));
        assert!(pods.omits(Stage::RequestReceived) && !pods.omits(Stage::ResponseStarted));
        assert!(pods.omit_managed_fields());
        let fallback = policy.evaluate(&resource("get", "apps", "deployments", "", Some("a"), "d"));
        assert!(fallback.omits(Stage::RequestReceived) && fallback.omits(Stage::ResponseStarted));
        assert!(!fallback.omit_managed_fields());
    }

    #[test]
    fn default_policy_logs_everything_at_metadata() {
        let policy = Policy::metadata_for_everything();
        assert_eq!(level(&policy, &non_resource("/healthz")), Level::Metadata);
        assert_eq!(level(&policy, &resource("delete", "apps", "deployments", "", Some("a"), "d")), Level::Metadata);
    }
}
