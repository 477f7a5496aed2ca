//! The world marker (SPEC 4): written once at genesis, never on the commit path. Its hash
//! anchors the chain: the first slot names it as its predecessor. It also fixes the
//! world's merge rule (SPEC 10.16), which every store of the world must share: racing
//! compactors write the same checkpoint bytes only if they layer the same way.

use super::delta::DELTAS_PER_ROOT_MAX;
use super::frame::{decode_payload, decode_raw_schema, encode_value_schema, DecodeError, Kind};
use super::rule::ShapeRule;
use crate::ids::{StoreId, WorldId};
use serde::{Deserialize, Serialize};

/// Schema of a marker whose world takes the default merge rule.
const SCHEMA_DEFAULT_RULE: u16 = 1;
/// Schema of a marker that names its world's merge rule.
const SCHEMA_WITH_RULE: u16 = 2;

/// When a checkpoint step writes the documents it changed as deltas over the shards, and
/// when it writes every shard anew (SPEC 10.16). A world's is fixed in its marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergeRule {
    /// The deltas' entries, in all, may reach this share of the documents (per mille) or
    /// one full delta, whichever is more.
    pub delta_entries_per_mille_max: u64,
    /// A root names at most this many deltas; 0 writes every step's shards anew.
    pub deltas_max: usize,
}

impl MergeRule {
    /// The rule of a world whose marker names none (schema 1). 64 per mille and 32
    /// deltas: see `Config::checkpoint_deltas_max` for why.
    pub const DEFAULT: MergeRule = MergeRule { delta_entries_per_mille_max: 64, deltas_max: 32 };
}

/// The world marker: names the world under its prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    /// The world's id.
    pub world_id: WorldId,
    /// The store that created the world.
    pub created_by: StoreId,
    /// The world's merge rule, which every store of it follows whatever it is configured.
    pub merge_rule: MergeRule,
}

/// Schema 1's payload.
#[derive(Serialize, Deserialize)]
struct DefaultRule {
    world_id: WorldId,
    created_by: StoreId,
}

/// Schema 2's payload.
#[derive(Serialize, Deserialize)]
struct WithRule {
    world_id: WorldId,
    created_by: StoreId,
    delta_entries_per_mille_max: u64,
    deltas_max: u64,
}

impl Marker {
    /// The marker of a world with the default merge rule.
    pub fn new(world_id: WorldId, created_by: StoreId) -> Marker {
        Marker { world_id, created_by, merge_rule: MergeRule::DEFAULT }
    }

    /// The object's bytes: schema 1 for the default rule, so every marker written before
    /// the rule was recorded is the same world's, and schema 2 naming any other.
    pub fn encode(&self) -> Vec<u8> {
        let (world_id, created_by) = (self.world_id, self.created_by);
        if self.merge_rule == MergeRule::DEFAULT {
            return encode_value_schema(
                Kind::Marker,
                SCHEMA_DEFAULT_RULE,
                &DefaultRule { world_id, created_by },
            );
        }
        let payload = WithRule {
            world_id,
            created_by,
            delta_entries_per_mille_max: self.merge_rule.delta_entries_per_mille_max,
            deltas_max: self.merge_rule.deltas_max as u64,
        };
        encode_value_schema(Kind::Marker, SCHEMA_WITH_RULE, &payload)
    }

    /// Decodes a marker.
    pub fn decode(bytes: &[u8]) -> Result<Marker, DecodeError> {
        let schemas = [SCHEMA_DEFAULT_RULE, SCHEMA_WITH_RULE];
        let (schema, payload) = decode_raw_schema(Kind::Marker, &schemas, bytes)?;
        if schema == SCHEMA_DEFAULT_RULE {
            let m: DefaultRule = decode_payload(payload)?;
            return Ok(Marker::new(m.world_id, m.created_by));
        }
        let m: WithRule = decode_payload(payload)?;
        let deltas_max = usize::try_from(m.deltas_max).ok().filter(|d| *d <= DELTAS_PER_ROOT_MAX);
        let Some(deltas_max) = deltas_max else {
            return Err(DecodeError::Shape(ShapeRule::MarkerDeltasPastRootMax { deltas_max: m.deltas_max }));
        };
        let merge_rule = MergeRule { delta_entries_per_mille_max: m.delta_entries_per_mille_max, deltas_max };
        if merge_rule == MergeRule::DEFAULT {
            // Schema 1 is this rule's one byte form.
            return Err(DecodeError::NotCanonical);
        }
        Ok(Marker { world_id: m.world_id, created_by: m.created_by, merge_rule })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORLD: WorldId = WorldId([7; 16]);

    #[test]
    fn a_default_rule_is_schema_1_and_any_other_is_schema_2_and_both_round_trip() {
        let plain = Marker::new(WORLD, StoreId(3));
        let bytes = plain.encode();
        assert_eq!(u16::from_le_bytes([bytes[5], bytes[6]]), SCHEMA_DEFAULT_RULE);
        assert_eq!(Marker::decode(&bytes), Ok(plain.clone()));
        let ruled = Marker { merge_rule: MergeRule { deltas_max: 2, ..MergeRule::DEFAULT }, ..plain };
        let bytes = ruled.encode();
        assert_eq!(u16::from_le_bytes([bytes[5], bytes[6]]), SCHEMA_WITH_RULE);
        assert_eq!(Marker::decode(&bytes), Ok(ruled));
    }

    #[test]
    fn schema_2_naming_the_default_rule_or_more_deltas_than_a_root_holds_is_refused() {
        let with = |deltas_max: u64, per_mille: u64| {
            let payload = WithRule {
                world_id: WORLD,
                created_by: StoreId(3),
                delta_entries_per_mille_max: per_mille,
                deltas_max,
            };
            Marker::decode(&encode_value_schema(Kind::Marker, SCHEMA_WITH_RULE, &payload))
        };
        assert_eq!(with(32, 64), Err(DecodeError::NotCanonical));
        let past = DELTAS_PER_ROOT_MAX as u64 + 1;
        assert_eq!(
            with(past, 64),
            Err(DecodeError::Shape(ShapeRule::MarkerDeltasPastRootMax { deltas_max: past }))
        );
        assert!(with(DELTAS_PER_ROOT_MAX as u64, 64).is_ok());
    }
}
