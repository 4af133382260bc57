//! Splitting an import file into items, each parsed on its own so that a broken item
//! costs only itself. Files come as JSON Lines, one JSON array, one pretty-printed object
//! (WebArena's `config_files/N.json`), or such objects one after another (`cat
//! config_files/*.json`). Items are numbered by the line they start on.

use serde_json::Value;

use super::err;
use crate::task::FieldError;

/// One item: the line it starts on and its JSON, or why it is not JSON.
pub(super) type Item = (usize, Result<Value, Vec<FieldError>>);

/// The items of a file, in order.
pub(super) fn items(text: &str) -> Vec<Item> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let offset = text.len() - trimmed.len();
        return array_items(text, offset);
    }
    if trimmed.is_empty() {
        return Vec::new();
    }
    // One object over many lines, however it is indented.
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        let line = line_of(text, text.len() - trimmed.len());
        return vec![(line, Ok(value))];
    }
    object_items(text)
}

/// Objects that each start on a line beginning with `{`: every line of JSON Lines, and
/// every pretty-printed object (whose nested objects are indented), so that a broken
/// object ends where the next one starts. Text before the first object is an error.
fn object_items(text: &str) -> Vec<Item> {
    let mut starts: Vec<usize> = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with('{') {
            starts.push(at);
        }
        at += line.len();
    }
    if starts.is_empty() {
        // No object starts a line: each non-blank line on its own.
        return line_items(text, 1);
    }
    let mut out = Vec::new();
    let before = &text[..starts[0]];
    if !before.trim().is_empty() {
        let skipped = before.len() - before.trim_start().len();
        let line = line_of(text, skipped);
        out.push((
            line,
            Err(err(
                "",
                format!("invalid JSON at line {line}: text before the first object"),
            )),
        ));
    }
    let ends = starts.iter().skip(1).copied().chain([text.len()]);
    for (from, to) in starts.iter().copied().zip(ends) {
        let piece = text[from..to].trim_end();
        let line = line_of(text, from);
        let first = piece.lines().next().unwrap_or_default();
        if first.len() < piece.len() && serde_json::from_str::<Value>(first).is_ok() {
            // A complete object on its first line: JSON Lines, whose lines are items on
            // their own (a bad line that does not start with `{` costs only itself).
            out.extend(line_items(piece, line));
            continue;
        }
        let result = serde_json::from_str::<Value>(piece).map_err(|e| {
            // serde's position is within the object, which starts a line: make it the
            // file's.
            let file_line = line + e.line().saturating_sub(1);
            err(
                "",
                format!(
                    "invalid JSON at line {file_line}, column {}: {e}",
                    e.column()
                ),
            )
        });
        out.push((line, result));
    }
    out
}

/// Each non-blank line of `text` (whose first line is the file's line `first`) on its own.
fn line_items(text: &str, first: usize) -> Vec<Item> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            (
                first + i,
                serde_json::from_str(l).map_err(|e| err("", format!("invalid JSON: {e}"))),
            )
        })
        .collect()
}

/// The line of a byte offset, which may fall inside a character (the last byte of a file
/// that ends in one): counted over bytes, never slicing the text.
fn line_of(text: &str, byte: usize) -> usize {
    let bytes = text.as_bytes();
    bytes[..byte.min(bytes.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The elements of a JSON array, each parsed on its own, so that one broken element (a
/// missing quote, a stray comma) costs only itself. Elements are split at the array's
/// top-level commas, found by a scan that follows strings and nesting.
fn array_items(text: &str, open: usize) -> Vec<Item> {
    let bytes = text.as_bytes();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut start = open + 1;
    let mut closed = false;
    let mut end = text.len();
    for (i, &b) in bytes.iter().enumerate().skip(open + 1) {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth > 0 => depth -= 1,
            b']' => {
                spans.push((start, i));
                closed = true;
                end = i + 1;
                break;
            }
            b',' if depth == 0 => {
                spans.push((start, i));
                start = i + 1;
            }
            _ => {}
        }
    }
    if !closed {
        spans.push((start, text.len()));
    }
    let last = spans.len().saturating_sub(1);
    let mut out = Vec::new();
    for (k, (from, to)) in spans.into_iter().enumerate() {
        let piece = &text[from..to];
        let at = from + (piece.len() - piece.trim_start().len());
        let line = line_of(text, at);
        if piece.trim().is_empty() {
            // `[]` or a trailing comma hold no item; an empty one between commas is an error.
            if k < last {
                out.push((line, Err(err("", format!("invalid JSON in the array at line {line}: an empty item (a stray comma)")))));
            }
            continue;
        }
        if serde_json::from_str::<Value>(&text[at..to]).is_err()
            && let Some(recovered) = recover_item(text, at, to)
        {
            out.extend(recovered);
            continue;
        }
        let result = serde_json::from_str::<Value>(&text[at..to]).map_err(|e| {
            // serde's position is within the item: make it the file's.
            let file_line = line + e.line().saturating_sub(1);
            let column = if e.line() <= 1 {
                at - text[..at].rfind('\n').map_or(0, |n| n + 1) + e.column()
            } else {
                e.column()
            };
            err(
                "",
                format!("invalid JSON in the array at line {file_line}, column {column}: {e}"),
            )
        });
        out.push((line, result));
    }
    if !closed {
        let line = line_of(text, text.len().saturating_sub(1).max(open));
        out.push((
            line,
            Err(err("", "invalid JSON array: it is never closed with `]`")),
        ));
    }
    // What follows the array (more lines of JSON Lines, another array) is read as items
    // of its own, never dropped unseen.
    let rest = &text[end..];
    if !rest.trim().is_empty() {
        let shift = line_of(text, end) - 1;
        out.extend(
            items(rest)
                .into_iter()
                .map(|(line, item)| (line + shift, item)),
        );
    }
    out
}

/// An array item that does not parse, read again piece by piece so that a broken neighbour
/// costs only itself: the item is cut where a line starts with `{` (a task object, as in
/// JSON Lines), each piece's leading JSON value is kept at its own line, and whatever
/// else a piece holds (text before the first object, text after a value: a missing
/// comma) is an error at its line. `None` when no piece holds a value, so the item's own
/// parse error stands.
fn recover_item(text: &str, from: usize, to: usize) -> Option<Vec<Item>> {
    let mut cuts = vec![from];
    let mut at = from;
    for line in text[from..to].split_inclusive('\n') {
        if at > from && line.starts_with('{') {
            cuts.push(at);
        }
        at += line.len();
    }
    cuts.push(to);
    let mut out = Vec::new();
    let mut kept = 0;
    for w in cuts.windows(2) {
        let piece = &text[w[0]..w[1]];
        let lead = piece.len() - piece.trim_start().len();
        if piece.trim().is_empty() {
            continue;
        }
        let start = w[0] + lead;
        let mut stream =
            serde_json::Deserializer::from_str(&text[start..w[1]]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value)) => {
                out.push((line_of(text, start), Ok(value)));
                kept += 1;
                let rest = start + stream.byte_offset();
                let after = &text[rest..w[1]];
                if !after.trim().is_empty() {
                    let line = line_of(text, rest + (after.len() - after.trim_start().len()));
                    out.push((
                        line,
                        Err(err(
                            "",
                            format!("invalid JSON in the array at line {line}: text after an item (a missing comma?)"),
                        )),
                    ));
                }
            }
            _ => {
                let line = line_of(text, start);
                let e = serde_json::from_str::<Value>(&text[start..w[1]])
                    .err()
                    .map_or_else(|| "not an item".to_string(), |e| e.to_string());
                out.push((
                    line,
                    Err(err(
                        "",
                        format!("invalid JSON in the array at line {line}: {e}"),
                    )),
                ));
            }
        }
    }
    (kept > 0).then_some(out)
}
