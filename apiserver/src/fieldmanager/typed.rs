//! The walks over objects with their schema, as structured-merge-diff defines them: the field set of a value,
//! the comparison of two values (added, modified, removed paths), the merge of an applied configuration into a
//! live object (list items in kube's order), the removal of a set of paths, and the check that an applied
//! configuration's list items can be told apart.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::{Map, Value};

use super::path::{display, join_fields, values_equal, Path, PathElement};
use super::schema::{SchemaView, Shape};
use super::set::FieldSet;

/// An applied configuration whose list items cannot be told apart (kube's typed-value validation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct InvalidConfig(pub(crate) String);

/// What changed between two values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Comparison {
    pub(crate) added: FieldSet,
    pub(crate) modified: FieldSet,
    pub(crate) removed: FieldSet,
}

/// The path element of a list item of a `set` or `map` list, or why it has none.
fn item_element<S: SchemaView>(shape: &Shape, items: S, item: &Value) -> Result<PathElement, String> {
    match shape {
        Shape::Keyed(keys) => {
            let Some(map) = item.as_object() else {
                return Err(match item {
                    Value::Null => "associative list with keys may not have a null element".into(),
                    _ => "associative list with keys may not have non-map elements".into(),
                });
            };
            let mut fields: Vec<(String, Value)> = keys.iter()
                .filter_map(|key| map.get(key).cloned().or_else(|| items.key_default(key)).map(|value| (key.clone(), value)))
                .collect();
            if !keys.is_empty() && fields.is_empty() {
                return Err(format!(
                    "associative list with keys has an element that omits all key fields {keys:?} (and doesn't have default values for any key fields)"));
            }
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(PathElement::Key(fields))
        }
        _ => match item {
            Value::Object(_) => Err("associative list without keys has an element that's a map type".into()),
            Value::Array(_) => Err("not supported: associative list with lists as elements".into()),
            Value::Null => Err("associative list without keys has an element that's an explicit null".into()),
            scalar => Ok(PathElement::Value(scalar.clone())),
        },
    }
}

/// The shape two values share at a node: the present, non-null values decide; values of different shapes are
/// one leaf.
fn pair_shape<S: SchemaView>(schema: S, lhs: Option<&Value>, rhs: Option<&Value>) -> Shape {
    let mut shapes = [lhs, rhs].into_iter().flatten().filter(|v| !v.is_null()).map(|v| schema.shape(v));
    match (shapes.next(), shapes.next()) {
        (None, _) => Shape::Leaf,
        (Some(one), None) => one,
        (Some(a), Some(b)) if a == b => a,
        _ => Shape::Leaf,
    }
}

fn is_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Object(map)) => map.is_empty(),
        Some(Value::Array(items)) => items.is_empty(),
        Some(_) => false,
    }
}

/// Every path `value` sets: leaves, struct fields that are null or empty objects, map entries, and list items.
pub(crate) fn field_set<S: SchemaView>(value: &Value, schema: S) -> FieldSet {
    let mut set = FieldSet::new();
    match schema.shape(value) {
        Shape::Leaf => {}
        Shape::Fields => {
            for (key, child) in value.as_object().into_iter().flatten() {
                let (child_schema, declared) = schema.field(key);
                let element = PathElement::Field(key.clone());
                let empty_object = child.as_object().is_some_and(Map::is_empty);
                if !declared || child.is_null() || empty_object || child_schema.shape(child) == Shape::Leaf {
                    set.add_member(element.clone());
                }
                set.add_child(element, field_set(child, child_schema));
            }
        }
        shape @ (Shape::Set | Shape::Keyed(_)) => {
            let items = schema.items();
            let elements: Vec<(PathElement, &Value)> = value.as_array().into_iter().flatten()
                .filter_map(|item| item_element(&shape, items, item).ok().map(|e| (e, item)))
                .collect();
            let mut seen = BTreeSet::new();
            let duplicates: BTreeSet<&PathElement> = elements.iter().filter(|(e, _)| !seen.insert(e)).map(|(e, _)| e).collect();
            for (element, item) in &elements {
                set.add_member(element.clone());
                if !duplicates.contains(element) {
                    set.add_child(element.clone(), field_set(item, items));
                }
            }
        }
    }
    set
}

/// What changed from `lhs` to `rhs`.
pub(crate) fn compare<S: SchemaView>(lhs: &Value, rhs: &Value, schema: S) -> Comparison {
    let mut comparison = Comparison::default();
    walk_compare(Some(lhs), Some(rhs), schema, &mut Vec::new(), &mut comparison);
    comparison
}

/// What changed from `lhs` to `rhs` at and below `prefix`, a path of fields: the part of `compare`'s answer under
/// `prefix`, found without walking the rest of the objects (a status write compares only `status`).
pub(crate) fn compare_under<S: SchemaView>(lhs: &Value, rhs: &Value, schema: S, prefix: &[PathElement]) -> Comparison {
    let mut comparison = Comparison::default();
    let (mut left, mut right, mut node) = (Some(lhs), Some(rhs), schema);
    let mut path = Vec::with_capacity(prefix.len());
    for element in prefix {
        let PathElement::Field(key) = element else { return restrict(compare(lhs, rhs, schema), prefix) };
        // Where `walk_compare` would stop above `prefix`, nothing under it changed (a leaf or an emptied level
        // is reported at its own path, outside `prefix`).
        if left.zip(right).is_some_and(|(l, r)| l == r) || (is_empty(left) && is_empty(right)) {
            return comparison;
        }
        match pair_shape(node, left, right) {
            Shape::Fields => {}
            Shape::Leaf => return comparison,
            Shape::Set | Shape::Keyed(_) => return restrict(compare(lhs, rhs, schema), prefix),
        }
        left = left.and_then(|v| v.get(key));
        right = right.and_then(|v| v.get(key));
        node = node.field(key).0;
        path.push(element.clone());
    }
    if left.is_some() || right.is_some() {
        walk_compare(left, right, node, &mut path, &mut comparison);
    }
    comparison
}

fn restrict(comparison: Comparison, prefix: &[PathElement]) -> Comparison {
    Comparison {
        added: comparison.added.only_under(prefix),
        modified: comparison.modified.only_under(prefix),
        removed: comparison.removed.only_under(prefix),
    }
}

fn compare_leaf(lhs: Option<&Value>, rhs: Option<&Value>, path: &Path, out: &mut Comparison) {
    match (lhs, rhs) {
        (None, _) => out.added.insert(path),
        (_, None) => out.removed.insert(path),
        (Some(l), Some(r)) if !values_equal(l, r) => out.modified.insert(path),
        _ => {}
    }
}

fn walk_compare<S: SchemaView>(lhs: Option<&Value>, rhs: Option<&Value>, schema: S, path: &mut Path, out: &mut Comparison) {
    match (lhs, rhs) {
        (Some(l), Some(r)) if l == r => return,
        // A value on one side only: its path and every path below it, built as one subtree (a create compares
        // the whole object with nothing).
        (None, Some(added)) => return out.added.graft(path, one_sided(added, schema)),
        (Some(removed), None) => return out.removed.graft(path, one_sided(removed, schema)),
        _ => {}
    }
    let shape = pair_shape(schema, lhs, rhs);
    if shape == Shape::Leaf || (is_empty(lhs) && is_empty(rhs)) {
        return compare_leaf(lhs, rhs, path, out);
    }
    if shape == Shape::Fields {
        for (key, left, right) in join_fields(lhs.and_then(Value::as_object), rhs.and_then(Value::as_object)) {
            if left.is_some() && left == right {
                continue;
            }
            path.push(PathElement::Field(key.clone()));
            walk_compare(left, right, schema.field(key).0, path, out);
            path.pop();
        }
    } else {
        compare_items(lhs, rhs, &shape, schema.items(), path, out);
    }
    match (lhs, rhs) {
        (None, _) => out.added.insert(path),
        (_, None) => out.removed.insert(path),
        _ => {}
    }
}

/// The paths below a value that only one side of a comparison has, relative to it: what `walk_compare` reports
/// for it, path by path. Every field of an object and every item of a list is a path; a list item whose
/// element repeats is a path with nothing below it (kube's rule for repeated elements).
fn one_sided<S: SchemaView>(value: &Value, schema: S) -> FieldSet {
    let mut below = FieldSet::new();
    let shape = pair_shape(schema, Some(value), None);
    if shape == Shape::Leaf || is_empty(Some(value)) {
        return below;
    }
    if shape == Shape::Fields {
        for (key, child) in value.as_object().into_iter().flatten() {
            let element = PathElement::Field(key.clone());
            below.add_member(element.clone());
            below.add_child(element, one_sided(child, schema.field(key).0));
        }
    } else {
        let items = schema.items();
        let sorted = sorted_items(Some(value), &shape, items);
        for run in runs(&sorted) {
            let (element, item) = &run[0];
            below.add_member(element.clone());
            if run.len() == 1 {
                below.add_child(element.clone(), one_sided(item, items));
            }
        }
    }
    below
}

/// A list item with its path element.
type Item<'v> = (PathElement, &'v Value);

/// The items of a list with their path elements, sorted by element (list order among equal elements).
fn sorted_items<'v, S: SchemaView>(list: Option<&'v Value>, shape: &Shape, items: S) -> Vec<Item<'v>> {
    let mut sorted: Vec<Item<'v>> = list.and_then(Value::as_array).into_iter().flatten()
        .filter_map(|item| item_element(shape, items, item).ok().map(|element| (element, item)))
        .collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    sorted
}

/// The runs of equal elements of a sorted item list.
fn runs<'s, 'v>(sorted: &'s [Item<'v>]) -> Vec<&'s [Item<'v>]> {
    sorted.chunk_by(|a, b| a.0 == b.0).collect()
}

fn compare_items<S: SchemaView>(lhs: Option<&Value>, rhs: Option<&Value>, shape: &Shape, items: S, path: &mut Path, out: &mut Comparison) {
    let (left, right) = (sorted_items(lhs, shape, items), sorted_items(rhs, shape, items));
    let (left, right) = (runs(&left), runs(&right));
    let (mut i, mut j) = (0, 0);
    while i < left.len() || j < right.len() {
        let order = match (left.get(i), right.get(j)) {
            (Some(l), Some(r)) => l[0].0.cmp(&r[0].0),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        let (l, r): (&[Item<'_>], &[Item<'_>]) = match order {
            std::cmp::Ordering::Less => (left[i], &[]),
            std::cmp::Ordering::Greater => (&[], right[j]),
            std::cmp::Ordering::Equal => (left[i], right[j]),
        };
        i += usize::from(order.is_le());
        j += usize::from(order.is_ge());
        if let Some((element, _)) = l.first().or(r.first()) {
            path.push(element.clone());
            compare_run(l, r, items, path, out);
            path.pop();
        }
    }
}

/// The items of one element on both sides; kube's rules for repeated elements (which only live objects have).
fn compare_run<S: SchemaView>(l: &[Item<'_>], r: &[Item<'_>], items: S, path: &mut Path, out: &mut Comparison) {
    match (l.len(), r.len()) {
        (0..=1, 0..=1) => walk_compare(l.first().map(|i| i.1), r.first().map(|i| i.1), items, path, out),
        (2.., 2..) => {
            let equal = l.len() == r.len() && l.iter().zip(r).all(|(a, b)| values_equal(a.1, b.1));
            if !equal {
                out.modified.insert(path);
            }
        }
        (2.., _) => {
            if let Some(only) = r.first() {
                walk_compare(None, Some(only.1), items, path, out);
            }
            out.removed.insert(path);
        }
        (_, _) => {
            if let Some(only) = l.first() {
                walk_compare(Some(only.1), None, items, path, out);
            }
            out.added.insert(path);
        }
    }
}

/// Merges the applied configuration `rhs` into the live object `lhs`: leaves from `rhs` win, structs and maps
/// merge by field, `set` and `map` lists by item.
pub(crate) fn merge<S: SchemaView>(lhs: &Value, rhs: &Value, schema: S) -> Value {
    walk_merge(Some(lhs), Some(rhs), schema).unwrap_or_else(|| Value::Object(Map::new()))
}

fn walk_merge<S: SchemaView>(lhs: Option<&Value>, rhs: Option<&Value>, schema: S) -> Option<Value> {
    let (Some(l), Some(r)) = (lhs, rhs) else { return rhs.or(lhs).cloned() };
    if l == r {
        return Some(r.clone());
    }
    let shape = pair_shape(schema, lhs, rhs);
    if shape == Shape::Leaf || (is_empty(lhs) && is_empty(rhs)) {
        return Some(r.clone());
    }
    if shape == Shape::Fields {
        let (left, right) = (l.as_object(), r.as_object());
        let mut out = Map::new();
        for (key, left, right) in join_fields(left, right) {
            if let Some(merged) = walk_merge(left, right, schema.field(key).0) {
                out.insert(key.clone(), merged);
            }
        }
        return (!out.is_empty()).then_some(Value::Object(out));
    }
    let out = merge_items(l.as_array().map_or(&[][..], Vec::as_slice), r.as_array().map_or(&[][..], Vec::as_slice), &shape, schema.items());
    (!out.is_empty()).then_some(Value::Array(out))
}

/// The items of a merged list in kube's order: live items keep their places, applied items follow the
/// applied order, and an applied item new to the list goes right after the applied item before it.
fn merge_items<S: SchemaView>(lhs: &[Value], rhs: &[Value], shape: &Shape, items: S) -> Vec<Value> {
    let right: Vec<(PathElement, &Value)> = rhs.iter().filter_map(|item| item_element(shape, items, item).ok().map(|e| (e, item))).collect();
    let left: Vec<(Option<PathElement>, &Value)> = lhs.iter().map(|item| (item_element(shape, items, item).ok(), item)).collect();
    let mut observed_right: BTreeMap<&PathElement, &Value> = BTreeMap::new();
    for (element, item) in &right {
        observed_right.entry(element).or_insert(item);
    }
    let mut observed_left: BTreeMap<&PathElement, Option<&Value>> = BTreeMap::new();
    for (element, item) in left.iter().filter_map(|(e, item)| e.as_ref().map(|e| (e, item))) {
        observed_left.entry(element).and_modify(|seen| *seen = None).or_insert(Some(item));
    }
    let mut shared: VecDeque<&PathElement> = right.iter().map(|(e, _)| e).filter(|e| observed_left.contains_key(e)).collect();
    let mut next_shared = shared.pop_front();
    let mut merged_right: BTreeSet<&PathElement> = BTreeSet::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (mut li, mut ri) = (0, 0);
    while li < left.len() || ri < right.len() {
        if let (Some((Some(element), _)), Some((right_element, right_item))) = (left.get(li), right.get(ri)) {
            if element == right_element {
                merged_right.insert(element);
                out.extend(walk_merge(observed_left.get(element).copied().flatten(), Some(right_item), items));
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if observed_right.contains_key(element) && next_shared.is_some_and(|next| next != element) {
                li += 1;
                continue;
            }
        }
        if let Some((element, item)) = left.get(li) {
            match element {
                Some(element) if observed_right.contains_key(element) => {
                    if merged_right.contains(element) {
                        li += 1;
                    }
                }
                _ => {
                    out.push((*item).clone());
                    li += 1;
                    continue;
                }
            }
        }
        if let Some((element, item)) = right.get(ri) {
            merged_right.insert(element);
            out.extend(walk_merge(observed_left.get(element).copied().flatten(), Some(item), items));
            ri += 1;
            if next_shared == Some(element) {
                next_shared = shared.pop_front();
            }
        }
    }
    out
}

/// `value` without the paths that are members of `set`.
pub(crate) fn remove<S: SchemaView>(value: &Value, set: &FieldSet, schema: S) -> Value {
    walk_remove(value, set, schema).unwrap_or_else(|| Value::Object(Map::new()))
}

/// `None` when nothing is left (kube then writes null, which the object drops).
fn walk_remove<S: SchemaView>(value: &Value, set: &FieldSet, schema: S) -> Option<Value> {
    match schema.shape(value) {
        Shape::Leaf => Some(value.clone()),
        Shape::Fields => {
            let mut out = Map::new();
            let mut emptied = false;
            for (key, child) in value.as_object().into_iter().flatten() {
                let element = PathElement::Field(key.clone());
                if set.is_member(&element) {
                    continue;
                }
                match set.with_prefix(&element) {
                    Some(below) => match walk_remove(child, below, schema.field(key).0) {
                        Some(kept) => {
                            out.insert(key.clone(), kept);
                        }
                        None => emptied = true,
                    },
                    None => {
                        out.insert(key.clone(), child.clone());
                    }
                }
            }
            (!out.is_empty() || emptied).then_some(Value::Object(out))
        }
        shape @ (Shape::Set | Shape::Keyed(_)) => {
            let items = schema.items();
            let mut out = Vec::new();
            let mut emptied = false;
            for item in value.as_array().into_iter().flatten() {
                let Ok(element) = item_element(&shape, items, item) else {
                    out.push(item.clone());
                    continue;
                };
                if set.is_member(&element) {
                    continue;
                }
                match set.with_prefix(&element) {
                    Some(below) => match walk_remove(item, below, items) {
                        Some(kept) => out.push(kept),
                        None => emptied = true,
                    },
                    None => out.push(item.clone()),
                }
            }
            (!out.is_empty() || emptied).then_some(Value::Array(out))
        }
    }
}

/// Refuses an applied configuration whose `set`/`map` list items cannot be identified or repeat.
pub(crate) fn check_config<S: SchemaView>(value: &Value, schema: S) -> Result<(), InvalidConfig> {
    walk_check(value, schema, &mut Vec::new())
}

fn walk_check<S: SchemaView>(value: &Value, schema: S, path: &mut Path) -> Result<(), InvalidConfig> {
    match schema.shape(value) {
        Shape::Leaf => Ok(()),
        Shape::Fields => {
            for (key, child) in value.as_object().into_iter().flatten() {
                path.push(PathElement::Field(key.clone()));
                walk_check(child, schema.field(key).0, path)?;
                path.pop();
            }
            Ok(())
        }
        shape @ (Shape::Set | Shape::Keyed(_)) => {
            let items = schema.items();
            let mut seen = BTreeSet::new();
            for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                let element = item_element(&shape, items, item)
                    .map_err(|why| InvalidConfig(format!("{}: element {i}: {why}", display(path))))?;
                if !seen.insert(element.clone()) {
                    return Err(InvalidConfig(format!("{}: duplicate entries for key {element}", display(path))));
                }
                path.push(element);
                walk_check(item, items, path)?;
                path.pop();
            }
            Ok(())
        }
    }
}
