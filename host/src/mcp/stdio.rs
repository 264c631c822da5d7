//! How one stdio connection is run: its threads, and how it waits for the
//! next message.
//!
//! The connection (rmcp's transport and dispatch, and the start of every
//! call) runs on one thread of its own, a current-thread runtime. A call that
//! does not finish in its first poll continues on a multi-thread pool (see
//! `Server::run`), so long calls still run in parallel. A call holds up the
//! connection for its first poll only: until a computing guest yields at the
//! next epoch tick (5 ms), or for the commits a call waits for (using up an
//! approval; its trail, with `[audit] durability = "sync"`).
//!
//! Before that thread parks, it watches stdin for a moment
//! ([`SPIN_BEFORE_PARK`]) instead of sleeping at once. A client usually
//! sends its next request right after reading an answer; a thread that went
//! to sleep must then be woken on a CPU that went idle, and on virtual
//! machines (and on CPUs in deep idle states) that wake-up, and running the
//! request on a CPU whose caches went cold meanwhile, cost more than the
//! whole governed call: on the 2-core VM of the README's row 7, a round trip
//! took 150 µs woken, 75 µs watched, 40 µs with client and server on one
//! busy CPU. The wait is bounded and polls stdin only, so an idle server
//! costs nothing but that moment after each message.

use super::Server;
use crate::controller::Controller;
use rustix::event::{PollFd, PollFlags, Timespec};
use std::os::fd::AsFd;
use std::os::unix::fs::FileTypeExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::net::unix::pipe;

/// How long the connection's thread watches stdin before it sleeps: about
/// what a wake-up from idle costs on the machines measured, so watching
/// never costs more than twice what sleeping would have.
const SPIN_BEFORE_PARK: Duration = Duration::from_micros(100);

/// Set when a call finishes on the pool: its answer waits on the
/// connection's thread, which stops watching stdin and takes it.
static CALL_FINISHED: AtomicBool = AtomicBool::new(false);

/// Serves MCP on stdin/stdout until the client goes away. Blocks.
pub fn serve(host: Arc<Controller>) -> Result<(), String> {
    let calls = tokio::runtime::Builder::new_multi_thread()
        .thread_name("toolwarden-call")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the calls' runtime: {e}"))?;
    let connection = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(watch_stdin)
        .build()
        .map_err(|e| format!("cannot start the connection's runtime: {e}"))?;
    let server = Server::new(host, calls.handle().clone());
    // The connection answers first and tears down after: see `watch_stdin`.
    Controller::defer_teardowns_on_this_thread();
    let served = connection.block_on(server.serve_stdio());
    Controller::finish_deferred_teardowns();
    // Calls still running hold timers of the connection's runtime: stop them
    // before that runtime goes.
    drop(calls);
    served
}

/// Tells the connection's thread that a call's answer is ready. (Over HTTP
/// nobody watches stdin, and the flag is left set: harmless.)
pub(super) fn call_finished() {
    CALL_FINISHED.store(true, Ordering::Release);
}

/// Returns once stdin has something to read, a call has finished, or
/// [`SPIN_BEFORE_PARK`] has passed; the runtime then parks, and returns at
/// once if there is work.
///
/// First, the calls answered since the last park are torn down: their
/// answers are out, and the client is reading them meanwhile.
fn watch_stdin() {
    Controller::finish_deferred_teardowns();
    let deadline = Instant::now() + SPIN_BEFORE_PARK;
    let stdin = std::io::stdin();
    let mut ready = [PollFd::new(&stdin, PollFlags::IN)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    while Instant::now() < deadline {
        if CALL_FINISHED.swap(false, Ordering::AcqRel) {
            return;
        }
        match rustix::event::poll(&mut ready, Some(&now)) {
            Ok(0) => std::hint::spin_loop(),
            // Readable, closed, or not pollable: nothing to wait for here.
            Ok(_) | Err(_) => return,
        }
    }
}

/// stdin and stdout as async pipes, when both are pipes (as when a client
/// starts the server). tokio's `Stdin` hands every read to its blocking
/// thread pool, a thread hop per message that cost more than the whole
/// governed call; a pipe waits on the reactor instead. Anything else (a
/// terminal, a file, a socket) keeps tokio's stdio, for both: making a pipe
/// non-blocking changes the descriptor the process shares with its parent,
/// and tokio's blocking stdio then fails with `EAGAIN` on it.
pub(super) fn pipes() -> Option<(pipe::Receiver, pipe::Sender)> {
    let fifo = |fd: std::os::fd::BorrowedFd<'_>| {
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        let is_fifo = file.metadata().ok()?.file_type().is_fifo();
        is_fifo.then_some(file)
    };
    let input = fifo(std::io::stdin().as_fd())?;
    let output = fifo(std::io::stdout().as_fd())?;
    Some((
        pipe::Receiver::from_file(input).ok()?,
        pipe::Sender::from_file(output).ok()?,
    ))
}
