//! The query options every write shares (`dryRun`, `fieldValidation`), validated as kube validates its
//! CreateOptions, UpdateOptions, PatchOptions and DeleteOptions. What `fieldValidation` does with a body's
//! problems is the decoder's (`crate::decode`).

use crate::decode::FieldValidation;
use crate::status::{ApiError, ApiResult, Cause};

/// The options of one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and admit, store nothing.
    pub dry_run: bool,
    pub field_validation: FieldValidation,
}

/// The options object kube decodes a verb's query into (named in its 422).
fn options_kind(verb: &str) -> &'static str {
    match verb {
        "create" => "CreateOptions",
        "update" => "UpdateOptions",
        "patch" => "PatchOptions",
        _ => "DeleteOptions",
    }
}

/// Validates `dryRun` and `fieldValidation` of a `verb`'s query (DeleteOptions have no `fieldValidation`);
/// anything else than `All`, `Ignore`, `Warn` or `Strict` is kube's 422
/// (`CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["x"]: supported values: "All"`).
pub fn parse(verb: &str, dry_run: Option<&str>, field_validation: Option<&str>) -> ApiResult<WriteOptions> {
    let kind = options_kind(verb);
    let mut causes = Vec::new();
    if let Some(value) = dry_run.filter(|v| *v != "All") {
        let shown = serde_json::to_string(&[value]).unwrap_or_default();
        causes.push(Cause { reason: "FieldValueNotSupported", message: format!("Unsupported value: {shown}: supported values: \"All\""),
            field: "dryRun".into() });
    }
    let validation = match (kind, field_validation) {
        ("DeleteOptions", _) | (_, None | Some("Warn")) => FieldValidation::Warn,
        (_, Some("Ignore")) => FieldValidation::Ignore,
        (_, Some("Strict")) => FieldValidation::Strict,
        (_, Some(other)) => {
            causes.push(Cause::not_supported("fieldValidation", other, &["", "Ignore", "Strict", "Warn"]));
            FieldValidation::Warn
        }
    };
    if !causes.is_empty() {
        return Err(ApiError::invalid_options(kind, causes));
    }
    Ok(WriteOptions { dry_run: dry_run.is_some(), field_validation: validation })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A verb, its `dryRun` and `fieldValidation`, and the options or the 422 message expected.
    type Row = (&'static str, Option<&'static str>, Option<&'static str>, Result<WriteOptions, &'static str>);

    #[test]
    fn options_are_validated_as_kube_validates_them() {
        let rows: Vec<Row> = vec![
            ("create", None, None, Ok(WriteOptions { dry_run: false, field_validation: FieldValidation::Warn })),
            ("create", Some("All"), Some("Strict"), Ok(WriteOptions { dry_run: true, field_validation: FieldValidation::Strict })),
            ("update", None, Some("Ignore"), Ok(WriteOptions { dry_run: false, field_validation: FieldValidation::Ignore })),
            ("patch", None, Some("Warn"), Ok(WriteOptions { dry_run: false, field_validation: FieldValidation::Warn })),
            ("delete", Some("All"), Some("anything"), Ok(WriteOptions { dry_run: true, field_validation: FieldValidation::Warn })),
            ("create", Some("true"), None,
                Err(r#"CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["true"]: supported values: "All""#)),
            ("patch", None, Some("strict"),
                Err(r#"PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn""#)),
            ("update", Some("Server"), Some("Loud"),
                Err(r#"UpdateOptions.meta.k8s.io "" is invalid: [dryRun: Unsupported value: ["Server"]: supported values: "All", fieldValidation: Unsupported value: "Loud": supported values: "", "Ignore", "Strict", "Warn"]"#)),
            ("deletecollection", Some("x"), None,
                Err(r#"DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["x"]: supported values: "All""#)),
        ];
        for (verb, dry_run, validation, expected) in rows {
            let found = parse(verb, dry_run, validation);
            match expected {
                Ok(options) => assert_eq!(found, Ok(options), "{verb} {dry_run:?} {validation:?}"),
                Err(message) => {
                    let err = found.err().unwrap_or_else(|| panic!("{verb} {dry_run:?} {validation:?} should fail"));
                    assert_eq!((err.code, err.reason, err.message.as_str()), (422, "Invalid", message));
                }
            }
        }
    }
}
