/* Which live storages died: the scan of the ledger's weak handles, in C (issue #17). Compiled into the
 * extension of _ctrace.c (ctrace.py); ledger.py's StorageLedger.expired is the reference and the fallback.
 *
 * Why: the tracker checks every young storage's weak handle before each allocation (and every storage at
 * each traced line) so that the live level is exact at every allocation. Through torch's
 * `UntypedStorage._expired(handle)` each check is a Python-level call of about 100 ns: with a few hundred
 * activations live during a model's forward, tens of microseconds per allocation.
 *
 * A handle is the address of the storage's c10::StorageImpl, kept allocated by the weak reference that
 * `_weak_ref()` took; `_expired` is `use_count() == 0`, the strong count of its intrusive_ptr_target. Where
 * expiry.py's calibration has shown, on real storages and against `_expired`'s own answers, that this
 * torch's strong count is the low 32 bits of the word after the vtable pointer, `direct` mode reads that word
 * instead of calling `_expired`; otherwise (another layout, a failed check) every handle goes to `_expired`.
 */
#include "_ctrace.h"
#include <stdint.h>
#include <string.h>

static int direct = 0;  /* set by expiry.py's calibration (set_direct_expiry) */

static uint32_t
strong_count(void *impl)
{
    uint64_t word;
    memcpy(&word, (char *)impl + sizeof(void *), sizeof(word));
    return (uint32_t)word;
}

/* 1 expired, 0 alive, -1 with an exception set. */
static int
is_expired(PyObject *handle, PyObject *expired_fn)
{
    if (direct) {
        void *impl = PyLong_AsVoidPtr(handle);
        if (impl == NULL && PyErr_Occurred())
            return -1;
        if (impl != NULL)
            return strong_count(impl) == 0;
    }
    PyObject *answer = PyObject_CallOneArg(expired_fn, handle);
    if (answer == NULL)
        return -1;
    int gone = PyObject_IsTrue(answer);
    Py_DECREF(answer);
    return gone;
}

PyObject *
memhint_dead_records(PyObject *recs, PyObject *handles, PyObject *expired_fn, PyObject *into)
{
    if (!PyDict_Check(recs) || !PyDict_Check(handles) || !PyList_Check(into)) {
        PyErr_SetString(PyExc_TypeError, "dead_records(recs: dict, handles: dict, expired, into: list)");
        return NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *handle;
    while (PyDict_Next(handles, &pos, &key, &handle)) {
        int gone = is_expired(handle, expired_fn);
        if (gone < 0)
            return NULL;
        if (!gone)
            continue;
        PyObject *rec = PyDict_GetItemWithError(recs, key);
        if (rec == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_KeyError, "memhint: a handle without its record");
            return NULL;
        }
        if (PyList_Append(into, rec) < 0)
            return NULL;
    }
    Py_INCREF(into);
    return into;
}

/* dead_records(recs, handles, expired, into): appends to `into` the records (recs[key]) whose handle
 * (handles[key]) expired, in the handles' order, and returns it. */
static PyObject *
expiry_dead_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "dead_records(recs, handles, expired, into)");
        return NULL;
    }
    return memhint_dead_records(args[0], args[1], args[2], args[3]);
}

/* strong_count(handle): the word direct mode would read (calibration only). */
static PyObject *
expiry_strong_count(PyObject *module, PyObject *handle)
{
    void *impl = PyLong_AsVoidPtr(handle);
    if (impl == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "strong_count: a null handle");
        return NULL;
    }
    return PyLong_FromUnsignedLong(strong_count(impl));
}

static PyObject *
expiry_set_direct(PyObject *module, PyObject *flag)
{
    int truth = PyObject_IsTrue(flag);
    if (truth < 0)
        return NULL;
    direct = truth;
    Py_RETURN_NONE;
}

static PyObject *
expiry_get_direct(PyObject *module, PyObject *unused)
{
    return PyBool_FromLong(direct);
}

static PyMethodDef expiry_methods[] = {
    {"dead_records", (PyCFunction)(void (*)(void))expiry_dead_records, METH_FASTCALL,
     "dead_records(recs, handles, expired, into): the records whose weak handle expired, appended to into."},
    {"strong_count", (PyCFunction)expiry_strong_count, METH_O,
     "strong_count(handle): the strong count that direct mode reads (for expiry.py's calibration)."},
    {"set_direct_expiry", (PyCFunction)expiry_set_direct, METH_O,
     "set_direct_expiry(flag): read strong counts instead of calling _expired (after calibration)."},
    {"direct_expiry", (PyCFunction)expiry_get_direct, METH_NOARGS, "whether direct mode is on"},
    {NULL, NULL, 0, NULL},
};

int
memhint_expiry_init(PyObject *module)
{
    return PyModule_AddFunctions(module, expiry_methods);
}
