// Spinet as a CLAP plugin: the glue between CLAP (the vendored headers in
// CCLAP) and the plugin core's C API (spinet_plugin.h, implemented in Swift).
// Written in C because `clap_entry` must be a data symbol, which Swift's
// @_cdecl cannot export.
//
// Threads, as CLAP names them:
//   - main thread: create, init, destroy, activate, deactivate, params
//     (when inactive), state, latency, preset-load, on_main_thread;
//   - audio thread: start/stop_processing, reset, process, params.flush
//     while active. process allocates nothing and takes no lock;
//   - the core's loader thread: SoundFont loads asked for (preset-load)
//     are the core's, so that neither the audio thread nor the main thread
//     waits for a font to be read and prepared; it calls font_loaded when
//     one is done, and on_main_thread takes the result.
// `core_lock` guards the core pointer, which the main thread replaces
// (create, a new rate, destroy). It is never taken on the audio thread.
//
// The core is created lazily at the first call that needs it (activate,
// state save/load, a parameter flush or a font choice while inactive) at the
// rate of the last activation (48 kHz before the first), and created again,
// carrying its state over, when the host activates it at another rate: the
// core takes its rate at creation, CLAP gives the rate at activation.
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clap/clap.h"
#include "spinet_clap.h"
#include "spinet_plugin.h"

#define SPINET_CLAP_DEFAULT_RATE 48000.0
// Events one process call can take (MIDI, note and SysEx). More in one block
// are dropped (counted, and logged later from the main thread): process
// cannot allocate.
#define SPINET_CLAP_MAX_EVENTS 4096

// ---------------------------------------------------------------------------
// The entry: the directory of the .clap file, where the core looks for its
// bundled SoundFont first (SoundFonts/sf_GMbank.sf2 beside the plugin).

static char bundle_dir[4096];
static int entry_init_count;
static pthread_mutex_t entry_lock = PTHREAD_MUTEX_INITIALIZER;

// ---------------------------------------------------------------------------
// One instance.

typedef struct spinet_clap {
    clap_plugin_t plugin;
    const clap_host_t *host;
    const clap_host_log_t *host_log;
    const clap_host_state_t *host_state;
    const clap_host_preset_load_t *host_preset_load;
    const clap_host_note_name_t *host_note_name;

    // The drum kit's key names (note-name), from the core's name table;
    // rebuilt on the main thread when `names_stale` (a new core, a font
    // change, a restored state).
    clap_note_name_t *note_names;
    uint32_t note_name_count;
    bool names_stale;

    spinet_plugin *core;
    double core_rate;
    bool active;
    char *pending_font;              // chosen while no core existed (main thread)
    pthread_mutex_t core_lock;

    // process' scratch, allocated at init.
    spinet_midi_event *events;
    uint8_t *bytes;                  // the channel messages' bytes, 3 per event
    uint32_t event_count;
    uint32_t bytes_used;             // reset once per process call, not per segment
    uint16_t held[128];              // channels holding each key (CLAP note-ons), for wildcard note-offs
    double tempo;                    // the last tempo given to the core (0: none yet); audio thread
    atomic_bool reset_requested;
    atomic_uint dropped_events;
} spinet_clap;

static spinet_clap *instance_of(const clap_plugin_t *plugin) { return (spinet_clap *)plugin->plugin_data; }

static void instance_log(spinet_clap *s, clap_log_severity severity, const char *line) {
    if (s != NULL && s->host_log != NULL && s->host_log->log != NULL) {
        s->host_log->log(s->host, severity, line);
    } else {
        fprintf(stderr, "spinet: %s\n", line);
    }
}

static void core_log(void *context, int level, const char *line) {
    clap_log_severity severity = level == SPINET_LOG_ERROR ? CLAP_LOG_ERROR
        : level == SPINET_LOG_WARNING ? CLAP_LOG_WARNING : CLAP_LOG_INFO;
    instance_log((spinet_clap *)context, severity, line);
}

static void logf_(spinet_clap *s, clap_log_severity severity, const char *format, const char *arg) {
    char line[4352];
    snprintf(line, sizeof line, format, arg);
    instance_log(s, severity, line);
}

// The core's loader finished a font (its thread): the main thread takes
// the result in on_main_thread.
static void font_loaded(void *context, int status) {
    (void)status;
    spinet_clap *s = context;
    if (s->host->request_callback != NULL) s->host->request_callback(s->host);
}

// Asks the core's loader for `path` (core_lock held, a core present).
static bool request_font_locked(spinet_clap *s, const char *path) {
    if (spinet_plugin_request_soundfont(s->core, path, strlen(path)) == 0) return true;
    logf_(s, CLAP_LOG_ERROR, "SoundFont %s not loaded: the path is longer than 4095 bytes", path);
    return false;
}

// Creates the core if there is none (main thread, core_lock held).
static bool ensure_core_locked(spinet_clap *s) {
    if (s->core != NULL) return true;
    double rate = s->core_rate > 0 ? s->core_rate : SPINET_CLAP_DEFAULT_RATE;
    s->core = spinet_plugin_create(rate, bundle_dir[0] ? bundle_dir : NULL, core_log, s);
    if (s->core == NULL) {
        instance_log(s, CLAP_LOG_ERROR, "could not create the Spinet engine (see the lines above)");
        return false;
    }
    s->core_rate = rate;
    s->names_stale = true;
    spinet_plugin_set_soundfont_listener(s->core, font_loaded, s);
    if (s->pending_font != NULL) {
        request_font_locked(s, s->pending_font);
        free(s->pending_font);
        s->pending_font = NULL;
    }
    return true;
}

static bool ensure_core(spinet_clap *s) {
    pthread_mutex_lock(&s->core_lock);
    bool ok = ensure_core_locked(s);
    pthread_mutex_unlock(&s->core_lock);
    return ok;
}

// Asks for a font load (main thread). With a core it goes to the core's
// loader; without one it is remembered and asked for when the core is created.
static bool request_font(spinet_clap *s, const char *path) {
    pthread_mutex_lock(&s->core_lock);
    bool ok = true;
    if (s->core != NULL) {
        ok = request_font_locked(s, path);
    } else {
        char *copy = strdup(path);
        if (copy == NULL) ok = false;
        else { free(s->pending_font); s->pending_font = copy; }
    }
    pthread_mutex_unlock(&s->core_lock);
    return ok;
}

// A font load the core's loader finished, if one did since the last call
// (main thread, core_lock held): the path asked for, into `path`, and *status.
static bool take_font_load_locked(spinet_clap *s, char path[4096], int *status) {
    return s->core != NULL && spinet_plugin_take_soundfont_result(s->core, status, path, 4096, NULL, 0);
}

// Tells the host about it (main thread, core_lock not held: the host may
// call back): its log, preset-load, the state and the note names.
static void report_font_load(spinet_clap *s, const char *path, int status) {
    if (status == 0) logf_(s, CLAP_LOG_INFO, "SoundFont %s loaded", path);
    else logf_(s, CLAP_LOG_ERROR, "SoundFont %s not loaded; the previous one plays on", path);
    if (s->host_preset_load != NULL) {
        if (status == 0 && s->host_preset_load->loaded != NULL)
            s->host_preset_load->loaded(s->host, CLAP_PRESET_DISCOVERY_LOCATION_FILE, path, NULL);
        else if (status != 0 && s->host_preset_load->on_error != NULL)
            s->host_preset_load->on_error(s->host, CLAP_PRESET_DISCOVERY_LOCATION_FILE, path, NULL, 0,
                                          "Spinet could not load this SoundFont (see the log)");
    }
    if (status == 0 && s->host_state != NULL && s->host_state->mark_dirty != NULL) s->host_state->mark_dirty(s->host);
    if (status == 0) {
        s->names_stale = true;
        if (s->host_note_name != NULL && s->host_note_name->changed != NULL) s->host_note_name->changed(s->host);
    }
}

// ---------------------------------------------------------------------------
// Extensions.

static uint32_t audio_ports_count(const clap_plugin_t *plugin, bool is_input) {
    (void)plugin;
    return is_input ? 0 : 1;
}

static bool audio_ports_get(const clap_plugin_t *plugin, uint32_t index, bool is_input, clap_audio_port_info_t *info) {
    (void)plugin;
    if (is_input || index != 0) return false;
    info->id = 0;
    snprintf(info->name, sizeof info->name, "%s", "Stereo out");
    info->flags = CLAP_AUDIO_PORT_IS_MAIN;
    info->channel_count = 2;
    info->port_type = CLAP_PORT_STEREO;
    info->in_place_pair = CLAP_INVALID_ID;
    return true;
}

static const clap_plugin_audio_ports_t audio_ports = { audio_ports_count, audio_ports_get };

static uint32_t note_ports_count(const clap_plugin_t *plugin, bool is_input) {
    (void)plugin;
    return is_input ? 1 : 0;
}

static bool note_ports_get(const clap_plugin_t *plugin, uint32_t index, bool is_input, clap_note_port_info_t *info) {
    (void)plugin;
    if (!is_input || index != 0) return false;
    info->id = 0;
    info->supported_dialects = CLAP_NOTE_DIALECT_CLAP | CLAP_NOTE_DIALECT_MIDI;
    info->preferred_dialect = CLAP_NOTE_DIALECT_MIDI;
    snprintf(info->name, sizeof info->name, "%s", "MIDI in");
    return true;
}

static const clap_plugin_note_ports_t note_ports = { note_ports_count, note_ports_get };

static uint32_t params_count(const clap_plugin_t *plugin) {
    (void)plugin;
    return SPINET_PARAM_COUNT;
}

static const spinet_param_info *param_by_id(clap_id id) {
    for (uint32_t i = 0; i < SPINET_PARAM_COUNT; i++) {
        const spinet_param_info *p = spinet_plugin_param_info(i);
        if (p != NULL && p->id == id) return p;
    }
    return NULL;
}

static bool params_get_info(const clap_plugin_t *plugin, uint32_t index, clap_param_info_t *info) {
    (void)plugin;
    const spinet_param_info *p = spinet_plugin_param_info(index);
    if (p == NULL) return false;
    memset(info, 0, sizeof *info);
    info->id = p->id;
    info->flags = CLAP_PARAM_IS_AUTOMATABLE;
    info->cookie = NULL;
    snprintf(info->name, sizeof info->name, "%s", p->name);
    snprintf(info->module, sizeof info->module, "%s", p->symbol);
    info->min_value = p->min_value;
    info->max_value = p->max_value;
    info->default_value = p->default_value;
    return true;
}

static bool params_get_value(const clap_plugin_t *plugin, clap_id id, double *value) {
    spinet_clap *s = instance_of(plugin);
    const spinet_param_info *p = param_by_id(id);
    if (p == NULL) return false;
    *value = s->core != NULL ? spinet_plugin_get_param(s->core, id) : p->default_value;
    return true;
}

static bool params_value_to_text(const clap_plugin_t *plugin, clap_id id, double value, char *out, uint32_t capacity) {
    (void)plugin;
    const spinet_param_info *p = param_by_id(id);
    if (p == NULL || capacity == 0) return false;
    if (p->unit != NULL && p->unit[0] != '\0') snprintf(out, capacity, "%.1f %s", value, p->unit);
    else snprintf(out, capacity, "%.2f", value);
    return true;
}

static bool params_text_to_value(const clap_plugin_t *plugin, clap_id id, const char *text, double *value) {
    (void)plugin;
    const spinet_param_info *p = param_by_id(id);
    if (p == NULL || text == NULL) return false;
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno != 0 || !isfinite(v)) return false;
    while (*end == ' ') end++;
    // Only the parameter's own unit may follow the number.
    if (*end != '\0' && !(p->unit != NULL && p->unit[0] != '\0' && strcasecmp(end, p->unit) == 0)) return false;
    *value = v < p->min_value ? p->min_value : v > p->max_value ? p->max_value : v;
    return true;
}

static void apply_param_events(spinet_clap *s, const clap_input_events_t *in) {
    uint32_t n = in->size(in);
    for (uint32_t i = 0; i < n; i++) {
        const clap_event_header_t *h = in->get(in, i);
        if (h == NULL || h->space_id != CLAP_CORE_EVENT_SPACE_ID || h->type != CLAP_EVENT_PARAM_VALUE) continue;
        const clap_event_param_value_t *e = (const clap_event_param_value_t *)h;
        if (param_by_id(e->param_id) != NULL) spinet_plugin_set_param(s->core, e->param_id, e->value);
    }
}

// [active ? audio-thread : main-thread]
static void params_flush(const clap_plugin_t *plugin, const clap_input_events_t *in, const clap_output_events_t *out) {
    (void)out;
    spinet_clap *s = instance_of(plugin);
    if (s->core == NULL && (s->active || !ensure_core(s))) return;
    apply_param_events(s, in);
}

static const clap_plugin_params_t params = {
    params_count, params_get_info, params_get_value, params_value_to_text, params_text_to_value, params_flush,
};

static bool state_save(const clap_plugin_t *plugin, const clap_ostream_t *stream) {
    spinet_clap *s = instance_of(plugin);
    pthread_mutex_lock(&s->core_lock);
    char *json = ensure_core_locked(s) ? spinet_plugin_save_state(s->core) : NULL;
    pthread_mutex_unlock(&s->core_lock);
    if (json == NULL) return false;
    size_t length = strlen(json), written = 0;
    bool ok = true;
    while (written < length) {
        int64_t n = stream->write(stream, json + written, length - written);
        if (n <= 0) { ok = false; break; }      // a stream that takes nothing more
        written += (size_t)n;
    }
    spinet_plugin_free_string(json);
    if (!ok) instance_log(s, CLAP_LOG_ERROR, "the host's stream did not take the whole state");
    return ok;
}

static bool state_load(const clap_plugin_t *plugin, const clap_istream_t *stream) {
    spinet_clap *s = instance_of(plugin);
    size_t capacity = 16384, length = 0;
    char *json = malloc(capacity);
    if (json == NULL) return false;
    for (;;) {
        if (capacity - length < 4097) {
            char *bigger = capacity > (64u << 20) ? NULL : realloc(json, capacity * 2);
            if (bigger == NULL) { free(json); instance_log(s, CLAP_LOG_ERROR, "state too large"); return false; }
            json = bigger;
            capacity *= 2;
        }
        int64_t n = stream->read(stream, json + length, capacity - length - 1);
        if (n == 0) break;                      // end of the stream
        if (n < 0) { free(json); instance_log(s, CLAP_LOG_ERROR, "the host's stream failed while reading the state"); return false; }
        length += (size_t)n;
    }
    json[length] = '\0';
    pthread_mutex_lock(&s->core_lock);
    // A project whose SoundFont is not on this machine: the core restores
    // every other setting, plays its default font and logs the saved path.
    int status = ensure_core_locked(s) ? spinet_plugin_restore_state(s->core, json, NULL) : -1;
    pthread_mutex_unlock(&s->core_lock);
    free(json);
    if (status == 0) {
        // (the core forgets the channel state the host's MIDI set: the
        // state's channel settings replace it)
        s->names_stale = true;
        if (s->host_note_name != NULL && s->host_note_name->changed != NULL) s->host_note_name->changed(s->host);
    }
    if (status != 0) instance_log(s, CLAP_LOG_ERROR, "the saved state was not restored (see the lines above)");
    return status == 0;
}

static const clap_plugin_state_t state = { state_save, state_load };

static uint32_t latency_get(const clap_plugin_t *plugin) {
    spinet_clap *s = instance_of(plugin);
    return s->core != NULL ? spinet_plugin_latency(s->core) : 0;
}

static const clap_plugin_latency_t latency = { latency_get };

// The SoundFont choice: CLAP has no file parameter. A host (or its preset
// browser) hands a .sf2 file to preset-load with CLAP_PRESET_DISCOVERY_LOCATION_FILE;
// the font is read on the core's loader thread and swapped in at a later
// process call. Returns true when the load was started; the result reaches
// the host's preset-load `loaded`/`on_error` and its log.
static bool preset_load_from_location(const clap_plugin_t *plugin, uint32_t kind, const char *location, const char *key) {
    (void)key;
    spinet_clap *s = instance_of(plugin);
    if (kind != CLAP_PRESET_DISCOVERY_LOCATION_FILE || location == NULL || location[0] == '\0') {
        instance_log(s, CLAP_LOG_WARNING, "preset-load: Spinet takes a SoundFont file (a file location) only");
        return false;
    }
    return request_font(s, location);
}

static const clap_plugin_preset_load_t preset_load = { preset_load_from_location };

// Key names: CLAP names keys, not programs, so this is the drum channel's
// (MIDI channel 10) standard kit, bank 128 program 0 (or the font's first
// kit), as the core names it (General MIDI fonts only; see spinet_plugin.h).
static void refresh_note_names(spinet_clap *s) {
    if (!s->names_stale) return;
    pthread_mutex_lock(&s->core_lock);
    spinet_name_table *t = ensure_core_locked(s) ? spinet_plugin_name_table(s->core) : NULL;
    pthread_mutex_unlock(&s->core_lock);
    if (t == NULL) return;
    s->names_stale = false;
    free(s->note_names);
    s->note_names = NULL;
    s->note_name_count = 0;
    uint32_t kit = UINT32_MAX;
    for (uint32_t k = 0; k < t->key_count; k++) {
        if (t->keys[k].bank == 128 && (kit == UINT32_MAX || t->keys[k].program == 0)) kit = t->keys[k].program;
    }
    uint32_t n = 0;
    for (uint32_t k = 0; k < t->key_count; k++) n += t->keys[k].bank == 128 && t->keys[k].program == kit;
    s->note_names = n ? calloc(n, sizeof *s->note_names) : NULL;
    for (uint32_t k = 0; s->note_names != NULL && k < t->key_count; k++) {
        if (t->keys[k].bank != 128 || t->keys[k].program != kit) continue;
        clap_note_name_t *name = &s->note_names[s->note_name_count++];
        snprintf(name->name, sizeof name->name, "%s", t->keys[k].name);
        name->port = -1;
        name->key = (int16_t)t->keys[k].key;
        name->channel = 9;
    }
    spinet_plugin_free_name_table(t);
}

static uint32_t note_name_count(const clap_plugin_t *plugin) {
    spinet_clap *s = instance_of(plugin);
    refresh_note_names(s);
    return s->note_name_count;
}

static bool note_name_get(const clap_plugin_t *plugin, uint32_t index, clap_note_name_t *name) {
    spinet_clap *s = instance_of(plugin);
    refresh_note_names(s);
    if (name == NULL || index >= s->note_name_count) return false;
    *name = s->note_names[index];
    return true;
}

static const clap_plugin_note_name_t note_name = { note_name_count, note_name_get };

// Spinet's own extension, for tests and diagnostics: whether Spinet's
// GOMP_parallel took libfluidsynth's one-thread OpenMP regions in this
// process (then process allocates nothing), and the font in use.
static unsigned long debug_inline_parallel_regions(void) { return spinet_plugin_inline_parallel_regions(); }

static size_t debug_soundfont_path(const clap_plugin_t *plugin, char *buffer, size_t capacity) {
    spinet_clap *s = instance_of(plugin);
    pthread_mutex_lock(&s->core_lock);
    size_t n = s->core != NULL ? spinet_plugin_soundfont_path(s->core, buffer, capacity) : 0;
    pthread_mutex_unlock(&s->core_lock);
    if (s->core == NULL && capacity > 0) buffer[0] = '\0';
    return n;
}

static const spinet_clap_debug_t debug_extension = { debug_inline_parallel_regions, debug_soundfont_path };

// ---------------------------------------------------------------------------
// The plugin.

static bool plugin_init(const clap_plugin_t *plugin) {
    spinet_clap *s = instance_of(plugin);
    const clap_host_t *h = s->host;
    if (h->get_extension != NULL) {
        s->host_log = h->get_extension(h, CLAP_EXT_LOG);
        s->host_state = h->get_extension(h, CLAP_EXT_STATE);
        s->host_preset_load = h->get_extension(h, CLAP_EXT_PRESET_LOAD);
        if (s->host_preset_load == NULL) s->host_preset_load = h->get_extension(h, CLAP_EXT_PRESET_LOAD_COMPAT);
        s->host_note_name = h->get_extension(h, CLAP_EXT_NOTE_NAME);
    }
    // The core builds its parameter table on first use (it allocates):
    // have that happen here, not in the first process call with a parameter event.
    for (uint32_t i = 0; i < SPINET_PARAM_COUNT; i++) (void)spinet_plugin_param_info(i);
    s->events = calloc(SPINET_CLAP_MAX_EVENTS, sizeof *s->events);
    s->bytes = calloc(SPINET_CLAP_MAX_EVENTS, 3);
    if (s->events == NULL || s->bytes == NULL) return false;
    return true;
}

static void plugin_destroy(const clap_plugin_t *plugin) {
    spinet_clap *s = instance_of(plugin);
    if (s->core != NULL) spinet_plugin_destroy(s->core);
    free(s->pending_font);
    free(s->note_names);
    free(s->events);
    free(s->bytes);
    pthread_mutex_destroy(&s->core_lock);
    free(s);
}

static bool plugin_activate(const clap_plugin_t *plugin, double rate, uint32_t min_frames, uint32_t max_frames) {
    (void)min_frames;
    spinet_clap *s = instance_of(plugin);
    // A font the old core loaded, told to the host once the lock is free.
    char font_path[4096];
    int font_status = 0;
    bool font_done = false;
    pthread_mutex_lock(&s->core_lock);
    if (s->core != NULL && s->core_rate != rate) {
        // A new rate: a new core with the old one's settings.
        // (and the channel state the host's MIDI set, which the core plays
        // back at its first process call, as after any activation)
        char *json = spinet_plugin_save_state(s->core);   // (after any font asked for)
        font_done = take_font_load_locked(s, font_path, &font_status);
        spinet_plugin *old = s->core;
        s->core = NULL;
        s->core_rate = rate;
        if (ensure_core_locked(s)) {
            if (json != NULL && spinet_plugin_restore_state(s->core, json, NULL) != 0)
                instance_log(s, CLAP_LOG_WARNING, "the settings did not carry over to the new sample rate");
            spinet_plugin_copy_channel_state(s->core, old);
        }
        spinet_plugin_destroy(old);
        if (json != NULL) spinet_plugin_free_string(json);
    }
    s->core_rate = rate;
    bool ok = ensure_core_locked(s) && spinet_plugin_activate(s->core, max_frames) == 0;
    pthread_mutex_unlock(&s->core_lock);
    if (font_done) report_font_load(s, font_path, font_status);
    if (!ok) {
        instance_log(s, CLAP_LOG_ERROR, "activation failed");
        return false;
    }
    memset(s->held, 0, sizeof s->held);
    atomic_store(&s->reset_requested, false);
    s->tempo = 0;   // given again at the first process call (the core may be new)
    s->active = true;
    return true;
}

static void plugin_deactivate(const clap_plugin_t *plugin) {
    spinet_clap *s = instance_of(plugin);
    pthread_mutex_lock(&s->core_lock);
    if (s->core != NULL) spinet_plugin_deactivate(s->core);
    pthread_mutex_unlock(&s->core_lock);
    s->active = false;
}

static bool plugin_start_processing(const clap_plugin_t *plugin) {
    (void)plugin;
    return true;
}

static void plugin_stop_processing(const clap_plugin_t *plugin) { (void)plugin; }

// [audio-thread] Silences every channel at the next process call.
static void plugin_reset(const clap_plugin_t *plugin) {
    atomic_store(&instance_of(plugin)->reset_requested, true);
}

static void push_event(spinet_clap *s, uint32_t offset, const uint8_t *data, uint32_t size, bool copy) {
    if (s->event_count >= SPINET_CLAP_MAX_EVENTS || (copy && s->bytes_used + size > 3 * SPINET_CLAP_MAX_EVENTS)) {
        atomic_fetch_add_explicit(&s->dropped_events, 1, memory_order_relaxed);
        return;
    }
    spinet_midi_event *e = &s->events[s->event_count];
    e->offset = offset;
    e->size = size;
    if (copy) {
        uint8_t *b = s->bytes + s->bytes_used;
        memcpy(b, data, size);
        s->bytes_used += size;
        e->data = b;
    } else {
        e->data = data;
    }
    s->event_count++;
}

static void push3(spinet_clap *s, uint32_t offset, uint8_t status, uint8_t d1, uint8_t d2) {
    uint8_t m[3] = { status, d1, d2 };
    push_event(s, offset, m, 3, true);
}

// MIDI 1.0 message length from the status byte (0: not a message to pass on).
static uint32_t midi_length(uint8_t status) {
    if (status < 0x80) return 0;
    switch (status & 0xF0) {
    case 0xC0: case 0xD0: return 2;
    case 0xF0:
        switch (status) {
        case 0xF1: case 0xF3: return 2;
        case 0xF2: return 3;
        case 0xF6: return 1;
        default: return 0;   // SysEx comes as its own event; realtime bytes are ignored
        }
    default: return 3;
    }
}

static uint8_t velocity_7bit(double v, uint8_t minimum) {
    if (!(v == v)) v = 0;
    long x = lround(v * 127.0);
    if (x < minimum) x = minimum;
    if (x > 127) x = 127;
    return (uint8_t)x;
}

// Renders [from, to) with the events gathered so far that fall before `to`
// (their offsets are block frames, in order; the core wants them relative
// to `from`). Events at `to` itself stay for the next segment.
static void render_segment(spinet_clap *s, float *left, float *right, uint32_t from, uint32_t to) {
    if (to <= from) return;
    uint32_t n = 0;
    while (n < s->event_count && s->events[n].offset < to) s->events[n++].offset -= from;
    spinet_plugin_process(s->core, to - from, left + from, right + from, s->events, n);
    // The rest (at `to`) move to the front; their bytes stay where they are.
    memmove(s->events, s->events + n, (s->event_count - n) * sizeof *s->events);
    s->event_count -= n;
}

static void set_tempo(spinet_clap *s, double bpm) {
    if (bpm == s->tempo) return;
    s->tempo = bpm;
    spinet_plugin_set_tempo(s->core, bpm);
}

static clap_process_status plugin_process(const clap_plugin_t *plugin, const clap_process_t *process) {
    spinet_clap *s = instance_of(plugin);
    uint32_t frames = process->frames_count;
    if (process->audio_outputs_count < 1 || process->audio_outputs[0].channel_count < 2 ||
        process->audio_outputs[0].data32 == NULL)
        return CLAP_PROCESS_ERROR;
    float *left = process->audio_outputs[0].data32[0];
    float *right = process->audio_outputs[0].data32[1];
    if (frames == 0) return CLAP_PROCESS_CONTINUE;
    if (s->core == NULL) {
        memset(left, 0, frames * sizeof(float));
        memset(right, 0, frames * sizeof(float));
        return CLAP_PROCESS_CONTINUE;
    }
    s->event_count = 0;
    s->bytes_used = 0;
    if (atomic_exchange(&s->reset_requested, false)) {
        for (uint8_t c = 0; c < 16; c++) {
            push3(s, 0, 0xB0 | c, 120, 0);   // all sound off
            push3(s, 0, 0xB0 | c, 121, 0);   // reset controllers
        }
        memset(s->held, 0, sizeof s->held);
    }
    // The host's tempo (the delay's note values follow it).
    if (process->transport != NULL && (process->transport->flags & CLAP_TRANSPORT_HAS_TEMPO))
        set_tempo(s, process->transport->tempo);

    const clap_input_events_t *in = process->in_events;
    uint32_t count = in != NULL ? in->size(in) : 0;
    uint32_t segment_start = 0;
    for (uint32_t i = 0; i < count; i++) {
        const clap_event_header_t *h = in->get(in, i);
        if (h == NULL || h->space_id != CLAP_CORE_EVENT_SPACE_ID) continue;
        uint32_t t = h->time;
        if (t >= frames) t = frames - 1;
        if (t < segment_start) t = segment_start;     // out of order: as early as still possible
        switch (h->type) {
        case CLAP_EVENT_NOTE_ON: {
            const clap_event_note_t *e = (const clap_event_note_t *)h;
            if (e->port_index > 0 || e->key < 0 || e->key > 127 || e->channel > 15) break;
            int channel = e->channel < 0 ? 0 : e->channel;
            push3(s, t, 0x90 | channel, (uint8_t)e->key, velocity_7bit(e->velocity, 1));
            s->held[e->key] |= (uint16_t)(1u << channel);
            break;
        }
        case CLAP_EVENT_NOTE_OFF:
        case CLAP_EVENT_NOTE_CHOKE: {
            const clap_event_note_t *e = (const clap_event_note_t *)h;
            if (e->port_index > 0 || e->key > 127 || e->channel > 15) break;
            uint8_t velocity = h->type == CLAP_EVENT_NOTE_OFF ? velocity_7bit(e->velocity, 0) : 127;
            if (e->key >= 0 && e->channel >= 0) {
                push3(s, t, 0x80 | e->channel, (uint8_t)e->key, velocity);
                s->held[e->key] &= (uint16_t)~(1u << e->channel);
                break;
            }
            // A wildcard: every matching note that a CLAP note-on started.
            for (int key = e->key < 0 ? 0 : e->key; key <= (e->key < 0 ? 127 : e->key); key++) {
                for (int c = e->channel < 0 ? 0 : e->channel; c <= (e->channel < 0 ? 15 : e->channel); c++) {
                    if (s->held[key] & (1u << c)) {
                        push3(s, t, 0x80 | c, (uint8_t)key, velocity);
                        s->held[key] &= (uint16_t)~(1u << c);
                    }
                }
            }
            break;
        }
        case CLAP_EVENT_MIDI: {
            const clap_event_midi_t *e = (const clap_event_midi_t *)h;
            if (e->port_index != 0 && e->port_index != UINT16_MAX) break;
            uint32_t n = midi_length(e->data[0]);
            if (n > 0) {
                push_event(s, t, e->data, n, true);
            }
            break;
        }
        case CLAP_EVENT_MIDI_SYSEX: {
            const clap_event_midi_sysex_t *e = (const clap_event_midi_sysex_t *)h;
            if ((e->port_index != 0 && e->port_index != UINT16_MAX) || e->buffer == NULL || e->size == 0) break;
            push_event(s, t, e->buffer, e->size, false);  // the host's buffer lives through this call
            break;
        }
        case CLAP_EVENT_TRANSPORT: {
            const clap_event_transport_t *e = (const clap_event_transport_t *)h;
            if (e->flags & CLAP_TRANSPORT_HAS_TEMPO) set_tempo(s, e->tempo);   // from the next process call
            break;
        }
        case CLAP_EVENT_PARAM_VALUE: {
            // Applied at its frame: the block is split there.
            const clap_event_param_value_t *e = (const clap_event_param_value_t *)h;
            if (param_by_id(e->param_id) == NULL) break;
            render_segment(s, left, right, segment_start, t);
            if (t > segment_start) segment_start = t;
            spinet_plugin_set_param(s->core, e->param_id, e->value);
            break;
        }
        default:
            break;
        }
    }
    render_segment(s, left, right, segment_start, frames);
    if (atomic_load_explicit(&s->dropped_events, memory_order_relaxed) != 0 && s->host->request_callback != NULL)
        s->host->request_callback(s->host);
    return CLAP_PROCESS_CONTINUE;
}

static const void *plugin_get_extension(const clap_plugin_t *plugin, const char *id) {
    (void)plugin;
    if (id == NULL) return NULL;
    if (strcmp(id, CLAP_EXT_AUDIO_PORTS) == 0) return &audio_ports;
    if (strcmp(id, CLAP_EXT_NOTE_PORTS) == 0) return &note_ports;
    if (strcmp(id, CLAP_EXT_PARAMS) == 0) return &params;
    if (strcmp(id, CLAP_EXT_STATE) == 0) return &state;
    if (strcmp(id, CLAP_EXT_LATENCY) == 0) return &latency;
    if (strcmp(id, CLAP_EXT_PRESET_LOAD) == 0 || strcmp(id, CLAP_EXT_PRESET_LOAD_COMPAT) == 0) return &preset_load;
    if (strcmp(id, CLAP_EXT_NOTE_NAME) == 0) return &note_name;
    if (strcmp(id, SPINET_CLAP_EXT_DEBUG) == 0) return &debug_extension;
    return NULL;
}

static void plugin_on_main_thread(const clap_plugin_t *plugin) {
    spinet_clap *s = instance_of(plugin);
    unsigned dropped = atomic_exchange(&s->dropped_events, 0);
    if (dropped != 0) {
        char line[128];
        snprintf(line, sizeof line, "%u events dropped: more than %d in one process call", dropped, SPINET_CLAP_MAX_EVENTS);
        instance_log(s, CLAP_LOG_WARNING, line);
    }
    char path[4096];
    int status = 0;
    pthread_mutex_lock(&s->core_lock);
    bool done = take_font_load_locked(s, path, &status);
    pthread_mutex_unlock(&s->core_lock);
    if (done) report_font_load(s, path, status);
}

// ---------------------------------------------------------------------------
// The descriptor and the factory.

static const char *const features[] = {
    CLAP_PLUGIN_FEATURE_INSTRUMENT, CLAP_PLUGIN_FEATURE_SYNTHESIZER, CLAP_PLUGIN_FEATURE_STEREO, NULL,
};

static const clap_plugin_descriptor_t descriptor = {
    .clap_version = CLAP_VERSION_INIT,
    .id = SPINET_CLAP_PLUGIN_ID,
    .name = "Spinet",
    .vendor = "The Spinet developers",
    .url = "https://spinet.dev/",
    .manual_url = "",
    .support_url = "",
    .version = "1.0",
    .description = "General MIDI synthesizer: SoundFont player, Spinet's own synth, effects and limiter",
    .features = features,
};

static uint32_t factory_count(const clap_plugin_factory_t *factory) {
    (void)factory;
    return 1;
}

static const clap_plugin_descriptor_t *factory_descriptor(const clap_plugin_factory_t *factory, uint32_t index) {
    (void)factory;
    return index == 0 ? &descriptor : NULL;
}

static const clap_plugin_t *factory_create(const clap_plugin_factory_t *factory, const clap_host_t *host, const char *id) {
    (void)factory;
    if (host == NULL || id == NULL || strcmp(id, descriptor.id) != 0) return NULL;
    if (!clap_version_is_compatible(host->clap_version)) return NULL;
    spinet_clap *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    s->host = host;
    s->names_stale = true;
    pthread_mutex_init(&s->core_lock, NULL);
    s->plugin = (clap_plugin_t){
        .desc = &descriptor,
        .plugin_data = s,
        .init = plugin_init,
        .destroy = plugin_destroy,
        .activate = plugin_activate,
        .deactivate = plugin_deactivate,
        .start_processing = plugin_start_processing,
        .stop_processing = plugin_stop_processing,
        .reset = plugin_reset,
        .process = plugin_process,
        .get_extension = plugin_get_extension,
        .on_main_thread = plugin_on_main_thread,
    };
    return &s->plugin;
}

static const clap_plugin_factory_t factory = { factory_count, factory_descriptor, factory_create };

static bool entry_init(const char *plugin_path) {
    pthread_mutex_lock(&entry_lock);
    if (entry_init_count++ == 0) {
        bundle_dir[0] = '\0';
        if (plugin_path != NULL) {
            // Absolute, so that the default font's path in a saved state is too.
            char *absolute = realpath(plugin_path, NULL);
            snprintf(bundle_dir, sizeof bundle_dir, "%s", absolute != NULL ? absolute : plugin_path);
            free(absolute);
            char *slash = strrchr(bundle_dir, '/');
            if (slash == NULL) snprintf(bundle_dir, sizeof bundle_dir, "%s", ".");
            else if (slash == bundle_dir) slash[1] = '\0';
            else *slash = '\0';
        }
    }
    pthread_mutex_unlock(&entry_lock);
    return true;
}

static void entry_deinit(void) {
    pthread_mutex_lock(&entry_lock);
    if (entry_init_count > 0) entry_init_count--;
    pthread_mutex_unlock(&entry_lock);
}

static const void *entry_get_factory(const char *id) {
    return id != NULL && strcmp(id, CLAP_PLUGIN_FACTORY_ID) == 0 ? &factory : NULL;
}

CLAP_EXPORT const clap_plugin_entry_t clap_entry = {
    .clap_version = CLAP_VERSION_INIT,
    .init = entry_init,
    .deinit = entry_deinit,
    .get_factory = entry_get_factory,
};
