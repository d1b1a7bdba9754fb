//! Validation: object names, labels and annotations, and the object's shape checked against its
//! k8s-openapi type (used for checking only: the stored object is the JSON the client sent, defaulted).

use std::collections::HashMap;
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub mod owners;

use super::ResourceInfo;
use crate::builtin::builtin_kinds;
use crate::status::{ApiError, Cause};

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
pub(crate) const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const QUALIFIED_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

pub fn is_dns_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    !s.is_empty()
        && s.len() <= 63
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns_label)
}

fn is_qualified_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    !s.is_empty()
        && s.len() <= 63
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(b))
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
}

/// apimachinery's qualified-name regex, `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, without the length limit.
fn matches_qualified_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(b))
}

/// apimachinery's RFC 1123 subdomain regex, without the length limit (labels of any length).
fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-'
    })
}

const DNS1123_SUBDOMAIN_REGEX_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// apimachinery's `IsDNS1123Subdomain`: every reason `s` is not one, in kube's words.
fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 253 {
        errors.push("must be no more than 253 characters".to_owned());
    }
    if !matches_dns1123_subdomain(s) {
        errors.push(DNS1123_SUBDOMAIN_REGEX_MSG.to_owned());
    }
    errors
}

/// apimachinery's `IsQualifiedName` (label keys): every reason `key` is not one, in kube's words.
pub(crate) fn qualified_name_errors(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                errors.extend(dns1123_subdomain_errors(prefix).into_iter().map(|e| format!("prefix part {e}")));
            }
            *name
        }
        _ => {
            return vec![format!("a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                QUALIFIED_MSG.trim_start_matches("name part "))];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 characters".to_owned());
    }
    if !matches_qualified_name(name) {
        errors.push(QUALIFIED_MSG.to_owned());
    }
    errors
}

/// apimachinery's `IsValidLabelValue`: every reason `value` is not one, in kube's words.
pub(crate) fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 characters".to_owned());
    }
    if !value.is_empty() && !matches_qualified_name(value) {
        errors.push(LABEL_VALUE_MSG.to_owned());
    }
    errors
}

/// How a resource's names are validated (kube uses different rules per resource).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum NameRule {
    Subdomain,
    Label,
    /// RBAC objects: anything but `.`, `..`, `/` and `%`.
    PathSegment,
    /// IPAddresses: the address itself, in its canonical form.
    IpAddress,
}

pub fn name_rule(resource: &ResourceInfo) -> NameRule {
    match (resource.group.as_str(), resource.plural.as_str()) {
        ("", "namespaces" | "services" | "tenants") | ("tenancy.kcp.io", "workspaces") => NameRule::Label,
        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
        ("networking.k8s.io", "ipaddresses") => NameRule::IpAddress,
        _ => NameRule::Subdomain,
    }
}

pub fn check_name(rule: NameRule, field: &str, name: &str, causes: &mut Vec<Cause>) {
    match rule {
        NameRule::Subdomain if !is_dns_subdomain(name) => {
            let why = if name.len() > 253 { "must be no more than 253 characters" } else { SUBDOMAIN_MSG };
            causes.push(Cause::invalid(field, name, why));
        }
        NameRule::Label if !is_dns_label(name) => {
            let why = if name.len() > 63 { "must be no more than 63 characters" } else { LABEL_MSG };
            causes.push(Cause::invalid(field, name, why));
        }
        NameRule::PathSegment if name == "." || name == ".." || name.contains('/') || name.contains('%') => {
            causes.push(Cause::invalid(field, name, "may not be '.' or '..' and may not contain '/' or '%'"));
        }
        NameRule::IpAddress => match name.parse::<std::net::IpAddr>() {
            Err(_) => causes.push(Cause::invalid(field, name, "must be a valid IP address")),
            Ok(ip) if ip.to_string() != name => {
                causes.push(Cause::invalid(field, name, &format!("must be in canonical form (\"{ip}\")")));
            }
            Ok(_) => {}
        },
        _ => {}
    }
}

/// A label or annotation key: `[prefix/]name`, prefix a DNS subdomain, name a qualified name part.
fn check_qualified_key(field: &str, key: &str, causes: &mut Vec<Cause>) {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        if !is_dns_subdomain(prefix) {
            causes.push(Cause::invalid(field, key, "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"));
        }
    }
    if !is_qualified_part(name) {
        causes.push(Cause::invalid(field, key, QUALIFIED_MSG));
    }
}

/// Checks `metadata`: name (unless generated later), namespace, labels, annotations.
pub fn check_metadata(resource: &ResourceInfo, object: &Value, causes: &mut Vec<Cause>) {
    let metadata = object.get("metadata");
    if let Some(name) = metadata.and_then(|m| m.get("name")).and_then(Value::as_str) {
        check_name(name_rule(resource), "metadata.name", name, causes);
    }
    if let Some(labels) = metadata.and_then(|m| m.get("labels")) {
        match labels.as_object() {
            Some(labels) => {
                for (key, value) in labels {
                    check_qualified_key("metadata.labels", key, causes);
                    match value.as_str() {
                        Some(v) if v.is_empty() || is_qualified_part(v) => {}
                        Some(v) => causes.push(Cause::invalid("metadata.labels", v, LABEL_VALUE_MSG)),
                        None => causes.push(Cause::invalid("metadata.labels", &value.to_string(), "must be a string")),
                    }
                }
            }
            None if labels.is_null() => {}
            None => causes.push(Cause::invalid("metadata.labels", &labels.to_string(), "must be a map of strings")),
        }
    }
    if let Some(annotations) = metadata.and_then(|m| m.get("annotations")).and_then(Value::as_object) {
        let mut total = 0;
        for (key, value) in annotations {
            check_qualified_key("metadata.annotations", key, causes);
            total += key.len() + value.as_str().map_or(0, str::len);
        }
        if total > 256 * 1024 {
            causes.push(Cause {
                reason: "FieldValueTooLong",
                message: "Too long: must have at most 262144 bytes".to_owned(),
                field: "metadata.annotations".to_owned(),
            });
        }
    }
}

/// Deserializes `value` as the kind's k8s-openapi type: a missing required field is a 422 cause with its
/// path; a wrongly typed field is a 400, as kube-apiserver's decoder answers.
pub fn check_typed(resource: &ResourceInfo, value: &Value) -> Result<(), ApiError> {
    let Some(definition) = resource.definition.as_deref() else { return Ok(()) };
    let Some(result) = typed(definition, value) else { return Ok(()) };
    let Err((path, message)) = result else { return Ok(()) };
    let name = value.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    if let Some(field) = message.strip_prefix("missing field `").and_then(|m| m.split('`').next()) {
        let full = if path == "." || path.is_empty() { field.to_owned() } else { format!("{path}.{field}") };
        return Err(ApiError::invalid(&resource.group, &resource.kind, name, vec![Cause::required(full)]));
    }
    Err(ApiError::bad_request(format!(
        "{kind} in version \"{version}\" cannot be handled as a {kind}: {path}: {message}",
        kind = resource.kind,
        version = resource.version,
    )))
}

/// A typed check: deserializes the object as one k8s-openapi type, or says where and why it is not one.
type Check = fn(&Value) -> Result<(), (String, String)>;

fn check_as<T: DeserializeOwned>(value: &Value) -> Result<(), (String, String)> {
    serde_path_to_error::deserialize::<_, T>(value)
        .map(drop)
        .map_err(|err| (err.path().to_string(), err.inner().to_string()))
}

/// One entry of the checks: the type's definition name and its check.
fn entry<T: DeserializeOwned + JsonSchema>() -> (String, Check) {
    (T::schema_name().into_owned(), check_as::<T>)
}

/// The registry's typed column of each row: its k8s-openapi type.
macro_rules! typed_checks {
    ($( $($ty:ident)::+, [$($short:literal),*], $flags:expr, $verbs:ident, [$($sub:ident),*], $printer:expr; )*) => {
        vec![$( entry::<k8s_openapi::$($ty)::+>(), )*]
    };
}

/// The check of a definition: every built-in kind's, and those of the kinds `crate::kinds` adds with a k8s-openapi
/// type (flow control's).
fn typed(definition: &str, value: &Value) -> Option<Result<(), (String, String)>> {
    static CHECKS: OnceLock<HashMap<String, Check>> = OnceLock::new();
    let checks = CHECKS.get_or_init(|| {
        let mut checks = builtin_kinds!(typed_checks);
        checks.push(entry::<k8s_openapi::api::flowcontrol::v1::FlowSchema>());
        checks.push(entry::<k8s_openapi::api::flowcontrol::v1::PriorityLevelConfiguration>());
        checks.into_iter().collect()
    });
    checks.get(definition).map(|check| check(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        assert!(is_dns_label("a-1") && !is_dns_label("-a") && !is_dns_label("A") && !is_dns_label(&"a".repeat(64)));
        assert!(is_dns_subdomain("a.b-c.d") && !is_dns_subdomain("a..b") && !is_dns_subdomain("a_b"));
    }

    #[test]
    fn metadata_causes_name_every_problem() {
        let info = ResourceInfo {
            group: String::new(), version: "v1".into(), kind: "ConfigMap".into(), plural: "configmaps".into(),
            singular: "configmap".into(), short_names: vec![], categories: vec![], namespaced: true,
            subresources: vec![], verbs: vec![], definition: Some("io.k8s.api.core.v1.ConfigMap".into()), system_only: false,
            custom: None,
        };
        let object = serde_json::json!({"metadata": {"name": "Bad_Name", "labels": {"ok": "v", "bad key!": "v", "k": "bad value!"}}});
        let mut causes = Vec::new();
        check_metadata(&info, &object, &mut causes);
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["metadata.name", "metadata.labels", "metadata.labels"]);
        let wrong_type = serde_json::json!({"metadata": {"name": "x"}, "data": {"a": 1}});
        let err = check_typed(&info, &wrong_type).expect_err("data values must be strings");
        assert_eq!((err.code, err.reason), (400, "BadRequest"));
        assert!(err.message.contains("data.a"), "{}", err.message);
    }
}
