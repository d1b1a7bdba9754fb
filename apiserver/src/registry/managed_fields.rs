//! managedFields for the registry: which schema, fields and empty object a resource's writes use, the `Update`
//! entry every non-apply write records, and server-side apply turned into API errors. The algorithms are
//! `crate::fieldmanager`'s; this file only chooses their inputs.

use std::sync::OnceLock;

use serde_json::{json, Value};

use super::{ResourceInfo, Subresource, WriteContext};
use crate::fieldmanager::{self, ApplyError, FieldSet, Filter, Operation, ResourceView, StructuralView, Types};
use crate::status::{ApiError, ApiResult, Cause};


/// The built-in types as compiled from the definitions `/openapi/v3` serves (Kubernetes' kinds with their
/// extension table, and kspaces' own kinds), kept current by `kinds::tests::builtin_types_snapshot_is_up_to_date`.
pub(crate) const BUILTIN_TYPES_SNAPSHOT: &str = include_str!("../fieldmanager/schema/builtin_types.json");

/// The built-in types, read from the snapshot at the first write: generating the definitions would cost the
/// server tens of milliseconds and about 10 MiB of memory it does not give back. A snapshot that does not read
/// (a broken build; the test above catches it) leaves every built-in kind untyped: its writes still merge, field
/// by field, without list keys.
pub(crate) fn builtin_types() -> &'static Types {
    static TYPES: OnceLock<Types> = OnceLock::new();
    TYPES.get_or_init(|| {
        Types::from_snapshot(BUILTIN_TYPES_SNAPSHOT).unwrap_or_else(|err| {
            tracing::error!(%err, "the built-in types snapshot does not read; built-in kinds merge untyped");
            Types::compile(&serde_json::Map::new())
        })
    })
}

/// The schema a resource's writes merge by.
pub(crate) fn view(resource: &ResourceInfo) -> ResourceView<'_> {
    let types = builtin_types();
    match resource.custom.as_ref().and_then(|c| c.version()) {
        Some(version) => ResourceView::Custom(StructuralView::root(version.schema.source(), types)),
        None => ResourceView::BuiltIn(types.view(resource.definition.as_deref().unwrap_or_default())),
    }
}

/// The fields a write of `subresource` may own: `/status` only `status`, `/finalize` only `spec.finalizers`,
/// the main resource (and `/scale`) everything but `status` when status is a subresource.
pub(crate) fn filter(resource: &ResourceInfo, subresource: &str) -> Filter {
    match subresource {
        "status" => Filter::Only(fieldmanager::field_path(&["status"])),
        "finalize" => Filter::Only(fieldmanager::field_path(&["spec", "finalizers"])),
        _ if resource.has_subresource(Subresource::Status) => Filter::Exclude(FieldSet::of(&[fieldmanager::field_path(&["status"])])),
        _ => Filter::All,
    }
}

/// The empty object a create starts from: built-in kinds' `metadata`, `spec` and `status` are Go structs, never
/// absent, so their first writer does not own them as a whole (custom resources start empty, as in kube).
fn zero(resource: &ResourceInfo) -> Value {
    match resource.custom {
        Some(_) => json!({}),
        None => json!({"metadata": {}, "spec": {}, "status": {}}),
    }
}

/// Runs `body` with the field manager's view of one write of `resource`.
fn with_write<T>(resource: &ResourceInfo, write: &WriteContext, body: impl FnOnce(&fieldmanager::Write<'_, ResourceView<'_>>) -> T) -> T {
    let filter = filter(resource, &write.subresource);
    let zero = zero(resource);
    let api_version = resource.api_version();
    let now = super::now();
    body(&fieldmanager::Write {
        schema: view(resource),
        filter: &filter,
        zero: &zero,
        manager: &write.manager,
        api_version: &api_version,
        kind: &resource.kind,
        subresource: &write.subresource,
        now: &now,
    })
}

/// Records a non-apply write in `new`'s managedFields (`live`: `None` for a create). Applies record their own.
pub(crate) fn record(resource: &ResourceInfo, write: &WriteContext, live: Option<&Value>, new: &mut Value) {
    if write.operation == Operation::Update {
        with_write(resource, write, |fields| fieldmanager::record_update(fields, live, new));
    }
}

/// Applies `config` to `live` (`None`: not there yet) for `write.manager`: the new object with its
/// managedFields, 409 with kube's causes on conflicts, 400 for a configuration kube refuses.
pub(crate) fn apply(resource: &ResourceInfo, write: &WriteContext, live: Option<&Value>, config: &Value, force: bool) -> ApiResult<Value> {
    with_write(resource, write, |fields| fieldmanager::apply(fields, live, config, force)).map_err(|err| match err {
        ApplyError::Invalid(message) => ApiError::bad_request(message),
        ApplyError::Conflicts(conflicts) => {
            let (message, causes) = fieldmanager::conflict_report(&conflicts);
            let causes = causes.into_iter().map(|(field, message)| Cause { reason: "FieldManagerConflict", message, field }).collect();
            ApiError::apply_conflict(message, causes)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_knows_what_apply_needs_of_built_in_kinds() {
        use crate::fieldmanager::{SchemaView, Shape};
        use serde_json::json;
        let deployment = builtin_types().view("io.k8s.api.apps.v1.Deployment");
        let pod_spec = deployment.field("spec").0.field("template").0.field("spec").0;
        let containers = pod_spec.field("containers").0;
        assert_eq!(containers.shape(&json!([])), Shape::Keyed(vec!["name".into()]));
        let ports = containers.items().field("ports").0;
        assert_eq!(ports.shape(&json!([])), Shape::Keyed(vec!["containerPort".into(), "protocol".into()]));
        assert_eq!(ports.items().key_default("protocol"), Some(json!("TCP")));
        assert_eq!(pod_spec.field("tolerations").0.shape(&json!([])), Shape::Leaf, "atomic list");
        assert_eq!(deployment.field("spec").0.field("selector").0.shape(&json!({})), Shape::Leaf, "atomic struct");
        let finalizers = deployment.field("metadata").0.field("finalizers").0;
        assert_eq!(finalizers.shape(&json!([])), Shape::Set);
    }
}
