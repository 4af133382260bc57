//! Solvers for dates and times: typed into date and time fields, or picked on a jQuery UI
//! calendar whose month on show is read off its grid of days.

use browser_pool::{Action, Element};

use super::Step;
use super::page::{Page, submit, type_into};
use super::utterance::{clock, mdy};

pub(super) fn enter_date(p: &Page<'_>) -> Step {
    let (m, d, y) = mdy(p.goal).ok_or_else(|| format!("no date in {:?}", p.goal))?;
    let iso = format!("{y:04}-{m:02}-{d:02}");
    let field = p.textbox_of_type("date")?;
    if field.value.as_deref() != Some(iso.as_str()) {
        return type_into(field, &iso, format!("the date {iso}"));
    }
    submit(p)
}

/// A jQuery UI datepicker on a read-only field: open the calendar, turn its months with
/// PageUp / PageDown (the picker's own keys) until the target month shows, click the day,
/// submit. The month on show is not written anywhere the observation reaches, so it is read
/// off the grid of day links: the weekday column of the 1st and the number of days, against
/// the months of the target's year; the two months that share both (January and July 2016)
/// are told apart by the previous step's grid and key.
pub(super) fn choose_date(p: &Page<'_>) -> Step {
    let (m, d, y) = mdy(p.goal).ok_or_else(|| format!("no date in {:?}", p.goal))?;
    let date = format!("{m:02}/{d:02}/{y:04}");
    let field = p.textbox_of_type("text")?;
    if field.value.as_deref() == Some(date.as_str()) {
        return submit(p);
    }
    let days = day_links(p.visible());
    if days.is_empty() {
        return p.click(field, "open the calendar");
    }
    let shown = match months_matching(&days, y).as_slice() {
        [one] => *one,
        several => {
            let previous = p.last_step().and_then(|s| {
                let obs = s.observation.as_ref()?;
                let before = months_matching(&day_links(obs.elements.iter()), y);
                let delta: i64 = match s.action.as_str() {
                    a if a.contains("PageUp") => -1,
                    a if a.contains("PageDown") => 1,
                    _ => return None,
                };
                match before.as_slice() {
                    [b] => Some(i64::from(*b) + delta),
                    _ => None,
                }
            });
            match previous {
                Some(prev) if several.iter().any(|c| i64::from(*c) == prev) => prev as u32,
                _ => {
                    return Err(format!(
                        "cannot tell which month the calendar shows (one of {several:?})"
                    ));
                }
            }
        }
    };
    let key = match shown.cmp(&m) {
        std::cmp::Ordering::Less => "PageDown",
        std::cmp::Ordering::Greater => "PageUp",
        std::cmp::Ordering::Equal => {
            let day = days
                .iter()
                .find(|(n, _)| *n == d)
                .ok_or_else(|| format!("the calendar has no day {d}"))?;
            return p.click(day.1, format!("pick day {d} of month {m}"));
        }
    };
    let keys = browser_pool::KeyCombo::parse(key).map_err(|e| e.to_string())?;
    Ok((
        Action::Press(keys),
        format!("the calendar shows month {shown}, the date is in month {m}: {key}"),
    ))
}

/// The calendar's day links (label 1 to 31) and their day numbers.
pub(super) fn day_links<'e>(
    elements: impl Iterator<Item = &'e Element>,
) -> Vec<(u32, &'e Element)> {
    elements
        .filter(|e| e.tag == "a" && e.in_viewport)
        .filter_map(|e| {
            let n: u32 = e.label.trim().parse().ok()?;
            (1..=31).contains(&n).then_some((n, e))
        })
        .collect()
}

/// The months of `year` whose 1st falls on the grid's column of day 1 (columns Sunday
/// first) and whose length is the grid's last day.
pub(super) fn months_matching(days: &[(u32, &Element)], year: u32) -> Vec<u32> {
    let mut columns: Vec<i64> = days.iter().map(|(_, e)| e.bbox.x.round() as i64).collect();
    columns.sort_unstable();
    columns.dedup();
    let Some((_, first)) = days.iter().find(|(n, _)| *n == 1) else {
        return Vec::new();
    };
    let Some(col) = columns
        .iter()
        .position(|c| *c == first.bbox.x.round() as i64)
    else {
        return Vec::new();
    };
    let last = days.iter().map(|(n, _)| *n).max().unwrap_or(0);
    if columns.len() != 7 {
        return Vec::new();
    }
    (1..=12)
        .filter(|&month| weekday(year, month, 1) as usize == col && month_len(year, month) == last)
        .collect()
}

/// Day of the week, 0 = Sunday (Sakamoto's method).
pub(super) fn weekday(year: u32, month: u32, day: u32) -> u32 {
    const T: [u32; 12] = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4];
    let y = if month < 3 {
        year.saturating_sub(1)
    } else {
        year
    };
    (y + y / 4 - y / 100 + y / 400 + T[(month - 1) as usize] + day) % 7
}

pub(super) fn month_len(year: u32, month: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

pub(super) fn enter_time(p: &Page<'_>) -> Step {
    let (h, m) = clock(p.goal).ok_or_else(|| format!("no time in {:?}", p.goal))?;
    let value = format!("{h:02}:{m:02}");
    let field = p.textbox_of_type("time")?;
    if field.value.as_deref() != Some(value.as_str()) {
        return type_into(field, &value, format!("the time {value}"));
    }
    submit(p)
}
