//! Server-side apply and `metadata.managedFields`, as kube-apiserver 1.33 does them (structured-merge-diff
//! semantics): pure functions over JSON objects and a schema view, with no HTTP and no storage.
//!
//! Every write records who owns what. A non-apply write ([`record_update`]: create, PUT, JSON/merge/strategic
//! patch) is an `Update`: the fields it changed become its writer's and leave every other manager. An apply
//! ([`apply`]) merges an applied configuration into the live object by the schema, reports conflicts with
//! other managers' fields (unless forced), removes what its applier stopped applying and nobody else owns, and
//! makes the applier's `Apply` entry exactly the configuration's fields.
//!
//! The pieces: `path.rs` (path elements and their FieldsV1 keys), `set.rs` (field sets), `schema.rs` (the
//! schema view, over the built-in OpenAPI definitions or a CRD's structural schema), `typed.rs` (field sets,
//! comparison, merge and removal over values), `managers.rs` (managedFields entries), `updater.rs` (the
//! ownership rules), `lastapplied.rs` (the upgrade from client-side apply).

mod lastapplied;
mod managers;
mod path;
mod schema;
mod set;
mod typed;
mod updater;

#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

pub use managers::Operation;
pub(crate) use schema::{ResourceView, SchemaView, StructuralView, Types};
#[cfg(test)]
pub(crate) use schema::Shape;
pub(crate) use set::FieldSet;
pub(crate) use updater::{Conflict, Filter};

use managers::{is_reset, Identity, Managers};
use path::display;
pub(crate) use path::PathElement;
use updater::Updater;

/// Merges an apply configuration into an object by the schema, as an apply merges it but recording no owners
/// (a mutating admission policy's `ApplyConfiguration`): maps and structs merge by field, `map` lists by key,
/// `set` lists by value, atomic lists and scalars are replaced.
pub(crate) fn merge_applied<S: SchemaView>(live: &Value, config: &Value, schema: S) -> Value {
    typed::merge(live, config, schema)
}

/// The manager kube records for fields an object already had when it is first applied to without any
/// managedFields (objects made before fields were tracked).
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// One write: the schema of its resource, who writes, and when.
pub(crate) struct Write<'a, S> {
    pub(crate) schema: S,
    /// The fields this write may own (see [`Filter`]).
    pub(crate) filter: &'a Filter,
    /// The empty object of the kind (what a create starts from): fields it has as empty objects are not
    /// recorded as created by the first writer, as Go's zero-valued structs are not.
    pub(crate) zero: &'a Value,
    pub(crate) manager: &'a str,
    /// The request's `group/version`.
    pub(crate) api_version: &'a str,
    pub(crate) kind: &'a str,
    /// `status`, `scale`, ... or empty for the main resource.
    pub(crate) subresource: &'a str,
    /// RFC 3339, seconds.
    pub(crate) now: &'a str,
}

impl<S: SchemaView> Write<'_, S> {
    fn updater(&self) -> Updater<'_, S> {
        Updater { schema: self.schema, filter: self.filter, api_version: self.api_version, now: self.now }
    }

    fn identity(&self, operation: Operation) -> Identity {
        Identity::new(self.manager, operation, self.api_version, self.subresource)
    }
}

fn managed_fields(object: &Value) -> Option<&Value> {
    object.get("metadata")?.get("managedFields")
}

fn set_managed_fields(object: &mut Value, managers: &Managers<'_>) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    match managers.encode() {
        Some(encoded) => metadata.insert("managedFields".into(), encoded),
        None => metadata.remove("managedFields"),
    };
}

/// Records a non-apply write (an `Update`) of `new` over `live` (`None`: a create) in `new`'s managedFields.
///
/// The entries it starts from are those `new` carries when a client sent changed ones (an empty list, or one
/// empty entry, clears them), else the live object's; a subresource write always starts from the live ones.
/// An existing object with no entries at all stays untracked until it is first applied to, as in kube.
pub(crate) fn record_update<S: SchemaView>(write: &Write<'_, S>, live: Option<&Value>, new: &mut Value) {
    let supplied = new.get_mut("metadata").and_then(|m| m.as_object_mut()?.remove("managedFields"));
    let supplied = supplied.as_ref();
    let from_live = || Managers::decode(live.and_then(managed_fields)).unwrap_or_default();
    let base = if !write.subresource.is_empty() {
        from_live()
    } else if is_reset(supplied) {
        Managers::default()
    } else {
        match Managers::decode(supplied) {
            Ok(managers) if !managers.is_empty() => managers,
            _ => from_live(),
        }
    };
    let managers = match live {
        Some(_) if base.is_empty() => Managers::default(),
        Some(live) => write.updater().update(live, new, base, &write.identity(Operation::Update)),
        None => write.updater().update(write.zero, new, base, &write.identity(Operation::Update)),
    };
    set_managed_fields(new, &managers);
}

/// Why an apply was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ApplyError {
    /// The configuration is not one this resource accepts (kube answers 400).
    Invalid(String),
    /// Fields other managers own would change (409).
    Conflicts(Vec<Conflict>),
}

/// Applies `config` (an applied configuration) to `live` (`None`: the object does not exist yet) for
/// `write.manager`, forcing ownership of conflicting fields when `force`. Returns the new object with its
/// managedFields.
pub(crate) fn apply<S: SchemaView>(write: &Write<'_, S>, live: Option<&Value>, config: &Value, force: bool) -> Result<Value, ApplyError> {
    check_config(write, config)?;
    let empty = Value::Object(Map::new());
    let live = live.unwrap_or(&empty);
    let (mut object, managers) = match apply_once(write, live, config, force) {
        Err(conflicts) if write.manager == lastapplied::KUBECTL => {
            let allowed = lastapplied::allowed_conflicts(write.schema, live, write.api_version);
            match allowed {
                Some(allowed) if conflicts.iter().all(|c| allowed.has(&c.path)) => apply_once(write, live, config, true),
                Some(allowed) => Err(conflicts.into_iter().filter(|c| !allowed.has(&c.path)).collect()),
                None => Err(conflicts),
            }
        }
        other => other,
    }
    .map_err(ApplyError::Conflicts)?;
    set_managed_fields(&mut object, &managers);
    if write.manager == lastapplied::KUBECTL {
        lastapplied::update_annotation(&mut object, config);
    }
    drop_nulls(&mut object);
    Ok(object)
}

/// One apply: first, an object without entries gets everything it has owned by `before-first-apply`.
fn apply_once<'a, S: SchemaView>(write: &Write<'_, S>, live: &'a Value, config: &Value, force: bool) -> Result<(Value, Managers<'a>), Vec<Conflict>> {
    let mut managers = Managers::decode(managed_fields(live)).unwrap_or_default();
    if managers.is_empty() {
        let before = Identity::new(BEFORE_FIRST_APPLY, Operation::Update, write.api_version, write.subresource);
        managers = write.updater().update(write.zero, live, managers, &before);
    }
    write.updater().apply(live, config, managers, &write.identity(Operation::Apply), force)
}

/// kube's checks of an applied configuration: its kind and version, no managedFields, identifiable list items.
fn check_config<S: SchemaView>(write: &Write<'_, S>, config: &Value) -> Result<(), ApplyError> {
    let text = |pointer: &str| config.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (text("/apiVersion"), text("/kind"));
    if api_version != write.api_version || kind != write.kind {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        return Err(ApplyError::Invalid(format!("invalid object type: {group}/{version}, Kind={kind}")));
    }
    if managed_fields(config).is_some_and(|m| !m.is_null()) {
        return Err(ApplyError::Invalid("metadata.managedFields must be nil".into()));
    }
    typed::check_config(config, write.schema).map_err(|invalid| {
        let (namespace, name) = (text("/metadata/namespace"), text("/metadata/name"));
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        ApplyError::Invalid(format!("failed to create typed patch object ({namespace}/{name}; {group}/{version}, Kind={kind}): {}", invalid.0))
    })
}

/// Null fields of an applied configuration say "absent, and mine": the object does not keep them (kube's
/// typed objects drop them).
fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// kube's conflict error: the message (`Apply failed with 1 conflict: conflict with "a": .spec.replicas`) and
/// one `(field, message)` cause per conflict, grouped by manager in kube's order.
pub(crate) fn conflict_report(conflicts: &[Conflict]) -> (String, Vec<(String, String)>) {
    let mut sorted: Vec<&Conflict> = conflicts.iter().collect();
    sorted.sort_by_key(|c| c.identity.key());
    let causes = sorted.iter().map(|c| (display(&c.path), format!("conflict with {}", c.identity.describe()))).collect();
    let message = match sorted.as_slice() {
        [one] => format!("Apply failed with 1 conflict: conflict with {}: {}", one.identity.describe(), display(&one.path)),
        _ => {
            let mut lines = Vec::new();
            let mut previous: Option<String> = None;
            for conflict in &sorted {
                let key = conflict.identity.key();
                if previous.as_deref() != Some(key.as_str()) {
                    lines.push(format!("conflicts with {}:", conflict.identity.describe()));
                    previous = Some(key);
                }
                lines.push(format!("- {}", display(&conflict.path)));
            }
            format!("Apply failed with {} conflicts: {}", sorted.len(), lines.join("\n"))
        }
    };
    (message, causes)
}

/// The single path `.<field>` (for filters such as "only `status`").
pub(crate) fn field_path(fields: &[&str]) -> Vec<PathElement> {
    fields.iter().map(|f| PathElement::Field((*f).to_owned())).collect()
}
