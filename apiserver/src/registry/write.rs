//! Who makes a write and how: `WriteContext`, which managedFields record and admission judge.

use std::sync::{Arc, Mutex};

use kspaces_authz::Caller;

use crate::fieldmanager::Operation;

/// Who makes a write and how, for `metadata.managedFields` (kube's field manager, operation and subresource),
/// and whether it is a dry run (nothing stored).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteContext {
    /// Who asks, for admission; `None` for the server's own writes.
    pub caller: Option<Arc<Caller>>,
    pub manager: String,
    /// `Apply`: the write's change already recorded the applier's entry; the registry records nothing more.
    pub operation: Operation,
    /// `status`, `scale`, `finalize`, or empty for the main resource.
    pub subresource: String,
    pub dry_run: bool,
    /// Where the write's `Warning`s go (the response's, for a request).
    pub warnings: Warnings,
}

/// `Warning`s collected for a response (deprecated versions, fields `fieldValidation=Warn` reports, admission
/// webhooks' answers), each once, in the order given; and the audit annotations admission adds for the request's
/// audit event (webhooks' `auditAnnotations`, admission policies'). Two are equal when they are the same collection.
#[derive(Clone, Debug, Default)]
pub struct Warnings(Arc<Mutex<Collected>>);

#[derive(Debug, Default)]
struct Collected {
    warnings: Vec<String>,
    annotations: Vec<(String, String)>,
}

impl Warnings {
    fn collected(&self) -> std::sync::MutexGuard<'_, Collected> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn add(&self, text: String) {
        let mut collected = self.collected();
        if !collected.warnings.contains(&text) {
            collected.warnings.push(text);
        }
    }

    /// The warnings collected so far, leaving none.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.collected().warnings)
    }

    /// Adds audit annotation `key` (a later value for the same key replaces the earlier one).
    pub fn annotate(&self, key: String, value: String) {
        let mut collected = self.collected();
        collected.annotations.retain(|(known, _)| *known != key);
        collected.annotations.push((key, value));
    }

    /// The audit annotations added so far.
    pub fn annotations(&self) -> Vec<(String, String)> {
        self.collected().annotations.clone()
    }
}

impl PartialEq for Warnings {
    fn eq(&self, other: &Warnings) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Warnings {}

impl WriteContext {
    /// A create, update or non-apply patch by `manager`.
    pub fn update(manager: impl Into<String>, subresource: &str, dry_run: bool) -> WriteContext {
        WriteContext { caller: None, manager: manager.into(), operation: Operation::Update, subresource: subresource.to_owned(), dry_run, warnings: Warnings::default() }
    }

    /// A server-side apply by `manager`.
    pub fn apply(manager: impl Into<String>, subresource: &str, dry_run: bool) -> WriteContext {
        WriteContext { caller: None, manager: manager.into(), operation: Operation::Apply, subresource: subresource.to_owned(), dry_run, warnings: Warnings::default() }
    }

    /// A write the server makes itself (bootstrap objects, its controllers), as kube's own components do:
    /// an update of the main resource (or of `subresource`) by `manager`.
    pub fn server(manager: &str, subresource: &str) -> WriteContext {
        WriteContext::update(manager, subresource, false)
    }

    /// The same write, made by `caller` (admission judges it).
    pub fn by(self, caller: Arc<Caller>) -> WriteContext {
        WriteContext { caller: Some(caller), ..self }
    }

    /// The same write, its warnings collected in `warnings`.
    pub fn warning_to(self, warnings: Warnings) -> WriteContext {
        WriteContext { warnings, ..self }
    }
}

/// The manager of the objects the server creates itself (bootstrap, a new tenant's space), as kube-apiserver
/// records its own.
pub const SERVER_MANAGER: &str = "kube-apiserver";
