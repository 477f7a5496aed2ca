//! Shards (SPEC 10.6): the index entries of the documents whose paths fall in one shard of
//! a layout, sorted by path, content-addressed at `shards/<content hash>`. Each entry names
//! the history blocks of its retained versions.

use super::catalog;
use super::frame::{
    decode_payload, decode_raw_schema, encode_value_schema, DecodeError, Kind, NameRule, SCHEMA,
};
use super::layout::{history_window, history_window_start, shard_count, shard_of, SHARD_BITS_MAX};
use super::rule::{ShapeRule, ShardRule};
use super::stamp;
use crate::hash::Hash32;
use crate::world::entry::IndexEntry;
use serde::{Deserialize, Serialize};

/// A reference to a history block: the version of its first record and its hash
/// (`history/<hash>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryRef {
    /// Version of the block's first record.
    pub first_version: u64,
    /// The block's hash (`history/<hash>`).
    pub block: Hash32,
}

/// A document as a shard holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardEntry {
    /// The document's index entry.
    pub entry: IndexEntry,
    /// One block per 256-version window from the window of `entry.first_version` to that
    /// of `entry.version`, in version order.
    pub history: Vec<HistoryRef>,
}

/// A shard: the index entries of the documents in one shard of a layout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// The layout the shard belongs to.
    pub shard_bits: u8,
    /// Which shard of the layout: every entry's path has `shard_of(path, shard_bits) == index`.
    pub index: u32,
    /// Strictly ascending by path (byte order).
    pub entries: Vec<ShardEntry>,
    /// The freshen stamp (SPEC 10.9), the last field.
    pub stamp: u64,
}

impl ShardEntry {
    /// The history block holding `version`, if the entry retains it.
    pub fn block_of(&self, version: u64) -> Option<&HistoryRef> {
        if version < self.entry.first_version || version > self.entry.version {
            return None;
        }
        let first_window = history_window(self.entry.first_version);
        self.history.get((history_window(version) - first_window) as usize)
    }

    pub(super) fn shape_problem(&self) -> Option<ShardRule> {
        let e = &self.entry;
        if e.version == 0 || e.first_version == 0 || e.first_version > e.version {
            return Some(ShardRule::EntryVersionsOutOfOrder { path: e.path.clone() });
        }
        let first_window = history_window(e.first_version);
        let expected = history_window(e.version) - first_window + 1;
        if self.history.len() as u64 != expected {
            return Some(ShardRule::HistoryRefsCount {
                path: e.path.clone(),
                expected,
                found: self.history.len(),
            });
        }
        for (position, r) in self.history.iter().enumerate() {
            let window = first_window + position as u64;
            // The first block may start before the first retained version (its older
            // records were pruned after it was written); every later one at its window.
            let placed = if position == 0 {
                r.first_version >= 1
                    && history_window(r.first_version) == window
                    && r.first_version <= e.first_version
            } else {
                r.first_version == history_window_start(window)
            };
            if !placed {
                return Some(ShardRule::HistoryRefMisplaced {
                    path: e.path.clone(),
                    position,
                    first_version: r.first_version,
                });
            }
        }
        None
    }
}

/// Schema of a shard whose entries carry a catalog column (SPEC 5.8).
pub const SCHEMA_CATALOGED: u16 = 2;

/// A shard's payload in either schema: `catalog` is `()`, no bytes, in schema 1.
#[derive(Serialize, Deserialize)]
struct Payload<E, C> {
    shard_bits: u8,
    index: u32,
    entries: E,
    catalog: C,
    stamp: u64,
}

impl Shard {
    /// The schema the shard is written in: 2 when an entry has a time or a record.
    pub fn schema(&self) -> u16 {
        match catalog::column_of(self.entries.iter().map(|e| &e.entry)) {
            None => SCHEMA,
            Some(_) => SCHEMA_CATALOGED,
        }
    }

    /// The object's bytes.
    pub fn encode(&self) -> Vec<u8> {
        invariant_eq!(self.shape_problem(), None);
        match catalog::column_of(self.entries.iter().map(|e| &e.entry)) {
            None => encode_value_schema(Kind::Shard, SCHEMA, &self.payload(())),
            Some(column) => encode_value_schema(Kind::Shard, SCHEMA_CATALOGED, &self.payload(column)),
        }
    }

    fn payload<C>(&self, catalog: C) -> Payload<&[ShardEntry], C> {
        Payload {
            shard_bits: self.shard_bits,
            index: self.index,
            entries: &self.entries,
            catalog,
            stamp: self.stamp,
        }
    }

    /// Decodes and checks the shard's own shape (not its history blocks).
    pub fn decode(bytes: &[u8]) -> Result<Shard, DecodeError> {
        let (schema, payload) = decode_raw_schema(Kind::Shard, &[SCHEMA, SCHEMA_CATALOGED], bytes)?;
        let shard = if schema == SCHEMA {
            let p: Payload<Vec<ShardEntry>, ()> = decode_payload(payload)?;
            Shard { shard_bits: p.shard_bits, index: p.index, entries: p.entries, stamp: p.stamp }
        } else {
            let p: Payload<Vec<ShardEntry>, catalog::ColumnOwned> = decode_payload(payload)?;
            let mut shard =
                Shard { shard_bits: p.shard_bits, index: p.index, entries: p.entries, stamp: p.stamp };
            catalog::fill(shard.entries.iter_mut().map(|e| &mut e.entry), p.catalog)?;
            shard
        };
        match shard.shape_problem() {
            Some(rule) => Err(DecodeError::Shape(ShapeRule::Shard(rule))),
            None => Ok(shard),
        }
    }

    /// Decodes the object read at `shards/<name>` and checks it is that shard.
    pub fn decode_named(bytes: &[u8], name: &Hash32) -> Result<Shard, DecodeError> {
        let shard = Shard::decode(bytes)?;
        let found = stamp::content_hash(Kind::Shard, shard.schema(), bytes, shard.stamp);
        if found != *name {
            return Err(DecodeError::Misnamed(NameRule::NotItsName {
                kind: Kind::Shard,
                name: *name,
                found,
            }));
        }
        Ok(shard)
    }

    /// The same shard with freshen stamp `stamp` (SPEC 10.9).
    pub fn with_stamp(mut self, stamp: u64) -> Shard {
        self.stamp = stamp;
        self
    }

    /// BLAKE3 of the object as its first write stores it (stamp 0): its name.
    pub fn content_hash(&self) -> Hash32 {
        stamp::content_hash(Kind::Shard, self.schema(), &self.encode(), self.stamp)
    }

    fn shape_problem(&self) -> Option<ShardRule> {
        if self.shard_bits > SHARD_BITS_MAX {
            return Some(ShardRule::BitsTooMany { shard_bits: self.shard_bits });
        }
        if self.index >= shard_count(self.shard_bits) {
            return Some(ShardRule::IndexOutsideLayout { index: self.index, shard_bits: self.shard_bits });
        }
        for pair in self.entries.windows(2) {
            if pair[0].entry.path >= pair[1].entry.path {
                return Some(ShardRule::EntriesNotSorted { path: pair[1].entry.path.clone() });
            }
        }
        for e in &self.entries {
            let shard = shard_of(&e.entry.path, self.shard_bits);
            if shard != self.index {
                return Some(ShardRule::PathInOtherShard { path: e.entry.path.clone(), shard });
            }
            if let Some(rule) = e.shape_problem() {
                return Some(rule);
            }
        }
        None
    }
}
