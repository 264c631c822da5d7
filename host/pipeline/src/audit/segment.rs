//! A stretch of the audit chain taken out of the database (`audit export`,
//! the retention archive): JSON lines, a header and then every record
//! exactly as it was stored (its `data` as the stored text, since the hash
//! covers that text), so `audit verify --file` checks the stretch with
//! nothing but the file. Knows the file format and how to check it; never
//! touches the database.

use super::record_hash;
use crate::store::{AuditRow, NewAuditRow};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::io::{self, BufRead, Write};
use std::sync::Arc;

/// The format's version, the header's first key.
const FORMAT: u32 = 1;

/// The first line: what the file should hold, so a file cut short or
/// padded shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentHeader {
    pub toolwarden_audit_segment: u32,
    pub first_seq: i64,
    pub last_seq: i64,
    pub records: i64,
    /// The first record's link: the hash of the record before the stretch
    /// (all zeros when the stretch starts the chain).
    pub prev_hash: String,
    pub last_hash: String,
    pub exported_ms: i64,
}

impl SegmentHeader {
    pub fn new(first_seq: i64, prev_hash: String, last_seq: i64, last_hash: String) -> Self {
        SegmentHeader {
            toolwarden_audit_segment: FORMAT,
            first_seq,
            last_seq,
            records: last_seq - first_seq + 1,
            prev_hash,
            last_hash,
            exported_ms: crate::store::now_ms(),
        }
    }
}

/// One record as stored.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line<'a> {
    seq: i64,
    ts_ms: i64,
    call_id: Cow<'a, str>,
    session: Cow<'a, str>,
    tool: Cow<'a, str>,
    kind: Cow<'a, str>,
    data: Cow<'a, str>,
    prev_hash: Cow<'a, str>,
    hash: Cow<'a, str>,
}

/// Writes a segment's lines: the header, then each record.
pub struct SegmentWriter<W: Write> {
    out: W,
}

impl<W: Write> SegmentWriter<W> {
    pub fn start(mut out: W, header: &SegmentHeader) -> io::Result<Self> {
        serde_json::to_writer(&mut out, header)?;
        out.write_all(b"\n")?;
        Ok(SegmentWriter { out })
    }

    pub fn record(&mut self, row: &AuditRow) -> io::Result<()> {
        let line = Line {
            seq: row.seq,
            ts_ms: row.row.ts_ms,
            call_id: Cow::Borrowed(&row.row.call_id),
            session: Cow::Borrowed(&row.row.session),
            tool: Cow::Borrowed(&row.row.tool),
            kind: Cow::Borrowed(&row.row.kind),
            data: Cow::Borrowed(&row.row.data),
            prev_hash: Cow::Borrowed(&row.prev_hash),
            hash: Cow::Borrowed(&row.hash),
        };
        serde_json::to_writer(&mut self.out, &line)?;
        self.out.write_all(b"\n")
    }

    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// What checking a segment file found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum SegmentCheck {
    /// Every record links to the one before and matches its hash, and the
    /// file holds exactly what its header says.
    Intact {
        first_seq: i64,
        last_seq: i64,
        records: i64,
        /// Where the stretch hangs on the chain before it.
        prev_hash: String,
        /// What the record after it (the database's first after the cut)
        /// must link to.
        last_hash: String,
    },
    /// The first line (1: the header) that does not fit, and why.
    Broken { line: u64, problem: String },
}

/// Checks a segment read from `input`.
pub fn verify_segment(input: impl BufRead) -> io::Result<SegmentCheck> {
    let broken = |line: u64, problem: String| Ok(SegmentCheck::Broken { line, problem });
    let mut lines = input.lines();
    let Some(first) = lines.next().transpose()? else {
        return broken(1, "the file is empty: no segment header".into());
    };
    let header: SegmentHeader = match serde_json::from_str(&first) {
        Ok(header) => header,
        Err(e) => return broken(1, format!("not a toolwarden audit segment header: {e}")),
    };
    if header.toolwarden_audit_segment != FORMAT {
        return broken(
            1,
            format!(
                "segment format {} is not the {FORMAT} this host reads",
                header.toolwarden_audit_segment
            ),
        );
    }
    let mut expected = header.first_seq;
    let mut prev = header.prev_hash.clone();
    let mut number = 1;
    for text in lines {
        number += 1;
        let text = text?;
        let line: Line = match serde_json::from_str(&text) {
            Ok(line) => line,
            Err(e) => return broken(number, format!("not a record: {e}")),
        };
        if line.seq != expected {
            return broken(
                number,
                format!(
                    "expected record {expected}, found {}: records were removed or reordered",
                    line.seq
                ),
            );
        }
        if line.prev_hash != prev {
            return broken(
                number,
                "its link to the previous record is wrong: a record before it was altered, \
                 removed or reordered"
                    .into(),
            );
        }
        let row = NewAuditRow {
            ts_ms: line.ts_ms,
            call_id: Arc::from(line.call_id),
            session: Arc::from(line.session),
            tool: Arc::from(line.tool),
            kind: Cow::Owned(line.kind.into_owned()),
            data: line.data.into_owned(),
        };
        if record_hash(line.seq, &row, &prev) != line.hash {
            return broken(
                number,
                "its content does not match its hash: the record was altered".into(),
            );
        }
        prev = line.hash.into_owned();
        expected += 1;
    }
    let records = expected - header.first_seq;
    if records != header.records || expected - 1 != header.last_seq || prev != header.last_hash {
        return broken(
            number + 1,
            format!(
                "the file ends after {records} records, but its header says {} ending with \
                 record {}: it was cut short or its header altered",
                header.records, header.last_seq
            ),
        );
    }
    Ok(SegmentCheck::Intact {
        first_seq: header.first_seq,
        last_seq: header.last_seq,
        records,
        prev_hash: header.prev_hash,
        last_hash: header.last_hash,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Checkpoint;

    fn chain(n: i64) -> Vec<AuditRow> {
        let mut prev = Checkpoint::genesis().hash;
        (1..=n)
            .map(|seq| {
                let row = NewAuditRow {
                    ts_ms: seq,
                    call_id: Arc::from("c"),
                    session: Arc::from("s"),
                    tool: Arc::from("t"),
                    kind: Cow::Borrowed("call"),
                    data: format!(r#"{{"n":{seq}}}"#),
                };
                let hash = record_hash(seq, &row, &prev);
                AuditRow {
                    seq,
                    row,
                    prev_hash: std::mem::replace(&mut prev, hash.clone()),
                    hash,
                }
            })
            .collect()
    }

    fn written(rows: &[AuditRow], header: &SegmentHeader) -> String {
        let mut writer = SegmentWriter::start(Vec::new(), header).unwrap();
        for row in rows {
            writer.record(row).unwrap();
        }
        String::from_utf8(writer.finish().unwrap()).unwrap()
    }

    #[test]
    fn a_written_segment_verifies_and_any_change_to_it_shows() {
        let rows = chain(3);
        let header = SegmentHeader::new(1, Checkpoint::genesis().hash, 3, rows[2].hash.clone());
        let text = written(&rows, &header);
        let intact = verify_segment(text.as_bytes()).unwrap();
        assert!(
            matches!(
                intact,
                SegmentCheck::Intact {
                    records: 3,
                    last_seq: 3,
                    ..
                }
            ),
            "{intact:?}"
        );
        let broken = |text: &str| match verify_segment(text.as_bytes()).unwrap() {
            SegmentCheck::Broken { line, problem } => (line, problem),
            intact => panic!("{intact:?}"),
        };
        let (line, problem) = broken(&text.replace(r#"\"n\":2"#, r#"\"n\":7"#));
        assert_eq!(line, 3);
        assert!(problem.contains("altered"), "{problem}");
        let lines: Vec<&str> = text.lines().collect();
        let (line, _) = broken(&[lines[0], lines[1], lines[3]].join("\n"));
        assert_eq!(line, 3, "record 2 is missing");
        let (_, problem) = broken(&lines[..3].join("\n"));
        assert!(problem.contains("cut short"), "{problem}");
        let (line, _) = broken(&text.replacen(
            "\"toolwarden_audit_segment\":1",
            "\"toolwarden_audit_segment\":9",
            1,
        ));
        assert_eq!(line, 1);
        let (line, _) = broken("");
        assert_eq!(line, 1);
    }
}
