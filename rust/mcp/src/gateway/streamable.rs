//! Streamable HTTP to a url server, each answer's failure kept to its own
//! request. rmcp's client ends an answer's event stream at an event over
//! the bound, or refuses a JSON answer over it, and the request then reads
//! as if the whole connection had closed: the gateway would take the
//! server for gone. Here that request is answered with an error in the
//! server's place instead, as a command server's oversized line is, and
//! the connection and the server are kept. An answer whose events carry
//! ids is left to rmcp when it breaks off, so it can be resumed.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse};

type Failed = StreamableHttpError<reqwest::Error>;
type Events = BoxStream<'static, Result<Sse, SseError>>;

/// rmcp's reqwest client, answering in the server's place a request whose
/// answer broke off or was over the bound.
#[derive(Clone)]
pub struct Answered(pub reqwest::Client);

impl StreamableHttpClient for Answered {
    type Error = reqwest::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, Failed>> + Send + '_ {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
    }

    fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, Failed>> + Send + '_ {
        let id = match &message {
            JsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        async move {
            let answer = self
                .0
                .post_message_with_response_limits(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    limits,
                )
                .await;
            let Some(id) = id else { return answer };
            match answer {
                Ok(StreamableHttpPostResponse::Sse(events, session)) => Ok(
                    StreamableHttpPostResponse::Sse(answered(events, id, limits), session),
                ),
                Err(StreamableHttpError::ResponseBodyTooLarge { max_size }) => {
                    let error = refusal(
                        &id,
                        format!(
                            "its answer was over its bound of {} MiB (`.max_answer_mib` in chock.zon), so it was dropped unread",
                            max_size >> 20
                        ),
                    );
                    serde_json::from_value(error)
                        .map(|error| StreamableHttpPostResponse::Json(error, None))
                        .map_err(Failed::Deserialize)
                }
                other => other,
            }
        }
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), Failed>> + Send + '_ {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<Events, Failed>> + Send + '_ {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Result<Events, Failed>> + Send + '_ {
        self.0.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
    }
}

/// The JSON-RPC error that answers request `id` in the server's place.
fn refusal(id: &RequestId, message: String) -> serde_json::Value {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": super::lines::OVERSIZED_CODE, "message": message },
    })
}

/// The events of request `id`'s answer; where they break off (an event
/// over the bound, or a stream that failed) the request is answered with
/// an error, and the stream ends there. A stream whose events carried ids
/// is left to rmcp, which resumes it from the last one where it can.
fn answered(events: Events, id: RequestId, limits: StreamableHttpResponseLimits) -> Events {
    let max = limits.max_sse_event_size;
    events
        .scan((false, false), move |(ended, resumable), event| {
            if *ended {
                return std::future::ready(None);
            }
            let event = match event {
                Ok(event) => {
                    *resumable |= event.id.is_some();
                    Ok(event)
                }
                Err(e) if *resumable => Err(e),
                Err(e) => {
                    *ended = true;
                    let error = refusal(
                        &id,
                        format!(
                            "its answer broke off before it was whole ({e}); an answer over its bound of {} MiB (`.max_answer_mib` in chock.zon) is broken off so",
                            max >> 20
                        ),
                    );
                    Ok(Sse {
                        event: Some("message".to_owned()),
                        data: Some(error.to_string()),
                        id: None,
                        retry: None,
                    })
                }
            };
            std::future::ready(Some(event))
        })
        .boxed()
}
