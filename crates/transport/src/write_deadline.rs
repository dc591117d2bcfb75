//! A connection whose writes must make progress: a write that stays blocked (the client does not read
//! its answers, so its receive window and the socket's buffer are full) for longer than the deadline
//! fails the connection, which hyper then closes.
//!
//! Without it, clients that pipeline requests and never read the answers held every one of the agent's
//! connections for as long as they liked (hyper has deadlines for reading headers, none for writing).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// `io` whose writes fail once one has been blocked for `deadline`.
pub(crate) struct WriteDeadline<T> {
    io: T,
    deadline: Duration,
    /// Running while a write is blocked; `None` once a write made progress.
    blocked: Option<Pin<Box<Sleep>>>,
}

impl<T> WriteDeadline<T> {
    pub(crate) fn new(io: T, deadline: Duration) -> Self {
        WriteDeadline {
            io,
            deadline,
            blocked: None,
        }
    }

    /// `poll`'s outcome, unless it is a write still blocked past the deadline.
    fn check<R>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if poll.is_ready() {
            self.blocked = None;
            return poll;
        }
        let deadline = self.deadline;
        let timer = self
            .blocked
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(deadline)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client read nothing for {} s", deadline.as_secs()),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteDeadline<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.io).poll_write(cx, buf);
        self.check(cx, poll)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.io).poll_flush(cx);
        self.check(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.check(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A peer that never reads: writes block once the pipe's buffer is full, and fail at the deadline
    /// (paused time: no real waiting).
    #[tokio::test(start_paused = true)]
    async fn a_write_blocked_past_the_deadline_fails() {
        let (ours, _theirs) = tokio::io::duplex(64);
        let mut io = WriteDeadline::new(ours, Duration::from_secs(10));
        io.write_all(&[0; 64]).await.unwrap();
        let started = tokio::time::Instant::now();
        let err = io.write_all(&[0; 1]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(10));
    }

    /// Progress resets the deadline: a slow reader that keeps reading is never cut off.
    #[tokio::test(start_paused = true)]
    async fn a_reader_that_keeps_up_is_served() {
        use tokio::io::AsyncReadExt;
        let (ours, mut theirs) = tokio::io::duplex(64);
        let mut io = WriteDeadline::new(ours, Duration::from_secs(10));
        let reader = tokio::spawn(async move {
            let mut buf = [0; 64];
            let mut total = 0;
            while total < 64 * 20 {
                tokio::time::sleep(Duration::from_secs(5)).await;
                total += theirs.read(&mut buf).await.unwrap();
            }
            total
        });
        io.write_all(&[1; 64 * 20]).await.unwrap();
        assert_eq!(reader.await.unwrap(), 64 * 20);
    }
}
