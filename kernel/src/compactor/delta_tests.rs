//! Deltas (SPEC 10.16), one test per rule: a step over a full checkpoint writes the
//! documents it changed as deltas and names the shards again; the merge rule writes every
//! shard anew once the deltas reach their bound; a cold start over shards and deltas is
//! the writer's world; a store that steps over the same checkpoint writes the same bytes.

use super::tests::{compacting, full_checkpoints, same_world, write_docs};
use crate::blob::BlobOp;
use crate::config::Config;
use crate::format::{Checkpoint, Marker, MergeRule, Root};
use crate::ids::StoreId;
use crate::testkit::{keys, Harness, MemStore, WORLD};
use crate::time::Instant;
use bytes::Bytes;

fn root_at(store: &MemStore, next_sequence: u64) -> Root {
    let k = keys();
    let c = Checkpoint::decode(&store.bytes(&k.checkpoint(next_sequence)).expect("stored")).expect("decodes");
    Root::decode(&store.bytes(&k.root_object(&c.root.expect("full"))).expect("root")).expect("decodes")
}

fn shard_creates(h: &Harness) -> usize {
    h.log.iter().filter(|op| matches!(op, BlobOp::Create { .. }) && op.key().contains("/shards/")).count()
}

#[test]
fn a_step_over_a_full_checkpoint_writes_the_documents_it_changed_as_a_delta() {
    let mut h = Harness::opened(compacting(4));
    write_docs(&mut h, 1, 4);
    let first = root_at(&h.store, 5);
    assert!(first.deltas.is_empty(), "the step over checkpoint zero writes every shard");
    let shards_before = shard_creates(&h);
    write_docs(&mut h, 100, 4);
    assert_eq!(full_checkpoints(&h.store), vec![5, 9]);
    let second = root_at(&h.store, 9);
    assert_eq!(second.shards, first.shards, "the shards are named again");
    assert_eq!(second.deltas.len(), 1);
    assert_eq!(second.deltas[0].entries, 4, "the four documents the step changed");
    assert_eq!(shard_creates(&h), shards_before, "no shard written");
    assert_eq!(h.replica.compactor_stats().merged_steps, 1);
}

#[test]
fn the_merge_rule_writes_every_shard_once_the_deltas_reach_their_count() {
    let config = Config { checkpoint_deltas_max: 2, ..compacting(4) };
    let mut h = Harness::opened(config);
    for step in 0..4u128 {
        write_docs(&mut h, 1 + 100 * step, 4);
    }
    assert_eq!(full_checkpoints(&h.store), vec![5, 9, 13, 17]);
    let deltas: Vec<usize> = [5, 9, 13, 17].iter().map(|s| root_at(&h.store, *s).deltas.len()).collect();
    assert_eq!(deltas, vec![0, 1, 2, 0], "the third step over the shards merges");
    let merged = root_at(&h.store, 17);
    assert_ne!(merged.shards, root_at(&h.store, 13).shards);
    assert_eq!(h.replica.compactor_stats().merged_steps, 2);
}

#[test]
fn a_store_follows_the_merge_rule_its_worlds_marker_names_not_its_own() {
    // The world was made by a store configured for two deltas; this one is configured
    // for the default 32 and steps as the marker says all the same.
    let mut store = MemStore::default();
    let rule = MergeRule { deltas_max: 2, ..MergeRule::DEFAULT };
    let marker = Marker { world_id: WORLD, created_by: StoreId(9), merge_rule: rule };
    store.put(Instant::from_millis(0), keys().marker(), Bytes::from(marker.encode()));
    let mut h = Harness::with_store(compacting(4), store, 1);
    h.run();
    for step in 0..4u128 {
        write_docs(&mut h, 1 + 100 * step, 4);
    }
    let deltas: Vec<usize> = [5, 9, 13, 17].iter().map(|s| root_at(&h.store, *s).deltas.len()).collect();
    assert_eq!(deltas, vec![0, 1, 2, 0], "the third step over the shards merges, as the marker's rule says");
}

#[test]
fn a_genesis_fixes_the_configured_merge_rule_in_the_marker() {
    let config = Config { checkpoint_deltas_max: 2, ..compacting(4) };
    let h = Harness::opened(config);
    let marker = Marker::decode(&h.store.bytes(&keys().marker()).expect("made")).expect("decodes");
    assert_eq!(marker.merge_rule, MergeRule { deltas_max: 2, ..MergeRule::DEFAULT });
    let h = Harness::opened(compacting(4));
    let marker = Marker::decode(&h.store.bytes(&keys().marker()).expect("made")).expect("decodes");
    assert_eq!(marker.merge_rule, MergeRule::DEFAULT);
}

#[test]
fn the_merge_rule_writes_every_shard_once_the_deltas_reach_their_share_of_the_documents() {
    // 0 per mille leaves the floor: one full delta (2,048 entries) is always allowed.
    let config = Config { checkpoint_delta_entries_per_mille_max: 0, ..compacting(4) };
    let mut h = Harness::opened(config);
    write_docs(&mut h, 1, 4);
    write_docs(&mut h, 100, 4);
    assert_eq!(root_at(&h.store, 9).deltas.len(), 1, "one delta's worth is always allowed");
    let off = Config { checkpoint_deltas_max: 0, ..compacting(4) };
    let mut h = Harness::opened(off);
    write_docs(&mut h, 1, 4);
    write_docs(&mut h, 100, 4);
    assert!(root_at(&h.store, 9).deltas.is_empty(), "no deltas allowed: every step merges");
}

#[test]
fn a_cold_start_over_shards_and_deltas_is_the_writers_world() {
    let mut h = Harness::opened(compacting(4));
    write_docs(&mut h, 1, 4);
    // Documents changed twice across deltas, and new ones only a delta holds.
    for i in 0..3u128 {
        let r = h.publish(200 + i, "/d1.md", &format!("again {i}"));
        h.settle();
        assert!(matches!(h.reply(r), Some(Ok(_))));
    }
    write_docs(&mut h, 300, 5);
    let newest = *full_checkpoints(&h.store).last().expect("a checkpoint");
    assert!(root_at(&h.store, newest).deltas.len() >= 2, "{:?}", root_at(&h.store, newest));
    let mut cold = Harness::with_store(Config::default(), h.store.clone(), 2);
    cold.run();
    assert!(cold.replica.is_open());
    assert!(cold.warnings.is_empty(), "{:?}", cold.warnings);
    assert_eq!(cold.replica.compactor_stats().loaded_at_open, 1);
    same_world(h.replica.world().expect("open"), cold.replica.world().expect("open"), &h.store);
}

#[test]
fn a_store_stepping_over_the_same_checkpoint_writes_identical_bytes() {
    let mut h = Harness::opened(compacting(4));
    write_docs(&mut h, 1, 4);
    write_docs(&mut h, 100, 4);
    assert_eq!(full_checkpoints(&h.store), vec![5, 9]);
    // Another store that opened from checkpoint 5 and replayed the same four slots.
    let mut store = h.store.clone();
    let ours: Vec<String> = store
        .objects
        .keys()
        .filter(|k| *k == &keys().checkpoint(9) || k.contains("/roots/") || k.contains("/deltas/"))
        .cloned()
        .collect();
    let root_of_5 = keys().root_object(
        &Checkpoint::decode(&store.bytes(&keys().checkpoint(5)).expect("5"))
            .expect("decodes")
            .root
            .expect("full"),
    );
    for k in ours.iter().filter(|k| **k != root_of_5) {
        store.objects.remove(k);
    }
    let mut racer = Harness::with_store(compacting(4), store, 2);
    racer.run();
    assert!(racer.replica.is_open());
    assert_eq!(full_checkpoints(&racer.store), vec![5, 9], "{:?}", racer.replica.compactor_stats());
    for k in &ours {
        assert_eq!(racer.store.bytes(k), h.store.bytes(k), "{k}");
    }
}

#[test]
fn a_racer_over_other_layers_ends_the_run_and_adopts() {
    let mut h = Harness::opened(compacting(4));
    write_docs(&mut h, 1, 4);
    write_docs(&mut h, 100, 3);
    let r = h.publish(100 + 3, "/d103.md", "body 3");
    // Its checkpoint 9 would be a delta over 5; a merged one lands first.
    h.deliver_until(super::tests::is_checkpoint_create_full);
    // The same log, folded by a store whose cadence passed checkpoint 5 by (it opens on
    // the bucket without checkpoint 5): its checkpoint 9 is over checkpoint zero, so
    // every shard.
    let mut without_5 = h.store.clone();
    without_5.objects.remove(&keys().checkpoint(5));
    let mut merger = Harness::with_store(compacting(8), without_5, 2);
    merger.run();
    merger.settle();
    let theirs: Vec<String> =
        merger.store.objects.keys().filter(|k| h.store.bytes(k).is_none()).cloned().collect();
    assert!(theirs.contains(&keys().checkpoint(9)), "the logs are the same: {theirs:?}");
    let now = h.now;
    for k in &theirs {
        h.store.put(now, k.clone(), merger.store.bytes(k).expect("stored"));
    }
    h.settle();
    h.run();
    assert!(matches!(h.reply(r), Some(Ok(_))));
    assert!(h.replica.world().is_some(), "the replica stays open");
    let stats = h.replica.compactor_stats();
    assert_eq!((stats.other_layers_races, stats.adopted), (1, 1), "{stats:?}");
    assert!(root_at(&h.store, 9).deltas.is_empty(), "the merged checkpoint stands");
}
