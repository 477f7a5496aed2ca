//! SlateDB: one `Db`, every writer a `put` to a new key, acknowledged once
//! `await_durable` returns (the write's WAL object is in the store).

use crate::load::{value, Writer};
use object_store::ObjectStore;
use slatedb::{Db, Settings};
use std::sync::Arc;
use std::time::Duration;

/// SlateDB's own default WAL flush interval (`Settings::default().flush_interval`).
pub fn default_flush() -> Duration {
    Settings::default().flush_interval.expect("SlateDB's default settings flush on an interval")
}

pub async fn open(store: Arc<dyn ObjectStore>, flush: Duration) -> Result<Arc<Db>, slatedb::Error> {
    let settings = Settings { flush_interval: Some(flush), ..Settings::default() };
    let db = Db::builder("slatedb/bench", store).with_settings(settings).build().await?;
    Ok(Arc::new(db))
}

pub struct SlateWriter {
    pub db: Arc<Db>,
    pub writer: usize,
    pub value_bytes: usize,
}

impl Writer for SlateWriter {
    async fn write(&mut self, seq: u64) -> Result<(), String> {
        let key = format!("w{:04}/{:010}", self.writer, seq);
        let body = value(self.writer, seq, self.value_bytes);
        let handle = self.db.put(key.as_bytes(), &body).await.map_err(|e| format!("put {:?}", e.kind()))?;
        handle.await_durable().await.map_err(|e| format!("durable {:?}", e.kind()))
    }
}
