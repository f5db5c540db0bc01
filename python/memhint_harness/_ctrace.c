/* The line tracer's global trace function in C (issue #17). Built by ctrace.py with the system compiler
 * against the running interpreter's headers; linetrace.py's pure-Python trace function is the fallback.
 *
 * Why: with sys.settrace every Python call anywhere (torch's own `find_torch_dispatch_rule` runs three per
 * aten op on torch 2.x) is a call into a Python trace function, and the C trampoline behind sys.settrace
 * copies the frame's fast locals into a dict before each one. Nearly all of those frames are library code
 * that the tracer ignores. Installed with PyEval_SetTrace, this function decides "not the user's" from a
 * per-code-object slot (co_extra) and returns at once, without a Python call; only frames of the user's
 * files (and the rare states in which linetrace.py must see every call) reach the Python tracer.
 *
 * Semantics are those of sys.settrace with linetrace.py's trace_call as the global function:
 * - call event: a non-user code object, with the tracker neither `returning` nor `disabled`, is ignored
 *   (trace_call's fast path); otherwise `on_call(frame)` (LineTracer._trace_call_guarded) runs and what it
 *   returns becomes the frame's f_trace, the local trace function;
 * - other events on a user frame go to its f_trace, whose result replaces it unless None; frames of other
 *   files never have one of memhint's (on_call returns None for them), so they are skipped unread;
 * - an exception from a Python callback (StopProfiling, KeyboardInterrupt) removes the tracer and clears
 *   the frame's f_trace, then propagates into the traced code, as sys.settrace's trampoline does.
 * PyEval_SetTrace is per thread, like sys.settrace; sys.gettrace() returns the CTracer object, which is
 * also callable as a Python trace function (same decisions), so sys.settrace(sys.gettrace()) keeps working.
 */
#include "_ctrace.h"
#include <frameobject.h>
#include <structmember.h>
#include <stddef.h>
#include <stdint.h>

#if PY_VERSION_HEX < 0x03090000
#error "memhint's C tracer needs Python >= 3.9 (PyFrame_GetCode)"
#endif

#if PY_VERSION_HEX >= 0x030C0000
#define REQUEST_EXTRA_INDEX PyUnstable_Eval_RequestCodeExtraIndex
#define CODE_GET_EXTRA PyUnstable_Code_GetExtra
#define CODE_SET_EXTRA PyUnstable_Code_SetExtra
#else
#define REQUEST_EXTRA_INDEX _PyEval_RequestCodeExtraIndex
#define CODE_GET_EXTRA _PyCode_GetExtra
#define CODE_SET_EXTRA _PyCode_SetExtra
#endif

/* The co_extra slot of this module: per code object, (generation << 2) | 1 (not the user's) or | 2
 * (the user's). A slot written by an earlier CTracer (another run in this process, whose user files may
 * differ) carries another generation and is decided again. */
static Py_ssize_t extra_index = -1;
static uintptr_t next_generation = 1;

static PyObject *str_returning, *str_disabled, *str_f_trace, *str_f_trace_lines, *str_co_filename;
static PyObject *event_names[8];

typedef struct {
    PyObject_HEAD
    PyObject *tracker;  /* read for its `returning` and `disabled` flags */
    PyObject *on_call;  /* LineTracer._trace_call_guarded(frame) -> local trace function or None */
    PyObject *is_user;  /* UserFiles.is_user(filename) -> bool */
    PyObject *on_library_call;  /* LineTracer.library_call(): a library call event, for Untraced */
    uintptr_t generation;
    Py_ssize_t calls;   /* call events seen (bench_ops.py's event count) */
    int lost;           /* Untraced: the tracer was removed or replaced while it was switched back on */
} CTracer;

/* 1 when `code` is the user's, 0 when not, -1 with an exception set. */
static int
classify(CTracer *self, PyCodeObject *code)
{
    void *extra = NULL;
    if (CODE_GET_EXTRA((PyObject *)code, extra_index, &extra) < 0)
        return -1;
    uintptr_t tag = (uintptr_t)extra;
    if (tag != 0 && (tag >> 2) == self->generation)
        return (tag & 3) == 2;
    PyObject *filename = PyObject_GetAttr((PyObject *)code, str_co_filename);
    if (filename == NULL)
        return -1;
    PyObject *answer = PyObject_CallOneArg(self->is_user, filename);
    Py_DECREF(filename);
    if (answer == NULL)
        return -1;
    int user = PyObject_IsTrue(answer);
    Py_DECREF(answer);
    if (user < 0)
        return -1;
    tag = (self->generation << 2) | (user ? 2u : 1u);
    if (CODE_SET_EXTRA((PyObject *)code, extra_index, (void *)tag) < 0)
        return -1;
    return user;
}

/* 1 when the tracker is `returning` or `disabled` (the states in which every call must reach Python). */
static int
tracker_busy(CTracer *self)
{
    PyObject *flag = PyObject_GetAttr(self->tracker, str_returning);
    if (flag == NULL)
        return -1;
    int busy = PyObject_IsTrue(flag);
    Py_DECREF(flag);
    if (busy != 0)
        return busy;
    flag = PyObject_GetAttr(self->tracker, str_disabled);
    if (flag == NULL)
        return -1;
    busy = PyObject_IsTrue(flag);
    Py_DECREF(flag);
    return busy;
}

/* The call-event decision: a new reference to the local trace function (Py_None: none), NULL on error. */
static PyObject *
on_call_event(CTracer *self, PyFrameObject *frame)
{
    self->calls++;
    PyCodeObject *code = PyFrame_GetCode(frame);
    int user = classify(self, code);
    Py_DECREF(code);
    if (user < 0)
        return NULL;
    if (!user) {
        int busy = tracker_busy(self);
        if (busy < 0)
            return NULL;
        if (!busy) {
            /* No line events for this frame: each would be a trip through the tracing machinery to be
             * ignored here (a frame without f_trace gets none under sys.settrace either). */
            if (PyObject_SetAttr((PyObject *)frame, str_f_trace_lines, Py_False) < 0)
                return NULL;
            Py_RETURN_NONE;
        }
    }
    return PyObject_CallOneArg(self->on_call, (PyObject *)frame);
}

/* A Python callback raised: what sys.settrace's trampoline does before the exception propagates. */
static int
callback_failed(PyFrameObject *frame)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyEval_SetTrace(NULL, NULL);
    if (PyObject_SetAttr((PyObject *)frame, str_f_trace, Py_None) < 0)
        PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return -1;
}

static int
ctracer_trace(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    CTracer *self = (CTracer *)obj;
    if (what == PyTrace_CALL) {
        PyObject *local = on_call_event(self, frame);
        if (local == NULL)
            return callback_failed(frame);
        int err = 0;
        if (local != Py_None)
            err = PyObject_SetAttr((PyObject *)frame, str_f_trace, local);
        Py_DECREF(local);
        return err < 0 ? callback_failed(frame) : 0;
    }
    PyCodeObject *code = PyFrame_GetCode(frame);
    int user = classify(self, code);
    Py_DECREF(code);
    if (user <= 0)
        return user < 0 ? callback_failed(frame) : 0;
    PyObject *local = PyObject_GetAttr((PyObject *)frame, str_f_trace);
    if (local == NULL)
        return callback_failed(frame);
    if (local == Py_None) {
        Py_DECREF(local);
        return 0;
    }
    if (what < 0 || what >= (int)(sizeof(event_names) / sizeof(event_names[0])) || event_names[what] == NULL) {
        Py_DECREF(local);
        return 0;
    }
    PyObject *args[3] = {(PyObject *)frame, event_names[what], arg != NULL ? arg : Py_None};
    PyObject *result = PyObject_Vectorcall(local, args, 3, NULL);
    Py_DECREF(local);
    if (result == NULL)
        return callback_failed(frame);
    int err = 0;
    if (result != Py_None)
        err = PyObject_SetAttr((PyObject *)frame, str_f_trace, result);
    Py_DECREF(result);
    return err < 0 ? callback_failed(frame) : 0;
}

static int
CTracer_init(CTracer *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"tracker", "on_call", "is_user", "on_library_call", NULL};
    PyObject *tracker, *on_call, *is_user, *on_library_call;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO:CTracer", kwlist, &tracker, &on_call, &is_user,
                                     &on_library_call))
        return -1;
    if (!PyCallable_Check(on_call) || !PyCallable_Check(is_user) || !PyCallable_Check(on_library_call)) {
        PyErr_SetString(PyExc_TypeError, "CTracer: on_call, is_user and on_library_call must be callable");
        return -1;
    }
    Py_INCREF(tracker);
    Py_INCREF(on_call);
    Py_INCREF(is_user);
    Py_INCREF(on_library_call);
    Py_XSETREF(self->tracker, tracker);
    Py_XSETREF(self->on_call, on_call);
    Py_XSETREF(self->is_user, is_user);
    Py_XSETREF(self->on_library_call, on_library_call);
    self->generation = next_generation++;
    self->calls = 0;
    return 0;
}

static int
CTracer_traverse(CTracer *self, visitproc visit, void *arg)
{
    Py_VISIT(self->tracker);
    Py_VISIT(self->on_call);
    Py_VISIT(self->is_user);
    Py_VISIT(self->on_library_call);
    return 0;
}

static int
CTracer_clear(CTracer *self)
{
    Py_CLEAR(self->tracker);
    Py_CLEAR(self->on_call);
    Py_CLEAR(self->is_user);
    Py_CLEAR(self->on_library_call);
    return 0;
}

static void
CTracer_dealloc(CTracer *self)
{
    PyObject_GC_UnTrack(self);
    CTracer_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* As a Python trace function (sys.settrace(tracer), e.g. restored by the user's code): the global
 * function's answer for a call event; other events never reach it (it is nobody's local function). */
static PyObject *
CTracer_call(CTracer *self, PyObject *args, PyObject *kwds)
{
    PyObject *frame, *event, *arg;
    if (!PyArg_ParseTuple(args, "OOO:CTracer", &frame, &event, &arg))
        return NULL;
    if (!PyFrame_Check(frame)) {
        PyErr_SetString(PyExc_TypeError, "CTracer: a frame expected");
        return NULL;
    }
    return on_call_event(self, (PyFrameObject *)frame);
}

static PyObject *
CTracer_install(CTracer *self, PyObject *unused)
{
    PyEval_SetTrace(ctracer_trace, (PyObject *)self);
    Py_RETURN_NONE;
}

static PyObject *
CTracer_get_calls(CTracer *self, void *closure)
{
    return PyLong_FromSsize_t(self->calls);
}

static PyMethodDef CTracer_methods[] = {
    {"install", (PyCFunction)CTracer_install, METH_NOARGS,
     "Makes this the current thread's trace function (as sys.settrace(self), without the Python trampoline)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef CTracer_getset[] = {
    {"calls", (getter)CTracer_get_calls, NULL, "call events seen so far", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CTracerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "memhint_ctrace.CTracer",
    .tp_basicsize = sizeof(CTracer),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "memhint's global trace function in C: CTracer(tracker, on_call, is_user).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)CTracer_init,
    .tp_dealloc = (destructor)CTracer_dealloc,
    .tp_traverse = (traverseproc)CTracer_traverse,
    .tp_clear = (inquiry)CTracer_clear,
    .tp_call = (ternaryfunc)CTracer_call,
    .tp_methods = CTracer_methods,
    .tp_getset = CTracer_getset,
};

/* Untraced(fn, tracer, pass_tracer): a callable that runs fn(*args, tracer) with the tracer off, when
 * `tracer` is this thread's trace function; otherwise fn(*args, None) as it is (without pass_tracer, the
 * extra argument is left out both ways: for hooks that call no user code). The dispatch mode's __torch_dispatch__ is
 * one: with the tracer on, every bytecode of it runs through the interpreter's tracing machinery (a line
 * number lookup per instruction, a trace call per line and per call), which cost more per op than the
 * bookkeeping itself. What must stay traced (the op, which may run a tensor subclass's __torch_dispatch__ in
 * a user file) is called through call_traced(tracer, op, args, kwargs). The tracer is put back on return
 * unless the tracker was disabled meanwhile or the tracer was lost (an exception out of a trace callback
 * removes it, as sys.settrace's trampoline does, and so does the user's sys.settrace). */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fn;
    CTracer *tracer;
    PyObject *bound_to;  /* fn.__self__: torch 2.x checks that a mode's __torch_dispatch__ is bound to it */
    int pass_tracer;
} Untraced;

static PyTypeObject UntracedType;

static int
is_current(CTracer *tracer)
{
    PyThreadState *tstate = PyThreadState_Get();
    return tstate->c_tracefunc == ctracer_trace && tstate->c_traceobj == (PyObject *)tracer;
}

/* After fn: the tracer back on, unless it was lost meanwhile, something else was installed, or the
 * tracker was disabled (a harness failure switches tracing off for good). Keeps fn's exception, if any. */
static void
restore_tracer(Untraced *self)
{
    if (self->tracer->lost || PyThreadState_Get()->c_tracefunc != NULL)
        return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *flag = PyObject_GetAttr(self->tracer->tracker, str_disabled);
    int disabled = flag != NULL ? PyObject_IsTrue(flag) : -1;
    Py_XDECREF(flag);
    if (disabled < 0)
        PyErr_Clear();
    else if (!disabled)
        PyEval_SetTrace(ctracer_trace, (PyObject *)self->tracer);
    PyErr_Restore(type, value, tb);
}

static PyObject *
Untraced_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Untraced *self = (Untraced *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    int switched = is_current(self->tracer);
    if (switched) {
        /* fn's call event, which the tracer will not see: while a user frame's return is pending
         * (`returning`), any call event pops it first (LineTracer.library_call does the same). */
        PyObject *flag = PyObject_GetAttr(self->tracer->tracker, str_returning);
        if (flag == NULL)
            return NULL;
        int returning = PyObject_IsTrue(flag);
        Py_DECREF(flag);
        if (returning < 0)
            return NULL;
        if (returning) {
            PyObject *done = PyObject_CallNoArgs(self->tracer->on_library_call);
            if (done == NULL)
                return NULL;
            Py_DECREF(done);
        }
    }
    if (!self->pass_tracer) {
        if (!switched)
            return PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
        self->tracer->lost = 0;
        PyEval_SetTrace(NULL, NULL);
        PyObject *result = PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
        restore_tracer(self);
        return result;
    }
    /* fn(*args, tracer-or-None, **kwargs): the tracer goes after the positional arguments. */
    PyObject *small[8];
    PyObject **full = small;
    if (nargs + 1 + nkw > 8) {
        full = PyMem_Malloc((nargs + 1 + nkw) * sizeof(PyObject *));
        if (full == NULL)
            return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        full[i] = args[i];
    full[nargs] = switched ? (PyObject *)self->tracer : Py_None;
    for (Py_ssize_t i = 0; i < nkw; i++)
        full[nargs + 1 + i] = args[nargs + i];
    if (switched) {
        self->tracer->lost = 0;
        PyEval_SetTrace(NULL, NULL);
    }
    PyObject *result = PyObject_Vectorcall(self->fn, full, nargs + 1, kwnames);
    if (full != small)
        PyMem_Free(full);
    if (switched)
        restore_tracer(self);
    return result;
}

static PyObject *
Untraced_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *fn, *tracer;
    int pass_tracer = 1;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Untraced(fn, tracer, pass_tracer=True) takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OO!|p:Untraced", &fn, &CTracerType, &tracer, &pass_tracer))
        return NULL;
    Untraced *self = (Untraced *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(fn);
    Py_INCREF(tracer);
    self->fn = fn;
    self->tracer = (CTracer *)tracer;
    self->vectorcall = Untraced_vectorcall;
    self->pass_tracer = pass_tracer;
    self->bound_to = PyObject_GetAttrString(fn, "__self__");
    if (self->bound_to == NULL) {
        PyErr_Clear();
        Py_INCREF(Py_None);
        self->bound_to = Py_None;
    }
    return (PyObject *)self;
}

static int
Untraced_traverse(Untraced *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fn);
    Py_VISIT(self->tracer);
    Py_VISIT(self->bound_to);
    return 0;
}

static int
Untraced_clear(Untraced *self)
{
    Py_CLEAR(self->fn);
    Py_CLEAR(self->tracer);
    Py_CLEAR(self->bound_to);
    return 0;
}

static void
Untraced_dealloc(Untraced *self)
{
    PyObject_GC_UnTrack(self);
    Untraced_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef Untraced_members[] = {
    {"__self__", T_OBJECT_EX, offsetof(Untraced, bound_to), READONLY, "what fn is bound to"},
    {"__wrapped__", T_OBJECT_EX, offsetof(Untraced, fn), READONLY, "the wrapped callable"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject UntracedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "memhint_ctrace.Untraced",
    .tp_basicsize = sizeof(Untraced),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Untraced(fn, tracer): fn(*args, tracer) with the tracer off (see _ctrace.c).",
    .tp_new = Untraced_new,
    .tp_dealloc = (destructor)Untraced_dealloc,
    .tp_traverse = (traverseproc)Untraced_traverse,
    .tp_clear = (inquiry)Untraced_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Untraced, vectorcall),
    .tp_members = Untraced_members,
};

/* call_traced(tracer, op, args, kwargs): op(*args, **kwargs) with `tracer` on, from inside an Untraced
 * call that switched it off (tracer None: a plain call). */
PyObject *
memhint_call_traced(PyObject *tracer, PyObject *op, PyObject *posargs, PyObject *kwargs)
{
    if (kwargs == Py_None)
        kwargs = NULL;
    int switched = tracer != Py_None && PyObject_TypeCheck(tracer, &CTracerType)
                   && PyThreadState_Get()->c_tracefunc == NULL && !((CTracer *)tracer)->lost;
    if (switched)
        PyEval_SetTrace(ctracer_trace, tracer);
    PyObject *result = PyObject_Call(op, posargs, kwargs);
    if (switched) {
        if (is_current((CTracer *)tracer))
            PyEval_SetTrace(NULL, NULL);
        else
            ((CTracer *)tracer)->lost = 1;  /* removed or replaced inside the op: left as it is */
    }
    return result;
}

static PyObject *
ctrace_call_traced(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "call_traced(tracer, op, args, kwargs)");
        return NULL;
    }
    if (!PyTuple_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "call_traced: args must be a tuple");
        return NULL;
    }
    if (args[3] != Py_None && !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "call_traced: kwargs must be a dict or None");
        return NULL;
    }
    return memhint_call_traced(args[0], args[1], args[2], args[3]);
}

/* settrace(obj): sys.settrace, except that a CTracer is installed as a C trace function. The harness
 * restores its tracer with this after pausing it (sys.gettrace() returns the CTracer object). */
static PyObject *
ctrace_settrace(PyObject *module, PyObject *obj)
{
    if (PyObject_TypeCheck(obj, &CTracerType)) {
        PyEval_SetTrace(ctracer_trace, obj);
        Py_RETURN_NONE;
    }
    if (obj == Py_None) {
        PyEval_SetTrace(NULL, NULL);
        Py_RETURN_NONE;
    }
    PyObject *sys_settrace = PySys_GetObject("settrace");  /* borrowed */
    if (sys_settrace == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "sys.settrace is missing");
        return NULL;
    }
    return PyObject_CallOneArg(sys_settrace, obj);
}

static PyMethodDef module_methods[] = {
    {"call_traced", (PyCFunction)(void (*)(void))ctrace_call_traced, METH_FASTCALL,
     "call_traced(tracer, op, args, kwargs): op(*args, **kwargs) with the tracer on (inside an Untraced call)."},
    {"settrace", (PyCFunction)ctrace_settrace, METH_O,
     "sys.settrace(obj), with a CTracer installed as a C trace function."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef ctrace_module = {
    PyModuleDef_HEAD_INIT, "memhint_ctrace", "memhint's line tracer in C (see _ctrace.c).", -1, module_methods,
};

PyMODINIT_FUNC
PyInit_memhint_ctrace(void)
{
    if (extra_index < 0) {
        extra_index = REQUEST_EXTRA_INDEX(NULL);
        if (extra_index < 0) {
            PyErr_SetString(PyExc_RuntimeError, "no co_extra index left for memhint's tracer");
            return NULL;
        }
    }
    str_returning = PyUnicode_InternFromString("returning");
    str_disabled = PyUnicode_InternFromString("disabled");
    str_f_trace = PyUnicode_InternFromString("f_trace");
    str_co_filename = PyUnicode_InternFromString("co_filename");
    str_f_trace_lines = PyUnicode_InternFromString("f_trace_lines");
    if (!str_returning || !str_disabled || !str_f_trace || !str_co_filename || !str_f_trace_lines)
        return NULL;
    static const struct { int what; const char *name; } events[] = {
        {PyTrace_CALL, "call"}, {PyTrace_EXCEPTION, "exception"}, {PyTrace_LINE, "line"},
        {PyTrace_RETURN, "return"}, {PyTrace_C_CALL, "c_call"}, {PyTrace_C_EXCEPTION, "c_exception"},
        {PyTrace_C_RETURN, "c_return"}, {PyTrace_OPCODE, "opcode"},
    };
    for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
        if (events[i].what < 0 || events[i].what >= 8)
            continue;
        event_names[events[i].what] = PyUnicode_InternFromString(events[i].name);
        if (event_names[events[i].what] == NULL)
            return NULL;
    }
    if (PyType_Ready(&CTracerType) < 0 || PyType_Ready(&UntracedType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&ctrace_module);
    if (module == NULL)
        return NULL;
    Py_INCREF(&CTracerType);
    if (PyModule_AddObject(module, "CTracer", (PyObject *)&CTracerType) < 0) {
        Py_DECREF(&CTracerType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&UntracedType);
    if (PyModule_AddObject(module, "Untraced", (PyObject *)&UntracedType) < 0) {
        Py_DECREF(&UntracedType);
        Py_DECREF(module);
        return NULL;
    }
    if (memhint_dispatch_init(module) < 0 || memhint_expiry_init(module) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
