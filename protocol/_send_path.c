/* Native fast path for the commonest frames: a plain SEND with a checksummed entry, and the
 * SEND_RECEIPT that answers it.
 *
 * scan_sends(chunk, offset, max_frame_size, send_type, out) walks whole frames of `chunk`
 * from `offset`, appends a `send_type` tuple for each SEND it can vouch for, and returns
 * the offset of the first frame it leaves alone: an incomplete one, or one that is not a
 * SEND of the shape below. Python (protocol/codec.py) decodes that frame as before, so
 * this file never raises a protocol error and never decides one: it accepts only frames
 * that the Python path would decode to exactly the same tuple without error, and leaves
 * everything else (unknown or repeated fields, a transaction's id (its SENDs go to the
 * broker's transactional path), metadata with encryption keys, odd varints, bad UTF-8, a missing
 * required field...) to it.
 *
 * The shape: BaseCommand {type = SEND, send}, CommandSend of scalar fields 1-8 but the txnid
 * bits (4, 5), then an entry
 * [u16 0x0e01][u32 crc32c][u32 metaSize][MessageMetadata][payload] whose metadata holds only
 * scalar, string and bytes fields and KeyValue properties. A checksum mismatch is reported
 * (checksum_ok False) without looking at the metadata, as the Python path does.
 *
 * encode_receipt(producer_id, sequence_id, highest_sequence_id, ledger_id, entry_id) returns
 * the SEND_RECEIPT frame, byte for byte what protobuf serialises for protocol/receipts.py's
 * command (fields in number order, ids as uint64 varints, negative ids two's complement).
 *
 * Written for x86-64: the CRC32C uses the SSE4.2 instruction, and where the CPU lacks it
 * `available()` is False and the codec does not call scan_sends. Elsewhere the build of
 * this optional extension fails and pulsard decodes every frame in Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include "crc32c.h"

#define SEND_TYPE 6
#define ENTRY_MAGIC 0x0e01
#define ENTRY_HEADER 10 /* magic, crc32c, metaSize */

enum wire_type { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} reader;

static inline uint32_t be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* A varint of at most 10 bytes whose value fits 64 bits; anything else is left to Python. */
static inline int read_varint(reader *r, uint64_t *out) {
    uint64_t value = 0;
    for (int shift = 0; shift < 64 && r->p < r->end; shift += 7) {
        uint8_t byte = *r->p++;
        if (shift == 63 && byte > 1)
            return 0;
        value |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *out = value;
            return 1;
        }
    }
    return 0;
}

/* A field's tag; 0 at a malformed tag or field number 0. */
static inline int read_tag(reader *r, uint32_t *number, uint32_t *wire) {
    uint64_t tag;
    if (!read_varint(r, &tag) || tag > UINT32_MAX || (tag >> 3) == 0)
        return 0;
    *number = (uint32_t)(tag >> 3);
    *wire = (uint32_t)(tag & 7);
    return 1;
}

/* A length-delimited field's bytes, as a sub-reader. */
static inline int read_len(reader *r, reader *sub) {
    uint64_t size;
    if (!read_varint(r, &size) || size > (uint64_t)(r->end - r->p))
        return 0;
    sub->p = r->p;
    sub->end = r->p + size;
    r->p = sub->end;
    return 1;
}

/* Valid UTF-8, judged by CPython's strict decoder (the rules upb's check applies too). */
static int valid_utf8(const reader *s) {
    for (const uint8_t *q = s->p; q < s->end; q++) {
        if (*q & 0x80) {
            PyObject *text = PyUnicode_DecodeUTF8((const char *)s->p, s->end - s->p, "strict");
            if (text == NULL) {
                PyErr_Clear();
                return 0;
            }
            Py_DECREF(text);
            return 1;
        }
    }
    return 1;
}

static int read_string(reader *r, uint32_t wire) {
    reader s;
    return wire == WT_LEN && read_len(r, &s) && valid_utf8(&s);
}

/* KeyValue {required string key = 1; required string value = 2;} */
static int check_key_value(reader *r) {
    unsigned seen = 0;
    uint32_t number, wire;
    while (r->p < r->end) {
        if (!read_tag(r, &number, &wire) || (number != 1 && number != 2) || !read_string(r, wire))
            return 0;
        seen |= 1u << number;
    }
    return seen == 6;
}

enum field_kind { NONE, VARINT, STRING, BYTES, KEY_VALUE };

/* MessageMetadata fields this file checks; the rest (encryption keys, compacted batch
 * indexes, unknown numbers) send the frame to Python. */
static const uint8_t METADATA_FIELDS[33] = {
    [1] = STRING, [2] = VARINT, [3] = VARINT, [4] = KEY_VALUE, [5] = STRING, [6] = STRING,
    [7] = STRING, [8] = VARINT, [9] = VARINT, [11] = VARINT, [12] = VARINT, [14] = STRING,
    [15] = BYTES, [16] = BYTES, [17] = VARINT, [18] = BYTES, [19] = VARINT, [20] = VARINT,
    [22] = VARINT, [23] = VARINT, [24] = VARINT, [25] = VARINT, [26] = STRING, [27] = VARINT,
    [28] = VARINT, [29] = VARINT, [30] = VARINT, [32] = BYTES,
};

/* Parses as MessageMetadata with producer_name, sequence_id and publish_time present. */
static int check_metadata(reader r) {
    unsigned required = 0;
    uint32_t number, wire;
    uint64_t value;
    reader sub;
    while (r.p < r.end) {
        if (!read_tag(&r, &number, &wire) || number >= sizeof(METADATA_FIELDS))
            return 0;
        switch (METADATA_FIELDS[number]) {
        case VARINT:
            if (wire != WT_VARINT || !read_varint(&r, &value))
                return 0;
            break;
        case STRING:
            if (!read_string(&r, wire))
                return 0;
            break;
        case BYTES:
            if (wire != WT_LEN || !read_len(&r, &sub))
                return 0;
            break;
        case KEY_VALUE:
            if (wire != WT_LEN || !read_len(&r, &sub) || !check_key_value(&sub))
                return 0;
            break;
        default:
            return 0;
        }
        if (number <= 3)
            required |= 1u << number;
    }
    return required == 14;
}

typedef struct {
    uint64_t producer_id, sequence_id, highest_sequence_id;
    int32_t num_messages;
    int is_chunk;
} send_fields;

/* CommandSend of scalar fields only (no message_id, no txnid bits), each at most once, required
 * ones set. */
static int read_send(reader r, send_fields *send) {
    unsigned seen = 0;
    uint32_t number, wire;
    uint64_t value;
    *send = (send_fields){.num_messages = 1};
    while (r.p < r.end) {
        if (!read_tag(&r, &number, &wire) || number < 1 || number > 8 || number == 4 || number == 5
                || wire != WT_VARINT
                || (seen & (1u << number)) || !read_varint(&r, &value))
            return 0;
        seen |= 1u << number;
        switch (number) {
        case 1: send->producer_id = value; break;
        case 2: send->sequence_id = value; break;
        case 3: send->num_messages = (int32_t)(uint32_t)value; break;
        case 6: send->highest_sequence_id = value; break;
        case 7: send->is_chunk = value != 0; break;
        default: break;   /* marker: not read by the broker */
        }
    }
    if ((seen & 6) != 6)
        return 0;
    if (!(seen & (1u << 6)))
        send->highest_sequence_id = send->sequence_id;
    return 1;
}

/* BaseCommand {type = SEND (1), send (6)}, each exactly once, nothing else. */
static int read_command(reader r, send_fields *send) {
    int have_type = 0, have_send = 0;
    uint32_t number, wire;
    uint64_t value;
    reader body = {NULL, NULL};
    while (r.p < r.end) {
        if (!read_tag(&r, &number, &wire))
            return 0;
        if (number == 1 && wire == WT_VARINT && !have_type) {
            if (!read_varint(&r, &value) || value != SEND_TYPE)
                return 0;
            have_type = 1;
        } else if (number == 6 && wire == WT_LEN && !have_send) {
            if (!read_len(&r, &body))
                return 0;
            have_send = 1;
        } else {
            return 0;
        }
    }
    return have_type && have_send && read_send(body, send);
}

/* The tuple for one accepted SEND: the fields of protocol.codec.Send, in its order. */
static PyObject *make_send(PyTypeObject *send_type, const send_fields *send, const uint8_t *entry,
                           Py_ssize_t entry_size, int checksum_ok) {
    PyObject *tuple = send_type->tp_alloc(send_type, 8);
    if (tuple == NULL)
        return NULL;
    PyObject *items[8] = {
        PyLong_FromUnsignedLongLong(send->producer_id),
        PyLong_FromUnsignedLongLong(send->sequence_id),
        PyLong_FromUnsignedLongLong(send->highest_sequence_id),
        PyLong_FromLong(send->num_messages),
        PyBool_FromLong(send->is_chunk),
        PyBytes_FromStringAndSize((const char *)entry, entry_size),
        PyBool_FromLong(checksum_ok),
        Py_NewRef(Py_None),
    };
    for (int i = 0; i < 8; i++) {
        if (items[i] == NULL) {
            for (int j = 0; j < 8; j++)
                Py_XDECREF(items[j]);
            Py_DECREF(tuple);
            return NULL;
        }
    }
    for (int i = 0; i < 8; i++)
        PyTuple_SET_ITEM(tuple, i, items[i]);
    return tuple;
}

/* One frame at `frame` (`available` bytes on): 1 accepted (appended, *size set), 0 left to
 * Python, -1 error (MemoryError and the like). */
static int scan_one(const uint8_t *frame, Py_ssize_t available, Py_ssize_t max_frame_size,
                    PyTypeObject *send_type, PyObject *out, Py_ssize_t *size) {
    if (available < 8)
        return 0;
    uint32_t total = be32(frame), command_size = be32(frame + 4);
    if (total > (uint64_t)max_frame_size || total < 4 || (Py_ssize_t)total + 4 > available
            || command_size == 0 || (uint64_t)command_size + 4 > total)
        return 0;
    send_fields send;
    const uint8_t *command = frame + 8, *entry = command + command_size, *end = frame + 4 + total;
    if (!read_command((reader){command, entry}, &send))
        return 0;
    Py_ssize_t entry_size = end - entry;
    if (entry_size < ENTRY_HEADER || ((entry[0] << 8) | entry[1]) != ENTRY_MAGIC)
        return 0;
    int checksum_ok = crc32c_extend(0, entry + 6, entry_size - 6) == be32(entry + 2);
    if (checksum_ok) {
        uint32_t metadata_size = be32(entry + 6);
        if (metadata_size == 0 || metadata_size > (uint64_t)(entry_size - ENTRY_HEADER))
            return 0;
        reader metadata = {entry + ENTRY_HEADER, entry + ENTRY_HEADER + metadata_size};
        if (!check_metadata(metadata))
            return 0;
    }
    PyObject *tuple = make_send(send_type, &send, entry, entry_size, checksum_ok);
    if (tuple == NULL)
        return -1;
    int appended = PyList_Append(out, tuple);
    Py_DECREF(tuple);
    if (appended < 0)
        return -1;
    *size = (Py_ssize_t)total + 4;
    return 1;
}

static PyObject *scan_sends(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !PyBytes_Check(args[0]) || !PyType_Check(args[3]) || !PyList_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "scan_sends(chunk: bytes, offset, max_frame_size, send_type, out: list)");
        return NULL;
    }
    Py_ssize_t offset = PyLong_AsSsize_t(args[1]), max_frame_size = PyLong_AsSsize_t(args[2]);
    if ((offset == -1 || max_frame_size == -1) && PyErr_Occurred())
        return NULL;
    PyTypeObject *send_type = (PyTypeObject *)args[3];
    if (!PyType_IsSubtype(send_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "send_type must be a tuple type");
        return NULL;
    }
    const uint8_t *data = (const uint8_t *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t length = PyBytes_GET_SIZE(args[0]);
    if (offset < 0 || offset > length) {
        PyErr_SetString(PyExc_ValueError, "offset outside the chunk");
        return NULL;
    }
    Py_ssize_t size;
    int result;
    while ((result = scan_one(data + offset, length - offset, max_frame_size, send_type, args[4], &size)) > 0)
        offset += size;
    if (result < 0)
        return NULL;
    return PyLong_FromSsize_t(offset);
}

static inline uint8_t *put_varint(uint8_t *p, uint64_t value) {
    while (value >= 0x80) {
        *p++ = (uint8_t)value | 0x80;
        value >>= 7;
    }
    *p++ = (uint8_t)value;
    return p;
}

#define SEND_RECEIPT_TYPE 7
#define MAX_VARINT 10

static PyObject *encode_receipt(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "encode_receipt(producer_id, sequence_id, highest_sequence_id, ledger_id, entry_id)");
        return NULL;
    }
    uint64_t ids[5];
    for (int i = 0; i < 5; i++) {
        ids[i] = PyLong_AsUnsignedLongLongMask(args[i]);
        if (ids[i] == (uint64_t)-1 && PyErr_Occurred())
            return NULL;
    }
    /* MessageIdData {ledgerId = 1; entryId = 2} */
    uint8_t message_id[2 + 2 * MAX_VARINT], *m = message_id;
    *m++ = 1 << 3 | WT_VARINT;
    m = put_varint(m, ids[3]);
    *m++ = 2 << 3 | WT_VARINT;
    m = put_varint(m, ids[4]);
    /* CommandSendReceipt {producer_id = 1; sequence_id = 2; message_id = 3; highest_sequence_id = 4} */
    uint8_t receipt[8 + 4 * MAX_VARINT + sizeof(message_id)], *r = receipt;
    *r++ = 1 << 3 | WT_VARINT;
    r = put_varint(r, ids[0]);
    *r++ = 2 << 3 | WT_VARINT;
    r = put_varint(r, ids[1]);
    *r++ = 3 << 3 | WT_LEN;
    *r++ = (uint8_t)(m - message_id);
    memcpy(r, message_id, m - message_id);
    r += m - message_id;
    *r++ = 4 << 3 | WT_VARINT;
    r = put_varint(r, ids[2]);
    /* [u32 total][u32 command size] BaseCommand {type = SEND_RECEIPT; send_receipt = 7} */
    uint8_t frame[8 + 3 + sizeof(receipt)], *f = frame + 8;
    *f++ = 1 << 3 | WT_VARINT;
    *f++ = SEND_RECEIPT_TYPE;
    *f++ = 7 << 3 | WT_LEN;
    *f++ = (uint8_t)(r - receipt);
    memcpy(f, receipt, r - receipt);
    f += r - receipt;
    uint32_t command_size = (uint32_t)(f - frame - 8), total = command_size + 4;
    for (int i = 0; i < 4; i++) {
        frame[i] = (uint8_t)(total >> (24 - 8 * i));
        frame[4 + i] = (uint8_t)(command_size >> (24 - 8 * i));
    }
    return PyBytes_FromStringAndSize((const char *)frame, f - frame);
}

static PyObject *available(PyObject *module, PyObject *unused) {
    return PyBool_FromLong(crc32c_available());
}

static PyMethodDef methods[] = {
    {"scan_sends", (PyCFunction)(void (*)(void))scan_sends, METH_FASTCALL,
     "scan_sends(chunk, offset, max_frame_size, send_type, out) -> offset of the first frame not taken"},
    {"encode_receipt", (PyCFunction)(void (*)(void))encode_receipt, METH_FASTCALL,
     "encode_receipt(producer_id, sequence_id, highest_sequence_id, ledger_id, entry_id) -> SEND_RECEIPT frame"},
    {"available", available, METH_NOARGS, "Whether this CPU has the instruction scan_sends needs."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "protocol._send_path",
    "Native fast path for plain SEND frames and their receipts (see protocol/codec.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__send_path(void) {
    return PyModule_Create(&module_def);
}
