//! `kspaces`: thin entry point. Parses the command line and hands over to `server::run` on the listener `server::bind` makes (after
//! `platform::exec_with_vector_copies`), or to `kubeconfig` or `snapshot`.

use std::process::ExitCode;

use clap::Parser;
use kspaces_apiserver::config::{Cli, Command};
use kspaces_apiserver::{kubeconfig, platform, server, snapshot};

/// mimalloc instead of glibc's allocator: a server that builds and drops many small JSON values spent a third of
/// its CPU in glibc's malloc and free (docs/benchmarks.md, Workspaces).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("KSPACES_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let result = match cli.command {
        Command::Serve(args) => {
            platform::exec_with_vector_copies();
            let serve = async {
                let listener = server::bind(&args)?;
                server::run(listener, *args, server::signals()).await
            };
            actix_web::rt::System::new().block_on(serve).map_err(|e| e.to_string())
        }
        Command::Kubeconfig(args) => kubeconfig::print(&args),
        Command::Snapshot(command) => snapshot::run(&command),
        Command::Migrate(args) => snapshot::migrate(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("kspaces: {message}");
            ExitCode::FAILURE
        }
    }
}
