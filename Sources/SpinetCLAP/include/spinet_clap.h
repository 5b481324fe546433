// Spinet's CLAP plugin: its id and its one private extension. The plugin
// itself is reached through `clap_entry` (spinet_clap.c); this header is for
// hosts and tests that want the extras.
#ifndef SPINET_CLAP_H
#define SPINET_CLAP_H

#include <stddef.h>

#define SPINET_CLAP_PLUGIN_ID "dev.spinet.synth"

// plugin->get_extension(plugin, SPINET_CLAP_EXT_DEBUG): diagnostics for tests.
#define SPINET_CLAP_EXT_DEBUG "dev.spinet.debug/1"

struct clap_plugin;

typedef struct spinet_clap_debug {
    // How many of libfluidsynth's one-thread OpenMP regions Spinet's
    // GOMP_parallel ran inline in this process (0 after rendering means the
    // host's libgomp took them, and each render block allocates). Any thread.
    unsigned long (*inline_parallel_regions)(void);
    // The SoundFont in use (or being swapped in), as spinet_plugin_soundfont_path. Main thread.
    size_t (*soundfont_path)(const struct clap_plugin *plugin, char *buffer, size_t capacity);
} spinet_clap_debug_t;

#endif
