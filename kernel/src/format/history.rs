//! History blocks (SPEC 10.7): up to 256 consecutive version records of one document, all
//! in one 256-version window, oldest first, at `history/<BLAKE3 of the object>`. A content
//! object: created if absent, never rewritten, never collected, never freshened, so it has
//! no stamp and its name is the hash of its bytes.

use super::frame::{decode_value, encode_value, DecodeError, Kind, NameRule};
use super::layout::{history_window, RECORDS_PER_HISTORY_BLOCK_MAX};
use super::rule::{HistoryRule, ShapeRule};
use crate::hash::Hash32;
use crate::world::entry::VersionRecord;
use crate::world::path::Path;
use serde::{Deserialize, Serialize};

/// A history block: consecutive version records of one document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryBlock {
    /// The document the records belong to.
    pub path: Path,
    /// Consecutive versions, oldest first, within one window.
    pub records: Vec<VersionRecord>,
}

impl HistoryBlock {
    /// The version of the first record (None when empty).
    pub fn first_version(&self) -> Option<u64> {
        self.records.first().map(|r| r.version)
    }

    /// The record of `version`, if the block holds it.
    pub fn record(&self, version: u64) -> Option<&VersionRecord> {
        let first = self.first_version()?;
        self.records.get(usize::try_from(version.checked_sub(first)?).ok()?)
    }

    /// The object's bytes; its name is their BLAKE3.
    pub fn encode(&self) -> Vec<u8> {
        invariant_eq!(self.shape_problem(), None);
        encode_value(Kind::History, self)
    }

    /// Decodes a history block and checks its shape (not its name).
    pub fn decode(bytes: &[u8]) -> Result<HistoryBlock, DecodeError> {
        let block: HistoryBlock = decode_value(Kind::History, bytes)?;
        match block.shape_problem() {
            Some(rule) => Err(DecodeError::Shape(ShapeRule::History(rule))),
            None => Ok(block),
        }
    }

    /// Decodes the object read at `history/<name>` and checks it hashes to that name.
    pub fn decode_named(bytes: &[u8], name: &Hash32) -> Result<HistoryBlock, DecodeError> {
        let block = HistoryBlock::decode(bytes)?;
        let found = Hash32::of(bytes);
        if found != *name {
            return Err(DecodeError::Misnamed(NameRule::NotItsName {
                kind: Kind::History,
                name: *name,
                found,
            }));
        }
        Ok(block)
    }

    /// BLAKE3 of the object's bytes: its name.
    pub fn content_hash(&self) -> Hash32 {
        Hash32::of(&self.encode())
    }

    fn shape_problem(&self) -> Option<HistoryRule> {
        let (Some(first), Some(last)) = (self.records.first(), self.records.last()) else {
            return Some(HistoryRule::Empty);
        };
        if self.records.len() > RECORDS_PER_HISTORY_BLOCK_MAX {
            return Some(HistoryRule::TooManyRecords { count: self.records.len() });
        }
        if first.version == 0 {
            return Some(HistoryRule::VersionZero);
        }
        for pair in self.records.windows(2) {
            if pair[0].version.checked_add(1) != Some(pair[1].version) {
                return Some(HistoryRule::VersionsNotConsecutive {
                    after: pair[0].version,
                    found: pair[1].version,
                });
            }
        }
        if history_window(first.version) != history_window(last.version) {
            return Some(HistoryRule::CrossesWindow { first: first.version, last: last.version });
        }
        None
    }
}
