//! Raw declarations of the C ABI, `include/tokensift/tokensift.h`, 1:1.
//!
//! Written by hand (no bindgen): every struct is `#[repr(C)]` with the
//! header's field order and types, every enum is its C integer type plus one
//! constant per enumerator, every function has the header's signature.  The
//! safe API in the crate root is built on these; use them directly only when
//! it does not fit.
//!
//! C enums are `int`-sized on every ABI tokensift targets and all enumerator
//! values are small and non-negative, so each enum type is a `c_int` alias.
//! Keeping them integers (not Rust enums) means a value this crate does not
//! know, returned by a newer library, is representable instead of undefined
//! behaviour.
//!
//! The `struct_size` fields version the structs: always start from
//! [`tokensift_config_init`] / [`tokensift_params_init`], which write the
//! library's `sizeof`; a mismatch with this crate's layout is reported as
//! `TOKENSIFT_ERROR_SIZE_MISMATCH`.
#![allow(non_camel_case_types)]

use core::ffi::{c_char, c_int, c_void};

/// `TOKENSIFT_VERSION_MAJOR`: the header version these declarations mirror.
pub const TOKENSIFT_VERSION_MAJOR: c_int = 0;
/// `TOKENSIFT_VERSION_MINOR`.
pub const TOKENSIFT_VERSION_MINOR: c_int = 1;
/// `TOKENSIFT_VERSION_PATCH`.
pub const TOKENSIFT_VERSION_PATCH: c_int = 0;

/// `enum tokensift_status`: the status of a call.
pub type tokensift_status = c_int;
/// Success.
pub const TOKENSIFT_OK: tokensift_status = 0;
/// A required pointer is NULL.
pub const TOKENSIFT_ERROR_NULL_POINTER: tokensift_status = 1;
/// `vocab < 1` or `> INT32_MAX`.
pub const TOKENSIFT_ERROR_INVALID_VOCAB: tokensift_status = 2;
/// `row_stride < vocab`, or the logits pointer not aligned to its elements.
pub const TOKENSIFT_ERROR_INVALID_STRIDE: tokensift_status = 3;
/// `rows < 0`.
pub const TOKENSIFT_ERROR_INVALID_ROWS: tokensift_status = 4;
/// Unknown dtype.
pub const TOKENSIFT_ERROR_INVALID_DTYPE: tokensift_status = 5;
/// `T < 0`, NaN or inf.
pub const TOKENSIFT_ERROR_INVALID_TEMPERATURE: tokensift_status = 6;
/// `k < 0`.
pub const TOKENSIFT_ERROR_INVALID_TOP_K: tokensift_status = 7;
/// `p` outside `(0, 1]` or NaN.
pub const TOKENSIFT_ERROR_INVALID_TOP_P: tokensift_status = 8;
/// `min_p` outside `[0, 1]` or NaN.
pub const TOKENSIFT_ERROR_INVALID_MIN_P: tokensift_status = 9;
/// `struct_size` unknown, or sizes disagree.
pub const TOKENSIFT_ERROR_SIZE_MISMATCH: tokensift_status = 10;
/// `workspace_bytes` below the queried size.
pub const TOKENSIFT_ERROR_WORKSPACE_TOO_SMALL: tokensift_status = 11;
/// Backend not built in, or no device.
pub const TOKENSIFT_ERROR_BACKEND_UNAVAILABLE: tokensift_status = 12;
/// Unknown algo, or not offered by the backend.
pub const TOKENSIFT_ERROR_INVALID_ALGO: tokensift_status = 13;
/// A reserved field is set (`extensions != NULL`, `flags != 0`).
pub const TOKENSIFT_ERROR_UNSUPPORTED: tokensift_status = 14;
/// A CUDA call failed; the message names it.
pub const TOKENSIFT_ERROR_CUDA: tokensift_status = 15;
/// Internal error.
pub const TOKENSIFT_ERROR_INTERNAL: tokensift_status = 16;

/// `enum tokensift_row_status`: per-row result, written to
/// [`tokensift_outputs::row_status`].
pub type tokensift_row_status = c_int;
/// The row has a token.
pub const TOKENSIFT_ROW_OK: tokensift_row_status = 0;
/// A logit is NaN or +inf (or `x/T` overflows to +inf).
pub const TOKENSIFT_ROW_NAN_INPUT: tokensift_row_status = 1;
/// Every logit is -inf.
pub const TOKENSIFT_ROW_NO_VALID_TOKEN: tokensift_row_status = 2;
/// A per-row parameter read on the device is out of range.
pub const TOKENSIFT_ROW_INVALID_PARAM: tokensift_row_status = 3;

/// `enum tokensift_dtype`: element type of the logits.
pub type tokensift_dtype = c_int;
/// IEEE binary32.
pub const TOKENSIFT_DTYPE_F32: tokensift_dtype = 0;
/// bfloat16.
pub const TOKENSIFT_DTYPE_BF16: tokensift_dtype = 1;
/// IEEE binary16.
pub const TOKENSIFT_DTYPE_F16: tokensift_dtype = 2;

/// `enum tokensift_backend`.
pub type tokensift_backend = c_int;
/// The CPU backend (host memory).
pub const TOKENSIFT_BACKEND_CPU: tokensift_backend = 0;
/// The CUDA backend (device memory).
pub const TOKENSIFT_BACKEND_CUDA: tokensift_backend = 1;

/// `enum tokensift_algo`.
pub type tokensift_algo = c_int;
/// The backend picks (docs/api.md).
pub const TOKENSIFT_ALGO_AUTO: tokensift_algo = 0;
/// Sorting-free selection.
pub const TOKENSIFT_ALGO_PIVOT: tokensift_algo = 1;
/// Sorting-based baseline.
pub const TOKENSIFT_ALGO_SORT: tokensift_algo = 2;

/// `struct tokensift_logits`: `rows x vocab` elements, row `r` starting at
/// `data + r * row_stride` elements.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tokensift_logits {
    /// Host memory for the CPU backend, device memory for CUDA.
    pub data: *const c_void,
    /// Number of rows (>= 0).
    pub rows: i64,
    /// Elements per row (>= 1).
    pub vocab: i64,
    /// Distance between rows, in elements, >= vocab.
    pub row_stride: i64,
    /// Element type.
    pub dtype: tokensift_dtype,
}

/// `struct tokensift_param_f32`: one value, or one per row when `per_row`
/// is not NULL.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tokensift_param_f32 {
    /// The value for every row (when `per_row` is NULL).
    pub value: f32,
    /// One value per row, in the backend's memory, or NULL.
    pub per_row: *const f32,
}

/// `struct tokensift_param_i32`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tokensift_param_i32 {
    /// The value for every row (when `per_row` is NULL).
    pub value: i32,
    /// One value per row, in the backend's memory, or NULL.
    pub per_row: *const i32,
}

/// `struct tokensift_param_u64`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tokensift_param_u64 {
    /// The value for every row (when `per_row` is NULL).
    pub value: u64,
    /// One value per row, in the backend's memory, or NULL.
    pub per_row: *const u64,
}

/// `struct tokensift_params`: initialise with [`tokensift_params_init`].
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tokensift_params {
    /// `sizeof(tokensift_params)`, set by [`tokensift_params_init`].
    pub struct_size: u32,
    /// Reserved, must be 0.
    pub flags: u32,
    /// 0 (or < 1e-5) = greedy; default 1.
    pub temperature: tokensift_param_f32,
    /// `[0, 1]`; 0 disables; default 0.
    pub min_p: tokensift_param_f32,
    /// `>= 0`; 0 or `>= vocab` disables; default 0.
    pub top_k: tokensift_param_i32,
    /// `(0, 1]`; 1 disables; default 1.
    pub top_p: tokensift_param_f32,
    /// Philox key; default 0.
    pub seed: tokensift_param_u64,
    /// Philox counter (e.g. the decode step); default 0.
    pub offset: tokensift_param_u64,
    /// Reserved for later filters; must be NULL in 0.1.
    pub extensions: *const c_void,
}

/// `struct tokensift_outputs`: one element per row; `tokens` is required,
/// the rest may be NULL.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tokensift_outputs {
    /// Drawn token, -1 when `row_status != OK`.
    pub tokens: *mut i32,
    /// [`tokensift_row_status`] values.
    pub row_status: *mut i32,
    /// Log-probability of the token under the processed distribution.
    pub logprobs: *mut f32,
    /// Size of the kept set after all filters (1 for greedy).
    pub kept_counts: *mut i32,
}

/// `struct tokensift_config`: initialise with [`tokensift_config_init`].
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tokensift_config {
    /// `sizeof(tokensift_config)`, set by [`tokensift_config_init`].
    pub struct_size: u32,
    /// Default CPU.
    pub backend: tokensift_backend,
    /// Default AUTO.
    pub algo: tokensift_algo,
    /// CUDA device ordinal; default 0.
    pub device: i32,
    /// CPU worker threads; 0 = hardware concurrency.
    pub num_threads: i32,
}

/// `tokensift_sampler`: opaque handle.
#[repr(C)]
pub struct tokensift_sampler {
    _opaque: [u8; 0],
    // Neither Send, Sync nor Unpin: only ever used behind a raw pointer.
    _marker: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

extern "C" {
    /// Writes the defaults and `struct_size`.
    pub fn tokensift_config_init(config: *mut tokensift_config);
    /// Writes the defaults and `struct_size`.
    pub fn tokensift_params_init(params: *mut tokensift_params);

    /// Creates a sampler; `*out` is NULL on failure.
    pub fn tokensift_create(
        config: *const tokensift_config,
        out: *mut *mut tokensift_sampler,
    ) -> tokensift_status;
    /// Frees a sampler (NULL is a no-op).
    pub fn tokensift_destroy(sampler: *mut tokensift_sampler);

    /// Bytes of workspace a call with this shape needs (may be 0).
    pub fn tokensift_workspace_size(
        sampler: *const tokensift_sampler,
        rows: i64,
        vocab: i64,
        dtype: tokensift_dtype,
        bytes: *mut usize,
    ) -> tokensift_status;

    /// Zero-fills a workspace (asynchronously on `stream` for CUDA); optional.
    pub fn tokensift_workspace_init(
        sampler: *const tokensift_sampler,
        workspace: *mut c_void,
        workspace_bytes: usize,
        stream: *mut c_void,
    ) -> tokensift_status;

    /// Samples one token per row.  `stream` is a `cudaStream_t` for CUDA
    /// (NULL = the legacy default stream), ignored by the CPU backend.
    pub fn tokensift_sample(
        sampler: *mut tokensift_sampler,
        logits: *const tokensift_logits,
        params: *const tokensift_params,
        outputs: *const tokensift_outputs,
        workspace: *mut c_void,
        workspace_bytes: usize,
        stream: *mut c_void,
    ) -> tokensift_status;

    /// 1 when the backend is compiled in and usable on this machine.
    pub fn tokensift_backend_available(backend: tokensift_backend) -> c_int;

    /// A static description of a status.
    pub fn tokensift_status_string(status: tokensift_status) -> *const c_char;
    /// The message of the last failed call on this thread ("" if none).
    pub fn tokensift_last_error() -> *const c_char;
    /// The library version as a static string.
    pub fn tokensift_version_string() -> *const c_char;
    /// The library version as numbers.
    pub fn tokensift_version(major: *mut c_int, minor: *mut c_int, patch: *mut c_int);
}
