//! Constrained decoding: the model may only write one action the grammar accepts, with
//! element numbers (or grid points) the observation offers, so a small model that knows
//! roughly what to do but not the syntax still acts.
//!
//! The action language is a regular expression compiled to a lazy DFA; before each token
//! the tokens whose bytes would lead the DFA into its dead state are masked out, and the
//! end of text is allowed only where the DFA accepts. The expression is `spaces`'
//! (derived from the parser's own tables), a subset of `parse_action`'s language, so every
//! complete output parses.

use regex_automata::hybrid::LazyStateID;
use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::util::start;
use regex_automata::{Anchored, Input};
use spaces::{ActionSet, Grounding, Observation};

use crate::OnnxError;

/// Room for the lazy DFA's states: a clear costs a replay of the text so far.
const CACHE_BYTES: usize = 8 << 20;

/// The actions one observation allows, as a DFA over UTF-8 bytes.
pub struct ActionGrammar {
    dfa: DFA,
    cache: Cache,
    state: LazyStateID,
    /// The text taken so far: a lazy DFA's state ids die when its cache is cleared (or
    /// with the cache, on clone), and are then found again by replaying it.
    written: Vec<u8>,
    /// The cache's clear count when `state` was found.
    clears: usize,
}

impl std::fmt::Debug for ActionGrammar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionGrammar").finish_non_exhaustive()
    }
}

impl Clone for ActionGrammar {
    fn clone(&self) -> Self {
        let mut g = ActionGrammar {
            dfa: self.dfa.clone(),
            cache: self.dfa.create_cache(),
            state: self.state,
            written: self.written.clone(),
            clears: 0,
        };
        g.replay();
        g
    }
}

/// What a constrained output may hold besides its action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Constraint {
    /// The action alone (after an answer prefix such as `Action:`, or as the whole reply).
    #[default]
    Action,
    /// Free lines first (the prompt's thought, or its memory / progress / intention), then
    /// a last line `Action: <action>`: the model reasons, but still ends with an action.
    Reasoned,
}

/// The expression for `obs` under `constraint`, unanchored (what a server's guided
/// decoding takes as the whole output).
pub fn output_regex(
    obs: &Observation,
    grounding: Grounding,
    constraint: Constraint,
    actions: ActionSet,
) -> String {
    let action = action_regex(obs, grounding, actions);
    match constraint {
        Constraint::Action => action,
        Constraint::Reasoned => format!(r"(?:[^\n]*\n)*Action:{action}"),
    }
}

/// The expression of every action for `obs`, anchored at both ends (what
/// [`ActionGrammar::new`] takes).
pub fn action_pattern(obs: &Observation, grounding: Grounding) -> String {
    output_pattern(obs, grounding, Constraint::Action, ActionSet::all())
}

/// [`output_regex`] anchored at both ends.
pub fn output_pattern(
    obs: &Observation,
    grounding: Grounding,
    constraint: Constraint,
    actions: ActionSet,
) -> String {
    format!(
        "^(?:{})$",
        output_regex(obs, grounding, constraint, actions)
    )
}

/// The action expression for `obs`, unanchored (what a server's guided decoding takes as
/// the whole output): `spaces`' expression for the observation, the one definition of the
/// action language.
pub fn action_regex(obs: &Observation, grounding: Grounding, actions: ActionSet) -> String {
    spaces::pattern::action_regex(obs, grounding, actions)
}

impl ActionGrammar {
    /// Compiles `pattern` (anchored at the start of the generated text).
    pub fn new(pattern: &str) -> Result<ActionGrammar, OnnxError> {
        let dfa = DFA::builder()
            .configure(DFA::config().cache_capacity(CACHE_BYTES))
            .build(pattern)
            .map_err(|e| OnnxError::Prompt(format!("action grammar: {e}")))?;
        let mut cache = dfa.create_cache();
        let state = dfa
            .start_state(&mut cache, &start::Config::new().anchored(Anchored::Yes))
            .map_err(|e| OnnxError::Prompt(format!("action grammar: {e}")))?;
        let clears = cache.clear_count();
        Ok(ActionGrammar {
            dfa,
            cache,
            state,
            written: Vec::new(),
            clears,
        })
    }

    /// Finds the state for `written` from the start; false if the DFA gave up.
    fn replay(&mut self) -> bool {
        let start = self.dfa.start_state(
            &mut self.cache,
            &start::Config::new().anchored(Anchored::Yes),
        );
        let Ok(mut s) = start else {
            return false;
        };
        for b in &self.written {
            match self.dfa.next_state(&mut self.cache, s, *b) {
                Ok(n) => s = n,
                Err(_) => return false,
            }
        }
        self.state = s;
        self.clears = self.cache.clear_count();
        true
    }

    /// The grammar of the outputs `obs` allows under `constraint`, with the kinds of
    /// action in `actions`.
    pub fn for_observation(
        obs: &Observation,
        grounding: Grounding,
        constraint: Constraint,
        actions: ActionSet,
    ) -> Result<ActionGrammar, OnnxError> {
        Self::new(&output_pattern(obs, grounding, constraint, actions))
    }

    /// The state after `bytes` from the current one, if text can still end as an action.
    fn after(&mut self, bytes: &[u8]) -> Option<LazyStateID> {
        if self.cache.clear_count() != self.clears && !self.replay() {
            return None;
        }
        let mut s = self.state;
        for b in bytes {
            s = self.dfa.next_state(&mut self.cache, s, *b).ok()?;
            if s.is_dead() || s.is_quit() {
                return None;
            }
        }
        Some(s)
    }

    /// Whether `bytes` may come next.
    pub fn allows(&mut self, bytes: &[u8]) -> bool {
        !bytes.is_empty() && self.after(bytes).is_some()
    }

    /// Takes `bytes` as written; false (and no change) if they may not come next.
    pub fn advance(&mut self, bytes: &[u8]) -> bool {
        match self.after(bytes) {
            Some(s) => {
                self.state = s;
                self.clears = self.cache.clear_count();
                self.written.extend_from_slice(bytes);
                true
            }
            None => false,
        }
    }

    /// Whether the text so far is a whole action (the generation may end here).
    pub fn complete(&mut self) -> bool {
        if self.cache.clear_count() != self.clears && !self.replay() {
            return false;
        }
        self.dfa
            .next_eoi_state(&mut self.cache, self.state)
            .is_ok_and(|s| s.is_match())
    }

    /// Whether `text` as a whole is in the language (for tests and checks).
    pub fn matches(pattern: &str, text: &str) -> bool {
        DFA::new(pattern).is_ok_and(|dfa| {
            let mut cache = dfa.create_cache();
            dfa.try_search_fwd(&mut cache, &Input::new(text).anchored(Anchored::Yes))
                .is_ok_and(|m| m.is_some())
        })
    }
}

/// Each token's bytes, for masking: byte-level BPE tokens map back through GPT-2's
/// byte-to-character table; special tokens get none (never sampled under a grammar).
pub struct TokenBytes(Vec<Option<Vec<u8>>>);

impl TokenBytes {
    /// The table for `tokenizer`.
    pub fn of(tokenizer: &tokenizers::Tokenizer) -> TokenBytes {
        let bytes: std::collections::HashMap<char, u8> = byte_chars()
            .iter()
            .enumerate()
            .map(|(b, c)| (*c, b as u8))
            .collect();
        let specials = tokenizer.get_added_tokens_decoder();
        let n = tokenizer.get_vocab_size(true);
        TokenBytes(
            (0..n as u32)
                .map(|id| {
                    if specials.get(&id).is_some_and(|t| t.special) {
                        return None;
                    }
                    let piece = tokenizer.id_to_token(id)?;
                    piece.chars().map(|c| bytes.get(&c).copied()).collect()
                })
                .collect(),
        )
    }

    /// The bytes of token `id`, if it has any.
    pub fn get(&self, id: usize) -> Option<&[u8]> {
        self.0.get(id).and_then(|b| b.as_deref())
    }

    /// How many tokens the table covers.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// GPT-2's byte-level alphabet: the character that stands for each byte.
fn byte_chars() -> [char; 256] {
    let printable = |b: u32| {
        (0x21..=0x7e).contains(&b) || (0xa1..=0xac).contains(&b) || (0xae..=0xff).contains(&b)
    };
    let mut out = ['\0'; 256];
    let mut extra = 0;
    for b in 0..256u32 {
        out[b as usize] = if printable(b) {
            char::from_u32(b).unwrap_or('\0')
        } else {
            extra += 1;
            char::from_u32(255 + extra).unwrap_or('\0')
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_level_characters_follow_gpt2() {
        let chars = byte_chars();
        assert_eq!(chars[b'a' as usize], 'a');
        assert_eq!(chars[b' ' as usize], '\u{120}');
        assert_eq!(chars[b'\n' as usize], '\u{10a}');
        assert_eq!(chars[0], '\u{100}');
        let mut sorted = chars.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 256, "one character per byte");
    }
}
