//! CustomResourceDefinition: kube's defaults, the cleanup finalizer and a status computed at every write as
//! kube's naming and establishing controllers compute it: the names it may hold beside the other CRDs of its
//! group in its space (`status.acceptedNames`), `NamesAccepted`, and `Established`, true at once when its names
//! are accepted (the server serves it from that moment, see `Resolver`). A CRD whose names another one holds is
//! not served until they are free; the CRD controller then accepts it. Writes of CRDs are serialised by the
//! resolver's naming lock, so two CRDs cannot claim one name at once.
//!
//! Admission: a tenant may not create, change or delete a CRD whose name a forced system CRD in its range holds
//! (Arktos answers 500 here; kube's shape for a refused write is 403).

use std::sync::Arc;

use async_trait::async_trait;
use kspaces_crd::definition::{self, Definition, CLEANUP_FINALIZER};
use kspaces_crd::FieldError;
use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::{json, Map, Value};

use super::admission_webhook::config::validate_client_config;
use super::admission_webhook::reach::Reach;
use super::{Context, Kind, Rules};
use crate::registry::admission::{Admission, Attributes, Operation, Question};
use crate::registry::strategy::{Part, Strategy, WriteGuard};
use crate::registry::{now, GenericStore, ResourceInfo};
use crate::resolver::{accept_names, AcceptedNames, NamesInUse, Resolver};
use crate::status::{ApiError, ApiResult, Cause};

/// CustomResourceDefinition: its strategy and the forced-name admission.
pub const KIND: Kind = Kind::rules(rules);

fn rules(context: &Context, rules: &mut Rules) {
    rules.strategy(GROUP, NAME, Arc::new(CrdStrategy { resolver: context.resolver.clone(), reach: context.webhook_reach.clone() }));
    rules.admit(Arc::new(ForcedNames { resolver: context.resolver.clone() }));
}

pub const GROUP: &str = "apiextensions.k8s.io";
pub const NAME: &str = "CustomResourceDefinition";

impl From<FieldError> for Cause {
    fn from(error: FieldError) -> Cause {
        Cause { reason: error.reason, message: error.message, field: error.field }
    }
}

/// The CRD kind's rules; its names are checked against the other CRDs `resolver` holds, a conversion webhook's
/// literal address against where the space's webhooks may call (`reach`).
pub struct CrdStrategy {
    pub resolver: Arc<Resolver>,
    pub reach: Arc<Reach>,
}

#[async_trait]
impl Strategy for CrdStrategy {
    /// Defaults, the cleanup finalizer and the initial status of a new CRD.
    fn prepare_create(&self, _resource: &ResourceInfo, space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        if !object.is_object() {
            return;
        }
        definition::defaults(object);
        let finalizers = object["metadata"].get("finalizers").and_then(Value::as_array).cloned().unwrap_or_default();
        if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
            let mut finalizers = finalizers;
            finalizers.push(json!(CLEANUP_FINALIZER));
            object["metadata"]["finalizers"] = json!(finalizers);
        }
        object["status"] = json!({
            "conditions": [],
            "acceptedNames": {"plural": "", "kind": ""},
            "storedVersions": storage_version(object).into_iter().collect::<Vec<_>>(),
        });
        names_and_conditions(&self.names_in_use(space, object), object);
    }

    /// Keeps a CRD's status in step with its spec: accepted names and their conditions, and every version ever
    /// stored.
    fn prepare_update(&self, _resource: &ResourceInfo, space: &SpaceName, _old: &Value, new: &mut Value, part: Part) {
        if !new.is_object() || part == Part::Finalize {
            return;
        }
        definition::defaults(new);
        if !new.get("status").is_some_and(Value::is_object) {
            new["status"] = json!({});
        }
        names_and_conditions(&self.names_in_use(space, new), new);
        let mut stored: Vec<Value> = new["status"].get("storedVersions").and_then(Value::as_array).cloned().unwrap_or_default();
        if let Some(version) = storage_version(new) {
            if !stored.iter().any(|v| v == version.as_str()) {
                stored.push(json!(version));
            }
        }
        new["status"]["storedVersions"] = json!(stored);
    }

    fn validate(&self, _resource: &ResourceInfo, object: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
        check(object, old, causes);
    }

    /// A tenant's conversion webhook may not call a literal address outside its allowed ranges, nor the server.
    async fn validate_costly(&self, resource: &ResourceInfo, space: &SpaceName, object: &Value, _old: Option<&Value>) -> ApiResult<()> {
        let Some(url) = object.pointer(&format!("{CLIENT_CONFIG}/url")).and_then(Value::as_str) else { return Ok(()) };
        let Some(cause) = self.reach.check_url(space, "spec.conversion.webhook.clientConfig.url", url) else { return Ok(()) };
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        Err(ApiError::invalid(&resource.group, &resource.kind, name, vec![cause]))
    }

    /// The accepted names and their conditions depend on the other CRDs of the space (the CRD controller writes
    /// a waiting CRD again, unchanged, once its names are free).
    fn status_from_elsewhere(&self) -> bool {
        true
    }

    async fn begin_write(&self, _resource: &ResourceInfo) -> Option<WriteGuard> {
        Some(Box::new(self.resolver.naming.clone().lock_owned().await))
    }
}

impl CrdStrategy {
    /// The names the other CRDs of `crd`'s group in `space` hold.
    fn names_in_use(&self, space: &SpaceName, crd: &Value) -> NamesInUse {
        let text = |pointer: &str| crd.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
        self.resolver.names_in_use(space, text("/spec/group"), text("/metadata/name"))
    }
}

/// Refuses a tenant's create, change or delete of a CRD named like a forced system CRD in its range.
pub struct ForcedNames {
    pub resolver: Arc<Resolver>,
}

#[async_trait]
impl Admission for ForcedNames {
    fn handles(&self, resource: &ResourceInfo, _operation: Operation) -> bool {
        resource.is(GROUP, NAME)
    }

    fn refuses(&self, _registry: &GenericStore, question: &Question<'_>) -> Option<String> {
        if question.name.is_empty() || !question.verb_in(&["create", "update", "patch", "delete"]) || !question.covers(GROUP, "customresourcedefinitions") {
            return None;
        }
        let forced = self.resolver.forced_on(question.space, question.name)?;
        Some(format!("the system CRD {} is forced on this tenant; a tenant cannot create, change or delete a CRD of that name", forced.name))
    }

    async fn admit(&self, _registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        let name = attributes.name;
        if attributes.caller.is_none() || name.is_empty() {
            return Ok(());
        }
        match self.resolver.forced_on(attributes.space, name) {
            Some(forced) => Err(ApiError::forbidden(format!(
                "customresourcedefinitions.apiextensions.k8s.io \"{name}\" is forbidden: the system CRD {} is forced on this tenant \
                 (label arktos.futurewei.com/crd-sharing-policy: forced); a tenant cannot create, change or delete a CRD of that name",
                forced.name))),
            None => Ok(()),
        }
    }
}

/// Sets `status.acceptedNames` and the `NamesAccepted` and `Established` conditions of `crd` from its requested
/// names and the names in use. `Established` stays true once true (an established CRD keeps serving under
/// its accepted names); otherwise it is true exactly when every name is accepted.
fn names_and_conditions(used: &NamesInUse, crd: &mut Value) {
    let requested = AcceptedNames::of(crd.pointer("/spec/names"));
    let accepted = AcceptedNames::of(crd.pointer("/status/acceptedNames"));
    let (names, conflict) = accept_names(&requested, &accepted, used);
    let mut encoded = Map::new();
    encoded.insert("plural".into(), json!(names.plural));
    if !names.singular.is_empty() {
        encoded.insert("singular".into(), json!(names.singular));
    }
    if !names.short_names.is_empty() {
        encoded.insert("shortNames".into(), json!(names.short_names));
    }
    encoded.insert("kind".into(), json!(names.kind));
    if !names.list_kind.is_empty() {
        encoded.insert("listKind".into(), json!(names.list_kind));
    }
    if let Some(categories) = crd.pointer("/spec/names/categories").filter(|c| c.as_array().is_some_and(|c| !c.is_empty())) {
        encoded.insert("categories".into(), categories.clone());
    }
    crd["status"]["acceptedNames"] = Value::Object(encoded);
    let accepted = conflict.is_none();
    match conflict {
        None => set_condition(crd, "NamesAccepted", true, "NoConflicts", "no conflicts found"),
        Some((reason, message)) => set_condition(crd, "NamesAccepted", false, reason, &message),
    }
    let established = crd.pointer("/status/conditions").and_then(Value::as_array).into_iter().flatten()
        .any(|c| c["type"] == "Established" && c["status"] == "True");
    if accepted && !established {
        set_condition(crd, "Established", true, "InitialNamesAccepted", "the initial names have been accepted");
    } else if !accepted && !established {
        set_condition(crd, "Established", false, "NotAccepted", "not all names are accepted");
    }
}

/// Sets a condition of `crd`, as kube's `SetCRDCondition`: its transition time changes only with its status.
fn set_condition(crd: &mut Value, kind: &str, status: bool, reason: &str, message: &str) {
    let status = if status { "True" } else { "False" };
    if !crd["status"].get("conditions").is_some_and(Value::is_array) {
        crd["status"]["conditions"] = json!([]);
    }
    let Some(conditions) = crd["status"]["conditions"].as_array_mut() else { return };
    let fresh = json!({"type": kind, "status": status, "lastTransitionTime": now(), "reason": reason, "message": message});
    match conditions.iter_mut().find(|c| c.get("type").and_then(Value::as_str) == Some(kind)) {
        Some(existing) if existing.get("status").and_then(Value::as_str) == Some(status) => {
            existing["reason"] = json!(reason);
            existing["message"] = json!(message);
        }
        Some(existing) => *existing = fresh,
        None => conditions.push(fresh),
    }
}

/// Where a CRD's conversion webhook is called.
const CLIENT_CONFIG: &str = "/spec/conversion/webhook/clientConfig";

fn storage_version(crd: &Value) -> Option<String> {
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .map(str::to_owned)
}

/// A CRD's validation causes (kube's `ValidateCustomResourceDefinition`, see `kspaces_crd::definition`).
fn check(object: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
    match Definition::parse(object) {
        Err(errors) => causes.extend(errors.into_iter().map(Cause::from)),
        Ok(_) => causes.extend(definition::cost_errors(object, old).into_iter().map(Cause::from)),
    }
    if let Some(client) = object.pointer(CLIENT_CONFIG).filter(|c| c.is_object()) {
        validate_client_config(client, "spec.conversion.webhook.clientConfig", causes);
    }
    if let Some(old) = old {
        for (pointer, field) in [("/spec/group", "spec.group"), ("/spec/names/plural", "spec.names.plural")] {
            if old.pointer(pointer) != object.pointer(pointer) {
                causes.push(Cause::invalid(field, object.pointer(pointer).and_then(Value::as_str).unwrap_or_default(), "field is immutable"));
            }
        }
        let scope = |v: &Value| v.pointer("/spec/scope").and_then(Value::as_str).map(|s| if s == "Tenant" { "Cluster" } else { s }).map(str::to_owned);
        if scope(old) != scope(object) {
            causes.push(Cause::invalid("spec.scope", &scope(object).unwrap_or_default(), "field is immutable"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(plural: &str, singular: &str, short: &[&str], kind: &str) -> AcceptedNames {
        AcceptedNames {
            plural: plural.into(),
            singular: singular.into(),
            short_names: short.iter().map(|s| s.to_string()).collect(),
            kind: kind.into(),
            list_kind: if kind.is_empty() { String::new() } else { format!("{kind}List") },
        }
    }

    fn used(resources: &[&str], kinds: &[&str]) -> NamesInUse {
        NamesInUse { resources: resources.iter().map(|s| s.to_string()).collect(), kinds: kinds.iter().map(|s| s.to_string()).collect() }
    }

    /// One row: (what it shows, requested, accepted before, names other CRDs of the group hold, accepted after,
    /// the conflict as (reason, message)).
    type Row = (&'static str, AcceptedNames, AcceptedNames, NamesInUse, AcceptedNames, Option<(&'static str, &'static str)>);

    #[test]
    fn names_are_accepted_as_kubes_naming_controller_accepts_them() {
        let none = AcceptedNames::default();
        let widget = names("widgets", "widget", &["wd"], "Widget");
        let rows: Vec<Row> = vec![
            ("a fresh CRD in an empty group", widget.clone(), none.clone(), used(&[], &[]), widget.clone(), None),
            ("another CRD's kind: the kinds stay unaccepted", widget.clone(), none.clone(), used(&["gadgets", "gadget"], &["Widget", "WidgetList"]),
                names("widgets", "widget", &["wd"], ""), Some(("ListKindConflict", "\"WidgetList\" is already in use"))),
            ("another CRD's short name", widget.clone(), none.clone(), used(&["wd"], &["Gadget"]),
                AcceptedNames { short_names: vec![], ..widget.clone() }, Some(("ShortNamesConflict", "\"wd\" is already in use"))),
            ("two short names taken", names("widgets", "widget", &["wd", "wg"], "Widget"), none.clone(), used(&["wd", "wg"], &[]),
                AcceptedNames { short_names: vec![], ..widget.clone() }, Some(("ShortNamesConflict", "[\"wd\" is already in use, \"wg\" is already in use]"))),
            ("a singular another CRD uses as a short name", widget.clone(), none.clone(), used(&["widget"], &[]),
                AcceptedNames { singular: String::new(), ..widget.clone() }, Some(("SingularConflict", "\"widget\" is already in use"))),
            ("names already accepted are kept whoever else claims them", widget.clone(), widget.clone(), used(&["wd", "widget"], &["Widget"]), widget.clone(), None),
            ("a new short name of an accepted CRD, taken: the old ones stay", names("widgets", "widget", &["wd", "w"], "Widget"), widget.clone(), used(&["w"], &[]),
                widget.clone(), Some(("ShortNamesConflict", "\"w\" is already in use"))),
        ];
        for (row, requested, accepted, used, expected, conflict) in rows {
            let (got, got_conflict) = accept_names(&requested, &accepted, &used);
            assert_eq!(got, expected, "{row}");
            assert_eq!(got_conflict.as_ref().map(|(r, m)| (*r, m.as_str())), conflict, "{row}");
        }
    }

    #[test]
    fn a_conflict_leaves_the_crd_unestablished_and_an_established_crd_stays_established() {
        let mut crd = json!({"spec": {"names": {"plural": "gadgets", "singular": "gadget", "kind": "Widget", "listKind": "WidgetList"}},
            "status": {"acceptedNames": {"plural": "", "kind": ""}, "conditions": []}});
        names_and_conditions(&used(&["widgets"], &["Widget", "WidgetList"]), &mut crd);
        let condition = |crd: &Value, kind: &str| {
            let found = crd["status"]["conditions"].as_array().and_then(|c| c.iter().find(|c| c["type"] == kind)).cloned().unwrap_or_default();
            (found["status"].as_str().unwrap_or_default().to_owned(), found["reason"].as_str().unwrap_or_default().to_owned())
        };
        assert_eq!(condition(&crd, "NamesAccepted"), ("False".into(), "ListKindConflict".into()));
        assert_eq!(condition(&crd, "Established"), ("False".into(), "NotAccepted".into()));
        assert_eq!(crd["status"]["acceptedNames"], json!({"plural": "gadgets", "singular": "gadget", "kind": ""}));

        names_and_conditions(&used(&[], &[]), &mut crd);
        assert_eq!(condition(&crd, "NamesAccepted"), ("True".into(), "NoConflicts".into()));
        assert_eq!(condition(&crd, "Established"), ("True".into(), "InitialNamesAccepted".into()));
        assert_eq!(crd["status"]["acceptedNames"]["kind"], "Widget");

        crd["spec"]["names"]["shortNames"] = json!(["gd"]);
        names_and_conditions(&used(&["gd"], &[]), &mut crd);
        assert_eq!(condition(&crd, "NamesAccepted"), ("False".into(), "ShortNamesConflict".into()));
        assert_eq!(condition(&crd, "Established"), ("True".into(), "InitialNamesAccepted".into()), "an established CRD keeps serving");
    }
}
