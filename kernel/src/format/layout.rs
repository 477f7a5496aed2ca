//! How a full checkpoint divides a world (SPEC 10.4): which shard a path falls in, how many
//! shards a world of a given size has, and which 256-version window a version sits in.
//! Pure functions of their arguments, so every compactor derives the same layout.

use crate::hash::Hash32;
use crate::world::path::Path;

/// Documents a shard is sized for. The record sizes shards at about 200 KB and has 4,096
/// of them at 1,000,000 documents (about 244 each); 256 is the power of two that gives
/// that count.
pub const DOCUMENTS_PER_SHARD_TARGET: u64 = 256;

/// At most 65,536 shards: past about 16.7 million documents shards grow instead, so a cold
/// start never lists or reads more shard objects than this.
pub const SHARD_BITS_MAX: u8 = 16;

/// A history block holds at most this many version records of one document (the plan, 002).
pub const RECORDS_PER_HISTORY_BLOCK_MAX: usize = 256;

/// Shard bits for a world of `document_count` documents:
/// `ceil(log2(ceil(document_count / 256)))`, clamped to `0 ..= 16`. Documents are never
/// deleted, so the count (and with it the layout) only ever grows.
pub fn shard_bits_for(document_count: u64) -> u8 {
    let shards_needed = document_count.div_ceil(DOCUMENTS_PER_SHARD_TARGET);
    if shards_needed <= 1 {
        return 0;
    }
    // ceil(log2(n)) for n >= 2 is the bit length of n - 1.
    let bits = (u64::BITS - (shards_needed - 1).leading_zeros()) as u8;
    bits.min(SHARD_BITS_MAX)
}

/// The number of shards a layout of `shard_bits` has.
pub fn shard_count(shard_bits: u8) -> u32 {
    assert!(shard_bits <= SHARD_BITS_MAX, "shard bits {shard_bits} past the limit");
    1u32 << shard_bits
}

/// The shard of `path`: the top `shard_bits` bits of BLAKE3 of the path's bytes (the
/// normalized path, as a slot writes it), read big-endian.
pub fn shard_of(path: &Path, shard_bits: u8) -> u32 {
    assert!(shard_bits <= SHARD_BITS_MAX, "shard bits {shard_bits} past the limit");
    if shard_bits == 0 {
        return 0;
    }
    let hash = Hash32::of(path.as_str().as_bytes());
    let top = u32::from_be_bytes([hash.0[0], hash.0[1], hash.0[2], hash.0[3]]);
    top >> (32 - u32::from(shard_bits))
}

/// The 256-version window version `version` (at least 1) sits in: versions 1 to 256 are
/// window 0, 257 to 512 window 1, and so on. A history block never spans two windows.
pub fn history_window(version: u64) -> u64 {
    invariant!(version >= 1, "versions start at 1");
    version.saturating_sub(1) / RECORDS_PER_HISTORY_BLOCK_MAX as u64
}

/// The first version of window `window`.
pub fn history_window_start(window: u64) -> u64 {
    window * RECORDS_PER_HISTORY_BLOCK_MAX as u64 + 1
}

/// The receipt block sequence `sequence` (at least 1) falls in: sequences 1 to 2,048 are
/// block 0, and so on. Blocks are cut at fixed sequences so that a checkpoint reuses every
/// block a sequence was not added to (SPEC 10.8).
pub fn receipt_block_of(sequence: u64) -> u64 {
    invariant!(sequence >= 1, "sequences start at 1");
    sequence.saturating_sub(1) / super::receipts::RECEIPTS_PER_BLOCK_MAX as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(s: &str) -> Path {
        Path::parse(s).expect("a valid path")
    }

    #[test]
    fn a_million_documents_make_4096_shards() {
        assert_eq!(shard_bits_for(1_000_000), 12);
        assert_eq!(shard_count(shard_bits_for(1_000_000)), 4_096);
    }

    #[test]
    fn an_empty_world_has_one_shard() {
        assert_eq!(shard_bits_for(0), 0);
        assert_eq!(shard_count(shard_bits_for(0)), 1);
    }

    #[test]
    fn shard_bits_double_the_shards_each_time_the_count_passes_a_multiple_of_256() {
        assert_eq!(shard_bits_for(1), 0);
        assert_eq!(shard_bits_for(256), 0);
        assert_eq!(shard_bits_for(257), 1);
        assert_eq!(shard_bits_for(512), 1);
        assert_eq!(shard_bits_for(513), 2);
        assert_eq!(shard_bits_for(1_024), 2);
        assert_eq!(shard_bits_for(1_025), 3);
        assert_eq!(shard_bits_for(100_000), 9);
        assert_eq!(shard_bits_for(1 << 20), 12);
        assert_eq!(shard_bits_for((1 << 20) + 1), 13);
    }

    #[test]
    fn shard_bits_stop_at_the_limit() {
        assert_eq!(shard_bits_for(256 << 16), 16);
        assert_eq!(shard_bits_for((256 << 16) + 1), SHARD_BITS_MAX);
        assert_eq!(shard_bits_for(u64::MAX), SHARD_BITS_MAX);
    }

    #[test]
    fn shard_bits_never_shrink_as_the_count_grows() {
        let mut last = 0;
        for count in (0..5_000_000u64).step_by(997) {
            let bits = shard_bits_for(count);
            assert!(bits >= last, "{count}");
            last = bits;
        }
    }

    #[test]
    fn the_shard_of_a_path_is_the_top_bits_of_its_hash() {
        let p = path("/notes/a.md");
        let h = Hash32::of(b"/notes/a.md");
        let top = u32::from_be_bytes([h.0[0], h.0[1], h.0[2], h.0[3]]);
        assert_eq!(shard_of(&p, 0), 0);
        assert_eq!(shard_of(&p, 1), top >> 31);
        assert_eq!(shard_of(&p, 12), top >> 20);
        assert_eq!(shard_of(&p, 16), top >> 16);
        // One more bit splits a shard in two: the old index is the new one without its last bit.
        for bits in 0..SHARD_BITS_MAX {
            assert_eq!(shard_of(&p, bits + 1) >> 1, shard_of(&p, bits));
        }
    }

    #[test]
    fn paths_spread_over_the_shards() {
        let bits = 4;
        let mut counts = [0u32; 16];
        for i in 0..4_096 {
            counts[shard_of(&path(&format!("/d/{i}.md")), bits) as usize] += 1;
        }
        // 256 expected in each; a uniform hash stays well inside half to double.
        assert!(counts.iter().all(|&c| (128..512).contains(&c)), "{counts:?}");
    }

    #[test]
    fn history_windows_are_256_versions_wide() {
        assert_eq!(history_window(1), 0);
        assert_eq!(history_window(256), 0);
        assert_eq!(history_window(257), 1);
        assert_eq!(history_window_start(0), 1);
        assert_eq!(history_window_start(1), 257);
        assert_eq!(history_window_start(history_window(1_000)), 769);
    }
}
