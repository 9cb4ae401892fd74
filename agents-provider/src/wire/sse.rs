//! Server-sent events, read incrementally and bounded: [`SseParser`].

use crate::ProviderError;
use crate::limits::ProviderLimit;

/// Whether the reader wants more events.
pub(crate) enum Flow {
    /// Keep reading.
    Continue,
    /// The answer is complete.
    Stop,
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, when present.
    pub(crate) event: Option<String>,
    /// The `data:` lines joined with newlines.
    pub(crate) data: String,
}

/// An incremental parser for `text/event-stream` bodies (any line ending, comments,
/// multi-line data, events split across network chunks). A line, and the data of one event,
/// may not grow beyond `max` bytes; the bytes are kept once (no copy while parsing).
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    after_cr: bool,
    event: Option<String>,
    data: Vec<u8>,
    has_data: bool,
}

impl SseParser {
    /// Feeds bytes; `on_event` gets each event they complete, until it says stop.
    pub(crate) fn push<E: From<ProviderError>>(
        &mut self,
        mut bytes: &[u8],
        max: usize,
        on_event: &mut dyn FnMut(SseEvent) -> Result<Flow, E>,
    ) -> Result<Flow, E> {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        while !bytes.is_empty() {
            match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    check_len(self.line.len().saturating_add(bytes.len()), max)?;
                    self.line.extend_from_slice(bytes);
                    return Ok(Flow::Continue);
                }
                Some(at) => {
                    check_len(self.line.len().saturating_add(at), max)?;
                    self.line.extend_from_slice(&bytes[..at]);
                    let cr = bytes[at] == b'\r';
                    bytes = &bytes[at + 1..];
                    if cr {
                        match bytes.first() {
                            Some(b'\n') => bytes = &bytes[1..],
                            Some(_) => {}
                            None => self.after_cr = true,
                        }
                    }
                    if let Flow::Stop = self.end_line(max, on_event)? {
                        return Ok(Flow::Stop);
                    }
                }
            }
        }
        Ok(Flow::Continue)
    }

    /// Ends the stream: a last event without its blank line is still delivered.
    pub(crate) fn finish<E: From<ProviderError>>(
        &mut self,
        max: usize,
        on_event: &mut dyn FnMut(SseEvent) -> Result<Flow, E>,
    ) -> Result<Flow, E> {
        if !self.line.is_empty()
            && let Flow::Stop = self.end_line(max, on_event)?
        {
            return Ok(Flow::Stop);
        }
        match self.dispatch() {
            Some(event) => on_event(event),
            None => Ok(Flow::Continue),
        }
    }

    fn end_line<E: From<ProviderError>>(
        &mut self,
        max: usize,
        on_event: &mut dyn FnMut(SseEvent) -> Result<Flow, E>,
    ) -> Result<Flow, E> {
        if self.line.is_empty() {
            return match self.dispatch() {
                Some(event) => on_event(event),
                None => Ok(Flow::Continue),
            };
        }
        let line = std::mem::take(&mut self.line);
        if line[0] != b':' {
            let (field, value) = match line.iter().position(|&b| b == b':') {
                Some(at) => {
                    let value = &line[at + 1..];
                    (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
                }
                None => (&line[..], &[][..]),
            };
            match field {
                b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
                b"data" => {
                    let grown = self.data.len().saturating_add(value.len()).saturating_add(usize::from(self.has_data));
                    check_len(grown, max)?;
                    if self.has_data {
                        self.data.push(b'\n');
                    }
                    self.data.extend_from_slice(value);
                    self.has_data = true;
                }
                _ => {}
            }
        }
        // Keep the line's allocation for the next one.
        self.line = line;
        self.line.clear();
        Ok(Flow::Continue)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !std::mem::take(&mut self.has_data) {
            self.data.clear();
            return None;
        }
        let data = std::mem::take(&mut self.data);
        let data = String::from_utf8(data).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        Some(SseEvent { event, data })
    }
}

fn check_len(len: usize, max: usize) -> Result<(), ProviderError> {
    if len > max { Err(ProviderError::LimitExceeded { limit: ProviderLimit::Event, max }) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(parser: &mut SseParser, parts: &[&[u8]], max: usize) -> Result<Vec<SseEvent>, ProviderError> {
        let mut events = Vec::new();
        for part in parts {
            parser.push(part, max, &mut |e| {
                events.push(e);
                Ok::<_, ProviderError>(Flow::Continue)
            })?;
        }
        parser.finish(max, &mut |e| {
            events.push(e);
            Ok::<_, ProviderError>(Flow::Continue)
        })?;
        Ok(events)
    }

    #[test]
    fn sse_parser_handles_split_chunks_crlf_comments_and_multiline_data() {
        let mut p = SseParser::default();
        let events = collect(
            &mut p,
            &[b": keep-alive\r\nevent: one\r\ndata: {\"a\":", b"1}\r", b"\n\r\ndata: x\ndata: y\n\ndata:[DONE]"],
            usize::MAX,
        )
        .unwrap();
        assert_eq!(
            events,
            vec![
                SseEvent { event: Some("one".into()), data: "{\"a\":1}".into() },
                SseEvent { event: None, data: "x\ny".into() },
                SseEvent { event: None, data: "[DONE]".into() },
            ]
        );
    }

    #[test]
    fn sse_parser_ignores_events_without_data() {
        let mut p = SseParser::default();
        assert!(collect(&mut p, &[b"event: ping\n\nretry: 10\n\n"], usize::MAX).unwrap().is_empty());
    }

    #[test]
    fn a_line_or_an_event_beyond_the_limit_is_refused_as_it_grows() {
        let too_long = ProviderError::LimitExceeded { limit: ProviderLimit::Event, max: 8 };
        // One line without its newline.
        assert_eq!(collect(&mut SseParser::default(), &[b"data: 1234", b"56789"], 8), Err(too_long.clone()));
        // Many short data lines of one event (each line is within the limit).
        assert_eq!(collect(&mut SseParser::default(), &[b"data:123\ndata:123\ndata:123\n"], 8), Err(too_long));
        // Exactly the limit is fine.
        let ok = collect(&mut SseParser::default(), &[b"data:123\ndata:123\n\n"], 8).unwrap();
        assert_eq!(ok[0].data, "123\n123");
    }
}
