//! The workload kinds (Deployment, ReplicaSet, StatefulSet, DaemonSet, ReplicationController, Job, CronJob):
//! kube's defaults of their specs and pod templates, and the checks of replicas, selectors and templates that
//! clients run into most.
//!
//! Admission: only the system space may hold DaemonSets (Arktos' SystemDaemonSet admission: daemons run on
//! every node, which only the system tenant owns).

use std::sync::Arc;

use async_trait::async_trait;
use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::Value;

use super::defaults::pod_spec::default_pod_spec;
use super::defaults::workloads as workload_defaults;
use super::pod_template::{check_pod_spec, check_selector_matches, invalid_value, zero_status};
use super::{Context, Kind, Rules};
use crate::registry::admission::{Admission, Attributes, Operation, Question};
use crate::registry::strategy::{Part, Strategy};
use crate::registry::{GenericStore, ResourceInfo};
use crate::status::{ApiError, ApiResult, Cause};

/// The workload kinds: one strategy each, and the DaemonSet admission.
pub const KIND: Kind = Kind::rules(rules);

fn rules(_context: &Context, rules: &mut Rules) {
    for (group, kind, workload) in [
        ("apps", "Deployment", Workload::Deployment),
        ("apps", "ReplicaSet", Workload::ReplicaSet),
        ("apps", "StatefulSet", Workload::StatefulSet),
        ("apps", "DaemonSet", Workload::DaemonSet),
        ("", "ReplicationController", Workload::ReplicationController),
        ("batch", "Job", Workload::Job),
        ("batch", "CronJob", Workload::CronJob),
    ] {
        rules.strategy(group, kind, Arc::new(workload));
    }
    rules.admit(Arc::new(SystemDaemonSets));
}

/// One workload kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    ReplicationController,
    Job,
    CronJob,
}

impl Workload {
    /// Where the pod template's spec is, as a JSON pointer and as a field path.
    fn template(self) -> (&'static str, &'static str) {
        match self {
            Workload::CronJob => ("/spec/jobTemplate/spec/template/spec", "spec.jobTemplate.spec.template.spec"),
            _ => ("/spec/template/spec", "spec.template.spec"),
        }
    }

    /// Whether the kind has `spec.replicas` and a selector its template must match.
    fn replicated(self) -> bool {
        matches!(self, Workload::Deployment | Workload::ReplicaSet | Workload::StatefulSet | Workload::DaemonSet | Workload::ReplicationController)
    }

    /// The status fields kube always writes (Go's status fields without `omitempty`), zero until a controller
    /// counts: clients' typed models require them (the Python client cannot read a ReplicaSet without
    /// `status.replicas`).
    fn required_status(self) -> &'static [&'static str] {
        match self {
            Workload::ReplicaSet | Workload::ReplicationController => &["replicas"],
            Workload::StatefulSet => &["replicas", "availableReplicas"],
            Workload::DaemonSet => &["currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"],
            Workload::Deployment | Workload::Job | Workload::CronJob => &[],
        }
    }

    /// kube's defaults of the kind's spec (`defaults::workloads`) and of its pod template.
    fn defaults(self, object: &mut Value) {
        let spec_defaults = match self {
            Workload::Deployment => workload_defaults::deployment,
            Workload::ReplicaSet => workload_defaults::replica_set,
            Workload::StatefulSet => workload_defaults::stateful_set,
            Workload::DaemonSet => workload_defaults::daemon_set,
            Workload::ReplicationController => workload_defaults::replication_controller,
            Workload::Job => workload_defaults::job,
            Workload::CronJob => workload_defaults::cron_job,
        };
        spec_defaults(object);
        if let Some(spec) = object.pointer_mut(self.template().0) {
            default_pod_spec(spec);
        }
    }
}

#[async_trait]
impl Strategy for Workload {
    fn prepare_create(&self, _resource: &ResourceInfo, _space: &SpaceName, _caller: Option<&Caller>, object: &mut Value) {
        self.defaults(object);
        zero_status(object, self.required_status());
    }

    fn prepare_update(&self, _resource: &ResourceInfo, _space: &SpaceName, _old: &Value, new: &mut Value, _part: Part) {
        self.defaults(new);
        zero_status(new, self.required_status());
    }

    fn validate(&self, resource: &ResourceInfo, object: &Value, _old: Option<&Value>, causes: &mut Vec<Cause>) {
        let Some(spec) = object.get("spec") else { return };
        if self.replicated() {
            if let Some(replicas) = spec.get("replicas").filter(|r| r.as_i64().is_some_and(|r| r < 0)) {
                causes.push(invalid_value("spec.replicas".into(), replicas, "must be greater than or equal to 0"));
            }
            check_selector_matches(&resource.group, spec, causes);
        }
        let (pointer, path) = self.template();
        if let Some(template_spec) = object.pointer(pointer) {
            check_pod_spec(path, template_spec, causes);
        }
    }
}

/// Refuses DaemonSets outside the system space.
pub struct SystemDaemonSets;

#[async_trait]
impl Admission for SystemDaemonSets {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        resource.is("apps", "DaemonSet") && operation != Operation::Delete
    }

    fn refuses(&self, registry: &GenericStore, question: &Question<'_>) -> Option<String> {
        (!question.space.is_system() && question.verb_in(&["create", "update", "patch"]) && question.covers("apps", "daemonsets"))
            .then(|| format!("only the system tenant may have DaemonSets (tenant {})", registry.tenant_of(question.space)))
    }

    async fn admit(&self, registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        if attributes.space.is_system() {
            return Ok(());
        }
        Err(ApiError::forbidden(format!(
            "daemonsets.apps is forbidden: only the system tenant may have DaemonSets (tenant {})",
            registry.tenant_of(attributes.space))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use crate::registry::builtin::builtin_resources;

    fn fields(group: &str, kind: &str, workload: Workload, object: Value) -> Vec<String> {
        let resource = builtin_resources().into_iter().find(|r| r.is(group, kind)).unwrap_or_else(|| panic!("no {kind} row"));
        let mut causes = Vec::new();
        workload.validate(&resource, &object, None, &mut causes);
        causes.into_iter().map(|c| c.field).collect()
    }

    #[test]
    fn broken_deployment_reports_every_cause() {
        let broken = json!({"spec": {"replicas": -1, "selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "b"}}, "spec": {"containers": [
                {"name": "Bad_C", "image": ""}, {"name": "ok", "image": "x", "ports": [{"containerPort": 0}]}]}}}});
        assert_eq!(fields("apps", "Deployment", Workload::Deployment, broken), [
            "spec.replicas",
            "spec.template.metadata.labels",
            "spec.template.spec.containers[0].name",
            "spec.template.spec.containers[0].image",
            "spec.template.spec.containers[1].ports[0].containerPort",
        ]);
        let fine = json!({"spec": {"selector": {"matchLabels": {"app": "a"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            "template": {"metadata": {"labels": {"app": "a", "tier": "x"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
        assert!(fields("apps", "Deployment", Workload::Deployment, fine).is_empty());
        let cron = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}}});
        assert_eq!(fields("batch", "CronJob", Workload::CronJob, cron), ["spec.jobTemplate.spec.template.spec.containers"]);
    }

    #[test]
    fn deployment_and_container_defaults() {
        let mut object = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}}});
        Workload::Deployment.defaults(&mut object);
        assert_eq!(object["spec"]["replicas"], 1);
        let container = &object["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["imagePullPolicy"], "IfNotPresent");
        assert_eq!(container["ports"][0]["protocol"], "TCP");
        let mut empty = json!({"spec": {"strategy": {}}});
        Workload::Deployment.defaults(&mut empty);
        assert_eq!(empty["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        let mut explicit = json!({"spec": {"replicas": 3}});
        Workload::Deployment.defaults(&mut explicit);
        assert_eq!(explicit["spec"]["replicas"], 3, "defaults never override");
        let mut daemons = json!({"spec": {}});
        Workload::DaemonSet.defaults(&mut daemons);
        assert_eq!(daemons["spec"].get("replicas"), None, "DaemonSets have no replicas");
    }
}
