//! Where a session may go: web schemes only, and optional allow and deny lists.
//!
//! A pattern with `://` is a glob over the whole URL (`http://shop.test/admin*`); any other
//! pattern is a glob over the host, or `host:port` (`*.example.com`, `127.0.0.1:8080`).
//! `*` matches any run of characters, `?` one character. Deny wins over allow; an empty
//! allow list allows every web URL.

/// URL allow and deny lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UrlPolicy {
    /// When non-empty, only URLs matching one of these may load.
    pub allow: Vec<String>,
    /// URLs matching any of these never load.
    pub deny: Vec<String>,
}

/// Schemes a document may be loaded from.
const WEB_SCHEMES: &[&str] = &["http", "https"];

impl UrlPolicy {
    /// Whether the policy has any list at all (when not, requests need no interception).
    pub fn is_open(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    /// `Err(reason)` when a document at `url` must not load.
    pub fn check(&self, url: &str) -> Result<(), String> {
        if matches!(url, "about:blank" | "about:srcdoc") {
            return Ok(());
        }
        let Some((scheme, rest)) = url.split_once(':') else {
            return Err("not an absolute URL".into());
        };
        let scheme = scheme.to_ascii_lowercase();
        if !WEB_SCHEMES.contains(&scheme.as_str()) {
            return Err(format!(
                "the {scheme}: scheme is not allowed (only http and https)"
            ));
        }
        let host_port = rest
            .trim_start_matches('/')
            .split(['/', '?', '#'])
            .next()
            .unwrap_or_default();
        // Credentials before an `@` are not part of the host.
        let host_port = host_port.rsplit('@').next().unwrap_or_default();
        let host = host_port
            .rsplit_once(':')
            .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
            .map_or(host_port, |(h, _)| h);
        let hit = |pattern: &String| {
            if pattern.contains("://") {
                glob(pattern, url)
            } else {
                glob(pattern, host) || glob(pattern, host_port)
            }
        };
        if let Some(p) = self.deny.iter().find(|p| hit(p)) {
            return Err(format!("matches the deny list entry {p:?}"));
        }
        if !self.allow.is_empty() && !self.allow.iter().any(hit) {
            return Err("matches no allow list entry".into());
        }
        Ok(())
    }
}

/// Case-insensitive glob with `*` and `?`.
fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.to_lowercase().chars().collect();
    let t: Vec<char> = text.to_lowercase().chars().collect();
    // Iterative matcher with one backtrack point: linear in practice, no recursion.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_other_than_the_web_are_refused() {
        let open = UrlPolicy::default();
        assert!(open.check("http://a.test/x").is_ok());
        assert!(open.check("HTTPS://a.test/").is_ok());
        assert!(open.check("about:blank").is_ok());
        for bad in [
            "file:///etc/passwd",
            "chrome://settings",
            "javascript:alert(1)",
            "data:text/html,hi",
            "ftp://x.test/",
            "view-source:http://a.test/",
        ] {
            let e = open.check(bad).expect_err(bad);
            assert!(e.contains("scheme is not allowed"), "{bad}: {e}");
        }
        assert!(open.check("nonsense").is_err());
    }

    #[test]
    fn host_and_url_patterns_with_deny_winning() {
        let p = UrlPolicy {
            allow: vec!["*.shop.test".into(), "127.0.0.1:8080".into()],
            deny: vec![
                "http://www.shop.test/admin*".into(),
                "evil.shop.test".into(),
            ],
        };
        assert!(p.check("http://www.shop.test/cart").is_ok());
        assert!(p.check("http://127.0.0.1:8080/x").is_ok());
        assert!(
            p.check("http://127.0.0.1:9090/x")
                .unwrap_err()
                .contains("no allow")
        );
        assert!(
            p.check("http://www.shop.test/admin/users")
                .unwrap_err()
                .contains("deny")
        );
        assert!(
            p.check("https://EVIL.shop.test/")
                .unwrap_err()
                .contains("deny")
        );
        assert!(
            p.check("http://user:pw@www.shop.test/").is_ok(),
            "credentials are not the host"
        );
        assert!(p.check("http://other.test/?q=www.shop.test").is_err());
    }

    #[test]
    fn glob_matches_stars_and_question_marks() {
        assert!(glob("a*c", "abbbc"));
        assert!(glob("a*", "a"));
        assert!(glob("*", ""));
        assert!(glob("a?c", "abc"));
        assert!(!glob("a?c", "ac"));
        assert!(!glob("a*d", "abc"));
        assert!(glob("*.x.*", "www.x.test"));
    }
}
