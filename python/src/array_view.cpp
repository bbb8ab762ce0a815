#include "array_view.hpp"

#include <limits>

namespace tokensift::py {
namespace {

namespace dl = nb::dlpack;

const char* place_name(Device d) { return d.place == Place::kCpu ? "cpu" : "cuda"; }

Device device_of_array(const nb::ndarray<nb::ro>& a) { return device_of(a.device_type(), a.device_id()); }

void check_same_device(const nb::ndarray<nb::ro>& a, const char* name, Device expected) {
  const Device d = device_of_array(a);
  if (!(d == expected)) {
    raise_error(Status::kSizeMismatch, "%s is on %s:%d but logits are on %s:%d", name, place_name(d),
                d.id, place_name(expected), expected.id);
  }
}

// A 1-D, unit-stride array of exactly `rows` elements on `device`.
void check_row_array(const nb::ndarray<nb::ro>& a, const char* name, int64_t rows, Device device) {
  if (a.ndim() != 1) {
    raise_error(Status::kSizeMismatch, "%s must be a number or a 1-D array, got %zu dimensions", name,
                a.ndim());
  }
  if ((int64_t)a.shape(0) != rows) {
    raise_error(Status::kSizeMismatch, "%s has %lld elements but logits have %lld rows", name,
                (long long)a.shape(0), (long long)rows);
  }
  if (rows > 1 && a.stride(0) != 1) {
    raise_error(Status::kInvalidStride, "%s must be contiguous (stride %lld)", name,
                (long long)a.stride(0));
  }
  check_same_device(a, name, device);
}

bool is_number(nb::handle h) {
  return nb::isinstance<nb::float_>(h) || nb::isinstance<nb::int_>(h) || nb::isinstance<nb::bool_>(h);
}

nb::ndarray<nb::ro> as_array(nb::handle h, const char* name) {
  nb::ndarray<nb::ro> a;
  if (!nb::try_cast(h, a, /*convert=*/false)) {
    raise_error(Status::kInvalidDtype, "%s must be a number or a DLPack array", name);
  }
  return a;
}

bool has_dtype(const nb::ndarray<nb::ro>& a, dl::dtype_code code, int bits) {
  const dl::dtype t = a.dtype();
  return t.code == (uint8_t)code && t.bits == bits && t.lanes == 1;
}

}  // namespace

Device device_of(int type, int id) {
  if (type == nb::device::cpu::value) return {Place::kCpu, 0};
  if (type == nb::device::cuda::value || type == nb::device::cuda_managed::value) return {Place::kCuda, id};
  raise_error(Status::kBackendUnavailable,
              "arrays on DLPack device type %d are not supported (CPU and CUDA are)", type);
}

LogitsView logits_view(const nb::ndarray<nb::ro>& a, int dtype_override, Device* device) {
  *device = device_of_array(a);
  LogitsView v;
  if (dtype_override >= 0) {
    v.dtype = (DType)dtype_override;
  } else if (has_dtype(a, dl::dtype_code::Float, 32)) {
    v.dtype = DType::kF32;
  } else if (has_dtype(a, dl::dtype_code::Float, 16)) {
    v.dtype = DType::kF16;
  } else if (has_dtype(a, dl::dtype_code::Bfloat, 16)) {
    v.dtype = DType::kBF16;
  } else {
    const dl::dtype t = a.dtype();
    raise_error(Status::kInvalidDtype,
                "logits must be float32, float16 or bfloat16 (DLPack code %d, %d bits)", t.code,
                t.bits);
  }
  if (a.ndim() == 1) {
    v.rows = 1;
    v.vocab = (int64_t)a.shape(0);
    if (v.vocab > 1 && a.stride(0) != 1) {
      raise_error(Status::kInvalidStride, "1-D logits must be contiguous (stride %lld)",
                  (long long)a.stride(0));
    }
    v.row_stride = v.vocab;
  } else if (a.ndim() == 2) {
    v.rows = (int64_t)a.shape(0);
    v.vocab = (int64_t)a.shape(1);
    if (v.rows > 0 && v.vocab > 1 && a.stride(1) != 1) {
      raise_error(Status::kInvalidStride,
                  "logits rows must be contiguous (inner stride %lld, must be 1)",
                  (long long)a.stride(1));
    }
    // A single row's outer stride is meaningless (frameworks report anything).
    v.row_stride = v.rows > 1 ? (int64_t)a.stride(0) : v.vocab;
  } else {
    raise_error(Status::kInvalidRows, "logits must be 1-D (V,) or 2-D (B, V), got %zu dimensions",
                a.ndim());
  }
  v.data = a.data();
  return v;
}

RowParam<float> f32_param(nb::handle h, const char* name, int64_t rows, Device device) {
  if (is_number(h)) return {(float)nb::cast<double>(h), nullptr};
  const nb::ndarray<nb::ro> a = as_array(h, name);
  if (!has_dtype(a, dl::dtype_code::Float, 32)) {
    raise_error(Status::kInvalidDtype, "per-row %s must be float32", name);
  }
  check_row_array(a, name, rows, device);
  return {0.0f, static_cast<const float*>(a.data())};
}

RowParam<int32_t> i32_param(nb::handle h, const char* name, int64_t rows, Device device) {
  if (is_number(h)) {
    const long long k = nb::cast<long long>(h);
    // k >= V disables top-k, so clamping huge values keeps their meaning;
    // negatives stay negative so that the library reports INVALID_TOP_K.
    const long long kMax = std::numeric_limits<int32_t>::max();
    const long long kMin = std::numeric_limits<int32_t>::min();
    return {(int32_t)(k > kMax ? kMax : (k < kMin ? kMin : k)), nullptr};
  }
  const nb::ndarray<nb::ro> a = as_array(h, name);
  if (!has_dtype(a, dl::dtype_code::Int, 32)) {
    raise_error(Status::kInvalidDtype, "per-row %s must be int32", name);
  }
  check_row_array(a, name, rows, device);
  return {0, static_cast<const int32_t*>(a.data())};
}

RowParam<uint64_t> u64_param(nb::handle h, const char* name, int64_t rows, Device device) {
  if (is_number(h)) return {nb::cast<uint64_t>(h), nullptr};
  const nb::ndarray<nb::ro> a = as_array(h, name);
  // int64 arrays are read as the same 64 bits (torch has no full uint64 support).
  if (!has_dtype(a, dl::dtype_code::Int, 64) && !has_dtype(a, dl::dtype_code::UInt, 64)) {
    raise_error(Status::kInvalidDtype, "per-row %s must be int64 or uint64", name);
  }
  check_row_array(a, name, rows, device);
  return {0, static_cast<const uint64_t*>(a.data())};
}

namespace {

void* output_data(nb::handle h, const char* name, int64_t rows, Device device, dl::dtype_code code,
                  const char* type_name) {
  if (h.is_none()) return nullptr;
  nb::ndarray<> a;
  if (!nb::try_cast(h, a, /*convert=*/false)) {
    raise_error(Status::kInvalidDtype, "%s must be a writable DLPack array", name);
  }
  const dl::dtype t = a.dtype();
  if (!(t.code == (uint8_t)code && t.bits == 32 && t.lanes == 1)) {
    raise_error(Status::kInvalidDtype, "%s must be %s", name, type_name);
  }
  const nb::ndarray<nb::ro> view(a);
  check_row_array(view, name, rows, device);
  return a.data();
}

}  // namespace

int32_t* i32_output(nb::handle h, const char* name, int64_t rows, Device device) {
  return static_cast<int32_t*>(output_data(h, name, rows, device, dl::dtype_code::Int, "int32"));
}

float* f32_output(nb::handle h, const char* name, int64_t rows, Device device) {
  return static_cast<float*>(output_data(h, name, rows, device, dl::dtype_code::Float, "float32"));
}

void* workspace_view(nb::handle h, const Device* expected, size_t* bytes, Device* actual) {
  nb::ndarray<> a;
  if (!nb::try_cast(h, a, /*convert=*/false)) {
    raise_error(Status::kNullPointer, "workspace must be a writable DLPack array");
  }
  const nb::ndarray<nb::ro> view(a);
  if (expected != nullptr) check_same_device(view, "workspace", *expected);
  if (actual != nullptr) *actual = device_of_array(view);
  if (a.ndim() != 1 || (a.shape(0) > 1 && a.stride(0) != 1)) {
    raise_error(Status::kInvalidStride, "workspace must be a contiguous 1-D array");
  }
  *bytes = a.nbytes();
  return a.data();
}

}  // namespace tokensift::py
