// The C face of Spinet's plugin core (the Swift module SpinetPlugin, which
// implements every function here with @_cdecl). The LV2 and CLAP glue are
// written in C against this header only: one engine, one rig, two formats.
//
// Threads, in the plugin formats' own words:
//   - create, destroy, activate, deactivate: the host's main
//     (instantiation) thread, never while process runs on another;
//   - restore_state: a non-real-time thread, also while process runs (the
//     restored graph is built there and taken by the next process call);
//   - process, set_param, get_param, latency: the audio thread; they
//     allocate nothing and take no lock (set_param and get_param also from
//     any other thread);
//   - load_soundfont, save_state, soundfont_path: a non-real-time thread
//     (the LV2 worker, the main thread); the core takes them one at a time;
//   - request_soundfont, take_soundfont_result: any thread, the audio
//     thread too (no lock, no allocation). The core loads the fonts asked
//     for on a thread of its own (the instance's one loader, which calls
//     what load_soundfont calls).
#ifndef SPINET_PLUGIN_H
#define SPINET_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct spinet_plugin spinet_plugin;

enum spinet_log_level { SPINET_LOG_INFO = 0, SPINET_LOG_WARNING = 1, SPINET_LOG_ERROR = 2 };

// One line for the host's log (no trailing newline). Called from the thread
// that made the call that logs; never from process.
typedef void (*spinet_log_fn)(void *context, int level, const char *line);

// One MIDI message at `offset` frames into the current process call:
// a channel message (1-3 bytes) or a whole SysEx (F0 ... F7).
// Realtime bytes (F8-FF) are ignored. Events are in offset order.
typedef struct spinet_midi_event {
    uint32_t offset;
    uint32_t size;
    const uint8_t *data;
} spinet_midi_event;

// The automatable parameters (ids are stable: they are saved in projects).
enum spinet_param_id {
    SPINET_PARAM_GAIN = 0,          // master gain, dB, -60 ... +12, default 0
    SPINET_PARAM_REVERB = 1,        // reverb return level, 0 ... 1, default 1
    SPINET_PARAM_CHORUS = 2,        // chorus return level, 0 ... 1, default 1
    SPINET_PARAM_DELAY = 3,         // delay return level, 0 ... 1, default 1
    SPINET_PARAM_CEILING = 4,       // limiter ceiling, dBFS, -24 ... 0, default -1
    SPINET_PARAM_COUNT = 5
};

typedef struct spinet_param_info {
    uint32_t id;
    const char *symbol;     // "gain", "reverb", ... (LV2 port symbol, CLAP module path)
    const char *name;       // "Master gain"
    const char *unit;       // "dB", "" ...
    double min_value, max_value, default_value;
} spinet_param_info;

// Static information, any thread; NULL past SPINET_PARAM_COUNT.
const spinet_param_info *spinet_plugin_param_info(uint32_t index);

// A new instance at `sample_rate`, with the default SoundFont (the one
// `spinet` finds; `bundle_dir`, if not NULL, is searched first for
// SoundFonts/sf_GMbank.sf2 beside the plugin) loaded, and the default
// settings (Spinet's reverb room, chorus subtle, delay eighth, as
// `spinet render`). NULL on failure, after logging why.
spinet_plugin *spinet_plugin_create(double sample_rate, const char *bundle_dir,
                                    spinet_log_fn log, void *log_context);
void spinet_plugin_destroy(spinet_plugin *plugin);

// Prepares everything process needs for blocks of up to `max_frames`
// (0: unknown; process still takes any size, in pieces). 0 on success.
// A re-activation with the same block size takes a spare graph the core's
// loader thread prepared in the background: no font load, no allocation, so
// that a host may (as Ardour does at every transport stop) deactivate and
// activate on its audio thread.
int spinet_plugin_activate(spinet_plugin *plugin, uint32_t max_frames);
// Stops sounding notes; a later activate starts from silence.
void spinet_plugin_deactivate(spinet_plugin *plugin);
// Waits up to `timeout_ms` for the spare graph the next activation takes
// (for tests: a host need not wait). 1 when it is ready, else 0.
int spinet_plugin_wait_for_spare(spinet_plugin *plugin, uint32_t timeout_ms);

// Renders `frames` frames (any number) into `left` and `right`
// (overwritten), applying each event at its frame: Spinet's synth on the
// exact frame, SoundFont channels on the 64-frame grid, as offline.
// Also takes a SoundFont or state that was prepared off this thread.
void spinet_plugin_process(spinet_plugin *plugin, uint32_t frames, float *left, float *right,
                           const spinet_midi_event *events, uint32_t event_count);

// The host's tempo, in beats per minute (the delay's note values follow
// it; 120 until told). Audio thread or any other; applied at the next
// process call. Values outside 10 ... 1000 are ignored.
void spinet_plugin_set_tempo(spinet_plugin *plugin, double beats_per_minute);

// Frames of delay the plugin adds (the limiter's look-ahead) at its rate.
uint32_t spinet_plugin_latency(const spinet_plugin *plugin);

// Parameters: values are clamped to their range; the change is smoothed.
void spinet_plugin_set_param(spinet_plugin *plugin, uint32_t id, double value);
double spinet_plugin_get_param(const spinet_plugin *plugin, uint32_t id);

// Loads and prepares the SoundFont at `path` (blocking, off the audio
// thread); the next process calls take it over without a break, notes
// already sounding ring on in the old one. 0 on success. On failure the old
// font keeps playing and the reason is logged (and returned as -1).
int spinet_plugin_load_soundfont(spinet_plugin *plugin, const char *path);

// Asks the core's loader for the SoundFont at `path` (`length` bytes, no
// NUL needed) and returns at once: it copies the path and wakes the
// loader's thread, taking no lock and allocating nothing, so the audio
// thread may ask. The loader loads it as load_soundfont does; a request
// made while another loads is loaded next, and the newest one wins over
// any it did not start yet. 0 when asked; -1 when the path is empty or
// longer than 4095 bytes, or another thread is asking at the same moment.
int spinet_plugin_request_soundfont(spinet_plugin *plugin, const char *path, size_t length);

// Called on the loader's thread after its loads (status 0: the last of
// them loaded), once take_soundfont_result gives the result. Set it on
// the main thread before the first request; it may call soundfont_path
// and name_table, not save_state or restore_state.
typedef void (*spinet_soundfont_loaded_fn)(void *context, int status);
void spinet_plugin_set_soundfont_listener(spinet_plugin *plugin, spinet_soundfont_loaded_fn listener, void *context);

// The newest load the loader finished since the last call: returns 1 and
// gives its status (0: loaded, -1: not loaded, the reason logged), the
// path asked for and the font in use after it (the old one after a
// failure), each NUL-terminated and truncated to its capacity; 0 when
// none finished since. One thread at a time; no lock, no allocation.
int spinet_plugin_take_soundfont_result(spinet_plugin *plugin, int *status, char *requested, size_t requested_capacity,
                                        char *in_use, size_t in_use_capacity);

// The path of the SoundFont in use (or being swapped in), copied into
// `buffer` (NUL-terminated, truncated to `capacity`); returns its length.
size_t spinet_plugin_soundfont_path(spinet_plugin *plugin, char *buffer, size_t capacity);

// Every setting as one UTF-8 JSON object (the SoundFont path, channel
// assignments, synth presets, effects, EQ and the parameter values). A
// font requested before this call is loaded first.
// malloc'ed: release with spinet_plugin_free_string.
char *spinet_plugin_save_state(spinet_plugin *plugin);
void spinet_plugin_free_string(char *string);

// Restores what save_state gave. `soundfont_path`, if not NULL, replaces
// the JSON's (LV2 maps paths itself). A restored instance renders the same
// bytes as the saved one for the same input. 0 on success; on failure the
// instance keeps its settings and the reason is logged. A font requested
// before this call is loaded first (the state then replaces it).
int spinet_plugin_restore_state(spinet_plugin *plugin, const char *json, const char *soundfont_path);

// The channel state the host's MIDI set (bank, program, controllers,
// bend, pressure: the rule is Spinet's ChannelState) is played back into
// the sound at the first process call after an activation, so a channel a
// DAW set up once, at the start of a clip, stays as it was set. A restored
// state forgets it. This copies `from`'s into `to` (a core rebuilt at a new
// sample rate); neither may be processing.
void spinet_plugin_copy_channel_state(spinet_plugin *to, const spinet_plugin *from);

// The names a host shows (LV2 midnam, CLAP note names): the SoundFont's
// presets by bank and program, Spinet's synth presets in bank 126, and drum
// kit key names (General MIDI percussion names for the kits of bank 128 of a
// General MIDI font; none for other fonts: a SoundFont names no keys).
// Banks are FluidSynth's: 0-127 by Bank Select MSB, 128 the percussion kits
// (MIDI channel 10, chosen by program change).
typedef struct spinet_program_name {
    uint32_t bank, program;
    const char *name;
} spinet_program_name;

typedef struct spinet_key_name {
    uint32_t bank, program, key;
    const char *name;
} spinet_key_name;

typedef struct spinet_name_table {
    uint32_t program_count;
    const spinet_program_name *programs;   // by bank, then program
    uint32_t key_count;
    const spinet_key_name *keys;           // by bank, program, key
} spinet_name_table;

// The table for the current settings (non-real-time thread, like
// save_state; it reads the font's preset headers). NULL only when out of
// memory. Release with spinet_plugin_free_name_table.
spinet_name_table *spinet_plugin_name_table(spinet_plugin *plugin);
void spinet_plugin_free_name_table(spinet_name_table *table);

// Debian's libfluidsynth runs OpenMP regions; Spinet runs one-thread regions
// inline so that they do not allocate. How many ran inline so far in this
// process (0 after rendering: the host's libgomp took them, and each
// render block allocates once).
unsigned long spinet_plugin_inline_parallel_regions(void);

#ifdef __cplusplus
}
#endif
#endif
