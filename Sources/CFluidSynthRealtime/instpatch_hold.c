// Keeps libinstpatch initialised for the whole process.
//
// Debian's libfluidsynth is built with libinstpatch (for DLS files): every
// new_fluid_synth() calls ipatch_init() and every delete_fluid_synth()
// ipatch_close(). libinstpatch counts them, and when the count returns to
// zero it closes; the next ipatch_init() registers its GObject property
// specs again, and GLib never frees the old ones. A process that creates
// and deletes synths one after the other (a plugin instance after another
// in a host, a re-created plugin core) leaked about 2 KB (valgrind's
// "definitely lost", more in GLib's type tables) each time.
//
// Holding one ipatch_init() of our own keeps the count above zero: the
// library initialises once and stays so. It is looked up in the
// libinstpatch libfluidsynth already loaded (RTLD_NOLOAD): with a
// libfluidsynth built without it, nothing happens.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include "CFluidSynthRealtime.h"

static pthread_once_t held = PTHREAD_ONCE_INIT;

static void hold(void) {
    void *library = dlopen("libinstpatch-1.0.so.2", RTLD_LAZY | RTLD_NOLOAD);
    if (library == NULL) return;
    void (*init)(void) = (void (*)(void))dlsym(library, "ipatch_init");
    if (init != NULL) init();
    // the handle stays open: the library must not go away under the hold
}

void spinet_hold_instpatch(void) { pthread_once(&held, hold); }
