// partials(): values and every elementwise partial of a kernel from one jvp'ed kernel launch.
#include "dualcast/partials.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dualcast/detail/execute.hpp"
#include "dualcast/detail/grad_node.hpp"
#include "dualcast/detail/lazy.hpp"
#include "jit/codegen/broadcast_layout.h"
#include "jit/error.h"
#include "jit/passes/jvp.h"
#include "runtime/in_place.h"
#include "runtime/pending_readers.h"

namespace dualcast {

template <ElementType T>
Partials<T>::Partials(std::vector<std::shared_ptr<detail::ArrayImpl>> values,
                      std::vector<std::shared_ptr<detail::ArrayImpl>> partials,
                      std::vector<int> wrt, std::vector<bool> structurally_zero,
                      std::string kernel_name)
    : values_(std::move(values)),
      partials_(std::move(partials)),
      wrt_(std::move(wrt)),
      zero_(std::move(structurally_zero)),
      name_(std::move(kernel_name)) {
  num_outputs_ = wrt_.empty() ? 0 : static_cast<int>(partials_.size() / wrt_.size());
  if (wrt_.empty()) num_outputs_ = static_cast<int>(values_.size());
}

template <ElementType T>
size_t Partials<T>::Slot(int m, int j) const {
  // A computed Partials holds values or partials (a kernel has an output).
  if (values_.empty() && partials_.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                "Partials: this is an empty (default-constructed) Partials object, which holds no "
                "results; assign it the result of dualcast::partials(kernel, inputs) first");
  }
  if (m < 0 || m >= num_outputs_) {
    throw Error(ErrorKind::kInvalidArgument,
                absl::StrCat(name_, ": output ", m, " does not exist; the kernel has ",
                             num_outputs_, " output(s), numbered from 0"));
  }
  for (size_t k = 0; k < wrt_.size(); ++k) {
    if (wrt_[k] == j) return static_cast<size_t>(m) * wrt_.size() + k;
  }
  throw Error(ErrorKind::kInvalidArgument,
              absl::StrCat(name_, ": no partials with respect to argument position ", j,
                           " were computed; add it to PartialsOptions::wrt"));
}

template <ElementType T>
Array<T> Partials<T>::value(int m) const {
  if (m < 0 || m >= num_outputs_) Slot(m, 0);  // throws the range error
  if (values_.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                name_ + ": values were not computed (PartialsOptions::values was false)");
  }
  return Array<T>(values_[m]);
}

template <ElementType T>
Array<T> Partials<T>::d(int m, int j) const {
  return Array<T>(partials_[Slot(m, j)]);
}

template <ElementType T>
bool Partials<T>::structurally_zero(int m, int j) const {
  return zero_[Slot(m, j)];
}

namespace {

template <ElementType T>
Partials<T> ComputePartials(const Kernel& k, const std::vector<Array<T>>& inputs,
                            const PartialsOptions<T>& options) {
  using detail::ArrayImpl;
  const std::string& name = k.name();
  const detail::DType dtype = detail::DTypeOf<T>();
  if (inputs.empty()) {
    throw Error(ErrorKind::kArity, name + ": partials needs at least one array argument");
  }
  std::vector<std::shared_ptr<ArrayImpl>> impls;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid()) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(name, ": argument ", i + 1, " is an empty Array handle"));
    }
    if (inputs[i].device() != inputs[0].device()) {
      throw Error(ErrorKind::kDevice,
                  absl::StrCat(name, ": argument ", i + 1, " is on ", inputs[i].device().name(),
                               " but argument 1 is on ", inputs[0].device().name(),
                               "; move the arrays to one device with .to(device) first"));
    }
    impls.push_back(inputs[i].impl());
    shapes.push_back(inputs[i].shape());
  }
  const int n = static_cast<int>(inputs.size());
  std::shared_ptr<const jit::Function> fn = k.function(n, dtype);
  const size_t M = fn->num_outputs();

  std::vector<int> wrt = options.wrt;
  if (wrt.empty()) {
    wrt.resize(n);
    std::iota(wrt.begin(), wrt.end(), 0);
  }
  for (int p : wrt) {
    if (p < 0 || p >= n) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(name, ": wrt position ", p, " is out of range; the kernel was given ",
                               n, " arguments (positions 0 to ", n - 1, ")"));
    }
  }
  const size_t J = wrt.size();
  const std::vector<int64_t> shape = detail::BroadcastShape(name, shapes);

  if (!options.value_out.empty() && options.value_out.size() != M) {
    throw Error(ErrorKind::kInvalidArgument,
                absl::StrCat(name, ": value_out has ", options.value_out.size(),
                             " arrays but the kernel has ", M, " output(s)"));
  }
  if (!options.value_out.empty() && !options.values) {
    throw Error(ErrorKind::kInvalidArgument,
                name + ": value_out was given but values is false; drop one of them");
  }
  if (!options.partial_out.empty() && options.partial_out.size() != M * J) {
    throw Error(ErrorKind::kInvalidArgument,
                absl::StrCat(name, ": partial_out has ", options.partial_out.size(),
                             " arrays but ", M, " output(s) x ", J,
                             " differentiated argument(s) need ", M * J));
  }
  auto check_dest = [&](const Array<T>& dest, const std::string& what) {
    if (dest.valid() && dest.shape() != shape) {
      throw Error(ErrorKind::kShape,
                  absl::StrCat(name, ": ", what, " has shape ", jit::FormatShape(dest.shape()),
                               " but the broadcast result has shape ", jit::FormatShape(shape),
                               "; pass an array (or view) of exactly that shape"));
    }
  };
  // Named as the caller passed them: indices into value_out and partial_out,
  // outputs and arguments counted from 1 as in every other message, with the
  // argument's position (counted from 0, as in wrt) beside it.
  auto partial_name = [&](size_t p) {
    return absl::StrCat("partial_out[", p, "] (d output ", p / J + 1, " / d argument ", wrt[p % J] + 1,
                        ", position ", wrt[p % J], ")");
  };
  for (size_t m = 0; m < options.value_out.size(); ++m) {
    check_dest(options.value_out[m], absl::StrCat("value_out[", m, "]"));
  }
  for (size_t p = 0; p < options.partial_out.size(); ++p) check_dest(options.partial_out[p], partial_name(p));

  std::shared_ptr<const jit::JvpResult> jvp = detail::CachedJvp(fn, wrt);
  detail::ExecuteOptions exec;
  exec.write.assign(M, options.values);
  exec.write.resize(M + M * J, true);
  exec.destinations.resize(M + M * J);
  for (size_t m = 0; m < options.value_out.size(); ++m) {
    if (options.value_out[m].valid()) exec.destinations[m] = options.value_out[m].impl();
  }
  for (size_t p = 0; p < options.partial_out.size(); ++p) {
    if (options.partial_out[p].valid()) {
      exec.destinations[jit::PartialIndex(M, J, p / J, p % J)] = options.partial_out[p].impl();
    }
  }
  exec.destination_names.resize(M + M * J);
  for (size_t m = 0; m < M; ++m) exec.destination_names[m] = absl::StrCat("value_out[", m, "]");
  for (size_t p = 0; p < M * J; ++p) exec.destination_names[jit::PartialIndex(M, J, p / J, p % J)] = partial_name(p);
  auto jvp_fn = std::shared_ptr<const jit::Function>(jvp, &jvp->function);
  // Pending results that read a destination keep its values of before this call.
  for (const auto& dest : exec.destinations) {
    if (dest != nullptr) detail::ComputeReadersBeforeWrite(*dest);
  }
  std::vector<std::shared_ptr<ArrayImpl>> outs = detail::Execute(name, jvp_fn, impls, exec);
  // Every result was computed from the inputs, and partials() is not
  // recorded: a tape that later meets one refuses a gradient through it
  // rather than taking it for a constant. A destination was written in
  // place: it is a leaf now, and a tape that kept its memory refuses to use it.
  std::vector<std::shared_ptr<ArrayImpl>> computed;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (outs[k] == nullptr) continue;
    if (exec.destinations[k] != nullptr) detail::NoteInPlaceWrite(*outs[k], /*whole=*/true);
    computed.push_back(outs[k]);
  }
  detail::NoteOrigin(name, impls, computed);
  // Other views of a destination's memory hold those computed values too.
  for (size_t k = 0; k < outs.size(); ++k) {
    if (outs[k] != nullptr && exec.destinations[k] != nullptr) detail::NoteInPlaceWriter(*outs[k], true);
  }

  std::vector<std::shared_ptr<ArrayImpl>> values;
  if (options.values) values.assign(outs.begin(), outs.begin() + M);
  std::vector<std::shared_ptr<ArrayImpl>> parts(outs.begin() + M, outs.end());
  return Partials<T>(std::move(values), std::move(parts), std::move(wrt), jvp->structurally_zero,
                     name);
}

}  // namespace

Partials<float> partials(const Kernel& k, const std::vector<Array<float>>& inputs,
                         const PartialsOptions<float>& options) {
  return ComputePartials(k, inputs, options);
}
Partials<double> partials(const Kernel& k, const std::vector<Array<double>>& inputs,
                          const PartialsOptions<double>& options) {
  return ComputePartials(k, inputs, options);
}

template class Partials<float>;
template class Partials<double>;

}  // namespace dualcast
