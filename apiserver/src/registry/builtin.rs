//! The built-in resource table: the discovery columns of `crate::builtin`'s rows (Kubernetes v1.33's discovery
//! data; kspaces' own kinds bring their rows themselves, in `crate::kinds`).

use std::any::TypeId;

use k8s_openapi::{NamespaceResourceScope, Resource};
use schemars::JsonSchema;

use super::{ResourceInfo, Subresource};
use crate::builtin::{builtin_kinds, Flags, ALL_VERBS, CREATE_ONLY, IN_ALL, NO_COLLECTION_DELETE, PLAIN, READ_ONLY, SYSTEM_ONLY};

/// The registry's columns of each row: the discovery data (the printers are the table's).
macro_rules! resource_infos {
    ($( $($ty:ident)::+, [$($short:literal),*], $flags:expr, $verbs:ident, [$($sub:ident),*], $printer:expr; )*) => {
        vec![$( info::<k8s_openapi::$($ty)::+>(&[$($short),*], $flags, $verbs, &[$(Subresource::$sub),*]), )*]
    };
}

/// Every built-in resource kspaces serves, with exactly the discovery data of Kubernetes v1.33.
pub fn builtin_resources() -> Vec<ResourceInfo> {
    builtin_kinds!(resource_infos)
}

/// One row's resource: names, scope and definition from the k8s-openapi type `T`, the rest from the row.
fn info<T: Resource + JsonSchema + 'static>(short_names: &[&str], flags: Flags, verbs: &[&str], subresources: &[Subresource]) -> ResourceInfo {
    let strings = |items: &[&str]| items.iter().map(|item| item.to_string()).collect::<Vec<_>>();
    ResourceInfo {
        group: T::GROUP.to_string(),
        version: T::VERSION.to_string(),
        kind: T::KIND.to_string(),
        plural: T::URL_PATH_SEGMENT.to_string(),
        singular: T::KIND.to_ascii_lowercase(),
        short_names: strings(short_names),
        categories: if flags & IN_ALL != 0 { vec!["all".to_string()] } else { Vec::new() },
        namespaced: TypeId::of::<T::Scope>() == TypeId::of::<NamespaceResourceScope>(),
        subresources: subresources.to_vec(),
        verbs: strings(verbs),
        definition: Some(T::schema_name().into_owned()),
        system_only: flags & SYSTEM_ONLY != 0,
        custom: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(group: &str, plural: &str) -> ResourceInfo {
        let found = builtin_resources()
            .into_iter()
            .find(|r| r.group == group && r.plural == plural);
        found.unwrap_or_else(|| panic!("{group}/{plural} missing from the builtin table"))
    }

    /// One line of `kubectl api-resources -o wide` against a v1.33 cluster, plus subresources and definition.
    fn check(group: &str, plural: &str, expected: &str) {
        let r = find(group, plural);
        let actual = format!(
            "{} {} {} {} [{}] [{}] {} [{}] {}",
            r.plural,
            r.short_names.join(","),
            r.api_version(),
            r.namespaced,
            r.verbs.join(" "),
            r.categories.join(","),
            r.kind,
            r.subresources
                .iter()
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(","),
            r.definition.as_deref().unwrap_or("-"),
        );
        assert_eq!(actual, expected);
    }

    const ALL: &str = "create delete deletecollection get list patch update watch";

    #[test]
    fn rows_match_kubectl_api_resources() {
        check("apps", "deployments", &format!(
            "deployments deploy apps/v1 true [{ALL}] [all] Deployment [Status,Scale] io.k8s.api.apps.v1.Deployment"));
        check("", "namespaces", "namespaces ns v1 false [create delete get list patch update watch] [] Namespace [Status,Finalize] io.k8s.api.core.v1.Namespace");
        check(
            "",
            "configmaps",
            &format!("configmaps cm v1 true [{ALL}] [] ConfigMap [] io.k8s.api.core.v1.ConfigMap"),
        );
        check(
            "",
            "pods",
            &format!("pods po v1 true [{ALL}] [all] Pod [Status] io.k8s.api.core.v1.Pod"),
        );
        check(
            "",
            "services",
            &format!(
                "services svc v1 true [{ALL}] [all] Service [Status] io.k8s.api.core.v1.Service"
            ),
        );
        check(
            "",
            "nodes",
            &format!("nodes no v1 false [{ALL}] [] Node [Status] io.k8s.api.core.v1.Node"),
        );
        check("batch", "cronjobs", &format!("cronjobs cj batch/v1 true [{ALL}] [all] CronJob [Status] io.k8s.api.batch.v1.CronJob"));
        check(
            "events.k8s.io",
            "events",
            &format!(
                "events ev events.k8s.io/v1 true [{ALL}] [] Event [] io.k8s.api.events.v1.Event"
            ),
        );
        check("rbac.authorization.k8s.io", "clusterrolebindings", &format!(
            "clusterrolebindings  rbac.authorization.k8s.io/v1 false [{ALL}] [] ClusterRoleBinding [] io.k8s.api.rbac.v1.ClusterRoleBinding"));
        check("networking.k8s.io", "networkpolicies", &format!(
            "networkpolicies netpol networking.k8s.io/v1 true [{ALL}] [] NetworkPolicy [] io.k8s.api.networking.v1.NetworkPolicy"));
    }

    #[test]
    fn table_has_every_requested_resource_once_with_singular_names() {
        let resources = builtin_resources();
        assert_eq!(resources.len(), 58);
        let mut keys: Vec<_> = resources
            .iter()
            .map(|r| (r.group.clone(), r.plural.clone()))
            .collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), resources.len());
        assert_eq!(
            find("policy", "poddisruptionbudgets").singular,
            "poddisruptionbudget"
        );
        assert_eq!(find("", "endpoints").singular, "endpoints");
    }

    #[test]
    fn system_only_resources_are_arktos_non_tenanted_ones() {
        let mut system_only: Vec<_> = builtin_resources().into_iter().filter(|r| r.system_only).map(|r| r.plural).collect();
        system_only.sort();
        assert_eq!(system_only, ["apiservices", "componentstatuses", "csidrivers", "csinodes", "csistoragecapacities", "ipaddresses",
            "nodes", "priorityclasses", "runtimeclasses", "servicecidrs", "volumeattachments"]);
    }

    #[test]
    fn all_category_is_exactly_kubectl_get_all() {
        let mut in_all: Vec<_> = builtin_resources()
            .into_iter()
            .filter(|r| r.categories.iter().any(|c| c == "all"))
            .map(|r| r.plural)
            .collect();
        in_all.sort();
        let expected = [
            "cronjobs",
            "daemonsets",
            "deployments",
            "horizontalpodautoscalers",
            "jobs",
            "pods",
            "replicasets",
            "replicationcontrollers",
            "services",
            "statefulsets",
        ];
        assert_eq!(in_all, expected);
    }
}
