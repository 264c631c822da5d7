//! The `toolwarden` binary: everything happens in [`toolwarden_cli`].

/// Every call hands its audit records to the writer thread, which frees
/// them: with glibc's per-thread arenas each such free takes the caller's
/// arena lock, and callers and writer contend on it. mimalloc frees memory
/// of another thread without a lock (about 2 µs less per governed call in
/// `make bench`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    toolwarden_cli::main()
}
