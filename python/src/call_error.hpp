// How the extension reports a failed call: a library Status plus its message,
// raised in Python as tokensift.TokensiftError (see module.cpp).
#pragma once

#include <string>

#include "tokensift/tokensift.hpp"

namespace tokensift::py {

struct CallError {
  Status status;
  std::string message;
};

[[noreturn]] void raise_error(Status status, const char* format, ...)
    __attribute__((format(printf, 2, 3)));

// Turns a non-OK status returned by the library into a CallError carrying the
// library's own message (last_error_message() of this thread).
void check(Status status);

}  // namespace tokensift::py
