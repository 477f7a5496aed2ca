//! Word ids as LEB128 varints: how a body's words are kept for phrases, most of them in
//! one byte (the commonest words are met first, so they get the smallest ids).

pub(crate) fn push_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The most bytes a varint of a `u32` takes.
pub(crate) const VARINT_MAX: usize = 5;

/// Writes `v` as a varint at `at` in `out`, which has [`VARINT_MAX`] bytes there, and
/// returns where the next one goes. Without branches: whether a word id takes one byte or
/// two is as good as random from one word to the next, and a branch on it mispredicted
/// often enough to be most of an encoding's time.
#[inline]
pub(crate) fn put_varint(out: &mut [u8], at: usize, v: u32) -> usize {
    let out = &mut out[at..at + VARINT_MAX];
    let mut len = 1;
    for (k, byte) in out.iter_mut().enumerate() {
        let more = k < VARINT_MAX - 1 && u64::from(v) >= 1 << (7 * (k + 1));
        *byte = ((u64::from(v) >> (7 * k)) as u8 & 0x7f) | (u8::from(more) << 7);
        len += usize::from(more);
    }
    at + len
}

/// [`put_varint`] of a `v` below 2^21, in three bytes at most (`out` has three at `at`):
/// a part's word ids, below 2^16, with fewer bytes computed.
#[inline]
pub(crate) fn put_short_varint(out: &mut [u8], at: usize, v: u32) -> usize {
    invariant!(v < 1 << 21);
    let out = &mut out[at..at + 3];
    let (more0, more1) = (v >= 1 << 7, v >= 1 << 14);
    out[0] = (v as u8 & 0x7f) | (u8::from(more0) << 7);
    out[1] = ((v >> 7) as u8 & 0x7f) | (u8::from(more1) << 7);
    out[2] = (v >> 14) as u8 & 0x7f;
    at + 1 + usize::from(more0) + usize::from(more1)
}

pub(crate) fn varints(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let mut i = 0;
    core::iter::from_fn(move || {
        let mut v = 0u32;
        let mut shift = 0;
        loop {
            let b = *bytes.get(i)?;
            i += 1;
            v |= u32::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
            shift += 7;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        let values = [0, 1, 127, 128, 300, 16_383, 16_384, u32::MAX];
        let mut out = Vec::new();
        for v in values {
            push_varint(&mut out, v);
        }
        assert_eq!(varints(&out).collect::<Vec<_>>(), values);
        let mut put = vec![0; values.len() * VARINT_MAX];
        let end = values.iter().fold(0, |at, v| put_varint(&mut put, at, *v));
        assert_eq!(&put[..end], &out[..]);
        let short = [0, 1, 127, 128, 300, 16_383, 16_384, 65_535, (1 << 21) - 1];
        let mut out = Vec::new();
        let mut put = vec![0; short.len() * 3];
        let mut end = 0;
        for v in short {
            push_varint(&mut out, v);
            end = put_short_varint(&mut put, end, v);
        }
        assert_eq!(&put[..end], &out[..]);
    }
}
