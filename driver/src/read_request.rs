//! The kernel's `Read` for each convenience read, from borrowed arguments: one place for
//! `World`'s reads at the tip and `View`'s at a pin.

use slotlog_kernel::hash::Hash32;
use slotlog_kernel::{Answer, Read};

pub(crate) fn fetch(path: &str, version: Option<u64>) -> Read {
    Read::Fetch { path: path.to_string(), version }
}

pub(crate) fn versions(path: &str) -> Read {
    Read::Versions { path: path.to_string() }
}

pub(crate) fn lookup(prefix: &str, start_after: Option<&str>, limit: u32) -> Read {
    Read::Lookup { prefix: prefix.to_string(), start_after: start_after.map(str::to_string), limit }
}

pub(crate) fn list(directory: &str, start_after: Option<&str>, limit: u32) -> Read {
    Read::List { directory: directory.to_string(), start_after: start_after.map(str::to_string), limit }
}

pub(crate) fn hash_lookup(hash: Hash32, start_after: Option<&str>, limit: u32) -> Read {
    Read::HashLookup { hash, start_after: start_after.map(str::to_string), limit }
}

pub(crate) fn search(query: &str, start_after: Option<&str>, limit: u32) -> Read {
    Read::Search { query: query.to_string(), start_after: start_after.map(str::to_string), limit }
}

pub(crate) fn is_directory(path: &str) -> Read {
    Read::IsDirectory { path: path.to_string() }
}

/// An `IsDirectory` read's answer.
pub(crate) fn directory_answer(answer: Answer) -> bool {
    match answer {
        Answer::IsDirectory(is) => is,
        other => unreachable!("an IsDirectory read answers IsDirectory, not {other:?}"),
    }
}
