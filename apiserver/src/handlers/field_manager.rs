//! The field manager of a write request, as kube-apiserver derives and checks it: the `fieldManager` query
//! parameter, else the User-Agent's product (the part before the first `/`); at most 128 bytes of printable
//! characters; `force` only for apply.

use super::Ctx;
use crate::registry::WriteContext;
use crate::status::{ApiError, ApiResult, Cause};

/// kube's limit on a field manager's length.
const MAX_LENGTH: usize = 128;

/// Go's `unicode.IsPrint`, closely enough: no control characters and no space other than ASCII space.
fn printable(c: char) -> bool {
    !c.is_control() && (c == ' ' || !c.is_whitespace())
}

/// The User-Agent's product name, as kube makes a manager of it: up to the first `/`, printable characters
/// only, cut at 128 bytes.
pub fn from_user_agent(user_agent: &str) -> String {
    let product = user_agent.split('/').next().unwrap_or_default();
    let mut manager = String::new();
    for c in product.chars().filter(|c| printable(*c)) {
        if manager.len() + c.len_utf8() > MAX_LENGTH {
            break;
        }
        manager.push(c);
    }
    manager
}

/// kube's `ValidateFieldManager` (plus, for `PatchOptions`, the apply and `force` rules), as its 422:
/// `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`.
fn check(ctx: &Ctx, options: &str, apply: bool) -> ApiResult<()> {
    let manager = ctx.query.get("fieldManager").map(String::as_str).unwrap_or_default();
    let mut causes = Vec::new();
    match (apply, options) {
        (true, _) if manager.is_empty() => causes.push(Cause {
            reason: "FieldValueRequired",
            message: "Required value: is required for apply patch".into(),
            field: "fieldManager".into(),
        }),
        (false, "PatchOptions") if ctx.query.contains_key("force") => causes.push(Cause {
            reason: "FieldValueForbidden",
            message: "Forbidden: may not be specified for non-apply patch".into(),
            field: "force".into(),
        }),
        _ => {}
    }
    if manager.len() > MAX_LENGTH {
        causes.push(Cause { reason: "FieldValueTooLong", message: format!("Too long: may not be more than {MAX_LENGTH} bytes"), field: "fieldManager".into() });
    }
    for (i, c) in manager.char_indices().filter(|(_, c)| !printable(*c)) {
        causes.push(Cause::invalid("fieldManager", manager, &format!("invalid character {} (at position {i})", unicode_name(c))));
    }
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid_options(options, causes))
}

/// Go's `%#U`: `U+0007`.
fn unicode_name(c: char) -> String {
    format!("U+{:04X}", u32::from(c))
}

/// The write of a create, update or non-apply patch (`options`: `CreateOptions`, `UpdateOptions`,
/// `PatchOptions`), after kube's checks of its options.
pub fn update_write(ctx: &Ctx, options: &str) -> ApiResult<WriteContext> {
    check(ctx, options, false)?;
    let manager = match ctx.param("fieldManager") {
        Some(manager) => manager.to_owned(),
        None => from_user_agent(ctx.user_agent.as_deref().unwrap_or_default()),
    };
    Ok(WriteContext::update(manager, &ctx.info.subresource, ctx.dry_run()?).by(ctx.caller.clone()).warning_to(ctx.warnings.clone()))
}

/// The write of an apply patch, after kube's checks (a field manager is required).
pub fn apply_write(ctx: &Ctx) -> ApiResult<WriteContext> {
    check(ctx, "PatchOptions", true)?;
    let manager = ctx.param("fieldManager").unwrap_or_default();
    Ok(WriteContext::apply(manager, &ctx.info.subresource, ctx.dry_run()?).by(ctx.caller.clone()).warning_to(ctx.warnings.clone()))
}

#[cfg(test)]
mod tests {
    use super::from_user_agent;

    #[test]
    fn user_agents_become_managers_as_in_kube() {
        for (agent, manager) in [
            ("kubectl/v1.32.5 (linux/amd64) kubernetes/abc", "kubectl"),
            ("kube-controller-manager/v1.33.0 (linux/amd64)/system:serviceaccount:kube-system:x", "kube-controller-manager"),
            ("Python-urllib/3.11", "Python-urllib"),
            ("no slash at all", "no slash at all"),
            ("tab\there/1", "tabhere"),
            ("", ""),
        ] {
            assert_eq!(from_user_agent(agent), manager, "{agent:?}");
        }
        assert_eq!(from_user_agent(&"x".repeat(300)).len(), 128);
    }
}
