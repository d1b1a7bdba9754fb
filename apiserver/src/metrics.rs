//! `/metrics`: kube-apiserver's request metrics (names, labels and buckets), exposed by the `prometheus-client`
//! crate in the OpenMetrics text format, so existing dashboards and alerts work.
//!
//! Every label value comes from a bounded set, as kube-apiserver's do: the verb from kube's list of verbs (else
//! `other`), the group, version, resource and subresource only of a request that reached a served resource
//! (anything else, unknown paths, 401s and 403s included, has them empty), the scope, the dry-run value and the
//! code. A flood of made-up paths therefore adds no series.

use std::sync::atomic::{AtomicI64, Ordering};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::apis::query;
use crate::apis::request_info::RequestInfo;
use crate::registry::ResourceInfo;

/// kube-apiserver's `apiserver_request_duration_seconds` buckets.
const BUCKETS: [f64; 23] =
    [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0];

/// The verbs kube-apiserver reports; any other is `other`.
const VERBS: [&str; 14] =
    ["APPLY", "CONNECT", "CREATE", "DELETE", "DELETECOLLECTION", "GET", "LIST", "PATCH", "POST", "PROXY", "PUT", "UPDATE", "WATCH", "WATCHLIST"];

/// The subresources this server serves; any other is reported empty.
const SUBRESOURCES: [&str; 4] = ["status", "scale", "finalize", "token"];

/// The server-side apply content type (kube reports such a PATCH as `APPLY`).
const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// The labels of one request (in the order kube's exposition sorts them).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub component: &'static str,
    pub dry_run: String,
    pub group: String,
    pub resource: String,
    pub scope: &'static str,
    pub subresource: String,
    pub verb: &'static str,
    pub version: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    code: u16,
    #[prometheus(flatten)]
    request: RequestLabels,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    request_kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ComponentLabels {
    component: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabels {
    name: &'static str,
}

/// What a request was, as far as its labels go.
pub struct Request<'a> {
    pub method: &'a str,
    pub info: &'a RequestInfo,
    /// The served resource the request reached, if it got that far.
    pub resource: Option<&'a ResourceInfo>,
    pub query: &'a str,
    pub content_type: Option<&'a str>,
}

/// kube's `CleanScope`.
fn scope(info: &RequestInfo) -> &'static str {
    if !info.name.is_empty() || info.verb == "create" {
        "resource"
    } else if info.namespace.is_some() {
        "namespace"
    } else if info.is_resource {
        "cluster"
    } else {
        ""
    }
}

/// kube's reported verb: the HTTP method (GET of a collection is LIST), WATCH for watches, APPLY for server-side
/// apply, `other` for anything not in kube's list.
fn verb(request: &Request<'_>, scope: &str) -> &'static str {
    let method = request.method.to_ascii_uppercase();
    let watch = query::first(request.query, "watch").is_some_and(|v| query::go_query_bool(&v));
    let reported = match method.as_str() {
        "GET" | "HEAD" if request.info.verb == "watch" || watch => "WATCH",
        "GET" | "HEAD" if scope != "resource" && !scope.is_empty() => "LIST",
        "GET" | "HEAD" => "GET",
        "PATCH" if request.content_type == Some(APPLY_PATCH) => "APPLY",
        other => other,
    };
    VERBS.iter().find(|v| **v == reported).copied().unwrap_or("other")
}

/// kube's `cleanDryRun`: empty, the sorted distinct values when all are `All`, else `invalid`.
fn dry_run(query_string: &str) -> String {
    let values = query::all(query_string, "dryRun");
    match values.as_slice() {
        [] => String::new(),
        values if values.iter().all(|v| v == "All") => "All".to_owned(),
        _ => "invalid".to_owned(),
    }
}

impl RequestLabels {
    /// The labels of `request`, every value from a bounded set.
    pub fn of(request: &Request<'_>) -> RequestLabels {
        let scope = scope(request.info);
        let (group, version, resource, subresource) = match request.resource {
            Some(resource) => {
                let subresource = SUBRESOURCES.iter().find(|s| **s == request.info.subresource).copied().unwrap_or_default();
                (resource.group.clone(), resource.version.clone(), resource.plural.clone(), subresource.to_owned())
            }
            None => Default::default(),
        };
        RequestLabels {
            component: "apiserver",
            dry_run: dry_run(request.query),
            group,
            resource,
            scope,
            subresource,
            verb: verb(request, scope),
            version,
        }
    }
}

/// True for requests kube counts as mutating in `apiserver_current_inflight_requests`.
fn mutating(info: &RequestInfo) -> bool {
    !matches!(info.verb.as_str(), "get" | "list" | "watch" | "head" | "options")
}

/// The server's metrics and their registry.
pub struct Metrics {
    registry: Registry,
    requests: Family<CodeLabels, Counter>,
    durations: Family<RequestLabels, Histogram>,
    inflight: Family<KindLabels, Gauge>,
    longrunning: Family<ComponentLabels, Gauge>,
    /// 1 while this process runs the controllers (it holds their Lease, or nobody else shares the store).
    leading: Gauge,
    /// Requests being served, by kind, so the gauge never counts a request twice.
    in_flight: [AtomicI64; 2],
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::default();
        let requests = Family::<CodeLabels, Counter>::default();
        let durations = Family::<RequestLabels, Histogram>::new_with_constructor(|| Histogram::new(BUCKETS));
        let inflight = Family::<KindLabels, Gauge>::default();
        let longrunning = Family::<ComponentLabels, Gauge>::default();
        // The counter's `_total` suffix is added by the exposition.
        registry.register("apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code",
            requests.clone());
        registry.register("apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component",
            durations.clone());
        registry.register("apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per request kind in last second",
            inflight.clone());
        registry.register("apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way",
            longrunning.clone());
        for request_kind in ["mutating", "readOnly"] {
            inflight.get_or_create(&KindLabels { request_kind }).set(0);
        }
        longrunning.get_or_create(&ComponentLabels { component: "apiserver" }).set(0);
        // client-go's leader election metric, with the Lease's name as its `name`.
        let status = Family::<NameLabels, Gauge>::default();
        registry.register("leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name",
            status.clone());
        let leading = status.get_or_create(&NameLabels { name: crate::controllers::leader::LEASE_NAME }).clone();
        Metrics { registry, requests, durations, inflight, longrunning, leading, in_flight: [AtomicI64::new(0), AtomicI64::new(0)] }
    }
}

impl Metrics {
    fn kind(info: &RequestInfo) -> (usize, &'static str) {
        if mutating(info) { (0, "mutating") } else { (1, "readOnly") }
    }

    /// A request starts being served.
    pub fn start(&self, info: &RequestInfo) {
        let (index, request_kind) = Metrics::kind(info);
        let now = self.in_flight[index].fetch_add(1, Ordering::Relaxed) + 1;
        self.inflight.get_or_create(&KindLabels { request_kind }).set(now.max(0));
    }

    /// A request was answered with `code` after `seconds`.
    pub fn finish(&self, info: &RequestInfo, labels: RequestLabels, code: u16, seconds: f64) {
        let (index, request_kind) = Metrics::kind(info);
        let now = self.in_flight[index].fetch_sub(1, Ordering::Relaxed) - 1;
        self.inflight.get_or_create(&KindLabels { request_kind }).set(now.max(0));
        self.durations.get_or_create(&labels).observe(seconds);
        self.requests.get_or_create(&CodeLabels { code, request: labels }).inc();
    }

    /// A long-running request (a watch stream) starts.
    pub fn longrunning_started(&self) {
        self.longrunning.get_or_create(&ComponentLabels { component: "apiserver" }).inc();
    }

    /// A long-running request ends.
    pub fn longrunning_ended(&self) {
        self.longrunning.get_or_create(&ComponentLabels { component: "apiserver" }).dec();
    }

    /// The registry, for families kept elsewhere (the flow control's `apiserver_flowcontrol_*`).
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// The gauge that says whether this process runs the controllers (`leader_election_master_status`).
    pub fn leading(&self) -> Gauge {
        self.leading.clone()
    }

    /// The OpenMetrics text exposition (its media type is `CONTENT_TYPE`).
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Err(err) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::warn!(%err, "encoding /metrics");
        }
        out
    }
}

/// The media type of `Metrics::render`.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::request_info;

    fn labels(method: &str, path: &str, query: &str, content_type: Option<&str>, resource: Option<&ResourceInfo>) -> RequestLabels {
        let info = request_info::parse(method, path, query);
        RequestLabels::of(&Request { method, info: &info, resource, query, content_type })
    }

    fn configmaps() -> ResourceInfo {
        crate::registry::builtin::builtin_resources().into_iter().find(|r| r.plural == "configmaps").expect("configmaps")
    }

    #[test]
    fn verbs_and_scopes_are_kube_apiservers() {
        let cm = configmaps();
        let row = |method: &str, path: &str, query: &str, content_type: Option<&str>| {
            let l = labels(method, path, query, content_type, Some(&cm));
            (l.verb, l.scope)
        };
        assert_eq!(row("GET", "/api/v1/namespaces/d/configmaps", "", None), ("LIST", "namespace"));
        assert_eq!(row("GET", "/api/v1/configmaps", "watch=1", None), ("WATCH", "cluster"));
        assert_eq!(row("GET", "/api/v1/watch/namespaces/d/configmaps", "", None), ("WATCH", "namespace"));
        assert_eq!(row("GET", "/api/v1/namespaces/d/configmaps/x", "", None), ("GET", "resource"));
        assert_eq!(row("POST", "/api/v1/namespaces/d/configmaps", "", None), ("POST", "resource"));
        assert_eq!(row("PUT", "/api/v1/namespaces/d/configmaps/x", "", None), ("PUT", "resource"));
        assert_eq!(row("PATCH", "/api/v1/namespaces/d/configmaps/x", "", Some("application/apply-patch+yaml")), ("APPLY", "resource"));
        assert_eq!(row("DELETE", "/api/v1/namespaces/d/configmaps", "", None), ("DELETE", "namespace"));
        assert_eq!(row("BREW", "/api/v1/namespaces/d/configmaps", "", None), ("other", "namespace"));
    }

    #[test]
    fn label_values_come_from_bounded_sets() {
        let unresolved = labels("GET", "/apis/made.up/v9/things/x/y", "dryRun=Some", None, None);
        assert_eq!((unresolved.group.as_str(), unresolved.version.as_str(), unresolved.resource.as_str(), unresolved.subresource.as_str()),
            ("", "", "", ""), "an unserved path names nothing");
        assert_eq!(unresolved.dry_run, "invalid");
        let cm = configmaps();
        let odd = labels("GET", "/api/v1/namespaces/d/configmaps/x/anything", "dryRun=All&dryRun=All", None, Some(&cm));
        assert_eq!((odd.resource.as_str(), odd.subresource.as_str(), odd.dry_run.as_str()), ("configmaps", "", "All"));
        let discovery = labels("GET", "/apis/made.up/v9", "", None, None);
        assert_eq!((discovery.group.as_str(), discovery.version.as_str(), discovery.scope), ("", "", ""));
    }

    #[test]
    fn the_exposition_has_kube_apiservers_names_and_buckets() {
        let metrics = Metrics::default();
        let cm = configmaps();
        let info = request_info::parse("GET", "/api/v1/namespaces/d/configmaps", "");
        metrics.start(&info);
        let request = Request { method: "GET", info: &info, resource: Some(&cm), query: "", content_type: None };
        metrics.finish(&info, RequestLabels::of(&request), 200, 0.01);
        let text = metrics.render();
        assert!(text.contains(r#"apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} 1"#), "{text}");
        assert!(text.contains(r#"le="45.0""#) && text.contains(r#"le="0.005""#), "{text}");
        assert!(text.contains("apiserver_request_duration_seconds_count{"), "{text}");
        assert!(text.contains(r#"apiserver_current_inflight_requests{request_kind="readOnly"} 0"#), "{text}");
        assert!(text.contains(r#"apiserver_longrunning_requests{component="apiserver"} 0"#), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
