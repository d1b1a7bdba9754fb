//! CEL for admission policies and webhooks' `matchConditions`: expressions compiled once per write of their
//! configuration, the variables of a write (`object`, `oldObject`, `request`, `namespaceObject`, `params`,
//! `variables`), and the conversions between JSON and CEL values.
//!
//! The `cel` crate parses CEL's message construction (`Object{spec: Object.spec{replicas: 3}}`,
//! `JSONPatch{op: "add", ...}`) but cannot evaluate it (it panics). Mutating admission policies build their
//! results that way, so every compiled expression has its message constructions rewritten into maps keyed by the
//! field names before it runs: the type name is dropped, which is what an apply configuration or a JSON patch
//! operation is once it leaves CEL. Nothing checks that the fields belong to the named type (kube's type check).

use std::collections::HashMap;
use std::sync::Arc;

use kube_core::cel::cel::common::ast::{EntryExpr, Expr, IdedEntryExpr, IdedExpr, LiteralValue, MapEntryExpr, MapExpr};
use kube_core::cel::cel::common::types::CelString;
use kube_core::cel::cel::objects::{Key as CelKey, Map as CelMap};
use kube_core::cel::cel::{Context as Cel, Program, Value as CelValue};
use serde_json::Value;

use super::super::admission_webhook::review;
use crate::registry::admission::Attributes;
use crate::status::Cause;

/// A CEL expression, compiled once per write of its policy (or webhook configuration).
pub struct Expression {
    pub(crate) text: String,
    program: Result<IdedExpr, String>,
}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Expression {
    pub fn new(text: &str) -> Expression {
        let program = Program::compile(text).map(|p| constructions_as_maps(p.expression().clone())).map_err(|e| e.to_string());
        Expression { text: text.to_owned(), program }
    }

    pub fn eval(&self, context: &Cel) -> Result<CelValue, String> {
        let program = self.program.as_ref().map_err(|e| format!("compilation failed: {e}"))?;
        CelValue::resolve(program, context).map_err(|e| e.to_string())
    }

    /// Whether the expression is a message construction of type `name` (`Object{...}`), as kube requires of
    /// an apply configuration.
    pub fn constructs(&self, name: &str) -> bool {
        Program::compile(&self.text).is_ok_and(|p| matches!(&p.expression().expr, Expr::Struct(s) if s.type_name == name))
    }
}

/// `expression` with every message construction a map of its fields (see the module's comment).
fn constructions_as_maps(mut expression: IdedExpr) -> IdedExpr {
    rewrite(&mut expression);
    expression
}

fn rewrite(expression: &mut IdedExpr) {
    let id = expression.id;
    match &mut expression.expr {
        Expr::Struct(construction) => {
            let entries = std::mem::take(&mut construction.entries).into_iter().map(|entry| {
                let expr = match entry.expr {
                    EntryExpr::StructField(mut field) => {
                        rewrite(&mut field.value);
                        let key = IdedExpr { id, expr: Expr::Literal(LiteralValue::String(CelString::from(field.field))) };
                        EntryExpr::MapEntry(MapEntryExpr { key, value: field.value, optional: field.optional })
                    }
                    EntryExpr::MapEntry(mut pair) => {
                        rewrite(&mut pair.key);
                        rewrite(&mut pair.value);
                        EntryExpr::MapEntry(pair)
                    }
                };
                IdedEntryExpr { id: entry.id, expr }
            }).collect();
            expression.expr = Expr::Map(MapExpr { entries });
        }
        Expr::Map(map) => {
            for entry in &mut map.entries {
                match &mut entry.expr {
                    EntryExpr::MapEntry(pair) => {
                        rewrite(&mut pair.key);
                        rewrite(&mut pair.value);
                    }
                    EntryExpr::StructField(field) => rewrite(&mut field.value),
                }
            }
        }
        Expr::Call(call) => {
            if let Some(target) = &mut call.target {
                rewrite(target);
            }
            call.args.iter_mut().for_each(rewrite);
        }
        Expr::Comprehension(comprehension) => {
            for part in [&mut comprehension.iter_range, &mut comprehension.accu_init, &mut comprehension.loop_cond,
                &mut comprehension.loop_step, &mut comprehension.result] {
                rewrite(part);
            }
        }
        Expr::List(list) => list.elements.iter_mut().for_each(rewrite),
        Expr::Select(select) => rewrite(&mut select.operand),
        _ => {}
    }
}

/// The `request` variable of a write: kube's AdmissionRequest (made once per write, whatever the policies).
pub fn request_of(attributes: &Attributes<'_>) -> Value {
    review::request("", attributes, attributes.object).get_mut("request").map(Value::take).unwrap_or(Value::Null)
}

/// The CEL variables of a write: `object`, `oldObject`, `request`, `namespaceObject`, `params` (null without) and
/// `variables`, each of which may read the ones before it (one that fails is left out: an expression reading it
/// then fails).
pub fn context(attributes: &Attributes<'_>, request: &Value, namespace: Option<&Value>, params: &Value, variables: &[(String, Expression)])
    -> Result<Cel<'static>, String> {
    Objects { managed_fields: true }.context(attributes, request, namespace, params, variables)
}

/// CEL's standard functions and macros and kube's CEL libraries (strings, lists, regex, quantity, URLs, IPs and
/// CIDRs, semver, format), registered once: each evaluation's variables go in a scope of their own above them
/// (registering them is most of what making a context costs).
static FUNCTIONS: std::sync::LazyLock<Cel<'static>> = std::sync::LazyLock::new(|| {
    use kube_core::cel::KubeCelExt;
    Cel::default().with_all()
});

/// The costly CEL variables a policy's expressions name: `namespaceObject` (a store read), `request` (kube's
/// AdmissionRequest, a copy of the object) and `oldObject`.
#[derive(Clone, Copy, Default)]
pub struct Uses {
    pub namespace: bool,
    pub request: bool,
    pub old: bool,
    /// `managedFields`: without it, the objects' `metadata.managedFields` are left out of their CEL values.
    pub managed_fields: bool,
}

impl Uses {
    pub fn of<'a>(texts: impl Iterator<Item = &'a str>) -> Uses {
        texts.fold(Uses::default(), |uses, text| Uses {
            namespace: uses.namespace || text.contains("namespaceObject"),
            request: uses.request || text.contains("request"),
            old: uses.old || text.contains("oldObject"),
            managed_fields: uses.managed_fields || text.contains("managedFields"),
        })
    }
}

/// How a write's objects become CEL values.
pub struct Objects {
    /// Whether `metadata.managedFields` is kept (only an expression that names it reads it).
    pub managed_fields: bool,
}

impl Objects {
    pub fn context(&self, attributes: &Attributes<'_>, request: &Value, namespace: Option<&Value>, params: &Value, variables: &[(String, Expression)])
        -> Result<Cel<'static>, String> {
        let mut context = FUNCTIONS.new_inner_scope();
        let null = Value::Null;
        for (name, value) in [("object", attributes.object.unwrap_or(&null)), ("oldObject", attributes.old.unwrap_or(&null)), ("request", request),
            ("namespaceObject", namespace.unwrap_or(&null)), ("params", params)] {
            context.add_variable_from_value(name, self.object(value));
        }
        let mut values: HashMap<String, CelValue> = HashMap::new();
        context.add_variable_from_value("variables", values.clone());
        for (name, expression) in variables {
            if let Ok(value) = expression.eval(&context) {
                values.insert(name.clone(), value);
                context.add_variable_from_value("variables", values.clone());
            }
        }
        Ok(context)
    }

    /// An object as CEL's value, its `metadata.managedFields` left out unless kept.
    pub fn object(&self, object: &Value) -> CelValue {
        match object {
            Value::Object(fields) if !self.managed_fields => map(fields, |key, value| match (key, value) {
                ("metadata", Value::Object(metadata)) => Some(map(metadata, |key, value| (key != "managedFields").then(|| cel(value)))),
                _ => Some(cel(value)),
            }),
            other => cel(other),
        }
    }
}

/// A JSON value as CEL's, built directly (numbers as the serde conversion makes them: Int, else UInt, else Float).
fn cel(value: &Value) -> CelValue {
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => CelValue::Int(i),
            (None, Some(u)) => CelValue::UInt(u),
            _ => CelValue::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(items) => CelValue::List(Arc::new(items.iter().map(cel).collect())),
        Value::Object(fields) => map(fields, |_, value| Some(cel(value))),
    }
}

/// A JSON object as a CEL map of the entries `convert` keeps.
fn map(fields: &serde_json::Map<String, Value>, convert: impl Fn(&str, &Value) -> Option<CelValue>) -> CelValue {
    let entries: HashMap<CelKey, CelValue> = fields.iter()
        .filter_map(|(key, value)| Some((CelKey::String(Arc::new(key.clone())), convert(key, value)?))).collect();
    CelValue::Map(CelMap { map: Arc::new(entries) })
}

/// A CEL value as JSON: what a mutation's expression built. Map keys must be strings; functions, bytes and
/// other values JSON has no form for are an error naming their type.
pub fn json(value: &CelValue) -> Result<Value, String> {
    Ok(match value {
        CelValue::Null => Value::Null,
        CelValue::Bool(b) => Value::Bool(*b),
        CelValue::Int(i) => Value::from(*i),
        CelValue::UInt(u) => Value::from(*u),
        CelValue::Float(f) => serde_json::Number::from_f64(*f).map(Value::Number).ok_or_else(|| format!("{f} is not a JSON number"))?,
        CelValue::String(s) => Value::String(s.to_string()),
        CelValue::List(items) => Value::Array(items.iter().map(json).collect::<Result<_, _>>()?),
        CelValue::Map(entries) => {
            let mut object = serde_json::Map::new();
            for (key, value) in entries.map.iter() {
                let CelKey::String(key) = key else { return Err(format!("a map key must be a string, not {key:?}")) };
                object.insert(key.to_string(), json(value)?);
            }
            Value::Object(object)
        }
        other => return Err(format!("a {} has no JSON form", other.type_of())),
    })
}

/// Whether every `matchConditions` entry holds for the write: `Ok(false)` as soon as one is false, `Err` naming
/// the first that cannot be evaluated to a bool.
pub fn conditions_hold(conditions: &[(String, Expression)], context: &Cel) -> Result<bool, String> {
    for (name, condition) in conditions {
        match condition.eval(context) {
            Ok(CelValue::Bool(true)) => {}
            Ok(CelValue::Bool(false)) => return Ok(false),
            Ok(_) => return Err(format!("matchCondition '{name}' did not evaluate to a bool")),
            Err(why) => return Err(format!("matchCondition '{name}' resulted in error: {why}")),
        }
    }
    Ok(true)
}

/// A cause for each expression of `items[].field` that does not compile (kube refuses them at write).
pub fn check_expressions(items: Option<&Value>, path: &str, field: &str, causes: &mut Vec<Cause>) {
    for (index, item) in items.and_then(Value::as_array).into_iter().flatten().enumerate() {
        let Some(expression) = item.get(field).and_then(Value::as_str) else { continue };
        check_expression(expression, &format!("{path}[{index}].{field}"), causes);
    }
}

/// A cause if `expression` (at `path`) is empty or does not compile.
pub fn check_expression(expression: &str, path: &str, causes: &mut Vec<Cause>) {
    if expression.trim().is_empty() {
        causes.push(Cause::required(path));
    } else if let Err(error) = Program::compile(expression) {
        causes.push(Cause::invalid(path, expression, &format!("compilation failed: {error}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_become_the_cel_values_the_serde_conversion_makes_without_managed_fields_unless_kept() {
        let object = serde_json::json!({"apiVersion": "v1", "metadata": {"name": "n", "labels": {"a": "b"}, "managedFields": [{"manager": "m"}]},
            "data": {"k": "v"}, "spec": {"replicas": 3, "big": u64::MAX, "ratio": 0.5, "on": true, "none": null, "list": [1, "x"]}});
        let serde = kube_core::cel::cel::to_value(&object).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Objects { managed_fields: true }.object(&object), serde);
        let mut without = object.clone();
        without["metadata"].as_object_mut().map(|m| m.remove("managedFields"));
        let serde = kube_core::cel::cel::to_value(&without).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Objects { managed_fields: false }.object(&object), serde);
    }

    #[test]
    fn message_constructions_evaluate_to_maps_of_their_fields() {
        let context = FUNCTIONS.new_inner_scope();
        let eval = |text: &str| Expression::new(text).eval(&context).and_then(|v| json(&v)).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(eval("Object{spec: Object.spec{replicas: 1 + 2, selector: {'a': 'b'}}}"),
            serde_json::json!({"spec": {"replicas": 3, "selector": {"a": "b"}}}));
        assert_eq!(eval("[JSONPatch{op: 'add', path: '/x', value: [Object.y{z: true}]}]"),
            serde_json::json!([{"op": "add", "path": "/x", "value": [{"z": true}]}]));
        assert_eq!(eval("[1, 2].map(i, Object.x{v: i})"), serde_json::json!([{"v": 1}, {"v": 2}]));
        assert!(Expression::new("Object{spec: Object.spec{}}").constructs("Object"));
        assert!(!Expression::new("{'spec': {}}").constructs("Object"));
    }
}
