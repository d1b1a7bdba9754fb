//! Label and field selectors, parsed from the query string as apimachinery parses them (`label.rs` holds the
//! label selector grammar) and matched against JSON objects.

mod fields;
mod label;

use serde_json::Value;

use crate::status::ApiError;
use label::{Operator, Requirement};

/// A parsed label selector (`a=b,c!=d,e in (x,y),f notin (z),g,!h,n>5`), apimachinery's grammar exactly.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses `text`; a malformed selector is kube's 400 with kube's message.
    pub fn parse(text: &str) -> Result<LabelSelector, ApiError> {
        label::parse(text).map(|requirements| LabelSelector { requirements }).map_err(ApiError::bad_request)
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Both selectors' requirements.
    pub fn and(&self, other: &LabelSelector) -> LabelSelector {
        LabelSelector { requirements: self.requirements.iter().chain(&other.requirements).cloned().collect() }
    }

    /// Matches the object's `metadata.labels`, with kube's `Requirement.Matches` rules.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels").and_then(Value::as_object);
        let get = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        let number = |key: &str| get(key).and_then(|v| v.parse::<i64>().ok());
        self.requirements.iter().all(|Requirement { key, operator, values }| {
            let first = values.first().map(String::as_str);
            match operator {
                Operator::Equals => get(key).is_some() && get(key) == first,
                Operator::NotEquals => get(key).is_none() || get(key) != first,
                Operator::In => get(key).is_some_and(|x| values.iter().any(|v| v == x)),
                Operator::NotIn => !get(key).is_some_and(|x| values.iter().any(|v| v == x)),
                Operator::Exists => get(key).is_some(),
                Operator::DoesNotExist => get(key).is_none(),
                Operator::GreaterThan | Operator::LessThan => {
                    let wanted = first.and_then(|v| v.parse::<i64>().ok());
                    match (number(key), wanted) {
                        (Some(actual), Some(wanted)) if *operator == Operator::GreaterThan => actual > wanted,
                        (Some(actual), Some(wanted)) => actual < wanted,
                        _ => false,
                    }
                }
            }
        })
    }
}

/// A parsed field selector (`metadata.name=x,status.phase!=Running`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldTerm>,
}

/// One term: the field label, equality or not, the value; and what it reads (a kind's field label's field, and
/// what an absent one compares as).
#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldTerm {
    field: String,
    equal: bool,
    value: String,
    pointer: String,
    zero: &'static str,
}

/// Splits a field selector into terms at the commas no backslash escapes (apimachinery's `splitTerms`).
fn split_terms(selector: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    if selector.is_empty() {
        return terms;
    }
    let (mut start, mut escaped) = (0, false);
    for (i, c) in selector.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                terms.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// A term's field, operator and raw value, split at the first operator (`!=`, then `==`, then `=`).
fn split_term(term: &str) -> Option<(&str, &str, &str)> {
    term.char_indices().find_map(|(i, _)| {
        ["!=", "==", "="].iter().find(|op| term[i..].starts_with(**op)).map(|op| (&term[..i], *op, &term[i + op.len()..]))
    })
}

/// apimachinery's `UnescapeValue`: `\\`, `\,` and `\=` are the only escapes; a bare `,` or `=` is an error.
fn unescape_value(value: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut escaped = false;
    for c in value.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(format!("invalid field selector: invalid escape sequence: \\{c}"));
            }
            out.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            ',' | '=' => return Err(format!("invalid field selector: unescaped character in value: {}", c as u32)),
            c => out.push(c),
        }
    }
    if escaped {
        return Err("invalid field selector: invalid escape sequence: \\".to_owned());
    }
    Ok(out)
}

impl FieldSelector {
    /// Parses a field selector as apimachinery's `fields.ParseSelector` does (any field name; terms sorted).
    pub fn parse_generic(text: &str) -> Result<FieldSelector, ApiError> {
        let mut terms = split_terms(text);
        terms.sort_unstable();
        let mut requirements = Vec::new();
        for term in terms.into_iter().filter(|t| !t.is_empty()) {
            let Some((field, op, value)) = split_term(term) else {
                return Err(ApiError::bad_request(format!("invalid selector: '{text}'; can't understand '{term}'")));
            };
            let value = unescape_value(value).map_err(ApiError::bad_request)?;
            let pointer = format!("/{}", field.replace('.', "/"));
            requirements.push(FieldTerm { field: field.to_owned(), equal: op != "!=", value, pointer, zero: "" });
        }
        Ok(FieldSelector { requirements })
    }

    /// `metadata.name=<name>`, for a name that comes from the path.
    pub fn name_equals(name: &str) -> FieldSelector {
        let term = FieldTerm { field: "metadata.name".into(), equal: true, value: name.to_owned(), pointer: "/metadata/name".into(), zero: "" };
        FieldSelector { requirements: vec![term] }
    }

    /// Parses a field selector for `group`/`kind`: every field must be one of its field labels (`fields.rs`),
    /// each read where kube reads it.
    pub fn parse(text: &str, group: &str, kind: &str) -> Result<FieldSelector, ApiError> {
        let mut selector = FieldSelector::parse_generic(text)?;
        for term in &mut selector.requirements {
            let label = fields::find(group, kind, &term.field)
                .ok_or_else(|| ApiError::bad_request(format!("field label not supported: {}", term.field)))?;
            term.pointer = label.pointer.to_owned();
            term.zero = label.zero;
        }
        Ok(selector)
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether every requirement is on a `metadata.` field.
    pub fn reads_metadata_only(&self) -> bool {
        self.requirements.iter().all(|term| term.pointer.starts_with("/metadata/"))
    }

    /// The name an equality on `metadata.name` pins, if any (lets a list read one key).
    pub fn name(&self) -> Option<&str> {
        self.requirements.iter().find(|t| t.field == "metadata.name" && t.equal).map(|t| t.value.as_str())
    }

    /// Whether `object` matches: each field as Go's conversion prints it, an absent one as its zero value.
    pub fn matches(&self, object: &Value) -> bool {
        self.requirements.iter().all(|term| {
            let actual = match object.pointer(&term.pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) => n.to_string(),
                _ => term.zero.to_owned(),
            };
            (actual == term.value) == term.equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selector_operators() {
        let cases = [
            ("app=web", true), ("app==web", true), ("app!=web", false), ("app!=db", true),
            ("app in (web,db)", true), ("app notin (web)", false), ("tier", true), ("!tier", false),
            ("!missing", true), ("app=web,tier=back", false), ("", true), ("missing notin (x)", true),
            ("missing!=x", true), ("replicas>2", true), ("replicas<3", false), ("app>1", false), ("missing<9", false),
        ];
        let object = json!({"metadata": {"labels": {"app": "web", "tier": "front", "replicas": "3"}}});
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
        assert!(FieldSelector::parse("status.phase=Running", "", "Pod").expect("ok").matches(&pod));
        assert!(!FieldSelector::parse("metadata.name!=p", "", "Pod").expect("ok").matches(&pod));
        assert_eq!(FieldSelector::parse("metadata.name=p", "", "Pod").expect("ok").name(), Some("p"));
        assert!(FieldSelector::parse("status.phase=Running", "", "ConfigMap").is_err());
        assert!(FieldSelector::parse("garbage", "", "Pod").is_err());
    }

    #[test]
    fn field_selectors_parse_as_apimachinery_does() {
        let message = |text: &str| FieldSelector::parse_generic(text)
            .map(|s| s.requirements.into_iter().map(|t| (t.field, t.equal, t.value)).collect::<Vec<_>>()).map_err(|e| e.message);
        assert_eq!(message("metadata.name==a\\,b,,x!=y"), Ok(vec![
            ("metadata.name".to_owned(), true, "a,b".to_owned()),
            ("x".to_owned(), false, "y".to_owned()),
        ]));
        assert_eq!(message("a=b,c"), Err("invalid selector: 'a=b,c'; can't understand 'c'".to_owned()));
        assert_eq!(message("a=b=c"), Err("invalid field selector: unescaped character in value: 61".to_owned()));
        assert_eq!(message("a=b\\x"), Err("invalid field selector: invalid escape sequence: \\x".to_owned()));
        assert_eq!(FieldSelector::parse_generic("metadata.name=b,metadata.name=a").expect("ok").name(), Some("a"), "terms are sorted");
        assert_eq!(FieldSelector::parse("metadata.name =x", "", "Pod").map_err(|e| e.message), Err("field label not supported: metadata.name ".to_owned()));
    }
}
