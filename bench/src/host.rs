//! The governed host the in-process rows call, and how they call it:
//! one call at a time, timed, or from many tasks for a while.

use crate::CONFIG;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use toolwarden::{AuditFilter, CallRequest, ConfigBuilder, Controller, Status};
use toolwarden_tests::rss_kib;

/// A host in a temp dir: workspace, plugins, state.
pub(crate) struct Host {
    _root: tempfile::TempDir,
    pub(crate) workspace: PathBuf,
    pub(crate) plugins: PathBuf,
    pub(crate) state: PathBuf,
}

impl Host {
    pub(crate) fn new(plugins: &[&str]) -> Host {
        let root = tempfile::tempdir().expect("temp dir");
        let host = Host {
            workspace: root.path().join("workspace"),
            plugins: root.path().join("plugins"),
            state: root.path().join("state"),
            _root: root,
        };
        for dir in [&host.workspace, &host.plugins, &host.state] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        std::fs::write(host.workspace.join("small.txt"), "hello, governed world\n").expect("write");
        std::fs::write(host.workspace.join("toolwarden.toml"), CONFIG).expect("write");
        for plugin in plugins {
            let path = Path::new(plugin);
            std::fs::copy(
                path,
                host.plugins.join(path.file_name().expect("file name")),
            )
            .expect("copy plugin");
        }
        host
    }

    pub(crate) fn controller(&self) -> std::sync::Arc<Controller> {
        let config = ConfigBuilder::new(&self.workspace)
            .plugins_dir(&self.plugins)
            .state_dir(&self.state)
            .config_text(CONFIG)
            .build()
            .expect("config");
        Controller::new(config).expect("host starts")
    }
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// One governed call, timed like a floor call: the request is made inside
/// the timed span.
pub(crate) async fn governed_call(host: &Controller, tool: &str, args: &str) -> Duration {
    let started = Instant::now();
    let result = host.handle(CallRequest::new(tool, args)).await;
    let elapsed = started.elapsed();
    assert_eq!(result.status, Status::Ok, "{result:?}");
    elapsed
}

/// Waits until the audit writer has committed every queued record, so its
/// work does not land in the next row's figures.
pub(crate) fn settle(host: &Controller) {
    let last = AuditFilter {
        limit: Some(1),
        ..AuditFilter::default()
    };
    if let Err(e) = host.records().audit(&last) {
        eprintln!("cannot settle the audit log: {e}");
    }
}

/// Calls `tool` from 4 tasks per core until `until` says stop; calls/s.
pub(crate) fn throughput(host: Arc<Controller>, tool: &str, args: &str, until: Until) -> f64 {
    let rt = runtime();
    let tasks = 4 * cores();
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    rt.block_on(async {
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                let (host, done) = (Arc::clone(&host), Arc::clone(&done));
                let (tool, args) = (tool.to_owned(), args.to_owned());
                tokio::spawn(async move {
                    while until.goes_on(started, &done) {
                        let r = host.handle(CallRequest::new(&tool, &args)).await;
                        assert_eq!(r.status, Status::Ok, "{r:?}");
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        futures::future::join_all(handles).await;
    });
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// When a [`throughput`] run stops.
#[derive(Clone, Copy)]
pub(crate) enum Until {
    Elapsed(Duration),
    /// About this many calls (each task checks before its next).
    Calls(u64),
}

impl Until {
    pub(crate) fn goes_on(self, started: Instant, done: &AtomicU64) -> bool {
        match self {
            Until::Elapsed(limit) => started.elapsed() < limit,
            Until::Calls(n) => done.load(Ordering::Relaxed) < n,
        }
    }
}

pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The process's resident memory in KiB before, at its peak (sampled every
/// 5 ms) during, and after something ran.
pub(crate) struct Rss {
    pub(crate) before: u64,
    pub(crate) peak: u64,
    pub(crate) after: u64,
}

/// Runs `f` while a thread samples the resident memory.
pub(crate) fn peak_rss_during<R>(f: impl FnOnce() -> R) -> (R, Rss) {
    let before = rss_kib();
    let running = Arc::new(AtomicBool::new(true));
    let peak = Arc::new(AtomicU64::new(before));
    let sampler = {
        let (running, peak) = (Arc::clone(&running), Arc::clone(&peak));
        std::thread::spawn(move || {
            while running.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kib(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let result = f();
    running.store(false, Ordering::Relaxed);
    sampler.join().expect("sampler");
    let rss = Rss {
        before,
        peak: peak.load(Ordering::Relaxed).max(rss_kib()),
        after: rss_kib(),
    };
    (result, rss)
}
