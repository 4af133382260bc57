//! What `bench api` measures: one line per endpoint or page. A new endpoint is one more
//! line here. Paths may hold placeholders, filled from the data under test (see
//! `Targets`); an endpoint whose placeholder has no value there (no training run yet, say)
//! is skipped and says so.
//!
//! Placeholders: `{campaign}` the largest campaign, `{recent}` the newest, `{other}` the
//! second largest (a compare's other side), `{episode}` a finished episode of `{campaign}`,
//! `{task}` a task, `{run}` a training run, `{deep}` an offset nine tenths into
//! `{campaign}`'s episodes, `{deep_all}` nine tenths into all episodes, `{word}` the longest
//! word of `{episode}`'s instruction (a search that matches), `{pair_a}` and `{pair_b}` two
//! finished rollouts of one task in `{campaign}`.

/// What kind of endpoint: the target (p95 under 200 ms) is for lists and aggregates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A page of rows.
    List,
    /// Sums over many rows (a campaign's counts, metrics).
    Aggregate,
    /// Two things side by side.
    Compare,
    /// One item with its parts (an episode with its steps).
    Detail,
    /// A dashboard page's first render: its HTML, then the data it asks for first.
    Page,
    /// Server-sent events: time to the first event.
    Stream,
    /// Sums over the whole history (every campaign): grows with it by nature, so reported
    /// rather than held to the target.
    History,
}

impl Class {
    /// As printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::List => "list",
            Class::Aggregate => "aggregate",
            Class::Compare => "compare",
            Class::Detail => "detail",
            Class::Page => "page",
            Class::Stream => "stream",
            Class::History => "history",
        }
    }

    /// Whether the 200 ms p95 target applies.
    pub fn targeted(self) -> bool {
        matches!(self, Class::List | Class::Aggregate | Class::Compare)
    }
}

/// One thing to time.
#[derive(Debug, Clone, Copy)]
pub struct Endpoint {
    /// Name in the table.
    pub name: &'static str,
    /// Kind.
    pub class: Class,
    /// Fetched first, one after the other (a page's HTML and its scripts).
    pub first: &'static [&'static str],
    /// Then fetched at once (the data a page's script asks for when it starts).
    pub then: &'static [&'static str],
}

const fn get(name: &'static str, class: Class, path: &'static [&'static str]) -> Endpoint {
    Endpoint {
        name,
        class,
        first: path,
        then: &[],
    }
}

const fn page(
    name: &'static str,
    first: &'static [&'static str],
    then: &'static [&'static str],
) -> Endpoint {
    Endpoint {
        name,
        class: Class::Page,
        first,
        then,
    }
}

/// The dashboard's shell: every hash route starts from it.
const SHELL: &[&str] = &["/", "/assets/app.js", "/assets/style.css"];

/// The stylesheets a server-rendered page links to, fetched at once after its HTML.
const CSS: &[&str] = &[
    "/assets/style.css",
    "/assets/training.css",
    "/assets/analysis.css",
];

/// Everything `bench api` times, in table order. One line each (kept so by hand: a new
/// endpoint is one more line).
#[rustfmt::skip]
pub const ENDPOINTS: &[Endpoint] = &[
    get("campaigns", Class::List, &["/api/campaigns?limit=50"]),
    get("campaign (largest)", Class::Aggregate, &["/api/campaigns/{campaign}"]),
    get("campaign (newest)", Class::Aggregate, &["/api/campaigns/{recent}"]),
    get("campaign policies", Class::Aggregate, &["/api/campaigns/{campaign}/policies"]),
    get("episodes", Class::List, &["/api/episodes?limit=100"]),
    get("episodes deep", Class::List, &["/api/episodes?limit=100&offset={deep_all}"]),
    get("campaign episodes", Class::List, &["/api/episodes?campaign={campaign}&limit=100"]),
    get("campaign episodes deep", Class::List, &["/api/episodes?campaign={campaign}&limit=100&offset={deep}"]),
    get("campaign failures", Class::List, &["/api/episodes?campaign={campaign}&status=judged&success=false&limit=100"]),
    get("task episodes", Class::List, &["/api/episodes?task={task}&limit=100"]),
    get("test-split episodes", Class::List, &["/api/episodes?split=test&limit=100"]),
    get("episode with steps", Class::Detail, &["/api/episodes/{episode}"]),
    get("tasks", Class::List, &["/api/tasks?limit=100"]),
    get("task", Class::Detail, &["/api/tasks/{task}"]),
    get("training runs", Class::List, &["/api/training-runs?limit=50"]),
    get("training run", Class::Detail, &["/api/training-runs/{run}"]),
    get("metrics", Class::Aggregate, &["/metrics"]),
    get("campaign events (first)", Class::Stream, &["/api/campaigns/{recent}/events"]),
    get("campaign list events (first)", Class::Stream, &["/api/campaigns/events"]),
    get("analysis", Class::Aggregate, &["/api/campaigns/{campaign}/analysis"]),
    get("plots", Class::Aggregate, &["/api/campaigns/{campaign}/plots"]),
    get("analysis episodes", Class::List, &["/api/campaigns/{campaign}/episodes?limit=100"]),
    get("analysis episodes deep", Class::List, &["/api/campaigns/{campaign}/episodes?limit=100&offset={deep}"]),
    get("analysis search (hits)", Class::List, &["/api/campaigns/{campaign}/episodes?q={word}&limit=100"]),
    get("analysis search (none)", Class::List, &["/api/campaigns/{campaign}/episodes?q=no-such-text-zq&limit=100"]),
    get("analysis failures by steps", Class::List, &["/api/campaigns/{campaign}/episodes?success=false&sort=steps&order=desc&limit=100"]),
    get("compare campaigns", Class::Compare, &["/api/compare?a={campaign}&b={other}"]),
    get("triage (campaign)", Class::Aggregate, &["/api/triage?campaign={campaign}"]),
    get("triage (all campaigns)", Class::History, &["/api/triage"]),
    page("index page", SHELL, &["/api/campaigns?limit=50", "/api/tasks?limit=1"]),
    page("campaign page", SHELL, &["/api/campaigns/{campaign}", "/api/episodes?campaign={campaign}&limit=100&offset=0", "/api/campaigns/{campaign}/policies"]),
    page("replay page", SHELL, &["/api/episodes/{episode}", "/api/campaigns/{campaign}"]),
    page("tasks page", SHELL, &["/api/tasks?limit=100&offset=0"]),
    page("triage page", SHELL, &["/api/triage?campaign={campaign}", "/api/campaigns/{campaign}"]),
    page("analysis page", &["/campaigns/{campaign}/analysis"], CSS),
    page("episodes page", &["/campaigns/{campaign}/episodes"], CSS),
    page("episodes page (search)", &["/campaigns/{campaign}/episodes?q={word}"], CSS),
    page("plots page", &["/campaigns/{campaign}/plots"], CSS),
    page("compare page", &["/compare?a={campaign}&b={other}"], CSS),
    page("compare episodes page", &["/compare/episodes?a={pair_a}&b={pair_b}"], CSS),
    page("training runs page", &["/training-runs"], &[]),
    page("training run page", &["/training-runs/{run}"], &[]),
    get("training run compare", Class::Compare, &["/training-runs/{run}/compare"]),
];
