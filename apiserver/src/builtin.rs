//! The built-in kinds kspaces serves, one row each: Kubernetes v1.33's discovery data for every built-in kind
//! (kspaces' own kinds bring their rows themselves, in `crate::kinds`).
//!
//! A row is the kind's k8s-openapi type (which gives its group, version, kind, plural, scope and definition name),
//! then what the type does not say: short names, flags (`IN_ALL`, the `all` category; `SYSTEM_ONLY`, see
//! `docs/tenancy.md`), verbs, subresources and the table printer kube-apiserver registers (`None` for kube's
//! default NAME, CREATED AT). Every layer reads the columns it needs by invoking [`builtin_kinds!`] with a macro of
//! its own, so the rows' names resolve where they are read:
//!
//! - the registry's discovery rows (`registry/builtin.rs`) and typed checks (`registry/validate.rs`);
//! - the OpenAPI definitions (`openapi/schemas.rs`);
//! - the table printers (`table/printers.rs`; the printer named in the row is written in `table/printers/`);
//! - the protobuf mapping (`protobuf/codegen.rs` writes `protobuf/generated.rs`).
//!
//! **Adding a kind** is one row below, and for a kind kube prints its own way, the printer in `table/printers/`.
//! Then `cargo test -p kspaces-apiserver --lib protobuf::codegen` rewrites `protobuf/generated.rs` (it fails once,
//! saying so, when the committed file was stale; a message whose scalar fields kube writes even when zero and which
//! are optional in the schema needs their names in `protobuf/keep_zero.rs`).

/// Every verb the generic registry serves, in the sorted order kube-apiserver's discovery uses.
pub const ALL_VERBS: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
/// Namespaces cannot be deleted as a collection (kube-apiserver omits `deletecollection`).
pub const NO_COLLECTION_DELETE: &[&str] = &["create", "delete", "get", "list", "patch", "update", "watch"];
/// `componentstatuses` are read-only.
pub const READ_ONLY: &[&str] = &["get", "list"];
/// Reviews are created, answered and never stored; a Binding is created and changes its pod.
pub const CREATE_ONLY: &[&str] = &["create"];

/// A row's flags.
pub type Flags = u8;
/// Served in every space, not in the `all` category.
pub const PLAIN: Flags = 0;
/// In the `all` category (`kubectl get all`).
pub const IN_ALL: Flags = 1;
/// Only in the system space, only for system users (see `ResourceInfo::system_only`).
pub const SYSTEM_ONLY: Flags = 2;

/// Invokes `$callback! { row; row; ... }` with every built-in kind. A row reads
/// `type, [short names], flags, verbs, [subresources], printer;` where `type` is a path below `k8s_openapi::`.
/// Subresources other than `Status`, `Scale`, `Finalize` and `Approval` are not listed: `serviceaccounts/token` and
/// the pods' subresources are served by their own handlers and listed by discovery from there.
macro_rules! builtin_kinds {
    ($callback:ident) => {
        $callback! {
            api::core::v1::Namespace, ["ns"], PLAIN, NO_COLLECTION_DELETE, [Status, Finalize], Some(&core::NAMESPACE);
            api::core::v1::ConfigMap, ["cm"], PLAIN, ALL_VERBS, [], Some(&core::CONFIG_MAP);
            api::core::v1::Secret, [], PLAIN, ALL_VERBS, [], Some(&core::SECRET);
            api::core::v1::ServiceAccount, ["sa"], PLAIN, ALL_VERBS, [], Some(&core::SERVICE_ACCOUNT);
            api::core::v1::Event, ["ev"], PLAIN, ALL_VERBS, [], Some(&event::CORE_EVENT);
            api::core::v1::LimitRange, ["limits"], PLAIN, ALL_VERBS, [], None;
            api::core::v1::ResourceQuota, ["quota"], PLAIN, ALL_VERBS, [Status], Some(&core::RESOURCE_QUOTA);
            api::core::v1::Service, ["svc"], IN_ALL, ALL_VERBS, [Status], Some(&core::SERVICE);
            api::core::v1::Endpoints, ["ep"], PLAIN, ALL_VERBS, [], Some(&core::ENDPOINTS);
            api::core::v1::Pod, ["po"], IN_ALL, ALL_VERBS, [Status], Some(&pod::POD);
            api::core::v1::Binding, [], PLAIN, CREATE_ONLY, [], None;
            api::core::v1::PodTemplate, [], PLAIN, ALL_VERBS, [], Some(&pod::POD_TEMPLATE);
            api::core::v1::ReplicationController, ["rc"], IN_ALL, ALL_VERBS, [Status, Scale], Some(&workloads::REPLICATION_CONTROLLER);
            api::core::v1::PersistentVolume, ["pv"], PLAIN, ALL_VERBS, [Status], Some(&core::PERSISTENT_VOLUME);
            api::core::v1::PersistentVolumeClaim, ["pvc"], PLAIN, ALL_VERBS, [Status], Some(&core::PERSISTENT_VOLUME_CLAIM);
            api::core::v1::Node, ["no"], SYSTEM_ONLY, ALL_VERBS, [Status], Some(&core::NODE);
            api::core::v1::ComponentStatus, ["cs"], SYSTEM_ONLY, READ_ONLY, [], Some(&core::COMPONENT_STATUS);
            api::apps::v1::Deployment, ["deploy"], IN_ALL, ALL_VERBS, [Status, Scale], Some(&workloads::DEPLOYMENT);
            api::apps::v1::ReplicaSet, ["rs"], IN_ALL, ALL_VERBS, [Status, Scale], Some(&workloads::REPLICA_SET);
            api::apps::v1::StatefulSet, ["sts"], IN_ALL, ALL_VERBS, [Status, Scale], Some(&workloads::STATEFUL_SET);
            api::apps::v1::DaemonSet, ["ds"], IN_ALL, ALL_VERBS, [Status], Some(&workloads::DAEMON_SET);
            api::apps::v1::ControllerRevision, [], PLAIN, ALL_VERBS, [], Some(&workloads::CONTROLLER_REVISION);
            api::batch::v1::Job, [], IN_ALL, ALL_VERBS, [Status], Some(&workloads::JOB);
            // `autoscaling/v2` is the stored form (`kinds/horizontal_pod_autoscaler.rs` adds `v1`).
            api::autoscaling::v2::HorizontalPodAutoscaler, ["hpa"], IN_ALL, ALL_VERBS, [Status], None;
            api::certificates::v1::CertificateSigningRequest, ["csr"], PLAIN, ALL_VERBS, [Status, Approval], None;
            api::batch::v1::CronJob, ["cj"], IN_ALL, ALL_VERBS, [Status], Some(&workloads::CRON_JOB);
            api::coordination::v1::Lease, [], PLAIN, ALL_VERBS, [], Some(&cluster::LEASE);
            api::events::v1::Event, ["ev"], PLAIN, ALL_VERBS, [], Some(&event::EVENTS_EVENT);
            api::discovery::v1::EndpointSlice, [], PLAIN, ALL_VERBS, [], Some(&cluster::ENDPOINT_SLICE);
            api::networking::v1::Ingress, ["ing"], PLAIN, ALL_VERBS, [Status], Some(&cluster::INGRESS);
            api::networking::v1::IngressClass, [], PLAIN, ALL_VERBS, [], Some(&cluster::INGRESS_CLASS);
            api::networking::v1::NetworkPolicy, ["netpol"], PLAIN, ALL_VERBS, [], Some(&cluster::NETWORK_POLICY);
            api::networking::v1::IPAddress, ["ip"], SYSTEM_ONLY, ALL_VERBS, [], Some(&cluster::IP_ADDRESS);
            api::networking::v1::ServiceCIDR, [], SYSTEM_ONLY, ALL_VERBS, [Status], Some(&cluster::SERVICE_CIDR);
            api::policy::v1::PodDisruptionBudget, ["pdb"], PLAIN, ALL_VERBS, [Status], Some(&cluster::POD_DISRUPTION_BUDGET);
            api::storage::v1::StorageClass, ["sc"], PLAIN, ALL_VERBS, [], Some(&cluster::STORAGE_CLASS);
            api::scheduling::v1::PriorityClass, ["pc"], SYSTEM_ONLY, ALL_VERBS, [], Some(&cluster::PRIORITY_CLASS);
            api::node::v1::RuntimeClass, [], SYSTEM_ONLY, ALL_VERBS, [], None;
            api::storage::v1::CSIDriver, [], SYSTEM_ONLY, ALL_VERBS, [], None;
            api::storage::v1::CSINode, [], SYSTEM_ONLY, ALL_VERBS, [], None;
            api::storage::v1::VolumeAttachment, [], SYSTEM_ONLY, ALL_VERBS, [Status], None;
            api::storage::v1::CSIStorageCapacity, [], SYSTEM_ONLY, ALL_VERBS, [], None;
            api::admissionregistration::v1::MutatingWebhookConfiguration, [], PLAIN, ALL_VERBS, [], Some(&cluster::MUTATING_WEBHOOK);
            api::admissionregistration::v1::ValidatingWebhookConfiguration, [], PLAIN, ALL_VERBS, [], Some(&cluster::VALIDATING_WEBHOOK);
            // Each space's own; enforced by `kinds/admission_policy.rs`.
            api::admissionregistration::v1::ValidatingAdmissionPolicy, [], PLAIN, ALL_VERBS, [Status], None;
            api::admissionregistration::v1::ValidatingAdmissionPolicyBinding, [], PLAIN, ALL_VERBS, [], None;
            // The system space's; kube-apiserver's `Local` ones for its own groups are not listed, nothing is proxied yet.
            kube_aggregator::pkg::apis::apiregistration::v1::APIService, [], SYSTEM_ONLY, ALL_VERBS, [Status], None;
            api::authentication::v1::SelfSubjectReview, [], PLAIN, CREATE_ONLY, [], None;
            api::authentication::v1::TokenReview, [], PLAIN, CREATE_ONLY, [], None;
            api::authorization::v1::LocalSubjectAccessReview, [], PLAIN, CREATE_ONLY, [], None;
            api::authorization::v1::SelfSubjectAccessReview, [], PLAIN, CREATE_ONLY, [], None;
            api::authorization::v1::SelfSubjectRulesReview, [], PLAIN, CREATE_ONLY, [], None;
            api::authorization::v1::SubjectAccessReview, [], PLAIN, CREATE_ONLY, [], None;
            // Each space's own CRDs (the system space's are shared with tenants, see `resolver.rs`).
            apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition, ["crd", "crds"], PLAIN, ALL_VERBS, [Status], None;
            api::rbac::v1::Role, [], PLAIN, ALL_VERBS, [], None;
            api::rbac::v1::RoleBinding, [], PLAIN, ALL_VERBS, [], Some(&cluster::ROLE_BINDING);
            api::rbac::v1::ClusterRole, [], PLAIN, ALL_VERBS, [], None;
            api::rbac::v1::ClusterRoleBinding, [], PLAIN, ALL_VERBS, [], Some(&cluster::CLUSTER_ROLE_BINDING);
        }
    };
}
pub(crate) use builtin_kinds;
