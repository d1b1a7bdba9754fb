//! A JSON patch (RFC 6902) applied an operation at a time within kube's bounds: at most 10,000 operations
//! (413), at most 3 MiB copied by its `copy` operations (422), and never a document nested deeper than the
//! store keeps (422), checked before each operation so that no oversized document is ever built.

use json_patch::{Patch, PatchOperation};
use serde_json::Value;

use crate::registry::depth::{self, MAX_DEPTH};
use crate::status::{ApiError, ApiResult};

/// kube's `maxJSONPatchOperations`.
pub const MAX_OPERATIONS: usize = 10_000;

/// kube's `JSONPatchMaxCopyBytes` (the request body limit): the bytes all `copy` operations of one patch may add.
pub const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// Refuses a patch with too many operations, as kube does before applying it.
pub fn check_operations(patch: &Patch) -> ApiResult<()> {
    if patch.0.len() > MAX_OPERATIONS {
        return Err(ApiError::new(413, "RequestEntityTooLarge", format!(
            "The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {}", patch.0.len())));
    }
    Ok(())
}

/// Applies `patch` to `doc` (a copy the caller throws away on error).
pub fn apply(doc: &mut Value, patch: &Patch) -> ApiResult<()> {
    check_operations(patch)?;
    let mut copied = 0usize;
    for (index, operation) in patch.0.iter().enumerate() {
        check_operation(doc, operation, &mut copied)?;
        json_patch::patch_unsafe(doc, std::slice::from_ref(operation)).map_err(|mut err| {
            err.operation = index;
            ApiError::new(422, "Invalid", format!("the JSON patch could not be applied: {err}"))
        })?;
    }
    Ok(())
}

/// What one operation would place where, checked before it runs.
fn check_operation(doc: &Value, operation: &PatchOperation, copied: &mut usize) -> ApiResult<()> {
    let (placed, path) = match operation {
        PatchOperation::Add(op) => (Some(&op.value), &op.path),
        PatchOperation::Replace(op) => (Some(&op.value), &op.path),
        PatchOperation::Move(op) => (doc.pointer(op.from.as_str()), &op.path),
        PatchOperation::Copy(op) => {
            let source = doc.pointer(op.from.as_str());
            if let Some(source) = source {
                *copied = copied.saturating_add(serialized_len(source));
                if *copied > MAX_COPY_BYTES {
                    return Err(ApiError::new(422, "Invalid", format!(
                        "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {MAX_COPY_BYTES}")));
                }
            }
            (source, &op.path)
        }
        PatchOperation::Remove(_) | PatchOperation::Test(_) => return Ok(()),
    };
    let Some(value) = placed else { return Ok(()) };
    let containers = path.count();
    let fits = MAX_DEPTH.checked_sub(containers).and_then(|room| depth::depth_within(value, room)).is_some();
    if !fits {
        return Err(ApiError::new(422, "Invalid", format!("the JSON patch could not be applied: {}", depth::too_deep_message())));
    }
    Ok(())
}

/// The bytes `value` takes as JSON, without keeping them.
fn serialized_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` into a counter cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}
