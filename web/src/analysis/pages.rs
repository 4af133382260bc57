//! The campaign's per-task analysis page and its episode table, rendered on the server:
//! filters and search are GET forms, columns sort by links, pages are links.

use std::fmt::Write;

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{Html, IntoResponse};
use store::CampaignView;
use store::analysis::{BreakdownBucket, Dimension, EpisodeSort, TaskSort};

use super::api::{Analysis, analysis_of, campaign, episodes_of};
use super::html::{esc, frame, head, num, opt, pct, sort_th};
use super::params::{
    END_REASONS, Episodes, EpisodesQuery, Tasks, TasksQuery, query, scope_pairs, search_pairs,
};
use crate::AppState;
use crate::error::ApiError;
use crate::extract::ApiQuery;

const STYLE: &str = include_str!("../../dashboard/analysis.css");

/// `GET /assets/analysis.css`.
pub async fn style() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        STYLE,
    )
}

/// The link to a campaign's episode table with these filters.
pub(super) fn episodes_href(c: uuid::Uuid, pairs: &[(&str, String)]) -> String {
    format!("/campaigns/{c}/episodes{}", query(pairs))
}

fn name_of<T: PartialEq + Copy>(all: &[(&'static str, T)], v: T) -> &'static str {
    all.iter().find(|(_, t)| *t == v).map_or("", |(n, _)| n)
}

/// A `<select>` of `options` (the first, empty, means any).
fn select(name: &str, label: &str, options: &[&str], current: Option<&str>) -> String {
    let mut o = format!("<label>{label} <select name=\"{name}\"><option value=\"\">any</option>");
    for v in options {
        let _ = write!(
            o,
            "<option value=\"{v}\"{}>{v}</option>",
            if current == Some(v) { " selected" } else { "" }
        );
    }
    o.push_str("</select></label> ");
    o
}

fn input(name: &str, label: &str, current: Option<&str>, kind: &str) -> String {
    format!(
        "<label>{label} <input type=\"{kind}\" name=\"{name}\" value=\"{}\"></label> ",
        esc(current.unwrap_or(""))
    )
}

fn hidden(name: &str, value: &str) -> String {
    if value.is_empty() {
        return String::new();
    }
    format!(
        "<input type=\"hidden\" name=\"{name}\" value=\"{}\">",
        esc(value)
    )
}

fn breakdown_table(c: uuid::Uuid, t: &Tasks, by: Dimension, rows: &[BreakdownBucket]) -> String {
    let name = by.name();
    let mut o = format!(
        "<div class=\"breakdown\"><h3>By {name}</h3><table class=\"table\" id=\"by-{name}\"><thead><tr>\
         <th>{name}</th><th>Tasks</th><th>Episodes</th><th>Success</th><th>Mean score</th>\
         <th>Mean steps</th></tr></thead><tbody>"
    );
    if rows.is_empty() {
        o.push_str("<tr><td colspan=\"6\" class=\"muted\">No episodes.</td></tr>");
    }
    for r in rows {
        let mut scope = t.scope.clone();
        match by {
            Dimension::Site => scope.site = Some(r.key.clone()),
            Dimension::Difficulty => scope.difficulty = Some(r.key.clone()),
            Dimension::Split => scope.split = Some(r.key.clone()),
            Dimension::Tag => scope.tag = Some(r.key.clone()),
        }
        let pairs = scope_pairs(&scope);
        let _ = write!(
            o,
            "<tr data-key=\"{k}\"><td><a href=\"/campaigns/{c}/analysis{q}\">{k}</a></td><td>{}</td>\
             <td><a class=\"episodes-link\" href=\"{}\">{}</a></td><td class=\"rate\">{} ({}/{})</td>\
             <td>{}</td><td>{}</td></tr>",
            r.tasks,
            esc(&episodes_href(c, &pairs)),
            r.episodes,
            pct(r.success_rate),
            r.successes,
            r.judged,
            num(r.mean_score, 3),
            num(r.mean_steps, 1),
            k = esc(&r.key),
            q = esc(&query(&pairs)),
        );
    }
    o.push_str("</tbody></table></div>");
    o
}

fn tasks_table(c: &CampaignView, t: &Tasks, a: &Analysis) -> String {
    let scope = scope_pairs(&t.scope);
    let k = t.k.map_or(String::new(), |k| k.to_string());
    let href = |key: &str, order: &str| {
        let mut p = scope.clone();
        p.extend([
            ("k", k.clone()),
            ("sort", key.to_string()),
            ("order", order.to_string()),
        ]);
        format!("/campaigns/{}/analysis{}", c.id, query(&p))
    };
    let current = name_of(&TaskSort::ALL, t.sort);
    let th = |label: &str, key: &str| sort_th(label, key, current, t.descending, &href);
    let mut o = String::from("<table class=\"table\" id=\"tasks\"><thead><tr>");
    for (label, key) in [
        ("Task", "task"),
        ("Site", "site"),
        ("Difficulty", "difficulty"),
        ("Split", "split"),
    ] {
        o.push_str(&th(label, key));
    }
    o.push_str("<th>Tags</th>");
    for (label, key) in [
        ("Episodes", "episodes"),
        ("Success", "success_rate"),
        (&format!("pass@{}", a.k) as &str, "pass_at_k"),
        ("Mean score", "mean_score"),
        ("Mean steps", "mean_steps"),
        ("End reason", "end_reason"),
    ] {
        o.push_str(&th(label, key));
    }
    o.push_str("</tr></thead><tbody>");
    if a.tasks.is_empty() {
        o.push_str("<tr><td colspan=\"11\" class=\"muted\">No task matches.</td></tr>");
    }
    for r in &a.tasks {
        let eps = episodes_href(c.id, &[("task", r.task_id.clone())]);
        let _ = write!(
            o,
            "<tr data-task=\"{id}\"><td><a class=\"task-episodes\" href=\"{}\">{id}</a></td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td class=\"episodes\">{}</td>\
             <td class=\"success\" data-value=\"{}\">{} ({}/{})</td><td class=\"pass-at-k\">{}</td>\
             <td class=\"mean-score\">{}</td><td class=\"mean-steps\">{}</td><td class=\"end-reason\">{}</td></tr>",
            esc(&eps),
            esc(&r.site),
            esc(&r.difficulty),
            esc(&r.split),
            esc(&r.tags.join(", ")),
            r.episodes,
            r.success_rate.map_or(String::new(), |v| v.to_string()),
            pct(r.success_rate),
            r.successes,
            r.judged,
            pct(r.pass_at_k),
            num(r.mean_score, 3),
            num(r.mean_steps, 1),
            opt(r.end_reason.as_deref()),
            id = esc(&r.task_id),
        );
    }
    o.push_str("</tbody></table>");
    o
}

fn tasks_form(c: &CampaignView, t: &Tasks, k: i64) -> String {
    let s = &t.scope;
    let mut o = format!(
        "<form class=\"filters\" id=\"task-filters\" method=\"get\" action=\"/campaigns/{}/analysis\">",
        c.id
    );
    o.push_str(&input("task", "Task", s.task.as_deref(), "text"));
    o.push_str(&input("site", "Site", s.site.as_deref(), "text"));
    o.push_str(&select(
        "difficulty",
        "Difficulty",
        &["easy", "medium", "hard"],
        s.difficulty.as_deref(),
    ));
    o.push_str(&select(
        "split",
        "Split",
        &["train", "test"],
        s.split.as_deref(),
    ));
    o.push_str(&input("tag", "Tag", s.tag.as_deref(), "text"));
    o.push_str(&input("k", "pass@k, k =", Some(&k.to_string()), "number"));
    o.push_str(&hidden("sort", name_of(&TaskSort::ALL, t.sort)));
    o.push_str(&hidden("order", if t.descending { "desc" } else { "" }));
    let _ = write!(
        o,
        "<button class=\"btn\" type=\"submit\">Filter</button> <a href=\"/campaigns/{}/analysis\">clear</a></form>",
        c.id
    );
    o
}

/// `GET /campaigns/{id}/analysis`: each task across its rollouts, and the breakdowns.
pub async fn analysis_page(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<TasksQuery>,
) -> Result<Html<String>, ApiError> {
    let t = q.checked()?;
    let c = campaign(&state, &id).await?;
    let a = analysis_of(&state, &c, &t).await?;
    let mut b = head(&c, "analysis");
    b.push_str(&tasks_form(&c, &t, a.k));
    b.push_str("<section class=\"breakdowns\">");
    for (by, rows) in [
        (Dimension::Site, &a.breakdown.site),
        (Dimension::Difficulty, &a.breakdown.difficulty),
        (Dimension::Split, &a.breakdown.split),
        (Dimension::Tag, &a.breakdown.tag),
    ] {
        b.push_str(&breakdown_table(c.id, &t, by, rows));
    }
    b.push_str("</section><h2>Tasks</h2>");
    let _ = write!(
        b,
        "<p class=\"muted\">Success is over judged rollouts; pass@{k} is the unbiased \
         estimate that at least one of {k} rollouts succeeds (blank with fewer than {k}).</p>",
        k = a.k
    );
    b.push_str(&tasks_table(&c, &t, &a));
    Ok(Html(frame(&format!("{} · tasks", c.name), &b)))
}

fn search_form(c: &CampaignView, e: &Episodes) -> String {
    let s = &e.search;
    let mut o = format!(
        "<form class=\"filters\" id=\"episode-search\" method=\"get\" action=\"/campaigns/{}/episodes\">",
        c.id
    );
    o.push_str(&format!(
        "<label>Search <input type=\"search\" name=\"q\" id=\"q\" value=\"{}\" \
         placeholder=\"instruction, URL, answer, error\"></label> ",
        esc(s.text.as_deref().unwrap_or(""))
    ));
    o.push_str(&input("task", "Task", s.scope.task.as_deref(), "text"));
    o.push_str(&input("site", "Site", s.scope.site.as_deref(), "text"));
    o.push_str(&select(
        "difficulty",
        "Difficulty",
        &["easy", "medium", "hard"],
        s.scope.difficulty.as_deref(),
    ));
    o.push_str(&select(
        "split",
        "Split",
        &["train", "test"],
        s.scope.split.as_deref(),
    ));
    o.push_str(&input("tag", "Tag", s.scope.tag.as_deref(), "text"));
    let success = s.success.map(|v| if v { "true" } else { "false" });
    o.push_str(&select("success", "Success", &["true", "false"], success));
    o.push_str(&select(
        "status",
        "Status",
        &store::EpisodeStatus::ALL
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>(),
        s.status.map(|s| s.as_str()),
    ));
    let reasons: Vec<&str> = END_REASONS.iter().map(|(n, _)| *n).collect();
    o.push_str(&select(
        "end_reason",
        "End reason",
        &reasons,
        s.end_reason.as_deref(),
    ));
    let n = |v: Option<i32>| v.map(|v| v.to_string());
    o.push_str(&input(
        "steps_min",
        "Steps ≥",
        n(s.steps.0).as_deref(),
        "number",
    ));
    o.push_str(&input("steps_max", "≤", n(s.steps.1).as_deref(), "number"));
    // Filters a plot's link set and the form does not show are kept.
    for (k, v) in search_pairs(s) {
        if ["from", "to", "phase", "ms_min", "ms_max"].contains(&k) {
            o.push_str(&hidden(k, &v));
        }
    }
    o.push_str(&hidden("sort", name_of(&EpisodeSort::ALL, s.sort)));
    o.push_str(&hidden("order", if s.descending { "desc" } else { "" }));
    let _ = write!(
        o,
        "<button class=\"btn\" type=\"submit\">Search</button> <a href=\"/campaigns/{}/episodes\">clear</a></form>",
        c.id
    );
    o
}

fn outcome(success: Option<bool>, status: store::EpisodeStatus) -> (&'static str, String) {
    match success {
        Some(true) => ("ok", "solved".into()),
        Some(false) => ("fail", "failed".into()),
        None => ("muted", status.to_string()),
    }
}

/// `GET /campaigns/{id}/episodes`: the campaign's episodes, searched, filtered, sorted
/// and paged by the server.
pub async fn episodes_page(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<EpisodesQuery>,
) -> Result<Html<String>, ApiError> {
    let e = q.checked()?;
    let c = campaign(&state, &id).await?;
    let page = episodes_of(&state, &c, &e).await?;
    let s = &e.search;
    let pairs = search_pairs(s);
    let link = |sort: &str, order: &str, offset: i64| {
        let mut p = pairs.clone();
        p.extend([
            ("sort", sort.to_string()),
            ("order", order.to_string()),
            (
                "limit",
                if e.limit == 50 {
                    String::new()
                } else {
                    e.limit.to_string()
                },
            ),
            (
                "offset",
                if offset == 0 {
                    String::new()
                } else {
                    offset.to_string()
                },
            ),
        ]);
        episodes_href(c.id, &p)
    };
    let current = name_of(&EpisodeSort::ALL, s.sort);
    let order = if s.descending { "desc" } else { "asc" };
    let mut b = head(&c, "episodes");
    b.push_str(&search_form(&c, &e));
    let _ = write!(
        b,
        "<p class=\"summary\"><span id=\"episodes-total\">{}</span> episodes match</p>",
        page.total
    );
    b.push_str("<table class=\"table\" id=\"episodes\"><thead><tr>");
    let href = |key: &str, ord: &str| link(key, ord, 0);
    let th = |label: &str, key: &str| sort_th(label, key, current, s.descending, &href);
    b.push_str(&th("Task", "task"));
    b.push_str("<th>Rollout</th>");
    for (label, key) in [
        ("Outcome", "success"),
        ("Score", "score"),
        ("Steps", "steps"),
        ("End reason", "end_reason"),
        ("Duration", "duration"),
        ("Finished", "finished"),
    ] {
        b.push_str(&th(label, key));
    }
    b.push_str("<th>Answer / error</th></tr></thead><tbody>");
    if page.items.is_empty() {
        b.push_str("<tr><td colspan=\"9\" class=\"muted\">No episode matches.</td></tr>");
    }
    for ep in &page.items {
        let (class, word) = outcome(ep.success, ep.status);
        let note = ep
            .judge_error
            .as_deref()
            .or(ep.last_error.as_deref())
            .or(ep.final_answer.as_deref())
            .unwrap_or("");
        let _ = write!(
            b,
            "<tr data-id=\"{id}\" data-task=\"{task}\"><td><a class=\"replay\" href=\"/#/episodes/{id}\">{task}</a></td>\
             <td>{}</td><td class=\"{class}\">{word}</td><td>{}</td><td class=\"steps\">{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td class=\"note\">{}</td></tr>",
            ep.rollout,
            num(ep.score, 2),
            ep.steps,
            opt(ep.end_reason.as_deref()),
            ep.duration_ms
                .map_or("–".into(), |m| format!("{:.1}s", f64::from(m) / 1000.0)),
            ep.finished_at
                .map_or("–".into(), |t| t.format("%H:%M:%S").to_string()),
            esc(&note.chars().take(160).collect::<String>()),
            id = ep.id,
            task = esc(&ep.task_id),
        );
    }
    b.push_str("</tbody></table><p class=\"pager\">");
    if e.offset > 0 {
        let _ = write!(
            b,
            "<a id=\"prev\" href=\"{}\">← previous</a> ",
            esc(&link(current, order, (e.offset - e.limit).max(0)))
        );
    }
    let _ = write!(
        b,
        "<span class=\"muted\">{}–{} of {}</span>",
        if page.items.is_empty() {
            0
        } else {
            e.offset + 1
        },
        e.offset + page.items.len() as i64,
        page.total
    );
    if e.offset + e.limit < page.total {
        let _ = write!(
            b,
            " <a id=\"next\" href=\"{}\">next →</a>",
            esc(&link(current, order, e.offset + e.limit))
        );
    }
    b.push_str("</p>");
    Ok(Html(frame(&format!("{} · episodes", c.name), &b)))
}
