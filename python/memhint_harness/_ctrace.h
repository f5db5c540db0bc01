/* What _ctrace.c shares with _cdispatch.c: both are compiled into one extension module (ctrace.py). */
#ifndef MEMHINT_CTRACE_H
#define MEMHINT_CTRACE_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* op(*args, **kwargs) with `tracer` (a CTracer, or None: a plain call) switched on around it, from code that
 * runs with it off (an Untraced call). `kwargs` may be NULL or Py_None. */
PyObject *memhint_call_traced(PyObject *tracer, PyObject *op, PyObject *args, PyObject *kwargs);

/* Adds _cdispatch.c's types to the module; -1 with an exception set on failure. */
int memhint_dispatch_init(PyObject *module);

/* Appends to `into` the records recs[key] whose weak handle handles[key] expired (_cexpiry.c); returns a
 * new reference to `into`, NULL with an exception set. */
PyObject *memhint_dead_records(PyObject *recs, PyObject *handles, PyObject *expired_fn, PyObject *into);

/* Adds _cexpiry.c's functions to the module; -1 with an exception set on failure. */
int memhint_expiry_init(PyObject *module);

#endif
