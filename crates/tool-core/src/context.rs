//! What a tool gets besides its arguments.

use std::fmt;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::limits::Limits;
use crate::policy::Policy;
use crate::workspace::Workspace;

/// Progress a tool reports while it runs (e.g. a command's output as it arrives).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A chunk of output text.
    Output {
        /// The call that produced it.
        call_id: String,
        /// The text.
        text: String,
    },
    /// A free-form progress note.
    Progress {
        /// The call that produced it.
        call_id: String,
        /// The note.
        message: String,
    },
}

/// Where events go. Cheap to clone.
#[derive(Clone, Default)]
pub struct EventSink(Option<Arc<dyn Fn(Event) + Send + Sync>>);

impl EventSink {
    /// A sink that drops every event.
    pub fn none() -> Self {
        EventSink(None)
    }

    /// A sink that calls `f` for every event.
    pub fn new(f: impl Fn(Event) + Send + Sync + 'static) -> Self {
        EventSink(Some(Arc::new(f)))
    }

    /// Sends an event.
    pub fn send(&self, event: Event) {
        if let Some(f) = &self.0 {
            f(event);
        }
    }
}

impl fmt::Debug for EventSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "EventSink(..)"
        } else {
            "EventSink(none)"
        })
    }
}

/// The narrow context of one call: never the session or the agent.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// A unique id for this call.
    pub call_id: String,
    /// The confined filesystem.
    pub workspace: Workspace,
    /// The policy in force.
    pub policy: Arc<Policy>,
    /// The limits in force.
    pub limits: Arc<Limits>,
    /// Cancelled when the caller gives up or the deadline passes.
    pub cancel: CancellationToken,
    /// Where progress goes.
    pub events: EventSink,
}

impl ToolContext {
    /// A context with a fresh call id and cancellation token.
    pub fn new(workspace: Workspace, policy: Arc<Policy>, limits: Arc<Limits>) -> Self {
        ToolContext {
            call_id: next_call_id(),
            workspace,
            policy,
            limits,
            cancel: CancellationToken::new(),
            events: EventSink::none(),
        }
    }

    /// The same context for another call: new id, child cancellation token.
    pub fn for_call(&self) -> Self {
        ToolContext {
            call_id: next_call_id(),
            cancel: self.cancel.child_token(),
            ..self.clone()
        }
    }

    /// Sends an output chunk to the event sink.
    pub fn emit_output(&self, text: impl Into<String>) {
        self.events.send(Event::Output {
            call_id: self.call_id.clone(),
            text: text.into(),
        });
    }
}

fn next_call_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "call-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}
