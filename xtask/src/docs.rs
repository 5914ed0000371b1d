//! `cargo xtask docs [--check]`: generate `docs/tools.md` and the tool table of every tool
//! crate's README from the tool registry.
//!
//! `docs/tools.md` documents every tool (arguments, annotations) and shows its schema exactly as
//! each provider dialect receives it (`toolshed tools --format openai|anthropic|gemini|mcp`).
//! Each crate README gets a table of its own tools between `<!-- tools:start -->` and
//! `<!-- tools:end -->`, from `toolshed tools --format crates`.
//!
//! The registry is read from `toolshed tools --format json`: a JSON array of
//! `{name, description, annotations: {read_only, destructive, idempotent, open_world},
//! input_schema}` objects. [`render`] turns it into Markdown; it is a pure function so it can
//! be tested without building the CLI.

use std::fmt::Write as _;
use std::process::Stdio;

use anyhow::Context as _;
use serde_json::Value;

use crate::util;

/// The generated file, relative to the workspace root.
const DOCS_PATH: &str = "docs/tools.md";

/// How deep nested objects are listed (guards against recursive schemas).
const MAX_DEPTH: usize = 8;

/// The provider dialects, as `toolshed tools --format` names them and as the docs title them.
const DIALECTS: [(&str, &str); 4] = [
    ("openai", "OpenAI"),
    ("anthropic", "Anthropic"),
    ("gemini", "Gemini"),
    ("mcp", "MCP"),
];

/// README markers around the generated tool table.
const START: &str = "<!-- tools:start -->";
const END: &str = "<!-- tools:end -->";

pub(crate) fn run(check: bool) -> anyhow::Result<()> {
    let tools = toolshed_json("json")?;
    let exports = DIALECTS
        .iter()
        .map(|(format, title)| Ok((*title, toolshed_json(format)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let exports: Vec<(&str, &Value)> = exports.iter().map(|(t, v)| (*t, v)).collect();
    let rendered = render_with(&tools, &exports)?;
    let count = match tools.as_array().map_or(0, Vec::len) {
        1 => "1 tool".to_owned(),
        n => format!("{n} tools"),
    };
    let mut files = vec![(DOCS_PATH.to_owned(), rendered, count)];
    let crates = toolshed_json("crates")?;
    for entry in crates
        .as_array()
        .context("`--format crates` did not print a list")?
    {
        let name = entry["crate"]
            .as_str()
            .context("a `--format crates` entry has no `crate`")?;
        let names: Vec<&str> = entry["tools"]
            .as_array()
            .context("a `--format crates` entry has no `tools`")?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let path = format!("crates/{name}/README.md");
        let current = read(&util::root().join(&path))?;
        let table = crate_table(&tools, &names)?;
        let spliced = splice(&current, &table).with_context(|| format!("in {path}"))?;
        let count = match names.len() {
            1 => "1 tool".to_owned(),
            n => format!("{n} tools"),
        };
        files.push((path, spliced, count));
    }
    for (path, rendered, count) in files {
        let full = util::root().join(&path);
        if check {
            let current = read(&full)?;
            anyhow::ensure!(
                current == rendered,
                "{path} is out of date: run `cargo xtask docs` and commit the result."
            );
            println!("{path} is up to date ({count})");
        } else {
            if let Some(dir) = full.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("could not create {}", dir.display()))?;
            }
            std::fs::write(&full, &rendered)
                .with_context(|| format!("could not write {}", full.display()))?;
            println!("wrote {path} ({count})");
        }
    }
    Ok(())
}

/// A file's text with `\r\n` as `\n`, or empty when it does not exist.
fn read(path: &std::path::Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text.replace("\r\n", "\n")),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(err) => Err(err).with_context(|| format!("could not read {}", path.display())),
    }
}

/// Runs `toolshed tools --format FORMAT` through cargo and parses what it prints.
fn toolshed_json(format: &str) -> anyhow::Result<Value> {
    let mut cmd = util::cargo([
        "run",
        "--quiet",
        "--locked",
        "-p",
        "toolshed-cli",
        "--",
        "tools",
        "--format",
        format,
    ]);
    let shown = util::display(&cmd);
    println!("$ {shown}");
    let output = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("could not start `{shown}`"))?;
    anyhow::ensure!(
        output.status.success(),
        "`{shown}` failed ({})",
        output.status
    );
    serde_json::from_slice(&output.stdout)
        .with_context(|| format!("`{shown}` did not print valid JSON"))
}

/// The Markdown table of the tools `names` (in that order), linking to their sections in
/// `docs/tools.md`.
pub(crate) fn crate_table(tools: &Value, names: &[&str]) -> anyhow::Result<String> {
    let list = tools
        .as_array()
        .context("the tool list is not a JSON array")?;
    let parsed = list
        .iter()
        .enumerate()
        .map(|(i, v)| Tool::parse(i, v))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut out = String::new();
    out.push_str(
        "<!-- Generated by `cargo xtask docs` from the tool registry. Do not edit by hand. -->\n\n",
    );
    out.push_str("| Tool | What it does | Read-only | Destructive |\n");
    out.push_str("| --- | --- | --- | --- |\n");
    for name in names {
        let tool = parsed
            .iter()
            .find(|t| t.name == *name)
            .with_context(|| format!("the crate lists `{name}`, which the registry lacks"))?;
        let _ = writeln!(
            out,
            "| [`{}`](../../docs/tools.md#{}) | {} | {} | {} |",
            cell(tool.name),
            slug(tool.name),
            cell(&first_sentence(tool.description)),
            tool.flag("read_only"),
            tool.flag("destructive"),
        );
    }
    out.push_str(
        "\nArguments, annotations and the schema each provider receives: [docs/tools.md](../../docs/tools.md).\n",
    );
    Ok(out)
}

/// `readme` with the text between the markers replaced by `table`.
pub(crate) fn splice(readme: &str, table: &str) -> anyhow::Result<String> {
    let start = readme.find(START).with_context(|| {
        format!("no `{START}` marker: add `{START}` and `{END}` where the tool table goes")
    })?;
    let end = readme[start..]
        .find(END)
        .map(|i| start + i)
        .with_context(|| format!("`{START}` without a following `{END}`"))?;
    Ok(format!(
        "{}{START}\n{table}{END}{}",
        &readme[..start],
        &readme[end + END.len()..]
    ))
}

/// One tool as read from the registry JSON.
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    annotations: &'a Value,
    input_schema: &'a Value,
}

impl<'a> Tool<'a> {
    fn parse(index: usize, value: &'a Value) -> anyhow::Result<Self> {
        let name = value["name"]
            .as_str()
            .with_context(|| format!("tool #{index} has no string `name`"))?;
        let description = value["description"]
            .as_str()
            .with_context(|| format!("tool `{name}` has no string `description`"))?;
        let input_schema = &value["input_schema"];
        anyhow::ensure!(
            input_schema.is_object(),
            "tool `{name}` has no object `input_schema`"
        );
        Ok(Tool {
            name,
            description: description.trim(),
            annotations: &value["annotations"],
            input_schema,
        })
    }

    fn flag(&self, key: &str) -> &'static str {
        match self.annotations[key].as_bool() {
            Some(true) => "yes",
            Some(false) => "no",
            None => "—",
        }
    }
}

/// Renders the registry JSON (an array of tools) as the Markdown of `docs/tools.md`, without
/// provider schemas.
#[cfg(test)]
pub(crate) fn render(tools: &Value) -> anyhow::Result<String> {
    render_with(tools, &[])
}

/// Renders the registry JSON (an array of tools) as the Markdown of `docs/tools.md`, with each
/// tool's schema as every dialect in `exports` (title, exported list) receives it.
///
/// Tools are sorted by name so the output does not depend on registration order.
pub(crate) fn render_with(tools: &Value, exports: &[(&str, &Value)]) -> anyhow::Result<String> {
    let list = tools
        .as_array()
        .context("the tool list is not a JSON array")?;
    let mut tools = list
        .iter()
        .enumerate()
        .map(|(i, v)| Tool::parse(i, v))
        .collect::<anyhow::Result<Vec<_>>>()?;
    tools.sort_by(|a, b| a.name.cmp(b.name));
    if let Some(pair) = tools.windows(2).find(|w| w[0].name == w[1].name) {
        anyhow::bail!("two tools are named `{}`", pair[0].name);
    }

    let mut out = String::new();
    out.push_str("# Tools\n\n");
    out.push_str(
        "<!-- Generated by `cargo xtask docs` from `toolshed tools --format json`. \
         Do not edit by hand. -->\n\n",
    );
    out.push_str(
        "> This file is generated by `cargo xtask docs` and must not be edited by hand.\n\
         > To change it, edit the tool's description or argument types in its crate, then run\n\
         > `cargo xtask docs` and commit the result (CI runs `cargo xtask docs --check`).\n\n",
    );
    let noun = if tools.len() == 1 { "tool" } else { "tools" };
    let _ = writeln!(out, "{} {noun}.\n", tools.len());

    out.push_str("| Tool | What it does | Read-only | Destructive |\n");
    out.push_str("| --- | --- | --- | --- |\n");
    for tool in &tools {
        let _ = writeln!(
            out,
            "| [`{}`](#{}) | {} | {} | {} |",
            cell(tool.name),
            slug(tool.name),
            cell(&first_sentence(tool.description)),
            tool.flag("read_only"),
            tool.flag("destructive"),
        );
    }

    for tool in &tools {
        render_tool(&mut out, tool);
        render_exports(&mut out, tool.name, exports)?;
    }
    Ok(out)
}

/// The tool's schema as each dialect receives it, folded away.
fn render_exports(out: &mut String, name: &str, exports: &[(&str, &Value)]) -> anyhow::Result<()> {
    for (title, list) in exports {
        let found = list
            .as_array()
            .with_context(|| format!("the {title} export is not a JSON array"))?
            .iter()
            .find(|t| t["name"].as_str().or(t["function"]["name"].as_str()) == Some(name))
            .with_context(|| format!("the {title} export has no `{name}`"))?;
        let pretty = serde_json::to_string_pretty(found)?;
        let _ = write!(
            out,
            "\n<details><summary>As sent to {title}</summary>\n\n```json\n{pretty}\n```\n\n</details>\n"
        );
    }
    Ok(())
}

fn render_tool(out: &mut String, tool: &Tool<'_>) {
    let _ = write!(out, "\n## `{}`\n\n", tool.name);
    if tool.description.is_empty() {
        out.push_str("*No description.*\n\n");
    } else {
        let _ = write!(out, "{}\n\n", tool.description);
    }

    out.push_str("**Arguments**\n\n");
    let root = tool.input_schema;
    let has_properties = root["properties"]
        .as_object()
        .is_some_and(|p| !p.is_empty());
    if has_properties {
        let mut nested = Vec::new();
        render_fields(out, root, root, "", 0, &mut nested);
        // Breadth-first: objects nested in arguments, then objects nested in those.
        let mut i = 0;
        while i < nested.len() {
            let (label, path, schema, depth) = nested[i].clone();
            let _ = write!(out, "\n{label}\n\n");
            render_fields(out, schema, root, &path, depth, &mut nested);
            i += 1;
        }
    } else {
        out.push_str("This tool takes no arguments.\n");
    }

    out.push_str("\n**Annotations**\n\n");
    out.push_str("| Read-only | Destructive | Idempotent | Open world |\n");
    out.push_str("| --- | --- | --- | --- |\n");
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} |",
        tool.flag("read_only"),
        tool.flag("destructive"),
        tool.flag("idempotent"),
        tool.flag("open_world"),
    );
}

/// A nested object to list after a table: (intro line, name prefix, schema, depth).
type Nested<'a> = (String, String, &'a Value, usize);

/// Writes the table of an object schema's properties; required ones first.
fn render_fields<'a>(
    out: &mut String,
    object: &'a Value,
    root: &'a Value,
    prefix: &str,
    depth: usize,
    nested: &mut Vec<Nested<'a>>,
) {
    let object = resolve(object, root);
    let Some(properties) = object["properties"].as_object() else {
        return;
    };
    let required: Vec<&str> = object["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let (mut ordered, optional): (Vec<_>, Vec<_>) = properties
        .iter()
        .partition(|(name, _)| required.contains(&name.as_str()));
    ordered.extend(optional);

    out.push_str("| Name | Type | Required | Default | Description |\n");
    out.push_str("| --- | --- | --- | --- | --- |\n");
    for (name, prop) in ordered {
        let full_name = format!("{prefix}{name}");
        let info = type_info(prop, root, 0);
        let resolved = resolve(prop, root);

        let mut description = text_of(prop, "description")
            .or_else(|| text_of(resolved, "description"))
            .map(collapse_whitespace)
            .unwrap_or_default();
        if !info.values.is_empty() {
            let values = info
                .values
                .iter()
                .map(|v| format!("`{v}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if !description.is_empty() {
                description.push(' ');
            }
            let _ = write!(description, "One of: {values}.");
        }
        let default = prop
            .get("default")
            .or_else(|| resolved.get("default"))
            .map_or_else(|| "—".to_owned(), |d| format!("`{d}`"));
        let is_required = if required.contains(&name.as_str()) {
            "yes"
        } else {
            "no"
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            cell(&full_name),
            cell(&info.ty),
            is_required,
            cell(&default),
            cell(&description),
        );

        if let Some((fields, of_items)) = info.fields
            && depth < MAX_DEPTH
        {
            let (label, path) = if of_items {
                (
                    format!("Each item of `{full_name}` is an object with these fields:"),
                    format!("{full_name}[]."),
                )
            } else {
                (
                    format!("`{full_name}` is an object with these fields:"),
                    format!("{full_name}."),
                )
            };
            nested.push((label, path, fields, depth + 1));
        }
    }
}

/// What the Type column shows, plus what is listed elsewhere.
struct TypeInfo<'a> {
    /// The type, without `null`: `string`, `integer`, `array of objects`, ...
    ty: String,
    /// Allowed values (`enum`/`const`), as JSON.
    values: Vec<String>,
    /// An object schema whose fields are listed below the table, and whether it describes the
    /// items of an array (`true`) or the value itself (`false`).
    fields: Option<(&'a Value, bool)>,
}

fn type_info<'a>(schema: &'a Value, root: &'a Value, depth: usize) -> TypeInfo<'a> {
    let schema = resolve(schema, root);
    let mut info = TypeInfo {
        ty: String::new(),
        values: Vec::new(),
        fields: None,
    };
    if depth > MAX_DEPTH {
        info.ty = "any".to_owned();
        return info;
    }

    // `enum` / `const`.
    let mut values: Vec<&Value> = Vec::new();
    if let Some(list) = schema["enum"].as_array() {
        values.extend(list.iter().filter(|v| !v.is_null()));
    }
    if let Some(c) = schema.get("const").filter(|c| !c.is_null()) {
        values.push(c);
    }

    // `anyOf` / `oneOf`, as schemars emits for `Option<T>` and documented enum variants.
    let variants: Vec<&Value> = ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| schema[*k].as_array())
        .flatten()
        .map(|v| resolve(v, root))
        .filter(|v| !is_null_schema(v))
        .collect();

    let own_types = types_of(schema);
    if !variants.is_empty() && own_types.is_empty() && values.is_empty() {
        let infos: Vec<TypeInfo<'a>> = variants
            .iter()
            .map(|v| type_info(v, root, depth + 1))
            .collect();
        if infos.len() == 1 {
            return infos.into_iter().next().unwrap_or(info);
        }
        let mut types: Vec<String> = Vec::new();
        for i in &infos {
            if !types.contains(&i.ty) {
                types.push(i.ty.clone());
            }
        }
        let all_values = infos.iter().all(|i| !i.values.is_empty());
        info.ty = types.join(" or ");
        if all_values {
            info.values = infos.into_iter().flat_map(|i| i.values).collect();
        } else {
            info.fields = infos.into_iter().find_map(|i| i.fields);
        }
        return info;
    }

    info.values = values.iter().map(|v| v.to_string()).collect();
    let types = if own_types.is_empty() {
        infer_types(&values)
    } else {
        own_types
    };
    if types.is_empty() {
        info.ty = if schema["properties"].is_object() {
            "object".to_owned()
        } else {
            "any".to_owned()
        };
    } else {
        info.ty = types.join(" or ");
    }

    if types == ["array"] {
        let items = schema.get("items").map(|i| resolve(i, root));
        match items {
            Some(items) => {
                let item = type_info(items, root, depth + 1);
                if item.ty == "object" && has_properties(items) {
                    info.ty = "array of objects".to_owned();
                    info.fields = Some((items, true));
                } else {
                    info.ty = format!("array of {}", item.ty);
                    info.values = item.values;
                    info.fields = item.fields;
                }
            }
            None => info.ty = "array".to_owned(),
        }
    } else if info.ty == "object" && has_properties(schema) {
        info.fields = Some((schema, false));
    }
    info
}

/// The `type` of a schema (a string or an array), without `null`.
fn types_of(schema: &Value) -> Vec<String> {
    match &schema["type"] {
        Value::String(t) if t != "null" => vec![t.clone()],
        Value::Array(list) => list
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// The JSON types of some enum values.
fn infer_types(values: &[&Value]) -> Vec<String> {
    let mut types: Vec<String> = Vec::new();
    for v in values {
        let t = match v {
            Value::String(_) => "string",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_f64() => "number",
            Value::Number(_) => "integer",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
            Value::Null => continue,
        };
        if !types.iter().any(|x| x == t) {
            types.push(t.to_owned());
        }
    }
    types
}

fn is_null_schema(schema: &Value) -> bool {
    schema["type"] == "null" || schema.get("const").is_some_and(Value::is_null)
}

fn has_properties(schema: &Value) -> bool {
    schema["properties"]
        .as_object()
        .is_some_and(|p| !p.is_empty())
}

/// Follows local `$ref`s (`#/$defs/X`, `#/definitions/X`) against the tool's input schema.
fn resolve<'a>(mut schema: &'a Value, root: &'a Value) -> &'a Value {
    for _ in 0..MAX_DEPTH {
        let Some(reference) = schema["$ref"].as_str() else {
            break;
        };
        let Some(pointer) = reference.strip_prefix('#') else {
            break;
        };
        match root.pointer(pointer) {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

fn text_of<'a>(schema: &'a Value, key: &str) -> Option<&'a str> {
    schema[key]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// The first sentence of the first paragraph of a description.
fn first_sentence(description: &str) -> String {
    let paragraph = description.trim().split("\n\n").next().unwrap_or_default();
    let text = collapse_whitespace(paragraph);
    let chars: Vec<char> = text.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if matches!(c, '.' | '!' | '?') {
            // A sentence ends at the end, or before a space and a non-lowercase letter
            // (so "e.g. a file" does not end one).
            match chars.get(i + 1) {
                None => break,
                Some(' ') => {
                    if chars.get(i + 2).is_none_or(|n| !n.is_lowercase()) {
                        return chars[..=i].iter().collect();
                    }
                }
                Some(_) => {}
            }
        }
    }
    text
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Makes text safe for one Markdown table cell.
fn cell(text: &str) -> String {
    collapse_whitespace(text).replace('|', "\\|")
}

/// The anchor GitHub gives a heading with this text.
fn slug(text: &str) -> String {
    text.chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(c.to_ascii_lowercase())
            } else if c == ' ' {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{crate_table, first_sentence, render, render_with, splice};
    use serde_json::json;

    fn sample() -> serde_json::Value {
        json!([
            {
                "name": "write_file",
                "description": "Writes a file, e.g. a config. Creates parent directories.\n\nMore text.",
                "annotations": {"read_only": false, "destructive": true, "idempotent": true, "open_world": false},
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "Where to write."},
                        "mode": {"type": ["integer", "null"], "default": 420, "description": "Unix mode."},
                        "encoding": {"type": "string", "enum": ["utf-8", "base64"], "default": "utf-8"},
                        "edits": {
                            "type": "array",
                            "items": {"$ref": "#/$defs/Edit"}
                        }
                    },
                    "required": ["path"],
                    "$defs": {
                        "Edit": {
                            "type": "object",
                            "properties": {
                                "old": {"type": "string", "description": "Text | to replace."},
                                "new": {"type": "string"}
                            },
                            "required": ["old", "new"]
                        }
                    }
                }
            },
            {
                "name": "list_dir",
                "description": "Lists a directory.",
                "annotations": {"read_only": true, "destructive": false, "idempotent": true, "open_world": false},
                "input_schema": {"type": "object", "properties": {}}
            }
        ])
    }

    #[test]
    fn renders_names_required_markers_and_defaults() {
        let md = render(&sample()).unwrap();
        assert!(md.contains("generated by `cargo xtask docs`"), "{md}");
        // Summary table, sorted by name, first sentence only.
        let list = md.find("| [`list_dir`](#list_dir) | Lists a directory. | yes | no |");
        let write =
            md.find("| [`write_file`](#write_file) | Writes a file, e.g. a config. | no | yes |");
        assert!(list.is_some() && write.is_some() && list < write, "{md}");
        // Sections with the full description.
        assert!(md.contains("## `write_file`\n\nWrites a file, e.g. a config. Creates parent directories.\n\nMore text.\n"));
        assert!(md.contains("## `list_dir`"));
        assert!(md.contains("This tool takes no arguments."));
        // Required marker, nullable type without null, defaults and enum values.
        assert!(
            md.contains("| `path` | string | yes | — | Where to write. |"),
            "{md}"
        );
        assert!(
            md.contains("| `mode` | integer | no | `420` | Unix mode. |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| `encoding` | string | no | `\"utf-8\"` | One of: `\"utf-8\"`, `\"base64\"`. |"
            ),
            "{md}"
        );
        // Array of objects, with the item fields listed below.
        assert!(
            md.contains("| `edits` | array of objects | no | — |  |"),
            "{md}"
        );
        assert!(md.contains("Each item of `edits` is an object with these fields:"));
        assert!(
            md.contains("| `edits[].old` | string | yes | — | Text \\| to replace. |"),
            "{md}"
        );
        // Annotations.
        assert!(md.contains("| Read-only | Destructive | Idempotent | Open world |\n| --- | --- | --- | --- |\n| no | yes | yes | no |"));
    }

    #[test]
    fn rejects_what_is_not_a_tool_list() {
        assert!(render(&json!({"name": "x"})).is_err());
        assert!(render(&json!([{"description": "no name", "input_schema": {}}])).is_err());
    }

    #[test]
    fn first_sentence_skips_abbreviations() {
        assert_eq!(first_sentence("Reads a file. Then more."), "Reads a file.");
        assert_eq!(first_sentence("Runs e.g. ls. Then"), "Runs e.g. ls.");
        assert_eq!(first_sentence("No period"), "No period");
        assert_eq!(
            first_sentence("Line one\ncontinues. Two."),
            "Line one continues."
        );
    }

    #[test]
    fn every_dialect_is_shown_under_its_tool() {
        let openai = json!([
            {"type": "function", "function": {"name": "list_dir", "parameters": {}}},
            {"type": "function", "function": {"name": "write_file", "parameters": {"x": 1}}}
        ]);
        let gemini = json!([{"name": "write_file"}, {"name": "list_dir"}]);
        let md = render_with(&sample(), &[("OpenAI", &openai), ("Gemini", &gemini)]).unwrap();
        let section = &md[md.find("## `write_file`").unwrap()..];
        let openai_at = section.find("As sent to OpenAI").unwrap();
        let gemini_at = section.find("As sent to Gemini").unwrap();
        assert!(openai_at < gemini_at);
        assert!(section[openai_at..].contains("\"x\": 1"), "{section}");
        // A dialect that lost a tool is an error, not a silent gap.
        let partial = json!([{"name": "list_dir"}]);
        assert!(render_with(&sample(), &[("Gemini", &partial)]).is_err());
    }

    #[test]
    fn crate_tables_replace_only_what_is_between_the_markers() {
        let table = crate_table(&sample(), &["write_file"]).unwrap();
        assert!(table.contains("| [`write_file`](../../docs/tools.md#write_file) | Writes a file, e.g. a config. | no | yes |"), "{table}");
        assert!(!table.contains("list_dir"));
        let readme = "# crate\n\nIntro.\n\n<!-- tools:start -->\nold table\n<!-- tools:end -->\n\n## Example\n";
        let spliced = splice(readme, &table).unwrap();
        assert!(spliced.starts_with("# crate\n\nIntro.\n\n<!-- tools:start -->\n<!-- Generated"));
        assert!(spliced.ends_with("<!-- tools:end -->\n\n## Example\n"));
        assert!(!spliced.contains("old table"));
        // Splicing is stable: a second run changes nothing.
        assert_eq!(splice(&spliced, &table).unwrap(), spliced);
        // Missing markers and unknown tools are errors.
        assert!(splice("# no markers\n", &table).is_err());
        assert!(crate_table(&sample(), &["nope"]).is_err());
    }
}
