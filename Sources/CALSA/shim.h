#ifndef SPINET_CALSA_SHIM_H
#define SPINET_CALSA_SHIM_H
#include <alsa/asoundlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

// What Swift cannot see of alsa-lib: the snd_seq_ev_* macros, the packed
// snd_seq_ev_ext_t (SysEx payload), and snd_lib_error_set_handler, whose
// callback is variadic. Everything here is static inline: no C target needed.

// MARK: sequencer events

/// Length of an event's variable-length payload (SysEx), 0 if it has none.
static inline unsigned int spinet_seq_ev_ext_len(const snd_seq_event_t *ev) {
    if ((ev->flags & SND_SEQ_EVENT_LENGTH_MASK) != SND_SEQ_EVENT_LENGTH_VARIABLE) return 0;
    return ev->data.ext.len;
}

/// The payload bytes of a variable-length event; valid until the next
/// snd_seq_event_input call.
static inline const unsigned char *spinet_seq_ev_ext_ptr(const snd_seq_event_t *ev) {
    if ((ev->flags & SND_SEQ_EVENT_LENGTH_MASK) != SND_SEQ_EVENT_LENGTH_VARIABLE) return NULL;
    return (const unsigned char *)ev->data.ext.ptr;
}

/// snd_seq_ev_clear + snd_seq_ev_set_sysex (used by tests to build events).
static inline void spinet_seq_ev_set_sysex(snd_seq_event_t *ev, unsigned int len, const void *ptr) {
    memset(ev, 0, sizeof(*ev));
    ev->type = SND_SEQ_EVENT_SYSEX;
    ev->flags = SND_SEQ_EVENT_LENGTH_VARIABLE;
    ev->data.ext.len = len;
    ev->data.ext.ptr = (void *)ptr;
}

/// Marks an event as stamped with a queue's real time (what the kernel does
/// on a port with real-time timestamping).
static inline void spinet_seq_ev_set_real_time(snd_seq_event_t *ev, unsigned char queue,
                                               unsigned int sec, unsigned int nsec) {
    ev->queue = queue;
    ev->flags = (ev->flags & ~SND_SEQ_TIME_STAMP_MASK) | SND_SEQ_TIME_STAMP_REAL;
    ev->time.time.tv_sec = sec;
    ev->time.time.tv_nsec = nsec;
}

static inline int spinet_seq_ev_is_real_time(const snd_seq_event_t *ev) {
    return (ev->flags & SND_SEQ_TIME_STAMP_MASK) == SND_SEQ_TIME_STAMP_REAL;
}

// MARK: alsa-lib's error messages

// alsa-lib prints its own diagnostics to stderr ("ALSA lib pcm.c:2666:...
// Unknown PCM hw:9,0") before returning an error code. Spinet reports errors
// in one line of its own, so the handler keeps only the last message.
static inline char *spinet_alsa_last_error_text(void) {
    static char text[256];
    return text;
}

static void spinet_alsa_error_handler(const char *file, int line, const char *function,
                                      int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(spinet_alsa_last_error_text(), 256, fmt, ap);
    va_end(ap);
}

/// Installs the quiet handler (once, before any other ALSA call).
static inline void spinet_alsa_quiet_errors(void) {
    snd_lib_error_set_handler(spinet_alsa_error_handler);
}

/// The last message alsa-lib raised (empty if none); clears it.
static inline void spinet_alsa_take_last_error(char *buffer, size_t size) {
    if (size == 0) return;
    strncpy(buffer, spinet_alsa_last_error_text(), size - 1);
    buffer[size - 1] = 0;
    spinet_alsa_last_error_text()[0] = 0;
}

#endif
