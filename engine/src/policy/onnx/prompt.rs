//! Prompts for vision-language policies: the observation as text and images, in the
//! model's own chat template.
//!
//! Two styles: `plain` (context, then one action) and `structured`, WebGym's: append-only
//! memory, progress over subtasks, intention, then one action. The context keeps the last
//! few steps with their screenshots and older steps as one line each ("step i on <title>:
//! <action> → page changed/unchanged").

use image::DynamicImage;
use minijinja::{Environment, Error, ErrorKind, context};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::policy::output::Grounding;
use crate::policy::{PastStep, StepInput};

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
}

impl Default for PromptConfig {
    fn default() -> Self {
        PromptConfig {
            style: PromptStyle::Plain,
            grounding: Grounding::Marks,
            images: 1,
            history_lines: 12,
            max_elements: 60,
        }
    }
}

/// The grammar summary every prompt carries.
pub fn action_help(grounding: Grounding) -> &'static str {
    match grounding {
        Grounding::Marks => {
            "Actions (N is an element number): click(N), type(N, \"text\"), select(N, \"option\"), press(\"Enter\"), \
             scroll(down), scroll(up), goto(\"url\"), back(), answer(\"text\"), stop()"
        }
        Grounding::Coordinates => {
            "Actions (x, y on a 0-1000 grid over the screenshot, 0,0 top-left): click(x, y), type(x, y, \"text\"), \
             press(\"Enter\"), scroll(down), scroll(up), goto(\"url\"), back(), answer(\"text\"), stop()"
        }
    }
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

/// Builds the observation message. Screenshots come marked (set-of-marks) in `Marks`
/// mode; `vision` false leaves them out (text-only models).
pub fn build(input: &StepInput, cfg: &PromptConfig, vision: bool) -> Built {
    let obs = &input.observation;
    let current_shot = hash(&obs.screenshot.bytes);
    let mut text = String::new();
    text.push_str(
        "You are a web agent. Complete the task by acting in the browser, one action per turn.\n",
    );
    text.push_str(&format!("Task: {}\n", input.instruction));
    text.push_str(&format!("Current page: {:?} ({})\n", obs.title, obs.url));
    if cfg.grounding == Grounding::Marks || !vision {
        text.push_str("Interactive elements");
        text.push_str(if vision {
            " (their numbers are drawn on the screenshot):\n"
        } else {
            ":\n"
        });
        for line in obs.element_lines().into_iter().take(cfg.max_elements) {
            text.push_str(&line);
            text.push('\n');
        }
    }
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
    if let Some(e) = &obs.last_action_error {
        text.push_str(&format!("The last action failed: {e}\n"));
    }
    for e in &obs.events {
        text.push_str(&format!("Note: {e}\n"));
    }
    if let Some(tree) = &obs.ax_tree {
        // The pool caps the tree by lines; a prompt needs a byte bound too.
        let cut = tree.char_indices().nth(6000).map_or(tree.len(), |(i, _)| i);
        text.push_str(&format!("Accessibility tree:\n{}\n", &tree[..cut]));
    }
    if obs.tabs.len() > 1 {
        text.push_str("Open tabs:");
        for t in &obs.tabs {
            let active = if t.active { " (active)" } else { "" };
            text.push_str(&format!(" [{}] {:?}{active}", t.number, t.title));
        }
        text.push('\n');
    }
    text.push_str(action_help(if vision {
        cfg.grounding
    } else {
        Grounding::Marks
    }));
    if obs.tabs.len() > 1 {
        text.push_str(", switch_tab(N), close_tab(N)");
    }
    text.push('\n');
    match cfg.style {
        PromptStyle::Plain => {
            text.push_str("Think briefly, then end with one line: Action: <one action>")
        }
        PromptStyle::Structured => {
            let memory = input
                .history
                .iter()
                .rev()
                .find_map(|s| s.thought.as_deref().and_then(memory_of));
            text.push_str(&format!(
                "Your memory so far: {}\n",
                memory.unwrap_or("(empty)")
            ));
            text.push_str(
                "Reply in exactly this form:\nMemory: <your memory, with anything new appended>\n\
                 Progress: <which parts of the task are done>\nIntention: <what the next action should achieve>\n\
                 Action: <one action>",
            );
        }
    }
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

/// Renders one user turn through the model's chat template, with a generation prompt.
/// Images are `{"type": "image"}` content parts (the template writes `<image>` for each).
pub fn render(template: &str, text: &str, images: usize, vision: bool) -> Result<String, String> {
    let mut env = Environment::new();
    env.add_function("raise_exception", |msg: String| -> Result<String, Error> {
        Err(Error::new(ErrorKind::InvalidOperation, msg))
    });
    env.add_template("chat", template)
        .map_err(|e| format!("chat template: {e}"))?;
    let content: Value = if vision {
        let mut parts: Vec<Value> = (0..images).map(|_| json!({"type": "image"})).collect();
        parts.push(json!({"type": "text", "text": text}));
        Value::Array(parts)
    } else {
        Value::String(text.to_string())
    };
    let messages = json!([{"role": "user", "content": content}]);
    env.get_template("chat")
        .and_then(|t| t.render(context! { messages => messages, add_generation_prompt => true, bos_token => "", eos_token => "" }))
        .map_err(|e| format!("chat template: {e}"))
}

/// Renders a whole chat (OpenAI-style messages whose image parts are `{"type": "image"}`)
/// through the model's template, with a generation prompt.
pub fn render_messages(template: &str, messages: &Value) -> Result<String, String> {
    let mut env = Environment::new();
    env.add_function("raise_exception", |msg: String| -> Result<String, Error> {
        Err(Error::new(ErrorKind::InvalidOperation, msg))
    });
    env.add_template("chat", template)
        .map_err(|e| format!("chat template: {e}"))?;
    env.get_template("chat")
        .and_then(|t| t.render(context! { messages => messages, add_generation_prompt => true, bos_token => "", eos_token => "" }))
        .map_err(|e| format!("chat template: {e}"))
}

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
            ax_tree: Some("button \"Buy\"".into()),
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
        };
        let text = build(&input, &PromptConfig::default(), false).text;
        assert!(text.contains("Note: a download of \"f.zip\""), "{text}");
        assert!(
            text.contains("[1] \"Shop\" [2] \"Popup\" (active)"),
            "{text}"
        );
        assert!(text.contains("switch_tab(N), close_tab(N)"), "{text}");
        assert!(
            text.contains("Accessibility tree:\nbutton \"Buy\""),
            "{text}"
        );
    }
}
