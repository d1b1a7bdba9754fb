//! Fields whose zero value kube's JSON shows (Go pointers, fields without `omitempty`): input to `codegen.rs`.
//!
//! Derived from the Go types of k8s.io/api and k8s.io/apimachinery (mid-2026): a scalar field is listed when its Go
//! type is a pointer or its json tag lacks `omitempty`. Lists, maps and messages need no entry (see `to_json.rs`).

/// (schema definition, JSON field names).
pub(super) const KEEP_ZERO: &[(&str, &[&str])] = &[
    (
        "io.k8s.api.admissionregistration.v1.MatchCondition",
        &["expression", "name"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.MutatingWebhook",
        &[
            "failurePolicy",
            "matchPolicy",
            "name",
            "reinvocationPolicy",
            "sideEffects",
            "timeoutSeconds",
        ],
    ),
    ("io.k8s.api.admissionregistration.v1.Rule", &["scope"]),
    (
        "io.k8s.api.admissionregistration.v1.ServiceReference",
        &["name", "namespace", "path", "port"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.ValidatingWebhook",
        &[
            "failurePolicy",
            "matchPolicy",
            "name",
            "sideEffects",
            "timeoutSeconds",
        ],
    ),
    (
        "io.k8s.api.admissionregistration.v1.WebhookClientConfig",
        &["url"],
    ),
    ("io.k8s.api.apps.v1.ControllerRevision", &["revision"]),
    ("io.k8s.api.apps.v1.DaemonSetCondition", &["status", "type"]),
    (
        "io.k8s.api.apps.v1.DaemonSetSpec",
        &["revisionHistoryLimit"],
    ),
    (
        "io.k8s.api.apps.v1.DaemonSetStatus",
        &[
            "collisionCount",
            "currentNumberScheduled",
            "desiredNumberScheduled",
            "numberMisscheduled",
            "numberReady",
        ],
    ),
    (
        "io.k8s.api.apps.v1.DeploymentCondition",
        &["status", "type"],
    ),
    (
        "io.k8s.api.apps.v1.DeploymentSpec",
        &[
            "progressDeadlineSeconds",
            "replicas",
            "revisionHistoryLimit",
        ],
    ),
    (
        "io.k8s.api.apps.v1.DeploymentStatus",
        &["collisionCount", "terminatingReplicas"],
    ),
    (
        "io.k8s.api.apps.v1.ReplicaSetCondition",
        &["status", "type"],
    ),
    ("io.k8s.api.apps.v1.ReplicaSetSpec", &["replicas"]),
    (
        "io.k8s.api.apps.v1.ReplicaSetStatus",
        &["replicas", "terminatingReplicas"],
    ),
    (
        "io.k8s.api.apps.v1.RollingUpdateStatefulSetStrategy",
        &["partition"],
    ),
    (
        "io.k8s.api.apps.v1.StatefulSetCondition",
        &["status", "type"],
    ),
    ("io.k8s.api.apps.v1.StatefulSetOrdinals", &["start"]),
    (
        "io.k8s.api.apps.v1.StatefulSetSpec",
        &["replicas", "revisionHistoryLimit", "serviceName"],
    ),
    (
        "io.k8s.api.apps.v1.StatefulSetStatus",
        &["availableReplicas", "collisionCount", "replicas"],
    ),
    (
        "io.k8s.api.authentication.v1.TokenRequestSpec",
        &["expirationSeconds"],
    ),
    (
        "io.k8s.api.authentication.v1.TokenRequestStatus",
        &["token"],
    ),
    (
        "io.k8s.api.authorization.v1.SubjectAccessReviewStatus",
        &["allowed"],
    ),
    (
        "io.k8s.api.authorization.v1.SubjectRulesReviewStatus",
        &["incomplete"],
    ),
    (
        "io.k8s.api.autoscaling.v1.CrossVersionObjectReference",
        &["kind", "name"],
    ),
    (
        "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerSpec",
        &[
            "maxReplicas",
            "minReplicas",
            "targetCPUUtilizationPercentage",
        ],
    ),
    (
        "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerStatus",
        &[
            "currentCPUUtilizationPercentage",
            "currentReplicas",
            "desiredReplicas",
            "observedGeneration",
        ],
    ),
    ("io.k8s.api.autoscaling.v1.ScaleStatus", &["replicas"]),
    (
        "io.k8s.api.autoscaling.v2.ContainerResourceMetricSource",
        &["container", "name"],
    ),
    (
        "io.k8s.api.autoscaling.v2.ContainerResourceMetricStatus",
        &["container", "name"],
    ),
    (
        "io.k8s.api.autoscaling.v2.CrossVersionObjectReference",
        &["kind", "name"],
    ),
    (
        "io.k8s.api.autoscaling.v2.HPAScalingPolicy",
        &["periodSeconds", "type", "value"],
    ),
    (
        "io.k8s.api.autoscaling.v2.HPAScalingRules",
        &["selectPolicy", "stabilizationWindowSeconds"],
    ),
    (
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerCondition",
        &["observedGeneration", "status", "type"],
    ),
    (
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec",
        &["maxReplicas", "minReplicas"],
    ),
    (
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus",
        &["desiredReplicas", "observedGeneration"],
    ),
    ("io.k8s.api.autoscaling.v2.MetricIdentifier", &["name"]),
    ("io.k8s.api.autoscaling.v2.MetricSpec", &["type"]),
    ("io.k8s.api.autoscaling.v2.MetricStatus", &["type"]),
    (
        "io.k8s.api.autoscaling.v2.MetricTarget",
        &["averageUtilization", "type"],
    ),
    (
        "io.k8s.api.autoscaling.v2.MetricValueStatus",
        &["averageUtilization"],
    ),
    ("io.k8s.api.autoscaling.v2.ResourceMetricSource", &["name"]),
    ("io.k8s.api.autoscaling.v2.ResourceMetricStatus", &["name"]),
    (
        "io.k8s.api.batch.v1.CronJobSpec",
        &[
            "failedJobsHistoryLimit",
            "schedule",
            "startingDeadlineSeconds",
            "successfulJobsHistoryLimit",
            "suspend",
            "timeZone",
        ],
    ),
    ("io.k8s.api.batch.v1.JobCondition", &["status", "type"]),
    (
        "io.k8s.api.batch.v1.JobSpec",
        &[
            "activeDeadlineSeconds",
            "backoffLimit",
            "backoffLimitPerIndex",
            "completionMode",
            "completions",
            "managedBy",
            "manualSelector",
            "maxFailedIndexes",
            "parallelism",
            "podReplacementPolicy",
            "suspend",
            "ttlSecondsAfterFinished",
        ],
    ),
    (
        "io.k8s.api.batch.v1.JobStatus",
        &["failedIndexes", "ready", "terminating"],
    ),
    (
        "io.k8s.api.batch.v1.PodFailurePolicyOnExitCodesRequirement",
        &["containerName", "operator"],
    ),
    (
        "io.k8s.api.batch.v1.PodFailurePolicyOnPodConditionsPattern",
        &["status", "type"],
    ),
    ("io.k8s.api.batch.v1.PodFailurePolicyRule", &["action"]),
    (
        "io.k8s.api.batch.v1.SuccessPolicyRule",
        &["succeededCount", "succeededIndexes"],
    ),
    (
        "io.k8s.api.certificates.v1.CertificateSigningRequestCondition",
        &["status", "type"],
    ),
    (
        "io.k8s.api.certificates.v1.CertificateSigningRequestSpec",
        &["expirationSeconds", "signerName"],
    ),
    (
        "io.k8s.api.coordination.v1.LeaseSpec",
        &[
            "holderIdentity",
            "leaseDurationSeconds",
            "leaseTransitions",
            "preferredHolder",
            "strategy",
        ],
    ),
    (
        "io.k8s.api.core.v1.AWSElasticBlockStoreVolumeSource",
        &["volumeID"],
    ),
    (
        "io.k8s.api.core.v1.AppArmorProfile",
        &["localhostProfile", "type"],
    ),
    ("io.k8s.api.core.v1.AttachedVolume", &["devicePath", "name"]),
    (
        "io.k8s.api.core.v1.AzureDiskVolumeSource",
        &[
            "cachingMode",
            "diskName",
            "diskURI",
            "fsType",
            "kind",
            "readOnly",
        ],
    ),
    (
        "io.k8s.api.core.v1.AzureFilePersistentVolumeSource",
        &["secretName", "secretNamespace", "shareName"],
    ),
    (
        "io.k8s.api.core.v1.AzureFileVolumeSource",
        &["secretName", "shareName"],
    ),
    (
        "io.k8s.api.core.v1.CSIPersistentVolumeSource",
        &["driver", "volumeHandle"],
    ),
    (
        "io.k8s.api.core.v1.CSIVolumeSource",
        &["driver", "fsType", "readOnly"],
    ),
    (
        "io.k8s.api.core.v1.CinderPersistentVolumeSource",
        &["volumeID"],
    ),
    ("io.k8s.api.core.v1.CinderVolumeSource", &["volumeID"]),
    ("io.k8s.api.core.v1.ClientIPConfig", &["timeoutSeconds"]),
    (
        "io.k8s.api.core.v1.ClusterTrustBundleProjection",
        &["name", "optional", "path", "signerName", "user"],
    ),
    ("io.k8s.api.core.v1.ConfigMap", &["immutable"]),
    ("io.k8s.api.core.v1.ConfigMapEnvSource", &["optional"]),
    (
        "io.k8s.api.core.v1.ConfigMapKeySelector",
        &["key", "optional"],
    ),
    (
        "io.k8s.api.core.v1.ConfigMapNodeConfigSource",
        &["kubeletConfigKey", "name", "namespace"],
    ),
    ("io.k8s.api.core.v1.ConfigMapProjection", &["optional"]),
    (
        "io.k8s.api.core.v1.ConfigMapVolumeSource",
        &["defaultMode", "defaultUser", "optional"],
    ),
    ("io.k8s.api.core.v1.Container", &["name", "restartPolicy"]),
    ("io.k8s.api.core.v1.ContainerPort", &["containerPort"]),
    (
        "io.k8s.api.core.v1.ContainerResizePolicy",
        &["resourceName", "restartPolicy"],
    ),
    ("io.k8s.api.core.v1.ContainerStateTerminated", &["exitCode"]),
    (
        "io.k8s.api.core.v1.ContainerStatus",
        &[
            "image",
            "imageID",
            "name",
            "ready",
            "restartCount",
            "started",
            "stopSignal",
        ],
    ),
    ("io.k8s.api.core.v1.DaemonEndpoint", &["Port"]),
    (
        "io.k8s.api.core.v1.DownwardAPIVolumeFile",
        &["mode", "path", "user"],
    ),
    (
        "io.k8s.api.core.v1.DownwardAPIVolumeSource",
        &["defaultMode", "defaultUser"],
    ),
    ("io.k8s.api.core.v1.EmptyDirVolumeSource", &["mode"]),
    ("io.k8s.api.core.v1.EndpointAddress", &["ip", "nodeName"]),
    ("io.k8s.api.core.v1.EndpointPort", &["appProtocol", "port"]),
    ("io.k8s.api.core.v1.EnvVar", &["name"]),
    (
        "io.k8s.api.core.v1.EphemeralContainerCommon",
        &["name", "restartPolicy"],
    ),
    (
        "io.k8s.api.core.v1.Event",
        &["reportingComponent", "reportingInstance"],
    ),
    ("io.k8s.api.core.v1.FCVolumeSource", &["lun"]),
    ("io.k8s.api.core.v1.FlexPersistentVolumeSource", &["driver"]),
    ("io.k8s.api.core.v1.FlexVolumeSource", &["driver"]),
    (
        "io.k8s.api.core.v1.GCEPersistentDiskVolumeSource",
        &["pdName"],
    ),
    (
        "io.k8s.api.core.v1.GRPCAction",
        &["mode", "port", "service"],
    ),
    ("io.k8s.api.core.v1.GitRepoVolumeSource", &["repository"]),
    (
        "io.k8s.api.core.v1.GlusterfsPersistentVolumeSource",
        &["endpoints", "endpointsNamespace", "path"],
    ),
    (
        "io.k8s.api.core.v1.GlusterfsVolumeSource",
        &["endpoints", "path"],
    ),
    ("io.k8s.api.core.v1.HTTPGetAction", &["protocol"]),
    ("io.k8s.api.core.v1.HTTPHeader", &["name", "value"]),
    ("io.k8s.api.core.v1.HostAlias", &["ip"]),
    ("io.k8s.api.core.v1.HostIP", &["ip"]),
    ("io.k8s.api.core.v1.HostPathVolumeSource", &["path", "type"]),
    (
        "io.k8s.api.core.v1.ISCSIPersistentVolumeSource",
        &["initiatorName", "iqn", "lun", "targetPortal"],
    ),
    (
        "io.k8s.api.core.v1.ISCSIVolumeSource",
        &["initiatorName", "iqn", "lun", "targetPortal"],
    ),
    (
        "io.k8s.api.core.v1.KeyToPath",
        &["key", "mode", "path", "user"],
    ),
    ("io.k8s.api.core.v1.Lifecycle", &["stopSignal"]),
    ("io.k8s.api.core.v1.LimitRangeItem", &["type"]),
    ("io.k8s.api.core.v1.LinuxContainerUser", &["gid", "uid"]),
    ("io.k8s.api.core.v1.LoadBalancerIngress", &["ipMode"]),
    ("io.k8s.api.core.v1.LocalVolumeSource", &["fsType", "path"]),
    ("io.k8s.api.core.v1.ModifyVolumeStatus", &["status"]),
    ("io.k8s.api.core.v1.NFSVolumeSource", &["path", "server"]),
    ("io.k8s.api.core.v1.NamespaceCondition", &["status", "type"]),
    ("io.k8s.api.core.v1.NodeAddress", &["address", "type"]),
    ("io.k8s.api.core.v1.NodeCondition", &["status", "type"]),
    (
        "io.k8s.api.core.v1.NodeFeatures",
        &["supplementalGroupsPolicy"],
    ),
    ("io.k8s.api.core.v1.NodeRuntimeHandler", &["name"]),
    (
        "io.k8s.api.core.v1.NodeRuntimeHandlerFeatures",
        &["recursiveReadOnlyMounts", "userNamespaces"],
    ),
    (
        "io.k8s.api.core.v1.NodeSelectorRequirement",
        &["key", "operator"],
    ),
    ("io.k8s.api.core.v1.NodeSwapStatus", &["capacity"]),
    (
        "io.k8s.api.core.v1.NodeSystemInfo",
        &[
            "architecture",
            "bootID",
            "containerRuntimeVersion",
            "kernelVersion",
            "kubeProxyVersion",
            "kubeletVersion",
            "machineID",
            "operatingSystem",
            "osImage",
            "systemUUID",
        ],
    ),
    ("io.k8s.api.core.v1.ObjectFieldSelector", &["fieldPath"]),
    (
        "io.k8s.api.core.v1.PersistentVolumeClaimCondition",
        &["status", "type"],
    ),
    (
        "io.k8s.api.core.v1.PersistentVolumeClaimSpec",
        &[
            "storageClassName",
            "volumeAttributesClassName",
            "volumeMode",
        ],
    ),
    (
        "io.k8s.api.core.v1.PersistentVolumeClaimStatus",
        &["currentVolumeAttributesClassName"],
    ),
    (
        "io.k8s.api.core.v1.PersistentVolumeClaimVolumeSource",
        &["claimName"],
    ),
    (
        "io.k8s.api.core.v1.PersistentVolumeSpec",
        &["volumeAttributesClassName", "volumeMode"],
    ),
    (
        "io.k8s.api.core.v1.PhotonPersistentDiskVolumeSource",
        &["pdID"],
    ),
    ("io.k8s.api.core.v1.PodAffinityTerm", &["topologyKey"]),
    ("io.k8s.api.core.v1.PodCondition", &["status", "type"]),
    ("io.k8s.api.core.v1.PodDNSConfigOption", &["value"]),
    ("io.k8s.api.core.v1.PodIP", &["ip"]),
    ("io.k8s.api.core.v1.PodOS", &["name"]),
    ("io.k8s.api.core.v1.PodReadinessGate", &["conditionType"]),
    (
        "io.k8s.api.core.v1.PodResourceClaim",
        &["name", "resourceClaimName", "resourceClaimTemplateName"],
    ),
    (
        "io.k8s.api.core.v1.PodResourceClaimStatus",
        &["name", "resourceClaimName"],
    ),
    ("io.k8s.api.core.v1.PodSchedulingGate", &["name"]),
    (
        "io.k8s.api.core.v1.PodSecurityContext",
        &[
            "fsGroup",
            "fsGroupChangePolicy",
            "runAsGroup",
            "runAsNonRoot",
            "runAsUser",
            "seLinuxChangePolicy",
            "supplementalGroupsPolicy",
        ],
    ),
    (
        "io.k8s.api.core.v1.PodSpec",
        &[
            "activeDeadlineSeconds",
            "automountServiceAccountToken",
            "enableServiceLinks",
            "hostUsers",
            "hostnameOverride",
            "preemptionPolicy",
            "priority",
            "runtimeClassName",
            "setHostnameAsFQDN",
            "shareProcessNamespace",
            "terminationGracePeriodSeconds",
        ],
    ),
    (
        "io.k8s.api.core.v1.PortStatus",
        &["error", "port", "protocol"],
    ),
    ("io.k8s.api.core.v1.PortworxVolumeSource", &["volumeID"]),
    ("io.k8s.api.core.v1.PreferredSchedulingTerm", &["weight"]),
    (
        "io.k8s.api.core.v1.Probe",
        &["terminationGracePeriodSeconds"],
    ),
    (
        "io.k8s.api.core.v1.ProjectedVolumeSource",
        &["defaultMode", "defaultUser"],
    ),
    (
        "io.k8s.api.core.v1.QuobyteVolumeSource",
        &["registry", "volume"],
    ),
    ("io.k8s.api.core.v1.RBDPersistentVolumeSource", &["image"]),
    ("io.k8s.api.core.v1.RBDVolumeSource", &["image"]),
    (
        "io.k8s.api.core.v1.ReplicationControllerCondition",
        &["status", "type"],
    ),
    (
        "io.k8s.api.core.v1.ReplicationControllerSpec",
        &["replicas"],
    ),
    (
        "io.k8s.api.core.v1.ReplicationControllerStatus",
        &["replicas"],
    ),
    ("io.k8s.api.core.v1.ResourceClaim", &["name"]),
    ("io.k8s.api.core.v1.ResourceFieldSelector", &["resource"]),
    (
        "io.k8s.api.core.v1.ResourceHealth",
        &["message", "resourceID"],
    ),
    ("io.k8s.api.core.v1.ResourceStatus", &["name"]),
    (
        "io.k8s.api.core.v1.ScaleIOPersistentVolumeSource",
        &["gateway", "system"],
    ),
    (
        "io.k8s.api.core.v1.ScaleIOVolumeSource",
        &["gateway", "system"],
    ),
    (
        "io.k8s.api.core.v1.ScopedResourceSelectorRequirement",
        &["operator", "scopeName"],
    ),
    (
        "io.k8s.api.core.v1.SeccompProfile",
        &["localhostProfile", "type"],
    ),
    ("io.k8s.api.core.v1.Secret", &["immutable"]),
    ("io.k8s.api.core.v1.SecretEnvSource", &["optional"]),
    ("io.k8s.api.core.v1.SecretKeySelector", &["key", "optional"]),
    ("io.k8s.api.core.v1.SecretProjection", &["optional"]),
    (
        "io.k8s.api.core.v1.SecretVolumeSource",
        &["defaultMode", "defaultUser", "optional"],
    ),
    (
        "io.k8s.api.core.v1.SecurityContext",
        &[
            "allowPrivilegeEscalation",
            "privileged",
            "procMount",
            "readOnlyRootFilesystem",
            "runAsGroup",
            "runAsNonRoot",
            "runAsUser",
        ],
    ),
    (
        "io.k8s.api.core.v1.ServiceAccount",
        &["automountServiceAccountToken"],
    ),
    (
        "io.k8s.api.core.v1.ServiceAccountTokenProjection",
        &["expirationSeconds", "path", "user"],
    ),
    ("io.k8s.api.core.v1.ServicePort", &["appProtocol", "port"]),
    (
        "io.k8s.api.core.v1.ServiceSpec",
        &[
            "allocateLoadBalancerNodePorts",
            "internalTrafficPolicy",
            "ipFamilyPolicy",
            "loadBalancerClass",
            "trafficDistribution",
        ],
    ),
    ("io.k8s.api.core.v1.SleepAction", &["seconds"]),
    ("io.k8s.api.core.v1.Sysctl", &["name", "value"]),
    ("io.k8s.api.core.v1.Taint", &["effect", "key"]),
    ("io.k8s.api.core.v1.Toleration", &["tolerationSeconds"]),
    (
        "io.k8s.api.core.v1.TopologySelectorLabelRequirement",
        &["key"],
    ),
    (
        "io.k8s.api.core.v1.TopologySpreadConstraint",
        &[
            "maxSkew",
            "minDomains",
            "nodeAffinityPolicy",
            "nodeTaintsPolicy",
            "topologyKey",
            "whenUnsatisfiable",
        ],
    ),
    (
        "io.k8s.api.core.v1.TypedLocalObjectReference",
        &["apiGroup", "kind", "name"],
    ),
    (
        "io.k8s.api.core.v1.TypedObjectReference",
        &["apiGroup", "kind", "name", "namespace"],
    ),
    ("io.k8s.api.core.v1.Volume", &["name"]),
    ("io.k8s.api.core.v1.VolumeDevice", &["devicePath", "name"]),
    (
        "io.k8s.api.core.v1.VolumeMount",
        &["mountPath", "mountPropagation", "name", "recursiveReadOnly"],
    ),
    (
        "io.k8s.api.core.v1.VolumeMountStatus",
        &["mountPath", "name", "recursiveReadOnly"],
    ),
    (
        "io.k8s.api.core.v1.VsphereVirtualDiskVolumeSource",
        &["volumePath"],
    ),
    ("io.k8s.api.core.v1.WeightedPodAffinityTerm", &["weight"]),
    (
        "io.k8s.api.core.v1.WindowsSecurityContextOptions",
        &[
            "gmsaCredentialSpec",
            "gmsaCredentialSpecName",
            "hostProcess",
            "runAsUserName",
        ],
    ),
    (
        "io.k8s.api.discovery.v1.Endpoint",
        &["hostname", "nodeName", "zone"],
    ),
    (
        "io.k8s.api.discovery.v1.EndpointConditions",
        &["ready", "serving", "terminating"],
    ),
    (
        "io.k8s.api.discovery.v1.EndpointPort",
        &["appProtocol", "name", "port", "protocol"],
    ),
    ("io.k8s.api.discovery.v1.EndpointSlice", &["addressType"]),
    ("io.k8s.api.discovery.v1.ForNode", &["name"]),
    ("io.k8s.api.discovery.v1.ForZone", &["name"]),
    ("io.k8s.api.events.v1.EventSeries", &["count"]),
    ("io.k8s.api.networking.v1.HTTPIngressPath", &["pathType"]),
    ("io.k8s.api.networking.v1.IPBlock", &["cidr"]),
    (
        "io.k8s.api.networking.v1.IngressClassParametersReference",
        &["apiGroup", "kind", "name", "namespace", "scope"],
    ),
    (
        "io.k8s.api.networking.v1.IngressPortStatus",
        &["error", "port", "protocol"],
    ),
    ("io.k8s.api.networking.v1.IngressServiceBackend", &["name"]),
    (
        "io.k8s.api.networking.v1.IngressSpec",
        &["ingressClassName"],
    ),
    (
        "io.k8s.api.networking.v1.NetworkPolicyPort",
        &["endPort", "protocol"],
    ),
    ("io.k8s.api.networking.v1.ParentReference", &["name", "resource"]),
    ("io.k8s.api.node.v1.RuntimeClass", &["handler"]),
    (
        "io.k8s.api.policy.v1.PodDisruptionBudgetSpec",
        &["unhealthyPodEvictionPolicy"],
    ),
    (
        "io.k8s.api.policy.v1.PodDisruptionBudgetStatus",
        &[
            "currentHealthy",
            "desiredHealthy",
            "disruptionsAllowed",
            "expectedPods",
        ],
    ),
    ("io.k8s.api.rbac.v1.RoleRef", &["apiGroup", "kind", "name"]),
    ("io.k8s.api.rbac.v1.Subject", &["kind", "name"]),
    (
        "io.k8s.api.scheduling.v1.PriorityClass",
        &["preemptionPolicy", "value"],
    ),
    (
        "io.k8s.api.storage.v1.CSIDriverSpec",
        &[
            "attachRequired",
            "fsGroupPolicy",
            "nodeAllocatableUpdatePeriodSeconds",
            "podInfoOnMount",
            "preventPodSchedulingIfMissing",
            "requiresRepublish",
            "seLinuxMount",
            "serviceAccountTokenInSecrets",
            "storageCapacity",
        ],
    ),
    ("io.k8s.api.storage.v1.CSINodeDriver", &["name", "nodeID"]),
    (
        "io.k8s.api.storage.v1.StorageClass",
        &[
            "allowVolumeExpansion",
            "provisioner",
            "reclaimPolicy",
            "volumeBindingMode",
        ],
    ),
    (
        "io.k8s.api.storage.v1.TokenRequest",
        &["audience", "expirationSeconds"],
    ),
    (
        "io.k8s.api.storage.v1.VolumeAttachmentSource",
        &["persistentVolumeName"],
    ),
    (
        "io.k8s.api.storage.v1.VolumeAttachmentSpec",
        &["attacher", "nodeName"],
    ),
    (
        "io.k8s.api.storage.v1.VolumeAttachmentStatus",
        &["attached"],
    ),
    ("io.k8s.api.storage.v1.VolumeError", &["errorCode"]),
    ("io.k8s.api.storage.v1.VolumeNodeResources", &["count"]),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceColumnDefinition",
        &["jsonPath", "name", "type"],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceConversion",
        &["strategy"],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionCondition",
        &["status", "type"],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionNames",
        &["kind", "plural"],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec",
        &["group", "scope"],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion",
        &["deprecationWarning", "name", "served", "storage"],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceSubresourceScale",
        &["labelSelectorPath", "specReplicasPath", "statusReplicasPath"],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        &[
            "maxItems",
            "maxLength",
            "maxProperties",
            "maximum",
            "minItems",
            "minLength",
            "minProperties",
            "minimum",
            "multipleOf",
            "x-kubernetes-list-type",
            "x-kubernetes-map-type",
            "x-kubernetes-preserve-unknown-fields",
        ],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.SelectableField",
        &["jsonPath"],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.ServiceReference",
        &["name", "namespace", "path", "port"],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.ValidationRule",
        &["optionalOldSelf", "reason", "rule"],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.WebhookClientConfig",
        &["url"],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.Condition",
        &["message", "reason", "status", "type"],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        &[
            "gracePeriodSeconds",
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            "orphanDependents",
            "propagationPolicy",
        ],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.FieldSelectorRequirement",
        &["key", "operator"],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement",
        &["key", "operator"],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
        &["remainingItemCount"],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        &["deletionGracePeriodSeconds"],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
        &[
            "apiVersion",
            "blockOwnerDeletion",
            "controller",
            "kind",
            "name",
            "uid",
        ],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.Preconditions",
        &["resourceVersion", "uid"],
    ),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent", &["type"]),
];
