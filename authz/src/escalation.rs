//! RBAC escalation prevention, as kube-apiserver's `Covers` check: nobody may create a role, or bind one, with
//! rules they do not hold themselves (the `escalate` and `bind` verbs are the server's business).
//!
//! Covering is decided atom by atom: each requested rule is broken into single-verb, single-group,
//! single-resource (single-name) rules, or single-verb, single-URL ones, and each atom must be covered by one
//! owner rule. This is stricter than "some request allowed by the one is allowed by the other" in the places
//! kube is: an owner rule with resourceNames never covers an atom without one (that would be every name).

use std::collections::{BTreeSet, HashMap};

use crate::rbac::{go_quote, go_quote_list, PolicyRule, ALL};
use crate::UserInfo;

/// The atoms of `requested` that no rule of `owner` covers, in request order (empty: covered).
pub fn uncovered(owner: &[PolicyRule], requested: &[PolicyRule]) -> Vec<PolicyRule> {
    requested.iter().flat_map(atoms).filter(|atom| !owner.iter().any(|rule| covers(rule, atom))).collect()
}

/// kube's `BreakdownRule`: group × resource × verb (× name), then URL × verb, in that order.
pub fn atoms(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut atoms = Vec::new();
    let names: Vec<Option<&String>> =
        if rule.resource_names.is_empty() { vec![None] } else { rule.resource_names.iter().map(Some).collect() };
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                for name in &names {
                    atoms.push(PolicyRule {
                        verbs: vec![verb.clone()],
                        api_groups: vec![group.clone()],
                        resources: vec![resource.clone()],
                        resource_names: name.map(|name| vec![name.clone()]).unwrap_or_default(),
                        non_resource_urls: Vec::new(),
                    });
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            atoms.push(PolicyRule { verbs: vec![verb.clone()], non_resource_urls: vec![url.clone()], ..PolicyRule::default() });
        }
    }
    atoms
}

/// kube's `ruleCovers`, for any `sub` (atoms are the case that matters).
fn covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let names_covered = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    (has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs))
        && (has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &sub.api_groups))
        && resources_covered(&owner.resources, &sub.resources)
        && sub.non_resource_urls.iter().all(|url| owner.non_resource_urls.iter().any(|owned| url_covers(owned, url)))
        && names_covered
}

fn has(list: &[String], item: &str) -> bool {
    list.iter().any(|entry| entry == item)
}

fn has_all(list: &[String], items: &[String]) -> bool {
    items.iter().all(|item| has(list, item))
}

/// `*` covers everything; otherwise each resource must be owned exactly, or as `*/<sub>` if it is `x/<sub>`.
/// An owner `pods` does not cover `pods/log`.
fn resources_covered(owned: &[String], requested: &[String]) -> bool {
    has(owned, ALL)
        || requested.iter().all(|resource| {
            has(owned, resource)
                || resource.split_once('/').is_some_and(|(_, subresource)| has(owned, &format!("*/{subresource}")))
        })
}

/// Equal, or an owned `/prefix*` (or `*`) covering the path, including a requested `/prefix/more*`.
fn url_covers(owned: &str, requested: &str) -> bool {
    owned == requested || owned.strip_suffix('*').is_some_and(|prefix| requested.starts_with(prefix))
}

/// kube's escalation error text, e.g.
/// `user "alice" (groups=["dev" "system:authenticated"]) is attempting to grant RBAC permissions not currently
/// held:` then one missing rule per line, sorted, with atoms that differ only by verb merged (kube's
/// `CompactRules`). `namespace` is accepted for callers' context; kube's text does not name it, so neither does
/// this one (clients match on it).
pub fn escalation_message(user: &UserInfo, _namespace: Option<&str>, missing: &[PolicyRule]) -> String {
    let lines: BTreeSet<String> = compact(missing).iter().map(PolicyRule::to_string).collect();
    format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quote(&user.name),
        go_quote_list(&user.groups),
        lines.into_iter().collect::<Vec<_>>().join("\n")
    )
}

/// kube's `CompactRules`: rules with one group, one resource, at most one name and nothing else are merged
/// when only their verbs differ (verbs in order of appearance); every other rule is kept as it is.
fn compact(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut compacted: Vec<PolicyRule> = Vec::new();
    let mut simple: HashMap<(String, String, Option<String>), usize> = HashMap::new();
    for rule in rules {
        let Some(key) = simple_key(rule) else {
            compacted.push(rule.clone());
            continue;
        };
        match simple.get(&key) {
            Some(&index) => compacted[index].verbs.extend(rule.verbs.iter().cloned()),
            None => {
                simple.insert(key, compacted.len());
                compacted.push(rule.clone());
            }
        }
    }
    compacted
}

/// (group, resource, name) if `rule` is kube's "simple resource rule".
fn simple_key(rule: &PolicyRule) -> Option<(String, String, Option<String>)> {
    if rule.resource_names.len() > 1 || !rule.non_resource_urls.is_empty() {
        return None;
    }
    let ([group], [resource]) = (rule.api_groups.as_slice(), rule.resources.as_slice()) else { return None };
    Some((group.clone(), resource.clone(), rule.resource_names.first().cloned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rbac::fixtures::{rule, strings, url_rule};


    /// (owner rules, requested rules, the uncovered atoms as kube prints them).
    #[test]
    fn covers_table() {
        let pods = rule(&["get"], &[""], &["pods"], &[]);
        let cases: Vec<(Vec<PolicyRule>, Vec<PolicyRule>, Vec<&str>)> = vec![
            (vec![pods.clone()], vec![pods.clone()], vec![]),
            (vec![], vec![], vec![]),
            (vec![pods.clone()], vec![rule(&["get", "list"], &[""], &["pods"], &[])], vec![r#"{APIGroups:[""], Resources:["pods"], Verbs:["list"]}"#]),
            (vec![rule(&["*"], &[""], &["pods"], &[])], vec![rule(&["get", "delete"], &[""], &["pods"], &[])], vec![]),
            (vec![rule(&["get"], &["*"], &["pods"], &[])], vec![rule(&["get"], &["", "apps"], &["pods"], &[])], vec![]),
            (vec![pods.clone()], vec![rule(&["get"], &["apps"], &["pods"], &[])], vec![r#"{APIGroups:["apps"], Resources:["pods"], Verbs:["get"]}"#]),
            (vec![rule(&["get"], &[""], &["*"], &[])], vec![rule(&["get"], &[""], &["pods", "pods/log"], &[])], vec![]),
            (vec![pods.clone()], vec![rule(&["get"], &[""], &["pods/log"], &[])], vec![r#"{APIGroups:[""], Resources:["pods/log"], Verbs:["get"]}"#]),
            (vec![rule(&["get"], &[""], &["*/log"], &[])], vec![rule(&["get"], &[""], &["pods/log", "jobs/log"], &[])], vec![]),
            (vec![rule(&["get"], &[""], &["*/log"], &[])], vec![rule(&["get"], &[""], &["pods"], &[])], vec![r#"{APIGroups:[""], Resources:["pods"], Verbs:["get"]}"#]),
            (vec![rule(&["get"], &[""], &["pods/log"], &[])], vec![rule(&["get"], &[""], &["*/log"], &[])], vec![r#"{APIGroups:[""], Resources:["*/log"], Verbs:["get"]}"#]),
            (vec![pods.clone()], vec![rule(&["get"], &[""], &["pods"], &["a", "b"])], vec![]),
            (vec![rule(&["get"], &[""], &["pods"], &["a"])], vec![rule(&["get"], &[""], &["pods"], &["a", "b"])],
                vec![r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["b"], Verbs:["get"]}"#]),
            (vec![rule(&["get"], &[""], &["pods"], &["a"])], vec![pods.clone()], vec![r#"{APIGroups:[""], Resources:["pods"], Verbs:["get"]}"#]),
            (vec![rule(&["get"], &[""], &["pods"], &["a"]), rule(&["get"], &[""], &["pods"], &["b"])], vec![rule(&["get"], &[""], &["pods"], &["a", "b"])], vec![]),
            (vec![url_rule(&["get"], &["/healthz"])], vec![url_rule(&["get"], &["/healthz"])], vec![]),
            (vec![url_rule(&["get"], &["/healthz"])], vec![url_rule(&["get"], &["/healthz/ping"])], vec![r#"{NonResourceURLs:["/healthz/ping"], Verbs:["get"]}"#]),
            (vec![url_rule(&["get"], &["/foo*"])], vec![url_rule(&["get"], &["/foo/bar", "/foo*", "/foobar"])], vec![]),
            (vec![url_rule(&["get"], &["/foo"])], vec![url_rule(&["get"], &["/foo*"])], vec![r#"{NonResourceURLs:["/foo*"], Verbs:["get"]}"#]),
            (vec![url_rule(&["*"], &["*"])], vec![url_rule(&["get", "post"], &["/anything", "*"])], vec![]),
            (vec![rule(&["*"], &["*"], &["*"], &[])], vec![url_rule(&["get"], &["/healthz"])], vec![r#"{NonResourceURLs:["/healthz"], Verbs:["get"]}"#]),
            (vec![url_rule(&["*"], &["*"])], vec![pods.clone()], vec![r#"{APIGroups:[""], Resources:["pods"], Verbs:["get"]}"#]),
            (vec![rule(&["*"], &["*"], &["*"], &[])], vec![rule(&["*"], &["*"], &["*"], &["x"]), rule(&["escalate"], &["rbac.authorization.k8s.io"], &["roles"], &[])], vec![]),
        ];
        for (owner, requested, expected) in cases {
            let missing: Vec<String> = uncovered(&owner, &requested).iter().map(ToString::to_string).collect();
            assert_eq!(missing, expected, "{owner:?} covering {requested:?}");
        }
    }

    #[test]
    fn rules_break_down_into_atoms_in_kube_order() {
        let atoms: Vec<String> = atoms(&PolicyRule {
            verbs: strings(&["get", "list"]),
            api_groups: strings(&["", "apps"]),
            resources: strings(&["pods"]),
            resource_names: strings(&["a"]),
            non_resource_urls: strings(&["/x"]),
        })
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(atoms, [
            r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["get"]}"#,
            r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["list"]}"#,
            r#"{APIGroups:["apps"], Resources:["pods"], ResourceNames:["a"], Verbs:["get"]}"#,
            r#"{APIGroups:["apps"], Resources:["pods"], ResourceNames:["a"], Verbs:["list"]}"#,
            r#"{NonResourceURLs:["/x"], Verbs:["get"]}"#,
            r#"{NonResourceURLs:["/x"], Verbs:["list"]}"#,
        ]);
        assert!(self::atoms(&rule(&["get"], &[""], &[], &[])).is_empty(), "no resources, no atoms");
    }

    #[test]
    fn messages_have_kube_shape_with_compacted_sorted_rules() {
        let alice = UserInfo::authenticated("alice".into(), String::new(), strings(&["g1"]), None);
        let requested = [
            rule(&["get", "list", "watch"], &["apps"], &["deployments"], &[]),
            rule(&["create"], &[""], &["pods"], &[]),
            rule(&["get", "update"], &[""], &["configmaps"], &["one", "two"]),
            url_rule(&["get"], &["/metrics"]),
        ];
        let missing = uncovered(&[rule(&["get"], &["apps"], &["deployments"], &[])], &requested);
        assert_eq!(escalation_message(&alice, Some("dev"), &missing), [
            r#"user "alice" (groups=["g1" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:"#,
            r#"{APIGroups:[""], Resources:["configmaps"], ResourceNames:["one"], Verbs:["get" "update"]}"#,
            r#"{APIGroups:[""], Resources:["configmaps"], ResourceNames:["two"], Verbs:["get" "update"]}"#,
            r#"{APIGroups:[""], Resources:["pods"], Verbs:["create"]}"#,
            r#"{APIGroups:["apps"], Resources:["deployments"], Verbs:["list" "watch"]}"#,
            r#"{NonResourceURLs:["/metrics"], Verbs:["get"]}"#,
        ].join("\n"));
        let twice = [rule(&["create"], &[""], &["pods"], &[]), url_rule(&["get"], &["/x"]), url_rule(&["get"], &["/x"])];
        assert_eq!(escalation_message(&alice, None, &twice).lines().count(), 3, "identical lines are listed once");
    }
}
