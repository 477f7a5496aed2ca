//! The catalog column (SPEC 5.8): each index entry's modified time and catalog record,
//! written after the entries of a slot (schemas 3 and 4), a shard or a delta (schema 2).
//!
//! The entries keep the form they had before records existed, and an object whose entries
//! have neither a time nor a record is written in its earlier schema, without a column:
//! so every object written before keeps its bytes and its name, and each object still has
//! one byte form.

use super::frame::DecodeError;
use super::rule::ShapeRule;
use crate::world::entry::{IndexEntry, CATALOG_RECORD_BYTES_MAX};
use serde::{Deserialize, Serialize};

/// One entry's item in the column, in the order of the entries.
#[derive(Serialize, Deserialize)]
pub(super) struct CatalogItem<S> {
    pub(super) modified_us: u64,
    pub(super) record: Option<S>,
}

/// The column as it is written.
pub(super) type Column<'a> = Vec<CatalogItem<&'a str>>;

/// The column as it is read.
pub(super) type ColumnOwned = Vec<CatalogItem<Box<str>>>;

/// The column of `entries`, or None when none has a modified time or a record: then the
/// object is written without one.
pub(super) fn column_of<'a>(entries: impl Iterator<Item = &'a IndexEntry> + Clone) -> Option<Column<'a>> {
    if entries.clone().all(|e| e.modified_us == 0 && e.catalog.is_none()) {
        return None;
    }
    Some(entries.map(|e| CatalogItem { modified_us: e.modified_us, record: e.catalog.as_deref() }).collect())
}

/// Puts a column read back into the entries it follows. A column must have one item per
/// entry, records of 1 to [`CATALOG_RECORD_BYTES_MAX`] bytes, and at least one item with
/// a time or a record (else the object's one form is the schema without it).
pub(super) fn fill<'a>(
    entries: impl Iterator<Item = &'a mut IndexEntry>,
    column: ColumnOwned,
) -> Result<(), DecodeError> {
    if column.iter().all(|c| c.modified_us == 0 && c.record.is_none()) {
        return Err(DecodeError::NotCanonical);
    }
    let column_len = column.len();
    let mut items = column.into_iter();
    let mut count = 0;
    for entry in entries {
        count += 1;
        let Some(item) = items.next() else { continue };
        if let Some(len) = item.record.as_ref().map(|r| r.len()) {
            if len == 0 || len > CATALOG_RECORD_BYTES_MAX {
                return Err(DecodeError::Shape(ShapeRule::CatalogRecordOutOfBounds { len }));
            }
        }
        entry.modified_us = item.modified_us;
        entry.catalog = item.record;
    }
    if count != column_len {
        return Err(DecodeError::Shape(ShapeRule::CatalogColumnCount { entries: count, column: column_len }));
    }
    Ok(())
}

/// At most the bytes `entry` adds to a column: a varint time (10), the record's tag (1),
/// its length's varint (2 for at most 1,024) and the record.
pub fn column_item_bytes_max(entry: &IndexEntry) -> usize {
    13 + entry.catalog.as_ref().map_or(0, |r| r.len())
}
