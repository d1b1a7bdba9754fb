//! Writes `generated.rs`: one `ToJson` and one `FromJson` impl per k8s-pb message reachable from the kinds in
//! [`roots`] (every row of `crate::builtin` and a few more, with their `XList` kinds), and the (apiVersion, kind) tables of decoders and encoders.
//!
//! JSON names come from k8s-openapi's schemars definitions; a property becomes a field when prost's snake case of
//! it (heck, as prost-build does) names a field of the k8s-pb struct, whose source is read from cargo's registry.
//! Kinds k8s-openapi has no schema for (`XList`, `PartialObjectMetadata(List)`) get a definition written here
//! ([`synthetic_definitions`]). Which zero values kube keeps comes from [`super::keep_zero`]. The test
//! `cargo test -p kspaces-apiserver --lib protobuf::codegen` compares the committed file with what it generates: when
//! they differ it writes the new file and fails once (rebuild and commit it).

use heck::ToSnakeCase;
use k8s_openapi::api;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, Status, WatchEvent};
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Definitions converted by hand in `to_json.rs`, `from_json.rs` and `json_schema.rs`.
const HAND_WRITTEN: &[&str] = &[
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Duration",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
];

/// A kind a client may send, or the server answer, as protobuf.
struct Root {
    api_version: String,
    kind: String,
    schema_name: String,
}

impl Root {
    fn new(api_version: &str, kind: &str, schema_name: &str) -> Root {
        Root {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            schema_name: schema_name.to_owned(),
        }
    }
}

/// Registers `T` as a root and collects its schema definitions.
fn resource<T: k8s_openapi::Resource + JsonSchema>(generator: &mut SchemaGenerator) -> Root {
    generator.subschema_for::<T>();
    Root::new(T::API_VERSION, T::KIND, &T::schema_name())
}

/// The `meta.k8s.io` kinds of metadata-only responses, which k8s-openapi has no type for.
const PARTIAL_OBJECT_METADATA: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadata";
const PARTIAL_OBJECT_METADATA_LIST: &str =
    "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadataList";
const PARTIAL_OBJECT_METADATA_LIST_V1BETA1: &str =
    "io.k8s.apimachinery.pkg.apis.meta.v1beta1.PartialObjectMetadataList";

/// The protobuf column of each built-in kind's row (`crate::builtin`): its k8s-openapi type.
macro_rules! row_roots {
    ($( $($ty:ident)::+, [$($short:literal),*], $flags:expr, $verbs:ident, [$($sub:ident),*], $printer:expr; )*) => {
        |g: &mut SchemaGenerator| vec![$( resource::<k8s_openapi::$($ty)::+>(g), )*]
    };
}

/// Every kind kubectl's typed clients (and client-go controllers) send as protobuf, plus their neighbours: every
/// built-in kind's row, the bodies of subresources and the kinds `crate::kinds` adds.
fn roots(generator: &mut SchemaGenerator) -> Vec<Root> {
    use api::{authentication, autoscaling, policy};
    let g = generator;
    let mut roots = (crate::builtin::builtin_kinds!(row_roots))(g);
    roots.extend([
        resource::<policy::v1::Eviction>(g),
        resource::<authentication::v1::TokenRequest>(g),
        resource::<autoscaling::v1::HorizontalPodAutoscaler>(g),
        resource::<autoscaling::v1::Scale>(g),
        resource::<api::flowcontrol::v1::FlowSchema>(g),
        resource::<api::flowcontrol::v1::PriorityLevelConfiguration>(g),
    ]);
    roots.push(resource::<Status>(g));
    g.subschema_for::<DeleteOptions>();
    roots.push(Root::new(
        "meta.k8s.io/v1",
        "DeleteOptions",
        &DeleteOptions::schema_name(),
    ));
    g.subschema_for::<WatchEvent<()>>();
    let watch_event = WatchEvent::<()>::schema_name();
    roots.push(Root::new("meta.k8s.io/v1", "WatchEvent", &watch_event));
    roots.push(Root::new(
        "meta.k8s.io/v1",
        "PartialObjectMetadata",
        PARTIAL_OBJECT_METADATA,
    ));
    roots.push(Root::new(
        "meta.k8s.io/v1beta1",
        "PartialObjectMetadata",
        PARTIAL_OBJECT_METADATA,
    ));
    roots.push(Root::new(
        "meta.k8s.io/v1",
        "PartialObjectMetadataList",
        PARTIAL_OBJECT_METADATA_LIST,
    ));
    roots.push(Root::new(
        "meta.k8s.io/v1beta1",
        "PartialObjectMetadataList",
        PARTIAL_OBJECT_METADATA_LIST_V1BETA1,
    ));
    roots
}

/// `XList` roots for every root whose k8s-pb module has an `XList` message, and the definitions of the kinds
/// k8s-openapi has no schema for: a list is `metadata` (ListMeta) and `items`; PartialObjectMetadata is
/// `metadata` (ObjectMeta).
fn synthetic_definitions(roots: &mut Vec<Root>, structs: &PbStructs, definitions: &mut Map<String, Value>) {
    let object = |properties: &[&str]| {
        let properties: Map<String, Value> = properties
            .iter()
            .map(|name| ((*name).to_owned(), json!({})))
            .collect();
        json!({ "properties": properties })
    };
    let list = object(&["apiVersion", "items", "kind", "metadata"]);
    let mut lists = Vec::new();
    for root in roots.iter() {
        let Some(path) = pb_path(&root.schema_name, structs) else {
            continue;
        };
        let list_kind = format!("{}List", root.kind);
        let listed = roots
            .iter()
            .any(|other| other.api_version == root.api_version && other.kind == list_kind);
        if structs.contains_key(&format!("{path}List")) && !listed {
            let schema_name = format!("{}List", root.schema_name);
            definitions.insert(schema_name.clone(), list.clone());
            lists.push(Root::new(&root.api_version, &list_kind, &schema_name));
        }
    }
    roots.extend(lists);
    definitions.insert(PARTIAL_OBJECT_METADATA.to_owned(), object(&["apiVersion", "kind", "metadata"]));
    definitions.insert(PARTIAL_OBJECT_METADATA_LIST.to_owned(), list.clone());
    definitions.insert(PARTIAL_OBJECT_METADATA_LIST_V1BETA1.to_owned(), list);
}

/// Every k8s-pb struct, keyed by Rust path (`k8s_pb::api::core::v1::ConfigMap`): field name → message type path.
type PbStructs = BTreeMap<String, BTreeMap<String, Option<String>>>;

/// The host's target triple (`rustc -vV`), so `cargo metadata --offline` need not resolve other platforms'
/// dependencies, which an offline registry may not hold.
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let output = std::process::Command::new(rustc)
        .arg("-vV")
        .output()
        .expect("rustc -vV runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.lines()
        .find_map(|line| line.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_owned()
}

/// Finds the k8s-pb sources through `cargo metadata`.
fn k8s_pb_source_dir() -> PathBuf {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let output = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--offline",
            "--format-version",
            "1",
            "--filter-platform",
            &host_triple(),
            "--manifest-path",
            manifest,
        ])
        .output()
        .expect("cargo metadata runs");
    // Offline, it needs every locked crate already downloaded: on a fresh clone, `cargo fetch` does that.
    assert!(
        output.status.success(),
        "`cargo metadata --offline` failed (run `cargo fetch` first on a fresh clone): {}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    let metadata: Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let packages = metadata["packages"]
        .as_array()
        .expect("metadata lists packages");
    let package = packages
        .iter()
        .find(|package| package["name"] == "k8s-pb")
        .expect("k8s-pb is a dependency");
    let manifest_path = PathBuf::from(package["manifest_path"].as_str().expect("manifest path"));
    manifest_path
        .parent()
        .expect("manifest has a directory")
        .join("src")
}

/// Reads every `mod.rs` under `dir`, recording each struct's prost fields.
fn parse_pb_dir(dir: &Path, module: &str, structs: &mut PbStructs) {
    for entry in std::fs::read_dir(dir).expect("k8s-pb source directory is readable") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            let name = path
                .file_name()
                .and_then(|name| name.to_str())
                .expect("UTF-8 module name");
            parse_pb_dir(&path, &format!("{module}::{name}"), structs);
        } else if path
            .file_name()
            .is_some_and(|name| name == "mod.rs" || name == "lib.rs")
        {
            let source = std::fs::read_to_string(&path).expect("k8s-pb source is readable");
            parse_pb_source(&source, module, structs);
        }
    }
}

/// Records `pub struct X {` and each `pub field: Type,` (possibly over several lines) after a `#[prost(`.
fn parse_pb_source(source: &str, module: &str, structs: &mut PbStructs) {
    let mut current = String::new();
    let mut attribute: Option<&str> = None;
    let mut declaration = String::new();
    for line in source.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("pub struct ") {
            let name = rest.trim_end_matches(" {}").trim_end_matches(" {");
            current = format!("{module}::{name}");
            structs.entry(current.clone()).or_default();
        } else if line.starts_with("#[prost(") {
            attribute = Some(line);
        } else if let Some(prost) = attribute {
            declaration.push_str(line);
            if declaration.ends_with(',')
                && declaration.matches('<').count() == declaration.matches('>').count()
            {
                let (name, rust_type) = declaration["pub ".len()..]
                    .split_once(':')
                    .unwrap_or_default();
                let message = prost
                    .starts_with("#[prost(message")
                    .then(|| resolve_type(module, rust_type))
                    .flatten();
                structs
                    .entry(current.clone())
                    .or_default()
                    .insert(name.to_owned(), message);
                (attribute, declaration) = (None, String::new());
            }
        }
    }
}

/// `::core::option::Option<super::super::X>,` in `module` → the absolute path of `X`; lists and maps give `None`.
fn resolve_type(module: &str, rust_type: &str) -> Option<String> {
    let inner = rust_type.trim().trim_end_matches(',').replace(' ', "");
    let mut rest = inner
        .strip_prefix("::core::option::Option<")?
        .strip_suffix('>')?;
    let mut segments: Vec<&str> = module.split("::").collect();
    while let Some(after) = rest.strip_prefix("super::") {
        segments.pop();
        rest = after;
    }
    Some(format!("{}::{rest}", segments.join("::")))
}

/// `io.k8s.api.core.v1.ConfigMap` → `k8s_pb::api::core::v1::ConfigMap`, matching the struct name case-insensitively
/// (prost renames `AWSElasticBlockStoreVolumeSource` but keeps `CSIDriver`).
fn pb_path(definition: &str, structs: &PbStructs) -> Option<String> {
    let rest = definition
        .strip_prefix("io.k8s.")
        .unwrap_or(definition)
        .replace('-', "_");
    let (module, name) = rest.rsplit_once('.')?;
    let wanted = format!("k8s_pb::{}::{}", module.replace('.', "::"), name).to_lowercase();
    structs
        .keys()
        .find(|path| path.to_lowercase() == wanted)
        .cloned()
}

/// The generator's result: the file text and what it could not map, for the report.
pub(super) struct Generated {
    pub(super) text: String,
    pub(super) unmapped_properties: Vec<String>,
    pub(super) unmapped_definitions: Vec<String>,
}

/// What every impl body is built from.
struct Inputs {
    structs: PbStructs,
    keep_zero: BTreeSet<String>,
}

/// Builds the text of `generated.rs`.
pub(super) fn generate() -> Generated {
    let mut generator = SchemaGenerator::default();
    let mut roots = roots(&mut generator);
    let mut definitions = generator.take_definitions(false);
    let mut structs = PbStructs::new();
    parse_pb_dir(&k8s_pb_source_dir(), "k8s_pb", &mut structs);
    synthetic_definitions(&mut roots, &structs, &mut definitions);
    let keep_zero = super::keep_zero::KEEP_ZERO
        .iter()
        .flat_map(|(definition, fields)| {
            fields
                .iter()
                .map(move |field| format!("{definition}.{field}"))
        })
        .collect();
    let inputs = Inputs { structs, keep_zero };
    let text = header(&roots, &inputs.structs);
    let mut out = Generated {
        text,
        unmapped_properties: vec![],
        unmapped_definitions: vec![],
    };
    let (mut bodies, mut inlined) = (BTreeMap::new(), BTreeMap::new());
    for (name, schema) in &definitions {
        if HAND_WRITTEN.contains(&name.as_str()) {
            continue;
        }
        let path = pb_path(name, &inputs.structs);
        // A definition without properties is a scalar, unless it is an empty message (`{}` in JSON).
        let empty_message = path.as_ref().is_some_and(|path| inputs.structs[path].is_empty());
        let properties: Vec<&str> = match schema.get("properties").and_then(Value::as_object) {
            Some(properties) => properties.keys().map(String::as_str).collect(),
            None if empty_message => Vec::new(),
            None => continue,
        };
        let Some(path) = path else {
            out.unmapped_definitions.push(name.clone());
            continue;
        };
        let body = object_body(
            &inputs,
            name,
            &path,
            &properties,
            &mut inlined,
            &mut out.unmapped_properties,
        );
        bodies.insert(path, body);
    }
    for (path, body) in inlined {
        bodies.entry(path).or_insert(body);
    }
    for (path, body) in &bodies {
        write_impls(&mut out.text, path, body);
    }
    out
}

/// The prost field for a JSON property: prost's snake case of the name, keywords raw (`r#type`).
///
/// A few proto names differ from the JSON names in case only (`uID`, `aPIGroup`, `hostIPs` → `u_id`, `a_pi_group`,
/// `host_ips`), so a field equal but for underscores and case is the fallback.
fn find_field<'a>(
    fields: &'a BTreeMap<String, Option<String>>,
    property: &str,
) -> Option<&'a String> {
    let snake = property.to_snake_case();
    let exact = fields
        .keys()
        .find(|field| field.trim_start_matches("r#") == snake);
    let squash = |name: &str| {
        name.trim_start_matches("r#")
            .replace('_', "")
            .to_lowercase()
    };
    exact.or_else(|| {
        fields
            .keys()
            .find(|field| squash(field) == squash(property))
    })
}

/// The statements of one message's two impls: `put`s of its fields into JSON; the `match` arms setting them from
/// the JSON object's properties (one pass over what is present, not a lookup per possible field) and the inline
/// structs read from the same object.
#[derive(Default)]
struct Body {
    to_json: String,
    from_json_arms: String,
    from_json_merges: String,
}

/// Whether `property` is a field of a struct with `fields`, or of a message it embeds, `depth` levels down (an
/// `admissionregistration` `NamedRuleWithOperations` embeds `RuleWithOperations`, which embeds `Rule`).
fn inlines(inputs: &Inputs, fields: &BTreeMap<String, Option<String>>, property: &str, depth: usize) -> bool {
    find_field(fields, property).is_some()
        || (depth > 1
            && fields.values().filter_map(Option::as_ref).any(|inner| {
                inputs.structs.get(inner).is_some_and(|inner_fields| inlines(inputs, inner_fields, property, depth - 1))
            }))
}

/// The statements converting each property of `definition` from and to struct `path`.
///
/// A Go struct embedded with `json:",inline"` (e.g. `LocalObjectReference` in `ConfigMapEnvSource`) is a nested
/// message in protobuf but flat in JSON: an unmatched message field whose own fields take some of the remaining
/// properties is merged, and its impl is generated from those properties if it has no definition of its own.
fn object_body(
    inputs: &Inputs,
    definition: &str,
    path: &str,
    properties: &[&str],
    inlined: &mut BTreeMap<String, Body>,
    unmapped: &mut Vec<String>,
) -> Body {
    let fields = &inputs.structs[path];
    let (mut body, mut remaining, mut matched) = (Body::default(), Vec::new(), BTreeSet::new());
    for property in properties {
        let Some(field) = find_field(fields, property) else {
            remaining.push(*property);
            continue;
        };
        let keep = inputs
            .keep_zero
            .contains(&format!("{definition}.{property}"));
        writeln!(
            body.to_json,
            "        put(&mut object, {property:?}, &self.{field}, {keep})?;"
        )
        .expect("write to String");
        writeln!(
            body.from_json_arms,
            "                {property:?} => set(&mut message.{field}, key, item)?,"
        )
        .expect("write to String");
        matched.insert(field);
    }
    for (field, message) in fields {
        let Some(inner) = message.as_ref().filter(|_| !matched.contains(field)) else {
            continue;
        };
        let Some(inner_fields) = inputs.structs.get(inner) else {
            continue;
        };
        let taken: Vec<&str> = remaining
            .iter()
            .copied()
            .filter(|p| inlines(inputs, inner_fields, p, 2))
            .collect();
        if taken.is_empty() {
            continue;
        }
        writeln!(body.to_json, "        merge(&mut object, &self.{field})?;")
            .expect("write to String");
        writeln!(
            body.from_json_merges,
            "        message.{field} = Some(FromJson::from_json(value)?);"
        )
        .expect("write to String");
        remaining.retain(|property| !taken.contains(property));
        let namespace = definition
            .rsplit_once('.')
            .map_or("", |(namespace, _)| namespace);
        let inner_name = inner
            .rsplit_once("::")
            .map_or(inner.as_str(), |(_, name)| name);
        let inner_definition = format!("{namespace}.{inner_name}");
        let inner_body = object_body(inputs, &inner_definition, inner, &taken, inlined, unmapped);
        inlined.insert(inner.clone(), inner_body);
    }
    let remaining = remaining
        .iter()
        .filter(|property| !matches!(**property, "apiVersion" | "kind"));
    unmapped.extend(remaining.map(|property| format!("{definition}.{property}")));
    body
}

/// The file header and the (apiVersion, kind) → decoder and → encoder tables.
fn header(roots: &[Root], structs: &PbStructs) -> String {
    let mut text = String::from(
        "//! Generated by `codegen.rs` (`cargo test -p kspaces-apiserver --lib protobuf::codegen` rewrites it when \
         stale); do not edit.\n\n\
         // A message with one JSON property still reads it with a `match`, like every other.\n\
         #![allow(clippy::single_match)]\n\n\
         use super::from_json::{Encoded, FromJson, encode, fields, set};\n\
         use super::to_json::{Converted, DecodeFailure, ToJson, decode, merge, put};\n\
         use serde_json::{Map, Value};\n\n\
         /// Decodes one kind's protobuf message into JSON.\n\
         pub(crate) type Decoder = fn(&[u8]) -> Result<Value, DecodeFailure>;\n\n\
         /// Encodes one kind's JSON object as its protobuf message, length-delimited, onto a buffer.\n\
         pub(crate) type Encoder = fn(&Value, &mut Vec<u8>) -> Encoded<()>;\n\n",
    );
    let paths: Vec<(&Root, String)> = roots
        .iter()
        .map(|root| {
            let path = pb_path(&root.schema_name, structs)
                .unwrap_or_else(|| format!("missing::{}", root.schema_name));
            (root, path)
        })
        .collect();
    for (function, kind, call) in [
        ("decoder_for", "Decoder", "decode"),
        ("encoder_for", "Encoder", "encode"),
    ] {
        let what = if kind == "Decoder" { "decoder" } else { "encoder" };
        writeln!(
            text,
            "/// The {what} for (apiVersion, kind), if that kind has a protobuf form.\n\
             pub(crate) fn {function}(api_version: &str, kind: &str) -> Option<{kind}> {{\n    \
             let {what}: {kind} = match (api_version, kind) {{"
        )
        .expect("write to String");
        for (root, path) in &paths {
            let (api_version, kind) = (&root.api_version, &root.kind);
            writeln!(
                text,
                "        ({api_version:?}, {kind:?}) => {call}::<{path}>,"
            )
            .expect("write to String");
        }
        writeln!(
            text,
            "        _ => return None,\n    }};\n    Some({what})\n}}\n"
        )
        .expect("write to String");
    }
    text
}

/// Appends the `impl ToJson` that puts each mapped field and the `impl FromJson` that takes each one.
fn write_impls(text: &mut String, path: &str, body: &Body) {
    let object = if body.to_json.is_empty() {
        "object"
    } else {
        "mut object"
    };
    write!(
        text,
        "\nimpl ToJson for {path} {{\n    fn to_json(&self, _keep_zero: bool) -> Converted {{\n        \
         let {object} = Map::new();\n{}        Ok(Some(Value::Object(object)))\n    }}\n}}\n",
        body.to_json
    )
    .expect("write to String");
    let message = if body.from_json_arms.is_empty() && body.from_json_merges.is_empty() {
        "message"
    } else {
        "mut message"
    };
    let read = if body.from_json_arms.is_empty() {
        "        fields(value)?;\n".to_owned()
    } else {
        format!(
            "        for (key, item) in fields(value)? {{\n            match key.as_str() {{\n{}                \
             _ => {{}}\n            }}\n        }}\n",
            body.from_json_arms
        )
    };
    write!(
        text,
        "\nimpl FromJson for {path} {{\n    fn from_json(value: &Value) -> Encoded<Self> {{\n        \
         let {message} = Self::default();\n{read}{}        Ok(message)\n    }}\n}}\n",
        body.from_json_merges
    )
    .expect("write to String");
}

/// Path of the committed generated file.
const GENERATED_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/protobuf/generated.rs");

#[test]
fn generated_file_is_up_to_date() {
    let generated = generate();
    eprintln!(
        "unmapped definitions: {:#?}",
        generated.unmapped_definitions
    );
    eprintln!("unmapped properties: {:#?}", generated.unmapped_properties);
    let committed = std::fs::read_to_string(GENERATED_PATH).unwrap_or_default();
    if committed != generated.text {
        std::fs::write(GENERATED_PATH, &generated.text).expect("generated.rs is writable");
        panic!("generated.rs was stale (a row of `crate::builtin` changed?): it has been rewritten, rebuild and commit it");
    }
    assert!(
        generated.unmapped_definitions.is_empty(),
        "definitions without a k8s-pb struct"
    );
    assert!(
        generated.unmapped_properties.is_empty(),
        "JSON properties without a k8s-pb field"
    );
}

#[test]
fn pb_types_resolve_relative_to_their_module() {
    let resolved = resolve_type(
        "k8s_pb::api::core::v1",
        " ::core::option::Option<super::super::x::Y>,",
    );
    assert_eq!(resolved.as_deref(), Some("k8s_pb::api::x::Y"));
    assert_eq!(
        resolve_type("k8s_pb::api::core::v1", "::prost::alloc::vec::Vec<Z>,"),
        None
    );
}
