#include "call_error.hpp"

#include <cstdarg>
#include <cstdio>

namespace tokensift::py {

void raise_error(Status status, const char* format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  throw CallError{status, buffer};
}

void check(Status status) {
  if (status != Status::kOk) throw CallError{status, last_error_message()};
}

}  // namespace tokensift::py
