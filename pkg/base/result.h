// File: result.h
//
// Result<T, E>: either a value or an error, the return type of every fallible operation that
// crosses a package boundary (no exceptions do). A small stand-in for C++23 std::expected.
//
//   Result<Pod, DecodeError> r = decodePod(json);
//   if (!r) return r.error();
//   use(*r);
#pragma once

#include <cassert>
#include <type_traits>
#include <utility>
#include <variant>

namespace egress {

// Wraps an error so Result's constructor can tell it from a value of a convertible type.
template <typename E>
struct Unexpected {
  E error;
};
template <typename E>
Unexpected<std::decay_t<E>> unexpected(E&& e) {
  return {std::forward<E>(e)};
}

template <typename T, typename E>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit
  Result(E error)                                                        // NOLINT: implicit
      requires(!std::is_same_v<T, E>)
      : state_(std::in_place_index<1>, std::move(error)) {}
  template <typename G>
  Result(Unexpected<G> u) : state_(std::in_place_index<1>, std::move(u.error)) {}  // NOLINT

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(state_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(state_));
  }
  const E& error() const {
    assert(!ok());
    return std::get<1>(state_);
  }
  E& error() {
    assert(!ok());
    return std::get<1>(state_);
  }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, E> state_;
};

// Result of an operation that yields nothing but may fail.
struct Ok {};

}  // namespace egress
