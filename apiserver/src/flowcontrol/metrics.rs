//! kube's `apiserver_flowcontrol_*` metrics. Label values are FlowSchema and PriorityLevelConfiguration names
//! (objects only system users write) and kube's rejection reasons: never a tenant or a user. The series of a
//! schema are made when the configuration is compiled, so a request only moves counters it already holds.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::queueset::Rejection;

/// kube's `apiserver_flowcontrol_request_wait_duration_seconds` buckets.
const WAIT_BUCKETS: [f64; 13] = [0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SchemaLabels {
    flow_schema: String,
    priority_level: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RejectedLabels {
    flow_schema: String,
    priority_level: String,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WaitLabels {
    execute: &'static str,
    flow_schema: String,
    priority_level: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LevelLabels {
    priority_level: String,
}

/// The families (shared handles), registered with the server's registry once.
#[derive(Clone)]
pub struct FlowMetrics {
    inqueue: Family<SchemaLabels, Gauge>,
    executing_requests: Family<SchemaLabels, Gauge>,
    executing_seats: Family<SchemaLabels, Gauge>,
    dispatched: Family<SchemaLabels, Counter>,
    rejected: Family<RejectedLabels, Counter>,
    wait: Family<WaitLabels, Histogram, fn() -> Histogram>,
    nominal: Family<LevelLabels, Gauge>,
}

/// One schema's series.
pub struct SchemaMetrics {
    pub inqueue: Gauge,
    pub executing_requests: Gauge,
    pub executing_seats: Gauge,
    pub dispatched: Counter,
    rejected: [Counter; 3],
    waited_and_executed: Histogram,
    waited_and_rejected: Histogram,
}

impl SchemaMetrics {
    /// A request of this schema waited `seconds`, then ran or was refused.
    pub fn waited(&self, seconds: f64, outcome: Result<(), Rejection>) {
        match outcome {
            Ok(()) => {
                self.dispatched.inc();
                self.waited_and_executed.observe(seconds);
            }
            Err(rejection) => {
                self.waited_and_rejected.observe(seconds);
                self.rejected[rejection as usize].inc();
            }
        }
    }
}

impl Default for FlowMetrics {
    fn default() -> FlowMetrics {
        FlowMetrics {
            inqueue: Family::default(),
            executing_requests: Family::default(),
            executing_seats: Family::default(),
            dispatched: Family::default(),
            rejected: Family::default(),
            wait: Family::new_with_constructor(|| Histogram::new(WAIT_BUCKETS)),
            nominal: Family::default(),
        }
    }
}

impl FlowMetrics {
    /// Adds the families to the server's registry.
    pub fn register(&self, registry: &mut Registry) {
        let metrics = self;
        registry.register("apiserver_flowcontrol_current_inqueue_requests",
            "Number of requests currently pending in queues of the API Priority and Fairness subsystem", metrics.inqueue.clone());
        registry.register("apiserver_flowcontrol_current_executing_requests",
            "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
            metrics.executing_requests.clone());
        registry.register("apiserver_flowcontrol_current_executing_seats",
            "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem",
            metrics.executing_seats.clone());
        // The counters' `_total` suffix is added by the exposition.
        registry.register("apiserver_flowcontrol_dispatched_requests",
            "Number of requests executed by API Priority and Fairness subsystem", metrics.dispatched.clone());
        registry.register("apiserver_flowcontrol_rejected_requests",
            "Number of requests rejected by API Priority and Fairness subsystem", metrics.rejected.clone());
        registry.register("apiserver_flowcontrol_request_wait_duration_seconds",
            "Length of time a request spent waiting in its queue", metrics.wait.clone());
        registry.register("apiserver_flowcontrol_nominal_limit_seats",
            "Nominal number of execution seats configured for each priority level", metrics.nominal.clone());
    }

    /// The series of schema `flow_schema`, whose level is `priority_level`.
    pub fn schema(&self, flow_schema: &str, priority_level: &str) -> SchemaMetrics {
        let labels = SchemaLabels { flow_schema: flow_schema.to_owned(), priority_level: priority_level.to_owned() };
        let rejected = |rejection: Rejection| {
            let labels = RejectedLabels { flow_schema: flow_schema.to_owned(), priority_level: priority_level.to_owned(), reason: rejection.reason() };
            self.rejected.get_or_create(&labels).clone()
        };
        let wait = |execute: &'static str| {
            let labels = WaitLabels { execute, flow_schema: flow_schema.to_owned(), priority_level: priority_level.to_owned() };
            self.wait.get_or_create(&labels).clone()
        };
        SchemaMetrics {
            inqueue: self.inqueue.get_or_create(&labels).clone(),
            executing_requests: self.executing_requests.get_or_create(&labels).clone(),
            executing_seats: self.executing_seats.get_or_create(&labels).clone(),
            dispatched: self.dispatched.get_or_create(&labels).clone(),
            // In the order of `Rejection`'s variants.
            rejected: [rejected(Rejection::QueueFull), rejected(Rejection::TimedOut), rejected(Rejection::ConcurrencyLimit)],
            waited_and_executed: wait("true"),
            waited_and_rejected: wait("false"),
        }
    }

    /// Level `priority_level` has `seats` seats.
    pub fn nominal_limit(&self, priority_level: &str, seats: u32) {
        self.nominal.get_or_create(&LevelLabels { priority_level: priority_level.to_owned() }).set(i64::from(seats));
    }
}
