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
//! The solvers are grouped by what they do (`clicking`, `forms`, `dates`, `dragging`);
//! `page` and `utterance` hold what they all read.
//!
//! Solved ([`SOLVED`]): choose-date, choose-list, click-button, click-button-sequence,
//! click-checkboxes, click-collapsible, click-collapsible-2, click-dialog, click-dialog-2,
//! click-link, click-option, click-scroll-list, click-tab, click-tab-2, click-test,
//! click-test-2, drag-box, drag-items, enter-date, enter-password, enter-text, enter-text-2,
//! enter-text-dynamic, enter-time, focus-text, focus-text-2, login-user, scroll-text-2,
//! unicode-test, use-spinner.

mod clicking;
mod dates;
mod dragging;
mod forms;
mod page;
mod utterance;

use futures::FutureExt;
use futures::future::BoxFuture;

use browser_pool::Action;

use super::{Decision, Policy, PolicyError, StepInput};
use clicking::{
    click_button, click_button_sequence, click_checkboxes, click_collapsible, click_dialog,
    click_dialog_2, click_link, click_option, click_tab, click_test, find_link_in_sections,
};
use dates::{choose_date, enter_date, enter_time};
use dragging::{drag_box, drag_items, scroll_text_2};
use forms::{
    choose_list, click_scroll_list, enter_password, enter_text, enter_text_2, focus_text,
    focus_text_2, login_user, use_spinner,
};
use page::{Page, click_named};
use utterance::quoted_or_last_word;

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

#[cfg(test)]
mod tests {
    use super::dates::{month_len, weekday};
    use super::utterance::{between, clock, mdy, ordinal, quoted};
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
            answered: None,
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
