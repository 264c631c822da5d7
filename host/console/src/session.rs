//! Who is signed in to the console: a session per browser, made when a
//! person signs in with the `[auth]` issuer, when the bearer token is given
//! on the login form, or (on a loopback console with neither) on the first
//! visit; kept in a cookie that is `HttpOnly` (no script reads it) and
//! `SameSite=Strict` (no other site's page sends it), with a CSRF token
//! every form must carry. A session knows whom it was opened for, and
//! that is who the console's decisions are recorded under.
//!
//! Sessions live in memory: a restart signs everyone out, which costs a
//! login and never leaves a valid session behind on disk. Signing out
//! ends the session on the server, so a copy of its cookie is worth
//! nothing after.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use toolwarden::caller::Caller;
pub use toolwarden_auth::same_secret;

/// The cookie's name.
pub const COOKIE: &str = "toolwarden_console";
/// How long a session lasts from its login.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Sessions kept at once, so a client that logs in (or, on a console
/// without a token, visits without a cookie) again and again cannot grow
/// the server. Past it, one goes: first the oldest that was never used
/// again after it was opened (what a flood of cookie-less requests
/// leaves), then the one used longest ago; a person who keeps using the
/// console is the last to go.
pub const MAX_SESSIONS: usize = 64;

/// Whom a session was opened for.
#[derive(Clone, Debug)]
pub enum Who {
    /// A person the issuer signed in.
    Person(Caller),
    /// Whoever gave the shared token.
    SharedToken,
    /// Whoever reached a loopback console that asks for nothing.
    ThisMachine,
}

impl Who {
    /// Who decisions made in this session are recorded under. The shared
    /// token and an open loopback console prove no more than the token.
    pub fn approver(&self) -> Caller {
        match self {
            Who::Person(person) => person.clone(),
            Who::SharedToken | Who::ThisMachine => Caller::shared_token(),
        }
    }

    /// In words, for the page's header.
    fn describe(&self) -> String {
        match self {
            Who::Person(person) => match &person.proof {
                toolwarden::caller::Proof::SignIn { issuer } => {
                    format!("Signed in as {} ({issuer})", person.subject)
                }
                _ => format!("Signed in as {}", person.subject),
            },
            Who::SharedToken => "Signed in with the shared token".into(),
            Who::ThisMachine => "Open to this machine (no sign-in)".into(),
        }
    }
}

/// One signed-in browser.
#[derive(Clone, Debug)]
pub struct Session {
    pub csrf: String,
    pub who: Who,
    /// `who`, described once.
    described: String,
    made: Instant,
    /// When its cookie last came back.
    seen: Instant,
    /// Its cookie came back at least once: a browser that keeps it.
    returned: bool,
}

impl Session {
    pub fn viewer(&self) -> crate::pages::Viewer<'_> {
        crate::pages::Viewer {
            csrf: &self.csrf,
            who: &self.described,
        }
    }

    /// Which session goes first past the cap: the lowest key.
    fn keep_rank(&self) -> (bool, Instant) {
        (self.returned, self.seen)
    }
}

#[derive(Debug, Default)]
pub struct Sessions {
    live: Mutex<HashMap<String, Session>>,
}

/// 32 random bytes, hex: an id no one can guess.
fn secret() -> String {
    let mut bytes = [0u8; 32];
    // The OS's generator does not fail on Linux once booted; if it did,
    // the all-zero id would be refused below rather than handed out.
    if getrandom::fill(&mut bytes).is_err() {
        return String::new();
    }
    hex::encode(bytes)
}

impl Sessions {
    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.live
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A new session for `who`: its id (for the cookie) and the session.
    pub fn open(&self, who: Who) -> Option<(String, Session)> {
        let (id, csrf) = (secret(), secret());
        if id.is_empty() || csrf.is_empty() {
            return None;
        }
        let now = Instant::now();
        let session = Session {
            csrf,
            described: who.describe(),
            who,
            made: now,
            seen: now,
            returned: false,
        };
        let mut live = self.live();
        live.retain(|_, s| s.made.elapsed() < SESSION_TTL);
        if live.len() >= MAX_SESSIONS
            && let Some(first_to_go) = live
                .iter()
                .min_by_key(|(_, s)| s.keep_rank())
                .map(|(id, _)| id.clone())
        {
            live.remove(&first_to_go);
        }
        live.insert(id.clone(), session.clone());
        Some((id, session))
    }

    /// The live session a cookie names, marked as used now.
    pub fn get(&self, id: &str) -> Option<Session> {
        let mut live = self.live();
        let session = live
            .get_mut(id)
            .filter(|s| s.made.elapsed() < SESSION_TTL)?;
        session.returned = true;
        session.seen = Instant::now();
        Some(session.clone())
    }

    pub fn close(&self, id: &str) {
        self.live().remove(id);
    }
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (key, value) = pair.trim().split_once('=')?;
        (key == name).then_some(value)
    })
}

/// The `Set-Cookie` value that signs a browser in.
pub fn set_cookie(id: &str) -> String {
    format!(
        "{COOKIE}={id}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={}",
        SESSION_TTL.as_secs()
    )
}

/// The `Set-Cookie` value that signs it out.
pub fn clear_cookie() -> String {
    format!("{COOKIE}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_random_bounded_and_found_only_by_their_id() {
        let sessions = Sessions::default();
        let (id, session) = sessions.open(Who::ThisMachine).unwrap();
        assert_eq!(id.len(), 64);
        assert_ne!(id, session.csrf);
        assert_eq!(sessions.get(&id).unwrap().csrf, session.csrf);
        assert!(sessions.get("nope").is_none());
        for _ in 0..MAX_SESSIONS + 5 {
            sessions.open(Who::ThisMachine).unwrap();
        }
        assert_eq!(sessions.live().len(), MAX_SESSIONS);
    }

    #[test]
    fn a_flood_of_new_sessions_evicts_unused_ones_before_a_person_who_uses_the_console() {
        let sessions = Sessions::default();
        let (person, _) = sessions.open(Who::ThisMachine).unwrap();
        assert!(sessions.get(&person).is_some(), "the person came back once");
        let (idle, _) = sessions.open(Who::ThisMachine).unwrap();
        for _ in 0..10 * MAX_SESSIONS {
            sessions.open(Who::ThisMachine).unwrap();
        }
        assert!(
            sessions.get(&person).is_some(),
            "cookie-less visits evicted a session in use"
        );
        assert!(
            sessions.get(&idle).is_none(),
            "a session never used again went"
        );
        assert_eq!(sessions.live().len(), MAX_SESSIONS);
        // Sessions that are all in use go least recently used first.
        let used: Vec<String> = (0..MAX_SESSIONS)
            .map(|_| {
                let (id, _) = sessions.open(Who::ThisMachine).unwrap();
                sessions.get(&id);
                id
            })
            .collect();
        assert!(sessions.get(&person).is_none(), "{}", used.len());
        assert!(sessions.get(&used[1]).is_some());
    }

    #[test]
    fn the_cookie_is_read_by_name_only() {
        let header = format!("other=1; {COOKIE}=abc; x=y");
        assert_eq!(cookie(&header, COOKIE), Some("abc"));
        assert_eq!(cookie("toolwarden_console_x=1", COOKIE), None);
    }
}
