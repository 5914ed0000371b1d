//! The agent loop's integration tests: a scripted model (the `ModelProvider` trait, answers in
//! order, requests recorded) and small real tools behind the real stack and policy. The
//! providers' wire formats are tested in `providers.rs` and end to end in the workspace's
//! `tests/`.

mod suite;
