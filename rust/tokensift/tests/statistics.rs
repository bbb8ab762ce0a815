//! (i) Frequencies: one row of V = 8 known logits drawn N = 20,000 times
//! with different offsets matches the softmax.
//!
//! Tolerance.  With a correct sampler, the count of token i is
//! Binomial(N, p_i) (draws with different offsets use disjoint Philox
//! counters, so they behave as independent), so the empirical frequency has
//! standard deviation sigma_i = sqrt(p_i (1 - p_i) / N).  We allow 5 sigma_i
//! per token.  The smallest expected count here is N p_i ~ 380, where the
//! binomial is close to normal, so one token exceeds 5 sigma with probability
//! about 5.7e-7 and any of the 8 with at most 8 * 5.7e-7 < 5e-6 (union
//! bound): a correct sampler essentially never fails, whatever the seed.  The
//! draw's own bias (23 random bits: about 2^-23 relative per probability) is
//! far below sigma_i (~1e-3).  The test also shows it has teeth: the same
//! counts must be rejected against the softmax at a temperature 25% off.

mod common;

use common::cpu;
use tokensift::{Logits, Outputs, SamplingParams};

const N: usize = 20_000;
const LOGITS: [f32; 8] = [2.0, 1.0, 0.5, 0.0, -0.5, -1.0, 1.5, 0.25];

/// softmax(x / t) restricted to the `k` largest (all when k = 0).
fn expected(t: f64, k: usize) -> [f64; 8] {
    let mut order: Vec<usize> = (0..8).collect();
    order.sort_by(|&a, &b| LOGITS[b].total_cmp(&LOGITS[a]));
    let kept = if k == 0 { 8 } else { k };
    let mut w = [0f64; 8];
    for &i in &order[..kept] {
        w[i] = (LOGITS[i] as f64 / t).exp();
    }
    let sum: f64 = w.iter().sum();
    w.map(|x| x / sum)
}

/// Largest |freq_i - p_i| / sigma_i over the tokens.
fn worst_z(freq: &[f64; 8], p: &[f64; 8]) -> f64 {
    let mut worst = 0f64;
    for i in 0..8 {
        if p[i] == 0.0 {
            assert_eq!(freq[i], 0.0, "token {i} is outside the kept set");
            continue;
        }
        let sigma = (p[i] * (1.0 - p[i]) / N as f64).sqrt();
        worst = worst.max((freq[i] - p[i]).abs() / sigma);
    }
    worst
}

#[test]
fn frequencies_match_the_softmax() {
    let mut s = cpu();
    // (temperature, top_k): plain sampling at T = 1 as asked, then the
    // temperature and top-k filter together.
    for (t, k) in [(1.0f32, 0usize), (0.7, 4)] {
        let p_true = expected(t as f64, k);
        let min_count = p_true
            .iter()
            .filter(|&&p| p > 0.0)
            .fold(f64::MAX, |m, &p| m.min(p * N as f64));
        assert!(
            min_count > 300.0,
            "the normal approximation needs large expected counts"
        );

        // N single-row calls, offsets 0..N (the decode steps of one request).
        let base = SamplingParams::new()
            .temperature(t)
            .top_k(k as i32)
            .seed(0x5eed);
        let mut counts = [0usize; 8];
        let mut tokens = [0i32; 1];
        let mut logprob = [0f32; 1];
        let mut kept = [0i32; 1];
        let row = Logits::f32(&LOGITS, 1, 8);
        let mut drawn = Vec::with_capacity(N);
        for offset in 0..N as u64 {
            s.sample(
                &row,
                &base.offset(offset),
                Outputs::new(&mut tokens)
                    .logprobs(&mut logprob)
                    .kept_counts(&mut kept),
            )
            .unwrap();
            let tok = tokens[0] as usize;
            counts[tok] += 1;
            drawn.push(tokens[0]);
            assert_eq!(kept[0] as usize, if k == 0 { 8 } else { k });
            assert!(
                (logprob[0] as f64 - p_true[tok].ln()).abs() < 1e-5,
                "logprob of token {tok}"
            );
        }

        // The same draws as one batch with a per-row offset slice.
        let many: Vec<f32> = LOGITS.iter().copied().cycle().take(8 * N).collect();
        let offsets: Vec<u64> = (0..N as u64).collect();
        let batch = s
            .sample_tokens(&Logits::f32(&many, N, 8), &base.offset_per_row(&offsets))
            .unwrap();
        assert_eq!(batch, drawn, "batch and single-row calls disagree");

        let freq = counts.map(|c| c as f64 / N as f64);
        let z = worst_z(&freq, &p_true);
        println!("T = {t}, top_k = {k}: counts {counts:?}, worst deviation {z:.2} sigma");
        assert!(
            z <= 5.0,
            "T = {t}, k = {k}: frequencies {freq:?} vs {p_true:?} ({z:.2} sigma)"
        );

        // Power: a 25% wrong temperature is rejected by the same counts.
        let wrong = expected(t as f64 * 1.25, k);
        let z_wrong = worst_z(&freq, &wrong);
        assert!(
            z_wrong > 5.0,
            "the test cannot tell T = {t} from {}: {z_wrong:.2} sigma",
            t * 1.25
        );
    }
}
