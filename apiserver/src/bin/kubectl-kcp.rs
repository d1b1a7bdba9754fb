//! `kubectl-kcp`: kcp's `kubectl kcp` for kspaces (`bind apiexport`, `claims`, `workspace`); the logic is
//! `kspaces_apiserver::plugins::kcp`.

use std::process::ExitCode;

use clap::Parser;
use kspaces_apiserver::plugins::{self, kcp, Io};

fn main() -> ExitCode {
    let cli = kcp::KcpCli::parse();
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let result = plugins::block_on(async { kcp::run(cli, &mut Io { out: &mut out, err: &mut err }).await });
    plugins::exit("error", result)
}
