//! Shared helpers of the integration tests (no external crates).
#![allow(dead_code)]

use tokensift::{Config, Logits, Outputs, RowStatus, Sampler, SamplingParams};

/// splitmix64: a small, well-mixed generator for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// `n` logits ~ N(0, sigma^2).
    pub fn logits(&mut self, n: usize, sigma: f64) -> Vec<f32> {
        (0..n).map(|_| (sigma * self.normal()) as f32).collect()
    }
}

/// Everything a call writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Out {
    pub tokens: Vec<i32>,
    pub status: Vec<RowStatus>,
    pub logprobs: Vec<f32>,
    pub kept: Vec<i32>,
}

impl Out {
    /// Equal bit for bit (NaN logprobs compare equal to NaN).
    pub fn assert_same(&self, other: &Out, what: &str) {
        assert_eq!(self.tokens, other.tokens, "{what}: tokens");
        assert_eq!(self.status, other.status, "{what}: row status");
        assert_eq!(self.kept, other.kept, "{what}: kept counts");
        let a: Vec<u32> = self.logprobs.iter().map(|x| x.to_bits()).collect();
        let b: Vec<u32> = other.logprobs.iter().map(|x| x.to_bits()).collect();
        assert_eq!(a, b, "{what}: logprobs");
    }

    /// Row `r` as a one-row result.
    pub fn row(&self, r: usize) -> Out {
        Out {
            tokens: vec![self.tokens[r]],
            status: vec![self.status[r]],
            logprobs: vec![self.logprobs[r]],
            kept: vec![self.kept[r]],
        }
    }
}

pub fn cpu() -> Sampler {
    Sampler::new(Config::cpu()).expect("CPU sampler")
}

/// Samples with every output requested.
pub fn run(s: &mut Sampler, logits: &Logits<'_>, params: &SamplingParams<'_>) -> Out {
    let rows = logits.rows();
    let mut tokens = vec![-7i32; rows];
    let mut status = vec![-7i32; rows];
    let mut logprobs = vec![-7f32; rows];
    let mut kept = vec![-7i32; rows];
    s.sample(
        logits,
        params,
        Outputs::new(&mut tokens)
            .row_status(&mut status)
            .logprobs(&mut logprobs)
            .kept_counts(&mut kept),
    )
    .expect("sample");
    Out {
        tokens,
        status: status.into_iter().map(RowStatus::from_raw).collect(),
        logprobs,
        kept,
    }
}

/// Largest value, ties to the lowest index (-0.0 == +0.0), ignoring -inf.
pub fn argmax(row: &[f32]) -> i32 {
    let mut best = 0usize;
    for (i, &x) in row.iter().enumerate() {
        if x > row[best] {
            best = i;
        }
    }
    best as i32
}

/// bf16 bits of an f32 that bf16 represents exactly (asserted).
pub fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    assert_eq!(b & 0xffff, 0, "{x} is not exactly representable in bf16");
    (b >> 16) as u16
}

/// f16 bits of an f32 that binary16 represents exactly as a normal number,
/// zero or infinity (asserted).
pub fn f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    if x == 0.0 {
        return sign;
    }
    if x.is_infinite() {
        return sign | 0x7c00;
    }
    let exp = ((b >> 23) & 0xff) as i32 - 127;
    let mant = b & 0x7f_ffff;
    assert!(
        (-14..=15).contains(&exp),
        "{x} is outside the normal f16 range"
    );
    assert_eq!(mant & 0x1fff, 0, "{x} has more than 11 significant bits");
    sign | (((exp + 15) as u16) << 10) | ((mant >> 13) as u16)
}
