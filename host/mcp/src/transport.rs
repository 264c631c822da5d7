//! The stdio transport: newline-delimited JSON-RPC, as rmcp's own
//! `AsyncRwTransport` speaks it, except that a `tools/call` request is
//! parsed straight into its type.
//!
//! rmcp parses every incoming message as one untagged enum: a `tools/call`
//! is tried as each of the thirteen request kinds listed before it, each
//! attempt failing with a formatted error, 3.7-4.8 µs per call on the
//! README's VM where the typed parse takes 1.1 µs. Here a line is first
//! tried as a `tools/call` request; anything else (or a line that is not
//! quite one) goes through rmcp's own codec, so every other message, and
//! every malformed one, is read exactly as rmcp reads it (a 2025-11-25
//! `task` field, which rmcp's types drop, is marked on the request either
//! way: see `task_requests`). Which message
//! wins cannot differ: `tools/call` is the only request kind whose method
//! is `tools/call`.
//!
//! What rmcp's transport does with bad input, this one does too: a line
//! longer than [`MAX_LINE_BYTES`] is dropped (and logged), text that is not
//! JSON is ignored, JSON that is no message is answered with "Invalid
//! request", notifications outside MCP are skipped, and a partial line at
//! the end of input is dropped.

use super::task_requests;
use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequest, ClientJsonRpcMessage, ClientRequest, ErrorData, JsonRpcMessage, JsonRpcRequest,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{
    DEFAULT_MAX_LINE_LENGTH, JsonRpcMessageCodec, JsonRpcMessageCodecError,
};
use serde_json::error::Category;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Mutex;
use tokio_util::bytes::{Buf, BytesMut};
use tokio_util::codec::{Decoder, FramedRead, FramedWrite};

/// Longest line read, as rmcp's transport allows (one message per line).
pub const MAX_LINE_BYTES: usize = DEFAULT_MAX_LINE_LENGTH;

/// One line read, and what it held.
#[derive(Debug)]
enum Incoming {
    Message(Box<ClientJsonRpcMessage>),
    /// Empty, or a notification outside MCP: nothing to do.
    Skipped,
    /// Not a message; what kind of wrong it was.
    Invalid(Category),
    /// Over [`MAX_LINE_BYTES`]; dropped.
    Oversized,
}

/// Splits input into lines and parses each (see the module docs). rmcp's
/// codec gets one line at a time rather than the stream: when it skips a
/// line it answers "nothing yet", which `FramedRead` takes for "need more
/// input", so a request already buffered behind that line would wait for
/// the client's next write.
struct Lines {
    max: usize,
    /// Inside a line over the limit: drop everything up to its newline.
    discarding: bool,
    /// Where the search for the next newline goes on.
    searched: usize,
    rmcp: JsonRpcMessageCodec<ClientJsonRpcMessage>,
}

impl Lines {
    fn new(max: usize) -> Lines {
        Lines {
            max,
            discarding: false,
            searched: 0,
            rmcp: JsonRpcMessageCodec::new(),
        }
    }

    fn parse(&mut self, line: &[u8]) -> Incoming {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return Incoming::Skipped;
        }
        if let Ok(call) = serde_json::from_slice::<JsonRpcRequest<CallToolRequest>>(line) {
            let mut request = ClientRequest::CallToolRequest(call.request);
            if let Some(task) = task_requests::peek(line) {
                task_requests::mark(&mut request, task);
            }
            return Incoming::Message(Box::new(JsonRpcMessage::Request(JsonRpcRequest {
                jsonrpc: call.jsonrpc,
                id: call.id,
                request,
            })));
        }
        // rmcp's codec on this one line: its parsing and its leniencies.
        let mut one = BytesMut::with_capacity(line.len() + 1);
        one.extend_from_slice(line);
        one.extend_from_slice(b"\n");
        match self.rmcp.decode(&mut one) {
            Ok(Some(mut message)) => {
                if let JsonRpcMessage::Request(call) = &mut message
                    && let Some(task) = task_requests::peek(line)
                {
                    task_requests::mark(&mut call.request, task);
                }
                Incoming::Message(Box::new(message))
            }
            Ok(None) => Incoming::Skipped,
            Err(JsonRpcMessageCodecError::Serde(e)) => Incoming::Invalid(e.classify()),
            Err(_) => Incoming::Invalid(Category::Data),
        }
    }
}

impl Decoder for Lines {
    type Item = Incoming;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Incoming>, std::io::Error> {
        loop {
            let newline = buf[self.searched..]
                .iter()
                .position(|b| *b == b'\n')
                .map(|at| at + self.searched);
            match (self.discarding, newline) {
                (true, Some(at)) => {
                    buf.advance(at + 1);
                    self.discarding = false;
                    self.searched = 0;
                }
                (true, None) => {
                    buf.clear();
                    self.searched = 0;
                    return Ok(None);
                }
                (false, Some(at)) if at > self.max => {
                    buf.advance(at + 1);
                    self.searched = 0;
                    return Ok(Some(Incoming::Oversized));
                }
                (false, Some(at)) => {
                    let line = buf.split_to(at + 1);
                    self.searched = 0;
                    return Ok(Some(self.parse(&line[..at])));
                }
                (false, None) if buf.len() > self.max => {
                    buf.clear();
                    self.discarding = true;
                    self.searched = 0;
                    return Ok(Some(Incoming::Oversized));
                }
                (false, None) => {
                    self.searched = buf.len();
                    return Ok(None);
                }
            }
        }
    }

    /// A last line without its newline is incomplete: dropped, as rmcp's
    /// transport drops it.
    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Incoming>, std::io::Error> {
        let decoded = self.decode(buf)?;
        if decoded.is_none() {
            buf.clear();
        }
        Ok(decoded)
    }
}

type Writer<W> = FramedWrite<W, JsonRpcMessageCodec<TxJsonRpcMessage<RoleServer>>>;

/// A server's end of a stdio connection.
pub struct Stdio<R, W> {
    read: FramedRead<R, Lines>,
    write: Arc<Mutex<Option<Writer<W>>>>,
    /// An "Invalid request" answer owed to the client; kept here so that a
    /// `receive` dropped halfway still sends it, once.
    owed: Option<Owed>,
}

enum Owed {
    Queue,
    Flush,
}

impl<R: AsyncRead, W: AsyncWrite> Stdio<R, W> {
    pub fn new(read: R, write: W) -> Self {
        Stdio {
            read: FramedRead::new(read, Lines::new(MAX_LINE_BYTES)),
            write: Arc::new(Mutex::new(Some(FramedWrite::new(
                write,
                JsonRpcMessageCodec::default(),
            )))),
            owed: None,
        }
    }
}

impl<R, W> Stdio<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Sends the "Invalid request" answer owed, if any. `false`: the
    /// connection is gone.
    async fn pay(&mut self) -> bool {
        use futures::SinkExt;
        let Some(owed) = &mut self.owed else {
            return true;
        };
        let mut write = self.write.lock().await;
        let Some(framed) = write.as_mut() else {
            return false;
        };
        if matches!(owed, Owed::Queue) {
            let answer = TxJsonRpcMessage::<RoleServer>::error(
                ErrorData::invalid_request("Invalid request", None),
                None,
            );
            if framed.feed(answer).await.is_err() {
                return false;
            }
            *owed = Owed::Flush;
        }
        if framed.flush().await.is_err() {
            return false;
        }
        self.owed = None;
        true
    }
}

impl<R, W> Transport<RoleServer> for Stdio<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), std::io::Error>> + Send + 'static {
        use futures::SinkExt;
        let write = Arc::clone(&self.write);
        async move {
            match write.lock().await.as_mut() {
                Some(framed) => framed.send(item).await.map_err(Into::into),
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the transport is closed",
                )),
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        use futures::StreamExt;
        loop {
            if !self.pay().await {
                return None;
            }
            match self.read.next().await? {
                Ok(Incoming::Message(message)) => return Some(*message),
                Ok(Incoming::Skipped) => {}
                Ok(Incoming::Oversized) => tracing::error!(
                    max_line_bytes = MAX_LINE_BYTES,
                    "an incoming message was longer than a line may be; it was dropped"
                ),
                // Not JSON: no id to answer to, and answering garbage can
                // start an echo storm (as the other MCP SDKs, rmcp ignores it).
                Ok(Incoming::Invalid(Category::Syntax | Category::Eof)) => {
                    tracing::debug!("ignored a line that is not JSON");
                }
                Ok(Incoming::Invalid(Category::Data | Category::Io)) => {
                    tracing::debug!("answered a line that is no JSON-RPC message");
                    self.owed = Some(Owed::Queue);
                }
                Err(e) => {
                    tracing::error!("cannot read from stdin: {e}");
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), std::io::Error> {
        drop(self.write.lock().await.take());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(lines: &mut Lines, input: &[u8]) -> Vec<Incoming> {
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(item) = lines.decode(&mut buf).unwrap() {
            out.push(item);
        }
        out
    }

    fn message(item: &Incoming) -> serde_json::Value {
        match item {
            Incoming::Message(m) => serde_json::to_value(&**m).unwrap(),
            other => panic!("not a message: {other:?}"),
        }
    }

    /// What rmcp itself makes of `line`, as JSON.
    fn as_rmcp_reads_it(line: &str) -> serde_json::Value {
        let mut buf = BytesMut::from(format!("{line}\n").as_bytes());
        let parsed = JsonRpcMessageCodec::<ClientJsonRpcMessage>::new()
            .decode(&mut buf)
            .unwrap()
            .unwrap();
        serde_json::to_value(parsed).unwrap()
    }

    #[test]
    fn a_tools_call_reads_as_rmcp_reads_it() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"calc","arguments":{"op":"mul","a":6,"b":7}}}"#,
            r#"{"jsonrpc":"2.0","id":"a-7","method":"tools/call","params":{"name":"calc"}}"#,
            r#"{"params":{"arguments":{"n":[1,{"x":null}]},"name":"t","_meta":{"progressToken":"p1","other":3}},"method":"tools/call","id":9,"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","requestState":"s","inputResponses":{"approval":{"action":"accept","content":{"approve":true}}}},"extra":1}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"n","arguments":{"u":18446744073709551615,"i":-9223372036854775808,"f":1.5e300,"g":0.1,"s":"\u00e9\ud83d\ude00\n"}}}"#,
        ];
        for line in lines {
            assert!(
                serde_json::from_slice::<JsonRpcRequest<CallToolRequest>>(line.as_bytes()).is_ok(),
                "takes the typed path: {line}"
            );
            let mut codec = Lines::new(MAX_LINE_BYTES);
            let read = decode_all(&mut codec, format!("{line}\r\n").as_bytes());
            assert_eq!(read.len(), 1, "{line}");
            assert_eq!(message(&read[0]), as_rmcp_reads_it(line), "{line}");
        }
    }

    #[test]
    fn other_messages_and_near_misses_go_through_rmcp() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":4,"result":{}}"#,
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"calc\"}}",
        ];
        for line in lines {
            let mut codec = Lines::new(MAX_LINE_BYTES);
            let read = decode_all(&mut codec, format!("{line}\n").as_bytes());
            assert_eq!(message(&read[0]), as_rmcp_reads_it(line), "{line}");
        }
    }

    #[test]
    fn every_line_in_a_buffer_is_read_without_waiting_for_more() {
        let input = concat!(
            "{\"jsonrpc\":\"1.0\",\"method\":\"lsp/hover\"}\n",
            "\n",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"calc\"}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"meth",
        );
        let mut codec = Lines::new(MAX_LINE_BYTES);
        let mut buf = BytesMut::from(input.as_bytes());
        let mut read = Vec::new();
        while let Some(item) = codec.decode(&mut buf).unwrap() {
            read.push(item);
        }
        assert!(matches!(read[0], Incoming::Skipped), "{read:?}");
        assert!(matches!(read[1], Incoming::Skipped), "{read:?}");
        assert_eq!(message(&read[2])["method"], "ping");
        assert_eq!(message(&read[3])["id"], 2);
        assert_eq!(read.len(), 4, "the partial line waits: {read:?}");
        buf.extend_from_slice(b"od\":\"tools/list\"}\n");
        assert_eq!(message(&codec.decode(&mut buf).unwrap().unwrap())["id"], 3);
        buf.extend_from_slice(b"{\"cut\":");
        assert!(codec.decode_eof(&mut buf).unwrap().is_none());
        assert!(buf.is_empty());
    }

    #[test]
    fn bad_lines_are_told_apart_and_reading_goes_on() {
        let mut codec = Lines::new(64);
        let long = format!("{{\"jsonrpc\":\"2.0\",\"pad\":\"{}\"}}\n", "x".repeat(100));
        let input = format!(
            "not json\n{{\"foo\":1}}\n{long}{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}}\n"
        );
        let read = decode_all(&mut codec, input.as_bytes());
        assert!(
            matches!(read[0], Incoming::Invalid(Category::Syntax)),
            "{read:?}"
        );
        assert!(
            matches!(read[1], Incoming::Invalid(Category::Data)),
            "{read:?}"
        );
        assert!(matches!(read[2], Incoming::Oversized), "{read:?}");
        assert_eq!(message(&read[3])["id"], 2);
    }

    #[test]
    fn a_line_over_the_limit_split_across_reads_is_dropped_whole() {
        let mut codec = Lines::new(16);
        let mut buf = BytesMut::from(&b"{\"jsonrpc\":\"2.0\",\"aaaaaaaa"[..]);
        assert!(matches!(
            codec.decode(&mut buf).unwrap(),
            Some(Incoming::Oversized)
        ));
        buf.extend_from_slice(b"bbbbbbbbbbbbbbbbbbbbbbb");
        assert!(codec.decode(&mut buf).unwrap().is_none());
        buf.extend_from_slice(b"\"}\n{\"foo\":1}\n");
        let next = codec.decode(&mut buf).unwrap();
        assert!(
            matches!(next, Some(Incoming::Invalid(Category::Data))),
            "the line after the long one is read: {next:?}"
        );
    }
}
