//! A preprocessor condition evaluated with the parameters' values: integers, the parameters,
//! `defined`, `!`, comparisons, `&&`, `||` and parentheses. Anything else (arithmetic, a name
//! that is not a parameter, which a header may define) leaves the condition unknown.

use proposers::Params;

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Int(i64),
    Name(String),
    Op(&'static str),
}

const OPS: [&str; 11] = ["==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "(", ")"];

/// The condition's text without a trailing comment.
fn code(expr: &str) -> &str {
    let end = [expr.find("//"), expr.find("/*")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(expr.len());
    &expr[..end]
}

/// The condition's tokens, or `None` for a character it does not know.
fn tokens(expr: &str) -> Option<Vec<Token>> {
    let s = code(expr);
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let rest = &s[i..];
        let c = rest.chars().next()?;
        if c.is_whitespace() {
            i += c.len_utf8();
        } else if let Some(op) = OPS.iter().find(|op| rest.starts_with(**op)) {
            out.push(Token::Op(op));
            i += op.len();
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let word = &rest[..len];
            out.push(if c.is_ascii_digit() {
                Token::Int(word.trim_end_matches(['u', 'U', 'l', 'L']).parse().ok()?)
            } else {
                Token::Name(word.to_string())
            });
            i += len;
        } else {
            return None;
        }
    }
    Some(out)
}

/// A parameter's value as the preprocessor would read it: an integer, or `None`.
fn value(name: &str, params: &Params) -> Option<i64> {
    match params.get(name)? {
        serde_json::Value::Number(n) => n.as_i64(),
        serde_json::Value::Bool(b) => Some(i64::from(*b)),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Recursive descent over the tokens, lowest precedence first.
struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
    params: &'a Params,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn eat(&mut self, op: &str) -> bool {
        let hit = matches!(self.peek(), Some(Token::Op(o)) if *o == op);
        self.at += usize::from(hit);
        hit
    }

    fn or(&mut self) -> Option<i64> {
        let mut v = self.and()?;
        while self.eat("||") {
            let r = self.and()?;
            v = i64::from(v != 0 || r != 0);
        }
        Some(v)
    }

    fn and(&mut self) -> Option<i64> {
        let mut v = self.compare()?;
        while self.eat("&&") {
            let r = self.compare()?;
            v = i64::from(v != 0 && r != 0);
        }
        Some(v)
    }

    fn compare(&mut self) -> Option<i64> {
        let l = self.unary()?;
        let Some(Token::Op(op)) = self.peek().cloned() else {
            return Some(l);
        };
        let test: fn(i64, i64) -> bool = match op {
            "==" => |a, b| a == b,
            "!=" => |a, b| a != b,
            "<" => |a, b| a < b,
            ">" => |a, b| a > b,
            "<=" => |a, b| a <= b,
            ">=" => |a, b| a >= b,
            _ => return Some(l),
        };
        self.at += 1;
        let r = self.unary()?;
        Some(i64::from(test(l, r)))
    }

    fn unary(&mut self) -> Option<i64> {
        if self.eat("!") {
            return self.unary().map(|v| i64::from(v == 0));
        }
        if self.eat("(") {
            let v = self.or()?;
            return self.eat(")").then_some(v);
        }
        let token = self.peek()?.clone();
        self.at += 1;
        match token {
            Token::Int(v) => Some(v),
            Token::Name(n) if n == "defined" => {
                let paren = self.eat("(");
                let Some(Token::Name(name)) = self.peek().cloned() else {
                    return None;
                };
                self.at += 1;
                if paren && !self.eat(")") {
                    return None;
                }
                defined(&name, self.params).map(i64::from)
            }
            Token::Name(n) => value(&n, self.params),
            Token::Op(_) => None,
        }
    }
}

/// Whether `expr` holds with `params`, or `None` when that cannot be told from them alone.
pub(super) fn eval(expr: &str, params: &Params) -> Option<bool> {
    let tokens = tokens(expr)?;
    let mut p = Parser {
        tokens: &tokens,
        at: 0,
        params,
    };
    let v = p.or()?;
    (p.at == tokens.len()).then_some(v != 0)
}

/// Whether `name` is defined: yes for a parameter, unknown otherwise (a header may define it).
pub(super) fn defined(name: &str, params: &Params) -> Option<bool> {
    params.contains_key(code(name).trim()).then_some(true)
}

/// The parameters `expr` names, each as `NAME = value`.
pub(super) fn named(expr: &str, params: &Params) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in tokens(expr).unwrap_or_default() {
        if let Token::Name(n) = t
            && let Some(v) = params.get(&n)
        {
            let shown = format!("{n} = {}", sandbox::param_token(v));
            if !out.contains(&shown) {
                out.push(shown);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params() -> Params {
        [
            ("A", json!(2)),
            ("B", json!(0)),
            ("S", json!("3")),
            ("F", json!(1.5)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    #[test]
    fn conditions_on_parameters_evaluate_and_others_stay_unknown() {
        let p = params();
        for (expr, want) in [
            (" A == 2", Some(true)),
            ("A != 2 // a comment", Some(false)),
            ("(A > 1) && !B", Some(true)),
            ("A < 1 || B >= 0", Some(true)),
            ("S == 3u", Some(true)),
            ("defined(A) && defined B", Some(true)),
            ("B", Some(false)),
            ("defined(HEADER_ONLY)", None),
            ("WIDTH == 2", None),
            ("A * 2 == 4", None),
            ("F > 1", None),
            ("(A == 2", None),
            ("A == 2 B", None),
        ] {
            assert_eq!(eval(expr, &p), want, "{expr}");
        }
        assert_eq!(defined(" A /* x */", &p), Some(true));
        assert_eq!(named("A == 2 || B || A > 1 || X", &p), ["A = 2", "B = 0"]);
    }
}
