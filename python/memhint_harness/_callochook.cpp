// Allocation events without a Python dispatch mode (issue #17): torch's own memory-reporting hook and one
// RecordFunction callback, recorded in C++ and drained by Python (allochook.py). Built at first use against
// the running torch's headers (torch/include of a wheel; Debian's python3-torch ships none, so there this
// is not built and the dispatch path runs).
//
// - The CPU allocator (and CUDA's caching allocator) call c10::reportMemoryUsageToProfiler for every
//   allocation and free while the thread's ThreadLocalDebugInfo holds a MemoryReportingInfoBase under
//   PROFILER_STATE whose memoryProfilingEnabled() is true: that is how torch.profiler(profile_memory=True)
//   sees memory. Reporter below is such an object; it appends (ptr, signed bytes, backward node) to a
//   buffer. The slot is the profiler's own, so start() refuses while torch.profiler is active.
// - Which backward node is running: the autograd engine wraps each node's call in a RecordFunction of
//   scope BACKWARD_FUNCTION carrying the node's sequence number. A global callback for that scope only
//   keeps a per-thread stack of those numbers; forward ops (scope FUNCTION) get no callback.
// - Which forward line made a node: sequence numbers are handed out per thread in creation order, so
//   take() records at::sequence_number::peek() at each drain: the range of numbers since the previous
//   drain belongs to the site Python was at (Python drains when the site changes).
// The hook may run without the GIL (ops release it), on the engine's or intra-op threads: the buffer is
// guarded by a mutex, and no Python object is touched outside take()/start()/stop().
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace {

struct Event {
  uintptr_t ptr;
  int64_t bytes;  // > 0 allocation, < 0 free
  int64_t node;   // sequence number of the backward node running on the thread, or -1
  int8_t device;  // c10::DeviceType of the memory
};

std::mutex g_mutex;
std::vector<Event> g_events;  // guarded by g_mutex
uint64_t g_total = 0;         // events ever recorded, guarded by g_mutex

// Backward nodes running on this thread (nested: a node's call may run another graph's backward).
thread_local std::vector<int64_t> t_nodes;

struct Reporter final : public c10::MemoryReportingInfoBase {
  void reportMemoryUsage(void* ptr, int64_t alloc_size, size_t /*total_allocated*/, size_t /*total_reserved*/,
                         c10::Device device) override {
    int64_t node = t_nodes.empty() ? -1 : t_nodes.back();
    std::lock_guard<std::mutex> guard(g_mutex);
    g_events.push_back(Event{reinterpret_cast<uintptr_t>(ptr), alloc_size, node,
                             static_cast<int8_t>(device.type())});
    ++g_total;
  }
  bool memoryProfilingEnabled() const override { return true; }
};

std::unique_ptr<at::ObserverContext> node_start(const at::RecordFunction& fn) {
  t_nodes.push_back(fn.seqNr());
  return nullptr;
}

void node_end(const at::RecordFunction& /*fn*/, at::ObserverContext* /*ctx*/) {
  if (!t_nodes.empty()) t_nodes.pop_back();
}

bool g_started = false;  // only touched with the GIL held
at::CallbackHandle g_callback = at::INVALID_CALLBACK_HANDLE;

PyObject* start(PyObject* /*self*/, PyObject* /*args*/) {
  if (g_started) Py_RETURN_FALSE;
  if (c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) != nullptr) {
    // torch.profiler (or another hook) owns the slot on this thread: both cannot report.
    Py_RETURN_FALSE;
  }
  try {
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, std::make_shared<Reporter>());
    g_callback = at::addGlobalCallback(at::RecordFunctionCallback(node_start, node_end)
                                           .needsInputs(false)
                                           .scopes({at::RecordScope::BACKWARD_FUNCTION}));
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
    return nullptr;
  }
  g_started = true;
  Py_RETURN_TRUE;
}

PyObject* stop(PyObject* /*self*/, PyObject* /*args*/) {
  if (!g_started) Py_RETURN_NONE;
  try {
    c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
    at::removeCallback(g_callback);
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
    return nullptr;
  }
  g_callback = at::INVALID_CALLBACK_HANDLE;
  g_started = false;
  Py_RETURN_NONE;
}

// take() -> (sequence_number_peek, events): the calling thread's next autograd sequence number and the
// events since the last take, as a list of (ptr, bytes, node, device type) tuples (an empty tuple when
// none: the common case costs no allocation).
PyObject* take(PyObject* /*self*/, PyObject* /*args*/) {
  std::vector<Event> events;
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    events.swap(g_events);
  }
  PyObject* peek = PyLong_FromUnsignedLongLong(at::sequence_number::peek());
  if (peek == nullptr) return nullptr;
  PyObject* list = events.empty() ? PyTuple_New(0) : PyList_New(static_cast<Py_ssize_t>(events.size()));
  if (list == nullptr) {
    Py_DECREF(peek);
    return nullptr;
  }
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    PyObject* item = Py_BuildValue("(KLLi)", static_cast<unsigned long long>(e.ptr),
                                   static_cast<long long>(e.bytes), static_cast<long long>(e.node),
                                   static_cast<int>(e.device));
    if (item == nullptr) {
      Py_DECREF(peek);
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), item);
  }
  PyObject* out = PyTuple_Pack(2, peek, list);
  Py_DECREF(peek);
  Py_DECREF(list);
  return out;
}

PyObject* total(PyObject* /*self*/, PyObject* /*args*/) {
  std::lock_guard<std::mutex> guard(g_mutex);
  return PyLong_FromUnsignedLongLong(g_total);
}

PyMethodDef methods[] = {
    {"start", start, METH_NOARGS, "Install the hook on this thread; False if the profiler slot is taken."},
    {"stop", stop, METH_NOARGS, "Remove the hook."},
    {"take", take, METH_NOARGS, "(sequence number peek, events since the last take)."},
    {"total", total, METH_NOARGS, "Events recorded since the module was loaded."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "memhint_allochook", nullptr, -1, methods,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_memhint_allochook(void) { return PyModule_Create(&module); }
