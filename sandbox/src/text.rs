//! What a person reads is what runs: candidate text (a change's files, its note, a path, a
//! command's output) may hold characters that a terminal obeys or a page draws out of place:
//! C0 and C1 controls (ESC sequences retitle a window or rewrite a line, CR overwrites one) and
//! invisible format characters (the bidirectional overrides and isolates of "Trojan Source",
//! zero-width characters). A change holding any is refused (`hidden_character`); every other
//! candidate string is shown with them escaped (`shown`).

use std::borrow::Cow;

/// Whether `c` is drawn as nothing or reorders what is drawn around it: the bidirectional
/// marks, embeddings, overrides and isolates, zero-width and other invisible format characters,
/// and the tag characters.
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF9}'..='\u{FFFB}' | '\u{E0000}'..='\u{E0FFF}')
}

/// Whether `c` is a control character or an invisible one: what a path may not hold at all.
pub(crate) fn hidden_char(c: char) -> bool {
    c.is_control() || invisible(c)
}

/// Whether `c` at `rest` (the text after it) must not reach a terminal or a page as it is:
/// every control character but tab, newline and a CR that ends a line, and every invisible one.
fn unsafe_at(c: char, rest: &str) -> bool {
    match c {
        '\t' | '\n' => false,
        '\r' => !rest.starts_with('\n'),
        c if c.is_control() => true,
        c => invisible(c),
    }
}

/// `s` with every control and invisible character written out (`\x1b`, `\u{202e}`), so a
/// terminal shows it instead of obeying it. Tabs, newlines and CRLF line ends are kept.
pub fn shown(s: &str) -> Cow<'_, str> {
    let mut chars = s.char_indices();
    let Some(first) = chars.find(|&(i, c)| unsafe_at(c, &s[i + c.len_utf8()..])) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len() + 16);
    out.push_str(&s[..first.0]);
    for (i, c) in s[first.0..].char_indices().map(|(i, c)| (i + first.0, c)) {
        if unsafe_at(c, &s[i + c.len_utf8()..]) {
            if (c as u32) < 0x80 {
                out.push_str(&format!("\\x{:02x}", c as u32));
            } else {
                out.push_str(&format!("\\u{{{:04x}}}", c as u32));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The first character of `s` that a person could not see as it runs, with its line (from 1)
/// and how it is written out: what refuses a change's file.
pub fn hidden_character(s: &str) -> Option<(usize, String)> {
    let mut line = 1;
    for (i, c) in s.char_indices() {
        if unsafe_at(c, &s[i + c.len_utf8()..]) && c != '\u{0c}' {
            return Some((line, shown(&c.to_string()).into_owned()));
        }
        if c == '\n' {
            line += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_invisible_characters_are_written_out_and_plain_text_is_kept() {
        assert!(matches!(shown("a\tb\nc\r\n"), Cow::Borrowed(_)));
        assert_eq!(
            shown("ok\x1b]0;PWNED\x07\rverdict: rejected"),
            "ok\\x1b]0;PWNED\\x07\\x0dverdict: rejected"
        );
        assert_eq!(shown("x\u{9b}y\u{7f}"), "x\\u{009b}y\\x7f");
        assert_eq!(
            shown("/* \u{202e} } \u{2066}if (debug)\u{2069} */"),
            "/* \\u{202e} } \\u{2066}if (debug)\\u{2069} */"
        );
        assert_eq!(shown("zero\u{200b}width"), "zero\\u{200b}width");
        assert_eq!(shown("é ü 中"), "é ü 中");
    }

    #[test]
    fn a_hidden_character_is_found_with_its_line() {
        assert_eq!(hidden_character("int a;\r\nint b;\n\x0c\n"), None);
        assert_eq!(
            hidden_character("int a;\nint b; /* \u{202e} */\n"),
            Some((2, "\\u{202e}".to_string()))
        );
        assert_eq!(hidden_character("a\rb"), Some((1, "\\x0d".to_string())));
    }
}
