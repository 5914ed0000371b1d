//! Schema derivation, normalisation and provider export, checked programmatically on every
//! nested schema rather than against snapshots.

use std::collections::BTreeSet;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::schema::{derive, export, normalize};
use tool_core::{
    Access, Annotations, ErrorKind, Limits, Policy, Provider, Registry, Stack, Tool, ToolContext,
    ToolError, ToolOutput, ToolSpec, typed,
};

use super::Fixture;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "only the schema and the parse matter")]
struct Item {
    /// The item's name.
    name: String,
    weight: Option<f64>,
}

/// A struct without `deny_unknown_fields`: the canonical schema must still close it.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code, reason = "only the schema and the parse matter")]
struct Open {
    name: String,
    count: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code, reason = "only the schema and the parse matter")]
enum Mode {
    Fast,
    Slow,
}

/// An externally tagged enum with data (`oneOf` in the derived schema).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code, reason = "only the schema and the parse matter")]
enum Choice {
    Line { n: u32 },
    Range { start: u32, end: u32 },
    Whole,
}

/// An internally tagged enum (`oneOf` of objects with a `const` tag).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[allow(dead_code, reason = "only the schema and the parse matter")]
enum Tagged {
    A { x: u8 },
    B { y: String, item: Option<Item> },
}

/// Complex arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "only the schema and the parse matter")]
struct Complex {
    /// The path.
    path: String,
    limit: Option<u32>,
    mode: Mode,
    opt_mode: Option<Mode>,
    items: Vec<Item>,
    choice: Option<Choice>,
    tagged: Tagged,
    #[serde(default)]
    verbose: bool,
    /// Fields named like schema keywords must be treated as fields.
    default: Option<Open>,
    properties: Vec<String>,
    r#enum: Option<Open>,
    nested_list: Vec<Vec<Item>>,
}

struct ComplexTool;

#[async_trait]
impl Tool for ComplexTool {
    const NAME: &'static str = "complex";
    type Args = Complex;
    fn description(&self) -> String {
        "Takes complex arguments.".into()
    }
    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE.open_world(true)
    }
    fn access(&self, _ctx: &ToolContext, _args: &Complex) -> Result<Vec<Access>, ToolError> {
        Ok(vec![])
    }
    async fn call(&self, _ctx: &ToolContext, _args: Complex) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

fn spec() -> ToolSpec {
    typed(ComplexTool).spec().clone()
}

/// The subschemas of a schema node, by keyword (never descending into literal data such as
/// `enum`, `const` or `default`).
fn children(node: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    let Value::Object(o) = node else {
        return out;
    };
    for (k, v) in o {
        match k.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" => {
                for (name, s) in v.as_object().into_iter().flatten() {
                    out.push((format!("{k}/{name}"), s));
                }
            }
            "items" | "additionalProperties" | "not" | "contains" | "propertyNames"
                if v.is_object() =>
            {
                out.push((k.clone(), v));
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                for (i, s) in v.as_array().into_iter().flatten().enumerate() {
                    out.push((format!("{k}/{i}"), s));
                }
            }
            _ => {}
        }
    }
    out
}

/// Calls `f` on every schema node with its location.
fn walk<'a>(node: &'a Value, at: &str, f: &mut dyn FnMut(&str, &'a Value)) {
    f(at, node);
    for (k, child) in children(node) {
        walk(child, &format!("{at}/{k}"), f);
    }
}

fn types(node: &Value) -> Vec<&str> {
    match node.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    }
}

fn is_object_schema(node: &Value) -> bool {
    node.get("properties").is_some() || types(node).contains(&"object")
}

fn keys(v: Option<&Value>) -> BTreeSet<String> {
    match v {
        Some(Value::Object(o)) => o.keys().cloned().collect(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect(),
        _ => BTreeSet::new(),
    }
}

/// Whether a node accepts null.
fn accepts_null(node: &Value) -> bool {
    types(node).contains(&"null")
        || node
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(accepts_null))
        || node
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.contains(&Value::Null))
}

#[test]
fn canonical_form() {
    let schema = derive::<Complex>();
    assert_eq!(schema["type"], "object");
    let mut objects = 0;
    walk(&schema, "", &mut |at, node| {
        for banned in ["$ref", "$schema", "$defs", "definitions", "$id"] {
            assert!(node.get(banned).is_none(), "{at} has {banned}");
        }
        if let Some(Value::String(f)) = node.get("format") {
            assert!(
                ![
                    "uint", "uint8", "uint32", "uint64", "int32", "int64", "double", "float"
                ]
                .contains(&f.as_str()),
                "{at} keeps the Rust format {f}"
            );
        }
        if is_object_schema(node) {
            objects += 1;
            assert_eq!(
                node.get("additionalProperties"),
                Some(&json!(false)),
                "{at} is open"
            );
            // Every required name is a property.
            let props = keys(node.get("properties"));
            for r in keys(node.get("required")) {
                assert!(props.contains(&r), "{at}: required {r} is not a property");
            }
        }
    });
    assert!(objects >= 10, "the walk missed objects: {objects}");
    // Fields named like keywords are fields, and only the fields are properties.
    let props = keys(schema.get("properties"));
    let expected: BTreeSet<String> = [
        "path",
        "limit",
        "mode",
        "opt_mode",
        "items",
        "choice",
        "tagged",
        "verbose",
        "default",
        "properties",
        "enum",
        "nested_list",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(props, expected);
    // Doc comments become descriptions.
    assert_eq!(schema["description"], "Complex arguments.");
    assert_eq!(schema["properties"]["path"]["description"], "The path.");
}

/// The canonical schema is what arguments are checked against: nested objects are closed even
/// when serde would silently accept unknown fields.
#[tokio::test]
async fn canonical_schema_validates_nested_objects() {
    let fx = Fixture::new();
    let mut reg = Registry::new();
    reg.register(typed(ComplexTool)).unwrap();
    let stack = Stack::new(reg);
    let good = json!({
        "path": "a", "mode": "fast", "items": [{"name": "i"}],
        "tagged": {"kind": "b", "y": "why", "item": {"name": "n", "weight": 1.5}},
        "properties": [], "nested_list": [[{"name": "deep"}]],
        "default": {"name": "d"}, "enum": {"name": "e", "count": 3},
        "choice": {"range": {"start": 1, "end": 2}},
    });
    let with = |pointer: &str, value: Value| {
        let mut v = good.clone();
        *v.pointer_mut(pointer).unwrap() = value;
        v
    };
    let cases: Vec<(&str, Value, Option<&str>)> = vec![
        ("good", good.clone(), None),
        (
            "extra in items",
            with("/items/0", json!({"name": "i", "x": 1})),
            Some("/items/0"),
        ),
        (
            "extra in nested list",
            with("/nested_list/0/0", json!({"name": "i", "x": 1})),
            Some("/nested_list/0/0"),
        ),
        (
            "extra in `default`",
            with("/default", json!({"name": "d", "x": 1})),
            Some("/default"),
        ),
        (
            "extra in `enum`",
            with("/enum", json!({"name": "e", "x": 1})),
            Some("/enum"),
        ),
        (
            "open twin",
            with("/default", json!({"name": "d", "count": 2})),
            None,
        ),
        (
            "bad tag",
            with("/tagged", json!({"kind": "c", "y": "why"})),
            Some("/tagged"),
        ),
        (
            "tag twin",
            with("/tagged", json!({"kind": "a", "x": 7})),
            None,
        ),
        (
            "bad choice",
            with("/choice", json!({"line": {"n": 1, "m": 2}})),
            Some("/choice"),
        ),
        ("choice twin", with("/choice", json!("whole")), None),
    ];
    for (case, args, refused_at) in cases {
        let got = stack
            .call(
                "complex",
                args,
                fx.ctx(Policy::read_only(), Limits::default()),
            )
            .await;
        match refused_at {
            None => {
                got.unwrap_or_else(|e| panic!("{case}: {e}"));
            }
            Some(path) => {
                let err = got.unwrap_err();
                assert_eq!(err.kind(), ErrorKind::InvalidArgs, "{case}: {err}");
                let ToolError::InvalidArgs { path: got, .. } = &err else {
                    unreachable!()
                };
                assert!(got.starts_with(path), "{case}: at {got:?}: {err}");
            }
        }
    }
}

/// OpenAI strict mode, on every nested object: all properties required, closed, optional ones
/// nullable, only supported keywords, a type everywhere.
fn check_openai(canon: &Value, oa: &Value, at: &str) {
    if is_object_schema(canon) {
        assert_eq!(
            keys(oa.get("required")),
            keys(oa.get("properties")),
            "{at}: required"
        );
        assert_eq!(oa.get("additionalProperties"), Some(&json!(false)), "{at}");
        let required = keys(canon.get("required"));
        for (name, cp) in canon["properties"].as_object().unwrap() {
            let op = &oa["properties"][name];
            assert!(!op.is_null(), "{at}: {name} dropped");
            if !required.contains(name) {
                assert!(
                    accepts_null(op),
                    "{at}/{name}: optional but not nullable: {op}"
                );
            }
            check_openai(cp, op, &format!("{at}/{name}"));
        }
    }
    if let Some(items) = canon.get("items") {
        check_openai(items, &oa["items"], &format!("{at}/items"));
    }
    // Alternatives keep their order (`oneOf` becomes `anyOf`).
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(vs)) = canon.get(key) {
            let ovs = oa["anyOf"]
                .as_array()
                .unwrap_or_else(|| panic!("{at}: {key} lost"));
            for (i, v) in vs.iter().enumerate() {
                check_openai(v, &ovs[i], &format!("{at}/{key}/{i}"));
            }
        }
    }
}

#[test]
fn export_openai_strict() {
    let spec = spec();
    let e = export(&spec, Provider::OpenAi);
    assert_eq!(e["type"], "function");
    assert_eq!(e["function"]["name"], spec.name);
    assert_eq!(e["function"]["description"], spec.description);
    assert_eq!(e["function"]["strict"], true);
    let params = &e["function"]["parameters"];
    assert_eq!(params["type"], "object");
    check_openai(&spec.input_schema, params, "");
    walk(params, "", &mut |at, node| {
        for banned in ["oneOf", "allOf", "$ref", "default", "$defs", "format"] {
            if banned == "format" {
                // Only the string formats OpenAI documents survive.
                if let Some(f) = node.get("format") {
                    assert!(
                        [
                            "date-time",
                            "date",
                            "time",
                            "email",
                            "uuid",
                            "ipv4",
                            "ipv6",
                            "hostname"
                        ]
                        .contains(&f.as_str().unwrap_or("")),
                        "{at}: format {f}"
                    );
                }
            } else {
                assert!(node.get(banned).is_none(), "{at} has {banned}: {node}");
            }
        }
        // Every schema says what it is.
        assert!(
            node.get("type").is_some()
                || node.get("anyOf").is_some()
                || node.get("enum").is_some()
                || node.get("const").is_some(),
            "{at} has no type: {node}"
        );
    });
    // The default moved into the description.
    let verbose = &params["properties"]["verbose"];
    assert!(
        verbose["description"].as_str().unwrap().contains("false"),
        "{verbose}"
    );
}

/// Gemini: none of the keywords it rejects, anywhere; null unions became `nullable: true`.
fn check_gemini(canon: &Value, g: &Value, at: &str) {
    if accepts_null(canon) {
        assert_eq!(g.get("nullable"), Some(&json!(true)), "{at}: {g}");
    }
    if let Some(Value::Array(e)) = g.get("enum") {
        assert!(!e.contains(&Value::Null), "{at}: null in enum");
    }
    if let Some(c) = canon.get("const") {
        assert_eq!(g.get("enum"), Some(&json!([c])), "{at}: const");
    }
    if let Some(Value::Object(props)) = canon.get("properties") {
        for (name, cp) in props {
            check_gemini(cp, &g["properties"][name], &format!("{at}/{name}"));
        }
    }
    if let Some(items) = canon.get("items") {
        check_gemini(items, &g["items"], &format!("{at}/items"));
    }
}

#[test]
fn export_gemini() {
    let spec = spec();
    let e = export(&spec, Provider::Gemini);
    assert_eq!(e["name"], spec.name);
    assert_eq!(e["description"], spec.description);
    let params = &e["parameters"];
    check_gemini(&spec.input_schema, params, "");
    walk(params, "", &mut |at, node| {
        for banned in [
            "additionalProperties",
            "const",
            "$ref",
            "default",
            "$defs",
            "$schema",
            "oneOf",
            "allOf",
            "examples",
            "title",
        ] {
            assert!(node.get(banned).is_none(), "{at} has {banned}: {node}");
        }
        if let Some(t) = node.get("type") {
            assert!(t.is_string(), "{at}: type {t} is not one name");
        }
    });
    // The enum-with-data property kept its alternatives.
    let choice = &params["properties"]["choice"];
    assert_eq!(choice["nullable"], true);
    assert_eq!(
        choice["anyOf"].as_array().map(Vec::len),
        Some(3),
        "{choice}"
    );
    let tagged = &params["properties"]["tagged"];
    assert_eq!(
        tagged["anyOf"].as_array().map(Vec::len),
        Some(2),
        "{tagged}"
    );
    assert_eq!(params["properties"]["limit"]["type"], "integer");
}

#[test]
fn export_anthropic_and_mcp() {
    let spec = spec();
    let a = export(&spec, Provider::Anthropic);
    assert_eq!(a["name"], spec.name);
    assert_eq!(a["description"], spec.description);
    assert_eq!(a["input_schema"], spec.input_schema);
    assert!(a.get("inputSchema").is_none());

    for annotations in [
        Annotations::READ_ONLY,
        Annotations::ADDITIVE,
        Annotations::DESTRUCTIVE,
        Annotations::DESTRUCTIVE.open_world(true).idempotent(true),
    ] {
        let s = ToolSpec {
            annotations,
            ..spec.clone()
        };
        let m = export(&s, Provider::Mcp);
        assert_eq!(m["name"], s.name);
        assert_eq!(m["inputSchema"], s.input_schema);
        let hints = &m["annotations"];
        assert_eq!(hints["readOnlyHint"], annotations.read_only);
        assert_eq!(hints["destructiveHint"], annotations.destructive);
        assert_eq!(hints["idempotentHint"], annotations.idempotent);
        assert_eq!(hints["openWorldHint"], annotations.open_world);
    }
}

#[test]
fn provider_names_round_trip() {
    for p in Provider::ALL {
        assert_eq!(Provider::parse(p.as_str()), Some(p));
    }
    assert_eq!(Provider::parse("OpenAI"), None);
    assert_eq!(Provider::parse(""), None);
}

/// A provider in strict mode sends every field, `null` for the ones it leaves out: the stack
/// accepts that, and refuses null for a required field.
#[tokio::test]
async fn strict_mode_nulls_are_accepted() {
    let fx = Fixture::new();
    let mut reg = Registry::new();
    reg.register(typed(ComplexTool)).unwrap();
    let stack = Stack::new(reg);
    let call = json!({
        "path": "a", "limit": null, "mode": "slow", "opt_mode": null,
        "items": [{"name": "i", "weight": null}], "choice": null,
        "tagged": {"kind": "b", "y": "y", "item": null}, "verbose": null,
        "default": null, "properties": [], "enum": null, "nested_list": [],
    });
    stack
        .call(
            "complex",
            call.clone(),
            fx.ctx(Policy::read_only(), Limits::default()),
        )
        .await
        .unwrap();
    let mut bad = call;
    bad["path"] = Value::Null;
    let err = stack
        .call(
            "complex",
            bad,
            fx.ctx(Policy::read_only(), Limits::default()),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgs);
}

/// Remote (MCP) schemas are normalised the same way: references inlined, objects closed.
#[test]
fn normalize_remote_schema() {
    let remote = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Remote",
        "type": "object",
        "properties": {
            "target": {"$ref": "#/definitions/Target"},
            "targets": {"type": "array", "items": {"$ref": "#/definitions/Target"}},
        },
        "required": ["target"],
        "definitions": {
            "Target": {"type": "object", "properties": {"host": {"type": "string", "format": "hostname"}, "port": {"type": "integer", "format": "uint16"}}}
        }
    });
    let n = normalize(remote);
    walk(&n, "", &mut |at, node| {
        for banned in ["$ref", "$schema", "definitions", "title"] {
            assert!(node.get(banned).is_none(), "{at} has {banned}");
        }
        if is_object_schema(node) {
            assert_eq!(
                node.get("additionalProperties"),
                Some(&json!(false)),
                "{at}"
            );
        }
    });
    assert_eq!(
        n["properties"]["target"]["properties"]["host"]["format"],
        "hostname"
    );
    assert!(
        n["properties"]["target"]["properties"]["port"]
            .get("format")
            .is_none()
    );
    assert_eq!(n["properties"]["targets"]["items"]["type"], "object");
    // Explicitly open maps stay open; a schema without a type becomes an object schema.
    let map = normalize(
        json!({"properties": {"env": {"type": "object", "additionalProperties": {"type": "string"}}}}),
    );
    assert_eq!(map["type"], "object");
    assert_eq!(
        map["properties"]["env"]["additionalProperties"],
        json!({"type": "string"})
    );
    assert_eq!(normalize(json!({}))["properties"], json!({}));
}
