//! How a slot member is read (SPEC 5): the derived serde form of [`SlotMember`], field for
//! field, but for one thing. A document member names its path twice, in its receipt and
//! its entry, and the entry's is nearly always the same bytes: then it is the receipt's
//! path again (one more reference to it), not a second check and allocation of the same
//! string (reading paths was half of what decoding a slot cost).
//!
//! `canonical_tests` holds it to the derived form.

use crate::hash::Hash32;
use crate::world::entry::{IndexEntry, Receipt, SlotMember};
use crate::world::path::Path;
use core::fmt;
use core::marker::PhantomData;
use serde::de::{self, DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

const MEMBER_FIELDS: &[&str] = &["receipt", "entry", "version", "prune", "policy"];
const ENTRY_FIELDS: &[&str] =
    &["path", "version", "first_version", "archived", "body_hash", "body_len", "modified_sequence"];

impl<'de> Deserialize<'de> for SlotMember {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<SlotMember, D::Error> {
        deserializer.deserialize_struct("SlotMember", MEMBER_FIELDS, MemberVisitor)
    }
}

/// The next of a struct's `fields` elements, or the derived form's error for its absence.
fn field<'de, A: SeqAccess<'de>, S: DeserializeSeed<'de>>(
    seq: &mut A,
    seed: S,
    at: usize,
    expected: &dyn de::Expected,
) -> Result<S::Value, A::Error> {
    seq.next_element_seed(seed)?.ok_or_else(|| de::Error::invalid_length(at, expected))
}

struct MemberVisitor;

impl<'de> Visitor<'de> for MemberVisitor {
    type Value = SlotMember;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct SlotMember")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SlotMember, A::Error> {
        let receipt: Receipt = field(&mut seq, PhantomData, 0, &self)?;
        let entry = field(&mut seq, Optional(EntrySeed { receipt_path: receipt.path.as_ref() }), 1, &self)?;
        let version = field(&mut seq, PhantomData, 2, &self)?;
        let prune = field(&mut seq, PhantomData, 3, &self)?;
        let policy = field(&mut seq, PhantomData, 4, &self)?;
        Ok(SlotMember { receipt, entry, version, prune, policy })
    }
}

/// An `Option` of what `S` reads, as serde reads an `Option<T>`.
struct Optional<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Optional<S> {
    type Value = Option<S::Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for Optional<S> {
    type Value = Option<S::Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("option")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(deserializer).map(Some)
    }
}

/// An [`IndexEntry`] in its derived form (no time, no record: those are the column's),
/// whose path is the receipt's when its bytes are.
struct EntrySeed<'p> {
    receipt_path: Option<&'p Path>,
}

impl<'de> DeserializeSeed<'de> for EntrySeed<'_> {
    type Value = IndexEntry;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<IndexEntry, D::Error> {
        deserializer.deserialize_struct("IndexEntry", ENTRY_FIELDS, self)
    }
}

impl<'de> Visitor<'de> for EntrySeed<'_> {
    type Value = IndexEntry;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct IndexEntry")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<IndexEntry, A::Error> {
        let path = field(&mut seq, PathSeed { receipt_path: self.receipt_path }, 0, &self)?;
        let version = field(&mut seq, PhantomData, 1, &self)?;
        let first_version = field(&mut seq, PhantomData, 2, &self)?;
        let archived = field(&mut seq, PhantomData, 3, &self)?;
        let body_hash: Hash32 = field(&mut seq, PhantomData, 4, &self)?;
        let body_len = field(&mut seq, PhantomData, 5, &self)?;
        let modified_sequence = field(&mut seq, PhantomData, 6, &self)?;
        Ok(IndexEntry {
            path,
            version,
            first_version,
            archived,
            body_hash,
            body_len,
            modified_sequence,
            modified_us: 0,
            catalog: None,
        })
    }
}

/// A path, as [`Path`] reads one, but the receipt's again when it is the same string.
struct PathSeed<'p> {
    receipt_path: Option<&'p Path>,
}

impl<'de> DeserializeSeed<'de> for PathSeed<'_> {
    type Value = Path;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Path, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for PathSeed<'_> {
    type Value = Path;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Path, E> {
        match self.receipt_path {
            // The same string decodes to the same path: the receipt's, already checked.
            Some(path) if path.as_str() == s => Ok(path.clone()),
            _ => Path::decode(s).map_err(E::custom),
        }
    }
}
