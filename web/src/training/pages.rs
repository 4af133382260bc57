//! The dashboard's training pages, rendered on the server: the runs, one run (learning
//! curves, iterations, campaigns) and two iterations' evaluations side by side. A small
//! static script follows the run's event stream and swaps in the re-rendered page.

use std::collections::BTreeMap;
use std::fmt::Write;

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{Html, IntoResponse};
use serde::Deserialize;
use store::{EpisodeFilter, EpisodeSummary, Status};

use super::api::parse_id;
use super::detail::{CurvePoint, Health, RunDetail, detail};
use super::html::{campaign_href, episode_href, esc, frame, pct};
use crate::AppState;
use crate::error::{ApiError, field};
use crate::extract::ApiQuery;
use crate::page::PageQuery;
use crate::plot::{Axes, Point, Series, line};

const SCRIPT: &str = include_str!("../../dashboard/training.js");
const STYLE: &str = include_str!("../../dashboard/training.css");

/// `GET /assets/training.js`.
pub async fn script() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        SCRIPT,
    )
}

/// `GET /assets/training.css`.
pub async fn style() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        STYLE,
    )
}

/// `GET /training-runs`: every run, newest first.
pub async fn list_page(
    State(state): State<AppState>,
    ApiQuery(p): ApiQuery<PageQuery>,
) -> Result<Html<String>, ApiError> {
    let (limit, offset) = p.checked()?;
    let (runs, total) = state.engine.store().page_runs(limit, offset).await?;
    let mut b = String::from("<h1>Training runs</h1>");
    if runs.is_empty() {
        b.push_str(
            "<p class=\"muted\">No training runs yet: <code>surfgym train run CONFIG</code> or \
             <code>POST /api/training-runs</code> starts one.</p>",
        );
    } else {
        b.push_str(
            "<table class=\"table\" id=\"runs\"><thead><tr><th>Name</th><th>State</th>\
             <th>Version</th><th>Created</th></tr></thead><tbody>",
        );
        for r in &runs {
            let _ = write!(
                b,
                "<tr><td><a href=\"/training-runs/{}\">{}</a></td><td><span class=\"state state-{}\">{}</span></td>\
                 <td>{}</td><td>{}</td></tr>",
                r.id,
                esc(&r.name),
                r.state.as_str(),
                r.state.as_str(),
                esc(r.version.as_deref().unwrap_or("base model")),
                r.created_at.format("%Y-%m-%d %H:%M UTC")
            );
        }
        let _ = write!(
            b,
            "</tbody></table><p class=\"muted\">{} of {total}</p>",
            runs.len()
        );
    }
    Ok(Html(frame("Training runs", None, &b)))
}

fn points(
    curve: &[CurvePoint],
    x: impl Fn(&CurvePoint) -> f64,
    y: impl Fn(&CurvePoint) -> Option<f64>,
    label: impl Fn(&CurvePoint, f64) -> String,
    href: impl Fn(&CurvePoint) -> Option<String>,
) -> Vec<Point> {
    curve
        .iter()
        .filter_map(|c| {
            let v = y(c)?;
            Some(Point {
                x: x(c),
                y: v,
                label: label(c, v),
                href: href(c),
            })
        })
        .collect()
}

/// The learning curves: each success point links to its iteration's episodes.
fn plots(d: &RunDetail) -> String {
    let c = &d.curve;
    let first_rollout = |p: &CurvePoint| {
        d.iterations
            .iter()
            .find(|i| i.idx == p.iteration)
            .and_then(|i| i.rollout_campaigns.first().copied())
            .map(campaign_href)
    };
    let eval_href = |p: &CurvePoint| p.eval_campaign.map(campaign_href);
    let rate = |p: &CurvePoint, v: f64| format!("iteration {} · {}", p.iteration, pct(Some(v)));
    let (random, best_constant) = (d.baselines.random, d.baselines.best_constant);
    let random_href = |_: &CurvePoint| d.baselines.random_campaign.map(campaign_href);
    let success = |x: &dyn Fn(&CurvePoint) -> f64| {
        let mut s = vec![
            Series {
                name: "train (rollouts)",
                class: "s0",
                points: points(c, x, |p| p.train_success, rate, first_rollout),
            },
            Series {
                name: "held-out (greedy)",
                class: "s1",
                points: points(c, x, |p| p.eval_success, rate, eval_href),
            },
        ];
        if random.is_some() {
            // A level line: the random policy on the very same held-out episodes.
            s.push(Series {
                name: "random policy (same held-out episodes)",
                class: "s3",
                points: points(c, x, |_| random, rate, random_href),
            });
        }
        if best_constant.is_some() {
            s.push(Series {
                name: "best constant action per task (same episodes)",
                class: "s2",
                points: points(c, x, |_| best_constant, rate, |_| None),
            });
        }
        s
    };
    let pct_axes = |title, x| Axes {
        title,
        x,
        y: "success",
        y_range: Some((0.0, 1.0)),
        percent: true,
    };
    let by_iter = |p: &CurvePoint| f64::from(p.iteration);
    let mut o = String::from("<section class=\"plots\" id=\"curves\">");
    o.push_str(&line(
        &pct_axes("Success by iteration", "iteration"),
        &success(&by_iter),
    ));
    o.push_str(&line(
        &pct_axes(
            "Success by environment steps",
            "environment steps (cumulative)",
        ),
        &success(&|p: &CurvePoint| p.env_steps as f64),
    ));
    let plain = |title, y| Axes {
        title,
        x: "iteration",
        y,
        y_range: None,
        percent: false,
    };
    let num = |p: &CurvePoint, v: f64| format!("iteration {} · {v:.4}", p.iteration);
    o.push_str(&line(
        &plain("Loss", "loss"),
        &[Series {
            name: "update loss",
            class: "s2",
            points: points(c, by_iter, |p| p.loss, num, first_rollout),
        }],
    ));
    let h = |i: usize| move |p: &CurvePoint| p.horizon.map(|h| h[i]);
    o.push_str(&line(
        &plain("Horizon schedule", "steps"),
        &[
            Series {
                name: "mean horizon",
                class: "s0",
                points: points(c, by_iter, h(1), num, first_rollout),
            },
            Series {
                name: "shortest",
                class: "s3",
                points: points(c, by_iter, h(0), num, first_rollout),
            },
            Series {
                name: "longest",
                class: "s2",
                points: points(c, by_iter, h(2), num, first_rollout),
            },
        ],
    ));
    o.push_str(&line(
        &plain("Samples kept", "samples"),
        &[Series {
            name: "samples kept",
            class: "s3",
            points: points(c, by_iter, |p| p.samples.map(f64::from), num, first_rollout),
        }],
    ));
    if c.iter().any(|p| p.health.is_some()) {
        let of =
            |f: fn(&Health) -> Option<f64>| move |p: &CurvePoint| p.health.as_ref().and_then(f);
        o.push_str(&line(
            &plain("Update health", "per token"),
            &[
                Series {
                    name: "KL to reference",
                    class: "s0",
                    points: points(c, by_iter, of(|h| h.kl_ref), num, first_rollout),
                },
                Series {
                    name: "KL to the previous version",
                    class: "s1",
                    points: points(c, by_iter, of(|h| h.kl_old), num, first_rollout),
                },
                Series {
                    name: "entropy",
                    class: "s2",
                    points: points(c, by_iter, of(|h| h.entropy), num, first_rollout),
                },
                Series {
                    name: "clipped fraction",
                    class: "s3",
                    points: points(c, by_iter, of(|h| h.clipped), num, first_rollout),
                },
            ],
        ));
    }
    o.push_str("</section>");
    o
}

fn iterations_table(d: &RunDetail) -> String {
    let mut o = String::from(
        "<table class=\"table\" id=\"iterations\"><thead><tr><th>Iteration</th><th>Phase</th>\
         <th>Horizons</th><th>Train</th><th>Held-out</th><th>Samples</th><th>Dropped</th>\
         <th>Loss</th><th>Env steps</th><th title=\"judging happens during the rollouts: its time is part of theirs; wall: first phase start to last phase end (overlapped iterations share the clock)\">Time (rollout (judge) / train / eval · wall)</th><th>Campaigns</th>\
         </tr></thead><tbody>",
    );
    for (it, p) in d.iterations.iter().zip(&d.curve) {
        let horizons = p.horizon.map_or("–".into(), |[lo, mean, hi]| {
            format!("{lo:.0}–{hi:.0} (mean {mean:.1})")
        });
        let dropped = it.dropped.as_ref().map_or("–".into(), dropped_breakdown);
        let secs =
            |ms: Option<i64>| ms.map_or("–".into(), |m| format!("{:.1}s", m as f64 / 1000.0));
        let mut links = String::new();
        for (n, c) in it.rollout_campaigns.iter().enumerate() {
            let _ = write!(
                links,
                "<a class=\"rollout\" href=\"{}\">rollouts {}</a> ",
                campaign_href(*c),
                n + 1
            );
        }
        if let Some(c) = it.eval_campaign {
            let _ = write!(
                links,
                "<a class=\"eval\" href=\"{}\">held-out</a>",
                campaign_href(c)
            );
        }
        let _ = write!(
            o,
            "<tr data-iteration=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td class=\"train\">{}</td>\
             <td class=\"held-out\">{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{} ({}) / {} / {} · {}</td><td>{}</td></tr>",
            it.idx,
            it.idx,
            it.phase.as_str(),
            esc(&horizons),
            pct(it.train_success),
            pct(it.eval_success),
            it.samples.map_or("–".into(), |s| s.to_string()),
            staleness(it),
            esc(&dropped),
            it.loss.map_or("–".into(), |l| format!("{l:.4}")),
            it.env_steps.map_or("–".into(), |s| s.to_string()),
            secs(it.rollout_ms),
            secs(it.judge_ms),
            secs(it.train_ms),
            secs(it.eval_ms),
            secs(it.wall_ms),
            links
        );
    }
    o.push_str("</tbody></table>");
    o
}

/// What an update left out, by reason, largest first: `16: failed 12 · flat group 4`;
/// `none` when nothing was. Reasons are the selection's counters (and the staleness
/// bound's), named in words.
fn dropped_breakdown(v: &serde_json::Value) -> String {
    let mut counts: Vec<(String, u64)> = v
        .as_object()
        .map(|o| {
            o.iter()
                .filter_map(|(k, n)| Some((k.replace('_', " "), n.as_u64()?)))
                .filter(|(_, n)| *n > 0)
                .collect()
        })
        .unwrap_or_default();
    if counts.is_empty() {
        return "none".into();
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let total: u64 = counts.iter().map(|(_, n)| n).sum();
    let parts: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
    format!("{total}: {}", parts.join(" · "))
}

/// The form that opens two iterations' evaluations side by side.
fn compare_form(d: &RunDetail) -> String {
    let evaluated: Vec<i32> = d
        .iterations
        .iter()
        .filter(|i| i.eval_campaign.is_some())
        .map(|i| i.idx)
        .collect();
    if evaluated.len() < 2 {
        return String::new();
    }
    let options = |selected: i32| {
        evaluated
            .iter()
            .map(|i| {
                format!(
                    "<option value=\"{i}\"{}>iteration {i}</option>",
                    if *i == selected { " selected" } else { "" }
                )
            })
            .collect::<String>()
    };
    format!(
        "<form class=\"compare\" method=\"get\" action=\"/training-runs/{}/compare\">\
         <h2>Version against version</h2>\
         <label>A <select name=\"a\">{}</select></label> \
         <label>B <select name=\"b\">{}</select></label> \
         <button class=\"btn\" type=\"submit\">Compare held-out episodes</button></form>",
        d.run.id,
        options(evaluated[0]),
        options(*evaluated.last().unwrap_or(&0))
    )
}

/// Pause, resume and cancel, as the run's state allows (the page's script posts them).
fn controls(r: &store::RunView) -> String {
    let allowed: &[(&str, &str)] = match r.state {
        Status::Queued | Status::Running => &[("pause", "Pause"), ("cancel", "Cancel")],
        Status::Paused => &[("resume", "Resume"), ("cancel", "Cancel")],
        Status::Failed => &[("resume", "Retry")],
        Status::Completed | Status::Cancelled => &[],
    };
    if allowed.is_empty() {
        return String::new();
    }
    let mut o = format!("<p class=\"controls\" data-run=\"{}\">", r.id);
    for (action, label) in allowed {
        let _ = write!(
            o,
            "<button type=\"button\" class=\"btn btn-small\" data-action=\"{action}\">{label}</button> "
        );
    }
    o.push_str("<span class=\"control-error\" role=\"alert\"></span></p>");
    o
}

/// " · overlap: N" for an overlapped run (its staleness bound), nothing for a synchronous one.
fn overlap(r: &store::RunView) -> String {
    r.config["overlap"]["max_staleness"]
        .as_u64()
        .map_or_else(String::new, |n| {
            format!(" · <span id=\"run-overlap\" title=\"the next iteration's rollouts run while the trainer works, at most {n} version(s) behind\">overlap: {n}</span>")
        })
}

/// An update's kept samples by staleness ("0: 10, 1: 6"), when recorded.
fn staleness(it: &store::IterationView) -> String {
    let Some(h) = it
        .report
        .as_ref()
        .and_then(|r| r.get("staleness"))
        .and_then(|h| h.as_object())
        .filter(|h| !h.is_empty())
    else {
        return String::new();
    };
    let parts: Vec<String> = h.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!(
        " <span class=\"staleness\" title=\"kept samples by staleness (versions behind the update's parent)\">(staleness {})</span>",
        esc(&parts.join(", "))
    )
}

/// The body of a run's page (also what the live script swaps in).
fn run_body(d: &RunDetail) -> String {
    let r = &d.run;
    let mut o = String::new();
    let _ = write!(
        o,
        "<p class=\"crumbs\"><a href=\"/training-runs\">Training runs</a></p>\
         <h1 id=\"run-name\">{}</h1><p class=\"meta\"><span id=\"run-state\" class=\"state state-{}\">{}</span> \
         · version <code>{}</code>{} · created {}</p>",
        esc(&r.name),
        r.state.as_str(),
        r.state.as_str(),
        esc(r.version.as_deref().unwrap_or("base model")),
        overlap(r),
        r.created_at.format("%Y-%m-%d %H:%M UTC")
    );
    if let Some(e) = &r.error {
        let _ = write!(o, "<p class=\"banner banner-error\">{}</p>", esc(e));
    }
    o.push_str(&controls(r));
    for c in &d.active_campaigns {
        let _ = write!(
            o,
            "<p class=\"active\">Working: <a href=\"{}\">{}</a> · {} · {:.0}%</p>",
            campaign_href(c.id),
            esc(&c.name),
            c.status.as_str(),
            c.progress * 100.0
        );
    }
    o.push_str(&plots(d));
    o.push_str("<h2>Iterations</h2>");
    o.push_str(&iterations_table(d));
    o.push_str(&compare_form(d));
    let config = serde_json::to_string_pretty(&r.config).unwrap_or_default();
    let _ = write!(
        o,
        "<details class=\"config\"><summary>Configuration</summary><pre id=\"run-config\">{}</pre></details>",
        esc(&config)
    );
    o
}

/// `GET /training-runs/{id}`.
pub async fn run_page(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Html<String>, ApiError> {
    let id = parse_id(&id)?;
    let d = detail(state.engine.store(), id).await?;
    let ended = d.run.state.is_ended();
    let events = format!("/api/training-runs/{id}/events");
    Ok(Html(frame(
        &d.run.name,
        (!ended).then_some(events.as_str()),
        &run_body(&d),
    )))
}

/// The two iterations `GET /training-runs/{id}/compare` shows.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareQuery {
    a: i32,
    b: i32,
}

async fn eval_episodes(
    state: &AppState,
    d: &RunDetail,
    idx: i32,
    name: &str,
) -> Result<Vec<EpisodeSummary>, ApiError> {
    let it = d
        .iterations
        .iter()
        .find(|i| i.idx == idx)
        .ok_or_else(|| field(name, format!("the run has no iteration {idx}")))?;
    let c = it
        .eval_campaign
        .ok_or_else(|| field(name, format!("iteration {idx} has no evaluation campaign")))?;
    let (eps, _) = state
        .engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(c), 100_000, 0)
        .await?;
    Ok(eps)
}

fn outcome(e: Option<&EpisodeSummary>) -> String {
    match e {
        None => "<td class=\"muted\">–</td>".into(),
        Some(e) => {
            let (class, word) = match e.success {
                Some(true) => ("ok", "solved"),
                Some(false) => ("fail", "failed"),
                None => ("muted", e.status.as_str()),
            };
            format!(
                "<td class=\"{class}\"><a class=\"replay\" href=\"{}\">{} · {} steps</a></td>",
                episode_href(e.id),
                esc(word),
                e.steps
            )
        }
    }
}

/// `GET /training-runs/{id}/compare?a=I&b=J`: the held-out tasks' success under two
/// iterations' versions, each episode beside its counterpart (same task and seed), with
/// links to both replays.
pub async fn compare_page(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<CompareQuery>,
) -> Result<Html<String>, ApiError> {
    let id = parse_id(&id)?;
    let d = detail(state.engine.store(), id).await?;
    let a = eval_episodes(&state, &d, q.a, "a").await?;
    let b = eval_episodes(&state, &d, q.b, "b").await?;
    // task -> rollout -> (A's episode, B's episode)
    type Pair<'e> = (Option<&'e EpisodeSummary>, Option<&'e EpisodeSummary>);
    let mut rows: BTreeMap<&str, BTreeMap<i32, Pair>> = BTreeMap::new();
    for e in &a {
        rows.entry(&e.task_id)
            .or_default()
            .entry(e.rollout)
            .or_default()
            .0 = Some(e);
    }
    for e in &b {
        rows.entry(&e.task_id)
            .or_default()
            .entry(e.rollout)
            .or_default()
            .1 = Some(e);
    }
    let rate = |eps: &[&EpisodeSummary]| {
        let n = eps.len();
        let ok = eps.iter().filter(|e| e.success == Some(true)).count();
        format!("{ok}/{n}")
    };
    let mut o = String::new();
    let _ = write!(
        o,
        "<p class=\"crumbs\"><a href=\"/training-runs\">Training runs</a> › <a href=\"/training-runs/{}\">{}</a></p>\
         <h1>Iteration {} against iteration {}</h1>\
         <p class=\"muted\">Held-out evaluation episodes, greedy, same tasks and seeds.</p>\
         <table class=\"table\" id=\"compare\"><thead><tr><th>Task</th><th>Success A</th><th>Success B</th>\
         <th>Rollout</th><th>A (iteration {})</th><th>B (iteration {})</th></tr></thead><tbody>",
        d.run.id,
        esc(&d.run.name),
        q.a,
        q.b,
        q.a,
        q.b
    );
    for (task, by_rollout) in &rows {
        let sa: Vec<&EpisodeSummary> = by_rollout.values().filter_map(|p| p.0).collect();
        let sb: Vec<&EpisodeSummary> = by_rollout.values().filter_map(|p| p.1).collect();
        for (n, (rollout, (ea, eb))) in by_rollout.iter().enumerate() {
            let head = if n == 0 {
                format!(
                    "<td rowspan=\"{k}\">{}</td><td rowspan=\"{k}\" class=\"rate-a\">{}</td><td rowspan=\"{k}\" class=\"rate-b\">{}</td>",
                    esc(task),
                    rate(&sa),
                    rate(&sb),
                    k = by_rollout.len()
                )
            } else {
                String::new()
            };
            let _ = write!(
                o,
                "<tr data-task=\"{}\">{head}<td>{rollout}</td>{}{}</tr>",
                esc(task),
                outcome(*ea),
                outcome(*eb)
            );
        }
    }
    o.push_str("</tbody></table>");
    Ok(Html(frame(&format!("{} · compare", d.run.name), None, &o)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overlapped_run_shows_its_bound_and_each_update_its_samples_staleness() {
        let mut run = store::RunView {
            id: uuid::Uuid::nil(),
            name: "r".into(),
            config: serde_json::json!({"overlap": {"max_staleness": 2}}),
            state: Status::Running,
            version: None,
            error: None,
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
        };
        assert!(overlap(&run).contains(">overlap: 2<"), "{}", overlap(&run));
        run.config = serde_json::json!({});
        assert_eq!(overlap(&run), "", "a synchronous run says nothing");
        let mut it = store::IterationView::default();
        assert_eq!(staleness(&it), "");
        it.report = Some(serde_json::json!({"staleness": {"0": 10, "1": 6}}));
        assert!(
            staleness(&it).contains("(staleness 0: 10, 1: 6)"),
            "{}",
            staleness(&it)
        );
    }

    #[test]
    fn dropped_steps_read_as_a_breakdown_largest_first() {
        let v = serde_json::json!({"failed": 12, "flat_group": 4, "short": 0, "too_stale": 4});
        assert_eq!(
            super::dropped_breakdown(&v),
            "20: failed 12 · flat group 4 · too stale 4"
        );
        assert_eq!(
            super::dropped_breakdown(&serde_json::json!({"failed": 0})),
            "none"
        );
        assert_eq!(super::dropped_breakdown(&serde_json::json!("junk")), "none");
    }
}
