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
