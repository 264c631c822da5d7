//! Where a running console can be reached, so that a message asking for a
//! person's approval can send them there, whichever process asked.
//!
//! A console announces itself in `<state>/console` (its URL and process id,
//! 0600, replaced atomically) and takes the file away when it stops; a file
//! left by a console that died is ignored because its process is gone.
//! Reads nothing else and decides nothing.

use std::path::{Path, PathBuf};

const FILE: &str = "console";

fn file(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE)
}

/// The URL of the console serving this state directory, if one is running.
pub fn read(state_dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(file(state_dir)).ok()?;
    let (pid, url) = text.trim().split_once(' ')?;
    let alive = pid
        .parse::<u32>()
        .is_ok_and(|pid| Path::new("/proc").join(pid.to_string()).exists());
    (alive && url.starts_with("http")).then(|| url.to_owned())
}

/// A console's announcement; dropping it takes it back.
#[derive(Debug)]
pub struct Announcement {
    path: PathBuf,
}

impl Drop for Announcement {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Announces that the console at `url` serves `state_dir`.
pub fn announce(state_dir: &Path, url: &str) -> std::io::Result<Announcement> {
    let path = file(state_dir);
    crate::private_file::replace(&path, format!("{} {url}\n", std::process::id()).as_bytes())?;
    Ok(Announcement { path })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_console_is_found_and_a_stopped_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()), None);
        let announced = announce(dir.path(), "http://127.0.0.1:8765/console").unwrap();
        assert_eq!(
            read(dir.path()).as_deref(),
            Some("http://127.0.0.1:8765/console")
        );
        drop(announced);
        assert_eq!(read(dir.path()), None);
        std::fs::write(
            dir.path().join(FILE),
            "999999999 http://127.0.0.1:1/console\n",
        )
        .unwrap();
        assert_eq!(read(dir.path()), None, "its process is gone");
    }
}
