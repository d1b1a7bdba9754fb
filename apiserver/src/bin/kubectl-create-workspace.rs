//! `kubectl-create-workspace`: kcp's `kubectl create workspace NAME [--type [path:]T] [--enter]
//! [--ignore-existing]` for kspaces; the logic is `kspaces_apiserver::plugins::create`.

use std::process::ExitCode;

use clap::Parser;
use kspaces_apiserver::plugins::{self, create, Io};

fn main() -> ExitCode {
    let cli = create::CreateCli::parse();
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let result = plugins::block_on(async { create::run(&cli.connection, cli.args, &mut Io { out: &mut out, err: &mut err }).await });
    plugins::exit("Error", result)
}
