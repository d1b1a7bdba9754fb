//! `FieldSet`: a set of field paths kept as a tree (members at each level, children below), the set algebra
//! server-side apply needs, and the FieldsV1 form of a set (`{"f:spec":{"f:replicas":{}}}`).
//!
//! Each level is two sorted vectors, as structured-merge-diff keeps them: sets are built in order by the walks
//! (object keys come sorted), and union, intersection and difference are merges of sorted lists.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::path::{Path, PathElement};
use super::schema::SchemaView;

/// A set of paths. `members` are the paths that end at this level; `children` hold the paths that go on.
/// A path can be both a member and the prefix of others (FieldsV1 writes that as `".": {}`). Both lists are
/// sorted and free of duplicates; children are never empty sets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldSet {
    members: Vec<PathElement>,
    children: Vec<(PathElement, FieldSet)>,
}

/// Where `element` is, or would go, in a sorted list.
fn position<T>(list: &[T], element: &PathElement, key: impl Fn(&T) -> &PathElement) -> Result<usize, usize> {
    list.binary_search_by(|item| key(item).cmp(element))
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
            [last] => self.add_member(last.clone()),
            [first, rest @ ..] => self.child_mut(first).insert(rest),
        }
    }

    /// Adds `path` and the paths of `below` under it (relative to `path`).
    pub(crate) fn graft(&mut self, path: &[PathElement], below: FieldSet) {
        match path {
            [] => self.absorb(&below),
            [last] => {
                self.add_member(last.clone());
                self.add_child(last.clone(), below);
            }
            [first, rest @ ..] => self.child_mut(first).graft(rest, below),
        }
    }

    /// Adds a member (cheap when elements arrive in order, as walks add them).
    pub(crate) fn add_member(&mut self, element: PathElement) {
        if self.members.last().is_none_or(|last| *last < element) {
            self.members.push(element);
        } else if let Err(at) = position(&self.members, &element, |e| e) {
            self.members.insert(at, element);
        }
    }

    /// Adds the paths of `child` below `element` (nothing when `child` is empty).
    pub(crate) fn add_child(&mut self, element: PathElement, child: FieldSet) {
        if child.is_empty() {
            return;
        }
        if self.children.last().is_none_or(|(last, _)| *last < element) {
            self.children.push((element, child));
            return;
        }
        match position(&self.children, &element, |(e, _)| e) {
            Ok(at) => self.children[at].1.absorb(&child),
            Err(at) => self.children.insert(at, (element, child)),
        }
    }

    fn child_mut(&mut self, element: &PathElement) -> &mut FieldSet {
        let at = match position(&self.children, element, |(e, _)| e) {
            Ok(at) => at,
            Err(at) => {
                self.children.insert(at, (element.clone(), FieldSet::new()));
                at
            }
        };
        &mut self.children[at].1
    }

    pub(crate) fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.is_member(last),
            [first, rest @ ..] => self.with_prefix(first).is_some_and(|child| child.has(rest)),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.iter().all(|(_, child)| child.is_empty())
    }

    /// The paths below `element`, if any.
    pub(crate) fn with_prefix(&self, element: &PathElement) -> Option<&FieldSet> {
        position(&self.children, element, |(e, _)| e).ok().map(|at| &self.children[at].1)
    }

    pub(crate) fn is_member(&self, element: &PathElement) -> bool {
        position(&self.members, element, |e| e).is_ok()
    }

    /// True if the two sets share a path.
    pub(crate) fn overlaps(&self, other: &FieldSet) -> bool {
        let shared_member = merge_join(&self.members, &other.members, |e| e, |e| e).any(|pair| matches!(pair, Joined::Both(_, _)));
        shared_member || merge_join(&self.children, &other.children, |(e, _)| e, |(e, _)| e).any(|pair| match pair {
            Joined::Both((_, mine), (_, theirs)) => mine.overlaps(theirs),
            _ => false,
        })
    }

    pub(crate) fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.absorb(other);
        out
    }

    /// Adds every path of `other` to `self`.
    pub(crate) fn absorb(&mut self, other: &FieldSet) {
        if !other.members.is_empty() {
            let members = merge_join(&self.members, &other.members, |e| e, |e| e)
                .map(|pair| match pair {
                    Joined::Left(e) | Joined::Right(e) | Joined::Both(e, _) => e.clone(),
                })
                .collect();
            self.members = members;
        }
        for (element, child) in &other.children {
            match position(&self.children, element, |(e, _)| e) {
                Ok(at) => self.children[at].1.absorb(child),
                Err(at) => self.children.insert(at, (element.clone(), child.clone())),
            }
        }
    }

    pub(crate) fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = merge_join(&self.members, &other.members, |e| e, |e| e)
            .filter_map(|pair| match pair {
                Joined::Both(e, _) => Some(e.clone()),
                _ => None,
            })
            .collect();
        let children = merge_join(&self.children, &other.children, |(e, _)| e, |(e, _)| e)
            .filter_map(|pair| match pair {
                Joined::Both((element, mine), (_, theirs)) => Some((element.clone(), mine.intersection(theirs))),
                _ => None,
            })
            .filter(|(_, child)| !child.is_empty())
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
        if other.members.is_empty() && other.children.is_empty() {
            return self.clone();
        }
        let members = merge_join(&self.members, &other.members, |e| e, |e| e)
            .filter_map(|pair| match pair {
                Joined::Left(e) => Some(e.clone()),
                _ => None,
            })
            .collect();
        let children = merge_join(&self.children, &other.children, |(e, _)| e, |(e, _)| e)
            .filter_map(|pair| match pair {
                Joined::Left((element, mine)) if !(recursive && other.is_member(element)) => Some((element.clone(), mine.clone())),
                Joined::Both((element, mine), (_, theirs)) if !(recursive && other.is_member(element)) => {
                    Some((element.clone(), mine.minus(theirs, recursive)))
                }
                _ => None,
            })
            .filter(|(_, child)| !child.is_empty())
            .collect();
        FieldSet { members, children }
    }

    /// Only the paths that start with `prefix` (the prefix itself included when it is a member).
    pub(crate) fn only_under(&self, prefix: &[PathElement]) -> FieldSet {
        match prefix {
            [] => self.clone(),
            [first, rest @ ..] => {
                let mut out = FieldSet::new();
                if rest.is_empty() && self.is_member(first) {
                    out.members.push(first.clone());
                }
                if let Some(child) = self.with_prefix(first) {
                    let kept = if rest.is_empty() { child.clone() } else { child.only_under(rest) };
                    out.add_child(first.clone(), kept);
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
        let mut out = FieldSet { members: self.members.clone(), children: Vec::with_capacity(self.children.len()) };
        for (element, child) in &self.children {
            let below = match element {
                PathElement::Field(name) => {
                    let (field, declared) = schema.field(name);
                    if declared {
                        out.add_member(element.clone());
                    }
                    field
                }
                PathElement::Key(_) => schema.items(),
                _ => S::untyped(),
            };
            out.children.push((element.clone(), child.ensure_named_fields_are_members(below)));
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
            map.insert(member.encode(), Value::Object(Map::new()));
        }
        for (element, child) in &self.children {
            let object = child.fields_v1_object(self.is_member(element));
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
                set.add_member(element.clone());
            }
            set.add_child(element, below);
        }
        Ok(set)
    }
}

/// One step of a merge of two sorted lists.
enum Joined<'a, L, R> {
    Left(&'a L),
    Right(&'a R),
    Both(&'a L, &'a R),
}

/// The items of two lists sorted by `PathElement`, paired where their elements are equal.
fn merge_join<'a, L, R, KL, KR>(left: &'a [L], right: &'a [R], left_key: KL, right_key: KR) -> impl Iterator<Item = Joined<'a, L, R>> + 'a
where
    KL: Fn(&'a L) -> &'a PathElement + 'a,
    KR: Fn(&'a R) -> &'a PathElement + 'a,
{
    let (mut i, mut j) = (0, 0);
    std::iter::from_fn(move || match (left.get(i), right.get(j)) {
        (Some(l), Some(r)) => Some(match left_key(l).cmp(right_key(r)) {
            Ordering::Less => {
                i += 1;
                Joined::Left(l)
            }
            Ordering::Greater => {
                j += 1;
                Joined::Right(r)
            }
            Ordering::Equal => {
                i += 1;
                j += 1;
                Joined::Both(l, r)
            }
        }),
        (Some(l), None) => {
            i += 1;
            Some(Joined::Left(l))
        }
        (None, Some(r)) => {
            j += 1;
            Some(Joined::Right(r))
        }
        (None, None) => None,
    })
}
