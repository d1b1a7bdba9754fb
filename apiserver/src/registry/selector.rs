//! Label and field selectors, parsed from the query string and matched against JSON objects.

use serde_json::Value;

use crate::status::ApiError;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector (`a=b,c!=d,e in (x,y),f notin (z),g,!h`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter().map(str::trim).filter(|p| !p.is_empty()).collect()
}

fn set_values(text: &str) -> Option<Vec<String>> {
    let inner = text.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(inner.split(',').map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()).collect())
}

fn valid_key(key: &str) -> bool {
    !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
}

impl LabelSelector {
    pub fn parse(text: &str) -> Result<LabelSelector, ApiError> {
        let bad = |part: &str| ApiError::bad_request(format!("unable to parse requirement: {part:?}: invalid label selector"));
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let requirement = if let Some((key, values)) = part.split_once(" notin ") {
                Requirement::NotIn(key.trim().to_owned(), set_values(values).ok_or_else(|| bad(part))?)
            } else if let Some((key, values)) = part.split_once(" in ") {
                Requirement::In(key.trim().to_owned(), set_values(values).ok_or_else(|| bad(part))?)
            } else if let Some((key, value)) = part.split_once("!=") {
                Requirement::NotEquals(key.trim().to_owned(), value.trim().to_owned())
            } else if let Some((key, value)) = part.split_once("==").or_else(|| part.split_once('=')) {
                Requirement::Equals(key.trim().to_owned(), value.trim().to_owned())
            } else if let Some(key) = part.strip_prefix('!') {
                Requirement::NotExists(key.trim().to_owned())
            } else {
                Requirement::Exists(part.to_owned())
            };
            let key = match &requirement {
                Requirement::Equals(k, _) | Requirement::NotEquals(k, _) | Requirement::In(k, _)
                | Requirement::NotIn(k, _) | Requirement::Exists(k) | Requirement::NotExists(k) => k,
            };
            if !valid_key(key) {
                return Err(bad(part));
            }
            requirements.push(requirement);
        }
        Ok(LabelSelector { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Matches the object's `metadata.labels`.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels").and_then(Value::as_object);
        let get = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        self.requirements.iter().all(|requirement| match requirement {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => !get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
        })
    }
}

/// A parsed field selector (`metadata.name=x,status.phase!=Running`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<(String, bool, String)>,
}

/// Fields every resource supports, plus the common per-type ones kube-apiserver supports.
fn supported_field(kind: &str, field: &str) -> bool {
    if matches!(field, "metadata.name" | "metadata.namespace") {
        return true;
    }
    let per_kind: &[&str] = match kind {
        "Pod" => &["spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
            "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"],
        "Event" => &["involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
            "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
            "reportingComponent", "source", "type", "regarding.kind", "regarding.name", "regarding.namespace"],
        "Secret" => &["type"],
        "Namespace" => &["status.phase"],
        "Node" => &["spec.unschedulable"],
        "Job" => &["status.successful"],
        "ReplicaSet" | "ReplicationController" => &["status.replicas"],
        "PersistentVolume" | "PersistentVolumeClaim" => &["status.phase"],
        _ => &[],
    };
    per_kind.contains(&field)
}

impl FieldSelector {
    pub fn parse(text: &str, kind: &str) -> Result<FieldSelector, ApiError> {
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let (field, equal, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (f, true, v)
            } else {
                return Err(ApiError::bad_request(format!("invalid selector: '{part}'; can't understand '{part}'")));
            };
            let field = field.trim();
            if !supported_field(kind, field) {
                return Err(ApiError::bad_request(format!("field label not supported: {field}")));
            }
            requirements.push((field.to_owned(), equal, value.trim().to_owned()));
        }
        Ok(FieldSelector { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The name an equality on `metadata.name` pins, if any (lets a list read one key).
    pub fn name(&self) -> Option<&str> {
        self.requirements.iter().find(|(f, eq, _)| f == "metadata.name" && *eq).map(|(_, _, v)| v.as_str())
    }

    pub fn matches(&self, object: &Value) -> bool {
        self.requirements.iter().all(|(field, equal, value)| {
            let pointer = format!("/{}", field.replace('.', "/"));
            let actual = match object.pointer(&pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) => n.to_string(),
                _ => String::new(),
            };
            (actual == *value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selector_operators() {
        let object = json!({"metadata": {"labels": {"app": "web", "tier": "front"}}});
        let cases = [
            ("app=web", true), ("app==web", true), ("app!=web", false), ("app!=db", true),
            ("app in (web,db)", true), ("app notin (web)", false), ("tier", true), ("!tier", false),
            ("!missing", true), ("app=web,tier=back", false), ("", true), ("missing notin (x)", true),
        ];
        for (selector, expected) in cases {
            let parsed = LabelSelector::parse(selector).expect("valid");
            assert_eq!(parsed.matches(&object), expected, "{selector}");
        }
        assert!(LabelSelector::parse("app in web").is_err());
        assert!(LabelSelector::parse("a b=c").is_err());
    }

    #[test]
    fn field_selectors_are_per_kind() {
        let pod = json!({"metadata": {"name": "p", "namespace": "n"}, "status": {"phase": "Running"}});
        assert!(FieldSelector::parse("status.phase=Running", "Pod").expect("ok").matches(&pod));
        assert!(!FieldSelector::parse("metadata.name!=p", "Pod").expect("ok").matches(&pod));
        assert_eq!(FieldSelector::parse("metadata.name=p", "Pod").expect("ok").name(), Some("p"));
        assert!(FieldSelector::parse("status.phase=Running", "ConfigMap").is_err());
        assert!(FieldSelector::parse("garbage", "Pod").is_err());
    }
}
