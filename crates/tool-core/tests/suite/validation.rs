//! Argument validation through the whole stack: strict JSON, schema with field paths, typed parse.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::{
    Access, Annotations, ErrorKind, Limits, MemoryAudit, Policy, Registry, Stack, Tool,
    ToolContext, ToolError, ToolOutput, typed,
};

use super::Fixture;

#[derive(Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
struct Inner {
    flag: bool,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Fast,
    Careful,
}

/// The probe's arguments: required, optional, nested, enum, list and free-form fields.
#[derive(Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
struct ProbeArgs {
    /// A required string.
    name: String,
    /// A required count.
    count: u32,
    /// Optional tags.
    tags: Option<Vec<String>>,
    /// An optional nested object.
    nested: Option<Inner>,
    /// An optional enum.
    mode: Option<Mode>,
    /// Free-form data (any JSON).
    data: Option<Value>,
}

/// Echoes its parsed arguments as structured output, so tests see what the tool received.
struct Probe;

#[async_trait]
impl Tool for Probe {
    const NAME: &'static str = "probe";
    type Args = ProbeArgs;
    fn description(&self) -> String {
        "Echoes its arguments.".into()
    }
    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }
    fn access(&self, _ctx: &ToolContext, _args: &ProbeArgs) -> Result<Vec<Access>, ToolError> {
        Ok(Vec::new())
    }
    async fn call(&self, _ctx: &ToolContext, args: ProbeArgs) -> Result<ToolOutput, ToolError> {
        let v = serde_json::to_value(&args).map_err(ToolError::internal)?;
        Ok(ToolOutput::text(args.name.clone()).with_structured(v))
    }
}

fn stack(audit: &MemoryAudit) -> Stack {
    let mut reg = Registry::new();
    reg.register(typed(Probe)).unwrap();
    Stack::new(reg).with_audit(std::sync::Arc::new(audit.clone()))
}

fn nest(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

/// What a row expects.
enum Expect {
    /// Succeeds, and the tool receives exactly this (after nulls for optional fields are dropped).
    Ok(Value),
    /// Refused as invalid arguments at `path`, with a message containing each of `mentions`.
    Invalid {
        path: &'static str,
        mentions: &'static [&'static str],
    },
}

#[tokio::test]
async fn validation_table() {
    let fx = Fixture::new();
    let audit = MemoryAudit::default();
    let stack = stack(&audit);
    let received = |v: Value| {
        // The probe echoes every field; absent optional fields come back as null.
        let mut full = json!({"tags": null, "nested": null, "mode": null, "data": null});
        for (k, x) in v.as_object().unwrap() {
            full[k] = x.clone();
        }
        Expect::Ok(full)
    };
    let deep_ok = format!(r#"{{"name":"a","count":1,"data":{}}}"#, nest(20));
    let deep_bad = format!(r#"{{"name":"a","count":1,"data":{}}}"#, nest(40));
    let cases: Vec<(&str, String, Expect)> = vec![
        (
            "minimal",
            r#"{"name":"a","count":1}"#.into(),
            received(json!({"name":"a","count":1})),
        ),
        (
            "unknown field",
            r#"{"name":"a","count":1,"colour":"red"}"#.into(),
            Expect::Invalid {
                path: "",
                mentions: &["colour", "name", "count"],
            },
        ),
        (
            "unknown nested field",
            r#"{"name":"a","count":1,"nested":{"flag":true,"shade":1}}"#.into(),
            Expect::Invalid {
                path: "/nested",
                mentions: &["shade", "flag"],
            },
        ),
        (
            "nested twin",
            r#"{"name":"a","count":1,"nested":{"flag":true}}"#.into(),
            received(json!({"name":"a","count":1,"nested":{"flag":true,"note":null}})),
        ),
        (
            "missing required",
            r#"{"count":1}"#.into(),
            Expect::Invalid {
                path: "",
                mentions: &["name", "missing"],
            },
        ),
        (
            "missing nested required",
            r#"{"name":"a","count":1,"nested":{}}"#.into(),
            Expect::Invalid {
                path: "/nested",
                mentions: &["flag"],
            },
        ),
        (
            "empty document",
            "".into(),
            Expect::Invalid {
                path: "",
                mentions: &["name"],
            },
        ),
        (
            "wrong type",
            r#"{"name":"a","count":"three"}"#.into(),
            Expect::Invalid {
                path: "/count",
                mentions: &["/count"],
            },
        ),
        (
            "negative for unsigned",
            r#"{"name":"a","count":-1}"#.into(),
            Expect::Invalid {
                path: "/count",
                mentions: &["/count"],
            },
        ),
        (
            "fraction for integer",
            r#"{"name":"a","count":1.5}"#.into(),
            Expect::Invalid {
                path: "/count",
                mentions: &["/count"],
            },
        ),
        (
            "too large for u32",
            r#"{"name":"a","count":4294967296}"#.into(),
            Expect::Invalid {
                path: "/count",
                mentions: &["count"],
            },
        ),
        (
            "u32 max twin",
            r#"{"name":"a","count":4294967295}"#.into(),
            received(json!({"name":"a","count":4294967295u64})),
        ),
        (
            "wrong item type",
            r#"{"name":"a","count":1,"tags":["x",3]}"#.into(),
            Expect::Invalid {
                path: "/tags/1",
                mentions: &["/tags/1"],
            },
        ),
        (
            "tags twin",
            r#"{"name":"a","count":1,"tags":["x","y"]}"#.into(),
            received(json!({"name":"a","count":1,"tags":["x","y"]})),
        ),
        (
            "bad enum value",
            r#"{"name":"a","count":1,"mode":"reckless"}"#.into(),
            Expect::Invalid {
                path: "/mode",
                mentions: &["/mode"],
            },
        ),
        (
            "enum twin",
            r#"{"name":"a","count":1,"mode":"careful"}"#.into(),
            received(json!({"name":"a","count":1,"mode":"careful"})),
        ),
        (
            "duplicate key",
            r#"{"name":"a","name":"b","count":1}"#.into(),
            Expect::Invalid {
                path: "",
                mentions: &["name", "twice"],
            },
        ),
        (
            "nested duplicate key",
            r#"{"name":"a","count":1,"nested":{"flag":true,"flag":false}}"#.into(),
            Expect::Invalid {
                path: "",
                mentions: &["flag", "twice"],
            },
        ),
        (
            "too deep",
            deep_bad,
            Expect::Invalid {
                path: "",
                mentions: &["nesting"],
            },
        ),
        (
            "deep twin",
            deep_ok.clone(),
            received(serde_json::from_str(&deep_ok).unwrap()),
        ),
        (
            "null optional",
            r#"{"name":"a","count":1,"tags":null,"nested":null,"mode":null}"#.into(),
            received(json!({"name":"a","count":1})),
        ),
        (
            "null nested optional",
            r#"{"name":"a","count":1,"nested":{"flag":false,"note":null}}"#.into(),
            received(json!({"name":"a","count":1,"nested":{"flag":false,"note":null}})),
        ),
        (
            "null required",
            r#"{"name":null,"count":1}"#.into(),
            Expect::Invalid {
                path: "/name",
                mentions: &["/name"],
            },
        ),
        (
            "not an object",
            r#"["name","a"]"#.into(),
            Expect::Invalid {
                path: "",
                mentions: &["object"],
            },
        ),
        (
            "trailing garbage",
            r#"{"name":"a","count":1} {"name":"b"}"#.into(),
            Expect::Invalid {
                path: "",
                mentions: &["JSON"],
            },
        ),
        (
            "not JSON",
            r#"{name: "a"}"#.into(),
            Expect::Invalid {
                path: "",
                mentions: &["JSON"],
            },
        ),
    ];
    let mut audited = 0;
    for (case, raw, expect) in cases {
        let got = stack
            .call_json(
                "probe",
                &raw,
                fx.ctx(Policy::read_only(), Limits::default()),
            )
            .await;
        audited += 1;
        match expect {
            Expect::Ok(want) => {
                let out = got.unwrap_or_else(|e| panic!("{case}: refused: {e}"));
                assert_eq!(out.structured.as_ref(), Some(&want), "{case}");
            }
            Expect::Invalid { path, mentions } => {
                let err = match got {
                    Err(e) => e,
                    Ok(o) => panic!("{case}: accepted: {o:?}"),
                };
                assert_eq!(err.kind(), ErrorKind::InvalidArgs, "{case}: {err}");
                let ToolError::InvalidArgs { path: got_path, .. } = &err else {
                    unreachable!()
                };
                assert_eq!(got_path, path, "{case}: {err}");
                let msg = err.to_string();
                for m in mentions {
                    assert!(msg.contains(m), "{case}: {msg:?} does not mention {m:?}");
                }
                // Refusals say what to do next.
                assert!(msg.len() > 20, "{case}: {msg}");
            }
        }
        let records = audit.records();
        assert_eq!(records.len(), audited, "{case}: not audited");
        let last = records.last().unwrap();
        assert_eq!(last.tool, "probe");
    }
}

/// Arguments larger than `max_args_bytes` are refused before parsing; the twin just under passes.
#[tokio::test]
async fn argument_size_limit() {
    let fx = Fixture::new();
    let stack = stack(&MemoryAudit::default());
    let small = r#"{"name":"a","count":1}"#;
    let limits = Limits {
        max_args_bytes: small.len(),
        ..Limits::default()
    };
    let big = r#"{"name":"ab","count":1}"#;
    let ok = stack
        .call_json("probe", small, fx.ctx(Policy::read_only(), limits.clone()))
        .await;
    assert!(ok.is_ok(), "{ok:?}");
    let err = stack
        .call_json("probe", big, fx.ctx(Policy::read_only(), limits))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgs);
    assert!(err.to_string().contains("limit"), "{err}");
}

/// `Stack::call` with an already-parsed value goes through the same schema check.
#[tokio::test]
async fn parsed_values_are_validated_too() {
    let fx = Fixture::new();
    let stack = stack(&MemoryAudit::default());
    let cases = [
        (json!({"name":"a","count":1}), true),
        (json!({"name":"a","count":1,"extra":true}), false),
        (json!({"name":"a","count":"1"}), false),
        (json!({"name":"a","count":1,"tags":null}), true),
        (json!(null), false),
        (json!([]), false),
    ];
    for (args, ok) in cases {
        let got = stack
            .call(
                "probe",
                args.clone(),
                fx.ctx(Policy::read_only(), Limits::default()),
            )
            .await;
        assert_eq!(got.is_ok(), ok, "{args}: {got:?}");
        if !ok {
            assert_eq!(got.unwrap_err().kind(), ErrorKind::InvalidArgs, "{args}");
        }
    }
}
