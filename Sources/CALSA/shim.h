#ifndef SPINET_CALSA_SHIM_H
#define SPINET_CALSA_SHIM_H
#include <alsa/asoundlib.h>
#endif
