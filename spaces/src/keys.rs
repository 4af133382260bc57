//! Key names and combinations for the `press` action, and their CDP key-event fields: the
//! one key list, which the parser, `Display` and the constrained-decoding expression share.

use std::fmt;

/// A key with optional modifiers, e.g. `Control+a` or `Enter`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyCombo {
    /// Modifier keys held while the key is pressed.
    pub modifiers: Modifiers,
    /// The key, as a DOM `KeyboardEvent.key` value (`Enter`, `a`, `ArrowDown`).
    pub key: String,
}

/// Modifier flags, in CDP's bit order (Alt=1, Ctrl=2, Meta=4, Shift=8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Modifiers(u8);

impl Modifiers {
    /// Alt / Option.
    pub const ALT: Modifiers = Modifiers(1);
    /// Control.
    pub const CONTROL: Modifiers = Modifiers(2);
    /// Meta / Command.
    pub const META: Modifiers = Modifiers(4);
    /// Shift.
    pub const SHIFT: Modifiers = Modifiers(8);

    /// The CDP `modifiers` bit field.
    pub fn bits(self) -> i64 {
        i64::from(self.0)
    }

    /// Whether every flag of `other` is set.
    pub fn contains(self, other: Modifiers) -> bool {
        self.0 & other.0 == other.0
    }

    fn insert(&mut self, other: Modifiers) {
        self.0 |= other.0;
    }
}

/// CDP fields for one key (plain data: the session that sends them lives in `browser-pool`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyDef {
    /// DOM `KeyboardEvent.key`.
    pub key: String,
    /// DOM `KeyboardEvent.code` (empty where there is none).
    pub code: String,
    /// The legacy `keyCode`.
    pub key_code: i64,
    /// Text the key types (None for keys that type nothing, or when a modifier suppresses it).
    pub text: Option<String>,
}

/// The named keys: `key`, `code`, `keyCode`, typed text.
const NAMED: &[(&str, &str, i64, Option<&str>)] = &[
    ("Enter", "Enter", 13, Some("\r")),
    ("Tab", "Tab", 9, None),
    ("Escape", "Escape", 27, None),
    ("Backspace", "Backspace", 8, None),
    ("Delete", "Delete", 46, None),
    ("Insert", "Insert", 45, None),
    ("ArrowLeft", "ArrowLeft", 37, None),
    ("ArrowUp", "ArrowUp", 38, None),
    ("ArrowRight", "ArrowRight", 39, None),
    ("ArrowDown", "ArrowDown", 40, None),
    ("Home", "Home", 36, None),
    ("End", "End", 35, None),
    ("PageUp", "PageUp", 33, None),
    ("PageDown", "PageDown", 34, None),
    (" ", "Space", 32, Some(" ")),
    ("F1", "F1", 112, None),
    ("F2", "F2", 113, None),
    ("F3", "F3", 114, None),
    ("F4", "F4", 115, None),
    ("F5", "F5", 116, None),
    ("F6", "F6", 117, None),
    ("F7", "F7", 118, None),
    ("F8", "F8", 119, None),
    ("F9", "F9", 120, None),
    ("F10", "F10", 121, None),
    ("F11", "F11", 122, None),
    ("F12", "F12", 123, None),
];

/// Modifier flags with the name `Display` writes, in the order it writes them, and the
/// other spellings the parser takes.
const MODIFIERS: &[(Modifiers, &str, &[&str])] = &[
    (Modifiers::CONTROL, "Control", &["ctrl"]),
    (Modifiers::ALT, "Alt", &["option"]),
    (Modifiers::SHIFT, "Shift", &[]),
    (Modifiers::META, "Meta", &["cmd", "command", "super"]),
];

/// The named keys as `Display` writes them (`Space` for the space bar), e.g. for the
/// constrained-decoding expression.
pub fn key_names() -> impl Iterator<Item = &'static str> {
    NAMED
        .iter()
        .map(|(k, ..)| if *k == " " { "Space" } else { *k })
}

/// The modifier names as `Display` writes them, in its order.
pub fn modifier_names() -> impl Iterator<Item = &'static str> {
    MODIFIERS.iter().map(|(_, name, _)| *name)
}

const ALIASES: &[(&str, &str)] = &[
    ("return", "Enter"),
    ("esc", "Escape"),
    ("del", "Delete"),
    ("space", " "),
    ("spacebar", " "),
    ("left", "ArrowLeft"),
    ("up", "ArrowUp"),
    ("right", "ArrowRight"),
    ("down", "ArrowDown"),
    ("pgup", "PageUp"),
    ("pgdn", "PageDown"),
    ("pagedown", "PageDown"),
    ("pageup", "PageUp"),
];

fn canonical_key(name: &str) -> Option<String> {
    if name.chars().count() == 1 {
        return Some(name.to_string());
    }
    let lower = name.to_ascii_lowercase();
    if let Some((_, k)) = ALIASES.iter().find(|(a, _)| *a == lower) {
        return Some((*k).to_string());
    }
    NAMED
        .iter()
        .find(|(k, ..)| k.to_ascii_lowercase() == lower)
        .map(|(k, ..)| (*k).to_string())
}

impl KeyCombo {
    /// Parses `Enter`, `a`, `Control+a`, `Shift+Tab`, `ctrl+shift+ArrowLeft`.
    pub fn parse(text: &str) -> Result<KeyCombo, String> {
        if text.is_empty() {
            return Err("empty key name".into());
        }
        // A lone "+" is the plus key, not a separator.
        if text == "+" {
            return Ok(KeyCombo {
                modifiers: Modifiers::default(),
                key: "+".into(),
            });
        }
        let parts: Vec<&str> = text.split('+').collect();
        let (last, mods) = parts.split_last().expect("split yields at least one part");
        let mut modifiers = Modifiers::default();
        for m in mods {
            let lower = m.to_ascii_lowercase();
            let Some((flag, ..)) = MODIFIERS.iter().find(|(_, name, aliases)| {
                name.eq_ignore_ascii_case(&lower) || aliases.contains(&lower.as_str())
            }) else {
                return Err(format!("unknown modifier `{lower}` in `{text}`"));
            };
            modifiers.insert(*flag);
        }
        let key = canonical_key(last).ok_or_else(|| {
            format!("unknown key `{last}` (use a single character or a name such as Enter, Tab, Escape, ArrowDown)")
        })?;
        Ok(KeyCombo { modifiers, key })
    }

    /// The CDP fields for the main key of this combination.
    pub fn key_def(&self) -> KeyDef {
        let suppress_text = self.modifiers.contains(Modifiers::CONTROL)
            || self.modifiers.contains(Modifiers::ALT)
            || self.modifiers.contains(Modifiers::META);
        if let Some((key, code, key_code, text)) = NAMED.iter().find(|(k, ..)| *k == self.key) {
            return KeyDef {
                key: (*key).to_string(),
                code: (*code).to_string(),
                key_code: *key_code,
                text: if suppress_text {
                    None
                } else {
                    text.map(str::to_string)
                },
            };
        }
        let c = self.key.chars().next().unwrap_or(' ');
        let shifted = self.modifiers.contains(Modifiers::SHIFT);
        let (code, key_code) = if c.is_ascii_alphabetic() {
            (
                format!("Key{}", c.to_ascii_uppercase()),
                i64::from(c.to_ascii_uppercase() as u8),
            )
        } else if c.is_ascii_digit() {
            (format!("Digit{c}"), i64::from(c as u8))
        } else {
            (String::new(), 0)
        };
        let typed = if shifted && c.is_ascii_lowercase() {
            c.to_ascii_uppercase().to_string()
        } else {
            c.to_string()
        };
        KeyDef {
            key: typed.clone(),
            code,
            key_code,
            text: if suppress_text { None } else { Some(typed) },
        }
    }
}

impl fmt::Display for KeyCombo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (flag, name, _) in MODIFIERS {
            if self.modifiers.contains(*flag) {
                write!(f, "{name}+")?;
            }
        }
        if self.key == " " {
            f.write_str("Space")
        } else {
            f.write_str(&self.key)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_combos_and_aliases() {
        let k = KeyCombo::parse("ctrl+shift+a").unwrap();
        assert!(k.modifiers.contains(Modifiers::CONTROL) && k.modifiers.contains(Modifiers::SHIFT));
        assert_eq!(k.key, "a");
        assert_eq!(k.to_string(), "Control+Shift+a");
        assert_eq!(KeyCombo::parse("return").unwrap().key, "Enter");
        assert_eq!(KeyCombo::parse("Space").unwrap().to_string(), "Space");
        assert_eq!(KeyCombo::parse("+").unwrap().key, "+");
    }

    #[test]
    fn rejects_unknown_names() {
        assert!(KeyCombo::parse("Hyper+a").unwrap_err().contains("modifier"));
        assert!(
            KeyCombo::parse("Enterr")
                .unwrap_err()
                .contains("unknown key")
        );
        assert!(KeyCombo::parse("").is_err());
    }

    #[test]
    fn key_defs_carry_text_only_when_typing() {
        let enter = KeyCombo::parse("Enter").unwrap().key_def();
        assert_eq!((enter.key_code, enter.text.as_deref()), (13, Some("\r")));
        let ctrl_a = KeyCombo::parse("Control+a").unwrap().key_def();
        assert_eq!((ctrl_a.code.as_str(), ctrl_a.text), ("KeyA", None));
        let shift_b = KeyCombo::parse("Shift+b").unwrap().key_def();
        assert_eq!(shift_b.text.as_deref(), Some("B"));
    }
}
