/* crc32c(data, value=0) -> int: the CRC32C of any bytes-like `data`, continuing from `value`
 * (the crc32c package's signature, so native/__init__.py can offer either). Data of 32 KiB or
 * more is checksummed with the interpreter released, as that package does, so a read thread
 * verifying a large record does not hold up the event loop. available() says whether this CPU
 * has the SSE4.2 instruction (native/crc32c.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "crc32c.h"

#define RELEASE_GIL_FROM (32 * 1024)

static PyObject *crc32c(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer data;
    unsigned long value = 0;
    if (!PyArg_ParseTuple(args, "y*|k:crc32c", &data, &value))
        return NULL;
    uint32_t crc;
    if (data.len >= RELEASE_GIL_FROM) {
        Py_BEGIN_ALLOW_THREADS
        crc = crc32c_extend((uint32_t)value, data.buf, (size_t)data.len);
        Py_END_ALLOW_THREADS
    } else {
        crc = crc32c_extend((uint32_t)value, data.buf, (size_t)data.len);
    }
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(crc);
}

static PyObject *available(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return PyBool_FromLong(crc32c_available());
}

static PyMethodDef methods[] = {
    {"crc32c", crc32c, METH_VARARGS, "crc32c(data, value=0): CRC32C of data, continuing from value"},
    {"available", available, METH_NOARGS, "whether this CPU runs crc32c (SSE4.2)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "native._crc32c", "CRC32C with SSE4.2 (see native/__init__.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__crc32c(void) {
    return PyModule_Create(&module_def);
}
