//! Whatever an agent sends, the parser never panics, and whatever it accepts the grammar
//! reads back unchanged: valid texts cut at every point, mangled at random (a fixed seed, so
//! every run tries the same inputs), random bytes, and proptest's strings.

use proptest::prelude::*;

use super::CTX;
use crate::action;
use crate::browsergym::parse;

/// Valid texts, from which the no-panic checks cut and mangle inputs.
const SAMPLES: &[&str] = &[
    "click('12', button=\"right\", modifiers=[])",
    "fill(\"5\", 'multi\\nline \\'q\\' \\u00e9 \\U0001F600 \\x41 \\101')",
    "select_option('8', [\"Blue\",])\npress('3', 'ControlOrMeta+KeyA')",
    "# note\nscroll(-50.2, +1e3)\nmouse_drag_and_drop(1, 2.5, .5, 4.)",
    "send_msg_to_user('''a\n\"b\"''')  # done\nnoop(wait_ms=500); tab_focus(0); tab_close()",
    "fill(\n  '1',\n  \"x\",\n)\ngoto('http://a.test/' \\\n)",
];

fn no_panic(text: &str) {
    if let Ok(actions) = parse(text, &CTX) {
        assert!(!actions.is_empty(), "{text:?}");
        for a in &actions {
            assert_eq!(action::parse(&a.to_string()).as_ref(), Ok(a), "{text:?}");
        }
    } else {
        assert!(!parse(text, &CTX).unwrap_err().to_string().is_empty());
    }
}

/// A fixed-seed xorshift64: the same inputs on every run.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn never_panics_on_cut_or_mangled_actions() {
    for sample in SAMPLES {
        assert!(parse(sample, &CTX).is_ok(), "{sample}");
        let chars: Vec<char> = sample.chars().collect();
        for i in 0..=chars.len() {
            no_panic(&chars[..i].iter().collect::<String>());
            no_panic(&chars[i..].iter().collect::<String>());
        }
    }
    let alphabet: Vec<char> = "()[],='\"\\#;\n .-+e0123456789aTFNux_ é😀\u{0}"
        .chars()
        .collect();
    let mut rng = XorShift(0x5eed_cafe_f00d_d00d);
    for _ in 0..20_000 {
        let sample = SAMPLES[rng.below(SAMPLES.len())];
        let mut chars: Vec<char> = sample.chars().collect();
        for _ in 0..=rng.below(4) {
            let at = rng.below(chars.len() + 1);
            match rng.below(3) {
                0 if at < chars.len() => {
                    chars.remove(at);
                }
                1 if at < chars.len() => chars[at] = alphabet[rng.below(alphabet.len())],
                _ => chars.insert(at, alphabet[rng.below(alphabet.len())]),
            }
        }
        no_panic(&chars.iter().collect::<String>());
    }
    for _ in 0..5_000 {
        let bytes: Vec<u8> = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
        no_panic(&String::from_utf8_lossy(&bytes));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_text_never_panics(text in "(?s).{0,80}") {
        no_panic(&text);
    }

    #[test]
    fn call_shaped_text_never_panics(
        text in "(click|fill|press|scroll|noop|tab_focus|mouse_click|select_option)\\(\
                 ('[^']{0,4}'?|-?[0-9.e]{0,5}|\\[|\\]|[a-z_]{1,6}=|, ?|True|None){0,6}\\)?[;\n# ]{0,2}"
    ) {
        no_panic(&text);
    }
}
