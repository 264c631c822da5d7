//! The fuzz targets' entry points on the stable toolchain: every saved input
//! in `fuzz/corpus/<target>/` (seeds and every crash ever found, kept as
//! regression tests) plus a few thousand inputs from a seeded generator that
//! mutates them. A panic fails the test; each input is named when it does.
//! Long runs happen by hand with cargo-fuzz (see SECURITY.md).

use std::path::{Path, PathBuf};
use toolwarden::fuzzing;

/// Same seed, same inputs: a failure here reproduces.
const SEED: u64 = 0x7001_3a2d_e5c0_ffee;

/// xorshift64*: enough to spread mutations, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Tokens that make structured inputs interesting when spliced in.
const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b":",
    b",",
    b"null",
    b"true",
    b"1e999",
    b"-0",
    b"\\u0000",
    b"\\ud800",
    b"..",
    b"/",
    b"**",
    b"[[rule]]\n",
    b"tools = [\"*\"]\n",
    b"when = { \"/a\" = ",
    b"{ not = ",
    b"decision = \"ask\"\n",
    b"reason = \"r\"\n",
    b"\n",
    b"=",
    b"\xff",
    b"\0asm",
];

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut input = seeds[rng.below(seeds.len())].clone();
    for _ in 0..=rng.below(4) {
        let at = rng.below(input.len() + 1);
        match rng.below(6) {
            0 if !input.is_empty() => {
                let i = rng.below(input.len());
                input[i] ^= 1 << rng.below(8);
            }
            1 => {
                let token = TOKENS[rng.below(TOKENS.len())];
                input.splice(at..at, token.iter().copied());
            }
            2 if !input.is_empty() => {
                let end = (at + rng.below(16)).min(input.len());
                input.drain(at..end);
            }
            3 => input.truncate(at),
            4 if !input.is_empty() => {
                let from = rng.below(input.len());
                let end = (from + rng.below(64)).min(input.len());
                let copy = input[from..end].to_vec();
                input.splice(at..at, copy);
            }
            _ => {
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len() + 1);
                input.extend_from_slice(&other[from..]);
            }
        }
    }
    input
}

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let path = e.expect("corpus entry").path();
            let bytes = std::fs::read(&path).expect("corpus file");
            (path, bytes)
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no seeds", dir.display());
    files
}

/// Runs `target` over its corpus and `generated` mutated inputs, naming the
/// input that panicked.
fn smoke(name: &str, target: fn(&[u8]), extra_seeds: Vec<Vec<u8>>, generated: usize) {
    let saved = corpus(name);
    for (path, bytes) in &saved {
        if std::panic::catch_unwind(|| target(bytes)).is_err() {
            panic!("{name} panicked on {}", path.display());
        }
    }
    let mut seeds: Vec<Vec<u8>> = saved.into_iter().map(|(_, b)| b).collect();
    seeds.extend(extra_seeds);
    let mut rng = Rng(SEED ^ name.len() as u64);
    for i in 0..generated {
        let input = mutate(&mut rng, &seeds);
        if std::panic::catch_unwind(|| target(&input)).is_err() {
            panic!(
                "{name} panicked on generated input #{i} ({} bytes): {:?}",
                input.len(),
                String::from_utf8_lossy(&input[..input.len().min(200)])
            );
        }
    }
}

#[test]
fn config_file_target_survives_its_corpus_and_generated_inputs() {
    smoke("config_file", fuzzing::config_file, Vec::new(), 4000);
}

#[test]
fn arguments_target_survives_its_corpus_and_generated_inputs() {
    smoke("arguments", fuzzing::arguments, Vec::new(), 4000);
}

#[test]
fn plugin_target_survives_its_corpus_and_generated_inputs() {
    let calc = std::fs::read(crate::harness::wasm(toolwarden_tests::CALC)).expect("calc");
    // Cut real components short at many points: every prefix must be refused.
    let mut rng = Rng(SEED);
    for _ in 0..150 {
        let cut = rng.below(calc.len());
        fuzzing::plugin(&calc[..cut]);
    }
    let header: Vec<u8> = calc[..calc.len().min(2048)].to_vec();
    smoke("plugin", fuzzing::plugin, vec![header], 300);
}
