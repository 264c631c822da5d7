//! `http_fetch`: fetch a URL and return its status, content type and text.
//!
//! The plugin declares that it may reach any `https` origin (and any plain
//! `http` one): the operator's allow-list decides what a call really gets,
//! and the host checks every request, the redirects this tool follows
//! included, against that grant. The plugin holds no policy of its own.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolwarden_plugin::http::{self, HttpError, Request};
use toolwarden_plugin::{Context, Effects, Reply, Risk, Tool, ToolError, WebUrl};

/// Text returned when the caller gives no `max_bytes`.
const DEFAULT_MAX_BYTES: u32 = 64 << 10;
/// The most text one call returns; the host's output limit is the backstop.
const MAX_BYTES: u32 = 512 << 10;
/// Redirects followed before giving up; each is a new request the host checks.
const MAX_REDIRECTS: usize = 5;

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "http_fetch",
            "Fetches a web page or API response with GET and returns its HTTP status, content \
             type and body as text (cut at `max_bytes`; `truncated` says so). Follows up to 5 \
             redirects. Use it to read documentation or query a web API by URL. It can only \
             reach the origins the host's operator allows; a URL outside them is refused before \
             anything is sent.",
            fetch,
        )
        .title("Fetch a URL")
        .effects(Effects::READ_ONLY | Effects::IDEMPOTENT)
        .risk(Risk::Normal)
        .network(&["https://*:*", "http://*:*"])
        .timeout_ms(20_000),
    ]
}

/// Arguments of `http_fetch`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchArgs {
    /// The `http` or `https` URL to fetch.
    url: WebUrl,
    /// Most bytes of the body to return (default 65536).
    #[schemars(range(min = 1, max = 524288))]
    max_bytes: Option<u32>,
}

/// What the fetch returned.
#[derive(Serialize, JsonSchema)]
pub struct Fetched {
    /// The URL the body came from, after redirects.
    url: String,
    status: u16,
    content_type: Option<String>,
    /// The body as text (invalid UTF-8 replaced).
    text: String,
    /// The body was longer than `max_bytes`.
    truncated: bool,
    /// Every URL redirected to, in order.
    redirects: Vec<String>,
}

fn failed(url: &str, e: HttpError) -> ToolError {
    ToolError::Failed(format!("fetching {url}: {e}"))
}

/// `location` read against `base`: absolute, or a path on the same origin.
fn follow(base: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_owned();
    }
    let origin_end = base
        .find("://")
        .map(|s| s + 3)
        .and_then(|start| base[start..].find('/').map(|i| start + i))
        .unwrap_or(base.len());
    if location.starts_with('/') {
        format!("{}{location}", &base[..origin_end])
    } else {
        let dir_end = base
            .rfind('/')
            .filter(|&i| i >= origin_end)
            .unwrap_or(origin_end);
        format!("{}/{location}", &base[..dir_end])
    }
}

fn fetch(args: FetchArgs, ctx: &Context) -> Result<Reply<Fetched>, ToolError> {
    let max = args.max_bytes.unwrap_or(DEFAULT_MAX_BYTES).min(MAX_BYTES) as usize;
    let mut url = args.url.as_str().to_owned();
    let mut redirects = Vec::new();
    loop {
        if ctx.cancelled() {
            return Err(ToolError::Failed("cancelled".into()));
        }
        let response = http::send(&Request::get(&url), max).map_err(|e| failed(&url, e))?;
        let location = response.header("location");
        match (response.status, location) {
            (301 | 302 | 303 | 307 | 308, Some(location)) if redirects.len() < MAX_REDIRECTS => {
                url = follow(&url, location);
                redirects.push(url.clone());
            }
            (301 | 302 | 303 | 307 | 308, Some(_)) => {
                return Err(ToolError::Failed(format!(
                    "more than {MAX_REDIRECTS} redirects, the last to {url}"
                )));
            }
            _ => {
                let text = String::from_utf8_lossy(&response.body).into_owned();
                let summary = format!(
                    "{} {}{}\n\n{}",
                    response.status,
                    url,
                    if response.truncated {
                        " (truncated)"
                    } else {
                        ""
                    },
                    text
                );
                return Ok(Reply::new(Fetched {
                    url,
                    status: response.status,
                    content_type: response.header("content-type").map(str::to_owned),
                    text,
                    truncated: response.truncated,
                    redirects,
                })
                .with_text(summary));
            }
        }
    }
}

toolwarden_plugin::export!(tools);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_locations_are_read_against_the_request() {
        assert_eq!(
            follow("https://a.org/x/y", "https://b.org/z"),
            "https://b.org/z"
        );
        assert_eq!(follow("https://a.org/x/y", "/z"), "https://a.org/z");
        assert_eq!(follow("https://a.org/x/y", "z"), "https://a.org/x/z");
        assert_eq!(follow("https://a.org", "/z"), "https://a.org/z");
    }

    #[test]
    fn declares_network_and_a_uri_argument() {
        let tool = &tools()[0];
        assert_eq!(tool.input_schema()["properties"]["url"]["format"], "uri");
    }
}
