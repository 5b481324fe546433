#ifndef SPINET_CFLUIDSYNTHREALTIME_H
#define SPINET_CFLUIDSYNTHREALTIME_H

/// Number of one-thread OpenMP parallel regions run inline since start
/// (FluidSynth renders inside one per call when built with OpenMP).
unsigned long spinet_inline_parallel_regions(void);

#endif
