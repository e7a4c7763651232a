//! The commands behind the CLI, one file per group: each opens what it needs, does its work
//! through the library and prints a result on stdout (a table for people, JSON with `--json`).
//! Imported by `main.rs` alone.

mod best;
mod check;
mod context;
mod history;
mod output;
mod query;
mod record;
mod review;
mod run;
mod schedule;
mod setup;
mod show;

use crate::cli::{Cli, Command};
use anyhow::Result;
use sandbox::CancelFlag;

pub async fn dispatch(cli: Cli, cancel: CancelFlag) -> Result<()> {
    match cli.command {
        Command::Run(ref a) => run::run(&cli, a.clone(), cancel).await,
        Command::Check(ref a) => check::check(&cli, a.clone(), cancel).await,
        Command::History(ref a) => history::history(&cli, a.clone()).await,
        Command::Show(ref a) => show::show(&cli, a.clone()).await,
        Command::Best(ref a) => best::best(&cli, a.clone()).await,
        Command::Review(ref a) => review::review(&cli, a.clone()).await,
        Command::Approve(ref a) => review::approve(&cli, a.clone()).await,
        Command::Reject(ref a) => review::reject(&cli, a.clone()).await,
        Command::Export(ref a) => review::export(&cli, a.clone()).await,
        Command::Query(ref a) => query::query(&cli, a.clone()).await,
        Command::Worker => tokio::task::block_in_place(|| polymorph::engine::worker::serve(cancel)),
        Command::Context(ref a) => context::context(a.clone()),
        Command::Setup(ref a) => setup::setup(a),
        Command::Record(ref a) => record::record(a, cancel),
        Command::Import(ref a) => record::import(a),
        Command::Schedule { ref action } => schedule::schedule(&cli, action.clone()).await,
        Command::Daemon(ref a) => schedule::daemon(&cli, a.clone(), cancel).await,
        Command::Serve(ref a) => {
            if !a.host.is_loopback() && !a.expose {
                anyhow::bail!(
                    "--host {} is not a loopback address: whoever reaches it can read every run and diff, and approve or reject entries with the token the page hands out. Add --expose if that network is trusted, or keep the page on 127.0.0.1 (an ssh tunnel reaches it from elsewhere)",
                    a.host
                );
            }
            let addr = std::net::SocketAddr::new(a.host, a.port);
            polymorph::web::serve(cli.db(), cli.ledger(), addr, cancel).await
        }
    }
}
