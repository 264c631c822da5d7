//! `$ref` chains in a compiled schema: refused when they loop without
//! consuming input, or run longer than [`MAX_REF_CHAIN`], so validating a
//! value can neither hang nor take an unbounded stack.

use super::SchemaError;
use super::node::{Node, err};

/// Most `$ref`s one schema may follow in a row without descending into a
/// property or item (directly or through `allOf`, `anyOf`, `oneOf`, `not`,
/// `if`/`then`/`else` or `dependentSchemas`). Validation takes
/// a stack frame per link, on whatever thread runs it (the HTTP server's
/// are small), so a chain's length must be bounded at load; no honest
/// schema comes near it.
pub const MAX_REF_CHAIN: usize = 32;

/// Refuses `$ref` chains that consume no input and are cyclic (`a` -> `b`
/// -> `a` through refs and in-place applicators only: validating them would
/// never end) or longer than [`MAX_REF_CHAIN`]. Walks with a stack of its own, so
/// a hostile chain of any length costs heap, never the thread's stack.
pub(super) fn check_ref_chains(
    root: &Node,
    defs: &[Node],
    pointers: &[String],
) -> Result<(), SchemaError> {
    fn immediate(node: &Node, out: &mut Vec<usize>) {
        out.extend(node.reference);
        for sub in &node.in_place {
            immediate(sub, out);
        }
    }
    let edges: Vec<Vec<usize>> = defs
        .iter()
        .map(|d| {
            let mut out = Vec::new();
            immediate(d, &mut out);
            out
        })
        .collect();
    let at = |i: usize| pointers.get(i).cloned().unwrap_or_default();
    let too_long = |i: usize| {
        err(
            &at(i),
            "$ref",
            format!(
                "a chain of more than {MAX_REF_CHAIN} `$ref`s that never descends into a property \
                 or item; flatten it"
            ),
        )
    };
    // 0 = unvisited, 1 = on the stack, 2 = done; `longest[i]`: links from i.
    let mut state = vec![0u8; defs.len()];
    let mut longest = vec![0usize; defs.len()];
    for start in 0..defs.len() {
        if state[start] != 0 {
            continue;
        }
        state[start] = 1;
        let mut stack = vec![(start, 0usize)];
        while let Some((i, next)) = stack.last_mut() {
            let i = *i;
            match edges[i].get(*next) {
                Some(&j) => {
                    *next += 1;
                    match state[j] {
                        0 => {
                            state[j] = 1;
                            stack.push((j, 0));
                        }
                        1 => {
                            return Err(err(
                                &at(j),
                                "$ref",
                                "a `$ref` cycle that never descends into a property or item; it could never be validated",
                            ));
                        }
                        _ => {}
                    }
                }
                None => {
                    longest[i] = 1 + edges[i].iter().map(|&j| longest[j]).max().unwrap_or(0);
                    if longest[i] > MAX_REF_CHAIN {
                        return Err(too_long(i));
                    }
                    state[i] = 2;
                    stack.pop();
                }
            }
        }
    }
    let mut from_root = Vec::new();
    immediate(root, &mut from_root);
    if let Some(&j) = from_root.iter().find(|&&j| longest[j] + 1 > MAX_REF_CHAIN) {
        return Err(too_long(j));
    }
    Ok(())
}
