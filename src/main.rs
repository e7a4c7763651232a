//! The `polymorph` binary: parses the command line, sets up logging (POLYMORPH_LOG or RUST_LOG,
//! to stderr), runs the command and maps the outcome to an exit code.

mod cli;
mod cmd;

use clap::Parser;
use cli::Cli;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Exit code for errors of any kind (bad input, failed run), as documented in `--help`.
const EXIT_ERROR: u8 = 2;
/// Exit code after Ctrl-C or SIGTERM: the conventional 128 + SIGINT.
const EXIT_INTERRUPTED: u8 = 130;
/// How long the runtime's leftover tasks get once the command is done.
const RUNTIME_SHUTDOWN: std::time::Duration = std::time::Duration::from_secs(2);

fn init_logging(default: &str) {
    let filter = std::env::var("POLYMORPH_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| default.to_string());
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .init();
}

/// Takes the API key out of this process's environment before anything else runs: kept for the
/// agent's requests, its value overwritten in place where the kernel shows the process's
/// environment (`/proc/PID/environ`, readable by the user's other processes), and the variable
/// removed, so no child and no other process of the user can find it.
///
/// # Safety
/// Only while this process has a single thread: the environment is changed in place.
unsafe fn take_api_key() {
    let name = polymorph::engine::agent_host::ENV_API_KEY;
    let key = std::env::var(name).ok().filter(|k| !k.is_empty());
    polymorph::engine::agent_host::keep_api_key(key);
    let prefix = format!("{name}=");
    // SAFETY: `environ` is the null-terminated array of C strings the process started with
    // (glibc); a single thread owns it here. Each entry is overwritten within its own length.
    unsafe {
        let mut entry = libc::environ;
        while !entry.is_null() && !(*entry).is_null() {
            let s = *entry as *mut libc::c_char;
            let len = libc::strlen(s);
            let bytes = std::slice::from_raw_parts_mut(s as *mut u8, len);
            if bytes.starts_with(prefix.as_bytes()) {
                bytes[prefix.len()..].fill(b'x');
            }
            entry = entry.add(1);
        }
        std::env::remove_var(name);
    }
}

fn main() -> ExitCode {
    // SAFETY: no thread has started yet, so nothing reads the environment meanwhile.
    unsafe { take_api_key() };
    let cli = Cli::parse();
    if cli.command.only_prints() {
        // Like other Unix tools, stop quietly when the reader of stdout goes away (`| head`)
        // instead of panicking on a broken pipe. The other commands keep SIGPIPE ignored, so
        // a write to a child that is gone (ssh to a target that went down) is an error.
        // SAFETY: restoring the default disposition of one signal before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    // The daemon's log is its output: say what it runs and why unless told otherwise.
    init_logging(if matches!(cli.command, cli::Command::Daemon(_)) {
        "info"
    } else {
        "warn"
    });
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    let cancel = Arc::new(AtomicBool::new(false));
    let result = runtime.block_on(async {
        let flag = Arc::clone(&cancel);
        tokio::spawn(async move {
            let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else { return };
            loop {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
                if flag.swap(true, Ordering::SeqCst) {
                    eprintln!("interrupted twice: exiting now");
                    std::process::exit(i32::from(EXIT_INTERRUPTED));
                }
                eprintln!("interrupting: stopping the running command; nothing recorded is lost (run again to resume)");
            }
        });
        cmd::dispatch(cli, Arc::clone(&cancel)).await
    });
    // The command is done and everything it wrote is committed: wait only briefly for the
    // runtime's leftover tasks. sqlx's pool maintenance task has been seen spinning without
    // yielding once its pool was dropped (its idle count out of step), which would hold a
    // plain drop of the runtime, and so the process, forever.
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN);
    match result {
        Ok(()) if cancel.load(Ordering::SeqCst) => ExitCode::from(EXIT_INTERRUPTED),
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            if cancel.load(Ordering::SeqCst) {
                ExitCode::from(EXIT_INTERRUPTED)
            } else {
                ExitCode::from(EXIT_ERROR)
            }
        }
    }
}
