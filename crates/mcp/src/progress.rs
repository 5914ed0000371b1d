//! Turns a tool's output events into rate-limited `notifications/progress`.

use std::time::Duration;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use tokio::sync::mpsc;
use tool_core::{Event, EventSink};

/// At most one notification per this interval; text arriving in between is coalesced.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// The most text one notification carries (its tail is kept).
const MAX_MESSAGE_BYTES: usize = 4096;
/// Events buffered between the tool and the forwarder; beyond this they are dropped
/// (progress is best effort and must never slow the tool down or grow without bound).
const QUEUE: usize = 256;

/// The receiving half: owned by the call's handler, drained while the call runs.
#[derive(Debug)]
pub(crate) struct Progress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    rx: mpsc::Receiver<String>,
    pending: String,
    /// Bytes of output seen so far: the monotonically increasing `progress` value.
    seen: u64,
    last_sent: Option<tokio::time::Instant>,
}

impl Progress {
    /// A forwarder for `token` and the sink to hand to the tool.
    pub(crate) fn new(peer: Peer<RoleServer>, token: ProgressToken) -> (Progress, EventSink) {
        let (tx, rx) = mpsc::channel::<String>(QUEUE);
        let sink = EventSink::new(move |event| {
            let text = match event {
                Event::Output { text, .. } => text,
                Event::Progress { message, .. } => message,
                _ => return,
            };
            // Full or closed: drop it (see `QUEUE`).
            let _ = tx.try_send(text);
        });
        (
            Progress {
                peer,
                token,
                rx,
                pending: String::new(),
                seen: 0,
                last_sent: None,
            },
            sink,
        )
    }

    /// Waits for the next event or the end of the current rate-limit window; sends what is
    /// due. Never returns once every sender is gone and nothing is pending (so it can sit in a
    /// `select!` beside the call).
    pub(crate) async fn step(&mut self) {
        let due = self
            .last_sent
            .map(|t| t + MIN_INTERVAL)
            .unwrap_or_else(tokio::time::Instant::now);
        tokio::select! {
            event = self.rx.recv() => match event {
                Some(text) => {
                    self.seen += text.len().max(1) as u64;
                    self.pending.push_str(&text);
                    if self.pending.len() > 2 * MAX_MESSAGE_BYTES {
                        keep_tail(&mut self.pending);
                    }
                    if tokio::time::Instant::now() >= due {
                        self.flush().await;
                    }
                }
                None => {
                    if !self.pending.is_empty() {
                        tokio::time::sleep_until(due).await;
                        self.flush().await;
                    }
                    std::future::pending::<()>().await;
                }
            },
            () = tokio::time::sleep_until(due), if !self.pending.is_empty() => self.flush().await,
        }
    }

    async fn flush(&mut self) {
        let mut message = std::mem::take(&mut self.pending);
        keep_tail(&mut message);
        self.last_sent = Some(tokio::time::Instant::now());
        let mut param = ProgressNotificationParam::new(self.token.clone(), self.seen as f64);
        param.message = Some(message);
        if let Err(e) = self.peer.notify_progress(param).await {
            tracing::debug!(error = %e, "a progress notification could not be sent");
        }
    }
}

/// Cuts `text` to its last [`MAX_MESSAGE_BYTES`] bytes (at a char boundary).
fn keep_tail(text: &mut String) {
    if text.len() <= MAX_MESSAGE_BYTES {
        return;
    }
    let mut cut = text.len() - MAX_MESSAGE_BYTES;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    text.drain(..cut);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_tail_cuts_at_a_char_boundary() {
        let mut s = "é".repeat(MAX_MESSAGE_BYTES);
        keep_tail(&mut s);
        assert!(s.len() <= MAX_MESSAGE_BYTES);
        assert!(s.chars().all(|c| c == 'é'));
        let mut short = "abc".to_string();
        keep_tail(&mut short);
        assert_eq!(short, "abc");
    }
}
