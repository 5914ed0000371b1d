//! The `Tool` trait authors implement, and the object-safe `DynTool` the registry holds.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::output::ToolOutput;
use crate::policy::Access;
use crate::spec::{Annotations, ToolSpec};

/// A typed tool. Implement this; the registry wraps it with [`typed`].
///
/// `access` runs before the policy is consulted and must list everything `call` will touch;
/// when it cannot tell, it must return the broadest access (fail closed), never an empty list.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The name models call it by (`noun_verb` or a seed-compatible name).
    const NAME: &'static str;
    /// The arguments; derive `Deserialize` (with `deny_unknown_fields`) and `JsonSchema`.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;

    /// What it does, for the model: one sentence first, then details.
    fn description(&self) -> String;

    /// Behaviour hints.
    fn annotations(&self) -> Annotations;

    /// What a call with `args` will touch.
    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError>;

    /// The deadline the call asks for, if not the default (bounded by `Limits::max_timeout`).
    fn timeout(&self, _args: &Self::Args) -> Option<Duration> {
        None
    }

    /// The other tools whose job this tool does, in any of its calls (`schedule` does
    /// `cron_add`'s, `cron_add` does `schedule`'s), by canonical name. An agent whose allow map
    /// refuses one of them does not get this tool either.
    const SAME_JOB: &'static [&'static str] = &[];

    /// The other tools whose job this call does ([`Tool::SAME_JOB`], or the part of it that
    /// `args` pick: `schedule` with `once` does `cron_add`'s): their rules apply to it too, and
    /// the strictest wins, so a rule on one of two tools that do the same thing holds for both.
    fn same_as(&self, _args: &Self::Args) -> &'static [&'static str] {
        Self::SAME_JOB
    }

    /// Runs the call.
    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError>;
}

/// A boxed future of a call's result.
pub type CallFuture = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send>>;

/// A call whose arguments have been parsed and whose accesses are known; run it with
/// [`PreparedCall::run`] once the policy allows.
pub struct PreparedCall {
    /// What the call will touch.
    pub accesses: Vec<Access>,
    /// The deadline it asks for.
    pub timeout: Option<Duration>,
    /// The other tools whose job it does, whose rules apply to it too ([`Tool::same_as`]).
    pub same_as: Vec<String>,
    run: Box<dyn FnOnce(ToolContext) -> CallFuture + Send>,
}

impl PreparedCall {
    /// A prepared call from its parts (for [`DynTool`] implementations outside this crate).
    pub fn new(
        accesses: Vec<Access>,
        timeout: Option<Duration>,
        run: impl FnOnce(ToolContext) -> CallFuture + Send + 'static,
    ) -> Self {
        PreparedCall {
            accesses,
            timeout,
            same_as: Vec::new(),
            run: Box::new(run),
        }
    }

    /// The other tools whose job the call does ([`Tool::same_as`]).
    pub fn with_same_as(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.same_as = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Runs the call.
    pub fn run(self, ctx: ToolContext) -> CallFuture {
        (self.run)(ctx)
    }
}

impl fmt::Debug for PreparedCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedCall")
            .field("accesses", &self.accesses)
            .field("timeout", &self.timeout)
            .field("same_as", &self.same_as)
            .finish_non_exhaustive()
    }
}

/// The object-safe face of a tool. [`Tool`] gets it through [`typed`]; tools whose schema is only
/// known at run time (remote MCP tools) implement it directly.
pub trait DynTool: Send + Sync {
    /// Name, description, schema and hints.
    fn spec(&self) -> &ToolSpec;
    /// Parses already-validated arguments and works out what the call will touch.
    fn prepare(&self, ctx: &ToolContext, args: Value) -> Result<PreparedCall, ToolError>;
    /// The other tools whose job this one does ([`Tool::SAME_JOB`]).
    fn same_job(&self) -> &'static [&'static str] {
        &[]
    }
}

impl fmt::Debug for dyn DynTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DynTool({})", self.spec().name)
    }
}

/// Wraps a typed tool as a [`DynTool`], deriving and normalising its schema once.
pub fn typed<T: Tool>(tool: T) -> Arc<dyn DynTool> {
    let spec = ToolSpec {
        name: T::NAME.to_string(),
        description: tool.description(),
        input_schema: crate::schema::derive::<T::Args>(),
        annotations: tool.annotations(),
    };
    Arc::new(Typed {
        tool: Arc::new(tool),
        spec,
    })
}

struct Typed<T> {
    tool: Arc<T>,
    spec: ToolSpec,
}

impl<T: Tool> DynTool for Typed<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn same_job(&self) -> &'static [&'static str] {
        T::SAME_JOB
    }

    fn prepare(&self, ctx: &ToolContext, args: Value) -> Result<PreparedCall, ToolError> {
        let args: T::Args = serde_json::from_value(args).map_err(|e| {
            ToolError::invalid(
                "",
                format!("{e}; fix the arguments of `{}` and call it again", T::NAME),
            )
        })?;
        let accesses = self.tool.access(ctx, &args)?;
        let timeout = self.tool.timeout(&args);
        let same_as = self.tool.same_as(&args);
        debug_assert!(
            same_as.iter().all(|t| T::SAME_JOB.contains(t)),
            "{}: same_as names a tool SAME_JOB leaves out",
            T::NAME
        );
        let tool = Arc::clone(&self.tool);
        Ok(PreparedCall::new(accesses, timeout, move |ctx| {
            Box::pin(async move { tool.call(&ctx, args).await })
        })
        .with_same_as(same_as.iter().copied()))
    }
}
