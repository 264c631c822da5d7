//! Results richer than text (contract 0.2.0): content blocks reach every
//! front end in the shape it takes, count against the output limit, are
//! checked before anyone sees them, and leave only their size and type in
//! the audit.

use crate::harness::{ALLOW_ALL, TestHost, call, run_cli, run_cli_with_stdin};
use serde_json::{Value, json};
use toolwarden::{AuditFilter, Block, ErrorCode, Status};
use toolwarden_tests::RICH_CONTENT;

const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAACklEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==";

#[test]
fn every_kind_of_block_reaches_the_caller_in_order() {
    let t = TestHost::new(&[RICH_CONTENT]);
    let host = t.controller();
    let r = call(&host, "rich_mixed", "{}");
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    assert_eq!(r.content.as_deref(), Some("six blocks follow"));
    let kinds: Vec<&str> = r.blocks.iter().map(Block::kind).collect();
    assert_eq!(
        kinds,
        [
            "text",
            "image",
            "audio",
            "resource_link",
            "resource",
            "resource"
        ]
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(
        json["blocks"][1],
        json!({"type": "image", "mime_type": "image/png", "data": PNG_BASE64})
    );
    assert_eq!(
        json["blocks"][4]["contents"],
        json!({"kind": "text", "data": "the summary"})
    );
    // The audit keeps what there was, never the bytes.
    let records = host
        .records()
        .audit(&AuditFilter {
            call_id: Some(r.call_id.clone()),
            ..AuditFilter::default()
        })
        .unwrap();
    let outcome = records.iter().find(|r| r.kind == "outcome").unwrap();
    assert_eq!(
        outcome.data["content"][1],
        json!({"type": "image", "mime_type": "image/png", "bytes": 76})
    );
    let stored = serde_json::to_string(&records).unwrap();
    assert!(
        !stored.contains(PNG_BASE64) && !stored.contains("the summary"),
        "{stored}"
    );
    let expected_bytes =
        r.content.as_ref().unwrap().len() + r.blocks.iter().map(Block::size).sum::<usize>();
    assert_eq!(outcome.data["output_bytes"], expected_bytes);
}

#[test]
fn every_byte_of_every_block_counts_against_the_output_limit() {
    let t =
        TestHost::new(&[RICH_CONTENT]).config(&format!("[limits]\nmax_output_kb = 8\n{ALLOW_ALL}"));
    let host = t.controller();
    let small = call(&host, "rich_image", r#"{"kb":4}"#);
    assert_eq!(small.status, Status::Ok, "{small:#?}");
    let big = call(&host, "rich_image", r#"{"kb":9}"#);
    assert_eq!(big.code(), Some(ErrorCode::OutputTooLarge), "{big:#?}");
    assert!(big.blocks.is_empty());
}

#[test]
fn a_block_no_client_could_take_is_invalid_output() {
    let t = TestHost::new(&[RICH_CONTENT]);
    let r = call(&t.controller(), "rich_bad_block", "{}");
    assert_eq!(r.code(), Some(ErrorCode::InvalidToolOutput), "{r:#?}");
    assert!(r.error.unwrap().message.contains("text/html"));
}

#[test]
fn the_cli_describes_binary_blocks_and_json_carries_them() {
    let t = TestHost::new(&[RICH_CONTENT]);
    let (code, out, err) = run_cli(t.cli().args(["call", "rich_mixed", "{}"]));
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "six blocks follow",
            "a second text",
            "[image image/png, 67 bytes]",
            "[audio audio/wav, 12 bytes]",
            "[resource link `report`: https://example.org/report.pdf]",
            "[resource file:///notes/summary.txt (text/plain), 11 bytes]",
            "[resource file:///notes/report.pdf (application/pdf), 16 bytes]",
        ]
    );
    let (_, out, _) = run_cli(t.cli().args(["call", "rich_mixed", "{}", "--json"]));
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["blocks"][1]["data"], PNG_BASE64);
}

#[test]
fn a_turn_gives_each_api_what_it_takes_and_says_what_it_dropped() {
    let t = TestHost::new(&[RICH_CONTENT]);
    let openai =
        r#"[{"id":"c1","type":"function","function":{"name":"rich_mixed","arguments":"{}"}}]"#;
    let (code, out, err) = run_cli_with_stdin(t.cli().args(["turn", "-"]), openai.as_bytes());
    assert_eq!(code, 0, "{err}");
    let messages: Value = serde_json::from_str(&out).unwrap();
    let text = messages[0]["content"].as_str().unwrap();
    assert!(
        text.starts_with("six blocks follow\n\na second text"),
        "{text}"
    );
    assert!(text.contains("[image image/png, 67 bytes]"), "{text}");
    assert!(
        text.contains("[resource file:///notes/summary.txt]\nthe summary"),
        "{text}"
    );

    let anthropic = r#"[{"type":"tool_use","id":"t1","name":"rich_mixed","input":{}}]"#;
    let (code, out, err) = run_cli_with_stdin(t.cli().args(["turn", "-"]), anthropic.as_bytes());
    assert_eq!(code, 0, "{err}");
    let blocks: Value = serde_json::from_str(&out).unwrap();
    let content = blocks[0]["content"].as_array().unwrap();
    let kinds: Vec<&str> = content
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["text", "text", "image", "text", "text", "text", "document"]
    );
    assert_eq!(
        content[2],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}})
    );
    assert_eq!(content[3]["text"], "[audio audio/wav, 12 bytes]");
    assert_eq!(content[6]["source"]["media_type"], "application/pdf");
}

#[test]
fn mcp_maps_every_block_one_to_one() {
    let t = TestHost::new(&[RICH_CONTENT]);
    let result = crate::mcp::call_tool(&t, "rich_mixed", json!({}));
    let content = result["content"].as_array().unwrap();
    let kinds: Vec<&str> = content
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "text",
            "text",
            "image",
            "audio",
            "resource_link",
            "resource",
            "resource"
        ]
    );
    assert_eq!(
        content[2],
        json!({"type": "image", "data": PNG_BASE64, "mimeType": "image/png"})
    );
    assert_eq!(content[4]["uri"], "https://example.org/report.pdf");
    assert_eq!(content[4]["mimeType"], "application/pdf");
    assert_eq!(
        content[5]["resource"],
        json!({"uri": "file:///notes/summary.txt", "mimeType": "text/plain", "text": "the summary"})
    );
    assert_eq!(content[6]["resource"]["blob"], "JVBERi0xLjQgbWluaW1hbA==");
    assert_eq!(result["structuredContent"], json!({"blocks": 6}));
}
