//! kcp's names as kspaces writes and reads them: the LogicalCluster of every space, the annotations the server
//! owns, the hashes kcp names exports and workspaces by, and an APIResourceSchema read as the CRD it stands for.

use kspaces_crd::definition::{self, Definition};
use serde_json::{json, Value};
use sha2::{Digest, Sha224};

use crate::status::Cause;

/// kcp's API group of exports, bindings and schemas.
pub const APIS_GROUP: &str = "apis.kcp.io";
/// The name of the one LogicalCluster in every space.
pub const LOGICAL_CLUSTER_NAME: &str = "cluster";
/// Where a LogicalCluster lists every resource an APIBinding ever bound in its space (`{group, resource, schema,
/// schemaCluster, UID, identityHash}`), written by the APIs controller: what emptying the space deletes besides
/// what its bindings bind now (`Resolver::stored_in`).
pub const BOUND_RESOURCES: &str = "/status/boundResources";
/// The policy a new tenant space starts with.
pub const DEFAULT_CRD_POLICY: &str = "LocalCRDFirst";
/// kcp's workspace path of the logical cluster an object lives in (`LogicalCluster`, and kcp's path annotation).
pub const PATH_ANNOTATION: &str = "kcp.io/path";
/// The annotation of a LogicalCluster naming its workspace's type (kcp's).
pub const TYPE_ANNOTATION: &str = "internal.tenancy.kcp.io/type";
/// The creator of a workspace, as JSON `UserInfo` (kcp's annotation).
pub const OWNER_ANNOTATION: &str = "experimental.tenancy.kcp.io/owner";

/// kcp's hash naming an export in labels: `Base62(Sha224("<cluster>:<name>"))`.
pub fn export_hash(cluster: &str, name: &str) -> String {
    base62(&Sha224::digest(format!("{cluster}:{name}").as_bytes()))
}

/// Big-endian base 36 of `bytes`, lower case.
pub fn base36(bytes: &[u8]) -> String {
    in_base(bytes, b"0123456789abcdefghijklmnopqrstuvwxyz")
}

/// Big-endian base 62 of `bytes`, with Go's `big.Int.Text(62)` digits (kcp's `ToBase62`).
pub fn base62(bytes: &[u8]) -> String {
    in_base(bytes, b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
}

fn in_base(bytes: &[u8], alphabet: &[u8]) -> String {
    let base = alphabet.len() as u32;
    let mut digits: Vec<u8> = Vec::new();
    let mut number: Vec<u32> = bytes.iter().map(|b| *b as u32).collect();
    while number.iter().any(|d| *d != 0) {
        let mut remainder = 0u32;
        for digit in number.iter_mut() {
            let value = remainder * 256 + *digit;
            *digit = value / base;
            remainder = value % base;
        }
        digits.push(alphabet[remainder as usize]);
    }
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}

/// The CustomResourceDefinition a schema stands for: named `<plural>.<group>`, with the schema's uid, each
/// version's `schema` wrapped as `openAPIV3Schema`. What the resolver compiles for a binding, and what
/// validation checks.
pub fn as_crd(schema: &Value) -> Value {
    let spec = schema.get("spec").cloned().unwrap_or_else(|| json!({}));
    let text = |pointer: &str| spec.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_owned();
    let versions: Vec<Value> = spec.get("versions").and_then(Value::as_array).into_iter().flatten().map(|version| {
        let mut version = version.clone();
        if let Some(map) = version.as_object_mut() {
            let openapi = map.remove("schema").unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
            map.insert("schema".into(), json!({"openAPIV3Schema": openapi}));
        }
        version
    }).collect();
    let mut crd_spec = spec.as_object().cloned().unwrap_or_default();
    crd_spec.remove("nameValidation");
    crd_spec.insert("versions".into(), json!(versions));
    let mut crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}.{}", text("/names/plural"), text("/group")), "uid": schema.pointer("/metadata/uid").cloned().unwrap_or(Value::Null)},
        "spec": crd_spec,
    });
    definition::defaults(&mut crd);
    crd
}

/// The schema compiled as a CRD's definition, or its problems at the schema's own field paths.
pub fn parse(schema: &Value) -> Result<Definition, Vec<Cause>> {
    Definition::parse(&as_crd(schema)).map_err(|errors| errors.into_iter().map(|error| {
        let mut cause = Cause::from(error);
        cause.field = cause.field.replace(".schema.openAPIV3Schema", ".schema");
        cause
    }).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_export_label_is_kcps_base62_sha224() {
        // Go: new(big.Int).SetBytes(sha256.Sum224([]byte("root:widgets"))).Text(62), as Python's int reckons it.
        assert_eq!(export_hash("root", "widgets"), "1oNwKzCPVdx8ged3ajqEGHgS4wYwVD4iICmHKO");
        assert_eq!(base62(&[0, 61]), "Z");
        assert_eq!(base62(&[0, 62]), "10");
    }
}
