//! Body search as SPEC 8.6 states it, written without the kernel's code: a text's words,
//! a query's parts, and whether a text matches. The checker judges every search answer
//! with these.

/// The words of `text`: runs of alphanumeric characters, each character lowercased on
/// its own.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// The words of a body: bytes that are not UTF-8 read as U+FFFD.
pub fn body_words(body: &[u8]) -> Vec<String> {
    words(&String::from_utf8_lossy(body))
}

/// The words of a body, by its hash: the checker judges hundreds of searches against the
/// same few thousand bodies, and tokenizing them again for each was most of a `search`
/// run's time. A body's words depend only on its bytes, so the cache cannot be stale; it
/// is emptied past `CACHED_BODIES_MAX` bodies.
pub fn body_words_cached(hash: [u8; 32], body: &[u8]) -> std::rc::Rc<Vec<String>> {
    const CACHED_BODIES_MAX: usize = 65_536;
    thread_local! {
        static CACHE: std::cell::RefCell<std::collections::HashMap<[u8; 32], std::rc::Rc<Vec<String>>>> =
            Default::default();
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() >= CACHED_BODIES_MAX {
            cache.clear();
        }
        cache.entry(hash).or_insert_with(|| std::rc::Rc::new(body_words(body))).clone()
    })
}

/// The words of a catalog's text (a path or a record), by the text: a catalog search
/// looks at every document's, and tokenizing them again for each search was 3% of a
/// `search` run. Emptied past `CACHED_TEXTS_MAX` texts, as the body cache.
fn text_words_cached(text: &str) -> std::rc::Rc<Vec<String>> {
    const CACHED_TEXTS_MAX: usize = 65_536;
    thread_local! {
        static CACHE: std::cell::RefCell<std::collections::HashMap<Box<str>, std::rc::Rc<Vec<String>>>> =
            Default::default();
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(words) = cache.get(text) {
            return words.clone();
        }
        if cache.len() >= CACHED_TEXTS_MAX {
            cache.clear();
        }
        let made = std::rc::Rc::new(words(text));
        cache.insert(text.into(), made.clone());
        made
    })
}

/// A query's parts (each a word, or a phrase of several), or None when it holds no word.
/// Text inside a pair of quotes is a phrase; an unclosed quote runs to the end.
pub fn query_parts(query: &str) -> Option<Vec<Vec<String>>> {
    let mut parts = Vec::new();
    let mut quoted = false;
    let mut piece = String::new();
    let flush = |piece: &mut String, quoted: bool, parts: &mut Vec<Vec<String>>| {
        let w = words(piece);
        if quoted {
            if !w.is_empty() {
                parts.push(w);
            }
        } else {
            parts.extend(w.into_iter().map(|w| vec![w]));
        }
        piece.clear();
    };
    for c in query.chars() {
        if c == '"' {
            flush(&mut piece, quoted, &mut parts);
            quoted = !quoted;
        } else {
            piece.push(c);
        }
    }
    flush(&mut piece, quoted, &mut parts);
    (!parts.is_empty()).then_some(parts)
}

/// Whether a text of these words holds every part: a word anywhere, a phrase's words
/// adjacent and in order.
pub fn holds(text: &[String], parts: &[Vec<String>]) -> bool {
    parts.iter().all(|part| (0..text.len()).any(|i| text[i..].starts_with(part)))
}

/// Whether a document's catalog, its path and its record, holds every part: each in one
/// of the two (a phrase within one), SPEC 8.6.
pub fn catalog_holds(path: &str, record: Option<&str>, parts: &[Vec<String>]) -> bool {
    let texts = [text_words_cached(path), text_words_cached(record.unwrap_or_default())];
    parts.iter().all(|part| texts.iter().any(|text| holds(text, std::slice::from_ref(part))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catalog_holds_each_part_in_its_path_or_its_record_a_phrase_within_one() {
        let parts = |q: &str| query_parts(q).unwrap();
        assert!(catalog_holds("/pets/dog.md", Some("Draft: brown"), &parts("DOG draft")));
        assert!(!catalog_holds("/pets/dog.md", None, &parts("dog draft")));
        assert!(catalog_holds("/pets/dog.md", Some("draft"), &parts("\"pets dog\"")));
        assert!(!catalog_holds("/pets/dog.md", Some("draft"), &parts("\"md draft\"")));
    }

    #[test]
    fn the_rules_as_the_spec_states_them() {
        assert_eq!(words("Ab-CD  é1"), ["ab", "cd", "é1"]);
        let parts = query_parts(r#"x "b  c" "d"#).unwrap();
        assert_eq!(parts, [vec!["x"], vec!["b", "c"], vec!["d"]]);
        assert!(holds(&words("a b c x"), &parts[..2]));
        assert!(!holds(&words("c b x"), &parts[..2]));
        assert_eq!(query_parts(" \"\" "), None);
    }
}
