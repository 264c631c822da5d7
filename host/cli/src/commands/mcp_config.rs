//! `toolwarden mcp-config --client NAME`: the snippet an MCP client needs to
//! start this host over stdio, with everything spelt out.
//!
//! A client starts its servers from its own directory (often `/` or the
//! home folder) with a small environment, so nothing is left to defaults
//! that depend on where or how it runs: the binary by absolute path, the
//! workspace, and the plugins and state directories this shell resolves
//! (so the client's host and the person's CLI share approvals and audit).

use super::toml_string;
use crate::ExitStatus;
use crate::config::Config;
use crate::error::Error;
use crate::printer::Printer;
use serde_json::{Value, json};

/// The clients whose configuration format is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// Claude Desktop: `claude_desktop_config.json`
    ClaudeDesktop,
    /// Claude Code: `claude mcp add`, or `.mcp.json` in a project
    ClaudeCode,
    /// VS Code: `.vscode/mcp.json`, or the user's `mcp.json`
    Vscode,
    /// Cursor: `~/.cursor/mcp.json`, or `.cursor/mcp.json` in a project
    Cursor,
    /// OpenAI Codex CLI: `~/.codex/config.toml`
    Codex,
    /// Windsurf: `~/.codeium/windsurf/mcp_config.json`
    Windsurf,
}

/// How the client is to start the server.
struct Launch {
    command: String,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
}

impl Launch {
    fn of(config: &Config) -> Result<Launch, Error> {
        let exe = std::env::current_exe()
            .and_then(std::fs::canonicalize)
            .map_err(|e| Error::Engine(format!("cannot tell where this binary is: {e}")))?;
        let mut args = vec![
            "serve".to_owned(),
            "--workspace".to_owned(),
            config.workspace().display().to_string(),
        ];
        if let Some(file) = config.config_file() {
            args.extend(["--config".to_owned(), file.display().to_string()]);
        }
        args.push("--trust-config".to_owned());
        Ok(Launch {
            command: exe.display().to_string(),
            args,
            env: vec![
                (
                    "TOOLWARDEN_PLUGINS",
                    config.plugins_dir().display().to_string(),
                ),
                ("TOOLWARDEN_STATE", config.state_dir().display().to_string()),
            ],
        })
    }

    fn env_object(&self) -> Value {
        Value::Object(
            self.env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), Value::String(v.clone())))
                .collect(),
        )
    }

    fn server(&self) -> Value {
        json!({"command": self.command, "args": self.args, "env": self.env_object()})
    }
}

const SERVER_NAME: &str = "toolwarden";

/// The client's JSON document, for the clients that take JSON.
fn document(client: Client, launch: &Launch) -> Value {
    match client {
        Client::Vscode => json!({"servers": {SERVER_NAME: {
            "type": "stdio",
            "command": launch.command,
            "args": launch.args,
            "env": launch.env_object(),
        }}}),
        Client::ClaudeCode => {
            let mut server = launch.server();
            server["type"] = json!("stdio");
            json!({"mcpServers": {SERVER_NAME: server}})
        }
        Client::ClaudeDesktop | Client::Cursor | Client::Windsurf | Client::Codex => {
            json!({"mcpServers": {SERVER_NAME: launch.server()}})
        }
    }
}

/// Codex's `config.toml` table.
fn codex_toml(launch: &Launch) -> String {
    let args: Vec<String> = launch.args.iter().map(|a| toml_string(a)).collect();
    let env: Vec<String> = launch
        .env
        .iter()
        .map(|(k, v)| format!("{k} = {}", toml_string(v)))
        .collect();
    format!(
        "[mcp_servers.{SERVER_NAME}]\ncommand = {}\nargs = [{}]\nenv = {{ {} }}",
        toml_string(&launch.command),
        args.join(", "),
        env.join(", ")
    )
}

/// A word for a POSIX shell, quoted only when it needs to be.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn where_it_goes(client: Client) -> &'static str {
    match client {
        Client::ClaudeDesktop => {
            "Add this to claude_desktop_config.json (Settings > Developer > Edit Config; on \
             macOS ~/Library/Application Support/Claude/, on Windows %APPDATA%\\Claude\\), \
             merging `mcpServers` with any servers already there, then restart Claude Desktop:"
        }
        Client::ClaudeCode => "Or put this in `.mcp.json` at the root of the project:",
        Client::Vscode => {
            "Add this to `.vscode/mcp.json` in the project (or run `MCP: Open User \
             Configuration`), merging `servers` with any already there:"
        }
        Client::Cursor => {
            "Add this to `~/.cursor/mcp.json` (or `.cursor/mcp.json` in the project), merging \
             `mcpServers` with any already there:"
        }
        Client::Windsurf => {
            "Add this to `~/.codeium/windsurf/mcp_config.json`, merging `mcpServers` with any \
             already there:"
        }
        Client::Codex => "Add this to `~/.codex/config.toml`:",
    }
}

pub fn run(
    config: &Config,
    client: Client,
    json: bool,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let launch = Launch::of(config)?;
    let document = document(client, &launch);
    if json {
        printer.json(&document);
        return Ok(ExitStatus::Success);
    }
    if client == Client::ClaudeCode {
        let env: Vec<String> = launch
            .env
            .iter()
            .map(|(k, v)| format!("-e {}", shell_word(&format!("{k}={v}"))))
            .collect();
        let command: Vec<String> = std::iter::once(launch.command.as_str())
            .chain(launch.args.iter().map(String::as_str))
            .map(shell_word)
            .collect();
        printer.out(format!(
            "Run this once:\n\n  claude mcp add {SERVER_NAME} {} -- {}\n",
            env.join(" "),
            command.join(" ")
        ));
    }
    printer.out(where_it_goes(client));
    printer.out("");
    if client == Client::Codex {
        printer.out(codex_toml(&launch));
    } else {
        printer.json(&document);
    }
    printer.out(format!(
        "\nThe host governs {} under {}; `toolwarden approvals` and `toolwarden console` \
         in a shell see the same approvals and audit.",
        config.workspace().display(),
        config
            .config_file()
            .map(|f| format!("`{}`", f.display()))
            .unwrap_or_else(|| "no config file (every call denied)".to_owned()),
    ));
    Ok(ExitStatus::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch() -> Launch {
        Launch {
            command: "/opt/tw bin/toolwarden".into(),
            args: vec!["serve".into(), "--workspace".into(), "/p/it's".into()],
            env: vec![("TOOLWARDEN_STATE", "/s \"q\"".into())],
        }
    }

    #[test]
    fn codex_toml_parses_back_to_the_same_launch() {
        let text = codex_toml(&launch());
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        let server = &parsed["mcp_servers"]["toolwarden"];
        assert_eq!(server["command"].as_str(), Some("/opt/tw bin/toolwarden"));
        assert_eq!(server["args"][2].as_str(), Some("/p/it's"));
        assert_eq!(server["env"]["TOOLWARDEN_STATE"].as_str(), Some("/s \"q\""));
    }

    #[test]
    fn shell_words_survive_quotes_and_spaces() {
        assert_eq!(shell_word("/usr/bin/x"), "/usr/bin/x");
        assert_eq!(shell_word("it's a"), r"'it'\''s a'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn vscode_takes_servers_with_a_type_and_others_take_mcp_servers() {
        let vscode = document(Client::Vscode, &launch());
        assert_eq!(vscode["servers"]["toolwarden"]["type"], "stdio");
        let desktop = document(Client::ClaudeDesktop, &launch());
        assert_eq!(
            desktop["mcpServers"]["toolwarden"]["command"],
            "/opt/tw bin/toolwarden"
        );
        assert_eq!(desktop["mcpServers"]["toolwarden"]["args"][0], "serve");
    }
}
