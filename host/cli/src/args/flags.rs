//! Option groups: what `serve` and `console` take, and the flags several
//! commands share (who may reach a listener, a registry login, a profile).
//! clap types only.

use clap::Args;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve Streamable HTTP at http://ADDR/mcp (and the console at /console)
    /// instead of stdio [e.g. 127.0.0.1:8765]
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8765")]
    pub http: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub listen: ListenArgs,
    /// Every session runs under this profile, whatever its requests
    /// declare in `_meta` [default: each request's own, else every tool]
    #[arg(long, env = "TOOLWARDEN_PROFILE", value_name = "NAME")]
    pub profile: Option<String>,
}

/// The session's tool set (`[profile.NAME]` in the config).
#[derive(Debug, clap::Args)]
pub struct ProfileArg {
    /// Act as a session of this `[profile.NAME]`: only its tools are listed and callable
    #[arg(long, env = "TOOLWARDEN_PROFILE", value_name = "NAME")]
    pub profile: Option<String>,
}

/// Who may reach an HTTP listener.
#[derive(Debug, clap::Args)]
pub struct ListenArgs {
    /// A file holding the token every HTTP request must send as `Authorization: Bearer`
    /// (and the console's login form asks for)
    #[arg(long, env = "TOOLWARDEN_TOKEN_FILE", value_name = "FILE")]
    pub token_file: Option<std::path::PathBuf>,
    /// Another `Host` header value to accept (loopback names always are)
    #[arg(long, value_name = "HOST")]
    pub allow_host: Vec<String>,
    /// Another web origin whose pages may send requests (`https://host[:port]`;
    /// the server's own origins and those of `--allow-host` always may)
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// Listen on a non-loopback address without a token (anyone who reaches it can call tools)
    #[arg(long)]
    pub insecure_no_auth: bool,
}

/// How to reach a registry.
#[derive(Debug, clap::Args)]
pub struct RegistryArgs {
    /// Reach a registry that is not on loopback over plain http
    #[arg(long)]
    pub insecure_registry: bool,
    /// Log in as this user (the password is read from stdin) [default: the
    /// credentials in ~/.docker/config.json, else anonymous]
    #[arg(long, value_name = "USER")]
    pub username: Option<String>,
    /// Read a bearer token from stdin instead
    #[arg(long, conflicts_with = "username")]
    pub token_stdin: bool,
}

#[derive(Debug, clap::Args)]
pub struct ConsoleArgs {
    /// Where to serve the console: http://ADDR/console
    #[arg(value_name = "ADDR", default_value = "127.0.0.1:8766")]
    pub addr: std::net::SocketAddr,
    #[command(flatten)]
    pub listen: ListenArgs,
}
