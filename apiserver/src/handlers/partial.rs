//! The metadata-only forms a client asks for with `Accept: …;as=PartialObjectMetadata(List);g=meta.k8s.io;v=…`
//! (client-go's metadata client, kube-rs `Api::*_metadata`, `metadata_watcher`): kind, apiVersion and `metadata`,
//! for built-in and custom resources alike.

use serde_json::Value;

use crate::negotiate::MetaVersion;
use crate::registry::ResourceInfo;
use crate::status::ApiError;

/// One object as `PartialObjectMetadata`.
pub fn object(object: &Value, version: MetaVersion) -> Value {
    version.partial_object(object)
}

/// A list as `PartialObjectMetadataList`: the list's metadata, and each item as `PartialObjectMetadata`.
pub fn list(items: &[Value], list_metadata: Value, version: MetaVersion) -> Value {
    list_of(items.iter().map(|item| object(item, version)).collect(), list_metadata, version)
}

/// A `PartialObjectMetadataList` of items already in their metadata form (`object`).
pub fn list_of(items: Vec<Value>, list_metadata: Value, version: MetaVersion) -> Value {
    let mut list = version.envelope("PartialObjectMetadataList", "items", Value::Array(items));
    list["metadata"] = list_metadata;
    list
}

/// `as=PartialObjectMetadataList` on a single object: kube's 406 names the object's Go type.
pub fn not_a_list(resource: &ResourceInfo) -> ApiError {
    ApiError::new(406, "NotAcceptable", format!(
        "you requested PartialObjectMetadataList, but the requested object is not a list ({})", go_type(resource, false)))
}

/// `as=PartialObjectMetadata` on a list: kube's 406 names the list's Go type.
pub fn a_list(resource: &ResourceInfo) -> ApiError {
    ApiError::new(406, "NotAcceptable", format!(
        "you requested PartialObjectMetadata, but the requested object is a list ({})", go_type(resource, true)))
}

/// The Go type kube-apiserver's message would print: the internal type of a built-in kind (`*core.ConfigMap`,
/// `*apps.DeploymentList`), `*unstructured.Unstructured(List)` for custom resources.
fn go_type(resource: &ResourceInfo, list: bool) -> String {
    let suffix = if list { "List" } else { "" };
    if resource.custom.is_some() {
        return format!("*unstructured.Unstructured{suffix}");
    }
    let package = match resource.group.split('.').next() {
        None | Some("") => "core",
        Some(first) => first,
    };
    format!("*{package}.{}{suffix}", resource.kind)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn objects_and_lists_keep_only_metadata() {
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"}},
            "data": {"secret": "s"}});
        assert_eq!(object(&config_map, MetaVersion::V1),
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "a", "labels": {"x": "y"}}}));
        assert_eq!(object(&json!({"spec": {}}), MetaVersion::V1beta1)["metadata"], json!({}));
        let listed = list(&[config_map], json!({"resourceVersion": "7"}), MetaVersion::V1beta1);
        assert_eq!(listed["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(listed["kind"], "PartialObjectMetadataList");
        assert_eq!(listed["metadata"], json!({"resourceVersion": "7"}));
        assert_eq!(listed["items"][0], json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1beta1",
            "metadata": {"name": "a", "labels": {"x": "y"}}}));
        assert_eq!(list(&[], json!({}), MetaVersion::V1)["items"], json!([]));
    }
}
