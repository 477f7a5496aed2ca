//! A subscription to a world's change feed.

use crate::error::Error;
use crate::runtime::{Command, Stopped, WatchItem};
use slotlog_kernel::ids::RequestId;
use slotlog_kernel::world::Receipt;
use std::collections::VecDeque;
use tokio::sync::mpsc;

/// Every change after a cursor, in sequence order, exactly once. Taking events gives
/// the world credit to send more, so a slow watcher is read from slots, never dropped.
pub struct Watch {
    id: RequestId,
    rx: mpsc::Receiver<WatchItem>,
    commands: mpsc::Sender<Command>,
    buffered: VecDeque<Receipt>,
    stopped: Stopped,
}

impl Watch {
    pub(crate) async fn start(
        mut rx: mpsc::Receiver<WatchItem>,
        commands: mpsc::Sender<Command>,
        stopped: Stopped,
    ) -> Result<Watch, Error> {
        match rx.recv().await {
            Some(WatchItem::Started(id)) => {
                Ok(Watch { id, rx, commands, buffered: VecDeque::new(), stopped })
            }
            Some(WatchItem::Ended(end)) => Err(Error::Watch(end)),
            Some(WatchItem::Changes(_)) => unreachable!("a watch starts before its changes"),
            None => Err(crate::world::gone(&stopped)),
        }
    }

    /// The next change; `Err(Watch(Resync..))` when the cursor is too old, `Err(Closed)`
    /// when the world closed, `Err(Store(..))` when the store stopped it.
    pub async fn next(&mut self) -> Result<Receipt, Error> {
        loop {
            if let Some(r) = self.buffered.pop_front() {
                return Ok(r);
            }
            match self.rx.recv().await {
                Some(WatchItem::Changes(events)) => {
                    let n = events.len() as u32;
                    self.buffered.extend(events);
                    let _ = self.commands.try_send(Command::WatchCredit { id: self.id, events: n });
                }
                Some(WatchItem::Ended(end)) => return Err(Error::Watch(end)),
                Some(WatchItem::Started(_)) => unreachable!("started once"),
                None => return Err(crate::world::gone(&self.stopped)),
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.commands.try_send(Command::Unwatch { id: self.id });
    }
}
