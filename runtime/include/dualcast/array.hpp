// dualcast::Array<T>: an n-dimensional float/double array, owning or a view of user memory.
//
// Row-major by default, with element strides, so transposes and user views
// cost no copy. Copying an Array shares the data (like a NumPy array object or
// a PyTorch tensor); `copy()` makes an independent one. Results of broadcasts
// are lazy: they are computed (fused with the broadcasts they depend on) when
// first read — `to_vector()`, `item()`, printing, a non-broadcast operation,
// `eval()` or the tape's backward sweep; so are sum/mean of a pending array.
//
// Views never own: `Array<T>::view(ptr, shape, strides)` reads (and, for a
// non-const `ptr`, writes) the user's buffer in place. Using a view after the
// buffer is freed is the user's bug; a null pointer (with a non-empty shape)
// or one not aligned for T is rejected with a clear error. A const `ptr` also
// says the memory does not change while a Tape that read it is alive: the
// tape reads it again in its sweep, where it copies a non-const view's
// values when recording (your code may write those; tape.hpp).
//
// Thread safety: distinct Array objects may be used from different threads at
// once; one Array (and its shared data) must not be written from two threads
// at once, like any container.
//
// Example:
//   auto x = dc::Array<float>::uniform({2, 3}, /*seed=*/1);   // [0, 1)
//   auto y = dc::Array<float>::from({1, 2, 3}, {3});
//   std::vector<double> buf(6);
//   auto v = dc::Array<double>::view(buf.data(), {3, 2}, {1, 3});  // a transposed view
//   std::cout << x.transpose() << "\n";
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "dualcast/detail/array_impl.hpp"
#include "dualcast/device.hpp"

namespace dualcast {

using Shape = std::vector<int64_t>;

template <class T>
concept ElementType = std::same_as<T, float> || std::same_as<T, double>;

template <ElementType T>
class Array {
 public:
  using value_type = T;

  // An empty handle (no array); most operations on it throw.
  Array() = default;
  explicit Array(std::shared_ptr<detail::ArrayImpl> impl);

  // Creation. Sizes must be >= 0; size-0 arrays are valid and empty.
  static Array from(const std::vector<T>& values, Shape shape, Device device = default_device());
  static Array from(std::initializer_list<T> values, Shape shape,
                    Device device = default_device()) {
    return from(std::vector<T>(values), std::move(shape), device);
  }
  static Array scalar(T value, Device device = default_device());
  static Array zeros(Shape shape, Device device = default_device());
  static Array ones(Shape shape, Device device = default_device());
  static Array full(Shape shape, T value, Device device = default_device());
  // Uniform on [lo, hi) and normal(mean, stddev) from a fixed, documented
  // generator (xoshiro256**), so a seed gives the same numbers everywhere.
  static Array uniform(Shape shape, uint64_t seed, T lo = 0, T hi = 1,
                       Device device = default_device());
  static Array normal(Shape shape, uint64_t seed, T mean = 0, T stddev = 1,
                      Device device = default_device());
  // 0, 1, ..., n-1.
  static Array arange(int64_t n, Device device = default_device());

  // Views of user memory (no copy). `strides` in elements, row-major when empty.
  static Array view(T* data, Shape shape, Shape strides = {});
  static Array view(const T* data, Shape shape, Shape strides = {});

  bool valid() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const Shape& strides() const;
  int rank() const;
  int64_t size() const;
  Device device() const;
  bool is_view() const;       // does not own its memory
  bool is_read_only() const;  // a view of const memory
  bool is_pending() const;    // a broadcast (or sum/mean of one) not computed yet

  // Reads (each computes a pending array first; from a device array each
  // copies what it reads to the host: at() one element).
  std::vector<T> to_vector() const;
  T item() const;  // the one element of a size-1 array
  T at(const Shape& index) const;
  const Array& eval() const;
  // Pointer to the first element (CPU arrays only: an Error names the
  // device otherwise); computes a pending array.
  const T* data() const;
  // The same, for writing: a write in place. Pending results that read this
  // memory are computed first; the array is a leaf from then on, and a Tape
  // that kept its memory refuses to use it. Which elements the caller changes
  // cannot be known: on an array computed from others (y = x * 2) a Tape
  // then refuses a gradient through it (some values may still be x's);
  // assign() all values instead, or write into a fresh Array::from copy.
  // Read through data().
  T* mutable_data();

  // Layout operations. While a Tape records, each records a node (as do the
  // free functions dualcast::reshape/transpose, which are these), so
  // gradients flow through them whichever way they are written.
  //
  // New owning array with the same values (contiguous).
  Array copy() const;
  // Copies into `device`; returns *this when already there. A copy across
  // devices is not recorded on the tape (a gradient through it is refused).
  Array to(Device device) const;
  // A view when the layout allows (contiguous), otherwise a copy. One
  // dimension may be -1 (inferred).
  Array reshape(Shape shape) const;
  // A view with permuted axes; no argument reverses them (a matrix transpose).
  Array transpose(std::vector<int> perm = {}) const;
  // Writes `values` into this array's memory (through views too; on a
  // device, copied there first): every element new, so a Tape takes the
  // array for user values from then on.
  void assign(const std::vector<T>& values);
  // Writes `source`'s values, broadcast to this array's shape (NumPy rules),
  // into this array's memory (through views too): a simulation storing its
  // new state where it viewed the old one, `state.assign(next)`. A source
  // that shares memory with this array (a shifted slice of it) is read in
  // full first. While a Tape records, the write is recorded like a copy:
  // this array then holds a new variable computed from `source`, and a
  // gradient reaching it flows to `source` (summed over broadcast axes).
  // Another view of the same memory, made separately before or after,
  // reads those values too, but the tape credits only this array (and its
  // slices, reshapes and transposes): a gradient through the other view is
  // refused (an Error), never zeros. Errors (a shape
  // that does not broadcast, another device, a read-only or self-overlapping
  // destination) leave the memory untouched.
  void assign(const Array& source);

  // NumPy-like text, elided with "..." when large (over 1000 elements: the
  // first and last 3 along each axis), e.g. "array([1000001, 0.1], dtype=float64)".
  // Each element is written by element_str, faithfully enough that different
  // values print differently except where they agree to 8 digits:
  //   - nan (no sign, as NumPy), inf and -inf;
  //   - a whole number below 1e16 in magnitude: every digit, no point
  //     ("1000001", "16777218", "-0"), the element's exact value;
  //   - any other number: the shortest decimal that reads back as the same
  //     element, if it has at most 8 significant digits (a non-integer of 1e7
  //     or more: its integer digits and one decimal). One that needs more is
  //     rounded to that many and keeps its trailing zeros ("1.0000000" for
  //     1 + 1e-9), so a rounded number never reads as an integer;
  //   - notation as printf's %g: scientific below 1e-4 and for whole numbers
  //     from 1e16 ("1e-05", "1e+16").
  // This is NumPy's repr at its default precision of 8 (unique shortest
  // digits, whole numbers in full), per element: no common width or notation
  // across the array, and no trailing "." on whole numbers.
  std::string str() const;

  const std::shared_ptr<detail::ArrayImpl>& impl() const { return impl_; }

 private:
  const detail::ArrayImpl& checked() const;
  const T* DataFor(const char* what) const;  // data(), its Error naming `what`
  std::shared_ptr<detail::ArrayImpl> impl_;
};

template <ElementType T>
std::ostream& operator<<(std::ostream& os, const Array<T>& a);

// One number as Array::str() writes an element of type T (the rule is there).
template <ElementType T>
std::string element_str(T x);

// Tells dualcast that the user memory [data, data + bytes) now holds values of
// the caller's own. dualcast remembers which computed values it wrote into a
// user buffer (as a partials() destination, or a gradient through a view), even
// after the buffer's views are gone, so that a view made of it later is not
// taken for constant values (a gradient through it is refused instead). It
// cannot see the memory freed and allocated again (a std::vector that grew) or
// refilled through a plain pointer: call this then. Views within the range,
// made before or after, read the caller's values (a gradient recorded through
// one before the call is refused as written in place since); a view reaching
// past the range still meets what is remembered of the rest. The array a
// partials() call wrote into keeps its own record: assign() through it instead.
//
// Example:
//   std::vector<double> state(n);
//   partials(step, {a}, {.value_out = {Array<double>::view(state.data(), {n})}});
//   fill_from_file(state);                     // the caller's own values now
//   forget_written_values(state.data(), n * sizeof(double));
//   auto v = Array<double>::view(state.data(), {n});  // user values, no refusal
void forget_written_values(const void* data, std::size_t bytes);

extern template class Array<float>;
extern template class Array<double>;

}  // namespace dualcast
