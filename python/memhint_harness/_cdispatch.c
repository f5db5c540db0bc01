/* The dispatch mode's per-op bookkeeping in C (issue #17). Compiled into the same extension as _ctrace.c
 * (ctrace.py builds both); dispatch.py's DispatchMode.__torch_dispatch__ and tracker.py are the reference
 * and the fallback, and this file does what they do, step for step, on the same Python objects (the ledger's
 * dicts, StorageRec, LineAcc and Frame records, the step's event lists), so that the report is the same
 * byte for byte whichever ran.
 *
 * Why: under the line tracer, what the harness costs per aten op beyond torch's own round trip into a
 * Python dispatch mode (about 3 us) was the Python run for the op's outputs: a dozen calls (on_outputs,
 * _see, poll, on_alloc, _grow, _charge_accs, the ledger's methods, flush_pending) for each allocating op.
 *
 * DispatchCore(tracker, slow, after, on_error, failed, detach, consts) is called by torch (through
 * _ctrace.c's Untraced, which switches the C line tracer off around it and passes it the tracer) as
 * core(func, types, args, kwargs, tracer). It runs the op, then handles the common cases itself:
 * - outputs that are plain tensors (torch.Tensor, Parameter) or tuples / lists of them, nested once as
 *   on_outputs reads them;
 * - each output's storage either already live in the ledger at its recorded size (views, in-place ops), or
 *   new (an allocation): the young generation is polled first (frees charged, forward outputs' graph nodes
 *   tagged), then a StorageRec is made and charged as Tracker.on_alloc/_grow do, in forward, optimizer and
 *   backward alike (to the running graph node's forward line, or in hooks mode deferred to the node's hook).
 * Anything else (a resized or reused storage, a tensor subclass, the ops kernels.py watches, `detach`, a disabled tracker) goes to the Python code before anything is changed:
 * `slow` (the whole Python __torch_dispatch__) when decided before the op, `after` (on_outputs) after it.
 * A failure inside the bookkeeping disables the tracker through `failed(error)`, as Tracker.fail does.
 */
#include "_ctrace.h"
#include <pythread.h>
#include <stddef.h>
#include <structmember.h>

static PyObject *s_disabled, *s_watched_ops, *s_op, *s_in_backward, *s_in_step, *s_returning, *s_events,
    *s_timeline, *s_modules, *s_stack, *s_budget, *s_budget_hit, *s_stack_accs, *s_node_hook, *s_live_bytes,
    *s_serial, *s_epoch, *s_step_index, *s_step_peak, *s_step_peak_at, *s_step_peak_index,
    *s_step_peak_site, *s_step_peak_phase, *s_cdata, *s_rec_cdata, *s_nbytes, *s_handle, *s_site, *s_module, *s_t,
    *s_file, *s_line, *s_func, *s_incl_max, *s_self_max, *s_self_c, *s_incl_c, *s_counter, *s_grad_fn,
    *s_tensor_ref, *s_metadata, *s_register_hook, *s_next_functions, *s_name, *s_weak_ref, *s_forward,
    *s_other, *s_AccumulateGrad, *s_backward, *s_bw_c, *s_backward_start_live, *s_get;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *tracker;
    PyObject *slow;      /* the Python __torch_dispatch__ body: (func, types, args, kwargs, tracer) */
    PyObject *after;     /* Python bookkeeping of an op's outputs: (func, op, out) */
    PyObject *on_error;  /* (func, error): the op raised */
    PyObject *failed;    /* (error): the bookkeeping raised; disables the tracker */
    PyObject *detach;    /* aten.detach.default: the Python body handles it */
    PyObject *bound_to;  /* slow.__self__, the mode: torch 2.x checks a mode's __torch_dispatch__.__self__ */
    /* The tracker's containers and functions, never rebound after its __init__. */
    PyObject *live, *young, *young_handles, *old, *old_handles, *pending, *stack, *timeline, *lines, *bw_pending;
    PyObject *expired, *free_handle, *storage_of, *on_device, *collect_stack_accs, *pop_returned, *acc;
    PyObject *current_node;  /* torch._C._current_autograd_node, or None (hooks mode) */
    PyObject *hook_for;      /* BackwardAttribution._hook_for(site, module) */
    PyObject *tensor_type, *parameter_type, *rec_type, *untracked, *node_key, *module_key, *perf_counter,
        *is_grad_enabled;
    PyObject *accumulate_type;  /* the AccumulateGrad node type, once seen */
    PyObject *sum_op;  /* aten.add.Tensor's _op where gradsum.py corrects the engine's sums (Python body in
                          backward), else None */
    unsigned long main_thread;
    double t0;
} DispatchCore;

/* ---------------------------------------------------------------- small helpers */

/* The truth of obj.name: 1, 0, -1 with an exception set. */
static int
attr_true(PyObject *obj, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL)
        return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

static int
attr_ll(PyObject *obj, PyObject *name, long long *out)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL)
        return -1;
    *out = PyLong_AsLongLong(value);
    Py_DECREF(value);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int
set_ll(PyObject *obj, PyObject *name, long long value)
{
    PyObject *number = PyLong_FromLongLong(value);
    if (number == NULL)
        return -1;
    int err = PyObject_SetAttr(obj, name, number);
    Py_DECREF(number);
    return err;
}

/* list[index] += delta, for the LineAcc counters ([allocated, freed, peak, allocations]). */
static int
list_add(PyObject *list, Py_ssize_t index, long long delta)
{
    if (!PyList_Check(list) || PyList_GET_SIZE(list) <= index) {
        PyErr_SetString(PyExc_TypeError, "memhint: a counter list expected");
        return -1;
    }
    long long value = PyLong_AsLongLong(PyList_GET_ITEM(list, index));
    if (value == -1 && PyErr_Occurred())
        return -1;
    PyObject *number = PyLong_FromLongLong(value + delta);
    if (number == NULL)
        return -1;
    return PyList_SetItem(list, index, number);  /* steals `number` */
}

static int
attr_list_add(PyObject *obj, PyObject *name, Py_ssize_t index, long long delta)
{
    PyObject *list = PyObject_GetAttr(obj, name);
    if (list == NULL)
        return -1;
    int err = list_add(list, index, delta);
    Py_DECREF(list);
    return err;
}

/* The tracker's clock: (perf_counter() - t0) * 1000.0, the same double as tracker.py computes. */
static int
now_ms(DispatchCore *self, double *out)
{
    PyObject *clock = PyObject_CallNoArgs(self->perf_counter);
    if (clock == NULL)
        return -1;
    double seconds = PyFloat_AsDouble(clock);
    Py_DECREF(clock);
    if (seconds == -1.0 && PyErr_Occurred())
        return -1;
    *out = (seconds - self->t0) * 1000.0;
    return 0;
}

static int
grad_enabled(DispatchCore *self)
{
    PyObject *answer = PyObject_CallNoArgs(self->is_grad_enabled);
    if (answer == NULL)
        return -1;
    int truth = PyObject_IsTrue(answer);
    Py_DECREF(answer);
    return truth;
}

static int
on_main_thread(DispatchCore *self)
{
    return PyThread_get_thread_ident() == self->main_thread;
}

/* The top Frame of the traced stack when it may be charged outside backward() (Tracker.current_site's
 * test): a borrowed reference, or NULL (no exception) when there is none. */
static PyObject *
main_top(DispatchCore *self)
{
    Py_ssize_t size = PyList_GET_SIZE(self->stack);
    if (size == 0 || !on_main_thread(self))
        return NULL;
    return PyList_GET_ITEM(self->stack, size - 1);
}

/* (top.file, top.line, top.func): a new reference. */
static PyObject *
site_of(PyObject *top)
{
    PyObject *file = PyObject_GetAttr(top, s_file);
    PyObject *line = file ? PyObject_GetAttr(top, s_line) : NULL;
    PyObject *func = line ? PyObject_GetAttr(top, s_func) : NULL;
    PyObject *site = func ? PyTuple_Pack(3, file, line, func) : NULL;
    Py_XDECREF(file);
    Py_XDECREF(line);
    Py_XDECREF(func);
    return site;
}

/* ModuleLedger.top(): a new reference to the innermost running module's key, or to None. */
static PyObject *
module_top(PyObject *modules)
{
    if (modules == Py_None)
        Py_RETURN_NONE;
    PyObject *stack = PyObject_GetAttr(modules, s_stack);
    if (stack == NULL)
        return NULL;
    PyObject *top = NULL;
    if (PyList_Check(stack) && PyList_GET_SIZE(stack) > 0) {
        top = PyList_GET_ITEM(stack, PyList_GET_SIZE(stack) - 1);
        Py_INCREF(top);
    } else if (!PyList_Check(stack)) {
        PyErr_SetString(PyExc_TypeError, "memhint: ModuleLedger.stack is not a list");
    } else {
        top = Py_None;
        Py_INCREF(top);
    }
    Py_DECREF(stack);
    return top;
}

/* The top Frame that Tracker charges: any thread's during backward() (the main thread waits in the
 * backward() line while autograd's threads run), else the main thread's. Borrowed, or NULL (no exception). */
static PyObject *
charged_top(DispatchCore *self, int in_backward)
{
    Py_ssize_t size = PyList_GET_SIZE(self->stack);
    if (size == 0 || (!in_backward && !on_main_thread(self)))
        return NULL;
    return PyList_GET_ITEM(self->stack, size - 1);
}

/* BackwardAttribution._running(key): metadata[key] of the graph node autograd is running, a new reference
 * (None in hooks mode, outside a node, or when the node has no such tag). */
static PyObject *
running(DispatchCore *self, PyObject *key)
{
    if (self->current_node == Py_None)
        Py_RETURN_NONE;
    PyObject *node = PyObject_CallNoArgs(self->current_node);
    if (node == NULL)
        return NULL;
    if (node == Py_None)
        return node;
    PyObject *value = PyObject_GetAttr(node, s_metadata);
    Py_DECREF(node);
    PyObject *found = value ? PyObject_CallMethodOneArg(value, s_get, key) : NULL;
    Py_XDECREF(value);
    if (found == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return NULL;
        PyErr_Clear();  /* `except Exception: return None` */
        Py_RETURN_NONE;
    }
    return found;
}

/* Tracker._acc(site[:2]): the line's LineAcc, made by the tracker when new. A new reference. */
static PyObject *
line_acc(DispatchCore *self, PyObject *site)
{
    PyObject *key = PyTuple_GetSlice(site, 0, 2);
    if (key == NULL)
        return NULL;
    PyObject *acc = PyDict_GetItemWithError(self->lines, key);
    if (acc != NULL)
        Py_INCREF(acc);
    else if (!PyErr_Occurred())
        acc = PyObject_CallOneArg(self->acc, key);
    Py_DECREF(key);
    return acc;
}

/* hooks mode: bw_pending.setdefault(get_ident(), []).append((rec, delta, in_step)), claimed by the next
 * graph node's post-hook. */
static int
defer_backward(DispatchCore *self, PyObject *rec, long long delta, int in_step)
{
    PyObject *ident = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
    if (ident == NULL)
        return -1;
    PyObject *events = PyDict_GetItemWithError(self->bw_pending, ident);
    int err = 0;
    if (events == NULL) {
        events = PyErr_Occurred() ? NULL : PyList_New(0);
        err = events == NULL || PyDict_SetItem(self->bw_pending, ident, events) < 0 ? -1 : 0;
    } else {
        Py_INCREF(events);
    }
    Py_DECREF(ident);
    PyObject *event = err ? NULL : Py_BuildValue("(OLO)", rec, delta, in_step ? Py_True : Py_False);
    if (event == NULL || PyList_Append(events, event) < 0)
        err = -1;
    Py_XDECREF(event);
    Py_XDECREF(events);
    return err;
}

/* ---------------------------------------------------------------- Tracker's charges */

/* Tracker._charge_accs(nbytes, freed, self_too), once its caller checked the stack. */
static int
charge_accs(DispatchCore *self, long long nbytes, int freed, int self_too)
{
    PyObject *accs = PyObject_GetAttr(self->tracker, s_stack_accs);
    if (accs == NULL)
        return -1;
    if (accs == Py_None) {
        Py_DECREF(accs);
        accs = PyObject_CallNoArgs(self->collect_stack_accs);
        if (accs == NULL)
            return -1;
    }
    if (!PyTuple_Check(accs) || PyTuple_GET_SIZE(accs) != 2 || !PyList_Check(PyTuple_GET_ITEM(accs, 1))) {
        Py_DECREF(accs);
        PyErr_SetString(PyExc_TypeError, "memhint: _stack_accs is not (top, [LineAcc])");
        return -1;
    }
    PyObject *top = PyTuple_GET_ITEM(accs, 0);
    PyObject *distinct = PyTuple_GET_ITEM(accs, 1);
    int err = 0;
    if (self_too) {
        if (freed)
            err = attr_list_add(top, s_self_c, 1, nbytes);
        else {
            PyObject *c = PyObject_GetAttr(top, s_self_c);
            err = c == NULL || list_add(c, 0, nbytes) < 0 || list_add(c, 3, 1) < 0 ? -1 : 0;
            Py_XDECREF(c);
        }
    }
    for (Py_ssize_t i = 0; err == 0 && i < PyList_GET_SIZE(distinct); i++) {
        PyObject *acc = PyList_GET_ITEM(distinct, i);
        if (freed)
            err = attr_list_add(acc, s_incl_c, 1, nbytes);
        else {
            PyObject *c = PyObject_GetAttr(acc, s_incl_c);
            err = c == NULL || list_add(c, 0, nbytes) < 0 || list_add(c, 3, 1) < 0 ? -1 : 0;
            Py_XDECREF(c);
        }
    }
    Py_DECREF(accs);
    return err;
}

/* events.append((rec, delta)) and timeline.append((now, live)) while a profiled step records them. */
static int
record_event(DispatchCore *self, PyObject *rec, long long delta, long long live, int have_now, double now)
{
    PyObject *events = PyObject_GetAttr(self->tracker, s_events);
    if (events == NULL)
        return -1;
    int err = 0;
    if (events != Py_None) {
        if (!have_now && now_ms(self, &now) < 0)
            err = -1;
        PyObject *event = err ? NULL : Py_BuildValue("(OL)", rec, delta);
        PyObject *point = event ? Py_BuildValue("(dL)", now, live) : NULL;
        if (point == NULL || PyList_Append(events, event) < 0 || PyList_Append(self->timeline, point) < 0)
            err = -1;
        Py_XDECREF(event);
        Py_XDECREF(point);
    }
    Py_DECREF(events);
    return err;
}

/* Tracker._on_free(rec, nbytes). */
static int
on_free(DispatchCore *self, PyObject *rec, long long nbytes, int in_backward)
{
    long long live;
    if (attr_ll(self->tracker, s_live_bytes, &live) < 0)
        return -1;
    live -= nbytes;
    if (set_ll(self->tracker, s_live_bytes, live) < 0 || record_event(self, rec, -nbytes, live, 0, 0.0) < 0)
        return -1;
    int in_step = attr_true(self->tracker, s_in_step);
    if (in_step < 0)
        return -1;
    if (in_backward && self->current_node == Py_None)
        return defer_backward(self, rec, -nbytes, in_step);
    if (!in_step)
        return 0;
    if (in_backward) {
        PyObject *site = running(self, self->node_key);
        if (site == NULL)
            return -1;
        if (site != Py_None) {
            PyObject *acc = line_acc(self, site);
            Py_DECREF(site);
            int err = acc == NULL ? -1 : attr_list_add(acc, s_bw_c, 1, nbytes);
            Py_XDECREF(acc);
            if (err < 0)
                return -1;
            /* _charge_stack(nbytes, freed=True, self_too=False) */
            return PyList_GET_SIZE(self->stack) ? charge_accs(self, nbytes, 1, 0) : 0;
        }
        Py_DECREF(site);
        if (PyList_GET_SIZE(self->stack) == 0)
            return 0;
    } else if (main_top(self) == NULL) {
        return 0;
    }
    return charge_accs(self, nbytes, 1, 1);
}

/* Tracker._charge_backward(site, nbytes): the forward line's backward counters. */
static int
charge_backward(DispatchCore *self, PyObject *site, long long nbytes, long long live)
{
    long long start;
    if (attr_ll(self->tracker, s_backward_start_live, &start) < 0)
        return -1;
    PyObject *acc = line_acc(self, site);
    PyObject *c = acc ? PyObject_GetAttr(acc, s_bw_c) : NULL;
    Py_XDECREF(acc);
    if (c == NULL)
        return -1;
    int err = list_add(c, 0, nbytes) < 0 || list_add(c, 3, 1) < 0 ? -1 : 0;
    if (err == 0 && PyList_Check(c) && PyList_GET_SIZE(c) > 2) {
        long long peak = PyLong_AsLongLong(PyList_GET_ITEM(c, 2));
        if (peak == -1 && PyErr_Occurred())
            err = -1;
        else if (live - start > peak)
            err = list_add(c, 2, live - start - peak);
    }
    Py_DECREF(c);
    return err;
}

/* Tracker._grow(rec, nbytes, bw_site); bw_site: the running node's forward line (None outside a node). */
static int
grow(DispatchCore *self, PyObject *rec, long long nbytes, int in_backward, PyObject *bw_site)
{
    PyObject *tracker = self->tracker;
    long long live;
    double now;
    if (attr_ll(tracker, s_live_bytes, &live) < 0)
        return -1;
    live += nbytes;
    if (set_ll(tracker, s_live_bytes, live) < 0 || now_ms(self, &now) < 0)
        return -1;
    PyObject *t = PyObject_GetAttr(rec, s_t);
    if (t == NULL)
        return -1;
    int unset = t == Py_None;
    Py_DECREF(t);
    if (unset) {
        PyObject *value = PyFloat_FromDouble(now);
        int err = value == NULL ? -1 : PyObject_SetAttr(rec, s_t, value);
        Py_XDECREF(value);
        if (err < 0)
            return -1;
    }
    if (record_event(self, rec, nbytes, live, 1, now) < 0)
        return -1;
    PyObject *budget = PyObject_GetAttr(tracker, s_budget);
    if (budget == NULL)
        return -1;
    if (budget != Py_None) {
        PyObject *hit = PyObject_GetAttr(tracker, s_budget_hit);
        int err = hit == NULL ? -1 : 0;
        if (hit == Py_None) {
            PyObject *level = PyLong_FromLongLong(live);
            int over = level == NULL ? -1 : PyObject_RichCompareBool(level, budget, Py_GT);
            if (over > 0) {
                PyObject *site = PyObject_GetAttr(rec, s_site);
                PyObject *step = site ? PyObject_GetAttr(tracker, s_step_index) : NULL;
                PyObject *value = step ? PyTuple_Pack(3, site, level, step) : NULL;
                over = value == NULL ? -1 : PyObject_SetAttr(tracker, s_budget_hit, value);
                Py_XDECREF(site);
                Py_XDECREF(step);
                Py_XDECREF(value);
            }
            Py_XDECREF(level);
            err = over < 0 ? -1 : 0;
        }
        Py_XDECREF(hit);
        if (err < 0) {
            Py_DECREF(budget);
            return -1;
        }
    }
    Py_DECREF(budget);
    int in_step = attr_true(tracker, s_in_step);
    if (in_step < 0)
        return -1;
    int hooks_backward = in_backward && bw_site == Py_None && self->current_node == Py_None;
    /* Claimed by the next node post-hook, in warmup too: the storage's line must be the forward one. */
    if (hooks_backward && defer_backward(self, rec, nbytes, in_step) < 0)
        return -1;
    if (!in_step)
        return 0;
    PyObject *top = charged_top(self, in_backward);
    if (top != NULL) {
        long long mark;
        if (attr_ll(top, s_incl_max, &mark) < 0 || (live > mark && set_ll(top, s_incl_max, live) < 0))
            return -1;
        if (!in_backward
            && (attr_ll(top, s_self_max, &mark) < 0 || (live > mark && set_ll(top, s_self_max, live) < 0)))
            return -1;
    }
    long long peak;
    if (attr_ll(tracker, s_step_peak, &peak) < 0)
        return -1;
    if (live > peak) {
        PyObject *events = PyObject_GetAttr(tracker, s_events);
        if (events == NULL)
            return -1;
        Py_ssize_t count = events == Py_None ? 0 : PyObject_Length(events);
        Py_DECREF(events);
        int grad = count < 0 ? -1 : in_backward ? 1 : grad_enabled(self);
        if (grad < 0)
            return -1;
        PyObject *at = PyFloat_FromDouble(now);
        PyObject *site = at ? PyObject_GetAttr(rec, s_site) : NULL;
        int err = site == NULL || set_ll(tracker, s_step_peak, live) < 0
                  || PyObject_SetAttr(tracker, s_step_peak_at, at) < 0 || set_ll(tracker, s_step_peak_index, count) < 0
                  || PyObject_SetAttr(tracker, s_step_peak_site, site) < 0
                  || PyObject_SetAttr(tracker, s_step_peak_phase,
                                      in_backward ? s_backward : grad ? s_forward : s_other) < 0;
        Py_XDECREF(at);
        Py_XDECREF(site);
        if (err)
            return -1;
    }
    if (hooks_backward)
        return 0;
    if (in_backward && bw_site != Py_None) {
        if (charge_backward(self, bw_site, nbytes, live) < 0)
            return -1;
        if (top != NULL && charge_accs(self, nbytes, 0, 0) < 0)
            return -1;
    }
    PyObject *module = in_backward && bw_site == Py_None ? (Py_INCREF(Py_None), Py_None)
                                                          : PyObject_GetAttr(rec, s_module);
    if (module == NULL)
        return -1;
    if (module != Py_None) {
        /* ModuleLedger.charge_forward / charge_backward(module, nbytes): its counter's [_FORWARD] (1) or
         * [_BACKWARD] (3). */
        PyObject *modules = PyObject_GetAttr(tracker, s_modules);
        PyObject *done = modules ? PyObject_CallMethodOneArg(modules, s_counter, module) : NULL;
        int err = done == NULL ? -1 : list_add(done, in_backward ? 3 : 1, nbytes);
        Py_XDECREF(done);
        Py_XDECREF(modules);
        if (err < 0) {
            Py_DECREF(module);
            return -1;
        }
    }
    Py_DECREF(module);
    if (in_backward && bw_site != Py_None)
        return 0;
    if (top != NULL)
        return charge_accs(self, nbytes, 0, 1);
    return 0;
}

/* ---------------------------------------------------------------- polling and tagging */

/* `metadata[NODE_KEY] = site` (and the module) unless the node has a site already. 1 tagged, 0 already
 * tagged, -1 error. */
static int
tag_node(DispatchCore *self, PyObject *metadata, PyObject *site, PyObject *module)
{
    int has = PySequence_Contains(metadata, self->node_key);
    if (has != 0)
        return has < 0 ? -1 : 0;
    if (PyObject_SetItem(metadata, self->node_key, site) < 0)
        return -1;
    if (module != Py_None && PyObject_SetItem(metadata, self->module_key, module) < 0)
        return -1;
    return 1;
}

static int
register_site_hook(DispatchCore *self, PyObject *node, PyObject *site, PyObject *module)
{
    PyObject *hook = PyObject_CallFunctionObjArgs(self->hook_for, site, module, NULL);
    if (hook == NULL)
        return -1;
    PyObject *handle = PyObject_CallMethodOneArg(node, s_register_hook, hook);
    Py_DECREF(hook);
    Py_XDECREF(handle);
    return handle == NULL ? -1 : 0;
}

static int
is_accumulate_grad(DispatchCore *self, PyObject *node)
{
    PyTypeObject *type = Py_TYPE(node);
    if ((PyObject *)type == self->accumulate_type)
        return 1;
    PyObject *name = PyObject_GetAttr((PyObject *)type, s_name);
    if (name == NULL)
        return -1;
    int same = PyObject_RichCompareBool(name, s_AccumulateGrad, Py_EQ);
    Py_DECREF(name);
    if (same > 0 && self->accumulate_type == NULL) {
        Py_INCREF(type);
        self->accumulate_type = (PyObject *)type;
    }
    return same;
}

/* BackwardAttribution.flush_pending(): tags the grad_fn of recent forward outputs with their line. */
static int
flush_pending(DispatchCore *self)
{
    PyObject *pending = PyList_GetSlice(self->pending, 0, PyList_GET_SIZE(self->pending));
    if (pending == NULL || PyList_SetSlice(self->pending, 0, PyList_GET_SIZE(self->pending), NULL) < 0) {
        Py_XDECREF(pending);
        return -1;
    }
    int hooks = self->current_node == Py_None;
    int err = 0;
    for (Py_ssize_t i = 0; err == 0 && i < PyList_GET_SIZE(pending); i++) {
        PyObject *entry = PyList_GET_ITEM(pending, i);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 4) {
            PyErr_SetString(PyExc_TypeError, "memhint: a pending entry is not (tensor, rec, site, module)");
            err = -1;
            break;
        }
        PyObject *tensor = PyTuple_GET_ITEM(entry, 0), *rec = PyTuple_GET_ITEM(entry, 1);
        PyObject *site = PyTuple_GET_ITEM(entry, 2), *module = PyTuple_GET_ITEM(entry, 3);
        PyObject *node = PyObject_GetAttr(tensor, s_grad_fn);
        if (node == NULL) {
            err = -1;
            break;
        }
        if (node == Py_None) {
            Py_DECREF(node);
            continue;
        }
        PyObject *ref = PyObject_GetAttr(rec, s_tensor_ref);
        if (ref == NULL)
            err = -1;
        else if (ref == Py_None) {
            PyObject *weak = PyWeakref_NewRef(tensor, NULL);
            if (weak == NULL) {
                if (PyErr_ExceptionMatches(PyExc_TypeError))
                    PyErr_Clear();
                else
                    err = -1;
            } else {
                err = PyObject_SetAttr(rec, s_tensor_ref, weak);
                Py_DECREF(weak);
            }
        }
        Py_XDECREF(ref);
        PyObject *metadata = err ? NULL : PyObject_GetAttr(node, s_metadata);
        if (metadata == NULL) {
            Py_DECREF(node);
            if (err)
                break;
            if (!PyErr_ExceptionMatches(PyExc_Exception)) {
                err = -1;
                break;
            }
            PyErr_Clear();
            continue;
        }
        int tagged = tag_node(self, metadata, site, module);
        Py_DECREF(metadata);
        if (tagged <= 0) {
            Py_DECREF(node);
            err = tagged;
            continue;
        }
        PyObject *node_hook = PyObject_GetAttr(self->tracker, s_node_hook);
        if (node_hook == NULL)
            err = -1;
        else if (node_hook != Py_None) {
            PyObject *done = PyObject_CallNoArgs(node_hook);
            err = done == NULL ? -1 : 0;
            Py_XDECREF(done);
        }
        Py_XDECREF(node_hook);
        if (err == 0 && hooks)
            err = register_site_hook(self, node, site, module);
        PyObject *nexts = err ? NULL : PyObject_GetAttr(node, s_next_functions);
        Py_DECREF(node);
        if (nexts == NULL) {
            err = -1;
            break;
        }
        PyObject *seq = PySequence_Fast(nexts, "memhint: next_functions is not a sequence");
        Py_DECREF(nexts);
        if (seq == NULL) {
            err = -1;
            break;
        }
        for (Py_ssize_t j = 0; err == 0 && j < PySequence_Fast_GET_SIZE(seq); j++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(seq, j);
            PyObject *next = PySequence_GetItem(pair, 0);
            if (next == NULL) {
                err = -1;
                break;
            }
            int accumulate = next == Py_None ? 0 : is_accumulate_grad(self, next);
            if (accumulate > 0) {
                PyObject *md = PyObject_GetAttr(next, s_metadata);
                int fresh = md == NULL ? -1 : tag_node(self, md, site, module);
                Py_XDECREF(md);
                if (fresh > 0 && hooks)
                    fresh = register_site_hook(self, next, site, module);
                accumulate = fresh;
            }
            Py_DECREF(next);
            if (accumulate < 0)
                err = -1;
        }
        Py_DECREF(seq);
    }
    Py_DECREF(pending);
    return err;
}

/* StorageLedger.forget(rec). */
static int
forget(DispatchCore *self, PyObject *cdata)
{
    if (PyDict_DelItem(self->live, cdata) < 0)
        return -1;
    PyObject *young = PyDict_GetItemWithError(self->young, cdata);
    if (young == NULL && PyErr_Occurred())
        return -1;
    if (young != NULL)
        return PyDict_DelItem(self->young, cdata) < 0 || PyDict_DelItem(self->young_handles, cdata) < 0 ? -1 : 0;
    return PyDict_DelItem(self->old, cdata) < 0 || PyDict_DelItem(self->old_handles, cdata) < 0 ? -1 : 0;
}

/* Tracker.poll(full=False): tags pending graph nodes, retires the young generation's dead storages (charging
 * their frees) and pops a returned user frame. */
static int
poll_young(DispatchCore *self, int in_backward)
{
    if (PyList_GET_SIZE(self->pending) > 0 && flush_pending(self) < 0)
        return -1;
    /* StorageLedger.expired(False). */
    PyObject *dead = PyList_New(0);
    if (dead == NULL)
        return -1;
    PyObject *filled = memhint_dead_records(self->young, self->young_handles, self->expired, dead);
    if (filled == NULL) {
        Py_DECREF(dead);
        return -1;
    }
    Py_DECREF(filled);
    int err = 0;
    for (Py_ssize_t i = 0; err == 0 && i < PyList_GET_SIZE(dead); i++) {
        PyObject *rec = PyList_GET_ITEM(dead, i);
        PyObject *key = PyObject_GetAttr(rec, s_rec_cdata);
        PyObject *rec_handle = key ? PyObject_GetAttr(rec, s_handle) : NULL;
        long long nbytes = 0;
        err = rec_handle == NULL || forget(self, key) < 0 ? -1 : 0;
        if (err == 0 && rec_handle != Py_None) {
            PyObject *done = PyObject_CallOneArg(self->free_handle, rec_handle);
            err = done == NULL ? -1 : 0;
            Py_XDECREF(done);
        }
        if (err == 0)
            err = attr_ll(rec, s_nbytes, &nbytes) < 0 || on_free(self, rec, nbytes, in_backward) < 0 ? -1 : 0;
        Py_XDECREF(key);
        Py_XDECREF(rec_handle);
    }
    Py_DECREF(dead);
    if (err < 0)
        return -1;
    int returning = attr_true(self->tracker, s_returning);
    if (returning < 0)
        return -1;
    if (returning && on_main_thread(self)) {
        PyObject *done = PyObject_CallNoArgs(self->pop_returned);
        Py_XDECREF(done);
        return done == NULL ? -1 : 0;
    }
    return 0;
}

/* Tracker.on_alloc(cdata, nbytes, storage, tensor): a new reference to the record. */
static PyObject *
on_alloc(DispatchCore *self, PyObject *cdata, PyObject *nbytes_obj, long long nbytes, PyObject *storage,
         int in_backward)
{
    PyObject *tracker = self->tracker;
    long long serial;
    if (attr_ll(tracker, s_serial, &serial) < 0 || set_ll(tracker, s_serial, serial + 1) < 0)
        return NULL;
    PyObject *bw_site = in_backward ? running(self, self->node_key) : (Py_INCREF(Py_None), Py_None);
    if (bw_site == NULL)
        return NULL;
    PyObject *top = charged_top(self, in_backward);
    PyObject *site = bw_site != Py_None ? (Py_INCREF(bw_site), bw_site)
                     : top != NULL ? site_of(top) : (Py_INCREF(self->untracked), self->untracked);
    PyObject *handle = site ? PyObject_CallMethodNoArgs(storage, s_weak_ref) : NULL;
    PyObject *epoch = handle ? PyObject_GetAttr(tracker, s_epoch) : NULL;
    PyObject *step = epoch ? PyObject_GetAttr(tracker, s_step_index) : NULL;
    PyObject *number = step ? PyLong_FromLongLong(serial + 1) : NULL;
    PyObject *rec = NULL;
    if (number != NULL) {
        PyObject *args[8] = {number, cdata, handle, nbytes_obj, site, epoch, step, Py_None};
        rec = PyObject_Vectorcall(self->rec_type, args, 8, NULL);
    }
    Py_XDECREF(site);
    Py_XDECREF(epoch);
    Py_XDECREF(step);
    Py_XDECREF(number);
    if (rec == NULL) {
        Py_XDECREF(handle);
        Py_DECREF(bw_site);
        return NULL;
    }
    PyObject *modules = PyObject_GetAttr(tracker, s_modules);
    int err = modules == NULL ? -1 : 0;
    if (err == 0 && modules != Py_None) {
        PyObject *module = in_backward ? running(self, self->module_key) : module_top(modules);
        err = module == NULL ? -1 : PyObject_SetAttr(rec, s_module, module);
        Py_XDECREF(module);
    }
    Py_XDECREF(modules);
    /* StorageLedger.remember(rec). */
    if (err == 0)
        err = PyDict_SetItem(self->live, cdata, rec) < 0 || PyDict_SetItem(self->young, cdata, rec) < 0
              || PyDict_SetItem(self->young_handles, cdata, handle) < 0 ? -1 : 0;
    Py_DECREF(handle);
    if (err == 0)
        err = grow(self, rec, nbytes, in_backward, bw_site);
    Py_DECREF(bw_site);
    if (err < 0) {
        Py_DECREF(rec);
        return NULL;
    }
    return rec;
}

/* ---------------------------------------------------------------- an op's outputs */

typedef struct {
    PyObject *tensor;   /* borrowed: the op's output holds it */
    PyObject *storage;  /* the rest: new references */
    PyObject *cdata;
    PyObject *nbytes;
} Output;

#define MAX_OUTPUTS 64

/* Collects a plain tensor of an op's output (on_outputs' walk) when it is on the measured device and has a
 * storage. 1 when it can be handled here, 0 when the Python code must run, -1 on error. */
static int
add_output(DispatchCore *self, PyObject *tensor, Output *items, int *count)
{
    PyTypeObject *type = Py_TYPE(tensor);
    if ((PyObject *)type != self->tensor_type && (PyObject *)type != self->parameter_type)
        return 0;  /* a subclass: unwrap_subclass and its __tensor_flatten__ */
    PyObject *flag = PyObject_CallOneArg(self->on_device, tensor);
    if (flag == NULL)
        return -1;
    int on_device = PyObject_IsTrue(flag);
    Py_DECREF(flag);
    if (on_device <= 0)
        return on_device < 0 ? -1 : 1;
    if (*count >= MAX_OUTPUTS)
        return 0;
    PyObject *storage = PyObject_CallOneArg(self->storage_of, tensor);
    PyObject *cdata = storage ? PyObject_GetAttr(storage, s_cdata) : NULL;
    PyObject *nbytes = cdata ? PyObject_CallMethodNoArgs(storage, s_nbytes) : NULL;
    if (nbytes == NULL) {
        Py_XDECREF(storage);
        Py_XDECREF(cdata);
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return -1;
        PyErr_Clear();  /* a storage-less tensor: _see skips it */
        return 1;
    }
    PyObject *rec = PyDict_GetItemWithError(self->live, cdata);
    int ok = 1;
    if (rec == NULL) {
        if (PyErr_Occurred())
            ok = -1;
    } else {
        /* A reused address (the old record expired) or a resized storage: Python. */
        PyObject *handle = PyObject_GetAttr(rec, s_handle);
        PyObject *gone = handle ? PyObject_CallOneArg(self->expired, handle) : NULL;
        int expired = gone ? PyObject_IsTrue(gone) : -1;
        Py_XDECREF(handle);
        Py_XDECREF(gone);
        PyObject *size = expired == 0 ? PyObject_GetAttr(rec, s_nbytes) : NULL;
        int same = size ? PyObject_RichCompareBool(size, nbytes, Py_EQ) : -1;
        Py_XDECREF(size);
        ok = expired < 0 ? -1 : expired ? 0 : same;
    }
    if (ok <= 0) {
        Py_DECREF(storage);
        Py_DECREF(cdata);
        Py_DECREF(nbytes);
        return ok;
    }
    items[*count] = (Output){tensor, storage, cdata, nbytes};
    (*count)++;
    return 1;
}

static int
collect_outputs(DispatchCore *self, PyObject *out, Output *items, int *count)
{
    if (PyObject_TypeCheck(out, (PyTypeObject *)self->tensor_type))
        return add_output(self, out, items, count);
    PyObject *seq = PySequence_Fast(out, "memhint: not a sequence");  /* a tuple or a list */
    if (seq == NULL)
        return -1;
    int ok = 1;
    for (Py_ssize_t i = 0; ok > 0 && i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (PyObject_TypeCheck(item, (PyTypeObject *)self->tensor_type))
            ok = add_output(self, item, items, count);
        else if (PyTuple_Check(item) || PyList_Check(item)) {
            for (Py_ssize_t j = 0; ok > 0 && j < PySequence_Fast_GET_SIZE(item); j++) {
                PyObject *sub = PySequence_Fast_GET_ITEM(item, j);
                if (PyObject_TypeCheck(sub, (PyTypeObject *)self->tensor_type))
                    ok = add_output(self, sub, items, count);
            }
        }
    }
    Py_DECREF(seq);
    return ok;
}

/* Tracker.on_outputs(out), for the cases add_output accepts. 1 done, 0 Python's, -1 error. */
static int
handle_outputs(DispatchCore *self, PyObject *out)
{
    long long in_backward;
    if (attr_ll(self->tracker, s_in_backward, &in_backward) < 0)
        return -1;
    Output items[MAX_OUTPUTS];
    int count = 0;
    int ok = collect_outputs(self, out, items, &count);
    PyObject *seen[MAX_OUTPUTS * 2];
    int nseen = 0;
    for (int i = 0; ok > 0 && i < count; i++) {
        /* Looked up again: an earlier output of this op may have allocated the same storage. */
        PyObject *rec = PyDict_GetItemWithError(self->live, items[i].cdata);
        if (rec == NULL && PyErr_Occurred()) {
            ok = -1;
            break;
        }
        if (rec != NULL) {
            Py_INCREF(rec);
        } else {
            long long nbytes = PyLong_AsLongLong(items[i].nbytes);
            if (nbytes == -1 && PyErr_Occurred()) {
                ok = -1;
                break;
            }
            if (nbytes <= 0)
                continue;
            if (poll_young(self, in_backward != 0) < 0) {
                ok = -1;
                break;
            }
            rec = on_alloc(self, items[i].cdata, items[i].nbytes, nbytes, items[i].storage, in_backward != 0);
            if (rec == NULL) {
                ok = -1;
                break;
            }
        }
        seen[nseen++] = items[i].tensor;
        seen[nseen++] = rec;
    }
    if (ok > 0 && nseen > 0 && !in_backward) {
        int grad = grad_enabled(self);
        PyObject *top = grad > 0 ? main_top(self) : NULL;
        if (grad < 0)
            ok = -1;
        else if (top != NULL) {
            PyObject *site = site_of(top);
            PyObject *modules = site ? PyObject_GetAttr(self->tracker, s_modules) : NULL;
            PyObject *module = modules ? module_top(modules) : NULL;
            Py_XDECREF(modules);
            if (module == NULL)
                ok = -1;
            for (int i = 0; ok > 0 && i < nseen; i += 2) {
                PyObject *entry = PyTuple_Pack(4, seen[i], seen[i + 1], site, module);
                if (entry == NULL || PyList_Append(self->pending, entry) < 0)
                    ok = -1;
                Py_XDECREF(entry);
            }
            Py_XDECREF(site);
            Py_XDECREF(module);
        }
    }
    for (int i = 1; i < nseen; i += 2)
        Py_DECREF(seen[i]);
    for (int i = 0; i < count; i++) {
        Py_DECREF(items[i].storage);
        Py_DECREF(items[i].cdata);
        Py_DECREF(items[i].nbytes);
    }
    return ok;
}

/* ---------------------------------------------------------------- the dispatch entry */

/* The bookkeeping raised: the tracker stops measuring (Tracker.fail), the op's result stands. */
static void
bookkeeping_failed(DispatchCore *self)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL)
        PyException_SetTraceback(value, tb);
    PyObject *done = PyObject_CallOneArg(self->failed, value != NULL ? value : Py_None);
    if (done == NULL)
        PyErr_WriteUnraisable(self->failed);
    Py_XDECREF(done);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
}

static PyObject *
DispatchCore_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    DispatchCore *self = (DispatchCore *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    /* core(func, types, args, kwargs, tracer), as Untraced passes it; any other shape: the Python body. */
    if (nargs != 5 || kwnames != NULL || args[0] == self->detach || !PyTuple_Check(args[2])
        || (args[3] != Py_None && !PyDict_Check(args[3])))
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    PyObject *func = args[0];
    int disabled = attr_true(self->tracker, s_disabled);
    if (disabled < 0)
        return NULL;
    if (disabled)
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    /* The earlier ops' graph nodes are tagged before an op on one of their outputs runs
       (DispatchMode.__torch_dispatch__ says why). */
    if (PyList_GET_SIZE(self->pending) > 0 && PyTuple_GET_SIZE(args[2]) > 0) {
        PyObject *first = PyTuple_GET_ITEM(args[2], 0);
        int hit = 0;
        for (Py_ssize_t i = 0; !hit && i < PyList_GET_SIZE(self->pending); i++) {
            PyObject *entry = PyList_GET_ITEM(self->pending, i);
            hit = PyTuple_Check(entry) && PyTuple_GET_SIZE(entry) > 0 && PyTuple_GET_ITEM(entry, 0) == first;
        }
        if (hit && flush_pending(self) < 0) {
            bookkeeping_failed(self);
            return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
        }
    }
    PyObject *op = PyObject_GetAttr(func, s_op);
    if (op == NULL)
        return NULL;
    PyObject *watched = PyObject_GetAttr(self->tracker, s_watched_ops);
    int is_watched = watched == NULL ? -1 : PySequence_Contains(watched, op);
    Py_XDECREF(watched);
    if (is_watched == 0 && op == self->sum_op) {
        /* In backward, the engine's gradient sums are judged in Python (gradsum.py): 0 in forward. */
        long long in_backward;
        is_watched = attr_ll(self->tracker, s_in_backward, &in_backward) < 0 ? -1 : in_backward != 0;
    }
    if (is_watched != 0) {
        Py_DECREF(op);
        return is_watched < 0 ? NULL : PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    }
    PyObject *out = memhint_call_traced(args[4], op, args[2], args[3]);
    if (out == NULL) {
        /* tracker.guard(tracker.on_op_error, func, error) unless disabled meanwhile; the error goes on. */
        Py_DECREF(op);
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb != NULL && value != NULL)
            PyException_SetTraceback(value, tb);
        PyObject *done = PyObject_CallFunctionObjArgs(self->on_error, func, value ? value : Py_None, NULL);
        if (done == NULL)
            PyErr_WriteUnraisable(self->on_error);
        Py_XDECREF(done);
        PyErr_Restore(type, value, tb);
        return NULL;
    }
    if (!PyObject_TypeCheck(out, (PyTypeObject *)self->tensor_type) && !PyTuple_Check(out) && !PyList_Check(out)) {
        Py_DECREF(op);
        return out;  /* sizes, scalars, None: nothing that can hold a storage */
    }
    int handled = handle_outputs(self, out);
    if (handled < 0 && !PyErr_ExceptionMatches(PyExc_Exception)) {
        /* KeyboardInterrupt and the like go on, as from the Python body's `except Exception`. */
        Py_DECREF(op);
        Py_DECREF(out);
        return NULL;
    }
    if (handled < 0)
        bookkeeping_failed(self);
    else if (handled == 0) {
        PyObject *done = PyObject_CallFunctionObjArgs(self->after, func, op, out, NULL);
        if (done == NULL) {
            Py_DECREF(op);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(done);
    }
    Py_DECREF(op);
    return out;
}

/* ---------------------------------------------------------------- the type */

static PyObject *
required(PyObject *obj, const char *name)
{
    return PyObject_GetAttrString(obj, name);
}

static PyObject *
DispatchCore_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *tracker, *slow, *after, *on_error, *failed, *detach, *consts;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "DispatchCore takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOOOOOO!:DispatchCore", &tracker, &slow, &after, &on_error, &failed, &detach,
                          &PyDict_Type, &consts))
        return NULL;
    DispatchCore *self = (DispatchCore *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = DispatchCore_vectorcall;
    PyObject *fixed[] = {tracker, slow, after, on_error, failed, detach};
    PyObject **slots[] = {&self->tracker, &self->slow, &self->after, &self->on_error, &self->failed, &self->detach};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        Py_INCREF(fixed[i]);
        *slots[i] = fixed[i];
    }
    self->bound_to = PyObject_GetAttrString(slow, "__self__");
    if (self->bound_to == NULL) {
        PyErr_Clear();
        Py_INCREF(Py_None);
        self->bound_to = Py_None;
    }
    PyObject *ledger = required(tracker, "ledger");
    PyObject *autograd = ledger ? required(tracker, "autograd") : NULL;
    PyObject *tracer = autograd ? required(tracker, "tracer") : NULL;
    PyObject *main_thread = tracer ? required(tracker, "main_thread") : NULL;
    PyObject *t0 = main_thread ? required(tracker, "t0") : NULL;
    int err = t0 == NULL;
    if (!err) {
        self->main_thread = PyLong_AsUnsignedLong(main_thread);
        self->t0 = PyFloat_AsDouble(t0);
        err = PyErr_Occurred() != NULL;
    }
#define FROM(target, obj, name) if (!err && ((target) = required((obj), (name))) == NULL) err = 1
    FROM(self->live, ledger, "live");
    FROM(self->young, ledger, "young");
    FROM(self->young_handles, ledger, "young_handles");
    FROM(self->old, ledger, "old");
    FROM(self->old_handles, ledger, "old_handles");
    FROM(self->pending, tracker, "pending");
    FROM(self->stack, tracker, "stack");
    FROM(self->timeline, tracker, "timeline");
    FROM(self->lines, tracker, "lines");
    FROM(self->bw_pending, autograd, "bw_pending");
    FROM(self->acc, tracker, "_acc");
    FROM(self->expired, tracker, "_expired");
    FROM(self->free_handle, tracker, "_free_handle");
    FROM(self->storage_of, tracker, "_storage_of");
    FROM(self->on_device, tracker, "_on_device");
    FROM(self->collect_stack_accs, tracker, "_collect_stack_accs");
    FROM(self->pop_returned, tracer, "pop_returned");
    FROM(self->current_node, autograd, "current_node");
    FROM(self->hook_for, autograd, "_hook_for");
#undef FROM
#define CONST(target, name) \
    if (!err && ((target) = PyDict_GetItemString(consts, (name))) == NULL) { \
        PyErr_Format(PyExc_KeyError, "DispatchCore: consts has no %s", (name)); \
        err = 1; \
    } else if (!err) Py_INCREF(target)
    CONST(self->tensor_type, "Tensor");
    CONST(self->parameter_type, "Parameter");
    CONST(self->rec_type, "StorageRec");
    CONST(self->untracked, "UNTRACKED");
    CONST(self->node_key, "NODE_KEY");
    CONST(self->module_key, "MODULE_KEY");
    CONST(self->perf_counter, "perf_counter");
    CONST(self->is_grad_enabled, "is_grad_enabled");
    CONST(self->sum_op, "sum_op");
#undef CONST
    if (!err && (!PyDict_Check(self->live) || !PyDict_Check(self->young) || !PyDict_Check(self->young_handles)
                 || !PyDict_Check(self->old) || !PyDict_Check(self->old_handles) || !PyList_Check(self->pending)
                 || !PyList_Check(self->stack) || !PyList_Check(self->timeline) || !PyDict_Check(self->lines)
                 || !PyDict_Check(self->bw_pending) || !PyType_Check(self->tensor_type))) {
        PyErr_SetString(PyExc_TypeError, "DispatchCore: the tracker's containers are not of the expected types");
        err = 1;
    }
    Py_XDECREF(ledger);
    Py_XDECREF(autograd);
    Py_XDECREF(tracer);
    Py_XDECREF(main_thread);
    Py_XDECREF(t0);
    if (err) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

#define CORE_MEMBERS(X) \
    X(tracker) X(bound_to) X(slow) X(after) X(on_error) X(failed) X(detach) X(live) X(young) X(young_handles) X(old) \
    X(old_handles) X(pending) X(stack) X(timeline) X(lines) X(bw_pending) X(acc) X(expired) X(free_handle) X(storage_of) X(on_device) \
    X(collect_stack_accs) X(pop_returned) X(current_node) X(hook_for) X(tensor_type) X(parameter_type) \
    X(rec_type) X(untracked) X(node_key) X(module_key) X(perf_counter) X(is_grad_enabled) X(accumulate_type) \
    X(sum_op)

static int
DispatchCore_traverse(DispatchCore *self, visitproc visit, void *arg)
{
#define VISIT(name) Py_VISIT(self->name);
    CORE_MEMBERS(VISIT)
#undef VISIT
    return 0;
}

static int
DispatchCore_clear(DispatchCore *self)
{
#define CLEAR(name) Py_CLEAR(self->name);
    CORE_MEMBERS(CLEAR)
#undef CLEAR
    return 0;
}

static void
DispatchCore_dealloc(DispatchCore *self)
{
    PyObject_GC_UnTrack(self);
    DispatchCore_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef DispatchCore_members[] = {
    {"__self__", T_OBJECT_EX, offsetof(DispatchCore, bound_to), READONLY, "the mode (slow's __self__)"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject DispatchCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "memhint_ctrace.DispatchCore",
    .tp_basicsize = sizeof(DispatchCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "DispatchCore(tracker, slow, after, on_error, failed, detach, consts): the dispatch mode's "
              "per-op bookkeeping in C (see _cdispatch.c).",
    .tp_new = DispatchCore_new,
    .tp_dealloc = (destructor)DispatchCore_dealloc,
    .tp_traverse = (traverseproc)DispatchCore_traverse,
    .tp_clear = (inquiry)DispatchCore_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(DispatchCore, vectorcall),
    .tp_members = DispatchCore_members,
};

int
memhint_dispatch_init(PyObject *module)
{
    static const struct { PyObject **target; const char *text; } names[] = {
        {&s_disabled, "disabled"}, {&s_watched_ops, "watched_ops"}, {&s_op, "_op"},
        {&s_in_backward, "in_backward"}, {&s_in_step, "in_step"}, {&s_returning, "returning"},
        {&s_events, "events"}, {&s_timeline, "timeline"}, {&s_modules, "modules"}, {&s_stack, "stack"},
        {&s_budget, "budget"}, {&s_budget_hit, "budget_hit"}, {&s_stack_accs, "_stack_accs"},
        {&s_node_hook, "node_hook"}, {&s_live_bytes, "live_bytes"}, {&s_serial, "serial"}, {&s_epoch, "epoch"},
        {&s_step_index, "step_index"}, {&s_step_peak, "step_peak"}, {&s_step_peak_at, "step_peak_at"},
        {&s_step_peak_index, "step_peak_index"}, {&s_step_peak_site, "step_peak_site"},
        {&s_step_peak_phase, "step_peak_phase"}, {&s_cdata, "_cdata"}, {&s_rec_cdata, "cdata"}, {&s_nbytes, "nbytes"},
        {&s_handle, "handle"}, {&s_site, "site"}, {&s_module, "module"}, {&s_t, "t"}, {&s_file, "file"},
        {&s_line, "line"}, {&s_func, "func"}, {&s_incl_max, "incl_max"}, {&s_self_max, "self_max"},
        {&s_self_c, "self_c"}, {&s_incl_c, "incl_c"}, {&s_counter, "_counter"}, {&s_grad_fn, "grad_fn"},
        {&s_tensor_ref, "tensor_ref"}, {&s_metadata, "metadata"}, {&s_register_hook, "register_hook"},
        {&s_next_functions, "next_functions"}, {&s_name, "__name__"}, {&s_weak_ref, "_weak_ref"},
        {&s_forward, "forward"}, {&s_other, "other"}, {&s_AccumulateGrad, "AccumulateGrad"},
        {&s_backward, "backward"}, {&s_bw_c, "bw_c"}, {&s_backward_start_live, "backward_start_live"},
        {&s_get, "get"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (*names[i].target == NULL && (*names[i].target = PyUnicode_InternFromString(names[i].text)) == NULL)
            return -1;
    }
    if (PyType_Ready(&DispatchCoreType) < 0)
        return -1;
    Py_INCREF(&DispatchCoreType);
    if (PyModule_AddObject(module, "DispatchCore", (PyObject *)&DispatchCoreType) < 0) {
        Py_DECREF(&DispatchCoreType);
        return -1;
    }
    return 0;
}
