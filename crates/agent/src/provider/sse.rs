//! An incremental parser for server-sent event streams, as the WHATWG HTML standard defines
//! them (§9.2 "Server-sent events"): lines end in CRLF, LF or CR; `:` starts a comment; `data`
//! lines of one event are joined with `\n`; a blank line dispatches the event; an event cut
//! off by the end of the stream is discarded.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, or `message` when the event named none.
    pub(crate) event: String,
    /// The `data:` lines joined with `\n`.
    pub(crate) data: String,
}

/// Turns bytes, in chunks of any size, into events.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    /// Bytes of a line not yet ended.
    pending: Vec<u8>,
    /// The previous chunk ended in `\r`: a `\n` at the start of the next one belongs to it.
    after_cr: bool,
    /// Whether the byte-order mark at the start of the stream has been dealt with.
    started: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub(crate) fn new() -> SseParser {
        SseParser::default()
    }

    /// Feeds the next bytes of the stream and returns the events they complete.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &b in bytes {
            if self.after_cr && b == b'\n' {
                // The `\n` of a CRLF pair whose `\r` already ended the line.
                self.after_cr = false;
                continue;
            }
            self.after_cr = b == b'\r';
            if b == b'\r' || b == b'\n' {
                let line = std::mem::take(&mut self.pending);
                self.line(&line, &mut events);
            } else {
                self.pending.push(b);
            }
        }
        events
    }

    fn line(&mut self, line: &[u8], events: &mut Vec<SseEvent>) {
        let mut line = String::from_utf8_lossy(line).into_owned();
        if !self.started {
            self.started = true;
            if let Some(rest) = line.strip_prefix('\u{feff}') {
                line = rest.to_owned();
            }
        }
        if line.is_empty() {
            if self.has_data {
                events.push(SseEvent {
                    event: if self.event.is_empty() {
                        "message".to_owned()
                    } else {
                        std::mem::take(&mut self.event)
                    },
                    data: std::mem::take(&mut self.data),
                });
            }
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // `id` and `retry` steer browser reconnection, which a model call never does.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.to_owned(),
            data: data.to_owned(),
        }
    }

    fn parse_in_chunks(input: &[u8], size: usize) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        input.chunks(size).flat_map(|c| parser.feed(c)).collect()
    }

    #[test]
    fn data_lines_are_joined_and_a_blank_line_dispatches() {
        let input = b"data: first\ndata: second\n\ndata:third\n\n";
        let want = vec![ev("message", "first\nsecond"), ev("message", "third")];
        for size in 1..input.len() {
            assert_eq!(parse_in_chunks(input, size), want, "chunk size {size}");
        }
    }

    #[test]
    fn comments_ids_and_unknown_fields_are_ignored() {
        let input = b": keep-alive\nid: 7\nretry: 100\nfoo: bar\ndata: x\n\n:\n\n";
        assert_eq!(parse_in_chunks(input, 64), vec![ev("message", "x")]);
    }

    #[test]
    fn crlf_and_lone_cr_end_lines_even_across_chunks() {
        let input = b"event: ping\r\ndata: {}\r\n\r\nevent: a\rdata: b\r\rdata: c\r\n\r\n";
        let want = vec![ev("ping", "{}"), ev("a", "b"), ev("message", "c")];
        for size in 1..input.len() {
            assert_eq!(parse_in_chunks(input, size), want, "chunk size {size}");
        }
    }

    #[test]
    fn event_names_reset_after_each_dispatch() {
        let input = b"event: message_start\ndata: 1\n\ndata: 2\n\n";
        assert_eq!(
            parse_in_chunks(input, 5),
            vec![ev("message_start", "1"), ev("message", "2")]
        );
    }

    #[test]
    fn an_event_without_data_is_not_dispatched() {
        let input = b"event: lonely\n\ndata: y\n\n";
        assert_eq!(parse_in_chunks(input, 3), vec![ev("message", "y")]);
    }

    #[test]
    fn an_event_cut_off_by_the_end_of_the_stream_is_discarded() {
        let mut parser = SseParser::new();
        assert_eq!(
            parser.feed(b"data: done\n\ndata: {\"half"),
            vec![ev("message", "done")]
        );
        assert_eq!(parser.feed(b""), vec![]);
    }

    #[test]
    fn utf8_split_across_chunks_survives_and_a_bom_is_dropped() {
        let input = "\u{feff}data: héllo wörld 🦀\n\n".as_bytes();
        for size in 1..6 {
            assert_eq!(
                parse_in_chunks(input, size),
                vec![ev("message", "héllo wörld 🦀")]
            );
        }
    }

    #[test]
    fn only_one_leading_space_is_stripped_and_a_field_without_colon_is_empty() {
        let input = b"data:  two spaces\ndata\n\n";
        assert_eq!(
            parse_in_chunks(input, 4),
            vec![ev("message", " two spaces\n")]
        );
    }
}
