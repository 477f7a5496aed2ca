//! The slot writer against postcard: every slot, in each of its four schemas and whatever
//! its shape, encodes to exactly the bytes postcard writes for its serde form.

use super::canonical_tests::carrying_slot;
use super::frame::{HEADER_LEN, TRAILER_LEN};
use super::roundtrip_tests::{bytes_up_to, slot, CASES};
use super::slot_writer::put_varint;
use super::snapshot_tests::worked_example_slot;
use super::Slot;
use bytes::Bytes;
use proptest::prelude::*;

/// A slot as the writer and as postcard write it.
fn same_bytes_as_postcard(slot: &Slot) -> Result<(), TestCaseError> {
    let written = slot.encode_unchecked();
    prop_assert_eq!(&written, &slot.encode_reference());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn a_slot_is_written_as_postcard_writes_it(slot in slot()) {
        same_bytes_as_postcard(&slot)?;
    }

    #[test]
    fn a_slot_carrying_bodies_is_written_as_postcard_writes_it(slot in carrying_slot()) {
        same_bytes_as_postcard(&slot)?;
    }

    /// The writer follows the serde form, not the shape rules: a slot that breaks them
    /// (bodies no member names, members out of order) is written as postcard writes it.
    #[test]
    fn a_misshapen_slot_is_written_as_postcard_writes_it(
        mut slot in slot(),
        bodies in prop::collection::vec(bytes_up_to(200), 0..4),
        first_sequence in any::<u64>(),
    ) {
        slot.bodies = bodies.into_iter().map(Bytes::from).collect();
        slot.first_sequence = first_sequence;
        slot.members.reverse();
        same_bytes_as_postcard(&slot)?;
    }

    #[test]
    fn a_varint_is_written_as_postcard_writes_it(value in any::<u64>()) {
        let mut out = Vec::new();
        put_varint(&mut out, value);
        prop_assert_eq!(out, postcard::to_allocvec(&value).expect("encodes"));
    }
}

#[test]
fn the_worked_example_is_written_as_postcard_writes_it() {
    let slot = worked_example_slot();
    let written = slot.encode();
    assert_eq!(written, slot.encode_reference());
    assert!(written.len() > HEADER_LEN + TRAILER_LEN);
}
