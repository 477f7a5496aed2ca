//! The event trace of a run as text (`slotlog run --trace FILE`): one event a line, in the
//! order the simulation hashed them, so the lines hash back to the run's `trace_hash`.
//!
//! A line is the virtual time in seconds (to the microsecond), the event's name, its
//! numbers as `name=value` in hashed order, and its text, if any, after ` | `:
//!
//! ```text
//!    12.345678 blob ticket=57 replica=0 upload_bytes=1234 | worlds/sim/log/000000000000002a
//!    12.391022 applied ticket=57 outcome=1:ok generation=7 size=1234
//!    12.391022 completed ticket=57 replica=0
//! ```
//!
//! A value may carry a readable note after a colon (`outcome=1:ok`, `op=31:000000000000001f`,
//! the low half of the operation id as violations print it); the number before it is what
//! was hashed. The trace holds what the hash covers, nothing
//! more: blob calls are named by the simulator's ticket, and the ticket's `blob` line
//! names its replica and object.

use slotlog_sim::TraceEvent;

/// The highest event code [`shape`] names.
const EVENT_CODE_MAX: u64 = 20;

/// The names of the numbers after the event's code, by code and count. The code is the
/// first number the simulator hashes (sim/src/cluster.rs, `trace`).
fn shape(code: u64, numbers: usize) -> Option<(&'static str, &'static [&'static str])> {
    Some(match (code, numbers) {
        (1, 2) => ("start", &["replica", "incarnation"]),
        (2, 4) => ("applied", &["ticket", "outcome", "generation", "size"]),
        (3, 2) => ("completed", &["ticket", "replica"]),
        (4, 2) => ("write", &["replica", "op"]),
        (5, 1) => ("crash", &["replica"]),
        (6, 1) => ("restart", &["replica"]),
        (7, 2) => ("committed", &["replica", "sequence"]),
        (8, 1) => ("failed", &["replica"]),
        (9, 1) => ("warning", &["replica"]),
        (9, 3) => ("blob", &["ticket", "replica", "upload_bytes"]),
        (10, 2) => ("answer", &["replica", "request"]),
        (11, 2) => ("hint", &["replica", "sequence"]),
        (12, 2) => ("read", &["replica", "request"]),
        (13, 2) => ("watch", &["replica", "cursor"]),
        (14, 3) => ("read_answer", &["replica", "request", "at_sequence"]),
        (15, 3) => ("changes", &["replica", "events", "last_sequence"]),
        (16, 2) => ("watch_end", &["replica", "request"]),
        (17, 1) => ("damage", &["replica"]),
        (18, 2) => ("repair", &["replica", "repaired"]),
        (19, 1) => ("gone", &["replica"]),
        (20, 0) => ("calm", &[]),
        _ => return None,
    })
}

/// What a blob result's outcome code means (sim/src/cluster.rs, `result_digest`).
fn outcome_note(code: u64) -> &'static str {
    match code {
        1 => "ok",
        2 => "got",
        3 => "listed",
        4 => "deleted",
        5 => "already_exists",
        6 => "precondition_failed",
        7 => "not_found",
        8 => "throttled",
        9 => "unavailable",
        10 => "timeout",
        _ => "error",
    }
}

/// One event as its line (no newline).
pub fn line(e: &TraceEvent<'_>) -> String {
    let mut s = format!("{:>5}.{:06}", e.at_us / 1_000_000, e.at_us % 1_000_000);
    let (code, numbers) = e.parts.split_first().map_or((0, &[][..]), |(c, n)| (*c, n));
    match shape(code, numbers.len()) {
        Some((name, fields)) => {
            s += " ";
            s += name;
            for (field, value) in fields.iter().zip(numbers) {
                match *field {
                    "op" => s += &format!(" op={value}:{value:016x}"),
                    "outcome" => s += &format!(" outcome={value}:{}", outcome_note(*value)),
                    _ => s += &format!(" {field}={value}"),
                }
            }
        }
        None => {
            // An event this file does not know yet: its numbers, unnamed.
            s += &format!(" event#{code}");
            for (i, value) in numbers.iter().enumerate() {
                s += &format!(" n{i}={value}");
            }
        }
    }
    if !e.text.is_empty() {
        s += " | ";
        s += &escape(e.text);
    }
    s
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n").replace('\r', "\\r")
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// Why a line is not a trace line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadLine {
    pub line: usize,
    pub why: &'static str,
}

/// An event read back from its line: the time, the numbers (code first) and the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedEvent {
    pub at_us: u64,
    pub parts: Vec<u64>,
    pub text: String,
}

/// Reads one line back into the event it was written from.
pub fn parse(line: &str) -> Result<ParsedEvent, &'static str> {
    let (head, text) = match line.split_once(" | ") {
        Some((head, text)) => (head, unescape(text)),
        None => (line, String::new()),
    };
    let mut tokens = head.split_whitespace();
    let time = tokens.next().ok_or("no time")?;
    let (secs, micros) = time.split_once('.').ok_or("the time has no fraction")?;
    let secs: u64 = secs.parse().map_err(|_| "the time's seconds are no number")?;
    let micros: u64 = micros.parse().map_err(|_| "the time's microseconds are no number")?;
    let name = tokens.next().ok_or("no event name")?;
    let mut numbers = Vec::new();
    for token in tokens {
        let (_, value) = token.split_once('=').ok_or("a number without a name")?;
        let value = value.split_once(':').map_or(value, |(v, _)| v);
        numbers.push(value.parse::<u64>().map_err(|_| "a value is no number")?);
    }
    let code = match name.strip_prefix("event#") {
        Some(code) => code.parse().map_err(|_| "an unknown event's code is no number")?,
        None => (1..=EVENT_CODE_MAX)
            .find(|&c| shape(c, numbers.len()).is_some_and(|(n, _)| n == name))
            .ok_or("an unknown event name")?,
    };
    let mut parts = vec![code];
    parts.extend(numbers);
    Ok(ParsedEvent { at_us: secs * 1_000_000 + micros, parts, text })
}

/// The trace hash of a trace file's lines, as `Report::trace_hash` prints it.
pub fn hash_lines(text: &str) -> Result<String, BadLine> {
    let mut hasher = blake3::Hasher::new();
    for (i, line) in text.lines().enumerate() {
        let e = parse(line).map_err(|why| BadLine { line: i + 1, why })?;
        TraceEvent { at_us: e.at_us, parts: &e.parts, text: &e.text }.hash_into(&mut hasher);
    }
    Ok(slotlog_kernel::Hash32(*hasher.finalize().as_bytes()).to_hex())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(at_us: u64, parts: &[u64], text: &str) -> String {
        let l = line(&TraceEvent { at_us, parts, text });
        let back = parse(&l).unwrap_or_else(|why| panic!("{l:?}: {why}"));
        assert_eq!(back, ParsedEvent { at_us, parts: parts.to_vec(), text: text.to_string() }, "{l}");
        l
    }

    #[test]
    fn every_event_shape_reads_back_as_it_was_hashed() {
        round_trip(0, &[1, 0, 0], "start");
        assert_eq!(
            round_trip(12_345_678, &[9, 57, 0, 1234], "worlds/sim/log/000000000000002a"),
            "   12.345678 blob ticket=57 replica=0 upload_bytes=1234 | worlds/sim/log/000000000000002a"
        );
        assert_eq!(
            round_trip(12_391_022, &[2, 57, 1, 7, 1234], ""),
            "   12.391022 applied ticket=57 outcome=1:ok generation=7 size=1234"
        );
        round_trip(5, &[4, 2, u64::MAX], "");
        round_trip(5, &[9, 1], "Warning { a: \"x\\y\" }\nsecond line");
        round_trip(5, &[14, 1, 9, u64::MAX], "Discriminant(0)");
        round_trip(5, &[99, 1, 2], "a future event");
        round_trip(5, &[3], "");
    }

    #[test]
    fn lines_hash_like_the_events() {
        let events: [(u64, &[u64], &str); 3] =
            [(0, &[1, 0, 0], "start"), (10, &[4, 0, 77], ""), (10, &[9, 1, 0, 3], "k")];
        let mut hasher = blake3::Hasher::new();
        let mut text = String::new();
        for (at_us, parts, t) in events {
            let e = TraceEvent { at_us, parts, text: t };
            e.hash_into(&mut hasher);
            text += &line(&e);
            text += "\n";
        }
        assert_eq!(hash_lines(&text), Ok(slotlog_kernel::Hash32(*hasher.finalize().as_bytes()).to_hex()));
        assert_eq!(hash_lines("nonsense"), Err(BadLine { line: 1, why: "the time has no fraction" }));
    }
}
