//! Row 14: what the policy costs as the rules grow.

use crate::host::{Host, runtime, settle};
use crate::summary::round;
use crate::{CONFIG, READ_ARGS};
use serde_json::{Map, Value, json};
use toolwarden::{CallRequest, ConfigBuilder, Controller, Status, Tracing};

/// Row 14: a governed `read_file` among 1, 100 and 1,000 rules, all but
/// one of them `when` rules for other tools (a decision indexes the rules
/// by tool, so those should cost nothing): the whole call as the host
/// timed it, and its policy step from the trace.
pub fn row(host: &Host, scale: usize, out: &mut Map<String, Value>) {
    let rt = runtime();
    let mut rows = Map::new();
    let mut one = 0.0;
    for rules in [1, 100, 1000] {
        let mut config = CONFIG.to_owned();
        for i in 1..rules {
            config.push_str(&format!(
                "\n[[rule]]\ntools = [\"other_{i}\"]\ndecision = \"deny\"\nreason = \"r{i}\"\n\
                 when = {{ \"/path\" = \"secret/{i}/**\" }}\n"
            ));
        }
        let state = host.state.join(format!("policy-{rules}"));
        std::fs::create_dir_all(&state).expect("mkdir");
        let controller = Controller::new(
            ConfigBuilder::new(&host.workspace)
                .plugins_dir(&host.plugins)
                .state_dir(&state)
                .config_text(&config)
                .build()
                .expect("config"),
        )
        .expect("host starts");
        let mut policy = Vec::new();
        let mut whole = Vec::new();
        for _ in 0..2000 * scale {
            let mut request = CallRequest::new("read_file", READ_ARGS);
            request.tracing = Tracing::Steps;
            let result = rt.block_on(controller.handle(request));
            assert_eq!(result.status, Status::Ok, "{result:?}");
            policy.extend(
                result
                    .trace
                    .iter()
                    .filter(|s| s.step == "policy")
                    .map(|s| s.us),
            );
            whole.push(result.duration_us);
        }
        let median = |v: &mut Vec<u64>| {
            v.sort_unstable();
            v[v.len() / 2] as f64
        };
        let (step, call) = (median(&mut policy), median(&mut whole));
        if rules == 1 {
            one = call.max(1.0);
        }
        println!(
            "14. governed read_file among {rules:>4} rules: whole call median {call:>6.1} µs ({:.2}x one rule), its policy step {step:.0} µs",
            call / one
        );
        rows.insert(
            format!("{rules}_rules"),
            json!({ "call_median_us": call, "policy_step_median_us": step, "ratio_to_one_rule": round(call / one * 100.0) / 100.0 }),
        );
        settle(&controller);
    }
    out.insert("policy_scale".into(), Value::Object(rows));
}
