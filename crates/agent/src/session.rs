//! Sessions: a conversation (messages, tool calls, results) kept in SQLite so that a run can be
//! resumed. The file is private to the user (directory 0700, file 0600): it holds everything
//! the agent read.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, params};

use crate::message::Message;

/// A session's summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// Its id (`s1`, `s2`…).
    pub id: String,
    /// The agent that ran it.
    pub agent: String,
    /// The model.
    pub model: String,
    /// The first user message, cut to one line.
    pub title: String,
    /// Messages stored.
    pub messages: u64,
    /// Last change, milliseconds since the epoch.
    pub updated_ms: i64,
}

/// Sessions in one SQLite file (WAL, 10 s busy timeout).
#[derive(Debug)]
pub struct SessionStore {
    conn: Mutex<Connection>,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn db(e: rusqlite::Error) -> String {
    format!("the session database failed: {e}")
}

impl SessionStore {
    /// Opens (creating) the store at `path`.
    // The session file is the operator's data, outside any workspace.
    #[allow(clippy::disallowed_methods)]
    pub fn open(path: &Path) -> Result<SessionStore, String> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| {
                    format!(
                        "the session directory {} cannot be created ({e}); set data_dir to a writable directory",
                        dir.display()
                    )
                })?;
        }
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|e| format!("the session file {} cannot be opened ({e})", path.display()))?;
        let conn = Connection::open(path).map_err(db)?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(db)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS sessions (
                 n INTEGER PRIMARY KEY AUTOINCREMENT,
                 agent TEXT NOT NULL,
                 model TEXT NOT NULL,
                 title TEXT NOT NULL,
                 created_ms INTEGER NOT NULL,
                 updated_ms INTEGER NOT NULL
             );
             CREATE TABLE IF NOT EXISTS messages (
                 session INTEGER NOT NULL REFERENCES sessions(n) ON DELETE CASCADE,
                 seq INTEGER NOT NULL,
                 message TEXT NOT NULL,
                 PRIMARY KEY (session, seq)
             );",
        )
        .map_err(db)?;
        Ok(SessionStore {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a session; returns its id.
    pub fn create(&self, agent: &str, model: &str, title: &str) -> Result<String, String> {
        let title = tool_core::truncate::cut_line(title.lines().next().unwrap_or(""), 80);
        let conn = self.conn();
        let now = now_ms();
        conn.execute(
            "INSERT INTO sessions (agent, model, title, created_ms, updated_ms) VALUES (?1, ?2, ?3, ?4, ?4)",
            params![agent, model, title.as_ref(), now],
        )
        .map_err(db)?;
        Ok(format!("s{}", conn.last_insert_rowid()))
    }

    fn number(id: &str) -> Result<i64, String> {
        id.strip_prefix('s')
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| {
                format!("`{id}` is not a session id; ids look like s12 (see `toolshed sessions`)")
            })
    }

    /// Appends `message` to session `id`.
    pub fn append(&self, id: &str, message: &Message) -> Result<(), String> {
        let n = Self::number(id)?;
        let json = serde_json::to_string(message).map_err(|e| e.to_string())?;
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(db)?;
        let seq: i64 = tx
            .query_row(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session = ?1",
                [n],
                |r| r.get(0),
            )
            .map_err(db)?;
        tx.execute(
            "INSERT INTO messages (session, seq, message) VALUES (?1, ?2, ?3)",
            params![n, seq, json],
        )
        .map_err(db)?;
        tx.execute(
            "UPDATE sessions SET updated_ms = ?2 WHERE n = ?1",
            params![n, now_ms()],
        )
        .map_err(db)?;
        tx.commit().map_err(db)
    }

    /// The session's summary and messages, in order.
    pub fn load(&self, id: &str) -> Result<(SessionInfo, Vec<Message>), String> {
        let n = Self::number(id)?;
        let info = self
            .list_where(Some(n))?
            .into_iter()
            .next()
            .ok_or_else(|| format!("there is no session {id}; `toolshed sessions` lists them"))?;
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT message FROM messages WHERE session = ?1 ORDER BY seq")
            .map_err(db)?;
        let rows = stmt.query_map([n], |r| r.get::<_, String>(0)).map_err(db)?;
        let mut messages = Vec::new();
        for row in rows {
            let json = row.map_err(db)?;
            messages.push(serde_json::from_str(&json).map_err(|e| {
                format!("session {id} holds a message this version cannot read ({e})")
            })?);
        }
        Ok((info, messages))
    }

    /// Every session, the most recent first.
    pub fn list(&self) -> Result<Vec<SessionInfo>, String> {
        self.list_where(None)
    }

    fn list_where(&self, only: Option<i64>) -> Result<Vec<SessionInfo>, String> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT s.n, s.agent, s.model, s.title, s.updated_ms,
                        (SELECT COUNT(*) FROM messages m WHERE m.session = s.n)
                 FROM sessions s WHERE ?1 IS NULL OR s.n = ?1
                 ORDER BY s.updated_ms DESC, s.n DESC",
            )
            .map_err(db)?;
        let rows = stmt
            .query_map([only], |r| {
                Ok(SessionInfo {
                    id: format!("s{}", r.get::<_, i64>(0)?),
                    agent: r.get(1)?,
                    model: r.get(2)?,
                    title: r.get(3)?,
                    updated_ms: r.get(4)?,
                    messages: r.get::<_, i64>(5)? as u64,
                })
            })
            .map_err(db)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(db)
    }

    /// Whether session `id` exists.
    pub fn exists(&self, id: &str) -> Result<bool, String> {
        let n = Self::number(id)?;
        self.conn()
            .query_row("SELECT 1 FROM sessions WHERE n = ?1", [n], |_| Ok(()))
            .optional()
            .map(|r| r.is_some())
            .map_err(db)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Part, ToolCall, ToolResult};

    #[test]
    // The test inspects the file's mode directly.
    #[allow(clippy::disallowed_methods)]
    fn round_trip_and_resume() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data").join("sessions.db");
        let store = SessionStore::open(&path).unwrap();
        let id = store
            .create("default", "m1", "fix the build\nplease")
            .unwrap();
        let messages = vec![
            Message::user("fix the build"),
            Message::Assistant {
                content: vec![
                    Part::Text {
                        text: "Looking.".into(),
                    },
                    Part::ToolCall(ToolCall {
                        id: "c1".into(),
                        name: "file_read".into(),
                        arguments: "{\"path\":\"a\"}".into(),
                    }),
                ],
            },
            Message::User {
                content: vec![Part::ToolResult(ToolResult {
                    call_id: "c1".into(),
                    name: "file_read".into(),
                    content: "x".into(),
                    is_error: false,
                })],
            },
        ];
        for m in &messages {
            store.append(&id, m).unwrap();
        }
        drop(store);
        let store = SessionStore::open(&path).unwrap();
        let (info, loaded) = store.load(&id).unwrap();
        assert_eq!(loaded, messages);
        assert_eq!(info.title, "fix the build");
        assert_eq!(info.messages, 3);
        assert!(store.exists(&id).unwrap());
        assert!(store.load("s999").unwrap_err().contains("no session s999"));
        assert!(store.load("nope").unwrap_err().contains("not a session id"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
