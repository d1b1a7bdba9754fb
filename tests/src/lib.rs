//! Black-box test harness: starts the real `kspaces` binary on `127.0.0.1:0` with a fresh data dir and
//! drives it with real clients (kubectl 1.32 here; kube-rs and the Python client in the tests).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The `kspaces` binary, built once per test process if it is not there yet.
pub fn kspaces_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            if let Ok(path) = std::env::var("KSPACES_BIN") {
                return PathBuf::from(path);
            }
            let exe = std::env::current_exe().expect("test binary path");
            let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>");
            let binary = profile_dir.join("kspaces");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
            let profile = profile_dir.file_name().and_then(|n| n.to_str()).unwrap_or("debug");
            let mut build = Command::new(cargo);
            build.args(["build", "-p", "kspaces-apiserver", "--bin", "kspaces"]);
            if profile == "release" {
                build.arg("--release");
            }
            let status = build.status().expect("run cargo build");
            assert!(status.success(), "building the kspaces binary failed");
            binary
        })
        .clone()
}

/// kubectl 1.32: `$KUBECTL`, else the `kubectl.1.32` beside the image's kubectl version dispatcher.
pub fn kubectl_binary() -> PathBuf {
    if let Ok(path) = std::env::var("KUBECTL") {
        return PathBuf::from(path);
    }
    let dispatcher = Command::new("sh")
        .args(["-c", "readlink -f \"$(command -v kubectl)\""])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let candidate = Path::new(&dispatcher).parent().map(|dir| dir.join("kubectl.1.32"));
    match candidate {
        Some(path) if path.exists() => path,
        _ => panic!("kubectl 1.32 not found: set KUBECTL or install the Google Cloud SDK kubectl (kubectl.1.32)"),
    }
}

/// A running server with its own data dir; killed on drop.
pub struct Server {
    child: Child,
    pub url: String,
    pub data_dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    pub startup: Duration,
}

impl Server {
    /// Starts `kspaces serve` on a free port with a fresh data dir.
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    /// Starts with extra flags (the data dir and port are set here).
    pub fn start_with(extra: &[&str]) -> Server {
        let data_dir = tempfile::tempdir().expect("temp dir");
        Server::start_in(data_dir, extra)
    }

    /// Starts on an existing data dir (a restart).
    pub fn start_in(data_dir: tempfile::TempDir, extra: &[&str]) -> Server {
        let started = Instant::now();
        let mut child = Command::new(kspaces_binary())
            .args(["serve", "--secure-port", "0", "--data-dir"])
            .arg(data_dir.path())
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start kspaces");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("read the server's first line");
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("https://"))
            .unwrap_or_else(|| panic!("the server printed no URL: {line:?}"))
            .to_owned();
        let kubeconfig = data_dir.path().join("admin.kubeconfig");
        assert!(kubeconfig.exists(), "admin.kubeconfig was not written");
        Server { child, url, data_dir, kubeconfig, startup: started.elapsed() }
    }

    /// kubectl as the system administrator.
    pub fn kubectl(&self) -> Kubectl {
        Kubectl::new(&self.kubeconfig)
    }

    /// Stops the server (SIGKILL) and returns its data dir for a restart.
    pub fn stop(mut self) -> tempfile::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let dir = tempfile::tempdir().expect("temp dir");
        std::mem::replace(&mut self.data_dir, dir)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// kubectl with its own kubeconfig and cache dir.
pub struct Kubectl {
    binary: PathBuf,
    kubeconfig: PathBuf,
    cache: tempfile::TempDir,
}

impl Kubectl {
    pub fn new(kubeconfig: &Path) -> Kubectl {
        Kubectl { binary: kubectl_binary(), kubeconfig: kubeconfig.to_owned(), cache: tempfile::tempdir().expect("temp dir") }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.binary);
        command.arg("--kubeconfig").arg(&self.kubeconfig).arg("--cache-dir").arg(self.cache.path()).args(args);
        command.env_remove("KUBECONFIG");
        command
    }

    /// Runs kubectl with `stdin` piped in.
    pub fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = self.command(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run kubectl");
        if let Some(mut input) = child.stdin.take() {
            input.write_all(stdin.as_bytes()).expect("write stdin");
        }
        child.wait_with_output().expect("kubectl output")
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).stdin(Stdio::null()).output().expect("run kubectl")
    }

    /// Runs kubectl and returns its stdout; panics with stderr when it fails.
    pub fn ok(&self, args: &[&str]) -> String {
        check(args, self.run(args))
    }

    /// Like [`Kubectl::ok`] with `stdin`.
    pub fn ok_with_stdin(&self, args: &[&str], stdin: &str) -> String {
        check(args, self.run_with_stdin(args, stdin))
    }

    /// Runs kubectl expecting failure; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(!output.status.success(), "kubectl {args:?} should have failed but printed {}", String::from_utf8_lossy(&output.stdout));
        String::from_utf8_lossy(&output.stderr).into_owned()
    }

    /// Runs kubectl with `stdin`, expecting failure; returns stderr.
    pub fn fails_with_stdin(&self, args: &[&str], stdin: &str) -> String {
        let output = self.run_with_stdin(args, stdin);
        assert!(!output.status.success(), "kubectl {args:?} should have failed but printed {}", String::from_utf8_lossy(&output.stdout));
        String::from_utf8_lossy(&output.stderr).into_owned()
    }

    /// Starts kubectl in the background (for `-w`); its stdout is piped.
    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn kubectl")
    }
}

fn check(args: &[&str], output: Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "kubectl {args:?} failed:\nstdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Polls `probe` until it returns true or `timeout` passes.
pub fn eventually(timeout: Duration, mut probe: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if probe() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    probe()
}
