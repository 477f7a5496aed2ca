//! Deltas (SPEC 10.16): the index entries of the documents a checkpoint step changed,
//! sorted by path, content-addressed at `deltas/<content hash>`. A root names its shards
//! and, after them, an ordered list of deltas; a later delta's entry for a path overrides
//! an earlier one's and the shard's. A step then uploads bytes in proportion to what it
//! changed, not to the shards those changes fall in.

use super::catalog;
use super::frame::{
    decode_payload, decode_raw_schema, encode_value_schema, DecodeError, Kind, NameRule, SCHEMA,
};
use super::rule::{DeltaRule, ShapeRule};
use super::shard::ShardEntry;
use super::stamp;
use crate::hash::Hash32;
use serde::{Deserialize, Serialize};

/// Entries in one delta. About 150 bytes each with one history reference, so a full delta
/// is about 300 KB, near the record's 200 KB shard: one GET's worth.
pub const DELTA_ENTRIES_MAX: usize = 2_048;

/// Deltas one root names. The merge rule (SPEC 10.16) keeps far fewer; this bounds what a
/// reader must accept.
pub const DELTAS_PER_ROOT_MAX: usize = 256;

/// A delta: changed documents' entries, by path, any shard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    /// Strictly ascending by path (byte order), 1 to `DELTA_ENTRIES_MAX`.
    pub entries: Vec<ShardEntry>,
    /// The freshen stamp (SPEC 10.9), the last field.
    pub stamp: u64,
}

/// A root's reference to a delta: how many entries it holds and its content hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeltaRef {
    /// Entries the delta holds: what the merge rule counts without reading it.
    pub entries: u32,
    /// The delta's content hash (`deltas/<hash>`).
    pub block: Hash32,
}

/// Schema of a delta whose entries carry a catalog column (SPEC 5.8).
pub const SCHEMA_CATALOGED: u16 = 2;

/// A delta's payload in either schema: `catalog` is `()`, no bytes, in schema 1.
#[derive(Serialize, Deserialize)]
struct Payload<E, C> {
    entries: E,
    catalog: C,
    stamp: u64,
}

impl Delta {
    /// The schema the delta is written in: 2 when an entry has a time or a record.
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
            None => encode_value_schema(Kind::Delta, SCHEMA, &self.payload(())),
            Some(column) => encode_value_schema(Kind::Delta, SCHEMA_CATALOGED, &self.payload(column)),
        }
    }

    fn payload<C>(&self, catalog: C) -> Payload<&[ShardEntry], C> {
        Payload { entries: &self.entries, catalog, stamp: self.stamp }
    }

    /// Decodes and checks the delta's own shape (not its history blocks).
    pub fn decode(bytes: &[u8]) -> Result<Delta, DecodeError> {
        let (schema, payload) = decode_raw_schema(Kind::Delta, &[SCHEMA, SCHEMA_CATALOGED], bytes)?;
        let delta = if schema == SCHEMA {
            let p: Payload<Vec<ShardEntry>, ()> = decode_payload(payload)?;
            Delta { entries: p.entries, stamp: p.stamp }
        } else {
            let p: Payload<Vec<ShardEntry>, catalog::ColumnOwned> = decode_payload(payload)?;
            let mut delta = Delta { entries: p.entries, stamp: p.stamp };
            catalog::fill(delta.entries.iter_mut().map(|e| &mut e.entry), p.catalog)?;
            delta
        };
        match delta.shape_problem() {
            Some(rule) => Err(DecodeError::Shape(ShapeRule::Delta(rule))),
            None => Ok(delta),
        }
    }

    /// Decodes the object read at `deltas/<name>` and checks it is that delta.
    pub fn decode_named(bytes: &[u8], name: &Hash32) -> Result<Delta, DecodeError> {
        let delta = Delta::decode(bytes)?;
        let found = stamp::content_hash(Kind::Delta, delta.schema(), bytes, delta.stamp);
        if found != *name {
            return Err(DecodeError::Misnamed(NameRule::NotItsName {
                kind: Kind::Delta,
                name: *name,
                found,
            }));
        }
        Ok(delta)
    }

    /// The same delta with freshen stamp `stamp` (SPEC 10.9).
    pub fn with_stamp(mut self, stamp: u64) -> Delta {
        self.stamp = stamp;
        self
    }

    /// BLAKE3 of the object as its first write stores it (stamp 0): its name.
    pub fn content_hash(&self) -> Hash32 {
        stamp::content_hash(Kind::Delta, self.schema(), &self.encode(), self.stamp)
    }

    fn shape_problem(&self) -> Option<DeltaRule> {
        if self.entries.is_empty() {
            return Some(DeltaRule::Empty);
        }
        if self.entries.len() > DELTA_ENTRIES_MAX {
            return Some(DeltaRule::TooManyEntries { count: self.entries.len() });
        }
        for pair in self.entries.windows(2) {
            if pair[0].entry.path >= pair[1].entry.path {
                return Some(DeltaRule::EntriesNotSorted { path: pair[1].entry.path.clone() });
            }
        }
        self.entries.iter().find_map(|e| e.shape_problem().map(DeltaRule::Entry))
    }
}
