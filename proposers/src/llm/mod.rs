//! The LLM coding agent: a model client for any OpenAI-compatible server, the tool and text
//! protocols, and the loop that turns a conversation into one candidate.

mod client;
mod edits;
mod emitted;
mod host;
mod session;
mod stream;
mod tools;
mod values;
mod watchdog;
mod window;

pub use client::{CHARS_PER_TOKEN, ModelClient, ModelError, Reply, ToolCall};
pub use edits::{TextEdit, TextReply, parse_text_reply};
pub use host::{BuildReport, Cancel, Limits, Outcome, Prompts, Protocol, ToolHost};
pub use session::propose;
