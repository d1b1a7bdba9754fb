//! Writes `generated.rs`: one `ToJson` impl per k8s-pb message reachable from the kinds in [`roots`].
//!
//! JSON names come from k8s-openapi's schemars definitions; a property becomes a field when prost's snake case of
//! it (heck, as prost-build does) names a field of the k8s-pb struct, whose source is read from cargo's registry.
//! Which zero values kube keeps comes from [`super::keep_zero`]. Regenerate with
//! `KSPACES_REGEN_PROTOBUF=1 cargo test -p kspaces-apiserver --lib protobuf::codegen`; without the variable the test
//! fails when the committed file is stale.

use heck::ToSnakeCase;
use k8s_openapi::api;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Definitions converted by hand in `to_json.rs`.
const HAND_WRITTEN: &[&str] = &[
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Duration",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
];

/// A kind a client may send as protobuf.
struct Root {
    api_version: &'static str,
    kind: &'static str,
    schema_name: String,
}

/// Registers `T` as a root and collects its schema definitions.
fn resource<T: k8s_openapi::Resource + JsonSchema>(generator: &mut SchemaGenerator) -> Root {
    generator.subschema_for::<T>();
    Root {
        api_version: T::API_VERSION,
        kind: T::KIND,
        schema_name: T::schema_name().into_owned(),
    }
}

/// Every kind kubectl's typed clients (and client-go controllers) send as protobuf, plus their neighbours.
fn roots(generator: &mut SchemaGenerator) -> Vec<Root> {
    use api::{
        admissionregistration, apps, authentication, authorization, autoscaling, batch,
        certificates,
    };
    use api::{
        coordination, core, discovery, events, networking, node, policy, rbac, scheduling, storage,
    };
    let g = generator;
    let mut roots = vec![
        resource::<core::v1::Binding>(g),
        resource::<core::v1::ConfigMap>(g),
        resource::<core::v1::Endpoints>(g),
        resource::<core::v1::Event>(g),
        resource::<core::v1::LimitRange>(g),
        resource::<core::v1::Namespace>(g),
        resource::<core::v1::Node>(g),
        resource::<core::v1::PersistentVolume>(g),
        resource::<core::v1::PersistentVolumeClaim>(g),
        resource::<core::v1::Pod>(g),
        resource::<core::v1::PodTemplate>(g),
        resource::<core::v1::ReplicationController>(g),
        resource::<core::v1::ResourceQuota>(g),
        resource::<core::v1::Secret>(g),
        resource::<core::v1::Service>(g),
        resource::<core::v1::ServiceAccount>(g),
        resource::<apps::v1::ControllerRevision>(g),
        resource::<apps::v1::DaemonSet>(g),
        resource::<apps::v1::Deployment>(g),
        resource::<apps::v1::ReplicaSet>(g),
        resource::<apps::v1::StatefulSet>(g),
        resource::<batch::v1::CronJob>(g),
        resource::<batch::v1::Job>(g),
        resource::<coordination::v1::Lease>(g),
        resource::<events::v1::Event>(g),
        resource::<discovery::v1::EndpointSlice>(g),
        resource::<networking::v1::Ingress>(g),
        resource::<networking::v1::IngressClass>(g),
        resource::<networking::v1::NetworkPolicy>(g),
        resource::<policy::v1::Eviction>(g),
        resource::<policy::v1::PodDisruptionBudget>(g),
        resource::<storage::v1::CSIDriver>(g),
        resource::<storage::v1::CSINode>(g),
        resource::<storage::v1::StorageClass>(g),
        resource::<storage::v1::VolumeAttachment>(g),
        resource::<scheduling::v1::PriorityClass>(g),
        resource::<node::v1::RuntimeClass>(g),
        resource::<rbac::v1::ClusterRole>(g),
        resource::<rbac::v1::ClusterRoleBinding>(g),
        resource::<rbac::v1::Role>(g),
        resource::<rbac::v1::RoleBinding>(g),
        resource::<authentication::v1::SelfSubjectReview>(g),
        resource::<authentication::v1::TokenRequest>(g),
        resource::<authentication::v1::TokenReview>(g),
        resource::<authorization::v1::LocalSubjectAccessReview>(g),
        resource::<authorization::v1::SelfSubjectAccessReview>(g),
        resource::<authorization::v1::SelfSubjectRulesReview>(g),
        resource::<authorization::v1::SubjectAccessReview>(g),
        resource::<autoscaling::v1::HorizontalPodAutoscaler>(g),
        resource::<autoscaling::v1::Scale>(g),
        resource::<autoscaling::v2::HorizontalPodAutoscaler>(g),
        resource::<certificates::v1::CertificateSigningRequest>(g),
        resource::<admissionregistration::v1::MutatingWebhookConfiguration>(g),
        resource::<admissionregistration::v1::ValidatingWebhookConfiguration>(g),
    ];
    g.subschema_for::<DeleteOptions>();
    let schema_name = DeleteOptions::schema_name().into_owned();
    roots.push(Root {
        api_version: "meta.k8s.io/v1",
        kind: "DeleteOptions",
        schema_name,
    });
    roots
}

/// Every k8s-pb struct, keyed by Rust path (`k8s_pb::api::core::v1::ConfigMap`): field name → message type path.
type PbStructs = BTreeMap<String, BTreeMap<String, Option<String>>>;

/// Finds the k8s-pb sources through `cargo metadata`.
fn k8s_pb_source_dir() -> PathBuf {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let output = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--offline",
            "--format-version",
            "1",
            "--manifest-path",
            manifest,
        ])
        .output()
        .expect("cargo metadata runs");
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
            current = format!("{module}::{}", rest.trim_end_matches(" {"));
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
    let roots = roots(&mut generator);
    let definitions = generator.take_definitions(false);
    let mut structs = PbStructs::new();
    parse_pb_dir(&k8s_pb_source_dir(), "k8s_pb", &mut structs);
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
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            continue;
        };
        if HAND_WRITTEN.contains(&name.as_str()) {
            continue;
        }
        let Some(path) = pb_path(name, &inputs.structs) else {
            out.unmapped_definitions.push(name.clone());
            continue;
        };
        let properties: Vec<&str> = properties.keys().map(String::as_str).collect();
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
        write_impl(&mut out.text, path, body);
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

/// The statements putting each property of `definition` from struct `path`.
///
/// A Go struct embedded with `json:",inline"` (e.g. `LocalObjectReference` in `ConfigMapEnvSource`) is a nested
/// message in protobuf but flat in JSON: an unmatched message field whose own fields take some of the remaining
/// properties is merged, and its impl is generated from those properties if it has no definition of its own.
fn object_body(
    inputs: &Inputs,
    definition: &str,
    path: &str,
    properties: &[&str],
    inlined: &mut BTreeMap<String, String>,
    unmapped: &mut Vec<String>,
) -> String {
    let fields = &inputs.structs[path];
    let (mut body, mut remaining, mut matched) = (String::new(), Vec::new(), BTreeSet::new());
    for property in properties {
        let Some(field) = find_field(fields, property) else {
            remaining.push(*property);
            continue;
        };
        let keep = inputs
            .keep_zero
            .contains(&format!("{definition}.{property}"));
        writeln!(
            body,
            "        put(&mut object, {property:?}, &self.{field}, {keep})?;"
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
            .filter(|p| find_field(inner_fields, p).is_some())
            .collect();
        if taken.is_empty() {
            continue;
        }
        writeln!(body, "        merge(&mut object, &self.{field})?;").expect("write to String");
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

/// The file header and the (apiVersion, kind) → decoder table.
fn header(roots: &[Root], structs: &PbStructs) -> String {
    let mut text = String::from(
        "//! Generated by `codegen.rs` (`KSPACES_REGEN_PROTOBUF=1 cargo test -p kspaces-apiserver --lib \
         protobuf::codegen`); do not edit.\n\n\
         use super::to_json::{Converted, DecodeFailure, ToJson, decode, merge, put};\n\
         use serde_json::{Map, Value};\n\n\
         /// Decodes one kind's protobuf message into JSON.\n\
         pub(crate) type Decoder = fn(&[u8]) -> Result<Value, DecodeFailure>;\n\n\
         /// The decoder for (apiVersion, kind), if that kind may be sent as protobuf.\n\
         pub(crate) fn decoder_for(api_version: &str, kind: &str) -> Option<Decoder> {\n\
         \x20   let decoder: Decoder = match (api_version, kind) {\n",
    );
    for root in roots {
        let path = pb_path(&root.schema_name, structs)
            .unwrap_or_else(|| format!("missing::{}", root.schema_name));
        let (api_version, kind) = (root.api_version, root.kind);
        writeln!(
            text,
            "        ({api_version:?}, {kind:?}) => decode::<{path}>,"
        )
        .expect("write to String");
    }
    text.push_str("        _ => return None,\n    };\n    Some(decoder)\n}\n");
    text
}

/// Appends one `impl ToJson` whose body puts each mapped field.
fn write_impl(text: &mut String, path: &str, body: &str) {
    let object = if body.is_empty() {
        "object"
    } else {
        "mut object"
    };
    write!(
        text,
        "\nimpl ToJson for {path} {{\n    fn to_json(&self, _keep_zero: bool) -> Converted {{\n        \
         let {object} = Map::new();\n{body}        Ok(Some(Value::Object(object)))\n    }}\n}}\n"
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
    if std::env::var_os("KSPACES_REGEN_PROTOBUF").is_some() {
        std::fs::write(GENERATED_PATH, &generated.text).expect("generated.rs is writable");
    }
    let committed = std::fs::read_to_string(GENERATED_PATH).unwrap_or_default();
    assert!(
        committed == generated.text,
        "generated.rs is stale; rerun with KSPACES_REGEN_PROTOBUF=1"
    );
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
