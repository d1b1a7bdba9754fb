//! Where a request's objects live: one space or every space, and a namespace.

use kspaces_storage::SpaceName;
use serde_json::Value;

use crate::status::{ApiError, ApiResult};

/// The spaces a request covers: one, or every space (system users' lists and watches).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spaces {
    One(SpaceName),
    All,
}

/// Where an object lives: its space and, for namespaced resources, its namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    pub spaces: Spaces,
    pub namespace: Option<String>,
}

impl Scope {
    pub fn one(space: SpaceName, namespace: Option<String>) -> Scope {
        Scope { spaces: Spaces::One(space), namespace }
    }

    /// Every space, every namespace.
    pub fn everywhere() -> Scope {
        Scope { spaces: Spaces::All, namespace: None }
    }

    /// The one space of a request about a single object.
    pub fn space(&self) -> ApiResult<&SpaceName> {
        match &self.spaces {
            Spaces::One(space) => Ok(space),
            Spaces::All => Err(ApiError::bad_request("tenant \"all\" may only be used to list and watch")),
        }
    }

    /// A cross-space range covers every namespace: a namespace is then a filter on the objects read.
    pub fn namespace_filter(&self) -> Option<&str> {
        match (&self.spaces, &self.namespace) {
            (Spaces::All, Some(namespace)) => Some(namespace),
            _ => None,
        }
    }

    /// True if `object` is in this scope (its range may be wider, see `namespace_filter`).
    pub fn holds(&self, object: &Value) -> bool {
        self.namespace_filter().is_none_or(|namespace| object.pointer("/metadata/namespace").and_then(Value::as_str) == Some(namespace))
    }
}
