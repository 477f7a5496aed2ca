//! The index's first bodies from body segments (SPEC 10.17): when a build starts, one
//! listing of `segments/`, then the parts of each label's newest whole window, before any
//! body is read from its blob. A few thousand part reads of up to 2 MiB replace up to a
//! read per document; whatever no segment held (a body written since, a damaged or
//! collected part) is read from blobs afterwards, as before.
//!
//! Segments are a cache: every body is verified against its hash on read, and no failure
//! here fails anything. A listing the store refuses ends the load; a part it refuses is
//! passed over.

use super::prepare::{prepare_part, Prepared, PreparedPart};
use crate::blob::{BlobOp, BlobOutcome, BlobResult, ObjectMeta};
use crate::format::{newest_whole_window, Keys, SegmentName};
use crate::io::{Call, Io, Purpose};
use std::collections::VecDeque;

/// Bodies read from parts and not yet indexed, at most: part reads wait past this, so a
/// store faster than the index cannot fill memory with bodies. 16 MiB (64 parts of
/// 256 KiB) keeps the index fed; at 64 MiB the tokenized parts queued, and what the
/// allocator kept of them, took a million documents' build to 950 to 1,016 MiB resident.
pub(crate) const SEGMENT_BODIES_WAITING_BYTES_MAX: usize = 16 << 20;

/// The calls the index makes of the bucket.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum SearchCall {
    /// A page of `segments/`, for the build numbered `build`.
    List { build: u64 },
    /// One segment part, for the build numbered `build`.
    Part { build: u64, name: SegmentName },
}

/// One build's reading of segments.
pub(super) struct SegmentLoad {
    build: u64,
    /// The last key of the page before, and whether the listing is over.
    after: Option<String>,
    listing: bool,
    listed: bool,
    /// The label the listing is in, with its parts so far (a listing is in key order:
    /// label, window, part, so a label is whole once the listing passes it). Holds one
    /// label's parts.
    label: Vec<SegmentName>,
    to_read: VecDeque<SegmentName>,
    reading: usize,
}

/// What a completed call brought.
pub(super) enum Loaded {
    Nothing,
    /// The verified bodies of one part, tokenized.
    Part(Prepared),
}

impl SegmentLoad {
    pub fn new(build: u64) -> SegmentLoad {
        SegmentLoad {
            build,
            after: None,
            listing: false,
            listed: false,
            label: Vec::new(),
            to_read: VecDeque::new(),
            reading: 0,
        }
    }

    /// Whether every listing page and part read is done.
    pub fn is_done(&self) -> bool {
        self.listed && !self.listing && self.to_read.is_empty() && self.reading == 0
    }

    /// Issues the next listing page and the part reads there is room for.
    pub fn pump(&mut self, now: crate::time::Instant, keys: &Keys, ctx: Room, io: &mut Io) {
        while self.reading < ctx.reads_max && ctx.waiting_bytes < SEGMENT_BODIES_WAITING_BYTES_MAX {
            let Some(name) = self.to_read.pop_front() else { break };
            self.reading += 1;
            let what = SearchCall::Part { build: self.build, name };
            io.issue(now, Purpose::Search(what), BlobOp::Get { key: keys.segment(&name) }, 0);
        }
        // The next page once the labels found so far are mostly asked for.
        if !self.listed && !self.listing && self.to_read.len() < ctx.reads_max {
            self.listing = true;
            let op = BlobOp::List {
                prefix: keys.segments_prefix(),
                start_after: self.after.clone(),
                limit: ctx.list_page_max,
            };
            io.issue(now, Purpose::Search(SearchCall::List { build: self.build }), op, 0);
        }
    }

    /// A call of this load completed (the caller checked its build). `offered`: the part
    /// tokenized by the embedder, if it did (taken when it is this part's).
    #[allow(clippy::too_many_arguments)]
    pub fn on_done(
        &mut self,
        now: crate::time::Instant,
        what: SearchCall,
        call: Call,
        result: BlobResult,
        offered: Option<PreparedPart>,
        keys: &Keys,
        io: &mut Io,
    ) -> Loaded {
        match (what, result) {
            (_, Err(e)) if e.is_transient() => {
                io.retry_later(now, call);
                Loaded::Nothing
            }
            (SearchCall::List { .. }, Ok(BlobOutcome::Listed { entries, more })) => {
                self.listing = false;
                self.on_listed(keys, entries, more);
                Loaded::Nothing
            }
            // A listing refused: the load ends with what it has; blobs do the rest.
            (SearchCall::List { .. }, _) => {
                self.listing = false;
                self.listed = true;
                self.label.clear();
                Loaded::Nothing
            }
            (SearchCall::Part { name, .. }, Ok(BlobOutcome::Got { bytes, .. })) => {
                self.reading -= 1;
                let part = offered.filter(|p| p.name == name).unwrap_or_else(|| prepare_part(&bytes, &name));
                match part.prepared {
                    Some(prepared) => Loaded::Part(prepared),
                    // A damaged part: its bodies come from blobs.
                    None => Loaded::Nothing,
                }
            }
            // Gone (collected since the listing) or refused: its bodies come from blobs.
            (SearchCall::Part { .. }, _) => {
                self.reading -= 1;
                Loaded::Nothing
            }
        }
    }

    fn on_listed(&mut self, keys: &Keys, entries: Vec<ObjectMeta>, more: bool) {
        self.after = entries.last().map(|e| e.key.clone()).or(self.after.take());
        self.listed = !more;
        // A key under segments/ that names no part is not the index's business.
        for name in entries.iter().filter_map(|e| keys.parse_segment(&e.key)) {
            if self.label.first().is_some_and(|l| (l.bits, l.label) != (name.bits, name.label)) {
                self.take_label();
            }
            self.label.push(name);
        }
        if self.listed {
            self.take_label();
        }
    }

    /// Queues the parts of the buffered label's newest whole window. A label of an older
    /// layout is read as well: its bodies are verified like any, and collection takes it
    /// once past the grace.
    fn take_label(&mut self) {
        let names = std::mem::take(&mut self.label);
        if let Some(window) = newest_whole_window(&names) {
            let mut parts: Vec<SegmentName> = names.into_iter().filter(|n| n.window == window).collect();
            parts.sort_unstable();
            parts.dedup();
            self.to_read.extend(parts);
        }
    }

    pub fn build(&self) -> u64 {
        self.build
    }
}

/// What the index lets a load have in flight.
#[derive(Clone, Copy, Debug)]
pub(super) struct Room {
    pub reads_max: usize,
    pub list_page_max: u32,
    /// Bytes of bodies in hand not yet indexed.
    pub waiting_bytes: usize,
}
