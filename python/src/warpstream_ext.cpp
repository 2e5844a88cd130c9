// warpstream._warpstream: the nanobind extension behind the `warpstream` Python package (python/warpstream).
//
// Wraps the public API only (include/warpstream): CpuEngine (engine.h), CudaEngine/ExecutionContext
// (cuda_engine.h) and Pipeline (lanes.h) when WS_PY_CUDA (cmake/python.cmake: WS_PYTHON_CUDA), CpuClassifier
// (classifier.h), decode_image_file (image.h).
// Errors: every ws::Status that is not ok becomes a Python exception — warpstream.Error (a RuntimeError)
// or, for kInvalidArgument, warpstream.InvalidArgumentError (an Error and a ValueError), both defined in
// python/warpstream/_errors.py — whose message is Status::to_string() ("invalid model: ...") and whose
// `code` attribute is status_code_name().
// Built by cmake/python.cmake (WS_BUILD_PYTHON=ON); tested by python/tests (scripts/test-python.sh).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "warpstream/classifier.h"
#include "warpstream/engine.h"
#include "warpstream/graph.h"
#include "warpstream/image.h"
#include "warpstream/status.h"
#if WS_PY_CUDA
#include <cuda_runtime.h>

#include "warpstream/cuda_engine.h"
#include "warpstream/flow.h"
#include "warpstream/lanes.h"
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace {

// ---- errors ---------------------------------------------------------------------------------------------

/// Thrown (never across the C++ API, only inside this extension) to carry a Status to the translator.
struct StatusError {
  ws::Status status;
};
[[noreturn]] void raise(ws::Status s) { throw StatusError{std::move(s)}; }
void check(ws::Status s) {
  if (!s.is_ok()) raise(std::move(s));
}
template <typename T>
T unwrap(ws::Result<T> r) {
  if (!r.is_ok()) raise(r.status());
  return std::move(r).value();
}

PyObject* g_error = nullptr;             // warpstream.Error(RuntimeError)
PyObject* g_invalid_argument = nullptr;  // warpstream.InvalidArgumentError(Error, ValueError)

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const StatusError& e) {
    PyObject* type = e.status.code() == ws::StatusCode::kInvalidArgument ? g_invalid_argument : g_error;
    const std::string msg = e.status.to_string();
    PyObject* exc = PyObject_CallFunction(type, "ss", msg.c_str(), ws::status_code_name(e.status.code()));
    if (exc == nullptr) return;  // the call set its own exception
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
  }
}

// ---- dtypes and arrays ----------------------------------------------------------------------------------

nb::dlpack::dtype to_dlpack(ws::DType t) {
  using C = nb::dlpack::dtype_code;
  auto make = [](C code, int bits) {
    nb::dlpack::dtype d;
    d.code = static_cast<uint8_t>(code);
    d.bits = static_cast<uint8_t>(bits);
    d.lanes = 1;
    return d;
  };
  switch (t) {
    case ws::DType::kFloat32: return make(C::Float, 32);
    case ws::DType::kFloat16: return make(C::Float, 16);
    case ws::DType::kFloat64: return make(C::Float, 64);
    case ws::DType::kBFloat16: return make(C::Bfloat, 16);
    case ws::DType::kInt8: return make(C::Int, 8);
    case ws::DType::kInt16: return make(C::Int, 16);
    case ws::DType::kInt32: return make(C::Int, 32);
    case ws::DType::kInt64: return make(C::Int, 64);
    case ws::DType::kUInt8: return make(C::UInt, 8);
    case ws::DType::kUInt16: return make(C::UInt, 16);
    case ws::DType::kUInt32: return make(C::UInt, 32);
    case ws::DType::kUInt64: return make(C::UInt, 64);
    case ws::DType::kBool: return make(C::Bool, 8);
    default: raise(ws::unsupported("dtype " + ws::dtype_name(t) + " has no array equivalent"));
  }
}

/// numpy-style name of an array's element type ("float32", "int64", "bfloat16"), for messages.
std::string dlpack_name(nb::dlpack::dtype d) {
  using C = nb::dlpack::dtype_code;
  std::string base;
  switch (static_cast<C>(d.code)) {
    case C::Float: base = "float"; break;
    case C::Int: base = "int"; break;
    case C::UInt: base = "uint"; break;
    case C::Bfloat: base = "bfloat"; break;
    case C::Bool: return "bool";
    case C::Complex: base = "complex"; break;
    default: base = "dtype" + std::to_string(d.code) + "_"; break;
  }
  return base + std::to_string(d.bits);
}

bool same_dtype(nb::dlpack::dtype a, nb::dlpack::dtype b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

std::string array_shape_string(const nb::ndarray<nb::ro>& a) {
  std::vector<int64_t> s(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) s[i] = static_cast<int64_t>(a.shape(i));
  return ws::shape_string(s);
}

bool is_c_contiguous(const nb::ndarray<nb::ro>& a) {
  int64_t expect = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expect) return false;
    expect *= static_cast<int64_t>(a.shape(i));
  }
  return true;
}

/// Copies a (possibly strided) host array into dense row-major `dst`.
void gather(const std::byte* src, std::byte* dst, const nb::ndarray<nb::ro>& a, size_t dim, size_t item,
            std::byte*& out) {
  if (dim == a.ndim()) {
    std::memcpy(out, src, item);
    out += item;
    return;
  }
  const int64_t step = a.stride(dim) * static_cast<int64_t>(item);
  for (size_t i = 0; i < a.shape(dim); ++i) gather(src + static_cast<int64_t>(i) * step, dst, a, dim + 1, item, out);
}
void copy_dense(const nb::ndarray<nb::ro>& a, void* dst) {
  const size_t item = a.itemsize();
  if (is_c_contiguous(a)) {
    std::memcpy(dst, a.data(), a.size() * item);
    return;
  }
  std::byte* out = static_cast<std::byte*>(dst);
  gather(static_cast<const std::byte*>(a.data()), out, a, 0, item, out);
}

/// Checks that `a` matches the engine tensor `d` (dtype, shape) and says what differs.
void check_matches(const nb::ndarray<nb::ro>& a, const ws::TensorDesc& d, const char* role) {
  const std::string want = ws::shape_string(d.shape) + " " + ws::dtype_name(d.dtype);
  if (!same_dtype(a.dtype(), to_dlpack(d.dtype))) {
    raise(ws::invalid_argument(std::string(role) + " '" + d.name + "': dtype " + dlpack_name(a.dtype()) +
                               ", the engine expects " + want + " (no implicit conversion; cast it first)"));
  }
  bool same = a.ndim() == d.shape.size();
  for (size_t i = 0; same && i < a.ndim(); ++i) same = static_cast<int64_t>(a.shape(i)) == d.shape[i];
  if (!same) {
    raise(ws::invalid_argument(std::string(role) + " '" + d.name + "': shape " + array_shape_string(a) +
                               ", the engine expects " + want));
  }
}

nb::ndarray<nb::ro> as_array(nb::handle h, const std::string& what) {
  nb::ndarray<nb::ro> a;
  bool ok = false;
  try {
    ok = nb::try_cast(h, a, false);
  } catch (const std::exception&) {  // nanobind's import of an unusual buffer (a big-endian format) may throw
    ok = false;
  }
  if (ok) return a;
  PyErr_Clear();  // a failed import may leave the producer's error (numpy's BufferError for a big-endian array) set
  const std::string type = nb::str(nb::handle(h.type()).attr("__name__")).c_str();
  if (h.is_none()) raise(ws::invalid_argument(what + ": expected an array, got None"));
  // An array nanobind cannot view (DLPack has no byte order or object dtype): say which dtype it is.
  if (nb::hasattr(h, "dtype") && nb::hasattr(h, "shape")) {
    std::string dt = nb::repr(h.attr("dtype")).c_str();  // repr: nb::str(obj) does not convert a non-str
    if (nb::hasattr(h.attr("dtype"), "byteorder") && nb::str(h.attr("dtype").attr("byteorder")).equal(nb::str(">")))
      dt += " (big-endian: convert with .astype(x.dtype.newbyteorder('=')))";
    raise(ws::invalid_argument(what + ": a " + type + " of dtype " + dt + " cannot be read (native-endian numeric "
                               "arrays only)"));
  }
  // A __dlpack__ that raises: keep its message.
  if (nb::hasattr(h, "__dlpack__")) {
    try {
      (void)h.attr("__dlpack__")();
    } catch (nb::python_error& e) {
      raise(ws::invalid_argument(what + ": its __dlpack__() raised " + std::string(e.what())));
    }
  }
  raise(ws::invalid_argument(what + ": expected an array (numpy, or an object with __dlpack__ or the buffer protocol), got " + type));
}

/// A new numpy array for an engine tensor (dense, owned by a capsule).
nb::object new_numpy(const ws::TensorDesc& d) {
  auto* buf = new std::byte[d.bytes > 0 ? d.bytes : 1];
  nb::capsule owner(buf, [](void* p) noexcept { delete[] static_cast<std::byte*>(p); });
  std::vector<size_t> shape(d.shape.begin(), d.shape.end());
  return nb::cast(nb::ndarray<nb::numpy>(buf, shape.size(), shape.data(), owner, nullptr, to_dlpack(d.dtype)));
}

// ---- Python-side descriptions ---------------------------------------------------------------------------

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype;
  size_t nbytes = 0;
};
TensorInfo info_of(const ws::TensorDesc& d) { return {d.name, d.shape, ws::dtype_name(d.dtype), d.bytes}; }

ws::ir::ImportOptions import_options(const std::map<std::string, std::vector<int64_t>>& input_shapes) {
  ws::ir::ImportOptions o;
  for (const auto& [name, shape] : input_shapes) o.input_shapes[name] = shape;
  return o;
}

// ---- Engine ---------------------------------------------------------------------------------------------

class Engine {
 public:
  ~Engine() {
#if WS_PY_CUDA
    if (done_ != nullptr) cudaEventDestroy(done_);
#endif
  }

  static std::unique_ptr<Engine> build(ws::ir::Graph graph, const std::string& device, const std::string& precision,
                                       const std::optional<std::string>& timing_cache) {
    auto e = std::unique_ptr<Engine>(new Engine());
    if (precision != "fp32" && precision != "fp16")
      raise(ws::invalid_argument("precision '" + precision + "': expected 'fp32' or 'fp16'"));
    if (device.rfind("cuda:", 0) == 0) {  // the index is checked on every build, with or without the CUDA executor
      const std::string idx = device.substr(5);
      if (idx.empty() || idx.size() > 4 || idx.find_first_not_of("0123456789") != std::string::npos)
        raise(ws::invalid_argument("device '" + device + "': expected 'cuda' or 'cuda:N' (N a device index >= 0)"));
    }
    if (device == "cpu") {
      if (precision != "fp32") {
        raise(ws::invalid_argument("precision '" + precision + "': the CPU executor is float32 only (fp16 needs device='cuda')"));
      }
      if (timing_cache) raise(ws::invalid_argument("timing_cache: only the CUDA executor has tactics (device='cuda')"));
      nb::gil_scoped_release release;
      e->cpu_ = unwrap(ws::CpuEngine::build(std::move(graph)));
      for (size_t i = 0; i < e->cpu_->num_inputs(); ++i) e->in_.push_back(e->cpu_->input_desc(i));
      for (size_t i = 0; i < e->cpu_->num_outputs(); ++i) e->out_.push_back(e->cpu_->output_desc(i));
    } else if (device == "cuda" || device.rfind("cuda:", 0) == 0) {
#if WS_PY_CUDA
      ws::CudaBuildOptions o;
      if (precision == "fp32") o.precision = ws::Precision::kFloat32;
      else if (precision == "fp16") o.precision = ws::Precision::kFloat16;
      else raise(ws::invalid_argument("precision '" + precision + "': expected 'fp32' or 'fp16'"));
      if (device.size() > 5) {
        try {
          o.device = std::stoi(device.substr(5));
        } catch (...) {
          raise(ws::invalid_argument("device '" + device + "': expected 'cuda' or 'cuda:N'"));
        }
      }
      if (timing_cache) o.timing_cache_path = *timing_cache;
      e->device_index_ = o.device;
      nb::gil_scoped_release release;
      // Mapped (zero-copy) lane slots want cudaDeviceMapHost on the context, as ws::cuda::init_device sets it
      // for the CLI; set it if no context exists yet (a context made earlier, e.g. by torch, keeps its flags;
      // on UVA platforms host allocations are mapped anyway).
#if CUDART_VERSION >= 12000
      (void)cudaInitDevice(o.device, cudaDeviceMapHost, cudaInitDeviceFlagsAreValid);
#else
      (void)cudaSetDeviceFlags(cudaDeviceMapHost);
#endif
      (void)cudaGetLastError();
      e->cuda_ = unwrap(ws::CudaEngine::build(std::move(graph), o));
      e->ctx_ = unwrap(e->cuda_->create_context());
      if (cudaError_t err = cudaEventCreateWithFlags(&e->done_, cudaEventDisableTiming); err != cudaSuccess) {
        raise({ws::StatusCode::kCuda, std::string("cudaEventCreate: ") + cudaGetErrorString(err)});
      }
      for (size_t i = 0; i < e->cuda_->num_inputs(); ++i) {
        // run() copies or binds dense NCHW arrays: an input taken in kHWC8 (CudaBuildOptions::hwc8_input_port, never set
        // here) would be read wrongly, so it is refused rather than converted.
        const ws::TensorDesc& d = e->cuda_->input_desc(i);
        if (d.format != ws::TensorFormat::kLinear)
          raise(ws::unsupported("input '" + d.name + "' is taken in format " + ws::tensor_format_name(d.format) +
                                " by this engine; Engine.run writes linear (NCHW) inputs only"));
        e->in_.push_back(d);
      }
      for (size_t i = 0; i < e->cuda_->num_outputs(); ++i) e->out_.push_back(e->cuda_->output_desc(i));
#else
      raise(ws::unsupported("device='" + device + "': this warpstream extension was built without the CUDA executor "
                            "(nvcc or cuDNN not found at build, or WS_ENABLE_CUDA=OFF / WS_PYTHON_CUDA=OFF); rebuild with nvcc on PATH, "
                            "cuDNN installed and neither option set to OFF to get device='cuda'"));
#endif
    } else {
      raise(ws::invalid_argument("device '" + device + "': expected 'cpu', 'cuda' or 'cuda:N'"));
    }
    e->device_ = device;
    e->precision_ = precision;
    return e;
  }

  const std::string& device() const { return device_; }
  const std::string& precision() const { return precision_; }
  std::vector<TensorInfo> inputs() const {
    std::vector<TensorInfo> r;
    for (const auto& d : in_) r.push_back(info_of(d));
    return r;
  }
  std::vector<TensorInfo> outputs() const {
    std::vector<TensorInfo> r;
    for (const auto& d : out_) r.push_back(info_of(d));
    return r;
  }
  size_t arena_bytes() const {
#if WS_PY_CUDA
    if (cuda_) return cuda_->arena_bytes();
#endif
    return cpu_->arena_bytes();
  }

  nb::object run(nb::handle inputs, nb::handle out, nb::handle stream) {
    std::vector<nb::ndarray<nb::ro>> in = gather_inputs(inputs);
    if (cpu_) return run_cpu(in, out, stream);
#if WS_PY_CUDA
    return run_cuda(in, out, stream);
#else
    raise(ws::internal_error("engine without executor"));
#endif
  }

 private:
  Engine() = default;

  /// One array per engine input from a single array, a sequence (input order) or a dict (by name).
  std::vector<nb::ndarray<nb::ro>> gather_inputs(nb::handle inputs) const {
    std::vector<nb::ndarray<nb::ro>> r;
    if (nb::isinstance<nb::dict>(inputs)) {
      nb::dict d = nb::borrow<nb::dict>(inputs);
      for (auto [k, v] : d) {
        const std::string key = nb::cast<std::string>(nb::str(k));
        bool known = false;
        for (const auto& t : in_) known |= t.name == key;
        if (!known) raise(ws::invalid_argument("inputs: the engine has no input named '" + key + "'" + names_hint()));
      }
      for (const auto& t : in_) {
        if (!d.contains(t.name.c_str())) raise(ws::invalid_argument("inputs: missing input '" + t.name + "'" + names_hint()));
        r.push_back(as_array(d[t.name.c_str()], "input '" + t.name + "'"));
      }
    } else if (nb::isinstance<nb::list>(inputs) || nb::isinstance<nb::tuple>(inputs)) {
      const size_t n = nb::len(inputs);
      if (n != in_.size()) {
        raise(ws::invalid_argument("inputs: " + std::to_string(n) + (n == 1 ? " array" : " arrays") + " for an engine with " +
                                   std::to_string(in_.size()) + " input(s)" + names_hint()));
      }
      for (size_t i = 0; i < n; ++i) r.push_back(as_array(inputs[i], "input '" + in_[i].name + "'"));
    } else {
      if (in_.size() != 1) {
        raise(ws::invalid_argument("inputs: one array for an engine with " + std::to_string(in_.size()) +
                                   " inputs; pass a list or a dict" + names_hint()));
      }
      r.push_back(as_array(inputs, "input '" + in_[0].name + "'"));
    }
    for (size_t i = 0; i < r.size(); ++i) check_matches(r[i], in_[i], "input");
    return r;
  }

  std::string names_hint() const {
    std::string s = " (inputs:";
    for (const auto& t : in_) s += " '" + t.name + "' " + ws::shape_string(t.shape) + " " + ws::dtype_name(t.dtype);
    return s + ")";
  }

  /// The out= arrays (one per output; a single array allowed for one output), checked.
  std::vector<std::pair<nb::object, nb::ndarray<>>> gather_out(nb::handle out) const {
    std::vector<nb::handle> items;
    if (nb::isinstance<nb::list>(out) || nb::isinstance<nb::tuple>(out)) {
      for (size_t i = 0; i < nb::len(out); ++i) items.push_back(out[i]);
    } else {
      items.push_back(out);
    }
    if (items.size() != out_.size()) {
      raise(ws::invalid_argument("out: " + std::to_string(items.size()) + (items.size() == 1 ? " array" : " arrays") + " for an engine with " +
                                 std::to_string(out_.size()) + " output(s)"));
    }
    std::vector<std::pair<nb::object, nb::ndarray<>>> r;
    for (size_t i = 0; i < items.size(); ++i) {
      nb::ndarray<> a;
      if (!nb::try_cast(items[i], a, false)) {
        raise(ws::invalid_argument("out '" + out_[i].name + "': expected a writable array (numpy, or an object with "
                                   "__dlpack__), got a read-only or non-array object"));
      }
      nb::ndarray<nb::ro> view(a);
      check_matches(view, out_[i], "out");
      if (!is_c_contiguous(view)) raise(ws::invalid_argument("out '" + out_[i].name + "': must be C-contiguous"));
      r.emplace_back(nb::borrow(items[i]), a);
    }
    return r;
  }

  nb::object pack(std::vector<nb::object> results) const {
    if (results.size() == 1) return results[0];
    nb::list l;
    for (auto& o : results) l.append(o);
    return nb::tuple(l);
  }

  nb::object run_cpu(const std::vector<nb::ndarray<nb::ro>>& in, nb::handle out, nb::handle stream) {
    if (!stream.is_none()) raise(ws::invalid_argument("stream: the CPU engine runs synchronously; pass stream=None"));
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i].device_type() != nb::device::cpu::value) {
        raise(ws::invalid_argument("input '" + in_[i].name + "': a device tensor given to a device='cpu' engine (move it to the host first)"));
      }
    }
    std::vector<nb::object> objs;
    std::vector<void*> dst;
    if (!out.is_none()) {
      for (auto& [obj, a] : gather_out(out)) {
        if (a.device_type() != nb::device::cpu::value) raise(ws::invalid_argument("out: a device='cpu' engine writes host arrays only"));
        objs.push_back(obj);
        dst.push_back(a.data());
      }
    } else {
      for (const auto& d : out_) {
        objs.push_back(new_numpy(d));
        dst.push_back(nb::cast<nb::ndarray<>>(objs.back()).data());
      }
    }
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = 0; i < in.size(); ++i) copy_dense(in[i], cpu_->input(i));
      check(cpu_->run());
      for (size_t i = 0; i < out_.size(); ++i) std::memcpy(dst[i], cpu_->output(i), out_[i].bytes);
    }
    return pack(std::move(objs));
  }

#if WS_PY_CUDA
  static void cuda_check(cudaError_t err, const std::string& what) {
    if (err != cudaSuccess) raise({ws::StatusCode::kCuda, what + ": " + cudaGetErrorString(err)});
  }

  /// stream=: None, an int (a cudaStream_t value), or an object with __cuda_stream__() (returns
  /// (version, handle)), .cuda_stream (torch.cuda.Stream) or .ptr (cupy.cuda.Stream).
  static std::optional<cudaStream_t> parse_stream(nb::handle s) {
    if (s.is_none()) return std::nullopt;
    nb::object v;
    if (nb::hasattr(s, "__cuda_stream__")) v = nb::borrow<nb::tuple>(s.attr("__cuda_stream__")())[1];
    else if (nb::hasattr(s, "cuda_stream")) v = s.attr("cuda_stream");
    else if (nb::hasattr(s, "ptr")) v = s.attr("ptr");
    else v = nb::borrow(s);
    uintptr_t h = 0;
    if (!nb::try_cast(v, h)) raise(ws::invalid_argument("stream: expected None, an int (cudaStream_t) or a stream object"));
    return reinterpret_cast<cudaStream_t>(h);
  }

  nb::object run_cuda(const std::vector<nb::ndarray<nb::ro>>& in, nb::handle out, nb::handle stream_arg) {
    const std::optional<cudaStream_t> explicit_stream = parse_stream(stream_arg);
    const cudaStream_t stream = explicit_stream.value_or(nullptr);  // None: the legacy default stream
    bool host_side = false, any_device = false;
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i].device_type() == nb::device::cuda::value) {
        if (in[i].device_id() != device_index_) {
          raise(ws::invalid_argument("input '" + in_[i].name + "': on cuda:" + std::to_string(in[i].device_id()) +
                                     ", the engine is on cuda:" + std::to_string(device_index_)));
        }
        if (!is_c_contiguous(in[i])) raise(ws::invalid_argument("input '" + in_[i].name + "': a device tensor must be C-contiguous (call .contiguous())"));
        any_device = true;
      } else if (in[i].device_type() == nb::device::cpu::value) {
        host_side = true;
      } else {
        raise(ws::invalid_argument("input '" + in_[i].name + "': unsupported device type " + std::to_string(in[i].device_type())));
      }
    }
    // Host copies of non-contiguous host inputs (the device copy needs a dense source).
    std::vector<std::vector<std::byte>> dense(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i].device_type() == nb::device::cpu::value && !is_c_contiguous(in[i])) {
        dense[i].resize(in_[i].bytes);
        copy_dense(in[i], dense[i].data());
      }
    }
    std::vector<nb::object> objs;
    std::vector<std::pair<void*, bool>> dst;  // pointer, is device memory
    if (!out.is_none()) {
      for (auto& [obj, a] : gather_out(out)) {
        const bool dev = a.device_type() == nb::device::cuda::value;
        if (!dev && a.device_type() != nb::device::cpu::value) raise(ws::invalid_argument("out: host or CUDA arrays only"));
        host_side |= !dev;
        objs.push_back(obj);
        dst.emplace_back(a.data(), dev);
      }
    } else if (any_device) {
      // Device inputs, no out=: a new device buffer per output (cudaMalloc; pass out= to avoid it),
      // returned in the first device input's framework (torch, cupy) or as a DLPack array.
      for (const auto& d : out_) {
        void* p = nullptr;
        cuda_check(cudaMalloc(&p, d.bytes), "cudaMalloc(" + std::to_string(d.bytes) + " bytes) for output '" + d.name + "'");
        nb::capsule owner(p, [](void* q) noexcept { cudaFree(q); });
        std::vector<size_t> shape(d.shape.begin(), d.shape.end());
        nb::object o;
        if (framework_ == Framework::kTorch) {
          o = nb::cast(nb::ndarray<nb::pytorch>(p, shape.size(), shape.data(), owner, nullptr, to_dlpack(d.dtype), nb::device::cuda::value, device_index_));
        } else if (framework_ == Framework::kCupy) {
          o = nb::cast(nb::ndarray<nb::cupy>(p, shape.size(), shape.data(), owner, nullptr, to_dlpack(d.dtype), nb::device::cuda::value, device_index_));
        } else {
          o = nb::cast(nb::ndarray<nb::array_api>(p, shape.size(), shape.data(), owner, nullptr, to_dlpack(d.dtype), nb::device::cuda::value, device_index_));
        }
        objs.push_back(o);
        dst.emplace_back(p, true);
      }
    } else {
      for (const auto& d : out_) {
        objs.push_back(new_numpy(d));
        dst.emplace_back(nb::cast<nb::ndarray<>>(objs.back()).data(), false);
      }
    }
    std::vector<std::pair<const void*, bool>> src(in.size());  // pointer, is device memory
    for (size_t i = 0; i < in.size(); ++i)
      src[i] = {dense[i].empty() ? in[i].data() : dense[i].data(), in[i].device_type() == nb::device::cuda::value};
    {
      nb::gil_scoped_release release;
      execute(src, dst, stream, host_side || !explicit_stream);
    }
    return pack(std::move(objs));
  }

  /// The C++ part of a CUDA run (GIL released by the caller): bind or copy the inputs, enqueue, copy the outputs,
  /// record the run's event, synchronise when `sync`.
  void execute(const std::vector<std::pair<const void*, bool>>& srcs, const std::vector<std::pair<void*, bool>>& dst,
               cudaStream_t stream, bool sync) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cuda_check(cudaSetDevice(device_index_), "cudaSetDevice");
      // The context's arena is shared by every run: order this run after the previous one, whatever its stream.
      cuda_check(cudaStreamWaitEvent(stream, done_, 0), "cudaStreamWaitEvent");
      for (size_t i = 0; i < srcs.size(); ++i) {
        const auto [src, dev] = srcs[i];
        // Zero copy: a device tensor (checked above: this GPU, C-contiguous) that is 256-byte aligned is bound as
        // the context's input (set_input_address); anything else is copied into the context's own input slot.
        if (dev && reinterpret_cast<uintptr_t>(src) % 256 == 0 && ctx_->set_input_address(i, src).is_ok()) continue;
        check(ctx_->set_input_address(i, nullptr));
        cuda_check(cudaMemcpyAsync(ctx_->input(i), src, in_[i].bytes, dev ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice, stream),
                   "copy of input '" + in_[i].name + "'");
      }
      check(ctx_->enqueue(stream));
      for (size_t i = 0; i < out_.size(); ++i) {
        const cudaMemcpyKind kind = dst[i].second ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
        cuda_check(cudaMemcpyAsync(dst[i].first, ctx_->output(i), out_[i].bytes, kind, stream), "copy of output '" + out_[i].name + "'");
      }
      cuda_check(cudaEventRecord(done_, stream), "cudaEventRecord");
      // Host arrays must be complete on return; so must everything when no stream was given.
      if (sync) cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }
  }

 public:
  /// Benchmark helper (scripts/lib/python.sh's overhead script): `n` runs of execute() from C++ with the
  /// arguments of run(inputs, out=out) (device tensors, legacy default stream, synchronised per run, as run()
  /// with stream=None); returns each run's host time in ns. What Python adds per run() = the difference.
  std::vector<int64_t> bench_cpp(nb::handle inputs, nb::handle out, int n) {
    if (!cuda_) raise(ws::invalid_argument("_bench_cpp: CUDA engines only"));
    if (out.is_none()) raise(ws::invalid_argument("_bench_cpp: pass out="));
    std::vector<nb::ndarray<nb::ro>> in = gather_inputs(inputs);
    std::vector<std::pair<const void*, bool>> src;
    for (const auto& a : in) {
      if (a.device_type() != nb::device::cuda::value || !is_c_contiguous(a)) raise(ws::invalid_argument("_bench_cpp: contiguous device inputs only"));
      src.emplace_back(a.data(), true);
    }
    std::vector<std::pair<void*, bool>> dst;
    for (auto& [obj, a] : gather_out(out)) {
      if (a.device_type() != nb::device::cuda::value) raise(ws::invalid_argument("_bench_cpp: device out= only"));
      dst.emplace_back(a.data(), true);
    }
    std::vector<int64_t> ns(static_cast<size_t>(std::max(n, 0)));
    nb::gil_scoped_release release;
    for (auto& t : ns) {
      const auto t0 = std::chrono::steady_clock::now();
      execute(src, dst, nullptr, true);
      t = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    }
    return ns;
  }
  /// Engine.bind: device tensors resolved once (inputs and out=, checked as run() checks them) for BoundRun.run().
  struct Bound {
    std::vector<std::pair<const void*, bool>> src;
    std::vector<std::pair<void*, bool>> dst;
    std::optional<cudaStream_t> stream;
  };
  Bound bind_device(nb::handle inputs, nb::handle out, nb::handle stream_arg) {
    if (!cuda_) raise(ws::invalid_argument("bind: CUDA engines only (a CPU engine has no device addresses to bind)"));
    if (out.is_none()) raise(ws::invalid_argument("bind: pass out= (the output tensors the bound run writes)"));
    Bound b;
    b.stream = parse_stream(stream_arg);
    std::vector<nb::ndarray<nb::ro>> in = gather_inputs(inputs);
    for (size_t i = 0; i < in.size(); ++i) {
      const auto& a = in[i];
      if (a.device_type() != nb::device::cuda::value || a.device_id() != device_index_ || !is_c_contiguous(a)) {
        raise(ws::invalid_argument("bind: input '" + in_[i].name + "' must be a C-contiguous tensor on cuda:" +
                                   std::to_string(device_index_) + " (use run() for host arrays)"));
      }
      b.src.emplace_back(a.data(), true);
    }
    for (auto& [obj, a] : gather_out(out)) {
      if (a.device_type() != nb::device::cuda::value || a.device_id() != device_index_) {
        raise(ws::invalid_argument("bind: out= tensors must be on cuda:" + std::to_string(device_index_)));
      }
      b.dst.emplace_back(a.data(), true);
    }
    return b;
  }
  /// BoundRun.run(): execute() on the bound addresses; nothing is converted or allocated per call.
  void run_bound(const Bound& b) {
    nb::gil_scoped_release release;
    execute(b.src, b.dst, b.stream.value_or(nullptr), !b.stream);
  }
  /// The device address the context reads input i from (the caller's tensor after a zero-copy run).
  uintptr_t input_address(size_t i) {
    if (!cuda_) raise(ws::invalid_argument("input_address: CUDA engines only"));
    if (i >= in_.size()) raise(ws::invalid_argument("input_address: input " + std::to_string(i) + " out of range"));
    std::lock_guard<std::mutex> lock(mu_);
    return reinterpret_cast<uintptr_t>(ctx_->input(i));
  }

  enum class Framework { kOther, kTorch, kCupy };
  Framework framework_ = Framework::kOther;  // set per call by the binding from the first input's module
  int device_index_ = 0;
  std::shared_ptr<ws::CudaEngine> cuda_;
  std::unique_ptr<ws::ExecutionContext> ctx_;
  cudaEvent_t done_ = nullptr;

 private:
#endif
  std::unique_ptr<ws::CpuEngine> cpu_;
  std::vector<ws::TensorDesc> in_, out_;
  std::string device_ = "cpu", precision_ = "fp32";
  std::mutex mu_;
};

// ---- Pipeline (the latency rail, lanes.h; CUDA builds only) ---------------------------------------------
#if WS_PY_CUDA
class Pipeline;

/// An acquired lane: the handle (index + generation) and the pipeline it belongs to.
struct PyLane {
  ws::Lane lane;
  nb::object pipeline;  // keeps the Pipeline (and its slots) alive while the handle exists
};

class Pipeline {
 public:
  Pipeline(Engine& engine, int lanes, std::pair<int64_t, int64_t> src_size, int k, const std::string& input,
           bool use_cuda_graph, std::optional<std::vector<float>> mean, std::optional<std::vector<float>> std_) {
    if (!engine.cuda_) raise(ws::invalid_argument("Pipeline: the engine must be built with device='cuda'"));
    ws::PipelineOptions o;
    o.lanes = lanes;
    o.src_height = src_size.first;
    o.src_width = src_size.second;
    o.k = k;
    o.input = unwrap(ws::parse_lane_input(input));
    if (o.input == ws::LaneInput::kDevice) {
      raise(ws::unsupported("Pipeline: input='device' (producer-registered device pointers) is not exposed to Python yet; use 'mapped' or 'copy'"));
    }
    o.use_cuda_graph = use_cuda_graph;
    if (mean.has_value() != std_.has_value()) raise(ws::invalid_argument("mean and std: give both or neither"));
    if (mean) {
      if (mean->size() != 3 || std_->size() != 3) raise(ws::invalid_argument("mean and std: 3 values each (R, G, B)"));
      for (int i = 0; i < 3; ++i) {
        if (!((*std_)[i] > 0) || !std::isfinite((*std_)[i])) raise(ws::invalid_argument("std: values must be finite and > 0"));
        if (!std::isfinite((*mean)[i])) raise(ws::invalid_argument("mean: values must be finite"));
        o.normalize.mean[i] = (*mean)[i];
        o.normalize.inv_std[i] = 1.0f / (*std_)[i];
      }
    }
    nb::gil_scoped_release release;
    impl_ = unwrap(ws::Pipeline::build(engine.cuda_, o));
  }

  std::optional<PyLane> try_acquire() {
    std::optional<ws::Lane> l = impl_->try_acquire();
    if (!l) return std::nullopt;
    return PyLane{*l, nb::find(*this)};
  }
  PyLane acquire(size_t index) { return PyLane{unwrap(impl_->acquire(index)), nb::find(*this)}; }

  /// Writable uint8 [src_height, src_width, 3] view of the lane's input slot (mapped pinned memory; no copy).
  nb::object input(const PyLane& l) {
    std::span<uint8_t> slot = impl_->input(l.lane);
    if (slot.empty()) raise(ws::failed_precondition("Pipeline.input: lane " + std::to_string(l.lane.index) + " is not Acquired (or the handle is stale)"));
    const auto& o = impl_->options();
    const size_t shape[3] = {static_cast<size_t>(o.src_height), static_cast<size_t>(o.src_width), 3};
    return nb::cast(nb::ndarray<nb::numpy, uint8_t>(slot.data(), 3, shape, l.pipeline));
  }

  void submit(const PyLane& l, std::optional<std::pair<int64_t, int64_t>> size) {
    const auto& o = impl_->options();
    const auto [h, w] = size.value_or(std::pair<int64_t, int64_t>{o.src_height, o.src_width});
    check(impl_->submit(l.lane, w, h));
  }

  /// Waits (GIL released) and returns (indices int32[k], scores float32[k]).
  std::pair<nb::object, nb::object> wait(const PyLane& l) {
    std::span<const ws::TopKEntry> top;
    {
      nb::gil_scoped_release release;
      top = unwrap(impl_->wait(l.lane));
    }
    ws::TensorDesc di{"indices", ws::DType::kInt32, {static_cast<int64_t>(top.size())}, top.size() * 4};
    ws::TensorDesc ds{"scores", ws::DType::kFloat32, {static_cast<int64_t>(top.size())}, top.size() * 4};
    nb::object idx = new_numpy(di), sc = new_numpy(ds);
    auto* ip = static_cast<int32_t*>(nb::cast<nb::ndarray<>>(idx).data());
    auto* sp = static_cast<float*>(nb::cast<nb::ndarray<>>(sc).data());
    for (size_t i = 0; i < top.size(); ++i) {
      ip[i] = top[i].index;
      sp[i] = top[i].score;
    }
    return {idx, sc};
  }
  /// Benchmark helper: n round trips try_acquire -> submit -> wait -> release done from C++ (the input slot as
  /// it is); each round trip's host time in ns. The Python loop of the same calls minus this = the binding's cost.
  std::vector<int64_t> bench_cpp(int n) {
    const auto& o = impl_->options();
    std::vector<int64_t> ns(static_cast<size_t>(std::max(n, 0)));
    nb::gil_scoped_release release;
    for (auto& t : ns) {
      const auto t0 = std::chrono::steady_clock::now();
      std::optional<ws::Lane> l = impl_->try_acquire();
      if (!l) raise(ws::failed_precondition("_bench_cpp: no free lane (release every lane first)"));
      check(impl_->submit(*l, o.src_width, o.src_height));
      (void)unwrap(impl_->wait(*l));
      check(impl_->release(*l));
      t = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    }
    return ns;
  }
  float gpu_time_ms(const PyLane& l) const { return unwrap(impl_->gpu_time_ms(l.lane)); }
  void release(const PyLane& l) { check(impl_->release(l.lane)); }
  size_t lanes() const { return impl_->lane_count(); }
  int k() const { return impl_->k(); }
  int64_t classes() const { return impl_->classes(); }
  std::string state(size_t index) const {
    if (index >= impl_->lane_count()) raise(ws::invalid_argument("lane index " + std::to_string(index) + " out of range"));
    return ws::lane_state_name(impl_->state(index));
  }

 private:
  std::unique_ptr<ws::Pipeline> impl_;
};
#endif

// ---- BoundRun (Engine.bind; CUDA builds only) ---------------------------------------------------------------
#if WS_PY_CUDA
/// TensorRT's pattern (set_tensor_address once, execute_async_v3 per call) for Python: the tensors are resolved
/// once; run() converts nothing. Keeps the engine and every bound tensor alive.
class BoundRun {
 public:
  BoundRun(nb::object engine, nb::object inputs, nb::object out, Engine::Bound b)
      : engine_(std::move(engine)), inputs_(std::move(inputs)), out_(std::move(out)), b_(std::move(b)) {}
  void run() { nb::cast<Engine&>(engine_).run_bound(b_); }
  nb::object out() const { return out_; }

 private:
  nb::object engine_, inputs_, out_;
  Engine::Bound b_;
};
#endif

// ---- LtxTransformer (the Flow rail, flow.h; CUDA builds only) -------------------------------------------------
#if WS_PY_CUDA
/// ws::LtxTransformer over DLPack device tensors; python/warpstream/flow.py makes it diffusers-shaped.
class LtxTransformer {
 public:
  LtxTransformer(const std::filesystem::path& path, uint64_t vram_budget, const std::string& weights, int max_slots,
                 bool cuda_graph, int device) {
    ws::LtxTransformerOptions o;
    o.vram_budget_bytes = vram_budget;
    o.weights = weights;
    o.max_slots = max_slots;
    o.cuda_graph = cuda_graph;
    o.device = device;
    nb::gil_scoped_release release;
    impl_ = unwrap(ws::LtxTransformer::open(path.string(), o));
  }

  /// One forward (flow.h): dtypes and shapes checked here, each device tensor's pointer passed through (DLPack).
  void forward(nb::handle hidden, nb::handle encoder, nb::handle timestep, nb::handle mask, nb::handle out,
               std::tuple<int, int, int> grid, std::optional<std::vector<float>> rope_scale, uintptr_t stream) {
    const ws::LtxTransformerConfig& c = impl_->config();
    ws::LtxShape shape;
    std::tie(shape.frames, shape.height, shape.width) = grid;
    nb::ndarray<nb::ro> h = device_tensor(hidden, "hidden_states", kBf16, 3);
    shape.batch = static_cast<int>(h.shape(0));
    const int64_t S = shape.tokens();
    expect_shape(h, "hidden_states", {h.shape(0), static_cast<size_t>(S), static_cast<size_t>(c.in_channels)},
                 "[batch, num_frames*height*width = " + std::to_string(S) + ", in_channels]");
    nb::ndarray<nb::ro> e = device_tensor(encoder, "encoder_hidden_states", kBf16, 3);
    shape.text_tokens = static_cast<int>(e.shape(1));
    expect_shape(e, "encoder_hidden_states", {h.shape(0), e.shape(1), static_cast<size_t>(c.caption_channels)},
                 "[batch, text_tokens, caption_channels]");
    nb::ndarray<nb::ro> t = device_tensor(timestep, "timestep", kF32, -1);
    shape.per_token_timestep = t.ndim() == 2;
    if (shape.per_token_timestep) expect_shape(t, "timestep", {h.shape(0), static_cast<size_t>(S)}, "[batch] or [batch, tokens]");
    else expect_shape(t, "timestep", {h.shape(0)}, "[batch] or [batch, tokens]");
    std::optional<nb::ndarray<nb::ro>> m;
    shape.mask = !mask.is_none();
    if (shape.mask) {
      m = device_tensor(mask, "encoder_attention_mask", kF32, 2);
      expect_shape(*m, "encoder_attention_mask", {h.shape(0), e.shape(1)}, "[batch, text_tokens]");
    }
    nb::ndarray<> o;
    if (!nb::try_cast(out, o, false)) raise(ws::invalid_argument("out: expected a writable device tensor"));
    nb::ndarray<nb::ro> ov(o);
    check_device(ov, "out", kBf16);
    expect_shape(ov, "out", {h.shape(0), static_cast<size_t>(S), static_cast<size_t>(c.out_channels)}, "[batch, tokens, out_channels]");
    if (rope_scale) {
      if (rope_scale->size() != 3) raise(ws::invalid_argument("rope_interpolation_scale: 3 values (frames, height, width)"));
      shape.rope_scale = true;
      for (int i = 0; i < 3; ++i) shape.rope_interpolation_scale[i] = (*rope_scale)[i];
    }
    ws::LtxForwardArgs a;
    a.hidden = h.data();
    a.encoder = e.data();
    a.timestep = static_cast<const float*>(t.data());
    a.mask = m ? static_cast<const float*>(m->data()) : nullptr;
    a.output = o.data();
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mu_);
    check(impl_->forward(shape, a, reinterpret_cast<cudaStream_t>(stream)));
  }

  std::string describe() const { return impl_->describe(); }
  std::map<std::string, int64_t> config() const {
    const ws::LtxTransformerConfig& c = impl_->config();
    return {{"in_channels", c.in_channels}, {"out_channels", c.out_channels}, {"caption_channels", c.caption_channels},
            {"num_attention_heads", c.num_attention_heads}, {"attention_head_dim", c.attention_head_dim},
            {"cross_attention_dim", c.cross_attention_dim}, {"num_layers", c.num_layers},
            {"patch_size", c.patch_size}, {"patch_size_t", c.patch_size_t}};
  }
  uint64_t device_bytes() const { return impl_->device_bytes(); }
  uint64_t host_bytes() const { return impl_->host_bytes(); }
  int builds() const { return impl_->builds(); }
  int device() const { return impl_->options().device; }
  std::vector<std::string> unused_tensors() const { return impl_->unused_tensors(); }

 private:
  static constexpr int kBf16 = 0, kF32 = 1;
  void check_device(const nb::ndarray<nb::ro>& a, const std::string& name, int kind) const {
    const nb::dlpack::dtype want = kind == kBf16 ? to_dlpack(ws::DType::kBFloat16) : to_dlpack(ws::DType::kFloat32);
    if (a.device_type() != nb::device::cuda::value || a.device_id() != impl_->options().device) {
      raise(ws::invalid_argument(name + ": must be a CUDA tensor on cuda:" + std::to_string(impl_->options().device)));
    }
    if (!same_dtype(a.dtype(), want)) {
      raise(ws::invalid_argument(name + ": dtype " + dlpack_name(a.dtype()) + ", expected " + (kind == kBf16 ? "bfloat16" : "float32")));
    }
    if (!is_c_contiguous(a)) raise(ws::invalid_argument(name + ": must be contiguous"));
  }
  nb::ndarray<nb::ro> device_tensor(nb::handle h, const std::string& name, int kind, int ndim) const {
    nb::ndarray<nb::ro> a = as_array(h, name);
    check_device(a, name, kind);
    if (ndim > 0 && a.ndim() != static_cast<size_t>(ndim)) {
      raise(ws::invalid_argument(name + ": " + std::to_string(a.ndim()) + " dims " + array_shape_string(a) + ", expected " + std::to_string(ndim)));
    }
    return a;
  }
  static void expect_shape(const nb::ndarray<nb::ro>& a, const std::string& name, std::vector<size_t> want, const std::string& what) {
    bool same = a.ndim() == want.size();
    for (size_t i = 0; same && i < want.size(); ++i) same = a.shape(i) == want[i];
    if (!same) {
      std::vector<int64_t> w(want.begin(), want.end());
      raise(ws::invalid_argument(name + ": shape " + array_shape_string(a) + ", expected " + ws::shape_string(w) + " " + what));
    }
  }
  std::unique_ptr<ws::LtxTransformer> impl_;
  std::mutex mu_;
};
#endif

// ---- images and the CPU classifier ----------------------------------------------------------------------

ws::ImageRgb8 image_from_array(nb::handle h) {
  nb::ndarray<nb::ro> a = as_array(h, "image");
  if (a.device_type() != nb::device::cpu::value) raise(ws::invalid_argument("image: must be a host array"));
  if (!same_dtype(a.dtype(), nb::dtype<uint8_t>()) || a.ndim() != 3 || a.shape(2) != 3) {
    raise(ws::invalid_argument("image: expected uint8 [height, width, 3] (RGB), got " + dlpack_name(a.dtype()) + " " +
                               array_shape_string(a)));
  }
  // The decoders' pixel budget, before the copy below allocates what the array's shape promises.
  check(ws::check_image_size(static_cast<int64_t>(a.shape(1)), static_cast<int64_t>(a.shape(0))));
  ws::ImageRgb8 img;
  img.height = static_cast<int64_t>(a.shape(0));
  img.width = static_cast<int64_t>(a.shape(1));
  img.pixels.resize(a.size());
  copy_dense(a, img.pixels.data());
  return img;
}

nb::object read_image(const std::filesystem::path& path) {
  ws::ImageRgb8 img;
  {
    nb::gil_scoped_release release;
    img = unwrap(ws::decode_image_file(path.string()));
  }
  auto* v = new std::vector<uint8_t>(std::move(img.pixels));
  nb::capsule owner(v, [](void* p) noexcept { delete static_cast<std::vector<uint8_t>*>(p); });
  return nb::cast(nb::ndarray<nb::numpy, uint8_t>(v->data(), {static_cast<size_t>(img.height), static_cast<size_t>(img.width), 3}, owner));
}

class Classifier {
 public:
  static std::unique_ptr<Classifier> build(const std::filesystem::path& path, std::optional<std::vector<float>> mean,
                                           std::optional<std::vector<float>> std_, std::optional<std::vector<int64_t>> input_shape) {
    auto c = std::unique_ptr<Classifier>(new Classifier());
    ws::ModelConfig config = unwrap(ws::model_config_for(path.string()));
    if (mean.has_value() != std_.has_value()) raise(ws::invalid_argument("mean and std: give both or neither"));
    if (mean) {
      if (mean->size() != 3 || std_->size() != 3) raise(ws::invalid_argument("mean and std: 3 values each (R, G, B)"));
      for (int i = 0; i < 3; ++i) {
        if (!((*std_)[i] > 0) || !std::isfinite((*std_)[i])) raise(ws::invalid_argument("std: values must be finite and > 0"));
        if (!std::isfinite((*mean)[i])) raise(ws::invalid_argument("mean: values must be finite"));
        config.normalize.mean[i] = (*mean)[i];
        config.normalize.inv_std[i] = 1.0f / (*std_)[i];
      }
      config.source = "given";
    }
    nb::gil_scoped_release release;
    c->impl_ = unwrap(ws::CpuClassifier::build(path.string(), config, input_shape.value_or(ws::ir::Shape{})));
    return c;
  }
  std::vector<std::pair<int32_t, float>> classify(nb::handle image, int k) {
    ws::ImageRgb8 img = image_from_array(image);
    std::vector<ws::TopKEntry> top;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      top = unwrap(impl_->classify(img, k));
    }
    std::vector<std::pair<int32_t, float>> r;
    for (const auto& e : top) r.emplace_back(e.index, e.score);
    return r;
  }
  int64_t classes() const { return impl_->classes(); }
  std::pair<int64_t, int64_t> input_size() const { return {impl_->input_height(), impl_->input_width()}; }
  std::string normalization() const { return impl_->config().source; }

 private:
  Classifier() = default;
  std::unique_ptr<ws::CpuClassifier> impl_;
  std::mutex mu_;
};

// ---- docstrings -----------------------------------------------------------------------------------------

constexpr const char* kEngineDoc = R"(A fixed-shape ONNX engine (WarpStream's CpuEngine or CudaEngine).

Built once with :meth:`Engine.from_onnx`: the graph is optimised (shape inference, constant folding,
BatchNorm->Conv and Pad->Conv folding, dead-node elimination), one kernel is bound per node and one
activation arena is planned. :meth:`run` then executes that fixed plan; the C++ run allocates nothing.

Shapes are static: every input has exactly the shape and dtype in :attr:`inputs` (fix symbolic
dimensions at build with ``input_shapes=``). The CPU executor is float32; the CUDA executor is fp32 or
fp16 (in fp16 its input is float16, its outputs float32).

Errors from the C++ runtime (bad file, unsupported op, wrong shape or dtype ...) raise
:class:`warpstream.Error` with the runtime's message.

Example::

    import numpy as np, warpstream
    engine = warpstream.Engine.from_onnx("model.onnx")
    x = np.zeros(engine.inputs[0].shape, np.float32)
    logits = engine.run(x)
)";

constexpr const char* kFromOnnxDoc = R"(Imports an ONNX model file and builds an engine.

Args:
    path: the .onnx file (ModelProto; external data is refused).
    device: ``"cpu"`` (the float32 reference executor) or ``"cuda"`` / ``"cuda:N"`` (needs a build with CUDA).
    precision: ``"fp32"`` or ``"fp16"`` (CUDA only): the activation/weight type of the CUDA build.
    timing_cache: CUDA only: JSON file persisting the tactics timed at build (keyed by GPU, driver,
        library versions and the model's graph hash; a mismatching cache is rewritten).
    input_shapes: fixed shapes for inputs with symbolic dims, e.g. ``{"input": [1, 3, 224, 224]}``;
        the key ``"*"`` means the model's only input.

Raises:
    warpstream.Error: missing file (code "not found"), truncated or malformed model ("invalid model"),
        unsupported op/attribute/dtype ("unsupported"), an arena over the 4 GiB CPU bound, CUDA failures.
    warpstream.InvalidArgumentError: a bad device/precision value.

The GIL is released while the model is imported and built.
)";

constexpr const char* kRunDoc = R"(Runs the engine once and returns its output(s).

Args:
    inputs: one array (engines with one input), a list/tuple in :attr:`inputs` order, or a dict
        ``{name: array}``. Any numpy array or object with ``__dlpack__`` / the buffer protocol
        (torch, cupy ...); dtype and shape must match :attr:`inputs` exactly (no implicit casts).
        Host arrays are copied into the engine (strided ones are gathered, so they need not be
        contiguous).
    out: optional preallocated output(s), one per output (a single array for one output): writable,
        C-contiguous, dtype/shape of :attr:`outputs`. Without ``out=`` new arrays are allocated.
    stream: CUDA engines only; see below. Must be None for a CPU engine.

Returns:
    The output array for a one-output engine, else a tuple in :attr:`outputs` order (the ``out``
    arrays themselves when given). Host outputs are numpy arrays.

CUDA engines (device tensors, stream contract):
    * Device tensors (``__dlpack__`` with a CUDA device, e.g. torch/cupy) are not staged through the
      host. An input whose data pointer is 256-byte aligned (any tensor that starts its allocation:
      torch and cupy allocations are) is used in place, no copy: the engine's context reads it directly
      (ExecutionContext::set_input_address, cuda_engine.h); :meth:`input_address` shows the bound
      pointer. A misaligned one (a view at an odd offset) is copied device-to-device into the engine's
      own input slot. Outputs are device-to-device copied into ``out=`` or into new device buffers
      (``cudaMalloc``; returned as torch/cupy tensors matching the first input, else as a DLPack array).
      Device tensors must be C-contiguous and on the engine's GPU.
    * ``stream=`` is a ``cudaStream_t`` as an int, or an object with ``__cuda_stream__``,
      ``.cuda_stream`` (``torch.cuda.Stream``) or ``.ptr`` (``cupy.cuda.Stream``). All copies and
      kernels are enqueued on it and ``run`` returns without synchronising when only device arrays
      are involved: the caller must have ordered the inputs' producers before on that stream, must
      not modify inputs or read outputs until the stream reaches this point, and must keep them alive.
    * ``stream=None`` uses the legacy default stream (implicitly ordered with blocking streams such as
      torch's default stream) and synchronises before returning.
    * With any host (numpy) input or output the stream is synchronised before returning.
    * One engine has one activation arena: consecutive runs are ordered by an event even across
      streams, so runs of one engine never overlap. Use one engine per concurrent stream.

The GIL is released while the engine runs; concurrent calls on one engine are serialised.
)";

#if WS_PY_CUDA
constexpr const char* kPipelineDoc = R"(The latency rail (lanes.h): N preallocated lanes on one CUDA engine.

Each lane owns an execution context, a stream, an input slot and a mapped result slot; in graph mode
one CUDA Graph per lane runs [copy] -> fused RGB8 preprocess -> network -> Top-K. Lane states:
Free -> (try_acquire) Acquired -> (submit) Submitted -> (wait) Completed -> (release) Free; any other
transition raises warpstream.Error (code "failed precondition") and changes nothing.

Example::

    p = warpstream.Pipeline(engine, lanes=2, src_size=(480, 640), k=5)
    lane = p.try_acquire()            # None when all lanes are busy
    p.input(lane)[:] = frame          # uint8 [480, 640, 3], written straight into mapped memory
    p.submit(lane); idx, scores = p.wait(lane); p.release(lane)
)";
#endif

#if WS_PY_CUDA
constexpr const char* kLtxDoc = R"(The LTX-Video transformer on the GPU (include/warpstream/flow.h), bf16 compute.

Block weights resident, or streamed from one pinned host copy through a ring of device slots when a
VRAM budget is given (bf16, or fp8/int8 codes dequantised on the device before each block). Use
warpstream.flow.LTXVideoTransformer for the diffusers-compatible module; this class is its engine.
)";
#endif

}  // namespace

// ---- native backtrace on a crash (WS_NATIVE_BACKTRACE=1) -----------------------------------------------------
// Python's faulthandler shows Python frames only. With WS_NATIVE_BACKTRACE set at import, SIGSEGV/SIGBUS/SIGFPE
// first print the native frames (glibc backtrace_symbols_fd: "<object>(+0xOFFSET)"; resolve them with
// `addr2line -f -C -e <object> OFFSET`, as scripts/lib/python.sh does), then the previous handler runs (the faulting
// instruction re-executes under it), so faulthandler's Python frames follow. Async-signal-safe: write(2) only, and
// backtrace() is primed at install so it does not load libgcc inside the handler.
namespace {
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE};
struct sigaction g_prev_crash[3];
extern "C" void ws_crash_backtrace(int sig, siginfo_t*, void*) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  static const char head[] = "warpstream: native backtrace (WS_NATIVE_BACKTRACE):\n";
  (void)!write(2, head, sizeof head - 1);
  backtrace_symbols_fd(frames, n, 2);
  for (int i = 0; i < 3; ++i)
    if (kCrashSignals[i] == sig) sigaction(sig, &g_prev_crash[i], nullptr);
}
void install_crash_backtrace() {
  const char* v = std::getenv("WS_NATIVE_BACKTRACE");
  if (v == nullptr || *v == '\0' || std::string_view(v) == "0") return;
  void* prime[1];
  (void)backtrace(prime, 1);
  struct sigaction sa {};
  sa.sa_sigaction = ws_crash_backtrace;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 3; ++i) sigaction(kCrashSignals[i], &sa, &g_prev_crash[i]);
}
}  // namespace

NB_MODULE(_warpstream, m) {
  m.doc() = "WarpStream: a C++20/CUDA inference runtime (native extension; use the `warpstream` package).";

  // The exception classes live in pure Python (warpstream/_errors.py) so that stubs and help() show them.
  nb::module_ errors = nb::module_::import_("warpstream._errors");
  g_error = errors.attr("Error").inc_ref().ptr();
  g_invalid_argument = errors.attr("InvalidArgumentError").inc_ref().ptr();
  m.attr("Error") = errors.attr("Error");
  m.attr("InvalidArgumentError") = errors.attr("InvalidArgumentError");
  nb::register_exception_translator(translate);
  install_crash_backtrace();

#if WS_PY_CUDA
  m.attr("has_cuda") = true;
#else
  m.attr("has_cuda") = false;
#endif

  nb::class_<TensorInfo>(m, "TensorInfo", "Name, shape and element type of an engine input or output.")
      .def_ro("name", &TensorInfo::name, "Tensor name in the ONNX graph.")
      .def_ro("shape", &TensorInfo::shape, "Static shape (row-major, outermost first).")
      .def_ro("dtype", &TensorInfo::dtype, "Element type as a numpy dtype name (\"float32\", \"float16\" ...).")
      .def_ro("nbytes", &TensorInfo::nbytes, "Bytes of the dense tensor.")
      .def("__repr__", [](const TensorInfo& t) {
        return "TensorInfo(name='" + t.name + "', shape=" + ws::shape_string(t.shape) + ", dtype='" + t.dtype + "')";
      });

  auto engine_class = nb::class_<Engine>(m, "Engine", kEngineDoc);
  engine_class
      .def_static(
          "from_onnx",
          [](const std::filesystem::path& path, const std::string& device, const std::string& precision,
             std::optional<std::string> timing_cache, const std::map<std::string, std::vector<int64_t>>& input_shapes) {
            ws::ir::Graph g;
            {
              nb::gil_scoped_release release;
              g = unwrap(ws::ir::import_onnx(path.string(), import_options(input_shapes)));
            }
            return Engine::build(std::move(g), device, precision, timing_cache);
          },
          "path"_a, "device"_a = "cpu", "precision"_a = "fp32", "timing_cache"_a = nb::none(),
          "input_shapes"_a = std::map<std::string, std::vector<int64_t>>{}, kFromOnnxDoc)
      .def_static(
          "from_onnx_bytes",
          [](nb::bytes data, const std::string& device, const std::string& precision, std::optional<std::string> timing_cache,
             const std::map<std::string, std::vector<int64_t>>& input_shapes) {
            const auto* p = static_cast<const std::byte*>(data.data());
            std::vector<std::byte> bytes(p, p + data.size());
            ws::ir::Graph g;
            {
              nb::gil_scoped_release release;
              g = unwrap(ws::ir::import_onnx_bytes(bytes, "<bytes>", import_options(input_shapes)));
            }
            return Engine::build(std::move(g), device, precision, timing_cache);
          },
          "data"_a, "device"_a = "cpu", "precision"_a = "fp32", "timing_cache"_a = nb::none(),
          "input_shapes"_a = std::map<std::string, std::vector<int64_t>>{},
          "As :meth:`from_onnx`, from the bytes of a ModelProto already in memory (messages name \"<bytes>\").")
      .def(
          "run",
          [](Engine& e, nb::handle inputs, nb::handle out, nb::handle stream) {
#if WS_PY_CUDA
            // Framework of new device outputs: the first input's (torch / cupy), else a DLPack array.
            nb::handle first = inputs;
            if (nb::isinstance<nb::list>(inputs) || nb::isinstance<nb::tuple>(inputs)) first = nb::len(inputs) ? inputs[0] : inputs;
            const std::string mod = nb::hasattr(first.type(), "__module__") ? nb::cast<std::string>(nb::str(first.type().attr("__module__"))) : "";
            e.framework_ = mod.rfind("torch", 0) == 0 ? Engine::Framework::kTorch
                           : mod.rfind("cupy", 0) == 0 ? Engine::Framework::kCupy : Engine::Framework::kOther;
#endif
            return e.run(inputs, out, stream);
          },
          "inputs"_a.none(), "out"_a = nb::none(), "stream"_a = nb::none(), kRunDoc)
      .def_prop_ro("inputs", &Engine::inputs, "The engine's inputs (name, shape, dtype), in run() order.")
      .def_prop_ro("outputs", &Engine::outputs, "The engine's outputs (name, shape, dtype), in return order.")
      .def_prop_ro("device", &Engine::device, "\"cpu\", \"cuda\" or \"cuda:N\".")
      .def_prop_ro("precision", &Engine::precision, "\"fp32\" or \"fp16\".")
      .def_prop_ro("arena_bytes", &Engine::arena_bytes, "Bytes of the activation arena (per execution context on CUDA).")
      .def("__repr__", [](const Engine& e) {
        std::string s = "Engine(device='" + e.device() + "', precision='" + e.precision() + "', inputs=[";
        auto list = [](const std::vector<TensorInfo>& ts) {
          std::string r;
          for (size_t i = 0; i < ts.size(); ++i) r += (i ? ", " : "") + ts[i].name + " " + ws::shape_string(ts[i].shape) + " " + ts[i].dtype;
          return r;
        };
        return s + list(e.inputs()) + "], outputs=[" + list(e.outputs()) + "])";
      });
#if !WS_PY_CUDA
  engine_class.def("bind", [](nb::handle, nb::handle, nb::handle, nb::handle) {
        raise(ws::invalid_argument("bind: CUDA engines only (this warpstream build has no CUDA executor)"));
      }, "inputs"_a.none(), "out"_a = nb::none(), "stream"_a = nb::none(),
      "CUDA engines: resolve device tensors once for repeated runs (this build has no CUDA executor: raises "
      "InvalidArgumentError).");
#endif
#if WS_PY_CUDA
  engine_class
      .def("input_address", &Engine::input_address, "index"_a = 0,
           "CUDA engines: the device address (int) the engine reads input `index` from: a device tensor's own "
           "data_ptr() after a zero-copy run(), else the engine's input slot.")
      .def("bind", [](nb::handle self, nb::handle inputs, nb::handle out, nb::handle stream) {
             Engine& e = nb::cast<Engine&>(self);
             Engine::Bound b = e.bind_device(inputs, out, stream);
             return BoundRun(nb::borrow(self), nb::borrow(inputs), nb::borrow(out), std::move(b));
           },
           "inputs"_a.none(), "out"_a = nb::none(), "stream"_a = nb::none(),
           "CUDA engines: resolve device tensors once for repeated runs (TensorRT's set_tensor_address + "
           "execute_async_v3). `inputs` and `out` as for run() (C-contiguous tensors on the engine's GPU, torch/cupy/"
           "DLPack); `stream` as for run(). Returns a BoundRun whose run() converts nothing per call: it enqueues on "
           "`stream` (None: the legacy default stream, synchronised before returning) and writes `out`. The "
           "tensors must keep their storage while bound (the BoundRun holds references to them). Raises "
           "InvalidArgumentError for a CPU engine, host arrays, a wrong shape/dtype or a missing out=.")
      .def("_bench_cpp", &Engine::bench_cpp, "inputs"_a, "out"_a, "n"_a,
           "Benchmark helper: n runs of run(inputs, out=out) done from C++ (device tensors, synchronised per run); "
           "each run's host time in ns. Compare with timing run() from Python to get the binding's overhead.");
#endif

#if WS_PY_CUDA
  nb::class_<BoundRun>(m, "BoundRun", "Engine.bind's result: run() on tensors resolved once.")
      .def("run", &BoundRun::run, "One run on the bound tensors (GIL released): enqueue on the bound stream; "
           "synchronised before returning when the stream was None.")
      .def_prop_ro("out", &BoundRun::out, "The bound out= object (what run() writes).");
  nb::class_<PyLane>(m, "Lane", "Handle of an acquired lane (index + generation); pass it to the Pipeline's calls.")
      .def_prop_ro("index", [](const PyLane& l) { return l.lane.index; })
      .def_prop_ro("generation", [](const PyLane& l) { return l.lane.generation; })
      .def("__repr__", [](const PyLane& l) {
        return "Lane(index=" + std::to_string(l.lane.index) + ", generation=" + std::to_string(l.lane.generation) + ")";
      });
  nb::class_<Pipeline>(m, "Pipeline", kPipelineDoc)
      .def(nb::init<Engine&, int, std::pair<int64_t, int64_t>, int, const std::string&, bool, std::optional<std::vector<float>>,
                    std::optional<std::vector<float>>>(),
           "engine"_a, "lanes"_a = 2, nb::kw_only(), "src_size"_a, "k"_a = 5, "input"_a = "mapped", "use_cuda_graph"_a = true,
           "mean"_a = nb::none(), "std"_a = nb::none(),
           "Builds `lanes` lanes on a device='cuda' engine for frames of src_size = (height, width) RGB8 pixels "
           "(src_size and the options after it are keyword-only). "
           "Raises warpstream.Error (bad options, an engine of the wrong shape, CUDA failures incl. capture).")
      .def("try_acquire", &Pipeline::try_acquire,
           "A free lane, now Acquired, or None when every lane is busy (backpressure; there is no queue). Lock-free.")
      .def("acquire", &Pipeline::acquire, "index"_a, "Acquires lane `index`; raises warpstream.Error when it is busy.")
      .def("input", &Pipeline::input, "lane"_a,
           "The lane's input slot as a writable uint8 [height, width, 3] numpy view of mapped pinned memory (no copy). "
           "Fill it while the lane is Acquired; do not touch it after submit() until the lane is released and re-acquired.")
      .def("submit", &Pipeline::submit, "lane"_a, "size"_a = nb::none(),
           "Runs one frame (preprocess -> network -> Top-K, one CUDA Graph in graph mode) on the lane. size = (height, "
           "width), default src_size (graph mode accepts only src_size).")
      .def("wait", &Pipeline::wait, "lane"_a,
           "Waits for the lane's frame with the GIL released; returns (indices int32[k], scores float32[k]), descending.")
      .def("gpu_time_ms", &Pipeline::gpu_time_ms, "lane"_a, "GPU time of the lane's last frame, ms (lane Completed).")
      .def("release", &Pipeline::release, "lane"_a, "Completed (or Acquired) -> Free.")
      .def("_bench_cpp", &Pipeline::bench_cpp, "n"_a,
           "Benchmark helper: n try_acquire/submit/wait/release round trips from C++; host ns of each.")
      .def("state", &Pipeline::state, "index"_a, "\"free\", \"acquired\", \"submitted\" or \"completed\".")
      .def_prop_ro("lanes", &Pipeline::lanes)
      .def_prop_ro("k", &Pipeline::k)
      .def_prop_ro("classes", &Pipeline::classes);
#endif

#if WS_PY_CUDA
  nb::class_<LtxTransformer>(m, "LtxTransformer", kLtxDoc)
      .def(nb::init<const std::filesystem::path&, uint64_t, const std::string&, int, bool, int>(), "path"_a,
           "vram_budget"_a = 0, "weights"_a = "bf16", "max_slots"_a = 3, "cuda_graph"_a = true, "device"_a = 0,
           "Reads a diffusers LTX-Video transformer checkpoint (folder with config.json + safetensors) into host "
           "memory (ws::LtxTransformer::open). vram_budget: device bytes for everything, 0 = resident. weights: "
           "'bf16', 'fp8' or 'int8' block linear weights. Raises warpstream.Error naming the file/tensor.")
      .def("forward", &LtxTransformer::forward, "hidden_states"_a, "encoder_hidden_states"_a, "timestep"_a,
           "encoder_attention_mask"_a.none(), "out"_a, "grid"_a, "rope_interpolation_scale"_a.none(), "stream"_a = 0,
           "One forward on `stream` (a cudaStream_t as int; 0 = the legacy default stream), not synchronised. "
           "hidden_states bf16 [B, F*H*W, in], encoder_hidden_states bf16 [B, T, caption], timestep float32 [B] or "
           "[B, F*H*W], encoder_attention_mask float32 [B, T] or None, out bf16 [B, F*H*W, out] (written); all "
           "contiguous CUDA tensors. grid = (F, H, W) latent frames, height, width. Builds the device model at the first "
           "call and whenever the shape changes.")
      .def("describe", &LtxTransformer::describe, "Placement, memory and launch mode of the current device model.")
      .def_prop_ro("config", &LtxTransformer::config, "config.json's sizes (in/out/caption channels, layers, heads ...).")
      .def_prop_ro("device_bytes", &LtxTransformer::device_bytes, "Device bytes of the current model (0 before the first forward).")
      .def_prop_ro("unused_tensors", &LtxTransformer::unused_tensors,
                   "Tensors of the checkpoint the model does not read (sorted; empty for a matching checkpoint).")
      .def_prop_ro("host_bytes", &LtxTransformer::host_bytes, "Bytes of the host copy of the weights.")
      .def_prop_ro("builds", &LtxTransformer::builds, "Device models built so far (one per distinct consecutive shape).")
      .def_prop_ro("device", &LtxTransformer::device, "CUDA device index.");
#endif

  nb::class_<Classifier>(m, "Classifier",
                         "Batch-1 image classification on the CPU executor (CpuClassifier): RGB8 image -> fused resize + "
                         "normalise into the network input -> network -> Top-K; what `warpstream classify --device cpu` runs.")
      .def_static("from_onnx", &Classifier::build, "path"_a, "mean"_a = nb::none(), "std"_a = nb::none(),
                  "input_shape"_a = nb::none(),
                  "Builds a classifier. The model takes one float32 input [1, 3, H, W] and gives 1 x classes logits. "
                  "Normalisation: mean/std (0..1 units, R, G, B) when given, else the JSON sidecar beside the model "
                  "(<model>.json), else ImageNet's. input_shape fixes symbolic input dims. Raises warpstream.Error.")
      .def("classify", &Classifier::classify, "image"_a, "k"_a = 5,
           "Top-k (class index, logit) pairs, descending (ties -> lower index), of a uint8 [height, width, 3] RGB "
           "image. Raises warpstream.Error for k outside 1..min(32, classes) or a wrong image array.")
      .def_prop_ro("classes", &Classifier::classes, "Number of classes (logits).")
      .def_prop_ro("input_size", &Classifier::input_size, "(height, width) of the network input.")
      .def_prop_ro("normalization", &Classifier::normalization, "Where mean/std came from.");

  m.def("read_image", &read_image, "path"_a,
        "Decodes a PNG or JPEG file (detected by content) to a uint8 [height, width, 3] RGB numpy array. "
        "Raises warpstream.Error: missing file (\"not found\"), undecodable (\"invalid image\"), too large.");
}
