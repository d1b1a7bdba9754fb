//! The rules besides RBAC that refuse a request whatever the caller's roles, so that access reviews give the
//! answer the request itself would get (`kubectl auth can-i list nodes` says no to a tenant admin, as the list
//! is 403):
//!
//! - system-only resources (`tenancy::check_resource`): 403 to anyone but a system user, 404 (not served) in a
//!   tenant space;
//! - every admission rule that refuses a request whatever its object (`Admission::refuses`: DaemonSet writes
//!   outside the system space, deleting the default namespaces or the system tenant, the CRD names a forced
//!   system CRD holds in a tenant space);
//! - the server-wide endpoints (`/metrics`, `/debug/*`): system users only (`chain.rs`).
//!
//! Rules of state, not of permission, are left out, as kube's reviews leave out its lifecycle admission: creating
//! in a Terminating tenant or namespace is refused while the deletion lasts, and a review still says yes.

use std::collections::BTreeMap;

use kspaces_authz::rbac::{rule_allows, Attributes, PolicyRule, ALL};
use kspaces_storage::SpaceName;

use crate::registry::admission::Question;
use crate::registry::{ResourceInfo, Subresource};
use crate::routes;
use crate::api_server::ApiServer;

/// Whom a review is about and where.
pub struct Subject<'a> {
    pub server: &'a ApiServer,
    pub space: &'a SpaceName,
    /// True for a user of the system tenant.
    pub system_user: bool,
}

/// The verbs of a resource that declares none, and of subresources.
const ALL_VERBS: [&str; 8] = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"];
const SUBRESOURCE_VERBS: [&str; 3] = ["get", "update", "patch"];

fn covers(pattern: &str, value: &str) -> bool {
    pattern == ALL || pattern == value
}

impl Subject<'_> {
    /// Why a request for `resource` with `verb` is refused in this space whatever RBAC says, if it is: a
    /// system-only resource, or an admission rule that refuses the kind whatever the object.
    fn resource_refusal(&self, resource: &ResourceInfo, verb: &str) -> Option<String> {
        let qualified = if resource.group.is_empty() { resource.plural.clone() } else { format!("{}.{}", resource.plural, resource.group) };
        if resource.system_only && !self.system_user {
            return Some(format!("{qualified} is reserved for the system tenant"));
        }
        if resource.system_only && !self.space.is_system() {
            return Some(format!("{qualified} is served in the system space only"));
        }
        self.admission_refusal(&resource.group, &resource.plural, verb, "")
    }

    /// What admission says to a request, before any object.
    fn admission_refusal(&self, group: &str, resource: &str, verb: &str, name: &str) -> Option<String> {
        self.server.registry.refusal(&Question { verb, group, resource, name, space: self.space })
    }

    /// Why the request `attributes` describe would be refused whatever RBAC says; `None` if RBAC decides. A
    /// wildcard (`*` verb, group or resource) is refused if any request it covers is.
    pub fn refusal(&self, attributes: &Attributes) -> Option<String> {
        match attributes {
            Attributes::NonResource { path, .. } => {
                (routes::route(path).is_server_wide() && !self.system_user).then(|| routes::SERVER_WIDE_REASON.to_owned())
            }
            Attributes::Resource { verb, group, resource, name, .. } => {
                // kubectl asks about a resource its discovery does not show (the system-only ones, to a tenant
                // user) by the name it was given, `priorityclasses.scheduling.k8s.io` in group "".
                let dotted = resource.split_once('.').filter(|_| group.is_empty());
                let named = self.server.resources.all().iter()
                    .filter(|r| (covers(group, &r.group) && covers(resource, &r.plural)) || dotted == Some((r.plural.as_str(), r.group.as_str())))
                    .find_map(|r| self.resource_refusal(r, verb));
                named.or_else(|| (!name.is_empty()).then(|| self.admission_refusal(group, resource, verb, name)).flatten())
            }
        }
    }

    /// The space whose RBAC judges `attributes`: the system space for server-wide endpoints, else this one.
    pub fn judged_in(&self, attributes: &Attributes) -> SpaceName {
        match attributes {
            Attributes::NonResource { path, .. } if routes::route(path).is_server_wide() => SpaceName::system(),
            _ => self.space.clone(),
        }
    }

    /// The rules a SelfSubjectRulesReview shows: RBAC's, less what the refusals above take away. A rule that
    /// covers a refused request is replaced by the served resources (and verbs, and URLs) it covers that are not
    /// refused; any other rule is shown as it is.
    pub fn trim(&self, rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
        let served = self.server.resolver.view(self.space);
        let mut kept = Vec::new();
        let mut expanded: BTreeMap<(String, Vec<String>, Vec<String>), Vec<String>> = BTreeMap::new();
        for rule in rules {
            if !rule.non_resource_urls.is_empty() {
                if let Some(rule) = self.trim_urls(rule) {
                    kept.push(rule);
                }
                continue;
            }
            let refused = |r: &ResourceInfo, verb: &str| self.resource_refusal(r, verb).is_some();
            let probe = |r: &ResourceInfo, verb: &str, sub: &str| rule_allows(&rule, &request(&rule, r, verb, sub));
            let touches_refused = served.system.all().iter().any(|r| verbs_of(r).iter().any(|v| refused(r, v) && probe(r, v, "")));
            if !touches_refused {
                kept.push(rule);
                continue;
            }
            for resource in served.system.all() {
                let mut entries: Vec<(String, Vec<&str>)> = vec![(resource.plural.clone(), verbs_of(resource))];
                for sub in subresources_of(resource) {
                    entries.push((format!("{}/{sub}", resource.plural), SUBRESOURCE_VERBS.to_vec()));
                }
                for (name, verbs) in entries {
                    let sub = name.split_once('/').map_or("", |(_, s)| s);
                    let allowed: Vec<String> = verbs.iter().filter(|v| probe(resource, v, sub) && !refused(resource, v)).map(|v| (*v).to_owned()).collect();
                    if allowed.is_empty() {
                        continue;
                    }
                    let key = (resource.group.clone(), allowed, rule.resource_names.clone());
                    expanded.entry(key).or_default().push(name);
                }
            }
        }
        kept.extend(expanded.into_iter().map(|((group, verbs, resource_names), resources)| PolicyRule {
            verbs,
            api_groups: vec![group],
            resources,
            resource_names,
            non_resource_urls: vec![],
        }));
        kept
    }

    /// A non-resource rule without the server-wide URLs a non-system user may not reach: a pattern that covers
    /// one becomes the served URLs it covers that are not server-wide.
    fn trim_urls(&self, mut rule: PolicyRule) -> Option<PolicyRule> {
        if self.system_user {
            return Some(rule);
        }
        let server_wide = |url: &str| routes::route(url.trim_end_matches('*')).is_server_wide();
        let covers_server_wide = |pattern: &str| {
            pattern == ALL || SERVER_WIDE_PATHS.iter().any(|path| pattern.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix)))
        };
        let mut urls = Vec::new();
        for pattern in &rule.non_resource_urls {
            if covers_server_wide(pattern) {
                let prefix = pattern.trim_end_matches('*');
                urls.extend(PUBLIC_PATHS.iter().filter(|path| pattern == ALL || path.starts_with(prefix)).map(|p| (*p).to_owned()));
            } else if !server_wide(pattern) {
                urls.push(pattern.clone());
            }
        }
        urls.sort();
        urls.dedup();
        rule.non_resource_urls = urls;
        (!rule.non_resource_urls.is_empty()).then_some(rule)
    }
}

/// The server-wide paths, as prefixes.
const SERVER_WIDE_PATHS: [&str; 3] = ["/metrics", "/metrics/", "/debug/"];

/// Every non-resource URL served that is not server-wide, as RBAC patterns.
const PUBLIC_PATHS: [&str; 17] = [
    "/.well-known/openid-configuration", "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/healthz/*", "/livez", "/livez/*",
    "/openapi", "/openapi/*", "/openid/v1/jwks", "/readyz", "/readyz/*", "/version", "/version/", "/openid/v1/jwks/",
];

fn verbs_of(resource: &ResourceInfo) -> Vec<&str> {
    if resource.verbs.is_empty() { ALL_VERBS.to_vec() } else { resource.verbs.iter().map(String::as_str).collect() }
}

fn subresources_of(resource: &ResourceInfo) -> Vec<&'static str> {
    let mut subresources = Vec::new();
    if resource.has_subresource(Subresource::Status) {
        subresources.push("status");
    }
    if resource.has_subresource(Subresource::Scale) {
        subresources.push("scale");
    }
    if resource.has_subresource(Subresource::Finalize) {
        subresources.push("finalize");
    }
    subresources
}

/// The request `rule` would be asked about for `resource`: a name it lists, if it lists any.
fn request(rule: &PolicyRule, resource: &ResourceInfo, verb: &str, subresource: &str) -> Attributes {
    Attributes::Resource {
        verb: verb.to_owned(),
        group: resource.group.clone(),
        resource: resource.plural.clone(),
        subresource: subresource.to_owned(),
        name: rule.resource_names.first().cloned().unwrap_or_default(),
        namespace: None,
    }
}
