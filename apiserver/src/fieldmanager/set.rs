//! `FieldSet`: a set of field paths kept as a tree (members at each level, children below), the set algebra
//! server-side apply needs, and the FieldsV1 form of a set (`{"f:spec":{"f:replicas":{}}}`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::path::{Path, PathElement};
use super::schema::SchemaView;

/// A set of paths. `members` are the paths that end at this level; `children` hold the paths that go on.
/// A path can be both a member and the prefix of others (FieldsV1 writes that as `".": {}`). Children are never
/// empty sets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    pub(crate) fn new() -> FieldSet {
        FieldSet::default()
    }

    /// A set of the given paths.
    pub(crate) fn of(paths: &[Path]) -> FieldSet {
        let mut set = FieldSet::new();
        for path in paths {
            set.insert(path);
        }
        set
    }

    pub(crate) fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    pub(crate) fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|child| child.has(rest)),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(FieldSet::is_empty)
    }

    /// The paths below `element`, if any.
    pub(crate) fn with_prefix(&self, element: &PathElement) -> Option<&FieldSet> {
        self.children.get(element)
    }

    pub(crate) fn is_member(&self, element: &PathElement) -> bool {
        self.members.contains(element)
    }

    pub(crate) fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (element, child) in &other.children {
            let merged = match out.children.get(element) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(element.clone(), merged);
        }
        out
    }

    pub(crate) fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self.children.iter()
            .filter_map(|(element, child)| Some((element, child.intersection(other.children.get(element)?))))
            .filter(|(_, child)| !child.is_empty())
            .map(|(element, child)| (element.clone(), child))
            .collect();
        FieldSet { members, children }
    }

    /// The paths of `self` not in `other`; a member of `other` removes only that path, not the paths below it.
    pub(crate) fn difference(&self, other: &FieldSet) -> FieldSet {
        self.minus(other, false)
    }

    /// Like [`FieldSet::difference`], but a member of `other` also removes every path below it.
    pub(crate) fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        self.minus(other, true)
    }

    fn minus(&self, other: &FieldSet, recursive: bool) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self.children.iter()
            .filter(|(element, _)| !(recursive && other.members.contains(*element)))
            .filter_map(|(element, child)| {
                let rest = match other.children.get(element) {
                    Some(theirs) => child.minus(theirs, recursive),
                    None => child.clone(),
                };
                (!rest.is_empty()).then(|| (element.clone(), rest))
            })
            .collect();
        FieldSet { members, children }
    }

    /// Only the paths that start with `prefix` (the prefix itself included when it is a member).
    pub(crate) fn only_under(&self, prefix: &[PathElement]) -> FieldSet {
        match prefix {
            [] => self.clone(),
            [first, rest @ ..] => {
                let mut out = FieldSet::new();
                if rest.is_empty() && self.members.contains(first) {
                    out.members.insert(first.clone());
                }
                if let Some(child) = self.children.get(first) {
                    let kept = if rest.is_empty() { child.clone() } else { child.only_under(rest) };
                    if !kept.is_empty() {
                        out.children.insert(first.clone(), kept);
                    }
                }
                out
            }
        }
    }

    /// Every path, in kube's order: this level's members, then each child's paths.
    pub(crate) fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for member in &self.members {
            let mut path = prefix.clone();
            path.push(member.clone());
            out.push(path);
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// Makes every struct field that has paths below it a member too (structured-merge-diff's
    /// `EnsureNamedFieldsAreMembers`), so removing it removes the whole field when nothing else keeps it.
    pub(crate) fn ensure_named_fields_are_members<S: SchemaView>(&self, schema: S) -> FieldSet {
        let mut out = FieldSet { members: self.members.clone(), children: BTreeMap::new() };
        for (element, child) in &self.children {
            let below = match element {
                PathElement::Field(name) => {
                    let (field, declared) = schema.field(name);
                    if declared {
                        out.members.insert(element.clone());
                    }
                    field
                }
                PathElement::Key(_) => schema.items(),
                _ => S::untyped(),
            };
            out.children.insert(element.clone(), child.ensure_named_fields_are_members(below));
        }
        out
    }

    /// The FieldsV1 JSON of the set.
    pub(crate) fn to_fields_v1(&self) -> Value {
        Value::Object(self.fields_v1_object(false))
    }

    fn fields_v1_object(&self, include_self: bool) -> Map<String, Value> {
        let mut map = Map::new();
        if include_self && !self.is_empty() {
            map.insert(".".into(), Value::Object(Map::new()));
        }
        for member in &self.members {
            if !self.children.contains_key(member) {
                map.insert(member.encode(), Value::Object(Map::new()));
            }
        }
        for (element, child) in &self.children {
            let object = child.fields_v1_object(self.members.contains(element));
            map.insert(element.encode(), Value::Object(object));
        }
        map
    }

    /// Parses FieldsV1 JSON; keys of unknown element types are dropped, as kube drops them.
    pub(crate) fn from_fields_v1(value: &Value) -> Result<FieldSet, String> {
        let Value::Object(map) = value else { return Err("fieldsV1 must be an object".into()) };
        let mut set = FieldSet::new();
        for (key, child) in map {
            if key == "." {
                continue;
            }
            let Some(element) = PathElement::decode(key)? else { continue };
            let Value::Object(child_map) = child else { return Err(format!("{key}: must be an object")) };
            let below = FieldSet::from_fields_v1(child)?;
            if below.is_empty() || child_map.contains_key(".") {
                set.members.insert(element.clone());
            }
            if !below.is_empty() {
                set.children.insert(element, below);
            }
        }
        Ok(set)
    }
}
