//! The campaign's plots page: outcomes over its time, latency distributions per phase,
//! steps per episode and success by difficulty. Every point and bar that stands for
//! episodes links to them (the episode table filtered to its bucket).

use std::fmt::Write;

use axum::extract::{Path, State};
use axum::response::Html;
use chrono::SecondsFormat;
use store::EpisodeStatus;

use super::api::{Plots, campaign, plots_of};
use super::html::{frame, head, num, pct};
use super::pages::episodes_href;
use super::params::PlotsQuery;
use crate::AppState;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::plot::{Axes, Bar, Point, Series, bars, line};

fn time_plots(c: uuid::Uuid, p: &Plots) -> String {
    let Some(first) = p.timeline.first() else {
        return line(
            &Axes {
                title: "Success over time",
                x: "minutes",
                y: "success",
                y_range: Some((0.0, 1.0)),
                percent: true,
            },
            &[],
        );
    };
    let t0 = first.from;
    let mins = |t: chrono::DateTime<chrono::Utc>| (t - t0).num_milliseconds() as f64 / 60_000.0;
    let href = |b: &store::analysis::TimeBucket| {
        episodes_href(
            c,
            &[
                ("status", EpisodeStatus::Finished.as_str().into()),
                ("from", b.from.to_rfc3339_opts(SecondsFormat::AutoSi, true)),
                ("to", b.to.to_rfc3339_opts(SecondsFormat::AutoSi, true)),
            ],
        )
    };
    let success: Vec<Point> = p
        .timeline
        .iter()
        .filter(|b| b.judged > 0)
        .map(|b| {
            let rate = b.successes as f64 / b.judged as f64;
            Point {
                x: mins(b.from),
                y: rate,
                label: format!(
                    "{} · {} of {} judged",
                    b.from.format("%H:%M:%S"),
                    b.successes,
                    b.judged
                ),
                href: Some(href(b)),
            }
        })
        .collect();
    let throughput: Vec<Point> = p
        .timeline
        .iter()
        .map(|b| {
            let minutes = ((b.to - b.from).num_milliseconds() as f64 / 60_000.0).max(1e-6);
            Point {
                x: mins(b.from),
                y: b.finished as f64 / minutes,
                label: format!("{} · {} finished", b.from.format("%H:%M:%S"), b.finished),
                href: (b.finished > 0).then(|| href(b)),
            }
        })
        .collect();
    let mut o = line(
        &Axes {
            title: "Success over time",
            x: "minutes since the first finish",
            y: "success",
            y_range: Some((0.0, 1.0)),
            percent: true,
        },
        &[Series {
            name: "success rate",
            class: "s1",
            points: success,
        }],
    );
    o.push_str(&line(
        &Axes {
            title: "Throughput over time",
            x: "minutes since the first finish",
            y: "episodes / minute",
            y_range: None,
            percent: false,
        },
        &[Series {
            name: "episodes finished per minute",
            class: "s0",
            points: throughput,
        }],
    ));
    o
}

fn latency_plots(c: uuid::Uuid, p: &Plots) -> String {
    let mut o = String::new();
    for (i, l) in p.latency.iter().enumerate() {
        let title = format!("{} latency (ms)", l.phase);
        let class = ["s0", "s3", "s2", "s1"][i % 4];
        let bars_: Vec<Bar> = l
            .bins
            .iter()
            .map(|b| {
                let range = match b.hi_ms {
                    Some(hi) => format!("{}–{}", b.lo_ms, hi),
                    None => format!("≥{}", b.lo_ms),
                };
                let mut pairs = vec![
                    ("phase", l.phase.to_string()),
                    ("ms_min", b.lo_ms.to_string()),
                ];
                if let Some(hi) = b.hi_ms {
                    pairs.push(("ms_max", hi.to_string()));
                }
                Bar {
                    label: range.clone(),
                    value: b.count as f64,
                    tip: format!("{range} ms: {}", b.count),
                    href: (b.count > 0).then(|| episodes_href(c, &pairs)),
                    class,
                }
            })
            .collect();
        o.push_str(&bars(
            &Axes {
                title: &title,
                x: if l.phase == "judge" {
                    "ms per episode"
                } else {
                    "ms per step"
                },
                y: "count",
                y_range: None,
                percent: false,
            },
            &bars_,
        ));
    }
    o
}

fn latency_table(p: &Plots) -> String {
    let mut o = String::from(
        "<table class=\"table\" id=\"latency\"><thead><tr><th>Phase</th><th>Samples</th>\
         <th>Mean</th><th>p25</th><th>Median</th><th>p75</th><th>p95</th><th>Max</th></tr></thead><tbody>",
    );
    for l in &p.latency {
        let _ = write!(
            o,
            "<tr data-phase=\"{}\"><td>{}</td><td class=\"count\">{}</td><td>{}</td><td>{}</td>\
             <td class=\"p50\">{}</td><td>{}</td><td class=\"p95\">{}</td><td>{}</td></tr>",
            l.phase,
            l.phase,
            l.count,
            num(l.mean_ms, 0),
            num(l.p25_ms, 0),
            num(l.p50_ms, 0),
            num(l.p75_ms, 0),
            num(l.p95_ms, 0),
            l.max_ms.map_or("–".into(), |v| v.to_string())
        );
    }
    o.push_str("</tbody></table>");
    o
}

fn outcome_plots(c: uuid::Uuid, p: &Plots) -> String {
    let steps: Vec<Bar> = p
        .steps
        .iter()
        .map(|s| Bar {
            label: s.steps.to_string(),
            value: s.episodes as f64,
            tip: format!(
                "{} steps: {} episodes, {} solved",
                s.steps, s.episodes, s.successes
            ),
            href: Some(episodes_href(
                c,
                &[
                    ("status", EpisodeStatus::Finished.as_str().into()),
                    ("steps_min", s.steps.to_string()),
                    ("steps_max", s.steps.to_string()),
                ],
            )),
            class: "s0",
        })
        .collect();
    let mut o = bars(
        &Axes {
            title: "Steps per episode",
            x: "steps",
            y: "episodes",
            y_range: None,
            percent: false,
        },
        &steps,
    );
    let difficulty: Vec<Bar> = p
        .difficulty
        .iter()
        .map(|d| Bar {
            label: d.key.clone(),
            value: d.success_rate.unwrap_or(0.0),
            tip: format!(
                "{}: {} ({} of {} judged)",
                d.key,
                pct(d.success_rate),
                d.successes,
                d.judged
            ),
            href: Some(episodes_href(c, &[("difficulty", d.key.clone())])),
            class: "s1",
        })
        .collect();
    o.push_str(&bars(
        &Axes {
            title: "Success by difficulty",
            x: "difficulty",
            y: "success",
            y_range: Some((0.0, 1.0)),
            percent: true,
        },
        &difficulty,
    ));
    o
}

/// `GET /campaigns/{id}/plots`.
pub async fn plots_page(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<PlotsQuery>,
) -> Result<Html<String>, ApiError> {
    let buckets = q.checked()?;
    let c = campaign(&state, &id).await?;
    let p = plots_of(&state, &c, buckets).await?;
    let mut b = head(&c, "plots");
    b.push_str("<h2>Over the campaign's time</h2><section class=\"plots\" id=\"time-plots\">");
    b.push_str(&time_plots(c.id, &p));
    b.push_str("</section><h2>Outcomes</h2><section class=\"plots\" id=\"outcome-plots\">");
    b.push_str(&outcome_plots(c.id, &p));
    b.push_str(
        "</section><h2>Step latency by phase</h2><p class=\"muted\">Each bar opens the episodes \
         with a step (for the judge: a judging) in its range.</p>",
    );
    b.push_str(&latency_table(&p));
    b.push_str("<section class=\"plots\" id=\"latency-plots\">");
    b.push_str(&latency_plots(c.id, &p));
    b.push_str("</section>");
    Ok(Html(frame(&format!("{} · plots", c.name), &b)))
}
