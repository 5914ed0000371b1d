//! Schemas: derived from a tool's `Args`, normalised once, exported per provider.
//!
//! The canonical schema (what [`crate::ToolSpec::input_schema`] holds and what arguments are
//! validated against) is JSON Schema 2020-12 with every `$ref` inlined, every object closed with
//! `additionalProperties: false`, and Rust-only `format`s (`uint32`, `double`…) removed.
//! [`export`] rewrites it for each provider's dialect; those rewrites only ever *drop* constraints
//! a provider rejects, because arguments are always validated against the canonical schema.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::spec::ToolSpec;

/// The schema dialect of an LLM provider or protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI function calling, usable with `strict: true`.
    OpenAi,
    /// Anthropic tool use.
    Anthropic,
    /// Google Gemini function declarations (an OpenAPI subset).
    Gemini,
    /// Model Context Protocol `tools/list` entries.
    Mcp,
}

impl Provider {
    /// All dialects.
    pub const ALL: [Provider; 4] = [
        Provider::OpenAi,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::Mcp,
    ];

    /// The lower-case name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::Mcp => "mcp",
        }
    }

    /// Parses `openai`, `anthropic`, `gemini` or `mcp`.
    pub fn parse(s: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

const KEPT_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "email",
    "uri",
    "uuid",
    "hostname",
    "ipv4",
    "ipv6",
];

/// Derives and normalises the argument schema of `T`.
pub fn derive<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let schema = settings.into_generator().into_root_schema_for::<T>();
    normalize(serde_json::to_value(schema).unwrap_or_else(|_| json!({"type": "object"})))
}

/// Normalises any object schema into the canonical form (also used for remote MCP tools).
pub fn normalize(schema: Value) -> Value {
    let mut schema = schema;
    let defs = schema
        .as_object_mut()
        .and_then(|o| o.remove("$defs").or_else(|| o.remove("definitions")));
    if let Some(defs) = &defs {
        inline_refs(&mut schema, defs, 0);
    }
    if let Some(o) = schema.as_object_mut() {
        o.remove("$schema");
        o.remove("title");
        o.remove("$id");
        o.entry("type").or_insert_with(|| json!("object"));
        o.entry("properties").or_insert_with(|| json!({}));
    }
    tidy(&mut schema);
    schema
}

fn inline_refs(node: &mut Value, defs: &Value, depth: usize) {
    if depth > 32 {
        return;
    }
    match node {
        Value::Object(o) => {
            if let Some(Value::String(r)) = o.get("$ref") {
                let name = r.rsplit('/').next().unwrap_or_default();
                if let Some(target) = defs.get(name) {
                    let mut target = target.clone();
                    inline_refs(&mut target, defs, depth + 1);
                    o.remove("$ref");
                    if let Value::Object(t) = target {
                        for (k, v) in t {
                            o.entry(k).or_insert(v);
                        }
                    }
                }
            }
            for v in o.values_mut() {
                inline_refs(v, defs, depth + 1);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|v| inline_refs(v, defs, depth + 1)),
        _ => {}
    }
}

/// Closes objects and drops Rust-only formats, recursively.
///
/// The walk follows the schema's structure: the values of `properties` are schemas whatever
/// their names (a field may be called `default` or `properties`), while `enum`, `const`,
/// `default`, `examples` and the like hold data and are left alone.
fn tidy(node: &mut Value) {
    let Value::Object(o) = node else { return };
    if let Some(Value::String(f)) = o.get("format")
        && !KEPT_FORMATS.contains(&f.as_str())
    {
        // The integer widths become bounds, so the validator (which ignores these formats)
        // refuses `4294967296` for a `u32` with the field's path instead of the typed parse
        // failing without one.
        let bounds = integer_bounds(f);
        o.remove("format");
        if let Some((min, max)) = bounds {
            o.entry("minimum").or_insert(min);
            o.entry("maximum").or_insert(max);
        }
    }
    let is_object = o.contains_key("properties") || o.get("type") == Some(&json!("object"));
    if is_object && !o.contains_key("additionalProperties") {
        o.insert("additionalProperties".into(), Value::Bool(false));
    }
    for (k, v) in o.iter_mut() {
        match k.as_str() {
            // Maps from names to schemas.
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                if let Value::Object(m) = v {
                    m.values_mut().for_each(tidy);
                }
            }
            // Lists of schemas.
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                if let Value::Array(a) = v {
                    a.iter_mut().for_each(tidy);
                }
            }
            // One schema (or, for old-style tuple `items`, a list of them).
            "items"
            | "additionalItems"
            | "additionalProperties"
            | "unevaluatedItems"
            | "unevaluatedProperties"
            | "contains"
            | "propertyNames"
            | "not"
            | "if"
            | "then"
            | "else" => match v {
                Value::Array(a) => a.iter_mut().for_each(tidy),
                other => tidy(other),
            },
            // Everything else is data or an annotation.
            _ => {}
        }
    }
}

/// The range of a Rust integer format such as `uint32`.
fn integer_bounds(format: &str) -> Option<(Value, Value)> {
    Some(match format {
        "int8" => (json!(i8::MIN), json!(i8::MAX)),
        "int16" => (json!(i16::MIN), json!(i16::MAX)),
        "int32" => (json!(i32::MIN), json!(i32::MAX)),
        "int64" | "int" => (json!(i64::MIN), json!(i64::MAX)),
        "uint8" => (json!(0), json!(u8::MAX)),
        "uint16" => (json!(0), json!(u16::MAX)),
        "uint32" => (json!(0), json!(u32::MAX)),
        "uint64" | "uint" => (json!(0), json!(u64::MAX)),
        _ => return None,
    })
}

/// The tool entry in `provider`'s dialect.
pub fn export(spec: &ToolSpec, provider: Provider) -> Value {
    match provider {
        Provider::Mcp => json!({
            "name": spec.name,
            "description": spec.description,
            "inputSchema": spec.input_schema,
            "annotations": {
                "readOnlyHint": spec.annotations.read_only,
                "destructiveHint": spec.annotations.destructive,
                "idempotentHint": spec.annotations.idempotent,
                "openWorldHint": spec.annotations.open_world,
            }
        }),
        Provider::Anthropic => json!({
            "name": spec.name,
            "description": spec.description,
            "input_schema": spec.input_schema,
        }),
        Provider::OpenAi => {
            let parameters = openai_strict(&spec.input_schema);
            // Strict mode needs every object closed; a free-form map (request headers, a
            // remote tool's parameters) cannot be, so such a tool goes out non-strict.
            let strict = !has_open_object(&parameters);
            json!({
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": parameters,
                    "strict": strict,
                }
            })
        }
        Provider::Gemini => json!({
            "name": spec.name,
            "description": spec.description,
            "parameters": gemini(&spec.input_schema),
        }),
    }
}

const OPENAI_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "description",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

/// Whether some object in `schema` takes keys it does not list (`additionalProperties` not
/// `false`), which OpenAI's strict mode refuses.
pub fn has_open_object(schema: &Value) -> bool {
    let Value::Object(node) = schema else {
        return false;
    };
    let is_object = match node.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => false,
    };
    if is_object && node.get("additionalProperties") != Some(&Value::Bool(false)) {
        return true;
    }
    let children = node
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|p| p.values())
        .chain(node.get("items"))
        .chain(node.get("additionalProperties"))
        .chain(
            ["anyOf", "oneOf", "allOf"]
                .iter()
                .filter_map(|k| node.get(*k).and_then(Value::as_array))
                .flatten(),
        );
    children.into_iter().any(has_open_object)
}

/// OpenAI strict mode: every property required, optional ones made nullable, objects closed,
/// unsupported keywords dropped (defaults move into the description).
fn openai_strict(schema: &Value) -> Value {
    let Value::Object(src) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    let mut description = src
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(default) = src.get("default") {
        description = Some(with_default(description, default));
    }
    for (k, v) in src {
        // OpenAI accepts `anyOf` but not `oneOf`; the alternatives of a Rust enum exclude each
        // other anyway. (Beside an `anyOf`, a `oneOf` is dropped: exports may only loosen.)
        let k = if k == "oneOf" {
            if src.contains_key("anyOf") {
                continue;
            }
            "anyOf"
        } else {
            k.as_str()
        };
        if !OPENAI_KEYWORDS.contains(&k) || k == "description" {
            continue;
        }
        let v = match k {
            "properties" => {
                let required: Vec<&str> = src
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let mut props = Map::new();
                for (name, prop) in v.as_object().into_iter().flatten() {
                    let mut p = openai_strict(prop);
                    if !required.contains(&name.as_str()) {
                        make_nullable(&mut p);
                    }
                    props.insert(name.clone(), p);
                }
                Value::Object(props)
            }
            "items" => openai_strict(v),
            "anyOf" => Value::Array(
                v.as_array()
                    .into_iter()
                    .flatten()
                    .map(openai_strict)
                    .collect(),
            ),
            _ => v.clone(),
        };
        out.insert(k.to_string(), v);
    }
    if let Some(Value::Object(props)) = out.get("properties") {
        let all: Vec<Value> = props.keys().map(|k| Value::String(k.clone())).collect();
        out.insert("required".into(), Value::Array(all));
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    if let Some(d) = description {
        out.insert("description".into(), Value::String(d));
    }
    Value::Object(out)
}

fn make_nullable(p: &mut Value) {
    let Value::Object(o) = p else { return };
    match o.get_mut("type") {
        Some(Value::String(t)) => {
            if t != "null" {
                let t = t.clone();
                o.insert("type".into(), json!([t, "null"]));
            }
        }
        Some(Value::Array(ts)) => {
            if !ts.contains(&json!("null")) {
                ts.push(json!("null"));
            }
        }
        _ => {
            if let Some(Value::Array(variants)) = o.get_mut("anyOf") {
                if !variants
                    .iter()
                    .any(|v| v.get("type") == Some(&json!("null")))
                {
                    variants.push(json!({"type": "null"}));
                }
            } else {
                let inner = Value::Object(std::mem::take(o));
                o.insert("anyOf".into(), json!([inner, {"type": "null"}]));
            }
        }
    }
    if let Some(Value::Array(values)) = o.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "properties",
    "required",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "anyOf",
];

/// Gemini: an OpenAPI 3 subset. Type unions with null become `nullable`, `const` becomes a
/// one-value `enum`, and everything Gemini rejects (`additionalProperties`, `default`, `pattern`,
/// length limits…) is dropped; defaults move into the description.
fn gemini(schema: &Value) -> Value {
    let Value::Object(src) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    let mut description = src
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(default) = src.get("default") {
        description = Some(with_default(description, default));
    }
    let mut nullable = false;
    for (k, v) in src {
        // Like OpenAI, Gemini takes `anyOf` only.
        let k = if k == "oneOf" {
            if src.contains_key("anyOf") {
                continue;
            }
            "anyOf"
        } else {
            k.as_str()
        };
        match k {
            "type" => match v {
                Value::Array(ts) => {
                    let non_null: Vec<&Value> = ts.iter().filter(|t| *t != "null").collect();
                    nullable |= non_null.len() < ts.len();
                    if let Some(first) = non_null.first() {
                        out.insert("type".into(), (*first).clone());
                    }
                }
                other => {
                    out.insert("type".into(), other.clone());
                }
            },
            "const" => {
                out.insert("enum".into(), json!([v]));
            }
            "enum" => {
                let values: Vec<Value> = v
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|x| !x.is_null())
                    .cloned()
                    .collect();
                nullable |= v.as_array().is_some_and(|a| a.contains(&Value::Null));
                out.insert("enum".into(), Value::Array(values));
            }
            "format" if v == "date-time" => {
                out.insert("format".into(), v.clone());
            }
            "properties" => {
                let props: Map<String, Value> = v
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, p)| (name.clone(), gemini(p)))
                    .collect();
                out.insert("properties".into(), Value::Object(props));
            }
            "items" => {
                out.insert("items".into(), gemini(v));
            }
            "anyOf" => {
                let variants: Vec<Value> = v
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|x| {
                        let is_null = x.get("type") == Some(&json!("null"));
                        nullable |= is_null;
                        !is_null
                    })
                    .map(gemini)
                    .collect();
                if variants.len() == 1 {
                    if let Value::Object(only) = variants.into_iter().next().unwrap_or_default() {
                        for (k2, v2) in only {
                            out.entry(k2).or_insert(v2);
                        }
                    }
                } else if !variants.is_empty() {
                    out.insert("anyOf".into(), Value::Array(variants));
                }
            }
            "description" | "default" => {}
            other if GEMINI_KEYWORDS.contains(&other) => {
                out.insert(k.to_string(), v.clone());
            }
            _ => {}
        }
    }
    if nullable {
        out.insert("nullable".into(), Value::Bool(true));
    }
    if let Some(d) = description {
        out.insert("description".into(), Value::String(d));
    }
    Value::Object(out)
}

fn with_default(description: Option<String>, default: &Value) -> String {
    let note = format!("Default: {default}.");
    match description {
        Some(d) if !d.is_empty() => {
            if d.ends_with('.') {
                format!("{d} {note}")
            } else {
                format!("{d}. {note}")
            }
        }
        _ => note,
    }
}

/// Removes `null` values of optional properties (recursively, guided by the schema), so that a
/// provider in strict mode may send `null` for "not given".
pub fn strip_optional_nulls(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(obj) => {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let props = schema.get("properties").and_then(Value::as_object);
            obj.retain(|k, v| !v.is_null() || required.contains(&k.as_str()));
            if let Some(props) = props {
                for (k, v) in obj.iter_mut() {
                    if let Some(s) = props.get(k) {
                        strip_optional_nulls(v, s);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for v in items {
                    strip_optional_nulls(v, item_schema);
                }
            }
        }
        _ => {}
    }
}
