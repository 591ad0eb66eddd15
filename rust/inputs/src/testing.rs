//! Real loopback servers and fixtures for the tests of this crate and of the
//! `chock` binary (feature `testing`): an HTTP(S) server with a test
//! certificate authority, source trees with their narHash, archives as
//! forges serve them, bare git repositories served the dumb-HTTP way, and
//! `flake.lock` files.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A name no earlier run of the tests used, so every tree is new to the
/// store and is really fetched.
pub fn nonce() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{now}-{}-{}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A certificate authority made for one test run.
pub struct TestCa {
    cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl TestCa {
    pub fn new() -> TestCa {
        let key = KeyPair::generate().expect("a CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "chock test CA");
        let cert = params.self_signed(&key).expect("the CA certificate");
        TestCa {
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// Writes the CA certificate as PEM (what `SSL_CERT_FILE` names).
    pub fn write_pem(&self, path: &Path) {
        std::fs::write(path, &self.cert_pem).expect("write the CA certificate");
    }

    /// A TLS server configuration for `localhost` and 127.0.0.1.
    fn server_config(&self) -> rustls::ServerConfig {
        let key = KeyPair::generate().expect("a server key");
        let params = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("server params");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("the server certificate");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(cert.der().to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .expect("the server certificate and key")
    }
}

impl Default for TestCa {
    fn default() -> TestCa {
        TestCa::new()
    }
}

/// What the server answers for one path.
#[derive(Debug, Clone)]
pub enum Reply {
    Body(Vec<u8>),
    /// `302 Found` to this location.
    Redirect(String),
    Status(u16),
}

#[derive(Default)]
struct State {
    routes: HashMap<String, Reply>,
    dirs: Vec<(String, PathBuf)>,
    requests: Vec<String>,
}

/// A loopback HTTP or HTTPS server on its own thread, answering from a
/// route table and static directories, and counting every request.
pub struct Server {
    port: u16,
    scheme: &'static str,
    state: Arc<Mutex<State>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Server {
    pub fn http() -> Server {
        Server::start(None)
    }

    pub fn https(ca: &TestCa) -> Server {
        Server::start(Some(ca.server_config()))
    }

    fn start(tls: Option<rustls::ServerConfig>) -> Server {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("address").port();
        let state = Arc::new(Mutex::new(State::default()));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shared = state.clone();
        let scheme = if tls.is_some() { "https" } else { "http" };
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let acceptor = tls.map(|c| tokio_rustls::TlsAcceptor::from(Arc::new(c)));
                let serve = async {
                    loop {
                        let Ok((stream, _)) = listener.accept().await else {
                            continue;
                        };
                        let (state, acceptor) = (shared.clone(), acceptor.clone());
                        tokio::spawn(async move {
                            match acceptor {
                                Some(acceptor) => {
                                    if let Ok(stream) = acceptor.accept(stream).await {
                                        answer(stream, &state).await;
                                    }
                                }
                                None => answer(stream, &state).await,
                            }
                        });
                    }
                };
                tokio::select! {
                    () = serve => {}
                    _ = stopped => {}
                }
            });
        });
        Server {
            port,
            scheme,
            state,
            stop: Some(stop),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Answers `path` (with its query, if any) with `reply`.
    pub fn route(&self, path: &str, reply: Reply) {
        self.state().routes.insert(path.to_string(), reply);
    }

    /// Serves the files under `dir` at `prefix` (dumb-HTTP git, say).
    pub fn serve_dir(&self, prefix: &str, dir: &Path) {
        self.state()
            .dirs
            .push((prefix.to_string(), dir.to_path_buf()));
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `localhost:<port>`, as a lock's `host` names it.
    pub fn host(&self) -> String {
        format!("localhost:{}", self.port)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}://localhost:{}{path}", self.scheme, self.port)
    }

    /// Every request path so far, in order.
    pub fn requests(&self) -> Vec<String> {
        self.state().requests.clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn answer<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, state: &Mutex<State>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let text = String::from_utf8_lossy(&head);
    let target = text.split(' ').nth(1).unwrap_or("/").to_string();
    let reply = {
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        state.requests.push(target.clone());
        lookup(&state, &target)
    };
    let (status, extra, body) = match reply {
        Reply::Body(body) => ("200 OK".to_string(), String::new(), body),
        Reply::Redirect(to) => (
            "302 Found".to_string(),
            format!("Location: {to}\r\n"),
            Vec::new(),
        ),
        Reply::Status(code) => (format!("{code} Status"), String::new(), Vec::new()),
    };
    let header = format!(
        "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(header.as_bytes()).await;
    let _ = stream.write_all(&body).await;
    let _ = stream.shutdown().await;
}

fn lookup(state: &State, target: &str) -> Reply {
    if let Some(reply) = state.routes.get(target) {
        return reply.clone();
    }
    let path = target.split('?').next().unwrap_or(target);
    for (prefix, dir) in &state.dirs {
        let Some(rest) = path.strip_prefix(prefix.as_str()) else {
            continue;
        };
        let rest = Path::new(rest.trim_start_matches('/'));
        if rest.components().all(|c| matches!(c, Component::Normal(_)))
            && let Ok(body) = std::fs::read(dir.join(rest))
        {
            return Reply::Body(body);
        }
    }
    Reply::Status(404)
}

/// A source tree on disk: `top/` with the given files.
pub struct Tree {
    _dir: tempfile::TempDir,
    top: PathBuf,
    files: Vec<(String, Vec<u8>, bool)>,
}

impl Tree {
    /// `files`: path under `top`, contents, executable.
    pub fn new(top: &str, files: &[(&str, &[u8], bool)]) -> Tree {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join(top);
        let files: Vec<(String, Vec<u8>, bool)> = files
            .iter()
            .map(|(p, c, x)| ((*p).to_string(), c.to_vec(), *x))
            .collect();
        write_files(&root, &files);
        Tree {
            _dir: dir,
            top: root,
            files,
        }
    }

    pub fn top(&self) -> &Path {
        &self.top
    }

    /// The SRI NAR hash of `top`, as a lock's `narHash`.
    pub fn nar_hash(&self) -> String {
        chock_store::nar::hash_path(&self.top)
            .expect("hash the tree")
            .nar_hash
            .to_sri()
    }

    /// A gzipped tar with `top/` as its single top-level directory, and a
    /// pax global header first, as GitHub's archives have.
    pub fn tar_gz(&self) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        let comment = b"52 comment=0123456789abcdef0123456789abcdef01234567\n";
        let mut global = tar::Header::new_ustar();
        global.set_path("pax_global_header").expect("path");
        global.set_entry_type(tar::EntryType::XGlobalHeader);
        global.set_size(comment.len() as u64);
        global.set_mode(0o644);
        global.set_cksum();
        builder.append(&global, &comment[..]).expect("pax header");
        let top = self
            .top
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("top");
        let mut dir = tar::Header::new_gnu();
        dir.set_entry_type(tar::EntryType::Directory);
        dir.set_mode(0o755);
        dir.set_size(0);
        builder
            .append_data(&mut dir, format!("{top}/"), std::io::empty())
            .expect("top directory");
        for (path, contents, executable) in &self.files {
            let mut header = tar::Header::new_gnu();
            header.set_size(contents.len() as u64);
            header.set_mode(if *executable { 0o755 } else { 0o644 });
            header.set_entry_type(tar::EntryType::Regular);
            builder
                .append_data(&mut header, format!("{top}/{path}"), contents.as_slice())
                .expect("entry");
        }
        let tar = builder.into_inner().expect("tar");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&tar).expect("gzip");
        gz.finish().expect("gzip")
    }

    /// A bare repository whose `main` holds these files in one commit and
    /// then `later` files in a second, made ready to be served statically
    /// (`git update-server-info`), and the first commit's id.
    pub fn git_repo(&self, into: &Path, later: &[(&str, &[u8])]) -> (PathBuf, String) {
        let work = into.join("work");
        let bare = into.join("repo.git");
        std::fs::create_dir_all(&work).expect("work");
        let git = |dir: &Path, args: &[&str]| {
            let out = std::process::Command::new("git")
                .current_dir(dir)
                .args(args)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
                .output()
                .expect("run git");
            assert!(
                out.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        git(&work, &["init", "--quiet", "--initial-branch=main"]);
        write_files(&work, &self.files);
        git(&work, &["add", "--all"]);
        git(&work, &["commit", "--quiet", "-m", "test"]);
        let rev = git(&work, &["rev-parse", "HEAD"]);
        for (path, contents) in later {
            std::fs::write(work.join(path), contents).expect("write");
        }
        if !later.is_empty() {
            git(&work, &["add", "--all"]);
            git(&work, &["commit", "--quiet", "-m", "later"]);
        }
        git(into, &["clone", "--quiet", "--bare", "work", "repo.git"]);
        git(&bare, &["update-server-info"]);
        (bare, rev)
    }
}

/// Writes `files` (path, contents, executable) under `root`.
fn write_files(root: &Path, files: &[(String, Vec<u8>, bool)]) {
    for (path, contents, executable) in files {
        let file = root.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).expect("parents");
        }
        std::fs::write(&file, contents).expect("write");
        let mode = if *executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }
}

/// A project folder, a state folder beside it (the decision log in `log/`,
/// temporary files) and a test CA whose certificate is written there: what
/// this crate's tests and the binary's share. All removed afterwards.
pub struct TestProject {
    project: tempfile::TempDir,
    state: tempfile::TempDir,
    pub ca: TestCa,
    pub ca_file: PathBuf,
}

impl TestProject {
    pub fn new() -> TestProject {
        let state = tempfile::tempdir().expect("tempdir");
        let ca = TestCa::new();
        let ca_file = state.path().join("ca.pem");
        ca.write_pem(&ca_file);
        TestProject {
            project: tempfile::tempdir().expect("tempdir"),
            state,
            ca,
            ca_file,
        }
    }

    pub fn project(&self) -> &Path {
        self.project.path()
    }

    /// The state folder; the decision log is its `log/`.
    pub fn state(&self) -> &Path {
        self.state.path()
    }

    /// Writes the project's `flake.lock` and a `chock.zon` with these rules.
    pub fn write(&self, lock: &str, rules: &[(&str, &str)]) {
        std::fs::write(self.project().join("flake.lock"), lock).expect("flake.lock");
        std::fs::write(
            self.project().join(chock_policy::control::CHOCK_ZON),
            chock_zon(rules),
        )
        .expect("writing the project's rules");
    }

    /// Every line of the decision log in `log/`.
    pub fn log_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(self.state().join("log/decisions.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }
}

impl Default for TestProject {
    fn default() -> Self {
        Self::new()
    }
}

/// A `flake.lock` whose root has one input per `(name, locked)`, each its
/// own node.
pub fn flake_lock(inputs: &[(&str, Value)]) -> String {
    let mut nodes = serde_json::Map::new();
    let mut root_inputs = serde_json::Map::new();
    for (name, locked) in inputs {
        root_inputs.insert((*name).to_string(), json!(name));
        nodes.insert(
            (*name).to_string(),
            json!({ "locked": locked, "original": locked }),
        );
    }
    nodes.insert("root".into(), json!({ "inputs": root_inputs }));
    serde_json::to_string_pretty(&json!({ "nodes": nodes, "root": "root", "version": 7 }))
        .expect("JSON")
}

/// The project's `chock.zon` with these rules (each `(action, decision)`).
pub fn chock_zon(rules: &[(&str, &str)]) -> String {
    let mut text = String::from(".{\n    .policy = .{\n        .rules = .{\n");
    for (action, decision) in rules {
        text.push_str(&format!(
            "            .{{ .action = \"{action}\", .decision = .{decision} }},\n"
        ));
    }
    text.push_str("        },\n    },\n}\n");
    text
}
