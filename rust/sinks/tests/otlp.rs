//! Shipping to OpenTelemetry collectors built here from the official
//! protobuf definitions: OTLP/gRPC through opentelemetry-proto's generated
//! `LogsServiceServer`, OTLP/HTTP through a server decoding
//! `ExportLogsServiceRequest` with prost, each over TCP or TLS. Every field
//! arrives as mapped; a collector that is down, slow and flapping gets
//! every line once, in order; one that never answers costs a round its
//! deadline and moves no cursor.

mod support;

use std::convert::Infallible;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use chock_policy::Decision;
use chock_sinks::{Origin, Shipped, Sink, Target, ship};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
    LogsService, LogsServiceServer,
};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use prost::Message;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Notify;
use tonic::codegen::Service;

/// What the collector does with each request.
const UP: u8 = 0;
/// Answers after a while.
const SLOW: u8 = 1;
/// Answers "busy" (HTTP 503, gRPC UNAVAILABLE) or closes the connection
/// unanswered or takes the request, in turn.
const FLAPPING: u8 = 2;
/// Not listening; open connections closed.
const DOWN: u8 = 3;
/// Takes the request and never answers.
const SILENT: u8 = 4;
/// Takes the request and says it rejected its first record.
const REJECTING: u8 = 5;
/// Refuses every request as malformed (HTTP 400, gRPC INVALID_ARGUMENT).
const REFUSING: u8 = 6;

/// How long a slow collector takes to answer.
const SLOW_ANSWER: Duration = Duration::from_millis(60);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Wire {
    Http,
    Grpc,
}

/// A collector on a loopback port, on a thread of its own.
struct Collector {
    port: u16,
    state: Arc<State>,
    server: Option<JoinHandle<()>>,
}

/// What the collector's connections share.
struct State {
    mode: AtomicU8,
    stop: AtomicBool,
    /// Requests taken, in the order they were taken.
    got: Mutex<Vec<ExportLogsServiceRequest>>,
    /// Requests answered "busy", and connections closed unanswered.
    refused: AtomicUsize,
    turn: AtomicUsize,
}

/// What to do with one request.
enum Verdict {
    Take(ExportLogsServiceResponse),
    Busy,
    Refuse,
    Close,
    Hang,
}

impl State {
    fn mode(&self) -> u8 {
        self.mode.load(Ordering::SeqCst)
    }

    /// Decides what becomes of `request`, keeping it when it is taken.
    async fn judge(&self, request: ExportLogsServiceRequest) -> Verdict {
        let mode = self.mode();
        if mode == SLOW {
            tokio::time::sleep(SLOW_ANSWER).await;
        }
        let turn = self.turn.fetch_add(1, Ordering::SeqCst);
        let verdict = match mode {
            SILENT => return Verdict::Hang,
            FLAPPING => match turn % 3 {
                0 => Verdict::Busy,
                1 => Verdict::Close,
                _ => Verdict::Take(ExportLogsServiceResponse::default()),
            },
            DOWN => Verdict::Close,
            REFUSING => Verdict::Refuse,
            REJECTING => Verdict::Take(ExportLogsServiceResponse {
                partial_success: Some(ExportLogsPartialSuccess {
                    rejected_log_records: 1,
                    error_message: "the first record is too old".into(),
                }),
            }),
            _ => Verdict::Take(ExportLogsServiceResponse::default()),
        };
        match verdict {
            Verdict::Take(_) => self.got.lock().unwrap().push(request),
            _ => {
                self.refused.fetch_add(1, Ordering::SeqCst);
            }
        }
        verdict
    }
}

impl Collector {
    fn start(wire: Wire, tls: Option<Arc<rustls::ServerConfig>>) -> Collector {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let state = Arc::new(State {
            mode: AtomicU8::new(UP),
            stop: AtomicBool::new(false),
            got: Mutex::new(Vec::new()),
            refused: AtomicUsize::new(0),
            turn: AtomicUsize::new(0),
        });
        let server = {
            let state = state.clone();
            std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(listen(port, wire, tls, state));
            })
        };
        let listening = support::wait_for(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(listening, "the collector listens on {port}");
        Collector {
            port,
            state,
            server: Some(server),
        }
    }

    fn set(&self, mode: u8) {
        self.state.mode.store(mode, Ordering::SeqCst);
    }

    fn requests(&self) -> Vec<ExportLogsServiceRequest> {
        self.state.got.lock().unwrap().clone()
    }

    /// Each record taken, oldest first.
    fn records(&self) -> Vec<LogRecord> {
        self.requests()
            .into_iter()
            .flat_map(|request| request.resource_logs)
            .flat_map(|resource| resource.scope_logs)
            .flat_map(|scope| scope.log_records)
            .collect()
    }

    /// The lines taken: each record's body.
    fn lines(&self) -> Vec<String> {
        self.records()
            .iter()
            .map(|r| text(r.body.as_ref()))
            .collect()
    }

    fn target(&self, wire: Wire, ca: Option<&Path>) -> Target {
        let place = format!("127.0.0.1:{}", self.port);
        let text = match (wire, ca) {
            (Wire::Http, None) => format!("otlp+http://{place}"),
            (Wire::Grpc, None) => format!("otlp+grpc://{place}"),
            (Wire::Http, Some(ca)) => format!("otlp+https://{place}?ca={}", ca.display()),
            (Wire::Grpc, Some(ca)) => format!("otlp+grpcs://{place}?ca={}", ca.display()),
        };
        text.parse().unwrap()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
    }
}

/// Listens on `port` while the collector is not down, serving each
/// connection on a task of its own.
async fn listen(port: u16, wire: Wire, tls: Option<Arc<rustls::ServerConfig>>, state: Arc<State>) {
    let mut listener: Option<tokio::net::TcpListener> = None;
    let mut connections = Vec::new();
    while !state.stop.load(Ordering::SeqCst) {
        if state.mode() == DOWN {
            listener = None;
        } else if listener.is_none() {
            listener = Some(
                tokio::net::TcpListener::bind(("127.0.0.1", port))
                    .await
                    .unwrap(),
            );
        }
        let Some(bound) = &listener else {
            tokio::time::sleep(Duration::from_millis(2)).await;
            continue;
        };
        if let Ok(Ok((stream, _))) =
            tokio::time::timeout(Duration::from_millis(5), bound.accept()).await
        {
            stream.set_nodelay(true).unwrap();
            let (state, tls) = (state.clone(), tls.clone());
            connections.push(tokio::spawn(async move {
                match tls {
                    None => serve(Box::new(stream), wire, state).await,
                    Some(config) => {
                        let acceptor = tokio_rustls::TlsAcceptor::from(config);
                        if let Ok(stream) = acceptor.accept(stream).await {
                            serve(Box::new(stream), wire, state).await;
                        }
                    }
                }
            }));
        }
    }
    for connection in connections {
        connection.abort();
    }
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Serves one connection until it ends, the collector goes down or stops,
/// or a request's verdict closes it: then it is dropped unanswered.
async fn serve(stream: Box<dyn Io>, wire: Wire, state: Arc<State>) {
    let close = Arc::new(Notify::new());
    let io = TokioIo::new(stream);
    let connection: Pin<Box<dyn Future<Output = ()> + Send>> = match wire {
        Wire::Http => {
            let (state, close) = (state.clone(), close.clone());
            let service = hyper::service::service_fn(move |request| {
                http_export(request, state.clone(), close.clone())
            });
            Box::pin(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            })
        }
        Wire::Grpc => {
            let server = LogsServiceServer::new(Grpc(state.clone()));
            let close = close.clone();
            let service = tower_fn(move |mut request: http::Request<Incoming>| {
                request.extensions_mut().insert(close.clone());
                server.clone().call(request)
            });
            Box::pin(async move {
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(io, TowerToHyperService::new(service))
                    .await;
            })
        }
    };
    let watch = async {
        while !state.stop.load(Ordering::SeqCst) && state.mode() != DOWN {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::select! {
        () = connection => {}
        () = close.notified() => {}
        () = watch => {}
    }
}

/// A tower service calling `call`.
fn tower_fn<F>(call: F) -> tower_fn::TowerFn<F> {
    tower_fn::TowerFn(call)
}

mod tower_fn {
    use std::task::{Context, Poll};

    #[derive(Clone)]
    pub struct TowerFn<F>(pub F);

    impl<F, R, Fut, T, E> tonic::codegen::Service<R> for TowerFn<F>
    where
        F: FnMut(R) -> Fut,
        Fut: std::future::Future<Output = Result<T, E>>,
    {
        type Response = T;
        type Error = E;
        type Future = Fut;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), E>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: R) -> Fut {
            (self.0)(request)
        }
    }
}

/// OTLP/HTTP: a POST of binary protobuf to `/v1/logs`.
async fn http_export(
    request: http::Request<Incoming>,
    state: Arc<State>,
    close: Arc<Notify>,
) -> Result<http::Response<Full<Bytes>>, Infallible> {
    let answer = |status: u16, body: Vec<u8>| {
        Ok(http::Response::builder()
            .status(status)
            .header("content-type", "application/x-protobuf")
            .body(Full::new(Bytes::from(body)))
            .unwrap())
    };
    let protobuf = request
        .headers()
        .get("content-type")
        .is_some_and(|v| v == "application/x-protobuf");
    if request.method() != http::Method::POST || request.uri().path() != "/v1/logs" || !protobuf {
        return answer(400, b"not an OTLP/HTTP protobuf export".to_vec());
    }
    let Ok(body) = request.into_body().collect().await else {
        return answer(400, Vec::new());
    };
    let Ok(export) = ExportLogsServiceRequest::decode(body.to_bytes()) else {
        return answer(400, b"not an ExportLogsServiceRequest".to_vec());
    };
    match state.judge(export).await {
        Verdict::Take(response) => answer(200, response.encode_to_vec()),
        Verdict::Busy => answer(503, b"busy".to_vec()),
        Verdict::Refuse => answer(400, b"bad data".to_vec()),
        Verdict::Close => {
            close.notify_one();
            std::future::pending().await
        }
        Verdict::Hang => std::future::pending().await,
    }
}

/// OTLP/gRPC: `LogsService/Export`.
struct Grpc(Arc<State>);

#[tonic::async_trait]
impl LogsService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportLogsServiceRequest>,
    ) -> Result<tonic::Response<ExportLogsServiceResponse>, tonic::Status> {
        let close = request.extensions().get::<Arc<Notify>>().cloned();
        match self.0.judge(request.into_inner()).await {
            Verdict::Take(response) => Ok(tonic::Response::new(response)),
            Verdict::Busy => Err(tonic::Status::unavailable("busy")),
            Verdict::Refuse => Err(tonic::Status::invalid_argument("bad data")),
            Verdict::Close => {
                if let Some(close) = close {
                    close.notify_one();
                }
                std::future::pending().await
            }
            Verdict::Hang => std::future::pending().await,
        }
    }
}

/// A TLS server config presenting the certificate in `dir` (made by
/// [`support::certificates`]), speaking `wire`'s protocol; and the CA file.
fn tls(dir: &Path, wire: Wire) -> (Arc<rustls::ServerConfig>, std::path::PathBuf) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let (ca, cert, key) = support::certificates(dir);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_file(cert).unwrap()],
            PrivateKeyDer::from_pem_file(key).unwrap(),
        )
        .unwrap();
    config.alpn_protocols = vec![match wire {
        Wire::Http => b"http/1.1".to_vec(),
        Wire::Grpc => b"h2".to_vec(),
    }];
    (Arc::new(config), ca)
}

fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(text)) => text.clone(),
        other => panic!("not a string: {other:?}"),
    }
}

fn attributes(list: &[KeyValue]) -> Vec<(String, String)> {
    list.iter()
        .map(|kv| (kv.key.clone(), text(kv.value.as_ref())))
        .collect()
}

fn nanos(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

/// Ships three decisions (one refused by a policy package) to a collector
/// and checks each request and record field by field.
fn every_field_arrives_as_mapped(wire: Wire, secure: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (config, ca) = if secure {
        let (config, ca) = tls(dir.path(), wire);
        (Some(config), Some(ca))
    } else {
        (None, None)
    };
    let collector = Collector::start(wire, config);
    let log = support::log(&dir.path().join("log"), 8 << 20, 8);
    for entry in [
        support::entry("/src/a \"b\"", "first", Decision::Allow, None),
        support::entry("/src/demo", "second", Decision::Deny, Some("no-net")),
        support::entry("/src/demo", "third", Decision::Ask, None),
    ] {
        log.try_append(&entry).unwrap();
    }
    let sink = Sink::new("otel", collector.target(wire, ca.as_deref())).unwrap();
    let before = SystemTime::now();
    let report = ship(&sink, &log, support::soon()).unwrap();
    let after = SystemTime::now();
    assert_eq!((report.sent, report.left, &report.down), (3, 0, &None));
    assert_eq!(ship(&sink, &log, support::soon()).unwrap().sent, 0);

    let requests = collector.requests();
    assert_eq!(requests.len(), 1, "one request for the batch");
    let [resource_logs] = &requests[0].resource_logs[..] else {
        panic!("one resource: {requests:?}");
    };
    let origin = Origin::here();
    assert_eq!(
        attributes(&resource_logs.resource.as_ref().unwrap().attributes),
        [
            ("service.name".to_owned(), "chock".to_owned()),
            ("host.name".to_owned(), origin.host.clone()),
            ("user.name".to_owned(), origin.user.clone()),
        ]
    );
    let [scope_logs] = &resource_logs.scope_logs[..] else {
        panic!("one scope: {resource_logs:?}");
    };
    assert_eq!(scope_logs.scope.as_ref().unwrap().name, "chock");
    let written = support::lines(&log);
    assert_eq!(scope_logs.log_records.len(), written.len());
    for ((_, line), got) in written.iter().zip(&scope_logs.log_records) {
        let record: chock_log::Record = serde_json::from_str(line).unwrap();
        assert_eq!(text(got.body.as_ref()), *line, "the body is the line");
        let logged = humantime::parse_rfc3339(&record.ts).unwrap();
        assert_eq!(got.time_unix_nano, nanos(logged));
        assert!(
            (nanos(before)..=nanos(after)).contains(&got.observed_time_unix_nano),
            "observed while shipping"
        );
        let (number, name) = match record.entry.decision {
            Decision::Deny => (13, "WARN"),
            _ => (9, "INFO"),
        };
        assert_eq!(
            (got.severity_number, got.severity_text.as_str()),
            (number, name)
        );
        let shipped = Shipped {
            record: &record,
            text: line,
        };
        let expected: Vec<(String, String)> = shipped
            .fields(&origin)
            .into_iter()
            .filter(|(name, _)| !matches!(*name, "host" | "user"))
            .map(|(name, value)| (format!("chock.{name}"), value))
            .collect();
        assert_eq!(attributes(&got.attributes), expected);
    }
    let policies: Vec<_> = scope_logs
        .log_records
        .iter()
        .map(|r| {
            attributes(&r.attributes)
                .into_iter()
                .any(|(k, _)| k == "chock.policy")
        })
        .collect();
    assert_eq!(
        policies,
        [false, true, false],
        "a policy only when one decided"
    );
}

#[test]
fn http_fields_arrive_as_mapped() {
    every_field_arrives_as_mapped(Wire::Http, false);
}

#[test]
fn grpc_fields_arrive_as_mapped() {
    every_field_arrives_as_mapped(Wire::Grpc, false);
}

#[test]
fn https_fields_arrive_as_mapped() {
    every_field_arrives_as_mapped(Wire::Http, true);
}

#[test]
fn grpcs_fields_arrive_as_mapped() {
    every_field_arrives_as_mapped(Wire::Grpc, true);
}

#[test]
fn a_collector_the_ca_did_not_sign_gets_nothing() {
    for wire in [Wire::Http, Wire::Grpc] {
        let dir = tempfile::tempdir().unwrap();
        let (config, _ca) = tls(dir.path(), wire);
        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        let (other_ca, _, _) = support::certificates(&other);
        let collector = Collector::start(wire, Some(config));
        let log = support::log(&dir.path().join("log"), 8 << 20, 8);
        support::fill(&log, "line ", 2);
        let sink = Sink::new("otel", collector.target(wire, Some(&other_ca))).unwrap();
        let report = ship(&sink, &log, support::soon()).unwrap();
        assert_eq!(
            (report.sent, report.left, report.cursor),
            (0, 2, 0),
            "{wire:?}"
        );
        let why = report.down.unwrap();
        assert!(why.contains("certificate"), "{wire:?}: {why}");
        assert!(collector.requests().is_empty());
    }
}

/// 100 writers log while the collector goes up, down, slow and flapping,
/// and two shippers take turns: every line arrives once, in order, in
/// batches.
fn a_flapping_collector_gets_every_line_once_in_order(wire: Wire) {
    let dir = tempfile::tempdir().unwrap();
    let log = support::log(dir.path(), 256 << 10, 1000);
    let collector = Collector::start(wire, None);
    let sink = Sink::new("flapping", collector.target(wire, None)).unwrap();
    let finished = Arc::new(AtomicBool::new(false));
    let shippers: Vec<_> = [Duration::from_millis(400), Duration::from_millis(900)]
        .into_iter()
        .map(|round| support::shipper(sink.clone(), log.clone(), round, finished.clone()))
        .collect();
    let writers = support::writers(&log, 100, 20);
    let mut phases = [UP, DOWN, SLOW, FLAPPING].into_iter().cycle();
    while writers.iter().any(|w| !w.is_finished()) {
        collector.set(phases.next().unwrap());
        std::thread::sleep(Duration::from_millis(250));
    }
    for writer in writers {
        writer.join().unwrap();
    }
    collector.set(UP);
    finished.store(true, Ordering::SeqCst);
    let downs: u64 = shippers.into_iter().map(|s| s.join().unwrap()).sum();
    assert!(downs > 0, "the shippers found the collector down at times");
    assert!(
        collector.state.refused.load(Ordering::SeqCst) > 0,
        "the collector refused requests at times"
    );
    let written: Vec<String> = support::lines(&log)
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    assert_eq!(written.len(), 2000);
    let received = collector.lines();
    let first_difference = received.iter().zip(&written).position(|(r, w)| r != w);
    assert!(
        received == written,
        "every line once, in the log's order: {} received, {} written, first difference at {first_difference:?}",
        received.len(),
        written.len(),
    );
    let requests = collector.requests();
    assert!(
        requests.len() < written.len() / 4,
        "lines go in batches: {} requests",
        requests.len()
    );
}

#[test]
fn a_flapping_http_collector_gets_every_line_once_in_order() {
    a_flapping_collector_gets_every_line_once_in_order(Wire::Http);
}

#[test]
fn a_flapping_grpc_collector_gets_every_line_once_in_order() {
    a_flapping_collector_gets_every_line_once_in_order(Wire::Grpc);
}

/// A collector that takes each request and never answers: the round ends
/// at its deadline and the cursor stays; once it answers, every line goes.
#[test]
fn a_silent_collector_costs_a_round_its_deadline_and_moves_no_cursor() {
    for wire in [Wire::Http, Wire::Grpc] {
        let dir = tempfile::tempdir().unwrap();
        let log = support::log(dir.path(), 64 << 20, 8);
        support::fill(&log, "line ", 1500);
        let collector = Collector::start(wire, None);
        collector.set(SILENT);
        let sink = Sink::new("silent", collector.target(wire, None)).unwrap();
        let deadline = Duration::from_secs(1);
        let started = Instant::now();
        let silent = ship(&sink, &log, started + deadline).unwrap();
        let took = started.elapsed();
        assert!(
            took < deadline + Duration::from_millis(300),
            "{wire:?}: a round took {took:?}"
        );
        assert_eq!(
            (silent.sent, silent.left, silent.cursor),
            (0, 1500, 0),
            "{wire:?}"
        );
        assert!(silent.down.unwrap().contains("deadline"), "{wire:?}");

        collector.set(UP);
        let rest = ship(&sink, &log, support::soon()).unwrap();
        assert_eq!(
            (rest.sent, rest.left, &rest.down),
            (1500, 0, &None),
            "{wire:?}"
        );
        let sizes: Vec<usize> = collector
            .requests()
            .iter()
            .map(|r| r.resource_logs[0].scope_logs[0].log_records.len())
            .collect();
        assert_eq!(
            sizes,
            [512, 512, 476],
            "{wire:?}: batches of at most 512 lines"
        );
    }
}

/// A collector's partial success: the lines are delivered (the cursor
/// moves, nothing is sent again) and the rejection is in the report.
#[test]
fn rejected_records_are_reported_and_not_sent_again() {
    for wire in [Wire::Http, Wire::Grpc] {
        let dir = tempfile::tempdir().unwrap();
        let log = support::log(dir.path(), 64 << 20, 8);
        support::fill(&log, "line ", 3);
        let collector = Collector::start(wire, None);
        collector.set(REJECTING);
        let sink = Sink::new("rejecting", collector.target(wire, None)).unwrap();
        let report = ship(&sink, &log, support::soon()).unwrap();
        assert_eq!(
            (report.sent, report.left, report.cursor),
            (3, 0, 3),
            "{wire:?}"
        );
        assert_eq!(report.rejected, 1, "{wire:?}");
        assert_eq!(
            report.rejection.as_deref(),
            Some("the first record is too old")
        );
        assert_eq!(ship(&sink, &log, support::soon()).unwrap().sent, 0);
        assert_eq!(collector.requests().len(), 1);
    }
}

/// A collector that answers busy, or refuses the request outright: the
/// lines wait, and the report says which, with the status.
#[test]
fn a_busy_or_refusing_collector_keeps_the_lines_waiting() {
    let cases = [
        (
            Wire::Http,
            FLAPPING,
            "busy or unavailable (HTTP 503 Service Unavailable: busy)",
        ),
        (
            Wire::Grpc,
            FLAPPING,
            "busy or unavailable (gRPC Unavailable: busy)",
        ),
        (
            Wire::Http,
            REFUSING,
            "refused the lines (HTTP 400 Bad Request: bad data)",
        ),
        (
            Wire::Grpc,
            REFUSING,
            "refused the lines (gRPC InvalidArgument: bad data)",
        ),
    ];
    for (wire, mode, said) in cases {
        let dir = tempfile::tempdir().unwrap();
        let log = support::log(dir.path(), 64 << 20, 8);
        support::fill(&log, "line ", 3);
        let collector = Collector::start(wire, None);
        collector.set(mode);
        let sink = Sink::new("busy", collector.target(wire, None)).unwrap();
        let report = ship(&sink, &log, support::soon()).unwrap();
        assert_eq!(
            (report.sent, report.left, report.cursor),
            (0, 3, 0),
            "{wire:?}"
        );
        let why = report.down.unwrap();
        assert!(why.contains(said), "{why}");
        assert!(collector.requests().is_empty());
    }
}
