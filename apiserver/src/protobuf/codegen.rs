//! Writes `generated.rs`: one `ToJson` impl per k8s-pb message reachable from the kinds in [`roots`].
//!
//! JSON names come from k8s-openapi's schemars definitions; a property becomes a field when prost's snake case of
//! it (heck, as prost-build does) names a field of the k8s-pb struct, whose source is read from cargo's registry.
//! Which zero values kube keeps comes from [`super::keep_zero`]. Regenerate with
//! `KSPACES_REGEN_PROTOBUF=1 cargo test -p kspaces-apiserver --lib protobuf::codegen`; without the variable the test
//! fails when the committed file is stale.

use heck::{ToSnakeCase, ToUpperCamelCase};
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
    Root { api_version: T::API_VERSION, kind: T::KIND, schema_name: T::schema_name().into_owned() }
}

/// Every kind kubectl's typed clients (and client-go controllers) send as protobuf, plus their neighbours.
fn roots(generator: &mut SchemaGenerator) -> Vec<Root> {
    use api::{admissionregistration, apps, authentication, authorization, autoscaling, batch, certificates};
    use api::{coordination, core, discovery, events, networking, node, policy, rbac, scheduling, storage};
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
    roots.push(Root { api_version: "meta.k8s.io/v1", kind: "DeleteOptions", schema_name });
    roots
}

/// Field names of every k8s-pb struct, keyed by Rust path (`k8s_pb::api::core::v1::ConfigMap`).
type PbStructs = BTreeMap<String, BTreeSet<String>>;

/// Finds the k8s-pb sources through `cargo metadata`.
fn k8s_pb_source_dir() -> PathBuf {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let output = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--offline", "--format-version", "1", "--manifest-path", manifest])
        .output()
        .expect("cargo metadata runs");
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let packages = metadata["packages"].as_array().expect("metadata lists packages");
    let package = packages.iter().find(|package| package["name"] == "k8s-pb").expect("k8s-pb is a dependency");
    let manifest_path = PathBuf::from(package["manifest_path"].as_str().expect("manifest path"));
    manifest_path.parent().expect("manifest has a directory").join("src")
}

/// Reads every `mod.rs` under `dir`, recording each struct's prost fields.
fn parse_pb_dir(dir: &Path, module: &str, structs: &mut PbStructs) {
    for entry in std::fs::read_dir(dir).expect("k8s-pb source directory is readable") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            let name = path.file_name().and_then(|name| name.to_str()).expect("UTF-8 module name");
            parse_pb_dir(&path, &format!("{module}::{name}"), structs);
        } else if path.file_name().is_some_and(|name| name == "mod.rs" || name == "lib.rs") {
            let source = std::fs::read_to_string(&path).expect("k8s-pb source is readable");
            parse_pb_source(&source, module, structs);
        }
    }
}

/// Records `pub struct X {` and each `pub field:` that follows a `#[prost(` attribute.
fn parse_pb_source(source: &str, module: &str, structs: &mut PbStructs) {
    let mut current: Option<String> = None;
    let mut after_attribute = false;
    for line in source.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("pub struct ") {
            let name = rest.trim_end_matches(" {");
            current = Some(format!("{module}::{name}"));
            structs.entry(format!("{module}::{name}")).or_default();
        } else if line.starts_with("#[prost(") {
            after_attribute = true;
        } else if after_attribute && line.starts_with("pub ") {
            let field = line["pub ".len()..].split(':').next().unwrap_or_default();
            if let Some(current) = &current {
                structs.entry(current.clone()).or_default().insert(field.to_owned());
            }
            after_attribute = false;
        }
    }
}

/// `io.k8s.api.core.v1.ConfigMap` → `k8s_pb::api::core::v1::ConfigMap`.
fn pb_path(definition: &str) -> String {
    let rest = definition.strip_prefix("io.k8s.").unwrap_or(definition).replace('-', "_");
    let (module, name) = rest.rsplit_once('.').unwrap_or(("", &rest));
    format!("k8s_pb::{}::{}", module.replace('.', "::"), name.to_upper_camel_case())
}

/// The generator's result: the file text and what it could not map, for the report.
pub(super) struct Generated {
    pub(super) text: String,
    pub(super) unmapped_properties: Vec<String>,
    pub(super) unmapped_definitions: Vec<String>,
}

/// Builds the text of `generated.rs`.
pub(super) fn generate() -> Generated {
    let mut generator = SchemaGenerator::default();
    let roots = roots(&mut generator);
    let definitions = generator.take_definitions(false);
    let mut pb_structs = PbStructs::new();
    parse_pb_dir(&k8s_pb_source_dir(), "k8s_pb", &mut pb_structs);
    let keep_zero: BTreeSet<String> = super::keep_zero::KEEP_ZERO
        .iter()
        .flat_map(|(definition, fields)| fields.iter().map(move |field| format!("{definition}.{field}")))
        .collect();
    let mut out = Generated { text: header(&roots), unmapped_properties: vec![], unmapped_definitions: vec![] };
    for (name, schema) in &definitions {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else { continue };
        if HAND_WRITTEN.contains(&name.as_str()) {
            continue;
        }
        let path = pb_path(name);
        let Some(fields) = pb_structs.get(&path) else {
            out.unmapped_definitions.push(name.clone());
            continue;
        };
        let mut body = String::new();
        for property in properties.keys() {
            let snake = property.to_snake_case();
            let Some(field) = fields.iter().find(|field| field.trim_start_matches("r#") == snake) else {
                if !matches!(property.as_str(), "apiVersion" | "kind") {
                    out.unmapped_properties.push(format!("{name}.{property}"));
                }
                continue;
            };
            let keep = keep_zero.contains(&format!("{name}.{property}"));
            writeln!(body, "        put(&mut object, {property:?}, &self.{field}, {keep})?;").expect("write to String");
        }
        write_impl(&mut out.text, &path, &body);
    }
    out
}

/// The file header and the (apiVersion, kind) → decoder table.
fn header(roots: &[Root]) -> String {
    let mut text = String::from(
        "//! Generated by `codegen.rs` (`KSPACES_REGEN_PROTOBUF=1 cargo test -p kspaces-apiserver --lib \
         protobuf::codegen`); do not edit.\n\n\
         use super::to_json::{Converted, DecodeFailure, ToJson, decode, put};\n\
         use serde_json::{Map, Value};\n\n\
         /// Decodes one kind's protobuf message into JSON.\n\
         pub(crate) type Decoder = fn(&[u8]) -> Result<Value, DecodeFailure>;\n\n\
         /// The decoder for (apiVersion, kind), if that kind may be sent as protobuf.\n\
         pub(crate) fn decoder_for(api_version: &str, kind: &str) -> Option<Decoder> {\n\
         \x20   let decoder: Decoder = match (api_version, kind) {\n",
    );
    for root in roots {
        let (api_version, kind, path) = (root.api_version, root.kind, pb_path(&root.schema_name));
        writeln!(text, "        ({api_version:?}, {kind:?}) => decode::<{path}>,").expect("write to String");
    }
    text.push_str("        _ => return None,\n    };\n    Some(decoder)\n}\n");
    text
}

/// Appends one `impl ToJson` whose body puts each mapped field.
fn write_impl(text: &mut String, path: &str, body: &str) {
    let object = if body.is_empty() { "object" } else { "mut object" };
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
    eprintln!("unmapped definitions: {:#?}", generated.unmapped_definitions);
    eprintln!("unmapped properties: {:#?}", generated.unmapped_properties);
    if std::env::var_os("KSPACES_REGEN_PROTOBUF").is_some() {
        std::fs::write(GENERATED_PATH, &generated.text).expect("generated.rs is writable");
    }
    let committed = std::fs::read_to_string(GENERATED_PATH).unwrap_or_default();
    assert!(committed == generated.text, "generated.rs is stale; rerun with KSPACES_REGEN_PROTOBUF=1");
    assert!(generated.unmapped_definitions.is_empty(), "definitions without a k8s-pb struct");
}

#[test]
fn pb_paths_follow_prost_naming() {
    assert_eq!(pb_path("io.k8s.api.core.v1.ConfigMap"), "k8s_pb::api::core::v1::ConfigMap");
    assert_eq!(
        pb_path("io.k8s.api.core.v1.AWSElasticBlockStoreVolumeSource"),
        "k8s_pb::api::core::v1::AwsElasticBlockStoreVolumeSource"
    );
    assert_eq!(
        pb_path("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
        "k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta"
    );
}
