//! Lenient access to method parameters, as Func's Python modules coerce them:
//! Python sends every integer as `<int>`, the CLI sends every argument as a
//! string, and `int("5")`, `float(3)` or `str(5)` all work in Func.

use dxr::Value;

/// A parameter problem, named like the Python exception Func would raise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError {
    /// `TypeError` (count or kind of argument) or `ValueError` (content).
    pub kind: &'static str,
    pub message: String,
}

impl ArgError {
    pub fn type_error(message: impl Into<String>) -> Self {
        Self {
            kind: "TypeError",
            message: message.into(),
        }
    }
    pub fn value_error(message: impl Into<String>) -> Self {
        Self {
            kind: "ValueError",
            message: message.into(),
        }
    }
}

/// The parameters of one call, with the method name for error messages.
#[derive(Debug, Clone, Copy)]
pub struct Args<'a> {
    method: &'a str,
    params: &'a [Value],
}

impl<'a> Args<'a> {
    pub fn new(method: &'a str, params: &'a [Value]) -> Self {
        Self { method, params }
    }

    pub fn len(&self) -> usize {
        self.params.len()
    }

    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    pub fn all(&self) -> &'a [Value] {
        self.params
    }

    /// Checks the argument count, with Python's wording.
    pub fn arity(&self, min: usize, max: usize) -> Result<(), ArgError> {
        let given = self.params.len();
        if given >= min && given <= max {
            return Ok(());
        }
        let wanted = match (min, max) {
            (a, b) if a == b => format!("exactly {a}"),
            (0, b) => format!("at most {b}"),
            (a, usize::MAX) => format!("at least {a}"),
            (a, b) => format!("from {a} to {b}"),
        };
        let noun = if min == max && min == 1 {
            "argument"
        } else {
            "arguments"
        };
        Err(ArgError::type_error(format!(
            "{}() takes {wanted} {noun} ({given} given)",
            self.method
        )))
    }

    /// The raw value at `idx`; `None` if absent or `<nil/>`.
    pub fn opt(&self, idx: usize) -> Option<&'a Value> {
        self.params.get(idx).filter(|v| !matches!(v, Value::Nil))
    }

    fn required(&self, idx: usize, name: &str) -> Result<&'a Value, ArgError> {
        self.opt(idx).ok_or_else(|| {
            ArgError::type_error(format!("{}() missing required argument '{name}'", self.method))
        })
    }

    /// An integer from `<int>`, `<i4>`, `<i8>`, a boolean, an integral
    /// double or a decimal string.
    pub fn i64(&self, idx: usize, name: &str) -> Result<i64, ArgError> {
        to_i64(self.required(idx, name)?).map_err(|what| self.wrong(name, "an integer", what))
    }

    pub fn opt_i64(&self, idx: usize, name: &str) -> Result<Option<i64>, ArgError> {
        match self.opt(idx) {
            None => Ok(None),
            Some(v) => to_i64(v)
                .map(Some)
                .map_err(|what| self.wrong(name, "an integer", what)),
        }
    }

    /// A float from any number or a numeric string.
    pub fn f64(&self, idx: usize, name: &str) -> Result<f64, ArgError> {
        let v = self.required(idx, name)?;
        let n = match v {
            Value::Double(d) => Some(*d),
            Value::Integer(i) => Some(f64::from(*i)),
            Value::Long(l) => Some(*l as f64),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        n.ok_or_else(|| self.wrong(name, "a number", describe(v)))
    }

    /// A string; numbers and booleans are turned into text as `str()` would.
    pub fn string(&self, idx: usize, name: &str) -> Result<String, ArgError> {
        let v = self.required(idx, name)?;
        to_string(v).ok_or_else(|| self.wrong(name, "a string", describe(v)))
    }

    pub fn opt_string(&self, idx: usize, name: &str) -> Result<Option<String>, ArgError> {
        match self.opt(idx) {
            None => Ok(None),
            Some(v) => to_string(v)
                .map(Some)
                .ok_or_else(|| self.wrong(name, "a string", describe(v))),
        }
    }

    /// A boolean from `<boolean>`, an integer, or `true/false/yes/no/1/0`.
    pub fn opt_bool(&self, idx: usize, name: &str) -> Result<Option<bool>, ArgError> {
        let Some(v) = self.opt(idx) else {
            return Ok(None);
        };
        let b = match v {
            Value::Boolean(b) => Some(*b),
            Value::Integer(i) => Some(*i != 0),
            Value::Long(l) => Some(*l != 0),
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => Some(true),
                "0" | "false" | "no" | "off" | "" => Some(false),
                _ => None,
            },
            _ => None,
        };
        b.map(Some)
            .ok_or_else(|| self.wrong(name, "a boolean", describe(v)))
    }

    /// Bytes from `<base64>`, or a string's UTF-8 bytes.
    pub fn bytes(&self, idx: usize, name: &str) -> Result<Vec<u8>, ArgError> {
        match self.required(idx, name)? {
            Value::Base64(b) => Ok(b.clone()),
            Value::String(s) => Ok(s.as_bytes().to_vec()),
            other => Err(self.wrong(name, "base64 data", describe(other))),
        }
    }

    fn wrong(&self, name: &str, expected: &str, got: &str) -> ArgError {
        let kind = if got.starts_with('\'') {
            ArgError::value_error
        } else {
            ArgError::type_error
        };
        kind(format!(
            "{}(): argument '{name}' must be {expected}, not {got}",
            self.method
        ))
    }
}

fn to_i64(v: &Value) -> Result<i64, &'static str> {
    match v {
        Value::Integer(i) => Ok(i64::from(*i)),
        Value::Long(l) => Ok(*l),
        Value::Boolean(b) => Ok(i64::from(*b)),
        Value::Double(d) if d.is_finite() && d.fract() == 0.0 && d.abs() < 9.0e18 => Ok(*d as i64),
        Value::String(s) => s
            .trim()
            .parse::<i64>()
            .map_err(|_| "'a string that is not a whole number'"),
        other => Err(describe(other)),
    }
}

fn to_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Integer(i) => Some(i.to_string()),
        Value::Long(l) => Some(l.to_string()),
        Value::Double(d) => Some(d.to_string()),
        Value::Boolean(b) => Some(if *b { "True" } else { "False" }.to_string()),
        _ => None,
    }
}

/// The XML-RPC type name of a value, for error messages.
pub fn describe(v: &Value) -> &'static str {
    match v {
        Value::Integer(_) => "int",
        Value::Long(_) => "i8",
        Value::Boolean(_) => "boolean",
        Value::String(_) => "string",
        Value::Double(_) => "double",
        Value::DateTime(_) => "dateTime",
        Value::Base64(_) => "base64",
        Value::Struct(_) => "struct",
        Value::Array(_) => "array",
        Value::Nil => "nil",
        _ => "unknown type",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_from_every_spelling() {
        let p = [
            Value::Integer(5),
            Value::Long(1 << 40),
            Value::String(" 7 ".into()),
            Value::Double(3.0),
            Value::Boolean(true),
        ];
        let a = Args::new("m", &p);
        assert_eq!(a.i64(0, "x").unwrap(), 5);
        assert_eq!(a.i64(1, "x").unwrap(), 1 << 40);
        assert_eq!(a.i64(2, "x").unwrap(), 7);
        assert_eq!(a.i64(3, "x").unwrap(), 3);
        assert_eq!(a.i64(4, "x").unwrap(), 1);
    }

    #[test]
    fn wrong_types_and_counts_name_the_problem() {
        let p = [Value::Array(vec![]), Value::String("five".into())];
        let a = Args::new("sleep", &p);
        let e = a.i64(0, "t").unwrap_err();
        assert_eq!(e.kind, "TypeError");
        assert!(
            e.message.contains("'t'") && e.message.contains("array"),
            "{}",
            e.message
        );
        assert_eq!(a.i64(1, "t").unwrap_err().kind, "ValueError");
        let e = a.arity(1, 1).unwrap_err();
        assert_eq!(e.message, "sleep() takes exactly 1 argument (2 given)");
        assert!(a.i64(5, "t").unwrap_err().message.contains("missing"));
    }

    #[test]
    fn strings_floats_bools() {
        let p = [
            Value::Integer(3),
            Value::String("2.5".into()),
            Value::String("no".into()),
            Value::Nil,
        ];
        let a = Args::new("m", &p);
        assert_eq!(a.string(0, "s").unwrap(), "3");
        assert_eq!(a.f64(1, "f").unwrap(), 2.5);
        assert_eq!(a.f64(0, "f").unwrap(), 3.0);
        assert_eq!(a.opt_bool(2, "b").unwrap(), Some(false));
        assert_eq!(a.opt_bool(3, "b").unwrap(), None);
        assert_eq!(a.opt_string(3, "s").unwrap(), None);
    }
}
