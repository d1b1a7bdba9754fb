//! The registry: one generic store serving every resource (`store.rs`), each kind's rules behind the
//! `Strategy` trait (`strategy.rs`), the admission chain (`admission.rs`), the read side caches and controllers
//! use (`read.rs`), and the caches' feed (`observe.rs`). It imports nothing above it (no kind, no HTTP stage, no
//! table, OpenAPI or content negotiation; `apiserver/tests/tidy.rs`): the kinds' rules come in as strategies,
//! admission plugins and observers (`crate::kinds`, wired in `server.rs`). It does speak the lower crates'
//! vocabulary: the caller (`kspaces_authz::Caller`), compiled CRD definitions and printer columns (`kspaces_crd`).

pub mod admission;
pub mod builtin;
pub mod deletion;
pub mod depth;
pub mod feed;
pub mod limits;
pub mod managed_fields;
pub mod observe;
pub mod read;
pub mod resource;
pub mod resources;
pub mod scope;
pub mod selector;
pub mod store;
pub mod stored;
pub mod strategy;
#[cfg(test)]
pub mod testing;
pub mod validate;
pub mod write;

use chrono::{SecondsFormat, Utc};

pub use deletion::is_deleting;
pub use read::{ListMeta, ListOptions, ObjectFilter, Pages, Reader};
pub use resource::{Custom, ResourceInfo, Subresource};
pub use resources::ResourceTable;
pub use scope::{Scope, Spaces};
pub use store::{DeleteOptions, DeleteOutcome, GenericStore, SpaceTenants, Wiring};
pub use strategy::Part;
pub use write::{WriteContext, SERVER_MANAGER};

/// Now, as Kubernetes writes timestamps (RFC 3339, seconds, `Z`).
pub fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}
