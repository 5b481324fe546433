#ifndef SPINET_CSNDFILE_SHIM_H
#define SPINET_CSNDFILE_SHIM_H
#include <sndfile.h>
#endif
