//! The `toolwarden` binary: everything happens in [`toolwarden::cli`].

fn main() -> std::process::ExitCode {
    toolwarden::cli::main()
}
