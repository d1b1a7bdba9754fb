//! The audit log (`--audit-log-path`, `--audit-policy-file`): one `audit.k8s.io/v1` Event per request, as JSON
//! lines, at the level an `audit.k8s.io/v1` Policy chooses.
//!
//! Where we differ from kube-apiserver, on purpose:
//! - One line per request. kube-apiserver writes an event per stage (`RequestReceived`, `ResponseStarted`,
//!   `ResponseComplete`); we write `ResponseComplete` when the response is ready, and for watches
//!   `ResponseStarted` once when the stream starts (nothing when it ends). A policy's `omitStages` still applies
//!   to the stage we would write.
//! - Without `--audit-policy-file`, kube-apiserver logs nothing; we log every request at `Metadata`, so
//!   `--audit-log-path` alone is useful.
//! - Only the log backend in "non-blocking, drop when behind" mode: a request never waits on the disk. Events
//!   go through a bounded queue to one writer thread; when the queue is full the event is dropped and counted.

mod event;
pub mod policy;

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use policy::Policy;

/// How many events may wait for the writer before new ones are dropped.
const QUEUE_CAPACITY: usize = 10_000;
/// At most one warning per this many milliseconds about dropped events or write failures.
const WARNING_INTERVAL_MS: u64 = 1_000;

/// Why the audit log could not be started.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("cannot read the audit policy file {}: {source}", path.display())]
    ReadPolicy { path: PathBuf, source: io::Error },
    #[error("the audit policy file {} is invalid: {message}", path.display())]
    InvalidPolicy { path: PathBuf, message: String },
    #[error("cannot open the audit log {}: {source}", path.display())]
    OpenLog { path: PathBuf, source: io::Error },
    #[error("cannot start the audit log writer: {0}")]
    StartWriter(io::Error),
}

/// How much of a request is recorded; ordered, so `level >= Level::Request` reads as "at least Request".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Level {
    /// Not logged.
    #[default]
    None,
    /// Who, what, when, and the response code.
    Metadata,
    /// Metadata plus the request body.
    Request,
    /// Request plus the response body.
    RequestResponse,
}

/// Where in its life a request is when its event is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Stage {
    RequestReceived,
    ResponseStarted,
    ResponseComplete,
    Panic,
}

/// The audit log's view of a request: what the chain knows once it has authenticated, parsed and resolved it.
#[derive(Clone, Copy, Debug, Default)]
pub struct AuditRequest<'a> {
    pub audit_id: &'a str,
    /// `None` is an anonymous request (`system:anonymous` in `system:unauthenticated`).
    pub user: Option<&'a kspaces_authz::UserInfo>,
    /// When set, `user` is the impersonated identity and this is who asked for it. The event shows the
    /// impersonator as `user` and `user` as `impersonatedUser`, as kube-apiserver does; the policy judges the
    /// impersonator.
    pub impersonator: Option<&'a kspaces_authz::UserInfo>,
    /// The tenant of the space the request reached.
    pub tenant: Option<&'a str>,
    pub verb: &'a str,
    pub is_resource: bool,
    pub api_group: &'a str,
    pub api_version: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    /// The URL path alone, which `nonResourceURLs` match.
    pub path: &'a str,
    /// Path and query, as logged.
    pub request_uri: &'a str,
    pub source_ip: Option<&'a str>,
    pub user_agent: Option<&'a str>,
    pub received: DateTime<Utc>,
    pub watch: bool,
}

/// How a request ended (or, for a watch, started).
#[derive(Clone, Copy, Debug, Default)]
pub struct AuditOutcome<'a> {
    pub code: u16,
    /// The authorization decision, if one was made: `true` is allow.
    pub decision: Option<bool>,
    /// The authorizer's reason.
    pub reason: &'a str,
    /// The `meta/v1` Status body of a failure; its status, reason, message and details are logged.
    pub status: Option<&'a serde_json::Value>,
    /// The raw request body, logged as `requestObject` at `Request` and above if it is JSON.
    pub request_body: Option<&'a [u8]>,
    /// The raw response body, logged as `responseObject` at `RequestResponse` if it is JSON.
    pub response_body: Option<&'a [u8]>,
    /// What admission annotated (webhooks' and admission policies' audit annotations).
    pub admission: &'a [(String, String)],
}

/// The audit log. Cloning shares it; a disabled one costs a branch per call.
#[derive(Clone, Default)]
pub struct Auditor {
    enabled: Option<Arc<Enabled>>,
}

struct Enabled {
    policy: Policy,
    log_path: PathBuf,
    sink: Sink,
}

impl fmt::Debug for Auditor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.enabled {
            Some(enabled) => f.debug_struct("Auditor").field("log_path", &enabled.log_path).field("rules", &enabled.policy.rules.len()).finish(),
            None => f.write_str("Auditor(disabled)"),
        }
    }
}

impl Auditor {
    /// An audit log that records nothing.
    pub fn disabled() -> Auditor {
        Auditor { enabled: None }
    }

    /// Parses the policy (or uses [`Policy::metadata_for_everything`]), opens the log for appending and starts
    /// the writer thread.
    pub fn open(log_path: &Path, policy_file: Option<&Path>) -> Result<Auditor, AuditError> {
        let policy = match policy_file {
            Some(path) => Policy::load(path)?,
            None => Policy::metadata_for_everything(),
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(log_path)
            .map_err(|source| AuditError::OpenLog { path: log_path.to_owned(), source })?;
        let sink = Sink::spawn(file, QUEUE_CAPACITY).map_err(AuditError::StartWriter)?;
        Ok(Auditor { enabled: Some(Arc::new(Enabled { policy, log_path: log_path.to_owned(), sink })) })
    }

    pub fn enabled(&self) -> bool {
        self.enabled.is_some()
    }

    /// The policy's level for a request; `Level::None` when disabled.
    pub fn level(&self, request: &AuditRequest<'_>) -> Level {
        self.enabled.as_ref().map_or(Level::None, |enabled| enabled.policy.evaluate(request).level())
    }

    /// Queues the event for a finished request (for a watch, a started one) at `level`. Does nothing at
    /// `Level::None` or when the policy omits the stage. Never waits on the disk.
    pub fn log(&self, level: Level, request: &AuditRequest<'_>, outcome: &AuditOutcome<'_>) {
        let Some(enabled) = &self.enabled else { return };
        if level == Level::None {
            return;
        }
        let stage = if request.watch { Stage::ResponseStarted } else { Stage::ResponseComplete };
        let decision = enabled.policy.evaluate(request);
        if decision.omits(stage) {
            return;
        }
        let options = event::EventOptions { level, stage, omit_managed_fields: decision.omit_managed_fields(), stage_time: Utc::now() };
        match serde_json::to_string(&event::Event::new(options, request, outcome)) {
            Ok(mut line) => {
                line.push('\n');
                enabled.sink.send(line);
            }
            Err(err) => tracing::warn!(audit_id = request.audit_id, %err, "cannot encode an audit event"),
        }
    }

    /// Blocks until every event queued so far is written and flushed.
    pub fn flush(&self) {
        if let Some(enabled) = &self.enabled {
            enabled.sink.flush();
        }
    }

    /// Events dropped because the writer was behind (or gone).
    pub fn dropped_events(&self) -> u64 {
        self.enabled.as_ref().map_or(0, |enabled| enabled.sink.dropped.load(Ordering::Relaxed))
    }
}

/// What the writer thread is asked to do.
enum Message {
    Line(String),
    /// Flush, then say so.
    Flush(mpsc::Sender<()>),
}

/// The sending half of the writer: a bounded queue, and the thread draining it into the file.
struct Sink {
    sender: Option<SyncSender<Message>>,
    writer: Option<JoinHandle<()>>,
    dropped: AtomicU64,
    warnings: RateLimit,
}

impl Sink {
    fn spawn(file: File, capacity: usize) -> io::Result<Sink> {
        let (sender, receiver) = mpsc::sync_channel(capacity);
        let writer = std::thread::Builder::new()
            .name("audit-log".to_owned())
            .spawn(move || write_lines(&receiver, BufWriter::new(file)))?;
        Ok(Sink { sender: Some(sender), writer: Some(writer), dropped: AtomicU64::new(0), warnings: RateLimit::new() })
    }

    fn send(&self, line: String) {
        let Some(sender) = &self.sender else { return };
        let why = match sender.try_send(Message::Line(line)) {
            Ok(()) => return,
            Err(TrySendError::Full(_)) => "the audit log writer is behind; dropping audit events",
            Err(TrySendError::Disconnected(_)) => "the audit log writer has stopped; dropping audit events",
        };
        let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        if self.warnings.allow() {
            tracing::warn!(dropped, "{why}");
        }
    }

    fn flush(&self) {
        let Some(sender) = &self.sender else { return };
        let (done, flushed) = mpsc::channel();
        if sender.send(Message::Flush(done)).is_ok() {
            // An error means the writer is gone, and there is nothing left to wait for.
            let _ = flushed.recv();
        }
    }
}

impl Drop for Sink {
    /// Closing the queue lets the writer drain it, flush and exit; waiting for it keeps the tail of the log.
    fn drop(&mut self) {
        self.sender.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// The writer thread: writes lines as they come and flushes whenever the queue is momentarily empty, so the
/// file is current when the server is idle and writes are batched when it is busy.
fn write_lines(receiver: &Receiver<Message>, mut out: impl Write) {
    let failures = RateLimit::new();
    loop {
        let message = match receiver.try_recv() {
            Ok(message) => message,
            Err(TryRecvError::Empty) => {
                failures.report(out.flush());
                match receiver.recv() {
                    Ok(message) => message,
                    Err(_) => return,
                }
            }
            Err(TryRecvError::Disconnected) => {
                failures.report(out.flush());
                return;
            }
        };
        match message {
            Message::Line(line) => failures.report(out.write_all(line.as_bytes())),
            Message::Flush(done) => {
                failures.report(out.flush());
                let _ = done.send(());
            }
        }
    }
}

/// Lets a warning through at most once per [`WARNING_INTERVAL_MS`], so a full disk or a flood does not
/// become a flood of warnings.
struct RateLimit {
    start: Instant,
    last_ms: AtomicU64,
}

impl RateLimit {
    fn new() -> RateLimit {
        RateLimit { start: Instant::now(), last_ms: AtomicU64::new(0) }
    }

    fn allow(&self) -> bool {
        // Offset by one interval so the first warning always passes.
        let now = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX).saturating_add(WARNING_INTERVAL_MS);
        let last = self.last_ms.load(Ordering::Relaxed);
        now - last >= WARNING_INTERVAL_MS && self.last_ms.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }

    fn report(&self, result: io::Result<()>) {
        if let Err(err) = result {
            if self.allow() {
                tracing::warn!(%err, "cannot write the audit log");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use kspaces_authz::UserInfo;

    use super::*;

    fn request<'a>(audit_id: &'a str, user: Option<&'a UserInfo>) -> AuditRequest<'a> {
        AuditRequest { audit_id, ..event::tests::pod_get(user) }
    }

    fn ok() -> AuditOutcome<'static> {
        AuditOutcome { code: 200, ..AuditOutcome::default() }
    }

    fn lines(path: &Path) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(path).expect("readable log");
        text.lines().map(|line| serde_json::from_str(line).expect("each line is one JSON object")).collect()
    }

    fn open_with_policy(dir: &Path, policy: &str) -> (Auditor, PathBuf) {
        let policy_path = dir.join("policy.yaml");
        std::fs::write(&policy_path, policy).expect("write policy");
        let log_path = dir.join("audit.log");
        (Auditor::open(&log_path, Some(&policy_path)).expect("valid policy"), log_path)
    }

    #[test]
    fn many_threads_write_whole_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log_path = dir.path().join("audit.log");
        let auditor = Auditor::open(&log_path, None).expect("open");
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..250 {
                        let id = uuid::Uuid::new_v4().to_string();
                        let request = request(&id, None);
                        auditor.log(auditor.level(&request), &request, &ok());
                    }
                });
            }
        });
        auditor.flush();
        let events = lines(&log_path);
        assert_eq!(events.len(), 1000);
        let ids: HashSet<&str> = events.iter().map(|event| event["auditID"].as_str().expect("auditID")).collect();
        assert_eq!(ids.len(), 1000);
        assert!(events.iter().all(|event| event["level"] == "Metadata" && event["kind"] == "Event"));
        assert_eq!(auditor.dropped_events(), 0);
    }

    #[test]
    fn reopening_appends_and_dropping_flushes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log_path = dir.path().join("audit.log");
        for id in ["first", "second"] {
            let auditor = Auditor::open(&log_path, None).expect("open");
            auditor.log(Level::Metadata, &request(id, None), &ok());
        }
        let ids: Vec<_> = lines(&log_path).iter().map(|event| event["auditID"].clone()).collect();
        assert_eq!(ids, ["first", "second"]);
    }

    #[test]
    fn levels_and_bodies_follow_the_policy() {
        let dir = tempfile::tempdir().expect("tempdir");
        let policy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  verbs: [list]\n- level: RequestResponse\n  resources: [{group: '', resources: [pods]}]\n";
        let (auditor, log_path) = open_with_policy(dir.path(), policy);
        let listing = AuditRequest { verb: "list", ..request("list", None) };
        assert_eq!(auditor.level(&listing), Level::None);
        auditor.log(auditor.level(&listing), &listing, &ok());
        let getting = request("get", None);
        assert_eq!(auditor.level(&getting), Level::RequestResponse);
        let outcome = AuditOutcome { response_body: Some(br#"{"kind":"Pod"}"#), ..ok() };
        auditor.log(auditor.level(&getting), &getting, &outcome);
        auditor.flush();
        let events = lines(&log_path);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0]["auditID"], "get");
        assert_eq!(events[0]["responseObject"], serde_json::json!({"kind": "Pod"}));
    }

    #[test]
    fn omitted_stages_are_not_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let policy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n  verbs: [watch]\n  omitStages: [ResponseStarted]\n- level: Metadata\n";
        let (auditor, log_path) = open_with_policy(dir.path(), policy);
        let watch = AuditRequest { verb: "watch", watch: true, ..request("watch", None) };
        auditor.log(auditor.level(&watch), &watch, &ok());
        let get = request("get", None);
        auditor.log(auditor.level(&get), &get, &ok());
        auditor.flush();
        let ids: Vec<_> = lines(&log_path).iter().map(|event| (event["auditID"].clone(), event["stage"].clone())).collect();
        assert_eq!(ids, [("get".into(), "ResponseComplete".into())]);
    }

    #[test]
    fn watches_are_logged_once_at_response_started() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log_path = dir.path().join("audit.log");
        let auditor = Auditor::open(&log_path, None).expect("open");
        let watch = AuditRequest { verb: "watch", watch: true, ..request("w", None) };
        auditor.log(auditor.level(&watch), &watch, &ok());
        auditor.flush();
        assert_eq!(lines(&log_path)[0]["stage"], "ResponseStarted");
    }

    #[test]
    fn startup_errors_are_clear() {
        let dir = tempfile::tempdir().expect("tempdir");
        let policy_path = dir.path().join("policy.yaml");
        std::fs::write(&policy_path, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Verbose\n").expect("write");
        let err = Auditor::open(&dir.path().join("audit.log"), Some(&policy_path)).expect_err("bad level");
        assert!(matches!(err, AuditError::InvalidPolicy { .. }) && err.to_string().contains("rules[0].level"), "{err}");
        let err = Auditor::open(&dir.path().join("missing-dir").join("audit.log"), None).expect_err("no such directory");
        assert!(matches!(err, AuditError::OpenLog { .. }), "{err}");
    }

    #[test]
    fn disabled_auditor_does_nothing() {
        let auditor = Auditor::disabled();
        let request = request("x", None);
        assert!(!auditor.enabled());
        assert_eq!(auditor.level(&request), Level::None);
        auditor.log(Level::RequestResponse, &request, &ok());
        auditor.flush();
        assert_eq!(auditor.dropped_events(), 0);
    }

    #[test]
    fn level_none_writes_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log_path = dir.path().join("audit.log");
        let auditor = Auditor::open(&log_path, None).expect("open");
        auditor.log(Level::None, &request("x", None), &ok());
        auditor.flush();
        assert!(lines(&log_path).is_empty());
    }

    /// A queue nobody drains stands in for a writer stuck on a slow disk.
    #[test]
    fn full_queue_drops_and_counts() {
        let (sender, receiver) = mpsc::sync_channel(2);
        let sink = Sink { sender: Some(sender), writer: None, dropped: AtomicU64::new(0), warnings: RateLimit::new() };
        for n in 0..5 {
            sink.send(format!("{n}\n"));
        }
        assert_eq!(sink.dropped.load(Ordering::Relaxed), 3);
        assert_eq!(receiver.try_iter().count(), 2);
    }

    #[test]
    fn warnings_are_rate_limited() {
        let limit = RateLimit::new();
        assert!(limit.allow());
        assert!(!limit.allow());
    }

    /// Writes into a shared buffer, counting flushes.
    #[derive(Clone, Default)]
    struct Recorder(Arc<std::sync::Mutex<(Vec<u8>, usize)>>);

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().map_err(|_| io::Error::other("poisoned"))?.0.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            self.0.lock().map_err(|_| io::Error::other("poisoned"))?.1 += 1;
            Ok(())
        }
    }

    #[test]
    fn writer_batches_queued_lines_and_flushes_when_idle() {
        let (sender, receiver) = mpsc::sync_channel(8);
        for n in 0..3 {
            sender.send(Message::Line(format!("{n}\n"))).expect("queued");
        }
        drop(sender);
        let recorder = Recorder::default();
        write_lines(&receiver, recorder.clone());
        let (written, flushes) = recorder.0.lock().expect("not poisoned").clone();
        assert_eq!(written, b"0\n1\n2\n");
        assert_eq!(flushes, 1, "three queued lines, one flush");
    }
}
