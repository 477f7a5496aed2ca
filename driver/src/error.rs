//! The errors a `World` call can give. Every one says what happened to the call.

use slotlog_kernel::{ConfigError, FailReason, ReadError, WatchEnd, WriteError};
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The write did not commit, or may not have (`WriteError::Uncertain`).
    Write(WriteError),
    Read(ReadError),
    /// A watch ended (a resync, too many watches, a failed world).
    Watch(WatchEnd),
    /// The world failed closed: it found something in the bucket it cannot trust.
    Failed(FailReason),
    /// The configuration is out of range.
    Config(ConfigError),
    /// The world was closed; nothing more is done through this handle.
    Closed,
    /// The world's command queue is full; nothing was sent.
    Busy,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Write(e) => write!(f, "write: {e}"),
            Error::Read(e) => write!(f, "read: {e}"),
            Error::Watch(e) => write!(f, "watch ended: {e}"),
            Error::Failed(r) => write!(f, "the world failed closed: {r}"),
            Error::Config(e) => write!(f, "configuration: {e}"),
            Error::Closed => f.write_str("the world is closed"),
            Error::Busy => f.write_str("the world's command queue is full"),
        }
    }
}

impl std::error::Error for Error {
    /// The kernel error's own cause (the decode error under a failure, say): its message
    /// is already in this one's.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Write(e) => e.source(),
            Error::Read(e) => e.source(),
            Error::Watch(e) => e.source(),
            Error::Failed(r) => r.source(),
            Error::Config(_) | Error::Closed | Error::Busy => None,
        }
    }
}
