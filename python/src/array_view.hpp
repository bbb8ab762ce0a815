// Reading DLPack arrays (nb::ndarray) as the C++ API's views: logits, per-row
// parameters and outputs.  Every mismatch is a CallError with the status the
// library itself would use (INVALID_DTYPE, INVALID_STRIDE, SIZE_MISMATCH, ...),
// so Python sees one kind of argument error whatever layer found it.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "call_error.hpp"

namespace tokensift::py {

namespace nb = nanobind;

enum class Place { kCpu, kCuda };

struct Device {
  Place place = Place::kCpu;
  int id = 0;
  bool operator==(const Device&) const = default;
};

// dtype_override >= 0 is a tokensift_dtype forced by the caller (NumPy bf16
// arrays from ml_dtypes travel as uint16 because NumPy cannot export them).
LogitsView logits_view(const nb::ndarray<nb::ro>& logits, int dtype_override, Device* device);

Device device_of(int dlpack_device_type, int device_id);

// A parameter given as a Python number (every row) or a 1-D array of `rows`
// elements on `device`.
RowParam<float> f32_param(nb::handle value, const char* name, int64_t rows, Device device);
RowParam<int32_t> i32_param(nb::handle value, const char* name, int64_t rows, Device device);
RowParam<uint64_t> u64_param(nb::handle value, const char* name, int64_t rows, Device device);

// A writable 1-D output of `rows` elements; nullptr when `value` is None.
int32_t* i32_output(nb::handle value, const char* name, int64_t rows, Device device);
float* f32_output(nb::handle value, const char* name, int64_t rows, Device device);

// A caller-provided workspace: any contiguous array on `device`, in bytes.
// `expected` == nullptr accepts any device; `actual` (optional) receives the
// array's device.  `value` is cast exactly once: a DLPack capsule (how CUDA
// arrays arrive, tokensift/_arrays.py) can be consumed only once.
void* workspace_view(nb::handle value, const Device* expected, size_t* bytes,
                     Device* actual = nullptr);

}  // namespace tokensift::py
