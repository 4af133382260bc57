//! CSS selectors checked when a rubric is registered, with Servo's selector parser, so
//! that a selector the browser would reject (`a[`, `div >`, `:hovr`) is an error naming its
//! field then, not a SyntaxError at judge time.
//!
//! The grammar is the parser's (Selectors Level 4: combinators, attribute selectors,
//! `:not()`, `:is()`, `:where()`, `:has()`, `:nth-child(An+B of S)`...); the names of
//! pseudo-classes and pseudo-elements, which it leaves to its user, are those Chromium's
//! `querySelector` accepts (vendor-prefixed `-webkit-` names are let through). No
//! namespace prefixes are declared, as in `querySelector`.

use std::borrow::Borrow;
use std::cell::RefCell;
use std::fmt;

use cssparser::{BasicParseErrorKind, ParseError, ParseErrorKind, Parser as CssParser, ToCss};
use precomputed_hash::PrecomputedHash;
use selectors::parser::{
    NonTSPseudoClass, ParseRelative, PseudoElement, SelectorImpl, SelectorList,
    SelectorParseErrorKind,
};

/// Checks a selector as `document.querySelector` would parse it; the error says what is
/// wrong.
pub fn check(selector: &str) -> Result<(), String> {
    let rules = Rules::default();
    let mut parser = CssParser::new(selector);
    let result = SelectorList::<Css>::parse(&rules, &mut parser, ParseRelative::No);
    let at = parser.position().byte_index();
    result.map(|_| ()).map_err(|e| {
        let what = match e.kind {
            ParseErrorKind::Custom(SelectorParseErrorKind::UnsupportedPseudoClassOrElement) => {
                match rules.unknown.borrow().as_deref() {
                    Some(name) => format!("unknown pseudo-class or pseudo-element `{name}`"),
                    None => "unknown pseudo-class or pseudo-element".into(),
                }
            }
            ParseErrorKind::Custom(SelectorParseErrorKind::EmptySelector) => {
                "nothing to select".into()
            }
            ParseErrorKind::Custom(SelectorParseErrorKind::DanglingCombinator) => {
                "a combinator with nothing after it".into()
            }
            ParseErrorKind::Custom(other) => format!("{other:?}"),
            ParseErrorKind::Basic(BasicParseErrorKind::EndOfInput) => "it ends too early".into(),
            ParseErrorKind::Basic(other) => format!("{other:?}"),
        };
        let near = selector.get(at.min(selector.len())..).unwrap_or_default();
        let near: String = near.chars().take(20).collect();
        if near.trim().is_empty() {
            format!("is not a valid CSS selector: {what} (at its end)")
        } else {
            format!("is not a valid CSS selector: {what} (near `{near}`)")
        }
    })
}

/// Pseudo-classes Chromium knows beyond the tree-structural ones the parser handles.
const PSEUDO_CLASSES: &[&str] = &[
    "active",
    "any-link",
    "autofill",
    "blank",
    "checked",
    "closed",
    "default",
    "defined",
    "disabled",
    "enabled",
    "focus",
    "focus-visible",
    "focus-within",
    "fullscreen",
    "future",
    "hover",
    "in-range",
    "indeterminate",
    "invalid",
    "link",
    "modal",
    "muted",
    "open",
    "optional",
    "out-of-range",
    "past",
    "paused",
    "picture-in-picture",
    "placeholder-shown",
    "playing",
    "popover-open",
    "read-only",
    "read-write",
    "required",
    "target",
    "target-current",
    "user-invalid",
    "user-valid",
    "valid",
    "visited",
    "volume-locked",
    "xr-overlay",
    "current",
];

/// Functional pseudo-classes Chromium knows beyond `:not()`, `:is()`, `:where()`,
/// `:has()`, `:nth-*()` and `:host()`.
const FUNCTIONAL_PSEUDO_CLASSES: &[&str] = &["lang", "dir", "state", "host-context", "current"];

/// Pseudo-elements Chromium knows (valid in a selector; `querySelector` matches none).
const PSEUDO_ELEMENTS: &[&str] = &[
    "after",
    "backdrop",
    "before",
    "checkmark",
    "column",
    "cue",
    "details-content",
    "file-selector-button",
    "first-letter",
    "first-line",
    "grammar-error",
    "marker",
    "picker-icon",
    "placeholder",
    "scroll-button",
    "scroll-marker",
    "scroll-marker-group",
    "search-text",
    "selection",
    "spelling-error",
    "target-text",
    "view-transition",
];

/// Functional pseudo-elements Chromium knows beyond `::part()` and `::slotted()`.
const FUNCTIONAL_PSEUDO_ELEMENTS: &[&str] = &[
    "cue",
    "highlight",
    "picker",
    "scroll-button",
    "view-transition-group",
    "view-transition-image-pair",
    "view-transition-new",
    "view-transition-old",
];

fn known(list: &[&str], name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.starts_with("-webkit-") || list.contains(&lower.as_str())
}

/// The selector vocabulary: names are kept as text, nothing is matched.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Css;

/// A name or value from a selector.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Text(String);

impl<'a> From<&'a str> for Text {
    fn from(s: &'a str) -> Text {
        Text(s.to_string())
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl ToCss for Text {
    fn to_css<W: fmt::Write>(&self, dest: &mut W) -> fmt::Result {
        dest.write_str(&self.0)
    }
}

impl PrecomputedHash for Text {
    fn precomputed_hash(&self) -> u32 {
        // Only the parser uses these; no bloom filter ever sees them.
        0
    }
}

/// A pseudo-class or pseudo-element, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pseudo(String);

impl ToCss for Pseudo {
    fn to_css<W: fmt::Write>(&self, dest: &mut W) -> fmt::Result {
        dest.write_str(&self.0)
    }
}

impl NonTSPseudoClass for Pseudo {
    fn is_active_or_hover(&self) -> bool {
        matches!(self.0.as_str(), "active" | "hover")
    }
    fn is_user_action_state(&self) -> bool {
        matches!(self.0.as_str(), "active" | "hover" | "focus")
    }
}

impl PseudoElement for Pseudo {
    // Chromium accepts user-action states after pseudo-elements (`::before:hover`).
    fn accepts_state_pseudo_classes(&self) -> bool {
        true
    }
    fn valid_after_slotted(&self) -> bool {
        true
    }
}

impl SelectorImpl for Css {
    type ExtraMatchingData<'a> = ();
    type AttrValue = Text;
    type Identifier = Text;
    type LocalName = Text;
    type NamespaceUrl = Text;
    type NamespacePrefix = Text;
    type BorrowedNamespaceUrl = str;
    type BorrowedLocalName = str;
    type NonTSPseudoClass = Pseudo;
    type PseudoElement = Pseudo;
}

/// What `querySelector` accepts beyond the grammar; remembers the last unknown name, for
/// the message (the parser's error does not carry it).
#[derive(Default)]
struct Rules {
    unknown: RefCell<Option<String>>,
}

type Failure = ParseError<SelectorParseErrorKind>;

impl Rules {
    fn unknown(&self, name: &str) -> Failure {
        *self.unknown.borrow_mut() = Some(name.to_string());
        ParseError::custom(SelectorParseErrorKind::UnsupportedPseudoClassOrElement)
    }
}

/// Consumes a functional pseudo's arguments, which must not be empty.
fn arguments(name: &str, args: &mut CssParser<'_>) -> Result<Pseudo, Failure> {
    let mut any = false;
    while args.next().is_ok() {
        any = true;
    }
    if any {
        Ok(Pseudo(name.to_ascii_lowercase()))
    } else {
        Err(ParseError::custom(SelectorParseErrorKind::EmptySelector))
    }
}

impl<'i> selectors::Parser<'i> for Rules {
    type Impl = Css;
    type Error = SelectorParseErrorKind;

    fn parse_slotted(&self) -> bool {
        true
    }
    fn parse_part(&self) -> bool {
        true
    }
    fn parse_is_and_where(&self) -> bool {
        true
    }
    fn parse_has(&self) -> bool {
        true
    }
    fn parse_host(&self) -> bool {
        true
    }
    fn parse_nth_child_of(&self) -> bool {
        true
    }
    fn is_is_alias(&self, name: &str) -> bool {
        name.eq_ignore_ascii_case("-webkit-any") || name.eq_ignore_ascii_case("matches")
    }

    fn parse_non_ts_pseudo_class(&self, name: &str) -> Result<Pseudo, Failure> {
        if known(PSEUDO_CLASSES, name) {
            Ok(Pseudo(name.to_ascii_lowercase()))
        } else {
            Err(self.unknown(name))
        }
    }

    fn parse_non_ts_functional_pseudo_class(
        &self,
        name: &str,
        args: &mut CssParser<'i>,
        _after_part: bool,
    ) -> Result<Pseudo, Failure> {
        if known(FUNCTIONAL_PSEUDO_CLASSES, name) {
            arguments(name, args)
        } else {
            Err(self.unknown(name))
        }
    }

    fn parse_pseudo_element(&self, name: &str) -> Result<Pseudo, Failure> {
        if known(PSEUDO_ELEMENTS, name) {
            Ok(Pseudo(name.to_ascii_lowercase()))
        } else {
            Err(self.unknown(name))
        }
    }

    fn parse_functional_pseudo_element(
        &self,
        name: &str,
        args: &mut CssParser<'i>,
    ) -> Result<Pseudo, Failure> {
        if known(FUNCTIONAL_PSEUDO_ELEMENTS, name) {
            arguments(name, args)
        } else {
            Err(self.unknown(name))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn selectors_the_browser_takes_pass() {
        for s in [
            "#q",
            "input[name=\"product[sale]\"]",
            "form > button.primary:not([disabled])",
            "ul li:nth-child(2n+1 of .item) a[href^='/p/']",
            "div:has(> img), p:is(.a, .b):where(:hover)",
            "input:checked + label::before",
            "a:-webkit-any-link",
            "*|div",
            "td:nth-of-type(3)",
            "[data-x~=\"y\" i]",
            "p:lang(en)",
            "#\\31 23",
        ] {
            assert_eq!(check(s), Ok(()), "{s}");
        }
    }

    #[test]
    fn selectors_the_browser_rejects_fail_with_a_reason() {
        for (s, why) in [
            ("a[", "ends too early"),
            ("div >", "combinator"),
            ("a:hovr", "`hovr`"),
            ("p::befor", "`befor`"),
            ("", "nothing to select"),
            ("a,,b", "valid CSS selector"),
            ("#", "valid CSS selector"),
            ("svg|rect", "valid CSS selector"),
            (":nth-child(x)", "valid CSS selector"),
            ("p:lang()", "nothing to select"),
        ] {
            let e = check(s).expect_err(s);
            assert!(e.contains(why), "{s}: {e}");
        }
    }
}
