//! A real OpenID provider for the tests and benches: tests/oidc/provider.js (the npm `oidc-provider`, installed by
//! `npm ci` in tests/oidc) on 127.0.0.1 over HTTPS with a CA of the caller's own, and ID tokens obtained from it by
//! the authorization-code flow driven over HTTP with curl.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

const CALLBACK: &str = "https://127.0.0.1/callback";

/// The OpenID provider, stopped on drop.
pub struct Provider {
    child: Child,
    pub issuer: String,
    pub ca_file: PathBuf,
    dir: tempfile::TempDir,
}

impl Provider {
    pub fn start() -> Provider {
        Provider::start_with_ttl(3600)
    }

    /// Starts tests/oidc/provider.js (installed by `npm ci` in tests/oidc: scripts/test-all.sh does it) with a
    /// fresh CA and serving certificate; ID tokens live `ttl` seconds.
    pub fn start_with_ttl(ttl: u64) -> Provider {
        Provider::start_as("127.0.0.1", ttl)
    }

    /// Starts the provider with issuer URL `https://<host>:<port>` (it listens on 127.0.0.1; its certificate names
    /// 127.0.0.1 and localhost).
    pub fn start_as(host: &str, ttl: u64) -> Provider {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("oidc");
        assert!(folder.join("node_modules/oidc-provider").exists(),
            "the OpenID provider is not installed: run `npm ci --prefix tests/oidc` (scripts/test-all.sh does)");
        let dir = tempfile::tempdir().expect("temp dir");
        let ca_key = rcgen::KeyPair::generate().expect("CA key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(rcgen::DnType::CommonName, "oidc test CA");
        let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let key = rcgen::KeyPair::generate().expect("serving key");
        let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).expect("params")
            .signed_by(&key, &issuer).expect("serving certificate");
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, ca_cert.pem()).expect("write CA");
        std::fs::write(dir.path().join("cert.pem"), cert.pem()).expect("write certificate");
        std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).expect("write key");
        let mut child = Command::new("node")
            .arg(folder.join("provider.js"))
            .env("CERT", dir.path().join("cert.pem"))
            .env("KEY", dir.path().join("key.pem"))
            .env("ID_TOKEN_TTL", ttl.to_string())
            .env("ISSUER_HOST", host)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start node");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("read the provider's first line");
        let issuer = line.trim().strip_prefix("listening ").unwrap_or_else(|| panic!("the provider said {line:?}")).to_owned();
        Provider { child, issuer, ca_file, dir }
    }

    fn curl(&self) -> Command {
        let mut command = Command::new("curl");
        command.args(["-s", "--max-time", "20", "--cacert"]).arg(&self.ca_file);
        command
    }

    /// An ID token for `account` (`login_hint`), issued to `client` by the authorization-code flow: the
    /// authorization request, the provider's login and consent interactions (answered by provider.js), the code
    /// at the redirect URI, then the token endpoint.
    pub fn id_token(&self, client: &str, account: &str) -> String {
        let jar = tempfile::NamedTempFile::new_in(self.dir.path()).expect("cookie jar");
        let mut url = format!("{}/auth?client_id={client}&response_type=code&scope=openid%20email%20groups%20tenant&redirect_uri={CALLBACK}\
            &login_hint={account}&state=s&nonce=n", self.issuer);
        for _ in 0..10 {
            let output = self.curl().arg("-c").arg(jar.path()).arg("-b").arg(jar.path())
                .args(["-o", "/dev/null", "-w", "%{redirect_url}", &url]).output().expect("curl");
            let next = String::from_utf8_lossy(&output.stdout).into_owned();
            assert!(!next.is_empty(), "the authorization flow stopped at {url}");
            if let Some(query) = next.strip_prefix(CALLBACK) {
                let code = query.trim_start_matches('?').split('&').find_map(|p| p.strip_prefix("code="))
                    .unwrap_or_else(|| panic!("no code in {next}"));
                let output = self.curl().args(["-u", &format!("{client}:{client}-secret"), "-d", "grant_type=authorization_code",
                    "-d", &format!("code={code}"), "-d", &format!("redirect_uri={CALLBACK}"), &format!("{}/token", self.issuer)])
                    .output().expect("curl");
                let answer: Value = serde_json::from_slice(&output.stdout).expect("the token endpoint answers JSON");
                return answer["id_token"].as_str().unwrap_or_else(|| panic!("no id_token in {answer}")).to_owned();
            }
            url = next;
        }
        panic!("the authorization flow did not reach the redirect URI");
    }

    /// The provider signs with a new key from now on.
    pub fn rotate(&self) {
        let output = self.curl().args(["-X", "POST", &format!("{}/test/rotate", self.issuer)]).output().expect("curl");
        assert!(output.status.success());
    }

    /// A JWT of `payload` signed by a key the provider never published, under the provider's kid.
    pub fn forge(&self, payload: &Value) -> String {
        let output = self.curl().args(["-X", "POST", "--data-binary", &payload.to_string(), &format!("{}/test/forge", self.issuer)])
            .output().expect("curl");
        String::from_utf8(output.stdout).expect("token")
    }

    pub fn ca(&self) -> &str {
        self.ca_file.to_str().expect("utf-8 path")
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        self.stop();
    }
}

