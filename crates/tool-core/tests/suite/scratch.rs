use schemars::JsonSchema;
use serde::Deserialize;

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Item {
    name: String,
    weight: Option<f64>,
}

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Fast,
    Slow,
}

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Choice {
    Line { n: u32 },
    Range { start: u32, end: u32 },
    Whole,
}

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum Tagged {
    A { x: u8 },
    B { y: String },
}

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
/// Complex args.
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
    default: Option<Item>,
    properties: Vec<String>,
}

#[test]
fn show() {
    let s = tool_core::schema::derive::<Complex>();
    println!("{}", serde_json::to_string_pretty(&s).unwrap());
}

#[test]
fn show_export() {
    let s = tool_core::schema::derive::<Complex>();
    let spec = tool_core::ToolSpec {
        name: "x".into(),
        description: "d".into(),
        input_schema: s,
        annotations: tool_core::Annotations::READ_ONLY,
    };
    for p in [tool_core::Provider::OpenAi, tool_core::Provider::Gemini] {
        println!(
            "{}",
            serde_json::to_string_pretty(&tool_core::schema::export(&spec, p)).unwrap()
        );
    }
}
