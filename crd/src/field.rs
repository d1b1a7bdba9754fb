//! `FieldError`: one invalid field, as Kubernetes' `field.Error` renders it into a `Status` cause.

use std::fmt;

/// One invalid field: the `reason`, `message` and `field` of a `metav1.StatusCause`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`, `FieldValueTypeInvalid`,
    /// `FieldValueForbidden`, `FieldValueDuplicate`, `FieldValueTooLong`, `FieldValueTooMany`.
    pub reason: &'static str,
    /// Without the field path, e.g. `Invalid value: "x": must be ...`.
    pub message: String,
    /// The field path, e.g. `spec.versions[0].name`.
    pub field: String,
}

impl FieldError {
    /// kube's `field.Invalid`: `Invalid value: <value>: <why>`.
    pub fn invalid(field: impl Into<String>, value: impl fmt::Display, why: impl fmt::Display) -> FieldError {
        FieldError { reason: "FieldValueInvalid", message: format!("Invalid value: {value}: {why}"), field: field.into() }
    }

    /// kube's `field.Required`.
    pub fn required(field: impl Into<String>, why: &str) -> FieldError {
        let message = if why.is_empty() { "Required value".to_owned() } else { format!("Required value: {why}") };
        FieldError { reason: "FieldValueRequired", message, field: field.into() }
    }

    /// kube's `field.NotSupported`: `Unsupported value: <value>: supported values: "a", "b"`.
    pub fn not_supported(field: impl Into<String>, value: impl fmt::Display, supported: &[String]) -> FieldError {
        let supported: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        FieldError {
            reason: "FieldValueNotSupported",
            message: format!("Unsupported value: {value}: supported values: {}", supported.join(", ")),
            field: field.into(),
        }
    }

    /// kube's `field.Forbidden`.
    pub fn forbidden(field: impl Into<String>, why: impl fmt::Display) -> FieldError {
        FieldError { reason: "FieldValueForbidden", message: format!("Forbidden: {why}"), field: field.into() }
    }

    /// kube's `field.Duplicate`.
    pub fn duplicate(field: impl Into<String>, value: impl fmt::Display) -> FieldError {
        FieldError { reason: "FieldValueDuplicate", message: format!("Duplicate value: {value}"), field: field.into() }
    }

    /// kube's `field.TypeInvalid`.
    pub fn type_invalid(field: impl Into<String>, value: impl fmt::Display, why: impl fmt::Display) -> FieldError {
        FieldError { reason: "FieldValueTypeInvalid", message: format!("Invalid value: {value}: {why}"), field: field.into() }
    }
}

/// `field: message`, as kube joins causes into a Status message.
impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}
