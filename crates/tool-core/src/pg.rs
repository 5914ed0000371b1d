//! PostgreSQL for the store backends of the tool crates (feature `postgres`).
//!
//! SQLite is the embedded default of every store; a deployment that runs several Toolshed
//! processes on several hosts points them at one PostgreSQL database instead. This module is the
//! part the stores share: a connection pool ([`PgPool`], r2d2 over the synchronous `postgres`
//! client, since the store traits are synchronous and run on blocking threads), one schema per
//! deployment (every connection's `search_path`), versioned migrations applied on start under an
//! advisory lock so replicas starting together do not race ([`PgPool::migrate`]), and error
//! sentences that never print a password.
//!
//! Connections are plain TCP or Unix sockets: no TLS library is linked (the workspace bans
//! openssl, and PostgreSQL's TLS over rustls is not wired up yet). Run the database on the same
//! host or a private network, or put a TLS tunnel in front of it; a URL asking for
//! `sslmode=require` is refused at start rather than silently downgraded.
//!
//! # Example
//!
//! ```no_run
//! use tool_core::pg::{PgConfig, PgPool};
//!
//! # fn main() -> Result<(), tool_core::pg::PgError> {
//! let pool = PgPool::connect(&PgConfig::new("postgres://toolshed@127.0.0.1/toolshed"))?;
//! pool.migrate("example", &["CREATE TABLE notes (id bigserial PRIMARY KEY, body text NOT NULL)"])?;
//! let mut conn = pool.get()?;
//! conn.execute("INSERT INTO notes (body) VALUES ($1)", &[&"hello"])?;
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub use postgres;
use postgres::{Client, NoTls};
use r2d2_postgres::PostgresConnectionManager;

/// A connection taken from a [`PgPool`]; it goes back to the pool when dropped.
pub type PgConn = r2d2::PooledConnection<PostgresConnectionManager<NoTls>>;

/// The environment variable naming the PostgreSQL database the store test suites use.
pub const TEST_URL_VAR: &str = "TOOLSHED_TEST_PG";
/// When set (to anything but `0`), a missing [`TEST_URL_VAR`] fails the tests instead of
/// skipping the PostgreSQL half of each suite (CI sets it).
pub const REQUIRE_VAR: &str = "TOOLSHED_REQUIRE_PG";

/// Where a store's PostgreSQL database is and how to use it.
#[derive(Clone, PartialEq, Eq)]
pub struct PgConfig {
    /// A libpq-style URL or key-value string (`postgres://user:pass@host:port/db`).
    pub url: String,
    /// The schema holding Toolshed's tables (created if missing). Lets one database hold several
    /// independent deployments, and each test its own.
    pub schema: String,
    /// The most connections this process opens.
    pub pool_size: u32,
    /// How long to wait for a connection (from the pool or the server).
    pub connect_timeout: Duration,
    /// The longest any one statement may run before the server cancels it.
    pub statement_timeout: Duration,
}

impl fmt::Debug for PgConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgConfig")
            .field("url", &redact_url(&self.url))
            .field("schema", &self.schema)
            .field("pool_size", &self.pool_size)
            .field("connect_timeout", &self.connect_timeout)
            .field("statement_timeout", &self.statement_timeout)
            .finish()
    }
}

impl PgConfig {
    /// The defaults for `url`: schema `toolshed`, 8 connections, 10 s to connect, 60 s per
    /// statement.
    pub fn new(url: impl Into<String>) -> PgConfig {
        PgConfig {
            url: url.into(),
            schema: "toolshed".to_string(),
            pool_size: 8,
            connect_timeout: Duration::from_secs(10),
            statement_timeout: Duration::from_secs(60),
        }
    }

    /// The same configuration with another schema.
    pub fn with_schema(mut self, schema: impl Into<String>) -> PgConfig {
        self.schema = schema.into();
        self
    }
}

/// Why PostgreSQL could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// The configuration is wrong or the server cannot be used; the message says what to change.
    #[error("{0}")]
    Unavailable(String),
    /// A query failed.
    #[error("PostgreSQL error: {0}")]
    Query(#[from] postgres::Error),
}

impl PgError {
    /// The SQLSTATE code of a failed query, if the server sent one.
    pub fn code(&self) -> Option<&postgres::error::SqlState> {
        match self {
            PgError::Query(e) => e.code(),
            PgError::Unavailable(_) => None,
        }
    }
}

impl From<PgError> for crate::ToolError {
    fn from(e: PgError) -> Self {
        match e {
            PgError::Unavailable(m) => crate::ToolError::Failed(m),
            PgError::Query(e) => crate::ToolError::internal(e),
        }
    }
}

/// Sets each new connection's schema and statement timeout.
#[derive(Debug)]
struct Customize {
    setup: String,
}

impl r2d2::CustomizeConnection<Client, postgres::Error> for Customize {
    fn on_acquire(&self, conn: &mut Client) -> Result<(), postgres::Error> {
        conn.batch_execute(&self.setup)
    }
}

/// Forwards pool errors (failed connects while the pool refills) to the log instead of stderr.
#[derive(Debug)]
struct LogErrors;

impl r2d2::HandleError<postgres::Error> for LogErrors {
    fn handle_error(&self, error: postgres::Error) {
        tracing::warn!(%error, "a PostgreSQL connection failed");
    }
}

type Manager = PostgresConnectionManager<NoTls>;

/// A pool of connections to one PostgreSQL database, every connection in one schema. Cheap to
/// clone (the clones share the connections).
///
/// Dropping the last clone closes the idle connections. The synchronous client blocks to close
/// one, which a tokio runtime forbids on its own threads, so there the closing moves to a thread
/// of its own: a pool may be dropped anywhere.
#[derive(Clone)]
pub struct PgPool {
    pool: Arc<Owned>,
    schema: String,
    /// Where the server is, without credentials (for messages).
    target: String,
}

struct Owned(Option<r2d2::Pool<Manager>>);

impl Drop for Owned {
    fn drop(&mut self) {
        let Some(pool) = self.0.take() else { return };
        if tokio::runtime::Handle::try_current().is_ok() {
            let _ = std::thread::Builder::new()
                .name("toolshed-pg-close".into())
                .spawn(move || drop(pool));
        }
    }
}

impl fmt::Debug for PgPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgPool({}, schema {})", self.target, self.schema)
    }
}

impl PgPool {
    /// Checks the configuration, connects once (so a wrong URL or a stopped server is reported
    /// now, not at the first tool call) and creates the schema if it is missing. Blocking.
    pub fn connect(config: &PgConfig) -> Result<PgPool, PgError> {
        off_runtime(|| PgPool::connect_here(config))
    }

    fn connect_here(config: &PgConfig) -> Result<PgPool, PgError> {
        check_identifier(&config.schema)?;
        let mut pg: postgres::Config = config.url.parse().map_err(|e| {
            PgError::Unavailable(format!(
                "The PostgreSQL URL `{}` cannot be read ({e}); write it as postgres://USER:PASSWORD@HOST:PORT/DATABASE.",
                redact_url(&config.url)
            ))
        })?;
        if pg.get_ssl_mode() == postgres::config::SslMode::Require {
            return Err(PgError::Unavailable(format!(
                "The PostgreSQL URL `{}` asks for TLS (sslmode=require), which this build does not link; connect over a private network, a Unix socket or a TLS tunnel and drop sslmode.",
                redact_url(&config.url)
            )));
        }
        if pg.get_connect_timeout().is_none() {
            pg.connect_timeout(config.connect_timeout);
        }
        if pg.get_application_name().is_none() {
            pg.application_name("toolshed");
        }
        let target = describe(&pg);
        let setup = format!(
            "SET search_path TO {schema}; SET statement_timeout = {ms}; SET lock_timeout = {ms};",
            schema = quote_identifier(&config.schema),
            ms = config.statement_timeout.as_millis().max(1),
        );
        // The schema must exist before `search_path` can name it usefully; create it over a
        // plain connection first.
        let mut first = pg
            .connect(NoTls)
            .map_err(|e| unreachable_error(&target, &e))?;
        create_schema(&mut first, &config.schema)?;
        drop(first);
        let pool = r2d2::Pool::builder()
            .max_size(config.pool_size.max(1))
            .min_idle(Some(0))
            .connection_timeout(config.connect_timeout)
            .error_handler(Box::new(LogErrors))
            .connection_customizer(Box::new(Customize { setup }))
            .build(PostgresConnectionManager::new(pg, NoTls))
            .map_err(|e| PgError::Unavailable(format!(
                "The PostgreSQL pool for {target} cannot be built ({e}); check the [storage] settings in toolshed.toml."
            )))?;
        let out = PgPool {
            pool: Arc::new(Owned(Some(pool))),
            schema: config.schema.clone(),
            target,
        };
        drop(out.get()?);
        Ok(out)
    }

    /// A connection (waiting up to the connect timeout for a free one). Blocking.
    pub fn get(&self) -> Result<PgConn, PgError> {
        let pool = self
            .pool
            .0
            .as_ref()
            .ok_or_else(|| PgError::Unavailable("The PostgreSQL pool is closed.".into()))?;
        pool.get().map_err(|e| {
            PgError::Unavailable(format!(
                "No PostgreSQL connection to {} became free in time ({e}); check that the server is running and reachable, or raise [storage] pool_size.",
                self.target
            ))
        })
    }

    /// The schema every connection uses.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Where the server is (host, port, database, user; never the password).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Brings the tables of `store` up to date: `migrations[i]` takes the store from version `i`
    /// to `i + 1`; the version is kept in `toolshed_migrations`. Everything runs in one
    /// transaction under an advisory lock on (schema, store), so replicas starting at once
    /// migrate once. A store of a newer version than `migrations.len()` is refused rather than
    /// misread. Blocking.
    pub fn migrate(&self, store: &str, migrations: &[&str]) -> Result<(), PgError> {
        off_runtime(|| self.migrate_here(store, migrations))
    }

    fn migrate_here(&self, store: &str, migrations: &[&str]) -> Result<(), PgError> {
        let mut conn = self.get()?;
        let mut tx = conn.transaction()?;
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtext($1))",
            &[&format!("toolshed:{}:migrations", self.schema)],
        )?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS toolshed_migrations (
                 store text PRIMARY KEY,
                 version integer NOT NULL,
                 updated_at timestamptz NOT NULL DEFAULT now()
             )",
        )?;
        let current: i32 = tx
            .query_opt(
                "SELECT version FROM toolshed_migrations WHERE store = $1",
                &[&store],
            )?
            .map(|r| r.get(0))
            .unwrap_or(0);
        let known = migrations.len() as i32;
        if current > known {
            return Err(PgError::Unavailable(format!(
                "The {store} tables in schema {} were written by a newer Toolshed (version {current}, this one knows {known}); upgrade toolshed or use another schema.",
                self.schema
            )));
        }
        for sql in &migrations[current as usize..] {
            tx.batch_execute(sql)?;
        }
        if current < known {
            tx.execute(
                "INSERT INTO toolshed_migrations (store, version) VALUES ($1, $2)
                 ON CONFLICT (store) DO UPDATE SET version = excluded.version, updated_at = now()",
                &[&store, &known],
            )?;
            tracing::info!(store, from = current, to = known, schema = %self.schema, "migrated PostgreSQL tables");
        }
        tx.commit()?;
        Ok(())
    }

    /// Drops the schema and everything in it (for test databases). Blocking.
    pub fn drop_schema(&self) -> Result<(), PgError> {
        off_runtime(|| {
            let mut conn = self.get()?;
            conn.batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {} CASCADE",
                quote_identifier(&self.schema)
            ))?;
            Ok(())
        })
    }
}

/// Runs `f`, which blocks on the database, where blocking is allowed: on a thread of its own
/// when the caller is inside a tokio runtime (the synchronous client would otherwise refuse to
/// start its own runtime there), directly otherwise. For set-up calls (connect, migrate) made
/// from async code; the stores' per-call queries already run on blocking threads.
pub fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|s| match s.spawn(f).join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

fn create_schema(conn: &mut Client, schema: &str) -> Result<(), PgError> {
    // Two replicas creating the schema at once would race in the catalog: serialise on a lock.
    let mut tx = conn.transaction()?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext($1))",
        &[&format!("toolshed:{schema}:schema")],
    )?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {}",
        quote_identifier(schema)
    ))
    .map_err(|e| {
        PgError::Unavailable(format!(
            "The schema {schema} cannot be created ({e}); create it as an administrator and grant the Toolshed user USAGE and CREATE on it."
        ))
    })?;
    tx.commit()?;
    Ok(())
}

fn unreachable_error(target: &str, e: &postgres::Error) -> PgError {
    let detail = e
        .as_db_error()
        .map(|d| d.message().to_string())
        .unwrap_or_else(|| {
            let mut s = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(inner) = source {
                s = format!("{s}: {inner}");
                source = inner.source();
            }
            s
        });
    PgError::Unavailable(format!(
        "PostgreSQL at {target} cannot be used ({detail}); check [storage] url in toolshed.toml and that the server is running."
    ))
}

fn describe(pg: &postgres::Config) -> String {
    use postgres::config::Host;
    let host = match pg.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_string(),
    };
    let port = pg.get_ports().first().copied().unwrap_or(5432);
    format!(
        "{host}:{port}/{} as {}",
        pg.get_dbname().unwrap_or("(default database)"),
        pg.get_user().unwrap_or("(default user)")
    )
}

/// `url` with any password replaced by `***` (URL form and `password=` key-value form).
pub fn redact_url(url: &str) -> String {
    if let Some(rest) = url
        .strip_prefix("postgres://")
        .map(|r| ("postgres://", r))
        .or_else(|| {
            url.strip_prefix("postgresql://")
                .map(|r| ("postgresql://", r))
        })
    {
        let (scheme, rest) = rest;
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(authority_end);
        if let Some(at) = authority.rfind('@') {
            let (userinfo, host) = authority.split_at(at);
            if let Some(colon) = userinfo.find(':') {
                return format!(
                    "{scheme}{}:***{host}{}",
                    &userinfo[..colon],
                    redact_query(tail)
                );
            }
        }
        return format!("{scheme}{authority}{}", redact_query(tail));
    }
    url.split_whitespace()
        .map(|kv| {
            if kv.to_ascii_lowercase().starts_with("password=") {
                "password=***".to_string()
            } else {
                kv.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn redact_query(tail: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else {
        return tail.to_string();
    };
    let query = query
        .split('&')
        .map(|kv| {
            if kv.to_ascii_lowercase().starts_with("password=") {
                "password=***"
            } else {
                kv
            }
        })
        .collect::<Vec<_>>()
        .join("&");
    format!("{path}?{query}")
}

fn check_identifier(schema: &str) -> Result<(), PgError> {
    let ok = !schema.is_empty()
        && schema.len() <= 63
        && schema
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !schema.starts_with(|c: char| c.is_ascii_digit())
        && !schema.starts_with("pg_");
    if ok {
        Ok(())
    } else {
        Err(PgError::Unavailable(format!(
            "`{schema}` is not a usable schema name; use 1 to 63 lower-case letters, digits and underscores, not starting with a digit or pg_."
        )))
    }
}

/// `name` as a quoted SQL identifier (already checked to be plain).
fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A PostgreSQL database for a test: a fresh schema named after `label` in the database of
/// [`TEST_URL_VAR`], or `None` when that variable is unset (and [`REQUIRE_VAR`] is not), so a
/// machine without PostgreSQL runs the SQLite half of a suite only.
///
/// # Panics
///
/// When [`REQUIRE_VAR`] is set and [`TEST_URL_VAR`] is not, or the database cannot be used:
/// CI must not pass by skipping.
pub fn test_pool(label: &str) -> Option<PgPool> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let url = match std::env::var(TEST_URL_VAR) {
        Ok(u) if !u.trim().is_empty() => u,
        _ => {
            let required = std::env::var(REQUIRE_VAR).is_ok_and(|v| v != "0" && !v.is_empty());
            assert!(
                !required,
                "{REQUIRE_VAR} is set but {TEST_URL_VAR} is not: set it to a PostgreSQL URL (see .ci/run)"
            );
            return None;
        }
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let clean: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(30)
        .collect();
    let schema = format!(
        "test_{clean}_{}_{}_{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let schema: String = schema.chars().take(63).collect();
    let mut config = PgConfig::new(url).with_schema(schema);
    config.pool_size = 4;
    match PgPool::connect(&config) {
        Ok(pool) => Some(pool),
        Err(e) => panic!("the test database of {TEST_URL_VAR} cannot be used: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_appear_in_redacted_urls() {
        let cases = [
            (
                "postgres://alice:s3cret@db.example:5433/tools",
                "postgres://alice:***@db.example:5433/tools",
            ),
            (
                "postgresql://alice:s3cret@db/tools?sslmode=disable&password=other",
                "postgresql://alice:***@db/tools?sslmode=disable&password=***",
            ),
            ("postgres://alice@db/tools", "postgres://alice@db/tools"),
            (
                "host=db user=alice password=s3cret dbname=tools",
                "host=db user=alice password=*** dbname=tools",
            ),
        ];
        for (url, want) in cases {
            assert_eq!(redact_url(url), want, "{url}");
        }
    }

    #[test]
    fn schema_names_are_plain_identifiers() {
        for bad in [
            "",
            "Toolshed",
            "a-b",
            "a\"; DROP",
            "1abc",
            "pg_catalog",
            &"x".repeat(64),
        ] {
            assert!(check_identifier(bad).is_err(), "{bad:?}");
        }
        for good in ["toolshed", "team_a", "t1", &"x".repeat(63)] {
            assert!(check_identifier(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn a_tls_url_is_refused_before_connecting() {
        let err = PgPool::connect(&PgConfig::new(
            "postgres://u:p@203.0.113.1/db?sslmode=require",
        ))
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("sslmode=require"), "{msg}");
        assert!(!msg.contains(":p@"), "{msg}");
    }

    #[test]
    fn an_unreachable_server_is_a_sentence_without_the_password() {
        let mut config = PgConfig::new("postgres://alice:s3cret@127.0.0.1:1/tools");
        config.connect_timeout = Duration::from_secs(2);
        let msg = PgPool::connect(&config).unwrap_err().to_string();
        assert!(msg.contains("127.0.0.1:1/tools as alice"), "{msg}");
        assert!(!msg.contains("s3cret"), "{msg}");
    }

    #[test]
    fn migrations_run_once_across_racing_replicas_and_newer_layouts_are_refused() {
        let Some(pool) = test_pool("migrate") else {
            return;
        };
        let v1 = "CREATE TABLE notes (id bigserial PRIMARY KEY, body text NOT NULL)";
        let v2 = "ALTER TABLE notes ADD COLUMN tag text";
        // Three "replicas" start at once; the lock makes one of them create the table.
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| pool.migrate("notes", &[v1]).unwrap());
            }
        });
        pool.migrate("notes", &[v1, v2]).unwrap();
        let mut conn = pool.get().unwrap();
        conn.execute("INSERT INTO notes (body, tag) VALUES ('a', 'b')", &[])
            .unwrap();
        let version: i32 = conn
            .query_one(
                "SELECT version FROM toolshed_migrations WHERE store = 'notes'",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(version, 2);
        drop(conn);
        let err = pool.migrate("notes", &[v1]).unwrap_err().to_string();
        assert!(
            err.contains("newer Toolshed (version 2, this one knows 1)"),
            "{err}"
        );
        pool.drop_schema().unwrap();
    }
}
