//! Definitions of the built-in types (`crate::builtin`'s rows and the meta types): generated with schemars from
//! k8s-openapi, plus synthesized `XList` kinds.

use k8s_openapi::api::{autoscaling, flowcontrol};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use std::sync::OnceLock;

use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{json, Map, Value};

use super::Form;
use crate::builtin::builtin_kinds;

/// Meta types every document may reference (request bodies, responses, discovery).
pub(crate) const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
pub(crate) const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub(crate) const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
pub(crate) const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
pub(crate) const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
pub(crate) const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";
pub(crate) const API_RESOURCE_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList";
pub(crate) const API_GROUP: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup";
pub(crate) const API_GROUP_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
pub(crate) const API_VERSIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions";

/// Registers each type (and, transitively, everything it references) with the generator.
macro_rules! register {
    ($generator:expr; $($ty:ty),* $(,)?) => { $( let _ = $generator.subschema_for::<$ty>(); )* };
}

/// The OpenAPI column of each built-in kind's row: its k8s-openapi type, registered with `generator`.
macro_rules! register_rows {
    ($( $($ty:ident)::+, [$($short:literal),*], $flags:expr, $verbs:ident, [$($sub:ident),*], $printer:expr; )*) => {
        |generator: &mut SchemaGenerator| { $( let _ = generator.subschema_for::<k8s_openapi::$($ty)::+>(); )* }
    };
}

/// The schemars settings of one document form: where definitions live and which rewrites apply.
fn settings(form: Form) -> SchemaSettings {
    match form {
        // OpenAPI 3.0 ignores `$ref` siblings, so schemars moves them into `allOf` like kube-apiserver does.
        Form::V3 => SchemaSettings::openapi3().with(|s| s.meta_schema = None),
        // Swagger 2.0 as kube-apiserver writes it keeps `description` next to `$ref`, so no transforms.
        Form::V2 => SchemaSettings::draft07().with(|s| {
            s.definitions_path = "/definitions".into();
            s.meta_schema = None;
            s.transforms = Vec::new();
        }),
    }
}

/// Every definition reachable from the built-in kinds and the meta types clients need, in `form`.
/// Generated once per process: it depends on nothing but k8s-openapi.
pub(crate) fn builtin_definitions(form: Form) -> &'static Map<String, Value> {
    static V2: OnceLock<Map<String, Value>> = OnceLock::new();
    static V3: OnceLock<Map<String, Value>> = OnceLock::new();
    match form {
        Form::V2 => V2.get_or_init(|| generate(form)),
        Form::V3 => V3.get_or_init(|| generate(form)),
    }
}

/// Names of the built-in definitions (those k8s-openapi has types for).
pub(crate) fn builtin_names() -> impl Iterator<Item = &'static str> {
    builtin_definitions(Form::V3).keys().map(String::as_str)
}

pub(crate) fn generate(form: Form) -> Map<String, Value> {
    let mut generator = SchemaGenerator::new(settings(form));
    (builtin_kinds!(register_rows))(&mut generator);
    register!(generator;
        autoscaling::v1::HorizontalPodAutoscaler, autoscaling::v1::Scale,
        flowcontrol::v1::FlowSchema, flowcontrol::v1::PriorityLevelConfiguration,
        meta::DeleteOptions, meta::Status, meta::ListMeta, meta::WatchEvent<Value>, meta::Patch,
        meta::APIResourceList, meta::APIGroup, meta::APIGroupList, meta::APIVersions,
    );
    let mut definitions = generator.take_definitions(true);
    for schema in definitions.values_mut() {
        tidy_builtin_schema(schema, form);
    }
    if let Some(Value::Object(int_or_string)) = definitions.get_mut(INT_OR_STRING) {
        int_or_string.insert("format".into(), json!("int-or-string"));
    }
    definitions
}

/// Brings k8s-openapi's schemas to the shape kube-apiserver publishes: `metadata` is never required (k8s-openapi
/// makes it a plain field, so schemars lists it; kubectl's client-side validation would then refuse a review
/// without metadata), and the scalar wrappers are `type: string` plus a format.
fn tidy_builtin_schema(schema: &mut Value, form: Form) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(required)) = object.get_mut("required") {
        required.retain(|field| field != "metadata");
        if required.is_empty() {
            object.remove("required");
        }
    }
    if object.get("x-kubernetes-int-or-string") != Some(&Value::Bool(true))
        || object.contains_key("type")
    {
        return;
    }
    // IntOrString and Quantity: Swagger 2.0 has no `oneOf`, so v2 says string; v3 lists both forms.
    match form {
        Form::V2 => {
            object.remove("x-kubernetes-int-or-string");
            object.insert("type".into(), json!("string"));
        }
        Form::V3 => {
            object.insert(
                "oneOf".into(),
                json!([{ "type": "integer" }, { "type": "string" }]),
            );
        }
    }
}

/// `<Kind>List`: kube-apiserver publishes one per kind, k8s-openapi has a generic `List<T>` without a schema.
pub(crate) fn list_schema(item_definition: &str, kind: &str, form: Form) -> Value {
    let prefix = form.ref_prefix();
    let item_ref = json!({ "$ref": format!("{prefix}{item_definition}") });
    let metadata_ref = format!("{prefix}{LIST_META}");
    let metadata = match form {
        Form::V2 => json!({ "$ref": metadata_ref, "description": "Standard list metadata." }),
        Form::V3 => {
            json!({ "allOf": [{ "$ref": metadata_ref }], "description": "Standard list metadata." })
        }
    };
    json!({
        "description": format!("{kind}List is a list of {kind} objects."),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": { "type": "string", "description": "The versioned schema of this list, for example `v1` or `apps/v1`." },
            "kind": { "type": "string", "description": "The REST kind of this list, for example `PodList`." },
            "items": { "type": "array", "description": format!("The {kind} objects."), "items": item_ref },
            "metadata": metadata,
        },
    })
}

/// Schema for a resource whose definition nobody supplied: any object, so clients can still find its GVK.
pub(crate) fn placeholder_schema(kind: &str) -> Value {
    json!({
        "description": format!("{kind} (no schema was published for this kind)."),
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Appends one `{group, kind, version}` to a definition's `x-kubernetes-group-version-kind` list, once.
pub(crate) fn add_gvk(
    definitions: &mut Map<String, Value>,
    name: &str,
    group: &str,
    version: &str,
    kind: &str,
) {
    let Some(schema) = definitions.get_mut(name).and_then(Value::as_object_mut) else {
        return;
    };
    let entry = json!({ "group": group, "kind": kind, "version": version });
    let list = schema
        .entry("x-kubernetes-group-version-kind")
        .or_insert_with(|| json!([]));
    if let Some(list) = list.as_array_mut() {
        if !list.contains(&entry) {
            list.push(entry);
        }
    }
}
