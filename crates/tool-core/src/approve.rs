//! Who answers when the policy says [`crate::Decision::Ask`].

use async_trait::async_trait;

use crate::error::ApprovalRequest;

/// A human's (or a test's) answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Go ahead.
    Approved,
    /// The human said no (with an optional reason for the model).
    Refused(Option<String>),
    /// No human can be asked here (no terminal, a non-interactive server).
    Unavailable,
}

/// Answers approval requests.
#[async_trait]
pub trait Approver: Send + Sync + std::fmt::Debug {
    /// Decides one request. The time spent here is not charged to the tool's timeout.
    async fn approve(&self, request: &ApprovalRequest) -> Approval;
}

/// Approves everything (the CLI's `--yes`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproveAll;

#[async_trait]
impl Approver for ApproveAll {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        Approval::Approved
    }
}

/// Never asks anyone: every `Ask` becomes a `needs_approval` error.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoApprover;

#[async_trait]
impl Approver for NoApprover {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        Approval::Unavailable
    }
}
