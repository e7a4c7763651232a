//! Detecting the sandbox: a bwrap too old to report whether a command ran (no
//! `--json-status-fd`, before bubblewrap 0.4) is refused with the reason when polymorph starts,
//! not at the first command it runs.
#![allow(clippy::unwrap_used)]

use sandbox::Isolation;
use std::os::unix::fs::PermissionsExt;

#[test]
fn a_bwrap_without_a_status_descriptor_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    // What bubblewrap 0.3 says of an option it does not know; any other call works.
    let bwrap = dir.path().join("bwrap");
    std::fs::write(
        &bwrap,
        "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = --json-status-fd ]; then\n    echo 'bwrap: Unknown option --json-status-fd' >&2\n    exit 1\n  fi\ndone\nexit 0\n",
    )
    .unwrap();
    std::fs::set_permissions(&bwrap, std::fs::Permissions::from_mode(0o755)).unwrap();
    match Isolation::detect(&dir.path().display().to_string()) {
        Isolation::Plain(why) => {
            assert!(why.contains("is too old"), "{why}");
            assert!(why.contains("bubblewrap 0.4 or later"), "{why}");
        }
        other => panic!("an old bwrap was taken: {other:?}"),
    }
}
