//! `func SPEC call [OPTIONS] MODULE METHOD [ARGS...]`: run one method on
//! every target. Options may stand before or after MODULE METHOD; `--`
//! ends them. Arguments go over the wire as strings, as Func sends them;
//! the minion's modules coerce them.

use common::Value;

use crate::plan::{count, split_flag, Globals, Plan, PlanError};

#[derive(Debug)]
pub struct Call {
    /// `module.method`.
    pub method: String,
    pub args: Vec<String>,
}

/// Options of later features, refused clearly until they exist.
const NOT_YET: &[&str] = &[
    "--async",
    "-a",
    "--nopoll",
    "-n",
    "--batch",
    "--batch-wait",
    "--failhard",
    "--jobstatus",
    "-s",
];

impl Call {
    pub fn parse(rest: &[String], globals: &mut Globals) -> Result<Self, PlanError> {
        let mut positional = Vec::new();
        let mut i = 0;
        while i < rest.len() {
            let arg = &rest[i];
            if arg == "--" {
                positional.extend(rest[i + 1..].iter().cloned());
                break;
            }
            let (flag, inline) = split_flag(arg);
            // Before MODULE METHOD every dash word is an option; after them,
            // only known options are, so `process info -auxh` still works.
            let before_method = positional.len() < 2;
            match flag.as_str() {
                "--json" | "-j" => globals.json = true,
                "-v" | "--verbose" => {}
                "--forks" | "-f" => {
                    let v = match inline {
                        Some(v) => v,
                        None => {
                            i += 1;
                            rest.get(i)
                                .cloned()
                                .ok_or_else(|| PlanError::Usage("--forks needs a value".into()))?
                        }
                    };
                    globals.forks = Some(count("--forks", &v)?);
                }
                f if NOT_YET.contains(&f) => {
                    return Err(PlanError::Usage(format!(
                        "{f}: async jobs and batches are not available in this version yet"
                    )));
                }
                f if f.starts_with('-') && f.len() > 1 && before_method => {
                    return Err(PlanError::Usage(format!(
                        "call: unknown option {f} (use -- before method arguments that start with '-')"
                    )));
                }
                _ => positional.push(arg.clone()),
            }
            i += 1;
        }
        if positional.len() < 2 {
            return Err(PlanError::Usage("call needs MODULE METHOD [ARGS...]".into()));
        }
        let (module, method) = (&positional[0], &positional[1]);
        if module.is_empty() || method.is_empty() {
            return Err(PlanError::Usage("MODULE and METHOD must not be empty".into()));
        }
        Ok(Self {
            method: format!("{module}.{method}"),
            args: positional[2..].to_vec(),
        })
    }

    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let params = self.args.iter().map(|a| Value::String(a.clone())).collect();
        let results = super::dispatch_to_targets(plan, &super::call_action(&self.method, params)?)?;
        Ok(super::print_results(plan, &results))
    }
}
