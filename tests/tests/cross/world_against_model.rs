//! The kernel's world rules against the reference model, on random sequences of
//! mutations over a small universe of paths (so parents, children, archives, policy
//! flips and stale expected versions all collide). Every verdict must agree, and the
//! states must agree after every step.

use bytes::Bytes;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use slotlog_kernel::format::Slot;
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::{OperationId, StoreId, WorldId};
use slotlog_kernel::world::{
    evaluate, validate, Evaluation, Expected, Layered, Mutation, Overlay, PolicyBody, WorldState,
};
use slotlog_model::checker::{invalid_to_model, receipt_to_model, rejection_to_model};
use slotlog_model::{ModelWorld, Verdict};

const PATHS: &[&str] =
    &["/a.md", "/a.md/b.md", "/a.md/b.md/c.md", "/d/e.md", "/d", "d//e.md/", "/ro/x.md", "/x/../y", ""];

fn expected() -> impl Strategy<Value = Expected> {
    prop_oneof![Just(Expected::Any), Just(Expected::Absent), (0u64..4).prop_map(Expected::Version)]
}

fn body() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        Just(Bytes::from_static(b"one")),
        Just(Bytes::from_static(b"two")),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Bytes::from)
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let path = proptest::sample::select(PATHS).prop_map(str::to_string);
    prop_oneof![
        (path.clone(), body(), expected()).prop_map(|(path, body, expected)| Mutation::Publish {
            path,
            body,
            catalog: None,
            expected
        }),
        (path.clone(), body(), expected()).prop_map(|(path, bytes, expected)| Mutation::Append {
            path,
            bytes,
            expected
        }),
        (path, any::<bool>(), expected()).prop_map(|(path, archived, expected)| Mutation::SetArchived {
            path,
            archived,
            expected
        }),
        (1u32..4, prop_oneof![Just(8u64), Just(64), Just(1 << 20)], any::<bool>(), expected()).prop_map(
            |(r, max, ro, expected)| Mutation::SetPolicy {
                policy: PolicyBody {
                    retention_versions: r,
                    body_bytes_max: max,
                    read_only_prefixes: if ro { vec!["ro/".into()] } else { vec![] }
                },
                expected,
            }
        ),
    ]
}

proptest! {
    // The regressions stay next to this file (world_against_model.proptest-regressions):
    // proptest's default would put them under tests/tests/proptest-regressions/, since
    // this directory has a main.rs.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::with_cases(512)
    })]

    #[test]
    fn the_kernel_and_the_model_agree_on_every_verdict(ops in proptest::collection::vec((0u8..6, mutation()), 1..60)) {
        let world_id = WorldId([7; 16]);
        let mut kernel = WorldState::genesis(world_id, Hash32::ZERO);
        let mut model = ModelWorld::new();
        let mut bodies: std::collections::BTreeMap<Hash32, Bytes> = Default::default();
        for (i, (reuse, m)) in ops.iter().enumerate() {
            // Now and then reuse an earlier op id, to exercise duplicates.
            let op_id = OperationId::from(if *reuse == 0 && i > 0 { i as u128 / 2 } else { i as u128 } + 1);
            let verdict = model.apply(op_id, m);
            let valid = match validate(m) {
                Err(inv) => {
                    prop_assert_eq!(Verdict::Invalid(invalid_to_model(&inv)), verdict);
                    continue;
                }
                Ok(v) => v,
            };
            let empty = Overlay::new(kernel.next_sequence() - 1);
            let layers = [&empty];
            let view = Layered::new(&kernel, &layers);
            let found = |h: &Hash32| bodies.get(h).cloned();
            match evaluate(&view, op_id, &valid, 0, &found) {
                Evaluation::Applied { member, body } => {
                    let Verdict::Applied(a) = &verdict else {
                        return Err(TestCaseError::fail(format!("kernel applied {member:?}, model says {verdict:?}")));
                    };
                    prop_assert_eq!(receipt_to_model(&member.receipt), a.receipt.clone());
                    if let Some(b) = body {
                        bodies.insert(Hash32::of(&b), b);
                    }
                    let slot = Slot { world_id, first_sequence: kernel.next_sequence(), store_id: StoreId(1), prev_hash: kernel.tip_hash(), members: vec![member], bodies: Vec::new() };
                    let bytes = slot.encode();
                    let decoded = Slot::decode(&bytes).expect("an encoded slot decodes");
                    prop_assert_eq!(&decoded, &slot);
                    kernel.apply_slot(&decoded, Hash32::of(&bytes)).expect("a built member applies");
                }
                Evaluation::Unchanged { version } => prop_assert_eq!(Verdict::Unchanged { version }, verdict),
                Evaluation::Duplicate(r) => prop_assert_eq!(Verdict::Duplicate(receipt_to_model(&r)), verdict),
                Evaluation::Rejected(r) => prop_assert_eq!(Verdict::Rejected(rejection_to_model(&r)), verdict),
                Evaluation::NeedsBody(h) => return Err(TestCaseError::fail(format!("body {h:?} was never made"))),
            }
            prop_assert_eq!(kernel.document_count(), model.documents().count());
            for (path, doc) in kernel.documents() {
                let md = model.document(path.as_str()).expect("same documents");
                prop_assert_eq!((doc.entry.version, doc.entry.first_version, doc.entry.archived, doc.entry.body_hash.0), (md.version, md.first_version, md.archived, md.body_hash));
            }
        }
    }
}
