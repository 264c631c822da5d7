//! How a row's samples are summarized: median and p99, printed and as JSON.

use serde_json::{Value, json};
use std::time::Duration;

pub(crate) struct Summary {
    pub(crate) median_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) n: usize,
}

pub(crate) fn summarize(mut samples: Vec<Duration>) -> Summary {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[i].as_secs_f64() * 1e6
    };
    Summary {
        median_us: at(0.5),
        p99_us: at(0.99),
        n: samples.len(),
    }
}

impl Summary {
    pub(crate) fn json(&self) -> Value {
        json!({ "median_us": round(self.median_us), "p99_us": round(self.p99_us), "n": self.n })
    }

    pub(crate) fn line(&self, what: &str) {
        println!(
            "{what:<58} median {:>9.1} µs   p99 {:>9.1} µs   (n={})",
            self.median_us, self.p99_us, self.n
        );
    }
}

pub(crate) fn round(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}
