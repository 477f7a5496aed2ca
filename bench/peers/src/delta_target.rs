//! delta-rs (`deltalake-core`): one table, every write a one-row record batch written as
//! a parquet file and committed as its own table version (`flush_and_commit`), each
//! writer on its own `DeltaTable` as separate processes would be. delta-rs pins
//! object_store 0.13, so its store is object_store 0.13's `ThrottledStore(InMemory)`
//! with the same waits: the same wrapper code, one major version older.

use crate::load::{value, Writer};
use crate::store::Shape;
use deltalake_core::arrow::array::{BinaryArray, RecordBatch, StringArray};
use deltalake_core::kernel::{DataType, StructField};
use deltalake_core::writer::{DeltaWriter, RecordBatchWriter};
use deltalake_core::{DeltaTable, DeltaTableBuilder};
use object_store_013::memory::InMemory;
use object_store_013::throttle::{ThrottleConfig, ThrottledStore};
use std::sync::Arc;
use std::time::Duration;

fn throttle(shape: Shape) -> ThrottleConfig {
    ThrottleConfig {
        wait_put_per_call: Duration::from_millis(shape.put_ms()),
        wait_get_per_call: Duration::from_millis(shape.get_ms()),
        wait_list_per_call: Duration::from_millis(shape.list_ms()),
        wait_list_with_delimiter_per_call: Duration::from_millis(shape.list_ms()),
        ..ThrottleConfig::default()
    }
}

/// Creates the table on a fresh store and returns one loaded `DeltaTable` per writer.
pub async fn open(shape: Shape, writers: usize) -> Result<Vec<DeltaTable>, String> {
    let store: Arc<dyn object_store_013::ObjectStore> =
        Arc::new(ThrottledStore::new(InMemory::new(), throttle(shape)));
    let url = url::Url::parse("memory:///delta/bench").map_err(|e| e.to_string())?;
    let table = DeltaTableBuilder::from_url(url.clone())
        .map_err(|e| e.to_string())?
        .with_storage_backend(store.clone(), url.clone())
        .build()
        .map_err(|e| e.to_string())?;
    let table = table
        .create()
        .with_columns([
            StructField::new("key", DataType::STRING, false),
            StructField::new("value", DataType::BINARY, false),
        ])
        .await
        .map_err(|e| e.to_string())?;
    let mut tables = Vec::with_capacity(writers);
    for _ in 0..writers {
        tables.push(table.clone());
    }
    Ok(tables)
}

pub struct DeltaWriterLoop {
    pub table: DeltaTable,
    pub writer: usize,
    pub value_bytes: usize,
}

impl Writer for DeltaWriterLoop {
    async fn write(&mut self, seq: u64) -> Result<(), String> {
        let key = format!("w{:04}/{:010}", self.writer, seq);
        let body = value(self.writer, seq, self.value_bytes);
        let mut batch_writer = RecordBatchWriter::for_table(&self.table).map_err(|e| short(&e))?;
        let batch = RecordBatch::try_new(
            batch_writer.arrow_schema(),
            vec![Arc::new(StringArray::from(vec![key])), Arc::new(BinaryArray::from(vec![body.as_slice()]))],
        )
        .map_err(|e| e.to_string())?;
        batch_writer.write(batch).await.map_err(|e| short(&e))?;
        match batch_writer.flush_and_commit(&mut self.table).await {
            Ok(_) => Ok(()),
            Err(error) => {
                // Catch up before the next write, as a retrying caller would.
                let _ = self.table.update_state().await;
                Err(short(&error))
            }
        }
    }
}

fn short(error: &deltalake_core::DeltaTableError) -> String {
    let text = error.to_string();
    let cut: String = text.chars().take(90).collect();
    cut
}
