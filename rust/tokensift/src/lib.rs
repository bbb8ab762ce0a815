//! Rust bindings to tokensift, an LLM token sampler, over its C ABI
//! (`include/tokensift/tokensift.h`).
//!
//! A [`Sampler`] draws one token per row of a batch of logits, with
//! temperature, min-p, top-k and top-p applied in that order and a
//! counter-based draw (Philox, keyed by `seed`, counter `offset`), so a row's
//! token depends only on its own logits, parameters, seed and offset: never on
//! the batch it is in or on the backend (docs/semantics.md).
//!
//! * Host memory, CPU backend: [`Sampler::sample`] takes slices ([`Logits`],
//!   [`SamplingParams`], [`Outputs`]), checks every length before calling into
//!   C and keeps its workspace internally; [`Sampler::sample_with_workspace`]
//!   takes a caller-owned one.
//! * Device memory, CUDA backend: the `unsafe` [`Sampler::sample_raw`] takes
//!   raw pointers and a stream ([`RawLogits`], [`RawParams`], [`RawOutputs`]).
//!
//! ```
//! use tokensift::{Config, Logits, Outputs, Sampler, SamplingParams};
//!
//! let mut sampler = Sampler::new(Config::cpu())?;
//! let logits = [0.5f32, 2.0, -1.0, 1.0, // row 0
//!               3.0, 0.0, 0.0, 3.0];    // row 1
//! let params = SamplingParams::new().temperature(0.8).top_k(2).seed(42);
//! let mut tokens = [0i32; 2];
//! sampler.sample(&Logits::f32(&logits, 2, 4), &params, Outputs::new(&mut tokens))?;
//! assert!(tokens[0] == 1 || tokens[0] == 3);
//! assert!(tokens[1] == 0 || tokens[1] == 3);
//! # Ok::<(), tokensift::Error>(())
//! ```
#![deny(missing_docs)]
#![warn(rust_2018_idioms)]

pub mod ffi;

use core::ffi::{c_int, c_void, CStr};
use core::ptr::{self, NonNull};
use std::fmt;
use std::mem::MaybeUninit;

// ------------------------------------------------------------------ errors --

/// Why a call failed: the C ABI's `tokensift_status` without `TOKENSIFT_OK`
/// (success is `Ok(..)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// A required pointer is NULL.
    NullPointer,
    /// `vocab < 1` or `vocab > 2^31 - 1`.
    InvalidVocab,
    /// `row_stride < vocab`, or the logits pointer not aligned to its elements.
    InvalidStride,
    /// `rows < 0` (or, from this crate, too large for `int64_t`).
    InvalidRows,
    /// Unknown dtype, or a dtype that does not match the element type.
    InvalidDtype,
    /// `T < 0`, NaN or inf.
    InvalidTemperature,
    /// `k < 0`.
    InvalidTopK,
    /// `p` outside `(0, 1]` or NaN.
    InvalidTopP,
    /// `min_p` outside `[0, 1]` or NaN.
    InvalidMinP,
    /// A struct size is unknown, or sizes disagree (this crate reports slice
    /// lengths that do not match the shape with it).
    SizeMismatch,
    /// The workspace is smaller than [`Sampler::workspace_size`].
    WorkspaceTooSmall,
    /// The backend is not compiled in, or there is no device.
    BackendUnavailable,
    /// Unknown algo, or not offered by the backend.
    InvalidAlgo,
    /// A reserved field is set, or the call does not apply to this sampler.
    Unsupported,
    /// A CUDA call failed; the message names it.
    Cuda,
    /// Internal error.
    Internal,
    /// A status this crate does not know (a newer library).
    Unknown(i32),
}

impl Status {
    /// The status of a C return code; `None` for `TOKENSIFT_OK`.
    pub fn from_raw(code: ffi::tokensift_status) -> Option<Status> {
        Some(match code {
            ffi::TOKENSIFT_OK => return None,
            ffi::TOKENSIFT_ERROR_NULL_POINTER => Status::NullPointer,
            ffi::TOKENSIFT_ERROR_INVALID_VOCAB => Status::InvalidVocab,
            ffi::TOKENSIFT_ERROR_INVALID_STRIDE => Status::InvalidStride,
            ffi::TOKENSIFT_ERROR_INVALID_ROWS => Status::InvalidRows,
            ffi::TOKENSIFT_ERROR_INVALID_DTYPE => Status::InvalidDtype,
            ffi::TOKENSIFT_ERROR_INVALID_TEMPERATURE => Status::InvalidTemperature,
            ffi::TOKENSIFT_ERROR_INVALID_TOP_K => Status::InvalidTopK,
            ffi::TOKENSIFT_ERROR_INVALID_TOP_P => Status::InvalidTopP,
            ffi::TOKENSIFT_ERROR_INVALID_MIN_P => Status::InvalidMinP,
            ffi::TOKENSIFT_ERROR_SIZE_MISMATCH => Status::SizeMismatch,
            ffi::TOKENSIFT_ERROR_WORKSPACE_TOO_SMALL => Status::WorkspaceTooSmall,
            ffi::TOKENSIFT_ERROR_BACKEND_UNAVAILABLE => Status::BackendUnavailable,
            ffi::TOKENSIFT_ERROR_INVALID_ALGO => Status::InvalidAlgo,
            ffi::TOKENSIFT_ERROR_UNSUPPORTED => Status::Unsupported,
            ffi::TOKENSIFT_ERROR_CUDA => Status::Cuda,
            ffi::TOKENSIFT_ERROR_INTERNAL => Status::Internal,
            other => Status::Unknown(other),
        })
    }

    /// The C value (`tokensift_status`).
    pub fn to_raw(self) -> ffi::tokensift_status {
        match self {
            Status::NullPointer => ffi::TOKENSIFT_ERROR_NULL_POINTER,
            Status::InvalidVocab => ffi::TOKENSIFT_ERROR_INVALID_VOCAB,
            Status::InvalidStride => ffi::TOKENSIFT_ERROR_INVALID_STRIDE,
            Status::InvalidRows => ffi::TOKENSIFT_ERROR_INVALID_ROWS,
            Status::InvalidDtype => ffi::TOKENSIFT_ERROR_INVALID_DTYPE,
            Status::InvalidTemperature => ffi::TOKENSIFT_ERROR_INVALID_TEMPERATURE,
            Status::InvalidTopK => ffi::TOKENSIFT_ERROR_INVALID_TOP_K,
            Status::InvalidTopP => ffi::TOKENSIFT_ERROR_INVALID_TOP_P,
            Status::InvalidMinP => ffi::TOKENSIFT_ERROR_INVALID_MIN_P,
            Status::SizeMismatch => ffi::TOKENSIFT_ERROR_SIZE_MISMATCH,
            Status::WorkspaceTooSmall => ffi::TOKENSIFT_ERROR_WORKSPACE_TOO_SMALL,
            Status::BackendUnavailable => ffi::TOKENSIFT_ERROR_BACKEND_UNAVAILABLE,
            Status::InvalidAlgo => ffi::TOKENSIFT_ERROR_INVALID_ALGO,
            Status::Unsupported => ffi::TOKENSIFT_ERROR_UNSUPPORTED,
            Status::Cuda => ffi::TOKENSIFT_ERROR_CUDA,
            Status::Internal => ffi::TOKENSIFT_ERROR_INTERNAL,
            Status::Unknown(code) => code,
        }
    }

    /// The library's description of this status (`tokensift_status_string`).
    pub fn description(self) -> String {
        // SAFETY: tokensift_status_string returns a static NUL-terminated
        // string for every value, known or not.
        unsafe { string_from_c(ffi::tokensift_status_string(self.to_raw())) }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.description())
    }
}

/// A failed call: the status and a message naming the offending argument.
///
/// Errors from the library carry its message (`tokensift_last_error`, read
/// on the calling thread right after the call); errors found by this crate
/// before calling into C (slice lengths, a host call on a CUDA sampler)
/// carry this crate's message and the closest status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

impl Error {
    /// The status (the C `tokensift_status`, see [`Status::to_raw`]).
    pub fn status(&self) -> Status {
        self.status
    }

    /// The message, never empty.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The error of a failed C call; must run on the thread that made it.
    fn from_library(code: ffi::tokensift_status) -> Error {
        let status = Status::from_raw(code).unwrap_or(Status::Internal);
        // SAFETY: tokensift_last_error returns a NUL-terminated thread-local
        // buffer that stays valid until the next failing call on this thread;
        // it is copied before anything else runs here.
        let mut message = unsafe { string_from_c(ffi::tokensift_last_error()) };
        if message.is_empty() {
            message = status.description();
        }
        Error { status, message }
    }

    /// An error found on the Rust side, before calling into C.
    fn here(status: Status, message: String) -> Error {
        Error {
            status,
            message: format!("tokensift (rust): {message}"),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.message, self.status)
    }
}

impl std::error::Error for Error {}

/// `Result<T, tokensift::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

fn check(code: ffi::tokensift_status) -> Result<()> {
    if code == ffi::TOKENSIFT_OK {
        Ok(())
    } else {
        Err(Error::from_library(code))
    }
}

/// Copies a C string; NULL gives "".
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string.
unsafe fn string_from_c(p: *const core::ffi::c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

// ------------------------------------------------------------------- enums --

/// Where the sampler runs (`tokensift_backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// Host memory, a process-wide worker pool.
    #[default]
    Cpu,
    /// Device memory, kernels on a CUDA stream.
    Cuda,
}

impl Backend {
    /// The C value.
    pub fn to_raw(self) -> ffi::tokensift_backend {
        match self {
            Backend::Cpu => ffi::TOKENSIFT_BACKEND_CPU,
            Backend::Cuda => ffi::TOKENSIFT_BACKEND_CUDA,
        }
    }

    /// The backend of a C value, `None` if unknown.
    pub fn from_raw(value: ffi::tokensift_backend) -> Option<Backend> {
        match value {
            ffi::TOKENSIFT_BACKEND_CPU => Some(Backend::Cpu),
            ffi::TOKENSIFT_BACKEND_CUDA => Some(Backend::Cuda),
            _ => None,
        }
    }
}

/// The selection algorithm (`tokensift_algo`); results are the same for all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Algo {
    /// The backend picks (today: `Pivot`; docs/api.md).
    #[default]
    Auto,
    /// Sorting-free selection.
    Pivot,
    /// Sorting-based baseline.
    Sort,
}

impl Algo {
    /// The C value.
    pub fn to_raw(self) -> ffi::tokensift_algo {
        match self {
            Algo::Auto => ffi::TOKENSIFT_ALGO_AUTO,
            Algo::Pivot => ffi::TOKENSIFT_ALGO_PIVOT,
            Algo::Sort => ffi::TOKENSIFT_ALGO_SORT,
        }
    }

    /// The algo of a C value, `None` if unknown.
    pub fn from_raw(value: ffi::tokensift_algo) -> Option<Algo> {
        match value {
            ffi::TOKENSIFT_ALGO_AUTO => Some(Algo::Auto),
            ffi::TOKENSIFT_ALGO_PIVOT => Some(Algo::Pivot),
            ffi::TOKENSIFT_ALGO_SORT => Some(Algo::Sort),
            _ => None,
        }
    }
}

/// Element type of the logits (`tokensift_dtype`).  bf16 and f16 are passed
/// as their raw bits (`u16`) and widened to f32 exactly by the library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE binary32 (`f32`).
    F32,
    /// bfloat16, raw bits in a `u16`.
    BF16,
    /// IEEE binary16, raw bits in a `u16`.
    F16,
}

impl DType {
    /// The C value.
    pub fn to_raw(self) -> ffi::tokensift_dtype {
        match self {
            DType::F32 => ffi::TOKENSIFT_DTYPE_F32,
            DType::BF16 => ffi::TOKENSIFT_DTYPE_BF16,
            DType::F16 => ffi::TOKENSIFT_DTYPE_F16,
        }
    }

    /// The dtype of a C value, `None` if unknown.
    pub fn from_raw(value: ffi::tokensift_dtype) -> Option<DType> {
        match value {
            ffi::TOKENSIFT_DTYPE_F32 => Some(DType::F32),
            ffi::TOKENSIFT_DTYPE_BF16 => Some(DType::BF16),
            ffi::TOKENSIFT_DTYPE_F16 => Some(DType::F16),
            _ => None,
        }
    }

    /// Bytes per element.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::BF16 | DType::F16 => 2,
        }
    }
}

/// What a row returned (`tokensift_row_status`); read from the `i32` values
/// written to [`Outputs::row_status`] with [`RowStatus::from_raw`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RowStatus {
    /// The row has a token in `[0, vocab)`.
    Ok,
    /// A logit is NaN or +inf, or (sampling rows) a finite `x / T` overflows
    /// to +inf; token -1.
    NanInput,
    /// No token is eligible (every logit is -inf, or every `x / T`
    /// underflows to -inf); token -1.
    NoValidToken,
    /// A per-row parameter read on the device is out of range (CUDA only);
    /// token -1.
    InvalidParam,
    /// A value this crate does not know (a newer library).
    Unknown(i32),
}

impl RowStatus {
    /// The status of a value written by the library.
    pub fn from_raw(value: i32) -> RowStatus {
        match value {
            ffi::TOKENSIFT_ROW_OK => RowStatus::Ok,
            ffi::TOKENSIFT_ROW_NAN_INPUT => RowStatus::NanInput,
            ffi::TOKENSIFT_ROW_NO_VALID_TOKEN => RowStatus::NoValidToken,
            ffi::TOKENSIFT_ROW_INVALID_PARAM => RowStatus::InvalidParam,
            other => RowStatus::Unknown(other),
        }
    }

    /// The C value.
    pub fn to_raw(self) -> i32 {
        match self {
            RowStatus::Ok => ffi::TOKENSIFT_ROW_OK,
            RowStatus::NanInput => ffi::TOKENSIFT_ROW_NAN_INPUT,
            RowStatus::NoValidToken => ffi::TOKENSIFT_ROW_NO_VALID_TOKEN,
            RowStatus::InvalidParam => ffi::TOKENSIFT_ROW_INVALID_PARAM,
            RowStatus::Unknown(v) => v,
        }
    }
}

// ------------------------------------------------------------ free functions --

/// True when the backend is compiled into the library and usable here (for
/// CUDA: a device is present).
pub fn backend_available(backend: Backend) -> bool {
    // SAFETY: plain query, no pointers.
    unsafe { ffi::tokensift_backend_available(backend.to_raw()) != 0 }
}

/// The library's version `(major, minor, patch)` (of the loaded
/// libtokensift, not of this crate's declarations; those are
/// `ffi::TOKENSIFT_VERSION_*`).
pub fn version() -> (i32, i32, i32) {
    let (mut major, mut minor, mut patch): (c_int, c_int, c_int) = (0, 0, 0);
    // SAFETY: three valid out-pointers.
    unsafe { ffi::tokensift_version(&mut major, &mut minor, &mut patch) };
    (major, minor, patch)
}

/// The library's version string.
pub fn version_string() -> String {
    // SAFETY: returns a static NUL-terminated string.
    unsafe { string_from_c(ffi::tokensift_version_string()) }
}

// ------------------------------------------------------------------ config --

/// How to create a [`Sampler`] (`tokensift_config`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Config {
    backend: Backend,
    algo: Algo,
    device: i32,
    num_threads: i32,
}

impl Config {
    /// CPU backend, `Algo::Auto`, all hardware threads.
    pub fn cpu() -> Config {
        Config::default()
    }

    /// CUDA backend on device `device`, `Algo::Auto`.
    pub fn cuda(device: i32) -> Config {
        Config {
            backend: Backend::Cuda,
            device,
            ..Config::default()
        }
    }

    /// Sets the backend.
    pub fn backend(mut self, backend: Backend) -> Config {
        self.backend = backend;
        self
    }

    /// Sets the algorithm.
    pub fn algo(mut self, algo: Algo) -> Config {
        self.algo = algo;
        self
    }

    /// Sets the CUDA device ordinal (ignored by the CPU backend).
    pub fn device(mut self, device: i32) -> Config {
        self.device = device;
        self
    }

    /// Sets the CPU worker threads per call; 0 = hardware concurrency.
    /// Results do not depend on it.  Negative values are rejected by
    /// [`Sampler::new`].
    pub fn num_threads(mut self, num_threads: i32) -> Config {
        self.num_threads = num_threads;
        self
    }

    fn c_view(self) -> ffi::tokensift_config {
        let mut c = MaybeUninit::<ffi::tokensift_config>::uninit();
        // SAFETY: tokensift_config_init writes every field (it assigns a whole
        // value-initialised struct first), so the struct is initialised.
        let mut c = unsafe {
            ffi::tokensift_config_init(c.as_mut_ptr());
            c.assume_init()
        };
        c.backend = self.backend.to_raw();
        c.algo = self.algo.to_raw();
        c.device = self.device;
        c.num_threads = self.num_threads;
        c
    }
}

// ------------------------------------------------------------------ params --

#[derive(Debug, Clone, Copy, PartialEq)]
struct PerRow<'a, T> {
    value: T,
    per_row: Option<&'a [T]>,
}

impl<'a, T: Copy> PerRow<'a, T> {
    fn one(value: T) -> Self {
        PerRow {
            value,
            per_row: None,
        }
    }

    fn check(&self, name: &str, rows: usize) -> Result<()> {
        match self.per_row {
            Some(s) if s.len() != rows => Err(Error::here(
                Status::SizeMismatch,
                format!(
                    "params.{name}: the per-row slice has {} values, rows = {rows}",
                    s.len()
                ),
            )),
            _ => Ok(()),
        }
    }

    fn ptr(&self) -> *const T {
        self.per_row.map_or(ptr::null(), <[T]>::as_ptr)
    }
}

/// Sampling parameters for the host path (`tokensift_params`).
///
/// Every parameter is one value for all rows, or a per-row slice (exactly
/// `rows` values) that overrides it; the last setter called for a parameter
/// wins.  Defaults: temperature 1, min_p 0 (off), top_k 0 (off), top_p 1
/// (off), seed 0, offset 0.  Filters run temperature -> min_p -> top_k ->
/// top_p -> draw (docs/semantics.md).  Ranges are checked by the library
/// when sampling (an [`Error`] with e.g. [`Status::InvalidTopP`]).
///
/// ```
/// # use tokensift::SamplingParams;
/// let seeds = [11u64, 12, 13];
/// let p = SamplingParams::new().temperature(0.7).top_p(0.9).seed_per_row(&seeds).offset(5);
/// # let _ = p;
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SamplingParams<'a> {
    temperature: PerRow<'a, f32>,
    min_p: PerRow<'a, f32>,
    top_k: PerRow<'a, i32>,
    top_p: PerRow<'a, f32>,
    seed: PerRow<'a, u64>,
    offset: PerRow<'a, u64>,
}

impl Default for SamplingParams<'_> {
    fn default() -> Self {
        SamplingParams {
            temperature: PerRow::one(1.0),
            min_p: PerRow::one(0.0),
            top_k: PerRow::one(0),
            top_p: PerRow::one(1.0),
            seed: PerRow::one(0),
            offset: PerRow::one(0),
        }
    }
}

macro_rules! param_setters {
    ($(($field:ident, $per_row:ident, $t:ty, $doc:literal)),* $(,)?) => {
        $(
            #[doc = concat!("Sets ", $doc, " for every row (drops a per-row slice set before).")]
            pub fn $field(mut self, value: $t) -> Self {
                self.$field = PerRow::one(value);
                self
            }

            #[doc = concat!("Sets ", $doc, " per row: `values[r]` for row `r`; exactly `rows` values.")]
            pub fn $per_row(mut self, values: &'a [$t]) -> Self {
                self.$field.per_row = Some(values);
                self
            }
        )*
    };
}

impl<'a> SamplingParams<'a> {
    /// The defaults: plain sampling at temperature 1, no truncation.
    pub fn new() -> Self {
        Self::default()
    }

    /// Temperature 0: every row takes its largest logit, ties to the lowest
    /// index.
    pub fn greedy() -> Self {
        Self::default().temperature(0.0)
    }

    param_setters! {
        (temperature, temperature_per_row, f32, "the temperature (`T < 1e-5` is greedy)"),
        (min_p, min_p_per_row, f32, "min-p in `[0, 1]` (0 disables)"),
        (top_k, top_k_per_row, i32, "top-k (`>= 0`; 0 or `>= vocab` disables)"),
        (top_p, top_p_per_row, f32, "top-p in `(0, 1]` (1 disables)"),
        (seed, seed_per_row, u64, "the Philox key"),
        (offset, offset_per_row, u64, "the Philox counter (e.g. the decode step)"),
    }

    /// These parameters as raw pointers for [`Sampler::sample_raw`] (host
    /// memory: for the CPU backend).  The pointers borrow the slices given
    /// to the per-row setters.
    pub fn as_raw(&self) -> RawParams {
        RawParams {
            temperature: self.temperature.value,
            temperature_per_row: self.temperature.ptr(),
            min_p: self.min_p.value,
            min_p_per_row: self.min_p.ptr(),
            top_k: self.top_k.value,
            top_k_per_row: self.top_k.ptr(),
            top_p: self.top_p.value,
            top_p_per_row: self.top_p.ptr(),
            seed: self.seed.value,
            seed_per_row: self.seed.ptr(),
            offset: self.offset.value,
            offset_per_row: self.offset.ptr(),
        }
    }

    fn check_lengths(&self, rows: usize) -> Result<()> {
        self.temperature.check("temperature", rows)?;
        self.min_p.check("min_p", rows)?;
        self.top_k.check("top_k", rows)?;
        self.top_p.check("top_p", rows)?;
        self.seed.check("seed", rows)?;
        self.offset.check("offset", rows)
    }
}

/// Sampling parameters as raw pointers, for [`Sampler::sample_raw`]: a
/// non-null `*_per_row` pointer overrides the value for every row and must
/// point to `rows` elements in the backend's memory (device memory for
/// CUDA, where per-row values are read by the kernel when it runs, so a
/// replayed CUDA graph sees whatever was written there since).
///
/// [`RawParams::default`] gives the library's defaults with no per-row
/// arrays.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawParams {
    /// Temperature for every row.
    pub temperature: f32,
    /// Per-row temperatures, or null.
    pub temperature_per_row: *const f32,
    /// min-p for every row.
    pub min_p: f32,
    /// Per-row min-p, or null.
    pub min_p_per_row: *const f32,
    /// top-k for every row.
    pub top_k: i32,
    /// Per-row top-k, or null.
    pub top_k_per_row: *const i32,
    /// top-p for every row.
    pub top_p: f32,
    /// Per-row top-p, or null.
    pub top_p_per_row: *const f32,
    /// Seed for every row.
    pub seed: u64,
    /// Per-row seeds, or null.
    pub seed_per_row: *const u64,
    /// Offset for every row.
    pub offset: u64,
    /// Per-row offsets, or null.
    pub offset_per_row: *const u64,
}

impl Default for RawParams {
    fn default() -> Self {
        SamplingParams::new().as_raw()
    }
}

impl RawParams {
    fn c_view(&self) -> ffi::tokensift_params {
        let mut p = MaybeUninit::<ffi::tokensift_params>::uninit();
        // SAFETY: tokensift_params_init writes every field, including
        // struct_size, flags = 0 and extensions = NULL.
        let mut p = unsafe {
            ffi::tokensift_params_init(p.as_mut_ptr());
            p.assume_init()
        };
        p.temperature = ffi::tokensift_param_f32 {
            value: self.temperature,
            per_row: self.temperature_per_row,
        };
        p.min_p = ffi::tokensift_param_f32 {
            value: self.min_p,
            per_row: self.min_p_per_row,
        };
        p.top_k = ffi::tokensift_param_i32 {
            value: self.top_k,
            per_row: self.top_k_per_row,
        };
        p.top_p = ffi::tokensift_param_f32 {
            value: self.top_p,
            per_row: self.top_p_per_row,
        };
        p.seed = ffi::tokensift_param_u64 {
            value: self.seed,
            per_row: self.seed_per_row,
        };
        p.offset = ffi::tokensift_param_u64 {
            value: self.offset,
            per_row: self.offset_per_row,
        };
        p
    }
}

// ------------------------------------------------------------------ logits --

#[derive(Debug, Clone, Copy)]
enum HostData<'a> {
    F32(&'a [f32]),
    Half(&'a [u16], DType),
}

/// A batch of logits in host memory: `rows x vocab` elements, row `r`
/// starting at element `r * row_stride` (`row_stride` defaults to `vocab`).
/// The slice may be longer than needed; it must hold at least
/// `(rows - 1) * row_stride + vocab` elements.
#[derive(Debug, Clone, Copy)]
pub struct Logits<'a> {
    data: HostData<'a>,
    rows: usize,
    vocab: usize,
    row_stride: usize,
}

impl<'a> Logits<'a> {
    /// f32 logits.
    pub fn f32(data: &'a [f32], rows: usize, vocab: usize) -> Self {
        Logits {
            data: HostData::F32(data),
            rows,
            vocab,
            row_stride: vocab,
        }
    }

    /// 16-bit logits as raw bits, `dtype` being [`DType::BF16`] or
    /// [`DType::F16`] (sampling with `DType::F32` here fails with
    /// [`Status::InvalidDtype`]).
    pub fn half(data: &'a [u16], dtype: DType, rows: usize, vocab: usize) -> Self {
        Logits {
            data: HostData::Half(data, dtype),
            rows,
            vocab,
            row_stride: vocab,
        }
    }

    /// bfloat16 logits as raw bits (the upper half of the f32 bits).
    pub fn bf16(data: &'a [u16], rows: usize, vocab: usize) -> Self {
        Self::half(data, DType::BF16, rows, vocab)
    }

    /// IEEE binary16 logits as raw bits.
    pub fn f16(data: &'a [u16], rows: usize, vocab: usize) -> Self {
        Self::half(data, DType::F16, rows, vocab)
    }

    /// Sets the distance between rows, in elements (`>= vocab`, checked by
    /// the library).
    pub fn with_row_stride(mut self, row_stride: usize) -> Self {
        self.row_stride = row_stride;
        self
    }

    /// Rows in the batch.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Elements per row.
    pub fn vocab(&self) -> usize {
        self.vocab
    }

    /// Distance between rows, in elements.
    pub fn row_stride(&self) -> usize {
        self.row_stride
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        match self.data {
            HostData::F32(_) => DType::F32,
            HostData::Half(_, d) => d,
        }
    }

    /// Checks what memory safety needs (the element type and the slice
    /// length; the library checks the rest) and returns the C view.
    fn c_view(&self) -> Result<ffi::tokensift_logits> {
        let (ptr, len) = match self.data {
            HostData::F32(s) => (s.as_ptr().cast::<c_void>(), s.len()),
            HostData::Half(s, DType::F32) => {
                return Err(Error::here(
                    Status::InvalidDtype,
                    format!(
                        "logits: {} u16 values with dtype F32 (u16 logits are BF16 or F16)",
                        s.len()
                    ),
                ))
            }
            HostData::Half(s, _) => (s.as_ptr().cast::<c_void>(), s.len()),
        };
        let need = if self.rows == 0 {
            Some(0)
        } else {
            (self.rows - 1)
                .checked_mul(self.row_stride)
                .and_then(|n| n.checked_add(self.vocab))
        };
        match need {
            Some(need) if need <= len => {}
            _ => {
                return Err(Error::here(
                    Status::SizeMismatch,
                    format!(
                        "logits: the slice has {len} elements; rows = {}, row_stride = {}, vocab = {} need {}",
                        self.rows,
                        self.row_stride,
                        self.vocab,
                        need.map_or_else(|| "more than usize::MAX".to_string(), |n| n.to_string())
                    ),
                ))
            }
        }
        Ok(ffi::tokensift_logits {
            data: ptr,
            rows: to_i64(self.rows, Status::InvalidRows, "rows")?,
            vocab: to_i64(self.vocab, Status::InvalidVocab, "vocab")?,
            row_stride: to_i64(self.row_stride, Status::InvalidStride, "row_stride")?,
            dtype: self.dtype().to_raw(),
        })
    }
}

fn to_i64(value: usize, status: Status, name: &str) -> Result<i64> {
    i64::try_from(value)
        .map_err(|_| Error::here(status, format!("{name} = {value}: does not fit in int64_t")))
}

/// A batch of logits behind a raw pointer, for [`Sampler::sample_raw`]:
/// `rows x vocab` elements of `dtype`, row `r` at element `r * row_stride`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawLogits {
    /// First element, in the backend's memory.
    pub data: *const c_void,
    /// Rows in the batch.
    pub rows: usize,
    /// Elements per row.
    pub vocab: usize,
    /// Distance between rows, in elements (`>= vocab`).
    pub row_stride: usize,
    /// Element type.
    pub dtype: DType,
}

impl RawLogits {
    /// Contiguous rows (`row_stride = vocab`).
    pub fn new(data: *const c_void, rows: usize, vocab: usize, dtype: DType) -> Self {
        RawLogits {
            data,
            rows,
            vocab,
            row_stride: vocab,
            dtype,
        }
    }

    /// Sets the row stride.
    pub fn with_row_stride(mut self, row_stride: usize) -> Self {
        self.row_stride = row_stride;
        self
    }

    fn c_view(self) -> Result<ffi::tokensift_logits> {
        Ok(ffi::tokensift_logits {
            data: self.data,
            rows: to_i64(self.rows, Status::InvalidRows, "rows")?,
            vocab: to_i64(self.vocab, Status::InvalidVocab, "vocab")?,
            row_stride: to_i64(self.row_stride, Status::InvalidStride, "row_stride")?,
            dtype: self.dtype.to_raw(),
        })
    }
}

// ----------------------------------------------------------------- outputs --

/// Where a host call writes its results, one element per row; every slice
/// has exactly `rows` elements.
///
/// * `tokens`: the drawn token, -1 for a row whose status is not OK;
/// * `row_status`: [`RowStatus`] values (read with [`RowStatus::from_raw`]);
/// * `logprobs`: log-probability of the token under the filtered,
///   renormalised distribution (0 for greedy, NaN for a bad row);
/// * `kept_counts`: size of the kept set (1 for greedy, 0 for a bad row).
#[derive(Debug)]
pub struct Outputs<'a> {
    tokens: &'a mut [i32],
    row_status: Option<&'a mut [i32]>,
    logprobs: Option<&'a mut [f32]>,
    kept_counts: Option<&'a mut [i32]>,
}

impl<'a> Outputs<'a> {
    /// Tokens only.
    pub fn new(tokens: &'a mut [i32]) -> Self {
        Outputs {
            tokens,
            row_status: None,
            logprobs: None,
            kept_counts: None,
        }
    }

    /// Also writes each row's status.
    pub fn row_status(mut self, row_status: &'a mut [i32]) -> Self {
        self.row_status = Some(row_status);
        self
    }

    /// Also writes each token's log-probability.
    pub fn logprobs(mut self, logprobs: &'a mut [f32]) -> Self {
        self.logprobs = Some(logprobs);
        self
    }

    /// Also writes each row's kept-set size.
    pub fn kept_counts(mut self, kept_counts: &'a mut [i32]) -> Self {
        self.kept_counts = Some(kept_counts);
        self
    }

    fn c_view(&mut self, rows: usize) -> Result<ffi::tokensift_outputs> {
        fn len_ok(name: &str, len: Option<usize>, rows: usize) -> Result<()> {
            match len {
                Some(len) if len != rows => Err(Error::here(
                    Status::SizeMismatch,
                    format!("outputs.{name}: the slice has {len} elements, rows = {rows}"),
                )),
                _ => Ok(()),
            }
        }
        len_ok("tokens", Some(self.tokens.len()), rows)?;
        len_ok(
            "row_status",
            self.row_status.as_deref().map(<[i32]>::len),
            rows,
        )?;
        len_ok("logprobs", self.logprobs.as_deref().map(<[f32]>::len), rows)?;
        len_ok(
            "kept_counts",
            self.kept_counts.as_deref().map(<[i32]>::len),
            rows,
        )?;
        Ok(ffi::tokensift_outputs {
            tokens: self.tokens.as_mut_ptr(),
            row_status: self
                .row_status
                .as_deref_mut()
                .map_or(ptr::null_mut(), <[i32]>::as_mut_ptr),
            logprobs: self
                .logprobs
                .as_deref_mut()
                .map_or(ptr::null_mut(), <[f32]>::as_mut_ptr),
            kept_counts: self
                .kept_counts
                .as_deref_mut()
                .map_or(ptr::null_mut(), <[i32]>::as_mut_ptr),
        })
    }
}

/// Output pointers for [`Sampler::sample_raw`], `rows` elements each in the
/// backend's memory; `tokens` is required, the others may be null.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawOutputs {
    /// Tokens (required).
    pub tokens: *mut i32,
    /// Row statuses ([`RowStatus`] values), or null.
    pub row_status: *mut i32,
    /// Log-probabilities, or null.
    pub logprobs: *mut f32,
    /// Kept-set sizes, or null.
    pub kept_counts: *mut i32,
}

impl RawOutputs {
    /// Tokens only.
    pub fn new(tokens: *mut i32) -> Self {
        RawOutputs {
            tokens,
            row_status: ptr::null_mut(),
            logprobs: ptr::null_mut(),
            kept_counts: ptr::null_mut(),
        }
    }

    fn c_view(self) -> ffi::tokensift_outputs {
        ffi::tokensift_outputs {
            tokens: self.tokens,
            row_status: self.row_status,
            logprobs: self.logprobs,
            kept_counts: self.kept_counts,
        }
    }
}

// ----------------------------------------------------------------- sampler --

/// A tokensift sampler (`tokensift_sampler*`), freed on drop.
///
/// Create one per thread that samples; creation allocates only the handle
/// (the CPU backend's worker pool is process-wide).
///
/// `Sampler` is `Send` but not `Sync`:
///
/// ```compile_fail,E0277
/// fn shared<T: Sync>() {}
/// shared::<tokensift::Sampler>();
/// ```
pub struct Sampler {
    raw: NonNull<ffi::tokensift_sampler>,
    config: Config,
    /// Host workspace of the safe host path: grown to the largest shape seen
    /// (or reserved), never shrunk.
    workspace: Vec<u8>,
}

// Thread safety.
//
// Send: the handle is owned by this value alone and nothing in the C API ties
// a sampler to the thread that created it (the CPU backend's workers are a
// process-wide pool; the CUDA backend needs the *calling* thread's current
// device to be the sampler's, a documented requirement of `sample_raw`).
// The last-error message is per thread (`tokensift_last_error`), so every
// method reads it on the thread that made the failing call, before returning:
// moving a Sampler between calls cannot lose or mix up a message.
//
// Not Sync: `&Sampler` on two threads would allow two calls on one handle at
// once.  The C API does not promise that (`tokensift_sample` takes a
// non-const `tokensift_sampler*`), and docs/api.md requires one workspace per
// concurrent call, which the internal workspace of the host path cannot be.
// Engines that sample from several threads create one Sampler per thread.
//
// SAFETY: see above; the raw pointer is the only non-Send field.
unsafe impl Send for Sampler {}

impl fmt::Debug for Sampler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sampler")
            .field("config", &self.config)
            .field("workspace_bytes", &self.workspace.len())
            .finish()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        // SAFETY: created by tokensift_create, destroyed exactly once.
        unsafe { ffi::tokensift_destroy(self.raw.as_ptr()) }
    }
}

impl Sampler {
    /// Creates a sampler.  Fails with [`Status::BackendUnavailable`] for a
    /// backend that is not compiled in or has no device (see
    /// [`backend_available`]), [`Status::InvalidAlgo`] for an algo the
    /// backend does not offer, [`Status::Unsupported`] for negative
    /// `num_threads`.
    pub fn new(config: Config) -> Result<Sampler> {
        let c = config.c_view();
        let mut raw: *mut ffi::tokensift_sampler = ptr::null_mut();
        // SAFETY: valid config and out-pointer.
        check(unsafe { ffi::tokensift_create(&c, &mut raw) })?;
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::here(
                Status::Internal,
                "tokensift_create returned OK and a null sampler".into(),
            )
        })?;
        Ok(Sampler {
            raw,
            config,
            workspace: Vec::new(),
        })
    }

    /// A CPU sampler with the default configuration.
    pub fn cpu() -> Result<Sampler> {
        Sampler::new(Config::cpu())
    }

    /// The configuration it was created with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Its backend.
    pub fn backend(&self) -> Backend {
        self.config.backend
    }

    /// The C handle, for calls this crate does not wrap; owned by `self`
    /// (do not destroy it).
    pub fn as_raw(&self) -> *mut ffi::tokensift_sampler {
        self.raw.as_ptr()
    }

    /// Bytes of workspace a call with this shape needs (may be 0).  A
    /// workspace of that size serves every call with at most `rows` rows of
    /// this `vocab` and `dtype`, with either algorithm.
    pub fn workspace_size(&self, rows: usize, vocab: usize, dtype: DType) -> Result<usize> {
        let rows = to_i64(rows, Status::InvalidRows, "rows")?;
        let vocab = to_i64(vocab, Status::InvalidVocab, "vocab")?;
        let mut bytes = 0usize;
        // SAFETY: valid handle and out-pointer.
        check(unsafe {
            ffi::tokensift_workspace_size(
                self.raw.as_ptr(),
                rows,
                vocab,
                dtype.to_raw(),
                &mut bytes,
            )
        })?;
        Ok(bytes)
    }

    /// Grows the internal host workspace to serve calls up to this shape, so
    /// that [`Sampler::sample`] does not allocate later (it grows the
    /// workspace itself when a call needs more).
    pub fn reserve(&mut self, rows: usize, vocab: usize, dtype: DType) -> Result<()> {
        let need = self.workspace_size(rows, vocab, dtype)?;
        if self.workspace.len() < need {
            self.workspace.resize(need, 0);
        }
        Ok(())
    }

    /// Bytes of the internal host workspace now.
    pub fn workspace_bytes(&self) -> usize {
        self.workspace.len()
    }

    /// Samples one token per row of host-memory logits (CPU backend), using
    /// the internal workspace.
    ///
    /// Before calling into C this checks that the logits slice holds
    /// `(rows - 1) * row_stride + vocab` elements and that every per-row
    /// parameter and output slice has exactly `rows` elements
    /// ([`Status::SizeMismatch`]); the library then checks shape and
    /// parameter values (e.g. [`Status::InvalidStride`],
    /// [`Status::InvalidTemperature`]).  Per-row problems (NaN logits, no
    /// valid token) are not errors: they are reported in `row_status`.
    /// A sampler of another backend fails with [`Status::Unsupported`] (it
    /// takes device memory: [`Sampler::sample_raw`]).
    pub fn sample(
        &mut self,
        logits: &Logits<'_>,
        params: &SamplingParams<'_>,
        mut outputs: Outputs<'_>,
    ) -> Result<()> {
        self.check_host("sample")?;
        let (l, p, o) = host_views(logits, params, &mut outputs)?;
        let need = self.workspace_size(logits.rows, logits.vocab, logits.dtype())?;
        if self.workspace.len() < need {
            self.workspace.resize(need, 0);
        }
        let (ws, ws_bytes) = (
            self.workspace.as_mut_ptr().cast::<c_void>(),
            self.workspace.len(),
        );
        // SAFETY: every pointer in l, p and o comes from a slice borrowed for
        // this call whose length was checked against the shape; the workspace
        // is ours, at least the queried size, and used by this call only.
        check(unsafe {
            ffi::tokensift_sample(self.raw.as_ptr(), &l, &p, &o, ws, ws_bytes, ptr::null_mut())
        })
    }

    /// [`Sampler::sample`] returning the tokens only.
    pub fn sample_tokens(
        &mut self,
        logits: &Logits<'_>,
        params: &SamplingParams<'_>,
    ) -> Result<Vec<i32>> {
        let mut tokens = vec![0i32; logits.rows];
        self.sample(logits, params, Outputs::new(&mut tokens))?;
        Ok(tokens)
    }

    /// [`Sampler::sample`] with a caller-owned host workspace of at least
    /// [`Sampler::workspace_size`] bytes (else [`Status::WorkspaceTooSmall`]);
    /// it needs no particular contents.
    pub fn sample_with_workspace(
        &self,
        logits: &Logits<'_>,
        params: &SamplingParams<'_>,
        mut outputs: Outputs<'_>,
        workspace: &mut [u8],
    ) -> Result<()> {
        self.check_host("sample_with_workspace")?;
        let (l, p, o) = host_views(logits, params, &mut outputs)?;
        // SAFETY: as in `sample`; the workspace is borrowed mutably for this
        // call and its true length is passed.
        check(unsafe {
            ffi::tokensift_sample(
                self.raw.as_ptr(),
                &l,
                &p,
                &o,
                workspace.as_mut_ptr().cast::<c_void>(),
                workspace.len(),
                ptr::null_mut(),
            )
        })
    }

    /// Samples from memory the caller manages: the device-memory entry point
    /// (CUDA backend), also usable with host pointers on the CPU backend.
    /// A thin wrapper over `tokensift_sample`; on the CUDA backend it
    /// launches kernels on `stream` and returns without synchronising
    /// (capturable in a CUDA graph).
    ///
    /// # Safety
    ///
    /// The library dereferences these pointers, and cannot check them:
    ///
    /// * Memory: `logits.data`, every non-null `*_per_row` pointer in
    ///   `params`, every non-null pointer in `outputs` and `workspace` are in
    ///   the backend's memory: device memory of the sampler's device for
    ///   CUDA (or memory the device can access, e.g. managed memory), host
    ///   memory for CPU.  `logits.data` points to
    ///   `(rows - 1) * row_stride + vocab` elements of `logits.dtype`, each
    ///   per-row array and output array to `rows` elements of its type, and
    ///   `workspace` to `workspace_bytes` bytes, at least
    ///   [`Sampler::workspace_size`] for this shape.
    /// * Stream ordering (CUDA): `stream` is a valid `cudaStream_t` of the
    ///   sampler's device (null = the legacy default stream), and the calling
    ///   thread's current device is the sampler's device.  The inputs must be
    ///   ready when the kernels run on `stream` (written earlier in stream
    ///   order, or synchronised), and the outputs may be read only after work
    ///   on `stream` that follows this call (an event, a synchronisation).
    /// * Lifetime: every buffer, the workspace included, stays allocated and
    ///   unmodified by others until the work on `stream` has finished, not
    ///   merely until this call returns.  The CPU backend has finished when
    ///   this call returns.
    /// * Exclusivity: the workspace is used by no other call that may run at
    ///   the same time (one workspace per stream); outputs alias no input.
    ///
    /// Argument errors are returned before any work is launched; per-row
    /// parameters read on the device that are out of range give
    /// [`RowStatus::InvalidParam`] in `row_status` instead of an error.
    pub unsafe fn sample_raw(
        &self,
        logits: &RawLogits,
        params: &RawParams,
        outputs: &RawOutputs,
        workspace: *mut c_void,
        workspace_bytes: usize,
        stream: *mut c_void,
    ) -> Result<()> {
        let l = logits.c_view()?;
        let p = params.c_view();
        let o = outputs.c_view();
        check(ffi::tokensift_sample(
            self.raw.as_ptr(),
            &l,
            &p,
            &o,
            workspace,
            workspace_bytes,
            stream,
        ))
    }

    /// Zero-fills a workspace (CUDA: asynchronously on `stream`).  Optional:
    /// calls need no particular workspace contents.
    ///
    /// # Safety
    ///
    /// `workspace` points to `workspace_bytes` bytes of the backend's memory
    /// that no running work uses; for CUDA, `stream` is a valid stream of the
    /// sampler's device, which is current on the calling thread.
    pub unsafe fn workspace_init_raw(
        &self,
        workspace: *mut c_void,
        workspace_bytes: usize,
        stream: *mut c_void,
    ) -> Result<()> {
        check(ffi::tokensift_workspace_init(
            self.raw.as_ptr(),
            workspace,
            workspace_bytes,
            stream,
        ))
    }

    fn check_host(&self, what: &str) -> Result<()> {
        if self.config.backend == Backend::Cpu {
            Ok(())
        } else {
            Err(Error::here(
                Status::Unsupported,
                format!(
                    "Sampler::{what} takes host memory and needs the CPU backend; this sampler is {:?} \
                     (device memory goes through the unsafe Sampler::sample_raw)",
                    self.config.backend
                ),
            ))
        }
    }
}

/// The C views of a host call, after the Rust-side checks.
fn host_views(
    logits: &Logits<'_>,
    params: &SamplingParams<'_>,
    outputs: &mut Outputs<'_>,
) -> Result<(
    ffi::tokensift_logits,
    ffi::tokensift_params,
    ffi::tokensift_outputs,
)> {
    let l = logits.c_view()?;
    params.check_lengths(logits.rows)?;
    let o = outputs.c_view(logits.rows)?;
    Ok((l, params.as_raw().c_view(), o))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_sizes_match_the_library() {
        // The library writes its own sizeof into struct_size; a layout that
        // differs from the header is caught here before any call is made.
        let c = Config::cpu().c_view();
        assert_eq!(
            c.struct_size as usize,
            std::mem::size_of::<ffi::tokensift_config>()
        );
        let p = RawParams::default().c_view();
        assert_eq!(
            p.struct_size as usize,
            std::mem::size_of::<ffi::tokensift_params>()
        );
        if cfg!(target_pointer_width = "64") {
            assert_eq!(std::mem::size_of::<ffi::tokensift_params>(), 112);
            assert_eq!(std::mem::size_of::<ffi::tokensift_config>(), 20);
            assert_eq!(std::mem::size_of::<ffi::tokensift_logits>(), 40);
            assert_eq!(std::mem::size_of::<ffi::tokensift_outputs>(), 32);
        }
    }

    #[test]
    fn defaults_match_the_library() {
        let mut p = MaybeUninit::<ffi::tokensift_params>::uninit();
        let p = unsafe {
            ffi::tokensift_params_init(p.as_mut_ptr());
            p.assume_init()
        };
        let ours = RawParams::default().c_view();
        assert_eq!(p.flags, 0);
        assert!(p.extensions.is_null());
        assert_eq!(p.temperature.value, ours.temperature.value);
        assert_eq!(p.min_p.value, ours.min_p.value);
        assert_eq!(p.top_k.value, ours.top_k.value);
        assert_eq!(p.top_p.value, ours.top_p.value);
        assert_eq!(p.seed.value, ours.seed.value);
        assert_eq!(p.offset.value, ours.offset.value);
        for per_row in [p.temperature.per_row, p.min_p.per_row, p.top_p.per_row] {
            assert!(per_row.is_null());
        }
        assert!(
            p.top_k.per_row.is_null() && p.seed.per_row.is_null() && p.offset.per_row.is_null()
        );

        let mut c = MaybeUninit::<ffi::tokensift_config>::uninit();
        let c = unsafe {
            ffi::tokensift_config_init(c.as_mut_ptr());
            c.assume_init()
        };
        assert_eq!(
            Backend::from_raw(c.backend),
            Some(Config::default().backend)
        );
        assert_eq!(Algo::from_raw(c.algo), Some(Config::default().algo));
        assert_eq!((c.device, c.num_threads), (0, 0));
    }

    #[test]
    fn enums_round_trip_through_c_values() {
        for code in 1..=16 {
            let s = Status::from_raw(code).unwrap();
            assert!(!matches!(s, Status::Unknown(_)), "status {code}");
            assert_eq!(s.to_raw(), code);
            assert!(!s.description().is_empty());
        }
        assert_eq!(Status::from_raw(ffi::TOKENSIFT_OK), None);
        assert_eq!(Status::from_raw(99), Some(Status::Unknown(99)));
        for v in 0..4 {
            assert!(!matches!(RowStatus::from_raw(v), RowStatus::Unknown(_)));
            assert_eq!(RowStatus::from_raw(v).to_raw(), v);
        }
        assert_eq!(RowStatus::from_raw(7), RowStatus::Unknown(7));
        for d in [DType::F32, DType::BF16, DType::F16] {
            assert_eq!(DType::from_raw(d.to_raw()), Some(d));
        }
        for a in [Algo::Auto, Algo::Pivot, Algo::Sort] {
            assert_eq!(Algo::from_raw(a.to_raw()), Some(a));
        }
        for b in [Backend::Cpu, Backend::Cuda] {
            assert_eq!(Backend::from_raw(b.to_raw()), Some(b));
        }
    }

    #[test]
    fn version_matches_the_header() {
        let (major, minor, _) = version();
        assert_eq!(
            (major, minor),
            (ffi::TOKENSIFT_VERSION_MAJOR, ffi::TOKENSIFT_VERSION_MINOR)
        );
        assert!(version_string().starts_with(&format!("{major}.{minor}")));
    }
}
