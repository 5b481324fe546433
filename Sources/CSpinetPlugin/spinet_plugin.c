// The plugin core's C declarations live in include/spinet_plugin.h; their
// definitions are Swift (SpinetPlugin, @_cdecl). This file only gives the
// header its target.
#include "spinet_plugin.h"
