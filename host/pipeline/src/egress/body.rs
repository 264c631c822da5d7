//! Request and response bodies counted as they stream, against the call's
//! limits: a body past what the call has left fails with a size error at
//! that frame, so nothing is ever buffered whole and the guest sees why.

use super::Usage;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use wasmtime_wasi_http::Error;

/// Which way a body goes.
#[derive(Clone, Copy)]
pub(super) enum Direction {
    Sent,
    Received,
}

/// A body whose data frames are counted into a call's [`Usage`] and the
/// record of its request.
pub(super) struct Counted<B> {
    inner: B,
    usage: Arc<Usage>,
    index: usize,
    direction: Direction,
    /// Bytes this direction may carry over the whole call.
    limit: u64,
    /// The body ended or failed: its record is final.
    over: bool,
}

impl<B> Counted<B> {
    pub(super) fn new(
        inner: B,
        usage: Arc<Usage>,
        index: usize,
        direction: Direction,
        limit: u64,
    ) -> Counted<B> {
        Counted {
            inner,
            usage,
            index,
            direction,
            limit,
            over: false,
        }
    }

    fn end(&mut self, reason: Option<String>) {
        self.over = true;
        if let (Direction::Received, _) | (Direction::Sent, Some(_)) = (self.direction, &reason) {
            self.usage.finish(self.index, |record| {
                if record.reason.is_none() {
                    record.reason = reason;
                }
            });
        }
    }

    fn count(&mut self, bytes: u64) -> Result<(), Error> {
        let (total, key) = match self.direction {
            Direction::Sent => (&self.usage.sent, "network.max_sent_kb"),
            Direction::Received => (&self.usage.received, "network.max_received_kb"),
        };
        let used = total.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.usage
            .update(self.index, |record| match self.direction {
                Direction::Sent => record.sent_bytes += bytes,
                Direction::Received => record.received_bytes += bytes,
            });
        if used <= self.limit {
            return Ok(());
        }
        self.end(Some(format!(
            "cut off: the call's {} bodies passed {} KiB (`{key}`)",
            match self.direction {
                Direction::Sent => "request",
                Direction::Received => "response",
            },
            self.limit >> 10
        )));
        Err(match self.direction {
            Direction::Sent => Error::HttpRequestBodySize(Some(self.limit)),
            Direction::Received => Error::HttpResponseBodySize(Some(self.limit)),
        })
    }
}

impl<B> Body for Counted<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Error>,
{
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        if self.over {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => {
                self.end(None);
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => {
                let e: Error = e.into();
                self.end(Some(format!("failed: {e}")));
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(Some(Ok(frame))) => {
                let bytes = frame.data_ref().map_or(0, |data| data.len() as u64);
                match self.count(bytes) {
                    Ok(()) => Poll::Ready(Some(Ok(frame))),
                    Err(e) => Poll::Ready(Some(Err(e))),
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.over || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A request body screened for credentials on its way to an origin they
/// are not bound to (see [`super::secrets`]): each frame is searched with
/// the tail of the one before, and the last few bytes are held back until
/// the next frame or the end, so a credential split across frames is found
/// before any part of it is sent. One found stops the body (the request
/// fails with `HTTP-request-denied`, recorded as denied).
pub(super) struct Screened<B> {
    inner: B,
    screen: super::secrets::Screen,
    usage: Arc<Usage>,
    index: usize,
    held: Vec<u8>,
    /// Trailers that came while bytes were held: sent after them.
    trailers: Option<Frame<Bytes>>,
    stopped: bool,
}

impl<B> Screened<B> {
    pub(super) fn new(
        inner: B,
        screen: super::secrets::Screen,
        usage: Arc<Usage>,
        index: usize,
    ) -> Screened<B> {
        Screened {
            inner,
            screen,
            usage,
            index,
            held: Vec::new(),
            trailers: None,
            stopped: false,
        }
    }
}

impl<B> Body for Screened<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Error>,
{
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        loop {
            if let Some(trailers) = self.trailers.take() {
                return Poll::Ready(Some(Ok(trailers)));
            }
            if self.stopped {
                return Poll::Ready(None);
            }
            match Pin::new(&mut self.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    self.stopped = true;
                    let rest = std::mem::take(&mut self.held);
                    return Poll::Ready((!rest.is_empty()).then(|| Ok(Frame::data(rest.into()))));
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e.into()))),
                Poll::Ready(Some(Ok(frame))) => {
                    let frame = match frame.into_data() {
                        Ok(data) => data,
                        // Trailers go as they are, after what was held.
                        Err(trailers) if self.held.is_empty() => {
                            return Poll::Ready(Some(Ok(trailers)));
                        }
                        Err(trailers) => {
                            self.trailers = Some(trailers);
                            let held = std::mem::take(&mut self.held);
                            return Poll::Ready(Some(Ok(Frame::data(held.into()))));
                        }
                    };
                    let this = &mut *self;
                    this.held.extend_from_slice(&frame);
                    if let Some(name) = this.screen.secrets.carried(&this.held, &this.screen.origin)
                    {
                        this.stopped = true;
                        let origin = this.screen.origin.to_string();
                        this.usage.finish(this.index, |record| {
                            record.decision = super::RequestDecision::Denied;
                            record.reason = Some(format!(
                                "stopped: the request body carries the credential `{name}`, \
                                 which is not bound to `{origin}`"
                            ));
                        });
                        return Poll::Ready(Some(Err(Error::HttpRequestDenied)));
                    }
                    let keep = this.screen.secrets.holdback().min(this.held.len());
                    let send: Vec<u8> = this.held.drain(..this.held.len() - keep).collect();
                    if !send.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(send.into()))));
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.stopped
            || (self.inner.is_end_stream() && self.held.is_empty() && self.trailers.is_none())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::secrets::{Known, Screen, Secrets};
    use crate::egress::{Entry, RequestDecision, RequestRecord};
    use http_body_util::BodyExt;

    const SECRET: &str = "split-across-frames-0123";

    fn usage() -> Arc<Usage> {
        let usage = Arc::new(Usage::default());
        usage.entries().push(Entry {
            record: RequestRecord {
                method: "POST".into(),
                origin: "http://evil.example".into(),
                path: "/".into(),
                decision: RequestDecision::Allowed,
                reason: None,
                rule: None,
                status: None,
                address: None,
                sent_bytes: 0,
                received_bytes: 0,
                duration_us: 0,
            },
            started: std::time::Instant::now(),
            done: false,
        });
        usage
    }

    /// What a screened body of `frames` lets out before it stops, and
    /// whether it stopped.
    fn screened(frames: Vec<&'static [u8]>) -> (Vec<u8>, bool) {
        let bound = ["https://api.example.org".parse().unwrap()];
        let secrets = Secrets::new(
            [Known {
                name: "k",
                bound: &bound,
                secret: SECRET,
            }]
            .into_iter(),
        )
        .unwrap();
        let origin =
            crate::origin::Origin::of_url(&url::Url::parse("http://evil.example/").unwrap())
                .unwrap();
        let stream = futures::stream::iter(
            frames
                .into_iter()
                .map(|f| Ok::<_, Error>(Frame::data(Bytes::from_static(f)))),
        );
        let usage = usage();
        let mut body = Screened::new(
            http_body_util::StreamBody::new(stream),
            Screen {
                secrets: Arc::new(secrets),
                origin,
            },
            Arc::clone(&usage),
            0,
        );
        let mut out = Vec::new();
        let mut stopped = false;
        futures::executor::block_on(async {
            while let Some(frame) = body.frame().await {
                match frame {
                    Ok(frame) => out.extend_from_slice(&frame.into_data().unwrap_or_default()),
                    Err(_) => {
                        stopped = true;
                        break;
                    }
                }
            }
        });
        (out, stopped)
    }

    #[test]
    fn a_credential_split_across_frames_is_stopped_before_any_of_it_leaves() {
        let (out, stopped) = screened(vec![b"aaaa split-acr", b"oss-fra", b"mes-0123 zzz"]);
        assert!(stopped);
        let out = String::from_utf8(out).unwrap();
        assert!(
            !out.contains("split"),
            "a part of the secret went out: {out:?}"
        );
        let (out, stopped) = screened(vec![b"harmless ", b"text ", b"only"]);
        assert!(!stopped);
        assert_eq!(out, b"harmless text only");
    }
}
