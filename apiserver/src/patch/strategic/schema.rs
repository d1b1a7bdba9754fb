//! Where strategic merge patch learns how each field merges: the `PatchSchema` trait and its OpenAPI implementation.
//!
//! Strategic merge patch reads only two extensions, exactly as kube-apiserver does:
//! `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key`. The server-side-apply
//! extensions `x-kubernetes-list-type` and `x-kubernetes-list-map-keys` are parsed and exposed on
//! [`FieldPatchMeta`] for callers that want them, but the merge never consults them: a field with
//! `list-type: map` and no patch strategy is replaced wholesale by SMP in Kubernetes too, because
//! the upstream implementation uses the Go struct tags `patchStrategy`/`patchMergeKey` only.

use serde_json::{Map, Value};

/// How a field's value combines with the patch, from `x-kubernetes-patch-strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PatchStrategy {
    /// No strategy: objects are merged key by key, lists are replaced by the patch's list.
    #[default]
    Default,
    /// `merge`: lists are merged (by merge key for lists of objects, by value for primitives).
    Merge,
    /// `replace`: the patch's value replaces the field, objects included.
    Replace,
}

/// The server-side-apply list type, carried for information only (SMP ignores it, see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListType {
    /// `atomic`: the list is one value.
    Atomic,
    /// `set`: a list of unique primitives.
    Set,
    /// `map`: a list of objects keyed by `x-kubernetes-list-map-keys`.
    Map,
}

/// Patch metadata of one field, as declared by the schema of the object that holds it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldPatchMeta {
    /// The merge/replace part of `x-kubernetes-patch-strategy`.
    pub strategy: PatchStrategy,
    /// Whether `x-kubernetes-patch-strategy` also names `retainKeys`. Applying a patch is driven
    /// by the `$retainKeys` directive in the patch itself; this flag only tells patch generators
    /// when to emit it.
    pub retain_keys: bool,
    /// `x-kubernetes-patch-merge-key`: the field that identifies an item of a merged list of objects.
    pub merge_key: Option<String>,
    /// `x-kubernetes-list-type`, informational.
    pub list_type: Option<ListType>,
    /// `x-kubernetes-list-map-keys`, informational.
    pub list_map_keys: Vec<String>,
}

/// What a schema knows about one field of an object: its metadata and the schema of its value.
pub struct FieldSchema<'s> {
    /// How the field merges.
    pub meta: FieldPatchMeta,
    /// Whether the field's schema is an array.
    pub is_list: bool,
    /// The schema of the field's value, or of each item when the field is a list.
    pub child: Box<dyn PatchSchema + 's>,
}

/// Patch metadata for an object node, looked up field by field as the merge descends.
///
/// Kept as a trait so the merge does not depend on where metadata comes from: the served OpenAPI
/// documents today, perhaps compiled-in tables or CRD schemas later.
pub trait PatchSchema {
    /// Metadata and child schema of `field`, `Ok(None)` when the schema does not know the field
    /// (it then merges like JSON merge patch: objects merged, lists replaced).
    fn field(&self, field: &str) -> Result<Option<FieldSchema<'_>>, SchemaError>;
}

/// A schema that knows no field: everything merges like JSON merge patch.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnknownSchema;

impl PatchSchema for UnknownSchema {
    fn field(&self, _field: &str) -> Result<Option<FieldSchema<'_>>, SchemaError> {
        Ok(None)
    }
}

/// The schema itself is broken (a dangling `$ref`, a bad extension value): a server bug, not a client error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid patch schema: {0}")]
pub struct SchemaError(pub String);

/// How deep `$ref`/`allOf` chains are followed before the schema is declared cyclic.
const MAX_REF_DEPTH: usize = 64;

/// A [`PatchSchema`] over an OpenAPI v3 `components.schemas` map (or a v2 `definitions` map).
///
/// It follows `$ref` (`#/components/schemas/<name>` and `#/definitions/<name>`), `allOf`
/// wrappers (the first element, as kube does), `properties`, `items` and `additionalProperties`.
#[derive(Debug, Clone, Copy)]
pub struct DefinitionsSchema<'a> {
    definitions: &'a Map<String, Value>,
    node: Option<&'a Value>,
}

impl<'a> DefinitionsSchema<'a> {
    /// The schema of definition `name`, e.g. `io.k8s.api.apps.v1.Deployment`.
    pub fn new(definitions: &'a Map<String, Value>, name: &str) -> Result<Self, SchemaError> {
        let node = definitions
            .get(name)
            .ok_or_else(|| SchemaError(format!("no definition named {name:?}")))?;
        Self::at(definitions, node)
    }

    /// The schema rooted at an arbitrary node, resolved through `$ref` and `allOf`.
    fn at(definitions: &'a Map<String, Value>, node: &'a Value) -> Result<Self, SchemaError> {
        let node = resolve(definitions, node)?;
        Ok(DefinitionsSchema {
            definitions,
            node: Some(node),
        })
    }

    /// The unresolved schema node of `field`: a named property, else `additionalProperties`.
    fn field_node(&self, field: &str) -> Option<&'a Value> {
        let node = self.node?;
        if let Some(property) = node.get("properties").and_then(|p| p.get(field)) {
            return Some(property);
        }
        node.get("additionalProperties").filter(|a| a.is_object())
    }
}

impl PatchSchema for DefinitionsSchema<'_> {
    fn field(&self, field: &str) -> Result<Option<FieldSchema<'_>>, SchemaError> {
        let Some(field_node) = self.field_node(field) else {
            return Ok(None);
        };
        let meta = field_meta(field_node)?;
        let resolved = resolve(self.definitions, field_node)?;
        let items = resolved.get("items").filter(|i| i.is_object());
        let is_list =
            resolved.get("type").and_then(Value::as_str) == Some("array") || items.is_some();
        let child: Box<dyn PatchSchema + '_> = match (is_list, items) {
            (true, Some(items)) => Box::new(Self::at(self.definitions, items)?),
            (true, None) => Box::new(UnknownSchema),
            (false, _) => Box::new(DefinitionsSchema {
                definitions: self.definitions,
                node: Some(resolved),
            }),
        };
        Ok(Some(FieldSchema {
            meta,
            is_list,
            child,
        }))
    }
}

/// Follows `allOf[0]` and `$ref` until a concrete schema node is reached.
fn resolve<'a>(
    definitions: &'a Map<String, Value>,
    mut node: &'a Value,
) -> Result<&'a Value, SchemaError> {
    for _ in 0..MAX_REF_DEPTH {
        if let Some(first) = node
            .get("allOf")
            .and_then(Value::as_array)
            .and_then(|all| all.first())
        {
            node = first;
            continue;
        }
        let Some(reference) = node.get("$ref").and_then(Value::as_str) else {
            return Ok(node);
        };
        let name = reference
            .strip_prefix("#/components/schemas/")
            .or_else(|| reference.strip_prefix("#/definitions/"))
            .ok_or_else(|| SchemaError(format!("unsupported $ref {reference:?}")))?;
        let name = name.replace("~1", "/").replace("~0", "~");
        node = definitions
            .get(&name)
            .ok_or_else(|| SchemaError(format!("unresolved $ref {reference:?}")))?;
    }
    Err(SchemaError(
        "$ref/allOf chain too deep (cyclic?)".to_owned(),
    ))
}

/// Reads the patch and list extensions of a property node (before `$ref` resolution, where kube reads them).
fn field_meta(node: &Value) -> Result<FieldPatchMeta, SchemaError> {
    let mut meta = FieldPatchMeta::default();
    if let Some(strategy) = string_extension(node, "x-kubernetes-patch-strategy")? {
        (meta.strategy, meta.retain_keys) = parse_strategy(strategy)?;
    }
    meta.merge_key = string_extension(node, "x-kubernetes-patch-merge-key")?.map(str::to_owned);
    meta.list_type = match string_extension(node, "x-kubernetes-list-type")? {
        None => None,
        Some("atomic") => Some(ListType::Atomic),
        Some("set") => Some(ListType::Set),
        Some("map") => Some(ListType::Map),
        Some(other) => {
            return Err(SchemaError(format!(
                "unknown x-kubernetes-list-type {other:?}"
            )))
        }
    };
    if let Some(keys) = node
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
    {
        meta.list_map_keys = keys
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
    }
    Ok(meta)
}

fn string_extension<'v>(node: &'v Value, name: &str) -> Result<Option<&'v str>, SchemaError> {
    match node.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(SchemaError(format!("{name} must be a string, got {other}"))),
    }
}

/// Parses `merge`, `replace`, `retainKeys` and comma-separated pairs such as `merge,retainKeys`.
pub(crate) fn parse_strategy(text: &str) -> Result<(PatchStrategy, bool), SchemaError> {
    let mut strategy = PatchStrategy::Default;
    let mut retain_keys = false;
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    if parts.len() > 2 {
        return Err(SchemaError(format!("unexpected patch strategy {text:?}")));
    }
    for part in parts {
        match part {
            "retainKeys" if !retain_keys => retain_keys = true,
            "merge" if strategy == PatchStrategy::Default => strategy = PatchStrategy::Merge,
            "replace" if strategy == PatchStrategy::Default => strategy = PatchStrategy::Replace,
            _ => return Err(SchemaError(format!("unexpected patch strategy {text:?}"))),
        }
    }
    Ok((strategy, retain_keys))
}
