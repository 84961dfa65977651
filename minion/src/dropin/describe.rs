//! What `EXE describe` prints, read into a [`DropIn`]: the module's version,
//! description and methods with their arguments — what the registry needs to
//! answer `list_methods`, `get_method_args` and the other base methods for
//! it as for a built-in. Unknown keys are ignored (newer modules keep
//! loading); missing texts are empty; `methods` is required.

use std::path::PathBuf;

use serde_json::Value as Json;

/// A loaded drop-in module.
#[derive(Debug, Clone, PartialEq)]
pub struct DropIn {
    pub name: String,
    /// The executable (the real path, below the root).
    pub path: PathBuf,
    /// The path as an administrator names it (without the root).
    pub shown: String,
    pub version: String,
    pub api_version: String,
    pub description: String,
    pub methods: Vec<Method>,
}

impl DropIn {
    pub fn method(&self, name: &str) -> Option<&Method> {
        self.methods.iter().find(|m| m.name == name)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Method {
    pub name: String,
    pub description: String,
    pub args: Vec<Arg>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Arg {
    pub name: String,
    pub kind: String,
    pub optional: bool,
    pub description: String,
}

/// Most methods one module may declare.
const MAX_METHODS: usize = 1000;

/// Whether `name` may name a method or an argument: letters, digits, `_`,
/// 1 to 64 characters (no dots: the module is what comes before the last one).
pub fn is_plain_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Whether a file name is a module name: lower-case letters, digits, `_`,
/// 1 to 64 characters (one spelling per module, so `timeout.NAME` in the
/// configuration names exactly one).
pub fn is_module_name(name: &str) -> bool {
    is_plain_name(name) && !name.bytes().any(|b| b.is_ascii_uppercase())
}

/// Reads `describe`'s output.
pub fn parse(name: &str, path: PathBuf, shown: String, stdout: &[u8]) -> Result<DropIn, String> {
    let json: Json =
        serde_json::from_slice(stdout).map_err(|e| format!("describe did not print JSON ({e})"))?;
    let obj = json.as_object().ok_or("describe did not print a JSON object")?;
    let methods = obj
        .get("methods")
        .and_then(Json::as_object)
        .ok_or("describe has no \"methods\" object")?;
    if methods.len() > MAX_METHODS {
        return Err(format!("describe lists more than {MAX_METHODS} methods"));
    }
    let methods = methods
        .iter()
        .map(|(m, info)| method(m, info))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(DropIn {
        name: name.to_string(),
        path,
        shown,
        version: text(obj.get("version")),
        api_version: text(obj.get("api_version")),
        description: text(obj.get("description")),
        methods,
    })
}

fn method(name: &str, info: &Json) -> Result<Method, String> {
    if !is_plain_name(name) {
        return Err(format!(
            "method name {:?} is not letters, digits and _",
            common::paths::shorten(name)
        ));
    }
    let args: Vec<Arg> = match info.get("args") {
        None | Some(Json::Null) => Vec::new(),
        Some(Json::Array(list)) => list
            .iter()
            .map(|a| {
                let arg = a
                    .get("name")
                    .and_then(Json::as_str)
                    .ok_or_else(|| format!("an argument of {name} has no \"name\""))?;
                if !is_plain_name(arg) {
                    return Err(format!(
                        "argument name {:?} of {name} is not letters, digits and _",
                        common::paths::shorten(arg)
                    ));
                }
                Ok(Arg {
                    name: arg.to_string(),
                    kind: text(a.get("type")),
                    optional: a.get("optional").and_then(Json::as_bool).unwrap_or(false),
                    description: text(a.get("description")),
                })
            })
            .collect::<Result<_, String>>()?,
        Some(_) => return Err(format!("\"args\" of {name} is not a list")),
    };
    let mut names: Vec<&str> = args.iter().map(|a| a.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("argument {} of {name} is listed twice", w[0]));
    }
    Ok(Method {
        name: name.to_string(),
        description: text(info.get("description")),
        args,
    })
}

/// A text field: strings as they are, numbers as written, anything else empty.
fn text(v: Option<&Json>) -> String {
    match v {
        Some(Json::String(s)) => s.clone(),
        Some(Json::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<DropIn, String> {
        parse("m", "/x/m".into(), "/x/m".into(), json.as_bytes())
    }

    #[test]
    fn a_full_description_reads_and_extra_keys_are_ignored() {
        let m = read(
            r#"{"version": "1.2", "api_version": "0.0.1", "description": "d", "future": 1,
                "methods": {"hello": {"description": "hi", "args": [
                    {"name": "who", "type": "string", "optional": true, "description": "whom"}]},
                            "bare": {}}}"#,
        )
        .unwrap();
        assert_eq!(m.version, "1.2");
        assert_eq!(m.methods.len(), 2);
        let hello = m.method("hello").unwrap();
        assert_eq!(hello.args[0].name, "who");
        assert!(hello.args[0].optional);
        assert!(m.method("bare").unwrap().args.is_empty());
    }

    #[test]
    fn what_is_not_a_description_says_why() {
        for (bad, why) in [
            ("garbage", "did not print JSON"),
            ("[1]", "not print a JSON object"),
            ("{}", "no \"methods\""),
            (r#"{"methods": {"a.b": {}}}"#, "not letters"),
            (r#"{"methods": {"a": {"args": 5}}}"#, "not a list"),
            (r#"{"methods": {"a": {"args": [{}]}}}"#, "has no \"name\""),
            (
                r#"{"methods": {"a": {"args": [{"name": "<x>"}]}}}"#,
                "argument name",
            ),
            (
                r#"{"methods": {"a": {"args": [{"name": "x"}, {"name": "x"}]}}}"#,
                "listed twice",
            ),
        ] {
            let err = read(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn plain_names() {
        assert!(is_plain_name("my_mod2") && is_plain_name("listMethods"));
        assert!(is_module_name("my_mod2") && !is_module_name("MyMod"));
        for bad in ["", "a.b", "a-b", "mod~", ".hidden", "é", &"x".repeat(65)] {
            assert!(!is_plain_name(bad), "{bad}");
        }
    }
}
