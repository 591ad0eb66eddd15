//! Lines as OpenTelemetry log records (OTLP), and the link that exports
//! them to a collector over OTLP/HTTP (binary protobuf) or OTLP/gRPC.
//!
//! One request carries a batch of lines: the resource names the service
//! (`chock`), the host and the user; each line is one record whose body is
//! the line's text and whose attributes are the decision's fields
//! (`chock.project`, `chock.action`, ...). A refusal is a warning, anything
//! else information. The collector answers each request: only then are its
//! lines delivered.

use std::io;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_rustls::{FixedServerNameResolver, HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connect, HttpConnector};
use hyper_util::rt::TokioExecutor;
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_client::LogsServiceClient;
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs, SeverityNumber};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;
use rustls::pki_types::ServerName;
use tonic::body::Body;

use crate::fields::{Origin, Shipped};
use crate::transport::{remaining, tls_config};
use crate::{Otlp, OtlpProtocol};

/// At most this many lines go in one request.
pub const BATCH_LINES: usize = 512;
/// A request's lines hold at most this many bytes (one longer line goes alone).
pub const BATCH_BYTES: usize = 1 << 20;

/// The service, and the instrumentation scope, the records come from.
const SERVICE: &str = "chock";

/// An answer's body is read up to this many bytes.
const ANSWER_BYTES: usize = 64 << 10;

/// What a collector said about a batch it took.
#[derive(Debug, Default)]
pub struct Acked {
    /// Records it took but will not keep (OTLP's partial success).
    pub rejected: u64,
    /// Why it rejected them, as it said.
    pub why: Option<String>,
}

/// The request carrying `lines`, observed at `now`.
pub fn request(
    lines: &[Shipped<'_>],
    origin: &Origin,
    now: SystemTime,
) -> ExportLogsServiceRequest {
    let resource = Resource {
        attributes: vec![
            attribute("service.name", SERVICE),
            attribute("host.name", &origin.host),
            attribute("user.name", &origin.user),
        ],
        ..Resource::default()
    };
    let observed = unix_nanos(now);
    let scope = ScopeLogs {
        scope: Some(InstrumentationScope {
            name: SERVICE.into(),
            ..InstrumentationScope::default()
        }),
        log_records: lines
            .iter()
            .map(|line| record(line, origin, observed))
            .collect(),
        ..ScopeLogs::default()
    };
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(resource),
            scope_logs: vec![scope],
            ..ResourceLogs::default()
        }],
    }
}

/// One line's record: its text as the body, the decision's fields as
/// `chock.*` attributes (the host and user are the resource's).
fn record(line: &Shipped<'_>, origin: &Origin, observed: u64) -> LogRecord {
    let severity = if line.is_refusal() {
        SeverityNumber::Warn
    } else {
        SeverityNumber::Info
    };
    let attributes = line
        .fields(origin)
        .into_iter()
        .filter(|(name, _)| !matches!(*name, "host" | "user"))
        .map(|(name, value)| attribute(&format!("chock.{name}"), &value))
        .collect();
    LogRecord {
        time_unix_nano: humantime::parse_rfc3339(&line.record.ts).map_or(0, unix_nanos),
        observed_time_unix_nano: observed,
        severity_number: severity as i32,
        severity_text: if line.is_refusal() { "WARN" } else { "INFO" }.into(),
        body: Some(string(line.text)),
        attributes,
        ..LogRecord::default()
    }
}

fn attribute(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(string(value)),
        ..KeyValue::default()
    }
}

fn string(value: &str) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::StringValue(value.into())),
    }
}

/// Nanoseconds since the Unix epoch; 0 (OTLP's "unknown") before it.
fn unix_nanos(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    })
}

/// An open way to a collector: a client on a current-thread runtime of
/// its own, keeping its connection from batch to batch.
pub struct Exporter {
    runtime: Runtime,
    client: Clients,
    to: Endpoint,
}

/// The client, over TCP or TLS.
enum Clients {
    Plain(Client<HttpConnector, Body>),
    Tls(Client<HttpsConnector<HttpConnector>, Body>),
}

/// Where requests go.
enum Endpoint {
    /// OTLP/HTTP: the URL posted to.
    Http(http::Uri),
    /// OTLP/gRPC: the server's origin (`http://HOST:PORT`).
    Grpc(http::Uri),
}

impl Exporter {
    /// Makes the client for `otlp`; it connects with the first batch.
    pub fn open(otlp: &Otlp) -> io::Result<Exporter> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let grpc = matches!(otlp.protocol, OtlpProtocol::Grpc);
        let mut builder = Client::builder(TokioExecutor::new());
        builder.http2_only(grpc);
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.enforce_http(otlp.tls.is_none());
        let client = match &otlp.tls {
            None => Clients::Plain(builder.build(http)),
            Some(tls) => {
                let name = ServerName::try_from(tls.name.clone())
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                let https = HttpsConnectorBuilder::new()
                    .with_tls_config(tls_config(&tls.ca)?.as_ref().clone())
                    .https_only()
                    .with_server_name_resolver(FixedServerNameResolver::new(name));
                let https = if grpc {
                    https.enable_http2().wrap_connector(http)
                } else {
                    https.enable_http1().wrap_connector(http)
                };
                Clients::Tls(builder.build(https))
            }
        };
        Ok(Exporter {
            runtime: Runtime(Some(runtime)),
            client,
            to: endpoint(otlp)?,
        })
    }

    /// Exports `lines` in one request and waits for the answer, at most
    /// until `deadline`; `Ok` only when the collector took them.
    pub fn export(
        &mut self,
        lines: &[Shipped<'_>],
        origin: &Origin,
        deadline: Instant,
    ) -> io::Result<Acked> {
        let request = request(lines, origin, SystemTime::now());
        let left = remaining(deadline)?;
        let answer = async {
            match &self.client {
                Clients::Plain(client) => send(client.clone(), &self.to, request, left).await,
                Clients::Tls(client) => send(client.clone(), &self.to, request, left).await,
            }
        };
        let runtime = self.runtime.0.as_ref().ok_or(io::ErrorKind::NotConnected)?;
        // The timer is made inside the runtime, which drives it.
        let answer = runtime
            .block_on(async { tokio::time::timeout_at(deadline.into(), answer).await })
            .map_err(|_| {
                io::Error::new(io::ErrorKind::TimedOut, "no answer before the deadline")
            })??;
        Ok(acked(answer))
    }
}

/// The URL of `otlp`'s requests.
fn endpoint(otlp: &Otlp) -> io::Result<Endpoint> {
    let scheme = if otlp.tls.is_some() { "https" } else { "http" };
    let host = if otlp.host.contains(':') {
        format!("[{}]", otlp.host.replace('%', "%25"))
    } else {
        otlp.host.clone()
    };
    let origin = format!("{scheme}://{host}:{}", otlp.port);
    let uri = |text: String| {
        text.parse::<http::Uri>()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
    };
    Ok(match &otlp.protocol {
        OtlpProtocol::Http { path } => Endpoint::Http(uri(format!("{origin}{path}"))?),
        OtlpProtocol::Grpc => Endpoint::Grpc(uri(origin)?),
    })
}

/// Sends one request and reads the answer: the collector's response when
/// it took the batch, else why not.
async fn send<C>(
    client: Client<C, Body>,
    to: &Endpoint,
    request: ExportLogsServiceRequest,
    left: std::time::Duration,
) -> io::Result<ExportLogsServiceResponse>
where
    C: Connect + Clone + Send + Sync + 'static,
{
    match to {
        Endpoint::Http(url) => post(client, url, request).await,
        Endpoint::Grpc(origin) => {
            let mut request = tonic::Request::new(request);
            request.set_timeout(left);
            LogsServiceClient::with_origin(client, origin.clone())
                .export(request)
                .await
                .map(tonic::Response::into_inner)
                .map_err(grpc_refusal)
        }
    }
}

/// OTLP/HTTP: the request POSTed as binary protobuf; a 2xx answer's body
/// is the response (an empty one is a full success).
async fn post<C>(
    client: Client<C, Body>,
    url: &http::Uri,
    request: ExportLogsServiceRequest,
) -> io::Result<ExportLogsServiceResponse>
where
    C: Connect + Clone + Send + Sync + 'static,
{
    let body = Body::new(Full::new(Bytes::from(request.encode_to_vec())));
    let post = http::Request::post(url.clone())
        .header(http::header::CONTENT_TYPE, "application/x-protobuf")
        .body(body)
        .map_err(io::Error::other)?;
    let answer = client.request(post).await.map_err(|e| unreached(&e))?;
    let status = answer.status();
    let body = Limited::new(answer.into_body(), ANSWER_BYTES)
        .collect()
        .await
        .map(|body| body.to_bytes());
    if status.is_success() {
        // The collector took the lines; an answer it garbled or cut short
        // does not undo that.
        let response = body.ok().map(ExportLogsServiceResponse::decode);
        Ok(response.and_then(Result::ok).unwrap_or_default())
    } else {
        Err(http_refusal(status, &body.unwrap_or_default()))
    }
}

/// A collector busy or unavailable is down for now; any other status is a
/// refusal, said as such, and the lines wait all the same.
fn http_refusal(status: http::StatusCode, body: &[u8]) -> io::Error {
    use http::StatusCode as S;
    let busy = matches!(
        status,
        S::TOO_MANY_REQUESTS | S::BAD_GATEWAY | S::SERVICE_UNAVAILABLE | S::GATEWAY_TIMEOUT
    );
    let said: String = String::from_utf8_lossy(body).chars().take(200).collect();
    refusal(busy, &format!("HTTP {status}"), said.trim())
}

/// A gRPC error status, or the connection's failure.
fn grpc_refusal(status: tonic::Status) -> io::Error {
    if let Some(failure) = std::error::Error::source(&status) {
        return unreached(failure);
    }
    let busy = matches!(
        status.code(),
        tonic::Code::Unavailable | tonic::Code::ResourceExhausted
    );
    let said: String = status.message().chars().take(200).collect();
    refusal(busy, &format!("gRPC {:?}", status.code()), &said)
}

fn refusal(busy: bool, status: &str, said: &str) -> io::Error {
    let what = if busy {
        "the collector is busy or unavailable"
    } else {
        "the collector refused the lines"
    };
    let said = if said.is_empty() {
        String::new()
    } else {
        format!(": {said}")
    };
    io::Error::other(format!("{what} ({status}{said})"))
}

/// The collector could not be reached or the answer read: the error and
/// its causes (a connection refused, a certificate not trusted).
fn unreached(error: &(dyn std::error::Error + 'static)) -> io::Error {
    let mut why = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        why.push_str(&format!(": {next}"));
        cause = next.source();
    }
    io::Error::other(why)
}

/// What a success said: how many records the collector rejected, and why.
fn acked(answer: ExportLogsServiceResponse) -> Acked {
    let Some(partial) = answer.partial_success else {
        return Acked::default();
    };
    let rejected = u64::try_from(partial.rejected_log_records).unwrap_or(0);
    let why = (rejected > 0 || !partial.error_message.is_empty())
        .then(|| partial.error_message.chars().take(200).collect());
    Acked { rejected, why }
}

/// The runtime, shut down without waiting for a name lookup still running
/// on its blocking pool.
struct Runtime(Option<tokio::runtime::Runtime>);

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_status_waits_and_any_other_is_a_refusal_that_says_its_status() {
        for code in [429, 502, 503, 504] {
            let status = http::StatusCode::from_u16(code).unwrap();
            let why = http_refusal(status, b"").to_string();
            assert!(
                why.starts_with("the collector is busy or unavailable (HTTP "),
                "{why}"
            );
        }
        for code in [301, 400, 401, 404, 413, 500] {
            let status = http::StatusCode::from_u16(code).unwrap();
            let why = http_refusal(status, b" no \n").to_string();
            assert_eq!(
                why,
                format!("the collector refused the lines (HTTP {status}: no)")
            );
        }
        let why = grpc_refusal(tonic::Status::resource_exhausted("full")).to_string();
        assert_eq!(
            why,
            "the collector is busy or unavailable (gRPC ResourceExhausted: full)"
        );
    }

    #[test]
    fn a_partial_success_counts_its_rejections() {
        use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsPartialSuccess;
        let answer = |rejected_log_records, error_message: &str| ExportLogsServiceResponse {
            partial_success: Some(ExportLogsPartialSuccess {
                rejected_log_records,
                error_message: error_message.into(),
            }),
        };
        let full = acked(ExportLogsServiceResponse::default());
        assert_eq!((full.rejected, full.why), (0, None));
        let partial = acked(answer(2, "too old"));
        assert_eq!(
            (partial.rejected, partial.why.as_deref()),
            (2, Some("too old"))
        );
        let warned = acked(answer(0, "slow down"));
        assert_eq!(
            (warned.rejected, warned.why.as_deref()),
            (0, Some("slow down"))
        );
        assert_eq!(acked(answer(-1, "")).rejected, 0);
    }
}
