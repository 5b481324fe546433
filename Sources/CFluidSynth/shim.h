#ifndef SPINET_CFLUIDSYNTH_SHIM_H
#define SPINET_CFLUIDSYNTH_SHIM_H
#include <fluidsynth.h>
#endif
