//! The `toolwarden` binary: everything happens in [`toolwarden_cli`].

/// Every call hands its audit records to the writer thread, which frees
/// them: with glibc's per-thread arenas each such free takes the caller's
/// arena lock, and callers and writer contend on it. mimalloc frees memory
/// of another thread without a lock (about 2 µs less per governed call in
/// `make bench`). Built without transparent huge pages (`no_thp`): its
/// arena asked for them, so a start zeroed 16 MiB of 2 MiB pages for 4 MiB
/// of heap, and after a few seconds idle, when a VM's host has taken back
/// the free memory, `serve` took 43 ms to its tool list instead of 14.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    toolwarden_cli::main()
}
