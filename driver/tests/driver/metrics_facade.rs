//! The driver reports through the `metrics` facade: with a recorder installed, store
//! calls, writes and the sequence committed through are counted under their names.

use metrics::{Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder};
use metrics::{SharedString, Unit};
use object_store::memory::InMemory;
use slotlog::{Expected, World};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Every value recorded, by name and labels (`name{k=v,...}`).
#[derive(Clone, Default)]
struct Recorded(Arc<Mutex<BTreeMap<String, f64>>>);

struct Cell(Recorded, String);

impl CounterFn for Cell {
    fn increment(&self, n: u64) {
        *self.0 .0.lock().unwrap().entry(self.1.clone()).or_default() += n as f64;
    }
    fn absolute(&self, n: u64) {
        self.0 .0.lock().unwrap().insert(self.1.clone(), n as f64);
    }
}

impl GaugeFn for Cell {
    fn increment(&self, v: f64) {
        *self.0 .0.lock().unwrap().entry(self.1.clone()).or_default() += v;
    }
    fn decrement(&self, v: f64) {
        *self.0 .0.lock().unwrap().entry(self.1.clone()).or_default() -= v;
    }
    fn set(&self, v: f64) {
        self.0 .0.lock().unwrap().insert(self.1.clone(), v);
    }
}

impl HistogramFn for Cell {
    fn record(&self, _: f64) {
        *self.0 .0.lock().unwrap().entry(self.1.clone()).or_default() += 1.0; // samples taken
    }
}

impl Recorded {
    fn cell(&self, key: &Key) -> Arc<Cell> {
        let labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
        Arc::new(Cell(self.clone(), format!("{}{{{}}}", key.name(), labels.join(","))))
    }

    fn get(&self, name: &str) -> f64 {
        self.0.lock().unwrap().get(name).copied().unwrap_or(0.0)
    }
}

impl Recorder for Recorded {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.cell(key))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.cell(key))
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.cell(key))
    }
}

/// The recorder is this thread's alone for the test (`with_local_recorder`), on a
/// current-thread runtime, so every task of the world records into it and no other test
/// does, whether the tests share a process or not.
#[test]
fn store_calls_writes_and_the_committed_sequence_are_recorded() {
    let recorded = Recorded::default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    metrics::with_local_recorder(&recorded, || {
        runtime.block_on(async {
            let world = World::builder(Arc::new(InMemory::new())).prefix("w").open().await.unwrap();
            for i in 0..5 {
                world.publish(&format!("/d{i}"), "x", Expected::Absent).await.unwrap();
            }
            world.publish("/d0", "y", Expected::Absent).await.expect_err("refused: /d0 exists");
            world.close().await;
        })
    });
    assert_eq!(recorded.get("slotlog_writes_total{result=committed}"), 5.0);
    assert_eq!(recorded.get("slotlog_writes_total{result=rejected}"), 1.0);
    let creates = recorded.get("slotlog_blob_calls_total{kind=create,outcome=ok}");
    assert!(creates >= 6.0, "the marker, checkpoint zero, bodies and five slots: {creates}");
    assert_eq!(recorded.get("slotlog_blob_call_seconds{kind=create}"), creates, "a time for each create");
    assert!(recorded.get("slotlog_committed_through{}") >= 5.0, "{:?}", recorded.0.lock().unwrap());
    // Five writes one at a time: five slots won, each a batch of one; none lost, none queued.
    assert_eq!(recorded.get("slotlog_slots_total{outcome=won}"), 5.0);
    assert_eq!(recorded.get("slotlog_slot_members{}"), 5.0, "a batch size for each slot won");
    assert_eq!(recorded.get("slotlog_slots_total{outcome=lost}"), 0.0);
    assert_eq!(recorded.get("slotlog_queue_depth{}"), 0.0);
}
