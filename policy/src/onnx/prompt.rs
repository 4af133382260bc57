//! Prompts for vision-language policies: the observation as text and images, in the
//! model's own chat template.
//!
//! Two styles: `plain` (context, then one action) and `structured`, WebGym's: append-only
//! memory, progress over subtasks, intention, then one action. The context keeps the last
//! few steps with their screenshots and older steps as one line each ("step i on <title>:
//! <action> → page changed/unchanged").

use image::DynamicImage;
use inference::grammar::Constraint;
use sha2::{Digest, Sha256};
use spaces::{ActionSet, ElementFormat};

use crate::output::Grounding;
use crate::{PastStep, StepInput};

/// Which prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptStyle {
    /// Context, then reasoning and one action.
    Plain,
    /// Memory, progress, intention, action (WebGym).
    Structured,
}

/// How prompts are built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptConfig {
    /// Which prompt.
    pub style: PromptStyle,
    /// Element numbers or grid coordinates.
    pub grounding: Grounding,
    /// Screenshots in context: the current one plus this many - 1 earlier ones.
    pub images: usize,
    /// Earlier steps shown as text lines, at most.
    pub history_lines: usize,
    /// Elements listed, at most.
    pub max_elements: usize,
    /// Where each element line puts the element's number.
    pub elements: ElementFormat,
    /// The kinds of action the policy may take: the prompt lists only these, and the
    /// constrained grammar allows only these.
    pub actions: ActionSet,
}

impl Default for PromptConfig {
    fn default() -> Self {
        PromptConfig {
            style: PromptStyle::Plain,
            grounding: Grounding::Marks,
            images: 1,
            history_lines: 12,
            max_elements: 60,
            elements: ElementFormat::NumberFirst,
            actions: ActionSet::all(),
        }
    }
}

/// How a model's actions address the page: the grid only for a vision model asked for it;
/// a text-only model never sees the screen, so it is always shown element numbers. One
/// rule for the prompt, the ONNX and HTTP policies' parsing and constraints, and replay.
pub fn effective_grounding(asked: Grounding, vision: bool) -> Grounding {
    if vision { asked } else { Grounding::Marks }
}

impl PromptConfig {
    /// The settings as a policy card records them.
    pub fn describe(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        let style = match self.style {
            PromptStyle::Plain => "plain",
            PromptStyle::Structured => "structured",
        };
        let grounding = match self.grounding {
            Grounding::Marks => "marks",
            Grounding::Coordinates => "coordinates",
        };
        m.insert("prompt".into(), style.into());
        m.insert("grounding".into(), grounding.into());
        m.insert("images".into(), self.images.into());
        m.insert("history_lines".into(), self.history_lines.into());
        m.insert("max_elements".into(), self.max_elements.into());
        if !self.elements.is_default() {
            m.insert(
                "elements".into(),
                serde_json::to_value(self.elements).expect("names serialize"),
            );
        }
        // Only when narrowed: the cards of policies with every action stay as they were.
        if !self.actions.is_all() {
            m.insert(
                "actions".into(),
                serde_json::to_value(self.actions).expect("names serialize"),
            );
        }
        m
    }
}

/// The grammar summary every prompt carries: the actions of `actions`, each with an
/// example of its form.
pub fn action_help(grounding: Grounding, actions: ActionSet) -> String {
    if actions.is_all() {
        return match grounding {
            Grounding::Marks => {
                "Actions (N is an element number): click(N), type(N, \"text\"), select(N, \"option\"), press(\"Enter\"), \
                 scroll(down), scroll(up), goto(\"url\"), back(), answer(\"text\"), stop()"
            }
            Grounding::Coordinates => {
                "Actions (x, y on a 0-1000 grid over the screenshot, 0,0 top-left): click(x, y), type(x, y, \"text\"), \
                 press(\"Enter\"), scroll(down), scroll(up), goto(\"url\"), back(), answer(\"text\"), stop()"
            }
        }
        .to_string();
    }
    let (lead, target) = match grounding {
        Grounding::Marks => ("Actions (N is an element number)", "N"),
        Grounding::Coordinates => (
            "Actions (x, y on a 0-1000 grid over the screenshot, 0,0 top-left)",
            "x, y",
        ),
    };
    // Tab actions are offered only while several tabs are open: `build` adds them then.
    let forms: Vec<String> = actions
        .names()
        .into_iter()
        .filter(|name| !matches!(*name, "switch_tab" | "close_tab"))
        .map(|name| match name {
            "click" | "double_click" | "right_click" | "hover" => format!("{name}({target})"),
            "drag" => format!("drag({target}, to=N)"),
            "type" => format!("type({target}, \"text\")"),
            "select" => format!("select({target}, \"option\")"),
            "press" => "press(\"Enter\")".into(),
            "scroll" => "scroll(down), scroll(up)".into(),
            "goto" => "goto(\"url\")".into(),
            "wait" => "wait(1000)".into(),
            "answer" => "answer(\"text\")".into(),
            other => format!("{other}()"),
        })
        .collect();
    if forms.is_empty() {
        // What the grammar falls back to when the set offers nothing here.
        return format!("{lead}: stop()");
    }
    format!("{lead}: {}", forms.join(", "))
}

/// What the agent is told after an answer that does not end its episode (TTI's re-check
/// prompting): the answer quoted, and that it should look again before answering again.
pub fn recheck_note(answer: &str) -> String {
    format!(
        "You answered {answer:?}. Check the page again, then answer again to confirm or correct it."
    )
}

fn hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn history_line(i: usize, step: &PastStep, next_shot: &str) -> String {
    let changed = if step.screenshot == next_shot {
        "page unchanged"
    } else {
        "page changed"
    };
    let mut line = format!(
        "step {} on {:?}: {} → {changed}",
        i + 1,
        step.title,
        step.action
    );
    if let Some(e) = &step.error {
        line.push_str(&format!(" (failed: {e})"));
    }
    line
}

/// The user message's text and images for one step.
pub struct Built {
    /// The text.
    pub text: String,
    /// Screenshots, oldest first, the current one last.
    pub images: Vec<DynamicImage>,
}

/// What the prompt asks the model to write, given how its output is constrained: only
/// what the grammar allows. A bare-action grammar (`Constraint::Action`) forces an action
/// as the first token, so a prompt asking it to think first would ask for output the
/// grammar forbids; free and reasoned outputs may think, then end with the action line.
pub fn reply_instruction(style: PromptStyle, constrained: Option<Constraint>) -> &'static str {
    match (constrained, style) {
        (Some(Constraint::Action), _) => "Reply with one action only, nothing else.",
        (_, PromptStyle::Plain) => "Think briefly, then end with one line: Action: <one action>",
        (_, PromptStyle::Structured) => {
            "Reply in exactly this form:\nMemory: <your memory, with anything new appended>\n\
             Progress: <which parts of the task are done>\nIntention: <what the next action should achieve>\n\
             Action: <one action>"
        }
    }
}

/// Builds the observation message. Screenshots come marked (set-of-marks) in `Marks`
/// mode; `vision` false leaves them out (text-only models). `constrained` is how the
/// output will be decoded: the prompt asks only for what it allows.
pub fn build(
    input: &StepInput,
    cfg: &PromptConfig,
    vision: bool,
    constrained: Option<Constraint>,
) -> Built {
    let obs = &input.observation;
    let current_shot = hash(&obs.screenshot.bytes);
    let mut text = String::new();
    text.push_str(
        "You are a web agent. Complete the task by acting in the browser, one action per turn.\n",
    );
    // What is the same for every step of a run comes first, then the episode's task and
    // its earlier steps (append-only: a step's line says what the next page was), the page
    // last: a prefix cache (ours, vLLM's, SGLang's) then serves the head to every step and
    // all but the page to the next step of an episode.
    text.push_str(&action_help(
        effective_grounding(cfg.grounding, vision),
        cfg.actions,
    ));
    text.push('\n');
    text.push_str(&format!("Task: {}\n", input.instruction));
    let steps = input.history.len();
    if steps > 0 {
        text.push_str("Earlier steps:\n");
        let first = steps.saturating_sub(cfg.history_lines);
        for (i, step) in input.history.iter().enumerate().skip(first) {
            let next = input
                .history
                .get(i + 1)
                .map_or(current_shot.as_str(), |n| n.screenshot.as_str());
            text.push_str(&history_line(i, step, next));
            text.push('\n');
        }
    }
    text.push_str(&format!("Current page: {:?} ({})\n", obs.title, obs.url));
    if cfg.grounding == Grounding::Marks || !vision {
        text.push_str("Interactive elements");
        text.push_str(if vision {
            " (their numbers are drawn on the screenshot):\n"
        } else {
            ":\n"
        });
        for line in obs
            .element_lines_as(cfg.elements)
            .into_iter()
            .take(cfg.max_elements)
        {
            text.push_str(&line);
            text.push('\n');
        }
    }
    if let Some(e) = &obs.last_action_error {
        text.push_str(&format!("The last action failed: {e}\n"));
    }
    for e in &obs.events {
        text.push_str(&format!("Note: {e}\n"));
    }
    if let Some(answer) = &input.answered {
        text.push_str(&recheck_note(answer));
        text.push('\n');
    }
    if let Some(tree) = &obs.ax_tree {
        // The pool caps the tree by lines; a prompt needs a byte bound too.
        let cut = tree.char_indices().nth(6000).map_or(tree.len(), |(i, _)| i);
        text.push_str(&format!(
            "Accessibility tree ([N] is element N):\n{}\n",
            &tree[..cut]
        ));
    }
    if let Some(tabs) = obs.tabs_line() {
        text.push_str(&format!("Open tabs: {tabs}\n"));
    }
    if obs.tabs.len() > 1 {
        let tab_actions: Vec<String> = ["switch_tab", "close_tab"]
            .into_iter()
            .filter(|name| cfg.actions.allows(name))
            .map(|name| format!("{name}(N)"))
            .collect();
        if !tab_actions.is_empty() {
            text.push_str(&format!("Tab actions: {}\n", tab_actions.join(", ")));
        }
    }
    if cfg.style == PromptStyle::Structured {
        let memory = memory(&input.history);
        text.push_str(&format!(
            "Your memory so far: {}\n",
            memory.as_deref().unwrap_or("(empty)")
        ));
    }
    text.push_str(reply_instruction(cfg.style, constrained));
    let mut images = Vec::new();
    if vision {
        // Earlier screenshots still kept by the episode, then the current one.
        let earlier: Vec<&PastStep> = input
            .history
            .iter()
            .filter(|s| s.observation.is_some())
            .collect();
        for step in earlier
            .iter()
            .rev()
            .take(cfg.images.saturating_sub(1))
            .rev()
        {
            if let Some(img) = step
                .observation
                .as_ref()
                .and_then(|o| decode(o, cfg.grounding))
            {
                images.push(img);
            }
        }
        if let Some(img) = decode(obs, cfg.grounding) {
            images.push(img);
        }
    }
    Built { text, images }
}

/// Longest memory carried, in characters (the oldest notes go first past it).
const MAX_MEMORY_CHARS: usize = 2000;

/// The structured prompt's memory: append-only. A step's `Memory:` that extends the memory
/// so far replaces it; one that does not (the model dropped notes) is appended, so what was
/// once remembered stays until the length bound pushes it out.
fn memory(history: &[PastStep]) -> Option<String> {
    let mut memory = String::new();
    for m in history
        .iter()
        .filter_map(|s| s.thought.as_deref().and_then(memory_of))
    {
        if m.starts_with(memory.as_str()) {
            memory = m.to_string();
        } else if !memory.contains(m) {
            memory.push_str("; ");
            memory.push_str(m);
        }
    }
    let n = memory.chars().count();
    if n > MAX_MEMORY_CHARS {
        memory = memory.chars().skip(n - MAX_MEMORY_CHARS).collect();
    }
    (!memory.is_empty()).then_some(memory)
}

fn memory_of(thought: &str) -> Option<&str> {
    thought
        .lines()
        .find_map(|l| l.strip_prefix("Memory:"))
        .map(str::trim)
        .filter(|m| !m.is_empty())
}

fn decode(obs: &browser_pool::Observation, grounding: Grounding) -> Option<DynamicImage> {
    Some(match (grounding, &obs.marked) {
        // The pool drew the marks already.
        (Grounding::Marks, Some(marked)) => image::load_from_memory(&marked.bytes).ok()?,
        (Grounding::Marks, None) => {
            let img = image::load_from_memory(&obs.screenshot.bytes).ok()?;
            let mut rgb = img.to_rgb8();
            browser_pool::marks::draw(&mut rgb, &obs.elements, obs.screenshot.scale);
            DynamicImage::ImageRgb8(rgb)
        }
        (Grounding::Coordinates, _) => image::load_from_memory(&obs.screenshot.bytes).ok()?,
    })
}

pub use inference::template::{render, render_messages};

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use browser_pool::{Observation, PageEvent, TabInfo};

    use super::*;

    #[test]
    fn page_events_and_tabs_reach_the_prompt() {
        let task = tasks::miniwob_task("click-test", "http://127.0.0.1:1").expect("valid task");
        let tab = |number, title: &str, active| TabInfo {
            number,
            url: format!("http://x/{number}"),
            title: title.into(),
            active,
        };
        let obs = Observation {
            url: "http://x/2".into(),
            title: "Popup".into(),
            tabs: vec![tab(1, "Shop", false), tab(2, "Popup", true)],
            events: vec![PageEvent::Download {
                url: "http://x/f.zip".into(),
                filename: "f.zip".into(),
            }],
            ax_tree: Some("[3] button \"Buy\"".into()),
            ..Default::default()
        };
        let input = StepInput {
            instruction: "Buy".into(),
            task: Arc::new(task),
            observation: Arc::new(obs),
            history: Arc::new([]),
            step: 0,
            max_steps: 5,
            seed: 1,
            answered: None,
        };
        let text = build(&input, &PromptConfig::default(), false, None).text;
        assert!(text.contains("Note: a download of \"f.zip\""), "{text}");
        assert!(
            text.contains("[1] \"Shop\" [2] \"Popup\" (active)"),
            "{text}"
        );
        assert!(text.contains("switch_tab(N), close_tab(N)"), "{text}");
        assert!(
            text.contains("Accessibility tree ([N] is element N):\n[3] button \"Buy\""),
            "{text}"
        );
    }

    /// The prefix cache's premise: the head every step shares (the system line and the
    /// action help) comes first, then the task and the earlier steps, the page last; so
    /// each step's prompt starts with everything before the previous step's page.
    #[test]
    fn each_steps_prompt_starts_with_all_but_the_page_of_the_step_before() {
        let cfg = PromptConfig::default();
        let page = |title: &str| {
            let mut o = screenshot_observation();
            o.url = format!("http://x/{title}");
            o.title = title.into();
            o.elements[0].label = format!("{title} button");
            o
        };
        let shot = hash(&screenshot_observation().screenshot.bytes);
        let first = build(&step_input(page("Cart"), vec![]), &cfg, false, None).text;
        let second_steps = vec![past("Cart", "click(1)", &shot, None)];
        let second = build(
            &step_input(page("Address"), second_steps.clone()),
            &cfg,
            false,
            None,
        )
        .text;
        let mut third_steps = second_steps;
        third_steps.push(past("Address", "click(1)", &shot, None));
        let third = build(&step_input(page("Receipt"), third_steps), &cfg, false, None).text;
        let at = |t: &str, what: &str| t.find(what).unwrap_or_else(|| panic!("{what}: {t}"));
        assert!(at(&first, "Actions (") < at(&first, "Task: "), "{first}");
        assert!(at(&first, "Task: ") < at(&first, "Current page"), "{first}");
        for (before, after) in [(&first, &second), (&second, &third)] {
            let head = &before[..at(before, "Current page")];
            assert!(after.starts_with(head), "{before}\n---\n{after}");
            assert!(after.len() > head.len() + 100, "{after}");
        }
        assert!(
            at(&third, "step 2 on \"Address\"") < at(&third, "Current page"),
            "{third}"
        );
    }

    fn screenshot_observation() -> Observation {
        let img = image::RgbImage::from_pixel(320, 180, image::Rgb([250, 250, 250]));
        let mut jpeg = Vec::new();
        img.write_to(
            &mut std::io::Cursor::new(&mut jpeg),
            image::ImageFormat::Png,
        )
        .unwrap();
        Observation {
            url: "http://x/cart".into(),
            title: "Cart".into(),
            screenshot: browser_pool::Screenshot {
                bytes: jpeg,
                mime: "image/png",
                width: 320,
                height: 180,
                scale: 1.0,
            },
            elements: vec![browser_pool::Element {
                id: 1,
                tag: "button".into(),
                role: "button".into(),
                label: "Checkout".into(),
                bbox: browser_pool::Rect {
                    x: 100.0,
                    y: 50.0,
                    width: 80.0,
                    height: 30.0,
                },
                in_viewport: true,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn past(title: &str, action: &str, shot: &str, thought: Option<&str>) -> PastStep {
        PastStep {
            observation: None,
            screenshot: shot.into(),
            thought: thought.map(str::to_string),
            action: action.into(),
            url: "http://x/".into(),
            title: title.into(),
            error: None,
        }
    }

    fn step_input(obs: Observation, history: Vec<PastStep>) -> StepInput {
        let task = tasks::miniwob_task("click-test", "http://127.0.0.1:1").expect("valid task");
        StepInput {
            instruction: "Check out".into(),
            task: Arc::new(task),
            observation: Arc::new(obs),
            history: history.into(),
            step: 0,
            max_steps: 5,
            seed: 1,
            answered: None,
        }
    }

    #[test]
    fn label_first_prompts_put_each_number_after_what_names_its_element() {
        let input = step_input(screenshot_observation(), vec![]);
        let first = build(&input, &PromptConfig::default(), false, None).text;
        assert!(first.contains("\n[1] button \"Checkout\"\n"), "{first}");
        let cfg = PromptConfig {
            elements: ElementFormat::LabelFirst,
            ..PromptConfig::default()
        };
        let after = build(&input, &cfg, false, None).text;
        assert!(after.contains("\nbutton \"Checkout\" [1]\n"), "{after}");
        assert_eq!(
            after.replace("button \"Checkout\" [1]", "[1] button \"Checkout\""),
            first,
            "only the element lines differ"
        );
        assert_eq!(cfg.describe()["elements"], "label_first");
        assert!(!PromptConfig::default().describe().contains_key("elements"));
    }

    #[test]
    fn a_pending_answer_asks_the_agent_to_check_the_page_again() {
        let mut input = step_input(screenshot_observation(), vec![]);
        let note = "You answered \"300 km\". Check the page again, then answer again";
        let text = build(&input, &PromptConfig::default(), false, None).text;
        assert!(!text.contains("You answered"), "{text}");
        input.answered = Some("300 km".into());
        for style in [PromptStyle::Plain, PromptStyle::Structured] {
            let cfg = PromptConfig {
                style,
                ..PromptConfig::default()
            };
            let text = build(&input, &cfg, true, None).text;
            assert!(text.contains(note), "{style:?}: {text}");
        }
    }

    #[test]
    fn coordinates_prompts_show_the_plain_screenshot_and_the_grid_grammar() {
        let obs = screenshot_observation();
        let plain = image::load_from_memory(&obs.screenshot.bytes)
            .unwrap()
            .to_rgb8();
        let cfg = PromptConfig {
            grounding: Grounding::Coordinates,
            ..PromptConfig::default()
        };
        let built = build(&step_input(obs.clone(), vec![]), &cfg, true, None);
        assert!(built.text.contains("0-1000 grid"), "{}", built.text);
        assert!(built.text.contains("click(x, y)"), "{}", built.text);
        assert!(
            !built.text.contains("Interactive elements") && !built.text.contains("[1] button"),
            "no element list in coordinates mode: {}",
            built.text
        );
        assert_eq!(built.images.len(), 1);
        assert_eq!(built.images[0].to_rgb8(), plain, "no marks drawn");

        // Set-of-marks draws the numbers on the screenshot and lists the elements.
        let marks = build(
            &step_input(obs, vec![]),
            &PromptConfig::default(),
            true,
            None,
        );
        assert!(
            marks.text.contains("[1] button \"Checkout\""),
            "{}",
            marks.text
        );
        assert!(marks.text.contains("click(N)"));
        assert_ne!(marks.images[0].to_rgb8(), plain, "marks drawn");
    }

    #[test]
    fn structured_prompts_carry_an_append_only_memory_and_ask_for_progress_and_intention() {
        let history = vec![
            past(
                "Shop",
                "click(4)",
                "a",
                Some("Memory: mug costs $12\nProgress: found the mug\nIntention: open it"),
            ),
            // Extends the memory: replaces it.
            past(
                "Mug",
                "click(7)",
                "b",
                Some("Memory: mug costs $12; added to cart\nIntention: go to the cart"),
            ),
            // Drops the earlier notes: they are kept, the new note appended.
            past("Cart", "scroll(down)", "b", Some("Memory: cart total $12")),
        ];
        let cfg = PromptConfig {
            style: PromptStyle::Structured,
            ..PromptConfig::default()
        };
        let text = build(
            &step_input(screenshot_observation(), history),
            &cfg,
            false,
            None,
        )
        .text;
        assert!(
            text.contains("Your memory so far: mug costs $12; added to cart; cart total $12\n"),
            "{text}"
        );
        let form = text.split("Reply in exactly this form:\n").nth(1).unwrap();
        let fields: Vec<&str> = form.lines().map(|l| l.split(':').next().unwrap()).collect();
        assert_eq!(fields, ["Memory", "Progress", "Intention", "Action"]);

        let fresh = build(
            &step_input(screenshot_observation(), vec![]),
            &cfg,
            false,
            None,
        )
        .text;
        assert!(fresh.contains("Your memory so far: (empty)\n"), "{fresh}");
        let plain = build(
            &step_input(screenshot_observation(), vec![]),
            &PromptConfig::default(),
            false,
            None,
        )
        .text;
        assert!(!plain.contains("Memory") && plain.ends_with("Action: <one action>"));
    }

    /// Every prompt asks only for output its grammar allows: the reply the instruction
    /// describes, written as a model following it would (with a real action), is accepted
    /// by the grammar of every constraint, and parsed to the action when decoding is free.
    #[test]
    fn every_prompt_asks_only_for_what_its_grammar_allows() {
        use inference::grammar::{ActionGrammar, output_pattern};
        let obs = screenshot_observation();
        let reasoned = "The task names the second button.\nAction: click(1)";
        let structured =
            "Memory: the form is open\nProgress: none yet\nIntention: press it\nAction: click(1)";
        let clicks = ActionSet::only(["click"]).unwrap();
        for (style, actions) in [
            (PromptStyle::Plain, ActionSet::all()),
            (PromptStyle::Structured, ActionSet::all()),
            (PromptStyle::Plain, clicks),
        ] {
            for constrained in [None, Some(Constraint::Action), Some(Constraint::Reasoned)] {
                let cfg = PromptConfig {
                    style,
                    actions,
                    ..PromptConfig::default()
                };
                let text = build(&step_input(obs.clone(), vec![]), &cfg, false, constrained).text;
                let asked = reply_instruction(style, constrained);
                assert!(text.ends_with(asked), "{style:?} {constrained:?}: {text}");
                // The reply the instruction describes.
                let reply = if asked.starts_with("Reply with one action only") {
                    "click(1)"
                } else if asked.contains("Memory:") {
                    structured
                } else {
                    reasoned
                };
                match constrained {
                    Some(c) => assert!(
                        ActionGrammar::matches(
                            &output_pattern(&obs, Grounding::Marks, c, actions),
                            reply
                        ),
                        "{style:?} {c:?}: the grammar refuses what the prompt asks for: {reply:?}"
                    ),
                    None => assert!(
                        crate::output::parse_output(reply, Grounding::Marks, (320, 180))
                            .1
                            .is_ok(),
                        "{style:?}: {reply:?}"
                    ),
                }
                // A narrowed set is listed alone, and its grammar holds to it.
                if actions == clicks {
                    assert!(
                        text.contains("Actions (N is an element number): click(N)\n")
                            && !text.contains("type("),
                        "{text}"
                    );
                    if let Some(c) = constrained {
                        let p = output_pattern(&obs, Grounding::Marks, c, actions);
                        let typed = reply.replace("click(1)", "type(1, \"x\")");
                        assert!(!ActionGrammar::matches(&p, &typed), "{typed:?}");
                    }
                }
                // A bare-action grammar is never asked to think first.
                if constrained == Some(Constraint::Action) {
                    assert!(
                        !text.contains("Think") && !text.contains("Memory: <"),
                        "{text}"
                    );
                }
            }
        }
    }

    #[test]
    fn earlier_steps_are_one_line_each_saying_whether_the_page_changed() {
        let obs = screenshot_observation();
        let current = hash(&obs.screenshot.bytes);
        let mut failed = past("Mug \"blue\"", "type(2, \"x\")", "b", None);
        failed.error = Some("element 2 is disabled".into());
        let history = vec![
            past("Shop", "click(4)", "a", None),
            past("Mug", "scroll(down)", "b", None),
            failed,
            past("Cart", "click(1)", &current, None),
        ];
        let cfg = PromptConfig {
            history_lines: 3,
            ..PromptConfig::default()
        };
        let text = build(&step_input(obs, history), &cfg, false, None).text;
        let lines: Vec<&str> = text
            .split("Earlier steps:\n")
            .nth(1)
            .unwrap()
            .lines()
            .take(3)
            .collect();
        assert_eq!(
            lines,
            [
                // Step 1 is beyond `history_lines`.
                "step 2 on \"Mug\": scroll(down) → page unchanged",
                "step 3 on \"Mug \\\"blue\\\"\": type(2, \"x\") → page changed (failed: element 2 is disabled)",
                "step 4 on \"Cart\": click(1) → page unchanged",
            ]
        );
        assert!(!text.contains("step 1 on"));
    }
}
