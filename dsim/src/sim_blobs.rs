//! The simulated GCS as a blob backend: the same pure model (`slotlog_sim::gcs`) the
//! discrete-event simulation uses, driven by the runtime's clock. Each call sleeps until
//! the model's apply instant, applies, and sleeps until its reply instant.
//!
//! Under madsim the calls run on a store node of their own, so a client node that is
//! killed mid-call does not stop its calls landing: like a real bucket, the store does
//! not know its caller died.

use slotlog::{BlobFuture, Blobs};
use slotlog_kernel::blob::{BlobError, BlobOp, BlobResult};
use slotlog_kernel::time::Instant;
use slotlog_sim::gcs::{PlannedReply, SimGcs};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// The simulated GCS behind the driver's [`Blobs`] trait: every handle made by
/// [`SimBlobs::share`] reaches the same store.
pub struct SimBlobs {
    gcs: Arc<Mutex<SimGcs>>,
    /// The store's clock zero: creation times are measured from it.
    base: tokio::time::Instant,
    #[cfg(madsim)]
    node: madsim::runtime::NodeHandle,
}

impl SimBlobs {
    /// A backend over `gcs`, timed from `base`. Under madsim, calls run on a node of
    /// their own, created here.
    pub fn new(gcs: Arc<Mutex<SimGcs>>, base: tokio::time::Instant) -> SimBlobs {
        SimBlobs {
            gcs,
            base,
            #[cfg(madsim)]
            node: madsim::runtime::Handle::current().create_node().name("gcs").build(),
        }
    }

    /// A handle on the same store from another node.
    pub fn share(&self) -> SimBlobs {
        SimBlobs {
            gcs: self.gcs.clone(),
            base: self.base,
            #[cfg(madsim)]
            node: self.node.clone(),
        }
    }

    /// The store itself, for the checker to read its objects after the run.
    pub fn gcs(&self) -> &Arc<Mutex<SimGcs>> {
        &self.gcs
    }

    fn spawn(&self, f: impl std::future::Future<Output = ()> + Send + 'static) {
        #[cfg(madsim)]
        self.node.spawn(f);
        #[cfg(not(madsim))]
        tokio::spawn(f);
    }
}

fn now(base: tokio::time::Instant) -> Instant {
    Instant::from_micros(base.elapsed().as_micros() as u64)
}

async fn sleep_to(base: tokio::time::Instant, at: Instant) {
    tokio::time::sleep_until(base + Duration::from_micros(at.as_micros())).await;
}

impl Blobs for SimBlobs {
    fn execute(&self, op: BlobOp) -> BlobFuture {
        let (tx, rx) = oneshot::channel::<BlobResult>();
        let (gcs, base) = (self.gcs.clone(), self.base);
        self.spawn(async move {
            let plan = gcs.lock().expect("store lock").submit(now(base), &op);
            let mut applied = None;
            let mut reply = Some(tx);
            if let Some(at) = plan.apply_at {
                if at > plan.reply_at {
                    // A create that lands after its caller gave up.
                    sleep_to(base, plan.reply_at).await;
                    if let (Some(tx), PlannedReply::Fault(e)) = (reply.take(), plan.reply) {
                        let _ = tx.send(Err(e));
                    }
                }
                sleep_to(base, at).await;
                applied = Some(gcs.lock().expect("store lock").apply(now(base), &op));
            }
            let Some(tx) = reply else { return };
            sleep_to(base, plan.reply_at).await;
            let result = match plan.reply {
                PlannedReply::Applied => applied.expect("an applied reply was applied"),
                PlannedReply::Fault(e) => Err(e),
            };
            let _ = tx.send(result);
        });
        Box::pin(async move { rx.await.unwrap_or(Err(BlobError::Timeout)) })
    }

    fn kind(&self) -> &'static str {
        "sim"
    }
}
