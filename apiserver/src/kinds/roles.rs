//! kube-apiserver's `ValidatePolicyRule` for Roles and ClusterRoles: every rule names verbs; a non-resource rule
//! names nothing else and lives in a ClusterRole; a resource rule names API groups and resources.

use serde_json::Value;

use crate::status::Cause;

/// A `[]string` as apimachinery's field errors print one (Go's `%#v`): `[]string{"/healthz", "/version"}`.
fn go_string_slice(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

fn strings<'a>(rule: &'a Value, field: &str) -> Vec<&'a str> {
    rule.get(field).and_then(Value::as_array).map(|items| items.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

fn required(field: String, why: &str) -> Cause {
    Cause { reason: "FieldValueRequired", message: format!("Required value: {why}"), field }
}

fn invalid(field: String, values: &[&str], why: &str) -> Cause {
    Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {}: {why}", go_string_slice(values)), field }
}

/// Checks the `rules` of a Role (`namespaced`) or ClusterRole, adding every problem to `causes`.
pub fn check(object: &Value, namespaced: bool, causes: &mut Vec<Cause>) {
    check_rules(object.get("rules"), "rules", namespaced, causes);
}

/// Checks a list of PolicyRules at `field` (a Role's `rules`, a WorkspaceType's `spec.initializerPermissions`).
pub fn check_rules(rules: Option<&Value>, field: &str, namespaced: bool, causes: &mut Vec<Cause>) {
    let Some(rules) = rules.and_then(Value::as_array) else { return };
    for (i, rule) in rules.iter().enumerate() {
        let path = format!("{field}[{i}]");
        if strings(rule, "verbs").is_empty() {
            causes.push(required(format!("{path}.verbs"), "verbs must contain at least one value"));
        }
        let urls = strings(rule, "nonResourceURLs");
        if !urls.is_empty() {
            if namespaced {
                causes.push(invalid(format!("{path}.nonResourceURLs"), &urls, "namespaced rules cannot apply to non-resource URLs"));
            }
            let names_resources = ["apiGroups", "resources", "resourceNames"].iter().any(|field| !strings(rule, field).is_empty());
            if names_resources {
                causes.push(invalid(format!("{path}.nonResourceURLs"), &urls, "rules cannot apply to both regular resources and non-resource URLs"));
            }
            continue;
        }
        if strings(rule, "apiGroups").is_empty() {
            causes.push(required(format!("{path}.apiGroups"), "resource rules must supply at least one api group"));
        }
        if strings(rule, "resources").is_empty() {
            causes.push(required(format!("{path}.resources"), "resource rules must supply at least one resource"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(rules: Value, namespaced: bool) -> Vec<String> {
        let mut causes = Vec::new();
        check(&json!({"rules": rules}), namespaced, &mut causes);
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn rules_are_checked_as_kube_checks_them() {
        let healthz = json!([{"nonResourceURLs": ["/healthz", "/version"], "verbs": ["get"]}]);
        assert_eq!(messages(healthz.clone(), true), vec![
            "rules[0].nonResourceURLs: Invalid value: []string{\"/healthz\", \"/version\"}: namespaced rules cannot apply to non-resource URLs"]);
        assert!(messages(healthz, false).is_empty(), "a ClusterRole may name non-resource URLs");
        assert_eq!(messages(json!([{"nonResourceURLs": ["/x"], "resources": ["pods"], "verbs": ["get"]}]), false), vec![
            "rules[0].nonResourceURLs: Invalid value: []string{\"/x\"}: rules cannot apply to both regular resources and non-resource URLs"]);
        assert_eq!(messages(json!([{"resources": ["pods"]}]), true), vec![
            "rules[0].verbs: Required value: verbs must contain at least one value",
            "rules[0].apiGroups: Required value: resource rules must supply at least one api group"]);
        assert!(messages(json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]), true).is_empty());
    }
}
