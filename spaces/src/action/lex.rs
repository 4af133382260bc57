//! The lexer of action lines: names, numbers, quoted strings (JSON escapes, either quote)
//! and punctuation. Knows nothing of what the actions mean.

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Token {
    Ident(String),
    Number(f64),
    Str(String),
    LParen,
    RParen,
    Comma,
    Eq,
}

pub(super) fn lex(s: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '(' => {
                out.push(Token::LParen);
                i += 1
            }
            ')' => {
                out.push(Token::RParen);
                i += 1
            }
            ',' => {
                out.push(Token::Comma);
                i += 1
            }
            '=' => {
                out.push(Token::Eq);
                i += 1
            }
            '"' | '\'' => {
                let (text, next) = lex_string(&chars, i)?;
                out.push(Token::Str(text));
                i = next;
            }
            c if c.is_ascii_digit() || c == '-' || c == '+' || c == '.' => {
                let start = i;
                i += 1;
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                    i += 1;
                }
                let raw: String = chars[start..i].iter().collect();
                let n: f64 = raw
                    .parse()
                    .map_err(|_| format!("`{raw}` is not a number"))?;
                if !n.is_finite() {
                    return Err(format!("`{raw}` is not a finite number"));
                }
                out.push(Token::Number(n));
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                out.push(Token::Ident(chars[start..i].iter().collect()));
            }
            other => return Err(format!("unexpected character `{other}`")),
        }
    }
    Ok(out)
}

fn lex_string(chars: &[char], start: usize) -> Result<(String, usize), String> {
    let quote = chars[start];
    let mut out = String::new();
    let mut i = start + 1;
    while i < chars.len() {
        let c = chars[i];
        if c == quote {
            return Ok((out, i + 1));
        }
        if c == '\\' {
            i += 1;
            let e = *chars.get(i).ok_or("unterminated escape in string")?;
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                '/' => out.push('/'),
                '\\' => out.push('\\'),
                '"' => out.push('"'),
                '\'' => out.push('\''),
                'u' => {
                    let hex: String = chars
                        .get(i + 1..i + 5)
                        .ok_or("short \\u escape")?
                        .iter()
                        .collect();
                    let code = u32::from_str_radix(&hex, 16)
                        .map_err(|_| format!("bad \\u escape `{hex}`"))?;
                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                    i += 4;
                }
                other => return Err(format!("unknown escape `\\{other}` in string")),
            }
            i += 1;
            continue;
        }
        out.push(c);
        i += 1;
    }
    Err("unterminated string (missing closing quote)".into())
}
