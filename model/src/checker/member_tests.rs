//! A slot member is judged against what the model derives from the same mutation: its
//! version record too, field by field, not only whether it has one.

use super::{member_differs, MemberDiff};
use crate::{ModelApplied, ModelWorld, Verdict};
use bytes::Bytes;
use slotlog_kernel::hash::Hash32;
use slotlog_kernel::ids::{OperationId, WorldId};
use slotlog_kernel::world::{evaluate, validate, Evaluation, Expected, Mutation, SlotMember, WorldState};

/// The kernel's member and the model's verdict for one mutation on an empty world.
fn both(m: Mutation) -> (SlotMember, ModelApplied) {
    let op_id = OperationId([7; 16]);
    let model = match ModelWorld::new().evaluate(op_id, &m) {
        Verdict::Applied(a) => a,
        other => panic!("the model did not apply it: {other:?}"),
    };
    let state = WorldState::genesis(WorldId([1; 16]), Hash32::of(b"marker"));
    let valid = validate(&m).expect("a valid mutation");
    match evaluate(&state, op_id, &valid, 0, &|_| None) {
        Evaluation::Applied { member, .. } => (member, model),
        _ => panic!("the kernel did not apply it"),
    }
}

fn publish() -> Mutation {
    Mutation::Publish {
        path: "/a.md".to_string(),
        body: Bytes::from_static(b"hello"),
        catalog: None,
        expected: Expected::Absent,
    }
}

#[test]
fn a_member_as_the_model_derives_it_passes() {
    let (member, model) = both(publish());
    assert_eq!(member_differs(&member, &model), None);
}

#[test]
fn a_version_record_with_any_field_changed_is_caught() {
    let (member, model) = both(publish());
    let changes: [fn(&mut slotlog_kernel::world::VersionRecord); 5] = [
        |v| v.version += 1,
        |v| v.sequence += 1,
        |v| v.op_id = OperationId([8; 16]),
        |v| v.body_hash = Hash32::of(b"other"),
        |v| v.body_len += 1,
    ];
    for change in changes {
        let mut bad = member.clone();
        change(bad.version.as_mut().expect("a publish has a version record"));
        assert!(
            matches!(member_differs(&bad, &model), Some(MemberDiff::VersionRecord { .. })),
            "{:?}",
            bad.version
        );
    }
    let mut kind = member.clone();
    kind.version.as_mut().unwrap().kind = slotlog_kernel::world::VersionKind::Append;
    assert!(matches!(member_differs(&kind, &model), Some(MemberDiff::VersionRecord { .. })));
}

#[test]
fn a_missing_version_record_is_caught() {
    let (mut member, model) = both(publish());
    member.version = None;
    assert_eq!(member_differs(&member, &model), Some(MemberDiff::VersionRecordPresence));
}
