/* CRC32C (Castagnoli) with the SSE4.2 instruction, for pulsard's optional native modules
 * (protocol/_send_path.c: entry checksums; bookkeeper/_records.c: record CRCs). A caller
 * runs it only where crc32c_available() says the CPU has the instruction; off x86-64 the
 * build stops here and pulsard takes its Python paths. */
#ifndef PULSARD_CRC32C_H
#define PULSARD_CRC32C_H

#if !defined(__x86_64__) || !(defined(__GNUC__) || defined(__clang__))
#error "pulsard's native modules are written for x86-64 (gcc or clang); pulsard runs on its Python paths"
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <nmmintrin.h>

/* CRC32C of n more bytes, continuing from crc (0 to start). */
__attribute__((target("sse4.2")))
static inline uint32_t crc32c_extend(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t state = (uint32_t)~crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        state = _mm_crc32_u64(state, word);
    }
    uint32_t tail = (uint32_t)state;
    for (; n; n--, p++)
        tail = _mm_crc32_u8(tail, *p);
    return ~tail;
}

static inline int crc32c_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2");
}

#endif
