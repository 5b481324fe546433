/* Preloaded into ardour7-lua by scripts/ardour-test.sh: records the MIDNAM
 * documents Ardour reads from its instrument plugins, and whether Ardour's
 * MIDNAM parser took them. Ardour's Lua has no access to its patch names
 * (no MidiPatchManager, no InstrumentInfo in the bindings): this wraps the
 * one call through which a plugin's names reach them,
 * MIDI::Name::MidiPatchManager::update_custom_midnam (LV2Plugin::read_midnam
 * calls it across the library's PLT), and appends to $SPINET_MIDNAM_SPY
 *   <!-- spinet-midnam-spy model=MODEL accepted=1 -->
 *   THE DOCUMENT
 * accepted=1 when Ardour parsed it into a MIDINameDocument (its return
 * value). Ardour 7's C++ ABI: a member function (this, const std::string&,
 * const char*) returning bool. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define UPDATE_CUSTOM_MIDNAM \
	"_ZN4MIDI4Name16MidiPatchManager20update_custom_midnamERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEPKc"

/* libstdc++'s std::string starts with its data pointer */
struct cxx_string { const char *data; size_t size; };

typedef bool (*update_fn) (void *self, const struct cxx_string *model, const char *midnam);

bool spinet_midnam_spy (void *self, const struct cxx_string *model, const char *midnam) __asm__ (UPDATE_CUSTOM_MIDNAM);

bool
spinet_midnam_spy (void *self, const struct cxx_string *model, const char *midnam)
{
	update_fn real = (update_fn) dlsym (RTLD_NEXT, UPDATE_CUSTOM_MIDNAM);
	if (!real) {
		fprintf (stderr, "midnam-spy: %s not found\n", UPDATE_CUSTOM_MIDNAM);
		abort ();
	}
	bool accepted = real (self, model, midnam);
	const char *path = getenv ("SPINET_MIDNAM_SPY");
	FILE *out = path ? fopen (path, "a") : NULL;
	if (out) {
		fprintf (out, "<!-- spinet-midnam-spy model=%.*s accepted=%d -->\n%s\n", (int) model->size, model->data, accepted, midnam ? midnam : "");
		fclose (out);
	}
	return accepted;
}
