//! Solvers that click: buttons, links, dialogs, options, checkboxes, tabs and sections.

use browser_pool::Element;

use super::Step;
use super::page::{Page, submit};
use super::utterance::{between, first_quoted, quoted};

pub(super) fn click_button(p: &Page<'_>) -> Step {
    let label = first_quoted(p.goal)?;
    let b = p.button(&label)?;
    p.click(b, format!("click the button {label:?}"))
}

pub(super) fn click_button_sequence(p: &Page<'_>) -> Step {
    let label = if p.step == 0 { "ONE" } else { "TWO" };
    let b = p.button(label)?;
    p.click(b, format!("step {}: button {label}", p.step + 1))
}

pub(super) fn click_test(p: &Page<'_>) -> Step {
    let b = p.buttons().next().ok_or("no button on the page")?;
    p.click(b, "the only button")
}

pub(super) fn click_link(p: &Page<'_>) -> Step {
    let word = first_quoted(p.goal)?;
    let link = p
        .labelled(&word, &["link", "generic"])
        .ok_or_else(|| format!("no link {word:?} on the page"))?;
    p.click(link, format!("the link {word:?}"))
}

pub(super) fn click_dialog(p: &Page<'_>) -> Step {
    let close = p.button("Close")?;
    p.click(close, "the dialog's x is its Close button")
}

pub(super) fn click_dialog_2(p: &Page<'_>) -> Step {
    let label = first_quoted(p.goal)?;
    // The title bar's "x" is labelled "Close".
    let label = if label.eq_ignore_ascii_case("x") {
        "Close".to_string()
    } else {
        label
    };
    let b = p.button(&label)?;
    p.click(b, format!("the dialog button {label:?}"))
}

pub(super) fn click_option(p: &Page<'_>) -> Step {
    let name = between(p.goal, "Select ", " and click Submit")?;
    let radio = p
        .of_role("radio")
        .into_iter()
        .find(|e| e.label == name)
        .ok_or_else(|| format!("no option {name:?}"))?;
    if radio.checked != Some(true) {
        return p.click(radio, format!("choose {name:?}"));
    }
    submit(p)
}

pub(super) fn click_checkboxes(p: &Page<'_>) -> Step {
    let list = between(p.goal, "Select ", " and click Submit")?;
    let wanted: Vec<&str> = if list == "nothing" {
        Vec::new()
    } else {
        list.split(", ").map(str::trim).collect()
    };
    let boxes = p.of_role("checkbox");
    for w in &wanted {
        if !boxes.iter().any(|b| b.label == *w) {
            return Err(format!("no checkbox {w:?} on the page"));
        }
    }
    if let Some(b) = boxes
        .iter()
        .find(|b| (b.checked == Some(true)) != wanted.contains(&b.label.as_str()))
    {
        let verb = if b.checked == Some(true) {
            "untick"
        } else {
            "tick"
        };
        return p.click(b, format!("{verb} {:?}", b.label));
    }
    submit(p)
}

pub(super) fn click_tab(p: &Page<'_>) -> Step {
    let n = between(p.goal, "Tab #", ".")?;
    let label = format!("Tab #{n}");
    let tab = p
        .labelled(&label, &["tab", "link", "presentation"])
        .ok_or_else(|| format!("no tab {label:?}"))?;
    p.click(tab, format!("open {label}"))
}

/// click-tab-2 and click-collapsible-2: the link sits in one of several tabs or sections.
/// Click it when it is visible; else open the next section (one per step, in order).
pub(super) fn find_link_in_sections(p: &Page<'_>, header: &str) -> Step {
    let word = quoted(p.goal)
        .into_iter()
        .next()
        .ok_or("no quoted link text in the utterance")?;
    let headers: Vec<&Element> = {
        let mut seen = Vec::new();
        let mut out: Vec<&Element> = Vec::new();
        for e in p.visible().filter(|e| e.label.starts_with(header)) {
            // A tab is listed twice (the <li> and its <a>): keep one per label.
            if !seen.contains(&e.label) {
                seen.push(e.label.clone());
                out.push(e);
            }
        }
        out
    };
    if let Some(link) = p
        .visible()
        .find(|e| e.label == word && !e.label.starts_with(header))
    {
        return p.click(link, format!("the link {word:?} is showing"));
    }
    // Tabs start with the first one open; sections start all closed.
    let first = if header.starts_with("Tab") { 1 } else { 0 };
    let next = first + p.step as usize;
    let h = headers
        .get(next)
        .ok_or_else(|| format!("opened every {header}… section and never saw the link {word:?}"))?;
    p.click(
        h,
        format!("{word:?} is not showing: open {:?}", h.label.trim()),
    )
}

pub(super) fn click_collapsible(p: &Page<'_>) -> Step {
    if p.step == 0 {
        let h = p
            .visible()
            .find(|e| e.label.starts_with("Section #"))
            .ok_or("no section header on the page")?;
        return p.click(h, format!("expand {:?}", h.label));
    }
    submit(p)
}
