//! Samples a small batch on the CPU and prints each row's token.
//!
//!     cargo run --example sample
//!
//! Four requests of a toy vocabulary, each with its own seed and settings,
//! the way an engine batches them; the third row is greedy, the fourth has a
//! NaN logit (reported in its row status, not as an error).

use tokensift::{Config, Logits, Outputs, RowStatus, Sampler, SamplingParams};

fn main() -> Result<(), tokensift::Error> {
    const ROWS: usize = 4;
    const VOCAB: usize = 16;

    // Row r: a smooth bump centred at token 3 + 3r.
    let mut logits = vec![0f32; ROWS * VOCAB];
    for r in 0..ROWS {
        let centre = (3 + 3 * r) as f32;
        for (i, x) in logits[r * VOCAB..(r + 1) * VOCAB].iter_mut().enumerate() {
            let d = i as f32 - centre;
            *x = 4.0 - 0.5 * d * d;
        }
    }
    logits[3 * VOCAB + 5] = f32::NAN;

    let temperature = [1.0f32, 0.7, 0.0, 1.0];
    let top_k = [0i32, 4, 0, 0];
    let seeds = [101u64, 202, 303, 404];
    let step = 0u64; // the decode step: advance it every call
    let params = SamplingParams::new()
        .temperature_per_row(&temperature)
        .top_k_per_row(&top_k)
        .top_p(0.95)
        .seed_per_row(&seeds)
        .offset(step);

    let mut sampler = Sampler::new(Config::cpu().num_threads(2))?;
    let mut tokens = [0i32; ROWS];
    let mut status = [0i32; ROWS];
    let mut logprobs = [0f32; ROWS];
    let mut kept = [0i32; ROWS];
    sampler.sample(
        &Logits::f32(&logits, ROWS, VOCAB),
        &params,
        Outputs::new(&mut tokens)
            .row_status(&mut status)
            .logprobs(&mut logprobs)
            .kept_counts(&mut kept),
    )?;

    println!(
        "tokensift {} (CUDA available: {})",
        tokensift::version_string(),
        tokensift::backend_available(tokensift::Backend::Cuda)
    );
    for r in 0..ROWS {
        println!(
            "row {r}: T = {:<3} top_k = {:<2} -> token {:>2}  status {:?}  logprob {:>8.4}  kept {}",
            temperature[r],
            top_k[r],
            tokens[r],
            RowStatus::from_raw(status[r]),
            logprobs[r],
            kept[r]
        );
    }
    Ok(())
}
