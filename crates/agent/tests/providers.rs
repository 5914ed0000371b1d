//! The three LLM providers against scripted servers on loopback that answer in each
//! provider's documented wire format.

#[path = "providers/server.rs"]
mod server;

#[path = "providers/common.rs"]
mod common;

#[path = "providers/openai.rs"]
mod openai;

#[path = "providers/anthropic.rs"]
mod anthropic;

#[path = "providers/gemini.rs"]
mod gemini;
