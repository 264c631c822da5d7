//! How a rule's `when` matches one argument value: globs read the value as
//! a workspace path (or as a URL, for a glob that starts with `http://` or
//! `https://`), scalars compare by value, `not` inverts.

use super::super::PolicyError;
use crate::canonical_url::{CanonicalUrl, UrlGlob, UrlGlobError, UrlPattern};
use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;

/// How one argument value is matched, as written in `when`.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgPattern {
    /// A string glob, matched against the argument read as a path (`./a//b/../c`
    /// is `a/c`); `*` stays within one path segment, `**` crosses segments.
    /// A glob that starts with `http://` or `https://` is matched against the
    /// argument read as a URL the way browsers read it (`HTTPS://Docs.RS/a/../b`
    /// is `https://docs.rs/b`); a value that is no such URL does not match.
    /// Non-string values never match.
    Glob(String),
    /// Equal to this scalar (numbers compare by value).
    Exact(Value),
    /// The inner pattern does not match (a missing argument does not match).
    Not(Box<ArgPattern>),
}

#[derive(Debug)]
pub(super) enum Compiled {
    Glob(GlobMatcher),
    UrlGlob(UrlGlob),
    Exact(Value),
    Not(Box<Compiled>),
}

pub(super) fn compile_pattern(
    pointer: &str,
    pattern: &ArgPattern,
    error: &dyn Fn(String, &str) -> PolicyError,
) -> Result<Compiled, PolicyError> {
    let glob_matcher = |glob: &str| {
        GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            .map(|g| g.compile_matcher())
            .map_err(|e| {
                error(
                    format!("`when.\"{pointer}\"`: `{glob}` is not a valid glob: {e}"),
                    "e.g. \"src/**\", \"*.md\" or \"https://docs.rs/**\"",
                )
            })
    };
    Ok(match pattern {
        ArgPattern::Glob(glob) => match UrlGlob::new(glob) {
            Ok(Some(url)) => Compiled::UrlGlob(url),
            Ok(None) => Compiled::Glob(glob_matcher(glob)?),
            Err(UrlGlobError(why)) => {
                return Err(error(
                    format!("`when.\"{pointer}\"`: {why}"),
                    "e.g. \"https://docs.rs/**\" or \"http://localhost:*/admin/**\"",
                ));
            }
        },
        ArgPattern::Exact(value) => Compiled::Exact(value.clone()),
        ArgPattern::Not(inner) => Compiled::Not(Box::new(compile_pattern(pointer, inner, error)?)),
    })
}

/// Reads a string as a workspace path: drops `.` and empty segments and
/// resolves `..` lexically, so `src/../secrets/key` is matched as
/// `secrets/key` and cannot slip past a rule about `secrets/**`.
pub(super) fn normalize_path(text: &str) -> String {
    let absolute = text.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for segment in text.split('/') {
        match segment {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

pub(super) fn same_scalar(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

impl Compiled {
    /// The pattern as one about URLs, when it is one.
    pub(super) fn url_pattern(&self) -> Option<UrlPattern> {
        match self {
            Compiled::UrlGlob(glob) => Some(UrlPattern::Glob(glob.clone())),
            Compiled::Not(inner) => Some(UrlPattern::Not(Box::new(inner.url_pattern()?))),
            Compiled::Glob(_) | Compiled::Exact(_) => None,
        }
    }

    pub(super) fn matches(&self, value: Option<&Value>) -> bool {
        match (self, value) {
            (Compiled::Not(inner), v) => !inner.matches(v),
            (Compiled::Glob(glob), Some(Value::String(s))) => glob.is_match(normalize_path(s)),
            (Compiled::UrlGlob(glob), Some(Value::String(s))) => {
                CanonicalUrl::parse(s).is_some_and(|url| glob.matches(&url))
            }
            (Compiled::Exact(expected), Some(v)) => same_scalar(expected, v),
            (Compiled::Glob(_) | Compiled::UrlGlob(_) | Compiled::Exact(_), _) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::normalize_path;

    #[test]
    fn paths_are_normalized_lexically_before_matching() {
        assert_eq!(normalize_path("./src//a/./b.rs"), "src/a/b.rs");
        assert_eq!(normalize_path("src/../secrets/key"), "secrets/key");
        assert_eq!(normalize_path("../../x"), "../../x");
        assert_eq!(normalize_path("/etc/../etc/passwd"), "/etc/passwd");
    }
}
