//! Reading MiniWoB++'s utterances: quoted texts, dates, times and ordinals.

/// The texts between double quotes, in order.
pub(super) fn quoted(goal: &str) -> Vec<String> {
    goal.split('"')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

pub(super) fn first_quoted(goal: &str) -> Result<String, String> {
    quoted(goal)
        .into_iter()
        .next()
        .ok_or_else(|| format!("no quoted text in the utterance {goal:?}"))
}

/// A quoted text, else the last word without its full stop (`Click button ONE.` → `ONE`).
pub(super) fn quoted_or_last_word(goal: &str) -> Result<String, String> {
    if let Some(q) = quoted(goal).into_iter().next() {
        return Ok(q);
    }
    goal.trim()
        .trim_end_matches('.')
        .split_whitespace()
        .last()
        .map(str::to_string)
        .ok_or_else(|| format!("empty utterance {goal:?}"))
}

/// The text between `start` and `end` in the utterance.
pub(super) fn between<'g>(goal: &'g str, start: &str, end: &str) -> Result<&'g str, String> {
    let from = goal
        .find(start)
        .map(|i| i + start.len())
        .ok_or_else(|| format!("expected {start:?} in the utterance {goal:?}"))?;
    let len = goal[from..]
        .find(end)
        .ok_or_else(|| format!("expected {end:?} in the utterance {goal:?}"))?;
    Ok(&goal[from..from + len])
}

/// A date written MM/DD/YYYY.
pub(super) fn mdy(text: &str) -> Option<(u32, u32, u32)> {
    let word = text
        .split_whitespace()
        .find(|w| w.matches('/').count() == 2)?;
    let mut parts = word.trim_end_matches('.').split('/');
    let m = parts.next()?.parse().ok()?;
    let d = parts.next()?.parse().ok()?;
    let y = parts.next()?.parse().ok()?;
    Some((m, d, y))
}

/// `1:04 AM` → 01:04, `12:30 PM` → 12:30, `12:05 AM` → 00:05 (a 24-hour `13:04` as is).
pub(super) fn clock(goal: &str) -> Option<(u32, u32)> {
    let words: Vec<&str> = goal.split_whitespace().collect();
    let i = words.iter().position(|w| {
        let mut it = w.split(':');
        matches!((it.next(), it.next(), it.next()), (Some(h), Some(m), None)
            if !h.is_empty() && h.chars().all(|c| c.is_ascii_digit())
            && m.get(..2).is_some_and(|d| d.chars().all(|c| c.is_ascii_digit())))
    })?;
    let (h, m) = words[i].split_once(':')?;
    let mut hour: u32 = h.parse().ok()?;
    let minute: u32 = m.get(..2)?.parse().ok()?;
    let suffix = words
        .get(i + 1)
        .map(|w| w.trim_end_matches('.').to_ascii_uppercase());
    match suffix.as_deref() {
        Some("AM") if hour == 12 => hour = 0,
        Some("PM") if hour < 12 => hour += 12,
        _ => {}
    }
    (hour < 24 && minute < 60).then_some((hour, minute))
}

/// `1st`, `2nd`, `3rd`, `4th`... → 1, 2, 3, 4.
pub(super) fn ordinal(word: &str) -> Option<usize> {
    let digits: String = word.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}
