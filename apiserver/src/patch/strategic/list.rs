//! Merging lists: by merge key or by value, list-item directives, `$setElementOrder` and `$deleteFromPrimitiveList`.
//!
//! Ordering follows kube: the merged list is split into items the patch (or `$setElementOrder`)
//! names and server-only items; each part keeps its own order, and a server-only item goes before
//! a patch item only when the live list already had it before that item.

use serde_json::{Map, Value};

use super::error::{type_name, Path, StrategicPatchError};
use super::schema::{FieldSchema, PatchSchema, PatchStrategy};
use super::{
    lookup, materialize, materialize_list, merge_map, PatchDirective, DELETE_FROM_PRIMITIVE_LIST,
    PATCH_DIRECTIVE, SET_ELEMENT_ORDER,
};

/// What the elements of the lists being merged are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ElementKind {
    Objects,
    Primitives,
}

/// Checks that all elements share one JSON type and are not lists; `None` when there are none.
fn element_kind(
    lists: &[&[Value]],
    path: &Path,
) -> Result<Option<ElementKind>, StrategicPatchError> {
    let mut seen: Option<&'static str> = None;
    for value in lists.iter().flat_map(|list| list.iter()) {
        let name = type_name(value);
        if name == "array" {
            return Err(StrategicPatchError::UnsupportedListElements {
                path: path.to_string(),
                reason: "lists of lists are not supported",
            });
        }
        match seen {
            Some(previous) if previous != name => {
                return Err(StrategicPatchError::UnsupportedListElements {
                    path: path.to_string(),
                    reason: "list element types are not identical",
                });
            }
            _ => seen = Some(name),
        }
    }
    Ok(seen.map(|name| {
        if name == "object" {
            ElementKind::Objects
        } else {
            ElementKind::Primitives
        }
    }))
}

/// Validates the `$patch` of a list item: `delete` and `replace` are the only list-item directives.
pub(super) fn list_item_directive(
    item: &Map<String, Value>,
    path: &Path,
) -> Result<PatchDirective, StrategicPatchError> {
    match super::patch_directive(item, path)? {
        Some(directive @ (PatchDirective::Delete | PatchDirective::Replace)) => Ok(directive),
        _ => Err(StrategicPatchError::UnknownPatchDirective {
            path: path.to_string(),
            value: item
                .get(PATCH_DIRECTIVE)
                .map(Value::to_string)
                .unwrap_or_default(),
        }),
    }
}

/// Merges a patch list into an original list of a field with strategy `merge`.
pub(super) fn merge_list(
    original: Vec<Value>,
    patch: &[Value],
    merge_key: Option<&str>,
    schema: &dyn PatchSchema,
    path: &Path,
) -> Result<Vec<Value>, StrategicPatchError> {
    match element_kind(&[&original, patch], path)? {
        None => Ok(original),
        Some(ElementKind::Primitives) => Ok(merge_primitives(original, patch)),
        Some(ElementKind::Objects) => {
            let key = merge_key.ok_or_else(|| StrategicPatchError::NoMergeKeyInSchema {
                path: path.to_string(),
            })?;
            merge_objects(original, patch, key, schema, path)
        }
    }
}

/// Union of two primitive lists without duplicates, in kube's order.
fn merge_primitives(original: Vec<Value>, patch: &[Value]) -> Vec<Value> {
    let server_order = original.clone();
    let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
    for item in original.into_iter().chain(patch.iter().cloned()) {
        if !merged.contains(&item) {
            merged.push(item);
        }
    }
    normalize_order(merged, patch, &server_order, None)
}

/// Merges lists of objects by `key`, honouring `$patch: delete` and `$patch: replace` items.
fn merge_objects(
    mut original: Vec<Value>,
    patch: &[Value],
    key: &str,
    schema: &dyn PatchSchema,
    path: &Path,
) -> Result<Vec<Value>, StrategicPatchError> {
    let (replace, patch_items) = apply_item_directives(&mut original, patch, key, path)?;
    if replace {
        let kept: Vec<Value> = patch_items
            .iter()
            .map(|(_, map)| Value::Object((*map).clone()))
            .collect();
        let replacement = materialize_list(&kept, path)?;
        require_merge_keys(&replacement, key, path)?;
        return Ok(replacement);
    }
    require_merge_keys(&original, key, path)?;
    let server_order = identities(&original, Some(key));
    for (index, map) in &patch_items {
        let item_path = path.index(*index);
        let value = merge_key_value(map, key, &item_path)?;
        let found = original.iter_mut().find(|o| o.get(key) == Some(value));
        match found {
            Some(Value::Object(current)) => {
                *current = merge_map(std::mem::take(current), map, schema, &item_path)?;
            }
            _ => original.extend(materialize(&Value::Object((*map).clone()), &item_path)?),
        }
    }
    let patch_order: Vec<Value> = patch_items
        .iter()
        .filter_map(|(_, map)| map.get(key).cloned())
        .collect();
    Ok(normalize_order_by_ids(
        original,
        &patch_order,
        &server_order,
        Some(key),
    ))
}

/// Ordinary items of a patch list with their index in it (for error paths).
type IndexedItems<'p> = Vec<(usize, &'p Map<String, Value>)>;

/// Applies the `$patch` items of a patch list (deletions remove every live item with that key)
/// and returns whether the list is replaced, plus the ordinary patch items with their indexes.
fn apply_item_directives<'p>(
    original: &mut Vec<Value>,
    patch: &'p [Value],
    key: &str,
    path: &Path,
) -> Result<(bool, IndexedItems<'p>), StrategicPatchError> {
    let mut replace = false;
    let mut patch_items = Vec::with_capacity(patch.len());
    for (index, item) in patch.iter().enumerate() {
        let Value::Object(map) = item else { continue };
        if !map.contains_key(PATCH_DIRECTIVE) {
            patch_items.push((index, map));
            continue;
        }
        let item_path = path.index(index);
        match list_item_directive(map, &item_path)? {
            PatchDirective::Delete => {
                let value = merge_key_value(map, key, &item_path)?;
                original.retain(|o| o.get(key) != Some(value));
            }
            _ => replace = true,
        }
    }
    Ok((replace, patch_items))
}

/// The merge key's value in a patch item, or the error kube gives for a missing key.
fn merge_key_value<'m>(
    item: &'m Map<String, Value>,
    key: &str,
    path: &Path,
) -> Result<&'m Value, StrategicPatchError> {
    item.get(key)
        .ok_or_else(|| StrategicPatchError::MissingMergeKey {
            path: path.to_string(),
            merge_key: key.to_owned(),
        })
}

/// Every item must be an object carrying the merge key before it can be ordered.
fn require_merge_keys(items: &[Value], key: &str, path: &Path) -> Result<(), StrategicPatchError> {
    for (index, item) in items.iter().enumerate() {
        if item.get(key).is_none() {
            let path = path.index(index);
            return Err(StrategicPatchError::MissingMergeKey {
                path: path.to_string(),
                merge_key: key.to_owned(),
            });
        }
    }
    Ok(())
}

/// What identifies an item for ordering: its merge key's value, or the item itself for primitives.
fn identity<'v>(item: &'v Value, key: Option<&str>) -> Option<&'v Value> {
    match key {
        Some(key) => item.get(key),
        None => Some(item),
    }
}

fn identities(items: &[Value], key: Option<&str>) -> Vec<Value> {
    items
        .iter()
        .filter_map(|item| identity(item, key))
        .cloned()
        .collect()
}

fn position(ids: &[Value], item: &Value, key: Option<&str>) -> Option<usize> {
    let id = identity(item, key)?;
    ids.iter().position(|candidate| candidate == id)
}

/// Orders `merged` with `patch_order` (full items) for patch items and `server_order` (full items) for the rest.
fn normalize_order(
    merged: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    normalize_order_by_ids(
        merged,
        &identities(patch_order, key),
        &identities(server_order, key),
        key,
    )
}

/// kube's `normalizeElementOrder`: sort both parts, then interleave them by the live order.
fn normalize_order_by_ids(
    merged: Vec<Value>,
    patch_ids: &[Value],
    server_ids: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let (mut patch_items, mut server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|item| position(patch_ids, item, key).is_some());
    patch_items.sort_by_key(|item| position(patch_ids, item, key));
    server_only.sort_by_key(|item| position(server_ids, item, key).unwrap_or(usize::MAX));
    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    while let (Some(l), Some(r)) = (left.peek(), right.peek()) {
        let left_first = match (position(server_ids, l, key), position(server_ids, r, key)) {
            (Some(li), Some(ri)) => li < ri,
            _ => false,
        };
        out.extend(if left_first {
            left.next()
        } else {
            right.next()
        });
    }
    out.extend(left);
    out.extend(right);
    out
}

/// Applies `$setElementOrder/<field>`: merges `field` (if the patch has it) and orders the result.
pub(super) fn apply_set_element_order(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    field: &str,
    order: &Value,
    schema: &dyn PatchSchema,
    path: &Path,
) -> Result<(), StrategicPatchError> {
    let directive = format!("{SET_ELEMENT_ORDER}/{field}");
    let field_path = path.field(field);
    let bad = |what: String| path.invalid(&directive, what);
    let order = list_operand(Some(order)).map_err(|t| bad(format!("must be a list, got {t}")))?;
    let order = order.unwrap_or_default();
    let current = list_operand(original.get(field).filter(|v| !v.is_null()))
        .map_err(|t| bad(format!("the object's {field:?} is a {t}")))?;
    let patch_list = list_operand(patch.get(field))
        .map_err(|t| bad(format!("the patch's {field:?} is a {t}")))?;
    let field_schema = lookup(schema, field, &field_path)?;
    let lists = [current.unwrap_or_default(), patch_list.unwrap_or_default()];
    let kind = element_kind(&lists, &field_path)?;
    let key = match (&field_schema, kind) {
        (Some(f), Some(ElementKind::Objects)) => f.meta.merge_key.as_deref(),
        _ => None,
    };
    if let Some(patch_list) = patch_list {
        check_patch_follows_order(patch_list, order, key, &directive, path)?;
    }
    let Some(merged) = merge_for_order(current, patch_list, field_schema.as_ref(), &field_path)?
    else {
        return Ok(());
    };
    let server_order = current.unwrap_or_default();
    let ordered = match key {
        Some(key) => {
            require_merge_keys(&merged, key, &field_path)?;
            require_merge_keys(order, key, &path.field(&directive))?;
            normalize_order(merged, order, server_order, Some(key))
        }
        None if kind.is_some() => normalize_order(merged, order, server_order, None),
        None => merged,
    };
    original.insert(field.to_owned(), Value::Array(ordered));
    Ok(())
}

/// A value that must be a list when present; the error names the JSON type found instead.
fn list_operand(value: Option<&Value>) -> Result<Option<&[Value]>, &'static str> {
    match value {
        None => Ok(None),
        Some(Value::Array(items)) => Ok(Some(items)),
        Some(other) => Err(type_name(other)),
    }
}

/// The list `$setElementOrder` orders: the live list merged with the patch's, `None` when neither exists.
fn merge_for_order(
    current: Option<&[Value]>,
    patch_list: Option<&[Value]>,
    field_schema: Option<&FieldSchema<'_>>,
    path: &Path,
) -> Result<Option<Vec<Value>>, StrategicPatchError> {
    Ok(Some(match (current, patch_list) {
        (None, None) => return Ok(None),
        (Some(current), None) => current.to_vec(),
        (None, Some(patch_list)) => materialize_list(patch_list, path)?,
        (Some(current), Some(patch_list)) => match field_schema {
            Some(f) if f.meta.strategy == PatchStrategy::Merge => {
                let key = f.meta.merge_key.as_deref();
                merge_list(current.to_vec(), patch_list, key, &*f.child, path)?
            }
            _ => materialize_list(patch_list, path)?,
        },
    }))
}

/// kube's check that the patch list names items in the same relative order as `$setElementOrder`.
fn check_patch_follows_order(
    patch_list: &[Value],
    order: &[Value],
    key: Option<&str>,
    directive: &str,
    path: &Path,
) -> Result<(), StrategicPatchError> {
    let is_marker = |item: &Value| item.get(PATCH_DIRECTIVE).is_some();
    let mut order_ids = order.iter().map(|o| identity(o, key));
    for item in patch_list.iter().filter(|item| !is_marker(item)) {
        let id = identity(item, key);
        if id.is_none() || !order_ids.any(|o| o == id) {
            return Err(path.invalid(
                directive,
                "the patch list's items are missing from it or in another order",
            ));
        }
    }
    Ok(())
}

/// Applies `$deleteFromPrimitiveList/<field>`: removes the listed values, whatever the field's strategy.
pub(super) fn delete_from_primitive_list(
    original: &mut Map<String, Value>,
    field: &str,
    to_delete: &Value,
    path: &Path,
) -> Result<(), StrategicPatchError> {
    let directive = format!("{DELETE_FROM_PRIMITIVE_LIST}/{field}");
    let Some(to_delete) = to_delete.as_array() else {
        return Err(path.invalid(
            &directive,
            format!("must be a list, got {}", type_name(to_delete)),
        ));
    };
    if let Some(bad) = to_delete.iter().find(|v| v.is_object() || v.is_array()) {
        return Err(path.invalid(
            &directive,
            format!("may list only primitives, got a {}", type_name(bad)),
        ));
    }
    if let Some(Value::Array(items)) = original.get_mut(field) {
        items.retain(|item| !to_delete.contains(item));
    }
    Ok(())
}
