//! Arguments: strict JSON parsing and schema validation with field-path errors.

use std::fmt;

use jsonschema::error::ValidationErrorKind;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::ToolError;

/// Parses an argument document, refusing duplicate keys, nesting deeper than `max_depth`,
/// documents larger than `max_bytes`, and anything that is not a JSON object.
pub fn parse_strict(raw: &str, max_depth: usize, max_bytes: usize) -> Result<Value, ToolError> {
    if raw.len() > max_bytes {
        return Err(ToolError::invalid(
            "",
            format!(
                "the arguments are {} bytes, more than the {max_bytes}-byte limit; send less data per call",
                raw.len()
            ),
        ));
    }
    let raw = if raw.trim().is_empty() { "{}" } else { raw };
    let mut de = serde_json::Deserializer::from_str(raw);
    // serde_json's own recursion guard stays on; ours is stricter and gives a better message.
    let value = Strict {
        depth: 0,
        max_depth,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v))
    .map_err(|e| {
        ToolError::invalid(
            "",
            format!("the arguments are not acceptable JSON: {e}; send one JSON object such as {{\"path\": \"src/lib.rs\"}}"),
        )
    })?;
    if !value.is_object() {
        return Err(ToolError::invalid(
            "",
            "the arguments must be a JSON object such as {\"path\": \"src/lib.rs\"}",
        ));
    }
    Ok(value)
}

struct Strict {
    depth: usize,
    max_depth: usize,
}

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl Strict {
    fn deeper<E: de::Error>(&self) -> Result<Strict, E> {
        if self.depth + 1 > self.max_depth {
            return Err(E::custom(format_args!(
                "nesting deeper than {} levels",
                self.max_depth
            )));
        }
        Ok(Strict {
            depth: self.depth + 1,
            max_depth: self.max_depth,
        })
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self.deeper()?)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "the key `{key}` appears twice"
                )));
            }
            let v = map.next_value_seed(self.deeper()?)?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// Validates `args` against a compiled schema; the error names every failing field (up to five)
/// and says what was expected.
pub fn validate(
    tool: &str,
    validator: &jsonschema::Validator,
    schema: &Value,
    args: &Value,
) -> Result<(), ToolError> {
    let mut problems: Vec<(String, String)> = Vec::new();
    for err in validator.iter_errors(args).take(5) {
        let path = err.instance_path().to_string();
        let message = match err.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let known = property_names(schema, &path);
                format!(
                    "unknown field{} {}; the fields are: {}",
                    if unexpected.len() > 1 { "s" } else { "" },
                    unexpected
                        .iter()
                        .map(|u| format!("`{u}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if known.is_empty() {
                        "(none)".to_string()
                    } else {
                        known.join(", ")
                    }
                )
            }
            ValidationErrorKind::Required { property } => {
                format!("the required field {property} is missing")
            }
            _ => err.to_string(),
        };
        problems.push((path, message));
    }
    if problems.is_empty() {
        return Ok(());
    }
    let first_path = problems[0].0.clone();
    let message = problems
        .iter()
        .map(|(p, m)| {
            if p.is_empty() {
                m.clone()
            } else {
                format!("`{p}`: {m}")
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    Err(ToolError::InvalidArgs {
        path: first_path,
        message: format!("{message}. Fix the arguments of `{tool}` and call it again."),
    })
}

fn property_names(schema: &Value, pointer: &str) -> Vec<String> {
    // Walk the schema along the instance pointer (objects via `properties`, arrays via `items`).
    let mut node = schema;
    for seg in pointer.split('/').filter(|s| !s.is_empty()) {
        let next = if seg.chars().all(|c| c.is_ascii_digit()) {
            node.get("items")
        } else {
            node.get("properties").and_then(|p| p.get(seg))
        };
        match next {
            Some(n) => node = n,
            None => return Vec::new(),
        }
    }
    node.get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hostile documents beside benign twins.
    #[test]
    fn strict_parsing_table() {
        let deep = format!("{}1{}", "{\"a\":".repeat(40), "}".repeat(40));
        let ok_deep = format!("{}1{}", "{\"a\":".repeat(10), "}".repeat(10));
        let cases: Vec<(&str, String, bool)> = vec![
            (
                "duplicate key",
                r#"{"path":"a","path":"/etc/passwd"}"#.into(),
                false,
            ),
            (
                "distinct keys",
                r#"{"path":"a","content":"b"}"#.into(),
                true,
            ),
            ("nested duplicate", r#"{"e":[{"a":1,"a":2}]}"#.into(), false),
            ("nested distinct", r#"{"e":[{"a":1,"b":2}]}"#.into(), true),
            ("absurd nesting", deep, false),
            ("modest nesting", ok_deep, true),
            ("not an object", "[1,2]".into(), false),
            ("trailing garbage", r#"{"a":1} {"b":2}"#.into(), false),
            ("empty means no arguments", "".into(), true),
            (
                "unicode escapes",
                r#"{"p":"\u00e9\ud83e\udd80"}"#.into(),
                true,
            ),
        ];
        for (name, doc, ok) in cases {
            let got = parse_strict(&doc, 32, 1 << 20);
            assert_eq!(got.is_ok(), ok, "{name}: {got:?}");
        }
    }

    #[test]
    fn size_limit() {
        let doc = format!("{{\"c\":\"{}\"}}", "x".repeat(100));
        assert!(parse_strict(&doc, 32, 50).is_err());
        assert!(parse_strict(&doc, 32, 500).is_ok());
    }
}
