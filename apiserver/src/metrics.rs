//! `/metrics`: Prometheus text with kube-apiserver's metric names, so existing dashboards and alerts work.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

/// kube-apiserver's `apiserver_request_duration_seconds` buckets.
const BUCKETS: [f64; 22] = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 60.0];

/// The labels of one request.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RequestLabels {
    pub verb: String,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub scope: &'static str,
}

#[derive(Default)]
struct Histogram {
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(RequestLabels, u16), u64>>,
    durations: Mutex<BTreeMap<RequestLabels, Histogram>>,
    inflight: AtomicI64,
    pub longrunning: AtomicI64,
}

impl Metrics {
    pub fn start(&self) {
        self.inflight.fetch_add(1, Ordering::Relaxed);
    }

    pub fn finish(&self, labels: RequestLabels, code: u16, seconds: f64) {
        self.inflight.fetch_sub(1, Ordering::Relaxed);
        let mut durations = self.durations.lock().unwrap_or_else(|p| p.into_inner());
        let histogram = durations.entry(labels.clone()).or_default();
        for (bucket, bound) in histogram.buckets.iter_mut().zip(BUCKETS) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
        histogram.count += 1;
        histogram.sum += seconds;
        drop(durations);
        *self.requests.lock().unwrap_or_else(|p| p.into_inner()).entry((labels, code)).or_default() += 1;
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let labels = |l: &RequestLabels| {
            format!("component=\"apiserver\",dry_run=\"\",group=\"{}\",resource=\"{}\",scope=\"{}\",subresource=\"{}\",verb=\"{}\",version=\"{}\"",
                l.group, l.resource, l.scope, l.subresource, l.verb, l.version)
        };
        out.push_str("# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.\n# TYPE apiserver_request_total counter\n");
        for ((l, code), count) in self.requests.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let _ = writeln!(out, "apiserver_request_total{{code=\"{code}\",{}}} {count}", labels(l));
        }
        out.push_str("# HELP apiserver_request_duration_seconds Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.\n# TYPE apiserver_request_duration_seconds histogram\n");
        for (l, h) in self.durations.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let base = labels(l);
            for (bound, count) in BUCKETS.iter().zip(h.buckets) {
                let _ = writeln!(out, "apiserver_request_duration_seconds_bucket{{{base},le=\"{bound}\"}} {count}");
            }
            let _ = writeln!(out, "apiserver_request_duration_seconds_bucket{{{base},le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(out, "apiserver_request_duration_seconds_sum{{{base}}} {}", h.sum);
            let _ = writeln!(out, "apiserver_request_duration_seconds_count{{{base}}} {}", h.count);
        }
        let _ = writeln!(out, "# HELP apiserver_current_inflight_requests Maximal number of currently used inflight request limit of this apiserver per request kind in last second.\n# TYPE apiserver_current_inflight_requests gauge\napiserver_current_inflight_requests{{request_kind=\"mutating\"}} 0\napiserver_current_inflight_requests{{request_kind=\"readOnly\"}} {}", self.inflight.load(Ordering::Relaxed).max(0));
        let _ = writeln!(out, "# HELP apiserver_longrunning_requests Gauge of all active long-running apiserver requests.\n# TYPE apiserver_longrunning_requests gauge\napiserver_longrunning_requests{{component=\"apiserver\"}} {}", self.longrunning.load(Ordering::Relaxed).max(0));
        out
    }
}
