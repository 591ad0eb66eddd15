//! `chock witness serve` and `chock witness key`: a C2SP tlog-witness over
//! HTTP/1.1, and the client side `chock log checkpoint --witness` speaks.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use chock_tlog::witness::{MAX_REQUEST_BYTES, SIZE_CONTENT_TYPE};
use chock_tlog::{
    AddCheckpoint, Answer, KeyKind, Note, NoteSignature, SignerKey, Tree, VerifierKey, Witness,
};
use clap::Args;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};

use crate::exit;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on, `HOST:PORT` (port 0: any free one, printed at the start).
    #[arg(long, value_name = "ADDR")]
    listen: SocketAddr,
    /// The witness's private key file (made by `chock witness key`).
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    /// The folder the witness keeps what it last cosigned for each log in.
    #[arg(long, value_name = "DIR")]
    state: PathBuf,
    /// A log's verifier key (as `chock log checkpoint` printed it; its name is the log's origin); repeatable.
    #[arg(long = "log", value_name = "VERIFIER_KEY", required = true, value_parser = VerifierKey::parse)]
    logs: Vec<VerifierKey>,
    /// How long a request may take to arrive, headers and body, before it is cut off.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    timeout: Duration,
}

#[derive(Debug, Args)]
pub struct KeyArgs {
    /// The private key file to make (0600, never replacing one); an existing one's verifier key is printed.
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    /// The witness's name, as its cosignatures carry it (a domain-like name with no space or `+`).
    #[arg(long, value_name = "NAME")]
    name: String,
}

/// The most requests served at once; more wait to be accepted.
const MAX_CONNECTIONS: usize = 64;

pub fn key(args: &KeyArgs) -> anyhow::Result<ExitCode> {
    if let Some(existing) = super::checkpoint::read_key(&args.key)? {
        eprintln!(
            "chock witness key: {} exists; its verifier key:",
            args.key.display()
        );
        outln!("{}", existing.verifier());
        return Ok(exit::SUCCESS.into());
    }
    let key = SignerKey::generate(&args.name, KeyKind::Cosignature)?;
    chock_tlog::files::create_private(&args.key, format!("{}\n", key.encode()).as_bytes())
        .with_context(|| format!("writing {}", args.key.display()))?;
    outln!("{}", key.verifier());
    Ok(exit::SUCCESS.into())
}

pub fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let key = super::checkpoint::read_key(&args.key)?.with_context(|| {
        format!(
            "no key {} (`chock witness key` makes one)",
            args.key.display()
        )
    })?;
    let witness = Arc::new(Witness::new(key, args.logs, &args.state)?);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(listen(witness, args.listen, args.timeout))?;
    Ok(exit::SUCCESS.into())
}

async fn listen(witness: Arc<Witness>, addr: SocketAddr, timeout: Duration) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))?;
    let bound = listener.local_addr()?;
    outln!(
        "witness {} at http://{bound}/add-checkpoint",
        witness.verifier()
    );
    std::io::Write::flush(&mut crate::out::stdout())?;
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let slot = Arc::clone(&slots).acquire_owned().await?;
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::debug!("accept: {e}");
                continue;
            }
        };
        let witness = Arc::clone(&witness);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                answer(Arc::clone(&witness), request, timeout)
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(timeout)
                .keep_alive(false)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            // Reading, answering and writing together: twice the request's time.
            let _ = tokio::time::timeout(timeout * 2, connection).await;
            drop(slot);
        });
    }
}

async fn answer(
    witness: Arc<Witness>,
    request: Request<Incoming>,
    timeout: Duration,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if request.uri().path() != "/add-checkpoint" {
        return Ok(plain(
            StatusCode::NOT_FOUND,
            "only POST /add-checkpoint is served here\n",
        ));
    }
    if request.method() != Method::POST {
        return Ok(plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "add-checkpoint is a POST\n",
        ));
    }
    let declared = request
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_REQUEST_BYTES as u64) {
        return Ok(too_large());
    }
    let body = Limited::new(request.into_body(), MAX_REQUEST_BYTES).collect();
    let body = match tokio::time::timeout(timeout, body).await {
        Err(_) => {
            return Ok(plain(
                StatusCode::REQUEST_TIMEOUT,
                "the body took too long\n",
            ));
        }
        Ok(Err(_)) => return Ok(too_large()),
        Ok(Ok(body)) => body.to_bytes(),
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let answered = tokio::task::spawn_blocking(move || witness.add_checkpoint(&body, now)).await;
    Ok(match answered {
        Ok(answer) => response(answer),
        Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "the witness failed\n"),
    })
}

fn too_large() -> Response<Full<Bytes>> {
    plain(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("a request is at most {MAX_REQUEST_BYTES} bytes\n"),
    )
}

fn plain(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    response(Answer {
        status: status.as_u16(),
        content_type: "text/plain; charset=utf-8",
        body: text.as_bytes().to_vec(),
    })
}

fn response(answer: Answer) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(answer.body)));
    *response.status_mut() =
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(answer.content_type),
    );
    response
}

/// How long `chock log checkpoint` waits for a witness to connect and to answer.
const CONNECT_WITHIN: Duration = Duration::from_secs(10);
const ANSWER_WITHIN: Duration = Duration::from_secs(30);
/// The most bytes of a witness's answer read: cosignature lines are short.
const MAX_ANSWER_BYTES: usize = 64 << 10;

/// Sends `note` (a checkpoint of `tree`) to the witness at `url` with the
/// consistency proof from `guess`, the size it is thought to have; a 409
/// tells its size, and the request is made once more from there. The
/// witness's cosignature lines, or why it refused.
pub fn add_checkpoint(
    url: &str,
    tree: &Tree,
    note: &Note,
    guess: u64,
) -> anyhow::Result<Vec<NoteSignature>> {
    let endpoint = format!("{}/add-checkpoint", url.trim_end_matches('/'));
    let size = tree.size();
    let mut old = guess.min(size);
    for _ in 0..2 {
        let request = AddCheckpoint {
            old,
            proof: tree.consistency_proof(old, size)?,
            note: note.to_string().into_bytes(),
        };
        let (status, content_type, body) = post(&endpoint, request.body())?;
        match status {
            200 => return cosignatures(url, &body),
            409 => {
                let theirs = conflict_size(&content_type, &body)
                    .with_context(|| format!("the witness {url} answered 409 without its size"))?;
                if theirs > size {
                    anyhow::bail!(
                        "the witness {url} refuses: it cosigned a tree of {theirs} lines and the log has {size}: the log was rewritten to fewer lines"
                    );
                }
                if theirs == old {
                    anyhow::bail!(
                        "the witness {url} refuses: the tree of {old} lines it cosigned has another root than the log's first {old} lines: the log was rewritten"
                    );
                }
                old = theirs;
            }
            _ => anyhow::bail!("{}", refusal(url, status, old, &body)),
        }
    }
    anyhow::bail!("the witness {url} moved on twice while it was asked; try again")
}

fn refusal(url: &str, status: u16, old: u64, body: &str) -> String {
    let why = match status {
        422 => format!(
            "the log's tree is not consistent with the tree of {old} lines it cosigned: the log was rewritten"
        ),
        403 => "no signature by a log key it trusts verifies (is this log's verifier key among its --log keys?)".to_owned(),
        404 => "it does not know this log's origin (give it the log's verifier key with --log)".to_owned(),
        400 => "it could not read the request".to_owned(),
        413 => "the request is too large for it".to_owned(),
        _ => "it answered with an error".to_owned(),
    };
    format!(
        "the witness {url} refuses ({status}): {why}; it said: {}",
        body.trim()
    )
}

/// The size in a 409's `text/x.tlog.size` body.
fn conflict_size(content_type: &str, body: &str) -> Option<u64> {
    if !content_type.starts_with(SIZE_CONTENT_TYPE) {
        return None;
    }
    body.strip_suffix('\n').unwrap_or(body).parse().ok()
}

/// The signature lines of a 200's body, each `— <name> <base64>`.
fn cosignatures(url: &str, body: &str) -> anyhow::Result<Vec<NoteSignature>> {
    let lines: Vec<NoteSignature> = body
        .lines()
        .filter(|line| !line.is_empty())
        .map(NoteSignature::parse)
        .collect::<Result<_, _>>()
        .with_context(|| format!("the witness {url} answered 200 with no cosignature line"))?;
    if lines.is_empty() {
        anyhow::bail!("the witness {url} answered 200 with no cosignature line");
    }
    Ok(lines)
}

/// POSTs `body` and returns the status, the content type and the body's text.
fn post(endpoint: &str, body: Vec<u8>) -> anyhow::Result<(u16, String, String)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let client = chock_provider::http::client_builder(CONNECT_WITHIN)
            .timeout(ANSWER_WITHIN)
            .build()?;
        let mut response = client
            .post(endpoint)
            .header("content-type", "text/plain; charset=utf-8")
            .body(body)
            .send()
            .await
            .with_context(|| format!("sending the checkpoint to {endpoint}"))?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            bytes.extend_from_slice(&chunk);
            if bytes.len() > MAX_ANSWER_BYTES {
                anyhow::bail!("{endpoint} answered with over {MAX_ANSWER_BYTES} bytes");
            }
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Ok((status, content_type, text))
    })
}
