//! Fields whose zero value kube's JSON shows (Go pointers, fields without `omitempty`), input to `codegen.rs`.

/// (schema definition, JSON field names).
pub(super) const KEEP_ZERO: &[(&str, &[&str])] = &[];
