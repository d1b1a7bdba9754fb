//! CEL in an `AuthenticationConfiguration`: claim mappings and claim validation rules read `claims` (the token's
//! payload), user validation rules read `user` (`username`, `uid`, `groups`, `extra`), as kube's are.

use std::collections::HashMap;

use kspaces_authz::UserInfo;
use kube_core::cel::cel::{self, Context, Program};
use serde_json::{json, Value};

/// The longest expression accepted (kube bounds an expression's cost; a length bound is this server's first step).
const MAX_EXPRESSION_LENGTH: usize = 10 * 1024;

/// CEL's standard functions and kube's CEL libraries (kube's base environment), registered once; each evaluation's
/// variables go in a scope above them.
static FUNCTIONS: std::sync::LazyLock<Context<'static>> = std::sync::LazyLock::new(|| {
    use kube_core::cel::KubeCelExt;
    Context::default().with_all()
});

/// A token's payload, as CEL sees it.
pub struct Claims(pub Value);

/// One compiled CEL expression, with its text for messages.
pub struct Expression {
    text: String,
    program: Program,
}

impl Expression {
    /// Compiles `text`; `variable` is the one it may read (`claims` or `user`), as kube checks at load time.
    pub fn compile(text: &str, variable: &str) -> Result<Expression, String> {
        if text.len() > MAX_EXPRESSION_LENGTH {
            return Err(format!("expression is longer than {MAX_EXPRESSION_LENGTH} characters"));
        }
        let program = Program::compile(text).map_err(|err| format!("compilation failed: {err}"))?;
        let other = if variable == "claims" { "user" } else { "claims" };
        if program.references().has_variable(other) {
            return Err(format!("compilation failed: undeclared reference to '{other}'"));
        }
        // kube's environment declares no message type; the interpreter would panic on one at every token.
        if let Some(name) = kspaces_crd::cost::construction(program.expression()) {
            return Err(format!("compilation failed: undeclared reference to '{name}'"));
        }
        Ok(Expression { text: text.to_owned(), program })
    }

    fn run(&self, claims: &Claims, user: Option<(&UserInfo, &HashMap<String, Vec<String>>)>) -> Result<cel::Value, String> {
        let mut context = FUNCTIONS.new_inner_scope();
        let claims = cel::to_value(&claims.0).map_err(|err| format!("oidc: claims: {err}"))?;
        context.add_variable_from_value("claims", claims);
        if let Some((user, extra)) = user {
            let groups: Vec<&String> = user.groups.iter().filter(|g| g.as_str() != "system:authenticated").collect();
            let user = json!({"username": user.name, "uid": user.uid, "groups": groups, "extra": extra});
            context.add_variable_from_value("user", cel::to_value(&user).map_err(|err| format!("oidc: user: {err}"))?);
        }
        self.program.execute(&context).map_err(|err| format!("oidc: error evaluating {:?}: {err}", self.text))
    }

    pub fn evaluate_bool(&self, claims: &Claims, user: Option<(&UserInfo, &HashMap<String, Vec<String>>)>) -> Result<bool, String> {
        match self.run(claims, user)? {
            cel::Value::Bool(value) => Ok(value),
            other => Err(format!("oidc: {:?} must evaluate to a bool, got {other:?}", self.text)),
        }
    }

    pub fn evaluate_string(&self, claims: &Claims) -> Result<String, String> {
        match self.run(claims, None)? {
            cel::Value::String(value) => Ok(value.as_ref().clone()),
            other => Err(format!("oidc: {:?} must evaluate to a string, got {other:?}", self.text)),
        }
    }

    /// A string or a list of strings (groups, extra values); null is none.
    pub fn evaluate_strings(&self, claims: &Claims) -> Result<Vec<String>, String> {
        match self.run(claims, None)? {
            cel::Value::Null => Ok(Vec::new()),
            cel::Value::String(value) => Ok(vec![value.as_ref().clone()]),
            cel::Value::List(values) => values.iter().map(|value| match value {
                cel::Value::String(value) => Ok(value.as_ref().clone()),
                other => Err(format!("oidc: {:?} must evaluate to strings, got {other:?}", self.text)),
            }).collect(),
            other => Err(format!("oidc: {:?} must evaluate to a string or a list of strings, got {other:?}", self.text)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_construction_is_refused_when_compiled_never_run() {
        let refused = Expression::compile("Object{name: claims.sub}.name", "claims").err().unwrap_or_default();
        assert!(refused.contains("undeclared reference to 'Object'"), "{refused}");
        let accepted = Expression::compile("{'name': claims.sub}.name", "claims").expect("a map literal compiles");
        assert_eq!(accepted.evaluate_strings(&Claims(json!({"sub": "alice"}))).expect("runs"), ["alice"]);
        // kube's libraries are there, as in kube's base environment.
        let lowered = Expression::compile("claims.sub.lowerAscii().split('@')[0]", "claims").expect("compiles");
        assert_eq!(lowered.evaluate_strings(&Claims(json!({"sub": "Alice@Example.com"}))).expect("runs"), ["alice"]);
    }
}
