// A headless LV2 host on lilv, for Spinet's plugin tests (and for trying
// the plugin by hand). It loads one bundle, runs one or two instances in
// fixed blocks over an event list, and writes their output as float WAV.
//
//   lv2-host --bundle DIR [--rate 48000] [--block 512] [--frames N]
//            [--events FILE] [--out FILE.wav]
//            [--instances 2 --events2 FILE --out2 FILE.wav]
//            [--param SYMBOL=VALUE]...      control port values (instance 1)
//            [--restore-state DIR]          lilv state restored before activate
//            [--save-state DIR --save-at FRAME]   state saved at a block boundary
//            [--cycle-at FRAME]...          deactivate + activate at a block boundary
//            [--no-worker] [--minimal-features] [--no-map] [--no-options]
//            [--midnam FILE]                instance 1's MIDNAM document (Ardour's midnam
//                                           extension) written to FILE at the end
//            [--probe]                      count allocations/frees/locks in run()
//            [--pace]                       sleep a block's duration after each block
//                                           (a loader thread of the plugin's own then
//                                           gets real time to work, as in a live host)
//
// The event file has one event a line: `FRAME BYTE...` (hex MIDI bytes,
// e.g. `0 b0 00 7e`), `FRAME font PATH` (a patch:Set of spinet:soundfont),
// `FRAME get` (a patch:Get) or `FRAME tempo BPM` (a time:Position with
// time:beatsPerMinute); `#` starts a comment. Events are sorted by
// frame (the file's order on one frame) and go to the block that holds
// their frame, at their offset in it.
//
// It prints `key value` lines on stdout: latency, the probe's counts, the
// plugin's inline OpenMP regions, the notify port's patch:Set replies.
// Exit status: 0 ok, 2 usage, 3 instantiation failed, 4 other failure.
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lilv/lilv.h>
#include <lv2/atom/atom.h>
#include <lv2/atom/forge.h>
#include <lv2/atom/util.h>
#include <lv2/buf-size/buf-size.h>
#include <lv2/core/lv2.h>
#include <lv2/log/log.h>
#include <lv2/midi/midi.h>
#include <lv2/options/options.h>
#include <lv2/patch/patch.h>
#include <lv2/state/state.h>
#include <lv2/time/time.h>
#include <lv2/urid/urid.h>
#include <lv2/worker/worker.h>

#include "CRealtimeProbe.h"
#include "spinet_lv2.h"

#define ATOM_CAPACITY 65536
#define WORK_SLOTS 16
#define WORK_SIZE 8192
#define MAX_CYCLES 64

static void die(int code, const char *fmt, const char *arg) {
    fprintf(stderr, "lv2-host: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    exit(code);
}

// ---------------------------------------------------------------------------
// URID map: a plain table (the plugin maps its URIs at instantiation).

static char *uris[4096];
static uint32_t n_uris;

static LV2_URID map_uri(LV2_URID_Map_Handle h, const char *uri) {
    (void)h;
    for (uint32_t i = 0; i < n_uris; ++i)
        if (!strcmp(uris[i], uri)) return i + 1;
    if (n_uris == sizeof uris / sizeof uris[0]) return 0;
    uris[n_uris] = strdup(uri);
    return ++n_uris;
}

static const char *unmap_uri(LV2_URID_Unmap_Handle h, LV2_URID urid) {
    (void)h;
    return urid >= 1 && urid <= n_uris ? uris[urid - 1] : NULL;
}

static LV2_URID_Map map = {NULL, map_uri};
static LV2_URID_Unmap unmap = {NULL, unmap_uri};

static int log_vprintf(LV2_Log_Handle h, LV2_URID type, const char *fmt, va_list ap) {
    (void)h;
    fprintf(stderr, "host-log <%s>: ", unmap_uri(NULL, type) ? unmap_uri(NULL, type) : "?");
    return vfprintf(stderr, fmt, ap);
}

static int log_printf(LV2_Log_Handle h, LV2_URID type, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = log_vprintf(h, type, fmt, ap);
    va_end(ap);
    return r;
}

static LV2_Log_Log host_log = {NULL, log_printf, log_vprintf};

// ---------------------------------------------------------------------------
// Events

typedef enum { EV_MIDI, EV_FONT, EV_GET, EV_TEMPO } event_kind;
typedef struct {
    uint64_t frame;
    size_t line;   // the order in the file, for events on one frame
    event_kind kind;
    uint32_t size;
    uint8_t bytes[256];
    char path[1024];
    float tempo;
} event;

typedef struct {
    event *items;
    size_t count;
} event_list;

static int compare_events(const void *a, const void *b) {
    const event *x = a, *y = b;
    if (x->frame != y->frame) return x->frame < y->frame ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

static event_list read_events(const char *file) {
    event_list list = {NULL, 0};
    if (!file) return list;
    FILE *f = fopen(file, "r");
    if (!f) die(2, "cannot open %s", file);
    char line[2048];
    size_t capacity = 0;
    while (fgets(line, sizeof line, f)) {
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *p = line;
        while (*p == ' ' || *p == '\t') ++p;
        if (*p == '\0' || *p == '\n') continue;
        event e;
        memset(&e, 0, sizeof e);
        char *end;
        e.frame = strtoull(p, &end, 10);
        if (end == p) die(2, "bad event line: %s", line);
        p = end;
        while (*p == ' ' || *p == '\t') ++p;
        if (!strncmp(p, "font ", 5)) {
            e.kind = EV_FONT;
            p += 5;
            p[strcspn(p, "\n")] = '\0';
            snprintf(e.path, sizeof e.path, "%s", p);
        } else if (!strncmp(p, "get", 3)) {
            e.kind = EV_GET;
        } else if (!strncmp(p, "tempo ", 6)) {
            e.kind = EV_TEMPO;
            e.tempo = strtof(p + 6, NULL);
        } else {
            e.kind = EV_MIDI;
            for (;;) {
                unsigned long b = strtoul(p, &end, 16);
                if (end == p) break;
                if (e.size == sizeof e.bytes) die(2, "event too long: %s", line);
                e.bytes[e.size++] = (uint8_t)b;
                p = end;
            }
            if (e.size == 0) die(2, "bad event line: %s", line);
        }
        if (list.count == capacity) {
            capacity = capacity ? capacity * 2 : 64;
            list.items = realloc(list.items, capacity * sizeof *list.items);
        }
        e.line = list.count;
        list.items[list.count++] = e;
    }
    fclose(f);
    // In frame order (the file need not be), the file's order on one frame.
    qsort(list.items, list.count, sizeof *list.items, compare_events);
    return list;
}

// ---------------------------------------------------------------------------
// One plugin instance with its buffers, worker queue and probe counts

typedef struct {
    uint32_t size;
    uint8_t data[WORK_SIZE];
} work_item;

typedef struct {
    LilvInstance *instance;
    const LV2_Worker_Interface *worker;
    uint32_t index_control, index_notify, index_out_l, index_out_r, index_latency;
    uint32_t n_ports;
    float *control_values;     // one per port (control ports only used)
    bool *is_control_input;
    LV2_Atom_Sequence *control_buffer;
    LV2_Atom_Sequence *notify_buffer;
    float *left, *right;       // one block
    float *all_left, *all_right;
    float latency;
    event_list events;
    size_t next_event;
    work_item requests[WORK_SLOTS];
    uint32_t n_requests;
    work_item replies[WORK_SLOTS];
    uint32_t n_replies;
    uint32_t dropped_work;
    unsigned long midnam_updates;   // calls of the midnam#update feature
    // probe
    unsigned long runs;
    spinet_probe_totals probe;
    // The runs that allocated: how many, and the first one's index
    // (0-based, counted from the last activation).
    unsigned long allocating_runs, first_allocating_run, runs_since_activate;
    bool allocated;
    double run_seconds;
    const char *name;
} host_instance;

static LV2_Worker_Status schedule_work(LV2_Worker_Schedule_Handle handle, uint32_t size, const void *data) {
    host_instance *h = handle;
    if (h->n_requests == WORK_SLOTS || size > WORK_SIZE) {
        h->dropped_work++;
        return LV2_WORKER_ERR_NO_SPACE;
    }
    h->requests[h->n_requests].size = size;
    memcpy(h->requests[h->n_requests].data, data, size);
    h->n_requests++;
    return LV2_WORKER_SUCCESS;
}

static LV2_Worker_Status respond(LV2_Worker_Respond_Handle handle, uint32_t size, const void *data) {
    host_instance *h = handle;
    if (h->n_replies == WORK_SLOTS || size > WORK_SIZE) return LV2_WORKER_ERR_NO_SPACE;
    h->replies[h->n_replies].size = size;
    memcpy(h->replies[h->n_replies].data, data, size);
    h->n_replies++;
    return LV2_WORKER_SUCCESS;
}

// The worker runs synchronously between blocks (a deterministic host): the
// work is done after the run that scheduled it, its response delivered
// before the next run.
static void run_worker(host_instance *h) {
    if (!h->worker) return;
    for (uint32_t i = 0; i < h->n_requests; ++i) {
        h->worker->work(lilv_instance_get_handle(h->instance), respond, h, h->requests[i].size, h->requests[i].data);
    }
    h->n_requests = 0;
    for (uint32_t i = 0; i < h->n_replies; ++i) {
        h->worker->work_response(lilv_instance_get_handle(h->instance), h->replies[i].size, h->replies[i].data);
    }
    h->n_replies = 0;
    if (h->worker->end_run) h->worker->end_run(lilv_instance_get_handle(h->instance));
}

static const void *get_port_value(const char *symbol, void *user_data, uint32_t *size, uint32_t *type);
static void set_port_value(const char *symbol, void *user_data, const void *value, uint32_t size, uint32_t type);

static const LilvPlugin *g_plugin;
static LilvWorld *g_world;

static const void *get_port_value(const char *symbol, void *user_data, uint32_t *size, uint32_t *type) {
    host_instance *h = user_data;
    LilvNode *s = lilv_new_string(g_world, symbol);
    const LilvPort *port = lilv_plugin_get_port_by_symbol(g_plugin, s);
    lilv_node_free(s);
    if (!port) return NULL;
    uint32_t i = lilv_port_get_index(g_plugin, port);
    if (!h->is_control_input[i]) return NULL;
    *size = sizeof(float);
    *type = map_uri(NULL, LV2_ATOM__Float);
    return &h->control_values[i];
}

static void set_port_value(const char *symbol, void *user_data, const void *value, uint32_t size, uint32_t type) {
    host_instance *h = user_data;
    LilvNode *s = lilv_new_string(g_world, symbol);
    const LilvPort *port = lilv_plugin_get_port_by_symbol(g_plugin, s);
    lilv_node_free(s);
    if (!port) return;
    uint32_t i = lilv_port_get_index(g_plugin, port);
    if (!h->is_control_input[i] || size != sizeof(float) || type != map_uri(NULL, LV2_ATOM__Float)) return;
    h->control_values[i] = *(const float *)value;
}

static uint32_t port_index(const char *symbol) {
    LilvNode *s = lilv_new_string(g_world, symbol);
    const LilvPort *port = lilv_plugin_get_port_by_symbol(g_plugin, s);
    lilv_node_free(s);
    if (!port) die(4, "the plugin has no port %s", symbol);
    return lilv_port_get_index(g_plugin, port);
}

// Fills the instance's control sequence with the events in [start, start+n).
static void build_control(host_instance *h, LV2_Atom_Forge *forge, uint64_t start, uint32_t n) {
    lv2_atom_forge_set_buffer(forge, (uint8_t *)h->control_buffer, ATOM_CAPACITY);
    LV2_Atom_Forge_Frame seq;
    lv2_atom_forge_sequence_head(forge, &seq, 0);
    LV2_URID midi_event = map_uri(NULL, LV2_MIDI__MidiEvent);
    while (h->next_event < h->events.count && h->events.items[h->next_event].frame < start + n) {
        const event *e = &h->events.items[h->next_event++];
        int64_t offset = e->frame >= start ? (int64_t)(e->frame - start) : 0;
        lv2_atom_forge_frame_time(forge, offset);
        switch (e->kind) {
        case EV_MIDI:
            lv2_atom_forge_atom(forge, e->size, midi_event);
            lv2_atom_forge_write(forge, e->bytes, e->size);
            break;
        case EV_FONT: {
            LV2_Atom_Forge_Frame obj;
            lv2_atom_forge_object(forge, &obj, 0, map_uri(NULL, LV2_PATCH__Set));
            lv2_atom_forge_key(forge, map_uri(NULL, LV2_PATCH__property));
            lv2_atom_forge_urid(forge, map_uri(NULL, SPINET_LV2__soundfont));
            lv2_atom_forge_key(forge, map_uri(NULL, LV2_PATCH__value));
            lv2_atom_forge_path(forge, e->path, (uint32_t)strlen(e->path));
            lv2_atom_forge_pop(forge, &obj);
            break;
        }
        case EV_TEMPO: {
            LV2_Atom_Forge_Frame obj;
            lv2_atom_forge_object(forge, &obj, 0, map_uri(NULL, LV2_TIME__Position));
            lv2_atom_forge_key(forge, map_uri(NULL, LV2_TIME__beatsPerMinute));
            lv2_atom_forge_float(forge, e->tempo);
            lv2_atom_forge_pop(forge, &obj);
            break;
        }
        case EV_GET: {
            LV2_Atom_Forge_Frame obj;
            lv2_atom_forge_object(forge, &obj, 0, map_uri(NULL, LV2_PATCH__Get));
            lv2_atom_forge_key(forge, map_uri(NULL, LV2_PATCH__property));
            lv2_atom_forge_urid(forge, map_uri(NULL, SPINET_LV2__soundfont));
            lv2_atom_forge_pop(forge, &obj);
            break;
        }
        }
    }
    lv2_atom_forge_pop(forge, &seq);
    // The notify port: an empty chunk of its capacity, as LV2 asks.
    h->notify_buffer->atom.type = map_uri(NULL, LV2_ATOM__Chunk);
    h->notify_buffer->atom.size = ATOM_CAPACITY - sizeof(LV2_Atom);
}

// Ardour's midnam#update feature: the plugin asks (from run) to have its
// names read again.
static void midnam_update(LV2_Midnam_Handle handle) { ((host_instance *)handle)->midnam_updates++; }

static void print_notify(host_instance *h, uint64_t start) {
    LV2_URID object = map_uri(NULL, LV2_ATOM__Object), set = map_uri(NULL, LV2_PATCH__Set);
    LV2_URID property = map_uri(NULL, LV2_PATCH__property), value = map_uri(NULL, LV2_PATCH__value);
    if (h->notify_buffer->atom.type != map_uri(NULL, LV2_ATOM__Sequence)) return;
    LV2_ATOM_SEQUENCE_FOREACH(h->notify_buffer, ev) {
        if (ev->body.type != object) continue;
        const LV2_Atom_Object *obj = (const LV2_Atom_Object *)&ev->body;
        if (obj->body.otype != set) continue;
        const LV2_Atom *p = NULL, *v = NULL;
        lv2_atom_object_get(obj, property, &p, value, &v, 0);
        if (!p || !v || p->type != map_uri(NULL, LV2_ATOM__URID)) continue;
        const char *key = unmap_uri(NULL, ((const LV2_Atom_URID *)p)->body);
        if (key && !strcmp(key, SPINET_LV2__soundfont) && v->type == map_uri(NULL, LV2_ATOM__Path)) {
            printf("%s notify %llu soundfont %.*s\n", h->name, (unsigned long long)(start + ev->time.frames),
                   (int)v->size, (const char *)LV2_ATOM_BODY_CONST(v));
        }
    }
}

static void write_wav(const char *file, const float *left, const float *right, uint64_t frames, double rate) {
    FILE *f = fopen(file, "wb");
    if (!f) die(4, "cannot write %s", file);
    uint32_t data = (uint32_t)(frames * 8);
    uint8_t header[44];
    memcpy(header, "RIFF", 4);
    uint32_t v = 36 + data; memcpy(header + 4, &v, 4);
    memcpy(header + 8, "WAVEfmt ", 8);
    v = 16; memcpy(header + 16, &v, 4);
    uint16_t s = 3; memcpy(header + 20, &s, 2);      // IEEE float
    s = 2; memcpy(header + 22, &s, 2);
    v = (uint32_t)rate; memcpy(header + 24, &v, 4);
    v = (uint32_t)rate * 8; memcpy(header + 28, &v, 4);
    s = 8; memcpy(header + 32, &s, 2);
    s = 32; memcpy(header + 34, &s, 2);
    memcpy(header + 36, "data", 4);
    memcpy(header + 40, &data, 4);
    fwrite(header, 1, sizeof header, f);
    for (uint64_t i = 0; i < frames; ++i) {
        float pair[2] = {left[i], right[i]};
        fwrite(pair, sizeof(float), 2, f);
    }
    if (fclose(f) != 0) die(4, "cannot write %s", file);
}

// Saves instance 1's state (lilv) to `dir`/state.ttl. Files the state
// refers to outside `dir` are linked from inside it, as jalv does
// (scratch, copy, link and save directory all `dir`, made absolute first).
// Not without a link directory: lilv 0.24.14 then makes its link at
// `dir`/RELATIVE-PATH, which for a file outside `dir` is the file itself,
// and removes it first (it deleted system SoundFonts that way).
static void save_state(const char *dir, host_instance *h) {
    char absolute[4096];
    if (!realpath(dir, absolute)) {
        char command[4200];
        snprintf(command, sizeof command, "mkdir -p '%s'", dir);
        if (system(command) != 0 || !realpath(dir, absolute)) die(4, "cannot create %s", dir);
    }
    LilvState *state = lilv_state_new_from_instance(g_plugin, h->instance, &map, absolute, absolute, absolute, absolute,
                                                    get_port_value, h, LV2_STATE_IS_POD | LV2_STATE_IS_PORTABLE, NULL);
    if (!state || lilv_state_save(g_world, &map, &unmap, state, NULL, absolute, "state.ttl") != 0)
        die(4, "cannot save state to %s", dir);
    lilv_state_free(state);
}

// A crash in the plugin prints where it was (library + offset, for
// addr2line on the unstripped library) before the host dies of it.
static void crashed(int sig) {
    static const char head[] = "lv2-host: crashed; backtrace:\n";
    write(STDERR_FILENO, head, sizeof head - 1);
    void *frames[64];
    int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
    signal(sig, SIG_DFL);
    raise(sig);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const char *bundle = NULL, *events_file = NULL, *events_file2 = NULL, *out = NULL, *out2 = NULL;
    const char *save_dir = NULL, *restore_dir = NULL, *midnam_file = NULL;
    double rate = 48000;
    uint32_t block = 512;
    uint64_t frames = 48000, save_at = UINT64_MAX;
    uint64_t cycles[MAX_CYCLES];
    int n_cycles = 0, n_instances = 1;
    bool use_worker = true, minimal = false, no_map = false, use_options = true, probe = false, pace = false;
    const char *params[64];
    int n_params = 0;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (!strcmp(a, name) && next && (++i, true))
        if (ARG("--bundle")) bundle = next;
        else if (ARG("--rate")) rate = atof(next);
        else if (ARG("--block")) block = (uint32_t)atol(next);
        else if (ARG("--frames")) frames = strtoull(next, NULL, 10);
        else if (ARG("--events")) events_file = next;
        else if (ARG("--events2")) events_file2 = next;
        else if (ARG("--out")) out = next;
        else if (ARG("--out2")) out2 = next;
        else if (ARG("--instances")) n_instances = atoi(next);
        else if (ARG("--param")) { if (n_params < 64) params[n_params++] = next; }
        else if (ARG("--save-state")) save_dir = next;
        else if (ARG("--save-at")) save_at = strtoull(next, NULL, 10);
        else if (ARG("--restore-state")) restore_dir = next;
        else if (ARG("--midnam")) midnam_file = next;
        else if (ARG("--cycle-at")) { if (n_cycles < MAX_CYCLES) cycles[n_cycles++] = strtoull(next, NULL, 10); }
        else if (!strcmp(a, "--no-worker")) use_worker = false;
        else if (!strcmp(a, "--minimal-features")) minimal = true;
        else if (!strcmp(a, "--no-map")) no_map = true;
        else if (!strcmp(a, "--no-options")) use_options = false;
        else if (!strcmp(a, "--probe")) probe = true;
        else if (!strcmp(a, "--pace")) pace = true;
        else die(2, "unknown or incomplete option %s (see the comment at the top of lv2-host.c)", a);
#undef ARG
    }
    signal(SIGSEGV, crashed);
    signal(SIGBUS, crashed);
    signal(SIGABRT, crashed);
    { void *warm[1]; backtrace(warm, 1); }   // loads libgcc_s now, not in the handler
    if (!bundle || block == 0 || n_instances < 1 || n_instances > 2) die(2, "%s", "usage: lv2-host --bundle DIR ...");
    if (save_dir && save_at == UINT64_MAX) save_at = frames;

    // lilv: the system specifications (for the plugin class) and the bundle.
    g_world = lilv_world_new();
    lilv_world_load_specifications(g_world);
    lilv_world_load_plugin_classes(g_world);
    char bundle_path[4096];
    char *real = realpath(bundle, NULL);
    if (!real) die(4, "no bundle at %s", bundle);
    snprintf(bundle_path, sizeof bundle_path, "%s/", real);
    free(real);
    LilvNode *bundle_uri = lilv_new_file_uri(g_world, NULL, bundle_path);
    lilv_world_load_bundle(g_world, bundle_uri);
    LilvNode *plugin_uri = lilv_new_uri(g_world, SPINET_LV2_URI);
    g_plugin = lilv_plugins_get_by_uri(lilv_world_get_all_plugins(g_world), plugin_uri);
    if (!g_plugin) die(4, "no plugin <%s> in the bundle", SPINET_LV2_URI);

    // Features: urid:map (unless --no-map), and unless --minimal-features
    // log, worker, options (block sizes).
    int32_t max_block = (int32_t)block;
    LV2_Options_Option options[] = {
        {LV2_OPTIONS_INSTANCE, 0, map_uri(NULL, LV2_BUF_SIZE__maxBlockLength), sizeof(int32_t), map_uri(NULL, LV2_ATOM__Int), &max_block},
        {LV2_OPTIONS_INSTANCE, 0, map_uri(NULL, LV2_BUF_SIZE__nominalBlockLength), sizeof(int32_t), map_uri(NULL, LV2_ATOM__Int), &max_block},
        {LV2_OPTIONS_INSTANCE, 0, 0, 0, 0, NULL},
    };
    LV2_Feature map_feature = {LV2_URID__map, &map};
    LV2_Feature unmap_feature = {LV2_URID__unmap, &unmap};
    LV2_Feature log_feature = {LV2_LOG__log, &host_log};
    LV2_Feature options_feature = {LV2_OPTIONS__options, options};

    host_instance hosts[2];
    memset(hosts, 0, sizeof hosts);
    LV2_Atom_Forge forge;
    lv2_atom_forge_init(&forge, &map);
    uint32_t n_ports = lilv_plugin_get_num_ports(g_plugin);
    float *mins = calloc(n_ports, sizeof(float)), *maxs = calloc(n_ports, sizeof(float)), *defs = calloc(n_ports, sizeof(float));
    lilv_plugin_get_port_ranges_float(g_plugin, mins, maxs, defs);
    LilvNode *control_class = lilv_new_uri(g_world, LV2_CORE__ControlPort);
    LilvNode *input_class = lilv_new_uri(g_world, LV2_CORE__InputPort);

    for (int k = 0; k < n_instances; ++k) {
        host_instance *h = &hosts[k];
        h->name = k == 0 ? "instance1" : "instance2";
        LV2_Feature schedule_feature = {LV2_WORKER__schedule, NULL};
        LV2_Worker_Schedule *schedule = calloc(1, sizeof *schedule);
        schedule->handle = h;
        schedule->schedule_work = schedule_work;
        schedule_feature.data = schedule;
        LV2_Midnam *midnam = calloc(1, sizeof *midnam);
        midnam->handle = h;
        midnam->update = midnam_update;
        LV2_Feature midnam_feature = {LV2_MIDNAM__update, midnam};
        const LV2_Feature *features[9];
        int n = 0;
        if (!no_map) features[n++] = &map_feature;
        if (!minimal) {
            features[n++] = &unmap_feature;
            features[n++] = &log_feature;
            if (use_worker) features[n++] = &schedule_feature;
            if (use_options) features[n++] = &options_feature;
            features[n++] = &midnam_feature;
        }
        features[n] = NULL;
        h->instance = lilv_plugin_instantiate(g_plugin, rate, features);
        if (!h->instance) {
            fprintf(stderr, "lv2-host: instantiation failed\n");
            return 3;
        }
        if (use_worker && !minimal) h->worker = lilv_instance_get_extension_data(h->instance, LV2_WORKER__interface);
        h->n_ports = n_ports;
        h->control_values = calloc(n_ports, sizeof(float));
        h->is_control_input = calloc(n_ports, sizeof(bool));
        for (uint32_t i = 0; i < n_ports; ++i) {
            const LilvPort *port = lilv_plugin_get_port_by_index(g_plugin, i);
            h->is_control_input[i] = lilv_port_is_a(g_plugin, port, control_class) && lilv_port_is_a(g_plugin, port, input_class);
            h->control_values[i] = isnan(defs[i]) ? 0 : defs[i];
        }
        h->index_control = port_index("control");
        h->index_notify = port_index("notify");
        h->index_out_l = port_index("out_l");
        h->index_out_r = port_index("out_r");
        h->index_latency = port_index("latency");
        h->control_buffer = aligned_alloc(64, ATOM_CAPACITY);
        h->notify_buffer = aligned_alloc(64, ATOM_CAPACITY);
        h->left = calloc(block, sizeof(float));
        h->right = calloc(block, sizeof(float));
        h->all_left = calloc(frames + 1, sizeof(float));
        h->all_right = calloc(frames + 1, sizeof(float));
        h->events = read_events(k == 0 ? events_file : events_file2);
        if (k == 0) {
            for (int p = 0; p < n_params; ++p) {
                char symbol[128];
                const char *eq = strchr(params[p], '=');
                if (!eq || (size_t)(eq - params[p]) >= sizeof symbol) die(2, "bad --param %s", params[p]);
                memcpy(symbol, params[p], (size_t)(eq - params[p]));
                symbol[eq - params[p]] = '\0';
                h->control_values[port_index(symbol)] = (float)atof(eq + 1);
            }
        }
        for (uint32_t i = 0; i < n_ports; ++i) {
            if (h->is_control_input[i]) lilv_instance_connect_port(h->instance, i, &h->control_values[i]);
        }
        lilv_instance_connect_port(h->instance, h->index_control, h->control_buffer);
        lilv_instance_connect_port(h->instance, h->index_notify, h->notify_buffer);
        lilv_instance_connect_port(h->instance, h->index_out_l, h->left);
        lilv_instance_connect_port(h->instance, h->index_out_r, h->right);
        lilv_instance_connect_port(h->instance, h->index_latency, &h->latency);

        if (restore_dir) {
            char file[4096];
            snprintf(file, sizeof file, "%s/state.ttl", restore_dir);
            LilvState *state = lilv_state_new_from_file(g_world, &map, NULL, file);
            if (!state) die(4, "cannot read state %s", file);
            const LV2_Feature *state_features[] = {&map_feature, &log_feature, NULL};
            lilv_state_restore(state, h->instance, set_port_value, h, 0, state_features);
            lilv_state_free(state);
            printf("%s restored %s\n", h->name, restore_dir);
        }
        lilv_instance_activate(h->instance);
    }

    const spinet_lv2_inline_regions *regions =
        lilv_instance_get_extension_data(hosts[0].instance, SPINET_LV2__inlineRegions);
    unsigned long regions_before = regions ? regions->count() : 0;
    if (probe && !spinet_probe_is_active()) fprintf(stderr, "lv2-host: the allocation probe is not active\n");

    int next_cycle = 0;
    for (uint64_t start = 0; start < frames; start += block) {
        uint32_t n = (uint32_t)(frames - start < block ? frames - start : block);
        if (save_dir && start >= save_at) {
            save_state(save_dir, &hosts[0]);
            printf("saved %s at %llu\n", save_dir, (unsigned long long)start);
            save_dir = NULL;
        }
        while (next_cycle < n_cycles && start >= cycles[next_cycle]) {
            for (int k = 0; k < n_instances; ++k) {
                lilv_instance_deactivate(hosts[k].instance);
                lilv_instance_activate(hosts[k].instance);
                hosts[k].runs_since_activate = 0;
            }
            printf("cycled at %llu\n", (unsigned long long)start);
            ++next_cycle;
        }
        for (int k = 0; k < n_instances; ++k) {
            host_instance *h = &hosts[k];
            build_control(h, &forge, start, n);
            double t0 = now();
            if (probe) spinet_probe_begin();
            lilv_instance_run(h->instance, n);
            if (probe) {
                unsigned long a = spinet_probe_end_adding(&h->probe);
                if (a > 0) {
                    if (!h->allocated) h->first_allocating_run = h->runs_since_activate;
                    h->allocated = true;
                    h->allocating_runs++;
                    if (getenv("LV2_HOST_TRACE_ALLOCATIONS"))
                        fprintf(stderr, "lv2-host: %s run %lu (frame %llu, %lu since activation) allocated %lu\n", h->name,
                                h->runs, (unsigned long long)start, h->runs_since_activate, a);
                }
            }
            h->run_seconds += now() - t0;
            h->runs++;
            h->runs_since_activate++;
            memcpy(h->all_left + start, h->left, n * sizeof(float));
            memcpy(h->all_right + start, h->right, n * sizeof(float));
            print_notify(h, start);
            run_worker(h);
        }
        if (pace) {
            double seconds = (double)n / rate;
            struct timespec t = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
            nanosleep(&t, NULL);
        }
    }
    // A state asked for at the very end.
    if (save_dir) {
        save_state(save_dir, &hosts[0]);
        printf("saved %s at %llu\n", save_dir, (unsigned long long)frames);
    }

    for (int k = 0; k < n_instances; ++k) {
        host_instance *h = &hosts[k];
        printf("%s latency %.0f\n", h->name, h->latency);
        printf("%s runs %lu seconds %.6f\n", h->name, h->runs, h->run_seconds);
        if (probe) {
            printf("%s allocations %lu frees %lu locks %lu max_allocations_per_run %lu allocating_runs %lu first_allocating_run %ld\n",
                   h->name, h->probe.allocations, h->probe.frees, h->probe.locks, h->probe.max_allocations, h->allocating_runs,
                   h->allocated ? (long)h->first_allocating_run : -1L);
        }
        if (h->dropped_work) printf("%s dropped_work %u\n", h->name, h->dropped_work);
        printf("%s midnam_updates %lu\n", h->name, h->midnam_updates);
    }
    if (probe) printf("probe_active %d\n", spinet_probe_is_active());
    // The plugin's GOMP_parallel ran libfluidsynth's one-thread regions
    // (while loading fonts, and while rendering if the library opens any).
    if (regions) printf("inline_regions %lu in_runs %lu\n", regions->count(), regions->count() - regions_before);
    // The process's threads now (the host's one, and any the plugin or its
    // libraries started and still run: libgomp keeps a pool).
    int threads = 0;
    DIR *tasks = opendir("/proc/self/task");
    for (struct dirent *d; tasks && (d = readdir(tasks));) threads += d->d_name[0] != '.';
    if (tasks) closedir(tasks);
    printf("threads %d\n", threads);
    if (midnam_file) {
        const LV2_Midnam_Interface *names = lilv_instance_get_extension_data(hosts[0].instance, LV2_MIDNAM__interface);
        if (!names) die(4, "%s", "the plugin has no midnam interface");
        char *xml = names->midnam(lilv_instance_get_handle(hosts[0].instance));
        char *model = names->model(lilv_instance_get_handle(hosts[0].instance));
        if (!xml || !model) die(4, "%s", "the plugin gave no MIDNAM document");
        FILE *f = fopen(midnam_file, "w");
        if (!f || fputs(xml, f) < 0 || fclose(f) != 0) die(4, "cannot write %s", midnam_file);
        printf("midnam_model %s\n", model);
        names->free(xml);
        names->free(model);
    }
    if (out) write_wav(out, hosts[0].all_left, hosts[0].all_right, frames, rate);
    if (out2 && n_instances == 2) write_wav(out2, hosts[1].all_left, hosts[1].all_right, frames, rate);

    for (int k = 0; k < n_instances; ++k) {
        lilv_instance_deactivate(hosts[k].instance);
        lilv_instance_free(hosts[k].instance);
    }
    lilv_node_free(control_class);
    lilv_node_free(input_class);
    lilv_node_free(plugin_uri);
    lilv_node_free(bundle_uri);
    lilv_world_free(g_world);
    return 0;
}
