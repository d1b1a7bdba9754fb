//! `Definition`: a CustomResourceDefinition as the server serves it, parsed and validated once per write of
//! the CRD object (`apiextensions.k8s.io/v1`).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use crate::cost;
use crate::structural::Structural;
use crate::FieldError;

/// The label a system CRD carries to be forced on every tenant in its range (Arktos' key; the value is
/// compared case-insensitively).
pub const FORCED_LABEL: &str = "arktos.futurewei.com/crd-sharing-policy";
/// The annotation bounding the tenants a system CRD applies to: a label selector over Tenant labels.
pub const APPLICABLE_TENANTS: &str = "crd.kspaces.io/applicable-tenants";
/// The finalizer that holds a deleted CRD until its objects are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Where a CRD's objects live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Namespaced,
    /// Cluster-scoped within the CRD's space (Arktos' `Tenant` scope means the same).
    Cluster,
}

/// `spec.names`, with kube's defaults filled in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
}

/// The `scale` subresource's paths (`.spec.replicas` style JSON paths).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

/// One entry of `spec.versions`.
#[derive(Clone)]
pub struct Version {
    pub name: String,
    pub served: bool,
    pub storage: bool,
    pub deprecated: bool,
    /// The `Warning` a request of a deprecated version gets.
    pub deprecation_warning: Option<String>,
    pub schema: Arc<Structural>,
    pub status: bool,
    pub scale: Option<ScalePaths>,
    /// `additionalPrinterColumns`, as given.
    pub printer_columns: Vec<Value>,
}

impl std::fmt::Debug for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Version").field("name", &self.name).field("served", &self.served).field("storage", &self.storage).finish()
    }
}

/// A parsed, valid CRD.
#[derive(Clone, Debug)]
pub struct Definition {
    /// `<plural>.<group>`
    pub name: String,
    pub uid: String,
    pub group: String,
    pub names: Names,
    pub scope: Scope,
    pub versions: Vec<Version>,
    /// Labelled `arktos.futurewei.com/crd-sharing-policy: forced` (meaningful for system CRDs only).
    pub forced: bool,
    /// The `crd.kspaces.io/applicable-tenants` selector, if any.
    pub applicable_tenants: Option<String>,
    /// Has a deletion timestamp: no longer served for new objects, its objects are being deleted.
    pub terminating: bool,
    /// `spec.conversion`: how objects change version.
    pub conversion: Conversion,
}

/// `spec.conversion.strategy`.
#[derive(Clone, Debug, PartialEq)]
pub enum Conversion {
    /// Only `apiVersion` changes.
    None,
    /// A `ConversionReview` to the webhook of `spec.conversion.webhook.clientConfig` (kept as given: the server
    /// checks and calls it; this crate does no IO).
    Webhook { client_config: Value },
}

impl Definition {
    /// Parses and validates a CRD object (after the server filled in its defaults, see [`defaults`]).
    pub fn parse(crd: &Value) -> Result<Definition, Vec<FieldError>> {
        let mut errors = Vec::new();
        let text = |pointer: &str| crd.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_owned();
        let name = text("/metadata/name");
        let group = text("/spec/group");
        let plural = text("/spec/names/plural");
        let kind = text("/spec/names/kind");
        if group.is_empty() {
            errors.push(FieldError::required("spec.group", ""));
        } else if !is_dns_subdomain(&group) || !group.contains('.') {
            errors.push(FieldError::invalid("spec.group", format!("{group:?}"), "should be a domain with at least one dot"));
        }
        if plural.is_empty() {
            errors.push(FieldError::required("spec.names.plural", ""));
        } else if !is_dns_label(&plural) {
            errors.push(FieldError::invalid("spec.names.plural", format!("{plural:?}"), DNS_LABEL));
        }
        if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
            errors.push(FieldError::invalid("metadata.name", format!("{name:?}"), "must be spec.names.plural+\".\"+spec.group"));
        }
        if kind.is_empty() {
            errors.push(FieldError::required("spec.names.kind", ""));
        } else if !is_kind(&kind) {
            errors.push(FieldError::invalid("spec.names.kind", format!("{kind:?}"), KIND));
        }
        let singular = Some(text("/spec/names/singular")).filter(|s| !s.is_empty()).unwrap_or_else(|| kind.to_ascii_lowercase());
        if !singular.is_empty() && !is_dns_label(&singular) {
            errors.push(FieldError::invalid("spec.names.singular", format!("{singular:?}"), DNS_LABEL));
        }
        let list_kind = Some(text("/spec/names/listKind")).filter(|s| !s.is_empty()).unwrap_or_else(|| format!("{kind}List"));
        if !list_kind.is_empty() && !is_kind(&list_kind) {
            errors.push(FieldError::invalid("spec.names.listKind", format!("{list_kind:?}"), KIND));
        } else if list_kind == kind && !kind.is_empty() {
            errors.push(FieldError::invalid("spec.names.listKind", format!("{list_kind:?}"), "kind and listKind may not be the same"));
        }
        let short_names = strings(crd.pointer("/spec/names/shortNames"), "spec.names.shortNames", &mut errors);
        let categories = strings(crd.pointer("/spec/names/categories"), "spec.names.categories", &mut errors);
        let scope = match crd.pointer("/spec/scope").and_then(Value::as_str) {
            Some("Namespaced") => Scope::Namespaced,
            Some("Cluster" | "Tenant") => Scope::Cluster,
            Some(other) => {
                errors.push(FieldError::not_supported("spec.scope", format!("{other:?}"), &["Cluster".into(), "Namespaced".into(), "Tenant".into()]));
                Scope::Namespaced
            }
            None => {
                errors.push(FieldError::required("spec.scope", ""));
                Scope::Namespaced
            }
        };
        let conversion = parse_conversion(crd, &mut errors);
        let versions = parse_versions(crd, &mut errors);
        if !errors.is_empty() {
            return Err(errors);
        }
        let labels = crd.pointer("/metadata/labels");
        let forced = labels.and_then(|l| l.get(FORCED_LABEL)).and_then(Value::as_str).is_some_and(|v| v.eq_ignore_ascii_case("forced"));
        let applicable_tenants = crd
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(APPLICABLE_TENANTS))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        Ok(Definition {
            name,
            uid: text("/metadata/uid"),
            group,
            names: Names { plural, singular, kind, list_kind, short_names, categories },
            scope,
            versions,
            forced,
            applicable_tenants,
            terminating: crd.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()),
            conversion,
        })
    }

    /// The version objects are stored in.
    pub fn storage_version(&self) -> Option<&Version> {
        self.versions.iter().find(|v| v.storage)
    }

    pub fn version(&self, name: &str) -> Option<&Version> {
        self.versions.iter().find(|v| v.name == name)
    }
}

/// `spec.conversion`, checked as kube's `validateCustomResourceConversion` does (for `apiextensions.k8s.io/v1`'s
/// field paths); `clientConfig` itself is the server's to check (URL, service, caBundle, where it may call).
/// kspaces speaks `ConversionReview` v1 only, so `conversionReviewVersions` must list it.
fn parse_conversion(crd: &Value, errors: &mut Vec<FieldError>) -> Conversion {
    let webhook = crd.pointer("/spec/conversion/webhook").filter(|w| !w.is_null());
    match crd.pointer("/spec/conversion/strategy").and_then(Value::as_str) {
        None | Some("None") => {
            if webhook.is_some() {
                errors.push(FieldError::forbidden("spec.conversion.webhook", "should not be set when strategy is not set to Webhook"));
            }
            Conversion::None
        }
        Some("Webhook") => {
            let Some(webhook) = webhook else {
                errors.push(FieldError::required("spec.conversion.webhook", "required when strategy is set to Webhook"));
                return Conversion::None;
            };
            let client_config = webhook.get("clientConfig").filter(|c| c.is_object()).cloned();
            if client_config.is_none() {
                errors.push(FieldError::required("spec.conversion.webhook.clientConfig", "required when strategy is set to Webhook"));
            }
            let field = "spec.conversion.webhook.conversionReviewVersions";
            let versions = webhook.get("conversionReviewVersions").and_then(Value::as_array).cloned().unwrap_or_default();
            let mut seen = BTreeSet::new();
            for (i, version) in versions.iter().enumerate() {
                let text = version.as_str().unwrap_or_default();
                if !seen.insert(text) {
                    errors.push(FieldError::invalid(format!("{field}[{i}]"), format!("{text:?}"), "duplicate version"));
                } else if !is_dns_label(text) {
                    errors.push(FieldError::invalid(format!("{field}[{i}]"), format!("{text:?}"), DNS_LABEL));
                }
            }
            if versions.is_empty() {
                errors.push(FieldError::required(field, "must include at least one of v1"));
            } else if !seen.contains("v1") {
                let listed: Vec<&str> = seen.iter().copied().collect();
                errors.push(FieldError::invalid(field, format!("{listed:?}"), "must include at least one of v1 (kspaces sends ConversionReview v1 only)"));
            }
            client_config.map_or(Conversion::None, |client_config| Conversion::Webhook { client_config })
        }
        Some(other) => {
            errors.push(FieldError::not_supported("spec.conversion.strategy", format!("{other:?}"), &["None".into(), "Webhook".into()]));
            Conversion::None
        }
    }
}

/// kube's static limits on the estimated cost of a CRD's CEL rules, checked when a CRD is written (not when a
/// stored one is loaded): every rule of every version, and each version's schema in total. On an update
/// (`old`), a rule already in the old CRD is not held to the per-rule limit and a version's total only when it
/// grew, so a CRD stored before the limits (or one they would now refuse) can still be changed.
pub fn cost_errors(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
    for (i, entry) in versions.into_iter().flatten().enumerate() {
        let Some(schema) = entry.pointer("/schema/openAPIV3Schema").filter(|s| s.is_object()) else { continue };
        let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
        let model = cost::CostModel::of(schema, &path);
        if !model.has_rules() {
            continue;
        }
        let name = entry.get("name");
        let old_schema = old
            .and_then(|o| o.pointer("/spec/versions"))
            .and_then(Value::as_array)
            .and_then(|v| v.iter().find(|e| e.get("name") == name))
            .and_then(|e| e.pointer("/schema/openAPIV3Schema"));
        let previous_total = old_schema.map(|o| cost::static_total(&cost::CostModel::of(o, &path)));
        let preexisting = |rule: &str| old.is_some_and(|o| cost::has_rule(o, rule, 0));
        errors.extend(cost::check_static(&model, &path, previous_total, &preexisting));
        errors.extend(cost::check_constructions(&model));
    }
    errors
}

/// Fills in what kube defaults in a CRD: `names.singular`, `names.listKind`, `conversion.strategy`.
pub fn defaults(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else { return };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names.get("kind").and_then(Value::as_str).unwrap_or_default().to_owned();
        if !kind.is_empty() {
            if names.get("singular").and_then(Value::as_str).is_none_or(str::is_empty) {
                names.insert("singular".into(), Value::String(kind.to_ascii_lowercase()));
            }
            if names.get("listKind").and_then(Value::as_str).is_none_or(str::is_empty) {
                names.insert("listKind".into(), Value::String(format!("{kind}List")));
            }
        }
    }
    if !spec.get("conversion").is_some_and(Value::is_object) {
        spec.insert("conversion".into(), serde_json::json!({"strategy": "None"}));
    }
}

fn parse_versions(crd: &Value, errors: &mut Vec<FieldError>) -> Vec<Version> {
    let Some(entries) = crd.pointer("/spec/versions").and_then(Value::as_array).filter(|v| !v.is_empty()) else {
        errors.push(FieldError::required("spec.versions", "must have exactly one version marked as storage version"));
        return Vec::new();
    };
    let mut versions = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, entry) in entries.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        let name = entry.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
        if name.is_empty() {
            errors.push(FieldError::required(format!("{path}.name"), ""));
        } else if !is_dns_label(&name) {
            errors.push(FieldError::invalid(format!("{path}.name"), format!("{name:?}"), DNS_LABEL));
        } else if !seen.insert(name.clone()) {
            errors.push(FieldError::duplicate(format!("{path}.name"), format!("{name:?}")));
        }
        let flag = |field: &str| entry.get(field).and_then(Value::as_bool).unwrap_or(false);
        let schema_path = format!("{path}.schema.openAPIV3Schema");
        let schema = match entry.pointer("/schema/openAPIV3Schema") {
            None | Some(Value::Null) => {
                errors.push(FieldError::required(schema_path, "schemas are required"));
                None
            }
            Some(schema) => match Structural::compile(schema, &schema_path) {
                Ok(structural) => Some(Arc::new(structural)),
                Err(mut found) => {
                    errors.append(&mut found);
                    None
                }
            },
        };
        let scale = entry.pointer("/subresources/scale").filter(|s| !s.is_null()).map(|scale| {
            let mut scale_path = |field: &str, prefix: &str, required: bool| -> Option<String> {
                let value = scale.get(field).and_then(Value::as_str).map(str::to_owned);
                match &value {
                    None if required => errors.push(FieldError::required(format!("{path}.subresources.scale.{field}"), "")),
                    Some(p) if !p.starts_with(prefix) || p.len() <= prefix.len() => errors.push(FieldError::invalid(
                        format!("{path}.subresources.scale.{field}"),
                        format!("{p:?}"),
                        format!("should be a json path under {prefix}"),
                    )),
                    _ => {}
                }
                value
            };
            ScalePaths {
                spec_replicas: scale_path("specReplicasPath", ".spec.", true).unwrap_or_default(),
                status_replicas: scale_path("statusReplicasPath", ".status.", true).unwrap_or_default(),
                label_selector: scale_path("labelSelectorPath", ".status.", false),
            }
        });
        let printer_columns = entry.get("additionalPrinterColumns").and_then(Value::as_array).cloned().unwrap_or_default();
        for (c, column) in printer_columns.iter().enumerate() {
            let field = |f: &str| format!("{path}.additionalPrinterColumns[{c}].{f}");
            for required in ["name", "type", "jsonPath"] {
                if column.get(required).and_then(Value::as_str).is_none_or(str::is_empty) {
                    errors.push(FieldError::required(field(required), ""));
                }
            }
            if let Some(kind) = column.get("type").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                let types = ["integer", "number", "string", "boolean", "date"];
                if !types.contains(&kind) {
                    errors.push(FieldError::not_supported(field("type"), format!("{kind:?}"), &types.map(String::from)));
                }
            }
        }
        if let Some(schema) = schema {
            versions.push(Version {
                name,
                served: flag("served"),
                storage: flag("storage"),
                deprecated: flag("deprecated"),
                deprecation_warning: entry.get("deprecationWarning").and_then(Value::as_str).map(str::to_owned),
                schema,
                status: entry.pointer("/subresources/status").is_some_and(|s| !s.is_null()),
                scale,
                printer_columns,
            });
        }
    }
    let storage = entries.iter().filter(|e| e.get("storage").and_then(Value::as_bool) == Some(true)).count();
    if storage != 1 {
        errors.push(FieldError::invalid(
            "spec.versions",
            "[]apiextensions.CustomResourceDefinitionVersion{...}",
            "must have exactly one version marked as storage version",
        ));
    }
    versions
}

fn strings(value: Option<&Value>, path: &str, errors: &mut Vec<FieldError>) -> Vec<String> {
    let mut out = Vec::new();
    for (i, item) in value.and_then(Value::as_array).into_iter().flatten().enumerate() {
        match item.as_str() {
            Some(s) if is_dns_label(s) => out.push(s.to_owned()),
            _ => errors.push(FieldError::invalid(format!("{path}[{i}]"), item, DNS_LABEL)),
        }
    }
    out
}

const DNS_LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const KIND: &str = "must start with a letter and consist of alphanumeric characters";

fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns_label)
}

fn is_kind(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic()) && s.chars().all(|c| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crontab() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com", "uid": "u1"},
            "spec": {
                "group": "stable.example.com",
                "scope": "Namespaced",
                "names": {"plural": "crontabs", "kind": "CronTab", "shortNames": ["ct"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}},
                     "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}},
                    {"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
                     "schema": {"openAPIV3Schema": {"type": "object"}}},
                ],
            },
        })
    }

    /// `crontab()` with `rule` on `spec`, over a list `items` of integers bounded by `max_items` when given.
    fn crontab_with_rule(rule: &str, max_items: Option<u64>) -> Value {
        let mut crd = crontab();
        let mut items = json!({"type": "array", "items": {"type": "integer"}});
        if let Some(max) = max_items {
            items["maxItems"] = json!(max);
        }
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] =
            json!({"type": "object", "x-kubernetes-validations": [{"rule": rule}], "properties": {"items": items}});
        crd
    }

    #[test]
    fn costly_rules_are_refused_on_writes_but_stored_ones_still_load_and_update() {
        let costly = "self.items.all(a, self.items.all(b, a != b || a == b))";
        let stored = crontab_with_rule(costly, None);
        let refused = cost_errors(&stored, None);
        assert!(refused.iter().any(|e| e.field == "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
            && e.message.contains("estimated rule cost exceeds budget")), "{refused:?}");
        assert!(Definition::parse(&stored).is_ok(), "a stored CRD past the limits still loads");
        let mut relabelled = stored.clone();
        relabelled["metadata"]["labels"] = json!({"a": "b"});
        assert_eq!(cost_errors(&relabelled, Some(&stored)), Vec::new(), "an update keeping its rules");
        let worse = crontab_with_rule("self.items.all(a, self.items.all(b, self.items.all(c, a != b || b != c)))", None);
        assert!(!cost_errors(&worse, Some(&stored)).is_empty(), "a new costly rule on update");
        assert_eq!(cost_errors(&crontab_with_rule(costly, Some(100)), None), Vec::new(), "bounded by maxItems");
    }

    #[test]
    fn parses_names_versions_and_subresources_with_defaults() {
        let mut crd = crontab();
        defaults(&mut crd);
        assert_eq!(crd["spec"]["conversion"]["strategy"], "None");
        let definition = Definition::parse(&crd).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(definition.names.singular, "crontab");
        assert_eq!(definition.names.list_kind, "CronTabList");
        assert_eq!(definition.names.short_names, ["ct"]);
        assert_eq!(definition.scope, Scope::Namespaced);
        assert_eq!(definition.storage_version().map(|v| v.name.as_str()), Some("v1"));
        let v1 = definition.version("v1").unwrap_or_else(|| panic!("v1"));
        assert!(v1.status);
        assert_eq!(v1.scale.as_ref().map(|s| s.spec_replicas.as_str()), Some(".spec.replicas"));
        assert!(definition.version("v1beta1").is_some_and(|v| v.deprecated && !v.status));
        assert!(!definition.forced && !definition.terminating);
    }

    #[test]
    fn forced_label_is_case_insensitive_and_tenant_scope_means_cluster() {
        let mut crd = crontab();
        crd["metadata"]["labels"] = json!({FORCED_LABEL: "Forced"});
        crd["metadata"]["annotations"] = json!({APPLICABLE_TENANTS: " tier=gold "});
        crd["spec"]["scope"] = json!("Tenant");
        let definition = Definition::parse(&crd).unwrap_or_else(|e| panic!("{e:?}"));
        assert!(definition.forced);
        assert_eq!(definition.applicable_tenants.as_deref(), Some("tier=gold"));
        assert_eq!(definition.scope, Scope::Cluster);
    }

    #[test]
    fn invalid_crds_report_every_field() {
        type Change = Box<dyn Fn(&mut Value)>;
        let cases: Vec<(Change, &str, &str)> = vec![
            (Box::new(|c| c["metadata"]["name"] = json!("crontab.stable.example.com")), "metadata.name", "FieldValueInvalid"),
            (Box::new(|c| c["spec"]["group"] = json!("example")), "spec.group", "FieldValueInvalid"),
            (Box::new(|c| c["spec"]["scope"] = json!("Global")), "spec.scope", "FieldValueNotSupported"),
            (Box::new(|c| c["spec"]["versions"][1]["storage"] = json!(true)), "spec.versions", "FieldValueInvalid"),
            (Box::new(|c| c["spec"]["versions"][1]["name"] = json!("v1")), "spec.versions[1].name", "FieldValueDuplicate"),
            (Box::new(|c| c["spec"]["versions"][0]["schema"] = json!(null)), "spec.versions[0].schema.openAPIV3Schema", "FieldValueRequired"),
            (Box::new(|c| c["spec"]["names"]["kind"] = json!("")), "spec.names.kind", "FieldValueRequired"),
            (Box::new(|c| c["spec"]["names"]["shortNames"] = json!(["Bad"])), "spec.names.shortNames[0]", "FieldValueInvalid"),
            (Box::new(|c| c["spec"]["conversion"] = json!({"strategy": "Sometimes"})), "spec.conversion.strategy", "FieldValueNotSupported"),
            (Box::new(|c| c["spec"]["conversion"] = json!({"strategy": "Webhook"})), "spec.conversion.webhook", "FieldValueRequired"),
            (Box::new(|c| c["spec"]["versions"][0]["subresources"]["scale"]["specReplicasPath"] = json!(".status.x")),
                "spec.versions[0].subresources.scale.specReplicasPath", "FieldValueInvalid"),
            (Box::new(|c| c["spec"]["versions"][0]["additionalPrinterColumns"] = json!([{"name": "A", "type": "color", "jsonPath": ".spec.a"}])),
                "spec.versions[0].additionalPrinterColumns[0].type", "FieldValueNotSupported"),
        ];
        for (change, field, reason) in cases {
            let mut crd = crontab();
            change(&mut crd);
            let errors = Definition::parse(&crd).err().unwrap_or_default();
            assert!(errors.iter().any(|e| e.field == field && e.reason == reason), "{field}: {errors:?}");
        }
    }
}
