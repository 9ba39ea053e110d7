//! CEL as kube-apiserver's `AuthenticationConfiguration` uses it: `claims` (the token's
//! payload) in claim mappings and claim validation rules, `user` (the mapped user) in user
//! validation rules. Evaluated with the `cel` crate (cel-rust); paddock adds no functions.

use cel::{Context, Program, Value};

/// Compiles `expression`, or says at `at` why it does not.
pub fn compile(expression: &str, at: &str) -> Result<(), String> {
    program(expression, at).map(drop)
}

fn program(expression: &str, at: &str) -> Result<Program, String> {
    if expression.trim().is_empty() {
        return Err(format!("{at}: the expression is empty"));
    }
    Program::compile(expression)
        .map_err(|e| format!("{at}: the CEL expression does not compile: {e}"))
}

/// Evaluates `expression` with `name` bound to `value` (JSON), and gives the result as JSON.
pub fn eval(
    expression: &str,
    name: &str,
    value: &serde_json::Value,
) -> Result<serde_json::Value, String> {
    let program = program(expression, "expression")?;
    let bound = cel::to_value(value).map_err(|e| format!("{name}: {e}"))?;
    let mut ctx = Context::default();
    ctx.add_variable_from_value(name, bound);
    let out: Value = program
        .execute(&ctx)
        .map_err(|e| format!("the CEL expression {expression:?} failed: {e}"))?;
    out.json().map_err(|e| {
        format!("the CEL expression {expression:?} gave a value that is not JSON: {e:?}")
    })
}

/// Evaluates a rule that must be `true`.
pub fn holds(expression: &str, name: &str, value: &serde_json::Value) -> Result<bool, String> {
    match eval(expression, name, value)? {
        serde_json::Value::Bool(b) => Ok(b),
        other => Err(format!(
            "the CEL expression {expression:?} must give a bool, gave {other}"
        )),
    }
}
