//! A subscription to a world's change feed.

use crate::error::Error;
use crate::runtime::{Command, Stopped, WatchItem};
use slotlog_kernel::ids::RequestId;
use slotlog_kernel::world::Receipt;
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// Every change after a cursor, in sequence order, exactly once. Taking events gives
/// the world credit to send more, so a slow watcher is read from slots, never dropped.
pub struct Watch {
    id: RequestId,
    rx: mpsc::Receiver<WatchItem>,
    commands: mpsc::Sender<Command>,
    buffered: VecDeque<Receipt>,
    stopped: Stopped,
    /// The stream has returned the error that ended it.
    ended: bool,
}

impl Watch {
    pub(crate) async fn start(
        mut rx: mpsc::Receiver<WatchItem>,
        commands: mpsc::Sender<Command>,
        stopped: Stopped,
    ) -> Result<Watch, Error> {
        match rx.recv().await {
            Some(WatchItem::Started(id)) => {
                Ok(Watch { id, rx, commands, buffered: VecDeque::new(), stopped, ended: false })
            }
            Some(WatchItem::Ended(end)) => Err(Error::Watch(end)),
            Some(WatchItem::Changes(_)) => unreachable!("a watch starts before its changes"),
            None => Err(crate::world::gone(&stopped)),
        }
    }

    /// The next change; `Err(Watch(Resync..))` when the cursor is too old, `Err(Closed)`
    /// when the world closed, `Err(Store(..))` when the store stopped it. The watch is
    /// also a [`Stream`](futures_core::Stream) of the same answers, ending after the
    /// first error.
    pub async fn next(&mut self) -> Result<Receipt, Error> {
        std::future::poll_fn(|cx| self.poll_change(cx)).await
    }

    fn poll_change(&mut self, cx: &mut Context<'_>) -> Poll<Result<Receipt, Error>> {
        loop {
            if let Some(r) = self.buffered.pop_front() {
                return Poll::Ready(Ok(r));
            }
            match std::task::ready!(self.rx.poll_recv(cx)) {
                Some(WatchItem::Changes(events)) => {
                    let n = events.len() as u32;
                    self.buffered.extend(events);
                    let _ = self.commands.try_send(Command::WatchCredit { id: self.id, events: n });
                }
                Some(WatchItem::Ended(end)) => return Poll::Ready(Err(Error::Watch(end))),
                Some(WatchItem::Started(_)) => unreachable!("started once"),
                None => return Poll::Ready(Err(crate::world::gone(&self.stopped))),
            }
        }
    }
}

/// Every change, then the error that ended the watch, then the end of the stream.
/// Cancel-safe: a change is taken from the watch only when it is returned.
impl futures_core::Stream for Watch {
    type Item = Result<Receipt, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        let change = std::task::ready!(this.poll_change(cx));
        this.ended = change.is_err();
        Poll::Ready(Some(change))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.commands.try_send(Command::Unwatch { id: self.id });
    }
}
