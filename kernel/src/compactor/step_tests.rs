//! One test per rule of bounded steps (SPEC 10.11): the boundary depends only on the log
//! and the newest checkpoint, a step's checkpoint is the world exactly as at its
//! boundary, a backlog folds in steps of at most `checkpoint_step_docs_max` documents,
//! a backstop that takes over a backlog does the same, and a store whose step a racer
//! wrote leaves the rest of the run to it.

use super::ledger::Ledger;
use crate::checkpoint::{fold, load, FoldSource, ObjectKind};
use crate::config::{CompactionRole, Config};
use crate::format::{Checkpoint, HistoryBlock, Slot};
use crate::hash::Hash32;
use crate::testkit::{is_checkpoint_create, keys, publish, Harness, MemStore, Peer};
use crate::world::{Expected, Receipt, StateView, WorldState};
use bytes::Bytes;
use core::time::Duration;

/// The least a step may hold: a slot's most members.
const STEP: usize = crate::format::SLOT_MEMBERS_MAX;

/// Checkpoints every 4 slots, at once, in steps of `STEP` documents.
fn stepping(role: CompactionRole) -> Config {
    Config {
        compaction: role,
        checkpoint_slots: 4,
        checkpoint_jitter: Duration::ZERO,
        checkpoint_step_docs_max: STEP,
        ..Config::default()
    }
}

/// A store holding checkpoint zero only, and a peer writing into it.
fn empty_world() -> (Harness, Peer) {
    let h = Harness::opened(Config::default());
    let peer = Peer::following(&h);
    (h, peer)
}

/// Plants `slots` slots of `per_slot` new documents each (ops from `first_op`), plus a
/// blind update of the first document in every slot after the first; returns them with
/// their hashes.
fn plant_backlog(
    h: &mut Harness,
    peer: &mut Peer,
    first_op: u128,
    slots: u128,
    per_slot: u128,
) -> Vec<(Slot, Hash32)> {
    let mut planted = Vec::new();
    for s in 0..slots {
        let mut writes = Vec::new();
        for j in 0..per_slot {
            let n = first_op + s * per_slot + j;
            writes.push((n, publish(&format!("/b/{n}.md"), &format!("body {n}"), Expected::Any)));
        }
        if s > 0 {
            let update = format!("/b/{first_op}.md");
            writes.push((first_op + 1_000_000 + s, publish(&update, &format!("again {s}"), Expected::Any)));
        }
        let (slot, bodies) = peer.build(&h.store, &writes);
        let bytes = peer.plant(&mut h.store, h.now, &slot, &bodies);
        planted.push((slot, Hash32::of(&bytes)));
    }
    planted
}

/// `base` with the planted slots through sequence `at` applied, every version held.
fn world_at(base: &WorldState, planted: &[(Slot, Hash32)], at: u64) -> WorldState {
    let mut w = base.clone();
    for (slot, hash) in planted.iter().take_while(|(s, _)| s.last_sequence() <= at) {
        w.apply_slot(slot, *hash).expect("the peer's slots apply");
    }
    assert_eq!(w.sequence(), at, "a step ends at a slot's end");
    w
}

fn full_checkpoints(store: &MemStore) -> Vec<u64> {
    let k = keys();
    store.objects.keys().filter_map(|key| k.parse_checkpoint(key)).filter(|s| *s > 1).collect()
}

/// The checkpoint at `next_sequence`, loaded whole (every history block read).
fn loaded(store: &MemStore, next_sequence: u64) -> WorldState {
    let key = keys().checkpoint(next_sequence);
    let c = Checkpoint::decode(&store.bytes(&key).expect("stored")).expect("decodes");
    load(&key, c, &keys(), &|k| store.bytes(k)).expect("a whole checkpoint")
}

/// Two worlds hold the same content: sequence, anchor, policy, every document with all
/// its retained versions, and the receipts.
fn same_content(a: &WorldState, b: &WorldState) {
    assert_eq!((a.sequence(), a.tip_hash()), (b.sequence(), b.tip_hash()));
    assert_eq!(StateView::policy(a), StateView::policy(b));
    assert!(a.documents().eq(b.documents()), "documents differ at {}", a.sequence());
    let receipts = |w: &WorldState| w.receipts_since(1).map(|r| r.receipt.clone()).collect::<Vec<Receipt>>();
    assert_eq!(receipts(a), receipts(b));
}

/// Applies the planted slots to a copy of `base`, recording each in a ledger first, as a
/// snapshot does, in installments of `sizes`; after each installment the boundary the
/// ledger finds for a step of `docs_max`.
fn installments(
    base: &WorldState,
    planted: &[(Slot, Hash32)],
    sizes: &[usize],
    docs_max: usize,
) -> (WorldState, Ledger, Vec<Option<u64>>) {
    let mut world = base.clone();
    let mut ledger = Ledger::new(&world);
    let mut seen = Vec::new();
    let mut slots = planted.iter();
    for &n in sizes {
        for (slot, hash) in slots.by_ref().take(n) {
            ledger.record(&world, slot, *hash);
            world.apply_slot(slot, *hash).expect("applies");
        }
        seen.push(ledger.boundary(docs_max).map(|b| b.sequence));
    }
    (world, ledger, seen)
}

#[test]
fn the_step_boundary_depends_only_on_the_log_and_the_newest_checkpoint() {
    let (mut h, mut peer) = empty_world();
    let base = peer.world.clone();
    // Three new documents a slot and one rewritten: 3, 6, 9, 12 ... changed documents.
    let planted = plant_backlog(&mut h, &mut peer, 1, 8, 3);
    let s_prime = planted[2].0.last_sequence();
    // One replica applies the whole log at once; another sees it arrive in pieces, and
    // before the ninth document it finds no boundary: the step would end at its tip.
    let (a, ledger_a, seen_a) = installments(&base, &planted, &[8], 9);
    let (b, ledger_b, seen_b) = installments(&base, &planted, &[1, 1, 3, 3], 9);
    assert_eq!(seen_a, vec![Some(s_prime)]);
    assert_eq!(seen_b, vec![None, None, Some(s_prime), Some(s_prime)]);
    // A step that would pass the limit ends at the slot before: 10 is not reached at 9.
    assert_eq!(ledger_a.boundary(10).map(|b| b.sequence), Some(s_prime));
    // Both fold the same bytes, and so does a replica whose tip is the boundary itself.
    let at = |l: &Ledger, w: &WorldState| {
        let folded = fold(&l.world_at(w, l.boundary(9).expect("a boundary")), &|_| None).expect("held");
        (folded.checkpoint, folded.objects.into_iter().map(|o| o.bytes).collect::<Vec<Bytes>>())
    };
    let at_tip = fold(&world_at(&base, &planted, s_prime), &|_| None).expect("held");
    let at_tip = (at_tip.checkpoint, at_tip.objects.into_iter().map(|o| o.bytes).collect::<Vec<Bytes>>());
    assert_eq!(at(&ledger_a, &a), at_tip);
    assert_eq!(at(&ledger_b, &b), at_tip);
}

#[test]
fn the_world_at_a_boundary_is_the_world_exactly_as_it_was_there() {
    let (mut h, mut peer) = empty_world();
    let base = peer.world.clone();
    let planted = plant_backlog(&mut h, &mut peer, 1, 8, 3);
    let (world, mut ledger, _) = installments(&base, &planted, &[8], 9);
    let first = ledger.boundary(9).expect("a boundary");
    let view = ledger.world_at(&world, first);
    let expected = world_at(&base, &planted, first.sequence);
    assert_eq!(view.document_count(), expected.document_count() as u64);
    assert!(view.documents().eq(expected.documents()));
    assert!(view.receipts_since(1).eq(expected.receipts_since(1)));
    assert_eq!(view.policy(), StateView::policy(&expected));
    // Counted from the boundary, the next step ends where nine more documents changed.
    let folded = fold(&view, &|_| None).expect("held");
    ledger.rebase(&world, first.sequence, &folded.adopt);
    let second = ledger.boundary(9).expect("a second boundary");
    // The first document, rewritten in every slot, counts again: 4, 7, and 10 would pass.
    assert_eq!(second.sequence, planted[4].0.last_sequence());
    // Its touched documents now name the first step's blocks: folded with those blocks,
    // it makes the bytes of the world at the second boundary.
    let blocks: std::collections::BTreeMap<Hash32, HistoryBlock> = folded
        .objects
        .iter()
        .filter(|o| o.kind == ObjectKind::History)
        .map(|o| (o.name, HistoryBlock::decode(&o.bytes).expect("a block")))
        .collect();
    let view = ledger.world_at(&world, second);
    assert!(
        view.documents().any(|(_, d)| !d.stored_blocks().is_empty()),
        "an image adopted the step's blocks"
    );
    let stepped = fold(&view, &|h| blocks.get(h)).expect("the blocks it needs");
    let expected = fold(&world_at(&base, &planted, second.sequence), &|_| None).expect("held");
    assert_eq!(stepped.checkpoint, expected.checkpoint);
    let bytes = |f: &crate::checkpoint::Folded| f.objects.iter().map(|o| o.bytes.clone()).collect::<Vec<_>>();
    assert_eq!(bytes(&stepped), bytes(&expected));
}

#[test]
fn a_backlog_of_n_steps_folds_in_n_steps_each_its_boundary_s_world() {
    let (mut h, mut peer) = empty_world();
    let base = peer.world.clone();
    // 25 slots of 32 new documents: 800, three full steps of 256 and a last of 32.
    let planted = plant_backlog(&mut h, &mut peer, 1, 25, 32);
    let mut r = Harness::with_store(stepping(CompactionRole::Eager), h.store.clone(), 2);
    r.run();
    let stats = r.replica.compactor_stats().clone();
    assert_eq!((stats.runs, stats.steps, stats.written), (1, 4, 4), "{stats:?}");
    let boundaries: Vec<u64> = full_checkpoints(&r.store);
    // Each step ends where the changed documents would pass 256: the first at 8 slots of
    // 32 new documents; each later one at 7 slots, the rewritten first document counting
    // again in each (33, 65, ... 225, and the next slot would make 257).
    let ends: Vec<u64> = [7, 14, 21, 24].iter().map(|&i| planted[i].0.last_sequence() + 1).collect();
    assert_eq!(boundaries, ends);
    for next in boundaries {
        same_content(&loaded(&r.store, next), &world_at(&base, &planted, next - 1));
    }
}

#[test]
fn replicas_that_saw_the_log_arrive_differently_write_identical_steps() {
    let (mut h, mut peer) = empty_world();
    plant_backlog(&mut h, &mut peer, 1, 2, 32);
    // `y` opens on two slots, below the cadence; the rest arrives while it writes.
    let config = Config { checkpoint_slots: 20, ..stepping(CompactionRole::Eager) };
    // (No timer fires: the interval would checkpoint the two slots.)
    let mut y = Harness::with_store(config.clone(), h.store.clone(), 2);
    y.settle();
    assert!(y.replica.is_open());
    plant_backlog(&mut y, &mut peer, 10_000, 23, 32);
    let w = y.publish(1 << 40, "/y.md", "y");
    y.settle();
    assert!(matches!(y.reply(w), Some(Ok(_))));
    assert!(y.replica.compactor_stats().steps >= 3, "{:?}", y.replica.compactor_stats());
    // `x` opens on the same log with no full checkpoint in the bucket: it replays it all.
    let mut bucket = y.store.clone();
    let written: Vec<String> = full_checkpoints(&y.store).iter().map(|s| keys().checkpoint(*s)).collect();
    for key in &written {
        bucket.objects.remove(key);
    }
    let mut x = Harness::with_store(config, bucket, 3);
    x.run();
    // `y`'s run stepped towards the tip it looked at mid catch-up; `x`'s to the tip.
    assert!(full_checkpoints(&x.store).starts_with(&full_checkpoints(&y.store)));
    for key in &written {
        assert_eq!(x.store.bytes(key), y.store.bytes(key), "{key}");
    }
}

#[test]
fn a_backstop_that_takes_over_a_backlog_folds_it_in_bounded_steps() {
    let (mut h, mut peer) = empty_world();
    let base = peer.world.clone();
    let planted = plant_backlog(&mut h, &mut peer, 1, 25, 32);
    let mut b = Harness::with_store(stepping(CompactionRole::Backstop), h.store.clone(), 2);
    // Settled, not run: `run` fires timers, and a cadence on the backstop would look again.
    b.settle();
    assert!(full_checkpoints(&b.store).is_empty(), "the newest checkpoint is young: it only looks");
    b.advance(Config::default().backstop_after);
    b.run();
    let stats = b.replica.compactor_stats().clone();
    assert_eq!((stats.steps, stats.written), (4, 4), "{stats:?}");
    for next in full_checkpoints(&b.store) {
        same_content(&loaded(&b.store, next), &world_at(&base, &planted, next - 1));
    }
}

#[test]
fn a_backstop_whose_step_a_racer_wrote_leaves_the_rest_of_the_backlog_to_it() {
    let (mut h, mut peer) = empty_world();
    let planted = plant_backlog(&mut h, &mut peer, 1, 25, 32);
    let first = planted[7].0.last_sequence() + 1;
    // A racer's run over the same backlog: its first step's bytes.
    let mut racer = Harness::with_store(stepping(CompactionRole::Eager), h.store.clone(), 2);
    racer.run();
    let racer_bytes = racer.store.bytes(&keys().checkpoint(first)).expect("the racer's first step");
    let mut b = Harness::with_store(stepping(CompactionRole::Backstop), h.store.clone(), 3);
    b.settle();
    b.advance(Config::default().backstop_after);
    b.replica.handle_timeout(b.now);
    b.drain();
    b.deliver_until(|op| is_checkpoint_create(op) && op.key() == keys().checkpoint(first));
    b.store.put(b.now, keys().checkpoint(first), racer_bytes);
    b.settle();
    let stats = b.replica.compactor_stats().clone();
    assert_eq!((stats.steps, stats.identical_races, stats.written), (1, 1, 0), "{stats:?}");
    assert_eq!(full_checkpoints(&b.store), vec![first], "it stepped no further");
}

/// The boundary as first written: a set of the slot's new paths for every slot. The
/// ledger's own must find the same.
fn boundary_by_sets(slots: &[(Slot, Hash32)], docs_max: usize) -> Option<u64> {
    use std::collections::BTreeSet;
    let mut changed: BTreeSet<&crate::world::Path> = BTreeSet::new();
    let mut end: Option<usize> = None;
    for (i, (slot, _)) in slots.iter().enumerate() {
        let new: BTreeSet<&crate::world::Path> = slot
            .members
            .iter()
            .filter_map(|m| m.entry.as_ref().map(|e| &e.path))
            .filter(|p| !changed.contains(p))
            .collect();
        if changed.len() + new.len() > docs_max {
            end = Some(i.saturating_sub(1));
            break;
        }
        changed.extend(new);
        if changed.len() == docs_max {
            end = Some(i);
            break;
        }
    }
    let i = end?;
    (i + 1 < slots.len()).then(|| slots[i].0.last_sequence())
}

#[test]
fn the_boundary_is_the_one_sets_of_paths_find() {
    let (mut h, mut peer) = empty_world();
    let base = peer.world.clone();
    let planted = plant_backlog(&mut h, &mut peer, 1, 12, 5);
    for docs_max in [STEP, STEP + 1, 9, 10, 11, 20, 33, 58, 59, 60, 1_000] {
        let (_, ledger, _) = installments(&base, &planted, &[planted.len()], docs_max);
        let found = ledger.boundary(docs_max).map(|b| b.sequence);
        assert_eq!(found, boundary_by_sets(&planted, docs_max), "docs_max {docs_max}");
    }
}

#[test]
fn every_step_after_a_rebase_folds_the_world_exactly_as_at_its_boundary() {
    let (mut h, mut peer) = empty_world();
    let base = peer.world.clone();
    let planted = plant_backlog(&mut h, &mut peer, 1, 12, 5);
    let (world, mut ledger, _) = installments(&base, &planted, &[planted.len()], 9);
    let mut blocks: std::collections::BTreeMap<Hash32, HistoryBlock> = Default::default();
    let mut steps = 0;
    while let Some(at) = ledger.boundary(9) {
        let view = ledger.world_at(&world, at);
        let expected = world_at(&base, &planted, at.sequence);
        // Images after a rebase store their versions in the step's blocks: the entries are
        // compared here, and the versions by the bytes the fold makes of them.
        let entries =
            |w: &dyn FoldSource| w.documents().map(|(p, d)| (p.clone(), d.entry.clone())).collect::<Vec<_>>();
        assert_eq!(entries(&view), entries(&expected), "documents at {}", at.sequence);
        assert!(view.receipts_since(1).eq(expected.receipts_since(1)), "receipts at {}", at.sequence);
        assert_eq!(view.policy(), StateView::policy(&expected));
        let folded = fold(&view, &|h| blocks.get(h)).expect("the blocks it needs");
        let held = fold(&expected, &|_| None).expect("held");
        assert_eq!(folded.checkpoint, held.checkpoint, "step to {}", at.sequence);
        let bytes =
            |f: &crate::checkpoint::Folded| f.objects.iter().map(|o| o.bytes.clone()).collect::<Vec<_>>();
        assert_eq!(bytes(&folded), bytes(&held), "step to {}", at.sequence);
        for o in folded.objects.iter().filter(|o| o.kind == ObjectKind::History) {
            blocks.insert(o.name, HistoryBlock::decode(&o.bytes).expect("a block"));
        }
        ledger.rebase(&world, at.sequence, &folded.adopt);
        steps += 1;
    }
    assert!(steps >= 4, "{steps} steps");
}

#[test]
fn images_adopt_a_folds_blocks_in_path_order_as_in_any_order() {
    let (mut h, mut peer) = empty_world();
    let base = peer.world.clone();
    let planted = plant_backlog(&mut h, &mut peer, 1, 6, 5);
    let world = world_at(&base, &planted, planted[5].0.last_sequence());
    let adopt = fold(&world, &|_| None).expect("held").adopt;
    assert!(adopt.len() > 10);
    // Every other document imaged, one absent: as a ledger holds them.
    let mut images: std::collections::BTreeMap<crate::world::Path, Option<crate::world::Document>> =
        world.documents().step_by(2).map(|(p, d)| (p.clone(), Some(d.clone()))).collect();
    images.insert(crate::world::Path::parse("/absent.md").expect("a path"), None);
    let mut in_order = images.clone();
    super::ledger::adopt_into(&mut in_order, &adopt);
    let mut reversed = images.clone();
    super::ledger::adopt_into(&mut reversed, &adopt.iter().rev().cloned().collect::<Vec<_>>());
    assert_eq!(in_order, reversed);
    assert_ne!(in_order, images, "the images adopted blocks");
}
