//! `[storage]`: one PostgreSQL pool per process for every store, when a URL is configured.

use anyhow::Result;

use crate::config::Config;

/// The PostgreSQL pool `config` asks for (connected and cached for the process), or `None` for
/// the SQLite default.
#[cfg(feature = "postgres")]
pub fn pool(config: &Config) -> Result<Option<tool_core::pg::PgPool>> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    use std::time::Duration;

    use tool_core::pg::{PgConfig, PgPool};

    static POOLS: OnceLock<Mutex<HashMap<String, PgPool>>> = OnceLock::new();
    let Some(url) = config.storage.postgres_url()? else {
        return Ok(None);
    };
    let mut pg = PgConfig::new(url);
    if let Some(schema) = &config.storage.schema {
        pg.schema = schema.clone();
    }
    if let Some(n) = config.storage.pool_size {
        anyhow::ensure!(
            n >= 1,
            "storage.pool_size is 0; give each process at least 1 connection (8 is the default)"
        );
        pg.pool_size = n;
    }
    if let Some(s) = config.storage.statement_timeout_secs {
        anyhow::ensure!(
            s >= 1,
            "storage.statement_timeout_secs is 0, which would cancel every query; use 1 or more (60 is the default)"
        );
        pg.statement_timeout = Duration::from_secs(s);
    }
    let key = format!("{}\n{}\n{}", pg.url, pg.schema, pg.pool_size);
    let mut pools = POOLS
        .get_or_init(Mutex::default)
        .lock()
        .map_err(|_| anyhow::anyhow!("the PostgreSQL pool cache is poisoned"))?;
    if let Some(pool) = pools.get(&key) {
        return Ok(Some(pool.clone()));
    }
    let pool = PgPool::connect(&pg).map_err(|e| anyhow::anyhow!("[storage]: {e}"))?;
    pools.insert(key, pool.clone());
    Ok(Some(pool))
}

/// Without the `postgres` feature a configured URL is an error, never silently SQLite.
#[cfg(not(feature = "postgres"))]
pub fn require_sqlite(config: &Config) -> Result<()> {
    if config.storage.postgres_url()?.is_some() {
        anyhow::bail!(
            "[storage] names a PostgreSQL database, but this toolshed was built without PostgreSQL support; rebuild it with `--features postgres` (on by default) or remove [storage] url"
        );
    }
    Ok(())
}
