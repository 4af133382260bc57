//! Plays a fixed list of actions in a fresh browser context of the pool and captures what
//! the rubric reads, after every step when asked: the trajectories whose truth the audit
//! and the labelled set know by construction (a reference solution, its prefixes, its
//! perturbations). No policy and no database: the actions are given.

use browser_pool::{Action, BrowserPool, Session};
use tasks::{Setup, Task};

use crate::runner::InfraError;
use crate::snapshot::PageSnapshot;

/// What the rubric reads after some steps of a trajectory.
#[derive(Debug, Clone)]
pub struct Point {
    /// Steps taken (0: nothing done, the do-nothing agent's final page).
    pub steps: usize,
    /// The page as the rubric reads it.
    pub snapshot: PageSnapshot,
    /// The answer given, if the trajectory answered.
    pub final_answer: Option<String>,
    /// Pages visited so far.
    pub visited: Vec<String>,
}

/// Plays `actions` on `task` (its setup first; a MiniWoB++ page started with `seed`) and
/// returns the page after every step (`every_step`: points for 0..=n steps) or at the end
/// only. A terminal action ends the list; it leaves the page as it was.
pub async fn replay(
    pool: &BrowserPool,
    task: &Task,
    actions: &[Action],
    every_step: bool,
    seed: u64,
) -> Result<Vec<Point>, InfraError> {
    let mut session = pool.lease_with(task.screen.as_ref()).await?;
    let out = drive(&mut session, task, actions, every_step, seed).await;
    session.close().await;
    out
}

async fn drive(
    session: &mut Session,
    task: &Task,
    actions: &[Action],
    every_step: bool,
    seed: u64,
) -> Result<Vec<Point>, InfraError> {
    if let Some(Setup::Actions(setup)) = &task.setup {
        crate::runner::episode::prepare(session, setup).await?;
    }
    let url = task.start_url.to_string();
    let opened = session.act(&Action::Goto(url.clone())).await?;
    if let Some(message) = opened.error {
        return Err(InfraError::StartPage { url, message });
    }
    if task.setup == Some(Setup::MiniWob) {
        crate::env::miniwob_start(session, seed).await?;
    }
    let mut visited = Vec::new();
    note_visited(session, &mut visited).await?;
    let mut points = Vec::new();
    if every_step {
        points.push(capture(session, task, 0, None, &visited).await?);
    }
    let mut final_answer = None;
    let mut steps = 0;
    for action in actions {
        steps += 1;
        match action {
            Action::Answer(text) => {
                final_answer = Some(text.clone());
                break;
            }
            Action::Stop => break,
            _ => {
                // Element numbers are the last observation's, as they were for the policy
                // whose actions these are.
                if names_a_number(action) {
                    session.observe().await?;
                }
                // A perturbed step may fail on the page: that is the perturbation's doing,
                // and the trajectory goes on as an agent's would.
                session.act(action).await?;
                note_visited(session, &mut visited).await?;
                if every_step && steps < actions.len() {
                    points.push(capture(session, task, steps, None, &visited).await?);
                }
            }
        }
    }
    if every_step && points.last().is_some_and(|p| p.steps == steps) {
        // Nothing was played: the start page is the end.
        return Ok(points);
    }
    match (every_step, points.last()) {
        // After a terminal action the page is the one already captured.
        (true, Some(last)) if last.steps + 1 == steps && actions[steps - 1].is_terminal() => {
            let mut p = last.clone();
            p.steps = steps;
            p.final_answer = final_answer;
            points.push(p);
        }
        _ => points.push(capture(session, task, steps, final_answer, &visited).await?),
    }
    Ok(points)
}

/// Whether the action's first argument is an element number (or another number: observing
/// first does no harm).
fn names_a_number(action: &Action) -> bool {
    action
        .to_string()
        .split_once('(')
        .is_some_and(|(_, args)| args.starts_with(|c: char| c.is_ascii_digit()))
}

async fn note_visited(session: &Session, visited: &mut Vec<String>) -> Result<(), InfraError> {
    for url in session
        .take_visited()
        .into_iter()
        .chain([session.url().await?])
    {
        if visited.last() != Some(&url) {
            visited.push(url);
        }
    }
    Ok(())
}

async fn capture(
    session: &mut Session,
    task: &Task,
    steps: usize,
    final_answer: Option<String>,
    visited: &[String],
) -> Result<Point, InfraError> {
    Ok(Point {
        steps,
        snapshot: PageSnapshot::capture(session, &task.rubric).await?,
        final_answer,
        visited: visited.to_vec(),
    })
}
