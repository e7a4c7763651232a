//! Noticing a conversation that goes nowhere. Small models answer a failed tool call by
//! repeating it, send placeholder arguments (`{"old": "old", "new": "new"}`), or reply with
//! nothing at all; left alone they spend the whole turn cap and every token on it. The watchdog
//! is a pure state machine: the session tells it what each turn looked like, and it answers
//! whether to go on, nudge the model once, switch to a simpler protocol, or give up.

/// What one turn of the model looked like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// Did something new: an edit, a read, a build.
    Progress,
    /// No content and no tool call.
    Empty,
    /// Text with no edit, call or command in it.
    NoAction,
    /// The same call (name and arguments) as the turn before.
    Repeated(String),
    /// Arguments that are the schema's own words, not text from the file.
    Placeholder(String),
    /// The same error as the turn before.
    SameError(String),
    /// The same text as the reply before (a whole-file reply rewriting the same broken file).
    SameReply,
    /// A reply cut short (at the cap, or looping) with no edit or command in it: why.
    Cut(&'static str),
}

/// What the session should do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Continue,
    /// Tell the model what went wrong, once per protocol.
    Nudge(String),
    /// Start over in the next, simpler protocol.
    Switch(String),
    /// End the proposal early.
    GiveUp(String),
}

/// Strikes per protocol: the first bad turn is nudged, the second switches (or gives up).
const STRIKES_TO_SWITCH: usize = 2;

#[derive(Debug, Default)]
pub struct Watchdog {
    strikes: usize,
    /// Protocols left to switch to after the current one.
    pub fallbacks_left: usize,
}

impl Watchdog {
    pub fn new(fallbacks_left: usize) -> Self {
        Watchdog {
            strikes: 0,
            fallbacks_left,
        }
    }

    fn why(turn: &Turn) -> String {
        match turn {
            Turn::Progress => String::new(),
            Turn::Empty => "the model's replies were empty".into(),
            Turn::NoAction => "the model's replies held no edit, tool call or command".into(),
            Turn::Repeated(call) => format!("the model repeated the same call ({call})"),
            Turn::Placeholder(call) => {
                format!(
                    "the model sent placeholder arguments ({call}) instead of text from the file"
                )
            }
            Turn::SameError(e) => format!("the same error came back twice ({e})"),
            Turn::SameReply => "the model sent the same reply again".into(),
            Turn::Cut(why) => format!("a reply was cut short ({why}) with no edit or command"),
        }
    }

    /// Records a turn and says what to do.
    pub fn observe(&mut self, turn: &Turn) -> Action {
        if *turn == Turn::Progress {
            self.strikes = 0;
            return Action::Continue;
        }
        self.strikes += 1;
        let why = Self::why(turn);
        if self.strikes < STRIKES_TO_SWITCH {
            return Action::Nudge(why);
        }
        self.strikes = 0;
        if self.fallbacks_left == 0 {
            return Action::GiveUp(format!("the conversation went nowhere: {why}"));
        }
        self.fallbacks_left -= 1;
        Action::Switch(why)
    }
}

/// Whether tool arguments look like the schema's words rather than real content: a value equal
/// to its own key (`"old": "old"`), a bare placeholder, or `replace_text` whose halves are equal.
pub fn placeholder(name: &str, args: &serde_json::Value) -> bool {
    let Some(obj) = args.as_object() else {
        return false;
    };
    const WORDS: [&str; 8] = [
        "old",
        "new",
        "...",
        "text",
        "content",
        "path/to/file",
        "path/of/file",
        "string",
    ];
    let placeholder_value = obj.iter().any(|(k, v)| {
        v.as_str().is_some_and(|s| {
            let s = s.trim();
            s == k || (k != "path" && WORDS.contains(&s)) || s.starts_with("path/of/")
        })
    });
    let same_halves =
        name == "replace_text" && obj.get("old").is_some() && obj.get("old") == obj.get("new");
    placeholder_value || same_halves
}

/// Whether a whole file the model wrote is the prompt's own example text rather than code.
pub fn placeholder_file(content: &str) -> bool {
    const EXAMPLES: [&str; 4] = [
        "the whole new file",
        "the lines to put in their place",
        "the exact lines to find, copied from the file",
        "...",
    ];
    let t = content.trim();
    t.is_empty() || EXAMPLES.iter().any(|e| t.eq_ignore_ascii_case(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nudges_then_switches_then_gives_up() {
        let mut w = Watchdog::new(1);
        assert!(matches!(w.observe(&Turn::Empty), Action::Nudge(_)));
        assert!(matches!(w.observe(&Turn::Empty), Action::Switch(_)));
        assert_eq!(w.observe(&Turn::Progress), Action::Continue);
        assert!(matches!(
            w.observe(&Turn::Repeated("x".into())),
            Action::Nudge(_)
        ));
        match w.observe(&Turn::Empty) {
            Action::GiveUp(why) => assert!(why.contains("went nowhere"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn placeholder_arguments_are_recognised() {
        assert!(placeholder(
            "replace_text",
            &json!({ "path": "kernel.c", "old": "old", "new": "new" })
        ));
        assert!(placeholder(
            "replace_text",
            &json!({ "path": "k.c", "old": "x = 1;", "new": "x = 1;" })
        ));
        assert!(placeholder(
            "write_file",
            &json!({ "path": "path/of/file", "content": "int x;" })
        ));
        assert!(!placeholder(
            "replace_text",
            &json!({ "path": "kernel.c", "old": "int i = 0;", "new": "int i = 1;" })
        ));
        assert!(!placeholder("read_file", &json!({ "path": "kernel.c" })));
        assert!(placeholder_file("the whole new file\n"));
        assert!(!placeholder_file("int main(void) { return 0; }\n"));
    }
}
