//! Starts a real etcd (Debian's etcd-server 3.4) on free loopback ports, for tests and benchmarks.
//!
//! etcd runs under a tiny `sh` guard that reads our end of a pipe: when this process exits, even without
//! running destructors (a shared etcd lives in a `static`), the pipe closes, and the guard kills etcd and
//! removes its data directory. Dropping an [`EtcdServer`] does the same at once.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use kspaces_storage::etcd::EtcdConfig;
use kspaces_storage::KeyLayout;

/// One etcd process; killed when dropped.
pub struct EtcdServer {
    guard: Option<Child>,
    pub endpoint: String,
    pub data_dir: PathBuf,
}

fn etcd_binary() -> PathBuf {
    let debian = PathBuf::from("/usr/bin/etcd");
    if debian.exists() {
        return debian;
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("etcd"))
        .find(|candidate| candidate.exists());
    on_path.unwrap_or_else(|| {
        panic!("etcd is not installed: the etcd tests need a real etcd. Install Debian's etcd-server (`apt-get install etcd-server`) or put `etcd` on PATH")
    })
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free loopback port");
    listener.local_addr().expect("local address").port()
}

impl EtcdServer {
    /// Starts etcd in a fresh temporary directory and waits until it answers `/health`.
    pub fn start() -> EtcdServer {
        let binary = etcd_binary();
        let (client, peer) = (free_port(), free_port());
        let dir = tempfile::Builder::new().prefix("kspaces-etcd-").tempdir().expect("temp dir").keep();
        let endpoint = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let log = std::fs::File::create(dir.join("etcd.log")).expect("etcd log file");
        let guard = Command::new("sh")
            .arg("-c")
            .arg(r#"dir="$1"; shift; "$@" & pid=$!; read _ignored; kill "$pid"; wait "$pid"; rm -rf "$dir""#)
            .arg("kspaces-etcd-guard")
            .arg(&dir)
            .arg(&binary)
            .arg("--name=kspaces-test")
            .arg(format!("--data-dir={}", dir.join("data").display()))
            .arg(format!("--listen-client-urls={endpoint}"))
            .arg(format!("--advertise-client-urls={endpoint}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=kspaces-test={peer_url}"))
            .arg("--max-request-bytes=4194304")
            .arg("--quota-backend-bytes=8589934592")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {}: {err}", binary.display()));
        let server = EtcdServer { guard: Some(guard), endpoint, data_dir: dir };
        server.wait_healthy(client);
        server
    }

    fn wait_healthy(&self, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if health(port) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let log = std::fs::read_to_string(self.data_dir.join("etcd.log")).unwrap_or_default();
        panic!("etcd at {} did not become healthy within 30 s; its log:\n{log}", self.endpoint);
    }

    /// A client configuration with short timeouts, so tests of a dead etcd finish quickly.
    pub fn config(&self) -> EtcdConfig {
        EtcdConfig {
            endpoints: vec![self.endpoint.clone()],
            connect_timeout: Duration::from_secs(2),
            request_timeout: Duration::from_secs(5),
        }
    }

    /// Kills etcd now and waits for it to exit.
    pub fn kill(&mut self) {
        if let Some(mut guard) = self.guard.take() {
            if let Some(mut stdin) = guard.stdin.take() {
                let _ = stdin.write_all(b"stop\n");
            }
            let _ = guard.wait();
        }
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn health(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let request = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.contains("\"health\":\"true\"")
}

/// The etcd shared by every test of this binary.
pub fn shared() -> &'static EtcdServer {
    static SHARED: OnceLock<EtcdServer> = OnceLock::new();
    SHARED.get_or_init(EtcdServer::start)
}

/// A layout no other store of this process uses: `/kspaces-test-<pid>-<n>`.
pub fn unique_layout() -> KeyLayout {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    KeyLayout::new(&format!("/kspaces-test-{}-{n}", std::process::id())).expect("valid prefix")
}
