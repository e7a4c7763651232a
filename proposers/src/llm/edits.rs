//! The text protocol for servers without tool calling: SEARCH/REPLACE blocks
//! (`path`, `<<<<<<< SEARCH`, old text, `=======`, new text, `>>>>>>> REPLACE`), whole files as
//! a fenced block right after a line naming a known file, and the `BUILD`, `SUBMIT: why` and
//! `PARAMS: {json}` commands. Pure parsing; applying is the session's job.

/// One edit the model asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextEdit {
    Replace {
        path: String,
        search: String,
        replace: String,
    },
    WholeFile {
        path: String,
        content: String,
    },
}

/// Everything recognised in one reply.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TextReply {
    pub edits: Vec<TextEdit>,
    pub build: bool,
    pub submit: Option<String>,
    pub params: Option<String>,
    /// Blocks that started but never finished, as feedback for the model.
    pub malformed: Vec<String>,
}

fn clean_path(line: &str) -> String {
    let l = line.trim();
    let l = header(l).unwrap_or(l).trim_matches('`').trim();
    let l = l
        .strip_prefix("File:")
        .or_else(|| l.strip_prefix("file:"))
        .unwrap_or(l);
    l.trim().trim_matches('*').trim().to_string()
}

/// Parses a reply; `known` are the file paths a whole-file block may name, `editable` the files
/// a fence's language tag may stand for.
pub fn parse_text_reply(text: &str, known: &[String], editable: &[&String]) -> TextReply {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = TextReply::default();
    let mut last_text_line = String::new();
    // The last line of text that is not a fence: a path written before a fenced block.
    let mut path_line = String::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim();
        if t == "<<<<<<< SEARCH" {
            let path = search_path(&last_text_line, &path_line, known, editable);
            let mut search = Vec::new();
            let mut replace = Vec::new();
            let mut j = i + 1;
            while j < lines.len() && lines[j].trim() != "=======" {
                search.push(lines[j]);
                j += 1;
            }
            let mut k = j + 1;
            while k < lines.len() && lines[k].trim() != ">>>>>>> REPLACE" {
                replace.push(lines[k]);
                k += 1;
            }
            if j >= lines.len() || k >= lines.len() {
                // A 0.5B model's habit: the old text and `>>>>>>> REPLACE` with no `=======`.
                let unsplit = search.iter().any(|l| l.trim() == ">>>>>>> REPLACE");
                out.malformed.push(if unsplit {
                    format!(
                        "the SEARCH/REPLACE block for {path:?} has no ======= line: write the old lines, then =======, then the new lines, then >>>>>>> REPLACE"
                    )
                } else {
                    format!("the SEARCH/REPLACE block for {path:?} is not closed")
                });
                break;
            }
            let join = |v: &[&str]| {
                if v.is_empty() {
                    String::new()
                } else {
                    format!("{}\n", v.join("\n"))
                }
            };
            out.edits.push(TextEdit::Replace {
                path,
                search: join(&search),
                replace: join(&replace),
            });
            i = k + 1;
            continue;
        }
        // A fence that holds SEARCH/REPLACE blocks is only a wrapper around them.
        let wraps_blocks = || {
            lines[i + 1..]
                .iter()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.trim() == "<<<<<<< SEARCH")
        };
        if t.starts_with("```")
            && known.iter().any(|k| *k == clean_path(&last_text_line))
            && !wraps_blocks()
        {
            let path = clean_path(&last_text_line);
            let mut body = Vec::new();
            let mut j = i + 1;
            while j < lines.len() && !lines[j].trim().starts_with("```") {
                body.push(lines[j]);
                j += 1;
            }
            if j >= lines.len() {
                out.malformed
                    .push(format!("the fenced block for {path} is not closed"));
                break;
            }
            block_files(&path, &body, known, &mut out);
            i = j + 1;
            last_text_line.clear();
            continue;
        }
        if let Some(why) = t.strip_prefix("SUBMIT:") {
            out.submit = Some(why.trim().to_string());
        } else if t == "SUBMIT" {
            out.submit = Some(String::new());
        } else if t == "BUILD" {
            out.build = true;
        } else if let Some(json) = t.strip_prefix("PARAMS:") {
            out.params = Some(json.trim().to_string());
        }
        if !t.is_empty() {
            last_text_line = t.to_string();
            if !t.starts_with("```") {
                path_line = t.to_string();
            }
        }
        i += 1;
    }
    out
}

/// The file a SEARCH/REPLACE block edits: the line before it, or, when that line opens a
/// fence (```c, a 0.5B model's habit), the line before the fence if it names a known file,
/// else the one editable file the fence's language tag stands for.
fn search_path(last: &str, before_fence: &str, known: &[String], editable: &[&String]) -> String {
    let Some(tag) = last.strip_prefix("```") else {
        return clean_path(last);
    };
    let named = clean_path(before_fence);
    if known.contains(&named) {
        return named;
    }
    match tagged(tag, editable) {
        Some(path) => path.clone(),
        None if named.is_empty() => clean_path(last),
        None => named,
    }
}

/// The one file of `files` a fence's language tag stands for, if exactly one.
fn tagged<'a>(tag: &str, files: &[&'a String]) -> Option<&'a String> {
    let exts = extensions(tag.trim().trim_start_matches('`').trim());
    let mut fits = files.iter().filter(|k| {
        let ext = k.rsplit_once('.').map_or("", |(_, e)| e);
        exts.contains(&ext)
    });
    match (fits.next(), fits.next()) {
        (Some(one), None) => Some(*one),
        _ => None,
    }
}

/// File extensions a fence's language tag stands for.
fn extensions(tag: &str) -> &'static [&'static str] {
    match tag.to_ascii_lowercase().as_str() {
        "c" => &["c"],
        "cpp" | "c++" | "cxx" => &["cpp", "cc", "cxx"],
        "cuda" | "cu" => &["cu"],
        "h" | "hpp" => &["h", "hpp"],
        "python" | "py" => &["py"],
        "json" => &["json"],
        "toml" => &["toml"],
        "yaml" | "yml" => &["yaml", "yml"],
        "sh" | "bash" => &["sh"],
        _ => &[],
    }
}

/// `parse_text_reply`, and, with `whole` (the protocols that write whole files), when the reply
/// named no file, its first fenced block as the whole of the one editable file its language tag
/// stands for (a small model writes ```c and the file, forgetting the path line; elsewhere an
/// unnamed block is a quotation).
pub fn parse_reply_in(
    text: &str,
    known: &[String],
    editable: &[&String],
    whole: bool,
) -> TextReply {
    let mut out = parse_text_reply(text, known, editable);
    if !out.edits.is_empty() || !whole {
        return out;
    }
    let unnamed_into = editable;
    let lines: Vec<&str> = text.lines().collect();
    let Some(open) = lines.iter().position(|l| l.trim().starts_with("```")) else {
        return out;
    };
    let Some(close) = lines[open + 1..]
        .iter()
        .position(|l| l.trim().starts_with("```"))
    else {
        return out;
    };
    let mut body = &lines[open + 1..open + 1 + close];
    // The path as the block's first line, inside the fence (a 1.5B model's habit), or else the
    // one file the fence's language tag stands for, or else the listing format without its
    // first header: the lines before the first `--- path ---` are the editable file listed just
    // before that one, when no header names it, and are dropped otherwise.
    let inside = body
        .first()
        .and_then(|first| unnamed_into.iter().find(|k| ***k == clean_path(first)));
    let named = |l: &str| known.iter().find(|k| header(l) == Some(k.as_str()));
    let path = match (inside, tagged(lines[open], unnamed_into)) {
        (Some(path), _) => {
            body = &body[1..];
            *path
        }
        (None, Some(path)) => path,
        (None, None) => {
            let Some(first) = body.iter().position(|l| named(l).is_some()) else {
                return out;
            };
            let headed = |k: &String| body.iter().any(|l| named(l) == Some(k));
            let listed_before = unnamed_into
                .iter()
                .position(|k| Some(*k) == named(body[first]))
                .and_then(|i| i.checked_sub(1))
                .map(|i| unnamed_into[i])
                .filter(|k| !headed(k));
            match listed_before {
                Some(path) => path,
                None => {
                    let Some(path) = named(body[first]) else {
                        return out;
                    };
                    body = &body[first + 1..];
                    path
                }
            }
        }
    };
    block_files(path, body, known, &mut out);
    out
}

/// The name in a file header as the prompts list files: `--- path ---`.
fn header(line: &str) -> Option<&str> {
    let t = line.trim();
    let name = t.strip_prefix("---")?.strip_suffix("---")?.trim();
    (!name.is_empty()).then_some(name)
}

/// A whole-file block's body as edits: the file `path`, then each further file a `--- path ---`
/// header line starts (models write back the listing format the prompt shows them, several
/// files in one block), with a `SUBMIT:` line taken as the command, not as a line of the file.
fn block_files(path: &str, body: &[&str], known: &[String], out: &mut TextReply) {
    let mut files: Vec<(String, Vec<&str>)> = vec![(path.to_string(), Vec::new())];
    for line in body {
        if let Some(why) = line.trim().strip_prefix("SUBMIT:") {
            out.submit = Some(why.trim().to_string());
        } else if let Some(next) = header(line).filter(|n| known.iter().any(|k| k == n)) {
            files.push((next.to_string(), Vec::new()));
        } else if let Some((_, lines)) = files.last_mut() {
            lines.push(line);
        }
    }
    for (path, mut lines) in files {
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
        if !lines.is_empty() {
            out.edits.push(TextEdit::WholeFile {
                path,
                content: format!("{}\n", lines.join("\n")),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_replace_blocks_and_commands() {
        let reply = "I will unroll.\n\nkernel.c\n<<<<<<< SEARCH\nfor (i = 0;\n=======\nfor (i = 1;\n>>>>>>> REPLACE\n\nBUILD\n";
        let r = parse_text_reply(reply, &[], &[]);
        assert_eq!(
            r.edits,
            vec![TextEdit::Replace {
                path: "kernel.c".into(),
                search: "for (i = 0;\n".into(),
                replace: "for (i = 1;\n".into()
            }]
        );
        assert!(r.build);
        assert_eq!(r.submit, None);
    }

    #[test]
    fn whole_files_only_for_known_paths() {
        let known = vec!["params.h".to_string()];
        let r = parse_text_reply(
            "params.h\n```c\n#define X 1\n```\nSUBMIT: smaller tiles\n",
            &known,
            &[],
        );
        assert_eq!(
            r.edits,
            vec![TextEdit::WholeFile {
                path: "params.h".into(),
                content: "#define X 1\n".into()
            }]
        );
        assert_eq!(r.submit.as_deref(), Some("smaller tiles"));
        let quoted = parse_text_reply("Here is an idea:\n```c\nint x;\n```\n", &known, &[]);
        assert!(quoted.edits.is_empty());
    }

    #[test]
    fn an_unnamed_block_is_the_one_file_its_tag_stands_for_only_in_whole_file_mode() {
        let known = vec!["kernel.c".to_string(), "params.h".to_string()];
        let editable: Vec<&String> = known.iter().collect();
        let reply = "```c\n#include \"kernel.h\"\nvoid k(void) {}\n```\n";
        let r = parse_reply_in(reply, &known, &editable, true);
        assert_eq!(
            r.edits,
            vec![TextEdit::WholeFile {
                path: "kernel.c".into(),
                content: "#include \"kernel.h\"\nvoid k(void) {}\n".into()
            }]
        );
        assert!(
            parse_reply_in(reply, &known, &editable, false)
                .edits
                .is_empty()
        );
        // A tag that stands for no file, or for two, is no edit.
        let two = vec!["a.c".to_string(), "b.c".to_string()];
        let both: Vec<&String> = two.iter().collect();
        assert!(parse_reply_in(reply, &two, &both, true).edits.is_empty());
        let json = "```json\n{}\n```\n";
        assert!(
            parse_reply_in(json, &known, &editable, true)
                .edits
                .is_empty()
        );
    }

    #[test]
    fn a_path_on_the_first_line_inside_the_fence_names_the_file() {
        let known = vec!["kernel.c".to_string(), "params.h".to_string()];
        let editable: Vec<&String> = known.iter().collect();
        let reply = "```\nparams.h\n#define PAD 0\n```\nSUBMIT: less padding\n";
        let r = parse_reply_in(reply, &known, &editable, true);
        assert_eq!(
            r.edits,
            vec![TextEdit::WholeFile {
                path: "params.h".into(),
                content: "#define PAD 0\n".into()
            }]
        );
        assert!(
            parse_reply_in(reply, &known, &editable, false)
                .edits
                .is_empty()
        );
    }

    #[test]
    fn one_block_holding_two_files_in_the_listing_format_is_two_files() {
        let known = vec!["kernel.c".to_string(), "params.h".to_string()];
        let editable: Vec<&String> = known.iter().collect();
        let reply =
            "```\nkernel.c\nint k;\n\n--- params.h ---\n#define ROWS 2\n\nSUBMIT: two rows\n```\n";
        let r = parse_reply_in(reply, &known, &editable, true);
        let file = |p: &str, c: &str| TextEdit::WholeFile {
            path: p.into(),
            content: c.into(),
        };
        assert_eq!(
            r.edits,
            vec![
                file("kernel.c", "int k;\n"),
                file("params.h", "#define ROWS 2\n")
            ]
        );
        assert_eq!(r.submit.as_deref(), Some("two rows"));
        // The listing without its first header, in an untagged fence (a 1.5B model's habit):
        // the lines before `--- params.h ---` are the one editable file no header names.
        let unheaded = "```\nint k;\n\n--- params.h ---\n#define ROWS 2\n```\n";
        assert_eq!(
            parse_reply_in(unheaded, &known, &editable, true).edits,
            vec![
                file("kernel.c", "int k;\n"),
                file("params.h", "#define ROWS 2\n")
            ]
        );
        // Before a header naming the first file listed, the lines are dropped.
        let twice = "```\nint k;\n--- kernel.c ---\nint j;\n```\n";
        assert_eq!(
            parse_reply_in(twice, &known, &editable, true).edits,
            vec![file("kernel.c", "int j;\n")]
        );
        let listed = "--- kernel.c ---\n```\nint k;\n```\n";
        assert_eq!(
            parse_reply_in(listed, &known, &editable, true).edits,
            vec![file("kernel.c", "int k;\n")]
        );
    }

    #[test]
    fn search_blocks_inside_a_fence_edit_the_file_its_tag_or_the_line_before_names() {
        let known: Vec<String> = ["kernel.c", "bench.c", "params.h"].map(String::from).into();
        let editable = vec![&known[0], &known[2]];
        let block = "<<<<<<< SEARCH\nint a;\n=======\nint b;\n>>>>>>> REPLACE\n";
        let replace = |path: &str| TextEdit::Replace {
            path: path.into(),
            search: "int a;\n".into(),
            replace: "int b;\n".into(),
        };
        let tagged = format!("```c\n{block}\nSUBMIT: b\n```\n");
        let r = parse_reply_in(&tagged, &known, &editable, false);
        assert_eq!(r.edits, vec![replace("kernel.c")]);
        assert_eq!(r.submit.as_deref(), Some("b"));
        // The path before the fence wins, and the fence is not read as that file's whole text.
        let named = format!("params.h\n```c\n{block}```\n");
        let r = parse_reply_in(&named, &known, &editable, true);
        assert_eq!(r.edits, vec![replace("params.h")]);
        // A tag that stands for no editable file, or for two, leaves the tag as the path,
        // which then fails to apply with the reason named.
        let cpp = format!("```cpp\n{block}```\n");
        assert_eq!(
            parse_reply_in(&cpp, &known, &editable, false).edits,
            vec![replace("cpp")]
        );
        let both = vec![&known[0], &known[1]];
        assert_eq!(
            parse_reply_in(&tagged, &known, &both, false).edits,
            vec![replace("c")]
        );
    }

    #[test]
    fn unclosed_blocks_are_reported_and_params_read() {
        let r = parse_text_reply("`kernel.c`\n<<<<<<< SEARCH\nabc\n", &[], &[]);
        assert_eq!(r.malformed.len(), 1);
        let unsplit =
            parse_text_reply("kernel.c\n<<<<<<< SEARCH\nabc\n>>>>>>> REPLACE\n", &[], &[]);
        assert!(
            unsplit.malformed[0].contains("has no ======= line"),
            "{unsplit:?}"
        );
        let p = parse_text_reply("PARAMS: {\"TILE\": 64}\n", &[], &[]);
        assert_eq!(p.params.as_deref(), Some("{\"TILE\": 64}"));
    }
}
