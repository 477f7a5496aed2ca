//! BLAKE3 of many short inputs at once: [`Hash32::of`] of each, with the SIMD lanes
//! (16 with AVX-512) across inputs rather than within one. A body of a segment part is
//! most often one or two 1 KiB chunks; hashed alone, its blocks go one after another
//! through one lane, and verifying every body was an eighth of an index build's CPU at a
//! million documents. Here the whole blocks of every input's chunk go through the
//! crate's `hash_many` together, grouped by how many there are (it takes inputs of one
//! length), and only each chunk's last block, which may be partial, and the one parent
//! node of a two-chunk input are compressed alone.
//!
//! `blake3::platform` is the crate's own, public but hidden ("for benchmarks only"), not
//! covered by semver: a release that changed its signatures fails the build, and the
//! tests below hold every length up to three chunks to `blake3::hash`, so one that changed
//! what it computes fails them rather than a body's verification (docs/DEPENDENCIES.md).

use crate::hash::Hash32;
use blake3::platform::Platform;
use blake3::IncrementCounter;

const BLOCK_LEN: usize = 64;
const CHUNK_LEN: usize = 1024;
/// Block flags (the BLAKE3 paper, 2.1).
const CHUNK_START: u8 = 1;
const CHUNK_END: u8 = 2;
const PARENT: u8 = 4;
const ROOT: u8 = 8;
const IV: [u32; 8] =
    [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19];

/// [`Hash32::of`] of each input, in order.
pub fn hashes_of(inputs: &[&[u8]]) -> Vec<Hash32> {
    let platform = Platform::detect();
    let mut out = vec![Hash32::ZERO; inputs.len()];
    // Each input of at most two chunks, by chunk: its chaining value so far, and the
    // chunk's bytes. Longer inputs are hashed alone (the crate runs their chunks
    // in parallel itself).
    let mut first: Vec<Chunk<'_>> = Vec::with_capacity(inputs.len());
    let mut second: Vec<Chunk<'_>> = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        if input.len() > 2 * CHUNK_LEN {
            out[i] = Hash32::of(input);
            continue;
        }
        let split = input.len().min(CHUNK_LEN);
        first.push(Chunk { input: i, bytes: &input[..split], cv: IV });
        if input.len() > CHUNK_LEN {
            second.push(Chunk { input: i, bytes: &input[split..], cv: IV });
        }
    }
    chunks(&platform, &mut first, 0);
    chunks(&platform, &mut second, 1);
    let mut first = first.into_iter().peekable();
    let mut second = second.into_iter().peekable();
    for (i, input) in inputs.iter().enumerate() {
        if input.len() > 2 * CHUNK_LEN {
            continue;
        }
        let left = first.next().expect("a first chunk for each input");
        invariant_eq!(left.input, i);
        let mut cv = left.cv;
        let root = input.len() <= CHUNK_LEN;
        finish_chunk(&platform, &mut cv, left.bytes, 0, root);
        if !root {
            let right = second.next().expect("a second chunk for a longer input");
            let mut right_cv = right.cv;
            finish_chunk(&platform, &mut right_cv, right.bytes, 1, false);
            let mut block = [0u8; BLOCK_LEN];
            block[..32].copy_from_slice(&le_bytes(&cv));
            block[32..].copy_from_slice(&le_bytes(&right_cv));
            cv = IV;
            platform.compress_in_place(&mut cv, &block, BLOCK_LEN as u8, 0, PARENT | ROOT);
        }
        out[i] = Hash32(le_bytes(&cv));
    }
    invariant!(first.peek().is_none() && second.peek().is_none());
    out
}

/// One chunk of an input: its bytes, and the chaining value once its whole blocks before
/// the last are compressed.
struct Chunk<'a> {
    input: usize,
    bytes: &'a [u8],
    cv: [u32; 8],
}

/// How many of a chunk's blocks come before its last (which may be partial, or empty).
fn leading_blocks(len: usize) -> usize {
    len.saturating_sub(1) / BLOCK_LEN
}

/// Compresses the leading blocks of every chunk (chunk number `counter` of its input),
/// chunks with as many together.
fn chunks(platform: &Platform, chunks: &mut [Chunk<'_>], counter: u64) {
    chunks.sort_by_key(|c| leading_blocks(c.bytes.len()));
    let mut start = 0;
    while start < chunks.len() {
        let blocks = leading_blocks(chunks[start].bytes.len());
        let end =
            start + chunks[start..].iter().take_while(|c| leading_blocks(c.bytes.len()) == blocks).count();
        let group = &mut chunks[start..end];
        match blocks {
            0 => {}
            1 => many::<64>(platform, group, counter),
            2 => many::<128>(platform, group, counter),
            3 => many::<192>(platform, group, counter),
            4 => many::<256>(platform, group, counter),
            5 => many::<320>(platform, group, counter),
            6 => many::<384>(platform, group, counter),
            7 => many::<448>(platform, group, counter),
            8 => many::<512>(platform, group, counter),
            9 => many::<576>(platform, group, counter),
            10 => many::<640>(platform, group, counter),
            11 => many::<704>(platform, group, counter),
            12 => many::<768>(platform, group, counter),
            13 => many::<832>(platform, group, counter),
            14 => many::<896>(platform, group, counter),
            _ => many::<960>(platform, group, counter),
        }
        start = end;
    }
    chunks.sort_by_key(|c| c.input);
}

/// The first `N` bytes (whole blocks, not the chunk's last) of every chunk in `group`,
/// through `hash_many`: the first block flagged as a chunk's start, none as its end.
fn many<const N: usize>(platform: &Platform, group: &mut [Chunk<'_>], counter: u64) {
    let inputs: Vec<&[u8; N]> =
        group.iter().map(|c| c.bytes[..N].try_into().expect("N bytes of whole blocks")).collect();
    let mut cvs = vec![0u8; 32 * group.len()];
    platform.hash_many(&inputs, &IV, counter, IncrementCounter::No, 0, CHUNK_START, 0, &mut cvs);
    for (c, cv) in group.iter_mut().zip(cvs.chunks_exact(32)) {
        for (word, bytes) in c.cv.iter_mut().zip(cv.chunks_exact(4)) {
            *word = u32::from_le_bytes(bytes.try_into().expect("4 bytes"));
        }
    }
}

/// Compresses a chunk's last block into `cv` (its leading blocks already in it).
fn finish_chunk(platform: &Platform, cv: &mut [u32; 8], chunk: &[u8], counter: u64, root: bool) {
    let leading = leading_blocks(chunk.len());
    let last = &chunk[leading * BLOCK_LEN..];
    let mut block = [0u8; BLOCK_LEN];
    block[..last.len()].copy_from_slice(last);
    let mut flags = CHUNK_END;
    if leading == 0 {
        flags |= CHUNK_START;
    }
    if root {
        flags |= ROOT;
    }
    platform.compress_in_place(cv, &block, last.len() as u8, counter, flags);
}

fn le_bytes(words: &[u32; 8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (bytes, word) in out.chunks_exact_mut(4).zip(words) {
        bytes.copy_from_slice(&word.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(len: usize, seed: u8) -> Vec<u8> {
        (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
    }

    #[test]
    fn every_length_to_three_chunks_hashes_as_blake3_alone() {
        let inputs: Vec<Vec<u8>> = (0..=3 * CHUNK_LEN + 1).map(|len| bytes(len, len as u8)).collect();
        let refs: Vec<&[u8]> = inputs.iter().map(|b| b.as_slice()).collect();
        let got = hashes_of(&refs);
        for (input, hash) in inputs.iter().zip(&got) {
            assert_eq!(*hash, Hash32::of(input), "length {}", input.len());
        }
    }

    #[test]
    fn inputs_of_one_length_and_of_mixed_lengths_keep_their_order() {
        let inputs: Vec<Vec<u8>> =
            (0..40).map(|i| bytes([700, 64, 1500, 0, 2048, 5000][i % 6], i as u8)).collect();
        let refs: Vec<&[u8]> = inputs.iter().map(|b| b.as_slice()).collect();
        let expected: Vec<Hash32> = inputs.iter().map(|b| Hash32::of(b)).collect();
        assert_eq!(hashes_of(&refs), expected);
        assert!(hashes_of(&[]).is_empty());
    }
}
