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

fn init_logging(default: &str) {
    let filter = std::env::var("POLYMORPH_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| default.to_string());
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .init();
}

fn main() -> ExitCode {
    // Like other Unix tools, stop quietly when the reader of stdout goes away (`| head`)
    // instead of panicking on a broken pipe.
    // SAFETY: restoring the default disposition of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
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
