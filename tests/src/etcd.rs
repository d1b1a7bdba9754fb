//! A real etcd cluster (Debian's etcd-server 3.4, else `etcd` on `PATH`) of several members on loopback, for the
//! scale-out tests: several `kspaces serve --storage-backend etcd` replicas share it.
//!
//! Each member runs under a small `sh` guard reading our end of a pipe: when the guard's stdin closes (the member
//! is killed, the cluster dropped, or this test process ends without running destructors, as a cluster kept in a
//! `static` does) it SIGKILLs its etcd. A second guard removes the cluster's folder the same way, a moment after
//! the members are gone.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a member may take to answer `/health` after a start or restart.
const HEALTHY_WITHIN: Duration = Duration::from_secs(30);

/// The etcd binary: Debian's `/usr/bin/etcd`, else `etcd` on `PATH`.
pub fn etcd_binary() -> PathBuf {
    let debian = PathBuf::from("/usr/bin/etcd");
    if debian.exists() {
        return debian;
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("etcd"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!("etcd is not installed: the scale-out tests run a real 3-member etcd cluster. Install Debian's etcd-server (`apt-get install etcd-server`) or put `etcd` on PATH")
        })
}

/// One member: its ports and folder, and the guard of its running etcd (none while it is killed).
struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    dir: PathBuf,
    guard: Option<Child>,
    /// The running etcd's pid (the guard's child, reaped by the guard only once it is told to kill it).
    pid: Option<u32>,
}

impl Member {
    fn client_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    fn log(&self) -> PathBuf {
        self.dir.join("etcd.log")
    }
}

/// A running etcd cluster; every member is killed and the folder removed when it is dropped (or when the test
/// process ends).
pub struct EtcdCluster {
    root: PathBuf,
    token: String,
    initial_cluster: String,
    members: Vec<Member>,
    /// Removes `root` once its stdin closes.
    reaper: Option<Child>,
}

impl EtcdCluster {
    /// Starts `members` etcd members forming one new cluster on free loopback ports; returns once every member
    /// answers `GET /health` with `{"health":"true"}`.
    pub fn start(members: usize) -> EtcdCluster {
        assert!(members > 0, "a cluster has at least one member");
        static CLUSTERS: AtomicUsize = AtomicUsize::new(0);
        let token = format!("kspaces-test-{}-{}", std::process::id(), CLUSTERS.fetch_add(1, Ordering::Relaxed));
        let root = tempfile::Builder::new().prefix("kspaces-etcd-cluster-").tempdir().expect("temp dir").keep();
        let reaper = Command::new("sh")
            .args(["-c", r#"read line; [ "$line" = now ] || sleep 2; rm -rf "$1""#, "kspaces-etcd-reaper"])
            .arg(&root)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the etcd cluster's reaper");
        // Every port is held until all are chosen, so no two members get the same one.
        let listeners: Vec<TcpListener> =
            (0..2 * members).map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a free loopback port")).collect();
        let ports: Vec<u16> = listeners.iter().map(|l| l.local_addr().expect("local address").port()).collect();
        drop(listeners);
        let members: Vec<Member> = (0..members)
            .map(|i| {
                let dir = root.join(format!("member-{i}"));
                std::fs::create_dir_all(&dir).expect("create the member's folder");
                Member { name: format!("m{i}"), client_port: ports[2 * i], peer_port: ports[2 * i + 1], dir, guard: None, pid: None }
            })
            .collect();
        let initial_cluster = members.iter().map(|m| format!("{}={}", m.name, m.peer_url())).collect::<Vec<_>>().join(",");
        let mut cluster = EtcdCluster { root, token, initial_cluster, members, reaper: Some(reaper) };
        for i in 0..cluster.members.len() {
            cluster.spawn(i, "new");
        }
        for i in 0..cluster.members.len() {
            cluster.wait_healthy(i);
        }
        cluster
    }

    /// The client URLs, comma separated (`--etcd-servers`).
    pub fn endpoints(&self) -> String {
        self.members.iter().map(Member::client_url).collect::<Vec<_>>().join(",")
    }

    /// Member `i`'s client URL.
    pub fn endpoint(&self, i: usize) -> String {
        self.members[i].client_url()
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Member `i`'s log file.
    pub fn log_path(&self, i: usize) -> PathBuf {
        self.members[i].log()
    }

    /// True if member `i` answers `GET /health` with `{"health":"true"}` now.
    pub fn healthy(&self, i: usize) -> bool {
        health(self.members[i].client_port)
    }

    /// True while member `i` runs: it has not been killed, and it has not exited by itself (then
    /// [`EtcdCluster::describe`] shows its log's end).
    pub fn running(&self, i: usize) -> bool {
        let member = &self.members[i];
        // Until its guard reaps it, an exited etcd stays a zombie (state `Z`).
        let alive = |pid: u32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
                .unwrap_or(false)
        };
        member.guard.is_some() && member.pid.is_some_and(alive)
    }

    /// The index of the member leading the cluster now, as the running members report it
    /// (`/v3/maintenance/status`).
    pub fn leader(&self) -> Option<usize> {
        let ids: Vec<Option<(String, String)>> = self.members.iter().map(|m| if m.guard.is_some() { status(m.client_port) } else { None }).collect();
        let leader = ids.iter().flatten().map(|(_, leader)| leader.clone()).next()?;
        ids.iter().position(|id| id.as_ref().is_some_and(|(member, _)| *member == leader))
    }

    /// SIGKILLs member `i` and waits for it to exit; its data dir stays for [`EtcdCluster::restart`].
    pub fn kill(&mut self, i: usize) {
        self.members[i].pid = None;
        if let Some(mut guard) = self.members[i].guard.take() {
            drop(guard.stdin.take());
            let _ = guard.wait();
        }
    }

    /// Starts member `i` again (after [`EtcdCluster::kill`], or after it exited by itself) on its data dir, as a
    /// member of the existing cluster, and waits until it is healthy.
    pub fn restart(&mut self, i: usize) {
        assert!(!self.running(i), "etcd member {i} is running: kill it first");
        self.kill(i);
        self.spawn(i, "existing");
        self.wait_healthy(i);
    }

    fn spawn(&mut self, i: usize, state: &str) {
        let binary = etcd_binary();
        let member = &self.members[i];
        let log = File::options().create(true).append(true).open(member.log()).expect("open the member's log");
        let (client, peer) = (member.client_url(), member.peer_url());
        let guard = Command::new("sh")
            .args(["-c", r#""$@" >/dev/null & pid=$!; echo "$pid"; read _ignored; kill -9 "$pid"; wait "$pid""#, "kspaces-etcd-guard"])
            .arg(&binary)
            .arg(format!("--name={}", member.name))
            .arg(format!("--data-dir={}", member.dir.join("data").display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster={}", self.initial_cluster))
            .arg(format!("--initial-cluster-state={state}"))
            .arg(format!("--initial-cluster-token={}", self.token))
            // A lost leader is noticed and replaced within about a second.
            .arg("--heartbeat-interval=50")
            .arg("--election-timeout=500")
            .arg("--max-request-bytes=4194304")
            .arg("--logger=zap")
            .arg("--log-outputs=stderr")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {}: {err}", binary.display()));
        let mut guard = guard;
        let mut pid = String::new();
        if let Some(stdout) = guard.stdout.take() {
            let _ = BufReader::new(stdout).read_line(&mut pid);
        }
        self.members[i].pid = Some(pid.trim().parse().unwrap_or_else(|_| panic!("the guard of etcd member {i} printed no pid: {pid:?}")));
        self.members[i].guard = Some(guard);
    }

    fn wait_healthy(&mut self, i: usize) {
        let deadline = Instant::now() + HEALTHY_WITHIN;
        while Instant::now() < deadline {
            if self.healthy(i) {
                return;
            }
            if !self.running(i) {
                panic!("etcd member {i} exited; its log: {}\n{}", self.log_path(i).display(), tail(&self.log_path(i)));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "etcd member {i} ({}) was not healthy within {HEALTHY_WITHIN:?}; its log: {}\n{}",
            self.endpoint(i),
            self.log_path(i).display(),
            tail(&self.log_path(i))
        );
    }

    /// One line per member: its client URL, whether it runs and is healthy, and its log's path (for a test's
    /// failure message).
    pub fn describe(&self) -> String {
        let lines: Vec<String> = (0..self.members.len())
            .map(|i| {
                let state = match (self.running(i), self.healthy(i), self.members[i].guard.is_some()) {
                    (true, true, _) => "running, healthy",
                    (true, false, _) => "running, NOT healthy",
                    (false, _, true) => "EXITED by itself",
                    (false, _, false) => "killed",
                };
                let mut line = format!("etcd member {i} at {}: {state}; log {}", self.endpoint(i), self.log_path(i).display());
                if state != "running, healthy" {
                    line.push_str(&format!(", ending:\n{}", self.log_tail(i)));
                }
                line
            })
            .collect();
        lines.join("\n")
    }

    /// The last lines of member `i`'s log.
    pub fn log_tail(&self, i: usize) -> String {
        tail(&self.log_path(i))
    }

    /// The cluster's folder (a `member-<i>` folder per member, with its `data` and `etcd.log`).
    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
        if let Some(mut reaper) = self.reaper.take() {
            if let Some(mut stdin) = reaper.stdin.take() {
                let _ = stdin.write_all(b"now\n");
            }
            let _ = reaper.wait();
        }
    }
}

/// The last 40 lines of a log.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// etcd 3.4's `/health` over plain HTTP on a client port.
fn health(port: u16) -> bool {
    request(port, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").contains("\"health\":\"true\"")
}

/// A member's own id and its leader's, from the gRPC gateway's `/v3/maintenance/status`.
fn status(port: u16) -> Option<(String, String)> {
    let body = "{}";
    let response = request(
        port,
        &format!("POST /v3/maintenance/status HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()),
    );
    // The JSON object, whether the body came whole or as one chunk.
    let json = &response[response.find("\r\n\r\n")?..];
    let json = &json[json.find('{')?..=json.rfind('}')?];
    let status: serde_json::Value = serde_json::from_str(json).ok()?;
    let id = |value: &serde_json::Value| match value {
        serde_json::Value::String(text) => Some(text.clone()),
        serde_json::Value::Number(number) => Some(number.to_string()),
        _ => None,
    };
    Some((id(&status["header"]["member_id"])?, id(&status["leader"])?))
}

/// One plain-HTTP request to a client port; the whole response (empty when the member does not answer).
fn request(port: u16, request: &str) -> String {
    let Ok(mut stream) = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1)) else { return String::new() };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream.write_all(request.as_bytes()).is_err() {
        return String::new();
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}
