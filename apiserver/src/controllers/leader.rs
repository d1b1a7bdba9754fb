//! Leader election for the controllers, as client-go's `leaderelection` does it over a `coordination.k8s.io/v1`
//! Lease: replicas sharing one store race for Lease `kspaces-controllers` in namespace `kube-system` of the
//! `system:admin` workspace (kcp's home of leases). The holder renews it every retry period and runs the
//! controllers; the others try every retry period and take it once its record has not changed for a lease
//! duration, measured on their own clock when they saw it change (clocks of different machines are never
//! compared). A holder that cannot renew within the renew deadline (shorter than the lease duration) stops its
//! controllers before anyone else may take over. Writes are compare-and-swap on the Lease's resourceVersion, so
//! two replicas never both win one round.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use kspaces_storage::SpaceName;
use prometheus_client::metrics::gauge::Gauge;
use serde_json::{json, Value};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::registry::{GenericStore, Part, ResourceInfo, Scope, WriteContext};
use crate::status::{ApiError, ApiResult};

/// The Lease the controllers' leader holds.
pub const LEASE_NAME: &str = "kspaces-controllers";
pub const LEASE_NAMESPACE: &str = "kube-system";
/// The field manager of the Lease writes.
const MANAGER: &str = "kspaces-leader-election";

/// kube-controller-manager's `--leader-elect-*` durations.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

/// One replica's candidacy.
pub struct Elector {
    pub registry: GenericStore,
    /// The Lease resource.
    pub leases: Arc<ResourceInfo>,
    /// The space holding the Lease (`system:admin`).
    pub space: SpaceName,
    /// `<hostname>_<pid>_<8 hex>`: which process holds the Lease.
    pub identity: String,
    pub timing: Timing,
}

/// Stops a running elector on a graceful shutdown: its controllers are stopped and its Lease given up, so another
/// replica takes over at its next try instead of after a lease duration (client-go's `ReleaseOnCancel`).
pub struct Stepdown {
    stop: watch::Sender<bool>,
    done: oneshot::Receiver<()>,
}

impl Stepdown {
    /// Asks the elector to stop and waits for it, at most `within`.
    pub async fn release(self, within: Duration) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(within, self.done).await;
    }
}

/// The Lease as last seen, and when this process saw it change (every renewal changes it).
struct Observed {
    lease: Value,
    at: Instant,
}

/// This process's name in the Lease: unique per process, and telling an operator which host and pid it is.
pub fn identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|h| h.trim().to_owned()).filter(|h| !h.is_empty());
    format!("{}_{}_{:08x}", host.unwrap_or_else(|| "kspaces".to_owned()), std::process::id(), rand::random::<u32>())
}

fn micro_time() -> String {
    Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// Stops the controllers' tasks and says this process no longer runs them.
fn stop_all(running: &mut Vec<JoinHandle<()>>, leading: &Gauge) {
    for task in running.drain(..) {
        task.abort();
    }
    leading.set(0);
}

fn holder(lease: &Value) -> &str {
    lease.pointer("/spec/holderIdentity").and_then(Value::as_str).unwrap_or_default()
}

impl Elector {
    /// A handle that stops `run` (see `Stepdown`), and what `run` listens to.
    pub fn stepdown() -> (Stepdown, (watch::Receiver<bool>, oneshot::Sender<()>)) {
        let (stop, stopped) = watch::channel(false);
        let (finished, done) = oneshot::channel();
        (Stepdown { stop, done }, (stopped, finished))
    }

    /// Runs until `stop` says so (see `Stepdown`): while this process holds the Lease, the tasks `start` spawned
    /// run; they are stopped (aborted) when it is lost, and `start` is called again when it is won again.
    /// `leading` is set to 1 while they run, else 0.
    pub async fn run(self, leading: Gauge, start: impl Fn() -> Vec<JoinHandle<()>>, stop: (watch::Receiver<bool>, oneshot::Sender<()>)) {
        let (mut stopped, finished) = stop;
        let mut observed: Option<Observed> = None;
        let mut running: Vec<JoinHandle<()>> = Vec::new();
        let mut renewed: Option<Instant> = None;
        loop {
            match self.try_acquire_or_renew(&mut observed).await {
                Ok(true) => {
                    renewed = Some(Instant::now());
                    if running.is_empty() {
                        tracing::warn!(identity = %self.identity, "leader election: this replica leads; starting the controllers");
                        running = start();
                        leading.set(1);
                    }
                }
                Ok(false) => {}
                Err(err) => tracing::warn!(err = %err.message, "leader election: cannot read or write the Lease"),
            }
            let lost = renewed.is_some_and(|at| at.elapsed() >= self.timing.renew_deadline) || observed.as_ref().is_some_and(|o| holder(&o.lease) != self.identity);
            if lost && !running.is_empty() {
                tracing::warn!(identity = %self.identity, "leader election: the Lease is lost; stopping the controllers");
                stop_all(&mut running, &leading);
                renewed = None;
            }
            tokio::select! {
                _ = tokio::time::sleep(self.timing.retry_period) => {}
                _ = stopped.wait_for(|stop| *stop) => {
                    stop_all(&mut running, &leading);
                    if let Err(err) = self.release().await {
                        tracing::warn!(err = %err.message, "leader election: could not give the Lease up");
                    }
                    let _ = finished.send(());
                    return;
                }
            }
        }
    }

    /// Gives the Lease up if this process holds it: no holder, a one-second duration (client-go's release).
    async fn release(&self) -> ApiResult<()> {
        let scope = Scope::one(self.space.clone(), Some(LEASE_NAMESPACE.to_owned()));
        let lease = self.registry.get(&self.leases, &scope, LEASE_NAME).await?;
        if holder(&lease) != self.identity {
            return Ok(());
        }
        let mut next = lease;
        next["spec"]["holderIdentity"] = json!("");
        next["spec"]["leaseDurationSeconds"] = json!(1);
        next["spec"]["renewTime"] = json!(micro_time());
        let write = WriteContext::server(MANAGER, "");
        self.registry.update(&self.leases, &scope, LEASE_NAME, next, Part::Main, &write).await?;
        tracing::warn!(identity = %self.identity, "leader election: gave the Lease up");
        Ok(())
    }

    /// One round: true if this process holds the Lease afterwards.
    async fn try_acquire_or_renew(&self, observed: &mut Option<Observed>) -> ApiResult<bool> {
        let scope = Scope::one(self.space.clone(), Some(LEASE_NAMESPACE.to_owned()));
        let write = WriteContext::server(MANAGER, "");
        let now = micro_time();
        let seconds = self.timing.lease_duration.as_secs().max(1);
        let lease = match self.registry.get(&self.leases, &scope, LEASE_NAME).await {
            Ok(lease) => lease,
            Err(ApiError { code: 404, .. }) => {
                let lease = json!({
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": LEASE_NAME, "namespace": LEASE_NAMESPACE},
                    "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": seconds, "acquireTime": now, "renewTime": now,
                        "leaseTransitions": 0},
                });
                return match self.registry.create(&self.leases, &scope, lease, &write).await {
                    Ok(created) => {
                        *observed = Some(Observed { lease: created, at: Instant::now() });
                        Ok(true)
                    }
                    Err(ApiError { code: 409, .. }) => Ok(false),
                    Err(err) => Err(err),
                };
            }
            Err(err) => return Err(err),
        };
        if observed.as_ref().is_none_or(|o| o.lease != lease) {
            *observed = Some(Observed { lease: lease.clone(), at: Instant::now() });
        }
        let seen = observed.as_ref().map_or_else(Instant::now, |o| o.at);
        let current = holder(&lease);
        let mine = current == self.identity;
        // The holder's own lease duration, as client-go reads it (replicas may run with different flags).
        let held_for = lease.pointer("/spec/leaseDurationSeconds").and_then(Value::as_u64).map_or(self.timing.lease_duration, Duration::from_secs);
        if !mine && !current.is_empty() && seen.elapsed() < held_for {
            return Ok(false);
        }
        let mut next = lease.clone();
        next["spec"]["holderIdentity"] = json!(self.identity);
        next["spec"]["leaseDurationSeconds"] = json!(seconds);
        next["spec"]["renewTime"] = json!(now);
        if !mine {
            next["spec"]["acquireTime"] = json!(now);
            let transitions = lease.pointer("/spec/leaseTransitions").and_then(Value::as_i64).unwrap_or(0);
            next["spec"]["leaseTransitions"] = json!(transitions + 1);
        }
        // The update carries the resourceVersion read: a replica that wrote in between makes it a conflict.
        match self.registry.update(&self.leases, &scope, LEASE_NAME, next, Part::Main, &write).await {
            Ok(updated) => {
                *observed = Some(Observed { lease: updated, at: Instant::now() });
                if !mine {
                    tracing::warn!(identity = %self.identity, previous = current, "leader election: took the Lease from a holder that stopped renewing it");
                }
                Ok(true)
            }
            Err(ApiError { code: 409, .. }) => Ok(false),
            Err(err) => Err(err),
        }
    }
}
