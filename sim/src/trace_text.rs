//! The trace's text of its most frequent event, a committed write's answer, written as
//! bytes: the same text `WriteOk`'s `Display` gives, without `core::fmt` (formatting it
//! was 2% of a `single` run: one answer for every write).

use slotlog_kernel::world::Receipt;

/// Appends `committed: {receipt}` to `out`, byte for byte what
/// `format!("{}", WriteOk::Committed(receipt))` writes.
pub(crate) fn push_committed(out: &mut Vec<u8>, receipt: &Receipt) {
    out.extend_from_slice(b"committed: ");
    out.extend_from_slice(receipt.kind.as_str().as_bytes());
    if let Some(path) = &receipt.path {
        out.push(b' ');
        out.extend_from_slice(path.as_str().as_bytes());
    }
    out.extend_from_slice(b" v");
    push_decimal(out, receipt.version);
    out.extend_from_slice(b" at ");
    push_decimal(out, receipt.sequence);
    out.extend_from_slice(b" op:");
    let mut hex = [0u8; 32];
    for (pair, b) in hex.chunks_exact_mut(2).zip(receipt.op_id.0) {
        pair[0] = HEX_DIGITS[usize::from(b >> 4)];
        pair[1] = HEX_DIGITS[usize::from(b & 15)];
    }
    out.extend_from_slice(&hex);
}

const HEX_DIGITS: [u8; 16] = *b"0123456789abcdef";

/// Appends `n` in decimal, as `{}` formats a `u64`.
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use slotlog_kernel::ids::OperationId;
    use slotlog_kernel::reply::WriteOk;
    use slotlog_kernel::world::entry::ReceiptKind;
    use slotlog_kernel::world::path::Path;

    fn written(receipt: &Receipt) -> String {
        let mut out = Vec::new();
        push_committed(&mut out, receipt);
        String::from_utf8(out).expect("the text is UTF-8")
    }

    #[test]
    fn committed_text_is_what_display_writes() {
        let kinds = [
            ReceiptKind::Published,
            ReceiptKind::Appended,
            ReceiptKind::Archived,
            ReceiptKind::Unarchived,
            ReceiptKind::PolicySet,
        ];
        let numbers = [0, 1, 9, 10, 99, 100, 12_345, u64::MAX];
        let paths = [
            None,
            Some(Path::parse("/docs/a.md").expect("a path")),
            Some(Path::parse("/seed/é/000001.md").expect("a path")),
        ];
        let ops = [OperationId([0; 16]), OperationId([0xab; 16]), OperationId::from((1u128 << 64) + 0x1f)];
        for (i, kind) in kinds.into_iter().enumerate() {
            for (j, &version) in numbers.iter().enumerate() {
                let receipt = Receipt {
                    op_id: ops[(i + j) % ops.len()],
                    sequence: numbers[(i + 3 * j) % numbers.len()],
                    kind,
                    path: paths[(i + j) % paths.len()].clone(),
                    version,
                };
                assert_eq!(written(&receipt), WriteOk::Committed(receipt.clone()).to_string());
            }
        }
    }
}
