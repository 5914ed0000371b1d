//! Name resolution that checks every answer and pins the connection to it.
//!
//! reqwest asks [`CheckedResolver`] for the addresses of a host right before it connects, and
//! connects only to what it returns. The resolver refuses the whole answer when any address in
//! it is not public, so there is exactly one lookup per connection and it is the one that was
//! checked: a DNS server that answers "public" to a first query and "private" to a second
//! (rebinding) gets no second query to answer.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;

use super::addr::non_public;

/// A future returned by [`Lookup::lookup`].
pub type LookupFuture = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send>>;

/// Turns a host name into addresses. [`SystemLookup`] asks the operating system; tests and
/// operators who pin names (like curl's `--resolve`) use [`StaticLookup`] or their own.
pub trait Lookup: Send + Sync + fmt::Debug {
    /// All addresses `host` resolves to.
    fn lookup(&self, host: &str) -> LookupFuture;
}

/// The operating system's resolver (`getaddrinfo`, on a blocking thread).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup(&self, host: &str) -> LookupFuture {
        let host = host.to_owned();
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// A fixed table of names; names not in it do not resolve.
#[derive(Debug, Clone, Default)]
pub struct StaticLookup {
    names: HashMap<String, Vec<IpAddr>>,
}

impl StaticLookup {
    /// An empty table.
    pub fn new() -> Self {
        StaticLookup::default()
    }

    /// Adds `name` with its addresses (every one of them will be checked).
    pub fn with(mut self, name: &str, addrs: &[IpAddr]) -> Self {
        self.names.insert(
            name.trim_end_matches('.').to_ascii_lowercase(),
            addrs.to_vec(),
        );
        self
    }
}

impl Lookup for StaticLookup {
    fn lookup(&self, host: &str) -> LookupFuture {
        let found = self
            .names
            .get(&host.trim_end_matches('.').to_ascii_lowercase())
            .cloned();
        let host = host.to_owned();
        Box::pin(async move {
            found.ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{host} is not in the table"),
                )
            })
        })
    }
}

/// A refusal by the address policy, carried through reqwest's error chain.
#[derive(Debug, Clone)]
pub(crate) struct Blocked {
    pub(crate) host: String,
    pub(crate) addr: IpAddr,
    pub(crate) why: &'static str,
}

impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host == self.addr.to_string() {
            write!(
                f,
                "{} is in {}; web tools only reach public addresses",
                self.host, self.why
            )
        } else {
            write!(
                f,
                "{} resolves to {}, which is in {}; web tools only reach public addresses",
                self.host, self.addr, self.why
            )
        }
    }
}

impl std::error::Error for Blocked {}

/// Addresses the checks let through although they are not public: only loopback addresses,
/// named one by one, and only when a test configured them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Exempt(pub(crate) Vec<IpAddr>);

impl Exempt {
    /// The refusal for `addr` reached as `host`, if any.
    pub(crate) fn check(&self, host: &str, addr: IpAddr) -> Result<(), Blocked> {
        match non_public(addr) {
            None => Ok(()),
            Some(_) if self.0.contains(&addr) => Ok(()),
            Some(why) => Err(Blocked {
                host: host.to_owned(),
                addr,
                why,
            }),
        }
    }
}

/// The resolver reqwest uses: look up, check every address, hand back exactly those.
#[derive(Debug)]
pub(crate) struct CheckedResolver {
    pub(crate) lookup: Arc<dyn Lookup>,
    pub(crate) exempt: Exempt,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        let lookup = Arc::clone(&self.lookup);
        let exempt = self.exempt.clone();
        Box::pin(async move {
            let addrs = lookup.lookup(&host).await?;
            if addrs.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{host} resolves to no address"),
                )
                .into());
            }
            for addr in &addrs {
                exempt.check(&host, *addr)?;
            }
            tracing::debug!(%host, ?addrs, "resolved and checked");
            let addrs: Vec<SocketAddr> = addrs.into_iter().map(|ip| (ip, 0).into()).collect();
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}
