#ifndef SPINET_CEBUR128_SHIM_H
#define SPINET_CEBUR128_SHIM_H
#include <ebur128.h>
#endif
