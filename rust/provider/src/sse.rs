//! Server-sent events, read strictly: every line is empty (the end of an
//! event), a comment (`:`), or one of the fields `data`, `event`, `id` and
//! `retry`; anything else, bytes that are not UTF-8, or a line or event
//! longer than [`MAX_EVENT_BYTES`] ends the stream as malformed. The
//! parser is fed the body as it arrives, in pieces cut anywhere.

/// The longest line, and the most data one event may gather.
pub const MAX_EVENT_BYTES: usize = 4 << 20;

/// One event: its `event:` name, if any, and its `data:` lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

/// Why a stream is malformed, with the line it was found on (from 1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line} of the event stream: {why}")]
pub struct SseError {
    pub line: u64,
    pub why: String,
}

/// An event stream read as it arrives.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    /// How far `buf` has been searched for a newline.
    scanned: usize,
    event: Option<String>,
    data: String,
    has_data: bool,
    line: u64,
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Reads `bytes`, appending each event they complete to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        self.buf.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(at) = self
            .buf
            .get(self.scanned..)
            .and_then(|rest| rest.iter().position(|&b| b == b'\n'))
            .map(|i| i + self.scanned)
        {
            let line = self.buf.get(start..at).unwrap_or_default();
            let line = line.strip_suffix(b"\r").unwrap_or(line).to_vec();
            self.line += 1;
            self.line_done(&line, out)?;
            start = at + 1;
            self.scanned = start;
        }
        self.buf.drain(..start);
        self.scanned = self.buf.len();
        if self.buf.len() > MAX_EVENT_BYTES {
            return Err(self.malformed(format!("a line longer than {MAX_EVENT_BYTES} bytes")));
        }
        Ok(())
    }

    /// The end of the body: an unfinished line or event is malformed (a
    /// stream cut short must not pass for a whole one).
    pub fn finish(&mut self) -> Result<(), SseError> {
        if !self.buf.is_empty() {
            self.line += 1;
            return Err(self.malformed("the stream ended inside a line".into()));
        }
        if self.has_data || self.event.is_some() {
            return Err(self.malformed("the stream ended inside an event".into()));
        }
        Ok(())
    }

    fn malformed(&self, why: String) -> SseError {
        SseError {
            line: self.line,
            why,
        }
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: self.event.take(),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.event = None;
            self.has_data = false;
            return Ok(());
        }
        if line.first() == Some(&b':') {
            return Ok(());
        }
        let line = std::str::from_utf8(line)
            .map_err(|_| self.malformed("bytes that are not UTF-8".into()))?;
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.data.len() + value.len() + 1 > MAX_EVENT_BYTES {
                    return Err(
                        self.malformed(format!("an event longer than {MAX_EVENT_BYTES} bytes"))
                    );
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            "id" | "retry" => {}
            _ => {
                let shown: String = line.chars().take(60).collect();
                return Err(self.malformed(format!(
                    "`{shown}` is not an event-stream field (data, event, id, retry) or a comment"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(pieces: &[&[u8]]) -> Result<Vec<SseEvent>, SseError> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for piece in pieces {
            parser.feed(piece, &mut out)?;
        }
        parser.finish()?;
        Ok(out)
    }

    #[test]
    fn events_are_read_across_any_cut() {
        let body = b"event: a\ndata: {\"x\":1}\n\n: ping\r\ndata:two\r\ndata: lines\r\n\r\nid: 3\nretry: 10\n\n";
        let whole = events(&[body]).expect("reads");
        assert_eq!(
            whole,
            vec![
                SseEvent {
                    event: Some("a".into()),
                    data: "{\"x\":1}".into()
                },
                SseEvent {
                    event: None,
                    data: "two\nlines".into()
                },
            ]
        );
        for cut in 0..body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(events(&[a, b]).as_ref(), Ok(&whole), "cut at {cut}");
        }
    }

    #[test]
    fn a_strange_line_or_a_cut_stream_is_malformed() {
        let err = events(&[b"data: 1\n\nHTTP/1.1 200 OK\n"]).expect_err("malformed");
        assert_eq!(err.line, 3);
        assert!(
            err.to_string().contains("not an event-stream field"),
            "{err}"
        );
        assert!(events(&[b"data: 1\n"]).is_err(), "ended inside an event");
        assert!(events(&[b"data: 1"]).is_err(), "ended inside a line");
        assert!(events(&[b"data: \xff\n\n"]).is_err(), "not UTF-8");
    }

    #[test]
    fn a_line_past_the_bound_is_refused_before_it_is_whole() {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        let chunk = vec![b'x'; 1 << 20];
        let mut refused = false;
        for _ in 0..8 {
            if parser.feed(&chunk, &mut out).is_err() {
                refused = true;
                break;
            }
        }
        assert!(refused);
    }
}
