//! The LLM coding agent: a model client for any OpenAI-compatible server, the tool and text
//! protocols, and the loop that turns a conversation into one candidate.

mod client;
mod edits;
mod session;

pub use client::{ModelClient, ModelError, Reply, ToolCall};
pub use edits::{TextEdit, TextReply, parse_text_reply};
pub use session::{Limits, Outcome, Prompts, Protocol, ToolHost, propose};
