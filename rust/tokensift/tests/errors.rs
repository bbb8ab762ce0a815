//! (f) Every error the safe API can return: a clear Error (status and a
//! message naming the argument), never a panic or undefined behaviour, and
//! the outputs untouched.

mod common;

use common::{cpu, Rng};
use tokensift::{
    backend_available, Backend, Config, DType, Error, Logits, Outputs, Sampler, SamplingParams,
    Status,
};

const RUST: &str = "tokensift (rust): ";

/// An error found by the library: its status, its message (non-empty,
/// naming `needle`).
fn library(e: Error, status: Status, needle: &str) {
    assert_eq!(e.status(), status, "{e}");
    assert!(!e.message().is_empty());
    assert!(
        !e.message().starts_with(RUST),
        "expected the library's message: {e}"
    );
    assert!(
        e.message().contains(needle),
        "message should name {needle:?}: {e}"
    );
}

/// An error found on the Rust side before calling into C.
fn rust_side(e: Error, status: Status, needle: &str) {
    assert_eq!(e.status(), status, "{e}");
    assert!(
        e.message().starts_with(RUST),
        "expected this crate's message: {e}"
    );
    assert!(
        e.message().contains(needle),
        "message should name {needle:?}: {e}"
    );
}

struct Case {
    logits: Vec<f32>,
    rows: usize,
    vocab: usize,
}

impl Case {
    fn new(rows: usize, vocab: usize) -> Case {
        Case {
            logits: Rng::new(10).logits(rows * vocab, 1.0),
            rows,
            vocab,
        }
    }

    fn l(&self) -> Logits<'_> {
        Logits::f32(&self.logits, self.rows, self.vocab)
    }

    /// Samples into sentinel outputs; returns the error and checks that
    /// nothing was written.
    fn fail(&self, s: &mut Sampler, l: &Logits<'_>, p: &SamplingParams<'_>) -> Error {
        let mut tokens = vec![-9i32; self.rows];
        let mut status = vec![-9i32; self.rows];
        let e = s
            .sample(l, p, Outputs::new(&mut tokens).row_status(&mut status))
            .unwrap_err();
        assert!(
            tokens.iter().chain(&status).all(|&x| x == -9),
            "an argument error wrote outputs"
        );
        e
    }
}

#[test]
fn slice_lengths_are_checked_before_calling_c() {
    let mut s = cpu();
    let c = Case::new(4, 10);
    let p = SamplingParams::new();

    // Logits shorter than the shape needs (contiguous, then strided).
    let e = c.fail(&mut s, &Logits::f32(&c.logits[..39], 4, 10), &p);
    rust_side(e, Status::SizeMismatch, "logits");
    let e = c.fail(
        &mut s,
        &Logits::f32(&c.logits[..32], 4, 8).with_row_stride(9),
        &p,
    );
    rust_side(e, Status::SizeMismatch, "need 35");
    // Exactly (rows - 1) * stride + vocab is enough; longer is fine too.
    let ok = SamplingParams::new().seed(1);
    s.sample_tokens(&Logits::f32(&c.logits[..35], 4, 8).with_row_stride(9), &ok)
        .unwrap();
    s.sample_tokens(&Logits::f32(&c.logits, 2, 10), &ok)
        .unwrap();
    // A shape whose size overflows usize.
    let e = s
        .sample_tokens(
            &Logits::f32(&c.logits, 3, 1).with_row_stride(usize::MAX),
            &ok,
        )
        .unwrap_err();
    rust_side(e, Status::SizeMismatch, "logits");

    // Outputs: every slice has exactly `rows` elements.
    for n in [3usize, 5] {
        let mut tokens = vec![0i32; n];
        let e = s.sample(&c.l(), &p, Outputs::new(&mut tokens)).unwrap_err();
        rust_side(e, Status::SizeMismatch, "outputs.tokens");
    }
    let mut tokens = vec![0i32; 4];
    let mut short = vec![0i32; 3];
    let mut short_f = vec![0f32; 3];
    let e = s
        .sample(&c.l(), &p, Outputs::new(&mut tokens).row_status(&mut short))
        .unwrap_err();
    rust_side(e, Status::SizeMismatch, "outputs.row_status");
    let e = s
        .sample(&c.l(), &p, Outputs::new(&mut tokens).logprobs(&mut short_f))
        .unwrap_err();
    rust_side(e, Status::SizeMismatch, "outputs.logprobs");
    let e = s
        .sample(
            &c.l(),
            &p,
            Outputs::new(&mut tokens).kept_counts(&mut short),
        )
        .unwrap_err();
    rust_side(e, Status::SizeMismatch, "outputs.kept_counts");

    // Per-row parameter slices: exactly `rows` values each.
    let f3 = [0.5f32; 3];
    let f5 = [0.5f32; 5];
    let i3 = [1i32; 3];
    let u5 = [1u64; 5];
    let cases: [(SamplingParams<'_>, &str); 7] = [
        (
            SamplingParams::new().temperature_per_row(&f3),
            "params.temperature",
        ),
        (
            SamplingParams::new().temperature_per_row(&f5),
            "params.temperature",
        ),
        (SamplingParams::new().min_p_per_row(&f3), "params.min_p"),
        (SamplingParams::new().top_k_per_row(&i3), "params.top_k"),
        (SamplingParams::new().top_p_per_row(&f5), "params.top_p"),
        (SamplingParams::new().seed_per_row(&u5), "params.seed"),
        (SamplingParams::new().offset_per_row(&u5), "params.offset"),
    ];
    for (p, name) in cases {
        rust_side(c.fail(&mut s, &c.l(), &p), Status::SizeMismatch, name);
    }

    // u16 logits must say BF16 or F16.
    let bits = vec![0u16; 40];
    let e = c.fail(&mut s, &Logits::half(&bits, DType::F32, 4, 10), &p);
    rust_side(e, Status::InvalidDtype, "dtype F32");

    // Sizes that do not fit the C types.
    let e = s.workspace_size(usize::MAX, 10, DType::F32).unwrap_err();
    rust_side(e, Status::InvalidRows, "rows");
}

#[test]
fn shape_and_parameter_values_are_checked_by_the_library() {
    let mut s = cpu();
    let c = Case::new(4, 10);

    // row_stride < vocab, with a slice long enough for what was asked.
    let e = c.fail(
        &mut s,
        &Logits::f32(&c.logits, 4, 10).with_row_stride(9),
        &SamplingParams::new(),
    );
    library(e, Status::InvalidStride, "row_stride");
    // vocab = 0.
    let e = c.fail(
        &mut s,
        &Logits::f32(&c.logits, 4, 0),
        &SamplingParams::new(),
    );
    library(e, Status::InvalidVocab, "vocab");
    library(
        s.workspace_size(4, 0, DType::BF16).unwrap_err(),
        Status::InvalidVocab,
        "vocab",
    );
    library(
        s.workspace_size(4, 1 << 31, DType::F32).unwrap_err(),
        Status::InvalidVocab,
        "vocab",
    );

    let bad: Vec<(SamplingParams<'_>, Status, &str)> = vec![
        (
            SamplingParams::new().temperature(-1.0),
            Status::InvalidTemperature,
            "temperature",
        ),
        (
            SamplingParams::new().temperature(f32::NAN),
            Status::InvalidTemperature,
            "temperature",
        ),
        (
            SamplingParams::new().temperature(f32::INFINITY),
            Status::InvalidTemperature,
            "temperature",
        ),
        (
            SamplingParams::new().top_p(0.0),
            Status::InvalidTopP,
            "top_p",
        ),
        (
            SamplingParams::new().top_p(-0.5),
            Status::InvalidTopP,
            "top_p",
        ),
        (
            SamplingParams::new().top_p(1.5),
            Status::InvalidTopP,
            "top_p",
        ),
        (
            SamplingParams::new().top_p(f32::NAN),
            Status::InvalidTopP,
            "top_p",
        ),
        (
            SamplingParams::new().min_p(-0.1),
            Status::InvalidMinP,
            "min_p",
        ),
        (
            SamplingParams::new().min_p(1.1),
            Status::InvalidMinP,
            "min_p",
        ),
        (
            SamplingParams::new().min_p(f32::NAN),
            Status::InvalidMinP,
            "min_p",
        ),
        (
            SamplingParams::new().top_k(-1),
            Status::InvalidTopK,
            "top_k",
        ),
    ];
    for (p, status, name) in &bad {
        library(c.fail(&mut s, &c.l(), p), *status, name);
    }

    // A bad value inside a per-row slice (the CPU backend checks them all
    // before any work and fails the call).
    let t = [1.0f32, 0.5, -2.0, 1.0];
    let tp = [1.0f32, 0.9, 0.0, 1.0];
    let mp = [0.0f32, f32::NAN, 0.0, 0.0];
    let k = [0i32, 0, 0, -3];
    library(
        c.fail(
            &mut s,
            &c.l(),
            &SamplingParams::new().temperature_per_row(&t),
        ),
        Status::InvalidTemperature,
        "per_row[2]",
    );
    library(
        c.fail(&mut s, &c.l(), &SamplingParams::new().top_p_per_row(&tp)),
        Status::InvalidTopP,
        "per_row[2]",
    );
    library(
        c.fail(&mut s, &c.l(), &SamplingParams::new().min_p_per_row(&mp)),
        Status::InvalidMinP,
        "per_row[1]",
    );
    library(
        c.fail(&mut s, &c.l(), &SamplingParams::new().top_k_per_row(&k)),
        Status::InvalidTopK,
        "per_row[3]",
    );

    // Edges that are valid.
    for p in [
        SamplingParams::new().top_p(1.0).min_p(1.0).top_k(0),
        SamplingParams::new()
            .min_p(0.0)
            .top_k(1_000_000)
            .top_p(f32::MIN_POSITIVE),
        SamplingParams::new().temperature(f32::MAX),
    ] {
        let out = s.sample_tokens(&c.l(), &p).unwrap();
        assert!(out.iter().all(|&t| (0..10).contains(&t)));
    }

    // Messages are read after each call: consecutive errors do not repeat.
    let a = c.fail(&mut s, &c.l(), &SamplingParams::new().top_p(2.0));
    let b = c.fail(&mut s, &c.l(), &SamplingParams::new().min_p(2.0));
    assert_ne!(a.message(), b.message());
}

#[test]
fn workspace_too_small() {
    let s = cpu();
    let c = Case::new(4, 1000);
    let need = s.workspace_size(4, 1000, DType::F32).unwrap();
    assert!(need > 0);
    let mut tokens = vec![0i32; 4];
    for len in [0usize, need - 1] {
        let mut ws = vec![0u8; len];
        let e = s
            .sample_with_workspace(
                &c.l(),
                &SamplingParams::new(),
                Outputs::new(&mut tokens),
                &mut ws,
            )
            .unwrap_err();
        library(e, Status::WorkspaceTooSmall, "workspace_bytes");
    }
    let mut ws = vec![0u8; need];
    s.sample_with_workspace(
        &c.l(),
        &SamplingParams::new(),
        Outputs::new(&mut tokens),
        &mut ws,
    )
    .unwrap();
}

#[test]
fn configuration_errors() {
    // CUDA: an Error (not a panic) where it is not available.
    if backend_available(Backend::Cuda) {
        let mut s = Sampler::new(Config::cuda(0)).expect("CUDA is available");
        assert_eq!(s.backend(), Backend::Cuda);
        // Host slices never reach a CUDA sampler.
        let c = Case::new(2, 8);
        rust_side(
            c.fail(&mut s, &c.l(), &SamplingParams::new()),
            Status::Unsupported,
            "CPU backend",
        );
        let e = Sampler::new(Config::cuda(1 << 20)).unwrap_err();
        assert!(!e.message().is_empty(), "{e}");
    } else {
        let e = Sampler::new(Config::cuda(0)).unwrap_err();
        library(e, Status::BackendUnavailable, "CUDA");
        let e = Sampler::new(Config::cpu().backend(Backend::Cuda)).unwrap_err();
        assert_eq!(e.status(), Status::BackendUnavailable);
    }
    assert!(backend_available(Backend::Cpu));

    let e = Sampler::new(Config::cpu().num_threads(-1)).unwrap_err();
    library(e, Status::Unsupported, "num_threads");
}

#[test]
fn error_is_a_std_error() {
    fn run() -> Result<Vec<i32>, Box<dyn std::error::Error + Send + Sync>> {
        let logits = [1.0f32, 2.0, 3.0];
        let mut s = Sampler::cpu()?;
        Ok(s.sample_tokens(
            &Logits::f32(&logits, 1, 3),
            &SamplingParams::new().temperature(-1.0),
        )?)
    }
    let e = run().unwrap_err();
    let shown = e.to_string();
    let e = e.downcast::<Error>().expect("a tokensift::Error");
    assert!(shown.contains(e.message()), "{shown}");
    assert!(shown.contains(&e.status().description()), "{shown}");
    assert_eq!(
        e.status().to_raw(),
        tokensift::ffi::TOKENSIFT_ERROR_INVALID_TEMPERATURE
    );
    assert!(format!("{e:?}").contains("InvalidTemperature"));
}
