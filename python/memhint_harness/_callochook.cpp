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
#include <c10/core/GradMode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/profiler/orchestration/observer.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <map>
#include <mutex>
#include <utility>
#include <unordered_set>
#include <vector>

namespace {

struct Event {
  uintptr_t ptr;
  int64_t bytes;  // > 0 allocation, < 0 free, 0 dropped (a transient pair, see op_end)
  int64_t node;   // sequence number of the backward node running on the thread, or -1
  int8_t device;  // c10::DeviceType of the memory
  uint64_t op;    // the innermost visible aten op open on the thread when recorded (0: none or not watched)
  uint32_t thread;  // which thread recorded it (t_thread)
  bool sum = false;  // not memory: the engine summed a gradient into an input buffer here (see op_start)
  bool grad = true;  // grad mode on the recording thread (the peak's phase: optimizer steps run without)
};

std::mutex g_mutex;
std::vector<Event> g_events;  // guarded by g_mutex
uint64_t g_total = 0;         // events ever recorded, guarded by g_mutex
uint64_t g_dropped = 0;       // events dropped as transient pairs, guarded by g_mutex
uint64_t g_next_op = 1;       // guarded by g_mutex
bool g_ops = false;           // start(ops=True): the dispatch path's view, see Reporter
std::unordered_set<uintptr_t> g_outside;  // blocks allocated outside any aten op, guarded by g_mutex

// Backward nodes running on this thread (nested: a node's call may run another graph's backward).
thread_local std::vector<int64_t> t_nodes;
// The node that ran last on this thread, until node_reset(): the engine adds gradients into a node's
// input buffer after the producing node's RecordFunction ended, and AccumulateGrad (no sequence number)
// runs right after the node that made it ready: both belong to that node, as the dispatch path has it
// (autograd's current node for the buffer; AccumulateGrad tagged with its parameter's consumer).
thread_local int64_t t_last_node = -1;

uint32_t g_threads = 0;  // guarded by g_mutex
thread_local uint32_t t_thread = 0;  // 0: not numbered yet

// With start(ops=True): the aten ops open on this thread.
struct OpFrame {
  uint64_t id;       // 0: an op a dispatch mode does not see (called from inside a backend kernel)
  size_t first;      // index of g_events at its start
  bool decomposes;   // its kernel is CompositeImplicitAutograd's: the ops it calls are seen as well
  bool engine;       // not an op: the autograd engine's range around one node (see engine_range)
};
thread_local std::vector<OpFrame> t_ops;
// Per operator overload (keyed by its name and overload strings, which live as long as the operator).
thread_local std::map<std::pair<const char*, const char*>, bool> t_decomposes;

// Whether an op runs as a composite of other ops above the Python dispatch key (no CPU kernel of its
// own, a CompositeImplicitAutograd one): then a dispatch mode sees the ops it calls, and their outputs.
bool decomposes(const at::RecordFunction& fn) {
  auto key = std::make_pair(fn.name(), fn.overload_name());
  auto found = t_decomposes.find(key);
  if (found != t_decomposes.end()) return found->second;
  bool composite = false;
  std::optional<c10::OperatorName> name = fn.operator_name();
  if (name) {
    std::optional<c10::OperatorHandle> op = c10::Dispatcher::singleton().findOp(*name);
    composite = op && op->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) &&
                !op->hasKernelForDispatchKey(c10::DispatchKey::CPU) &&
                !op->hasKernelForDispatchKey(c10::DispatchKey::AutogradCPU);
  }
  t_decomposes.emplace(key, composite);
  return composite;
}

// Whatever sits in the PROFILER_STATE slot, torch reads as a profiler's state: profilerEnabled(),
// getProfilerConfig() and the like static_cast it to torch::profiler::impl::ProfilerStateBase and read its
// config. A bare MemoryReportingInfoBase there made them read past the object: an autograd.Function's
// apply (THPFunction_apply -> unpack_input -> getProfilerConfig) copied a garbage ProfilerConfig and threw
// std::bad_array_new_length / std::bad_alloc. So the Reporter is a ProfilerStateBase whose config says
// Disabled: every "is the profiler on?" question torch asks on this thread answers no (as it would without
// the hook), while the allocator, which asks memoryProfilingEnabled() only, still reports to it.
struct Reporter final : public torch::profiler::impl::ProfilerStateBase {
  Reporter()
      : torch::profiler::impl::ProfilerStateBase(
            torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::Disabled)) {}
  torch::profiler::impl::ActiveProfilerType profilerType() override {
    return torch::profiler::impl::ActiveProfilerType::NONE;
  }
  void reportMemoryUsage(void* ptr, int64_t alloc_size, size_t /*total_allocated*/, size_t /*total_reserved*/,
                         c10::Device device) override {
    int64_t node = t_nodes.empty() ? t_last_node : t_nodes.back();
    uint64_t op = 0;  // the innermost op a dispatch mode sees
    for (auto frame = t_ops.rbegin(); frame != t_ops.rend() && op == 0; ++frame) op = frame->id;
    uintptr_t address = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<std::mutex> guard(g_mutex);
    if (t_thread == 0) t_thread = ++g_threads;
    if (g_ops) {
      // Memory allocated while no aten op runs is no op's output, so a dispatch mode never sees it: the
      // 0-dim tensors Python's argument parser wraps numbers in (`x * 2`, Adam's scalars), made before the
      // op and freed after it. Left out with its free, as the dispatch path leaves it out.
      if (alloc_size > 0 && op == 0) {
        g_outside.insert(address);
        g_dropped += 1;
        return;
      }
      if (alloc_size < 0 && g_outside.erase(address) != 0) {
        g_dropped += 1;
        return;
      }
    }
    g_events.push_back(Event{address, alloc_size, node, static_cast<int8_t>(device.type()), op, t_thread, false,
                             c10::GradMode::is_enabled()});
    ++g_total;
  }
  bool memoryProfilingEnabled() const override { return true; }
};

std::unique_ptr<at::ObserverContext> node_start(const at::RecordFunction& fn) {
  // AccumulateGrad's sequence number is UINT64_MAX, -1 here.
  t_nodes.push_back(fn.seqNr() >= 0 ? fn.seqNr() : t_last_node);
  return nullptr;
}

void node_end(const at::RecordFunction& /*fn*/, at::ObserverContext* /*ctx*/) {
  if (t_nodes.empty()) return;
  t_last_node = t_nodes.back();
  t_nodes.pop_back();
}

// node_reset(): the calling thread's backward() is over (its next allocations are no node's).
PyObject* node_reset(PyObject* /*self*/, PyObject* /*args*/) {
  t_last_node = -1;
  Py_RETURN_NONE;
}

// An op's transients: memory allocated and freed before the op returns by the op's own kernel or the ops
// that kernel calls (workspaces, a scalar converted to the tensor's dtype by TensorIterator), which a
// dispatch mode, seeing only the outputs of the ops it is called for, never sees. A dispatch mode is called
// for the ops Python calls, the ops a backward node's formula calls, and the ops of a composite
// (CompositeImplicitAutograd) op, recursively: those are "visible" here. At a visible op's end, an
// allocation made while it was the innermost visible op and freed before its end is dropped with its free,
// when start(ops=True) asked for the dispatch path's view.
//
// The autograd engine wraps each node's evaluation (the node's formula and the addition of its results
// into the next nodes' input buffers) in a FUNCTION-scope RecordFunction named
// "autograd::engine::evaluate_function: <node>". It is no aten op, so no dispatch mode is called for it:
// it must neither hide the ops inside it (a dispatch mode sees the formula's ops and the engine's
// gradient sums) nor count as an op whose end drops what was allocated and freed within it (a node's
// intermediate results, the addend a sum consumed). Such a frame is transparent: pushed only so that
// op_end pops what op_start pushed.
constexpr char kEngineRange[] = "autograd::engine::evaluate_function: ";

bool engine_range(const at::RecordFunction& fn) {
  const char* name = fn.name();
  return name != nullptr && std::strncmp(name, kEngineRange, sizeof(kEngineRange) - 1) == 0;
}

std::unique_ptr<at::ObserverContext> op_start(const at::RecordFunction& fn) {
  if (engine_range(fn)) {
    t_ops.push_back(OpFrame{0, 0, false, true});
    return nullptr;
  }
  // The innermost op frame decides (engine ranges are skipped): at top level, or directly inside a
  // composite op that a dispatch mode sees, this op is seen as well.
  auto outer = t_ops.rbegin();
  while (outer != t_ops.rend() && outer->engine) ++outer;
  bool visible = outer == t_ops.rend() || (outer->id != 0 && outer->decomposes);
  bool composite = visible && decomposes(fn);
  // The engine's own op between nodes (no node's call open, directly inside its range around a node): the
  // sum of a gradient into the next node's input buffer. The dispatch path looks for freed storages there
  // (Tracker.carry_over polls before taking the sum over), so a consumer mimicking its report needs the
  // moment: a marker event (no memory) with the node that ran last.
  bool engine_sum = t_nodes.empty() && !t_ops.empty() && t_ops.back().engine;
  std::lock_guard<std::mutex> guard(g_mutex);
  if (engine_sum) {
    if (t_thread == 0) t_thread = ++g_threads;
    g_events.push_back(Event{0, 0, t_last_node, -1, 0, t_thread, true});
  }
  t_ops.push_back(OpFrame{visible ? g_next_op++ : 0, g_events.size(), composite, false});
  return nullptr;
}

void op_end(const at::RecordFunction& /*fn*/, at::ObserverContext* /*ctx*/) {
  if (t_ops.empty()) return;
  OpFrame frame = t_ops.back();
  t_ops.pop_back();
  uint64_t op = frame.id;
  size_t first = frame.first;
  if (op == 0) return;
  std::lock_guard<std::mutex> guard(g_mutex);
  if (first > g_events.size()) return;  // take() drained the buffer while the op ran: nothing to pair
  for (size_t i = first; i < g_events.size(); ++i) {
    Event& freed = g_events[i];
    if (freed.bytes >= 0 || freed.thread != t_thread) continue;
    for (size_t j = first; j < i; ++j) {
      Event& made = g_events[j];
      if (made.bytes == -freed.bytes && made.ptr == freed.ptr && made.thread == t_thread && made.op == op) {
        made.bytes = 0;
        freed.bytes = 0;
        g_dropped += 2;
        break;
      }
    }
  }
}

bool g_started = false;  // only touched with the GIL held
at::CallbackHandle g_callback = at::INVALID_CALLBACK_HANDLE;
at::CallbackHandle g_op_callback = at::INVALID_CALLBACK_HANDLE;

PyObject* start(PyObject* /*self*/, PyObject* args) {
  int ops = 0;
  if (!PyArg_ParseTuple(args, "|p", &ops)) return nullptr;
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
    if (ops) {
      g_op_callback = at::addGlobalCallback(
          at::RecordFunctionCallback(op_start, op_end).needsInputs(false).scopes({at::RecordScope::FUNCTION}));
    }
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
    return nullptr;
  }
  g_ops = ops != 0;
  g_started = true;
  Py_RETURN_TRUE;
}

PyObject* stop(PyObject* /*self*/, PyObject* /*args*/) {
  if (!g_started) Py_RETURN_NONE;
  try {
    c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
    at::removeCallback(g_callback);
    if (g_op_callback != at::INVALID_CALLBACK_HANDLE) at::removeCallback(g_op_callback);
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
    return nullptr;
  }
  g_callback = at::INVALID_CALLBACK_HANDLE;
  g_op_callback = at::INVALID_CALLBACK_HANDLE;
  g_started = false;
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    g_ops = false;
    g_outside.clear();
  }
  Py_RETURN_NONE;
}

// take(with_ops=False) -> (sequence_number_peek, events): the calling thread's next autograd sequence
// number and the events since the last take, as a list of (ptr, bytes, node, device type) tuples (an empty
// tuple when none: the common case costs no allocation). with_ops adds a fifth item, the id of the
// innermost visible op open when the event was recorded (0: none, or start() without ops): the dispatch
// path sees an op's frees when the op returns, so a consumer mimicking it needs to know which frees
// happened inside the op that made an allocation (event_lines.py), and the engine's gradient sums as
// (0, 0, node, -1, 0, 1) markers (op_start); and a sixth, 1 where grad mode was on (the dispatch path's
// phase of an allocation: "forward" with grad mode on, "other" without, as in an optimizer's step).
PyObject* take(PyObject* /*self*/, PyObject* args) {
  int with_ops = 0;
  if (!PyArg_ParseTuple(args, "|p", &with_ops)) return nullptr;
  std::vector<Event> events;
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    events.swap(g_events);
  }
  PyObject* peek = PyLong_FromUnsignedLongLong(at::sequence_number::peek());
  if (peek == nullptr) return nullptr;
  size_t kept = 0;
  // Sum markers only for with_ops (event_lines.py's view); other consumers get memory events alone.
  auto wanted = [with_ops](const Event& e) { return e.bytes != 0 || (e.sum && with_ops); };
  for (const Event& e : events) kept += wanted(e);
  PyObject* list = kept == 0 ? PyTuple_New(0) : PyList_New(static_cast<Py_ssize_t>(kept));
  if (list == nullptr) {
    Py_DECREF(peek);
    return nullptr;
  }
  size_t i = 0;
  for (const Event& e : events) {
    if (!wanted(e)) continue;  // a dropped transient, or a sum marker ((0, 0, node, -1, 0)) not asked for
    PyObject* item = with_ops ? Py_BuildValue("(KLLiKi)", static_cast<unsigned long long>(e.ptr),
                                              static_cast<long long>(e.bytes), static_cast<long long>(e.node),
                                              static_cast<int>(e.device), static_cast<unsigned long long>(e.op),
                                              static_cast<int>(e.grad))
                              : Py_BuildValue("(KLLi)", static_cast<unsigned long long>(e.ptr),
                                              static_cast<long long>(e.bytes), static_cast<long long>(e.node),
                                              static_cast<int>(e.device));
    if (item == nullptr) {
      Py_DECREF(peek);
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i++), item);
  }
  PyObject* out = PyTuple_Pack(2, peek, list);
  Py_DECREF(peek);
  Py_DECREF(list);
  return out;
}

// total() -> (events recorded, events dropped as transient pairs) since the module was loaded.
PyObject* total(PyObject* /*self*/, PyObject* /*args*/) {
  std::lock_guard<std::mutex> guard(g_mutex);
  return Py_BuildValue("(KK)", static_cast<unsigned long long>(g_total), static_cast<unsigned long long>(g_dropped));
}

PyMethodDef methods[] = {
    {"start", start, METH_VARARGS,
     "start(ops=False): install the hook on this thread (ops: drop each aten op's transient allocations); "
     "False if the profiler slot is taken."},
    {"stop", stop, METH_NOARGS, "Remove the hook."},
    {"take", take, METH_VARARGS,
     "take(with_ops=False): (sequence number peek, events since the last take); with_ops: each with its op."},
    {"node_reset", node_reset, METH_NOARGS, "The calling thread's backward() is over."},
    {"total", total, METH_NOARGS, "(events recorded, events dropped as transients) since the module was loaded."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "memhint_allochook", nullptr, -1, methods,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_memhint_allochook(void) { return PyModule_Create(&module); }
