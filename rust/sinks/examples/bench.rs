//! Lines shipped per second to each kind of sink, and what a sink that is
//! down costs an append. Run by `scripts/bench/sinks.sh`:
//!
//! ```sh
//! cargo run --release -p chock-sinks --example bench -- 20000 2000
//! ```
//!
//! Each receiver runs in this process and reads and drops what it gets, so
//! the figures are the shipper's own cost: reading past the cursor,
//! formatting, the socket calls, the cursor's writes.

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::UnixDatagram;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chock_log::{AnsweredBy, DecidedBy, Entry, Log, Rotation, Route};
use chock_sinks::{Shipper, Sink, Target, ship};
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
    LogsService, LogsServiceServer,
};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};

fn main() {
    let mut args = std::env::args().skip(1);
    let lines: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let appends: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let log = Log::at(dir.path().join("log"), Rotation::default());
    for i in 0..lines {
        log.try_append(&entry(i)).expect("appended");
    }
    println!("| sink | lines | time | lines per second |");
    println!("|---|---|---|---|");
    for (name, target) in receivers(dir.path()) {
        let sink = Sink::new(name, target).expect("a sink");
        let started = Instant::now();
        let report = ship(&sink, &log, Instant::now() + Duration::from_secs(600)).expect("shipped");
        let took = started.elapsed();
        assert_eq!(report.sent as usize, lines, "{name}: {report:?}");
        println!(
            "| {name} | {lines} | {:.3} s | {:.0} |",
            took.as_secs_f64(),
            lines as f64 / took.as_secs_f64()
        );
    }
    append_latency(dir.path(), appends);
}

fn entry(i: usize) -> Entry {
    Entry {
        route: Route::Mcp,
        project: "/src/demo".into(),
        action: "call.write_file".into(),
        agent_kind: "coder".into(),
        model: None,
        tool: Some("Write".into()),
        decision: chock_policy::Decision::Allow,
        decided_by: DecidedBy {
            layer: chock_policy::Layer::Project,
            file: Some("/src/demo/chock.zon".into()),
            line: Some(12),
            policy: None,
            held: None,
            identity: None,
        },
        answered_by: AnsweredBy::Rule,
        subject: Some(format!("src/file{i}.rs")),
        scope: None,
    }
}

/// A draining receiver for each transport, and its target.
fn receivers(dir: &std::path::Path) -> Vec<(&'static str, Target)> {
    let journal = dir.join("journal.socket");
    let journal_socket = UnixDatagram::bind(&journal).expect("a socket");
    drain(move |buf| journal_socket.recv(buf).is_ok());
    let devlog = dir.join("log.socket");
    let devlog_socket = UnixDatagram::bind(&devlog).expect("a socket");
    drain(move |buf| devlog_socket.recv(buf).is_ok());
    let udp = UdpSocket::bind("127.0.0.1:0").expect("a socket");
    let udp_port = udp.local_addr().expect("an address").port();
    drain(move |buf| udp.recv(buf).is_ok());
    let tcp_port = listen(|stream| Box::new(stream));
    let (ca, config) = tls_server(dir);
    let tls_port = listen(move |stream| {
        let connection = rustls::ServerConnection::new(config.clone()).expect("a TLS server");
        Box::new(rustls::StreamOwned::new(connection, stream))
    });
    let parse = |text: String| text.parse::<Target>().expect("a target");
    vec![
        (
            "journald",
            parse(format!("journald+unix://{}", journal.display())),
        ),
        (
            "syslog-unix",
            parse(format!("syslog+unix://{}", devlog.display())),
        ),
        (
            "syslog-udp",
            parse(format!("syslog+udp://127.0.0.1:{udp_port}")),
        ),
        (
            "syslog-tcp",
            parse(format!("syslog+tcp://127.0.0.1:{tcp_port}")),
        ),
        (
            "syslog-tls",
            parse(format!(
                "syslog+tls://127.0.0.1:{tls_port}?ca={}",
                ca.display()
            )),
        ),
        (
            "otlp-http",
            parse(format!("otlp+http://127.0.0.1:{}", collector(Wire::Http))),
        ),
        (
            "otlp-grpc",
            parse(format!("otlp+grpc://127.0.0.1:{}", collector(Wire::Grpc))),
        ),
    ]
}

enum Wire {
    Http,
    Grpc,
}

/// An OTLP collector on a thread of its own that reads each request whole
/// and answers success (the gRPC one decodes it, through opentelemetry-proto's
/// generated server); its port.
fn collector(wire: Wire) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a listener");
    let port = listener.local_addr().expect("an address").port();
    listener.set_nonblocking(true).expect("non-blocking");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a listener");
            while let Ok((stream, _)) = listener.accept().await {
                // As collectors do: an answer goes out at once, not after
                // the client's delayed acknowledgement.
                stream.set_nodelay(true).expect("no delay");
                let io = hyper_util::rt::TokioIo::new(stream);
                match wire {
                    Wire::Http => {
                        let service = hyper::service::service_fn(|request| async move {
                            let _ = http_body_util::BodyExt::collect(hyper::Request::into_body(
                                request,
                            ))
                            .await;
                            Ok::<_, std::convert::Infallible>(hyper::Response::new(
                                http_body_util::Empty::<hyper::body::Bytes>::new(),
                            ))
                        });
                        let connection = hyper::server::conn::http1::Builder::new()
                            .serve_connection(io, service);
                        tokio::spawn(connection);
                    }
                    Wire::Grpc => {
                        let service = hyper_util::service::TowerToHyperService::new(
                            LogsServiceServer::new(Collector),
                        );
                        let connection = hyper::server::conn::http2::Builder::new(
                            hyper_util::rt::TokioExecutor::new(),
                        )
                        .serve_connection(io, service);
                        tokio::spawn(connection);
                    }
                }
            }
        });
    });
    port
}

struct Collector;

#[tonic::async_trait]
impl LogsService for Collector {
    async fn export(
        &self,
        _: tonic::Request<ExportLogsServiceRequest>,
    ) -> Result<tonic::Response<ExportLogsServiceResponse>, tonic::Status> {
        Ok(tonic::Response::new(ExportLogsServiceResponse::default()))
    }
}

/// A loopback listener whose every connection, wrapped by `wrap`, is read
/// to its end; its port.
fn listen(wrap: impl Fn(std::net::TcpStream) -> Box<dyn Read + Send> + Send + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a listener");
    let port = listener.local_addr().expect("an address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = wrap(stream);
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 1 << 16];
                while reader.read(&mut buf).is_ok_and(|n| n > 0) {}
            });
        }
    });
    port
}

/// A certificate for 127.0.0.1 signed by a new CA: the CA's PEM file, and
/// a TLS server config presenting the certificate.
fn tls_server(dir: &std::path::Path) -> (std::path::PathBuf, Arc<rustls::ServerConfig>) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("a key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("a CA");
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().expect("a key");
    let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .expect("params")
        .signed_by(&key, &issuer)
        .expect("a certificate");
    let ca_path = dir.join("ca.pem");
    std::fs::write(&ca_path, ca.pem()).expect("written");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .expect("a server config");
    (ca_path, Arc::new(config))
}

fn drain(mut receive: impl FnMut(&mut [u8]) -> bool + Send + 'static) {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 17];
        while receive(&mut buf) {}
    });
}

/// How often the shipper beside the appends tries its sink that is down:
/// more often than `chock log ship --follow`, which waits 500 ms at first.
const RETRY: Duration = Duration::from_millis(100);

/// The time of one append with no shipper, and with a shipper trying a
/// sink that is down (connection refused) every [`RETRY`] beside it.
fn append_latency(dir: &std::path::Path, appends: usize) {
    println!();
    println!("| appends | median | p99 |");
    println!("|---|---|---|");
    let quiet = Log::at(dir.join("quiet"), Rotation::default());
    let (median, p99) = time_appends(&quiet, appends);
    println!("| no sink | {median:.1} µs | {p99:.1} µs |");
    // The sink is named in the log's configuration, so each append also
    // tries its lock (held by the shipper: no shipper is started).
    chock_log::on_append(chock_sinks::wake);
    let busy = Log::at(dir.join("busy"), Rotation::default()).with_shipping(chock_log::Shipping {
        sinks: vec!["down".to_owned()],
        project: dir.to_path_buf(),
        idle_seconds: 60,
        bundles: Vec::new(),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let down: Target = "syslog+tcp://127.0.0.1:1".parse().expect("a target");
    let sink = Sink::new("down", down).expect("a sink");
    let mut shipper = Shipper::new(sink, busy.clone()).expect("the sink's lock");
    let shipping = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut rounds = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let _ = shipper.ship(Instant::now() + Duration::from_secs(1));
                rounds += 1;
                std::thread::sleep(RETRY);
            }
            rounds
        })
    };
    let (median, p99) = time_appends(&busy, appends);
    stop.store(true, Ordering::SeqCst);
    let rounds = shipping.join().expect("the shipper");
    println!(
        "| a configured sink down, its shipper holding it and trying it every {} ms ({rounds} rounds); each append tries the sink's lock | {median:.1} µs | {p99:.1} µs |",
        RETRY.as_millis()
    );
}

/// The median and 99th percentile of `n` appends, in microseconds.
fn time_appends(log: &Log, n: usize) -> (f64, f64) {
    let mut times: Vec<f64> = (0..n)
        .map(|i| {
            let started = Instant::now();
            log.append(&entry(i)).expect("appended");
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    (at(0.5), at(0.99))
}
