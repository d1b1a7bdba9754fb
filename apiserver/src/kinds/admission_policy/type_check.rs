//! kube's type checking of a ValidatingAdmissionPolicy (`status.typeChecking`): each validation's `expression`
//! and `messageExpression` is checked against the schema of every kind its `matchConstraints.resourceRules` name
//! exactly (no `*` in groups or versions; resources with `*` or a subresource are skipped; at most 10 kinds),
//! and each field selection on `object` or `oldObject` the schema does not have gives kube's warning,
//! `<group>/<version>, Kind=<kind>: ERROR: <input>:<line>:<column>: undefined field '<name>'` with the line and a
//! caret under the selection. The `cel` crate has no type checker, so this one knows only selection chains
//! rooted at `object`/`oldObject` (`object.spec.replicas`, in `has()` too): a chain through an index, a
//! comprehension variable or `variables` is not checked, nor are types (a string compared with a number).
//! Fields of a map (`additionalProperties`), of an object that keeps unknown fields, or below a schema without
//! properties are open, as kube's dynamic types are.

use std::collections::BTreeSet;

use kube_core::cel::cel::common::ast::{EntryExpr, Expr, IdedExpr};
use kube_core::cel::cel::Program;
use serde_json::{json, Map, Value};

/// kube's bound on the kinds one policy is checked against.
const MAX_KINDS: usize = 10;
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const REF_PREFIX: &str = "#/components/schemas/";

/// A kind a policy is checked against: (group, version, kind) and its schema.
pub struct Checked {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub schema: Value,
}

/// The (group, version, resource) triples `policy`'s resource rules name exactly, as kube lists them (each rule's
/// groups, versions and resources sorted).
pub fn named_resources(policy: &Value) -> Vec<(String, String, String)> {
    let rules = policy.pointer("/spec/matchConstraints/resourceRules").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let mut found = Vec::new();
    for rule in rules {
        let list = |key: &str| -> Vec<String> {
            let mut items: Vec<String> = rule.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect();
            items.sort();
            items
        };
        let (groups, versions) = (list("apiGroups"), list("apiVersions"));
        if groups.iter().chain(&versions).any(|g| g.contains('*')) {
            continue;
        }
        let resources: Vec<String> = list("resources").into_iter().filter(|r| !r.contains(['*', '/'])).collect();
        for group in &groups {
            for version in &versions {
                found.extend(resources.iter().map(|resource| (group.clone(), version.clone(), resource.clone())));
            }
        }
    }
    found
}

/// kube's `status.typeChecking` of `policy` against `kinds` (sorted and deduplicated here, at most 10).
pub fn type_checking(policy: &Value, mut kinds: Vec<Checked>, definitions: &Map<String, Value>) -> Value {
    kinds.sort_by(|a, b| (&a.group, &a.version, &a.kind).cmp(&(&b.group, &b.version, &b.kind)));
    kinds.dedup_by(|a, b| (&a.group, &a.version, &a.kind) == (&b.group, &b.version, &b.kind));
    kinds.truncate(MAX_KINDS);
    let types = Types { definitions };
    let mut warnings = Vec::new();
    let validations = policy.pointer("/spec/validations").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for (index, validation) in validations.iter().enumerate() {
        for field in ["expression", "messageExpression"] {
            let Some(text) = validation.get(field).and_then(Value::as_str).filter(|t| !t.is_empty()) else { continue };
            let per_kind: Vec<String> = kinds.iter().filter_map(|kind| {
                let issues = types.issues(text, &kind.schema)?;
                Some(format!("{}/{}, Kind={}: {issues}\n", kind.group, kind.version, kind.kind))
            }).collect();
            if !per_kind.is_empty() {
                warnings.push(json!({"fieldRef": format!("spec.validations[{index}].{field}"), "warning": per_kind.join("\n")}));
            }
        }
    }
    if warnings.is_empty() {
        return json!({});
    }
    json!({"expressionWarnings": warnings})
}

/// What a field selection finds in a schema.
enum Field<'a> {
    Known(&'a Value),
    /// Anything may be there (a map, unknown fields kept, no schema): nothing below is checked.
    Open,
    Undefined,
}

/// The built-in definitions (OpenAPI 3 form), for `$ref`s and `metadata`.
struct Types<'a> {
    definitions: &'a Map<String, Value>,
}

impl<'a> Types<'a> {
    /// `schema` with `$ref`s and single-member `allOf`s (kube's form of a described `$ref`) followed.
    fn resolve(&self, mut schema: &'a Value) -> &'a Value {
        for _ in 0..16 {
            if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
                match self.definitions.get(reference.trim_start_matches(REF_PREFIX)) {
                    Some(found) => schema = found,
                    None => return &Value::Null,
                }
            } else if let Some([only]) = schema.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
                schema = only;
            } else {
                break;
            }
        }
        schema
    }

    fn field(&self, schema: &'a Value, name: &str, root: bool) -> Field<'a> {
        if root && name == "metadata" {
            return self.definitions.get(OBJECT_META).map_or(Field::Open, Field::Known);
        }
        if root && matches!(name, "apiVersion" | "kind") {
            return Field::Open;
        }
        let schema = self.resolve(schema);
        if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
            return Field::Open;
        }
        let properties = schema.get("properties").and_then(Value::as_object).filter(|p| !p.is_empty());
        if let Some(found) = properties.and_then(|p| p.get(name)) {
            return Field::Known(found);
        }
        match (schema.get("additionalProperties"), properties) {
            (Some(values @ Value::Object(_)), _) => Field::Known(values),
            (Some(Value::Bool(true)), _) | (_, None) => Field::Open,
            _ => Field::Undefined,
        }
    }

    /// cel-go's text for the undefined fields `text` selects on `object`/`oldObject` of `schema`, if any.
    fn issues(&self, text: &str, schema: &Value) -> Option<String> {
        let program = Program::compile(text).ok()?;
        let mut undefined = Vec::new();
        self.walk(program.expression(), schema, &mut undefined);
        if undefined.is_empty() {
            return None;
        }
        let tokens = tokens(text);
        let mut used = BTreeSet::new();
        let mut located: Vec<(usize, String)> = undefined.iter().filter_map(|chain| {
            let at = locate(&tokens, chain, &used)?;
            used.insert(at);
            Some((at, chain.last().cloned().unwrap_or_default()))
        }).collect();
        located.sort();
        let errors: Vec<String> = located.iter().map(|(at, name)| error(text, *at, &format!("undefined field '{name}'"))).collect();
        (!errors.is_empty()).then(|| errors.join("\n"))
    }

    /// Collects each selection chain on `object`/`oldObject` that reaches an undefined field, up to that field.
    fn walk(&self, expression: &IdedExpr, schema: &Value, undefined: &mut Vec<Vec<String>>) {
        if let Some(chain) = chain(expression) {
            let mut at = schema;
            for (depth, name) in chain.iter().enumerate().skip(1) {
                match self.field(at, name, depth == 1) {
                    Field::Known(next) => at = next,
                    Field::Open => break,
                    Field::Undefined => {
                        undefined.push(chain[..=depth].to_vec());
                        break;
                    }
                }
            }
            return;
        }
        for child in children(expression) {
            self.walk(child, schema, undefined);
        }
    }
}

/// `object.a.b` as `["object", "a", "b"]` (`oldObject` too); `None` for anything else.
fn chain(expression: &IdedExpr) -> Option<Vec<String>> {
    let mut fields = Vec::new();
    let mut at = expression;
    while let Expr::Select(select) = &at.expr {
        fields.push(select.field.clone());
        at = &select.operand;
    }
    match &at.expr {
        Expr::Ident(root) if !fields.is_empty() && (root == "object" || root == "oldObject") => {
            fields.push(root.clone());
            fields.reverse();
            Some(fields)
        }
        _ => None,
    }
}

fn children(expression: &IdedExpr) -> Vec<&IdedExpr> {
    match &expression.expr {
        Expr::Call(call) => call.target.as_deref().into_iter().chain(&call.args).collect(),
        Expr::Comprehension(c) => vec![&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result],
        Expr::List(list) => list.elements.iter().collect(),
        Expr::Select(select) => vec![&select.operand],
        Expr::Map(map) => map.entries.iter().flat_map(|e| match &e.expr {
            EntryExpr::MapEntry(entry) => vec![&entry.key, &entry.value],
            EntryExpr::StructField(field) => vec![&field.value],
        }).collect(),
        Expr::Struct(s) => s.entries.iter().flat_map(|e| match &e.expr {
            EntryExpr::MapEntry(entry) => vec![&entry.key, &entry.value],
            EntryExpr::StructField(field) => vec![&field.value],
        }).collect(),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => Vec::new(),
    }
}

/// A token of CEL source, at its byte offset: an identifier, a `.`, or anything else (`None`).
type Token<'t> = (usize, Option<&'t str>);

/// The identifiers and dots of `text`, string literals skipped.
fn tokens(text: &str) -> Vec<Token<'_>> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'"' || c == b'\'' {
            let triple = bytes[i..].starts_with(&[c, c, c]);
            let quote: &[u8] = if triple { &bytes[i..i + 3] } else { &bytes[i..i + 1] };
            let mut j = i + quote.len();
            while j < bytes.len() && !bytes[j..].starts_with(quote) {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            found.push((i, None));
            i = (j + quote.len()).min(bytes.len());
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            found.push((start, Some(&text[start..i])));
        } else if c == b'.' {
            found.push((i, Some(".")));
            i += 1;
        } else {
            if !c.is_ascii_whitespace() {
                found.push((i, None));
            }
            i += 1;
        }
    }
    found
}

/// The byte offset of the `.` before the last field of `chain` in the first occurrence not `used` yet.
fn locate(tokens: &[Token<'_>], chain: &[String], used: &BTreeSet<usize>) -> Option<usize> {
    let wanted: Vec<&str> = chain.iter().enumerate().flat_map(|(i, name)| if i == 0 { vec![name.as_str()] } else { vec![".", name.as_str()] }).collect();
    (0..tokens.len()).filter(|&start| start == 0 || tokens[start - 1].1 != Some(".")).find_map(|start| {
        let window = tokens.get(start..start + wanted.len())?;
        let matches = window.iter().zip(&wanted).all(|((_, token), want)| *token == Some(*want));
        let dot = window.get(wanted.len().checked_sub(2)?)?.0;
        (matches && !used.contains(&dot)).then_some(dot)
    })
}

/// cel-go's display of an error at byte `offset` of `text`: its location, the line, and a caret under it.
fn error(text: &str, offset: usize, message: &str) -> String {
    let line_start = text[..offset].rfind('\n').map_or(0, |n| n + 1);
    let line_number = text[..offset].matches('\n').count() + 1;
    let column = text[line_start..offset].chars().count();
    let line = text[line_start..].lines().next().unwrap_or_default();
    format!("ERROR: <input>:{line_number}:{}: {message}\n | {line}\n | {}^", column + 1, ".".repeat(column))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment() -> Checked {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}, "selector": {"type": "object"},
                "template": {"type": "object", "properties": {"metadata": {"type": "object"}}}}},
            "status": {"type": "object", "additionalProperties": {"type": "string"}}}});
        Checked { group: "apps".into(), version: "v1".into(), kind: "Deployment".into(), schema }
    }

    fn policy(expressions: &[&str]) -> Value {
        let validations: Vec<Value> = expressions.iter().map(|e| json!({"expression": e})).collect();
        json!({"spec": {"validations": validations}})
    }

    fn definitions() -> Map<String, Value> {
        let meta = json!({"type": "object", "properties": {"name": {"type": "string"}, "labels": {"type": "object", "additionalProperties": {"type": "string"}}}});
        Map::from_iter([(OBJECT_META.to_owned(), meta)])
    }

    #[test]
    fn an_undefined_field_is_kubes_warning_with_a_caret() {
        let status = type_checking(&policy(&["object.replicas > 1"]), vec![deployment()], &definitions());
        assert_eq!(status, json!({"expressionWarnings": [{"fieldRef": "spec.validations[0].expression",
            "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^\n"}]}));
    }

    #[test]
    fn known_open_and_map_fields_give_nothing() {
        let fine = ["object.spec.replicas > 1", "has(object.metadata.labels) && object.metadata.labels.team == 'x'",
            "object.status.anything == 'x'", "object.spec.selector.whatever", "oldObject.spec.replicas == 1 || 'object.nope' == ''",
            "object.kind == 'Deployment'"];
        assert_eq!(type_checking(&policy(&fine), vec![deployment()], &definitions()), json!({}));
    }

    #[test]
    fn every_undefined_field_of_an_expression_is_listed_by_position() {
        let status = type_checking(&policy(&["has(oldObject.spec.replicsa) &&\n  object.spec.template.metdata == object.spec.replicsa"]),
            vec![deployment()], &definitions());
        let warning = status.pointer("/expressionWarnings/0/warning").and_then(Value::as_str).unwrap_or_default();
        assert_eq!(warning, "apps/v1, Kind=Deployment: ERROR: <input>:1:19: undefined field 'replicsa'\n | has(oldObject.spec.replicsa) &&\n \
            | ..................^\nERROR: <input>:2:23: undefined field 'metdata'\n |   object.spec.template.metdata == object.spec.replicsa\n \
            | ......................^\nERROR: <input>:2:46: undefined field 'replicsa'\n |   object.spec.template.metdata == object.spec.replicsa\n \
            | .............................................^\n");
    }

    #[test]
    fn only_exactly_named_resources_are_checked() {
        let policy = json!({"spec": {"matchConstraints": {"resourceRules": [
            {"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["replicasets", "deployments", "deployments/scale", "*"]},
            {"apiGroups": ["*"], "apiVersions": ["v1"], "resources": ["pods"]}]}}});
        assert_eq!(named_resources(&policy), [("apps".into(), "v1".into(), "deployments".into()), ("apps".into(), "v1".into(), "replicasets".into())]);
    }
}
