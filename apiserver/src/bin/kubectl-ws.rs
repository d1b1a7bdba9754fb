//! `kubectl-ws`: kcp's `kubectl ws` for kspaces (`kubectl ws <path>|..|-|~|:|.`, `tree`, `current`,
//! `create-context`); the logic is `kspaces_apiserver::plugins::ws`.

use std::process::ExitCode;

use clap::Parser;
use kspaces_apiserver::plugins::{self, ws, Io};

fn main() -> ExitCode {
    let cli = ws::WsCli::parse();
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let result = plugins::block_on(async { ws::run(cli.args, &mut Io { out: &mut out, err: &mut err }).await });
    plugins::exit("Error", result)
}
