//! The network layer the web tools send through: [`tool_core::net`], re-exported so that
//! `tools_web::NetConfig` and friends keep working for the CLI and tests.

pub use tool_core::net::{Lookup, LookupFuture, NetConfig, StaticLookup, SystemLookup, addr};

pub(crate) use tool_core::net::{Cut, Fetched, Net, Request, check_url, host_name, redact};
