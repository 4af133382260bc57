//! Solvers that drag and scroll: boxes, sortable lists and a text area.

use browser_pool::action::Direction;
use browser_pool::{Action, Element, Target};

use super::Step;
use super::page::{Page, submit};
use super::utterance::ordinal;

pub(super) fn drag_box(p: &Page<'_>) -> Step {
    let small = p.labelled("s", &["generic"]).ok_or("no small box")?;
    let large = p.labelled("L", &["generic"]).ok_or("no large box")?;
    let (s, l) = (small.bbox, large.bbox);
    let inside =
        s.x > l.x && s.y > l.y && s.x + s.width < l.x + l.width && s.y + s.height < l.y + l.height;
    if !inside {
        return Ok((
            Action::Drag {
                from: Target::Element(small.id),
                to: Target::Element(large.id),
            },
            "drop the small box on the large box's centre".into(),
        ));
    }
    submit(p)
}

/// jQuery UI sortable: an item moves past another once the pointer crosses that item's
/// middle, so the drop point is three quarters down the item now at the target position
/// (moving down) or a quarter down it (moving up).
pub(super) fn drag_items(p: &Page<'_>) -> Step {
    let rest = p
        .goal
        .strip_prefix("Drag ")
        .ok_or_else(|| format!("unexpected utterance {:?}", p.goal))?;
    let items: Vec<&Element> = p.visible().filter(|e| e.tag == "li").collect();
    let (from, how) = items
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            rest.strip_prefix(e.label.as_str())
                .and_then(|r| r.strip_prefix(' '))
                .map(|how| (i, how))
        })
        .max_by_key(|(i, _)| items[*i].label.len())
        .ok_or_else(|| format!("none of the items is named in {:?}", p.goal))?;
    let n = items.len();
    let to = match how.trim_end_matches('.') {
        "to the top" => 0,
        "to the bottom" => n - 1,
        "down by one position" => from + 1,
        "up by one position" => from.saturating_sub(1),
        other => {
            let k = other
                .split_whitespace()
                .find_map(ordinal)
                .ok_or_else(|| format!("cannot read the target position {other:?}"))?;
            k.checked_sub(1).ok_or("positions count from 1")?
        }
    };
    if to >= n {
        return Err(format!("position {} is past the last item", to + 1));
    }
    if p.step > 0 {
        return Err("the item was dragged; the episode should have ended".into());
    }
    let src = items[from].bbox;
    let dst = items[to].bbox;
    let frac = if to > from { 0.8 } else { 0.2 };
    let (x, _) = src.center();
    let y = dst.y + dst.height * frac;
    Ok((
        Action::Drag {
            from: Target::Element(items[from].id),
            to: Target::Point { x, y },
        },
        format!(
            "move {:?} from position {} to {}",
            items[from].label,
            from + 1,
            to + 1
        ),
    ))
}

/// Scroll the text area one stretch at a time until the scroll action reports the edge.
pub(super) fn scroll_text_2(p: &Page<'_>) -> Step {
    let direction = if p.goal.contains("to the bottom") {
        Direction::Down
    } else if p.goal.contains("to the top") {
        Direction::Up
    } else {
        return Err(format!("which way? {:?}", p.goal));
    };
    let edge = match direction {
        Direction::Down => "already at its bottom",
        Direction::Up => "already at its top",
    };
    let at_edge = p
        .last_step()
        .and_then(|s| s.error.as_deref())
        .is_some_and(|e| e.contains(edge));
    if at_edge {
        return submit(p);
    }
    let area = p
        .visible()
        .find(|e| e.input_type.as_deref() == Some("textarea"))
        .ok_or("no text area on the page")?;
    Ok((
        Action::ScrollElement {
            target: Target::Element(area.id),
            direction,
        },
        "scroll the text area towards the edge".into(),
    ))
}
