//! Kubernetes strategic merge patch (`application/strategic-merge-patch+json`) over `serde_json::Value`.
//!
//! The semantics follow `k8s.io/apimachinery/pkg/util/strategicpatch` as kube-apiserver applies
//! patches (parallel delete lists merged, unmatched nulls dropped):
//!
//! - objects merge key by key; `null` deletes a key;
//! - lists are replaced unless the schema says `x-kubernetes-patch-strategy: merge`; then lists of
//!   objects merge by `x-kubernetes-patch-merge-key` and lists of primitives become a union;
//! - `$patch: replace` / `delete` on an object, `$patch: delete` (by merge key) and
//!   `{"$patch": "replace"}` inside a merged list, `$retainKeys`, `$setElementOrder/<field>` and
//!   `$deleteFromPrimitiveList/<field>`;
//! - merged lists keep kube's order: patch items in patch order, interleaved with server-only items
//!   wherever the live list put a server-only item before a patch item; `$setElementOrder` wins.
//!
//! Where this implementation chooses rather than copies kube's behaviour:
//!
//! - directives never reach the result, even inside values the original lacks (kube copies such
//!   values with only `$patch` maps removed, and replaced lists verbatim); nulls inside such
//!   values are dropped too;
//! - `$patch: replace` on an object the original lacks yields the object (kube drops it);
//! - `$patch: merge` on an object is an explicit default merge (kube rejects it); inside a list
//!   it is rejected, as in kube; an unknown `$patch` is rejected even inside a new value;
//! - fields the schema does not know merge like JSON merge patch (kube's OpenAPI lookup fails);
//! - `$deleteFromPrimitiveList/x` runs after `x` is merged (kube's map order makes it random),
//!   may list only primitives, and must be a list (kube ignores a non-list);
//! - `$setElementOrder` over lists with no elements at all is a no-op (kube errors).

mod error;
mod list;
mod schema;

#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

pub use error::{PatchErrorClass, StrategicPatchError};
pub use schema::{
    DefinitionsSchema, FieldPatchMeta, FieldSchema, ListType, PatchSchema, PatchStrategy,
    SchemaError, UnknownSchema,
};

use error::{type_name, Path};

/// The key of the `$patch` directive.
const PATCH_DIRECTIVE: &str = "$patch";
/// The key of the `$retainKeys` directive.
const RETAIN_KEYS: &str = "$retainKeys";
/// The prefix of `$setElementOrder/<field>` keys.
const SET_ELEMENT_ORDER: &str = "$setElementOrder";
/// The prefix of `$deleteFromPrimitiveList/<field>` keys.
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";

/// Applies the strategic merge patch `patch` to `original`, reading merge rules from `schema`.
///
/// Both documents must be JSON objects. Neither is modified; the result is a new value.
pub fn apply_strategic_merge_patch(
    original: &Value,
    patch: &Value,
    schema: &dyn PatchSchema,
) -> Result<Value, StrategicPatchError> {
    let Value::Object(patch) = patch else {
        return Err(StrategicPatchError::PatchNotAnObject {
            path: Path::Root.to_string(),
            found: type_name(patch),
        });
    };
    let Value::Object(original) = original else {
        return Err(StrategicPatchError::OriginalNotAnObject {
            found: type_name(original),
        });
    };
    merge_map(original.clone(), patch, schema, &Path::Root).map(Value::Object)
}

/// The value of a `$patch` directive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatchDirective {
    Replace,
    Delete,
    Merge,
}

/// Reads `$patch` from a patch object, if present.
fn patch_directive(
    patch: &Map<String, Value>,
    path: &Path,
) -> Result<Option<PatchDirective>, StrategicPatchError> {
    match patch.get(PATCH_DIRECTIVE) {
        None => Ok(None),
        Some(Value::String(s)) if s == "replace" => Ok(Some(PatchDirective::Replace)),
        Some(Value::String(s)) if s == "delete" => Ok(Some(PatchDirective::Delete)),
        Some(Value::String(s)) if s == "merge" => Ok(Some(PatchDirective::Merge)),
        Some(other) => Err(StrategicPatchError::UnknownPatchDirective {
            path: path.to_string(),
            value: other.to_string(),
        }),
    }
}

/// One key of a patch object, sorted into directives and ordinary fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatchKey<'k> {
    Patch,
    RetainKeys,
    SetElementOrder(&'k str),
    DeleteFromPrimitiveList(&'k str),
    Field(&'k str),
}

/// Classifies `key`; a key that starts like a list directive but lacks `/<field>` is an error.
fn classify_key<'k>(key: &'k str, path: &Path) -> Result<PatchKey<'k>, StrategicPatchError> {
    if key == PATCH_DIRECTIVE {
        return Ok(PatchKey::Patch);
    }
    if key == RETAIN_KEYS {
        return Ok(PatchKey::RetainKeys);
    }
    for (prefix, make) in [
        (
            SET_ELEMENT_ORDER,
            PatchKey::SetElementOrder as fn(&'k str) -> PatchKey<'k>,
        ),
        (
            DELETE_FROM_PRIMITIVE_LIST,
            PatchKey::DeleteFromPrimitiveList,
        ),
    ] {
        if let Some(rest) = key.strip_prefix(prefix) {
            return match rest.strip_prefix('/') {
                Some(field) if !field.is_empty() => Ok(make(field)),
                _ => Err(path.invalid(
                    prefix,
                    format!("key {key:?} must have the form {prefix}/<field>"),
                )),
            };
        }
    }
    Ok(PatchKey::Field(key))
}

/// Merges a patch object into an original object (the heart of SMP).
fn merge_map(
    mut original: Map<String, Value>,
    patch: &Map<String, Value>,
    schema: &dyn PatchSchema,
    path: &Path,
) -> Result<Map<String, Value>, StrategicPatchError> {
    match patch_directive(patch, path)? {
        Some(PatchDirective::Replace) => return materialize_map(patch, path),
        Some(PatchDirective::Delete) => return Ok(Map::new()),
        Some(PatchDirective::Merge) | None => {}
    }
    let keys = patch
        .iter()
        .map(|(key, value)| Ok((classify_key(key, path)?, value)))
        .collect::<Result<Vec<_>, StrategicPatchError>>()?;
    if let Some(retain) = patch.get(RETAIN_KEYS) {
        apply_retain_keys(&mut original, &keys, retain, path)?;
    }
    let mut ordered_fields = Vec::new();
    for (key, value) in &keys {
        if let PatchKey::SetElementOrder(field) = *key {
            list::apply_set_element_order(&mut original, patch, field, value, schema, path)?;
            ordered_fields.push(field);
        }
    }
    for (key, value) in &keys {
        if let PatchKey::Field(field) = *key {
            if !ordered_fields.contains(&field) {
                merge_field(&mut original, field, value, schema, path)?;
            }
        }
    }
    for (key, value) in &keys {
        if let PatchKey::DeleteFromPrimitiveList(field) = *key {
            list::delete_from_primitive_list(&mut original, field, value, path)?;
        }
    }
    Ok(original)
}

/// Merges the patch value of one field into `original`.
fn merge_field(
    original: &mut Map<String, Value>,
    field: &str,
    patch_value: &Value,
    schema: &dyn PatchSchema,
    path: &Path,
) -> Result<(), StrategicPatchError> {
    let field_path = path.field(field);
    if patch_value.is_null() {
        original.remove(field);
        return Ok(());
    }
    let current = original.get_mut(field).map(Value::take);
    let merged = match (current, patch_value) {
        (Some(Value::Object(current)), Value::Object(patch)) => {
            let field_schema = lookup(schema, field, &field_path)?;
            match &field_schema {
                Some(f) if f.meta.strategy == PatchStrategy::Replace => {
                    materialize(patch_value, &field_path)?
                }
                Some(f) => Some(Value::Object(merge_map(
                    current,
                    patch,
                    &*f.child,
                    &field_path,
                )?)),
                None => Some(Value::Object(merge_map(
                    current,
                    patch,
                    &UnknownSchema,
                    &field_path,
                )?)),
            }
        }
        (Some(Value::Array(current)), Value::Array(patch)) => {
            let field_schema = lookup(schema, field, &field_path)?;
            match &field_schema {
                Some(f) if f.meta.strategy == PatchStrategy::Merge => {
                    let merged = list::merge_list(
                        current,
                        patch,
                        f.meta.merge_key.as_deref(),
                        &*f.child,
                        &field_path,
                    )?;
                    Some(Value::Array(merged))
                }
                _ => materialize(patch_value, &field_path)?,
            }
        }
        _ => materialize(patch_value, &field_path)?,
    };
    match merged {
        Some(value) => original.insert(field.to_owned(), value),
        None => original.remove(field),
    };
    Ok(())
}

/// Looks a field up in the schema, attaching the path to schema errors.
fn lookup<'s>(
    schema: &'s dyn PatchSchema,
    field: &str,
    path: &Path,
) -> Result<Option<FieldSchema<'s>>, StrategicPatchError> {
    schema.field(field).map_err(|e| path.schema_error(e))
}

/// Applies `$retainKeys`: every non-null field of the patch must be listed, unlisted original fields are cleared.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    keys: &[(PatchKey<'_>, &Value)],
    retain: &Value,
    path: &Path,
) -> Result<(), StrategicPatchError> {
    let Some(retain) = retain.as_array() else {
        return Err(path.invalid(
            RETAIN_KEYS,
            format!("must be a list of field names, got {}", type_name(retain)),
        ));
    };
    let names = retain
        .iter()
        .map(|name| {
            name.as_str()
                .ok_or_else(|| path.invalid(RETAIN_KEYS, format!("{name} is not a field name")))
        })
        .collect::<Result<Vec<&str>, StrategicPatchError>>()?;
    for (key, value) in keys {
        if let PatchKey::Field(field) = key {
            if !value.is_null() && !names.contains(field) {
                return Err(path.invalid(
                    RETAIN_KEYS,
                    format!("the patch sets {field:?}, which is not retained"),
                ));
            }
        }
    }
    original.retain(|field, _| names.contains(&field.as_str()));
    Ok(())
}

/// A patch value taken as a whole (the original has nothing to merge it with), with directives
/// applied to nothing: `None` when the value disappears (`null`, `$patch: delete`).
fn materialize(value: &Value, path: &Path) -> Result<Option<Value>, StrategicPatchError> {
    match value {
        Value::Null => Ok(None),
        Value::Object(map) => match patch_directive(map, path)? {
            Some(PatchDirective::Delete) => Ok(None),
            _ => Ok(Some(Value::Object(materialize_map(map, path)?))),
        },
        Value::Array(items) => Ok(Some(Value::Array(materialize_list(items, path)?))),
        scalar => Ok(Some(scalar.clone())),
    }
}

/// The fields of a patch object without its directives or nulls.
fn materialize_map(
    map: &Map<String, Value>,
    path: &Path,
) -> Result<Map<String, Value>, StrategicPatchError> {
    let mut out = Map::new();
    for (key, value) in map {
        if let PatchKey::Field(field) = classify_key(key, path)? {
            if let Some(value) = materialize(value, &path.field(field))? {
                out.insert(field.to_owned(), value);
            }
        }
    }
    Ok(out)
}

/// The items of a patch list without directive items (`{"$patch": …}` markers and deletions).
fn materialize_list(items: &[Value], path: &Path) -> Result<Vec<Value>, StrategicPatchError> {
    let mut out = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let item_path = path.index(index);
        match item {
            Value::Object(map) if map.contains_key(PATCH_DIRECTIVE) => {
                list::list_item_directive(map, &item_path)?;
            }
            Value::Null => out.push(Value::Null),
            other => out.extend(materialize(other, &item_path)?),
        }
    }
    Ok(out)
}
