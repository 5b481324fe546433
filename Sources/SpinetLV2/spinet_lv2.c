// Spinet as an LV2 instrument: the glue between an LV2 host and the plugin
// core (include/spinet_plugin.h). One file, read top to bottom, like LV2's
// eg-sampler: ports, the run loop, the SoundFont file parameter (patch:Set
// through the worker), state, and the descriptor.
//
// Threads (LV2's threading classes):
//   - instantiate, activate, deactivate, cleanup, state save/restore: the
//     host's instantiation thread;
//   - run, work_response: the audio thread. They allocate nothing, take no
//     lock and never log: events are copied into a preallocated array, and
//     a SoundFont change is handed to the worker (or, in a host without the
//     worker feature, asked of the core, whose loader thread loads it);
//   - work: the host's worker thread, where the core loads the font (the
//     same load as its own loader's).
#define _GNU_SOURCE
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lv2/atom/atom.h>
#include <lv2/atom/forge.h>
#include <lv2/atom/util.h>
#include <lv2/buf-size/buf-size.h>
#include <lv2/core/lv2.h>
#include <lv2/core/lv2_util.h>
#include <lv2/log/log.h>
#include <lv2/log/logger.h>
#include <lv2/midi/midi.h>
#include <lv2/options/options.h>
#include <lv2/patch/patch.h>
#include <lv2/state/state.h>
#include <lv2/time/time.h>
#include <lv2/urid/urid.h>
#include <lv2/worker/worker.h>

#include "spinet_plugin.h"
#include "spinet_lv2.h"

// The port indices of spinet.ttl.
enum {
    PORT_CONTROL = 0,   // atom:Sequence in: MIDI and patch messages
    PORT_NOTIFY = 1,    // atom:Sequence out: patch:Set replies
    PORT_OUT_L = 2,
    PORT_OUT_R = 3,
    PORT_PARAM = 4,     // PORT_PARAM + spinet_param_id: gain ... ceiling
    PORT_LATENCY = PORT_PARAM + SPINET_PARAM_COUNT,
    PORT_COUNT
};

// MIDI events one run call collects before it renders; more in one block
// are rendered in pieces (split at the event's frame).
#define EVENT_CAPACITY 512
// The longest SoundFont path the audio thread handles (patch:Get replies,
// loader requests). Longer paths still load through state restore.
#define PATH_CAPACITY 4096

typedef struct {
    LV2_URID atom_Path, atom_String, atom_URID, atom_Int, atom_Long;
    LV2_URID atom_Object, atom_Blank, atom_Float, atom_Double, atom_Sequence, midi_MidiEvent;
    LV2_URID time_Position, time_beatsPerMinute;
    LV2_URID patch_Set, patch_Get, patch_property, patch_value;
    LV2_URID spinet_soundfont, spinet_settings;
    LV2_URID bufsz_maxBlockLength, bufsz_nominalBlockLength;
} uris_t;

// The worker's reply to a font load: the status and the path now in use
// (sent only up to the path's NUL).
typedef struct {
    int32_t status;
    char path[PATH_CAPACITY];
} load_reply;

typedef struct {
    spinet_plugin *core;
    LV2_URID_Map *map;
    LV2_Log_Logger logger;
    LV2_Worker_Schedule *schedule;
    uris_t uris;
    LV2_Atom_Forge forge;
    uint32_t max_block;

    const LV2_Atom_Sequence *control;
    LV2_Atom_Sequence *notify;
    float *out_l, *out_r;
    const float *params[SPINET_PARAM_COUNT];
    float *latency;

    float last_param[SPINET_PARAM_COUNT];
    bool param_sent[SPINET_PARAM_COUNT];

    spinet_midi_event events[EVENT_CAPACITY];

    // The SoundFont path as the audio thread knows it (for patch:Get), and
    // whether a patch:Set telling it is due on notify.
    char font_path[PATH_CAPACITY];
    bool font_path_due;

    // A font load, its result and the names it changes, kept together: a
    // host may save state on its main thread while the worker loads a
    // font. Never taken in run, nor by the core's loader thread.
    pthread_mutex_t nonrt_lock;

    // Program and drum key names (midnam): the document, rebuilt off the
    // audio thread after every font change and state restore (one rebuild
    // at a time, under refresh_lock; the swap under names_lock, which the
    // host's midnam call takes too), and whether run should ask the host
    // to read it again.
    LV2_Midnam *midnam_host;
    pthread_mutex_t refresh_lock;
    pthread_mutex_t names_lock;
    char *names_xml;
    atomic_bool names_due;
} spinet_lv2;

static void map_uris(LV2_URID_Map *map, uris_t *u) {
    u->atom_Path = map->map(map->handle, LV2_ATOM__Path);
    u->atom_String = map->map(map->handle, LV2_ATOM__String);
    u->atom_URID = map->map(map->handle, LV2_ATOM__URID);
    u->atom_Int = map->map(map->handle, LV2_ATOM__Int);
    u->atom_Long = map->map(map->handle, LV2_ATOM__Long);
    u->atom_Object = map->map(map->handle, LV2_ATOM__Object);
    u->atom_Blank = map->map(map->handle, LV2_ATOM__Blank);
    u->atom_Float = map->map(map->handle, LV2_ATOM__Float);
    u->atom_Double = map->map(map->handle, LV2_ATOM__Double);
    u->time_Position = map->map(map->handle, LV2_TIME__Position);
    u->time_beatsPerMinute = map->map(map->handle, LV2_TIME__beatsPerMinute);
    u->atom_Sequence = map->map(map->handle, LV2_ATOM__Sequence);
    u->midi_MidiEvent = map->map(map->handle, LV2_MIDI__MidiEvent);
    u->patch_Set = map->map(map->handle, LV2_PATCH__Set);
    u->patch_Get = map->map(map->handle, LV2_PATCH__Get);
    u->patch_property = map->map(map->handle, LV2_PATCH__property);
    u->patch_value = map->map(map->handle, LV2_PATCH__value);
    u->spinet_soundfont = map->map(map->handle, SPINET_LV2__soundfont);
    u->spinet_settings = map->map(map->handle, SPINET_LV2__settings);
    u->bufsz_maxBlockLength = map->map(map->handle, LV2_BUF_SIZE__maxBlockLength);
    u->bufsz_nominalBlockLength = map->map(map->handle, LV2_BUF_SIZE__nominalBlockLength);
}

// The core's log lines go to the host's log (or stderr, logger.h's
// fallback). The core never logs from process.
static void core_log(void *context, int level, const char *line) {
    spinet_lv2 *self = context;
    switch (level) {
    case SPINET_LOG_ERROR: lv2_log_error(&self->logger, "spinet: %s\n", line); break;
    case SPINET_LOG_WARNING: lv2_log_warning(&self->logger, "spinet: %s\n", line); break;
    default: lv2_log_note(&self->logger, "spinet: %s\n", line); break;
    }
}

// Copies the core's current font path into the audio thread's copy.
// Not on the audio thread (soundfont_path is a non-real-time call).
static void refresh_font_path(spinet_lv2 *self) {
    spinet_plugin_soundfont_path(self->core, self->font_path, sizeof self->font_path);
    self->font_path_due = true;
}

// ---------------------------------------------------------------------------
// Program names: the core's name table as a MIDNAM document

typedef struct {
    char *text;
    size_t length, capacity;
    bool failed;
} text_buffer;

static void append(text_buffer *b, const char *format, ...) {
    if (b->failed) return;
    for (;;) {
        va_list args;
        va_start(args, format);
        int n = vsnprintf(b->text ? b->text + b->length : NULL, b->text ? b->capacity - b->length : 0, format, args);
        va_end(args);
        if (n < 0) { b->failed = true; return; }
        if (b->text && b->length + (size_t)n < b->capacity) { b->length += (size_t)n; return; }
        size_t capacity = b->capacity ? b->capacity * 2 : 65536;
        while (capacity <= b->length + (size_t)n) capacity *= 2;
        char *bigger = realloc(b->text, capacity);
        if (!bigger) { b->failed = true; return; }
        b->text = bigger;
        b->capacity = capacity;
    }
}

// `text` with XML's five special characters escaped.
static void append_escaped(text_buffer *b, const char *text) {
    for (const char *c = text; *c; ++c) {
        switch (*c) {
        case '&': append(b, "&amp;"); break;
        case '<': append(b, "&lt;"); break;
        case '>': append(b, "&gt;"); break;
        case '"': append(b, "&quot;"); break;
        case '\'': append(b, "&apos;"); break;
        default: append(b, "%c", *c); break;
        }
    }
}

// The banks of `t` on one kind of channel (drums: bank 128 only; the
// others: every other bank), as MIDNAM PatchBanks. A bank is chosen by
// Bank Select MSB (FluidSynth's GS mode; 126 is Spinet's synth); the kits
// of bank 128 by program change on channel 10 (there FluidSynth ignores
// Bank Select).
static void append_banks(text_buffer *b, const spinet_name_table *t, bool drums) {
    for (uint32_t i = 0; i < t->program_count;) {
        uint32_t bank = t->programs[i].bank;
        uint32_t end = i;
        while (end < t->program_count && t->programs[end].bank == bank) ++end;
        if ((bank == 128) != drums) { i = end; continue; }
        const char *label = bank == 128 ? "Drum kits" : bank == 126 ? "Spinet synth" : "Bank";
        append(b, "    <PatchBank Name=\"%s %u\">\n      <MIDICommands>\n", label, bank);
        append(b, "        <ControlChange Control=\"0\" Value=\"%u\"/>\n", bank >> 7 ? bank >> 7 : bank);
        append(b, "        <ControlChange Control=\"32\" Value=\"0\"/>\n      </MIDICommands>\n      <PatchNameList>\n");
        for (; i < end; ++i) {
            const spinet_program_name *p = &t->programs[i];
            append(b, "        <Patch Number=\"%u\" Name=\"", p->program);
            append_escaped(b, p->name);
            append(b, "\" ProgramChange=\"%u\"", p->program);
            bool has_keys = false;
            for (uint32_t k = 0; k < t->key_count && !has_keys; ++k)
                has_keys = t->keys[k].bank == p->bank && t->keys[k].program == p->program;
            if (has_keys) append(b, ">\n          <UsesNoteNameList Name=\"Keys %u.%u\"/>\n        </Patch>\n", p->bank, p->program);
            else append(b, "/>\n");
        }
        append(b, "      </PatchNameList>\n    </PatchBank>\n");
    }
}

// The whole document for `model` (malloc'ed; NULL when out of memory).
static char *midnam_document(const spinet_name_table *t, const char *model) {
    text_buffer b = {0};
    append(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<!DOCTYPE MIDINameDocument PUBLIC \"-//MIDI Manufacturers Association//DTD MIDINameDocument 1.0//EN\" "
               "\"http://www.midi.org/dtds/MIDINameDocument10.dtd\">\n"
               "<MIDINameDocument>\n  <Author>The Spinet developers</Author>\n  <MasterDeviceNames>\n"
               "  <Manufacturer>Spinet</Manufacturer>\n  <Model>%s</Model>\n"
               "  <CustomDeviceMode Name=\"Default\">\n    <ChannelNameSetAssignments>\n", model);
    for (int c = 1; c <= 16; ++c)
        append(&b, "      <ChannelNameSetAssign Channel=\"%d\" NameSet=\"%s\"/>\n", c, c == 10 ? "Drums" : "Instruments");
    append(&b, "    </ChannelNameSetAssignments>\n  </CustomDeviceMode>\n");
    for (int drums = 0; drums < 2; ++drums) {
        append(&b, "  <ChannelNameSet Name=\"%s\">\n    <AvailableForChannels>\n", drums ? "Drums" : "Instruments");
        for (int c = 1; c <= 16; ++c)
            append(&b, "      <AvailableChannel Channel=\"%d\" Available=\"%s\"/>\n", c, (c == 10) == (drums != 0) ? "true" : "false");
        append(&b, "    </AvailableForChannels>\n");
        append_banks(&b, t, drums);
        append(&b, "  </ChannelNameSet>\n");
    }
    for (uint32_t k = 0; k < t->key_count;) {
        uint32_t bank = t->keys[k].bank, program = t->keys[k].program;
        append(&b, "  <NoteNameList Name=\"Keys %u.%u\">\n", bank, program);
        for (; k < t->key_count && t->keys[k].bank == bank && t->keys[k].program == program; ++k) {
            append(&b, "    <Note Number=\"%u\" Name=\"", t->keys[k].key);
            append_escaped(&b, t->keys[k].name);
            append(&b, "\"/>\n");
        }
        append(&b, "  </NoteNameList>\n");
    }
    append(&b, "  </MasterDeviceNames>\n</MIDINameDocument>\n");
    if (b.failed) { free(b.text); return NULL; }
    return b.text;
}

static void model_name(const spinet_lv2 *self, char *buffer, size_t capacity) {
    snprintf(buffer, capacity, "Spinet:%p", (const void *)self);
}

// Rebuilds the document from the core's current names (not on the audio
// thread), and has the next run tell the host.
static void refresh_names(spinet_lv2 *self) {
    pthread_mutex_lock(&self->refresh_lock);
    spinet_name_table *table = spinet_plugin_name_table(self->core);
    char *xml = NULL;
    if (table) {
        char model[64];
        model_name(self, model, sizeof model);
        xml = midnam_document(table, model);
        spinet_plugin_free_name_table(table);
    }
    if (xml) {
        pthread_mutex_lock(&self->names_lock);
        char *old = self->names_xml;
        self->names_xml = xml;
        pthread_mutex_unlock(&self->names_lock);
        free(old);
        atomic_store_explicit(&self->names_due, true, memory_order_release);
    }
    pthread_mutex_unlock(&self->refresh_lock);
}

// The core's loader thread finished a font it was asked for (a host
// without the worker): the names follow it. run takes the result.
static void font_loaded(void *context, int status) {
    if (status == 0) refresh_names(context);
}

static char *midnam(void *instance) {
    spinet_lv2 *self = instance;
    pthread_mutex_lock(&self->names_lock);
    char *copy = self->names_xml ? strdup(self->names_xml) : NULL;
    pthread_mutex_unlock(&self->names_lock);
    return copy;
}

static char *midnam_model(void *instance) {
    char *model = malloc(64);
    if (model) model_name(instance, model, 64);
    return model;
}

static void midnam_free(char *string) { free(string); }

// ---------------------------------------------------------------------------
// Instantiation

static LV2_Handle instantiate(const LV2_Descriptor *descriptor, double rate, const char *bundle_path,
                              const LV2_Feature *const *features) {
    (void)descriptor;
    spinet_lv2 *self = calloc(1, sizeof *self);
    if (!self) return NULL;
    LV2_Log_Log *log = NULL;
    const LV2_Options_Option *options = NULL;
    const char *missing = lv2_features_query(features,
                                             LV2_LOG__log, &log, false,
                                             LV2_URID__map, &self->map, true,
                                             LV2_WORKER__schedule, &self->schedule, false,
                                             LV2_OPTIONS__options, &options, false,
                                             LV2_MIDNAM__update, &self->midnam_host, false,
                                             NULL);
    lv2_log_logger_init(&self->logger, self->map, log);
    if (missing) {
        lv2_log_error(&self->logger, "spinet: the host does not give the required feature <%s>\n", missing);
        free(self);
        return NULL;
    }
    map_uris(self->map, &self->uris);
    lv2_atom_forge_init(&self->forge, self->map);

    // The block size, if the host says it (bufsz); 0 means unknown.
    for (const LV2_Options_Option *o = options; o && o->key; ++o) {
        if (o->context != LV2_OPTIONS_INSTANCE || o->type != self->uris.atom_Int) continue;
        if (o->key == self->uris.bufsz_maxBlockLength) {
            self->max_block = (uint32_t)*(const int32_t *)o->value;
        } else if (o->key == self->uris.bufsz_nominalBlockLength && self->max_block == 0) {
            self->max_block = (uint32_t)*(const int32_t *)o->value;
        }
    }

    // The bundle directory without its trailing slash (LV2 gives one).
    char bundle[4096];
    size_t length = bundle_path ? strnlen(bundle_path, sizeof bundle - 1) : 0;
    memcpy(bundle, bundle_path ? bundle_path : "", length);
    while (length > 1 && bundle[length - 1] == '/') --length;
    bundle[length] = '\0';
    self->core = spinet_plugin_create(rate, length ? bundle : NULL, core_log, self);
    if (!self->core) {
        lv2_log_error(&self->logger, "spinet: the plugin could not be created (see above)\n");
        free(self);
        return NULL;
    }
    pthread_mutex_init(&self->nonrt_lock, NULL);
    pthread_mutex_init(&self->refresh_lock, NULL);
    pthread_mutex_init(&self->names_lock, NULL);
    refresh_names(self);
    if (!self->schedule) spinet_plugin_set_soundfont_listener(self->core, font_loaded, self);
    refresh_font_path(self);
    self->font_path_due = false;
    return self;
}

static void connect_port(LV2_Handle instance, uint32_t port, void *data) {
    spinet_lv2 *self = instance;
    switch (port) {
    case PORT_CONTROL: self->control = data; break;
    case PORT_NOTIFY: self->notify = data; break;
    case PORT_OUT_L: self->out_l = data; break;
    case PORT_OUT_R: self->out_r = data; break;
    case PORT_LATENCY: self->latency = data; break;
    default:
        if (port >= PORT_PARAM && port < PORT_PARAM + SPINET_PARAM_COUNT) self->params[port - PORT_PARAM] = data;
        break;
    }
}

static void activate(LV2_Handle instance) {
    spinet_lv2 *self = instance;
    if (spinet_plugin_activate(self->core, self->max_block) != 0) {
        lv2_log_error(&self->logger, "spinet: activation failed\n");
    }
    // Parameters are sent again on the first run (the ports keep their
    // values; the core keeps its, so this only re-asserts them).
    for (int i = 0; i < SPINET_PARAM_COUNT; ++i) self->param_sent[i] = false;
}

static void deactivate(LV2_Handle instance) {
    spinet_lv2 *self = instance;
    spinet_plugin_deactivate(self->core);
}

static void cleanup(LV2_Handle instance) {
    spinet_lv2 *self = instance;
    spinet_plugin_destroy(self->core);
    pthread_mutex_destroy(&self->nonrt_lock);
    pthread_mutex_destroy(&self->refresh_lock);
    pthread_mutex_destroy(&self->names_lock);
    free(self->names_xml);
    free(self);
}

// ---------------------------------------------------------------------------
// run: the audio thread

// Renders [*start, until) with the collected events (offsets made relative
// to *start), then starts a new piece at `until`.
static void render_piece(spinet_lv2 *self, uint32_t *start, uint32_t until, uint32_t *count) {
    for (uint32_t i = 0; i < *count; ++i) self->events[i].offset -= *start;
    spinet_plugin_process(self->core, until - *start, self->out_l + *start, self->out_r + *start, self->events, *count);
    *start = until;
    *count = 0;
}

// A patch:Set of spinet:soundfont: the path goes to the worker (or, without
// one, to the core's loader).
static void request_font(spinet_lv2 *self, const LV2_Atom *value) {
    if (!value || value->type != self->uris.atom_Path || value->size == 0) return;
    const char *path = LV2_ATOM_BODY_CONST(value);
    size_t length = strnlen(path, value->size);
    if (length == 0 || length >= PATH_CAPACITY) return;
    if (self->schedule) {
        // The worker copies the message; the path's NUL goes with it.
        self->schedule->schedule_work(self->schedule->handle, (uint32_t)length + 1, path);
    } else {
        spinet_plugin_request_soundfont(self->core, path, length);
    }
}

static void handle_patch(spinet_lv2 *self, const LV2_Atom_Object *object) {
    const uris_t *u = &self->uris;
    const LV2_Atom *property = NULL, *value = NULL;
    lv2_atom_object_get(object, u->patch_property, &property, u->patch_value, &value, 0);
    bool about_font = !property ||
                      (property->type == u->atom_URID && ((const LV2_Atom_URID *)property)->body == u->spinet_soundfont);
    if (object->body.otype == u->patch_Set) {
        if (property && about_font) request_font(self, value);
    } else if (object->body.otype == u->patch_Get) {
        if (about_font) self->font_path_due = true;
    }
}

// A time:Position from the host: its tempo sets the delay's note values.
static void handle_position(spinet_lv2 *self, const LV2_Atom_Object *object) {
    const uris_t *u = &self->uris;
    const LV2_Atom *bpm = NULL;
    lv2_atom_object_get(object, u->time_beatsPerMinute, &bpm, 0);
    if (!bpm) return;
    double value;
    if (bpm->type == u->atom_Float) value = ((const LV2_Atom_Float *)bpm)->body;
    else if (bpm->type == u->atom_Double) value = ((const LV2_Atom_Double *)bpm)->body;
    else if (bpm->type == u->atom_Int) value = ((const LV2_Atom_Int *)bpm)->body;
    else if (bpm->type == u->atom_Long) value = (double)((const LV2_Atom_Long *)bpm)->body;
    else return;
    spinet_plugin_set_tempo(self->core, value);
}

static void write_font_path(spinet_lv2 *self) {
    const uris_t *u = &self->uris;
    LV2_Atom_Forge *forge = &self->forge;
    LV2_Atom_Forge_Frame frame;
    if (!lv2_atom_forge_frame_time(forge, 0)) return;
    if (!lv2_atom_forge_object(forge, &frame, 0, u->patch_Set)) return;
    lv2_atom_forge_key(forge, u->patch_property);
    lv2_atom_forge_urid(forge, u->spinet_soundfont);
    lv2_atom_forge_key(forge, u->patch_value);
    lv2_atom_forge_path(forge, self->font_path, (uint32_t)strlen(self->font_path));
    lv2_atom_forge_pop(forge, &frame);
}

static void run(LV2_Handle instance, uint32_t frames) {
    spinet_lv2 *self = instance;
    const uris_t *u = &self->uris;

    // Parameters: passed on when they change (the core smooths them).
    for (int i = 0; i < SPINET_PARAM_COUNT; ++i) {
        const float *port = self->params[i];
        if (!port) continue;
        float v = *port;
        if (!self->param_sent[i] || v != self->last_param[i]) {
            spinet_plugin_set_param(self->core, (uint32_t)i, v);
            self->last_param[i] = v;
            self->param_sent[i] = true;
        }
    }

    // The notify sequence, written at the end of the call.
    LV2_Atom_Forge_Frame notify_frame;
    bool notify_open = false;
    if (self->notify) {
        uint32_t capacity = self->notify->atom.size;
        lv2_atom_forge_set_buffer(&self->forge, (uint8_t *)self->notify, capacity);
        notify_open = lv2_atom_forge_sequence_head(&self->forge, &notify_frame, 0) != 0;
    }

    // A font the core's loader finished (no worker): the path it left in
    // use goes to the host, as the worker's response does.
    if (!self->schedule) {
        int status;
        if (spinet_plugin_take_soundfont_result(self->core, &status, NULL, 0, self->font_path, sizeof self->font_path))
            self->font_path_due = true;
    }

    // MIDI events, in order, at their frames; patch messages.
    uint32_t start = 0, count = 0, last_frame = 0;
    if (self->control) {
        LV2_ATOM_SEQUENCE_FOREACH(self->control, ev) {
            int64_t t = ev->time.frames;
            uint32_t frame = t < 0 ? 0 : (uint32_t)(t >= frames ? (frames ? frames - 1 : 0) : t);
            if (frame < last_frame) frame = last_frame;   // out-of-order input: keep the order
            last_frame = frame;
            if (ev->body.type == u->midi_MidiEvent) {
                if (frames == 0) continue;
                if (count == EVENT_CAPACITY) {
                    if (frame == start) continue;   // more than EVENT_CAPACITY on one frame: dropped
                    render_piece(self, &start, frame, &count);
                }
                self->events[count].offset = frame;
                self->events[count].size = ev->body.size;
                self->events[count].data = LV2_ATOM_BODY_CONST(&ev->body);
                ++count;
            } else if (ev->body.type == u->atom_Object || ev->body.type == u->atom_Blank) {
                const LV2_Atom_Object *object = (const LV2_Atom_Object *)&ev->body;
                if (object->body.otype == u->time_Position) handle_position(self, object);
                else handle_patch(self, object);
            }
        }
    }
    render_piece(self, &start, frames, &count);

    if (notify_open) {
        if (self->font_path_due) {
            write_font_path(self);
            self->font_path_due = false;
        }
        lv2_atom_forge_pop(&self->forge, &notify_frame);
    }
    if (self->latency) *self->latency = (float)spinet_plugin_latency(self->core);
    // New names (a font change, a restored state): the host reads them again.
    if (self->midnam_host && atomic_exchange_explicit(&self->names_due, false, memory_order_acq_rel))
        self->midnam_host->update(self->midnam_host->handle);
}

// ---------------------------------------------------------------------------
// Worker: font loads off the audio thread

static LV2_Worker_Status work(LV2_Handle instance, LV2_Worker_Respond_Function respond,
                              LV2_Worker_Respond_Handle handle, uint32_t size, const void *data) {
    spinet_lv2 *self = instance;
    if (size == 0) return LV2_WORKER_ERR_UNKNOWN;
    char path[PATH_CAPACITY];
    size_t length = strnlen(data, size);
    if (length >= sizeof path) return LV2_WORKER_ERR_UNKNOWN;
    memcpy(path, data, length);
    path[length] = '\0';
    // The reply carries the path in use now (the old one if the load failed).
    load_reply reply;
    pthread_mutex_lock(&self->nonrt_lock);
    reply.status = spinet_plugin_load_soundfont(self->core, path);
    size_t used = spinet_plugin_soundfont_path(self->core, reply.path, sizeof reply.path);
    if (reply.status == 0) refresh_names(self);
    pthread_mutex_unlock(&self->nonrt_lock);
    if (used >= sizeof reply.path) used = sizeof reply.path - 1;
    reply.path[used] = '\0';
    return respond(handle, (uint32_t)(offsetof(load_reply, path) + used + 1), &reply);
}

// Audio thread: the core takes the new font over by itself in process;
// here the glue learns the path for patch:Get and tells the host.
static LV2_Worker_Status work_response(LV2_Handle instance, uint32_t size, const void *body) {
    spinet_lv2 *self = instance;
    if (size < offsetof(load_reply, path) + 1 || size > sizeof(load_reply)) return LV2_WORKER_ERR_UNKNOWN;
    const load_reply *reply = body;
    size_t length = strnlen(reply->path, size - offsetof(load_reply, path));
    if (length >= sizeof self->font_path) length = sizeof self->font_path - 1;
    memcpy(self->font_path, reply->path, length);
    self->font_path[length] = '\0';
    self->font_path_due = true;
    return LV2_WORKER_SUCCESS;
}

// ---------------------------------------------------------------------------
// State: the font path (mapped, so a project can move) and the core's JSON

static LV2_State_Status save(LV2_Handle instance, LV2_State_Store_Function store, LV2_State_Handle handle,
                             uint32_t flags, const LV2_Feature *const *features) {
    (void)flags;
    spinet_lv2 *self = instance;
    const uris_t *u = &self->uris;
    LV2_State_Map_Path *map_path = lv2_features_data(features, LV2_STATE__mapPath);
    LV2_State_Free_Path *free_path = lv2_features_data(features, LV2_STATE__freePath);
    const uint32_t pod = LV2_STATE_IS_POD | LV2_STATE_IS_PORTABLE;

    pthread_mutex_lock(&self->nonrt_lock);
    // The parameters as the host set them: its control ports, which the core
    // learns only in run (a host may set them and save without running).
    for (int i = 0; i < SPINET_PARAM_COUNT; ++i) {
        if (self->params[i]) spinet_plugin_set_param(self->core, (uint32_t)i, *self->params[i]);
    }
    char small[PATH_CAPACITY];
    char *path = small;
    size_t length = spinet_plugin_soundfont_path(self->core, small, sizeof small);
    if (length >= sizeof small) {
        path = malloc(length + 1);
        if (path) spinet_plugin_soundfont_path(self->core, path, length + 1);
    }
    char *json = path ? spinet_plugin_save_state(self->core) : NULL;
    pthread_mutex_unlock(&self->nonrt_lock);
    if (!path) return LV2_STATE_ERR_UNKNOWN;
    if (length > 0) {
        char *abstract = map_path ? map_path->abstract_path(map_path->handle, path) : NULL;
        const char *stored = abstract ? abstract : path;
        store(handle, u->spinet_soundfont, stored, strlen(stored) + 1, u->atom_Path, pod);
        if (abstract) {
            if (free_path) free_path->free_path(free_path->handle, abstract);
            else free(abstract);
        }
    }
    if (path != small) free(path);

    if (!json) {
        lv2_log_error(&self->logger, "spinet: the settings could not be saved\n");
        return LV2_STATE_ERR_UNKNOWN;
    }
    LV2_State_Status status = store(handle, u->spinet_settings, json, strlen(json) + 1, u->atom_String, pod);
    spinet_plugin_free_string(json);
    return status;
}

static LV2_State_Status restore(LV2_Handle instance, LV2_State_Retrieve_Function retrieve,
                                LV2_State_Handle handle, uint32_t flags, const LV2_Feature *const *features) {
    (void)flags;
    spinet_lv2 *self = instance;
    const uris_t *u = &self->uris;
    LV2_State_Map_Path *map_path = lv2_features_data(features, LV2_STATE__mapPath);
    LV2_State_Free_Path *free_path = lv2_features_data(features, LV2_STATE__freePath);

    size_t size = 0;
    uint32_t type = 0, value_flags = 0;
    // The values are not NUL-terminated for certain: copied with one.
    char *json = NULL, *path = NULL;
    const void *value = retrieve(handle, u->spinet_settings, &size, &type, &value_flags);
    if (value && type == u->atom_String) {
        json = calloc(1, size + 1);
        if (json) memcpy(json, value, size);
    }
    value = retrieve(handle, u->spinet_soundfont, &size, &type, &value_flags);
    if (value && type == u->atom_Path && size > 0) {
        char *abstract = calloc(1, size + 1);
        if (abstract) {
            memcpy(abstract, value, size);
            char *absolute = map_path ? map_path->absolute_path(map_path->handle, abstract) : NULL;
            if (absolute) {
                path = strdup(absolute);
                if (free_path) free_path->free_path(free_path->handle, absolute);
                else free(absolute);
                free(abstract);
            } else {
                path = abstract;
            }
        }
    }

    int status = 0;
    pthread_mutex_lock(&self->nonrt_lock);
    if (json) {
        status = spinet_plugin_restore_state(self->core, json, path);
    } else if (path) {
        status = spinet_plugin_load_soundfont(self->core, path);
    }
    refresh_font_path(self);
    refresh_names(self);
    pthread_mutex_unlock(&self->nonrt_lock);
    free(json);
    free(path);
    return status == 0 ? LV2_STATE_SUCCESS : LV2_STATE_ERR_UNKNOWN;
}

// ---------------------------------------------------------------------------
// The descriptor

static unsigned long inline_regions(void) { return spinet_plugin_inline_parallel_regions(); }

static const void *extension_data(const char *uri) {
    static const LV2_State_Interface state = {save, restore};
    static const LV2_Worker_Interface worker = {work, work_response, NULL};
    static const spinet_lv2_inline_regions regions = {inline_regions};
    static const LV2_Midnam_Interface names = {midnam, midnam_model, midnam_free};
    if (!strcmp(uri, LV2_STATE__interface)) return &state;
    if (!strcmp(uri, LV2_WORKER__interface)) return &worker;
    if (!strcmp(uri, SPINET_LV2__inlineRegions)) return &regions;
    if (!strcmp(uri, LV2_MIDNAM__interface)) return &names;
    return NULL;
}

static const LV2_Descriptor descriptor = {
    SPINET_LV2_URI, instantiate, connect_port, activate, run, deactivate, cleanup, extension_data,
};

LV2_SYMBOL_EXPORT const LV2_Descriptor *lv2_descriptor(uint32_t index) {
    return index == 0 ? &descriptor : NULL;
}
