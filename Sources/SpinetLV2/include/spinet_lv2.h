// Spinet's LV2 glue (spinet_lv2.c): the plugin's only exported entry point
// is lv2_descriptor, declared by <lv2/core/lv2.h>. This header names the
// URIs the bundle's TTL and the test host share.
#ifndef SPINET_LV2_H
#define SPINET_LV2_H

#define SPINET_LV2_URI "https://spinet.dev/plugins/spinet"
#define SPINET_LV2_NS "https://spinet.dev/ns/spinet#"
// The SoundFont file parameter (patch:Set / patch:Get, and a state key).
#define SPINET_LV2__soundfont SPINET_LV2_NS "soundfont"
// The state key of the core's settings (JSON, an atom:String).
#define SPINET_LV2__settings SPINET_LV2_NS "settings"
// A private extension_data for test hosts: how many one-thread OpenMP
// regions ran inline in this process (spinet_plugin_inline_parallel_regions),
// the evidence that the plugin's GOMP_parallel took libfluidsynth's calls.
#define SPINET_LV2__inlineRegions SPINET_LV2_NS "inlineRegions"

typedef struct spinet_lv2_inline_regions {
    unsigned long (*count)(void);
} spinet_lv2_inline_regions;

// Ardour's midnam extension (no Debian package ships its header): the
// plugin gives the host a MIDNAM document with its program and drum key
// names, and asks the host (from run) to read it again when they change.
#define LV2_MIDNAM_URI "http://ardour.org/lv2/midnam"
#define LV2_MIDNAM__interface LV2_MIDNAM_URI "#interface"
#define LV2_MIDNAM__update LV2_MIDNAM_URI "#update"

typedef void *LV2_Midnam_Handle;

// The host's feature.
typedef struct {
    LV2_Midnam_Handle handle;
    void (*update)(LV2_Midnam_Handle handle);
} LV2_Midnam;

// The plugin's extension data: the document and its model name, both
// malloc'ed strings released with `free`.
typedef struct {
    char *(*midnam)(void *instance);
    char *(*model)(void *instance);
    void (*free)(char *string);
} LV2_Midnam_Interface;

#endif
