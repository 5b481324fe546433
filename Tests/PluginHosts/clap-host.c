// A small headless CLAP host for Spinet's tests (Tests/SpinetCLAPTests).
//
//   clap-host PLUGIN.clap [options]
//     --rate HZ            sample rate (48000)
//     --block N            frames per process call (512)
//     --frames N           frames to render (48000)
//     --events FILE        the events of instance 1 (see below)
//     --out FILE           instance 1's output: raw float32, interleaved stereo
//     --instances 2        a second instance at once, with --events2 and --out2
//     --events2 FILE, --out2 FILE
//     --log                offer the host log extension (clap.log; lines go to stderr)
//     --preset-load        offer the host preset-load extension (results on stdout)
//     --load-state FILE    load this state (clap.state) before activating
//     --save-state FILE    save the state after rendering
//     --stream-chunk N     the state streams move at most N bytes per call (partial reads/writes)
//     --cycle-at FRAME     deactivate and activate again before the block at FRAME (repeatable)
//     --probe              count malloc/free/locks inside each process() (CRealtimeProbe)
//     --param ID=VALUE     set a parameter through params.flush before activating (repeatable)
//     --print-params       print the parameters (clap.params) and texts
//     --plugin-id ID       the plugin to create (the factory's first)
//     --realtime           pace the blocks in real time (as an audio device would)
//     --tempo BPM          give a transport with this tempo to every process call
//     --dlclose            unload the plugin at the end (as a host does after a scan), then wait 0.3 s
//     --note-names         print the plugin's note names (clap.note-name) after rendering:
//                          "note-name CHANNEL KEY NAME", and "note-names-changed N"
//     --create-cycles N    only create, init, activate, process a note, deactivate and
//                          destroy an instance N times; prints "rss-kb CYCLE KB" after
//                          each cycle (the resident set, for leak checks)
//
// Event file, one event per line (# starts a comment), FRAME counted from the start:
//     FRAME midi B1 [B2 [B3]]        a MIDI 1.0 message (CLAP_EVENT_MIDI), bytes decimal or 0x..
//     FRAME sysex F0 .. F7           a SysEx (CLAP_EVENT_MIDI_SYSEX)
//     FRAME note-on CH KEY VEL       a CLAP note event, VEL 0..1 (CH/KEY -1: wildcard)
//     FRAME note-off CH KEY VEL
//     FRAME param ID VALUE           CLAP_EVENT_PARAM_VALUE
//     FRAME font PATH                preset-load from_location(FILE, PATH) before the block
//                                    holding FRAME; the host waits for the plugin's callback
//     FRAME font-nowait PATH         the same, processing on while the font loads
//     FRAME reset                    plugin->reset() before the block holding FRAME
//
// Reports on stdout, one "key value" per line: latency, process-calls,
// process-allocations/frees/locks (with --probe), max-process-allocations,
// probe-active, inline-parallel-regions, process-seconds, soundfont, the
// preset-load results. Exit status 0 on success, 1 on a host-side failure
// (plugin not loaded, activate failed, ...), 2 on bad usage.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clap/clap.h"
#include "spinet_clap.h"
#include "CRealtimeProbe.h"

static void die(const char *what) {
    fprintf(stderr, "clap-host: %s\n", what);
    exit(1);
}

static void usage(const char *what) {
    fprintf(stderr, "clap-host: %s (see the comment at the top of clap-host.c)\n", what);
    exit(2);
}

// ---------------------------------------------------------------------------
// Events.

typedef union host_event {
    clap_event_header_t header;
    clap_event_note_t note;
    clap_event_midi_t midi;
    clap_event_midi_sysex_t sysex;
    clap_event_param_value_t param;
} host_event;

typedef struct event_line {
    uint64_t frame;
    int kind;   // 0: a CLAP event, 1: font (wait), 2: font-nowait, 3: reset
    host_event event;
    uint8_t *sysex;
    char *path;
} event_line;

typedef struct event_list {
    event_line *lines;
    size_t count;
} event_list;

static long parse_byte(const char *t) {
    char *end;
    long v = strtol(t, &end, 0);
    if (*end != '\0' || v < 0 || v > 255) usage("bad byte in the event file");
    return v;
}

static int compare_lines(const void *a, const void *b) {
    const event_line *x = a, *y = b;
    return x->frame < y->frame ? -1 : x->frame > y->frame ? 1 : 0;
}

static event_list read_events(const char *path) {
    event_list list = { NULL, 0 };
    if (path == NULL) return list;
    FILE *f = fopen(path, "r");
    if (f == NULL) usage("cannot open the event file");
    char line[65536];
    size_t capacity = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *save = NULL;
        char *tok[1024];
        int n = 0;
        for (char *t = strtok_r(line, " \t\r\n", &save); t != NULL && n < 1024; t = strtok_r(NULL, " \t\r\n", &save)) tok[n++] = t;
        if (n == 0) continue;
        if (n < 2) usage("an event line needs a frame and a kind");
        if (list.count == capacity) {
            capacity = capacity ? capacity * 2 : 64;
            list.lines = realloc(list.lines, capacity * sizeof *list.lines);
            if (list.lines == NULL) die("out of memory");
        }
        event_line *e = &list.lines[list.count++];
        memset(e, 0, sizeof *e);
        e->frame = strtoull(tok[0], NULL, 10);
        clap_event_header_t *h = &e->event.header;
        h->space_id = CLAP_CORE_EVENT_SPACE_ID;
        if (strcmp(tok[1], "midi") == 0) {
            if (n < 3 || n > 5) usage("midi takes 1 to 3 bytes");
            h->type = CLAP_EVENT_MIDI;
            h->size = sizeof(clap_event_midi_t);
            e->event.midi.port_index = 0;
            for (int i = 2; i < n; i++) e->event.midi.data[i - 2] = (uint8_t)parse_byte(tok[i]);
        } else if (strcmp(tok[1], "sysex") == 0) {
            h->type = CLAP_EVENT_MIDI_SYSEX;
            h->size = sizeof(clap_event_midi_sysex_t);
            e->sysex = malloc((size_t)n);
            for (int i = 2; i < n; i++) e->sysex[i - 2] = (uint8_t)parse_byte(tok[i]);
            e->event.sysex.buffer = e->sysex;
            e->event.sysex.size = (uint32_t)(n - 2);
        } else if (strcmp(tok[1], "note-on") == 0 || strcmp(tok[1], "note-off") == 0) {
            if (n != 5) usage("note-on/note-off take CH KEY VEL");
            h->type = strcmp(tok[1], "note-on") == 0 ? CLAP_EVENT_NOTE_ON : CLAP_EVENT_NOTE_OFF;
            h->size = sizeof(clap_event_note_t);
            e->event.note.note_id = -1;
            e->event.note.port_index = 0;
            e->event.note.channel = (int16_t)atoi(tok[2]);
            e->event.note.key = (int16_t)atoi(tok[3]);
            e->event.note.velocity = atof(tok[4]);
        } else if (strcmp(tok[1], "param") == 0) {
            if (n != 4) usage("param takes ID VALUE");
            h->type = CLAP_EVENT_PARAM_VALUE;
            h->size = sizeof(clap_event_param_value_t);
            e->event.param.param_id = (clap_id)atoi(tok[2]);
            e->event.param.note_id = -1;
            e->event.param.port_index = -1;
            e->event.param.channel = -1;
            e->event.param.key = -1;
            e->event.param.value = atof(tok[3]);
        } else if (strcmp(tok[1], "reset") == 0) {
            e->kind = 3;
        } else if (strcmp(tok[1], "font") == 0 || strcmp(tok[1], "font-nowait") == 0) {
            if (n != 3) usage("font takes a path (no spaces)");
            e->kind = strcmp(tok[1], "font") == 0 ? 1 : 2;
            e->path = strdup(tok[2]);
        } else {
            usage("unknown event kind");
        }
    }
    fclose(f);
    qsort(list.lines, list.count, sizeof *list.lines, compare_lines);   // stable enough: equal frames keep no order guarantee
    return list;
}

// The input event list of one process call: pointers into an event_list.
typedef struct block_events {
    const clap_event_header_t *items[65536];
    host_event copies[65536];
    uint32_t count;
} block_events;

static uint32_t in_size(const clap_input_events_t *list) { return ((block_events *)list->ctx)->count; }

static const clap_event_header_t *in_get(const clap_input_events_t *list, uint32_t index) {
    block_events *b = list->ctx;
    return index < b->count ? b->items[index] : NULL;
}

static bool out_try_push(const clap_output_events_t *list, const clap_event_header_t *event) {
    (void)list;
    (void)event;
    return true;
}

// ---------------------------------------------------------------------------
// The host.

static bool offer_log, offer_preset_load;
static atomic_int callback_requests;

static void host_log(const clap_host_t *host, clap_log_severity severity, const char *msg) {
    (void)host;
    fprintf(stderr, "host-log %d: %s\n", (int)severity, msg);
}

static const clap_host_log_t log_extension = { host_log };

// The location of the last preset-load result the plugin reported.
static char preset_result[4096];

static void host_preset_error(const clap_host_t *host, uint32_t kind, const char *location, const char *key,
                              int32_t os_error, const char *msg) {
    (void)host; (void)kind; (void)key; (void)os_error;
    printf("preset-load-error %s %s\n", location, msg);
    snprintf(preset_result, sizeof preset_result, "%s", location);
}

static void host_preset_loaded(const clap_host_t *host, uint32_t kind, const char *location, const char *key) {
    (void)host; (void)kind; (void)key;
    printf("preset-loaded %s\n", location);
    snprintf(preset_result, sizeof preset_result, "%s", location);
}

static const clap_host_preset_load_t preset_load_extension = { host_preset_error, host_preset_loaded };

// The host side of clap.note-name: counts the plugin's "changed" calls.
static atomic_int note_names_changed;
static void host_note_names_changed(const clap_host_t *host) {
    (void)host;
    atomic_fetch_add(&note_names_changed, 1);
}
static const clap_host_note_name_t note_name_extension = { host_note_names_changed };

static const void *host_get_extension(const clap_host_t *host, const char *id) {
    (void)host;
    if (strcmp(id, CLAP_EXT_NOTE_NAME) == 0) return &note_name_extension;
    if (offer_log && strcmp(id, CLAP_EXT_LOG) == 0) return &log_extension;
    if (offer_preset_load && strcmp(id, CLAP_EXT_PRESET_LOAD) == 0) return &preset_load_extension;
    return NULL;
}

static void host_request_restart(const clap_host_t *host) { (void)host; }
static void host_request_process(const clap_host_t *host) { (void)host; }
static void host_request_callback(const clap_host_t *host) {
    (void)host;
    atomic_fetch_add(&callback_requests, 1);
}

static const clap_host_t host = {
    .clap_version = CLAP_VERSION_INIT,
    .host_data = NULL,
    .name = "spinet-clap-test-host",
    .vendor = "Spinet tests",
    .url = "",
    .version = "1",
    .get_extension = host_get_extension,
    .request_restart = host_request_restart,
    .request_process = host_request_process,
    .request_callback = host_request_callback,
};

// ---------------------------------------------------------------------------
// Streams for the state, optionally moving at most `chunk` bytes per call.

typedef struct memory_stream {
    uint8_t *data;
    size_t length, capacity, position, chunk;
} memory_stream;

static int64_t ostream_write(const clap_ostream_t *stream, const void *buffer, uint64_t size) {
    memory_stream *m = stream->ctx;
    if (m->chunk && size > m->chunk) size = m->chunk;
    if (m->length + size > m->capacity) {
        m->capacity = (m->length + size) * 2;
        m->data = realloc(m->data, m->capacity);
        if (m->data == NULL) return -1;
    }
    memcpy(m->data + m->length, buffer, size);
    m->length += size;
    return (int64_t)size;
}

static int64_t istream_read(const clap_istream_t *stream, void *buffer, uint64_t size) {
    memory_stream *m = stream->ctx;
    uint64_t left = m->length - m->position;
    if (size > left) size = left;
    if (m->chunk && size > m->chunk) size = m->chunk;
    memcpy(buffer, m->data + m->position, size);
    m->position += size;
    return (int64_t)size;
}

// ---------------------------------------------------------------------------
// One plugin instance under the host.

typedef struct instance {
    const clap_plugin_t *plugin;
    const clap_plugin_preset_load_t *preset_load;
    const clap_plugin_state_t *state;
    const clap_plugin_params_t *params;
    const clap_plugin_latency_t *latency;
    const spinet_clap_debug_t *debug;
    event_list events;
    size_t next_event;
    FILE *out;
    float *left, *right, *interleaved;
    block_events *block;
    unsigned long calls, allocating_calls;
    spinet_probe_totals probe;
    double seconds;
} instance;

static size_t chunk;
static bool probe;
static char nowait_path[4096];   // the last font-nowait request, waited for at the end
static double tempo;             // --tempo: 0 for no transport

// Waits (as a main thread would, without processing) for the plugin to
// report the load of `path`: with --preset-load, until its result for that
// path arrives; without, until the plugin's next request_callback.
static void wait_for_font(instance *in, const char *path, int before) {
    for (int i = 0; i < 60000; i++) {
        if (atomic_load(&callback_requests) != before) {
            before = atomic_load(&callback_requests);
            in->plugin->on_main_thread(in->plugin);
            if (!offer_preset_load || strcmp(preset_result, path) == 0) return;
        }
        usleep(1000);
    }
    die("the plugin did not report the font load within 60 s");
}

static void process_block(instance *in, uint64_t position, uint32_t frames) {
    block_events *b = in->block;
    b->count = 0;
    while (in->next_event < in->events.count && in->events.lines[in->next_event].frame < position + frames) {
        event_line *e = &in->events.lines[in->next_event++];
        if (e->kind == 3) {
            in->plugin->reset(in->plugin);
            continue;
        }
        if (e->kind != 0) {
            if (in->preset_load == NULL) die("the plugin has no preset-load extension");
            int before = atomic_load(&callback_requests);
            bool ok = in->preset_load->from_location(in->plugin, CLAP_PRESET_DISCOVERY_LOCATION_FILE, e->path, NULL);
            printf("font-request %s %s\n", e->path, ok ? "accepted" : "refused");
            if (ok && e->kind == 1) wait_for_font(in, e->path, before);
            if (ok && e->kind == 2) snprintf(nowait_path, sizeof nowait_path, "%s", e->path);
            continue;
        }
        if (b->count == 65536) die("too many events in one block");
        b->copies[b->count] = e->event;
        b->copies[b->count].header.time = (uint32_t)(e->frame < position ? 0 : e->frame - position);
        b->items[b->count] = &b->copies[b->count].header;
        b->count++;
    }
    clap_input_events_t events_in = { b, in_size, in_get };
    clap_output_events_t events_out = { NULL, out_try_push };
    float *channels[2] = { in->left, in->right };
    clap_audio_buffer_t output = { .data32 = channels, .data64 = NULL, .channel_count = 2, .latency = 0, .constant_mask = 0 };
    clap_event_transport_t transport;
    memset(&transport, 0, sizeof transport);
    transport.header.size = sizeof transport;
    transport.header.type = CLAP_EVENT_TRANSPORT;
    transport.flags = CLAP_TRANSPORT_HAS_TEMPO | CLAP_TRANSPORT_IS_PLAYING;
    transport.tempo = tempo;
    transport.tsig_num = 4;
    transport.tsig_denom = 4;
    clap_process_t process = {
        .steady_time = (int64_t)position,
        .frames_count = frames,
        .transport = tempo > 0 ? &transport : NULL,
        .audio_inputs = NULL,
        .audio_outputs = &output,
        .audio_inputs_count = 0,
        .audio_outputs_count = 1,
        .in_events = &events_in,
        .out_events = &events_out,
    };
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (probe) spinet_probe_begin();
    clap_process_status status = in->plugin->process(in->plugin, &process);
    if (probe) {
        unsigned long a = spinet_probe_end_adding(&in->probe);
        if (a > 0 && in->allocating_calls++ < 8)
            printf("allocating-call %lu allocations %lu frames %u\n", in->calls, a, frames);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    in->seconds += (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    in->calls++;
    if (status == CLAP_PROCESS_ERROR) die("process returned CLAP_PROCESS_ERROR");
    if (in->out != NULL) {
        for (uint32_t i = 0; i < frames; i++) {
            in->interleaved[2 * i] = in->left[i];
            in->interleaved[2 * i + 1] = in->right[i];
        }
        if (fwrite(in->interleaved, sizeof(float), 2 * (size_t)frames, in->out) != 2 * (size_t)frames) die("cannot write the output");
    }
    if (atomic_load(&callback_requests) > 0) in->plugin->on_main_thread(in->plugin);
}

static uint8_t *read_file(const char *path, size_t *length) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) die("cannot open the state file");
    size_t capacity = 4096, n = 0;
    uint8_t *data = malloc(capacity);
    size_t got;
    while ((got = fread(data + n, 1, capacity - n, f)) > 0) {
        n += got;
        if (n == capacity) data = realloc(data, capacity *= 2);
    }
    fclose(f);
    *length = n;
    return data;
}

// The process's resident set in KB (VmRSS of /proc/self/status).
static long resident_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "VmRSS:", 6) == 0) { kb = atol(line + 6); break; }
    }
    fclose(f);
    return kb;
}

// --create-cycles: an instance's whole life, N times, with one note played.
static void create_cycles(const clap_plugin_factory_t *factory, const char *id, int n, double rate, uint32_t block) {
    float *left = calloc(block, sizeof(float)), *right = calloc(block, sizeof(float));
    for (int c = 1; c <= n; c++) {
        const clap_plugin_t *plugin = factory->create_plugin(factory, &host, id);
        if (plugin == NULL || !plugin->init(plugin)) die("create_plugin or init failed");
        if (!plugin->activate(plugin, rate, 1, block) || !plugin->start_processing(plugin)) die("activate failed");
        block_events *b = calloc(1, sizeof *b);
        clap_event_midi_t *e = &b->copies[0].midi;
        memset(e, 0, sizeof *e);
        e->header.size = sizeof *e;
        e->header.type = CLAP_EVENT_MIDI;
        e->data[0] = 0x90; e->data[1] = 60; e->data[2] = 100;
        b->items[0] = &e->header;
        b->count = 1;
        for (int k = 0; k < 4; k++) {
            float *outs[2] = { left, right };
            clap_audio_buffer_t out = { .data32 = outs, .channel_count = 2 };
            clap_input_events_t in = { b, in_size, in_get };
            clap_output_events_t none = { NULL, out_try_push };
            clap_process_t p = { .steady_time = -1, .frames_count = block, .audio_outputs = &out,
                                 .audio_outputs_count = 1, .in_events = &in, .out_events = &none };
            plugin->process(plugin, &p);
            b->count = 0;
        }
        free(b);
        plugin->stop_processing(plugin);
        plugin->deactivate(plugin);
        plugin->destroy(plugin);
        printf("rss-kb %d %ld\n", c, resident_kb());
    }
    free(left);
    free(right);
}

int main(int argc, char **argv) {
    if (argc < 2) usage("no plugin path");
    const char *plugin_path = argv[1];
    double rate = 48000;
    uint32_t block = 512;
    uint64_t total = 48000;
    const char *events_path[2] = { NULL, NULL }, *out_path[2] = { NULL, NULL };
    const char *load_state = NULL, *save_state = NULL, *plugin_id = NULL;
    int instances = 1;
    bool print_params = false, realtime = false, unload = false, note_names = false;
    int cycles_only = 0;
    uint64_t cycles[64];
    int cycle_count = 0;
    struct { clap_id id; double value; } param_sets[64];
    int param_count = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define TAKE() do { if (v == NULL) usage("an option lacks its value"); i++; } while (0)
        if (strcmp(a, "--rate") == 0) { TAKE(); rate = atof(v); }
        else if (strcmp(a, "--block") == 0) { TAKE(); block = (uint32_t)atoi(v); }
        else if (strcmp(a, "--frames") == 0) { TAKE(); total = strtoull(v, NULL, 10); }
        else if (strcmp(a, "--events") == 0) { TAKE(); events_path[0] = v; }
        else if (strcmp(a, "--events2") == 0) { TAKE(); events_path[1] = v; }
        else if (strcmp(a, "--out") == 0) { TAKE(); out_path[0] = v; }
        else if (strcmp(a, "--out2") == 0) { TAKE(); out_path[1] = v; }
        else if (strcmp(a, "--instances") == 0) { TAKE(); instances = atoi(v); }
        else if (strcmp(a, "--log") == 0) offer_log = true;
        else if (strcmp(a, "--preset-load") == 0) offer_preset_load = true;
        else if (strcmp(a, "--load-state") == 0) { TAKE(); load_state = v; }
        else if (strcmp(a, "--save-state") == 0) { TAKE(); save_state = v; }
        else if (strcmp(a, "--stream-chunk") == 0) { TAKE(); chunk = (size_t)atoi(v); }
        else if (strcmp(a, "--cycle-at") == 0) { TAKE(); if (cycle_count < 64) cycles[cycle_count++] = strtoull(v, NULL, 10); }
        else if (strcmp(a, "--probe") == 0) probe = true;
        else if (strcmp(a, "--print-params") == 0) print_params = true;
        else if (strcmp(a, "--realtime") == 0) realtime = true;
        else if (strcmp(a, "--dlclose") == 0) unload = true;
        else if (strcmp(a, "--note-names") == 0) note_names = true;
        else if (strcmp(a, "--create-cycles") == 0) { TAKE(); cycles_only = atoi(v); }
        else if (strcmp(a, "--tempo") == 0) { TAKE(); tempo = atof(v); }
        else if (strcmp(a, "--plugin-id") == 0) { TAKE(); plugin_id = v; }
        else if (strcmp(a, "--param") == 0) {
            TAKE();
            const char *eq = strchr(v, '=');
            if (eq == NULL || param_count == 64) usage("--param ID=VALUE");
            param_sets[param_count].id = (clap_id)atoi(v);
            param_sets[param_count++].value = atof(eq + 1);
        }
        else usage("unknown option");
#undef TAKE
    }
    if (block == 0 || instances < 1 || instances > 2) usage("bad --block or --instances");

    void *library = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) { fprintf(stderr, "clap-host: %s\n", dlerror()); return 1; }
    const clap_plugin_entry_t *entry = dlsym(library, "clap_entry");
    if (entry == NULL) die("no clap_entry in the plugin");
    if (!clap_version_is_compatible(entry->clap_version)) die("incompatible CLAP version");
    if (!entry->init(plugin_path)) die("clap_entry.init failed");
    const clap_plugin_factory_t *factory = entry->get_factory(CLAP_PLUGIN_FACTORY_ID);
    if (factory == NULL || factory->get_plugin_count(factory) < 1) die("no plugin factory");
    const clap_plugin_descriptor_t *descriptor = factory->get_plugin_descriptor(factory, 0);
    printf("plugin %s %s\n", descriptor->id, descriptor->name);
    for (const char *const *f = descriptor->features; f && *f; f++) printf("feature %s\n", *f);
    printf("vendor %s\nurl %s\n", descriptor->vendor ? descriptor->vendor : "", descriptor->url ? descriptor->url : "");
    if (cycles_only > 0) {
        create_cycles(factory, plugin_id ? plugin_id : descriptor->id, cycles_only, rate, block);
        return 0;
    }

    instance all[2];
    memset(all, 0, sizeof all);
    for (int k = 0; k < instances; k++) {
        instance *in = &all[k];
        in->plugin = factory->create_plugin(factory, &host, plugin_id ? plugin_id : descriptor->id);
        if (in->plugin == NULL) die("create_plugin failed");
        if (!in->plugin->init(in->plugin)) die("plugin init failed");
        in->preset_load = in->plugin->get_extension(in->plugin, CLAP_EXT_PRESET_LOAD);
        in->state = in->plugin->get_extension(in->plugin, CLAP_EXT_STATE);
        in->params = in->plugin->get_extension(in->plugin, CLAP_EXT_PARAMS);
        in->latency = in->plugin->get_extension(in->plugin, CLAP_EXT_LATENCY);
        in->debug = in->plugin->get_extension(in->plugin, SPINET_CLAP_EXT_DEBUG);
        const clap_plugin_audio_ports_t *audio = in->plugin->get_extension(in->plugin, CLAP_EXT_AUDIO_PORTS);
        const clap_plugin_note_ports_t *notes = in->plugin->get_extension(in->plugin, CLAP_EXT_NOTE_PORTS);
        if (k == 0) {
            clap_audio_port_info_t ai;
            if (audio != NULL && audio->count(in->plugin, false) == 1 && audio->get(in->plugin, 0, false, &ai))
                printf("audio-out %u channels, %s%s\n", ai.channel_count, ai.port_type ? ai.port_type : "?",
                       (ai.flags & CLAP_AUDIO_PORT_IS_MAIN) ? ", main" : "");
            clap_note_port_info_t ni;
            if (notes != NULL && notes->count(in->plugin, true) == 1 && notes->get(in->plugin, 0, true, &ni))
                printf("note-in dialects %u preferred %u\n", ni.supported_dialects, ni.preferred_dialect);
            if (audio != NULL) printf("audio-in %u\n", audio->count(in->plugin, true));
        }
        if (audio == NULL || notes == NULL) die("the plugin lacks audio-ports or note-ports");
        if (print_params && k == 0 && in->params != NULL) {
            for (uint32_t p = 0; p < in->params->count(in->plugin); p++) {
                clap_param_info_t info;
                if (!in->params->get_info(in->plugin, p, &info)) die("params.get_info failed");
                double value = 0, back = 0;
                char text[64] = "";
                in->params->get_value(in->plugin, info.id, &value);
                in->params->value_to_text(in->plugin, info.id, value, text, sizeof text);
                bool parsed = in->params->text_to_value(in->plugin, info.id, text, &back);
                printf("param %u %s %s %g %g %g flags %u value %g text \"%s\" parsed %s %g\n", info.id, info.module,
                       info.name, info.min_value, info.max_value, info.default_value, info.flags, value, text,
                       parsed ? "yes" : "no", back);
            }
        }
        if (param_count > 0) {
            if (in->params == NULL) die("no params extension");
            block_events *b = calloc(1, sizeof *b);
            for (int p = 0; p < param_count; p++) {
                clap_event_param_value_t *e = &b->copies[p].param;
                memset(e, 0, sizeof *e);
                e->header.size = sizeof *e;
                e->header.type = CLAP_EVENT_PARAM_VALUE;
                e->param_id = param_sets[p].id;
                e->note_id = -1; e->port_index = -1; e->channel = -1; e->key = -1;
                e->value = param_sets[p].value;
                b->items[p] = &e->header;
            }
            b->count = (uint32_t)param_count;
            clap_input_events_t pin = { b, in_size, in_get };
            clap_output_events_t pout = { NULL, out_try_push };
            in->params->flush(in->plugin, &pin, &pout);
            free(b);
        }
        if (load_state != NULL) {
            if (in->state == NULL) die("no state extension");
            memory_stream m = { 0 };
            m.data = read_file(load_state, &m.length);
            m.chunk = chunk;
            clap_istream_t stream = { &m, istream_read };
            if (!in->state->load(in->plugin, &stream)) die("state load failed");
            free(m.data);
            printf("state-loaded %zu bytes\n", m.length);
        }
        if (!in->plugin->activate(in->plugin, rate, 1, block)) die("activate failed");
        if (!in->plugin->start_processing(in->plugin)) die("start_processing failed");
        in->events = read_events(events_path[k]);
        if (out_path[k] != NULL && (in->out = fopen(out_path[k], "wb")) == NULL) die("cannot open the output file");
        in->left = calloc(block, sizeof(float));
        in->right = calloc(block, sizeof(float));
        in->interleaved = calloc(2 * (size_t)block, sizeof(float));
        in->block = calloc(1, sizeof *in->block);
        if (in->latency != NULL) printf("latency%s %u\n", k ? "2" : "", in->latency->get(in->plugin));
    }

    if (probe) printf("probe-active %d\n", spinet_probe_is_active());
    uint64_t position = 0;
    int next_cycle = 0;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (position < total) {
        uint32_t frames = total - position < block ? (uint32_t)(total - position) : block;
        while (next_cycle < cycle_count && cycles[next_cycle] <= position) {
            for (int k = 0; k < instances; k++) {
                const clap_plugin_t *p = all[k].plugin;
                p->stop_processing(p);
                p->deactivate(p);
                if (!p->activate(p, rate, 1, block)) die("activate after deactivate failed");
                if (!p->start_processing(p)) die("start_processing failed");
            }
            printf("cycled-at %llu\n", (unsigned long long)position);
            next_cycle++;
        }
        for (int k = 0; k < instances; k++) process_block(&all[k], position, frames);
        position += frames;
        if (realtime) {
            double due = (double)position / rate;
            struct timespec at = start;
            at.tv_sec += (time_t)due;
            at.tv_nsec += (long)((due - (double)(time_t)due) * 1e9);
            if (at.tv_nsec >= 1000000000L) { at.tv_sec++; at.tv_nsec -= 1000000000L; }
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
        }
    }
    // A font still loading: wait for its result, as the main thread would.
    if (nowait_path[0] != '\0' && offer_preset_load && strcmp(preset_result, nowait_path) != 0) {
        printf("font-still-loading-at-end %s\n", nowait_path);
        int before = atomic_load(&callback_requests);
        all[0].plugin->on_main_thread(all[0].plugin);
        if (strcmp(preset_result, nowait_path) != 0) wait_for_font(&all[0], nowait_path, before);
    }

    for (int k = 0; k < instances; k++) {
        instance *in = &all[k];
        const char *suffix = k ? "2" : "";
        in->plugin->stop_processing(in->plugin);
        printf("process-calls%s %lu\n", suffix, in->calls);
        printf("process-seconds%s %.6f\n", suffix, in->seconds);
        if (probe) {
            printf("process-allocations%s %lu\n", suffix, in->probe.allocations);
            printf("process-frees%s %lu\n", suffix, in->probe.frees);
            printf("process-locks%s %lu\n", suffix, in->probe.locks);
            printf("max-process-allocations%s %lu\n", suffix, in->probe.max_allocations);
            printf("allocating-calls%s %lu\n", suffix, in->allocating_calls);
        }
        if (in->debug != NULL) {
            char path[4096];
            in->debug->soundfont_path(in->plugin, path, sizeof path);
            printf("soundfont%s %s\n", suffix, path);
            if (k == 0) printf("inline-parallel-regions %lu\n", in->debug->inline_parallel_regions());
        }
        if (k == 0) {
            unsigned long (*regions)(void) = (unsigned long (*)(void))dlsym(library, "spinet_plugin_inline_parallel_regions");
            printf("exported-inline-parallel-regions %s\n", regions != NULL ? "yes" : "no");
        }
        if (save_state != NULL && k == 0) {
            if (in->state == NULL) die("no state extension");
            memory_stream m = { 0 };
            m.chunk = chunk;
            clap_ostream_t stream = { &m, ostream_write };
            if (!in->state->save(in->plugin, &stream)) die("state save failed");
            FILE *f = fopen(save_state, "wb");
            if (f == NULL || fwrite(m.data, 1, m.length, f) != m.length || fclose(f) != 0) die("cannot write the state file");
            printf("state-saved %zu bytes\n", m.length);
            free(m.data);
        }
        if (note_names && k == 0) {
            in->plugin->on_main_thread(in->plugin);
            const clap_plugin_note_name_t *names = in->plugin->get_extension(in->plugin, CLAP_EXT_NOTE_NAME);
            if (names == NULL) die("no note-name extension");
            uint32_t count = names->count(in->plugin);
            for (uint32_t i = 0; i < count; i++) {
                clap_note_name_t name;
                if (!names->get(in->plugin, i, &name)) die("note-name get failed");
                printf("note-name %d %d %s\n", name.channel, name.key, name.name);
            }
            printf("note-names-changed %d\n", atomic_load(&note_names_changed));
        }
        in->plugin->deactivate(in->plugin);
        in->plugin->destroy(in->plugin);
        if (in->out != NULL && fclose(in->out) != 0) die("cannot close the output");
    }
    entry->deinit();
    fflush(stdout);
    if (unload) {
        // The plugin is linked -z nodelete: this must not unmap it (threads
        // that libfluidsynth's libgomp started live on).
        if (dlclose(library) != 0) die("dlclose failed");
        usleep(300000);
        printf("unloaded\n");
    }
    return 0;
}
