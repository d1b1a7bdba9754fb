//! What can go wrong while applying a strategic merge patch, and the field path that says where.

use std::fmt;

use super::schema::SchemaError;

/// Why a strategic merge patch could not be applied. Every variant names the field path (in the
/// patch) where it happened, e.g. `spec.template.spec.containers[1].env`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrategicPatchError {
    /// The patch body, or a value where an object is required, is not a JSON object.
    #[error("{path}: strategic merge patch must be a JSON object, got {found}")]
    PatchNotAnObject { path: String, found: &'static str },
    /// The stored object is not a JSON object (a server-side problem).
    #[error("the object to patch must be a JSON object, got {found}")]
    OriginalNotAnObject { found: &'static str },
    /// `$patch` holds something other than `replace`, `delete` or `merge` (or `merge` inside a list).
    #[error("{path}: unknown $patch directive {value}")]
    UnknownPatchDirective { path: String, value: String },
    /// An item of a list merged by key lacks that key.
    #[error("{path}: list item does not contain its merge key {merge_key:?}")]
    MissingMergeKey { path: String, merge_key: String },
    /// A list of objects is merged but the schema declares no merge key.
    #[error("{path}: cannot merge a list of objects without a merge key")]
    NoMergeKeyInSchema { path: String },
    /// A directive such as `$retainKeys`, `$setElementOrder/…` or `$deleteFromPrimitiveList/…` is malformed.
    #[error("{path}: invalid {directive} directive: {reason}")]
    InvalidDirective {
        path: String,
        directive: String,
        reason: String,
    },
    /// A merged list mixes element types, or holds lists.
    #[error("{path}: {reason}")]
    UnsupportedListElements { path: String, reason: &'static str },
    /// The schema could not be read; a server bug.
    #[error("{path}: {source}")]
    Schema { path: String, source: SchemaError },
}

/// How callers should report an error; mapping to HTTP lives with the rest of the Status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchErrorClass {
    /// The patch is malformed (kube answers 400 BadRequest).
    BadRequest,
    /// The patch is well formed but cannot be applied to this object (kube answers 422).
    Unprocessable,
    /// The server's own data or schema is at fault (500).
    Internal,
}

impl StrategicPatchError {
    /// Which class of failure this is, so the handler can pick the status code.
    pub fn class(&self) -> PatchErrorClass {
        match self {
            Self::PatchNotAnObject { .. }
            | Self::InvalidDirective { .. }
            | Self::UnknownPatchDirective { .. } => PatchErrorClass::BadRequest,
            Self::MissingMergeKey { .. }
            | Self::NoMergeKeyInSchema { .. }
            | Self::UnsupportedListElements { .. } => PatchErrorClass::Unprocessable,
            Self::OriginalNotAnObject { .. } | Self::Schema { .. } => PatchErrorClass::Internal,
        }
    }
}

/// A field path built on the stack as the merge descends, rendered only when an error needs it.
#[derive(Clone, Copy)]
pub(crate) enum Path<'p> {
    Root,
    Field(&'p Path<'p>, &'p str),
    Index(&'p Path<'p>, usize),
}

impl<'p> Path<'p> {
    pub(crate) fn field(&'p self, name: &'p str) -> Path<'p> {
        Path::Field(self, name)
    }

    pub(crate) fn index(&'p self, index: usize) -> Path<'p> {
        Path::Index(self, index)
    }

    pub(crate) fn schema_error(&self, source: SchemaError) -> StrategicPatchError {
        StrategicPatchError::Schema {
            path: self.to_string(),
            source,
        }
    }

    pub(crate) fn invalid(
        &self,
        directive: &str,
        reason: impl Into<String>,
    ) -> StrategicPatchError {
        StrategicPatchError::InvalidDirective {
            path: self.to_string(),
            directive: directive.to_owned(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => f.write_str("<root>"),
            Path::Field(Path::Root, name) => f.write_str(name),
            Path::Field(parent, name) => write!(f, "{parent}.{name}"),
            Path::Index(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

/// The JSON type name of a value, for error messages.
pub(crate) fn type_name(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}
