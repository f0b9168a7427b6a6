/* Native building of the records the journal and the entry logs share,
 * [u32 length][u32 crc32c][u64 ledger][u64 entry][data] big-endian, the CRC over the ids
 * then the data.
 *
 * frame_run(ledger_id, first_entry_id, entries, parts) -> (crcs, size)
 *
 * appends each entry's record header and then the entry itself to the list `parts` (the
 * journal writes them with one pwritev), and returns the records' CRCs (native u32s, for an
 * array('I')) and their total size. The journal thread did this in Python, a few calls per
 * entry while holding the interpreter the event loop needs. available() says whether this CPU
 * has the CRC instruction it uses (SSE4.2).
 *
 * pack_records(entries, crcs, start, room, ledger_id, first_entry_id, log_tag, offset, into, at)
 *     -> (stop, end, words)
 *
 * takes entries[start:stop], as many as fit in `room` bytes of records (at least one), and
 * writes them into the writable buffer `into` from `at` to `end` as records with the journal's
 * CRCs; it returns their index words, two native u64 each: (log_tag | length, offset of the
 * record), the record of entries[start] at `offset`. entries[i] has the id first_entry_id + i.
 * The bytes are what the Python path builds; the copying runs with the interpreter released,
 * so a checkpoint of a few hundred thousand entries does not hold the event loop for a pass
 * per entry. The caller reuses `into`: a fresh megabyte per chunk was fresh memory, faulted in
 * page by page.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "crc32c.h"

#define HEADER_SIZE 24

static inline void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void put_be64(uint8_t *p, uint64_t v) {
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

static PyObject *frame_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 4 || !PyList_Check(args[2]) || !PyList_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "frame_run(ledger_id, first_entry_id, entries: list[bytes], parts: list)");
        return NULL;
    }
    uint64_t ledger_id = PyLong_AsUnsignedLongLongMask(args[0]);
    uint64_t entry_id = PyLong_AsUnsignedLongLongMask(args[1]);
    if (PyErr_Occurred())
        return NULL;
    PyObject *entries = args[2], *parts = args[3];
    Py_ssize_t count = PyList_GET_SIZE(entries), size = 0;
    PyObject *crcs = PyBytes_FromStringAndSize(NULL, 4 * count);
    if (crcs == NULL)
        return NULL;
    uint32_t *crc_out = (uint32_t *)PyBytes_AS_STRING(crcs);
    for (Py_ssize_t i = 0; i < count; i++, entry_id++) {
        PyObject *data = PyList_GET_ITEM(entries, i);
        if (!PyBytes_Check(data)) {
            PyErr_SetString(PyExc_TypeError, "entries must be bytes");
            goto fail;
        }
        Py_ssize_t length = PyBytes_GET_SIZE(data);
        PyObject *header = PyBytes_FromStringAndSize(NULL, HEADER_SIZE);
        if (header == NULL)
            goto fail;
        uint8_t *h = (uint8_t *)PyBytes_AS_STRING(header);
        put_be64(h + 8, ledger_id);
        put_be64(h + 16, entry_id);
        uint32_t crc = crc32c_extend(crc32c_extend(0, h + 8, 16), (const uint8_t *)PyBytes_AS_STRING(data),
                                     (size_t)length);
        put_be32(h, (uint32_t)length);
        put_be32(h + 4, crc);
        crc_out[i] = crc;
        int failed = PyList_Append(parts, header) < 0 || PyList_Append(parts, data) < 0;
        Py_DECREF(header);
        if (failed)
            goto fail;
        size += HEADER_SIZE + length;
    }
    PyObject *result = Py_BuildValue("Nn", crcs, size);
    return result;
fail:
    Py_DECREF(crcs);
    return NULL;
}

static PyObject *available(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return PyBool_FromLong(crc32c_available());
}

typedef struct {
    PyObject *object;
    const char *data;
    Py_ssize_t size;
} entry_ref;

static PyObject *pack_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 10 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "pack_records(entries: list[bytes], crcs, start, room, ledger_id, "
                                         "first_entry_id, log_tag, offset, into, at)");
        return NULL;
    }
    PyObject *entries = args[0];
    Py_ssize_t start = PyLong_AsSsize_t(args[2]), room = PyLong_AsSsize_t(args[3]);
    uint64_t ledger_id = PyLong_AsUnsignedLongLongMask(args[4]);
    uint64_t first_entry_id = PyLong_AsUnsignedLongLongMask(args[5]);
    uint64_t log_tag = PyLong_AsUnsignedLongLongMask(args[6]);
    uint64_t offset = PyLong_AsUnsignedLongLongMask(args[7]);
    Py_ssize_t at = PyLong_AsSsize_t(args[9]);
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(entries);
    if (start < 0 || start >= count) {
        PyErr_SetString(PyExc_ValueError, "start outside the entries");
        return NULL;
    }
    Py_buffer crcs, into;
    if (PyObject_GetBuffer(args[1], &crcs, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[8], &into, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&crcs);
        return NULL;
    }
    PyObject *result = NULL, *words = NULL;
    entry_ref *refs = NULL;
    if (crcs.itemsize != 4 || crcs.format == NULL || strcmp(crcs.format, "I") != 0
            || crcs.len / 4 < count) {
        PyErr_SetString(PyExc_TypeError, "crcs must be an array('I') as long as the entries");
        goto done;
    }
    /* Which entries fit; then a reference to each, held while the copy runs released. */
    Py_ssize_t stop = start, total = 0;
    while (stop < count) {
        PyObject *item = PyList_GET_ITEM(entries, stop);
        if (!PyBytes_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "entries must be bytes");
            goto done;
        }
        Py_ssize_t record = HEADER_SIZE + PyBytes_GET_SIZE(item);
        if (stop > start && total + record > room)
            break;
        total += record;
        stop++;
    }
    if (at < 0 || total > into.len - at) {
        PyErr_SetString(PyExc_ValueError, "the records do not fit the buffer from `at`");
        goto done;
    }
    refs = PyMem_RawMalloc(sizeof(entry_ref) * (size_t)(stop - start));
    words = PyBytes_FromStringAndSize(NULL, 16 * (stop - start));
    if (refs == NULL || words == NULL) {
        if (refs == NULL)
            PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = start; i < stop; i++) {
        PyObject *item = PyList_GET_ITEM(entries, i);
        refs[i - start] = (entry_ref){Py_NewRef(item), PyBytes_AS_STRING(item), PyBytes_GET_SIZE(item)};
    }
    const uint32_t *crc = (const uint32_t *)crcs.buf;
    uint8_t *out = (uint8_t *)into.buf + at;
    uint64_t *word = (uint64_t *)PyBytes_AS_STRING(words);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = start; i < stop; i++) {
        const entry_ref *ref = &refs[i - start];
        put_be32(out, (uint32_t)ref->size);
        put_be32(out + 4, crc[i]);
        put_be64(out + 8, ledger_id);
        put_be64(out + 16, first_entry_id + (uint64_t)i);
        memcpy(out + HEADER_SIZE, ref->data, (size_t)ref->size);
        *word++ = log_tag | (uint64_t)ref->size;
        *word++ = offset;
        offset += HEADER_SIZE + (uint64_t)ref->size;
        out += HEADER_SIZE + ref->size;
    }
    Py_END_ALLOW_THREADS
    for (Py_ssize_t i = start; i < stop; i++)
        Py_DECREF(refs[i - start].object);
    result = Py_BuildValue("nnO", stop, at + total, words);
done:
    PyMem_RawFree(refs);
    Py_XDECREF(words);
    PyBuffer_Release(&into);
    PyBuffer_Release(&crcs);
    return result;
}

static PyMethodDef methods[] = {
    {"frame_run", (PyCFunction)(void (*)(void))frame_run, METH_FASTCALL,
     "frame_run(ledger_id, first_entry_id, entries, parts) -> (crcs, size)"},
    {"available", available, METH_NOARGS, "whether this CPU runs frame_run (SSE4.2)"},
    {"pack_records", (PyCFunction)(void (*)(void))pack_records, METH_FASTCALL,
     "pack_records(entries, crcs, start, room, ledger_id, first_entry_id, log_tag, offset, into, at) "
     "-> (stop, end, words)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "bookkeeper._records",
    "Native building of journal and entry-log records (see bookkeeper/journal.py, entry_log.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__records(void) {
    return PyModule_Create(&module_def);
}
