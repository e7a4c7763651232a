//! Replies in text: the text and whole-file protocols' blocks and commands, and the focused
//! protocol's one change, built and tested at once, with one repair turn when it fails.

use super::{Conversation, TurnResult};
use crate::llm::client::Cut;
use crate::llm::edits::{TextEdit, TextReply, parse_reply_in};
use crate::llm::host::Protocol;
use crate::llm::tools::{replace_once, resolve_path, usable_params};
use crate::llm::values;
use crate::llm::watchdog::{self, Turn};
use crate::{Params, ProposedChange};
use serde_json::json;

/// What a SEARCH half copied from the format's example gets back.
const EXAMPLE_SEARCH: &str = "that SEARCH half is the format's example, not lines of the file: copy the exact lines to change from the file shown above";

/// Replies the focused protocol takes for one request: the answer, and one repair of it. A
/// proposal makes one request, or two on a task with parameters (the second for values alone).
pub(super) const FOCUSED_REPLIES: usize = 2;

impl Conversation<'_> {
    /// The reply's blocks, parsed against the scratch tree's files; a fenced block without a
    /// path line may stand for an editable file in the protocols that write whole files, and
    /// a fence's tag names the editable file of SEARCH/REPLACE blocks inside it in any.
    fn parse(&self, reply: &str) -> TextReply {
        let files = self.host.list_files();
        let whole = matches!(self.protocol, Protocol::WholeFile | Protocol::Focused);
        let editable: Vec<&String> = files.iter().filter(|f| self.host.is_editable(f)).collect();
        parse_reply_in(reply, &files, &editable, whole)
    }

    /// Applies the edits to the scratch tree: whether any applied, and why the others did not.
    fn apply_edits(&mut self, edits: &[TextEdit]) -> (bool, Vec<String>) {
        let mut changed = false;
        let mut notes = Vec::new();
        for edit in edits {
            let r = match edit {
                TextEdit::Replace { search, .. }
                    if !search.trim().is_empty() && watchdog::placeholder_file(search) =>
                {
                    Err(EXAMPLE_SEARCH.into())
                }
                TextEdit::Replace {
                    path,
                    search,
                    replace,
                } => replace_once(self.host, path, search, replace),
                TextEdit::WholeFile { content, .. } if watchdog::placeholder_file(content) => Err(
                    "that is the example's text, not a file: write the file's whole new content"
                        .into(),
                ),
                TextEdit::WholeFile { path, content } => {
                    let path = resolve_path(self.host, path);
                    self.host
                        .write_file(&path, content)
                        .map(|()| format!("wrote {path}"))
                }
            };
            match r {
                Ok(_) => changed = true,
                Err(e) => notes.push(e),
            }
        }
        (changed, notes)
    }

    /// Values in JSON (a `PARAMS:` line's), for a task with parameters: the assignment to
    /// submit, or why not (it does not parse, or the task does not allow it).
    fn params_in(&self, json: Option<&str>) -> Option<Result<Params, String>> {
        let json = json.filter(|_| self.with_params)?;
        Some(
            serde_json::from_str::<Params>(json)
                .map_err(|e| format!("PARAMS is not a JSON object of values: {e}"))
                .and_then(|p| usable_params(self.host, p)),
        )
    }

    /// Applies a text-protocol reply: edits, then PARAMS, SUBMIT or BUILD; edits without any
    /// command are built and tested, and submitted when they pass.
    pub(super) async fn handle_text(&mut self, reply: &str) -> TurnResult {
        let parsed = self.parse(reply);
        let mut notes = parsed.malformed.clone();
        let (changed, failed) = self.apply_edits(&parsed.edits);
        notes.extend(failed);
        match self.params_in(parsed.params.as_deref()) {
            Some(Ok(p)) => {
                return TurnResult::Submitted(
                    ProposedChange::Params(p),
                    parsed.submit.unwrap_or_default(),
                );
            }
            Some(Err(e)) => notes.push(e),
            None => {}
        }
        let silent = parsed.submit.is_none() && !parsed.build;
        if notes.is_empty()
            && (parsed.build || parsed.submit.is_some() || changed)
            && let Some(done) = self
                .build_or_submit(parsed.submit.clone(), silent, &mut notes)
                .await
        {
            return done;
        }
        let look =
            if parsed.edits.is_empty() && silent && parsed.params.is_none() && notes.is_empty() {
                notes.push(
                    "no edit, BUILD or SUBMIT found; answer in the format described at the start"
                        .into(),
                );
                Turn::NoAction
            } else if !changed && self.last_error.as_deref() == Some(notes.join("\n").as_str()) {
                Turn::SameError(notes.join("; "))
            } else {
                Turn::Progress
            };
        let note = notes.join("\n");
        self.last_error = (!changed).then(|| note.clone());
        let m = self.feedback(&note);
        self.messages.push(m);
        TurnResult::Looked(look)
    }

    /// SUBMIT submits the changed files; BUILD, or edits without a command, builds and tests
    /// them (edits that pass without a command are submitted). Nothing changed is said without
    /// running anything: the incumbent is known to build and pass.
    async fn build_or_submit(
        &mut self,
        submit: Option<String>,
        silent: bool,
        notes: &mut Vec<String>,
    ) -> Option<TurnResult> {
        let files = self.host.changed_files();
        if files.is_empty() {
            notes.push("nothing is changed yet: edit a file before BUILD or SUBMIT".into());
            return None;
        }
        if let Some(why) = submit {
            return Some(TurnResult::Submitted(ProposedChange::Files(files), why));
        }
        let report = self.host.build_and_test().await;
        if report.passed {
            self.last_passing = Some(files.clone());
            if silent {
                return Some(TurnResult::Submitted(
                    ProposedChange::Files(files),
                    "submitted by polymorph: the edits built and passed (the reply gave no SUBMIT)"
                        .into(),
                ));
            }
        }
        notes.push(report.text);
        None
    }

    /// On a task with parameters, once per proposal: one request more, for new parameter values
    /// alone (the simplest answer there is; the search's knobs are the model's to set), saying
    /// `why` first. Whether it was asked.
    pub(super) fn ask_for_params(&mut self, why: &str) -> bool {
        if !self.with_params || self.asked_for_params {
            return false;
        }
        self.asked_for_params = true;
        self.request_values(why);
        true
    }

    /// Sends the request for parameter values alone, `why` first: as the last request, and
    /// again as that request's repair.
    fn request_values(&mut self, why: &str) {
        let m = self.prompts.params_only.replace("{{why}}", why);
        self.messages.push(json!({ "role": "user", "content": m }));
    }

    /// A focused-protocol reply: its change is applied, built and tested at once, and submitted
    /// when it passes; otherwise the model gets the error and the files as they are now, for
    /// its one repair. The watchdog is not consulted: the protocol's two replies are its limit.
    pub(super) async fn handle_focused(&mut self, reply: &str, cut: Option<Cut>) -> TurnResult {
        let parsed = self.parse(reply);
        let given = parsed.submit.clone().filter(|s| !s.trim().is_empty());
        let mut notes = parsed.malformed.clone();
        // Asked for values, a reply may be their JSON object alone: what a server that
        // constrains decoding to the schema sends.
        let bare = (self.asked_for_params && parsed.params.is_none())
            .then(|| values::bare_object(reply))
            .flatten();
        match self.params_in(parsed.params.as_deref().or(bare.as_deref())) {
            Some(Ok(p)) => {
                let why =
                    given.unwrap_or_else(|| "values the model chose, with no rationale".into());
                return TurnResult::Submitted(ProposedChange::Params(p), why);
            }
            // Values asked for that cannot be used: their repair is the same request, with why.
            Some(Err(e)) if self.asked_for_params => {
                self.request_values(&format!("{e}."));
                self.last_error = Some(e);
                return TurnResult::Looked(Turn::Progress);
            }
            Some(Err(e)) => notes.push(e),
            None => {}
        }
        let (_, failed) = self.apply_edits(&parsed.edits);
        notes.extend(failed);
        if parsed.edits.is_empty() && notes.is_empty() {
            notes.push(match cut {
                Some(c) => format!("your reply was cut short ({}) before any change", c.said()),
                None => "no change was found in your reply".into(),
            });
        }
        let files = self.host.changed_files();
        if notes.is_empty() && files.is_empty() {
            // The files sent back as they are (or edits that change nothing): not an error to
            // repair but no change at all, which is asked for once more in plain words; twice in
            // a row, for new values alone. Asked for values already, that request is its repair.
            let why = "your answer leaves the files as they were".to_string();
            let again = self.last_error.as_deref() == Some(why.as_str());
            self.last_error = Some(why);
            if self.asked_for_params {
                self.request_values(
                    "Your answer left the files as they were: values alone, please.",
                );
            } else if !(again
                && self.ask_for_params("Your answers left the files as they were, twice."))
            {
                let m = self.prompts.unchanged.clone();
                self.messages.push(json!({ "role": "user", "content": m }));
            }
            return TurnResult::Looked(Turn::Progress);
        }
        if notes.is_empty() {
            let report = self.host.build_and_test().await;
            if report.passed {
                self.last_passing = Some(files.clone());
                let why = given.unwrap_or_else(|| {
                    "submitted by polymorph: the change built and passed".into()
                });
                return TurnResult::Submitted(ProposedChange::Files(files), why);
            }
            notes.push(report.text);
        }
        let why = notes.join("\n");
        // A file the reply wrote whole is in the conversation already, as the model wrote it.
        let written: Vec<String> = parsed
            .edits
            .iter()
            .filter_map(|e| match e {
                TextEdit::WholeFile { path, .. } => Some(resolve_path(self.host, path)),
                TextEdit::Replace { .. } => None,
            })
            .collect();
        let now: String = self
            .host
            .editable_files()
            .map(|f| {
                f.iter()
                    .filter(|(p, _)| !written.contains(p))
                    .map(|(p, c)| format!("--- {p} ---\n{c}\n"))
                    .collect()
            })
            .unwrap_or_else(|| "(too large to show; your applied edits are kept)".into());
        let m = self
            .prompts
            .repair
            .replace("{{why}}", &why)
            .replace("{{files}}", &now);
        self.last_error = Some(why);
        self.messages.push(json!({ "role": "user", "content": m }));
        TurnResult::Looked(Turn::Progress)
    }
}
