//! Solvers that fill form fields: text, passwords, logins, focus, lists and spinners.

use browser_pool::{Action, Element, Target};

use super::Step;
use super::page::{Page, submit, type_into};
use super::utterance::{between, first_quoted, ordinal, quoted};

pub(super) fn enter_text(p: &Page<'_>) -> Step {
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

pub(super) fn enter_text_2(p: &Page<'_>) -> Step {
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
pub(super) fn enter_password(p: &Page<'_>) -> Step {
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

pub(super) fn login_user(p: &Page<'_>) -> Step {
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

pub(super) fn focus_text(p: &Page<'_>) -> Step {
    let field = p
        .textboxes()
        .into_iter()
        .next()
        .ok_or("no text field on the page")?;
    p.click(field, "focus the text field")
}

pub(super) fn focus_text_2(p: &Page<'_>) -> Step {
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

pub(super) fn choose_list(p: &Page<'_>) -> Step {
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
pub(super) fn click_scroll_list(p: &Page<'_>) -> Step {
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

pub(super) fn use_spinner(p: &Page<'_>) -> Step {
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
