//! What a call changed in the workspace: every file, link and directory it
//! created, changed or removed, each with what stood there before and
//! after. Computed by the host from the files themselves (by the scratch
//! copy, which uses this file and not the other way), never from a
//! plugin's account. Its digest is what an approval of a rehearsed call
//! binds; its rendering is what the person is shown.

use serde::{Deserialize, Serialize};
use sha2::Digest;
use std::collections::BTreeMap;

/// What stands at one path of the workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Node {
    File { sha256: String, bytes: u64 },
    Link { target: String },
    Dir,
}

/// Every path of a tree (workspace-relative, `/`-separated) and what
/// stands there.
pub type Manifest = BTreeMap<String, Node>;

/// One path the call changed: `None` before means it created it, `None`
/// after means it removed it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    pub path: String,
    pub before: Option<Node>,
    pub after: Option<Node>,
}

impl Change {
    /// `A`dded, `M`odified or `D`eleted, as `git status --short` says.
    pub fn letter(&self) -> char {
        match (&self.before, &self.after) {
            (None, _) => 'A',
            (_, None) => 'D',
            (Some(_), Some(_)) => 'M',
        }
    }
}

/// Everything a call changed, in path order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeSet {
    pub changes: Vec<Change>,
}

impl ChangeSet {
    /// The difference between two manifests of the same tree.
    pub fn between(before: &Manifest, after: &Manifest) -> ChangeSet {
        let mut changes = Vec::new();
        for (path, was) in before {
            match after.get(path) {
                Some(now) if now == was => {}
                now => changes.push(Change {
                    path: path.clone(),
                    before: Some(was.clone()),
                    after: now.cloned(),
                }),
            }
        }
        for (path, now) in after {
            if !before.contains_key(path) {
                changes.push(Change {
                    path: path.clone(),
                    before: None,
                    after: Some(now.clone()),
                });
            }
        }
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        ChangeSet { changes }
    }

    /// SHA-256 over every change: two change sets have the same digest
    /// exactly when they change the same paths from the same content to
    /// the same content.
    pub fn digest(&self) -> String {
        let mut hasher = sha2::Sha256::new();
        for change in &self.changes {
            hasher.update(change.path.as_bytes());
            hasher.update([0]);
            for node in [&change.before, &change.after] {
                hasher.update(serde_json::to_string(node).unwrap_or_default().as_bytes());
                hasher.update([0]);
            }
            hasher.update(b"\n");
        }
        hex::encode(hasher.finalize())
    }

    /// The paths it changes, in order.
    pub fn paths(&self) -> Vec<String> {
        self.changes.iter().map(|c| c.path.clone()).collect()
    }

    /// The change as a person reads it: a list of what it touches, then a
    /// unified diff per text file (`read_before` and `read_after` give a
    /// file's bytes on either side, when they can be shown). At most
    /// `max_bytes`; a longer rendering says, in its own words, that it is
    /// cut and what the whole change is.
    pub fn render(
        &self,
        read_before: impl Fn(&str) -> Option<Vec<u8>>,
        read_after: impl Fn(&str) -> Option<Vec<u8>>,
        max_bytes: usize,
    ) -> String {
        if self.changes.is_empty() {
            return "The call changes nothing in the workspace.\n".to_owned();
        }
        let mut out = format!(
            "The call changes {} path{} in the workspace:\n",
            self.changes.len(),
            if self.changes.len() == 1 { "" } else { "s" }
        );
        for change in &self.changes {
            out.push_str(&format!(
                "  {} {}{}\n",
                change.letter(),
                crate::presentation::one_line(&change.path),
                describe(change)
            ));
        }
        for change in &self.changes {
            let text = |node: &Option<Node>, read: &dyn Fn(&str) -> Option<Vec<u8>>| match node {
                Some(Node::File { .. }) => read(&change.path).map(String::from_utf8),
                None => Some(Ok(String::new())),
                Some(Node::Link { .. } | Node::Dir) => None,
            };
            let (Some(Ok(before)), Some(Ok(after))) = (
                text(&change.before, &read_before),
                text(&change.after, &read_after),
            ) else {
                continue;
            };
            let old = match change.before {
                Some(_) => format!("a/{}", change.path),
                None => "/dev/null".to_owned(),
            };
            let new = match change.after {
                Some(_) => format!("b/{}", change.path),
                None => "/dev/null".to_owned(),
            };
            out.push('\n');
            out.push_str(
                &similar::TextDiff::from_lines(&before, &after)
                    .unified_diff()
                    .context_radius(3)
                    .header(&old, &new)
                    .to_string(),
            );
        }
        if out.len() > max_bytes {
            let mut cut = crate::presentation::cut_to(out, max_bytes);
            cut.push_str(&format!(
                "\n[... the rest of the diff is cut here: the whole change is the {} paths \
                 listed at the top, and approving applies all of it]\n",
                self.changes.len()
            ));
            return cut;
        }
        out
    }
}

/// What a change does, for its line in the list.
fn describe(change: &Change) -> String {
    let node = |node: &Node| match node {
        Node::File { bytes, .. } => format!("file, {bytes} bytes"),
        Node::Link { target } => format!("link to `{}`", crate::presentation::one_line(target)),
        Node::Dir => "directory".to_owned(),
    };
    match (&change.before, &change.after) {
        (None, Some(after)) => format!(" (new {})", node(after)),
        (Some(before), None) => format!(" (removed {})", node(before)),
        (Some(before), Some(after)) => format!(" ({} -> {})", node(before), node(after)),
        (None, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(content: &str) -> Node {
        Node::File {
            sha256: hex::encode(sha2::Sha256::digest(content)),
            bytes: content.len() as u64,
        }
    }

    #[test]
    fn a_change_set_lists_what_was_created_changed_and_removed() {
        let before: Manifest = [
            ("a.txt".to_owned(), file("one\n")),
            ("gone.txt".to_owned(), file("x")),
            ("same.txt".to_owned(), file("s")),
        ]
        .into();
        let after: Manifest = [
            ("a.txt".to_owned(), file("two\n")),
            ("new".to_owned(), Node::Dir),
            ("same.txt".to_owned(), file("s")),
        ]
        .into();
        let set = ChangeSet::between(&before, &after);
        assert_eq!(set.paths(), ["a.txt", "gone.txt", "new"]);
        let letters: String = set.changes.iter().map(Change::letter).collect();
        assert_eq!(letters, "MDA");
        let shown = set.render(
            |p| (p == "a.txt").then(|| b"one\n".to_vec()),
            |p| (p == "a.txt").then(|| b"two\n".to_vec()),
            1 << 20,
        );
        assert!(
            shown.contains("  M a.txt") && shown.contains("-one") && shown.contains("+two"),
            "{shown}"
        );
        assert!(
            shown.contains("  D gone.txt (removed file, 1 bytes)"),
            "{shown}"
        );
        assert!(shown.contains("  A new (new directory)"), "{shown}");
    }

    #[test]
    fn digests_differ_exactly_when_the_changes_do() {
        let before: Manifest = [("a".to_owned(), file("1"))].into();
        let one = ChangeSet::between(&before, &[("a".to_owned(), file("2"))].into());
        let same = ChangeSet::between(&before, &[("a".to_owned(), file("2"))].into());
        let other = ChangeSet::between(&before, &[("a".to_owned(), file("3"))].into());
        assert_eq!(one.digest(), same.digest());
        assert_ne!(one.digest(), other.digest());
    }

    #[test]
    fn a_long_rendering_says_it_is_cut_and_what_the_whole_is() {
        let after: Manifest = (0..50)
            .map(|i| (format!("f{i}.txt"), file(&"x\n".repeat(100))))
            .collect();
        let set = ChangeSet::between(&Manifest::new(), &after);
        let shown = set.render(|_| None, |_| Some("x\n".repeat(100).into_bytes()), 4096);
        assert!(shown.len() < 4096 + 300);
        assert!(
            shown.contains("the whole change is the 50 paths"),
            "{shown}"
        );
    }
}
