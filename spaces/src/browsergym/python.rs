//! Reads BrowserGym's action text as Python reads a sequence of call statements whose
//! arguments are literals: strings, numbers, `True`/`False`/`None` and flat lists of those.
//! Knows nothing of what the calls mean.
//!
//! It follows Python's own rules for statements (a newline or `;` ends one, but not inside
//! brackets, so a call may span lines) because agents' text is Python to them; anything that
//! would need evaluating (names, operators, nested calls) is refused, not guessed at.

/// A literal argument.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    Str(String),
    /// An int literal. Kept as `f64`: exact up to 2^53, far beyond anything accepted as a
    /// bid, tab index or coordinate.
    Int(f64),
    Float(f64),
    Bool(bool),
    None,
    List(Vec<Value>),
}

impl Value {
    /// The value roughly as Python's `repr` writes it, shortened, for error messages.
    pub(super) fn repr(&self) -> String {
        match self {
            Value::Str(s) => {
                let short: String = s.chars().take(40).collect();
                let more = if short.len() < s.len() { "..." } else { "" };
                format!("'{}{more}'", short.escape_debug())
            }
            Value::Int(n) if n.abs() < 1e15 => format!("{}", *n as i64),
            Value::Int(n) => format!("{n}"),
            Value::Float(n) => format!("{n:?}"),
            Value::Bool(true) => "True".into(),
            Value::Bool(false) => "False".into(),
            Value::None => "None".into(),
            Value::List(items) => {
                let items: Vec<String> = items.iter().map(Value::repr).collect();
                format!("[{}]", items.join(", "))
            }
        }
    }
}

/// One call statement.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Call {
    pub name: String,
    /// The line the call starts on, from 1.
    pub line: usize,
    pub positional: Vec<Value>,
    pub keyword: Vec<(String, Value)>,
}

/// A syntax error: the line it is on and what is wrong.
pub(super) type SyntaxError = (usize, String);

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Name(String),
    Str(String),
    Int(f64),
    Float(f64),
    LParen,
    RParen,
    LBrack,
    RBrack,
    Comma,
    Eq,
    /// The end of a statement: a newline or `;` outside brackets.
    End,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Name(n) => format!("`{n}`"),
            Tok::Str(s) => Value::Str(s.clone()).repr(),
            Tok::Int(n) => Value::Int(*n).repr(),
            Tok::Float(n) => Value::Float(*n).repr(),
            Tok::LParen => "`(`".into(),
            Tok::RParen => "`)`".into(),
            Tok::LBrack => "`[`".into(),
            Tok::RBrack => "`]`".into(),
            Tok::Comma => "`,`".into(),
            Tok::Eq => "`=`".into(),
            Tok::End => "the end of the line".into(),
        }
    }
}

/// Reads every call in `text`, in order.
pub(super) fn calls(text: &str) -> Result<Vec<Call>, SyntaxError> {
    let tokens = tokenize(text)?;
    let mut p = Parser { tokens, i: 0 };
    let mut out = Vec::new();
    loop {
        while p.peek() == Some(&Tok::End) {
            p.i += 1;
        }
        if p.peek().is_none() {
            return Ok(out);
        }
        out.push(p.call()?);
    }
}

struct Parser {
    tokens: Vec<(Tok, usize)>,
    i: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.i).map(|(t, _)| t)
    }

    fn line(&self) -> usize {
        self.tokens
            .get(self.i)
            .or(self.tokens.last())
            .map_or(1, |(_, l)| *l)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.tokens.get(self.i).map(|(t, _)| t.clone());
        self.i += 1;
        t
    }

    fn fail<T>(&self, message: String) -> Result<T, SyntaxError> {
        Err((self.line(), message))
    }

    fn got(&self) -> String {
        self.peek()
            .map_or("the end of the text".into(), Tok::describe)
    }

    fn call(&mut self) -> Result<Call, SyntaxError> {
        let line = self.line();
        let Some(Tok::Name(name)) = self.peek().cloned() else {
            return self.fail(format!(
                "expected an action call such as click('12'), got {}",
                self.got()
            ));
        };
        self.i += 1;
        if self.peek() != Some(&Tok::LParen) {
            return self.fail(format!("expected `(` after `{name}`, got {}", self.got()));
        }
        self.i += 1;
        let mut call = Call {
            name,
            line,
            positional: Vec::new(),
            keyword: Vec::new(),
        };
        while self.peek() != Some(&Tok::RParen) {
            let keyword = match (self.peek(), self.tokens.get(self.i + 1)) {
                (Some(Tok::Name(k)), Some((Tok::Eq, _))) => Some(k.clone()),
                _ => None,
            };
            if let Some(k) = keyword {
                self.i += 2;
                if call.keyword.iter().any(|(seen, _)| *seen == k) {
                    return self.fail(format!("keyword argument repeated: {k}"));
                }
                let v = self.value()?;
                call.keyword.push((k, v));
            } else {
                let v = self.value()?;
                if !call.keyword.is_empty() {
                    return self.fail("positional argument follows keyword argument".into());
                }
                call.positional.push(v);
            }
            match self.peek() {
                Some(Tok::Comma) => self.i += 1,
                Some(Tok::RParen) => {}
                _ => {
                    return self.fail(format!(
                        "expected `,` or `)` after an argument of {}(), got {}",
                        call.name,
                        self.got()
                    ));
                }
            }
        }
        self.i += 1;
        let hint = match self.peek() {
            None | Some(Tok::End) => return Ok(call),
            Some(Tok::Name(_)) => ": put each action on its own line",
            Some(_) => "",
        };
        self.fail(format!(
            "unexpected {} after {}(...){hint}",
            self.got(),
            call.name
        ))
    }

    fn value(&mut self) -> Result<Value, SyntaxError> {
        if self.peek() == Some(&Tok::LBrack) {
            self.i += 1;
            let mut items = Vec::new();
            while self.peek() != Some(&Tok::RBrack) {
                if self.peek() == Some(&Tok::LBrack) {
                    return self.fail("nested lists are not accepted".into());
                }
                items.push(self.scalar()?);
                match self.peek() {
                    Some(Tok::Comma) => self.i += 1,
                    Some(Tok::RBrack) => {}
                    _ => {
                        return self
                            .fail(format!("expected `,` or `]` in a list, got {}", self.got()));
                    }
                }
            }
            self.i += 1;
            return Ok(Value::List(items));
        }
        self.scalar()
    }

    fn scalar(&mut self) -> Result<Value, SyntaxError> {
        let hint = match self.peek() {
            Some(Tok::Name(n)) if n == "true" || n == "false" || n == "none" || n == "null" => {
                " (Python spells them True, False and None)"
            }
            Some(Tok::Name(_)) => " (names, expressions and calls are not evaluated)",
            _ => "",
        };
        let got = self.got();
        Ok(match self.next() {
            Some(Tok::Str(s)) => Value::Str(s),
            Some(Tok::Int(n)) => Value::Int(n),
            Some(Tok::Float(n)) => Value::Float(n),
            Some(Tok::Name(n)) if n == "True" => Value::Bool(true),
            Some(Tok::Name(n)) if n == "False" => Value::Bool(false),
            Some(Tok::Name(n)) if n == "None" => Value::None,
            _ => {
                self.i -= 1;
                return self.fail(format!(
                    "expected a Python literal (a quoted string, a number, True, False, None \
                     or a list), got {got}{hint}"
                ));
            }
        })
    }
}

fn tokenize(text: &str) -> Result<Vec<(Tok, usize)>, SyntaxError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let start_line = line;
        let tok = match c {
            '\n' => {
                line += 1;
                i += 1;
                if depth > 0 {
                    continue;
                }
                Tok::End
            }
            ';' if depth == 0 => {
                i += 1;
                Tok::End
            }
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            '#' => {
                while chars.get(i).is_some_and(|&c| c != '\n') {
                    i += 1;
                }
                continue;
            }
            // An explicit line join, as in Python.
            '\\' if chars.get(i + 1) == Some(&'\n') => {
                i += 2;
                line += 1;
                continue;
            }
            '(' | '[' => {
                depth += 1;
                i += 1;
                if c == '(' { Tok::LParen } else { Tok::LBrack }
            }
            ')' | ']' => {
                depth = depth.saturating_sub(1);
                i += 1;
                if c == ')' { Tok::RParen } else { Tok::RBrack }
            }
            ',' => {
                i += 1;
                Tok::Comma
            }
            '=' => {
                i += 1;
                Tok::Eq
            }
            '"' | '\'' => {
                let (s, next) = string(&chars, c, i, &mut line)?;
                i = next;
                Tok::Str(s)
            }
            _ if starts_number(&chars, i) => {
                let (tok, next) = number(&chars, i).map_err(|m| (line, m))?;
                i = next;
                tok
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while chars
                    .get(i)
                    .is_some_and(|&c| c.is_alphanumeric() || c == '_')
                {
                    i += 1;
                }
                let name: String = chars[start..i].iter().collect();
                let prefix = name.len() <= 2 && name.chars().all(|c| "rRbBfFuU".contains(c));
                if prefix && matches!(chars.get(i), Some('"' | '\'')) {
                    // u'' is an ordinary str in Python 3; raw, byte and f-strings are not
                    // plain literals.
                    if name.eq_ignore_ascii_case("u") {
                        continue;
                    }
                    return Err((
                        line,
                        format!(
                            "string prefix `{name}` is not accepted: write a plain quoted string"
                        ),
                    ));
                }
                Tok::Name(name)
            }
            other => return Err((line, format!("unexpected character {other:?}"))),
        };
        out.push((tok, start_line));
    }
    Ok(out)
}

fn starts_number(chars: &[char], i: usize) -> bool {
    let digit_at = |j: usize| chars.get(j).is_some_and(char::is_ascii_digit);
    let unsigned = |j: usize| digit_at(j) || (chars.get(j) == Some(&'.') && digit_at(j + 1));
    match chars.get(i) {
        Some('-' | '+') => unsigned(i + 1),
        _ => unsigned(i),
    }
}

/// A number literal: `12`, `-3`, `1.5`, `.5`, `5.`, `1e3`, `-2.5E-1`.
fn number(chars: &[char], mut i: usize) -> Result<(Tok, usize), String> {
    let start = i;
    let mut canonical = String::new();
    if let Some(&s @ ('-' | '+')) = chars.get(i) {
        canonical.push(s);
        i += 1;
    }
    let digits = |i: &mut usize, out: &mut String| {
        let before = *i;
        while let Some(&d) = chars.get(*i).filter(|c| c.is_ascii_digit()) {
            out.push(d);
            *i += 1;
        }
        *i > before
    };
    let mut is_int = true;
    if !digits(&mut i, &mut canonical) {
        canonical.push('0');
    }
    if chars.get(i) == Some(&'.') {
        is_int = false;
        i += 1;
        canonical.push('.');
        if !digits(&mut i, &mut canonical) {
            canonical.push('0');
        }
    }
    if matches!(chars.get(i), Some('e' | 'E')) {
        let mut exp = String::from("e");
        let mut j = i + 1;
        if let Some(&s @ ('-' | '+')) = chars.get(j) {
            exp.push(s);
            j += 1;
        }
        if digits(&mut j, &mut exp) {
            is_int = false;
            canonical.push_str(&exp);
            i = j;
        }
    }
    let raw: String = chars[start..i].iter().collect();
    if chars
        .get(i)
        .is_some_and(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
    {
        return Err(format!("invalid number literal starting `{raw}`"));
    }
    let n: f64 = canonical
        .parse()
        .map_err(|_| format!("invalid number literal `{raw}`"))?;
    if !n.is_finite() {
        return Err(format!("number `{raw}` is too large"));
    }
    Ok((if is_int { Tok::Int(n) } else { Tok::Float(n) }, i))
}

/// A string opening with quote `q` at `start` (single or tripled), with Python's escapes.
fn string(
    chars: &[char],
    q: char,
    start: usize,
    line: &mut usize,
) -> Result<(String, usize), SyntaxError> {
    let triple = chars.get(start + 1) == Some(&q) && chars.get(start + 2) == Some(&q);
    let open_line = *line;
    let mut i = start + if triple { 3 } else { 1 };
    let mut out = String::new();
    loop {
        let Some(&c) = chars.get(i) else {
            return Err((open_line, "unterminated string literal".into()));
        };
        if c == q && (!triple || (chars.get(i + 1) == Some(&q) && chars.get(i + 2) == Some(&q))) {
            return Ok((out, i + if triple { 3 } else { 1 }));
        }
        if c == '\n' {
            if !triple {
                return Err((open_line, "unterminated string literal".into()));
            }
            *line += 1;
        }
        if c != '\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let Some(&e) = chars.get(i + 1) else {
            return Err((open_line, "unterminated string literal".into()));
        };
        i += 2;
        let simple = match e {
            '\n' => {
                *line += 1;
                continue;
            }
            '\\' | '\'' | '"' => Some(e),
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'f' => Some('\u{c}'),
            'v' => Some('\u{b}'),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            continue;
        }
        let code = match e {
            'x' | 'u' | 'U' => {
                let len = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = chars.get(i..i + len).unwrap_or_default().iter().collect();
                if hex.len() != len || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err((
                        *line,
                        format!("truncated \\{e} escape (needs {len} hex digits)"),
                    ));
                }
                i += len;
                u32::from_str_radix(&hex, 16).unwrap_or(u32::MAX)
            }
            '0'..='7' => {
                let mut n = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.get(i).and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            n = n * 8 + d;
                            i += 1;
                        }
                        None => break,
                    }
                }
                n
            }
            'N' => return Err((*line, "\\N{...} escapes are not accepted".into())),
            // Python keeps an unknown escape as written, backslash and all.
            other => {
                out.push('\\');
                out.push(other);
                continue;
            }
        };
        match char::from_u32(code) {
            Some(c) => out.push(c),
            None => {
                return Err((
                    *line,
                    format!(
                        "escape for U+{code:X} is not a character (a lone surrogate or out of range)"
                    ),
                ));
            }
        }
    }
}
