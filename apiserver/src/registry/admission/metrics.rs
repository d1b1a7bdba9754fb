//! kube-apiserver's admission metrics, with its names, labels and buckets: how long each admission step took
//! (`apiserver_admission_step_admission_duration_seconds`, `type` admit or validate), and for each admission
//! webhook called, how long it took, what it answered and why it refused
//! (`apiserver_admission_webhook_admission_duration_seconds`, `apiserver_admission_webhook_request_total`,
//! `apiserver_admission_webhook_rejection_count`). A webhook's `name` is as its configuration names it; the
//! values of every other label come from small fixed sets.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::Operation;

/// kube's buckets for a whole admission step.
const STEP_BUCKETS: [f64; 6] = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5];
/// kube's buckets for one webhook call.
const WEBHOOK_BUCKETS: [f64; 8] = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepLabels {
    operation: &'static str,
    rejected: &'static str,
    r#type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    name: String,
    operation: &'static str,
    rejected: &'static str,
    r#type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    code: u16,
    name: String,
    operation: &'static str,
    rejected: &'static str,
    r#type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RejectionLabels {
    error_type: &'static str,
    name: String,
    operation: &'static str,
    rejection_code: u16,
    r#type: &'static str,
}

/// What one webhook call came to.
pub enum WebhookOutcome {
    /// The webhook answered and allowed the write.
    Allowed,
    /// The webhook answered and refused the write with this code.
    Denied(u16),
    /// No valid answer (down, timed out, garbage); `rejected` when its failure policy refuses the write.
    Failed { rejected: bool },
}

/// The admission families, registered with the server's `/metrics`.
pub struct AdmissionMetrics {
    steps: Family<StepLabels, Histogram>,
    webhook_durations: Family<WebhookLabels, Histogram>,
    webhook_requests: Family<RequestLabels, Counter>,
    webhook_rejections: Family<RejectionLabels, Counter>,
}

impl Default for AdmissionMetrics {
    fn default() -> AdmissionMetrics {
        AdmissionMetrics {
            steps: Family::new_with_constructor(|| Histogram::new(STEP_BUCKETS)),
            webhook_durations: Family::new_with_constructor(|| Histogram::new(WEBHOOK_BUCKETS)),
            webhook_requests: Family::default(),
            webhook_rejections: Family::default(),
        }
    }
}

fn operation(operation: Operation) -> &'static str {
    match operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
    }
}

fn yes_no(value: bool) -> &'static str {
    if value { "true" } else { "false" }
}

impl AdmissionMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register("apiserver_admission_step_admission_duration_seconds",
            "Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit).",
            self.steps.clone());
        registry.register("apiserver_admission_webhook_admission_duration_seconds",
            "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
            self.webhook_durations.clone());
        registry.register("apiserver_admission_webhook_request",
            "Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation.",
            self.webhook_requests.clone());
        registry.register("apiserver_admission_webhook_rejection_count",
            "Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation.",
            self.webhook_rejections.clone());
    }

    /// One admission step (`validate`: the validating phase, else the mutating one) of a write.
    pub fn step(&self, validate: bool, op: Operation, rejected: bool, took: Duration) {
        let labels = StepLabels { operation: operation(op), rejected: yes_no(rejected), r#type: if validate { "validate" } else { "admit" } };
        self.steps.get_or_create(&labels).observe(took.as_secs_f64());
    }

    /// One call of webhook `name` (`mutating`: a mutating webhook's, kube's type `admit`).
    pub fn webhook(&self, name: &str, mutating: bool, op: Operation, outcome: &WebhookOutcome, took: Duration) {
        let kind = if mutating { "admit" } else { "validating" };
        let (rejected, code) = match outcome {
            WebhookOutcome::Allowed => (false, 200),
            WebhookOutcome::Denied(_) => (true, 200),
            WebhookOutcome::Failed { rejected } => (*rejected, 0),
        };
        let (op, rejected_text) = (operation(op), yes_no(rejected));
        self.webhook_durations.get_or_create(&WebhookLabels { name: name.to_owned(), operation: op, rejected: rejected_text, r#type: kind })
            .observe(took.as_secs_f64());
        self.webhook_requests.get_or_create(&RequestLabels { code, name: name.to_owned(), operation: op, rejected: rejected_text, r#type: kind }).inc();
        let rejection = match outcome {
            WebhookOutcome::Denied(code) => Some(("no_error", *code)),
            WebhookOutcome::Failed { rejected: true } => Some(("calling_webhook_error", 0)),
            _ => None,
        };
        if let Some((error_type, rejection_code)) = rejection {
            self.webhook_rejections.get_or_create(&RejectionLabels { error_type, name: name.to_owned(), operation: op, rejection_code, r#type: kind }).inc();
        }
    }
}
