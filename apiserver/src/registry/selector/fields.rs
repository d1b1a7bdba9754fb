//! Each kind's field labels as kube-apiserver's strategies define them (`<Kind>ToSelectableFields` and the field
//! label conversion functions): the label a client selects by, where its value is in the object, and what an
//! absent field reads as (Go's zero value, as its conversion prints it: `false`, `0`, `""`).

/// One field label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldLabel {
    pub label: &'static str,
    /// A JSON pointer into the object.
    pub pointer: &'static str,
    /// What an absent field compares as.
    pub zero: &'static str,
}

const fn text(label: &'static str, pointer: &'static str) -> FieldLabel {
    FieldLabel { label, pointer, zero: "" }
}

const fn boolean(label: &'static str, pointer: &'static str) -> FieldLabel {
    FieldLabel { label, pointer, zero: "false" }
}

const fn number(label: &'static str, pointer: &'static str) -> FieldLabel {
    FieldLabel { label, pointer, zero: "0" }
}

/// Every kind's: `metadata.name`, and `metadata.namespace` (empty for cluster-scoped objects).
const META: [FieldLabel; 2] = [text("metadata.name", "/metadata/name"), text("metadata.namespace", "/metadata/namespace")];

const POD: &[FieldLabel] = &[
    text("spec.nodeName", "/spec/nodeName"),
    text("spec.restartPolicy", "/spec/restartPolicy"),
    text("spec.schedulerName", "/spec/schedulerName"),
    text("spec.serviceAccountName", "/spec/serviceAccountName"),
    boolean("spec.hostNetwork", "/spec/hostNetwork"),
    text("status.phase", "/status/phase"),
    text("status.podIP", "/status/podIP"),
    text("status.nominatedNodeName", "/status/nominatedNodeName"),
];

/// core/v1 Events: `source` is the source's component.
const EVENT: &[FieldLabel] = &[
    text("involvedObject.kind", "/involvedObject/kind"),
    text("involvedObject.namespace", "/involvedObject/namespace"),
    text("involvedObject.name", "/involvedObject/name"),
    text("involvedObject.uid", "/involvedObject/uid"),
    text("involvedObject.apiVersion", "/involvedObject/apiVersion"),
    text("involvedObject.resourceVersion", "/involvedObject/resourceVersion"),
    text("involvedObject.fieldPath", "/involvedObject/fieldPath"),
    text("reason", "/reason"),
    text("reportingComponent", "/reportingComponent"),
    text("source", "/source/component"),
    text("type", "/type"),
];

/// events.k8s.io/v1 Events: the same fields under their new names.
const EVENTS_V1: &[FieldLabel] = &[
    text("regarding.kind", "/regarding/kind"),
    text("regarding.namespace", "/regarding/namespace"),
    text("regarding.name", "/regarding/name"),
    text("regarding.uid", "/regarding/uid"),
    text("regarding.apiVersion", "/regarding/apiVersion"),
    text("regarding.resourceVersion", "/regarding/resourceVersion"),
    text("regarding.fieldPath", "/regarding/fieldPath"),
    text("reason", "/reason"),
    text("reportingController", "/reportingController"),
    text("deprecatedSource.component", "/deprecatedSource/component"),
    text("type", "/type"),
];

const SECRET: &[FieldLabel] = &[text("type", "/type")];
const NAMESPACE: &[FieldLabel] = &[text("status.phase", "/status/phase")];
const NODE: &[FieldLabel] = &[boolean("spec.unschedulable", "/spec/unschedulable")];
const REPLICAS: &[FieldLabel] = &[number("status.replicas", "/status/replicas")];
/// kube's label is `status.successful`; the field it reads is `status.succeeded`.
const JOB: &[FieldLabel] = &[number("status.successful", "/status/succeeded")];
const CSR: &[FieldLabel] = &[text("spec.signerName", "/spec/signerName")];

/// The field labels of `group`/`kind` beyond `metadata.name` and `metadata.namespace`.
fn of_kind(group: &str, kind: &str) -> &'static [FieldLabel] {
    match (group, kind) {
        ("", "Pod") => POD,
        ("", "Event") => EVENT,
        ("events.k8s.io", "Event") => EVENTS_V1,
        ("", "Secret") => SECRET,
        ("", "Namespace") => NAMESPACE,
        ("", "Node") => NODE,
        ("", "ReplicationController") | ("apps", "ReplicaSet") => REPLICAS,
        ("batch", "Job") => JOB,
        ("certificates.k8s.io", "CertificateSigningRequest") => CSR,
        _ => &[],
    }
}

/// The field label `label` of `group`/`kind`, if kube serves one.
pub fn find(group: &str, kind: &str, label: &str) -> Option<FieldLabel> {
    META.iter().chain(of_kind(group, kind)).find(|f| f.label == label).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_the_kinds_own() {
        assert_eq!(find("batch", "Job", "status.successful").map(|f| f.pointer), Some("/status/succeeded"));
        assert_eq!(find("", "Event", "source").map(|f| f.pointer), Some("/source/component"));
        assert_eq!(find("", "Pod", "spec.hostNetwork").map(|f| f.zero), Some("false"));
        assert!(find("", "ConfigMap", "status.phase").is_none());
        assert!(find("events.k8s.io", "Event", "involvedObject.kind").is_none(), "events.k8s.io names it regarding.kind");
        assert!(find("", "ConfigMap", "metadata.namespace").is_some());
    }
}
