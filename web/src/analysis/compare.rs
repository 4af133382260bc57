//! Two campaigns task by task (the tasks one solves and the other does not first), and two
//! rollouts of one task side by side, step by step.

use std::fmt::Write;

use axum::extract::State;
use axum::response::Html;
use store::analysis::{EpisodeSearch, TaskScope};
use store::{CampaignView, EpisodeDetail, StepView};

use super::api::compare_of;
use super::html::{compare_frame, esc, opt, pct};
use super::pages::episodes_href;
use super::params::{CompareQuery, PairQuery};
use crate::AppState;
use crate::error::{ApiError, field};
use crate::extract::ApiQuery;

/// Campaigns the form offers, newest first.
const CHOICES: i64 = 200;

fn choose_form(campaigns: &[CampaignView], a: Option<uuid::Uuid>, b: Option<uuid::Uuid>) -> String {
    let options = |selected: Option<uuid::Uuid>| {
        let mut o = String::from("<option value=\"\">choose a campaign</option>");
        for c in campaigns {
            let _ = write!(
                o,
                "<option value=\"{}\"{}>{} · {} · {}</option>",
                c.id,
                if Some(c.id) == selected {
                    " selected"
                } else {
                    ""
                },
                esc(&c.name),
                esc(&c.policy),
                c.created_at.format("%Y-%m-%d %H:%M")
            );
        }
        o
    };
    format!(
        "<form class=\"filters\" id=\"compare-form\" method=\"get\" action=\"/compare\">\
         <label>A <select name=\"a\">{}</select></label> \
         <label>B <select name=\"b\">{}</select></label> \
         <button class=\"btn\" type=\"submit\">Compare</button></form>",
        options(a),
        options(b)
    )
}

/// `GET /compare?a=…&b=…`: two campaigns task by task.
pub async fn compare_page(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<CompareQuery>,
) -> Result<Html<String>, ApiError> {
    let raw_a = q.a_text();
    let super::params::Compare {
        pair,
        limit,
        offset,
    } = q.checked()?;
    let store = state.engine.store();
    let (campaigns, _) = store.list_campaigns(CHOICES, 0).await?;
    let mut b = String::from("<h1>Compare campaigns</h1>");
    let preselected = raw_a.and_then(|a| uuid::Uuid::parse_str(&a).ok());
    b.push_str(&choose_form(
        &campaigns,
        pair.map(|p| p.0).or(preselected),
        pair.map(|p| p.1),
    ));
    let Some((a, bb)) = pair else {
        b.push_str("<p class=\"muted\">Choose two campaigns (e.g. two policies or two model versions on the same tasks).</p>");
        return Ok(Html(compare_frame("Compare", &b)));
    };
    let cmp = compare_of(&state, a, bb, limit, offset).await?;
    // Both exist: compare_of answered 404 otherwise.
    let label = async |id: uuid::Uuid| -> Result<String, ApiError> {
        Ok(match store.get_campaign(id).await? {
            Some(c) => format!(
                "{} · {} · {}",
                esc(&c.name),
                esc(&c.policy),
                pct(c.success_rate)
            ),
            None => id.to_string(),
        })
    };
    let (label_a, label_b) = (label(a).await?, label(bb).await?);
    let n = &cmp.counts;
    let _ = write!(
        b,
        "<p class=\"summary\" id=\"compare-counts\">{} tasks: <span id=\"only-a\">{}</span> solved by A only, \
         <span id=\"only-b\">{}</span> by B only, <span id=\"both\">{}</span> by both, \
         <span id=\"neither\">{}</span> by neither.</p>\
         <table class=\"table\" id=\"compare\"><thead><tr><th>Task</th><th>Site</th><th>Difficulty</th>\
         <th>A: <a href=\"/campaigns/{a}/analysis\">{}</a></th><th>B: <a href=\"/campaigns/{bb}/analysis\">{}</a></th>\
         <th>Side by side</th></tr></thead><tbody>",
        n.tasks, n.only_a, n.only_b, n.both, n.neither, label_a, label_b,
    );
    for r in &cmp.tasks.items {
        let cell = |c: uuid::Uuid, succ: i64, judged: i64, rate: Option<f64>, side: &str| {
            format!(
                "<td class=\"{side} {}\"><a href=\"{}\">{} ({succ}/{judged})</a></td>",
                if succ > 0 { "ok" } else { "fail" },
                esc(&episodes_href(c, &[("task", r.task_id.clone())])),
                pct(rate)
            )
        };
        let pair_link = match (r.a_episode, r.b_episode) {
            (Some(x), Some(y)) => format!(
                "<a class=\"pair\" href=\"/compare/episodes?a={x}&amp;b={y}\">first rollouts</a>"
            ),
            _ => "–".into(),
        };
        let _ = write!(
            b,
            "<tr data-task=\"{}\" class=\"{}\"><td>{}</td><td>{}</td><td>{}</td>{}{}<td>{pair_link}</td></tr>",
            esc(&r.task_id),
            if r.differs { "differs" } else { "same" },
            esc(&r.task_id),
            esc(&r.site),
            esc(&r.difficulty),
            cell(a, r.a_successes, r.a_judged, r.a_success_rate, "a"),
            cell(bb, r.b_successes, r.b_judged, r.b_success_rate, "b"),
        );
    }
    b.push_str("</tbody></table>");
    if cmp.tasks.total > offset + limit {
        let _ = write!(
            b,
            "<p class=\"pager\"><a id=\"next\" href=\"/compare?a={a}&amp;b={bb}&amp;offset={}&amp;limit={limit}\">next →</a></p>",
            offset + limit
        );
    }
    Ok(Html(compare_frame("Compare", &b)))
}

fn step_cell(s: Option<&StepView>) -> String {
    let Some(s) = s else {
        return "<td class=\"ended muted\">(ended)</td>".into();
    };
    let mut o = String::from("<td>");
    if let Some(h) = &s.core.screenshot {
        let _ = write!(
            o,
            "<img class=\"shot\" loading=\"lazy\" alt=\"step {} screenshot\" src=\"/api/blobs/{}\">",
            s.idx,
            esc(h)
        );
    }
    let _ = write!(
        o,
        "<p class=\"url muted\">{}</p><p><code class=\"action\">{}</code></p>",
        esc(&s.core.url),
        esc(&s.core.action)
    );
    if let Some(t) = &s.core.thought {
        let _ = write!(o, "<p class=\"thought\">{}</p>", esc(t));
    }
    if let Some(e) = &s.core.action_error {
        let _ = write!(o, "<p class=\"error\">{}</p>", esc(e));
    }
    o.push_str("</td>");
    o
}

fn side(e: &EpisodeDetail, label: &str) -> String {
    let s = &e.summary;
    let outcome = match s.success {
        Some(true) => "solved",
        Some(false) => "failed",
        None => s.status.as_str(),
    };
    format!(
        "<th class=\"{label}\"><a href=\"/#/episodes/{}\">{label}: rollout {}</a> · \
         <span class=\"outcome\">{}</span> · {} steps · {} · answer {}</th>",
        s.id,
        s.rollout,
        esc(outcome),
        s.steps,
        opt(s.end_reason.as_deref()),
        opt(s.final_answer.as_deref())
    )
}

/// Rollouts of one task a pair page may switch to on each side.
const ROLLOUT_CHOICES: i64 = 500;

/// The form that puts any rollout of the task in either campaign on either side.
async fn pair_form(
    state: &AppState,
    ea: &EpisodeDetail,
    eb: &EpisodeDetail,
) -> Result<String, ApiError> {
    let mut o = String::from(
        "<form class=\"filters\" id=\"pair-form\" method=\"get\" action=\"/compare/episodes\">",
    );
    for (name, e) in [("a", ea), ("b", eb)] {
        let search = EpisodeSearch {
            scope: TaskScope {
                task: Some(e.summary.task_id.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        let (rollouts, _) = state
            .engine
            .store()
            .search_episodes(e.summary.campaign_id, &search, ROLLOUT_CHOICES, 0)
            .await?;
        let _ = write!(o, "<label>{} <select name=\"{name}\">", name.to_uppercase());
        for r in &rollouts {
            let outcome = match r.success {
                Some(true) => "solved",
                Some(false) => "failed",
                None => r.status.as_str(),
            };
            let _ = write!(
                o,
                "<option value=\"{}\"{}>rollout {} · {} · {} steps</option>",
                r.id,
                if r.id == e.summary.id {
                    " selected"
                } else {
                    ""
                },
                r.rollout,
                esc(outcome),
                r.steps
            );
        }
        o.push_str("</select></label> ");
    }
    o.push_str("<button class=\"btn\" type=\"submit\">Show</button></form>");
    Ok(o)
}

/// `GET /compare/episodes?a=…&b=…`: two rollouts of one task, step by step.
pub async fn pair_page(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<PairQuery>,
) -> Result<Html<String>, ApiError> {
    let (a, b) = q.checked()?;
    let store = state.engine.store();
    let get = |id| store.get_episode(id);
    let ea = get(a)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no episode {a} (a)")))?;
    let eb = get(b)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no episode {b} (b)")))?;
    if ea.summary.task_id != eb.summary.task_id {
        return Err(field(
            "b",
            format!(
                "is an episode of task {}, not of a's task {}",
                eb.summary.task_id, ea.summary.task_id
            ),
        ));
    }
    let form = pair_form(&state, &ea, &eb).await?;
    let mut o = format!(
        "<p class=\"crumbs\"><a href=\"/compare?a={}&amp;b={}\">Compare</a></p>\
         <h1>Task <code id=\"pair-task\">{}</code></h1><p class=\"instruction\" id=\"instruction\">{}</p>{form}\
         <table class=\"table pair\" id=\"pair\"><thead><tr><th>Step</th>{}{}</tr></thead><tbody>",
        ea.summary.campaign_id,
        eb.summary.campaign_id,
        esc(&ea.summary.task_id),
        esc(&ea.instruction),
        side(&ea, "A"),
        side(&eb, "B"),
    );
    let n = ea.steps.len().max(eb.steps.len());
    for i in 0..n {
        let _ = write!(
            o,
            "<tr data-step=\"{i}\"><th>{i}</th>{}{}</tr>",
            step_cell(ea.steps.get(i)),
            step_cell(eb.steps.get(i))
        );
    }
    o.push_str("</tbody></table>");
    Ok(Html(compare_frame("Two rollouts", &o)))
}
