//! Black-box test harness: starts the real `kspaces` binary on `127.0.0.1:0` with a fresh data dir and
//! drives it with real clients (kubectl 1.32 here; kube-rs and the Python client in the tests).

pub mod etcd;
pub mod https;
pub mod initializer;
pub mod oidc;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The `kspaces` binary, built once per test process if it is not there yet.
pub fn kspaces_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| match std::env::var("KSPACES_BIN") {
            Ok(path) => PathBuf::from(path),
            Err(_) => cargo_build(&["kspaces"]).join("kspaces"),
        })
        .clone()
}

/// The kubectl plugins (`kubectl-ws`, `kubectl-create-workspace`, `kubectl-kcp`), built once per test process:
/// the folder holding them, to put first on kubectl's `PATH`. Beside `$KSPACES_BIN` when it is set (`cargo build
/// --bins` built them there).
pub fn plugins_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = match std::env::var("KSPACES_BIN") {
            Ok(path) => Path::new(&path).parent().expect("KSPACES_BIN has a folder").to_path_buf(),
            Err(_) => cargo_build(&PLUGINS),
        };
        for plugin in PLUGINS {
            assert!(dir.join(plugin).exists(), "{plugin} is missing from {}: build it with `cargo build --bins`", dir.display());
        }
        dir
    })
    .clone()
}

/// The plugin binaries, named as kcp's.
pub const PLUGINS: [&str; 3] = ["kubectl-ws", "kubectl-create-workspace", "kubectl-kcp"];

/// `cargo build` of these binaries of the apiserver crate, in the profile of the running test; returns the
/// folder they are in.
fn cargo_build(binaries: &[&str]) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>").to_path_buf();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let profile = profile_dir.file_name().and_then(|n| n.to_str()).unwrap_or("debug");
    let mut build = Command::new(cargo);
    build.args(["build", "-p", "kspaces-apiserver"]);
    for binary in binaries {
        build.args(["--bin", binary]);
    }
    // Cargo sets CARGO_PKG_*, CARGO_MANIFEST_DIR, ... for the running test or bench; passed on, they make
    // build scripts that watch them (ring's) rebuild, and the next ordinary build rebuild again.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if name.starts_with("CARGO_") && name != "CARGO_HOME" && name != "CARGO_TARGET_DIR" {
            build.env_remove(&name);
        }
    }
    if profile == "release" {
        build.arg("--release");
    }
    let status = build.status().expect("run cargo build");
    assert!(status.success(), "building {binaries:?} failed");
    profile_dir
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
        let (child, url, startup) = serve(data_dir.path(), extra);
        let kubeconfig = data_dir.path().join("admin.kubeconfig");
        assert!(kubeconfig.exists(), "admin.kubeconfig was not written");
        Server { child, url, data_dir, kubeconfig, startup }
    }

    /// Starts one replica of a scaled-out server on `dir`, a data dir it shares with the other replicas (the
    /// same CA and service-account keys) and does not own; `extra` names the shared storage
    /// (`--storage-backend etcd --etcd-servers ...`). Each replica rewrites `dir/admin.kubeconfig` as it starts; the
    /// replica keeps a copy of it with its own URL, so replicas may also be started at the same moment.
    pub fn start_replica(dir: &Path, extra: &[&str]) -> Replica {
        let (child, url, startup) = serve(dir, extra);
        let pid = child.id();
        // Kills the replica (SIGKILL) when its stdin closes: at `kill`, on drop, or when this test process ends
        // without running destructors (a replica kept in a `static`); told `exited`, it leaves the pid alone.
        let watchdog = Command::new("sh")
            .args(["-c", &format!("read line; [ \"$line\" = exited ] || kill -9 {pid} 2>/dev/null")])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the replica's watchdog");
        let written = std::fs::read_to_string(dir.join("admin.kubeconfig")).expect("the replica wrote admin.kubeconfig");
        let kubeconfig = kubeconfig_path_in(dir, &format!("replica-{pid}-admin"));
        std::fs::write(&kubeconfig, with_server_url(&written, &url)).expect("write the replica's admin kubeconfig");
        Replica { child, watchdog: Some(watchdog), url, data_dir: dir.to_owned(), kubeconfig, startup }
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

    /// For a server kept in a `static` (shared by a file's tests; statics are never dropped): a small shell loop
    /// outlives this test process, then kills the server (SIGKILL, by its pid) and removes its data dir and
    /// `also_remove`.
    pub fn stop_when_tests_end(&self, also_remove: &[&Path]) {
        let mut doomed = vec![self.data_dir.path().to_owned()];
        doomed.extend(also_remove.iter().map(|path| path.to_path_buf()));
        let quoted: Vec<String> = doomed.iter().map(|path| format!("'{}'", path.display().to_string().replace('\'', "'\\''"))).collect();
        let script = format!(
            "while kill -0 {tests} 2>/dev/null; do sleep 1; done; kill -9 {server} 2>/dev/null; rm -rf {paths}",
            tests = std::process::id(),
            server = self.pid(),
            paths = quoted.join(" "),
        );
        // The reaper outlives the tests on purpose (it waits for this process to end): nobody waits for it.
        #[allow(clippy::zombie_processes)]
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the server's reaper");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `kspaces serve --secure-port 0 --data-dir <dir> <extra>` until it prints its URL; returns the process, the
/// URL and how long that took.
fn serve(dir: &Path, extra: &[&str]) -> (Child, String, Duration) {
    let started = Instant::now();
    let mut child = Command::new(kspaces_binary())
        .args(["serve", "--secure-port", "0", "--data-dir"])
        .arg(dir)
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
    (child, url, started.elapsed())
}

/// One replica of a scaled-out server ([`Server::start_replica`]): its data dir is shared and outlives it; killed
/// (SIGKILL) on drop.
pub struct Replica {
    child: Child,
    watchdog: Option<Child>,
    pub url: String,
    /// The shared data dir.
    pub data_dir: PathBuf,
    /// The system administrator's kubeconfig for this replica's URL.
    pub kubeconfig: PathBuf,
    pub startup: Duration,
}

impl Replica {
    /// kubectl as the system administrator, through this replica.
    pub fn kubectl(&self) -> Kubectl {
        Kubectl::new(&self.kubeconfig)
    }

    /// The process id (kube's leader election names the holder `<hostname>_<pid>_<random>`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True until the replica has been killed or has exited.
    pub fn running(&mut self) -> bool {
        if matches!(self.child.try_wait(), Ok(None)) {
            return true;
        }
        // Reaped: its pid may be reused from now on, so the watchdog must not kill it.
        if let Some(mut watchdog) = self.watchdog.take() {
            if let Some(mut stdin) = watchdog.stdin.take() {
                let _ = stdin.write_all(b"exited\n");
            }
            let _ = watchdog.wait();
        }
        false
    }

    /// Kills the replica (SIGKILL) and waits for it to exit.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        // The watchdog's `kill -9 <pid>` finds the replica not yet reaped (its pid cannot have been reused).
        if let Some(mut watchdog) = self.watchdog.take() {
            drop(watchdog.stdin.take());
            let _ = watchdog.wait();
        }
        let _ = self.child.wait();
    }

    /// Asks the replica to stop, as an init system does (SIGTERM); `kill` reaps it.
    pub fn terminate(&self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
    }

    /// A copy of this replica's admin kubeconfig whose server is `url` (e.g. `<replica>/clusters/system:admin`).
    pub fn kubeconfig_for_url(&self, url: &str) -> PathBuf {
        let original = std::fs::read_to_string(&self.kubeconfig).expect("read the replica's kubeconfig");
        let path = kubeconfig_path_in(&self.data_dir, "replica-rewritten");
        std::fs::write(&path, with_server_url(&original, url)).expect("write kubeconfig");
        path
    }

    /// A client-certificate kubeconfig (CN=user, O=groups, O=tenant:T) for `url` (this replica's URL, or one
    /// under it such as `<replica>/clusters/root:t`), signed by the shared CA.
    pub fn certificate_kubeconfig(&self, tenant: &str, user: &str, groups: &[&str], url: &str) -> PathBuf {
        certificate_kubeconfig_in(&self.data_dir, tenant, user, groups, Some(url))
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `kspaces serve` on `data_dir` with `flags`, expected to refuse to start: its standard error, once it exited
/// with a failure (panics if it serves, or is still running after 20 s).
pub fn refused_start(data_dir: &Path, flags: &[&str]) -> String {
    let mut child = Command::new(kspaces_binary())
        .args(["serve", "--secure-port", "0", "--data-dir"])
        .arg(data_dir)
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kspaces");
    let exited = eventually(Duration::from_secs(20), || child.try_wait().ok().flatten().is_some());
    if !exited {
        let _ = child.kill();
    }
    let output = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(exited && !output.status.success(), "kspaces serve {flags:?} started: {stderr}");
    stderr
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

/// kubectl 1.32 running the kubectl plugins as a user runs them: `kubectl ws ...`, `kubectl create workspace ...`,
/// `kubectl kcp ...`, with `KUBECONFIG` naming the kubeconfig (kubectl refuses flags before a plugin's name), the
/// plugin binaries first on `PATH`, and `HOME` a fresh folder of its own.
pub struct PluginKubectl {
    binary: PathBuf,
    kubeconfig: PathBuf,
    home: tempfile::TempDir,
}

/// What a command printed.
#[derive(Debug)]
pub struct Printed {
    pub stdout: String,
    pub stderr: String,
}

impl PluginKubectl {
    pub fn new(kubeconfig: &Path) -> PluginKubectl {
        PluginKubectl { binary: kubectl_binary(), kubeconfig: kubeconfig.to_owned(), home: tempfile::tempdir().expect("temp dir") }
    }

    /// The `HOME` the plugins see.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    pub fn run(&self, args: &[&str]) -> Output {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let path = std::env::join_paths(std::iter::once(plugins_dir()).chain(std::env::split_paths(&path))).expect("PATH");
        Command::new(&self.binary)
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("PATH", path)
            .env("HOME", self.home.path())
            .stdin(Stdio::null())
            .output()
            .expect("run kubectl")
    }

    /// Runs kubectl and returns what it printed; panics with both streams when it fails.
    pub fn ok(&self, args: &[&str]) -> Printed {
        let printed = self.printed(args);
        assert!(printed.0, "kubectl {args:?} failed:\nstdout: {}\nstderr: {}", printed.1.stdout, printed.1.stderr);
        printed.1
    }

    /// Runs kubectl expecting failure; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let printed = self.printed(args);
        assert!(!printed.0, "kubectl {args:?} should have failed but printed {}", printed.1.stdout);
        printed.1.stderr
    }

    fn printed(&self, args: &[&str]) -> (bool, Printed) {
        let output = self.run(args);
        let printed = Printed {
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        };
        (output.status.success(), printed)
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

/// The output of a background `kubectl get -w` (or a raw watch): its stdout lines arrive on a channel, read by a
/// thread; the process is killed on drop.
pub struct WatchOutput {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl WatchOutput {
    pub fn start(kubectl: &Kubectl, args: &[&str]) -> WatchOutput {
        let mut child = kubectl.spawn(args);
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        WatchOutput { child, lines, seen: Vec::new() }
    }

    /// Reads lines until `count` lines seen so far satisfy `wanted` (true) or `timeout` passes (false).
    pub fn wait_for_nth(&mut self, timeout: Duration, count: usize, wanted: impl Fn(&str) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut found = self.seen.iter().filter(|line| wanted(line)).count();
        while found < count {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else { return false };
            let Ok(line) = self.lines.recv_timeout(left) else { return false };
            found += usize::from(wanted(&line));
            self.seen.push(line);
        }
        true
    }

    /// Reads lines until one satisfies `wanted` (true) or `timeout` passes (false).
    pub fn wait_for(&mut self, timeout: Duration, wanted: impl Fn(&str) -> bool) -> bool {
        self.wait_for_nth(timeout, 1, wanted)
    }

    /// Every line read so far.
    pub fn lines(&self) -> &[String] {
        &self.seen
    }

    /// The first line read so far that satisfies `wanted`.
    pub fn find(&self, wanted: impl Fn(&str) -> bool) -> Option<&str> {
        self.seen.iter().map(String::as_str).find(|line| wanted(line))
    }

    /// True if a line read so far satisfies `wanted`.
    pub fn saw(&self, wanted: impl Fn(&str) -> bool) -> bool {
        self.find(wanted).is_some()
    }

    pub fn transcript(&self) -> String {
        self.seen.join("\n")
    }
}

impl Drop for WatchOutput {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A line predicate: the line contains `needle`.
pub fn contains(needle: &str) -> impl Fn(&str) -> bool + '_ {
    move |line| line.contains(needle)
}

/// A line predicate over a table row's whitespace-separated cells.
pub fn cells(wanted: impl Fn(&[&str]) -> bool) -> impl Fn(&str) -> bool {
    move |line| wanted(&line.split_whitespace().collect::<Vec<_>>())
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

// ---- curl: raw HTTP/1.1 and HTTP/2 requests, as a script or an attacker sends them. ----

/// How curl talks to the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Http {
    One,
    Two,
}

fn curl_command(http: Http, token: Option<&str>) -> Command {
    let mut command = Command::new("curl");
    // -k: the server's CA is the test's own; --path-as-is: the path is sent exactly as written.
    command.args(["-sk", "--path-as-is", "--max-time", "60"]);
    command.arg(match http {
        Http::One => "--http1.1",
        Http::Two => "--http2",
    });
    if let Some(token) = token {
        command.args(["-H", &format!("Authorization: Bearer {token}")]);
    }
    command
}

/// One request with curl (`token`: a bearer token, else anonymous); returns the HTTP status and the body.
pub fn curl(server: &Server, http: Http, token: Option<&str>, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    curl_url(&server.url, http, token, method, path, body)
}

/// [`curl`] to the server at `base` (a replica's URL).
pub fn curl_url(base: &str, http: Http, token: Option<&str>, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    let mut command = curl_command(http, token);
    command.args(["-X", method, "-w", "\n%{http_code}"]);
    if let Some(body) = body {
        command.args(["-H", "Content-Type: application/json", "--data-binary", body]);
    }
    let output = command.arg(format!("{base}{path}")).output().expect("run curl");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or_else(|_| panic!("curl {method} {path}: no status in {text:?}")), body.to_owned())
}

/// GETs every path in `paths` with one curl process (one connection, as a flood would); returns the statuses.
pub fn curl_each(server: &Server, http: Http, token: Option<&str>, paths: &[String]) -> Vec<u16> {
    let mut command = curl_command(http, token);
    let mut config = String::new();
    for path in paths {
        config.push_str(&format!("url = \"{}{path}\"\noutput = \"/dev/null\"\n", server.url));
    }
    let mut child = command.args(["-w", "%{http_code}\\n", "--config", "-"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("run curl");
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(config.as_bytes()).expect("write curl's config");
    }
    let output = child.wait_with_output().expect("curl output");
    String::from_utf8_lossy(&output.stdout).lines().map(|line| line.trim().parse().unwrap_or(0)).collect()
}

// ---- Tenancy helpers: credentials for tenant users and tenants created through kubectl. ----

/// A fresh path for a kubeconfig written by a test, under the server's data dir (removed with it).
fn test_kubeconfig_path(server: &Server, label: &str) -> PathBuf {
    kubeconfig_path_in(server.data_dir.path(), label)
}

/// A fresh path for a kubeconfig written by a test, under `data_dir`.
fn kubeconfig_path_in(data_dir: &Path, label: &str) -> PathBuf {
    static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = data_dir.join("test-kubeconfigs");
    std::fs::create_dir_all(&dir).expect("create the test kubeconfig dir");
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let label: String = label.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    dir.join(format!("{n}-{label}.kubeconfig"))
}

/// Runs `kspaces kubeconfig --data-dir <server's data dir> --tenant T --user U [--group G ...] [--server URL]`
/// and writes its stdout to a file; returns the file's path.
pub fn certificate_kubeconfig_with(server: &Server, tenant: &str, user: &str, groups: &[&str], url: Option<&str>) -> PathBuf {
    certificate_kubeconfig_in(server.data_dir.path(), tenant, user, groups, url)
}

fn certificate_kubeconfig_in(data_dir: &Path, tenant: &str, user: &str, groups: &[&str], url: Option<&str>) -> PathBuf {
    let mut command = Command::new(kspaces_binary());
    command.args(["kubeconfig", "--data-dir"]).arg(data_dir).args(["--tenant", tenant, "--user", user]);
    for group in groups {
        command.args(["--group", group]);
    }
    if let Some(url) = url {
        command.args(["--server", url]);
    }
    let output = command.output().expect("run kspaces kubeconfig");
    assert!(
        output.status.success(),
        "kspaces kubeconfig --tenant {tenant} --user {user} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let path = kubeconfig_path_in(data_dir, &format!("cert-{tenant}-{user}"));
    std::fs::write(&path, &output.stdout).expect("write kubeconfig");
    path
}

/// A client-certificate kubeconfig (CN=user, O=groups, O=tenant:T) for the running server.
pub fn certificate_kubeconfig(server: &Server, tenant: &str, user: &str, groups: &[&str]) -> PathBuf {
    certificate_kubeconfig_with(server, tenant, user, groups, None)
}

/// Asserts that `answer` (a status code and its JSON body, as curl got them) is a Status of `code` whose message
/// contains `needle`.
pub fn assert_status(answer: &(u16, Value), code: u16, needle: &str, context: &str) {
    let (got, body) = answer;
    assert_eq!(*got, code, "{context}: {body}");
    assert_eq!(body["kind"], "Status", "{context}: not a Status: {body}");
    assert_eq!(body["code"], code, "{context}: {body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains(needle), "{context}: {message:?} lacks {needle:?}");
}

/// The message of a Status answer (empty if none).
pub fn status_message(answer: &(u16, Value)) -> String {
    answer.1["message"].as_str().unwrap_or_default().to_owned()
}

/// The names of a list's items, sorted.
pub fn list_names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> =
        list["items"].as_array().into_iter().flatten().filter_map(|i| i["metadata"]["name"].as_str().map(str::to_owned)).collect();
    names.sort();
    names
}

/// A kube-rs client built from a kubeconfig file, exactly as a user builds one.
pub async fn kube_client(kubeconfig: &Path) -> kube::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default()).await?;
    kube::Client::try_from(config)
}

/// A provider's `v1.widgets.example.io` APIResourceSchema (`spec.size` defaulted to 3, at least 1; `spec.color`; a
/// status subresource; a `Size` column) and its APIExport `widgets`, as a user writes them (kcp's `versions[].schema`
/// is the openAPIV3Schema).
pub const WIDGETS_EXPORT: &str = r#"apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
metadata: {name: v1.widgets.example.io}
spec:
  group: example.io
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      type: object
      properties:
        spec:
          type: object
          properties:
            size: {type: integer, minimum: 1, default: 3}
            color: {type: string}
        status:
          type: object
          properties:
            observedSize: {type: integer}
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
---
apiVersion: apis.kcp.io/v1alpha1
kind: APIExport
metadata: {name: widgets}
spec:
  latestResourceSchemas: [v1.widgets.example.io]
"#;

/// A namespaced `widgets.example.com` CRD (`spec.size`, `status.observedSize`, a status subresource), as the
/// kube-rs controller tests install it.
pub const WIDGET_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
          status: {type: object, properties: {observedSize: {type: integer}}}
"#;

/// The base64 CA bundle (`certificate-authority-data`) of the server's admin.kubeconfig.
pub fn certificate_authority_data(server: &Server) -> String {
    let admin = std::fs::read_to_string(&server.kubeconfig).expect("read admin.kubeconfig");
    admin
        .lines()
        .find_map(|line| line.trim().strip_prefix("certificate-authority-data:"))
        .map(|data| data.trim().to_owned())
        .expect("admin.kubeconfig has certificate-authority-data")
}

/// A bearer-token kubeconfig for `url` (e.g. `server.url`, or `server.url` + `/clusters/root:t`).
pub fn token_kubeconfig_for_url(server: &Server, token: &str, url: &str) -> PathBuf {
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kspaces\n  cluster:\n    server: {url}\n    certificate-authority-data: {ca}\nusers:\n- name: token-user\n  user:\n    token: {token}\ncontexts:\n- name: token\n  context:\n    cluster: kspaces\n    user: token-user\ncurrent-context: token\n",
        ca = certificate_authority_data(server),
    );
    let path = test_kubeconfig_path(server, "token");
    std::fs::write(&path, yaml).expect("write kubeconfig");
    path
}

/// A bearer-token kubeconfig pointing at the server.
pub fn token_kubeconfig(server: &Server, token: &str) -> PathBuf {
    token_kubeconfig_for_url(server, token, &server.url)
}

/// A copy of `kubeconfig` whose cluster `server:` is `url`.
/// The server URL of `kubeconfig`'s current context, read as kube-rs reads it (what the kubectl plugins wrote).
pub fn current_server(kubeconfig: &Path) -> String {
    let config = kube::config::Kubeconfig::read_from(kubeconfig).expect("kube-rs reads the kubeconfig");
    let context_name = config.current_context.clone().expect("a current context");
    let context = config.contexts.iter().find(|c| c.name == context_name).and_then(|c| c.context.clone()).expect("the current context");
    let cluster = config.clusters.iter().find(|c| c.name == context.cluster).and_then(|c| c.cluster.clone()).expect("its cluster");
    cluster.server.expect("a server URL")
}

pub fn kubeconfig_with_server_url(server: &Server, kubeconfig: &Path, url: &str) -> PathBuf {
    let original = std::fs::read_to_string(kubeconfig).expect("read kubeconfig");
    let path = test_kubeconfig_path(server, "rewritten");
    std::fs::write(&path, with_server_url(&original, url)).expect("write kubeconfig");
    path
}

/// A kubeconfig's text with every cluster's `server:` set to `url`.
fn with_server_url(kubeconfig: &str, url: &str) -> String {
    let rewritten: Vec<String> = kubeconfig
        .lines()
        .map(|line| match line.find("server: ") {
            Some(at) if line.trim_start().starts_with("server: ") => format!("{}server: {url}", &line[..at]),
            _ => line.to_owned(),
        })
        .collect();
    rewritten.join("\n") + "\n"
}

/// A `--token-auth-file` with these CSV lines.
pub fn token_file(lines: &[&str]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    for line in lines {
        writeln!(file, "{line}").expect("write token file");
    }
    file.flush().expect("flush token file");
    file
}

/// Starts the one server a test file shares (kept in a `static`), with a `--token-auth-file` of these CSV lines;
/// the server and the token file go when the tests end (`Server::stop_when_tests_end`).
pub fn start_shared_with_tokens(lines: &[&str]) -> Server {
    let tokens = token_file(lines);
    let (_, token_path) = tokens.keep().expect("keep the token file");
    let server = Server::start_with(&["--token-auth-file", token_path.to_str().expect("utf-8 temp path")]);
    server.stop_when_tests_end(&[&token_path]);
    server
}

/// A server started with `flags`, tenants `names`, and kubectl as the system administrator and as each tenant's
/// `admin` (a client certificate).
pub fn server_with_tenants(flags: &[&str], names: [&str; 2]) -> (Server, Kubectl, Kubectl, Kubectl) {
    let server = Server::start_with(flags);
    let system = server.kubectl();
    for name in names {
        create_tenant(&system, name);
    }
    let [a, b] = names.map(|name| Kubectl::new(&certificate_kubeconfig(&server, name, "admin", &[])));
    (server, system, a, b)
}

/// Creates tenant `name` with `kubectl apply -f -` (as a system user); returns kubectl's stdout.
pub fn create_tenant(kubectl: &Kubectl, name: &str) -> String {
    kubectl.ok_with_stdin(&["apply", "-f", "-"], &format!("apiVersion: v1\nkind: Tenant\nmetadata: {{name: {name}}}\n"))
}

/// Binds ClusterRole `role` to `user` of `tenant` in `namespace` (RoleBinding `<role>-<user>`), as a system user
/// reaching the tenant's space by its full path.
pub fn grant(system: &Kubectl, tenant: &str, namespace: &str, role: &str, user: &str) -> String {
    let binding = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": format!("{role}-{user}"), "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    });
    let path = format!("/apis/rbac.authorization.k8s.io/v1/tenants/{tenant}/namespaces/{namespace}/rolebindings");
    system.ok_with_stdin(&["create", "--raw", &path, "-f", "-"], &binding.to_string())
}
