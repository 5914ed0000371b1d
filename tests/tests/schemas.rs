//! Every registered tool's schema, in every dialect: snapshot-tested and checked against the
//! rules each provider enforces.

// Snapshot tests read and write their snapshot files.
#![allow(clippy::disallowed_methods)]

use serde_json::Value;
use tool_core::{Provider, schema};

/// Every tool of the registry, and the agent loop's own tools (finish, message, delegate,
/// spawn), which models see in `toolshed run`.
fn specs() -> Vec<tool_core::ToolSpec> {
    let registry = toolshed_cli::registry().expect("the registry builds");
    let mut specs: Vec<tool_core::ToolSpec> = registry.specs().into_iter().cloned().collect();
    specs.extend(toolshed_agent::agent_tool_specs());
    specs
}

#[test]
fn snapshots_of_every_tool_in_every_dialect() {
    for spec in &specs() {
        for provider in Provider::ALL {
            let exported = schema::export(spec, provider);
            insta::assert_json_snapshot!(format!("{}__{}", spec.name, provider.as_str()), exported);
        }
    }
}

fn walk<'a>(v: &'a Value, out: &mut Vec<&'a serde_json::Map<String, Value>>) {
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

#[test]
fn openai_strict_rules_hold_for_every_tool() {
    for spec in &specs() {
        let exported = schema::export(spec, Provider::OpenAi);
        let parameters = &exported["function"]["parameters"];
        // A free-form map cannot be closed: such a tool goes out non-strict, every other
        // tool strict.
        let mut all = Vec::new();
        walk(parameters, &mut all);
        let open = all.iter().any(|n| {
            let object = match n.get("type") {
                Some(Value::String(t)) => t == "object",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
                _ => false,
            };
            object && n.get("additionalProperties") != Some(&Value::Bool(false))
        });
        assert_eq!(exported["function"]["strict"], !open, "{}", spec.name);
        if open {
            continue;
        }
        let mut nodes = Vec::new();
        walk(&exported["function"]["parameters"], &mut nodes);
        for node in nodes {
            if let Some(Value::Object(props)) = node.get("properties") {
                let required: Vec<&str> = node["required"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{}: an object without `required`", spec.name))
                    .iter()
                    .map(|r| r.as_str().unwrap())
                    .collect();
                let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
                let mut req = required.clone();
                keys.sort_unstable();
                req.sort_unstable();
                assert_eq!(
                    keys, req,
                    "{}: strict mode needs every property required",
                    spec.name
                );
                assert_eq!(
                    node.get("additionalProperties"),
                    Some(&Value::Bool(false)),
                    "{}",
                    spec.name
                );
            }
            assert!(
                node.get("default").is_none(),
                "{}: strict mode rejects `default`",
                spec.name
            );
            assert!(
                node.get("$ref").is_none(),
                "{}: refs must be inlined",
                spec.name
            );
        }
    }
}

#[test]
fn gemini_schemas_use_only_accepted_keywords() {
    const ACCEPTED: &[&str] = &[
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
    for spec in &specs() {
        let exported = schema::export(spec, Provider::Gemini);
        let mut nodes = Vec::new();
        walk(&exported["parameters"], &mut nodes);
        for node in nodes {
            // `properties` maps names to schemas; its keys are field names, not keywords.
            let is_property_map = node.values().all(Value::is_object) && !node.contains_key("type");
            if is_property_map {
                continue;
            }
            for key in node.keys() {
                assert!(
                    ACCEPTED.contains(&key.as_str()),
                    "{}: Gemini rejects `{key}`",
                    spec.name
                );
            }
            if let Some(t) = node.get("type") {
                assert!(
                    t.is_string(),
                    "{}: Gemini needs one type, not a union",
                    spec.name
                );
            }
        }
    }
}

#[test]
fn every_tool_documents_itself_and_its_arguments() {
    for spec in &specs() {
        assert!(
            spec.description.trim_end().ends_with('.'),
            "{}: description is a sentence",
            spec.name
        );
        let props = spec.input_schema["properties"].as_object().unwrap();
        for (name, prop) in props {
            assert!(
                prop.get("description")
                    .and_then(Value::as_str)
                    .is_some_and(|d| !d.is_empty()),
                "{}: argument `{name}` has no description",
                spec.name
            );
        }
        assert_eq!(
            spec.input_schema["additionalProperties"], false,
            "{}",
            spec.name
        );
        let mcp = schema::export(spec, Provider::Mcp);
        assert!(mcp["annotations"]["readOnlyHint"].is_boolean());
    }
}
