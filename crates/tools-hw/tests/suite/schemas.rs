//! The schemas of this crate's tools against the rules the workspace's schema tests enforce for
//! every registered tool (OpenAI strict mode, Gemini's keyword subset, documented arguments),
//! so that wiring the tools into the CLI cannot break them.

use serde_json::{Map, Value};
use tool_core::{Provider, Registry, schema};
use tools_hw::Config;

fn walk<'a>(v: &'a Value, out: &mut Vec<&'a Map<String, Value>>) {
    match v {
        Value::Object(o) => {
            out.push(o);
            for (k, child) in o {
                if !matches!(k.as_str(), "enum" | "const" | "default") {
                    walk(child, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|c| walk(c, out)),
        _ => {}
    }
}

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register_all(tools_hw::tools(&Config::new())).unwrap();
    r
}

#[test]
fn every_tool_is_documented_and_closed() {
    let registry = registry();
    let mut names: Vec<&str> = registry.names();
    names.sort_unstable();
    let mut want = vec!["hardware_info", "hardware_memory", "i2c", "serial", "spi"];
    if cfg!(feature = "screenshot") {
        want.push("screenshot");
    }
    want.sort_unstable();
    assert_eq!(names, want);
    for spec in registry.specs() {
        assert!(spec.description.trim_end().ends_with('.'), "{}", spec.name);
        assert_eq!(
            spec.input_schema["additionalProperties"], false,
            "{}",
            spec.name
        );
        for (name, prop) in spec.input_schema["properties"].as_object().unwrap() {
            assert!(
                prop.get("description")
                    .and_then(Value::as_str)
                    .is_some_and(|d| d.trim_end().ends_with('.') || d.trim_end().ends_with(')')),
                "{}: argument `{name}` has no sentence describing it",
                spec.name
            );
        }
        // Device-touching tools say so.
        if spec.name != "hardware_info" && spec.name != "screenshot" {
            assert!(
                spec.annotations.destructive && spec.annotations.open_world,
                "{}",
                spec.name
            );
        }
    }
}

#[test]
fn openai_strict_and_gemini_rules_hold() {
    const GEMINI: &[&str] = &[
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
    for spec in registry().specs() {
        let exported = schema::export(spec, Provider::OpenAi);
        assert_eq!(exported["function"]["strict"], true, "{}", spec.name);
        let mut nodes = Vec::new();
        walk(&exported["function"]["parameters"], &mut nodes);
        for node in nodes {
            if let Some(Value::Object(props)) = node.get("properties") {
                let mut req: Vec<&str> = node["required"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r.as_str().unwrap())
                    .collect();
                let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
                req.sort_unstable();
                keys.sort_unstable();
                assert_eq!(keys, req, "{}", spec.name);
                assert_eq!(node.get("additionalProperties"), Some(&Value::Bool(false)));
            }
            assert!(
                node.get("default").is_none() && node.get("$ref").is_none(),
                "{}",
                spec.name
            );
        }

        let exported = schema::export(spec, Provider::Gemini);
        let mut nodes = Vec::new();
        walk(&exported["parameters"], &mut nodes);
        for node in nodes {
            if node.values().all(Value::is_object) && !node.contains_key("type") {
                continue;
            }
            for key in node.keys() {
                assert!(
                    GEMINI.contains(&key.as_str()),
                    "{}: Gemini rejects `{key}`",
                    spec.name
                );
            }
            if let Some(t) = node.get("type") {
                assert!(t.is_string(), "{}: Gemini needs one type", spec.name);
            }
        }
    }
}

#[test]
fn numbers_accept_integers_and_hex_strings_in_the_schema() {
    let registry = registry();
    let i2c = registry.spec("i2c").unwrap();
    let address = &i2c.input_schema["properties"]["address"];
    let text = address.to_string();
    assert!(
        text.contains("\"integer\"") && text.contains("\"string\""),
        "{address}"
    );
}
