//! The Toolshed agent loop: LLM providers over their real wire formats, the loop that calls
//! tools through a [`tool_core::Stack`], subagents, and persisted sessions.
//!
//! # The loop
//!
//! [`Runtime::run`] sends the conversation and the agent's tools (exported in the provider's
//! dialect) to the model; each tool call it answers with goes through the policy stack —
//! validation, policy, approval, deadline, truncation — and the results go back, until the
//! model answers without a tool call, calls `finish`, or reaches the iteration limit.
//!
//! - Calls of one turn that are all read-only run together; the others run one at a time, in
//!   order. Results come back in the order of the calls, cut head + tail at a size limit.
//! - An unknown tool name, malformed arguments or a refused call become error results the
//!   model can act on, never a crash. After `repeat_limit` identical failures the same call is
//!   not run again, and the model is told so.
//! - Content a memory recall returned in this run is not stored again (the snowball guard, on
//!   top of tools-memory's refusal of recall frames), compared after
//!   [`tool_core::frame::fold`], so width, case, invisible characters and spacing do not
//!   make it new.
//! - Cancellation (the context's token) stops the model call and the running tool.
//!
//! # Subagents
//!
//! `delegate` runs a named agent ([`AgentSpec`]) on a sub-task and waits; `spawn` starts one in
//! the background. A subagent's tools are its allow map ∩ its parent's tools, minus
//! [`spec::SUBAGENT_EXCLUDED`]; it shares the parent's context, so its policy is never wider.
//! Depth is limited (3) and so is the number running at once (4).
//!
//! # Example
//!
//! What a subagent may use is its allow map; providers know their endpoints and key variables:
//!
//! ```
//! use toolshed_agent::ToolFilter;
//! use toolshed_agent::provider::ProviderKind;
//!
//! let filter = ToolFilter::only(["file_read", "grep"]);
//! assert!(filter.allows("grep"));
//! assert!(!filter.allows("shell"));
//! assert!(ToolFilter::all().allows("shell"));
//!
//! assert_eq!(ProviderKind::Anthropic.default_key_env(), "ANTHROPIC_API_KEY");
//! ```

pub mod event;
pub mod message;
pub mod provider;
mod run;
pub mod session;
pub mod spec;
mod tools;

pub use event::{AgentEvent, EventSink};
pub use message::{Message, Part, ToolCall, ToolResult};
pub use run::{AgentError, FinishedBy, Persist, RunOutcome, RunSettings, Runtime};
pub use session::{SessionInfo, SessionStore};
pub use spec::{AgentSpec, ToolFilter};
pub use tools::{Channels, DelegateArgs, FinishArgs, MessageArgs, SpawnArgs, agent_tool_specs};
