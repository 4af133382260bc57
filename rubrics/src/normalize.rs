//! Text normalisation shared by every comparison, so that "12.50", " $12.50. " and
//! "12.5" compare the way a person would.

/// Collapses runs of whitespace to one space and trims.
pub fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Normalises a final answer: lower case, whitespace collapsed, surrounding quotes and
/// trailing sentence punctuation removed.
pub fn answer(s: &str) -> String {
    let mut t = collapse(s).to_lowercase();
    loop {
        let before = t.len();
        for (open, close) in [('"', '"'), ('\'', '\''), ('`', '`'), ('“', '”'), ('‘', '’')]
        {
            let n = open.len_utf8() + close.len_utf8();
            if t.len() >= n && t.starts_with(open) && t.ends_with(close) {
                t = t[open.len_utf8()..t.len() - close.len_utf8()]
                    .trim()
                    .to_string();
            }
        }
        while t.ends_with(['.', '!', ';']) {
            t.pop();
        }
        t = t.trim().to_string();
        if t.len() == before {
            return t;
        }
    }
}

/// The first number in a text: thousands separators and currency signs are ignored,
/// `-` directly before the digits makes it negative.
pub fn first_number(s: &str) -> Option<f64> {
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() {
            let negative = i > 0 && chars[i - 1] == '-';
            let mut text = String::new();
            let mut seen_dot = false;
            while i < chars.len() {
                let c = chars[i];
                if c.is_ascii_digit() {
                    text.push(c);
                } else if c == ','
                    && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())
                    && !seen_dot
                {
                    // thousands separator
                } else if c == '.'
                    && !seen_dot
                    && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())
                {
                    seen_dot = true;
                    text.push(c);
                } else {
                    break;
                }
                i += 1;
            }
            let n: f64 = text.parse().ok()?;
            return Some(if negative { -n } else { n });
        }
        i += 1;
    }
    None
}

/// Normalises a URL for comparison: scheme and host lower case, default ports dropped,
/// the path's trailing `/` dropped, query parameters sorted, the fragment dropped. Text
/// that is not an absolute URL is only trimmed (of its fragment and trailing `/`).
pub fn url(s: &str) -> String {
    let s = s.trim();
    let s = s.split('#').next().unwrap_or_default();
    let (head, query) = match s.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (s, None),
    };
    let head = match head.split_once("://") {
        Some((scheme, rest)) => {
            let scheme = scheme.to_ascii_lowercase();
            let (authority, path) = match rest.find('/') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, ""),
            };
            let mut authority = authority.to_ascii_lowercase();
            for (sch, port) in [("http", ":80"), ("https", ":443")] {
                if scheme == sch && authority.ends_with(port) {
                    authority.truncate(authority.len() - port.len());
                }
            }
            format!("{scheme}://{authority}{}", path.trim_end_matches('/'))
        }
        None => head.trim_end_matches('/').to_string(),
    };
    let mut params: Vec<&str> = query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .collect();
    params.sort_unstable();
    if params.is_empty() {
        head
    } else {
        format!("{head}?{}", params.join("&"))
    }
}

/// Whether `url` includes `reference` as WebArena's `url_match` ("GOLD in PRED") counts
/// it: after normalising both (see [`url`]; the scheme does not matter), the reference's
/// host and path are contained in the URL's host and path, and each of the reference's
/// query parameters has one of its values among the URL's values for that name.
pub fn url_includes(url_: &str, reference: &str) -> bool {
    let (place, params) = url_parts(url_);
    let (want_place, want_params) = url_parts(reference);
    if !place.contains(&want_place) {
        return false;
    }
    let mut names: Vec<&str> = want_params.iter().map(|(k, _)| k.as_str()).collect();
    names.dedup();
    names.iter().all(|name| {
        want_params
            .iter()
            .filter(|(k, _)| k == name)
            .any(|(_, v)| params.iter().any(|(k, w)| k == name && w == v))
    })
}

/// A normalised URL's host and path (without its scheme) and its decoded query
/// parameters, in order.
fn url_parts(s: &str) -> (String, Vec<(String, String)>) {
    let normal = url(s);
    let (head, query) = normal.split_once('?').unwrap_or((&normal, ""));
    let place = head.split_once("://").map_or(head, |(_, rest)| rest);
    let params = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect();
    (place.to_string(), params)
}

/// A query component decoded: `+` is a space, `%XX` a byte; a malformed escape stays as
/// written.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_normalise() {
        assert_eq!(
            url("HTTP://Shop.Test:80/a/b/?y=2&x=1#top"),
            "http://shop.test/a/b?x=1&y=2"
        );
        assert_eq!(url("https://x.test:443/"), "https://x.test");
        assert_eq!(url("https://x.test:8443/p"), "https://x.test:8443/p");
        assert_eq!(
            url("http://x.test/Path"),
            "http://x.test/Path",
            "paths keep their case"
        );
        assert_ne!(url("http://x.test/p?a=1"), url("http://x.test/p?a=2"));
        assert_eq!(url("/relative/"), "/relative");
    }

    #[test]
    fn url_includes_follows_webarena() {
        let r = "http://gitlab.test:8023/issues?state=opened&sort=due_date";
        assert!(url_includes(
            "HTTP://GITLAB.test:8023/issues/?sort=due_date&state=opened&page=2#x",
            r
        ));
        assert!(url_includes(
            "http://gitlab.test:8023/dashboard/todos/done",
            "http://gitlab.test:8023/dashboard/todos"
        ));
        assert!(url_includes(
            "https://gitlab.test:8023/issues?state=opened&sort=due_date",
            r
        ));
        assert!(!url_includes(
            "http://gitlab.test:8023/issues?sort=due_date&state=closed",
            r
        ));
        assert!(!url_includes(
            "http://gitlab.test:8023/issues?state=opened",
            r
        ));
        assert!(!url_includes("http://gitlab.test:8023/merge_requests", r));
        assert!(url_includes(
            "http://x.test/search?q=blue%20mug",
            "http://x.test/search?q=blue+mug"
        ));
        assert!(
            url_includes("http://x.test/a%", "http://x.test/a%"),
            "a bad escape stays"
        );
    }

    #[test]
    fn answers_normalise() {
        assert_eq!(answer("  \"The  Blue Mug.\" "), "the blue mug");
        assert_eq!(answer("'yes'!"), "yes");
        assert_eq!(answer("“Quotes”"), "quotes");
        assert_eq!(answer(""), "");
        assert_eq!(answer("\""), "\"");
    }

    #[test]
    fn numbers_are_found() {
        assert_eq!(first_number("The total is $1,234.50."), Some(1234.5));
        assert_eq!(first_number("-3 degrees"), Some(-3.0));
        assert_eq!(first_number("about 12"), Some(12.0));
        assert_eq!(first_number("v2.0.1"), Some(2.0));
        assert_eq!(first_number("none"), None);
        assert_eq!(first_number("1,2"), Some(12.0));
    }
}
