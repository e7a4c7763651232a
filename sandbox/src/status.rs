//! Whether bwrap ran the command at all, from what it writes to `--json-status-fd`: once the
//! command has ended, bwrap's own init in the command's PID namespace reports its `exit-code`
//! (a command killed by a signal included); when bwrap gives up setting the sandbox up (a path
//! it was to bind or hide vanished as it started), it exits 1 with no such report. The command
//! never sees this file: bwrap closes it before the command starts.

use crate::SandboxError;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::{AsRawFd, RawFd};

/// An unlinked file bwrap writes its status reports to.
pub(crate) struct StatusFile(File);

impl StatusFile {
    pub(crate) fn new() -> Result<Self, SandboxError> {
        tempfile::tempfile()
            .map(StatusFile)
            .map_err(|e| SandboxError::io("creating bwrap's status file", e))
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// True when bwrap reported that the command it ran has ended.
    pub(crate) fn command_ended(&mut self) -> Result<bool, SandboxError> {
        let mut text = String::new();
        self.0
            .seek(SeekFrom::Start(0))
            .and_then(|_| self.0.read_to_string(&mut text))
            .map_err(|e| SandboxError::io("reading bwrap's status file", e))?;
        // One JSON document a report; the candidate cannot write here, only bwrap does.
        let ended = serde_json::Deserializer::from_str(&text)
            .into_iter::<serde_json::Value>()
            .map_while(Result::ok)
            .any(|doc| doc.get("exit-code").is_some());
        Ok(ended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn an_exit_code_report_says_the_command_ran() {
        let mut s = StatusFile::new().unwrap();
        s.0.write_all(b"{ \"child-pid\": 12, \"mnt-namespace\": 4 }\n")
            .unwrap();
        assert!(!s.command_ended().unwrap());
        s.0.seek(SeekFrom::End(0)).unwrap();
        s.0.write_all(b"{ \"exit-code\": 139 }\n").unwrap();
        assert!(s.command_ended().unwrap());
    }
}
