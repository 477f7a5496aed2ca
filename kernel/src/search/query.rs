//! Body search's words and queries (SPEC 8.6). A text's words are its maximal runs of
//! alphanumeric characters (Unicode's `Alphabetic` or `Numeric`), each character mapped
//! to its lowercase form on its own, with no context (so `Σ` is always `σ`). Bytes that
//! are not UTF-8 read as U+FFFD, which separates words. A query is words and quoted
//! phrases; a body matches when it holds every word and every phrase's words in order,
//! one after another.

/// The tokenizer's version, written with the words a segment part carries (SPEC 10.17):
/// a reader uses a part's words only when they were found by this tokenizer. Raise it
/// whenever [`words`] could answer otherwise for some bytes.
pub const TOKENIZER: u32 = 1;

/// The longest query, in bytes.
pub const QUERY_BYTES_MAX: usize = 1_024;
/// The most words and phrases in one query.
pub const QUERY_PARTS_MAX: usize = 16;

/// Why a query cannot be run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryProblem {
    /// The query holds no word.
    #[error("the query holds no word")]
    Empty,
    /// The query is longer than [`QUERY_BYTES_MAX`].
    #[error("the query is {bytes} bytes, over {QUERY_BYTES_MAX}")]
    TooLong {
        /// Its length.
        bytes: usize,
    },
    /// The query has more than [`QUERY_PARTS_MAX`] words and phrases.
    #[error("the query has {parts} words and phrases, over {QUERY_PARTS_MAX}")]
    TooManyParts {
        /// How many it has.
        parts: usize,
    },
}

/// The words of `text`, in order.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    raw_words(text).map(|w| {
        let mut folded = String::with_capacity(w.len());
        fold_into(w, &mut folded);
        folded
    })
}

/// The runs of alphanumeric characters of `text`, as they are.
pub(crate) fn raw_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !is_word_char(c)).filter(|w| !w.is_empty())
}

/// Whether `c` is alphanumeric (`char::is_alphanumeric`), from a table for the Basic
/// Multilingual Plane: the standard library's table searches were most of tokenizing text
/// that is not ASCII.
pub(crate) fn is_word_char(c: char) -> bool {
    let at = c as usize;
    match BMP_WORD_CHARS.get(at >> 6) {
        Some(bits) => bits >> (at & 63) & 1 == 1,
        None => c.is_alphanumeric(),
    }
}

/// By 64 code points of the Basic Multilingual Plane: which are alphanumeric, as bits.
/// Computed once a process (the standard library's test is not `const`).
static BMP_WORD_CHARS: std::sync::LazyLock<Box<[u64]>> = std::sync::LazyLock::new(|| {
    (0..0x1_0000u32 / 64)
        .map(|block| {
            (0..64).fold(0u64, |bits, i| {
                let alphanumeric = char::from_u32(block * 64 + i).is_some_and(char::is_alphanumeric);
                bits | u64::from(alphanumeric) << i
            })
        })
        .collect()
});

/// Appends `word` lowercased character by character to `out`. ASCII is the common case,
/// and its lowercase mapping is the ASCII one.
pub(crate) fn fold_into(word: &str, out: &mut String) {
    if word.is_ascii() {
        out.extend(word.bytes().map(|b| b.to_ascii_lowercase() as char));
    } else {
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
}

/// The words of a body's bytes.
pub fn body_words(body: &[u8]) -> Vec<String> {
    words(&String::from_utf8_lossy(body)).collect()
}

/// A parsed query: each part is one word, or a phrase of several in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    parts: Vec<Vec<String>>,
}

impl Query {
    /// Parses `text`: text between a pair of `"` is a phrase (an unclosed quote runs to
    /// the end); every word outside quotes is a part of its own. A phrase of one word is
    /// that word.
    pub fn parse(text: &str) -> Result<Query, QueryProblem> {
        if text.len() > QUERY_BYTES_MAX {
            return Err(QueryProblem::TooLong { bytes: text.len() });
        }
        let mut parts: Vec<Vec<String>> = Vec::new();
        for (i, piece) in text.split('"').enumerate() {
            if i % 2 == 1 {
                let phrase: Vec<String> = words(piece).collect();
                if !phrase.is_empty() {
                    parts.push(phrase);
                }
            } else {
                parts.extend(words(piece).map(|w| vec![w]));
            }
        }
        if parts.is_empty() {
            return Err(QueryProblem::Empty);
        }
        if parts.len() > QUERY_PARTS_MAX {
            return Err(QueryProblem::TooManyParts { parts: parts.len() });
        }
        Ok(Query { parts })
    }

    /// The words and phrases, in the query's order.
    pub fn parts(&self) -> &[Vec<String>] {
        &self.parts
    }

    /// Whether a text with these words matches.
    pub fn matches<S: AsRef<str>>(&self, text_words: &[S]) -> bool {
        self.parts.iter().all(|part| holds(text_words, part))
    }

    /// Whether texts with these words match together: each part held by one of them (a
    /// phrase within one), as a catalog search reads a path and its record (SPEC 8.6).
    pub fn matches_any<S: AsRef<str>>(&self, texts: &[&[S]]) -> bool {
        self.parts.iter().all(|part| texts.iter().any(|words| holds(words, part)))
    }
}

/// Whether a text with these words holds one part: its words adjacent and in order.
fn holds<S: AsRef<str>>(text_words: &[S], part: &[String]) -> bool {
    text_words.windows(part.len()).any(|w| w.iter().zip(part).all(|(a, b)| a.as_ref() == b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_alphanumeric_runs_lowercased_char_by_char() {
        let got: Vec<String> = words("Hello, WORLD! x2-y_z ÉCOLE ΣΑΣ 東京").collect();
        assert_eq!(got, ["hello", "world", "x2", "y", "z", "école", "σασ", "東京"]);
    }

    #[test]
    fn word_chars_are_the_alphanumeric_ones_in_every_plane() {
        for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
            assert_eq!(is_word_char(c), c.is_alphanumeric(), "{:?}", c);
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_separate_words() {
        assert_eq!(body_words(b"ab\xffcd"), ["ab", "cd"]);
    }

    #[test]
    fn a_query_is_words_and_quoted_phrases() {
        let q = Query::parse(r#"red "big  Dog" fox "unclosed phrase"#).unwrap();
        let parts: Vec<Vec<&str>> =
            q.parts().iter().map(|p| p.iter().map(String::as_str).collect()).collect();
        assert_eq!(parts, [vec!["red"], vec!["big", "dog"], vec!["fox"], vec!["unclosed", "phrase"]]);
    }

    #[test]
    fn a_phrase_matches_only_in_order_and_adjacent() {
        let q = Query::parse(r#""big dog""#).unwrap();
        assert!(q.matches(&body_words(b"a big dog barks")));
        assert!(!q.matches(&body_words(b"a dog big")));
        assert!(!q.matches(&body_words(b"big red dog")));
        let both = Query::parse("dog big").unwrap();
        assert!(both.matches(&body_words(b"a dog big")));
        assert!(!both.matches(&body_words(b"a dog")));
    }

    #[test]
    fn bad_queries_are_refused_with_the_reason() {
        assert_eq!(Query::parse(" ,; \"\" "), Err(QueryProblem::Empty));
        let long = "a ".repeat(QUERY_BYTES_MAX);
        assert_eq!(Query::parse(&long), Err(QueryProblem::TooLong { bytes: long.len() }));
        let many = "a ".repeat(QUERY_PARTS_MAX + 1);
        assert_eq!(Query::parse(&many), Err(QueryProblem::TooManyParts { parts: QUERY_PARTS_MAX + 1 }));
    }
}
