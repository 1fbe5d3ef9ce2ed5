/* SPDX-License-Identifier: Apache-2.0 */
// The one error type used inside libmlos, and Result<T>.
//
// An Error carries an mlos_error_t code (the C enum it maps to at the API
// boundary), the errno that caused it (0 if none), a message that names the
// object involved, and the source location where it was raised.
#pragma once

#include <cerrno>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "mlos/errors.h"

namespace mlos {

// Where an error was raised. Not SourceLocation: clang 14 (used for
// the libFuzzer build) lacks the builtin libstdc++'s version needs, while
// __builtin_FILE/__builtin_LINE work in both GCC and clang.
struct SourceLocation {
  static constexpr SourceLocation current(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    return SourceLocation{file, line};
  }
  const char* file_name() const { return file_; }
  int line() const { return line_; }
  const char* file_ = "";
  int line_ = 0;
};

struct Error {
  int code = MLOS_ERR_SYSTEM;
  int sys_errno = 0;
  std::string message;
  SourceLocation where;

  // "message (strerror(errno))" when errno is set, else "message".
  std::string describe() const;
};

inline Error make_error(int code, std::string message,
                        SourceLocation where = SourceLocation::current()) {
  return Error{code, 0, std::move(message), where};
}

// An error from a failed system call: code MLOS_ERR_SYSTEM unless given,
// errno captured by the caller (pass errno right after the failing call).
inline Error make_sys_error(int err, std::string message, int code = MLOS_ERR_SYSTEM,
                            SourceLocation where = SourceLocation::current()) {
  return Error{code, err, std::move(message), where};
}

// Either a value or an Error. Accessing the wrong side is a programming error
// (checked with assertions in debug builds).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Success or an Error, for operations with no value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  static Status Ok() { return Status(); }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

}  // namespace mlos
