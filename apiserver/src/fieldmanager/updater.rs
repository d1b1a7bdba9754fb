//! The ownership rules of structured-merge-diff's updater: what an update takes from other managers and
//! records for its writer; what an apply merges, removes (fields its applier dropped that nobody else owns)
//! and conflicts on; and the fields no entry ever records (identity and server-set metadata).

use std::sync::LazyLock;

use serde_json::Value;

use super::managers::{Entry, Identity, Managers};
use super::path::{values_equal, Path, PathElement};
use super::schema::SchemaView;
use super::set::FieldSet;
use super::typed::{self, Comparison};

/// kube's cap on update entries per object.
pub(crate) const MAX_UPDATE_MANAGERS: usize = 10;

/// Which fields a write may own: kube's reset fields of the write's subresource (the main resource of a kind
/// with a status subresource does not own `status`; `/status` owns only `status`).
#[derive(Clone, Debug)]
pub(crate) enum Filter {
    All,
    Exclude(FieldSet),
    Only(Path),
}

impl Filter {
    pub(crate) fn apply(&self, set: &FieldSet) -> FieldSet {
        match self {
            Filter::All => set.clone(),
            Filter::Exclude(excluded) => set.recursive_difference(excluded),
            Filter::Only(prefix) => set.only_under(prefix),
        }
    }

    /// `apply`, keeping `set` itself when the filter lets everything through.
    fn apply_owned(&self, set: FieldSet) -> FieldSet {
        match self {
            Filter::All => set,
            _ => self.apply(&set),
        }
    }

    /// What changed from `live` to `new` in the fields this filter lets a write own (for `Only`, found by
    /// walking only under its prefix).
    fn compare<S: SchemaView>(&self, live: &Value, new: &Value, schema: S) -> Comparison {
        match self {
            Filter::All => typed::compare(live, new, schema),
            Filter::Only(prefix) => typed::compare_under(live, new, schema, prefix),
            Filter::Exclude(_) => {
                let comparison = typed::compare(live, new, schema);
                Comparison {
                    added: self.apply(&comparison.added),
                    modified: self.apply(&comparison.modified),
                    removed: self.apply(&comparison.removed),
                }
            }
        }
    }
}

/// A field another manager owns that an apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Conflict {
    pub(crate) identity: Identity,
    pub(crate) path: Path,
}

/// Fields no entry records: the object's identity and what the server sets (kube's strip set, plus
/// `metadata.tenant`, which kspaces sets from the request's space).
static STRIPPED: LazyLock<FieldSet> = LazyLock::new(|| {
    let field = |name: &str| PathElement::Field(name.to_owned());
    let mut paths: Vec<Path> = vec![vec![field("apiVersion")], vec![field("kind")], vec![field("metadata")]];
    for name in ["name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName", "generation", "managedFields", "resourceVersion", "tenant"] {
        paths.push(vec![field("metadata"), field(name)]);
    }
    FieldSet::of(&paths)
});

/// What an update or apply writes with.
pub(crate) struct Updater<'a, S> {
    pub(crate) schema: S,
    pub(crate) filter: &'a Filter,
    /// The apiVersion of the request.
    pub(crate) api_version: &'a str,
    /// The time to record.
    pub(crate) now: &'a str,
}

impl<S: SchemaView> Updater<'_, S> {
    /// Compares `live` to `new`, takes the changed fields from every manager but `me` (or reports them as
    /// conflicts when `force` is false), and removes the removed fields from every manager but `me`. Returns the
    /// changed (added or modified) fields and the removed ones.
    fn take_from_others(&self, live: &Value, new: &Value, managers: &mut Managers<'_>, me: &str, force: bool)
        -> Result<(FieldSet, FieldSet), Vec<Conflict>> {
        let Comparison { added, mut modified, removed } = self.filter.compare(live, new, self.schema);
        // A create changes only what it adds: that set is the answer, not a copy of it.
        let changed = if modified.is_empty() {
            added
        } else {
            modified.absorb(&added);
            modified
        };
        let others = |key: &String| key.as_str() != me;
        if !force {
            let conflicts: Vec<Conflict> = managers.entries.iter()
                .filter(|(key, _)| others(key))
                .flat_map(|(_, entry)| {
                    let paths = entry.set().intersection(&changed).paths();
                    paths.into_iter().map(|path| Conflict { identity: entry.identity.clone(), path })
                })
                .collect();
            if !conflicts.is_empty() {
                return Err(conflicts);
            }
        }
        for (_, entry) in managers.entries.iter_mut().filter(|(key, _)| others(key)) {
            if entry.set().overlaps(&changed) || entry.set().overlaps(&removed) {
                let kept = entry.set().difference(&changed).difference(&removed);
                entry.set_fields(kept);
            }
        }
        managers.drop_empty();
        Ok((changed, removed))
    }

    /// Records a non-apply write of `new` over `live` by `identity` (an Update entry): the changed fields become
    /// its own and leave every other manager, removed fields leave every manager.
    pub(crate) fn update<'a>(&self, live: &Value, new: &Value, mut managers: Managers<'a>, identity: &Identity) -> Managers<'a> {
        let me = identity.key();
        let Ok((changed, removed)) = self.take_from_others(live, new, &mut managers, &me, true) else { return managers };
        // The writer's own entry loses the removed fields and gains the changed ones (kube reaches the same
        // result by writing as a temporary manager and merging it into the writer's entry).
        if let Some(entry) = managers.entries.get_mut(&me).filter(|e| e.set().overlaps(&removed)) {
            let kept = entry.set().difference(&removed);
            entry.set_fields(kept);
        }
        let changed = self.filter.apply_owned(changed).difference(&STRIPPED);
        if !changed.is_empty() {
            let mut entry = match managers.entries.remove(&me) {
                Some(previous) => {
                    let mut set = previous.set().clone();
                    set.absorb(&changed);
                    let mut entry = Entry::new(identity.clone(), set, self.api_version.to_owned(), None);
                    entry.keep_encoding_of(&previous);
                    entry
                }
                None => Entry::new(identity.clone(), changed, self.api_version.to_owned(), None),
            };
            entry.time = Some(self.now.to_owned());
            managers.put(entry);
        }
        managers.drop_empty();
        managers.cap_updaters(MAX_UPDATE_MANAGERS);
        managers
    }

    /// Applies `config` over `live` for `identity`: returns the new object and entries, or the conflicts.
    pub(crate) fn apply<'a>(&self, live: &Value, config: &Value, mut managers: Managers<'a>, identity: &Identity, force: bool)
        -> Result<(Value, Managers<'a>), Vec<Conflict>> {
        let merged = typed::merge(live, config, self.schema);
        let me = identity.key();
        let previous = managers.entries.remove(&me);
        let set = self.filter.apply(&typed::field_set(config, self.schema));
        let time = previous.as_ref().and_then(|p| p.time.clone());
        // Nothing to remove when the applier still applies every field it applied last time.
        let last = previous.as_ref().map(Entry::set).filter(|last| !last.difference(&set).is_empty()).cloned();
        managers.put(Entry::new(identity.clone(), set, self.api_version.to_owned(), time));
        let new = match last {
            Some(last) => self.prune(&merged, &managers, &last),
            None => merged,
        };
        self.take_from_others(live, &new, &mut managers, &me, force)?;
        if let Some(entry) = managers.entries.get_mut(&me) {
            let kept = entry.set().difference(&STRIPPED);
            entry.set_fields(kept);
            if let Some(previous) = &previous {
                entry.keep_encoding_of(previous);
            }
        }
        managers.drop_empty();
        let changed = !values_equal(live, &new);
        if let Some(entry) = managers.entries.get_mut(&me).filter(|_| changed) {
            entry.time = Some(self.now.to_owned());
        }
        Ok((if changed { new } else { live.clone() }, managers))
    }

    /// Removes what the applier applied last time and no longer applies, unless another manager (or the new
    /// configuration) owns it.
    fn prune(&self, merged: &Value, managers: &Managers<'_>, last: &FieldSet) -> Value {
        let schema = self.schema;
        let last = last.ensure_named_fields_are_members(schema);
        let pruned = typed::remove(merged, &last, schema);
        let owned = managers.entries.values().fold(FieldSet::new(), |mut all, entry| {
            all.absorb(entry.set());
            all
        });
        let merged_set = typed::field_set(merged, schema).ensure_named_fields_are_members(schema);
        let pruned_set = typed::field_set(&pruned, schema).ensure_named_fields_are_members(schema);
        let unowned = merged_set.difference(&pruned_set.union(&owned.ensure_named_fields_are_members(schema)));
        let pruned = typed::remove(merged, &unowned, schema);
        let pruned_set = typed::field_set(&pruned, schema).ensure_named_fields_are_members(schema);
        typed::remove(merged, &merged_set.difference(&pruned_set).intersection(&last), schema)
    }
}
