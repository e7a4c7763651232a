//! One proposal by the coding agent: a conversation in which the model reads the incumbent,
//! edits a scratch copy through tools (or a text protocol), builds and tests it, and submits.
//! The host performs every action on files and processes; this loop only decides what to ask
//! for and what to tell the model. A conversation that goes nowhere is nudged once, then moved
//! to a simpler protocol (tools -> text blocks -> whole files), then ended early; at the end the
//! last version that built and passed is submitted rather than thrown away.

use super::client::{Cut, ModelClient, ModelError, Reply, ToolCall};
use super::emitted::calls_in_text;
use super::host::{Cancel, Limits, Outcome, Prompts, Protocol, ToolHost};
use super::tools::{Step, run_tool, tool_names, tool_specs};
use super::watchdog::{self, Action, Turn, Watchdog};
use super::{values, window};
use crate::{ProposedChange, Usage};
use serde_json::{Value, json};
use std::collections::BTreeMap;

mod replies;

/// The state of one conversation.
struct Conversation<'a> {
    client: &'a ModelClient,
    api_key: Option<&'a str>,
    host: &'a mut dyn ToolHost,
    prompts: &'a Prompts,
    limits: &'a Limits,
    with_params: bool,
    cancel: &'a Cancel,
    protocol: Protocol,
    messages: Vec<Value>,
    usage: Usage,
    watchdog: Watchdog,
    /// The last tool call and error, to notice repeats.
    last_call: Option<String>,
    last_error: Option<String>,
    /// Editable files of the last version that built and passed.
    last_passing: Option<BTreeMap<String, String>>,
    /// The text of the last reply, to notice the same reply again.
    last_reply: Option<String>,
    /// Replies taken in the focused protocol, which ends after `replies::FOCUSED_REPLIES` a
    /// request.
    focused_replies: usize,
    /// Whether the focused protocol's last request, for parameter values alone, was made.
    asked_for_params: bool,
    /// The values the task declares, as a JSON schema, on a task with parameters.
    values_schema: Option<Value>,
    /// Why the conversation fell back to a simpler protocol, for the note it ends with.
    fell_back: Option<String>,
}

impl Conversation<'_> {
    fn system(&self) -> &str {
        match self.protocol {
            Protocol::Tools => &self.prompts.system_tools,
            Protocol::Text => &self.prompts.system_text,
            Protocol::WholeFile => &self.prompts.system_whole_file,
            Protocol::Focused => &self.prompts.system_focused,
        }
    }

    fn feedback(&self, m: &str) -> Value {
        json!({ "role": "user", "content": self.prompts.feedback.replace("{{message}}", m) })
    }

    fn outcome(
        &mut self,
        change: Option<ProposedChange>,
        rationale: String,
        ended: String,
    ) -> Outcome {
        self.usage.protocol = self.protocol.as_str().to_string();
        Outcome {
            change,
            rationale,
            usage: std::mem::take(&mut self.usage),
            ended,
            protocol: self.protocol,
        }
    }

    /// Ends without a submission: the last passing version goes in instead, if there is one.
    fn end(&mut self, why: String) -> Outcome {
        match self.last_passing.take().filter(|f| !f.is_empty()) {
            Some(files) => self.outcome(
                Some(ProposedChange::Files(files)),
                format!("submitted by polymorph ({why}): the last version that built and passed"),
                format!("submitted the last passing version: {why}"),
            ),
            None => self.outcome(None, String::new(), why),
        }
    }

    /// Starts over in `protocol`: its system prompt, the task, and the scratch files as they are.
    fn switch(&mut self, protocol: Protocol, why: &str) {
        self.protocol = protocol;
        let files: String = self
            .host
            .editable_files()
            .unwrap_or_default()
            .iter()
            .map(|(p, c)| format!("--- {p} ---\n{c}\n"))
            .collect();
        let note = self
            .prompts
            .switch
            .replace("{{why}}", why)
            .replace("{{files}}", &files);
        self.messages = vec![
            json!({ "role": "system", "content": self.system() }),
            json!({ "role": "user", "content": self.prompts.task }),
            json!({ "role": "user", "content": note }),
        ];
        self.last_call = None;
        self.last_error = None;
    }

    /// Keeps the prompt within the model's window: long results of older turns elided, and,
    /// when it would still fill the window, the older turns summarised (down to the last two
    /// messages if need be). Sized by the server's count where it has one.
    async fn fit(&mut self, body: &Value) {
        window::elide_stale_results(&mut self.messages);
        let Some(w) = self.limits.window else {
            return;
        };
        let budget = window::budget(w, self.limits.reply_tokens);
        for keep in [window::RECENT_MESSAGES, 2] {
            let mut sized = body.clone();
            sized["messages"] = json!(self.messages);
            if window::estimate(&sized) <= budget
                || self
                    .client
                    .count_tokens(&sized.to_string())
                    .await
                    .is_some_and(|n| n <= budget)
            {
                return;
            }
            let prompts = self.prompts;
            let wrap = |t: &str| json!({ "role": "user", "content": prompts.feedback.replace("{{message}}", t) });
            if window::summarise(&mut self.messages, keep, wrap) {
                tracing::info!(keep, "older turns summarised to fit the context window");
            }
        }
    }

    async fn request(&mut self) -> Result<Reply, ModelError> {
        let mut body = json!({ "temperature": self.limits.temperature });
        if let Some(n) = self.limits.reply_tokens {
            body["max_tokens"] = json!(n);
        }
        if self.protocol == Protocol::Tools {
            body["tools"] = tool_specs(self.with_params, self.values_schema.as_ref());
            body["tool_choice"] = json!("auto");
        }
        // The request for values alone, and its repair: a server that constrains decoding
        // answers with declared values only.
        if let Some(schema) = self
            .values_schema
            .as_ref()
            .filter(|_| self.asked_for_params)
        {
            body["response_format"] = values::response_format(schema);
        }
        self.fit(&body).await;
        body["messages"] = json!(self.messages);
        let reply = self.client.chat(&body, self.api_key, self.cancel).await?;
        self.usage.prompt_tokens += reply.prompt_tokens;
        self.usage.completion_tokens += reply.completion_tokens;
        self.usage.requests += reply.requests;
        self.usage.latency_ms += reply.latency.as_millis() as u64;
        Ok(reply)
    }
}

/// What a turn came to: a submission, or how it looked to the watchdog.
enum TurnResult {
    Submitted(ProposedChange, String),
    Looked(Turn),
}

impl Conversation<'_> {
    /// Runs the calls of one reply; their answers go back as tool messages, or as one user
    /// message when the calls were written in the text (they have no call ids).
    async fn handle_calls(&mut self, calls: &[ToolCall], in_text: bool) -> TurnResult {
        let mut answers = Vec::new();
        let mut look = Turn::Progress;
        for call in calls {
            let signature = format!("{} {}", call.name, call.arguments);
            let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
            let (text, failed) = if watchdog::placeholder(&call.name, &args) {
                look = Turn::Placeholder(signature.clone());
                (
                    format!(
                        "error: {} got placeholder arguments; copy the exact text from the file you read, and change it",
                        call.name
                    ),
                    true,
                )
            } else if self.last_call.as_deref() == Some(signature.as_str())
                && self.last_error.is_some()
            {
                look = Turn::Repeated(signature.clone());
                (
                    "error: that is the same call as before, which failed; do something different"
                        .into(),
                    true,
                )
            } else {
                match run_tool(self.host, call, self.with_params).await {
                    Step::Done(change, why) => return TurnResult::Submitted(change, why),
                    Step::Continue { text, failed } => (text, failed),
                }
            };
            if failed {
                if self.last_error.as_deref() == Some(text.as_str()) && look == Turn::Progress {
                    look = Turn::SameError(text.clone());
                }
                self.last_error = Some(text.clone());
            } else {
                self.last_error = None;
                if call.name == "build_and_test" {
                    self.last_passing = Some(self.host.changed_files());
                }
            }
            self.last_call = Some(signature);
            answers.push((call.id.clone(), call.name.clone(), text));
        }
        if in_text {
            let joined: Vec<String> = answers
                .iter()
                .map(|(_, n, t)| format!("{n}: {t}"))
                .collect();
            let m = self.feedback(&joined.join("\n\n"));
            self.messages.push(m);
        } else {
            for (id, _, text) in answers {
                self.messages
                    .push(json!({ "role": "tool", "tool_call_id": id, "content": text }));
            }
        }
        TurnResult::Looked(look)
    }

    /// One reply, and how it looked: the same text as the reply before, or a reply cut short with
    /// no edit or command, is a bad turn whatever the edits in it did.
    async fn turn(&mut self, reply: Reply) -> TurnResult {
        let text = reply.content.clone().unwrap_or_default();
        let same = reply.tool_calls.is_empty()
            && !text.trim().is_empty()
            && self.last_reply.as_deref() == Some(text.as_str());
        self.last_reply = Some(text);
        let cut = reply.cut;
        match self.answer(reply).await {
            TurnResult::Looked(_) if same => TurnResult::Looked(Turn::SameReply),
            TurnResult::Looked(Turn::NoAction) if cut.is_some() => {
                let why = cut.map_or("", Cut::said);
                let m = self.feedback(&format!(
                    "Your reply was cut short: {why}, before any edit or command. Answer with one edit, then BUILD."
                ));
                self.messages.push(m);
                TurnResult::Looked(Turn::Cut(why))
            }
            other => other,
        }
    }

    /// One reply: tool calls (declared or written in the text), text-protocol blocks, or nothing.
    async fn answer(&mut self, reply: Reply) -> TurnResult {
        tracing::debug!(
            protocol = self.protocol.as_str(),
            calls = reply.tool_calls.len(),
            content = %reply.content.as_deref().unwrap_or("").chars().take(400).collect::<String>(),
            "model reply"
        );
        let mut assistant = reply.message.clone();
        assistant["role"] = json!("assistant");
        if let (Some(cut), Some(text)) = (reply.cut, reply.content.as_deref()) {
            assistant["content"] = json!(window::cut_short(text, cut));
        }
        self.messages.push(assistant);
        if !reply.tool_calls.is_empty() {
            return self.handle_calls(&reply.tool_calls, false).await;
        }
        let text = reply.content.unwrap_or_default();
        if self.protocol == Protocol::Focused {
            return self.handle_focused(&text, reply.cut).await;
        }
        if text.trim().is_empty() {
            let m =
                self.feedback("Your reply was empty. Answer in the format described at the start.");
            self.messages.push(m);
            return TurnResult::Looked(Turn::Empty);
        }
        if self.protocol == Protocol::Tools {
            let calls = calls_in_text(&text, &tool_names(self.with_params));
            if !calls.is_empty() {
                return self.handle_calls(&calls, true).await;
            }
        }
        self.handle_text(&text).await
    }

    /// Nudges, switches protocol or gives up as the watchdog says; `Some` ends the proposal.
    fn react(&mut self, look: &Turn) -> Option<Outcome> {
        if self.protocol == Protocol::Focused {
            self.focused_replies += 1;
            // Each request, for a change or for values, gets one repair.
            if self.focused_replies
                < replies::FOCUSED_REPLIES * (1 + usize::from(self.asked_for_params))
            {
                return None;
            }
            let why = self.last_error.take().unwrap_or_default();
            let first = why.lines().next().unwrap_or_default();
            // The change and its repair both failed: the last request is for values alone.
            if self.ask_for_params(&format!(
                "Your change did not pass, nor its repair: {first}"
            )) {
                self.last_error = Some(why);
                return None;
            }
            let before = self
                .fell_back
                .as_ref()
                .map(|b| format!(", after falling back to it because {b}"))
                .unwrap_or_default();
            let asked = if self.asked_for_params {
                "the focused request, its repair and the request for values alone"
            } else {
                "the focused request and its repair"
            };
            return Some(self.end(format!("no passing change from {asked} ({first}){before}")));
        }
        match self.watchdog.observe(look) {
            Action::Continue => None,
            Action::Nudge(why) => {
                let m = json!({ "role": "user", "content": self.prompts.nudge.replace("{{why}}", &why) });
                self.messages.push(m);
                None
            }
            Action::Switch(why) => {
                let next = self.protocol.fallback();
                match next {
                    Some(p) => {
                        tracing::info!(
                            from = self.protocol.as_str(),
                            to = p.as_str(),
                            "{why}; switching protocol"
                        );
                        self.switch(p, &why);
                        self.fell_back = Some(why);
                        None
                    }
                    None => Some(self.end(format!("the conversation went nowhere: {why}"))),
                }
            }
            Action::GiveUp(why) => Some(self.end(why)),
        }
    }
}

/// Asks the model for one candidate.
#[allow(clippy::too_many_arguments)]
pub async fn propose(
    client: &ModelClient,
    api_key: Option<&str>,
    host: &mut dyn ToolHost,
    prompts: &Prompts,
    protocol: Protocol,
    limits: &Limits,
    with_params: bool,
    cancel: &Cancel,
) -> Result<Outcome, ModelError> {
    let values_schema = with_params
        .then(|| host.param_space().map(values::schema))
        .flatten();
    let mut c = Conversation {
        client,
        api_key,
        host,
        prompts,
        limits,
        with_params,
        cancel,
        protocol,
        messages: Vec::new(),
        usage: Usage {
            model: client.model.clone(),
            ..Usage::default()
        },
        watchdog: Watchdog::new(usize::from(protocol.fallback().is_some())),
        last_call: None,
        last_error: None,
        last_passing: None,
        last_reply: None,
        focused_replies: 0,
        asked_for_params: false,
        values_schema,
        fell_back: None,
    };
    c.messages = vec![
        json!({ "role": "system", "content": c.system() }),
        json!({ "role": "user", "content": prompts.task }),
    ];
    let mut shortened = false;
    let deadline = tokio::time::Instant::now() + limits.wall;
    let out_of_time = || {
        format!(
            "the wall-clock limit of one proposal ({} s) was reached",
            limits.wall.as_secs()
        )
    };
    for _turn in 0..limits.max_turns {
        if c.usage.prompt_tokens + c.usage.completion_tokens >= limits.max_tokens {
            return Ok(c.end("token cap for one proposal reached".into()));
        }
        let Ok(requested) = tokio::time::timeout_at(deadline, c.request()).await else {
            return Ok(c.end(out_of_time()));
        };
        let reply = match requested {
            Ok(r) => r,
            Err(ModelError::ContextLength(msg)) if !shortened && c.messages.len() > 4 => {
                tracing::warn!("{msg}; dropping older turns");
                let m = c.feedback("Earlier turns were dropped to fit the context window; the working tree keeps your edits.");
                window::drop_middle(&mut c.messages, m);
                shortened = true;
                continue;
            }
            Err(e) => return Err(e),
        };
        match c.turn(reply).await {
            TurnResult::Submitted(change, why) => {
                return Ok(c.outcome(Some(change), why, "submitted".into()));
            }
            TurnResult::Looked(look) => {
                if let Some(out) = c.react(&look) {
                    return Ok(out);
                }
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(c.end(out_of_time()));
        }
    }
    Ok(c.end(format!("no submission within {} turns", limits.max_turns)))
}
