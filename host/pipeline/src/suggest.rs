//! "Did you mean": the known name closest to one a person misspelt (a
//! config key, a value, a tool, a profile). A leaf: it knows nothing of
//! what the names are, and suggests nothing when nothing is close, since a
//! far-fetched guess misleads more than silence.

/// How alike two names must be (Jaro-Winkler) to be suggested.
const CLOSE_ENOUGH: f64 = 0.8;

/// The candidate closest to `given`, if one is close enough.
pub fn closest<'a>(given: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .filter(|candidate| *candidate != given)
        .map(|candidate| (strsim::jaro_winkler(given, candidate), candidate))
        .filter(|(score, _)| *score >= CLOSE_ENOUGH)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| candidate)
}

/// `; did you mean `x`?` for a message, or nothing.
pub fn did_you_mean<'a>(given: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(given, candidates)
        .map(|name| format!("; did you mean `{name}`?"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_finds_its_name_and_a_stranger_finds_none() {
        let names = ["read_file", "list_dir", "write_file"];
        assert_eq!(closest("read_fiel", names), Some("read_file"));
        assert_eq!(
            closest("timout_ms", ["timeout_ms", "fuel"]),
            Some("timeout_ms")
        );
        assert_eq!(closest("launch_rockets", names), None);
        assert_eq!(did_you_mean("lst_dir", names), "; did you mean `list_dir`?");
        assert_eq!(did_you_mean("zzz", names), "");
    }
}
