//! Scripted MiniWoB++ solvers: the `miniwob-solver` policy.
//!
//! One small solver per MiniWoB++ task, chosen by task id (`miniwob.<name>`). A solver reads
//! the page only as any policy does (the utterance in [`StepInput::instruction`], the
//! numbered elements with their roles, labels, values and boxes, the step index and the
//! history) and acts only through the action grammar, by element number or coordinates:
//! no `css=` targets, no scripts, nothing of MiniWoB's internals. Most solvers are
//! stateless: each step compares the page with the goal and takes the next missing action
//! (type what is not typed yet, tick what is not ticked, then submit), so a step that did
//! not take effect is simply tried again. A solver that cannot act stops and says why.
//!
//! Solved ([`SOLVED`]): choose-date, choose-list, click-button, click-button-sequence,
//! click-checkboxes, click-collapsible, click-collapsible-2, click-dialog, click-dialog-2,
//! click-link, click-option, click-scroll-list, click-tab, click-tab-2, click-test,
//! click-test-2, drag-box, drag-items, enter-date, enter-password, enter-text, enter-text-2,
//! enter-text-dynamic, enter-time, focus-text, focus-text-2, login-user, scroll-text-2,
//! unicode-test, use-spinner.

use futures::FutureExt;
use futures::future::BoxFuture;

use browser_pool::action::Direction;
use browser_pool::{Action, Element, Target};

use super::{Decision, Policy, PolicyError, StepInput};

/// The `miniwob-solver` policy.
#[derive(Debug, Clone, Copy, Default)]
pub struct MiniWobSolver;

/// The MiniWoB++ tasks (names without the `miniwob.` prefix) this policy solves.
pub const SOLVED: &[&str] = &[
    "choose-date",
    "choose-list",
    "click-button",
    "click-button-sequence",
    "click-checkboxes",
    "click-collapsible",
    "click-collapsible-2",
    "click-dialog",
    "click-dialog-2",
    "click-link",
    "click-option",
    "click-scroll-list",
    "click-tab",
    "click-tab-2",
    "click-test",
    "click-test-2",
    "drag-box",
    "drag-items",
    "enter-date",
    "enter-password",
    "enter-text",
    "enter-text-2",
    "enter-text-dynamic",
    "enter-time",
    "focus-text",
    "focus-text-2",
    "login-user",
    "scroll-text-2",
    "unicode-test",
    "use-spinner",
];

impl Policy for MiniWobSolver {
    fn name(&self) -> &str {
        "miniwob-solver"
    }

    fn decide(&self, input: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>> {
        let decision = match solve(&input) {
            Ok((action, thought)) => Decision::action(action, thought),
            Err(why) => Decision::action(Action::Stop, why),
        };
        async move { Ok(decision) }.boxed()
    }
}

/// A step's choice: the action and why, or why the solver cannot act.
type Step = Result<(Action, String), String>;

/// What a solver looks at.
struct Page<'a> {
    goal: &'a str,
    elements: &'a [Element],
    step: u32,
    input: &'a StepInput,
}

fn solve(input: &StepInput) -> Step {
    let id = input.task.id.as_str();
    let Some(name) = id.strip_prefix("miniwob.") else {
        return Err(format!(
            "miniwob-solver only plays MiniWoB++ tasks (miniwob.<name>), not {id}"
        ));
    };
    let p = Page {
        goal: &input.instruction,
        elements: &input.observation.elements,
        step: input.step,
        input,
    };
    match name {
        "click-button" | "unicode-test" => click_button(&p),
        "click-button-sequence" => click_button_sequence(&p),
        "click-checkboxes" => click_checkboxes(&p),
        "click-collapsible" => click_collapsible(&p),
        "click-collapsible-2" => find_link_in_sections(&p, "Section #"),
        "click-dialog" => click_dialog(&p),
        "click-dialog-2" => click_dialog_2(&p),
        "click-link" => click_link(&p),
        "click-option" => click_option(&p),
        "click-scroll-list" => click_scroll_list(&p),
        "click-tab" => click_tab(&p),
        "click-tab-2" => find_link_in_sections(&p, "Tab #"),
        "click-test" => click_test(&p),
        "click-test-2" => click_named(&p, &quoted_or_last_word(p.goal)?),
        "choose-date" => choose_date(&p),
        "choose-list" => choose_list(&p),
        "drag-box" => drag_box(&p),
        "drag-items" => drag_items(&p),
        "enter-date" => enter_date(&p),
        "enter-password" => enter_password(&p),
        "enter-text" | "enter-text-dynamic" => enter_text(&p),
        "enter-text-2" => enter_text_2(&p),
        "enter-time" => enter_time(&p),
        "focus-text" => focus_text(&p),
        "focus-text-2" => focus_text_2(&p),
        "login-user" => login_user(&p),
        "scroll-text-2" => scroll_text_2(&p),
        "use-spinner" => use_spinner(&p),
        other => Err(format!(
            "no solver for MiniWoB++ task {other:?} (solved: {})",
            SOLVED.join(", ")
        )),
    }
}

// ---- reading the utterance ----------------------------------------------------------------

/// The texts between double quotes, in order.
fn quoted(goal: &str) -> Vec<String> {
    goal.split('"')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

fn first_quoted(goal: &str) -> Result<String, String> {
    quoted(goal)
        .into_iter()
        .next()
        .ok_or_else(|| format!("no quoted text in the utterance {goal:?}"))
}

/// A quoted text, else the last word without its full stop (`Click button ONE.` → `ONE`).
fn quoted_or_last_word(goal: &str) -> Result<String, String> {
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
fn between<'g>(goal: &'g str, start: &str, end: &str) -> Result<&'g str, String> {
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
fn mdy(text: &str) -> Option<(u32, u32, u32)> {
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
fn clock(goal: &str) -> Option<(u32, u32)> {
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
fn ordinal(word: &str) -> Option<usize> {
    let digits: String = word.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

// ---- finding elements ---------------------------------------------------------------------

fn norm(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

impl Page<'_> {
    fn visible(&self) -> impl Iterator<Item = &Element> {
        self.elements
            .iter()
            .filter(|e| e.in_viewport && e.bbox.width > 0.0 && e.bbox.height > 0.0)
    }

    /// The first visible element with exactly this label (case and spacing ignored),
    /// preferring the given roles in order.
    fn labelled(&self, label: &str, roles: &[&str]) -> Option<&Element> {
        let want = norm(label);
        let matching = || self.visible().filter(|e| norm(&e.label) == want);
        roles
            .iter()
            .find_map(|r| matching().find(|e| e.role == *r))
            .or_else(|| matching().next())
    }

    fn buttons(&self) -> impl Iterator<Item = &Element> {
        self.visible().filter(|e| e.role == "button")
    }

    fn button(&self, label: &str) -> Result<&Element, String> {
        self.labelled(label, &["button"])
            .filter(|e| e.role == "button")
            .ok_or_else(|| format!("no button labelled {label:?} on the page"))
    }

    fn textboxes(&self) -> Vec<&Element> {
        self.visible()
            .filter(|e| matches!(e.role.as_str(), "textbox" | "searchbox" | "spinbutton"))
            .collect()
    }

    fn textbox_of_type(&self, input_type: &str) -> Result<&Element, String> {
        self.textboxes()
            .into_iter()
            .find(|e| e.input_type.as_deref() == Some(input_type))
            .ok_or_else(|| format!("no {input_type} field on the page"))
    }

    fn of_role(&self, role: &str) -> Vec<&Element> {
        self.visible().filter(|e| e.role == role).collect()
    }

    /// Clicks `e` where nothing else is drawn over it: at its centre by number when that is
    /// clear, else at the clear point of its box nearest the centre (MiniWoB places some
    /// buttons so that they overlap). Elements that contain `e` or lie inside it (a tab and
    /// its link, a dialog and its buttons) do not count as covering it.
    fn click(&self, e: &Element, why: impl Into<String>) -> Step {
        let b = e.bbox;
        let inside = |r: &browser_pool::Rect, x: f64, y: f64| {
            x >= r.x && x <= r.x + r.width && y >= r.y && y <= r.y + r.height
        };
        let contains = |outer: &browser_pool::Rect, inner: &browser_pool::Rect| {
            inner.x >= outer.x - 1.0
                && inner.y >= outer.y - 1.0
                && inner.x + inner.width <= outer.x + outer.width + 1.0
                && inner.y + inner.height <= outer.y + outer.height + 1.0
        };
        let others: Vec<&browser_pool::Rect> = self
            .visible()
            .filter(|o| o.id != e.id && !contains(&o.bbox, &b) && !contains(&b, &o.bbox))
            .map(|o| &o.bbox)
            .collect();
        let clear = |x: f64, y: f64| !others.iter().any(|r| inside(r, x, y));
        let (cx, cy) = b.center();
        if clear(cx, cy) {
            return click(e, why);
        }
        const N: usize = 9;
        let mut best: Option<(f64, f64, f64)> = None;
        for i in 0..N {
            for j in 0..N {
                let x = b.x + b.width * (0.1 + 0.8 * i as f64 / (N - 1) as f64);
                let y = b.y + b.height * (0.1 + 0.8 * j as f64 / (N - 1) as f64);
                let d = (x - cx).powi(2) + (y - cy).powi(2);
                if clear(x, y) && best.is_none_or(|(_, _, bd)| d < bd) {
                    best = Some((x, y, d));
                }
            }
        }
        match best {
            Some((x, y, _)) => Ok((
                Action::Click(Target::Point {
                    x: x.round(),
                    y: y.round(),
                }),
                format!("{} (at a point of [{}] nothing covers)", why.into(), e.id),
            )),
            None => click(e, why),
        }
    }

    /// The step before this one, if any.
    fn last_step(&self) -> Option<&super::PastStep> {
        self.input.history.last()
    }
}

fn click(e: &Element, why: impl Into<String>) -> Step {
    Ok((Action::Click(Target::Element(e.id)), why.into()))
}

fn type_into(e: &Element, text: &str, why: impl Into<String>) -> Step {
    Ok((
        Action::Type {
            target: Target::Element(e.id),
            text: text.to_string(),
            clear: true,
        },
        why.into(),
    ))
}

fn submit(p: &Page<'_>) -> Step {
    let b = p
        .buttons()
        .find(|e| matches!(norm(&e.label).as_str(), "submit" | "login" | "ok"))
        .ok_or("no submit button on the page")?;
    p.click(b, format!("everything is in place: press {:?}", b.label))
}

fn click_named(p: &Page<'_>, label: &str) -> Step {
    let e = p
        .labelled(label, &["button", "link", "tab"])
        .ok_or_else(|| format!("nothing labelled {label:?} on the page"))?;
    p.click(e, format!("the goal names {label:?}: click it"))
}

// ---- clicking -----------------------------------------------------------------------------

fn click_button(p: &Page<'_>) -> Step {
    let label = first_quoted(p.goal)?;
    let b = p.button(&label)?;
    p.click(b, format!("click the button {label:?}"))
}

fn click_button_sequence(p: &Page<'_>) -> Step {
    let label = if p.step == 0 { "ONE" } else { "TWO" };
    let b = p.button(label)?;
    p.click(b, format!("step {}: button {label}", p.step + 1))
}

fn click_test(p: &Page<'_>) -> Step {
    let b = p.buttons().next().ok_or("no button on the page")?;
    p.click(b, "the only button")
}

fn click_link(p: &Page<'_>) -> Step {
    let word = first_quoted(p.goal)?;
    let link = p
        .labelled(&word, &["link", "generic"])
        .ok_or_else(|| format!("no link {word:?} on the page"))?;
    p.click(link, format!("the link {word:?}"))
}

fn click_dialog(p: &Page<'_>) -> Step {
    let close = p.button("Close")?;
    p.click(close, "the dialog's x is its Close button")
}

fn click_dialog_2(p: &Page<'_>) -> Step {
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

fn click_option(p: &Page<'_>) -> Step {
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

fn click_checkboxes(p: &Page<'_>) -> Step {
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

fn click_tab(p: &Page<'_>) -> Step {
    let n = between(p.goal, "Tab #", ".")?;
    let label = format!("Tab #{n}");
    let tab = p
        .labelled(&label, &["tab", "link", "presentation"])
        .ok_or_else(|| format!("no tab {label:?}"))?;
    p.click(tab, format!("open {label}"))
}

/// click-tab-2 and click-collapsible-2: the link sits in one of several tabs or sections.
/// Click it when it is visible; else open the next section (one per step, in order).
fn find_link_in_sections(p: &Page<'_>, header: &str) -> Step {
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

fn click_collapsible(p: &Page<'_>) -> Step {
    if p.step == 0 {
        let h = p
            .visible()
            .find(|e| e.label.starts_with("Section #"))
            .ok_or("no section header on the page")?;
        return p.click(h, format!("expand {:?}", h.label));
    }
    submit(p)
}

// ---- typing -------------------------------------------------------------------------------

fn enter_text(p: &Page<'_>) -> Step {
    let text = first_quoted(p.goal)?;
    let field = p
        .textboxes()
        .into_iter()
        .next()
        .ok_or("no text field on the page")?;
    if field.value.as_deref() != Some(text.as_str()) {
        return type_into(field, &text, format!("type {text:?}"));
    }
    submit(p)
}

fn enter_text_2(p: &Page<'_>) -> Step {
    let text = first_quoted(p.goal)?;
    let text = if p.goal.contains("upper case") {
        text.to_uppercase()
    } else if p.goal.contains("lower case") {
        text.to_lowercase()
    } else {
        return Err(format!("which case? {:?}", p.goal));
    };
    let field = p
        .textboxes()
        .into_iter()
        .next()
        .ok_or("no text field on the page")?;
    if field.value.as_deref() != Some(text.as_str()) {
        return type_into(field, &text, format!("type {text:?}"));
    }
    submit(p)
}

/// Passwords are shown masked (`••••` once filled): fill the empty ones.
fn enter_password(p: &Page<'_>) -> Step {
    let password = first_quoted(p.goal)?;
    let fields: Vec<&Element> = p
        .textboxes()
        .into_iter()
        .filter(|e| e.input_type.as_deref() == Some("password"))
        .collect();
    if fields.is_empty() {
        return Err("no password fields on the page".into());
    }
    if let Some(f) = fields
        .iter()
        .find(|f| f.value.as_deref().unwrap_or_default().is_empty())
    {
        return type_into(f, &password, "fill the next password field");
    }
    submit(p)
}

fn login_user(p: &Page<'_>) -> Step {
    let q = quoted(p.goal);
    let [user, password] = q.as_slice() else {
        return Err(format!(
            "expected a quoted username and password in {:?}",
            p.goal
        ));
    };
    let name = p.textbox_of_type("text")?;
    if name.value.as_deref() != Some(user.as_str()) {
        return type_into(name, user, "the username");
    }
    let pass = p.textbox_of_type("password")?;
    if pass.value.as_deref().unwrap_or_default().is_empty() {
        return type_into(pass, password, "the password");
    }
    submit(p)
}

fn focus_text(p: &Page<'_>) -> Step {
    let field = p
        .textboxes()
        .into_iter()
        .next()
        .ok_or("no text field on the page")?;
    p.click(field, "focus the text field")
}

fn focus_text_2(p: &Page<'_>) -> Step {
    let n = p
        .goal
        .split_whitespace()
        .find_map(ordinal)
        .ok_or_else(|| format!("no ordinal in {:?}", p.goal))?;
    let fields = p.textboxes();
    let field = n
        .checked_sub(1)
        .and_then(|i| fields.get(i))
        .ok_or_else(|| format!("there is no text field number {n}"))?;
    p.click(field, format!("focus text field {n}"))
}

fn choose_list(p: &Page<'_>) -> Step {
    let option = between(p.goal, "Select ", " from the list")?;
    let list = p
        .visible()
        .find(|e| e.tag == "select")
        .ok_or("no list on the page")?;
    if list.value.as_deref() != Some(option) {
        if !list.options.iter().any(|o| o == option) {
            return Err(format!("the list has no option {option:?}"));
        }
        return Ok((
            Action::Select {
                target: Target::Element(list.id),
                option: option.to_string(),
            },
            format!("choose {option:?}"),
        ));
    }
    submit(p)
}

/// A multiple `<select>`: one `select` per wanted option (each adds to the selection),
/// then submit. Names are split on `, ` and glued back when a piece is not an option.
fn click_scroll_list(p: &Page<'_>) -> Step {
    let list = between(p.goal, "Select ", " from the scroll list")?;
    let select = p
        .visible()
        .find(|e| e.tag == "select")
        .ok_or("no list on the page")?;
    let mut wanted: Vec<String> = Vec::new();
    let mut piece = String::new();
    for part in list.split(", ") {
        if !piece.is_empty() {
            piece.push_str(", ");
        }
        piece.push_str(part);
        if select.options.contains(&piece) {
            wanted.push(std::mem::take(&mut piece));
        }
    }
    if !piece.is_empty() || wanted.is_empty() {
        return Err(format!(
            "cannot match {list:?} with the list's options {:?}",
            select.options
        ));
    }
    match wanted.get(p.step as usize) {
        Some(option) => Ok((
            Action::Select {
                target: Target::Element(select.id),
                option: option.clone(),
            },
            format!("add {option:?} to the selection"),
        )),
        None => submit(p),
    }
}

fn enter_date(p: &Page<'_>) -> Step {
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
fn choose_date(p: &Page<'_>) -> Step {
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
fn day_links<'e>(elements: impl Iterator<Item = &'e Element>) -> Vec<(u32, &'e Element)> {
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
fn months_matching(days: &[(u32, &Element)], year: u32) -> Vec<u32> {
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
fn weekday(year: u32, month: u32, day: u32) -> u32 {
    const T: [u32; 12] = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4];
    let y = if month < 3 {
        year.saturating_sub(1)
    } else {
        year
    };
    (y + y / 4 - y / 100 + y / 400 + T[(month - 1) as usize] + day) % 7
}

fn month_len(year: u32, month: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn enter_time(p: &Page<'_>) -> Step {
    let (h, m) = clock(p.goal).ok_or_else(|| format!("no time in {:?}", p.goal))?;
    let value = format!("{h:02}:{m:02}");
    let field = p.textbox_of_type("time")?;
    if field.value.as_deref() != Some(value.as_str()) {
        return type_into(field, &value, format!("the time {value}"));
    }
    submit(p)
}

fn use_spinner(p: &Page<'_>) -> Step {
    let n: i64 = between(p.goal, "Select ", " with the spinner")?
        .trim()
        .parse()
        .map_err(|_| format!("no number in {:?}", p.goal))?;
    let field = p
        .of_role("spinbutton")
        .into_iter()
        .next()
        .ok_or("no spinner on the page")?;
    let now: Option<i64> = field.value.as_deref().and_then(|v| v.trim().parse().ok());
    if now != Some(n) {
        return type_into(field, &n.to_string(), format!("set the spinner to {n}"));
    }
    submit(p)
}

// ---- dragging and scrolling ---------------------------------------------------------------

fn drag_box(p: &Page<'_>) -> Step {
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
fn drag_items(p: &Page<'_>) -> Step {
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
fn scroll_text_2(p: &Page<'_>) -> Step {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_utterances() {
        assert_eq!(quoted(r#"Click on the "Ok" button."#), vec!["Ok"]);
        assert_eq!(
            quoted(r#"Enter the username "a b" and the password "x" into"#),
            vec!["a b", "x"]
        );
        assert_eq!(quoted_or_last_word("Click button ONE.").unwrap(), "ONE");
        assert_eq!(
            between(
                "Select nZV6g2 and click Submit.",
                "Select ",
                " and click Submit"
            ),
            Ok("nZV6g2")
        );
        assert_eq!(
            mdy("Enter 12/21/2018 as the date and hit submit."),
            Some((12, 21, 2018))
        );
        assert_eq!(clock("Enter 1:04 AM as the time"), Some((1, 4)));
        assert_eq!(clock("Enter 12:05 AM as the time"), Some((0, 5)));
        assert_eq!(clock("Enter 12:30 PM as the time"), Some((12, 30)));
        assert_eq!(clock("Enter 7:59 PM as the time"), Some((19, 59)));
        assert_eq!(clock("Enter 13:04 as the time"), Some((13, 4)));
        assert_eq!(clock("Enter 1:€5 AM"), None, "no panic on odd text");
        assert_eq!(ordinal("3rd"), Some(3));
        assert_eq!(ordinal("1st"), Some(1));
        assert_eq!(ordinal("top"), None);
        assert_eq!(weekday(2016, 12, 1), 4, "Thursday");
        assert_eq!(weekday(2016, 5, 1), 0, "Sunday");
        assert_eq!(weekday(2000, 2, 29), 2, "Tuesday");
        assert_eq!(
            (month_len(2016, 2), month_len(2100, 2), month_len(2016, 9)),
            (29, 28, 30)
        );
    }

    fn input(task: &str, instruction: &str) -> StepInput {
        use browser_pool::{Observation, Screenshot, ScrollState};
        let task = tasks::miniwob_task(task, "http://127.0.0.1:1").expect("valid task");
        StepInput {
            task: std::sync::Arc::new(task),
            instruction: instruction.into(),
            observation: std::sync::Arc::new(Observation {
                url: String::new(),
                title: String::new(),
                screenshot: Screenshot {
                    bytes: Vec::new(),
                    mime: "image/jpeg",
                    width: 1280,
                    height: 720,
                    scale: 1.0,
                },
                elements: Vec::new(),
                scroll: ScrollState {
                    x: 0.0,
                    y: 0.0,
                    page_height: 720.0,
                    viewport_height: 720.0,
                },
                last_action_error: None,
                ..Default::default()
            }),
            history: std::sync::Arc::new([]),
            step: 0,
            max_steps: 10,
            seed: 1,
        }
    }

    #[test]
    fn every_solved_task_has_a_solver_and_the_rest_stop() {
        let mut sorted = SOLVED.to_vec();
        sorted.sort();
        assert_eq!(sorted, SOLVED, "kept sorted");
        for name in SOLVED {
            // An empty page: the solver must explain itself, never panic.
            match solve(&input(name, "Click on the \"x\" button.")) {
                Err(why) => assert!(!why.contains("no solver"), "{name}: {why}"),
                Ok((a, _)) => assert!(matches!(a, Action::Click(_)), "{name}: {a}"),
            }
        }
        let why = solve(&input("chase-circle", "Click the circle.")).unwrap_err();
        assert!(why.contains("no solver"), "{why}");
    }
}
