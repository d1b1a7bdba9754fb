//! The connections `outbound` keeps open between calls (HTTP/1.1 keep-alive, as Go's `http.Transport` does for
//! kube-apiserver's webhook clients): idle ones kept by endpoint (`Key`: the TLS settings' identity, the host, the
//! port and the name the certificate must hold), newest first, for at most `IDLE_FOR`, at most `PER_ENDPOINT` per
//! endpoint and `TOTAL` in all. A `Tls` is one endpoint's (one configuration's caBundle, or one kubeconfig file's,
//! or one issuer's) and its identity is never reused, so two endpoints never share a connection even when their
//! URLs are the same. A connection is only ever opened by `outbound` after the address check and the TLS
//! verification; the address check is made again on every reuse.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{LazyLock, Mutex, Once};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;

/// How long an idle connection is kept (Go's `IdleConnTimeout` as kube sets it).
pub const IDLE_FOR: Duration = Duration::from_secs(90);
/// The idle connections kept for one endpoint.
pub const PER_ENDPOINT: usize = 64;
/// The idle connections kept in all.
pub const TOTAL: usize = 512;
/// How often idle connections past `IDLE_FOR` are closed when no call takes or returns one.
const SWEEP_EVERY: Duration = Duration::from_secs(15);

pub type Sender = SendRequest<Full<bytes::Bytes>>;

/// Which connections may serve a call: the same TLS settings (trust, client identity), host, port and expected
/// certificate name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub tls: u64,
    pub host: String,
    pub port: u16,
    pub server_name: String,
}

struct Idle {
    sender: Sender,
    /// The address connected to (checked again before each reuse).
    address: SocketAddr,
    since: Instant,
}

#[derive(Default)]
struct Idles {
    by_key: HashMap<Key, Vec<Idle>>,
    count: usize,
}

/// The idle connections of the process.
pub struct Pool {
    idles: Mutex<Idles>,
    sweeper: Once,
}

pub static POOL: LazyLock<Pool> = LazyLock::new(|| Pool { idles: Mutex::default(), sweeper: Once::new() });

impl Pool {
    /// The newest idle connection for `key` still open, younger than `IDLE_FOR`, to an address `allowed` still
    /// allows; the others met on the way are closed.
    pub fn take(&self, key: &Key, allowed: &(dyn Fn(SocketAddr) -> bool + Sync)) -> Option<(Sender, SocketAddr)> {
        let mut idles = self.idles.lock().unwrap_or_else(|e| e.into_inner());
        let Idles { by_key, count } = &mut *idles;
        let list = by_key.get_mut(key)?;
        let mut found = None;
        while let Some(idle) = list.pop() {
            *count -= 1;
            if idle.since.elapsed() < IDLE_FOR && !idle.sender.is_closed() && allowed(idle.address) {
                found = Some((idle.sender, idle.address));
                break;
            }
        }
        if list.is_empty() {
            by_key.remove(key);
        }
        found
    }

    /// Keeps `sender` (whose last answer was read whole) for the next call to `key`, unless the pool is full.
    pub fn put(&self, key: Key, sender: Sender, address: SocketAddr) {
        if sender.is_closed() {
            return;
        }
        self.sweeper.call_once(|| {
            let spawned = std::thread::Builder::new().name("outbound-idle".into()).stack_size(64 << 10).spawn(|| loop {
                std::thread::sleep(SWEEP_EVERY);
                POOL.sweep();
            });
            if let Err(error) = spawned {
                tracing::warn!(%error, "no thread closing idle webhook connections: they are closed when next met");
            }
        });
        let mut idles = self.idles.lock().unwrap_or_else(|e| e.into_inner());
        if idles.count >= TOTAL {
            idles.sweep();
            if idles.count >= TOTAL {
                return;
            }
        }
        let list = idles.by_key.entry(key).or_default();
        if list.len() >= PER_ENDPOINT {
            return;
        }
        list.push(Idle { sender, address, since: Instant::now() });
        idles.count += 1;
    }

    fn sweep(&self) {
        let closed = {
            let mut idles = self.idles.lock().unwrap_or_else(|e| e.into_inner());
            idles.sweep()
        };
        drop(closed);
    }
}

impl Idles {
    /// Removes the connections past `IDLE_FOR` or closed by their server; returns them to be dropped (closed)
    /// outside the lock.
    fn sweep(&mut self) -> Vec<Idle> {
        let mut gone = Vec::new();
        for list in self.by_key.values_mut() {
            let (keep, old): (Vec<Idle>, Vec<Idle>) = list.drain(..).partition(|idle| idle.since.elapsed() < IDLE_FOR && !idle.sender.is_closed());
            *list = keep;
            gone.extend(old);
        }
        self.by_key.retain(|_, list| !list.is_empty());
        self.count -= gone.len();
        gone
    }
}
