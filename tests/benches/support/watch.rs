//! The watch row of issue 19, shared by the API bench (against kspaces) and the floor bench (against a server that
//! does nothing else): 100 watchers on one namespace, then a create every 50 ms on a fixed schedule, 200 of them.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ListParams, ObjectMeta, PostParams, WatchParams};
use kube::{Api, Client};
use tokio::task::JoinHandle;

use super::{configmap, millis, percentile, receive_added, Result};

pub const WATCHERS: usize = 100;
pub const WATCHED_CREATES: usize = 200;
/// 20 creates/s (issue 19's load for the watch target).
pub const WATCHED_CREATE_EVERY: Duration = Duration::from_millis(50);

/// The watchers, open and waiting for the creates.
pub struct Watchers {
    api: Api<ConfigMap>,
    watchers: Vec<JoinHandle<Result<Vec<(usize, Instant)>>>>,
}

/// What the creates' events took: from sending a create to each watcher decoding its ADDED event (20,000
/// samples); per create, when its first and its last watcher heard of it (the spread is the fan-out's); and the
/// create's own answer, its durable commit included.
pub struct FanOut {
    pub events: Vec<Duration>,
    pub first: Vec<Duration>,
    pub last: Vec<Duration>,
    pub answers: Vec<Duration>,
}

impl Watchers {
    /// Creates `namespace` and opens the watchers on it, from the resourceVersion of a list.
    pub async fn open(client: &Client, namespace: &str) -> Result<Watchers> {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let object = Namespace { metadata: ObjectMeta { name: Some(namespace.into()), ..ObjectMeta::default() }, ..Namespace::default() };
        namespaces.create(&PostParams::default(), &object).await?;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let version = api.list(&ListParams::default()).await?.metadata.resource_version.unwrap_or_default();
        let mut watchers = Vec::new();
        for _ in 0..WATCHERS {
            let stream = api.watch(&WatchParams::default().disable_bookmarks().timeout(60), &version).await?;
            watchers.push(tokio::spawn(receive_added(Box::pin(stream), WATCHED_CREATES)));
        }
        Ok(Watchers { api, watchers })
    }

    /// Sends the creates on schedule, then collects every watcher's arrivals.
    pub async fn measure(self) -> Result<FanOut> {
        let mut sent = Vec::with_capacity(WATCHED_CREATES);
        let mut answers = Vec::with_capacity(WATCHED_CREATES);
        let mut schedule = tokio::time::interval(WATCHED_CREATE_EVERY);
        for i in 0..WATCHED_CREATES {
            schedule.tick().await;
            let start = Instant::now();
            sent.push(start);
            self.api.create(&PostParams::default(), &configmap(format!("w-{i}"))).await?;
            answers.push(start.elapsed());
        }
        let mut events = Vec::new();
        let mut first = vec![Duration::MAX; WATCHED_CREATES];
        let mut last = vec![Duration::ZERO; WATCHED_CREATES];
        for watcher in self.watchers {
            for (index, received) in watcher.await?? {
                let latency = received.duration_since(sent[index]);
                events.push(latency);
                first[index] = first[index].min(latency);
                last[index] = last[index].max(latency);
            }
        }
        for figures in [&mut events, &mut first, &mut last, &mut answers] {
            figures.sort();
        }
        Ok(FanOut { events, first, last, answers })
    }
}

impl FanOut {
    pub fn event_p99(&self) -> Duration {
        percentile(&self.events, 99.0)
    }

    /// The row's result column.
    pub fn summary(&self) -> String {
        format!(
            "p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} events); a create's first watcher p50 {:.2} ms, its last p50 \
             {:.2} ms, p99 {:.2} ms; the create's answer p50 {:.2} ms, p99 {:.2} ms",
            millis(percentile(&self.events, 50.0)),
            millis(self.event_p99()),
            millis(self.events.last().copied().unwrap_or_default()),
            self.events.len(),
            millis(percentile(&self.first, 50.0)),
            millis(percentile(&self.last, 50.0)),
            millis(percentile(&self.last, 99.0)),
            millis(percentile(&self.answers, 50.0)),
            millis(percentile(&self.answers, 99.0)),
        )
    }

    /// The row's measurement column.
    pub fn measurement() -> String {
        format!("watch latency, create → ADDED received, {WATCHERS} watchers, {} creates/s", 1000 / WATCHED_CREATE_EVERY.as_millis())
    }
}
