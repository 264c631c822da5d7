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
//! Before that thread parks, it may watch stdin for a moment
//! ([`SPIN_BEFORE_PARK`]) instead of sleeping at once. A fast client sends
//! its next request right after reading an answer; a thread that went to
//! sleep must then be woken on a CPU that went idle, and on virtual machines
//! (and on CPUs in deep idle states) that wake-up, and running the request
//! on a CPU whose caches went cold meanwhile, cost more than the whole
//! governed call: on the 2-core VM of the README's row 7, a round trip took
//! 150 µs woken, 75 µs watched, 40 µs with client and server on one busy
//! CPU. A slower client would only make the thread burn that moment for
//! nothing after each answer (with a client pausing 150 µs, a call cost the
//! server 216 µs of CPU instead of its own ~20), so the watch learns: after
//! one that saw nothing arrive, the next parks sleep at once, twice as many
//! after each further miss (up to [`MAX_SKIPPED_WATCHES`]), and one that
//! sees the client in time makes it watch every time again.
//!
//! This module is the one place those fast paths live; nothing of it is
//! shared with the HTTP server (each connection has its own [`Waiting`]).

use super::Server;
use super::roots::{self, Refusal};
use super::transport::Stdio;
use crate::controller::Controller;
use rmcp::RoleServer;
use rmcp::transport::Transport;
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::net::SocketType;
use rustix::net::sockopt::socket_type;
use std::os::fd::AsFd;
use std::os::unix::fs::FileTypeExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;
use tokio_util::either::Either;

/// How long the connection's thread watches stdin before it sleeps: about
/// what a wake-up from idle costs on the machines measured, so watching
/// never costs more than twice what sleeping would have.
const SPIN_BEFORE_PARK: Duration = Duration::from_micros(100);

/// Most parks in a row that sleep at once after watches that missed; the
/// watch then costs a slow client's server at most 1/65 of its moment.
const MAX_SKIPPED_WATCHES: u32 = 64;

/// What one connection's thread knows when it is about to park.
#[derive(Debug, Default)]
pub(super) struct Waiting {
    /// A call finished on the pool: its answer waits on the connection's
    /// thread, which stops watching stdin and takes it.
    answer_ready: AtomicBool,
    /// Parks still to sleep at once, and the misses in a row that set it.
    skip: AtomicU32,
    misses: AtomicU32,
}

impl Waiting {
    pub(super) fn answer_ready(&self) {
        self.answer_ready.store(true, Ordering::Release);
    }

    /// Whether this park should watch stdin first (only the connection's
    /// thread calls it, so plain loads and stores suffice).
    fn should_watch(&self) -> bool {
        let skip = self.skip.load(Ordering::Relaxed);
        if skip == 0 {
            return true;
        }
        self.skip.store(skip - 1, Ordering::Relaxed);
        false
    }

    fn saw_client(&self, in_time: bool) {
        if in_time {
            self.misses.store(0, Ordering::Relaxed);
            return;
        }
        let misses = (self.misses.load(Ordering::Relaxed) + 1).min(MAX_SKIPPED_WATCHES.ilog2());
        self.misses.store(misses, Ordering::Relaxed);
        self.skip.store(1 << misses, Ordering::Relaxed);
    }
}

/// Where a stdio connection's host comes from.
pub enum HostFrom {
    /// Made before the client spoke; every request under the profile, when
    /// one is given.
    Made(Arc<Controller>, Option<Arc<str>>),
    /// Made once the client has listed its roots, from the local folders
    /// among them (see `roots`); `choose` says why it cannot be made, and
    /// a client that lists none is refused with `otherwise`.
    Roots {
        choose: Box<Choose>,
        otherwise: Refusal,
    },
}

/// Makes a host, and the profile it serves under, from a client's roots.
pub type Choose = dyn FnOnce(&[PathBuf]) -> Result<(Arc<Controller>, Option<Arc<str>>), Refusal>;

/// Why a stdio server ended other than by its client going away.
#[derive(Debug)]
pub enum Stopped {
    /// It could not start, and told the client why.
    Refused(Refusal),
    /// It broke while serving.
    Failed(String),
}

impl From<String> for Stopped {
    fn from(failure: String) -> Stopped {
        Stopped::Failed(failure)
    }
}

/// Serves MCP on stdin/stdout until the client goes away. Blocks.
pub fn serve(from: HostFrom) -> Result<(), Stopped> {
    let calls = tokio::runtime::Builder::new_multi_thread()
        .thread_name("toolwarden-call")
        .enable_all()
        .build()
        .map_err(|e| Stopped::Failed(format!("cannot start the calls' runtime: {e}")))?;
    let waiting = Arc::new(Waiting::default());
    let watched = Arc::clone(&waiting);
    let connection = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(move || watch_stdin(&watched))
        .build()
        .map_err(|e| Stopped::Failed(format!("cannot start the connection's runtime: {e}")))?;
    let runtimes = Runtimes {
        connection,
        calls,
        waiting,
    };
    // Pipes register with the connection's reactor.
    let piped = {
        let _inside = runtimes.connection.enter();
        pipes()
    };
    match piped {
        Some((read, write)) => runtimes.serve(Stdio::new(read, write), from),
        None => runtimes.serve(Stdio::new(tokio::io::stdin(), tokio::io::stdout()), from),
    }
}

/// Answers the client's first request on stdin (within
/// [`roots::FIRST_REQUEST_WAIT`]) with why the server cannot start, and
/// returns: a client sees the reason, not a closed connection.
pub fn refuse(refusal: &Refusal) {
    let Ok(connection) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let piped = {
        let _inside = connection.enter();
        pipes()
    };
    let held = roots::Held::default();
    let deadline = tokio::time::Instant::now() + roots::FIRST_REQUEST_WAIT;
    match piped {
        Some((read, write)) => connection.block_on(roots::refuse(
            Stdio::new(read, write),
            held,
            refusal,
            deadline,
        )),
        None => connection.block_on(roots::refuse(
            Stdio::new(tokio::io::stdin(), tokio::io::stdout()),
            held,
            refusal,
            deadline,
        )),
    }
    // tokio's stdin may still wait on a blocking read.
    connection.shutdown_background();
}

/// The runtimes one stdio connection runs on (see the module docs).
struct Runtimes {
    connection: tokio::runtime::Runtime,
    calls: tokio::runtime::Runtime,
    waiting: Arc<Waiting>,
}

impl Runtimes {
    fn serve<R, W>(self, stdio: Stdio<R, W>, from: HostFrom) -> Result<(), Stopped>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        match from {
            HostFrom::Made(host, profile) => self.serve_host(host, profile, stdio),
            HostFrom::Roots { choose, otherwise } => {
                let started = tokio::time::Instant::now();
                let opened = self.connection.block_on(roots::open(stdio))?;
                // Made outside the runtime: making a host may start and
                // wait on runtimes of its own.
                let made = opened
                    .roots
                    .map_err(|why| Refusal {
                        message: format!("{} ({why})", otherwise.message),
                        ..otherwise
                    })
                    .and_then(|folders| choose(&folders));
                match made {
                    Ok((host, profile)) => self.serve_host(
                        host,
                        profile,
                        roots::Replay::new(opened.transport, opened.held),
                    ),
                    Err(refusal) => {
                        self.connection.block_on(roots::refuse(
                            opened.transport,
                            opened.held,
                            &refusal,
                            started + roots::FIRST_REQUEST_WAIT,
                        ));
                        // tokio's stdin may still wait on a blocking read.
                        self.connection.shutdown_background();
                        Err(Stopped::Refused(refusal))
                    }
                }
            }
        }
    }

    fn serve_host<T>(
        self,
        host: Arc<Controller>,
        profile: Option<Arc<str>>,
        transport: T,
    ) -> Result<(), Stopped>
    where
        T: Transport<RoleServer> + Send + 'static,
    {
        let Runtimes {
            connection,
            calls,
            waiting,
        } = self;
        host.audit_in_idle_time();
        let server = Server::over_stdio(host, calls.handle().clone(), waiting, profile);
        // The connection answers first and tears down after: see `watch_stdin`.
        Controller::defer_teardowns_on_this_thread();
        let served = connection.block_on(server.serve_stdio(transport));
        // The connection has ended (stdin closed, or a signal), which cancelled
        // its calls in flight: let them end, and be recorded, before the host
        // goes; the connection's own tasks, which stop them, run meanwhile.
        connection.block_on(calls_ended(&calls));
        Controller::finish_deferred_teardowns();
        // Calls still running hold timers of the connection's runtime: stop them
        // before that runtime goes.
        drop(calls);
        Ok(served?)
    }
}

/// Longest wait for cancelled calls to end once the connection has: a
/// guest stops at its next epoch tick, a host call at its next await.
const CALLS_END_WITHIN: Duration = Duration::from_secs(5);

/// Returns once nothing runs on `calls`, or after [`CALLS_END_WITHIN`].
async fn calls_ended(calls: &tokio::runtime::Runtime) {
    let deadline = Instant::now() + CALLS_END_WITHIN;
    while calls.metrics().num_alive_tasks() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Returns once stdin has something to read, a call has finished, or
/// [`SPIN_BEFORE_PARK`] has passed (at once while a slow client is not
/// watched for); the runtime then parks, and returns at once if there is
/// work.
///
/// First, the calls answered since the last park are torn down: their
/// answers are out, and the client is reading them meanwhile.
fn watch_stdin(waiting: &Waiting) {
    Controller::finish_deferred_teardowns();
    if waiting.answer_ready.swap(false, Ordering::AcqRel) || !waiting.should_watch() {
        return;
    }
    let deadline = Instant::now() + SPIN_BEFORE_PARK;
    let stdin = std::io::stdin();
    let mut ready = [PollFd::new(&stdin, PollFlags::IN)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    while Instant::now() < deadline {
        if waiting.answer_ready.swap(false, Ordering::AcqRel) {
            return;
        }
        match rustix::event::poll(&mut ready, Some(&now)) {
            Ok(0) => std::hint::spin_loop(),
            // Readable, closed, or not pollable: nothing to wait for here.
            Ok(_) | Err(_) => return waiting.saw_client(true),
        }
    }
    waiting.saw_client(false);
}

/// How stdin is read on the connection's reactor.
type Reading = Either<pipe::Receiver, UnixStream>;
/// How stdout is written on the connection's reactor.
type Writing = Either<pipe::Sender, UnixStream>;

/// stdin and stdout as the reactor's, when each is a pipe or a Unix stream
/// socket: clients start a server on pipes (Python's `subprocess`, Rust's
/// `Command`) or on socket pairs (Node's `child_process`, and so every
/// client built on Node or Electron). tokio's `Stdin` hands every read to
/// its blocking thread pool, a thread hop per message that cost more than
/// the whole governed call (with the official TypeScript SDK client, a
/// round trip took 1.4x the bare rmcp server's while stdio was treated as
/// pipes only); the reactor waits on either kind instead. Anything else (a
/// terminal, a file, a TCP socket) keeps tokio's stdio, for both: making a
/// descriptor non-blocking changes it for every process that shares it,
/// and tokio's blocking stdio then fails with `EAGAIN` on it.
fn pipes() -> Option<(Reading, Writing)> {
    // Both are looked at before either is changed: a stdin made
    // non-blocking while stdout is a file would fail tokio's stdio.
    let input = End::of(std::io::stdin().as_fd())?;
    let output = End::of(std::io::stdout().as_fd())?;
    let reading = match input {
        End::Pipe(file) => Either::Left(pipe::Receiver::from_file(file).ok()?),
        End::Socket(socket) => Either::Right(End::registered(socket)?),
    };
    let writing = match output {
        End::Pipe(file) => Either::Left(pipe::Sender::from_file(file).ok()?),
        End::Socket(socket) => Either::Right(End::registered(socket)?),
    };
    Some((reading, writing))
}

/// A copy of stdin's or stdout's descriptor that the reactor can wait on.
enum End {
    Pipe(std::fs::File),
    Socket(std::os::unix::net::UnixStream),
}

impl End {
    /// What `fd` is, if the reactor can wait on it; changes nothing.
    fn of(fd: std::os::fd::BorrowedFd<'_>) -> Option<End> {
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        let kind = file.metadata().ok()?.file_type();
        if kind.is_fifo() {
            return Some(End::Pipe(file));
        }
        if !kind.is_socket() || socket_type(&file).ok()? != SocketType::STREAM {
            return None;
        }
        let socket = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(file));
        // Not a Unix socket (a TCP connection as stdin) when it has no Unix address.
        socket.local_addr().ok()?;
        Some(End::Socket(socket))
    }

    /// `socket` on the reactor, non-blocking as tokio requires.
    fn registered(socket: std::os::unix::net::UnixStream) -> Option<UnixStream> {
        socket.set_nonblocking(true).ok()?;
        UnixStream::from_std(socket).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which of the next `n` parks would watch stdin.
    fn next_watches(waiting: &Waiting, n: usize) -> Vec<bool> {
        (0..n).map(|_| waiting.should_watch()).collect()
    }

    #[test]
    fn a_client_that_keeps_up_is_always_watched_for() {
        let waiting = Waiting::default();
        for _ in 0..10 {
            assert!(waiting.should_watch());
            waiting.saw_client(true);
        }
    }

    #[test]
    fn misses_in_a_row_skip_twice_as_many_watches_up_to_the_cap() {
        let waiting = Waiting::default();
        let mut skipped = Vec::new();
        assert!(waiting.should_watch());
        for _ in 0..9 {
            // The watch missed; count the parks that sleep at once until
            // the next one watches again.
            waiting.saw_client(false);
            let mut n = 0;
            while !waiting.should_watch() {
                n += 1;
            }
            skipped.push(n);
        }
        assert_eq!(skipped, [2, 4, 8, 16, 32, 64, 64, 64, 64]);
    }

    #[test]
    fn one_client_in_time_ends_the_backoff() {
        let waiting = Waiting::default();
        for _ in 0..5 {
            waiting.saw_client(false);
            while !waiting.should_watch() {}
        }
        waiting.saw_client(true);
        waiting.saw_client(false);
        assert_eq!(next_watches(&waiting, 3), [false, false, true]);
    }
}
