//! The agent's prompts: the files under prompts/ (a task may override each in its own prompts/),
//! rendered with the task, its context, the scores to beat, the history digest and the
//! incumbent's files, trimmed to the model's context window when it is small.

use super::fold::Folds;
use super::scratch::Shared;
use crate::measure::Direction;
use crate::task::Task;
use proposers::ProposalContext;
use proposers::llm::Prompts;

const SYSTEM_TOOLS: &str = include_str!("../../../prompts/system.txt");
const SYSTEM_TEXT: &str = include_str!("../../../prompts/system_text.txt");
const SYSTEM_WHOLE_FILE: &str = include_str!("../../../prompts/system_whole_file.txt");
const TASK: &str = include_str!("../../../prompts/task.txt");
const FEEDBACK: &str = include_str!("../../../prompts/feedback.txt");
const NUDGE: &str = include_str!("../../../prompts/nudge.txt");
const SWITCH: &str = include_str!("../../../prompts/switch.txt");
const SYSTEM_FOCUSED: &str = include_str!("../../../prompts/system_focused.txt");
const REPAIR: &str = include_str!("../../../prompts/repair.txt");
const FOLDED: &str = include_str!("../../../prompts/folded.txt");
const UNCHANGED: &str = include_str!("../../../prompts/unchanged.txt");
const PARAMS_ONLY: &str = include_str!("../../../prompts/params_only.txt");

/// Characters per token, roughly, for code and English: enough to size a prompt.
const CHARS_PER_TOKEN: u64 = 4;
/// Shares of a small context window the first prompt may give the incumbent's files and the
/// history digest; the rest is for the instructions and the conversation.
const FILES_SHARE: f64 = 0.4;
const HISTORY_SHARE: f64 = 0.1;

/// A prompt: the task's own `prompts/NAME` if it has one, else the built-in file.
fn prompt(task: &Task, name: &str, builtin: &str) -> String {
    std::fs::read_to_string(task.dir.join("prompts").join(name))
        .unwrap_or_else(|_| builtin.to_string())
}

fn render(template: &str, vars: &[(&str, String)]) -> String {
    vars.iter().fold(template.to_string(), |t, (k, v)| {
        t.replace(&format!("{{{{{k}}}}}"), v)
    })
}

/// `text` cut to `budget` characters at a line boundary, saying what was left out.
fn fit(text: &str, budget: Option<usize>, what: &str) -> String {
    let Some(budget) = budget.filter(|b| text.len() > *b) else {
        return text.to_string();
    };
    let mut end = budget;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = text[..end].rfind('\n').map_or(end, |n| n + 1);
    format!(
        "{}... ({what} cut to fit the model's context window)\n",
        &text[..cut]
    )
}

/// The parameter space and the incumbent's assignment, for the task prompt.
fn params_line(task: &Task, ctx: &ProposalContext) -> String {
    let Some(p) = &task.params else {
        return "none (edit the code)".to_string();
    };
    let space: Vec<String> = p
        .values
        .iter()
        .chain(&ctx.knobs)
        .map(|(k, v)| format!("{k} in {}", serde_json::Value::from(v.clone())))
        .collect();
    // A knob of the model's own: the search then finds its best value.
    let add = if p.format == sandbox::ParamFormat::CDefine {
        format!(
            "; to add a knob, declare it in {} as `#define NAME VALUE {} v1, v2, v3` and use NAME in the code",
            p.file,
            crate::task::knobs::DECLARE
        )
    } else {
        String::new()
    };
    let constraints: Vec<String> = p.constraints.values().cloned().collect();
    format!(
        "{}; constraints: {}; current: {}{add}",
        space.join(", "),
        if constraints.is_empty() {
            "none".to_string()
        } else {
            constraints.join(" and ")
        },
        ctx.incumbent_params
            .as_ref()
            .map_or("-".to_string(), |p| serde_json::to_string(p)
                .unwrap_or_default())
    )
}

/// The prompts for one batch of conversations; `window` is the model's context in tokens.
pub(super) fn prompts(
    shared: &Shared,
    ctx: &ProposalContext,
    folds: &Folds,
    window: Option<u64>,
) -> Prompts {
    let t = &shared.task;
    let score = |s: Option<f64>| {
        s.map_or("not measured yet".to_string(), |v| {
            format!("{v:.4} {}", t.metric.name)
        })
    };
    let window = window.map(|w| w * CHARS_PER_TOKEN);
    let share = |f: f64| window.map(|w| (w as f64 * f) as usize);
    let files: String = ctx
        .incumbent_files
        .iter()
        .map(|(p, c)| format!("--- {p} ---\n{}\n", folds.fold(p, c)))
        .collect();
    let better = if t.metric.direction == Direction::Maximize {
        "higher"
    } else {
        "lower"
    };
    // Format examples name a real editable file, so a model that copies them edits the task.
    let example_file = ctx
        .incumbent_files
        .keys()
        .next()
        .cloned()
        .unwrap_or_else(|| "kernel.c".into());
    let vars = [
        ("task_name", t.name.clone()),
        ("description", t.description.clone()),
        ("metric", t.metric.name.clone()),
        (
            "direction",
            format!("{}: {better} is better", t.metric.direction.as_str()),
        ),
        ("min_gain", format!("{:.1}%", t.metric.min_gain * 100.0)),
        ("context", shared.context.clone()),
        ("incumbent_score", score(ctx.incumbent_score)),
        ("hand_tuned", score(ctx.reference_score)),
        ("editable", t.editable_globs.join(", ")),
        ("params", params_line(t, ctx)),
        (
            "history",
            fit(&ctx.history, share(HISTORY_SHARE), "history"),
        ),
        (
            "files",
            fit(
                &files,
                share(FILES_SHARE),
                "files; read_file shows the rest",
            ),
        ),
        ("example_file", example_file),
        (
            "folded",
            if folds.is_empty() {
                String::new()
            } else {
                prompt(t, "folded.txt", FOLDED)
            },
        ),
        (
            "params_example",
            ctx.incumbent_params.as_ref().map_or_else(
                || r#"{"NAME": value, ...}"#.to_string(),
                |p| serde_json::to_string(p).unwrap_or_default(),
            ),
        ),
    ];
    Prompts {
        system_tools: render(&prompt(t, "system.txt", SYSTEM_TOOLS), &vars),
        system_text: render(&prompt(t, "system_text.txt", SYSTEM_TEXT), &vars),
        system_whole_file: render(
            &prompt(t, "system_whole_file.txt", SYSTEM_WHOLE_FILE),
            &vars,
        ),
        task: render(&prompt(t, "task.txt", TASK), &vars),
        feedback: prompt(t, "feedback.txt", FEEDBACK),
        nudge: prompt(t, "nudge.txt", NUDGE),
        switch: prompt(t, "switch.txt", SWITCH),
        system_focused: render(&prompt(t, "system_focused.txt", SYSTEM_FOCUSED), &vars),
        repair: prompt(t, "repair.txt", REPAIR),
        unchanged: render(&prompt(t, "unchanged.txt", UNCHANGED), &vars),
        params_only: render(&prompt(t, "params_only.txt", PARAMS_ONLY), &vars),
    }
}

#[cfg(test)]
mod tests {
    use super::fit;

    #[test]
    fn fits_at_a_line_and_says_so() {
        assert_eq!(fit("abc\ndef\n", None, "x"), "abc\ndef\n");
        let cut = fit("abc\ndefgh\n", Some(6), "files");
        assert!(cut.starts_with("abc\n... (files cut"), "{cut}");
    }
}
