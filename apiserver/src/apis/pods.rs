//! The subresources of pods kube-apiserver serves without a kubelet, as its discovery lists them: what discovery
//! announces and `handlers/pod.rs` answers.

/// A subresource of pods: its name, the kind it answers with (group, version, kind) and the
/// verbs discovery lists.
pub struct PodSubresource {
    pub name: &'static str,
    pub kind: (&'static str, &'static str, &'static str),
    pub verbs: &'static [&'static str],
}

const fn sub(name: &'static str, kind: (&'static str, &'static str, &'static str), verbs: &'static [&'static str]) -> PodSubresource {
    PodSubresource { name, kind, verbs }
}

/// The subresources of pods, as kube-apiserver 1.32's discovery lists them.
pub const SUBRESOURCES: &[PodSubresource] = &[
    sub("attach", ("", "v1", "PodAttachOptions"), &["create", "get"]),
    sub("binding", ("", "v1", "Binding"), &["create"]),
    sub("ephemeralcontainers", ("", "v1", "Pod"), &["get", "patch", "update"]),
    sub("eviction", ("policy", "v1", "Eviction"), &["create"]),
    sub("exec", ("", "v1", "PodExecOptions"), &["create", "get"]),
    sub("log", ("", "v1", "Pod"), &["get"]),
    sub("portforward", ("", "v1", "PodPortForwardOptions"), &["create", "get"]),
];
