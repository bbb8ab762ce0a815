/* tokensift.h: the C ABI.
 *
 * Plain C (C99), no C++ types cross it, so C engines (ds4, llama.cpp) and Rust
 * (rust/tokensift, hand-written FFI) call it directly.  Two-phase like CUB: ask for the workspace size,
 * allocate it once, then call tokensift_sample any number of times; no call
 * allocates, synchronizes or (on the CUDA backend) breaks graph capture.
 *
 * What a call returns for each row is defined in docs/semantics.md.
 */
#ifndef TOKENSIFT_H_
#define TOKENSIFT_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define TOKENSIFT_API __declspec(dllexport)
#else
#define TOKENSIFT_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define TOKENSIFT_VERSION_MAJOR 0
#define TOKENSIFT_VERSION_MINOR 1
#define TOKENSIFT_VERSION_PATCH 0

/* Call status: argument errors are found before any work is launched. */
typedef enum tokensift_status {
  TOKENSIFT_OK = 0,
  TOKENSIFT_ERROR_NULL_POINTER = 1,          /* a required pointer is NULL */
  TOKENSIFT_ERROR_INVALID_VOCAB = 2,         /* vocab < 1 or > INT32_MAX */
  TOKENSIFT_ERROR_INVALID_STRIDE = 3,        /* row_stride < vocab, or data not aligned to its elements */
  TOKENSIFT_ERROR_INVALID_ROWS = 4,          /* rows < 0 */
  TOKENSIFT_ERROR_INVALID_DTYPE = 5,         /* unknown dtype */
  TOKENSIFT_ERROR_INVALID_TEMPERATURE = 6,   /* T < 0, NaN or inf */
  TOKENSIFT_ERROR_INVALID_TOP_K = 7,         /* k < 0 */
  TOKENSIFT_ERROR_INVALID_TOP_P = 8,         /* p outside (0, 1] or NaN */
  TOKENSIFT_ERROR_INVALID_MIN_P = 9,         /* min_p outside [0, 1] or NaN */
  TOKENSIFT_ERROR_SIZE_MISMATCH = 10,        /* struct_size unknown, or sizes disagree */
  TOKENSIFT_ERROR_WORKSPACE_TOO_SMALL = 11,  /* workspace_bytes < the queried size */
  TOKENSIFT_ERROR_BACKEND_UNAVAILABLE = 12,  /* backend not built in, or no device */
  TOKENSIFT_ERROR_INVALID_ALGO = 13,         /* unknown algo, or not offered by the backend */
  TOKENSIFT_ERROR_UNSUPPORTED = 14,          /* a reserved field is set (extensions != NULL) */
  TOKENSIFT_ERROR_CUDA = 15,                 /* a CUDA call failed; the message names it */
  TOKENSIFT_ERROR_INTERNAL = 16
} tokensift_status;

/* Per-row result status, written to tokensift_outputs.row_status. */
typedef enum tokensift_row_status {
  TOKENSIFT_ROW_OK = 0,
  TOKENSIFT_ROW_NAN_INPUT = 1,       /* a logit is NaN or +inf (or x/T overflows to +inf) */
  TOKENSIFT_ROW_NO_VALID_TOKEN = 2,  /* every logit is -inf */
  TOKENSIFT_ROW_INVALID_PARAM = 3    /* a per-row parameter read on the device is out of range */
} tokensift_row_status;

typedef enum tokensift_dtype {
  TOKENSIFT_DTYPE_F32 = 0,
  TOKENSIFT_DTYPE_BF16 = 1,
  TOKENSIFT_DTYPE_F16 = 2
} tokensift_dtype;

typedef enum tokensift_backend {
  TOKENSIFT_BACKEND_CPU = 0,
  TOKENSIFT_BACKEND_CUDA = 1
} tokensift_backend;

typedef enum tokensift_algo {
  TOKENSIFT_ALGO_AUTO = 0,   /* the backend picks (documented heuristic in docs/api.md) */
  TOKENSIFT_ALGO_PIVOT = 1,  /* sorting-free selection (CPU: nth_element-based; CUDA: pivot kernels) */
  TOKENSIFT_ALGO_SORT = 2    /* sorting-based baseline (CUDA: CUB segmented radix sort; CPU: full sort) */
} tokensift_algo;

/* A batch of logits rows: rows x vocab elements, row r starting at
 * data + r * row_stride elements.  Host memory for the CPU backend, device
 * memory for the CUDA backend. */
typedef struct tokensift_logits {
  const void* data;
  int64_t rows;
  int64_t vocab;
  int64_t row_stride; /* in elements, >= vocab */
  tokensift_dtype dtype;
} tokensift_logits;

/* A parameter that is one value for every row, or one value per row when
 * per_row is not NULL (per_row[r] then overrides value).  per_row lives where
 * the logits live (host for CPU, device for CUDA). */
typedef struct tokensift_param_f32 {
  float value;
  const float* per_row;
} tokensift_param_f32;
typedef struct tokensift_param_i32 {
  int32_t value;
  const int32_t* per_row;
} tokensift_param_i32;
typedef struct tokensift_param_u64 {
  uint64_t value;
  const uint64_t* per_row;
} tokensift_param_u64;

/* Sampling parameters.  Initialise with tokensift_params_init; the filters run
 * temperature -> min_p -> top_k -> top_p -> draw (docs/semantics.md). */
typedef struct tokensift_params {
  uint32_t struct_size;              /* sizeof(tokensift_params): set by tokensift_params_init */
  uint32_t flags;                    /* reserved, must be 0 */
  tokensift_param_f32 temperature;   /* 0 (or < 1e-5) = greedy; default 1 */
  tokensift_param_f32 min_p;         /* [0, 1]; 0 disables; default 0 */
  tokensift_param_i32 top_k;         /* >= 0; 0 or >= vocab disables; default 0 */
  tokensift_param_f32 top_p;         /* (0, 1]; 1 disables; default 1 */
  tokensift_param_u64 seed;          /* Philox key; default 0 */
  tokensift_param_u64 offset;        /* Philox counter, e.g. the decode step; default 0 */
  /* Reserved for later filters (top-n-sigma, penalties, logit bias, token
   * bitmask): a chain of tagged extension structs.  Must be NULL in 0.1. */
  const void* extensions;
} tokensift_params;

/* Outputs, one element per row.  tokens is required; the rest may be NULL. */
typedef struct tokensift_outputs {
  int32_t* tokens;      /* drawn token, -1 when row_status != OK */
  int32_t* row_status;  /* tokensift_row_status */
  float* logprobs;      /* log-probability of the token under the processed distribution */
  int32_t* kept_counts; /* size of the kept set after all filters (1 for greedy) */
} tokensift_outputs;

typedef struct tokensift_config {
  uint32_t struct_size;      /* sizeof(tokensift_config): set by tokensift_config_init */
  tokensift_backend backend; /* default CPU */
  tokensift_algo algo;       /* default AUTO */
  int32_t device;            /* CUDA device ordinal; default 0 */
  int32_t num_threads;       /* CPU worker threads; 0 = hardware concurrency */
} tokensift_config;

typedef struct tokensift_sampler tokensift_sampler; /* opaque handle */

TOKENSIFT_API void tokensift_config_init(tokensift_config* config);
TOKENSIFT_API void tokensift_params_init(tokensift_params* params);

TOKENSIFT_API tokensift_status tokensift_create(const tokensift_config* config,
                                                tokensift_sampler** out);
TOKENSIFT_API void tokensift_destroy(tokensift_sampler* sampler);

/* Bytes of workspace a call with this shape needs (may be 0). */
TOKENSIFT_API tokensift_status tokensift_workspace_size(const tokensift_sampler* sampler,
                                                        int64_t rows, int64_t vocab,
                                                        tokensift_dtype dtype,
                                                        size_t* bytes);

/* Zero-fills a workspace (asynchronously on `stream` for CUDA).  Optional:
 * calls need no particular workspace contents (the CUDA pivot path clears the
 * few bytes it relies on itself), so one workspace serves calls of any shape
 * and algorithm in any order on one stream. */
TOKENSIFT_API tokensift_status tokensift_workspace_init(const tokensift_sampler* sampler,
                                                        void* workspace, size_t workspace_bytes,
                                                        void* stream);

/* Samples one token per row.  stream is a cudaStream_t for CUDA (NULL = the
 * legacy default stream) and ignored by the CPU backend, which returns when
 * the results are written. */
TOKENSIFT_API tokensift_status tokensift_sample(tokensift_sampler* sampler,
                                                const tokensift_logits* logits,
                                                const tokensift_params* params,
                                                const tokensift_outputs* outputs,
                                                void* workspace, size_t workspace_bytes,
                                                void* stream);

/* 1 when the backend is compiled in and usable on this machine. */
TOKENSIFT_API int tokensift_backend_available(tokensift_backend backend);

TOKENSIFT_API const char* tokensift_status_string(tokensift_status status);
/* The message of the last failed call on this thread ("" if none). */
TOKENSIFT_API const char* tokensift_last_error(void);
TOKENSIFT_API const char* tokensift_version_string(void);
TOKENSIFT_API void tokensift_version(int* major, int* minor, int* patch);

#ifdef __cplusplus
}
#endif

#endif /* TOKENSIFT_H_ */
