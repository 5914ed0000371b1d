//! MCP HTTP sessions in PostgreSQL (feature `postgres`), so that `toolshed mcp --http` can run
//! as several replicas behind a load balancer without sticky sessions.
//!
//! rmcp keeps a legacy (pre-2026-07-28) session in the memory of the replica that answered its
//! `initialize`. With a [`PgSessionStore`] in [`crate::http::HttpOptions`], that replica also
//! writes the client's `initialize` parameters to the `mcp_sessions` table, and any other
//! replica that receives a request for a session it does not know loads them and restores the
//! session transparently. Clients of protocol 2026-07-28 and later have no sessions: every
//! replica serves every request.

use std::fmt;

use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};
use tool_core::pg::PgPool;

const V1: &str = "
CREATE TABLE mcp_sessions (
    id text PRIMARY KEY,
    state jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mcp_sessions_by_age ON mcp_sessions (updated_at);
";

/// How long a session nobody closed is kept (its client vanished without a DELETE).
const MAX_IDLE: &str = "7 days";

/// Sessions shared by every replica using one PostgreSQL schema.
#[derive(Clone)]
pub struct PgSessionStore {
    pool: PgPool,
}

impl fmt::Debug for PgSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgSessionStore({:?})", self.pool)
    }
}

impl PgSessionStore {
    /// Uses `pool`'s schema, creating the table if needed (store name `mcp_sessions`), and drops
    /// sessions idle for more than a week. Blocking.
    pub fn open(pool: PgPool) -> Result<PgSessionStore, tool_core::pg::PgError> {
        pool.migrate("mcp_sessions", &[V1])?;
        tool_core::pg::off_runtime(|| -> Result<(), tool_core::pg::PgError> {
            pool.get()?.execute(
                &format!(
                    "DELETE FROM mcp_sessions WHERE updated_at < now() - interval '{MAX_IDLE}'"
                ),
                &[],
            )?;
            Ok(())
        })?;
        Ok(PgSessionStore { pool })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&PgPool) -> Result<T, tool_core::pg::PgError> + Send + 'static,
    ) -> Result<T, SessionStoreError> {
        let pool = self.pool.clone();
        match tokio::task::spawn_blocking(move || f(&pool)).await {
            Ok(r) => r.map_err(|e| Box::new(e) as SessionStoreError),
            Err(e) => Err(Box::new(e)),
        }
    }
}

#[async_trait::async_trait]
impl SessionStore for PgSessionStore {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let id = session_id.to_string();
        let json = self
            .blocking(move |pool| {
                Ok(pool
                    .get()?
                    .query_opt(
                        "UPDATE mcp_sessions SET updated_at = now() WHERE id = $1
                         RETURNING state::text",
                        &[&id],
                    )?
                    .map(|r| r.get::<_, String>(0)))
            })
            .await?;
        match json {
            None => Ok(None),
            Some(text) => Ok(Some(serde_json::from_str(&text)?)),
        }
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let id = session_id.to_string();
        let text = serde_json::to_string(state)?;
        self.blocking(move |pool| {
            pool.get()?.execute(
                "INSERT INTO mcp_sessions (id, state) VALUES ($1, $2::text::jsonb)
                 ON CONFLICT (id) DO UPDATE SET state = excluded.state, updated_at = now()",
                &[&id, &text],
            )?;
            Ok(())
        })
        .await
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        let id = session_id.to_string();
        self.blocking(move |pool| {
            pool.get()?
                .execute("DELETE FROM mcp_sessions WHERE id = $1", &[&id])?;
            Ok(())
        })
        .await
    }
}
