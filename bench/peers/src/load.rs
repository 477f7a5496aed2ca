//! The closed loop: each writer sends one write, waits for its durable acknowledgement,
//! and sends the next, for a warm-up and then a measured window. Only writes answered
//! inside the window count; their latencies go to one histogram.

use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;
use tokio::time::{timeout_at, Instant};

/// One closed-loop writer of a system: `write` returns once the write is durable (or
/// with a short label naming why it failed).
pub trait Writer: Send + 'static {
    fn write(&mut self, seq: u64) -> impl Future<Output = Result<(), String>> + Send;
}

/// What a run measured.
pub struct Measured {
    /// Writes acknowledged inside the window.
    pub writes: u64,
    /// The window's length.
    pub window: Duration,
    /// Acknowledgement latency of those writes, in microseconds.
    pub latency_us: Histogram<u64>,
    /// Writes that failed inside the window, by label.
    pub errors: BTreeMap<String, u64>,
    /// Writes acknowledged inside the window, per writer (in writer order).
    pub per_writer: Vec<u64>,
}

impl Measured {
    pub fn writes_per_s(&self) -> f64 {
        self.writes as f64 / self.window.as_secs_f64()
    }

    pub fn quantile_ms(&self, q: f64) -> f64 {
        if self.latency_us.is_empty() {
            return f64::NAN;
        }
        self.latency_us.value_at_quantile(q) as f64 / 1_000.0
    }
}

fn histogram() -> Histogram<u64> {
    // 1 µs to 10 minutes, three significant figures.
    Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid histogram bounds")
}

/// Runs `writers` in a closed loop from `start`: `warmup`, then `window` measured. A
/// write still waiting when the window closes is dropped uncounted.
pub async fn closed_loop<W: Writer>(
    writers: Vec<W>,
    start: Instant,
    warmup: Duration,
    window: Duration,
) -> Measured {
    let measure_from = start + warmup;
    let end = measure_from + window;
    let mut tasks = Vec::with_capacity(writers.len());
    for mut writer in writers {
        tasks.push(tokio::spawn(async move {
            let mut latency_us = histogram();
            let mut errors: BTreeMap<String, u64> = BTreeMap::new();
            let mut writes = 0u64;
            let mut seq = 0u64;
            loop {
                let sent = Instant::now();
                if sent >= end {
                    break;
                }
                let answer = match timeout_at(end, writer.write(seq)).await {
                    Ok(answer) => answer,
                    Err(_) => break,
                };
                seq += 1;
                let answered = Instant::now();
                if answered < measure_from {
                    continue;
                }
                match answer {
                    Ok(()) => {
                        writes += 1;
                        let us = answered.duration_since(sent).as_micros() as u64;
                        latency_us.saturating_record(us.max(1));
                    }
                    Err(label) => *errors.entry(label).or_default() += 1,
                }
            }
            (writes, latency_us, errors)
        }));
    }
    let mut measured = Measured {
        writes: 0,
        window,
        latency_us: histogram(),
        errors: BTreeMap::new(),
        per_writer: Vec::new(),
    };
    for task in tasks {
        let (writes, latency_us, errors) = task.await.expect("a writer task panicked");
        measured.writes += writes;
        measured.per_writer.push(writes);
        measured.latency_us.add(&latency_us).expect("histograms with the same bounds");
        for (label, n) in errors {
            *measured.errors.entry(label).or_default() += n;
        }
    }
    measured
}

/// A 256-byte value unique to (writer, seq): content-addressed stores must not find it
/// already stored.
pub fn value(writer: usize, seq: u64, len: usize) -> Vec<u8> {
    let mut out = format!("w{writer} s{seq} ").into_bytes();
    let mut x = (writer as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seq.wrapping_add(0x2545_F491_4F6C_DD1D);
    while out.len() < len {
        // xorshift64*: filler that does not compress to nothing.
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}
